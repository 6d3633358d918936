"""Streaming parser of Claude Code JSONL transcripts into conversation turns.

A transcript is appended live while the agent works, and the Stop hook ingests
it incrementally from the byte offset reached last time. Hence:

* ``iter_records`` reads the file in binary, one line at a time from a byte
  offset, and yields each record with the offset just *after* its line. A last
  line without its newline is still being written: it is not consumed, so the
  next ingest starts at its beginning. Corrupt lines (bad JSON, invalid UTF-8,
  not an object) are skipped and counted in ``ParseStats``.
* ``iter_turns`` folds records into ``Turn``\\ s. A user turn is a real prompt;
  an assistant turn is one API message (Claude Code writes one record per
  content block, all with the same ``message.id``) plus the tool results that
  answer its tool calls (they arrive in ``user`` records). Thinking blocks,
  meta records (``isMeta``), progress, snapshot, unknown and system records
  (but a local slash command's) are skipped. A compaction summary
  (``isCompactSummary``: Claude's own account of the work so far, errors and fixes
  included) is a turn of role ``compact``, what a local slash command printed (``/mcp``
  → "Reconnected to tidewave.", in user records or, since Claude Code 2.1, system
  records of subtype ``local_command``) one of role ``local``.
  ``Turn.text`` keeps a tool output's first 20 and last 5 lines; ``Turn.blocks``
  keeps the turn's structure for units (``memlane.capture.units``): its text
  blocks in order, and each tool call with its input and whole result (up to
  ``MAX_RESULT_CHARS``).

Parsing from the ``end_offset`` of any turn yields exactly the turns that
follow it in a full parse: a turn depends on no state before its first record.
The exception: one user record can end two turns (tool results closing the
assistant turn, then a prompt); both share its end offset, so a resume point
must never fall between them (the ingest keeps them in one batch).

Subagent transcripts (``<session>/subagents/agent-<id>.jsonl``, records with
``isSidechain`` and ``agentId``) carry the *parent's* ``sessionId``; their turns
say ``is_subagent`` and give ``agent_id``, and ``subagent_session_id`` derives a
stable id for the subagent's own session.
"""

from __future__ import annotations

import json
import os.path
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from memlane.capture.metadata import (
    SUBAGENT_TOOLS,
    TOOL_MARKER,
    extract_errors,
    extract_paths,
    relativize,
)
from memlane.jsonlines import READ_BUFFER, read_lines
from memlane.privacy import mask_env_file, shows_env_file
from memlane.text import display_text, without_line_numbers
from memlane.timeparse import in_range
from memlane.utf8 import storable_json

HEAD_LINES = 20
TAIL_LINES = 5
# One minified line can be megabytes; a recall chunk gains nothing from it.
MAX_LINE_CHARS = 400
MAX_TOOL_INPUT_CHARS = 300
MAX_TURN_FILES = 50
# A tool result kept in Turn.blocks beyond this is cut (units keep far less of it).
MAX_RESULT_CHARS = 40_000
# A turn's text beyond this is cut: a 50 MB pasted prompt would otherwise become
# 25,000 chunks, and ingesting them would outlast the Stop hook's budget, so the
# rolled-back batch would be retried (and time out) on every Stop.
MAX_TURN_CHARS = 200_000
TURN_TRUNCATION_MARK = "\n…[turn truncated by memlane]"

# Record types that never make a turn (listed to document what real
# transcripts contain; anything else unknown is skipped too).
SKIPPED_TYPES = frozenset(
    ("summary", "system", "progress", "file-history-snapshot", "queue-operation")
)

