"""PostToolUse tool events into typed observations, by rules only.

``classify_tool_event`` maps one tool call to a ``CapturedObservation`` or to
None when the event is not worth remembering:

=========================================  ============
Write, Edit, MultiEdit, NotebookEdit       file-write (a failed one: tool-use, "failed")
Read, Grep, Glob, LS, NotebookRead         file-read (paths only, never contents)
Bash                                       command (command + short output or error)
WebFetch, WebSearch                        research
Agent, Task                                delegation
mcp__*, other tools                        tool-use
=========================================  ============

Dropped: TodoWrite/TodoRead, planning and thinking tools (ExitPlanMode,
sequential-thinking, ``think``, ``decide``...), background-output polling, and
memlane's own MCP tools (storing them would make memory remember itself).

Hook payloads are untrusted: any field may have any JSON type. Every access is
type-checked and an unusable event gives None, never an exception. Each stored
field is capped at 500 characters and the title at 80. Paths are made relative
to ``cwd`` when they lie inside it. Secrets and ``<private>`` blocks are *not*
removed here: the facade does it before anything is hashed or written. One
exception: a call that shows a dotenv file (Read/Write/Edit of ``.env``, ``cat
.env``, ``printenv``) has every ``KEY=VALUE`` value masked here, because only the
tool call says that the text is such a file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from memlane.capture.metadata import (
    SUBAGENT_TOOLS,
    asked_questions,
    exit_code_in,
    extract_errors,
    extract_outcomes,
    extract_paths,
    relativize,
)
from memlane.capture.output import (
    link_line,
    with_links_listed,
    without_output_file,
    without_subagent_trailer,
)
from memlane.capture.task_output import task_read_by_file
from memlane.privacy import mask_env_file, shows_env_file

MAX_FIELD_CHARS = 500
MAX_TITLE_CHARS = 80
MAX_FILES = 20
OUTPUT_HEAD_LINES = 8
OUTPUT_TAIL_LINES = 4

# What a Glob or Grep result says besides its files, in the text the agent reads (all a
# transcript keeps): "Found 3 files" (a Grep listing; "limit: …" may follow), "Found 9 total
# occurrences across 2 files." (a count), a truncation note, or that nothing was found.
_FOUND_FILES = re.compile(r"Found (\d+) files?\b")
_FOUND_ACROSS = re.compile(r"Found \d+ total occurrences? across (\d+) files?\b")
_NOTHING_FOUND = frozenset(("No files found", "No matches found"))
_NUMBERED_LINE = re.compile(r"(.+?):\d+:")  # a content line: path:line:text
_NAMED_LINE = re.compile(r"(.+?):")  # one without its line number: path:text
_LINE_NUMBER = re.compile(r"\d+:")  # one of a search in one file: line:text
_COUNT_LINE = re.compile(r"(.+):\d+")  # a count line: path:matches

FILE_WRITE_TOOLS = frozenset(("Write", "Edit", "MultiEdit", "NotebookEdit"))
FILE_READ_TOOLS = frozenset(("Read", "Grep", "Glob", "LS", "NotebookRead"))
RESEARCH_TOOLS = frozenset(("WebFetch", "WebSearch"))
DROPPED_TOOLS = frozenset(
    (
        "TodoWrite",
        "TodoRead",
        "ExitPlanMode",
        "EnterPlanMode",
        "think",
        "Think",
        "decide",
        "BashOutput",
        "KillBash",
        "KillShell",
        "TaskOutput",
        "TaskStop",
        "ListMcpResourcesTool",
    )
)
DROPPED_PREFIXES = (
    "mcp__memlane__",
    "mcp__plugin_memlane",
    "mcp__sequential-thinking__",
    "mcp__sequential_thinking__",
    "mcp__sequentialthinking__",
)
# Introspection tools of any MCP server: they record the agent thinking aloud.
DROPPED_MCP_TOOLS = frozenset(("sequentialthinking", "sequential_thinking", "think", "decide"))

# Seconds within which the same content of a type counts as a repeat.
REPEAT_WINDOWS: dict[str, int] = {
    "file-read": 300,
    "file-write": 60,
    "command": 60,
    "research": 600,
    "tool-use": 120,
    "delegation": 300,
}
DEFAULT_REPEAT_WINDOW = 60


@dataclass(frozen=True, slots=True)
class CapturedObservation:
    """What a tool event says, ready for the facade to store as an observation."""

    type: str
    title: str
    content: str
    files: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


def repeat_window_seconds(type: str) -> int:
    """Seconds during which an identical observation of ``type`` is a repeat to skip."""
    return REPEAT_WINDOWS.get(type, DEFAULT_REPEAT_WINDOW)


def is_dropped_tool(tool_name: str) -> bool:
    """True for tools whose events are never stored (see the module docstring)."""
    if tool_name in DROPPED_TOOLS or tool_name.startswith(DROPPED_PREFIXES):
        return True
    if tool_name.startswith("mcp__"):
        return tool_name.rsplit("__", 1)[-1].lower() in DROPPED_MCP_TOOLS
    return False


def never_recorded(tool_name: Any, tool_input: Any) -> bool:
    """Whether no observation is ever made of this call, whatever its result: a name that
    is none, a dropped tool (:func:`is_dropped_tool`), or a read of a background task's
    output file (its transcript unit names the launch; what ran, a ``pass show`` maybe,
    is known only there). The PostToolUse hook stores and spools nothing for it."""
    if not isinstance(tool_name, str) or not tool_name.strip() or len(tool_name) > 200:
        return True
    name = tool_name.strip()
    return is_dropped_tool(name) or bool(task_read_by_file(name, tool_input))


def classify_tool_event(
    tool_name: Any, tool_input: Any, tool_response: Any, cwd: Any
) -> CapturedObservation | None:
    """The observation for one PostToolUse event, or None when it is dropped or unusable.

    ``tool_name`` and ``cwd`` should be strings, ``tool_input`` a dict and
    ``tool_response`` a dict or string, as Claude Code sends them; anything
    else yields None (or a poorer observation), never an exception.
    """
    if never_recorded(tool_name, tool_input):
        return None
    name = str(tool_name).strip()
    args = tool_input if isinstance(tool_input, dict) else {}
    base = cwd if isinstance(cwd, str) and cwd else None
    if shows_env_file(name, args):
        args, tool_response = _env_values_masked(args, tool_response)
    if name in FILE_WRITE_TOOLS:
        failure = call_failure(tool_response)
        if failure:
            return _failed_write(name, args, failure, base)
        return _file_write(name, args, base)
    if name in FILE_READ_TOOLS:
        return _file_read(name, args, tool_response, base)
    if name == "Bash":
        return _command(args, tool_response, base)
    if name in RESEARCH_TOOLS:
        return _research(name, args, tool_response)
    if name in SUBAGENT_TOOLS:
        return _delegation(name, args, tool_response)
    return _tool_use(name, args, tool_response)


# -- helpers -------------------------------------------------------------------

# Arguments that name the file or the command, not its contents.
_NOT_CONTENT = frozenset(("file_path", "notebook_path", "path", "command", "description"))


def _env_values_masked(args: dict[str, Any], response: Any) -> tuple[dict[str, Any], Any]:
    """A dotenv file's text (written, edited or printed) with its values masked."""
    masked = {k: v if k in _NOT_CONTENT else _strings_masked(v) for k, v in args.items()}
    return masked, _strings_masked(response)


