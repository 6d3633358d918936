"""Streaming parser of Codex CLI session rollouts into the same turns as Claude Code's.

Codex writes each session to ``~/.codex/sessions/YYYY/MM/DD/rollout-…jsonl``,
one JSON record per line: ``{"timestamp", "type", "payload"}`` where ``type``
is ``session_meta`` (the session id and working directory), ``turn_context``
(the working directory may change), ``response_item`` (a message, a tool call
or its output), ``compacted`` (a compaction summary) or ``event_msg`` (UI
events that repeat the response items: skipped).

A response item becomes part of a :class:`~memlane.capture.transcript.Turn`:

* a user message is a user turn — unless it is the harness talking
  (``<environment_context>``, ``<user_instructions>``, AGENTS.md instructions);
* assistant messages, tool calls (``function_call``, ``custom_tool_call``,
  ``local_shell_call``) and their outputs form one assistant turn until the
  next user message. Tools are named as Claude Code's (``shell`` → ``Bash``,
  ``apply_patch`` → ``Edit``), so units and observations read them alike; an
  output whose ``metadata.exit_code`` is not 0 is an error;
* reasoning items are skipped, as Claude Code's thinking blocks are.

Offsets follow :mod:`memlane.capture.transcript`: a turn's ``end_offset`` is
the byte after its last record, and parsing resumes from any of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memlane.capture.dialects import patch_as_edit, shell_command, shell_output
from memlane.capture.transcript import (
    MAX_RESULT_CHARS,
    ParseStats,
    ReadLimit,
    ToolCall,
    Turn,
    iter_records,
    parse_timestamp,
)

_HARNESS = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<INSTRUCTIONS>")
_SHELL_TOOLS = frozenset(("shell", "exec_command", "local_shell", "container.exec", "unified_exec"))
_SKIPPED_TOOLS = frozenset(("update_plan",))
_TOOL_NAMES = {"apply_patch": "Edit", "web_search": "WebSearch", "view_image": "Read"}
_SNIFF_BYTES = 4096


def is_codex_rollout(path: str) -> bool:
    """Whether the file at ``path`` is a Codex rollout (its first record says so)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return False
    first = head.split(b"\n", 1)[0]
    return b'"session_meta"' in first or (b'"instructions"' in first and b'"id"' in first)


def session_meta(path: str) -> dict[str, Any]:
    """The ``session_meta`` payload of a rollout (id, cwd, timestamp), {} when absent."""
    for record, _ in iter_records(path):
        if record.get("type") == "session_meta" and isinstance(record.get("payload"), dict):
            return dict(record["payload"])
        if "instructions" in record and "id" in record:  # the older, unwrapped first line
            return record
        break
    return {}


class _Turn:
    __slots__ = ("blocks", "calls", "cwd", "end", "role", "session", "start", "timestamp")

    def __init__(self, role: str, start: int, stamp: Any, session: str | None, cwd: str | None):
        self.role = role
        self.start = start
        self.end = start
        self.timestamp = parse_timestamp(stamp)
        self.session = session
        self.cwd = cwd
        self.blocks: list[str | list[Any]] = []
        self.calls: dict[str, list[Any]] = {}

    def build(self) -> Turn | None:
        blocks: list[str | ToolCall] = []
        for block in self.blocks:
            if isinstance(block, str):
                blocks.append(block)
            else:
                blocks.append(ToolCall(*block))
        if not blocks:
            return None
        texts = [b if isinstance(b, str) else f"[tool {b.name}]" for b in blocks]
        names = tuple(dict.fromkeys(b.name for b in blocks if isinstance(b, ToolCall)))
        return Turn(
            role=self.role,
            text="\n\n".join(texts),
            tool_names=names,
            timestamp=self.timestamp,
            session_id=self.session,
            end_offset=self.end,
            start_offset=self.start,
            blocks=tuple(blocks),
            cwd=self.cwd,
        )