_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_LOCAL_STDOUT = re.compile(r"</?local-command-stdout>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
# Any line holding a user or assistant record, or a local slash command's system
# record, contains this; progress records (about 40% of a real transcript's bytes)
# mostly do not, and are never decoded.
_TURN_RECORD = re.compile(rb'"type"\s*:\s*"(?:user|assistant)"|"subtype"\s*:\s*"local_command"')
# In compact JSON this byte string cannot occur inside a string value (its
# quote would be escaped), only as a key.
_RESULT_COPY = b',"toolUseResult":'
_TAG = re.compile(r"</?[a-z_-]+>")
_SUBAGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")


@dataclass(slots=True)
class ParseStats:
    """Counters filled while parsing; ``end_offset`` is the last byte consumed."""

    records: int = 0
    corrupt: int = 0
    # Lines passed over undecoded because they cannot hold what was asked for.
    skipped: int = 0
    end_offset: int = 0
    lines: int = 0  # consumed, whatever they held
    # The parse stopped at its ReadLimit, not at the end of the file.
    stopped: bool = False


@dataclass(frozen=True, slots=True)
class ReadLimit:
    """How much of a transcript one parse reads: an ingest batch's share
    (:mod:`memlane.capture.pipeline`), counted from its start offset.

    Reading, not storing, is what a crafted transcript makes long (200 MB of ``1``
    lines hold no record: no turn ends, so no batch did), and a line costs ~0.6 µs to
    read whatever it holds, so lines count as well as bytes. Past ``soft_bytes`` or
    ``soft_lines`` the parse stops at the first line where no turn is open (its caller
    ends a batch at a turn's end anyway), as at the end of the file: resuming there
    yields what a full parse would. Past ``bytes`` or ``lines`` it stops whatever: the
    open turn ends where it was cut, as at the end of a file still being written, and a
    line longer than ``MAX_LINE_BYTES`` is read no further than ``bytes``.
    """

    soft_bytes: int
    soft_lines: int
    bytes: int
    lines: int

    def soft_reached(self, stats: ParseStats, start: int) -> bool:
        """Whether a parse from ``start`` that filled ``stats`` read past the soft bound."""
        return stats.end_offset - start >= self.soft_bytes or stats.lines >= self.soft_lines

    def hard_reached(self, stats: ParseStats, start: int) -> bool:
        """Whether a parse from ``start`` that filled ``stats`` read past the hard bound."""
        return stats.end_offset - start >= self.bytes or stats.lines >= self.lines


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of an assistant turn and the result that answered it."""

    name: str
    input: Any
    id: str | None = None
    result: str = ""
    is_error: bool = False
    answered: bool = False


@dataclass(frozen=True, slots=True)
class Turn:
    """One user prompt, one assistant message with its tool calls and results, or a
    compaction summary."""

    role: str  # 'user' | 'assistant' | 'compact' | 'local' (a local command's output)
    text: str
    tool_names: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    timestamp: datetime | None = None
    uuid: str | None = None
    session_id: str | None = None
    is_subagent: bool = False
    end_offset: int = 0
    start_offset: int = 0
    agent_id: str | None = None
    # Text blocks (str) and tool calls in order; a prompt or summary is one text block.
    blocks: tuple[str | ToolCall, ...] = ()
    cwd: str | None = None

    @property
    def parent_session_id(self) -> str | None:
        """The session that spawned this subagent (None for a main-session turn)."""
        return self.session_id if self.is_subagent else None


@dataclass(frozen=True, slots=True)
class TranscriptSource:
    """What a transcript path alone says about its session."""

    is_subagent: bool
    agent_id: str | None = None
    parent_session_id: str | None = None


# Claude Code's compaction agent keeps its transcript beside the subagents'
# (``agent-acompact-<id>.jsonl``): the compaction instructions and the summary that the
# session's own transcript records at its compact boundary. It is no subagent's work, and
# ingesting it stored that summary twice and the instructions as a request.
COMPACTION_AGENT_PREFIX = "acompact-"


def is_compaction_agent(agent_id: str | None) -> bool:
    """Whether ``agent_id`` names Claude Code's compaction agent, not a subagent."""
    return bool(agent_id) and str(agent_id).startswith(COMPACTION_AGENT_PREFIX)


def subagent_session_id(parent_session_id: str, agent_id: str) -> str:
    """Stable session id for a subagent's own transcript (agent ids are short)."""
    return f"{parent_session_id}:agent-{agent_id}"


def transcript_source(path: str) -> TranscriptSource:
    """Detect a subagent transcript from its path: ``<session>/subagents/agent-<id>.jsonl``."""
    directory, name = os.path.split(path)
    match = _SUBAGENT_FILE.match(name)
    parent_dir, sub = os.path.split(directory)
    if sub == "subagents" and match:
        return TranscriptSource(True, match.group(1), os.path.basename(parent_dir) or None)
    return TranscriptSource(False)


def iter_records(
    path: str,
    start_offset: int = 0,
    stats: ParseStats | None = None,
    *,
    lean: bool = False,
    limit: ReadLimit | None = None,
    turn_open: Callable[[], bool] | None = None,
) -> Iterator[tuple[dict[str, Any], int]]:
    """Yield ``(record, end_offset)`` for each complete JSON line from ``start_offset``.

    Never loads the whole file, nor more than ``MAX_LINE_BYTES`` of one line. A
    trailing line without ``\\n`` is left for the next call. Corrupt lines and longer
    ones are skipped (``stats.corrupt``), except, with ``lean``, a longer one whose head
    holds the record without its ``toolUseResult``; blank lines are consumed silently.
    ``stats.end_offset`` ends at the first byte not consumed, which is where the next
    incremental parse should start.

    ``lean=True`` yields only what turns are made of, for speed (JSON decoding
    is most of a parse): lines that cannot hold a user or assistant record are
    consumed undecoded (``stats.skipped``), and a tool-result record loses its
    top-level ``toolUseResult`` (a second copy of the result, often the whole
    edited file) and the keys after it, none of which a turn needs.

    ``limit``: stop early (``stats.stopped``), as :class:`ReadLimit` says; ``turn_open``
    tells whether the caller holds a turn still open (its soft bound waits for none).
    """
    if stats is None:
        stats = ParseStats()
    offset = start = max(0, start_offset)
    stats.end_offset = offset
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        handle.seek(offset)
        lines = read_lines(handle, None if limit is None else limit.bytes)
        while True:
            if limit is not None and (
                limit.hard_reached(stats, start)
                or (
                    limit.soft_reached(stats, start) and not (turn_open is not None and turn_open())
                )
            ):
                stats.stopped = True
                return
            read = next(lines, None)
            if read is None:
                return
            if not read.ended and not read.cut:
                return  # still being written: resume here next time
            offset += read.size
            stats.end_offset = offset
            stats.lines += 1
            line = read.head  # when cut, the next parse resumes inside it
            if line.isspace():
                continue
            if lean and _TURN_RECORD.search(line) is None:
                stats.skipped += 1
                continue
            # A line held in part is usually long by the copy of an edited file after
            # the message: a turn needs the message alone, which the line's head holds.
            record = _decode(line, lean) if read.whole else _decode_head(line) if lean else None
            if record is None:
                stats.corrupt += 1
                continue
            stats.records += 1
            yield record, offset


def _decode(line: bytes, lean: bool) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None when the line is not one."""
    if lean:
        record = _decode_head(line)
        if record is not None:
            return record
    return _loads(line)


def _decode_head(line: bytes) -> dict[str, Any] | None:
    """The record on ``line`` without its top-level ``toolUseResult`` and the keys after
    it, when those are all it loses (a message and its uuid come first); else None."""
    cut = line.find(_RESULT_COPY)
    if cut > 0:
        # Valid only if the key is at the top level (a nested one leaves an object
        # unclosed).
        record = _loads(line[:cut] + b"}")
        if record is not None and "message" in record and "uuid" in record:
            return record
    return None


# A run of 19 digits or more may be a number beyond 64 bits, which orjson reads as a
# float and json as an int. Digits become "0" and the rest " ", and the run is looked
# for (~1 ms per MB; a regex took ~15).
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def _loads(data: bytes) -> dict[str, Any] | None:
    """``json.loads(data)`` when it is an object, else None; by orjson (~1.7x faster on
    a transcript) unless it refuses the line or the line holds a long number, where
    the two differ: then by json (a BOM, NaN, a lone surrogate are json's to take; a lone
    surrogate, which UTF-8 cannot store, becomes U+FFFD)."""
    if _LONG_RUN not in data.translate(_DIGITS_ONLY):
        try:
            record = orjson.loads(data)
        except orjson.JSONDecodeError:
            return _loads_json(data)
        return record if isinstance(record, dict) else None
    return _loads_json(data)


# json.loads without its per-call Python layers (decode, raw_decode, two regex
# matches): ~10% of decoding a transcript. Same grammar and the same errors.
_SCAN_ONCE: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_JSON_SPACE = " \t\n\r"


def _loads_json(data: bytes) -> dict[str, Any] | None:
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
        record, end = _SCAN_ONCE(text, len(text) - len(text.lstrip(_JSON_SPACE)))
        if text[end:].strip(_JSON_SPACE):
            return None  # extra data after the value
    except (ValueError, RecursionError, StopIteration):
        # ValueError covers bad JSON and invalid UTF-8, StopIteration a line with
        # no value at all, RecursionError a pathologically nested line. Either way
        # the line is unusable.
        return None
    return storable_json(record, data) if isinstance(record, dict) else None


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 timestamp (``2026-02-10T21:11:56.846Z``), aware, or None when absent or
    bad. One without a zone is UTC (Claude Code writes UTC); one outside the range every
    interface takes (``timeparse.in_range``: 1970 to 9000) is bad, as memlane's own
    restore, import and sync would refuse the memory it dated."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment if in_range(moment) else None


def trim_output(text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> str:
    """Keep the first ``head`` and last ``tail`` lines with an elision marker between."""
    text = text.strip("\n")
    count = text.count("\n") + 1
    if count > head + tail:
        # Split only the ends: outputs can be thousands of lines long.
        first = text.split("\n", head)[:head]
        last = text.rsplit("\n", tail)[-tail:] if tail else []
        lines = [*first, f"… [{count - head - tail} lines omitted] …", *last]
    else:
        lines = text.split("\n")
    return "\n".join(
        ln if len(ln) <= MAX_LINE_CHARS else ln[: MAX_LINE_CHARS - 1] + "…" for ln in lines
    )


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_tool_call(name: str, tool_input: Any, cwd: str | None) -> tuple[str, tuple[str, ...]]:
    """One line saying what a tool call did, and the files it names."""
    args = tool_input if isinstance(tool_input, dict) else {}
    files: list[str] = []
    for key in ("file_path", "notebook_path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            files.append(relativize(value, cwd))
    if name == "Bash":
        detail = _s(args.get("command"))
    elif files:
        detail = files[0]
        if name == "Write":
            detail += f" ({_s(args.get('content')).count(chr(10)) + 1} lines)"
        elif name == "MultiEdit" and isinstance(args.get("edits"), list):
            detail += f" ({len(args['edits'])} edits)"
    elif name in ("Grep", "Glob"):
        where = _s(args.get("path"))
        detail = _s(args.get("pattern")) + (f" in {relativize(where, cwd)}" if where else "")
    elif name in SUBAGENT_TOOLS:
        detail = _s(args.get("description"))
        prompt = _s(args.get("prompt"))
        if prompt:
            detail = f"{detail}: {prompt}" if detail else prompt
    elif name == "WebFetch":
        detail = _s(args.get("url"))
    elif name == "WebSearch":
        detail = _s(args.get("query"))
    else:
        try:
            detail = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            detail = ""  # unserializable input: the tool name alone still says something
        if detail == "{}":
            detail = ""
    marker = TOOL_MARKER.format(name=name)
    detail = _clip(detail, MAX_TOOL_INPUT_CHARS)
    return (f"{marker} {detail}" if detail else marker), tuple(files)


def result_text(content: Any) -> str:
    """The text of a ``tool_result`` (or message) ``content``: a string, or the text blocks
    of a list, other blocks as ``[type]``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif isinstance(block.get("type"), str):
                    parts.append(f"[{block['type']}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def clean_prompt(text: str) -> str:
    """The meaningful part of a user record's text ('' when it is only noise).

    Drops system reminders, local command output, background-task
    notifications and interruption notices (the harness talking, not the user);
    turns a slash command into ``/name args`` (nothing without args).
    """
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    stripped = text.strip()
    if not stripped or _INTERRUPTED.match(stripped):
        return ""
    if stripped.startswith(("<local-command-stdout>", "<local-command-stderr>")):
        return ""
    if stripped.startswith("<local-command-caveat>"):
        return ""
    name = _COMMAND_NAME.search(stripped)
    if name:
        args = _COMMAND_ARGS.search(stripped)
        arg_text = args.group(1).strip() if args else ""
        return f"{name.group(1).strip()} {arg_text}" if arg_text else ""
    if stripped.startswith("<task-notification>"):
        return ""  # the harness reporting a background task: not something the user asked
    return stripped


class _Builder:
    """Accumulates the records of one turn until the next turn starts."""

    __slots__ = (
        "agent_id",
        "blocks",
        "calls",
        "cwd",
        "end_offset",
        "errors",
        "files",
        "is_subagent",
        "message_id",
        "parts",
        "role",
        "session_id",
        "start_offset",
        "timestamp",
        "tool_ids",
        "tool_names",
        "uuid",
    )

    def __init__(self, role: str, record: dict[str, Any], source: TranscriptSource, start: int):
        self.role = role
        self.message_id: str | None = None
        # A tool call's line is followed by a list that receives its results,
        # so each result lands right after the call that produced it.
        self.parts: list[str | list[str]] = []
        self.tool_names: list[str] = []
        self.files: list[str] = []
        self.errors: list[str] = []
        self.timestamp = parse_timestamp(record.get("timestamp"))
        uuid = record.get("uuid")
        self.uuid = uuid if isinstance(uuid, str) else None
        session = record.get("sessionId")
        self.session_id = session if isinstance(session, str) else source.parent_session_id
        agent = record.get("agentId")
        self.agent_id = agent if isinstance(agent, str) else source.agent_id
        self.is_subagent = (
            source.is_subagent or record.get("isSidechain") is True or isinstance(agent, str)
        )
        self.start_offset = start
        self.end_offset = start
        # Tool call id -> (tool name, slot for its results, shows a dotenv file).
        self.tool_ids: dict[str, tuple[str, list[str], bool]] = {}
        self.calls: dict[str, list[Any]] = {}
        # Text blocks, and per tool call [name, input, id, result, is_error, answered].
        self.blocks: list[str | list[Any]] = []
        cwd = record.get("cwd")
        self.cwd = cwd if isinstance(cwd, str) else None

    def build(self) -> Turn | None:
        flat: list[str] = []
        for part in self.parts:
            if isinstance(part, list):
                flat.extend(part)
            elif part:
                flat.append(part)
        text = "\n\n".join(flat).strip()
        if not text:
            return None
        if len(text) > MAX_TURN_CHARS:
            text = text[: MAX_TURN_CHARS - len(TURN_TRUNCATION_MARK)] + TURN_TRUNCATION_MARK
        return Turn(
            role=self.role,
            text=text,
            tool_names=tuple(dict.fromkeys(self.tool_names)),
            files=tuple(dict.fromkeys(self.files))[:MAX_TURN_FILES],
            errors=tuple(dict.fromkeys(self.errors))[:10],
            timestamp=self.timestamp,
            uuid=self.uuid,
            session_id=self.session_id,
            is_subagent=self.is_subagent,
            end_offset=self.end_offset,
            start_offset=self.start_offset,
            agent_id=self.agent_id,
            blocks=tuple(_block(b) for b in self.blocks),
            cwd=self.cwd,
        )


def _block(block: str | list[Any]) -> str | ToolCall:
    if isinstance(block, str):
        return block
    name, tool_input, tool_id, result, is_error, answered = block
    return ToolCall(name, tool_input, tool_id, result, is_error, answered)


def _sidechain(record: dict[str, Any], source: TranscriptSource) -> bool:
    return (
        source.is_subagent
        or record.get("isSidechain") is True
        or isinstance(record.get("agentId"), str)
    )


def iter_turns(
    path: str,
    start_offset: int = 0,
    stats: ParseStats | None = None,
    limit: ReadLimit | None = None,
) -> Iterator[Turn]:
    """Yield the turns of the transcript at ``path`` from ``start_offset``.

    The last turn is yielded at end of file even if more of it may be appended
    later; the caller stores ``stats.end_offset`` (or the last turn's
    ``end_offset``) and resumes from there. So it is where ``limit`` stops the parse
    (``stats.stopped``).
    """
    source = transcript_source(path)
    current: _Builder | None = None
    last_command = ""  # a slash command without arguments, until its output arrives
    previous_end = max(0, start_offset)
    records = iter_records(
        path,
        start_offset,
        stats,
        lean=True,
        limit=limit,
        turn_open=lambda: current is not None or last_command != "",
    )
    for record, end in records:
        start, previous_end = previous_end, end
        kind = record.get("type")
        if kind == "system" and record.get("subtype") == "local_command":
            # Newer Claude Code writes a local slash command and what it printed as
            # system records; older versions as user records (below).
            raw = record.get("content")
            if isinstance(raw, str):
                local, last_command = _local_event(raw, last_command)
                if local is not None:
                    yield from _standalone(current, "local", local, record, source, start, end)
                    current = None
            continue
        if kind not in ("user", "assistant"):
            continue
        if record.get("isMeta") is True:
            continue
        if record.get("isCompactSummary") is True:
            summary = _compact_summary(record)
            if summary is not None:
                yield from _standalone(current, "compact", summary, record, source, start, end)
                current = None
            continue
        if record.get("isVisibleInTranscriptOnly") is True:
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else None
        side = _sidechain(record, source)
        if current is not None and current.is_subagent != side:
            turn = current.build()
            current = None
            if turn is not None:
                yield turn

        if kind == "assistant":
            blocks = content if isinstance(content, list) else [content]
            message_id = message.get("id") or record.get("requestId")
            if not isinstance(message_id, str):
                message_id = None
            same = (
                current is not None
                and current.role == "assistant"
                and message_id is not None
                and current.message_id == message_id
            )
            if not same:
                if current is not None:
                    turn = current.build()
                    if turn is not None:
                        yield turn
                current = _Builder("assistant", record, source, start)
                current.message_id = message_id
            assert current is not None
            current.end_offset = end
            _add_assistant_blocks(current, blocks, cwd)
            continue

        # A user record: tool results go to the open assistant turn, text is a prompt.
        user_blocks: Any = [content] if isinstance(content, str) else content
        if not isinstance(user_blocks, list):
            continue
        prompt_parts: list[str] = []
        results: list[dict[str, Any]] = []
        for block in user_blocks:
            if isinstance(block, str):
                prompt_parts.append(block)
            elif isinstance(block, dict):
                if block.get("type") == "tool_result":
                    results.append(block)
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    prompt_parts.append(block["text"])
                elif block.get("type") == "image":
                    prompt_parts.append("[image]")
        if results:
            if current is None or current.role != "assistant":
                if current is not None:
                    turn = current.build()
                    if turn is not None:
                        yield turn
                # Results whose call came before start_offset: keep them anyway.
                current = _Builder("assistant", record, source, start)
            current.end_offset = end
            for block in results:
                _add_tool_result(current, block, cwd)
        raw = "\n\n".join(prompt_parts).strip() if prompt_parts else ""
        prompt = clean_prompt(raw) if raw else ""
        local, last_command = _local_event(raw, last_command)
        if local is not None:
            yield from _standalone(current, "local", local, record, source, start, end)
            current = None
        if prompt:
            if current is not None:
                turn = current.build()
                if turn is not None:
                    yield turn
            current = _Builder("user", record, source, start)
            current.end_offset = end
            current.parts.append(prompt)
            current.blocks.append(prompt)
            current.files.extend(relativize(p, cwd) for p in extract_paths(prompt))
    if current is not None:
        turn = current.build()
        if turn is not None:
            yield turn


def _local_event(raw: str, command: str) -> tuple[str | None, str]:
    """A local slash command's part in ``raw`` (the text of a user or system record),
    after the command ``command`` named last: what it printed, after the command's name
    (not a prompt, but an event of the session worth a unit of its own; None when
    ``raw`` is no command output or an empty one), and the command to name next (the
    one ``raw`` names, '' once its output came)."""
    if not raw.startswith("<local-command-stdout>"):
        named = _COMMAND_NAME.search(raw) if raw.startswith("<command-") else None
        return None, named.group(1).strip() if named else ""
    output = display_text(_LOCAL_STDOUT.sub("", raw)).strip()
    if not output:
        return None, ""
    return (f"{command}: {output}" if command else output), ""


_COMPACT_HEAD = "This session is being continued from a previous conversation"
_COMPACT_TAIL = "If you need specific details from before compaction"


def _standalone(
    current: _Builder | None,
    role: str,
    text: str,
    record: dict[str, Any],
    source: TranscriptSource,
    start: int,
    end: int,
) -> Iterator[Turn]:
    """The turn being built (it ends here), then a turn of its own holding only ``text``:
    the compaction summary, or what a local slash command printed."""
    if current is not None:
        turn = current.build()
        if turn is not None:
            yield turn
    single = _Builder(role, record, source, start)
    single.end_offset = end
    single.parts.append(text)
    single.blocks.append(text)
    turn = single.build()
    if turn is not None:
        yield turn


def _compact_summary(record: dict[str, Any]) -> str | None:
    """The text of a compaction summary record, without Claude Code's framing lines."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    text = result_text(content).strip()
    if not text:
        return None
    lines = text.split("\n")
    if lines and lines[0].startswith(_COMPACT_HEAD):
        lines = lines[1:]
    for index, line in enumerate(lines):
        if line.startswith(_COMPACT_TAIL):
            lines = lines[:index]
            break
    return "\n".join(lines).strip() or None


def _add_assistant_blocks(builder: _Builder, blocks: list[Any], cwd: str | None) -> None:
    for block in blocks:
        if isinstance(block, str):
            builder.parts.append(block.strip())
            if block.strip():
                builder.blocks.append(block.strip())
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = block["text"].strip()
            builder.parts.append(text)
            if text:
                builder.blocks.append(text)
            builder.files.extend(relativize(p, cwd) for p in extract_paths(text))
        elif kind == "tool_use" and isinstance(block.get("name"), str):
            name = block["name"]
            line, files = describe_tool_call(name, block.get("input"), cwd)
            slot: list[str] = []
            builder.parts.append(line)
            builder.parts.append(slot)
            builder.tool_names.append(name)
            builder.files.extend(files)
            tool_id = block.get("id") if isinstance(block.get("id"), str) else None
            call: list[Any] = [name, block.get("input"), tool_id, "", False, False]
            builder.blocks.append(call)
            if tool_id is not None:
                env = shows_env_file(name, block.get("input"))
                builder.tool_ids[tool_id] = (name, slot, env)
                builder.calls[tool_id] = call
        # thinking / redacted_thinking / anything else: not recall material.


def _add_tool_result(builder: _Builder, block: dict[str, Any], cwd: str | None) -> None:
    text = result_text(block.get("content"))
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    text = text.strip("\n")
    is_error = block.get("is_error") is True
    tool_id = block.get("tool_use_id")
    name, slot, env = (
        builder.tool_ids.get(tool_id, ("", None, False))
        if isinstance(tool_id, str)
        else ("", None, False)
    )
    if env:
        # A dotenv file read or printed: every value goes. Read's line numbers go first,
        # as for the filter after it (pipeline.as_read): a rule reading several lines (a
        # private key cut by the output limit) must see the file as it reads.
        text = mask_env_file(without_line_numbers(text))
    call = builder.calls.get(tool_id) if isinstance(tool_id, str) else None
    if call is not None:
        call[3] = text[:MAX_RESULT_CHARS]
        call[4] = is_error
        call[5] = True
    elif text.strip():  # its call came before the parse started
        builder.blocks.append(["", None, tool_id, text[:MAX_RESULT_CHARS], is_error, True])
    if is_error or name == "Bash":
        found = extract_errors(text)
        if is_error and not found and text:
            found = (_TAG.sub("", text.strip().split("\n", 1)[0])[:200],)
        builder.errors.extend(found)
    if not text.strip():
        return
    label = "[error]" if is_error else "[result]"
    rendered = f"{label} {trim_output(text)}"
    if slot is not None:
        slot.append(rendered)
    else:
        builder.parts.append(rendered)
