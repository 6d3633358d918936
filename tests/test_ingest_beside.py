"""Runs of rows inserted by one statement, on a thread beside or not, store exactly what
``Writer.save`` stores row by row.

``Writer.save_many`` inserts the rows ``save`` would insert without a lookup in one
statement per run (``Store.insert_batch``); with ``beside`` the statement runs on a
thread of its own while the caller prepares the next run, and every other use of the
connection waits for it. These tests hold it to the row-by-row path: the same results
(status and id), the same rows and full-text hits, duplicates inside one run caught,
an existing topic key updated, a NUL kept whole, errors and interrupts rolling the
batch back and no thread left running.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane import background, memories
from memlane.capture import pipeline
from memlane.config import Settings
from memlane.errors import StoreError
from memlane.memories import Draft
from memlane.models import MemoryFilter, SaveResult
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.test_bulk_write import hits, rows, write_transcript

T0 = datetime(2026, 3, 1, 12, 0, 0, 123_456, tzinfo=UTC)


def _job_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memlane-job"]


def test_a_job_beside_gives_its_result_or_raises_its_error_in_the_caller() -> None:
    started = threading.Event()

    def work() -> int:
        started.set()
        return 42

    job = background.Job(work, beside=True)
    assert started.wait(10)
    assert job.result() == 42
    assert not _job_threads()

    def fails() -> int:
        raise ValueError("bad row")

    failing = background.Job(fails, beside=True)
    failing.wait()  # ended, its error kept
    assert not _job_threads()
    with pytest.raises(ValueError, match="bad row"):
        failing.result()
    with pytest.raises(ValueError, match="bad row"):
        background.Job(fails, beside=False)  # at once: raised as by a plain call


def _drafts() -> list[Draft]:
    """Every case the write path tells apart, in one batch."""
    drafts: list[Draft] = []
    for i in range(150):
        at = T0 + timedelta(seconds=i)
        drafts.append(
            Draft(
                f"unit {i}: the retry queue drains worker {i % 7}",
                project="p",
                type="tool",
                kind="turn",
                title=f"unit {i}",
                session_id="s1",
                source="transcript",
                source_id=f"s1:{i}",
                fresh_source_id=True,
                created_at=at,
                files=(f"src/w{i % 5}.py",),
                tags=("Bash",),
                metadata={"chunk_index": i, "role": "assistant", "errors": []},
            )
        )
        if i % 40 == 7:  # the same command twice: the second is a duplicate of the first
            for _ in range(2):
                drafts.append(
                    Draft(
                        f"$ pytest tests/test_{i}.py\n3 passed",
                        project="p",
                        type="command",
                        kind="observation",
                        session_id="s1",
                        source="transcript",
                        source_id=f"s1:tool:{i}",
                        created_at=at,
                        metadata={"command": f"pytest tests/test_{i}.py"},
                    )
                )
        if i == 60:  # an existing topic key: updated in place
            redis = "the queue uses Redis streams now"
            drafts.append(Draft(redis, project="p", topic_key="queue", created_at=at))
        if i == 90:  # a note stored earlier in this batch, again: project-wide duplicate
            drafts.append(Draft("a note written twice in one batch", project="p", created_at=at))
        if i == 30:
            drafts.append(Draft("a note written twice in one batch", project="p", created_at=at))
        if i == 120:  # a NUL in a row is stored whole by the batch insert: the
            # write path removes it (memlane.text.without_controls), so _save puts it back in
            # the row, as a row of a database written before that holds one
            drafts.append(Draft("before\x00after the NUL", project="p", created_at=at))
        if i == 130:  # an upsert by source id of a memory stored before the batch
            drafts.append(
                Draft(
                    "imported again, changed",
                    project="p",
                    source="jsonl",
                    source_id="r-1",
                    created_at=at,
                )
            )
    return drafts


def _seed(memory: Memory) -> None:
    core = memory.core
    for draft in (
        Draft("the queue uses Redis lists", project="p", topic_key="queue", created_at=T0),
        Draft("imported once", project="p", source="jsonl", source_id="r-1", created_at=T0),
    ):
        memories.save(core, draft)


def _save(memory: Memory, how: str) -> list[SaveResult]:
    core = memory.core
    drafts = _drafts()
    with memories.batch(core) as writer:
        prepared = [
            replace(row, content=draft.content) if "\x00" in draft.content else row
            for draft, row in ((draft, memories.prepare(core, draft)) for draft in drafts)
        ]
        writer.expect(prepared)
        if how == "one by one":
            return [writer.save(d, r) for d, r in zip(drafts, prepared, strict=True)]
        results = writer.save_many(list(zip(drafts, prepared, strict=True)), beside=how == "beside")
        return results()


@pytest.mark.parametrize("how", ["inline", "beside"])
def test_save_many_stores_what_save_stores(settings: Settings, tmp_path: Path, how: str) -> None:
    stored: list[tuple[list[SaveResult], list[tuple[Any, ...]], dict[str, list[int]]]] = []
    for way in ("one by one", how):
        memory = open_memory(str(tmp_path / f"{way}.db"), settings=settings)
        try:
            _seed(memory)
            results = _save(memory, way)
            found = {word: hits(memory, word) for word in ("retry", "redis", "pytest", "nul")}
            stored.append((results, rows(memory), found))
        finally:
            memory.close()
        assert not _job_threads()
    (results, table, found), (results_many, table_many, found_many) = stored
    assert results_many == results
    assert table_many == table
    assert found_many == found
    statuses = [r.status for r in results]
    assert statuses.count("updated") == 2  # the topic key and the source id
    assert statuses.count("deduplicated") == 5  # 4 repeated commands, 1 repeated note
    assert any("\x00" in row[6] for row in table)


def test_a_failing_statement_beside_rolls_the_batch_back_and_leaves_no_thread(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "spare_core", lambda: True)
    path = write_transcript(tmp_path / "t.jsonl", steps=120)
    # A real SQLite failure in a run of units inserted beside (as a full disk or I/O error).
    memory.store.connection().execute(  # type: ignore[attr-defined]
        "CREATE TEMP TRIGGER fail_once BEFORE INSERT ON main.memories"
        " WHEN new.source_id = 's1:100' BEGIN SELECT RAISE(ABORT, 'simulated I/O error'); END"
    )
    with pytest.raises(StoreError, match="simulated I/O error"):
        pipeline.ingest_transcript(memory.core, "s1", str(path), project="p")
    assert not _job_threads()
    assert memory.store.count_memories(MemoryFilter(session_id="s1")) == 0
    assert memory.get_session("s1").transcript_offset == 0

    memory.store.connection().execute("DROP TRIGGER fail_once")  # type: ignore[attr-defined]
    report = pipeline.ingest_transcript(memory.core, "s1", str(path), project="p")
    assert report.chunks > 200
    assert report.end_offset == path.stat().st_size


def test_an_interrupt_while_a_run_is_inserted_beside_rolls_back_and_leaves_no_thread(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "spare_core", lambda: True)
    path = write_transcript(tmp_path / "t.jsonl", steps=120)
    prepared_unit = pipeline._prepared_unit
    seen = 0

    def interrupted(*args: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen == pipeline.UNIT_RUN + 10:  # the first run is being inserted beside
            raise KeyboardInterrupt
        return prepared_unit(*args)

    memory = open_memory(str(tmp_path / "interrupted.db"), settings=settings)
    reference = open_memory(str(tmp_path / "reference.db"), settings=settings)
    try:
        monkeypatch.setattr(pipeline, "_prepared_unit", interrupted)
        with pytest.raises(KeyboardInterrupt):
            pipeline.ingest_transcript(memory.core, "s1", str(path), project="p")
        assert not _job_threads()
        assert memory.store.count_memories(MemoryFilter(session_id="s1")) == 0
        monkeypatch.setattr(pipeline, "_prepared_unit", prepared_unit)

        pipeline.ingest_transcript(memory.core, "s1", str(path), project="p")
        monkeypatch.setattr(background, "spare_core", lambda: False)
        pipeline.ingest_transcript(reference.core, "s1", str(path), project="p")
        # The failed attempt left nothing behind: the same rows as one clean ingest inline.
        assert rows(memory) == rows(reference)
    finally:
        memory.close()
        reference.close()
    assert not _job_threads()


def test_an_interrupt_while_the_run_beside_fails_still_rolls_back(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "spare_core", lambda: True)
    path = write_transcript(tmp_path / "t.jsonl", steps=120)
    memory.store.connection().execute(  # type: ignore[attr-defined]
        "CREATE TEMP TRIGGER fail_once BEFORE INSERT ON main.memories"
        " WHEN new.source_id = 's1:5' BEGIN SELECT RAISE(ABORT, 'simulated I/O error'); END"
    )
    prepared_unit = pipeline._prepared_unit
    seen = 0

    def interrupted(*args: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen == pipeline.UNIT_RUN + 10:
            raise KeyboardInterrupt
        return prepared_unit(*args)

    monkeypatch.setattr(pipeline, "_prepared_unit", interrupted)
    # The interrupt is what the caller sees; the failed statement does not hide it, nor
    # keep the transaction open.
    with pytest.raises(KeyboardInterrupt):
        pipeline.ingest_transcript(memory.core, "s1", str(path), project="p")
    assert not _job_threads()
    monkeypatch.setattr(pipeline, "_prepared_unit", prepared_unit)
    memory.store.connection().execute("DROP TRIGGER fail_once")  # type: ignore[attr-defined]
    assert memory.store.count_memories(MemoryFilter(session_id="s1")) == 0
    report = pipeline.ingest_transcript(memory.core, "s1", str(path), project="p")
    assert report.end_offset == path.stat().st_size


def test_ingest_beside_stores_what_ingest_inline_stores(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_transcript(tmp_path / "t.jsonl", steps=200)
    stored = []
    for beside in (False, True):
        monkeypatch.setattr(background, "spare_core", lambda beside=beside: beside)
        memory = open_memory(str(tmp_path / f"{beside}.db"), settings=settings)
        try:
            for batch_turns in (90, 100_000):  # several batches, then again as another session
                pipeline.ingest_transcript(
                    memory.core, f"s{batch_turns}", str(path), project="p", batch_turns=batch_turns
                )
            stored.append((rows(memory), hits(memory, "retry"), hits(memory, "pytest")))
        finally:
            memory.close()
        assert not _job_threads()
    assert stored[0] == stored[1]
    assert len(stored[0][0]) > 700


def _counted_statements(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows per insert statement from now on (one-row ``insert_memory`` calls count 1)."""
    statements: list[int] = []
    for name in ("insert_memory", "insert_batch"):
        real = getattr(store, name)

        def counted(*args: Any, real: Any = real, **kwargs: Any) -> Any:
            statements.append(1 if real.__name__ == "insert_memory" else len(args[0]))
            return real(*args, **kwargs)

        monkeypatch.setattr(store, name, counted)
    return statements


