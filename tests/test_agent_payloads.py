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
from tests.test_hooks import log_lines, observations, rows

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


# -- Codex: a patch of several files, a patch not applied, a shell command's exit code --------


def codex_tool(project: Path, call: str, name: str, args: dict[str, Any], response: Any) -> Any:
    return {
        "session_id": "cx-tools",
        "turn_id": "turn-3",
        "transcript_path": None,
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "model": "gpt-5.4",
        "permission_mode": "default",
        "tool_name": name,
        "tool_input": args,
        "tool_response": response,
        "tool_use_id": call,
    }


MULTI_PATCH = """*** Begin Patch
*** Update File: src/payments/retry.py
@@ def retry(charge):
-    delay = 1
+    delay = backoff(attempt)
*** Add File: src/payments/backoff.py
+def backoff(attempt):
+    return min(2 ** attempt, 30)
*** Delete File: src/payments/legacy_retry.py
*** Update File: src/payments/keys.py
*** Move to: src/payments/idempotency.py
@@
-KEY_TTL = 3600
+KEY_TTL = 86400
*** End Patch
"""


def test_codex_apply_patch_of_several_files_records_every_file(
    home: Path, user_home: Path, project: Path
) -> None:
    """Only the patch's first file was recorded (its title, its files), with every file's
    lines run together under it."""
    hook = installed(home, user_home, "codex", "PostToolUse")
    done = "Success. Updated the following files:\nM src/payments/retry.py\n"
    fire(
        home,
        project,
        hook,
        codex_tool(project, "call_1", "apply_patch", {"command": MULTI_PATCH}, done),
    )
    [patch] = observations(home)
    assert patch["type"] == "file-write" and patch["metadata"]["changes"] == 4
    assert patch["files"] == [
        "src/payments/retry.py",
        "src/payments/backoff.py",
        "src/payments/legacy_retry.py",
        "src/payments/keys.py",
        "src/payments/idempotency.py",
    ]
    assert patch["title"].startswith("Changed 4 files: src/payments/retry.py, src/payments/")
    assert patch["content"].split("\n") == [
        "Edited src/payments/retry.py",
        "- delay = 1",
        "+ delay = backoff(attempt)",
        "Added src/payments/backoff.py",
        "+ def backoff(attempt):",
        "    return min(2 ** attempt, 30)",
        "Deleted src/payments/legacy_retry.py",
        "Edited src/payments/keys.py → src/payments/idempotency.py",
        "- KEY_TTL = 3600",
        "+ KEY_TTL = 86400",
    ]


def test_codex_apply_patch_adding_one_file_says_added(
    home: Path, user_home: Path, project: Path
) -> None:
    hook = installed(home, user_home, "codex", "PostToolUse")
    add = "*** Begin Patch\n*** Add File: docs/retry.md\n+# Retries\n*** End Patch\n"
    fire(home, project, hook, codex_tool(project, "call_2", "apply_patch", {"command": add}, "ok"))
    [patch] = observations(home)
    assert (patch["title"], patch["files"]) == ("Added docs/retry.md", ["docs/retry.md"])


def test_codex_apply_patch_that_failed_is_a_failure(
    home: Path, user_home: Path, project: Path
) -> None:
    hook = installed(home, user_home, "codex", "PostToolUse")
    patch = "*** Begin Patch\n*** Update File: src/payments/retry.py\n@@\n-x\n+y\n*** End Patch\n"
    failed = "apply_patch verification failed: Failed to find expected lines in retry.py:\nx"
    fire(
        home,
        project,
        hook,
        codex_tool(project, "call_3", "apply_patch", {"command": patch}, failed),
    )
    [edit] = observations(home)
    assert (edit["type"], edit["title"], edit["tags"]) == (
        "tool-use",
        "Failed to edit src/payments/retry.py",
        ["failed"],
    )


@pytest.mark.parametrize(
    ("response", "failed", "code", "output"),
    [
        pytest.param(
            "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nE   KeyError: 'order_id'\n1 failed",
            True,
            1,
            "KeyError: 'order_id'",
            id="exec-text-failed",
        ),
        pytest.param(
            "Exit code: 0\nWall time: 0.4 seconds\nOutput:\n4 passed in 0.1s",
            False,
            0,
            "4 passed in 0.1s",
            id="exec-text-passed",
        ),
        pytest.param(
            json.dumps(
                {
                    "output": "Traceback (most recent call last):\nKeyError: 'order_id'\n",
                    "metadata": {"exit_code": 1, "duration_seconds": 0.4},
                }
            ),
            True,
            1,
            "KeyError: 'order_id'",
            id="exec-json-failed",
        ),
        pytest.param(
            "Chunk ID: 7e2a\nWall time: 0.2 seconds\nProcess exited with code 2\n"
            "Original token count: 9\nOutput:\nmake: *** No rule to make target 'relase'.",
            True,
            2,
            "No rule to make target",
            id="unified-exec-failed",
        ),
        pytest.param("4 passed in 0.1s\n", False, None, "4 passed in 0.1s", id="bare-output"),
    ],
)
def test_codex_shell_results_keep_their_exit_code(
    home: Path,
    user_home: Path,
    project: Path,
    response: str,
    failed: bool,
    code: int | None,
    output: str,
) -> None:
    """A result that carries the exit code (JSON, or an ``Exit code: N`` header) was read
    as text: exit 0 was taken for a failure ("Exit code…"), and JSON's exit 1 for success."""
    hook = installed(home, user_home, "codex", "PostToolUse")
    fire(
        home,
        project,
        hook,
        codex_tool(project, "call_4", "Bash", {"command": "pytest -q tests"}, response),
    )
    [ran] = observations(home)
    assert ran["metadata"]["failed"] is failed
    assert ran["metadata"].get("exit_code") == code
    assert output in ran["content"]
    assert "Wall time" not in ran["content"] and '"metadata"' not in ran["content"]


