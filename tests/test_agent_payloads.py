"""Each agent's real hook payloads, through the command `memlane setup` installs, into a
real store: what is recorded for a failed call, a patch of several files, a failing shell
command. (The shapes are the agents' own: Gemini CLI's ToolResult, Codex's PostToolUse,
Claude Code's transcript.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memlane.integrations.settings_merge import is_memlane_command
from tests.conftest import run_env, run_memlane
from tests.test_hooks import log_lines, observations

SETTINGS = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
}


def installed(home: Path, user_home: Path, agent: str, native: str) -> str:
    """The command ``memlane setup --agent AGENT`` writes for the agent's ``native`` event."""
    setup = run_memlane(
        home, "setup", "--agent", agent, env={"HOME": str(user_home)}, cwd=user_home
    )
    assert setup.returncode == 0, setup.stderr
    groups = json.loads((user_home / SETTINGS[agent]).read_text(encoding="utf-8"))["hooks"]
    return next(
        h["command"] for g in groups[native] for h in g["hooks"] if is_memlane_command(h["command"])
    )


def fire(home: Path, project: Path, command: str, data: dict[str, Any] | bytes) -> bytes:
    """Run an installed hook command with ``data`` on stdin; it must exit 0 silently."""
    stdin = data if isinstance(data, bytes) else json.dumps(data).encode()
    done = subprocess.run(
        command,
        shell=True,
        input=stdin,
        capture_output=True,
        env=run_env(home),
        cwd=project,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout


def gemini_tool(project: Path, name: str, args: dict[str, Any], **response: Any) -> dict[str, Any]:
    return {
        "session_id": "gm-tools",
        "transcript_path": str(project / "chat.json"),
        "cwd": str(project),
        "hook_event_name": "AfterTool",
        "timestamp": "2026-01-28T10:00:05.000Z",
        "tool_name": name,
        "tool_input": args,
        "tool_response": response,
    }


# -- a failed write or edit is a failure, not a change -------------------------------------


def test_gemini_failed_write_file_and_replace_are_failures_not_changes(
    home: Path, user_home: Path, project: Path
) -> None:
    """Gemini's write_file / replace report a failure in ``error`` (edit.ts, write-file.ts)
    and in the text: both were recorded as "Wrote …" / "Edited …" file-writes."""
    hook = installed(home, user_home, "gemini", "AfterTool")
    retry = str(project / "src/payments/retry.py")
    no_match = (
        f"Failed to edit, 0 occurrences found for old_string in {retry}. No edits made."
        " The exact text in old_string was not found."
    )
    fire(
        home,
        project,
        hook,
        gemini_tool(
            project,
            "replace",
            {"file_path": retry, "old_string": "delay = 1", "new_string": "delay = backoff()"},
            llmContent=no_match,
            returnDisplay="Error: Failed to edit, could not find the string to replace.",
            error={"message": no_match, "type": "edit_no_occurrence_found"},
        ),
    )
    denied = f"Error writing to file: EACCES: permission denied, open '{project}/README.md'"
    fire(
        home,
        project,
        hook,
        gemini_tool(
            project,
            "write_file",
            {"file_path": str(project / "README.md"), "content": "# Billing API\n"},
            llmContent=denied,
            returnDisplay=denied,
            error={"message": denied, "type": "permission_denied"},
        ),
    )
    # A failure reported only in the text the model reads (no ``error`` field).
    fire(
        home,
        project,
        hook,
        gemini_tool(
            project,
            "replace",
            {"file_path": retry, "old_string": "a", "new_string": "b"},
            llmContent="Failed to edit, Expected 1 occurrence but found 3 for old_string in file",
            returnDisplay="Error: Failed to edit, expected 1 occurrence but found 3.",
        ),
    )
    fire(
        home,
        project,
        hook,
        gemini_tool(
            project,
            "replace",
            {"file_path": retry, "old_string": "delay = 1", "new_string": "delay = 2"},
            llmContent=f"Successfully modified file: {retry} (1 replacements).",
            returnDisplay={"fileDiff": "@@ -1 +1 @@", "fileName": "retry.py"},
        ),
    )
    edit, write, mismatch, done = observations(home)
    assert (edit["type"], edit["title"], edit["tags"]) == (
        "tool-use",
        "Failed to edit src/payments/retry.py",
        ["failed"],
    )
    assert edit["files"] == ["src/payments/retry.py"] and edit["metadata"]["failed"] is True
    assert "0 occurrences found for old_string" in edit["content"]
    assert "delay = backoff()" not in edit["content"]  # the change that was not made
    assert (write["type"], write["title"]) == ("tool-use", "Failed to write README.md")
    assert "permission denied" in write["content"]
    assert mismatch["title"] == "Failed to edit src/payments/retry.py"
    assert "found 3" in mismatch["content"]
    assert (done["type"], done["title"]) == ("file-write", "Edited src/payments/retry.py")


def test_a_claude_code_edit_that_failed_is_a_failure(
    home: Path, user_home: Path, project: Path
) -> None:
    """Claude Code fires no PostToolUse for a failed call: the transcript records it, with
    ``is_error``. Its Edit was stored as "Edited …" like a change."""
    hook = installed(home, user_home, "claude-code", "Stop")
    retry = str(project / "src/payments/retry.py")
    base = {"sessionId": "cc-failed", "cwd": str(project), "version": "2.1.39"}
    records = [
        {**base, "type": "user", "uuid": "u-1", "timestamp": "2026-01-10T09:00:00.000Z",
         "message": {"role": "user", "content": "Make the retry back off"}},
        {**base, "type": "assistant", "uuid": "a-2", "timestamp": "2026-01-10T09:00:01.000Z",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_9", "name": "Edit", "input": {
                 "file_path": retry, "old_string": "delay = 1", "new_string": "delay = 2"}}]}},
        {**base, "type": "user", "uuid": "u-3", "timestamp": "2026-01-10T09:00:02.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_9", "is_error": True,
              "content": "<tool_use_error>String to replace not found in file.\n"
                         "String: delay = 1</tool_use_error>"}]}},
        {**base, "type": "assistant", "uuid": "a-4", "timestamp": "2026-01-10T09:00:03.000Z",
         "message": {"id": "m2", "role": "assistant", "content": [
             {"type": "text", "text": "The line is not there; I will read the file first."}]}},
    ]  # fmt: skip
    transcript = project / "cc-failed.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    stop = {
        "session_id": "cc-failed",
        "transcript_path": str(transcript),
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "The line is not there; I will read the file first.",
    }
    fire(home, project, hook, stop)
    [edit] = [o for o in observations(home) if o["metadata"].get("tool") == "Edit"]
    assert (edit["type"], edit["title"], edit["tags"]) == (
        "tool-use",
        "Failed to edit src/payments/retry.py",
        ["failed"],
    )
    assert edit["metadata"]["errors"] == ["String to replace not found in file. String: delay = 1"]
    assert "<tool_use_error>" not in edit["content"]


# -- hooks never hurt the agent ----------------------------------------------------------------


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b'["a list"]', id="not-an-object"),
        pytest.param(json.dumps({"session_id": 7, "tool_name": "replace"}).encode(), id="types"),
    ],
)
@pytest.mark.parametrize("agent", ["gemini", "codex"])
def test_a_bad_payload_exits_0_silently_with_one_log_line(
    home: Path, user_home: Path, project: Path, agent: str, stdin: bytes
) -> None:
    native = "AfterTool" if agent == "gemini" else "PostToolUse"
    hook = installed(home, user_home, agent, native)
    assert fire(home, project, hook, stdin) == b""
    assert len(log_lines(home)) == 1
    assert observations(home) == []
