"""Bulk writes: the batched, read-ahead import and the batched ingest store exactly what
one-by-one saves store.

``import jsonl`` prepares the next batch in a thread and looks duplicates up once
per batch (``Writer.expect``); a transcript is ingested in batches of turns. These
tests hold them to the one-by-one write path: the same ids, hashes, texts,
full-text hits, counts and bad-line report; duplicates inside one batch caught;
a failure mid-import keeping the batches before it and leaving no thread.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlane import background, memories
from memlane.capture import pipeline
from memlane.config import Settings
from memlane.errors import InvalidInput, StoreError
from memlane.interop import roundtrip
from memlane.interop.identity import source_identity
from memlane.interop.jsonl import parse_object
from memlane.interop.report import Tally
from memlane.memories import Draft
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.store.query import FtsQuery, Term

BATCH = roundtrip.BATCH


@pytest.fixture(autouse=True)
def read_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread runs whatever the machine's load (by default it waits for a spare core)."""
    monkeypatch.setattr(background, "spare_core", lambda: True)


SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def _record(i: int) -> dict[str, Any]:
    return {
        "id": f"rec-{i}",
        "text": f"note {i} about the retry queue and worker {i % 7}",
        "session": f"s-{i // 150}",
        "project": "alpha" if i % 5 else "beta",
        "timestamp": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}Z",
    }


def mixed_lines() -> list[str]:
    """Plain records over several batches, with every case the write path tells apart."""
    lines: list[str] = []
    for i in range(2 * BATCH + 137):
        record = _record(i)
        if i % 97 == 3:
            record["text"] = "note 1 about the retry queue and worker 1"  # a duplicate text
        if i % 211 == 5:
            record["id"] = "rec-2"  # same id: an upsert of an earlier record
            record["project"] = "alpha"
        if i % 173 == 7:
            record["text"] = f"deploy with token {SECRET} on host {i}"
        if i % 131 == 11:
            record["text"] = "<private>all of it</private>"  # nothing left to store
        lines.append(json.dumps(record))
        if i % 149 == 13:
            lines.append('{"id": "broken", "text": ')  # not JSON
        if i % 157 == 17:
            lines.append(json.dumps({"id": f"bad-{i}", "tags": "x"}))  # no text
        if i % 163 == 19:
            lines.append("")
    # The same text twice inside the last batch, and one record again, changed.
    lines.append(
        json.dumps(
            {"id": "twin-a", "text": "twins inside one batch", "project": "alpha", "timestamp": 1}
        )
    )
    lines.append(
        json.dumps(
            {"id": "twin-b", "text": "twins inside one batch", "project": "alpha", "timestamp": 2}
        )
    )
    lines.append(json.dumps({**_record(4), "text": "note 4, revised"}))
    return lines


