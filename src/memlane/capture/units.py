"""Units: the small pieces of a transcript a question can land on.

A turn (``memlane.capture.transcript``) becomes units, each at most
``UNIT_CHARS`` characters and linked to its turn, so a search ranks the piece
that holds the fact and an injection can show it whole:

* ``request`` — what the user asked (a prompt is context, not an answer: recall
  shows it only with what followed it);
* ``reply`` — each paragraph of the assistant's explanation, diagnosis or
  decision (short neighbouring paragraphs share a unit, code fences stay with
  their paragraph);
* ``tool`` — each tool call with its salient result. The first line says what
  the call did (``$ mix test``, ``Edit lib/app.ex``, ``Task (claude-code-guide):
  …``; what reads a background command's output, ``Output of $ mix test (Run the
  tests)``: :mod:`memlane.capture.launches`); then a failed call's status, and
  the output cleaned by :func:`memlane.capture.output.clean_output` (a
  ``TaskOutput``'s without the envelope it comes in: ``completed, exit code 0``,
  then the output). An edit shows the lines it removed and added, a write the
  file's lines without the trivial ones, a subagent its answer. A long result
  is split into parts, each repeating the
  first line, at most ``MAX_CALL_CHARS`` of it per call;
* ``compaction`` — Claude Code's compaction summary, paragraph by paragraph:
  its own list of requests, files, errors and fixes;
* ``local`` — what a local slash command printed (``/mcp: Reconnected to …``).

How big a unit is and how much of a long tool output it keeps are
:class:`UnitShape` (the settings ``capture.unit_chars``,
``capture.output_head_lines`` and ``capture.output_tail_lines``): the head of an
output says what ran, its tail how it ended (the test summary, the error).

Units of one turn are numbered in order (``part`` for the pieces of one
block); the ingest gives each its index in the session, so a unit's neighbours
are the units before and after it. Pure functions: nothing is stored here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memlane.capture.chunker import hard_split, split_blocks
from memlane.capture.launches import LAUNCHED, OUTPUT_TOOLS, read_task
from memlane.capture.metadata import (
    SUBAGENT_TOOLS,
    asked_questions,
    extract_errors,
    relativize,
)
from memlane.capture.output import (
    clean_lines,
    clean_output,
    trivial_line,
    with_links_listed,
    without_output_file,
    without_subagent_trailer,
)
from memlane.capture.transcript import ToolCall, Turn
from memlane.privacy import left_out
from memlane.text import one_line

UNIT_CHARS = 900
# Lines of a long tool result a unit keeps: the first ones and the last ones.
OUTPUT_HEAD_LINES = 120
OUTPUT_TAIL_LINES = 30
# A reply paragraph this short joins its neighbour in one unit.
SHORT_PARAGRAPH = 300
# How much of one long call's result its parts keep, in characters (whatever the unit size).
MAX_CALL_CHARS = 10_800
# A tool unit keeps at least this much room for its result under a long first line.
MIN_ROOM = 100
TITLE_CHARS = 100
MAX_COMMAND_CHARS = 600
MAX_REMOVED_LINES = 6
# Tools whose calls say nothing worth recalling (plans, polling, memlane's own tools).
SKIPPED_TOOLS = frozenset(
    ("TodoWrite", "TodoRead", "ExitPlanMode", "EnterPlanMode", "KillBash", "KillShell")
)
SKIPPED_PREFIXES = ("mcp__memlane__", "mcp__plugin_memlane")


@dataclass(frozen=True, slots=True)
class UnitShape:
    """How units are cut: at most ``chars`` characters each; of a tool's result, the
    first ``head_lines`` and last ``tail_lines`` lines (after cleaning)."""

    chars: int = UNIT_CHARS
    head_lines: int = OUTPUT_HEAD_LINES
    tail_lines: int = OUTPUT_TAIL_LINES


DEFAULT_SHAPE = UnitShape()


@dataclass(frozen=True, slots=True)
class Unit:
    """One searchable piece of a turn (see the module docstring)."""

    kind: str  # 'request' | 'reply' | 'tool' | 'compaction' | 'local'
    title: str
    text: str
    role: str  # the turn's role: 'user' | 'assistant' | 'compact'
    files: tuple[str, ...] = ()
    tool: str = ""
    errors: tuple[str, ...] = ()
    failed: bool = False
    part: int = 0
    timestamp: datetime | None = None
    end_offset: int = 0
    turn: str | None = None  # uuid of the turn's first record
    call: str | None = None  # the agent's id of the tool call a tool unit records


def turn_units(turn: Turn, shape: UnitShape = DEFAULT_SHAPE) -> list[Unit]:
    """The units of ``turn``, in order."""
    units: list[Unit] = []
    if turn.role == "user":
        units.extend(_text_units(turn, "request", turn.text, shape))
    elif turn.role == "compact":
        units.extend(_text_units(turn, "compaction", turn.text, shape))
    elif turn.role == "local":
        units.extend(_text_units(turn, "local", turn.text, shape))
    else:
        for block in turn.blocks or (turn.text,):
            if isinstance(block, ToolCall):
                units.extend(_tool_units(turn, block, shape))
            else:
                units.extend(_text_units(turn, "reply", block, shape))
    return units


def iter_units(turns: list[Turn], shape: UnitShape = DEFAULT_SHAPE) -> Iterator[Unit]:
    """The units of ``turns``, in order."""
    for turn in turns:
        yield from turn_units(turn, shape)


# -- text ----------------------------------------------------------------------------


def pack_paragraphs(text: str, limit: int = UNIT_CHARS) -> list[str]:
    """``text`` as pieces of at most ``limit`` characters along its paragraphs.

    A paragraph shorter than ``SHORT_PARAGRAPH`` joins the next when both fit;
    a longer one stands alone; one over ``limit`` is cut at line boundaries.
    """
    pieces: list[str] = []
    current = ""
    for block, _is_code in split_blocks(text.strip()):
        parts = [block] if len(block) <= limit else hard_split(block, limit)
        for part in parts:
            joined = f"{current}\n\n{part}" if current else part
            if current and (len(joined) > limit or len(current) >= SHORT_PARAGRAPH):
                pieces.append(current)
                current = part
            else:
                current = joined
    if current:
        pieces.append(current)
    return pieces


def _text_units(turn: Turn, kind: str, text: str, shape: UnitShape) -> list[Unit]:
    pieces = pack_paragraphs(text, shape.chars)
    return [
        Unit(
            kind=kind,
            title=one_line(piece, TITLE_CHARS),
            text=piece,
            role=turn.role,
            files=tuple(f for f in turn.files if f in piece),
            part=number,
            timestamp=turn.timestamp,
            end_offset=turn.end_offset,
            turn=turn.uuid,
        )
        for number, piece in enumerate(pieces)
    ]


# -- tool calls ----------------------------------------------------------------------


def _tool_units(turn: Turn, call: ToolCall, shape: UnitShape) -> list[Unit]:
    name = call.name
    if name in SKIPPED_TOOLS or name.startswith(SKIPPED_PREFIXES):
        return []
    args = call.input if isinstance(call.input, dict) else {}
    head, body, files = describe(name, args, call, turn.cwd, shape)
    if not head:
        return []
    errors: tuple[str, ...] = ()
    if call.is_error or name == "Bash":
        errors = extract_errors(call.result)
    if call.is_error:
        body = f"{failure_line(errors, call.result)}\n{body}".rstrip()
    room = max(shape.chars - len(head) - 1, MIN_ROOM)
    parts = hard_split(body, room) if body.strip() else [""]
    most = max(MAX_CALL_CHARS // shape.chars, 2)
    if len(parts) > most:  # the end says how it ended: keep the last part
        parts = [*parts[: most - 1], parts[-1]]
    return [
        Unit(
            kind="tool",
            title=one_line(head, TITLE_CHARS),
            text=f"{head}\n{part}".strip(),
            role=turn.role,
            files=files,
            tool=name,
            errors=errors,
            failed=call.is_error,
            part=number,
            timestamp=turn.timestamp,
            end_offset=turn.end_offset,
            turn=turn.uuid,
            call=call.id,
        )
        for number, part in enumerate(parts)
    ]


def head_and_tail(body: str, head: int, tail: int) -> str:
    """``body``'s first ``head`` and last ``tail`` lines, saying how many were left out."""
    lines = body.split("\n")
    if len(lines) <= head + tail:
        return body
    omitted = len(lines) - head - tail
    return "\n".join([*lines[:head], left_out(omitted), *lines[len(lines) - tail :]])


