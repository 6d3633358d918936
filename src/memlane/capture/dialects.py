"""Other agents' tool calls in Claude Code's shape: name, arguments and result.

:mod:`memlane.capture.classify` knows Claude Code's tools. A tool call of another
agent is mapped here onto the Claude Code call it amounts to, so one set of rules
records every agent's calls (and the privacy filter sees the mapped call):

* **Codex CLI** — its hooks send a shell call as ``Bash`` with ``{"command": str}``
  and the output as a string (older builds: ``shell`` / ``exec_command`` with an
  argv list, whose ``bash -lc`` wrapper :func:`shell_command` takes off); a result
  that carries the exit code (JSON, or ``Exit code: N`` text) becomes Claude Code's
  ``stdout`` / ``exit_code`` (:func:`shell_output`, the rule the rollout parser uses);
  ``apply_patch`` sends the patch as ``{"command": patch}``, read as an Edit by
  :func:`patch_as_edit` (each file it adds, updates, moves or deletes), the rule
  the rollout parser (:mod:`memlane.capture.codex`) uses too.
* **Gemini CLI** — its own tool names and arguments (``run_shell_command``,
  ``dir_path``, ``start_line``…), an MCP tool named by the payload's
  ``mcp_context`` (server and tool, as ``mcp__server__tool``), and every result as
  a ToolResult: ``{"llmContent": str | Part | [Part], "returnDisplay": str | object,
  "error": {"message", "type"}}``. The result becomes what Claude Code sends:
  the shell's labelled text (``Output: …``, ``Exit Code: N``, ``Signal: …``) its
  ``stdout`` / ``stderr`` / ``exit_code`` / ``interrupted``; glob, grep and
  read_many_files the paths they name (``filenames``, as Glob and Grep report
  them: never a file's contents); a failed ``write_file`` / ``replace`` its
  ``error`` (or the failure its text reports), so it is recorded as a failure and
  not as a change; any other tool its text.
* **Kiro** — tool names only.
* **Cline** — its tool names and arguments (``execute_command``, ``write_to_file``
  and ``replace_in_file`` with ``path``, ``search_files`` with ``regex`` and
  ``file_pattern``: https://docs.cline.bot/exploring-clines-tools/cline-tools-guide);
  ``replace_in_file``'s ``diff`` is read as an Edit: the text its SEARCH/REPLACE blocks
  search for and the text they put in its place (:func:`search_replace_edit`; several
  blocks joined, as an apply_patch's hunks). Its hook payload
  (:mod:`memlane.hooks.payloads`) gives a result's text and whether the call succeeded.

Payloads are untrusted: anything of an unexpected type passes through unchanged
(classify then finds nothing to use). Standard library only (``json`` is loaded
already: the hook parsed its payload), no regular expression: the hook imports
this for every tool event.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

# Tool names of other agents → the Claude Code tool they amount to.
TOOL_NAMES: dict[str, str] = {
    # Codex CLI
    "shell": "Bash",
    "exec_command": "Bash",
    "local_shell": "Bash",
    "container.exec": "Bash",
    "unified_exec": "Bash",
    "apply_patch": "Edit",
    "web_search": "WebSearch",
    # Gemini CLI
    "run_shell_command": "Bash",
    "write_file": "Write",
    "replace": "Edit",
    "read_file": "Read",
    "read_many_files": "Glob",  # the files it read, by path (as Glob lists them)
    "list_directory": "LS",
    "glob": "Glob",
    "search_file_content": "Grep",
    "grep_search": "Grep",
    "google_web_search": "WebSearch",
    "web_fetch": "WebFetch",
    "write_todos": "TodoWrite",
    "enter_plan_mode": "EnterPlanMode",
    "exit_plan_mode": "ExitPlanMode",
    # Kiro
    "execute_bash": "Bash",
    "executeBash": "Bash",
    "fs_write": "Write",
    "fsWrite": "Write",
    "fs_read": "Read",
    "fsRead": "Read",
    "strReplace": "Edit",
    "readFile": "Read",
    # Cline (read_file and web_fetch as Gemini's)
    "execute_command": "Bash",
    "write_to_file": "Write",
    "replace_in_file": "Edit",
    "list_files": "LS",
    "search_files": "Grep",
}
# Argument names of other agents → Claude Code's (``path`` is a file only for file tools).
_ARG_NAMES = {"absolute_path": "file_path", "path": "file_path", "cmd": "command"}
_PATH_TOOLS = frozenset(("Write", "Edit", "Read"))
_DIR_TOOLS = frozenset(("Glob", "Grep", "LS"))
# Tools whose result classify does not read (it keeps their path and arguments).
_PATHS_ONLY = frozenset(("Write", "Edit", "Read", "LS"))
_WRITES = frozenset(("Write", "Edit"))
# How Gemini's write_file and replace word a failure (edit.ts, write-file.ts).
_WRITE_FAILED = ("Error", "Failed to edit", "Failed to write")
_SHELL_WRAPPERS = ("bash -lc ", "bash -c ", "sh -c ")
# Codex's shell result as text: the exec tool's (Exit code) and unified exec's (Process
# exited); the header above "Output:" is a few short lines.
_EXIT_LABELS = ("Exit code: ", "Process exited with code ")
_MAX_HEADER = 400
# apply_patch's file headers (codex-rs/apply-patch: parser.rs).
_PATCH_HEADERS = {
    "*** Add File: ": "add",
    "*** Update File: ": "update",
    "*** Delete File: ": "delete",
}
_PATCH_MOVE = "*** Move to: "
# How apply_patch words a patch it did not apply (codex-rs/apply-patch, core's handler).
_PATCH_FAILED = ("apply_patch verification failed", "Failed to", "Error", "error:")
# Gemini's shell result ends with these lines, in this order (each only when it applies).
_SHELL_TRAILER = ("Error: ", "Exit Code: ", "Signal: ", "Background PIDs: ", "Process Group PGID: ")
_NONE = ("", "(none)", "(empty)")


def normalize_tool(
    name: str, tool_input: Any, tool_response: Any, mcp_context: Any = None
) -> tuple[str, Any, Any]:
    """(Claude Code tool name, its arguments, its result) for another agent's tool call."""
    mapped = TOOL_NAMES.get(name, name)
    if isinstance(mcp_context, dict):
        server, tool = mcp_context.get("server_name"), mcp_context.get("tool_name")
        if isinstance(server, str) and server and isinstance(tool, str) and tool:
            mapped = f"mcp__{server}__{tool}"
    args = _arguments(name, mapped, tool_input) if isinstance(tool_input, dict) else tool_input
    if _is_gemini_result(tool_response):
        tool_response = _gemini_result(name, mapped, tool_response)
    elif mapped == "Bash" and (found := shell_output(tool_response)) and found[1] is not None:
        tool_response = {"stdout": found[0], "exit_code": found[1]}
    elif (
        name == "apply_patch"
        and isinstance(tool_response, str)
        and tool_response.lstrip().startswith(_PATCH_FAILED)
    ):
        tool_response = {"error": tool_response.strip()}  # nothing was changed
    return mapped, args, tool_response


