"""Cursor, Windsurf and Cline hooks, from `memlane setup --agent X` to the store.

Each test installs the hooks in a temporary HOME with the real command, fires the
installed command (or Cline's hook file) with the agent's documented payload, and reads
the real SQLite store. The payloads follow the agents' docs:
https://cursor.com/docs/agent/hooks, https://docs.windsurf.com/windsurf/cascade/hooks,
https://docs.cline.bot/features/hooks/hook-reference.
"""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from memlane.hooks.events import MAX_STDIN_BYTES
from memlane.integrations import hook_command
from memlane.integrations.settings_merge import is_memlane_command
from tests.conftest import run_memlane
from tests.test_agent_payloads import fire
from tests.test_hooks import log_lines, observations, rows

CURSOR = ".cursor/hooks.json"
WINDSURF = ".codeium/windsurf/hooks.json"
CLINE = "Documents/Cline/Hooks"


def setup(home: Path, user_home: Path, *args: str) -> str:
    done = run_memlane(home, *args, env={"HOME": str(user_home)}, cwd=user_home)
    assert done.returncode == 0, done.stderr
    return done.stdout


def flat_command(user_home: Path, settings: str, native: str) -> str:
    """memlane's command for ``native`` in a flat hook file (Cursor's, Windsurf's)."""
    hooks = json.loads((user_home / settings).read_text(encoding="utf-8"))["hooks"]
    [command] = [h["command"] for h in hooks[native] if is_memlane_command(h.get("command"))]
    return str(command)


def prompts(home: Path) -> list[tuple[str, str]]:
    return [
        (str(r[0]), str(r[1]))
        for r in rows(home, "SELECT session_id, content FROM memories WHERE type = 'prompt'")
    ]


# -- Cursor ----------------------------------------------------------------------------


def cursor_event(project: Path, event: str, **fields: Any) -> dict[str, Any]:
    return {
        "conversation_id": "cur-conv-1",
        "generation_id": "gen-7",
        "model": "claude-4-sonnet",
        "hook_event_name": event,
        "cursor_version": "1.7.2",
        "workspace_roots": [str(project)],
        "user_email": None,
        **fields,
    }


def test_cursor_hooks_capture_prompt_command_and_edits(
    home: Path, user_home: Path, project: Path
) -> None:
    setup(home, user_home, "setup", "--agent", "cursor")
    hook = lambda native: flat_command(user_home, CURSOR, native)  # noqa: E731
    prompt = cursor_event(
        project,
        "beforeSubmitPrompt",
        prompt="Why does the retry test fail with KeyError order_id?",
        attachments=[{"type": "file", "filePath": str(project / "src/payments/retry.py")}],
    )
    # Cursor takes no context from a hook: nothing is printed, the prompt goes on.
    assert fire(home, project, hook("beforeSubmitPrompt"), prompt) == b""
    shell = cursor_event(
        project,
        "afterShellExecution",
        command="pytest -q tests/test_retry.py",
        output="E   KeyError: 'order_id'\n1 failed, 3 passed in 0.4s\n",
        duration=1234,
    )
    assert fire(home, project, hook("afterShellExecution"), shell) == b""
    retry = str(project / "src/payments/retry.py")
    one = cursor_event(
        project,
        "afterFileEdit",
        file_path=retry,
        edits=[{"old_string": "delay = 1", "new_string": "delay = backoff(attempt)"}],
    )
    two = cursor_event(
        project,
        "afterFileEdit",
        file_path=retry,
        edits=[
            {"old_string": "import time", "new_string": "import time\nimport random"},
            {"old_string": "MAX = 3", "new_string": "MAX = 5"},
        ],
    )
    assert fire(home, project, hook("afterFileEdit"), one) == b""
    assert fire(home, project, hook("afterFileEdit"), two) == b""
    # The reply (https://cursor.com/docs/hooks#afteragentresponse: "text") is the answer.
    reply = cursor_event(
        project,
        "afterAgentResponse",
        text="The retry read `order_id` before the charge existed; it now backs off.\n\n"
        "Next: run the payments suite",
    )
    assert fire(home, project, hook("afterAgentResponse"), reply) == b""
    assert "stop" not in json.loads((user_home / CURSOR).read_text())["hooks"]

    assert prompts(home) == [("cur-conv-1", "Why does the retry test fail with KeyError order_id?")]
    turns = "SELECT session_id, content, source_id FROM memories WHERE kind = 'turn'"
    assert rows(home, turns) == [
        (
            "cur-conv-1",
            # under the prompt it answers: a past prompt is shown with its answer
            "user: Why does the retry test fail with KeyError order_id?\n"
            "assistant: The retry read `order_id` before the charge existed; it now backs off."
            "\n\nNext: run the payments suite",
            "cur-conv-1:reply:gen-7",
        )
    ]
    [(checkpoint,)] = rows(home, "SELECT content FROM memories WHERE kind = 'checkpoint'")
    assert "run the payments suite" in checkpoint  # the next step the reply named
    ran, edited, multi = observations(home)
    assert (ran["type"], ran["title"]) == ("command", "Ran: pytest -q tests/test_retry.py")
    assert "1 failed, 3 passed" in ran["content"]
    assert "exit_code" not in ran["metadata"]  # Cursor sends none
    assert (edited["type"], edited["title"]) == ("file-write", "Edited src/payments/retry.py")
    # The SEARCH/REPLACE block as an edit: the text replaced and its replacement.
    assert edited["content"].split("\n")[1:] == ["- delay = 1", "+ delay = backoff(attempt)"]
    assert multi["title"] == "Edited src/payments/retry.py (2 edits)"
    assert rows(home, "SELECT id FROM sessions") == [("cur-conv-1",)]
    assert log_lines(home) == []