def test_codex_stop_fills_in_the_exit_code_of_a_command_the_hook_recorded(
    home: Path, user_home: Path, project: Path
) -> None:
    """Codex's PostToolUse sends a command's bare output: a failing run was stored as run
    fine, and the record kept the rollout's version of the call (with its exit code) out."""
    post = installed(home, user_home, "codex", "PostToolUse")
    stop = installed(home, user_home, "codex", "Stop")
    output = "F.\nE   AssertionError: assert 14 == 12\n1 failed, 1 passed in 0.2s\n"
    passed = "2 passed in 0.1s\n"
    for call, command, response in (
        ("call_A1", "pytest tests/test_sync.py -q", output),
        ("call_A2", "pytest tests/test_api.py -q", passed),
    ):
        fire(home, project, post, codex_tool(project, call, "Bash", {"command": command}, response))
    [failing, fine] = observations(home)
    assert failing["metadata"]["failed"] is False and "exit_code" not in failing["metadata"]

    base = {"timestamp": "2026-03-05T14:00:21.000Z", "type": "response_item"}
    records = [
        {"timestamp": "2026-03-05T14:00:03.000Z", "type": "session_meta", "payload": {
            "id": "cx-tools", "timestamp": "2026-03-05T14:00:00.000Z", "cwd": str(project),
            "originator": "codex_cli_rs", "cli_version": "0.46.0"}},
        {**base, "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Why does the stock sync double-count returns?"}]}},
    ]  # fmt: skip
    for call, command, text, code in (
        ("call_A1", "pytest tests/test_sync.py -q", output, 1),
        ("call_A2", "pytest tests/test_api.py -q", passed, 0),
    ):
        arguments = {"command": ["bash", "-lc", command], "workdir": str(project)}
        result = {"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.4}}
        records += [
            {**base, "payload": {"type": "function_call", "name": "shell", "call_id": call,
                                 "arguments": json.dumps(arguments)}},
            {**base, "payload": {"type": "function_call_output", "call_id": call,
                                 "output": json.dumps(result)}},
        ]  # fmt: skip
    rollout = project / "rollout-2026-03-05T14-00-00-cx-tools.jsonl"
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    payload = {
        "session_id": "cx-tools",
        "turn_id": "turn-3",
        "transcript_path": str(rollout),
        "cwd": str(project),
        "hook_event_name": "Stop",
        "model": "gpt-5.4",
        "stop_hook_active": False,
        "last_assistant_message": "Returns are applied twice.",
    }
    fire(home, project, stop, payload)
    commands = [o for o in observations(home) if o["type"] == "command"]
    assert len(commands) == 2  # still one record per call
    failed, ok = commands
    assert (failed["title"], failed["tags"]) == (
        "Ran: pytest tests/test_sync.py -q (exit 1)",
        ["failed"],
    )
    assert failed["metadata"]["failed"] is True and failed["metadata"]["exit_code"] == 1
    assert "assert 14 == 12" in failed["content"]
    assert ok == fine  # a run the rollout reports as fine was recorded right already
    assert log_lines(home) == []


def test_every_mapped_agent_has_a_mapping_and_no_other() -> None:
    """agents.MAPPED_AGENTS decides which payloads go through payloads.translate: an agent in
    one table and not the other would reach translate without a mapping, or never."""
    from memlane.hooks import payloads
    from memlane.hooks.agents import MAPPED_AGENTS

    assert set(MAPPED_AGENTS) == set(payloads._MAPPINGS)


def test_codex_subagent_stop_ingests_the_subagents_rollout_under_its_parent(
    home: Path, user_home: Path, project: Path
) -> None:
    # SubagentStop's input: openai/codex codex-rs/hooks/schema/generated/
    # subagent-stop.command.input.schema.json.
    command = installed(home, user_home, "codex", "SubagentStop")
    records = [
        {"timestamp": "2026-03-05T14:10:00.000Z", "type": "session_meta", "payload": {
            "id": "thread-child-7", "timestamp": "2026-03-05T14:10:00.000Z", "cwd": str(project),
            "originator": "codex_cli_rs", "cli_version": "0.130.0"}},
        {"timestamp": "2026-03-05T14:10:01.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Find where the ledger rounds currency."}]}},
        {"timestamp": "2026-03-05T14:10:09.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Rounding is in ledger/money.py, half-even."}]}},
    ]  # fmt: skip
    rollout = project / "rollout-2026-03-05T14-10-00-thread-child-7.jsonl"
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    payload = {
        "session_id": "cx-parent",
        "turn_id": "turn-2",
        "transcript_path": None,
        "cwd": str(project),
        "hook_event_name": "SubagentStop",
        "model": "gpt-5.4",
        "permission_mode": "default",
        "stop_hook_active": False,
        "agent_id": "thread-child-7",
        "agent_type": "explorer",
        "agent_transcript_path": str(rollout),
        "last_assistant_message": "Rounding is in ledger/money.py, half-even.",
    }
    assert fire(home, project, command, payload) == b""
    sessions = "SELECT id, parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL"
    assert rows(home, sessions) == [("cx-parent:agent-thread-child-7", "cx-parent")]
    turns = rows(home, "SELECT session_id, content FROM memories WHERE kind = 'turn'")
    assert any("ledger/money.py" in content for _session, content in turns), turns
    assert log_lines(home) == []