def _strings_masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_env_file(value)
    if isinstance(value, dict):
        return {k: _strings_masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings_masked(v) for v in value]
    return value


def _str(mapping: dict[str, Any], *keys: str) -> str:
    """The first non-empty string value among ``keys`` ('' when none)."""
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def cap(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str, limit: int) -> str:
    return cap(" ".join(text.split()), limit)


def _title(text: str) -> str:
    return _one_line(text, MAX_TITLE_CHARS)


def _rel(path: str, cwd: str | None) -> str:
    return relativize(path, cwd)


def _files(paths: Any, cwd: str | None) -> tuple[str, ...]:
    if not isinstance(paths, list):
        return ()
    found = [_rel(p, cwd) for p in paths if isinstance(p, str) and p]
    return tuple(dict.fromkeys(cap(p, MAX_FIELD_CHARS) for p in found))[:MAX_FILES]


def _short_output(text: str) -> str:
    lines = text.strip("\n").split("\n")
    if len(lines) > OUTPUT_HEAD_LINES + OUTPUT_TAIL_LINES:
        omitted = len(lines) - OUTPUT_HEAD_LINES - OUTPUT_TAIL_LINES
        lines = [
            *lines[:OUTPUT_HEAD_LINES],
            f"… [{omitted} lines omitted] …",
            *lines[-OUTPUT_TAIL_LINES:],
        ]
    return "\n".join(lines)