def failure_line(errors: tuple[str, ...], result: str) -> str:
    """``failed (exit code 1): KeyError: 'x'`` — the status and the first real error."""
    codes = [e for e in errors if e.startswith("exit code")]
    others = [e for e in errors if not e.startswith("exit code")]
    status = f"failed ({codes[0]})" if codes else "failed"
    reason = others[0] if others else ("" if codes else one_line(result, 200))
    return f"{status}: {reason}" if reason else status


def _output(result: str) -> str:
    """A command's output, cleaned, without the ``Exit code N`` line Claude Code puts first."""
    first, _, rest = result.partition("\n")
    if first.startswith("Exit code ") and first[10:].strip().lstrip("-").isdigit():
        result = rest
    return clean_output(result)


def _s(args: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def shown_path(args: dict[str, Any], cwd: str | None) -> str:
    """The file a call with input ``args`` works on, as its unit shows it: relative to
    ``cwd`` when inside it; '' for none."""
    path = _s(args, "file_path", "notebook_path")
    return relativize(path, cwd) if path else ""


def describe(
    name: str,
    args: dict[str, Any],
    call: ToolCall,
    cwd: str | None,
    shape: UnitShape = DEFAULT_SHAPE,
) -> tuple[str, str, tuple[str, ...]]:
    """(first line, salient body, files) of one tool call; an empty first line drops it.
    Of what the tool returned, the body keeps ``shape``'s first and last lines."""

    def kept(output: str) -> str:
        return head_and_tail(output, shape.head_lines, shape.tail_lines)

    rel = shown_path(args, cwd)
    files = (rel,) if rel else ()
    result = call.result
    if name == "Bash":
        command = _s(args, "command").strip()
        if not command:
            return "", "", ()
        head = "$ " + command[:MAX_COMMAND_CHARS]
        description = _s(args, "description")
        note = f"({one_line(description, 160)})\n" if description else ""
        launch = output_of(args)
        if launch:  # it reads a background command's output file: that command first
            head, note = launch, f"{head}\n{note}"
        return head, note + kept(_output(without_output_file(result))), ()
    if name in OUTPUT_TOOLS:
        return _reading_head(args, call), kept(_output(task_output(result))), ()
    if name == "AskUserQuestion":
        questions = asked_questions(args)
        offered = "".join(f"Offered: {options}\n" for _, options in questions if options)
        title = "Asked the user: " + " / ".join(question for question, _ in questions)
        return title, offered + clean_output(result), ()
    if name in ("Edit", "MultiEdit"):
        edits = args.get("edits") if name == "MultiEdit" else [args]
        return f"Edit {rel}", _edit_body(edits if isinstance(edits, list) else []), files
    if name == "Write":
        content = _s(args, "content")
        lines = content.count("\n") + 1 if content else 0
        return f"Write {rel} ({lines} lines)", _file_lines(content), files
    if name == "NotebookEdit":
        return f"Edit notebook {rel}", _file_lines(_s(args, "new_source")), files
    if name in ("Read", "NotebookRead"):
        return f"Read {rel}", "" if call.is_error else kept(_file_lines(result)), files
    if name in ("Grep", "Glob"):
        where = _s(args, "path")
        scope = f" in {relativize(where, cwd)}" if where else ""
        return f"{name} {_s(args, 'pattern')}{scope}", kept(clean_output(result)), ()
    if name in SUBAGENT_TOOLS:
        head = _subagent_head(name, args)
        prompt = _s(args, "prompt")
        asked = f"Asked: {one_line(prompt, 300)}\n" if prompt else ""
        return head, asked + kept(_answer_text(result)), ()
    if name == "WebFetch":
        asked = _s(args, "prompt")
        head = f"WebFetch {_s(args, 'url')}" + (f": {one_line(asked, 200)}" if asked else "")
        return head, kept(_answer_text(result)), ()
    if name == "WebSearch":
        return f"WebSearch {_s(args, 'query')}", kept(_answer_text(with_links_listed(result))), ()
    if not name:  # a result whose call came before the parse started
        return "[result]", kept(clean_output(result)), ()
    try:
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        shown = ""
    head = f"{name} {one_line(shown, 300)}" if shown not in ("", "{}") else name
    return head, kept(clean_output(result)), files


def output_of(args: dict[str, Any]) -> str:
    """``Output of $ mix test (Run the tests)``: the first line of a call that reads a
    background command's output, when its input ``args`` hold the launch
    (:mod:`memlane.capture.launches`); '' otherwise."""
    launch = args.get(LAUNCHED)
    if not isinstance(launch, dict):
        return ""
    command = _s(launch, "command")
    if not command:
        return ""
    description = _s(launch, "description")
    about = f" ({one_line(description, 160)})" if description else ""
    return f"Output of $ {one_line(command, MAX_COMMAND_CHARS)}{about}"


# The fields of the envelope TaskOutput wraps a task's output in that a reader needs:
# <status>completed</status>, <exit_code>0</exit_code> (not its ids and retrieval status).
_TASK_FIELD = re.compile(r"<(status|exit_code)>([^<\n]*)</\1>")


def task_output(result: str) -> str:
    """A ``TaskOutput`` result without its envelope (``<retrieval_status>``,
    ``<task_id>``, ``<status>``, ``<exit_code>``, ``<output>`` …): one status line,
    ``completed, exit code 0``, then the output itself. Any other text as it is."""
    start = result.find("<output>")
    if start < 0:
        return result
    end = result.rfind("</output>")
    output = result[start + len("<output>") : end if end > start else len(result)]
    status = _task_status(result[:start])
    return f"{status}\n{output.strip()}" if status else output.strip()


def _task_status(envelope: str) -> str:
    """``completed, exit code 0``: the status line of a task's output, from the fields of
    its envelope before ``<output>``; '' when it has neither."""
    fields = dict(_TASK_FIELD.findall(envelope))
    code = fields.get("exit_code", "").strip()
    return ", ".join(
        part for part in (fields.get("status", "").strip(), code and f"exit code {code}") if part
    )


def _reading_head(args: dict[str, Any], call: ToolCall) -> str:
    """The first line of a ``TaskOutput``'s unit: the launch it reads, else its task."""
    return output_of(args) or f"Output of background task {read_task(call)}".strip()


def _subagent_head(name: str, args: dict[str, Any]) -> str:
    """``Task (claude-code-guide): Research hooks``: the first line of a subagent's unit."""
    kind = _s(args, "subagent_type")
    label = f"{name} ({kind})" if kind else name
    return f"{label}: {_s(args, 'description')}".rstrip(": ")


def composed_lines(call: ToolCall) -> list[str]:
    """The lines the units of ``call`` make of strings the privacy filter read apart: a
    launch's command with its description (``Output of $ mix test (Run the tests)``), a
    task's status and exit code, a subagent's kind with its description, a failure's
    status with its first error. Each is on a line of its own in those units; filtered
    whole as well, by the source that filtered ``call`` (:func:`memlane.capture.pipeline.
    _scrubbed`), they are that source's lines, and the units showing them are vouched for.
    ``call`` is the filtered one, as its units are cut from it."""
    name = call.name
    if name in SKIPPED_TOOLS or name.startswith(SKIPPED_PREFIXES):
        return []
    args = call.input if isinstance(call.input, dict) else {}
    result = call.result if isinstance(call.result, str) else ""
    if name in OUTPUT_TOOLS:
        start = result.find("<output>")
        lines = [_reading_head(args, call), _task_status(result[:start]) if start >= 0 else ""]
    else:
        lines = [output_of(args)]  # a Bash call reading a task's output file
    if name in SUBAGENT_TOOLS:
        lines.append(_subagent_head(name, args))
    if call.is_error:
        lines.append(failure_line(extract_errors(result), result))
    return [line for line in lines if line]


def _edit_body(edits: list[Any]) -> str:
    """What each edit removed (a few lines) and added, as ``-`` / ``+`` lines."""
    out: list[str] = []
    for edit in edits:
        if not isinstance(edit, dict):
            continue
        old = [ln.strip() for ln in _s(edit, "old_string").split("\n")]
        new = [ln.strip() for ln in _s(edit, "new_string").split("\n")]
        old_set, new_set = set(old), set(new)
        removed = [ln for ln in old if ln not in new_set and not trivial_line(ln)]
        added = [ln for ln in new if ln not in old_set and not trivial_line(ln)]
        out.extend(f"- {ln}" for ln in removed[:MAX_REMOVED_LINES])
        if len(removed) > MAX_REMOVED_LINES:
            out.append(f"- … {len(removed) - MAX_REMOVED_LINES} more lines")
        out.extend(f"+ {ln}" for ln in added)
    return "\n".join(out)


def _file_lines(content: str) -> str:
    """A file's contents without display noise, trivial lines or repeats."""
    return "\n".join([ln for ln in clean_lines(content) if not trivial_line(ln)])


def _answer_text(result: str) -> str:
    """A subagent's or web tool's answer: its text, cleaned (it may hold a JSON list),
    without the resume id and usage Claude Code appends to a subagent's."""
    text = result.strip()
    if text.startswith("[{") and '"text"' in text:
        try:
            blocks = json.loads(text)
            text = "\n".join(
                b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
            )
        except (ValueError, TypeError):
            pass
    return clean_output(without_subagent_trailer(text))
