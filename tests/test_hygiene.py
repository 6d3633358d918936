"""Memory hygiene through the facade: dedup, topic upserts, session lifecycle, size cap.

The long capture run feeds tens of thousands of synthetic tool events through
the real capture path with a 5 MB cap and checks the database files after
every maintenance pass.
"""

from __future__ import annotations

import random
import sqlite3
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane.models import MemoryFilter, utcnow
from memlane.service import Memory

P = "proj"


def snapshot(memory: Memory) -> list[tuple[Any, ...]]:
    """Every memory row and FTS row, to prove that a call wrote nothing."""
    with sqlite3.connect(memory.store.location) as conn:
        rows = conn.execute("SELECT * FROM memories ORDER BY id").fetchall()
        fts = conn.execute("SELECT rowid, * FROM memories_fts ORDER BY rowid").fetchall()
    return [*rows, *fts]


# -- dedup ------------------------------------------------------------------------------


def test_duplicate_returns_deduplicated_writes_nothing_and_extends_activity(
    memory: Memory,
) -> None:
    t0 = utcnow() - timedelta(hours=2)
    first = memory.save(
        "Use WAL mode for the SQLite store",
        project=P,
        type="decision",
        session_id="s1",
        created_at=t0,
    )
    assert first.status == "created"
    assert memory.get_session("s1").last_activity_at == t0
    before = snapshot(memory)
    t1 = t0 + timedelta(hours=1)
    again = memory.save(
        "  use wal MODE for the sqlite   store ",
        project=P,
        type="decision",
        session_id="s1",
        created_at=t1,
    )
    assert again.status == "deduplicated" and again.id == first.id
    assert snapshot(memory) == before
    assert memory.get_session("s1").last_activity_at == t1
    # Another session's duplicate also counts as its activity.
    third = memory.save(
        "Use WAL mode for the SQLite store", project=P, type="decision", session_id="s2"
    )
    assert third.status == "deduplicated"
    assert memory.get_session("s2").last_activity_at > t1
    # Another project is another memory.
    assert (
        memory.save("Use WAL mode for the SQLite store", project="other", type="decision").status
        == "created"
    )


def test_dedup_is_over_the_privacy_stripped_content(memory: Memory) -> None:
    a = memory.save(
        "deploy with token=ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 <private>x</private>",
        project=P,
        type="lesson",
    )
    b = memory.save(
        "deploy with token=ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2 <private>y</private>",
        project=P,
        type="lesson",
    )
    assert b.status == "deduplicated" and b.id == a.id


def test_observations_dedup_within_their_window_only(memory: Memory) -> None:
    t0 = utcnow() - timedelta(hours=3)
    first = memory.save("ran pytest -q: 12 passed", project=P, type="command", created_at=t0)
    inside = memory.save(
        "ran pytest -q: 12 passed", project=P, type="command", created_at=t0 + timedelta(minutes=2)
    )
    assert inside.status == "deduplicated" and inside.id == first.id
    later = memory.save(
        "ran pytest -q: 12 passed", project=P, type="command", created_at=t0 + timedelta(hours=1)
    )
    assert later.status == "created"
    other_type = memory.save(
        "ran pytest -q: 12 passed",
        project=P,
        type="tool-use",
        created_at=t0 + timedelta(hours=1, minutes=1),
    )
    assert other_type.status == "created"


def test_tool_event_capture_dedups_repeats(memory: Memory) -> None:
    event = ({"command": "git status"}, {"stdout": "nothing to commit", "exit_code": 0})
    first = memory.record_tool_event("s", "Bash", *event, cwd="/w/p", project=P)
    second = memory.record_tool_event("s", "Bash", *event, cwd="/w/p", project=P)
    assert first is not None and second is not None
    assert first.status == "created" and second.status == "deduplicated"


# -- topic upserts -----------------------------------------------------------------------