def _response_text(response: Any) -> str:
    """Text of a tool response: a string, or the usual text-bearing keys of a dict."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        for key in ("result", "output", "content", "text", "stdout"):
            value = response.get(key)
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, list):
                parts = [
                    b["text"]
                    for b in value
                    if isinstance(b, dict) and isinstance(b.get("text"), str)
                ]
                if parts:
                    return "\n".join(parts)
    if isinstance(response, list):
        parts = [
            b["text"] for b in response if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def _compact_json(value: Any, limit: int) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        # Circular or exotic input: a placeholder is enough for a tool-use note.
        text = "…"
    return cap(text, limit)


def _observation(
    type_: str,
    title: str,
    content: str,
    files: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    metadata: dict[str, Any] | None = None,
) -> CapturedObservation:
    return CapturedObservation(
        type=type_,
        title=_title(title),
        content=cap(content.strip()),
        files=tuple(cap(f) for f in files)[:MAX_FILES],
        tags=tuple(cap(t, 60) for t in tags),
        metadata=metadata or {},
    )


# -- per family ----------------------------------------------------------------


_TOOL_USE_ERROR = ("<tool_use_error>", "</tool_use_error>")
_WRITE_VERBS = {"Write": "write", "NotebookEdit": "edit notebook"}


def call_failure(response: Any) -> str:
    """What a failed call's result says went wrong ('' for a result that is no failure).

    A failure is a result with an ``error`` text (a PostToolUseFailure payload, a
    Gemini ToolResult, a failed call read back from a transcript), one flagged
    ``is_error``, or Claude Code's ``<tool_use_error>…</tool_use_error>`` string.
    """
    text = ""
    if isinstance(response, dict):
        text = _str(response, "error")
        if not text and (response.get("is_error") is True or response.get("isError") is True):
            text = _response_text(response) or "failed"
    elif isinstance(response, str) and response.lstrip().startswith(_TOOL_USE_ERROR[0]):
        text = response
    text = text.strip()
    if text.startswith(_TOOL_USE_ERROR[0]):
        text = text[len(_TOOL_USE_ERROR[0]) :].removesuffix(_TOOL_USE_ERROR[1]).strip() or "failed"
    return text


def _failed_write(
    name: str, args: dict[str, Any], failure: str, cwd: str | None
) -> CapturedObservation | None:
    """A write or edit that failed: nothing changed, so it is no ``file-write`` (which
    summaries count as work done); what went wrong is what a later session needs."""
    path = _str(args, "file_path", "notebook_path", "path")
    if not path:
        return None
    rel = _rel(path, cwd)
    title = f"Failed to {_WRITE_VERBS.get(name, 'edit')} {rel}"
    errors = extract_errors(failure) or (_one_line(failure, 200),)
    body = f"{title}\nerror: {_one_line(failure, 300)}"
    old = _str(args, "old_string")
    if old:
        body += f"\n- {_one_line(old, 150)}"
    metadata = {"tool": name, "file": cap(rel), "failed": True, "errors": list(errors)}
    return _observation("tool-use", title, body, (rel,), ("failed",), metadata)


def _file_write(name: str, args: dict[str, Any], cwd: str | None) -> CapturedObservation | None:
    changes = args.get("changes")
    if name == "Edit" and isinstance(changes, list):
        return _patch(changes, cwd)
    path = _str(args, "file_path", "notebook_path", "path")
    if not path:
        return None
    rel = _rel(path, cwd)
    tags: tuple[str, ...] = ("edit",)
    if name == "Write":
        content = _str(args, "content")
        lines = content.count("\n") + 1 if content else 0
        title = f"Wrote {rel}"
        body = f"Wrote {rel} ({lines} lines)\n{content}"
        tags = ("write",)
    elif name == "MultiEdit":
        edits = args.get("edits")
        count = len(edits) if isinstance(edits, list) else 0
        title = f"Edited {rel} ({count} edits)"
        new_parts = [
            e["new_string"]
            for e in (edits if isinstance(edits, list) else [])
            if isinstance(e, dict) and isinstance(e.get("new_string"), str)
        ]
        body = f"Edited {rel} ({count} edits)\n" + "\n…\n".join(new_parts)
    elif name == "NotebookEdit":
        mode = _str(args, "edit_mode") or "replace"
        cell = _str(args, "cell_id")
        title = f"Edited notebook {rel}"
        body = f"Edited notebook {rel} ({mode}{' cell ' + cell if cell else ''})\n"
        body += _str(args, "new_source")
    else:
        old = _str(args, "old_string")
        new = _str(args, "new_string")
        title = f"Edited {rel}"
        body = f"Edited {rel}\n- {_one_line(old, 150)}\n+ {new}"
    return _observation("file-write", title, body, (rel,), tags, {"tool": name, "file": cap(rel)})


_PATCH_VERBS = {"add": "Added", "update": "Edited", "delete": "Deleted"}


def _patch(changes: list[Any], cwd: str | None) -> CapturedObservation | None:
    """A patch of files added, edited, moved or deleted (Codex's apply_patch, read by
    :func:`memlane.capture.dialects.patch_changes`): every file, each with its change."""
    found = [c for c in changes if isinstance(c, dict) and _str(c, "file_path")]
    if not found:
        return None
    room = max(MAX_FIELD_CHARS // len(found), 60)
    lines: list[str] = []
    files: list[str] = []
    for change in found:
        rel = _rel(_str(change, "file_path"), cwd)
        verb = _PATCH_VERBS.get(_str(change, "action"), "Edited")
        moved = _str(change, "move_to")
        line = f"{verb} {rel}" + (f" → {_rel(moved, cwd)}" if moved else "")
        old, new = _str(change, "old_string"), _str(change, "new_string")
        if verb == "Edited" and old:
            line += f"\n- {_one_line(old, room // 2)}"
        if verb != "Deleted" and new:
            line += f"\n+ {cap(new.strip(), room)}"
        lines.append(line)
        files.extend([rel, _rel(moved, cwd)] if moved else [rel])
    if len(found) == 1:
        title = lines[0].split("\n", 1)[0]
    else:
        title = f"Changed {len(found)} files: " + ", ".join(dict.fromkeys(files))
    metadata = {"tool": "Edit", "file": cap(files[0]), "changes": len(found)}
    return _observation(
        "file-write", title, "\n".join(lines), tuple(dict.fromkeys(files)), ("edit",), metadata
    )


def _file_read(
    name: str, args: dict[str, Any], response: Any, cwd: str | None
) -> CapturedObservation | None:
    if name in ("Read", "NotebookRead"):
        path = _str(args, "file_path", "notebook_path", "path")
        if not path:
            return None
        rel = _rel(path, cwd)
        where = ""
        offset, limit = args.get("offset"), args.get("limit")
        if isinstance(offset, int) and not isinstance(offset, bool):
            where = f" from line {offset}"
            if isinstance(limit, int) and not isinstance(limit, bool):
                where += f" ({limit} lines)"
        return _observation(
            "file-read", f"Read {rel}", f"Read {rel}{where}", (rel,), (), {"tool": name}
        )
    if name == "LS":
        path = _str(args, "path")
        if not path:
            return None
        rel = _rel(path, cwd)
        return _observation(
            "file-read", f"Listed {rel}", f"Listed {rel}", (rel,), (), {"tool": name}
        )
    pattern = _str(args, "pattern")
    if not pattern:
        return None
    where = _str(args, "path")
    rel_where = _rel(where, cwd) if where else ""
    scope = f" in {rel_where}" if rel_where not in ("", ".") else ""
    glob = _str(args, "glob")
    scope += f" ({glob})" if glob else ""
    found, total = _search_listing(name, args, response)
    matches = _files(found, cwd)
    count = total if total is not None else len(dict.fromkeys(found))
    verb = "Searched for" if name == "Grep" else "Globbed"
    title = f"{verb} {pattern}{scope}"
    body = f"{title}: {count} file(s)"
    if matches:
        body += "\n" + "\n".join(matches)
    return _observation(
        "file-read",
        title,
        body,
        matches,
        (),
        {"tool": name, "pattern": cap(pattern), "matches": count},
    )


# How much of a search's text is read for its files: a content search's output can be
# megabytes of matching lines, its files are named in the first ones (the hook's time).
MAX_LISTING_CHARS = 200_000


def _search_listing(name: str, args: dict[str, Any], response: Any) -> tuple[list[str], int | None]:
    """The files a Glob or Grep call found, and how many it says it found (None: unsaid).

    PostToolUse gives them (``filenames``, ``numFiles``), but a content or count search
    lists its files only in its ``content``; a transcript keeps only the text the agent
    read: the files one a line, or a content search's ``path:line:text`` lines."""
    text = response
    if isinstance(response, dict):
        listed = response.get("filenames")
        names = [n for n in listed if isinstance(n, str) and n] if isinstance(listed, list) else []
        total = response.get("numFiles")
        if names or not isinstance(response.get("content"), str):
            said = isinstance(total, int) and not isinstance(total, bool)
            return names, total if said else None
        text = response["content"]
    if not isinstance(text, str):
        return [], None
    mode = _str(args, "output_mode") if name == "Grep" else ""
    files: list[str] = []
    total = None
    for line in text[:MAX_LISTING_CHARS].split("\n"):
        line = line.strip()
        found = _FOUND_FILES.match(line) or _FOUND_ACROSS.match(line)
        if found:
            total = int(found.group(1))
        elif not line or line in _NOTHING_FOUND or line == "--" or line.startswith("("):
            continue
        elif mode == "content":
            _content_file(line, args, files)
        elif mode == "count":
            counted = _COUNT_LINE.fullmatch(line)
            files.extend([counted.group(1)] if counted else [])
        else:
            files.append(line)
    return files, total