def test_a_cursor_prompt_through_claude_codes_hooks_too_is_stored_once(
    home: Path, user_home: Path, project: Path
) -> None:
    # Cursor's third-party hooks option runs ~/.claude/settings.json's hooks besides its
    # own, each with Cursor's payload (https://cursor.com/docs/reference/third-party-hooks).
    setup(home, user_home, "setup")
    setup(home, user_home, "setup", "--agent", "cursor")
    claude = json.loads((user_home / ".claude/settings.json").read_text(encoding="utf-8"))
    [claude_hook] = [
        h["command"]
        for g in claude["hooks"]["UserPromptSubmit"]
        for h in g["hooks"]
        if is_memlane_command(h["command"])
    ]
    cursor_hook = flat_command(user_home, CURSOR, "beforeSubmitPrompt")
    ask = "please refactor the wobblegrommet module"
    for hook in (cursor_hook, claude_hook):
        fire(home, project, hook, cursor_event(project, "beforeSubmitPrompt", prompt=ask))
    # Other words in the same turn are a prompt of their own; the same words in the next
    # turn are asked again.
    other = cursor_event(project, "beforeSubmitPrompt", prompt="and rename it to gizmo")
    fire(home, project, claude_hook, other)
    again = cursor_event(project, "beforeSubmitPrompt", prompt=ask, generation_id="gen-8")
    fire(home, project, cursor_hook, again)

    numbers = "SELECT content, source_id FROM memories WHERE type = 'prompt' ORDER BY id"
    assert rows(home, numbers) == [
        (ask, "cur-conv-1:prompt:1"),
        ("and rename it to gizmo", "cur-conv-1:prompt:2"),
        (ask, "cur-conv-1:prompt:3"),
    ]
    assert rows(home, "SELECT prompt_count FROM sessions") == [(3,)]
    assert log_lines(home) == []