def test_a_row_its_lookup_finds_new_opens_the_next_run(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Ran make" is stored before the batch (as a build): the batch's "Ran make" is looked
    # up in the store and is no duplicate (another type), so it is inserted with the rows
    # after it, not by a statement of its own (each statement costs FTS5 a segment),
    # under the same ids as one by one.
    core = memory.core
    memories.save(core, Draft("Ran make", project="p", type="build", kind="observation"))
    statements = _counted_statements(memory.store, monkeypatch)
    at = [T0 + timedelta(seconds=i) for i in range(4)]
    drafts = [
        Draft("alpha note", project="p", created_at=at[0]),
        Draft("Ran make", project="p", type="command", kind="observation", created_at=at[1]),
        Draft("beta note", project="p", created_at=at[2]),
        Draft("gamma note", project="p", created_at=at[3]),
    ]
    with memories.batch(core) as writer:
        prepared = [memories.prepare(core, draft) for draft in drafts]
        writer.expect(prepared)
        results = writer.save_many(list(zip(drafts, prepared, strict=True)))()
    assert statements == [1, 3]  # rows per statement: the looked-up row opens the second
    assert [r.status for r in results] == ["created"] * 4
    ids = [r.id for r in results]
    assert ids == list(range(ids[0], ids[0] + 4))
    stored = {m.id: (m.content, m.type) for m in memory.store.get_memories(ids)}
    assert [stored[i] for i in ids] == [(d.content, d.type) for d in drafts]


def test_a_repeat_of_a_row_of_the_run_is_settled_without_storing_the_run_first(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second "Ran make" repeats a row of the run (the store held none of its text):
    # whether it duplicates one is read off the run, so the five rows take one statement.
    statements = _counted_statements(memory.store, monkeypatch)
    at = [T0 + timedelta(seconds=i) for i in range(6)]
    drafts = [
        Draft("Ran make", project="p", type="command", kind="observation", created_at=at[0]),
        Draft("alpha note", project="p", created_at=at[1]),
        Draft("Ran make", project="p", type="build", kind="observation", created_at=at[2]),
        Draft("beta note", project="p", created_at=at[3]),
        Draft("Ran make", project="p", type="command", kind="observation", created_at=at[4]),
        Draft("gamma note", project="p", created_at=at[5]),
    ]
    core = memory.core
    with memories.batch(core) as writer:
        prepared = [memories.prepare(core, draft) for draft in drafts]
        writer.expect(prepared)
        results = writer.save_many(list(zip(drafts, prepared, strict=True)))()
    assert statements == [6]
    statuses = [r.status for r in results]
    # The third "Ran make" finds the newest, the build: another type, so no duplicate.
    assert statuses == ["created"] * 6
    ids = [r.id for r in results]
    assert ids == list(range(ids[0], ids[0] + 6))


def _repeats(prefix: str = "") -> list[Draft]:
    """Observations and notes repeating rows of the same batch: every case of the dedup
    rule (window edge, type, kind, project, ties in time, older repeats, a run stored
    in between by a row with a topic key)."""
    window = memories.DEFAULT_OBSERVATION_WINDOW
    micro = timedelta(microseconds=1)

    def seen(text: str, at: datetime, type: str = "command", project: str = "p") -> Draft:
        return Draft(
            text,
            project=prefix + project,
            type=type,
            kind="observation",
            session_id=prefix + "s1",
            created_at=at,
        )

    return [
        seen("Ran make", T0),
        seen("Ran make", T0 + window),  # exactly at the window's edge: a duplicate
        seen("Ran make", T0 + window + micro),  # the edge's was not stored: T0 is too old
        seen("Ran tests", T0),
        seen("Ran tests", T0 + window + micro),  # just past it: stored
        seen("Ran tests", T0 + window + micro, type="test"),  # the newest is a command
        seen("Ran tests", T0 - timedelta(minutes=1)),  # older; the newest (a tie) is the test
        seen("Tie", T0, type="a"),
        seen("Tie", T0, type="b"),  # same moment, another type: stored
        seen("Tie", T0, type="b"),  # the newest of the tie is the last inserted: b
        seen("Tie", T0, type="a"),  # ... so an "a" now is stored again
        seen("Ran make", T0, project="q"),  # another project: stored
        Draft("Ran make", project=prefix + "p", type="turn", kind="turn", created_at=T0),
        Draft("a note twice", project=prefix + "p", created_at=T0),
        Draft("a note twice", project=prefix + "p", type="decision", created_at=T0),  # a kind
        Draft("a note twice", project=prefix + "p", created_at=T0 + window * 9),  # project-wide
        Draft("kept as a decision", project=prefix + "p", type="decision", created_at=T0),
        # the same kind, another type: deduplicated, and the result says the type kept
        Draft("kept as a decision", project=prefix + "p", type="lesson", created_at=T0),
        Draft("queue", project=prefix + "p", topic_key="queue", created_at=T0),  # stores the run
        seen("Ran make", T0 + window * 2),  # after the run was stored: the store answers
        seen("Ran lint", T0 + window * 2),
        seen("Ran lint", T0 + window * 2, type="lint"),
        seen("Ran lint", T0 + window * 2),  # the newest (a tie) is the lint
    ]


@pytest.mark.parametrize("how", ["inline", "beside"])
def test_repeats_inside_a_batch_are_settled_as_save_settles_them(
    settings: Settings, tmp_path: Path, how: str
) -> None:
    stored = []
    for way in ("one by one", how):
        memory = open_memory(str(tmp_path / f"{way}.db"), settings=settings)
        try:
            core = memory.core
            drafts = _repeats()
            with memories.batch(core) as writer:
                prepared = [memories.prepare(core, draft) for draft in drafts]
                writer.expect(prepared)
                if way == "one by one":
                    results = [writer.save(d, r) for d, r in zip(drafts, prepared, strict=True)]
                else:
                    pairs = list(zip(drafts, prepared, strict=True))
                    results = writer.save_many(pairs, beside=way == "beside")()
            session = memory.get_session("s1")
            activity = (session.started_at, session.last_activity_at)
            stored.append((results, rows(memory), activity))
        finally:
            memory.close()
    assert stored[1] == stored[0]
    assert [r.status for r in stored[0][0]] == REPEATS_SETTLED


REPEATS_SETTLED = [
    *("created", "deduplicated", "created"),
    *("created", "created", "created", "created"),
    *("created", "created", "deduplicated", "created"),
    *("created", "created", "created", "created", "deduplicated", "created"),
    *("deduplicated", "created", "deduplicated", "created", "created", "created"),
]


def test_repeats_inside_a_batch_are_settled_alike_on_each_backend(any_memory: Memory) -> None:
    # The run's rows are compared by creation time as each store orders them (SQLite: epoch
    # seconds, PostgreSQL: timestamptz); each duplicate names the row the store would find.
    core = any_memory.core
    settled = []
    for prefix, many in (("a-", False), ("b-", True)):
        drafts = _repeats(prefix)
        with memories.batch(core) as writer:
            prepared = [memories.prepare(core, draft) for draft in drafts]
            writer.expect(prepared)
            pairs = list(zip(drafts, prepared, strict=True))
            if many:
                results = writer.save_many(pairs)()
            else:
                results = [writer.save(draft, row) for draft, row in pairs]
        created = {r.id: i for i, r in enumerate(results) if r.status == "created"}
        settled.append([(r.status, created[r.id], r.kept_type, bool(r.notice)) for r in results])
    assert settled[1] == settled[0]
    assert [status for status, *_ in settled[0]] == REPEATS_SETTLED