def _content_file(line: str, args: dict[str, Any], files: list[str]) -> None:
    """The file of one line of a content search: ``path:line:text``, or ``path:text``
    when line numbers are off (``-n``: false); a search of one file names none
    (``line:text``): the searched path is its file. A context line (``path-line-text``)
    adds nothing: its file has a matching line."""
    numbered = args.get("-n") is not False
    if numbered and _LINE_NUMBER.match(line):
        path = _str(args, "path")
    else:
        found = (_NUMBERED_LINE if numbered else _NAMED_LINE).match(line)
        path = found.group(1) if found else ""
    if path:
        files.append(path)


def _command(args: dict[str, Any], response: Any, cwd: str | None) -> CapturedObservation | None:
    command = _str(args, "command")
    if not command:
        return None
    description = _str(args, "description")
    stdout = stderr = failure = ""
    exit_code: int | None = None
    interrupted = is_error = False
    if isinstance(response, dict):
        stdout = without_output_file(_str(response, "stdout", "output"))
        stderr = _str(response, "stderr")
        for key in ("exit_code", "exitCode", "returncode", "code"):
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                exit_code = value
                break
        interrupted = response.get("interrupted") is True
        is_error = response.get("is_error") is True or response.get("isError") is True
        # PostToolUseFailure-style payloads carry the failure text under "error".
        failure = _str(response, "error")
        if failure:
            is_error = True
            stderr = f"{stderr}\n{failure}" if stderr else failure
    elif isinstance(response, str):
        stdout = without_output_file(response)
        # Claude Code reports a failed command as a string "Error: Exit code N\n...".
        is_error = response.lstrip().startswith(("Error", "Exit code"))
        failure = response if is_error else ""
    if exit_code is None and failure:
        exit_code = exit_code_in(failure[:200])
    failed = interrupted or is_error or (exit_code is not None and exit_code != 0)

    first_line = command.strip().split("\n", 1)[0]
    suffix = ""
    if interrupted:
        suffix = " (interrupted)"
    elif failed:
        suffix = f" (exit {exit_code})" if exit_code is not None else " (failed)"
    title = f"Ran: {_one_line(first_line, MAX_TITLE_CHARS - 6 - len(suffix))}{suffix}"

    output = "\n".join(part for part in (stdout.strip("\n"), stderr.strip("\n")) if part)
    body = f"$ {cap(command, 200)}"
    if description:
        body += f"\n# {_one_line(description, 120)}"
    # What the run achieved comes first when the output is long: the body is cut at 500
    # characters, and a long output's middle is left out.
    outcomes = extract_outcomes(output)
    if outcomes and len(output) > MAX_FIELD_CHARS // 2:
        body += "\n" + "\n".join(f"→ {line}" for line in outcomes)
    errors: tuple[str, ...] = ()
    if failed:
        errors = extract_errors(output)
        if errors:
            body += "\nerror: " + "\n".join(errors)
        tail = output.strip("\n").split("\n")[-OUTPUT_TAIL_LINES:]
        if any(line.strip() for line in tail):
            body += "\n…\n" + "\n".join(tail)
    elif output:
        body += "\n" + _short_output(output)
    files = tuple(_rel(p, cwd) for p in extract_paths(command, MAX_FILES))
    metadata: dict[str, Any] = {"failed": failed}
    if exit_code is not None:
        metadata["exit_code"] = exit_code
    if description:
        metadata["description"] = cap(description)
    if errors:
        metadata["errors"] = [cap(e, 200) for e in errors]
    if outcomes:
        metadata["outcomes"] = list(outcomes)
    if isinstance(response, dict) and isinstance(response.get("backgroundTaskId"), str):
        metadata["background_task"] = cap(response["backgroundTaskId"], 60)
    tags = ("failed",) if failed else ()
    return _observation("command", title, body, files, tags, metadata)