def test_topic_upsert_updates_in_place_counts_revisions_and_moves_session(
    memory: Memory,
) -> None:
    first = memory.save(
        "The CI runs on GitHub Actions with ubuntu-22.04",
        project=P,
        type="constraint",
        topic_key="ci/runner",
        session_id="old",
    )
    second = memory.save(
        "The CI runs on GitHub Actions with ubuntu-24.04 now",
        project=P,
        type="constraint",
        topic_key="ci/runner",
        session_id="new",
    )
    assert second.status == "updated" and second.id == first.id
    stored = memory.get(first.id)
    assert stored.revision_count == 1 and stored.session_id == "new"
    assert "24.04" in stored.content
    third = memory.save(
        "The CI runs on self-hosted runners",
        project=P,
        type="constraint",
        topic_key="ci/runner",
        session_id="newer",
    )
    assert third.status == "updated"
    stored = memory.get(first.id)
    assert stored.revision_count == 2 and stored.session_id == "newer"
    assert memory.store.count_memories(MemoryFilter(projects=(P,))) == 1
    assert [h.id for h in memory.search("self-hosted", project=P, scope="project")] == [first.id]
    assert memory.search("ubuntu", project=P, scope="project") == []


# -- sessions -----------------------------------------------------------------------------


def _busy_session(memory: Memory, session_id: str, hours_ago: float) -> None:
    moment = utcnow() - timedelta(hours=hours_ago)
    memory.session_start(session_id, project=P, now=moment)
    memory.save(
        "Fix the flaky login test",
        project=P,
        type="prompt",
        kind="prompt",
        session_id=session_id,
        created_at=moment,
    )
    memory.save(
        "Edited tests/test_login.py",
        project=P,
        type="file-write",
        session_id=session_id,
        files=["tests/test_login.py"],
        created_at=moment,
    )


def test_session_start_is_idempotent(memory: Memory) -> None:
    a = memory.session_start("s", project=P, agent="claude-code")
    b = memory.session_start("s", project=P, agent="claude-code")
    assert a.id == b.id and a.started_at == b.started_at
    assert len(memory.list_sessions(project=P)) == 1


def test_idle_session_is_auto_closed_with_an_auto_summary_at_next_start(memory: Memory) -> None:
    _busy_session(memory, "idle", hours_ago=10)
    _busy_session(memory, "recent", hours_ago=1)
    last = memory.get_session("idle").last_activity_at
    memory.session_start("next", project=P)
    idle = memory.get_session("idle")
    assert idle.status == "auto_closed" and idle.auto_closed
    assert idle.last_activity_at == last and idle.ended_at == last
    summary = memory.get_summary("idle")
    assert summary is not None and summary.is_auto_generated
    assert memory.get_session("recent").status == "active"
    # Idempotent: a second start closes nothing more and writes no second summary.
    memory.session_start("next", project=P)
    summaries = memory.list_memories(project=P, kinds=["summary"])
    assert len(summaries) == 1


def test_a_stored_blank_session_id_does_not_stop_idle_sessions_closing(memory: Memory) -> None:
    """A session an older version stored under a blank id (`POST /api/summaries` with
    " " did) gets its rule-based summary like any other: refusing it raised at every
    session start of its project, and no idle session there was ever closed."""
    _busy_session(memory, "idle", hours_ago=10)
    with sqlite3.connect(memory.store.location) as conn:
        conn.execute("UPDATE memories SET session_id = ' ' WHERE session_id = 'idle'")
        conn.execute("UPDATE sessions SET id = ' ' WHERE id = 'idle'")
    conn.close()
    memory.session_start("next", project=P)
    blank = memory.get_session(" ")
    assert blank.status == "auto_closed"


def test_idle_sessions_of_every_project_are_closed_by_maintenance(memory: Memory) -> None:
    memory.settings = replace(memory.settings, maintenance__enabled=True)
    _busy_session(memory, "idle", hours_ago=10)
    memory.session_start("elsewhere", project="other", now=utcnow() - timedelta(hours=9))
    report = memory.maintain()
    assert set(report.closed_sessions) == {"idle", "elsewhere"}
    assert memory.get_session("idle").status == "auto_closed"
    assert memory.get_session("elsewhere").status == "auto_closed"
    assert memory.get_summary("idle") is not None


