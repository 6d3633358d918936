"""SQLite query plans of the store's list reads: the index each filter needs, never a walk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memlane.models import MemoryFilter, NewMemory
from memlane.store.sqlite import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _plans(store: SQLiteStore, flt: MemoryFilter) -> list[str]:
    """The EXPLAIN QUERY PLAN details of every SELECT ``list_memories(flt)`` runs."""
    statements: list[str] = []
    conn = store._conn  # the store's own connection: what it runs, as it runs it
    conn.set_trace_callback(statements.append)
    try:
        store.list_memories(flt, limit=10)
    finally:
        conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert selects, statements
    return [
        " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")) for sql in selects
    ]


def test_types_filters_seek_the_project_kind_type_time_index(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        with store.transaction():
            for i in range(300):
                store.insert_memory(
                    NewMemory(
                        project=f"p{i % 3}",
                        kind="observation",
                        type=("command", "file-read", "bugfix")[i % 3],
                        content=f"memory {i}",
                        normalized_hash=f"h{i}",
                        created_at=T0 + timedelta(minutes=i),
                    )
                )
        for types in (("bugfix",), ("bugfix", "decision"), ("decision", "lesson", "command")):
            flt = MemoryFilter(projects=("p1",), kinds=("observation",), types=types)
            plans = _plans(store, flt)
            assert len(plans) == len(types)  # one ordered read per type
            for plan in plans:
                assert "memories_project_kind_type_created" in plan, plan
                assert "TEMP B-TREE" not in plan, plan  # read in time order, not sorted
    finally:
        store.close()


def test_keyword_candidates_seek_each_match_once_by_id(tmp_path: Path) -> None:
    """A filter listing several kinds is tested on the index entry found by the match's id:
    seeking (id, project, kind) would seek once per kind listed, for every match."""
    from memlane.store.query import FtsQuery, Term

    store = SQLiteStore(tmp_path / "m.db")
    try:
        with store.transaction():
            for i in range(60):
                store.insert_memory(
                    NewMemory(
                        project=f"p{i % 2}",
                        kind=("observation", "turn", "prompt")[i % 3],
                        type="note",
                        content=f"retry webhook memory {i}",
                        normalized_hash=f"h{i}",
                        created_at=T0 + timedelta(minutes=i),
                    )
                )
        flt = MemoryFilter(projects=("p1",), kinds=("observation", "turn", "note", "summary"))
        query = FtsQuery(terms=(Term("retry"), Term("webhook")))
        statements: list[str] = []
        conn = store._conn
        conn.set_trace_callback(statements.append)
        try:
            found = store.fts_candidates(query, flt, 50, scan=500)
        finally:
            conn.set_trace_callback(None)
        expected = {i + 1 for i in range(60) if i % 2 == 1 and i % 3 != 2}  # ids start at 1
        assert {mid for mid, _ in found} == expected
        (sql,) = [s for s in statements if "memories_fts MATCH" in s]
        plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "memories_keys (id=?)" in plan, plan
    finally:
        store.close()