def shell_command(command: Any) -> Any:
    """A shell call's command as one line: an argv list joined, its ``bash -lc`` taken off."""
    if not isinstance(command, list):
        return command
    line = " ".join(str(part) for part in command)
    return line.split(" ", 2)[2] if line.startswith(_SHELL_WRAPPERS) else line


def shell_output(result: Any) -> tuple[str, int | None] | None:
    """(output, exit code) of a Codex shell result in one of the forms that carry the
    code: the JSON ``{"output": …, "metadata": {"exit_code": N}}`` (as a string or an
    object), or text whose header (``Exit code: N`` or ``Process exited with code N``,
    ``Wall time: …``) ends with ``Output:`` and the output. None for any other result
    (Codex's hooks send a command's bare output)."""
    if isinstance(result, str) and not result.startswith("{"):
        head, marker, output = result.partition("\nOutput:\n")
        if not marker or len(head) > _MAX_HEADER or "Wall time: " not in head:
            return None
        for line in head.split("\n"):
            for label in _EXIT_LABELS:
                code = line[len(label) :].strip() if line.startswith(label) else ""
                if code.lstrip("-").isdigit():
                    return output, int(code)
        return output, None
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except (ValueError, RecursionError):
            return None
    if not isinstance(result, dict) or not ("output" in result or "metadata" in result):
        return None
    metadata = result.get("metadata")
    found = metadata.get("exit_code") if isinstance(metadata, dict) else None
    text = result.get("output")
    body = text if isinstance(text, str) else json.dumps(result, ensure_ascii=False)
    return body, found if isinstance(found, int) and not isinstance(found, bool) else None


def patch_as_edit(patch: str) -> dict[str, Any]:
    """An apply_patch body as an Edit input: its first file and every removed and added
    line; a patch that does more than update one file also lists each file's change
    under ``changes`` (:func:`patch_changes`)."""
    changes = patch_changes(patch)
    edit: dict[str, Any] = {
        "file_path": changes[0]["file_path"] if changes else "",
        "old_string": "\n".join(c["old_string"] for c in changes if c["old_string"]),
        "new_string": "\n".join(c["new_string"] for c in changes if c["new_string"]),
    }
    if len(changes) > 1 or any(c["action"] != "update" or "move_to" in c for c in changes):
        edit["changes"] = changes
    return edit


