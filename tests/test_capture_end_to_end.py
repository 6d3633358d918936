"""Capture that carries the answer, from the outside: real hook processes, real transcripts.

``tests/data/transcripts`` holds a small Claude Code session (a failing test fixed,
a commit, a refused push, a compaction summary) and a Codex rollout, in their real
record formats.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_hooks import hook, ok, rows

DATA = Path(__file__).parent / "data" / "transcripts"
SESSION = "9b1f4c2e-5d6a-4e8b-a1c3-7f2e9d0b6a11"
CODEX_SESSION = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
RECORDED_CWD = "/home/dev/payments"


def transcript_in(project: Path, tmp_path: Path) -> Path:
    """The recorded session as Claude Code would have written it for ``project``."""
    text = (DATA / "webhook-retry.jsonl").read_text(encoding="utf-8")
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text(text.replace(RECORDED_CWD, str(project)), encoding="utf-8")
    return path


def event(session: str, project: Path, transcript: Path, **extra: object) -> bytes:
    body = {"session_id": session, "cwd": str(project), "transcript_path": str(transcript)}
    return json.dumps({**body, **extra}).encode("utf-8")


def context(stdout: bytes) -> str:
    if not stdout:
        return ""
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"])


def test_a_session_known_only_by_its_transcript_is_summarised_and_recalled(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "payments"
    project.mkdir()
    transcript = transcript_in(project, tmp_path)
    # Transcript-only capture: no prompt or tool hooks, one Stop at the end.
    ok(
        hook(
            home,
            "session-start",
            event(SESSION, project, transcript, source="startup"),
            cwd=project,
        )
    )
    ok(
        hook(
            home,
            "stop",
            event(SESSION, project, transcript, last_assistant_message="Pushed."),
            cwd=project,
        )
    )
    ok(hook(home, "session-end", event(SESSION, project, transcript, reason="other"), cwd=project))

    kinds = dict(rows(home, "SELECT kind, count(*) FROM memories GROUP BY kind"))
    assert kinds["turn"] >= 15 and kinds["observation"] >= 9  # units and derived observations
    assert kinds["summary"] == 1 and kinds["checkpoint"] == 1
    # Both are dated when the session happened (March 2026), not when it was read.
    dated = dict(
        rows(home, "SELECT kind, created_at FROM memories WHERE kind IN ('summary', 'checkpoint')")
    )
    assert dated["checkpoint"] == dated["summary"] < datetime(2026, 3, 3, tzinfo=UTC).timestamp()
    # Harness messages are not prompts, and no tool output keeps Read's arrows.
    contents = [c for (c,) in rows(home, "SELECT content FROM memories")]
    assert not any("<task-notification>" in c or "1→" in c for c in contents)

    # The next session starts with that session's summary: task, outcomes, lessons.
    later = transcript.with_name("next.jsonl")
    pack = context(
        ok(
            hook(
                home, "session-start", event("next", project, later, source="startup"), cwd=project
            )
        )
    )
    assert pack.startswith(INJECTED_OPEN) and pack.endswith(INJECTED_CLOSE)
    assert "The webhook retry test fails on CI" in pack  # the main request
    assert "[main 4e5f6a7] fix: keep the idempotency key on webhook retries" in pack  # outcome
    assert "rebuild()` dropped the headers" in pack  # a lesson of the compaction summary
    assert "no upstream branch. → ran git push --set-upstream origin main" in pack  # error → fix
    assert "Decided: Redis" in pack

    # A question about it gets the passage that answers it, within the budget.
    prompt = event("next", project, later, prompt="which queue did we decide the retries use?")
    answer = context(ok(hook(home, "user-prompt-submit", prompt, cwd=project)))
    assert "Redis" in answer and len(answer) <= 1200
    prompt = event("next", project, later, prompt="why was the first git push of main rejected?")
    answer = context(ok(hook(home, "user-prompt-submit", prompt, cwd=project)))
    assert "no upstream" in answer and len(answer) <= 1200, answer
    # An unrelated prompt gets nothing.
    prompt = event("next", project, later, prompt="add a dark mode toggle to the Vue settings page")
    assert ok(hook(home, "user-prompt-submit", prompt, cwd=project)) == b""
    # Injections are not counted as uses.
    assert rows(home, "SELECT count(*) FROM memories WHERE access_count > 0") == [(0,)]


def test_post_tool_use_and_the_transcript_store_one_observation_per_call(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "payments"
    project.mkdir()
    transcript = transcript_in(project, tmp_path)
    tool = {
        "tool_name": "Bash",
        "tool_input": {"command": "pytest tests/test_webhooks.py -q 2>&1"},
        "tool_response": {"stdout": ".....\n5 passed in 0.28s", "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_04",
    }
    ok(hook(home, "post-tool-use", event(SESSION, project, transcript, **tool), cwd=project))
    ok(hook(home, "stop", event(SESSION, project, transcript), cwd=project))
    found = rows(
        home,
        "SELECT source, count(*) FROM memories WHERE source_id = ? GROUP BY source",
        (f"{SESSION}:tool:toolu_04",),
    )
    assert found == [("hook", 1)]  # the transcript did not store the same call again
    failed = rows(
        home, "SELECT title FROM memories WHERE source_id = ?", (f"{SESSION}:tool:toolu_01",)
    )
    assert failed == [("Ran: pytest tests/test_webhooks.py -q 2>&1 (exit 1)",)]


def memlane(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real `memlane` command, with HOME in the test's home: no real ~/.claude is read."""
    env = run_env(home)
    env["HOME"] = str(home)
    return subprocess.run(
        [*MEMLANE_CMD, *args], capture_output=True, env=env, cwd=cwd, timeout=120, check=False
    )