def _research(name: str, args: dict[str, Any], response: Any) -> CapturedObservation | None:
    resp = response if isinstance(response, dict) else {}
    if name == "WebFetch":
        url = _str(args, "url")
        if not url:
            return None
        prompt = _str(args, "prompt")
        result = _response_text(response)
        host = url.split("://", 1)[-1].split("?", 1)[0].rstrip("/")
        title = f"Fetched {host}"
        body = f"Fetched {url}"
        if prompt:
            body += f"\nAsked: {_one_line(prompt, 150)}"
        if result:
            body += f"\n{result.strip()}"
        meta: dict[str, Any] = {"tool": name, "url": cap(url)}
        status = resp.get("code")
        if isinstance(status, int) and not isinstance(status, bool):
            meta["status"] = status
        return _observation("research", title, body, (), ("web",), meta)
    query = _str(args, "query")
    if not query:
        return None
    lines: list[str] = []
    results = resp.get("results")
    for item in results if isinstance(results, list) else []:
        entries = item.get("content") if isinstance(item, dict) else None
        for entry in entries if isinstance(entries, list) else [item]:
            if isinstance(entry, dict):
                link_title, url = _str(entry, "title"), _str(entry, "url")
                if link_title or url:
                    lines.append(link_line(link_title, url))
            elif isinstance(entry, str) and entry.strip():
                lines.append(_one_line(entry, 200))
    if not lines and isinstance(response, str):
        lines.append(with_links_listed(response.strip()))
    body = f"Searched the web for: {query}"
    if lines:
        body += "\n" + "\n".join(lines)
    return _observation(
        "research",
        f"Searched web: {query}",
        body,
        (),
        ("web",),
        {"tool": name, "query": cap(query)},
    )