def test_cursor_setup_merges_with_the_users_hooks_and_uninstall_keeps_them(
    home: Path, user_home: Path
) -> None:
    path = user_home / CURSOR
    path.parent.mkdir()
    theirs = {
        "version": 1,
        "hooks": {
            "afterFileEdit": [{"command": "./hooks/format.sh"}],
            "beforeShellExecution": [{"command": "./hooks/block-git.sh"}],
        },
    }
    path.write_text(json.dumps(theirs), encoding="utf-8")
    path.chmod(0o640)
    setup(home, user_home, "setup", "--agent", "cursor")
    hooks = json.loads(path.read_text(encoding="utf-8"))["hooks"]
    assert hooks["afterFileEdit"][0] == {"command": "./hooks/format.sh"}
    assert is_memlane_command(hooks["afterFileEdit"][1]["command"])
    assert hooks["beforeShellExecution"] == [{"command": "./hooks/block-git.sh"}]
    assert set(hooks) == {
        "beforeSubmitPrompt",
        "afterShellExecution",
        "afterFileEdit",
        "afterAgentResponse",
        "beforeShellExecution",
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a file of commands: the user's alone
    before = path.read_bytes()
    assert "already up to date" in setup(home, user_home, "setup", "--agent", "cursor")
    assert path.read_bytes() == before
    setup(home, user_home, "uninstall", "--agent", "cursor")
    assert json.loads(path.read_text(encoding="utf-8")) == theirs


def test_cursor_setup_replaces_the_stop_hook_of_an_earlier_setup(
    home: Path, user_home: Path
) -> None:
    setup(home, user_home, "setup", "--agent", "cursor")
    path = user_home / CURSOR
    earlier = json.loads(path.read_text(encoding="utf-8"))
    command = earlier["hooks"].pop("afterAgentResponse")
    earlier["hooks"]["stop"] = command  # what setup wrote before it ran on the reply
    earlier["hooks"]["stop"].append({"command": "./hooks/notify.sh"})
    path.write_text(json.dumps(earlier), encoding="utf-8")
    out = setup(home, user_home, "setup", "--agent", "cursor")
    assert "memlane's hooks added for afterAgentResponse" in out
    hooks = json.loads(path.read_text(encoding="utf-8"))["hooks"]
    assert hooks["stop"] == [{"command": "./hooks/notify.sh"}]
    assert is_memlane_command(hooks["afterAgentResponse"][0]["command"])


def test_cursor_setup_writes_a_new_hook_file_private(home: Path, user_home: Path) -> None:
    setup(home, user_home, "setup", "--agent", "cursor")
    path = user_home / CURSOR
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == 1
    assert "already up to date" in setup(home, user_home, "setup", "--agent", "cursor")


# -- Windsurf --------------------------------------------------------------------------


def windsurf_event(action: str, **info: Any) -> dict[str, Any]:
    return {
        "agent_action_name": action,
        "trajectory_id": "ws-traj-1",
        "execution_id": "ws-exec-4",
        "timestamp": "2026-01-14T12:00:00Z",
        "tool_info": info,
    }


def test_windsurf_hooks_capture_prompt_write_command_mcp_and_response(
    home: Path, user_home: Path, project: Path
) -> None:
    setup(home, user_home, "setup", "--agent", "windsurf")
    hooks = json.loads((user_home / WINDSURF).read_text(encoding="utf-8"))["hooks"]
    assert all(entry["show_output"] is False for groups in hooks.values() for entry in groups)
    hook = lambda native: flat_command(user_home, WINDSURF, native)  # noqa: E731
    prompt = windsurf_event("pre_user_prompt", user_prompt="Make the payment retry back off")
    assert fire(home, project, hook("pre_user_prompt"), prompt) == b""
    write = windsurf_event(
        "post_write_code",
        file_path=str(project / "src/payments/retry.py"),
        edits=[{"old_string": "import os", "new_string": "import os\nimport sys"}],
    )
    assert fire(home, project, hook("post_write_code"), write) == b""
    command = windsurf_event("post_run_command", command_line="npm test", cwd=str(project))
    assert fire(home, project, hook("post_run_command"), command) == b""
    mcp = {
        "mcp_server_name": "github",
        "mcp_tool_name": "list_commits",
        "mcp_tool_arguments": {"owner": "acme", "repo": "billing-api", "sha": "main"},
        "mcp_result": '[{"sha": "4f2a", "message": "retry with backoff"}]',
    }
    assert (
        fire(home, project, hook("post_mcp_tool_use"), windsurf_event("post_mcp_tool_use", **mcp))
        == b""
    )
    own = {**mcp, "mcp_server_name": "memlane", "mcp_tool_name": "search"}
    assert (
        fire(home, project, hook("post_mcp_tool_use"), windsurf_event("post_mcp_tool_use", **own))
        == b""
    )
    response = windsurf_event(
        "post_cascade_response",
        response="### Planner Response\n\nThe retry now backs off exponentially.",
    )
    assert fire(home, project, hook("post_cascade_response"), response) == b""

    assert prompts(home) == [("ws-traj-1", "Make the payment retry back off")]
    edited, ran, listed = observations(home)  # memlane's own search is left out
    assert edited["title"] == "Edited src/payments/retry.py"
    assert (ran["type"], ran["title"]) == ("command", "Ran: npm test")
    assert listed["metadata"]["tool"] == "mcp__github__list_commits"
    [turn] = rows(home, "SELECT content FROM memories WHERE kind = 'turn'")
    assert "backs off exponentially" in turn[0]
    assert rows(home, "SELECT id FROM sessions") == [("ws-traj-1",)]
    assert log_lines(home) == []


def test_windsurf_setup_merges_and_uninstall_keeps_the_users_hooks(
    home: Path, user_home: Path
) -> None:
    path = user_home / WINDSURF
    path.parent.mkdir(parents=True)
    theirs = {"hooks": {"post_write_code": [{"command": "bash ~/fmt.sh", "show_output": True}]}}
    path.write_text(json.dumps(theirs), encoding="utf-8")
    setup(home, user_home, "setup", "--agent", "windsurf")
    hooks = json.loads(path.read_text(encoding="utf-8"))["hooks"]
    assert hooks["post_write_code"][0] == {"command": "bash ~/fmt.sh", "show_output": True}
    assert len(hooks["post_write_code"]) == 2
    assert "already up to date" in setup(home, user_home, "setup", "--agent", "windsurf")
    setup(home, user_home, "uninstall", "--agent", "windsurf")
    assert json.loads(path.read_text(encoding="utf-8")) == theirs


def test_windsurf_project_setup_writes_the_workspace_file(
    home: Path, user_home: Path, project: Path
) -> None:
    done = run_memlane(
        home, "setup", "--agent", "windsurf", "--project", env={"HOME": str(user_home)}, cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert (project / ".windsurf/hooks.json").is_file()
    assert not (user_home / WINDSURF).exists()


# -- Cline -----------------------------------------------------------------------------


def cline_event(project: Path, hook: str, **section: Any) -> dict[str, Any]:
    key = hook[0].lower() + hook[1:]
    return {
        "clineVersion": "3.36.0",
        "hookName": hook,
        "timestamp": "1767000000000",
        "taskId": "cline-task-1",
        "workspaceRoots": [str(project)],
        "userId": "user-1",
        key: section,
    }


def cline_tool(project: Path, name: str, params: dict[str, Any], result: str, ok: bool) -> Any:
    return cline_event(
        project,
        "PostToolUse",
        toolName=name,
        parameters=params,
        result=result,
        success=ok,
        executionTimeMs=420,
    )


def test_cline_hooks_capture_tools_and_inject_context(
    home: Path, user_home: Path, project: Path
) -> None:
    setup(home, user_home, "setup", "--agent", "cline")
    folder = user_home / CLINE
    hook = lambda name: shlex.quote(str(folder / name))  # noqa: E731
    start = cline_event(
        project,
        "TaskStart",
        taskMetadata={"taskId": "cline-task-1", "ulid": "01J", "initialTask": "Fix the retry"},
    )
    assert fire(home, project, hook("TaskStart"), start) == b""  # nothing to recall yet
    failed = cline_tool(
        project,
        "execute_command",
        {"command": "pytest -q tests/test_retry.py", "requires_approval": "false"},
        "Command executed.\nOutput:\nE   KeyError: 'order_id'\n1 failed",
        False,
    )
    assert fire(home, project, hook("PostToolUse"), failed) == b""
    wrote = cline_tool(
        project,
        "write_to_file",
        {"path": "src/payments/backoff.py", "content": "def backoff(n):\n    return 2 ** n\n"},
        "The content was successfully saved to src/payments/backoff.py.",
        True,
    )
    assert fire(home, project, hook("PostToolUse"), wrote) == b""
    diff = "------- SEARCH\ndelay = 1\n=======\ndelay = backoff(attempt)\n+++++++ REPLACE"
    replaced = cline_tool(
        project,
        "replace_in_file",
        {"path": "src/payments/retry.py", "diff": diff},
        "The content was successfully saved to src/payments/retry.py.",
        True,
    )
    assert fire(home, project, hook("PostToolUse"), replaced) == b""
    searched = cline_tool(
        project,
        "search_files",
        {"path": "src", "regex": "order_id", "file_pattern": "*.py"},
        "Found 2 results.\n\nsrc/payments/retry.py\n│----\n│order_id = charge.id",
        True,
    )
    assert fire(home, project, hook("PostToolUse"), searched) == b""
    own = cline_tool(
        project,
        "use_mcp_tool",
        {"server_name": "memlane", "tool_name": "search", "arguments": '{"query": "retry"}'},
        "1 memory",
        True,
    )
    assert fire(home, project, hook("PostToolUse"), own) == b""

    ran, created, edited, grep = observations(home)  # memlane's own search left out
    assert (ran["type"], ran["title"], ran["tags"]) == (
        "command",
        "Ran: pytest -q tests/test_retry.py (failed)",
        ["failed"],
    )
    assert "KeyError: 'order_id'" in ran["content"]
    assert (created["type"], created["title"]) == ("file-write", "Wrote src/payments/backoff.py")
    assert (edited["type"], edited["title"]) == ("file-write", "Edited src/payments/retry.py")
    # The SEARCH/REPLACE block as an edit: the text replaced and its replacement.
    assert edited["content"].split("\n")[1:] == ["- delay = 1", "+ delay = backoff(attempt)"]
    assert grep["metadata"]["tool"] == "Grep" and grep["metadata"]["pattern"] == "order_id"

    outcome = "Retries now back off exponentially. The KeyError came from a missing order_id."
    metadata = {"taskId": "cline-task-1", "ulid": "01J", "result": outcome, "command": ""}
    done = cline_event(project, "TaskComplete", taskMetadata=metadata)
    assert fire(home, project, hook("TaskComplete"), done) == b""
    # The completion's text is the turn's answer (as another agent's reply is kept).
    [(reply,)] = rows(home, "SELECT content FROM memories WHERE kind = 'turn'")
    assert reply.endswith(f"assistant: {outcome}")
    cancel = cline_event(project, "TaskCancel", taskMetadata={"taskId": "cline-task-1"})
    assert fire(home, project, hook("TaskCancel"), cancel) == b""
    assert rows(home, "SELECT id, agent, status FROM sessions") == [
        ("cline-task-1", "cline", "ended")
    ]

    # A later task starts with the project's context and its prompt gets what memlane
    # recalls, both as Cline's contextModification.
    later = {"taskId": "cline-task-2"}
    start = {**cline_event(project, "TaskStart", taskMetadata={"taskId": "cline-task-2"}), **later}
    context = json.loads(fire(home, project, hook("TaskStart"), start))
    assert context["cancel"] is False
    assert context["contextModification"].startswith("<memlane-context>")
    prompt = cline_event(
        project,
        "UserPromptSubmit",
        prompt="Why does pytest fail with KeyError order_id?",
        attachments=[],
    )
    answer = json.loads(fire(home, project, hook("UserPromptSubmit"), {**prompt, **later}))
    assert answer["cancel"] is False
    assert answer["contextModification"].startswith("<memlane-context>")
    assert "KeyError: 'order_id'" in answer["contextModification"]
    assert prompts(home) == [("cline-task-2", "Why does pytest fail with KeyError order_id?")]
    assert log_lines(home) == []


def test_cline_pre_compact_refreshes_the_tasks_checkpoint(
    home: Path, user_home: Path, project: Path
) -> None:
    setup(home, user_home, "setup", "--agent", "cline")
    folder = user_home / CLINE
    hook = lambda name: shlex.quote(str(folder / name))  # noqa: E731
    asked = cline_event(project, "UserPromptSubmit", prompt="Make the retry back off")
    fire(home, project, hook("UserPromptSubmit"), asked)
    assert rows(home, "SELECT 1 FROM memories WHERE kind = 'checkpoint'") == []
    # Cline's own template for the hook (src/core/hooks/templates.ts) sends these sizes.
    compact = cline_event(
        project, "PreCompact", contextSize=180000, messagesToCompact=45, compactionStrategy="half"
    )
    assert fire(home, project, hook("PreCompact"), compact) == b""  # the task goes on
    [(checkpoint,)] = rows(
        home, "SELECT content FROM memories WHERE kind = 'checkpoint' AND session_id = ?",
        ("cline-task-1",),
    )  # fmt: skip
    assert "Make the retry back off" in checkpoint
    assert log_lines(home) == []


def test_cline_setup_keeps_the_users_hook_files_and_uninstall_removes_only_memlanes(
    home: Path, user_home: Path
) -> None:
    folder = user_home / CLINE
    folder.mkdir(parents=True)
    theirs = folder / "PostToolUse"
    theirs.write_text("#!/bin/sh\necho '{\"cancel\": false}'\n", encoding="utf-8")
    theirs.chmod(0o755)
    out = setup(home, user_home, "setup", "--agent", "cline")
    assert f"{theirs} is a hook of yours and stays as it is" in out
    assert theirs.read_text(encoding="utf-8") == "#!/bin/sh\necho '{\"cancel\": false}'\n"
    ours = sorted(p.name for p in folder.iterdir() if p.name != "PostToolUse")
    assert ours == [
        "PreCompact",
        "TaskCancel",
        "TaskComplete",
        "TaskResume",
        "TaskStart",
        "UserPromptSubmit",
    ]
    for name in ours:
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o700
    again = setup(home, user_home, "setup", "--agent", "cline")
    assert again.count("already up to date") == 6
    setup(home, user_home, "uninstall", "--agent", "cline")
    assert [p.name for p in folder.iterdir()] == ["PostToolUse"]


# -- hooks never hurt the agent --------------------------------------------------------


def installed_hook(user_home: Path, agent: str) -> str:
    if agent == "cursor":
        return flat_command(user_home, CURSOR, "afterShellExecution")
    if agent == "windsurf":
        return flat_command(user_home, WINDSURF, "post_run_command")
    return shlex.quote(str(user_home / CLINE / "PostToolUse"))


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b'["a list"]', id="not-an-object"),
        pytest.param(b"{}", id="no-session"),
        pytest.param(b"{" + b" " * MAX_STDIN_BYTES + b"}", id="huge"),
    ],
)
@pytest.mark.parametrize("agent", ["cursor", "windsurf", "cline"])
def test_a_bad_payload_exits_0_silently_with_one_log_line(
    home: Path, user_home: Path, project: Path, agent: str, stdin: bytes
) -> None:
    setup(home, user_home, "setup", "--agent", agent)
    assert fire(home, project, installed_hook(user_home, agent), stdin) == b""
    assert len(log_lines(home)) == 1
    assert observations(home) == []