def recover(home: Path, cwd: Path, *args: str) -> dict[str, object]:
    done = memlane(home, cwd, "recover", "--json", *args)
    assert done.returncode == 0, done.stderr.decode()
    return dict(json.loads(done.stdout))


def test_recover_backfills_claude_code_and_codex_sessions_once(home: Path, tmp_path: Path) -> None:
    claude = home / ".claude" / "projects" / "-home-dev-payments"
    claude.mkdir(parents=True)
    shutil.copy(DATA / "webhook-retry.jsonl", claude / f"{SESSION}.jsonl")
    (claude / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    codex = home / ".codex" / "sessions" / "2026" / "03" / "05"
    codex.mkdir(parents=True)
    shutil.copy(DATA / "codex-rollout.jsonl", codex / "rollout-2026-03-05T14-00-00-x.jsonl")

    first = recover(home, tmp_path)
    assert (first["files"], first["sessions"], first["unchanged"], first["errors"]) == (2, 2, 0, [])
    sessions = rows(home, "SELECT id, project, agent, status FROM sessions ORDER BY id")
    assert sessions == [
        (CODEX_SESSION, "inventory", "codex", "ended"),
        (SESSION, "payments", "claude-code", "ended"),
    ]
    summaries = rows(
        home,
        "SELECT project, content, created_at FROM memories WHERE kind = 'summary' ORDER BY project",
    )
    assert [s[0] for s in summaries] == ["inventory", "payments"]
    assert "Request: The nightly stock sync double-counts returns." in summaries[0][1]
    assert "Completed: 2 passed in 0.2s" in summaries[0][1]
    worked = datetime.fromtimestamp(summaries[1][2], UTC).date()
    assert worked == date(2026, 3, 2)  # dated when the session worked, not when read

    again = recover(home, tmp_path)
    assert (again["sessions"], again["unchanged"]) == (0, 2)
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'summary'") == [(2,)]


def test_recover_of_a_folder_that_does_not_exist_says_so(home: Path, tmp_path: Path) -> None:
    # A mistyped path is an error, not "read 0 sessions".
    missing = tmp_path / "no-such-folder"
    for option in ("--claude-dir", "--codex-dir"):
        done = memlane(home, tmp_path, "recover", option, str(missing))
        assert done.returncode == 2
        assert f"Directory '{missing}' does not exist" in done.stderr.decode()


def test_recover_dry_run_counts_in_words(home: Path, tmp_path: Path) -> None:
    claude = home / ".claude" / "projects" / "-home-dev-payments"
    claude.mkdir(parents=True)
    shutil.copy(DATA / "webhook-retry.jsonl", claude / f"{SESSION}.jsonl")
    done = memlane(home, tmp_path, "recover", "--dry-run")
    expected = "would read 1 session file of 1 found\n"
    assert done.stdout.decode() == expected, done.stderr.decode()
    assert memlane(home, tmp_path, "recover").returncode == 0
    done = memlane(home, tmp_path, "recover", "--dry-run")
    expected = "would read 0 session files of 1 found (1 captured already or skipped)\n"
    assert done.stdout.decode() == expected, done.stderr.decode()


def test_setup_points_to_recover_when_sessions_exist(home: Path, tmp_path: Path) -> None:
    claude = home / ".claude" / "projects" / "-home-dev-payments"
    claude.mkdir(parents=True)
    shutil.copy(DATA / "webhook-retry.jsonl", claude / f"{SESSION}.jsonl")
    done = memlane(home, tmp_path, "setup")
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    # Not a terminal: no question, one line saying what to run, before the next step.
    assert lines[-2] == "1 existing session not captured yet: run `memlane recover` to capture it"
    assert lines[-1].startswith("next: ")
    assert rows(home, "SELECT count(*) FROM sessions") == []  # nothing captured unasked


def test_setup_does_not_point_to_recover_for_sessions_captured_already(
    home: Path, tmp_path: Path
) -> None:
    claude = home / ".claude" / "projects" / "-home-dev-payments"
    claude.mkdir(parents=True)
    shutil.copy(DATA / "webhook-retry.jsonl", claude / f"{SESSION}.jsonl")
    assert memlane(home, tmp_path, "recover").returncode == 0
    done = memlane(home, tmp_path, "setup")
    assert done.returncode == 0, done.stderr.decode()
    assert "memlane recover" not in done.stdout.decode()


def capture_transcript_only(home: Path, project: Path, transcript: Path, **env: str) -> None:
    """SessionStart, one Stop over the whole transcript, SessionEnd: real hook processes."""
    for name, extra in (
        ("session-start", {"source": "startup"}),
        ("stop", {"last_assistant_message": "Pushed."}),
        ("session-end", {"reason": "other"}),
    ):
        ok(hook(home, name, event(SESSION, project, transcript, **extra), cwd=project, env=env))


def test_the_injection_log_holds_the_passages_and_a_noise_mark_silences_them(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "payments"
    project.mkdir()
    transcript = transcript_in(project, tmp_path)
    capture_transcript_only(home, project, transcript)
    later = transcript.with_name("next.jsonl")
    asked = "why was the first git push of main rejected?"
    answer = context(
        ok(
            hook(
                home, "user-prompt-submit", event("next", project, later, prompt=asked), cwd=project
            )
        )
    )
    assert "no upstream" in answer
    # The log holds exactly what the agent received, and which memories it showed.
    logged = rows(
        home,
        "SELECT id, text, chars, prompt FROM injections WHERE event = 'user-prompt-submit'",
    )
    assert len(logged) == 1
    entry, text, chars, prompt = logged[0]
    assert prompt == asked and chars == len(answer) <= 1200
    assert text == answer.removeprefix(INJECTED_OPEN).removesuffix(INJECTED_CLOSE).strip("\n")
    shown = [
        memory_id
        for (memory_id,) in rows(
            home,
            "SELECT memory_id FROM injected_memories WHERE injection_id = ? ORDER BY rank",
            (entry,),
        )
    ]
    assert shown
    # Marked noise (the real command), the same question no longer injects that memory.
    marked = memlane(home, project, "feedback", str(shown[0]), "--noise")
    assert marked.returncode == 0, marked.stderr.decode()
    ok(hook(home, "user-prompt-submit", event("next", project, later, prompt=asked), cwd=project))
    last = rows(
        home,
        "SELECT m.memory_id FROM injected_memories m WHERE m.injection_id ="
        " (SELECT max(id) FROM injections WHERE event = 'user-prompt-submit')",
    )
    assert (shown[0],) not in last


def test_chunking_settings_shape_the_units_a_stop_hook_stores(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "payments"
    project.mkdir()
    transcript = transcript_in(project, tmp_path)
    capture_transcript_only(
        home,
        project,
        transcript,
        MEMLANE_CAPTURE_UNIT_CHARS="200",
        MEMLANE_CAPTURE_OUTPUT_HEAD_LINES="1",
        MEMLANE_CAPTURE_OUTPUT_TAIL_LINES="1",
    )
    units = rows(home, "SELECT title, content FROM memories WHERE kind = 'turn'")
    # No unit is longer than the setting (a tool unit's first line may add to it).
    assert all(len(content) <= 200 + 100 for _title, content in units)
    first_run = next(c for t, c in units if t == "$ pytest tests/test_webhooks.py -q 2>&1")
    # Of the failing run's output: its first line, how many were left out, its last line.
    assert "lines left out" in first_run and first_run.endswith("1 failed, 4 passed in 0.31s")


def test_the_session_start_hook_puts_first_what_the_branch_is_about(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    head = project / ".git" / "HEAD"
    records = tmp_path / "notes.jsonl"
    notes = [
        ("Stripe webhooks are retried with exponential backoff.", "2026-11-20T10:00:00Z"),
        ("Reports are rendered in UTC.", "2026-11-29T10:00:00Z"),  # newer
    ]
    records.write_text(
        "".join(
            json.dumps({"id": f"n{i}", "text": text, "type": "decision", "timestamp": when}) + "\n"
            for i, (text, when) in enumerate(notes)
        ),
        encoding="utf-8",
    )
    imported = memlane(home, project, "import", "jsonl", str(records), "--project", "shop")
    assert imported.returncode == 0, imported.stderr

    def pack(branch: str, session: str) -> str:
        head.write_text(f"ref: refs/heads/{branch}\n", encoding="utf-8")
        start = event(session, project, tmp_path / "none.jsonl")
        return context(ok(hook(home, "session-start", start, cwd=project)))

    plain = pack("main", "s-main")
    on_branch = pack("fix/stripe-webhook-retry", "s-branch")
    # On main the newer decision comes first; the branch's name brings its match up.
    assert plain.index("Reports are rendered") < plain.index("Stripe webhooks")
    assert on_branch.index("Stripe webhooks") < on_branch.index("Reports are rendered")


def session_on_disk(home: Path, cwd: str) -> None:
    """The recorded session, as if it ran in ``cwd``."""
    claude = home / ".claude" / "projects" / "-some-project"
    claude.mkdir(parents=True)
    text = (DATA / "webhook-retry.jsonl").read_text()
    (claude / f"{SESSION}.jsonl").write_text(text.replace(RECORDED_CWD, cwd))


@pytest.mark.parametrize("target", ["folder", "postgres"])
def test_setup_hints_recover_without_opening_a_database_it_cannot(
    home: Path, tmp_path: Path, target: str
) -> None:
    """A database in a missing folder, or a PostgreSQL server that does not answer: the
    hint counts every session, setup succeeds, and nothing is created."""
    session_on_disk(home, RECORDED_CWD)
    missing = tmp_path / "no-such-folder" / "memlane.db"
    env = run_env(home)
    env["HOME"] = str(home)
    env["MEMLANE_DB"] = (
        str(missing) if target == "folder" else "postgresql://memlane@127.0.0.1:9/none"
    )
    done = subprocess.run(
        [*MEMLANE_CMD, "setup"], capture_output=True, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    assert lines[-2] == "1 existing session not captured yet: run `memlane recover` to capture it"
    assert not missing.parent.exists()


def test_recover_dry_run_and_setup_create_no_database(home: Path, tmp_path: Path) -> None:
    session_on_disk(home, RECORDED_CWD)
    assert memlane(home, tmp_path, "recover", "--dry-run").returncode == 0
    assert memlane(home, tmp_path, "setup").returncode == 0
    assert not (home / "memlane.db").exists()


@pytest.mark.parametrize("where", ["ignored", "home", "none"])
def test_sessions_recover_skips_are_not_hinted(home: Path, tmp_path: Path, where: str) -> None:
    """A session in a folder with a .memlane-ignore, in the home folder, or with no
    working directory: recover skips it, so neither setup nor its dry run count it."""
    project = tmp_path / "private"
    project.mkdir()
    (project / ".memlane-ignore").touch()
    cwd = {"ignored": str(project), "home": str(home), "none": ""}[where]
    session_on_disk(home, cwd)
    done = memlane(home, tmp_path, "setup")
    assert done.returncode == 0, done.stderr.decode()
    assert "memlane recover" not in done.stdout.decode()
    done = memlane(home, tmp_path, "recover", "--dry-run")
    assert done.stdout.decode().startswith("would read 0 session files of 1 found")
    assert recover(home, tmp_path)["sessions"] == 0


def test_setup_hints_recover_plainly_when_the_database_cannot_be_read(
    home: Path, tmp_path: Path
) -> None:
    session_on_disk(home, RECORDED_CWD)
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database at all\n" * 100)
    env = run_env(home)
    env.update(HOME=str(home), MEMLANE_DB=str(broken))
    done = subprocess.run(
        [*MEMLANE_CMD, "setup"], capture_output=True, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    assert lines[-2] == "1 existing session found: run `memlane recover` to capture it"
