"""Background commands: which command the output of a background task belongs to.

Claude Code runs a long ``Bash`` call in the background. Its result says only
``Command running in background with ID: bd0afab. Output is being written to:
…/tasks/bd0afab.output`` (or that the command was backgrounded by the user, or
moved to the background, "with ID" or "(ID: …"); the output comes later, from a
``TaskOutput`` call (input ``task_id``; older versions: ``BashOutput`` with
``bash_id`` or ``shell_id``) or from a call that reads the output file
(``tail -30 …/tasks/bd0afab.output``, a ``Read`` of it:
:mod:`memlane.capture.task_output`). Such a unit shares no word with the
command that ran, and the launch's unit holds no result. :meth:`Launches.named`
copies the launching call's ``command`` and ``description`` into the input of
each call that reads its output, under ``LAUNCHED``, and
:func:`memlane.capture.units.describe` makes its first line ``Output of $ mix
test … (Run the tests)``.

The copy is made on the turns as parsed, before the privacy filter and before a
batch is shared with the prepare helper: each string of a tool input is filtered
on its own, so the command is masked in the reading call exactly as in its own
unit, and both halves of a split batch see it.

Where the launch is found. A transcript is read in order, so one ingest sees a
launch before its output, except a launch before the offset it started from (a
batch ingested by an earlier Stop). For a task its batches did not launch, the
transcript before that offset is searched, from its end, for the record that
reports the launch and then for the call it answers: read from the file the
launch unit was cut from, the input is the same, so are the rows, whether the
transcript is ingested whole or in increments. (The stored launch unit would not
do: it keeps the command cut and already filtered, in a text a multi-line
command makes ambiguous.) A task found nowhere (a subagent's, or a launch in
another file) keeps ``Output of background task <id>``. Nothing here touches the
store.

Observations: none is recorded for a call that reads a task's output, ``TaskOutput``,
``BashOutput`` or a read of the output file (:mod:`memlane.capture.classify`), by the
PostToolUse hook or from the transcript alike. The hook cannot know what the task ran
(that would mean reading the transcript there), and what a command that prints a
secret printed (``pass show`` in the background) must be withheld where it is read:
the unit, cut here with its launch named, is the call's only record.
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from memlane.capture.task_output import task_read_by_file
from memlane.capture.transcript import ToolCall, Turn, result_text
from memlane.jsonlines import MAX_LINE_BYTES

# The key of a reading call's input that holds its launch: {"command": …, "description": …}.
LAUNCHED = "launched"
OUTPUT_TOOLS = frozenset(("TaskOutput", "BashOutput"))
_TASK_KEYS = ("task_id", "bash_id", "shell_id")
# How a background launch's result begins: "Command running in background with ID: X.",
# "Command was manually backgrounded by user with ID: X.", "Command did not complete
# within its 120s timeout and was moved to the background (ID: X" …
_LAUNCH = re.compile(r"Command\b[^\n]{0,160}?\bbackground[^\n]{0,40}?\bID: ([\w-]+)")
# Lines mentioning a task id (or a call id) tried, from the end, before giving up.
MAX_LINES_TRIED = 50


def launched_task(call: ToolCall) -> str:
    """The id of the background task ``call`` launched; '' for none."""
    if call.name != "Bash" or not call.result.startswith("Command"):
        return ""
    found = _LAUNCH.match(call.result)
    return found.group(1) if found else ""


def read_task(call: ToolCall) -> str:
    """The id of the background task whose output ``call`` reads; '' for none."""
    args = call.input if isinstance(call.input, dict) else {}
    if call.name in OUTPUT_TOOLS:
        return next((v for k in _TASK_KEYS if isinstance(v := args.get(k), str) and v), "")
    return task_read_by_file(call.name, args)


def launch_of(args: dict[str, Any]) -> dict[str, str]:
    """What a launching call's input ``args`` says of the command: its command and
    description (the strings only)."""
    return {k: v for k in ("command", "description") if isinstance(v := args.get(k), str)}


class Launches:
    """The background commands of one transcript, learnt as its batches are read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._known: dict[str, dict[str, str] | None] = {}  # None: looked for, not found
        # The bytes read in order by the last batches; what lies before was not read here.
        self._read_from = 0
        self._read_to = 0

    def named(self, turns: list[Turn], start: int, end: int) -> list[Turn]:
        """``turns`` (read from byte ``start`` to ``end``) with each call that reads a
        known task's output given its launch under ``LAUNCHED``."""
        if start != self._read_to:
            self._read_from = start
        self._read_to = end
        named: list[Turn] | None = None
        for number, turn in enumerate(turns):
            blocks: list[str | ToolCall] | None = None
            for place, block in enumerate(turn.blocks):
                if not isinstance(block, ToolCall):
                    continue
                task = read_task(block)
                launch = self._launch(task) if task else None
                if launch and isinstance(block.input, dict):
                    if blocks is None:
                        blocks = list(turn.blocks)
                    args = {**block.input, LAUNCHED: launch}
                    blocks[place] = replace(block, input=args)
                launched = launched_task(block)
                if launched and isinstance(block.input, dict):
                    self._known[launched] = launch_of(block.input)
            if blocks is not None:
                if named is None:
                    named = list(turns)
                named[number] = replace(turn, blocks=tuple(blocks))
        return turns if named is None else named

    def _launch(self, task: str) -> dict[str, str] | None:
        if task not in self._known:
            self._known[task] = launch_before(self.path, self._read_from, task)
        return self._known[task]


def launch_before(path: str, end: int, task: str) -> dict[str, str] | None:
    """The launch of background task ``task`` in the transcript at ``path`` before byte
    ``end`` (see the module docstring); None when it is not there."""
    if end <= 0:
        return None
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            end = min(end, len(data))
            call_id = _launch_result(data, end, task)
            return _call_input(data, end, call_id) if call_id else None
    except (OSError, ValueError):
        return None  # unreadable, or emptied meanwhile: the old title stays


def _lines_with(data: mmap.mmap, end: int, needle: bytes) -> Iterator[dict[str, Any]]:
    """The records (parsed) of the lines before ``end`` holding ``needle``, last first."""
    for _ in range(MAX_LINES_TRIED):
        at = data.rfind(needle, 0, end)
        if at < 0:
            return
        first = data.rfind(b"\n", 0, at) + 1
        last = data.find(b"\n", at)
        end = first
        stop = last if last >= 0 else len(data)
        if stop - first > MAX_LINE_BYTES:
            continue  # passed over by the transcript reader too
        try:
            record = json.loads(data[first:stop])
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _launch_result(data: mmap.mmap, end: int, task: str) -> str:
    """The id of the call whose result reports launching ``task``; '' for none."""
    for record in _lines_with(data, end, f"ID: {task}".encode()):
        for block in _blocks(record):
            if block.get("type") != "tool_result":
                continue
            found = _LAUNCH.match(result_text(block.get("content")))
            call_id = block.get("tool_use_id")
            if found and found.group(1) == task and isinstance(call_id, str):
                return call_id
    return ""


def _call_input(data: mmap.mmap, end: int, call_id: str) -> dict[str, str] | None:
    """The launch the ``Bash`` call ``call_id`` holds, from its record before ``end``."""
    for record in _lines_with(data, end, json.dumps(call_id).encode()):
        for block in _blocks(record):
            if block.get("type") == "tool_use" and block.get("id") == call_id:
                args = block.get("input")
                if block.get("name") != "Bash" or not isinstance(args, dict):
                    return None
                return launch_of(args)
    return None
