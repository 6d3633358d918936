"""Cursor, Windsurf and Cline hook payloads in the shape the other agents send.

Claude Code, Codex and Gemini CLI send ``session_id``, ``cwd``, ``prompt``,
``tool_name`` / ``tool_input`` / ``tool_response``, ``last_assistant_message``;
:func:`memlane.hooks.agents.normalize` reads those. These three agents send their
own fields, one mapping each below, from their documented contracts:

* **Cursor** — https://cursor.com/docs/agent/hooks: ``conversation_id``,
  ``generation_id``, ``hook_event_name``, ``workspace_roots`` on every event;
  ``prompt`` (beforeSubmitPrompt), ``command`` / ``output`` / ``duration``
  (afterShellExecution: no exit code), ``file_path`` / ``edits`` (afterFileEdit),
  ``text`` (afterAgentResponse: the reply), ``status`` (stop).
* **Windsurf** — https://docs.windsurf.com/windsurf/cascade/hooks:
  ``agent_action_name``, ``trajectory_id`` (the conversation), ``execution_id`` (the
  turn) and the event's ``tool_info``: ``user_prompt``, ``file_path`` / ``edits``,
  ``command_line`` / ``cwd`` (no output, no exit code), ``mcp_server_name`` /
  ``mcp_tool_name`` / ``mcp_tool_arguments`` / ``mcp_result``, ``response``.
* **Cline** — https://docs.cline.bot/features/hooks/hook-reference: ``hookName``,
  ``taskId`` (the task is the session), ``workspaceRoots`` and an object named after
  the hook: ``userPromptSubmit.prompt``, ``postToolUse.toolName`` / ``parameters`` /
  ``result`` / ``success``, ``taskComplete.taskMetadata.result`` (the completion's
  text: the turn's answer). Its tool names and arguments are read by
  :mod:`memlane.capture.dialects` like Gemini's.

The project is the workspace root the agent names (else the hook's directory); a
command's own ``cwd`` is only the command's (``tool_cwd``: its metadata), so a command
run in a subfolder, or anywhere, stays in the session's project.

A field of the wrong type is passed on as it is: ``normalize`` refuses it
(``InvalidPayload``). Standard library only: this runs on every prompt.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    Payload = dict[str, Any]


def translate(agent: str, payload: Payload) -> Payload:
    """``payload`` of ``agent`` (one of ``agents.MAPPED_AGENTS``) in the common shape."""
    return _MAPPINGS[agent](payload)


# -- Cursor (https://cursor.com/docs/agent/hooks) ----------------------------------------


def _cursor(payload: Payload) -> Payload:
    out: Payload = {
        "session_id": payload.get("conversation_id"),
        "turn_id": payload.get("generation_id"),
        "model": payload.get("model"),
        "cwd": _first_root(payload.get("workspace_roots")),
        "prompt": payload.get("prompt"),
    }
    if "edits" in payload:  # afterFileEdit: file_path, edits [{old_string, new_string}]
        out["tool_name"], out["tool_input"] = _edit(payload.get("file_path"), payload["edits"])
        out["tool_response"] = ""
    elif "output" in payload and "command" in payload:
        # afterShellExecution: command, output, duration (ms); Cursor sends no exit code.
        out["tool_name"] = "Bash"
        out["tool_input"] = {"command": payload["command"]}
        out["tool_response"] = {"stdout": payload["output"]}
        out["tool_cwd"] = payload.get("cwd") or None
    elif payload.get("hook_event_name") == "afterAgentResponse":
        # "Called after the agent has completed an assistant message", input
        # {"text": "<assistant final text>"} (https://cursor.com/docs/hooks#afteragentresponse;
        # afterAgentThought sends a "text" too: the thinking, not kept).
        out["last_assistant_message"] = payload.get("text")
    return out


# -- Windsurf (https://docs.windsurf.com/windsurf/cascade/hooks) -------------------------


def _windsurf(payload: Payload) -> Payload:
    info = payload.get("tool_info")
    info = info if isinstance(info, dict) else {}
    action = payload.get("agent_action_name")
    out: Payload = {
        "session_id": payload.get("trajectory_id"),
        "turn_id": payload.get("execution_id"),
        # No workspace in the payload: the hook runs in the workspace root unless
        # configured otherwise (the docs' working_directory), and that names the project.
        "cwd": None,
    }
    if action == "pre_user_prompt":  # tool_info.user_prompt
        out["prompt"] = info.get("user_prompt")
    elif action == "post_write_code":  # tool_info.file_path, tool_info.edits
        out["tool_name"], out["tool_input"] = _edit(info.get("file_path"), info.get("edits"))
        out["tool_response"] = ""
    elif action == "post_run_command":  # tool_info.command_line, tool_info.cwd; no output
        out["tool_name"] = "Bash"
        out["tool_input"] = {"command": info.get("command_line")}
        out["tool_cwd"] = info.get("cwd") or None
    elif action == "post_mcp_tool_use":
        # tool_info.mcp_server_name, mcp_tool_name, mcp_tool_arguments, mcp_result
        server, tool = info.get("mcp_server_name"), info.get("mcp_tool_name")
        if isinstance(server, str) and isinstance(tool, str) and server and tool:
            out["tool_name"] = f"mcp__{server}__{tool}"
            out["tool_input"] = info.get("mcp_tool_arguments")
            out["tool_response"] = info.get("mcp_result")
    elif action == "post_cascade_response":  # tool_info.response: the turn, as markdown
        out["last_assistant_message"] = info.get("response")
    return out


# -- Cline (https://docs.cline.bot/features/hooks/hook-reference) ------------------------


def _cline(payload: Payload) -> Payload:
    out: Payload = {
        "session_id": payload.get("taskId"),
        "cwd": _first_root(payload.get("workspaceRoots")),
    }
    hook = payload.get("hookName")
    if hook == "UserPromptSubmit":  # userPromptSubmit.prompt, .attachments
        out["prompt"] = _section(payload, "userPromptSubmit").get("prompt")
    elif hook in ("TaskStart", "TaskResume"):
        out["source"] = "resume" if hook == "TaskResume" else "startup"
    elif hook == "TaskComplete":
        # taskComplete.taskMetadata: taskId, ulid, and attempt_completion's "result" (the
        # text Cline shows as the task's outcome) and "command": Cline's source
        # (https://github.com/cline/cline, src/core/task/tools/handlers/
        # AttemptCompletionHandler.ts, runTaskCompleteHook); the hook reference lists
        # taskId and ulid only. Kept as the turn's answer, as Cursor's reply is.
        metadata = _section(_section(payload, "taskComplete"), "taskMetadata")
        out["last_assistant_message"] = metadata.get("result") or None
    elif hook == "PostToolUse":
        # postToolUse.toolName, .parameters, .result (text), .success, .executionTimeMs;
        # replace_in_file's parameters are path and diff, SEARCH/REPLACE blocks
        # (https://docs.cline.bot/exploring-clines-tools/cline-tools-guide; their markers:
        # Cline's src/core/assistant-message/diff.ts), read as an Edit of the text
        # replaced by memlane.capture.dialects.search_replace_edit.
        call = _section(payload, "postToolUse")
        name, params, result = call.get("toolName"), call.get("parameters"), call.get("result")
        out["tool_name"], out["tool_input"] = name, params
        out["tool_response"] = result
        if call.get("success") is False:  # a failure, whatever the result's wording
            text = result if isinstance(result, str) else ""
            out["tool_response"] = {"output": text, "is_error": True}
        if name == "use_mcp_tool" and isinstance(params, dict):
            # Its server_name and tool_name: the call as mcp__server__tool (memlane's own
            # server, registered as "memlane", is then left out like Claude Code's).
            out["mcp_context"] = {
                "server_name": params.get("server_name"),
                "tool_name": params.get("tool_name"),
            }
            out["tool_input"] = _json_object(params.get("arguments"))
    return out


# -- shared --------------------------------------------------------------------------


def _first_root(roots: Any) -> Any:
    """The first workspace root (a multi-root workspace's first folder); None for none."""
    if isinstance(roots, list) and roots:
        return roots[0]
    return None


def _json_object(value: Any) -> Any:
    """Arguments sent as JSON text, as the object they hold (else as they are)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        import json

        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _section(payload: Payload, key: str) -> Payload:
    value = payload.get(key)
    return value if isinstance(value, dict) else {}


def _edit(file_path: Any, edits: Any) -> tuple[str, Payload]:
    """Cursor's and Windsurf's ``edits`` (``[{old_string, new_string}]``) as Claude Code's
    Edit (one) or MultiEdit (several)."""
    changes = [e for e in edits if isinstance(e, dict)] if isinstance(edits, list) else []
    if len(changes) == 1:
        edit = changes[0]
        return "Edit", {
            "file_path": file_path,
            "old_string": edit.get("old_string", ""),
            "new_string": edit.get("new_string", ""),
        }
    return "MultiEdit", {"file_path": file_path, "edits": changes}


_MAPPINGS = {"cursor": _cursor, "windsurf": _windsurf, "cline": _cline}
