"""The dispatcher in-process: watchdog budget, rotated log, agent payloads, output cap."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.hooks import dispatch, handlers
from memlane.hooks.agents import InvalidPayload, normalize, parse_event_arg
from memlane.hooks.log import MAX_BYTES, log_line
from memlane.hooks.render import MAX_OUTPUT_CHARS, answer, context_block, recall_block
from memlane.models import SearchHit, utcnow
from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from memlane.service import Memory


def feed(monkeypatch: pytest.MonkeyPatch, data: dict[str, object]) -> None:
    raw = io.BytesIO(json.dumps(data).encode())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw, encoding="utf-8"))


def test_watchdog_stops_a_slow_handler_silently(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    steps: list[int] = []

    def slow(ctx: handlers.HookContext) -> str | None:
        for step in range(3000):  # 30 s of work in small steps
            time.sleep(0.01)
            steps.append(step)
        return "never printed"

    monkeypatch.setitem(handlers.HANDLERS, "user-prompt-submit", slow)
    monkeypatch.setitem(dispatch.BUDGETS, "user-prompt-submit", 0.3)
    # The soft deadline is under test here: the hard one (os._exit) would end this test
    # process itself when a loaded machine runs the alarm's handler late.
    monkeypatch.setattr(dispatch, "HARD_GRACE_S", 60.0)
    feed(monkeypatch, {"session_id": "s", "cwd": str(tmp_path), "prompt": "hello there"})
    assert dispatch.run_hook("user-prompt-submit") == 0
    assert len(steps) < 3000  # interrupted mid-way, not waited for
    done = len(steps)
    time.sleep(0.1)
    assert len(steps) == done  # and not left running in the background
    assert capsys.readouterr().out == ""
    log = (home / "logs" / "hooks.log").read_text()
    assert "HookTimeout" in log and "budget of 0.3s exceeded" in log


def test_handler_exception_is_logged_with_event(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(ctx: handlers.HookContext) -> str | None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setitem(handlers.HANDLERS, "stop", broken)
    feed(monkeypatch, {"session_id": "s", "cwd": str(tmp_path)})
    assert dispatch.run_hook("stop") == 0
    assert capsys.readouterr().out == ""
    lines = (home / "logs" / "hooks.log").read_text().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("hook stop: RuntimeError: boom second line")


def test_log_rotates_and_stays_private(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    for _ in range(MAX_BYTES // 1000 + 5):
        log_line(log_dir, "x" * 1000)
    assert (log_dir / "hooks.log.1").exists()
    assert (log_dir / "hooks.log").stat().st_size < MAX_BYTES
    assert (log_dir / "hooks.log").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("session-start", ("session-start", None)),
        ("UserPromptSubmit", ("user-prompt-submit", None)),
        ("codex:stop", ("stop", "codex")),
        ("gemini:BeforeAgent", ("user-prompt-submit", "gemini")),
        ("AfterTool", ("post-tool-use", "gemini")),
        ("kiro:promptSubmit", ("user-prompt-submit", "kiro")),
        ("claude:pre_compact", ("pre-compact", "claude-code")),
    ],
)
def test_event_spellings(arg: str, expected: tuple[str, str | None]) -> None:
    assert parse_event_arg(arg) == expected


def test_unknown_agent_and_missing_session_are_invalid() -> None:
    with pytest.raises(InvalidPayload, match="unknown agent"):
        parse_event_arg("vim:stop")
    with pytest.raises(InvalidPayload, match="no session_id"):
        normalize("stop", {"cwd": "/x"}, environ={})


def test_other_agents_tools_map_to_claude_code_names() -> None:
    codex = normalize(
        "post-tool-use",
        {
            "session_id": "s",
            "turn_id": "t",
            "model": "m",
            "tool_name": "exec_command",
            "tool_input": {"cmd": ["git", "status"]},
            "transcript_path": "/r.jsonl",
        },
        environ={},
    )
    assert (codex.agent, codex.tool_name, codex.tool_input) == (
        "codex",
        "Bash",
        {"command": "git status"},
    )
    assert codex.transcript_path == "/r.jsonl"  # a rollout: read by memlane.capture.codex
    gemini = normalize(
        "gemini:post-tool-use",
        {"session_id": "s", "tool_name": "read_file", "tool_input": {"absolute_path": "/p/a.py"}},
        environ={},
    )
    assert (gemini.tool_name, gemini.tool_input) == ("Read", {"file_path": "/p/a.py"})
    assert gemini.native_event == "AfterTool"
    kiro = normalize("kiro:user-prompt-submit", {}, environ={"USER_PROMPT": "hi there"})
    assert kiro.prompt == "hi there" and kiro.session_id.startswith("kiro-")


def _hit(i: int, content: str) -> SearchHit:
    return SearchHit(
        id=i,
        project="p",
        kind="knowledge",
        type="decision",
        title=f"title {i}",
        content=content,
        created_at=utcnow(),
        score=0.5,
        session_id="abcdefghijkl",
    )


def test_output_is_capped_and_always_closed() -> None:
    block = recall_block([_hit(i, "word " * 5000) for i in range(3)])
    assert block.startswith(INJECTED_OPEN) and block.endswith(INJECTED_CLOSE)
    assert len(block) < 4_200
    assert "session abcdefghijkl · decision]" in block
    event = normalize("session-start", {"session_id": "s"}, environ={})
    huge = context_block('"quoted\\text"\n' * 5000)
    out = answer(event, huge)
    assert len(out) < 10_000
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(INJECTED_OPEN) and context.endswith(INJECTED_CLOSE)
    assert len(huge) <= MAX_OUTPUT_CHARS + 100


def _session_reads(memory: Memory, settings: Settings, event_arg: str, payload: object) -> int:
    """How many statements reading ``sessions`` one hook event runs (in-process, real SQLite)."""
    statements: list[str] = []
    conn = memory.core.store.connection()  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        dispatch.handle(event_arg, json.dumps(payload).encode(), settings, memory=memory)
    finally:
        conn.set_trace_callback(None)
    return sum("FROM sessions" in sql for sql in statements)


def test_the_agent_is_named_by_the_sessions_own_touch_without_a_read_of_its_own(
    memory: Memory, settings: Settings, project: Path
) -> None:
    """Each hook event used to read its session row once more, after its answer, only to
    see whether the agent was known. The touch that reads the row names it now."""
    memory.session_start("c1", project="billing-api")  # by hand (MCP, CLI): no agent
    base = {"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [str(project)]}
    prompt = {**base, "hook_event_name": "beforeSubmitPrompt", "prompt": "fix the retry loop"}
    shell = {**base, "hook_event_name": "afterShellExecution", "command": "pytest -q"}
    shell["output"] = "3 passed"
    # The touch reads the row, and reads it back once updated; a prompt's recall reads it once.
    assert _session_reads(memory, settings, "cursor:user-prompt-submit", prompt) == 3
    assert memory.get_session("c1").agent == "cursor"
    assert _session_reads(memory, settings, "cursor:post-tool-use", shell) == 2
    # A known agent is never replaced: not by another agent's events, nor by its start.
    other = {"session_id": "c1", "cwd": str(project), "tool_name": "Bash"}
    other.update(tool_input={"command": "make lint"}, tool_response={"stdout": "ok"})
    dispatch.handle(
        "claude-code:post-tool-use", json.dumps(other).encode(), settings, memory=memory
    )
    dispatch.handle(
        "codex:session-start",
        json.dumps({"session_id": "c1", "cwd": str(project)}).encode(),
        settings,
        memory=memory,
    )
    assert memory.get_session("c1").agent == "cursor"
    # A session the first event creates carries the agent from its first write.
    kiro = {"session_id": "k1", "cwd": str(project), "tool_name": "Bash"}
    kiro.update(tool_input={"command": "make test"}, tool_response={"stdout": "ok"})
    dispatch.handle("kiro:post-tool-use", json.dumps(kiro).encode(), settings, memory=memory)
    assert memory.get_session("k1").agent == "kiro"
