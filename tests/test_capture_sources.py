"""Session files on disk: Codex rollouts parsed like Claude Code transcripts, and discovery."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from memlane.capture.codex import is_codex_rollout, iter_codex_turns
from memlane.capture.observations import derived_observations
from memlane.capture.sources import describe, find_session_files, iter_session_turns
from memlane.capture.transcript import ParseStats, ToolCall
from memlane.capture.units import iter_units

DATA = Path(__file__).parent / "data" / "transcripts"
CODEX = DATA / "codex-rollout.jsonl"
CLAUDE = DATA / "webhook-retry.jsonl"


def test_a_codex_rollout_reads_as_turns_of_claude_code_tools() -> None:
    assert is_codex_rollout(str(CODEX)) and not is_codex_rollout(str(CLAUDE))
    turns = list(iter_codex_turns(str(CODEX)))
    assert [t.role for t in turns] == ["user", "assistant"]
    # The environment context is the harness, not the user.
    assert turns[0].text == "The nightly stock sync double-counts returns. Find out why and fix it."
    assert turns[0].session_id == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert turns[0].cwd == "/home/dev/inventory"
    calls = [b for b in turns[1].blocks if isinstance(b, ToolCall)]
    # shell → Bash (its bash -lc wrapper gone), apply_patch → Edit, update_plan dropped.
    assert [(c.name, c.is_error) for c in calls] == [
        ("Bash", True),
        ("Edit", False),
        ("Bash", False),
    ]
    assert calls[0].input == {"command": "pytest tests/test_sync.py -q"}
    assert calls[0].result.startswith("Exit code 1\n")
    assert calls[1].input["file_path"] == "inventory/sync.py"
    units = list(iter_units(turns))
    assert [u.title for u in units if u.kind == "tool"] == [
        "$ pytest tests/test_sync.py -q",
        "Edit inventory/sync.py",
        "$ pytest tests/test_sync.py -q",
    ]
    derived = [d.observation for d in derived_observations(turns)]
    assert [(o.type, o.metadata.get("failed")) for o in derived] == [
        ("command", True),
        ("file-write", None),
        ("command", False),
    ]
    assert derived[2].metadata["outcomes"] == ["2 passed in 0.2s"]


def test_codex_parsing_resumes_from_any_turn_end() -> None:
    stats = ParseStats()
    full = list(iter_codex_turns(str(CODEX), 0, stats))
    assert stats.end_offset == CODEX.stat().st_size  # where the next ingest starts
    for index, turn in enumerate(full):
        assert list(iter_codex_turns(str(CODEX), turn.end_offset)) == full[index + 1 :]


def test_iter_session_turns_picks_the_parser() -> None:
    assert list(iter_session_turns(str(CODEX))) == list(iter_codex_turns(str(CODEX)))
    assert [t.role for t in iter_session_turns(str(CLAUDE))][:2] == ["user", "assistant"]


def test_find_session_files_of_both_agents(tmp_path: Path) -> None:
    claude = tmp_path / ".claude" / "projects" / "-home-dev-payments"
    subagents = claude / "9b1f4c2e-5d6a-4e8b-a1c3-7f2e9d0b6a11" / "subagents"
    subagents.mkdir(parents=True)
    shutil.copy(CLAUDE, claude / "9b1f4c2e-5d6a-4e8b-a1c3-7f2e9d0b6a11.jsonl")
    shutil.copy(CLAUDE, subagents / "agent-a1b2c3.jsonl")
    shutil.copy(CLAUDE, subagents / "agent-acompact-fffbd0.jsonl")  # the compaction agent's
    (claude / "empty.jsonl").write_text("", encoding="utf-8")
    codex = tmp_path / ".codex" / "sessions" / "2026" / "03" / "05"
    codex.mkdir(parents=True)
    shutil.copy(CODEX, codex / "rollout-2026-03-05T14-00-00-0199a1b2.jsonl")
    os.utime(codex / "rollout-2026-03-05T14-00-00-0199a1b2.jsonl", (1, 1))  # the oldest
    found = find_session_files(tmp_path / ".claude" / "projects", tmp_path / ".codex" / "sessions")
    assert [(f.agent, f.session_id, f.parent_session_id) for f in found] == [
        ("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", None),
        ("claude-code", "9b1f4c2e-5d6a-4e8b-a1c3-7f2e9d0b6a11", None),
        (
            "claude-code",
            "9b1f4c2e-5d6a-4e8b-a1c3-7f2e9d0b6a11:agent-a1b2c3",
            "9b1f4c2e-5d6a-4e8b-a1c3-7f2e9d0b6a11",
        ),
    ]
    assert found[0].cwd == "/home/dev/inventory" and found[1].cwd == "/home/dev/payments"
    assert find_session_files(tmp_path / "none", tmp_path / "none") == []
    assert describe(str(tmp_path / "missing.jsonl")) is None


def test_folder_links_are_walked_once_and_file_links_never(tmp_path: Path) -> None:
    # The user's own folders behind links are read (one rule for both trees); a link
    # back up the tree is not walked again, and a link to a file is not read.
    codex = tmp_path / ".codex" / "sessions"
    elsewhere = tmp_path / "archive" / "2026"
    elsewhere.mkdir(parents=True)
    shutil.copy(CODEX, elsewhere / "rollout-2026-03-05T14-00-00-0199a1b2.jsonl")
    codex.mkdir(parents=True)
    (codex / "2026").symlink_to(elsewhere)
    (codex / "again").symlink_to(codex)
    (codex / "loop-a").symlink_to(codex / "loop-b")
    (codex / "loop-b").symlink_to(codex / "loop-a")
    (codex / "linked.jsonl").symlink_to(elsewhere / "rollout-2026-03-05T14-00-00-0199a1b2.jsonl")
    found = find_session_files(tmp_path / "none", codex)
    assert [(f.agent, f.error) for f in found] == [("codex", None)]
    assert found[0].path == str(codex / "2026" / "rollout-2026-03-05T14-00-00-0199a1b2.jsonl")