def iter_codex_turns(
    path: str,
    start_offset: int = 0,
    stats: ParseStats | None = None,
    limit: ReadLimit | None = None,
) -> Iterator[Turn]:
    """The turns of the Codex rollout at ``path`` from ``start_offset`` (see the docstring;
    ``limit`` as for :func:`memlane.capture.transcript.iter_turns`)."""
    meta = session_meta(path)
    session = meta.get("id") if isinstance(meta.get("id"), str) else None
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    current: _Turn | None = None
    previous_end = max(0, start_offset)
    records = iter_records(
        path, start_offset, stats, limit=limit, turn_open=lambda: current is not None
    )
    for record, end in records:
        start, previous_end = previous_end, end
        kind = record.get("type")
        payload = record.get("payload")
        if not isinstance(payload, dict):
            payload = record  # the older format has no envelope
        stamp = record.get("timestamp")
        if kind == "turn_context" and isinstance(payload.get("cwd"), str):
            cwd = payload["cwd"]
            continue
        if kind == "compacted":
            message = payload.get("message")
            if isinstance(message, str) and message.strip():
                if current is not None and (turn := current.build()) is not None:
                    yield turn
                compact = _Turn("compact", start, stamp, session, cwd)
                compact.blocks.append(message.strip())
                compact.end = end
                current = None
                if (turn := compact.build()) is not None:
                    yield turn
            continue
        item = payload.get("type")
        if item == "message":
            text = _message_text(payload.get("content"))
            role = payload.get("role")
            if not text:
                continue
            if role == "user":
                if text.lstrip().startswith(_HARNESS):
                    continue
                if current is not None and (turn := current.build()) is not None:
                    yield turn
                current = _Turn("user", start, stamp, session, cwd)
                current.blocks.append(text)
                current.end = end
                if (turn := current.build()) is not None:
                    yield turn
                current = None
            elif role == "assistant":
                current = current or _Turn("assistant", start, stamp, session, cwd)
                current.blocks.append(text)
                current.end = end
        elif item in ("function_call", "custom_tool_call", "local_shell_call"):
            call = _call(payload)
            if call is None:
                continue
            current = current or _Turn("assistant", start, stamp, session, cwd)
            current.blocks.append(call)
            if isinstance(call[2], str):
                current.calls[call[2]] = call
            current.end = end
        elif item in ("function_call_output", "custom_tool_call_output"):
            call_id = payload.get("call_id")
            if current is None or not isinstance(call_id, str) or call_id not in current.calls:
                continue  # its call came before the parse started, or was skipped
            output, failed = _output(payload.get("output"))
            found = current.calls[call_id]
            found[3], found[4], found[5] = output[:MAX_RESULT_CHARS], failed, True
            current.end = end
    if current is not None and (turn := current.build()) is not None:
        yield turn


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"].strip()
    ]
    return "\n\n".join(parts).strip()


def _call(payload: dict[str, Any]) -> list[Any] | None:
    """[name, input, id, result, is_error, answered] of a Codex tool call, named as Claude's."""
    name = payload.get("name")
    call_id = payload.get("call_id") or payload.get("id")
    args: Any
    if payload.get("type") == "local_shell_call":
        action = payload.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        name, args = "shell", {"command": command}
    elif payload.get("type") == "custom_tool_call":
        args = {"input": payload.get("input")}
    else:
        raw = payload.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            args = {"arguments": raw}
    if not isinstance(name, str) or name in _SKIPPED_TOOLS:
        return None
    args = args if isinstance(args, dict) else {"arguments": args}
    if name in _SHELL_TOOLS:
        command = shell_command(args.get("command", args.get("cmd")))
        return [
            "Bash",
            {"command": command if isinstance(command, str) else ""},
            call_id,
            "",
            False,
            False,
        ]
    if name == "apply_patch":
        patch = args.get("input") or args.get("patch") or ""
        return ["Edit", patch_as_edit(str(patch)), call_id, "", False, False]
    return [_TOOL_NAMES.get(name, name), args, call_id, "", False, False]


def _output(raw: Any) -> tuple[str, bool]:
    """(text, failed) of a tool output: a string, or a shell result with its exit code
    (:func:`memlane.capture.dialects.shell_output`)."""
    found = shell_output(raw)
    if found is not None:
        body, code = found
        failed = code is not None and code != 0
        return (f"Exit code {code}\n{body}" if failed else body), failed
    if isinstance(raw, str):
        return raw, False
    if isinstance(raw, dict):
        return json.dumps(raw, ensure_ascii=False), False
    return "", False