def _delegation(name: str, args: dict[str, Any], response: Any) -> CapturedObservation | None:
    description = _str(args, "description")
    prompt = _str(args, "prompt")
    if not description and not prompt:
        return None
    agent_type = _str(args, "subagent_type")
    title = f"Delegated: {description or _one_line(prompt, 60)}"
    body = title
    if agent_type:
        body += f" (to {agent_type})"
    if prompt:
        body += f"\nPrompt: {_one_line(prompt, 200)}"
    result = without_subagent_trailer(_response_text(response))
    if result:
        body += f"\nResult: {result.strip()}"
    meta: dict[str, Any] = {"tool": name}
    if agent_type:
        meta["subagent_type"] = cap(agent_type, 100)
    if isinstance(response, dict):
        for key in ("agentId", "status"):
            if isinstance(response.get(key), str):
                meta[key] = cap(response[key], 100)
    tags = (agent_type,) if agent_type else ()
    return _observation("delegation", title, body, (), tags, meta)


def _question(args: dict[str, Any], response: Any) -> CapturedObservation | None:
    """AskUserQuestion: the user's answers are decisions worth remembering."""
    asked = asked_questions(args)
    if not asked:
        return None
    answers = response.get("answers") if isinstance(response, dict) else None
    answers = answers if isinstance(answers, dict) else {}
    lines = []
    for question, offered in asked:
        answer = answers.get(question)
        lines.append(f"Q: {_one_line(question, 200)}")
        if offered:
            lines.append(f"Offered: {offered}")
        if isinstance(answer, str) and answer:
            lines.append(f"A: {_one_line(answer, 200)}")
    return _observation(
        "tool-use",
        f"Asked user: {asked[0][0]}",
        "\n".join(lines),
        (),
        ("question",),
        {"tool": "AskUserQuestion"},
    )


def _tool_use(name: str, args: dict[str, Any], response: Any) -> CapturedObservation | None:
    if name == "AskUserQuestion":
        return _question(args, response)
    if name.startswith("mcp__"):
        parts = name.split("__")
        server = parts[1] if len(parts) > 1 else ""
        tool = "__".join(parts[2:]) or server
        title = f"Used {server}: {tool}" if server else f"Used {name}"
        tags: tuple[str, ...] = ("mcp", server) if server else ("mcp",)
    else:
        title = f"Used {name}"
        tags = ()
    body = f"{name} {_compact_json(args, 250)}" if args else name
    result = _response_text(response)
    if not result and isinstance(response, dict | list) and response:
        result = _compact_json(response, 250)
    if result:
        body += f"\n→ {result.strip()}"
    return _observation("tool-use", title, body, (), tags, {"tool": cap(name, 200)})