@pytest.mark.parametrize(
    ("agent", "payload"),
    [
        pytest.param(
            "cursor",
            {"conversation_id": 7, "command": "ls", "output": ""},
            id="cursor-session-not-text",
        ),
        pytest.param(
            "windsurf",
            {
                "agent_action_name": "post_run_command",
                "trajectory_id": "t",
                "tool_info": {"command_line": "ls", "cwd": ["not", "a", "path"]},
            },
            id="windsurf-cwd-not-text",
        ),
        pytest.param(
            "cline",
            {"hookName": "PostToolUse", "taskId": "t", "workspaceRoots": [3]},
            id="cline-root-not-text",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_logged_not_stored(
    home: Path, user_home: Path, project: Path, agent: str, payload: dict[str, Any]
) -> None:
    setup(home, user_home, "setup", "--agent", agent)
    assert fire(home, project, installed_hook(user_home, agent), payload) == b""
    assert len(log_lines(home)) == 1
    assert observations(home) == []


# -- the session's agent ---------------------------------------------------------------


def first_event(user_home: Path, project: Path, agent: str) -> tuple[str, dict[str, Any] | bytes]:
    """The installed command and payload of a session's first event, for agents that send
    no SessionStart: a command run (Cursor, Windsurf), a prompt (Kiro, in USER_PROMPT)."""
    if agent == "cursor":
        shell = cursor_event(project, "afterShellExecution", command="make test", output="ok\n")
        return flat_command(user_home, CURSOR, "afterShellExecution"), shell
    if agent == "windsurf":
        run = windsurf_event("post_run_command", command_line="make test", cwd=str(project))
        return flat_command(user_home, WINDSURF, "post_run_command"), run
    hook = json.loads((user_home / ".kiro/hooks/memlane-prompt-submit.kiro.hook").read_text())
    return "USER_PROMPT='Why does make test fail?' " + hook["then"]["command"], b""


@pytest.mark.parametrize(
    ("agent", "relayed"),
    [("cursor", False), ("windsurf", False), ("kiro", False), ("cursor", True)],
)
def test_the_first_event_of_a_session_names_its_agent(
    home: Path,
    user_home: Path,
    project: Path,
    client: httpx.Client,
    request: pytest.FixtureRequest,
    agent: str,
    relayed: bool,
) -> None:
    setup(home, user_home, "setup", "--agent", agent)
    command, payload = first_event(user_home, project, agent)
    worker = request.getfixturevalue("relay_worker") if relayed else None
    assert fire(home, project, command, payload) == b""
    if worker is not None:  # the worker ran the hook: its writes follow the answer
        assert worker.wait_quiet() and worker.handled == 1
    [(session_id, stored)] = rows(home, "SELECT id, agent FROM sessions")
    assert stored == agent
    listed = run_memlane(home, "list", cwd=project)  # the sessions
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split("\n", 1)[0].endswith(f"prompts {int(agent == 'kiro')}  {agent}")
    [shown] = client.get("/api/sessions", params={"project": "billing-api"}).json()["sessions"]
    assert (shown["id"], shown["agent"]) == (session_id, agent)
    # A known agent is never replaced: the same session id from another agent's hook.
    other = {"session_id": session_id, "cwd": str(project), "prompt": "and now?"}
    fire(home, project, hook_command("user-prompt-submit"), other)
    assert rows(home, "SELECT agent FROM sessions") == [(agent,)]
    assert log_lines(home) == []


# -- the project of an event -----------------------------------------------------------


def projects(home: Path) -> list[tuple[str, str]]:
    return [(str(r[0]), str(r[1])) for r in rows(home, "SELECT type, project FROM memories")]


@pytest.mark.parametrize("relayed", [False, True])
def test_an_event_without_a_workspace_is_filed_under_the_hooks_directory(
    home: Path, user_home: Path, project: Path, request: pytest.FixtureRequest, relayed: bool
) -> None:
    """Windsurf names no workspace (its hook runs in it), Cursor and Cline may send none:
    the hook process's directory is the project, also when the worker (whose own working
    directory is elsewhere) runs the hook."""
    for agent in ("cursor", "windsurf", "cline"):
        setup(home, user_home, "setup", "--agent", agent)
    worker = request.getfixturevalue("relay_worker") if relayed else None
    ask = "Why does the payment retry loop forever?"
    cursor = {**cursor_event(project, "beforeSubmitPrompt", prompt=ask), "workspace_roots": []}
    fire(home, project, flat_command(user_home, CURSOR, "beforeSubmitPrompt"), cursor)
    windsurf = windsurf_event("pre_user_prompt", user_prompt=ask)
    fire(home, project, flat_command(user_home, WINDSURF, "pre_user_prompt"), windsurf)
    cline = cline_event(project, "UserPromptSubmit", prompt=ask)
    del cline["workspaceRoots"]
    fire(home, project, shlex.quote(str(user_home / CLINE / "UserPromptSubmit")), cline)
    if worker is not None:
        assert worker.wait_quiet() and worker.handled == 3
    assert projects(home) == [("prompt", "billing-api")] * 3


@pytest.mark.parametrize("relayed", [False, True])
def test_a_commands_own_directory_does_not_change_the_project(
    home: Path, user_home: Path, tmp_path: Path, request: pytest.FixtureRequest, relayed: bool
) -> None:
    """A command run in a subfolder of a workspace without git, or in a made-up folder,
    is filed under the workspace; its directory is kept in its metadata."""
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    for agent in ("cursor", "windsurf"):
        setup(home, user_home, "setup", "--agent", agent)
    worker = request.getfixturevalue("relay_worker") if relayed else None
    places = [str(workspace / "sub"), "/etc/passwd", "/nonexistent"]
    for n, place in enumerate(places):
        shell = cursor_event(
            workspace, "afterShellExecution", command=f"make t{n}", output="ok\n", cwd=place
        )
        fire(home, workspace, flat_command(user_home, CURSOR, "afterShellExecution"), shell)
        run = windsurf_event("post_run_command", command_line=f"make w{n}", cwd=place)
        fire(home, workspace, flat_command(user_home, WINDSURF, "post_run_command"), run)
    if worker is not None:
        assert worker.wait_quiet() and worker.handled == 6
    assert projects(home) == [("command", "workspace")] * 6
    ran = [(o["title"], o["metadata"]["cwd"]) for o in observations(home)]
    assert ran == [
        (f"Ran: make {agent}{n}", place) for n, place in enumerate(places) for agent in "tw"
    ]


# -- setup writes hooks only where no one else can change them -------------------------


def refused(home: Path, user_home: Path, cwd: Path, *args: str) -> str:
    """The one-line error of a setup that must fail."""
    done = run_memlane(home, *args, env={"HOME": str(user_home)}, cwd=cwd)
    assert done.returncode != 0
    [line] = done.stderr.splitlines()
    return line


def test_cline_project_setup_refuses_a_linked_hooks_folder(
    home: Path, user_home: Path, project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".clinerules").mkdir()
    (project / ".clinerules/hooks").symlink_to(elsewhere)
    line = refused(home, user_home, project, "setup", "--agent", "cline", "--project")
    assert "symbolic link" in line and ".clinerules/hooks" in line
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(("agent", "folder"), [("cline", ".clinerules"), ("kiro", ".kiro")])
def test_project_uninstall_refuses_a_linked_hooks_folder(
    home: Path, user_home: Path, project: Path, tmp_path: Path, agent: str, folder: str
) -> None:
    """Uninstall deletes files only inside the project, not where a link in it points."""
    elsewhere = tmp_path / "elsewhere"
    env = {"HOME": str(user_home)}
    assert (
        run_memlane(home, "setup", "--agent", agent, "--project", env=env, cwd=project).returncode
        == 0
    )
    (project / folder / "hooks").rename(elsewhere)
    (project / folder / "hooks").symlink_to(elsewhere)
    kept = sorted(elsewhere.iterdir())
    line = refused(home, user_home, project, "uninstall", "--agent", agent, "--project")
    assert "symbolic link" in line and f"{folder}/hooks" in line
    assert sorted(elsewhere.iterdir()) == kept


def test_kiro_uninstall_refuses_a_folder_at_a_hook_files_name(home: Path, user_home: Path) -> None:
    folder = user_home / ".kiro/hooks/memlane-agent-stop.kiro.hook"
    folder.mkdir(parents=True)
    done = run_memlane(home, "uninstall", "--agent", "kiro", env={"HOME": str(user_home)})
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert str(folder) in line and "not a regular file" in line
    assert folder.is_dir()


@pytest.mark.parametrize(
    ("agent", "folder"),
    [
        ("cursor", ".cursor"),
        ("windsurf", ".windsurf"),
        ("cline", ".clinerules/hooks"),
        ("kiro", ".kiro/hooks"),
    ],
)
def test_project_setup_refuses_a_folder_another_user_can_write(
    home: Path, user_home: Path, project: Path, other_user: Any, agent: str, folder: str
) -> None:
    """Another user could rename a script of theirs over the hook the agent runs."""
    import os

    shared = project / folder
    shared.mkdir(parents=True)
    os.chown(shared, other_user.pw_uid, other_user.pw_gid)
    shared.chmod(0o777)
    line = refused(home, user_home, project, "setup", "--agent", agent, "--project")
    assert str(shared) in line and "others can write it" in line
    assert list(shared.iterdir()) == []


def test_setup_writes_the_hook_file_private_whatever_its_old_mode(
    home: Path, user_home: Path
) -> None:
    path = user_home / CURSOR
    path.parent.mkdir()
    path.write_text('{"version": 1, "hooks": {}}', encoding="utf-8")
    path.chmod(0o666)
    setup(home, user_home, "setup", "--agent", "cursor")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "beforeSubmitPrompt" in json.loads(path.read_text(encoding="utf-8"))["hooks"]


SETTINGS = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "cursor": CURSOR,
    "windsurf": WINDSURF,
}


@pytest.mark.parametrize("agent", list(SETTINGS))
@pytest.mark.parametrize("content", ["nested", "folder", "huge"])
def test_a_settings_file_setup_cannot_use_is_one_line(
    home: Path, user_home: Path, agent: str, content: str
) -> None:
    path = user_home / SETTINGS[agent]
    path.parent.mkdir(parents=True)
    if content == "folder":
        path.mkdir()
    elif content == "nested":
        path.write_text('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    else:  # over the cap, and valid JSON
        path.write_text('{"a": "' + "x" * (17 * 1024 * 1024) + '"}', encoding="utf-8")
    line = refused(home, user_home, user_home, "setup", "--agent", agent)
    assert str(path) in line
    assert {
        "nested": "not valid JSON",
        "folder": "not a regular file",
        "huge": "too large",
    }[content] in line


def test_cline_setup_and_uninstall_skip_a_hook_name_that_is_not_a_file(
    home: Path, user_home: Path
) -> None:
    import os

    folder = user_home / CLINE
    folder.mkdir(parents=True)
    os.mkfifo(folder / "TaskStart")
    (folder / "TaskResume").mkdir()
    said = setup(home, user_home, "setup", "--agent", "cline")
    assert "TaskStart is a hook of yours" in said and "TaskResume is a hook of yours" in said
    written = {p.name for p in folder.iterdir() if p.is_file() and not p.is_fifo()}
    assert written == {
        "UserPromptSubmit",
        "PostToolUse",
        "TaskComplete",
        "TaskCancel",
        "PreCompact",
    }
    setup(home, user_home, "uninstall", "--agent", "cline")
    assert sorted(p.name for p in folder.iterdir()) == ["TaskResume", "TaskStart"]