def one_by_one(memory: Memory, path: Path) -> Tally:
    """The reference: each line decoded, validated and saved on its own (memories.save)."""
    tally = Tally()
    with path.open(encoding="utf-8") as handle:
        lines = list(handle)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            tally.error(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        try:
            result = memories.save(memory.core, parse_object(record, file=path.name))
        except InvalidInput as exc:
            tally.error(number, str(exc))
            continue
        tally.count(result.status)
    return tally


def rows(memory: Memory) -> list[tuple[Any, ...]]:
    """Every stored field that does not depend on the wall clock, in id order."""
    columns = (
        "id, project, session_id, kind, type, title, content, files, tags, cjk_terms,"
        " topic_key, source, source_id, normalized_hash, revision_count, created_at, metadata"
    )
    found = memory.store._query(f"SELECT {columns} FROM memories ORDER BY id")  # type: ignore[attr-defined]
    return [tuple(row) for row in found]


def hits(memory: Memory, word: str) -> list[int]:
    found = memory.store.fts_candidates(
        FtsQuery(terms=(Term(word),)), memory_filter(), limit=10_000
    )
    return sorted(i for i, _score in found)


def memory_filter() -> Any:
    from memlane.models import MemoryFilter

    return MemoryFilter()


@pytest.fixture
def twin(settings: Settings, tmp_path: Path) -> Any:
    memory = open_memory(str(tmp_path / "reference.db"), settings=settings)
    yield memory
    memory.close()


def test_batched_import_stores_exactly_what_one_by_one_saves_store(
    memory: Memory, twin: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(mixed_lines()) + "\n", encoding="utf-8")

    report = memory.import_jsonl(str(path))
    reference = one_by_one(twin, path)

    assert (report.created, report.updated, report.skipped) == (
        reference.created,
        reference.updated,
        reference.skipped,
    )
    assert report.created > 2 * BATCH and report.updated >= 2 and report.skipped >= 3
    assert [(e.line, e.message) for e in report.errors] == [
        (e.line, e.message) for e in reference.errors
    ]
    assert any("not valid JSON" in e.message for e in report.errors)
    assert any("missing 'text'" in e.message for e in report.errors)
    assert any("privacy" in e.message for e in report.errors)
    stored = rows(memory)
    assert stored == rows(twin)
    assert not any(SECRET in str(row) for row in stored)
    for word in ("retry", "worker", "revised", "twins", "deploy", "REDACTED"):
        assert hits(memory, word) == hits(twin, word), word
    assert hits(memory, "twins") and hits(memory, "revised")


def test_a_duplicate_inside_one_batch_is_caught(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "twins.jsonl"
    lines = [json.dumps({"id": f"n{i}", "text": f"fact number {i}"}) for i in range(40)]
    lines.insert(10, json.dumps({"id": "again", "text": "FACT   number 3"}))  # same hash
    lines.insert(20, json.dumps({"id": "n5", "text": "fact number 5, corrected"}))  # same id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = memory.import_jsonl(str(path), project="p")

    assert (report.created, report.updated, report.skipped) == (40, 1, 1)
    assert memory.store.count_memories(memory_filter()) == 40
    assert memory.store.find_memory("p", source="jsonl", source_id="again") is None
    corrected = memory.store.find_memory("p", source="jsonl", source_id="n5")
    assert corrected is not None and corrected.content == "fact number 5, corrected"


def test_writer_expect_skips_nothing_it_must_find(memory: Memory) -> None:
    """Keys learned absent are forgotten once written: the second of two twins is a duplicate."""
    core = memory.core
    drafts = [Draft("same words", project="p"), Draft("same   WORDS", project="p")]
    with memories.batch(core) as writer:
        prepared = [memories.prepare(core, d) for d in drafts]
        writer.expect(prepared)
        results = [writer.save(d, row) for d, row in zip(drafts, prepared, strict=True)]
    assert [r.status for r in results] == ["created", "deduplicated"]
    assert results[0].id == results[1].id


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memlane-ahead"]


def test_a_store_failure_mid_import_keeps_earlier_batches_and_no_thread(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "many.jsonl"
    total = 4 * BATCH
    path.write_text(
        "\n".join(json.dumps(_record(i) | {"project": "p"}) for i in range(total)) + "\n",
        encoding="utf-8",
    )
    # A real SQLite failure inside the third batch (an ABORT, as a full disk or I/O error).
    memory.store.connection().execute(  # type: ignore[attr-defined]
        "CREATE TEMP TRIGGER fail_once BEFORE INSERT ON main.memories"
        " WHEN new.source_id = 'rec-1100' BEGIN SELECT RAISE(ABORT, 'simulated I/O error'); END"
    )
    with pytest.raises(StoreError, match="simulated I/O error"):
        memory.import_jsonl(str(path))

    assert memory.store.count_memories(memory_filter()) == 2 * BATCH
    assert not _ahead_threads()
    memory.store.connection().execute("DROP TRIGGER fail_once")  # type: ignore[attr-defined]
    report = memory.import_jsonl(str(path))  # a retry adds exactly the rest
    assert (report.created, report.skipped) == (total - 2 * BATCH, 2 * BATCH)


def test_a_reader_failure_mid_import_keeps_earlier_batches_and_no_thread(
    memory: Memory,
) -> None:
    def numbered() -> Any:
        for i in range(BATCH + 50):
            yield i + 1, _record(i) | {"project": "p"}
        raise OSError("the file went away")

    applier = roundtrip.RecordApplier(memory.core)
    with pytest.raises(OSError, match="went away"):
        applier.apply_batches(numbered())
    assert memory.store.count_memories(memory_filter()) == BATCH
    assert not _ahead_threads()


def test_a_bad_record_is_reported_and_the_rest_stored(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps({"id": f"r{i}", "text": f"row {i}"}) for i in range(BATCH + 10)]
    lines[BATCH - 2] = json.dumps({"id": "x", "text": "t", "metadata": {"v": float("inf")}})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = memory.import_jsonl(str(path), project="p")

    assert report.created == BATCH + 9
    assert [e.line for e in report.errors] == [BATCH - 1]
    assert "finite" in report.errors[0].message
    assert not _ahead_threads()


def write_transcript(path: Path, steps: int) -> Path:
    """A Claude Code transcript: prompts, answers, Bash calls and their output."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(steps):
            stamp = f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
            secret = f" with token {SECRET}" if i % 17 == 0 else ""
            for record in (
                {
                    "type": "user",
                    "sessionId": "s1",
                    "cwd": "/work/app",
                    "timestamp": stamp,
                    "message": {"role": "user", "content": f"step {i}: fix the retry bug{secret}"},
                },
                {
                    "type": "assistant",
                    "sessionId": "s1",
                    "timestamp": stamp,
                    "message": {
                        "id": f"m{i}",
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": f"Looking at worker {i}. " * (1 + i % 9)},
                            {
                                "type": "tool_use",
                                "id": f"t{i}",
                                "name": "Bash",
                                "input": {"command": f"pytest tests/test_{i % 23}.py"},
                            },
                        ],
                    },
                },
                {
                    "type": "user",
                    "sessionId": "s1",
                    "timestamp": stamp,
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"t{i}",
                                "content": "\n".join(f"line {n} ok" for n in range(i % 40)),
                            }
                        ],
                    },
                },
            ):
                out.write(json.dumps(record) + "\n")
    return path


def test_transcript_batches_store_what_one_batch_stores(settings: Settings, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "t.jsonl", steps=150)
    stored: list[list[tuple[Any, ...]]] = []
    for batch_turns in (40, 100_000):
        memory = open_memory(str(tmp_path / f"{batch_turns}.db"), settings=settings)
        try:
            report = pipeline.ingest_transcript(
                memory.core, "s1", str(path), project="p", batch_turns=batch_turns
            )
            assert report.chunks > 300
            assert memory.get_session("s1").transcript_offset == path.stat().st_size
            stored.append(rows(memory))
        finally:
            memory.close()
        assert not _ahead_threads()
    # Units and observations are inserted batch by batch, so only the ids' order differs.
    assert sorted(row[1:] for row in stored[0]) == sorted(row[1:] for row in stored[1])
    assert not any(SECRET in str(row) for row in stored[1])
    assert {row[3] for row in stored[1]} == {"turn", "observation"}


def test_present_keys_finds_exactly_the_held_keys(any_memory: Memory) -> None:
    memory = any_memory
    store = memory.store
    memories.save(memory.core, Draft("a", project="p", source="s", source_id="k1"))
    memories.save(memory.core, Draft("b", project="p", topic_key="t1"))
    held = memories.prepare(memory.core, Draft("a", project="p")).normalized_hash
    assert store.present_keys("p", "source_id", ["k1", "k2"], source="s") == {"k1"}
    assert store.present_keys("p", "source_id", ["k1"], source="other") == set()
    assert store.present_keys("q", "source_id", ["k1"], source="s") == set()
    assert store.present_keys("p", "topic_key", ["t1", "t2"]) == {"t1"}
    assert store.present_keys("p", "normalized_hash", [held, "0" * 64]) == {held}
    with pytest.raises(ValueError, match="not one of"):
        store.present_keys("p", "content", ["a"])
    # PostgreSQL stores a NUL as U+FFFD: both spellings then name the stored key. (Names
    # with a NUL are refused now; a database written before may hold one.)
    row = memories.prepare(memory.core, Draft("c", project="p", source="s", source_id="nul"))
    store.insert_memory(dataclasses.replace(row, source_id="n\x00l"))
    asked = ["n\x00l", "n\ufffdl"]
    expected = set(asked) if store.backend == "postgresql" else {"n\x00l"}
    assert store.present_keys("p", "source_id", asked, source="s") == expected


def test_interleaved_ingests_store_each_unit_once(memory: Memory, settings: Settings) -> None:
    """Four ingests of one session, one turn per transaction: each resumes at the offset
    the others moved, so no unit is stored twice or skipped."""
    from tests.test_capture_pipeline import DATA, ids_are_dense, turns_of

    path = DATA / "transcript.jsonl"
    memory.session_start("i", project="p", transcript_path=str(path))

    def ingest() -> None:
        with open_memory(settings=settings) as other:
            pipeline.ingest_transcript(other.core, "i", batch_turns=1)

    threads = [threading.Thread(target=ingest) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reference = pipeline.ingest_transcript(
        memory.core, "i-ref", str(path), project="p", batch_turns=1
    )
    ids = turns_of(memory, "i")
    assert len(ids) == len(set(ids)) == reference.chunks > 3
    assert ids_are_dense(ids, "i")
    assert not _ahead_threads()


def test_without_a_spare_core_the_items_come_in_the_calling_thread() -> None:
    seen: list[str] = []

    def source() -> Any:
        for i in range(3):
            seen.append(threading.current_thread().name)
            yield i

    with background.ahead(source(), thread=False) as items:
        assert list(items) == [0, 1, 2]
    with background.ahead(source(), thread=True) as items:
        assert list(items) == [0, 1, 2]
    assert seen[:3] == [threading.current_thread().name] * 3
    assert seen[3:] == ["memlane-ahead"] * 3
    assert not _ahead_threads()


def test_find_by_source_ids_reads_what_find_memory_reads_in_one_call(any_memory: Memory) -> None:
    memory = any_memory
    store = memory.store
    for content, project, source, source_id in (
        ("a", "p", "s", "k1"),
        ("b", "p", "s", "k2"),
        ("c", "p", "other", "k3"),
        ("d", "q", "s", "k4"),
    ):
        memories.save(
            memory.core, Draft(content, project=project, source=source, source_id=source_id)
        )
    found = store.find_by_source_ids("p", "s", ["k1", "k2", "k3", "k4", "missing"])
    assert set(found) == {"k1", "k2"}
    for key, held in found.items():
        assert held == store.find_memory("p", source="s", source_id=key)
    assert store.find_by_source_ids("p", "s", []) == {}


def _memory_reads(memory: Memory, action: Callable[[], object]) -> int:
    """The SELECTs of memories SQLite runs for ``action`` (its trace of the store's
    connection: every statement, whichever method asked)."""
    statements: list[str] = []
    connection = memory.store._conn  # type: ignore[attr-defined]
    connection.set_trace_callback(statements.append)
    try:
        action()
    finally:
        connection.set_trace_callback(None)
    return sum(1 for s in statements if s.lstrip().startswith("SELECT") and "FROM memories" in s)


def test_a_re_import_reads_the_held_memories_per_batch_not_per_record(
    memory: Memory, tmp_path: Path
) -> None:
    """The memories holding a batch's ids are read with the batch (``Writer.expect``): a
    record imported before is settled without a read of its own, so a batch of 200 records
    reads no more than one of 20 (their 400 keys, an id and a file's id each, fit one
    statement per lookup)."""
    reads = {}
    for count in (20, 200):
        path = tmp_path / f"{count}.jsonl"
        lines = [
            json.dumps({"id": f"r{i}", "text": f"fact {i} of {count}", "session": f"s{count}"})
            for i in range(count)
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        project = f"p{count}"
        assert memory.import_jsonl(str(path), project=project).created == count
        reports = []
        reads[count] = _memory_reads(
            memory, lambda: reports.append(memory.import_jsonl(str(path), project=project))
        )
        assert (reports[0].created, reports[0].updated, reports[0].skipped) == (0, 0, count)
    assert reads[200] == reads[20], reads


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_a_held_record_revised_twice_in_one_batch_is_read_as_revised(
    any_memory: Memory, tmp_path: Path
) -> None:
    """The memory read ahead for a batch is read again once the batch has changed it."""
    path = tmp_path / "notes.jsonl"
    _write_lines(path, [{"id": "a", "text": "one"}])
    any_memory.import_jsonl(str(path), project="p")
    _write_lines(
        path,
        [{"id": "a", "text": "two"}, {"id": "a", "text": "three"}, {"id": "a", "text": "three"}],
    )

    report = any_memory.import_jsonl(str(path), project="p")

    assert (report.created, report.updated, report.skipped) == (0, 2, 1)
    held = any_memory.store.find_memory("p", source="jsonl", source_id="a")
    assert held is not None and (held.content, held.revision_count) == ("three", 2)


def test_a_held_record_deleted_by_a_tombstone_of_its_batch_comes_back(
    any_memory: Memory, tmp_path: Path
) -> None:
    """A tombstone deletes outside the batch's writer: what the writer read ahead is dropped,
    so the record after it is stored again rather than counted as already there."""
    path = tmp_path / "notes.jsonl"
    record = {"id": "a", "text": "the retry queue drains at night"}
    _write_lines(path, [record])
    any_memory.import_jsonl(str(path), project="p")
    first = any_memory.store.find_memory("p", source="jsonl", source_id="a")
    assert first is not None
    tombstone = {"record": "tombstone", "identity": source_identity("p", "jsonl", "a")}
    _write_lines(path, [record, tombstone, record])

    report = any_memory.import_jsonl(str(path), project="p")

    assert (report.created, report.updated, report.skipped) == (1, 0, 1)
    again = any_memory.store.find_memory("p", source="jsonl", source_id="a")
    assert again is not None and again.id != first.id
    assert again.content == record["text"]