# -- the long capture run under a size cap ------------------------------------------------


def _source_lines() -> list[str]:
    """Lines of memlane's own source: text as varied as what agents really capture."""
    root = Path(__file__).resolve().parents[1] / "src" / "memlane"
    lines: list[str] = []
    for path in sorted(root.rglob("*.py")):
        lines.extend(line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if len(line) > 20]


LINES = _source_lines()
WORDS = sorted({w for line in LINES[:3000] for w in line.split() if w.isidentifier()})


def _event(rng: random.Random, n: int) -> tuple[str, dict[str, Any], Any]:
    start = rng.randrange(len(LINES) - 40)
    words = "\n".join(LINES[start : start + rng.randint(3, 30)])
    kind = n % 4
    if kind == 0:
        return (
            "Bash",
            {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py -k {n}"},
            {
                "stdout": f"{n} {words}",
                "exit_code": rng.choice((0, 0, 1)),
            },
        )
    if kind == 1:
        path = f"/w/proj/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{n % 500}.py"
        return "Edit", {"file_path": path, "old_string": "x", "new_string": f"{n} {words}"}, {}
    if kind == 2:
        path = f"/w/proj/src/{rng.choice(WORDS)}_{n}.py"
        return "Read", {"file_path": path}, {"file": {"content": words}}
    return "WebSearch", {"query": f"{words[:60]} {n}"}, {"results": words}


@pytest.mark.slow
def test_database_stays_under_its_cap_during_a_long_capture_run(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    cap_mb, events, every = 5, 30_000, 3_000
    memory.settings = replace(
        memory.settings, maintenance__enabled=True, maintenance__max_db_size_mb=cap_mb
    )
    cap = cap_mb * 1024 * 1024
    db = Path(memory.store.location)
    rng = random.Random(7)
    passes: list[tuple[int, int, int]] = []
    peak_between = 0
    knowledge: list[int] = []
    capped: set[int] = set()
    started = time.monotonic()
    for n in range(events):
        tool, args, response = _event(rng, n)
        memory.record_tool_event(f"s{n // 500}", tool, args, response, cwd="/w/proj", project=P)
        if n % 1000 == 0:
            line = LINES[(n * 7919) % len(LINES)]
            knowledge.append(memory.save(f"Decision {n}: {line}", project=P, type="decision").id)
        if (n + 1) % every == 0:
            peak_between = max(peak_between, _files_bytes(db))
            report = memory.maintain()
            size = _files_bytes(db)
            count = memory.store.count_memories(MemoryFilter())
            passes.append((n + 1, size, count))
            assert size <= cap, f"after event {n + 1}: {size} bytes > cap {cap}"
            assert report.size is not None and report.size.size_after is not None
            assert report.size.size_after <= cap
            capped.update(report.size.removed + report.size.extra_removed)
    elapsed = time.monotonic() - started
    assert len(passes) == events // every
    # Knowledge is the last thing the cap takes: none of it went to the cap in this run.
    assert capped and not capped & set(knowledge)
    assert len(memory.get_many(knowledge)) >= 0.9 * len(knowledge)  # merge may join a few
    # The newest captures are still there and searchable.
    latest = memory.list_memories(project=P, kinds=["observation"], limit=1)[0]
    assert latest.created_at > utcnow() - timedelta(minutes=30)
    with capsys.disabled():
        sizes = [size for _, size, _ in passes]
        print(
            f"\ncap run: {events} events, cap {cap_mb} MB, {len(passes)} passes,"
            f" after-pass size {min(sizes) / 2**20:.2f}–{max(sizes) / 2**20:.2f} MB,"
            f" peak between passes {peak_between / 2**20:.2f} MB,"
            f" rows kept {passes[-1][2]}, {len(capped)} removed by the cap, {elapsed:.0f}s"
        )


def _files_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())
