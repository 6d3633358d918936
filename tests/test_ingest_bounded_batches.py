"""A transcript is ingested in batches bounded by what they read, each read outside the
write lock and committing its offset (the s26 probe, defect 4).

200 MB of ``1`` lines hold no record: no turn ever ended, so the one batch read the whole
file inside its write transaction. An in-process Stop ran out of its 25 s budget with no
progress, ever; relayed, the worker's ingest held the lock for half a minute, prompts
were lost and a legit Stop failed with StoreBusy; a 2 GB file without a newline was read
whole on every Stop. A batch now ends at a turn's end past ``BATCH_BYTES`` or
``BATCH_LINES``, where no turn is open past them, and whatever it holds past
``BATCH_MAX_BYTES`` or ``BATCH_MAX_LINES``; a hook's ingest begins no batch past its
deadline, and the next Stop resumes.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from memlane import jsonlines
from memlane.capture import pipeline
from memlane.capture.pipeline import ingest_transcript
from memlane.config import Settings
from memlane.hooks.dispatch import handle
from memlane.hooks.tail import finish_session
from memlane.models import MemoryFilter
from memlane.service import Memory
from tests.conftest import FIXTURES

PROMPT = "please add an index to the quokka migration"


def prompt_line(session: str, cwd: Path) -> bytes:
    record = {
        "type": "user",
        "sessionId": session,
        "cwd": str(cwd),
        "uuid": "u1",
        "timestamp": "2026-12-01T00:00:00Z",
        "message": {"role": "user", "content": PROMPT},
    }
    return json.dumps(record).encode() + b"\n"


def junk_then_prompt(path: Path, lines: int, session: str = "crafted") -> Path:
    """``lines`` lines of ``1`` (JSON that is no record), then one real prompt."""
    path.write_bytes(b"1\n" * lines + prompt_line(session, path.parent))
    return path


def contents(memory: Memory, session: str) -> list[str]:
    rows = memory.store.list_memories(
        MemoryFilter(session_id=session), limit=10_000, newest_first=False
    )
    return [row.content for row in rows]


def offset(memory: Memory, session: str) -> int:
    return memory.get_session(session).transcript_offset


def test_lines_holding_no_record_are_read_a_batch_at_a_time(memory: Memory, tmp_path: Path) -> None:
    path = junk_then_prompt(tmp_path / "t.jsonl", 3 * pipeline.BATCH_LINES)
    # A deadline already passed: one batch, as a Stop whose budget ran out meanwhile.
    first = ingest_transcript(memory.core, "crafted", str(path), project="p", deadline=0.0)
    assert first.unfinished
    assert first.end_offset == offset(memory, "crafted") == 2 * pipeline.BATCH_LINES
    assert contents(memory, "crafted") == []
    second = ingest_transcript(memory.core, "crafted", project="p", deadline=0.0)
    assert second.start_offset == first.end_offset < second.end_offset
    rest = ingest_transcript(memory.core, "crafted", project="p")
    assert not rest.unfinished and rest.end_offset == path.stat().st_size
    assert any(PROMPT in text for text in contents(memory, "crafted"))


def test_the_write_lock_is_free_while_a_transcript_is_read(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    path = junk_then_prompt(tmp_path / "t.jsonl", 3 * pipeline.BATCH_LINES)
    memory.session_start("crafted", project="p", transcript_path=str(path))
    tried: list[str] = []

    def each_read(frame: FrameType, event: str, arg: Any) -> None:
        # Each time the reader starts or resumes, another connection (a prompt hook's)
        # takes the write lock without waiting.
        if event != "call" or frame.f_code.co_name != "iter_records":
            return
        other = sqlite3.connect(settings.paths.db_path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            tried.append("free")
        except sqlite3.OperationalError as exc:
            tried.append(str(exc))
        finally:
            other.close()

    sys.setprofile(each_read)
    try:
        report = memory.ingest_transcript("crafted")
    finally:
        sys.setprofile(None)
    assert report.end_offset == path.stat().st_size
    assert len(tried) >= 4 and set(tried) == {"free"}, tried


def test_a_line_without_its_end_is_read_in_pieces(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a sparse 2 GB file: one line without a newline, longer than any line is kept.
    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(pipeline, "BATCH_MAX_BYTES", 8192, raising=False)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\0" * (10 * 8192 + 1000))
    ingest_transcript(memory.core, "sparse", str(path), project="p")
    # Read to its last piece, still shorter than a line may be: it may yet end.
    assert offset(memory, "sparse") == 10 * 8192
    with path.open("ab") as handle:
        handle.write(b"\n" + prompt_line("sparse", tmp_path))
    report = ingest_transcript(memory.core, "sparse", project="p")
    assert report.end_offset == path.stat().st_size and report.turns == 1
    assert any(PROMPT in text for text in contents(memory, "sparse"))


def test_where_the_read_bound_ends_a_batch_changes_nothing_stored(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The benchmark digest (benchmarks/ingest_bench.py --digest) is unchanged because
    # its transcripts are smaller than a batch reads; a batch ending at every turn
    # stores the same rows too (in another order: observations follow their batch).
    paths = sorted(FIXTURES.rglob("*.jsonl"))
    if not paths:
        pytest.skip("the shared transcript fixtures are absent")

    def stored(session: str) -> list[tuple[Any, ...]]:
        rows = memory.store.list_memories(
            MemoryFilter(session_id=session), limit=100_000, newest_first=False
        )
        return sorted(
            (
                m.kind,
                m.type,
                m.title,
                m.content,
                m.source_id.split(":", 1)[1] if m.source_id else "",
            )
            for m in rows
        )

    for n, path in enumerate(paths):
        ingest_transcript(memory.core, f"whole{n}", str(path), project="whole")
    monkeypatch.setattr(pipeline, "BATCH_BYTES", 1, raising=False)
    for n, path in enumerate(paths):
        ingest_transcript(memory.core, f"turn{n}", str(path), project="turn")
    for n, _ in enumerate(paths):
        assert stored(f"turn{n}") == stored(f"whole{n}") != []


def stop_event(session: str, project: Path, transcript: Path) -> bytes:
    body = {"session_id": session, "cwd": str(project), "transcript_path": str(transcript)}
    return json.dumps({**body, "hook_event_name": "Stop"}).encode()


def test_a_stop_ingests_until_its_deadline_and_the_next_one_resumes(
    memory: Memory, settings: Settings, project: Path, tmp_path: Path
) -> None:
    path = junk_then_prompt(tmp_path / "t.jsonl", 3 * pipeline.BATCH_LINES)
    # As the worker runs a relayed Stop whose client gave up meanwhile.
    stop = stop_event("crafted", project, path)
    handle("stop", stop, settings, memory=memory, deferred=[], deadline=time.monotonic())
    assert offset(memory, "crafted") == 2 * pipeline.BATCH_LINES
    handle("stop", stop, settings, memory=memory, deferred=[])
    assert offset(memory, "crafted") == path.stat().st_size
    assert any(PROMPT in text for text in contents(memory, "crafted"))


def test_the_session_end_tail_stops_at_its_budget_and_says_so(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    path = junk_then_prompt(tmp_path / "t.jsonl", 3 * pipeline.BATCH_LINES)
    memory.session_start("crafted", project="p", transcript_path=str(path))
    finish_session(memory, "crafted", budget=0)
    assert offset(memory, "crafted") == 2 * pipeline.BATCH_LINES
    log = (settings.paths.log_dir / "hooks.log").read_text(encoding="utf-8")
    assert f"tail crafted: stopped after 0 s at byte {2 * pipeline.BATCH_LINES:,} of" in log
    finish_session(memory, "crafted")
    assert any(PROMPT in text for text in contents(memory, "crafted"))