def patch_changes(patch: str) -> list[dict[str, Any]]:
    """Each file an apply_patch body changes, in order: ``file_path``, ``action``
    (``add``, ``update`` or ``delete``), ``move_to`` for a moved file, and its removed
    (``old_string``) and added (``new_string``) lines."""
    changes: list[dict[str, Any]] = []
    removed: list[str] = []
    added: list[str] = []

    def close() -> None:
        if changes:
            changes[-1]["old_string"] = "\n".join(removed)
            changes[-1]["new_string"] = "\n".join(added)
        removed.clear()
        added.clear()

    for line in patch.split("\n"):
        header = next((h for h in _PATCH_HEADERS if line.startswith(h)), None)
        if header is not None:
            close()
            path = line[len(header) :].strip()
            changes.append({"file_path": path, "action": _PATCH_HEADERS[header]})
        elif line.startswith(_PATCH_MOVE) and changes:
            changes[-1]["move_to"] = line[len(_PATCH_MOVE) :].strip()
        elif line.startswith("*** "):
            continue  # Begin Patch, End Patch, End of File
        elif line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
    close()
    return changes


# Cline's SEARCH/REPLACE markers: a run of 3 or more of one character and a word, maybe
# then ">" (src/core/assistant-message/diff.ts: SEARCH_BLOCK_START_REGEX
# /^[-]{3,} SEARCH>?$/, REPLACE_BLOCK_END_REGEX /^[+]{3,} REPLACE>?$/, the legacy
# "<<<<<<< SEARCH" / ">>>>>>> REPLACE", and /^[=]{3,}$/ between the two halves).
_SEARCH_START = ("-<", "SEARCH")
_REPLACE_END = ("+>", "REPLACE")


def search_replace_edit(diff: str) -> dict[str, str] | None:
    """Cline's ``replace_in_file`` diff as an Edit's ``old_string`` / ``new_string``: what
    its SEARCH/REPLACE blocks search for and what they put in its place (the blocks'
    texts joined by a line); None when it holds no whole block."""
    old: list[str] = []
    new: list[str] = []
    searched: list[str] = []
    replaced: list[str] = []
    part: list[str] | None = None
    for line in diff.split("\n"):
        bare = line.rstrip("\r")
        if _is_marker(bare, *_SEARCH_START):
            searched, replaced = [], []
            part = searched
        elif part is searched and len(bare) >= 3 and bare == "=" * len(bare):
            part = replaced
        elif part is replaced and _is_marker(bare, *_REPLACE_END):
            old.append("\n".join(searched))
            new.append("\n".join(replaced))
            part = None
        elif part is not None:
            part.append(line)
    if not new:
        return None
    return {"old_string": "\n".join(old), "new_string": "\n".join(new)}


def _is_marker(line: str, chars: str, word: str) -> bool:
    run, _, rest = line.partition(" ")
    return (
        rest in (word, word + ">")
        and len(run) >= 3
        and any(run == char * len(run) for char in chars)
    )


# -- arguments -------------------------------------------------------------------------


def _arguments(name: str, mapped: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    if name == "apply_patch":
        patch = tool_input.get("command") or tool_input.get("input") or tool_input.get("patch")
        return patch_as_edit(patch) if isinstance(patch, str) else dict(tool_input)
    args = dict(tool_input)
    if name not in TOOL_NAMES:
        return args
    for theirs, ours in _ARG_NAMES.items():
        if theirs in args and ours not in args and (ours != "file_path" or mapped in _PATH_TOOLS):
            args[ours] = args.pop(theirs)
    if mapped == "Bash":
        args["command"] = shell_command(args.get("command"))
    elif mapped in _DIR_TOOLS and "dir_path" in args and "path" not in args:
        args["path"] = args.pop("dir_path")
    if mapped == "Grep" and "pattern" not in args and isinstance(args.get("regex"), str):
        args["pattern"] = args.pop("regex")  # Cline's search_files
    if mapped == "Grep" and "glob" not in args:
        for key in ("include", "include_pattern", "file_pattern"):
            if isinstance(args.get(key), str):
                args["glob"] = args.pop(key)
                break
    elif name == "replace_in_file" and "new_string" not in args and "diff" in args:
        diff = args.pop("diff")
        found = search_replace_edit(diff) if isinstance(diff, str) else None
        args.update(found or {"new_string": diff})  # no whole block: the diff as written
    elif mapped == "Read":
        start, end = _int(args.get("start_line")), _int(args.get("end_line"))
        if start is not None and "offset" not in args:
            args["offset"] = start
            if end is not None and end >= start:
                args["limit"] = end - start + 1
    elif name == "read_many_files" and "pattern" not in args:
        included = args.get("include", args.get("paths"))
        if isinstance(included, list):
            args["pattern"] = " ".join(str(item) for item in included)
    elif mapped == "WebFetch" and "url" not in args and isinstance(args.get("prompt"), str):
        # Gemini's web_fetch takes the URLs inside its prompt.
        url = next((w for w in args["prompt"].split() if w.startswith(("http://", "https://"))), "")
        if url:
            args["url"] = url.rstrip(".,;:)]}>\"'")
    return args


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- Gemini results --------------------------------------------------------------------


def _is_gemini_result(response: Any) -> bool:
    return isinstance(response, dict) and ("llmContent" in response or "returnDisplay" in response)


def _gemini_result(name: str, mapped: str, response: dict[str, Any]) -> Any:
    """A Gemini ToolResult as the result Claude Code reports for the same call."""
    text = _parts_text(response.get("llmContent"))
    display = response.get("returnDisplay")
    error = response.get("error")
    failure = error.get("message") if isinstance(error, dict) else None
    failure = failure if isinstance(failure, str) and failure.strip() else ""
    if mapped in _WRITES and not failure and text.lstrip().startswith(_WRITE_FAILED):
        failure = text.strip()  # a failure told only in the text the model reads
    if mapped in _PATHS_ONLY:
        # classify keeps the path: a file's text (or Gemini's diff) is not scrubbed. A
        # failed write or edit changed nothing: its error says so (classify: a failure).
        return {"error": failure} if failure and mapped in _WRITES else ""
    if mapped == "Bash":
        return _shell_result(text, display if isinstance(display, str) else "", failure)
    if name == "read_many_files":
        return _listed(_read_many_paths(response.get("llmContent")))
    if mapped == "Glob":
        return _listed([line for line in text.split("\n")[1:] if _listed_path(line)], text)
    if mapped == "Grep":
        found = [line[6:].strip() for line in text.split("\n") if line.startswith("File: ")]
        return _listed(list(dict.fromkeys(found)))
    if not text and isinstance(display, str):
        text = display
    if failure and failure not in text:
        text = f"{text}\n{failure}" if text else failure
    return text


def _parts_text(content: Any) -> str:
    """The text of Gemini's ``llmContent``: a string, a Part (``{"text": …}``) or a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list):
        return "\n".join(part for part in map(_parts_text, content) if part)
    return ""


def _shell_result(text: str, display: str, failure: str) -> dict[str, Any]:
    """run_shell_command's result as Claude Code's Bash result."""
    lines = text.rstrip("\n").split("\n")
    fields: dict[str, str] = {}
    while lines and lines[-1].startswith(_SHELL_TRAILER):
        label, _, value = lines.pop().partition(": ")
        fields[label] = value.strip()
    body = "\n".join(lines)
    if body.startswith("Command: ") and "\nDirectory: " in body:  # older releases
        body = body.split("\nDirectory: ", 1)[1].partition("\n")[2]
    stdout = stderr = ""
    interrupted = False
    if body.startswith("Output: "):
        stdout = body[8:]
    elif body.startswith("Stdout: "):  # older releases
        stdout, marker, stderr = body[8:].rpartition("\nStderr: ")
        if not marker:
            stdout, stderr = stderr, ""
    elif body.startswith("Command was ") and "cancelled" in body[:120]:
        interrupted = True
        stdout = body.partition(":\n")[2]
    elif body.startswith("Command moved to background"):
        stdout = ""
    else:  # a summary, or a form not known here: what the user saw
        stdout = display or body
    result: dict[str, Any] = {
        "stdout": "" if stdout.strip() in _NONE else stdout,
        "stderr": "" if stderr.strip() in _NONE else stderr,
        "interrupted": interrupted,
    }
    code = fields.get("Exit Code", "")
    if code.lstrip("-").isdigit():
        result["exit_code"] = int(code)
    errors = [failure or fields.get("Error", "")]
    if fields.get("Signal", "") not in _NONE:
        errors.append(f"terminated by signal {fields['Signal']}")
    error = "\n".join(e for e in errors if e not in _NONE)
    if error:
        result["error"] = error
    return result


def _listed(paths: list[str], text: str = "") -> dict[str, Any]:
    """Paths as Claude Code's Glob and Grep report them."""
    count = len(paths)
    words = text.split(" ", 2)
    if len(words) > 1 and words[0] == "Found" and words[1].isdigit():
        count = max(count, int(words[1]))
    return {"filenames": paths, "numFiles": count}


def _listed_path(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and stripped != "---" and not stripped.startswith("[")


def _read_many_paths(content: Any) -> list[str]:
    """The files read_many_files read: the ``--- path ---`` line opening each one's text."""
    parts = content if isinstance(content, list) else [content]
    paths: list[str] = []
    for part in parts:
        first = _parts_text(part).lstrip("\n").split("\n", 1)[0]
        if (
            first.startswith("--- ")
            and first.endswith(" ---")
            and first != "--- End of content ---"
        ):
            paths.append(first[4:-4])
    return paths
