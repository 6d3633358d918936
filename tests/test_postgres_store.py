"""PostgreSQL specifics: the HNSW index is really used, bulk loads defer it, DSNs, errors."""

from __future__ import annotations

import socket
import threading
from array import array
from pathlib import Path

import numpy as np
import pytest

from memlane.errors import InvalidInput, RecordRefused, StoreError
from memlane.models import MemoryFilter, NewMemory, utcnow
from memlane.store import open_store
from memlane.store.pg_text import search_vector, to_tsquery
from memlane.store.postgres import EXACT_SCAN_MAX, PostgresStore, redact
from memlane.store.query import AnyOf, FtsQuery, Grams, Phrase, Term

pytestmark = pytest.mark.postgres


def new(content: str, project: str = "p") -> NewMemory:
    return NewMemory(
        project=project,
        kind="note",
        type="note",
        content=content,
        normalized_hash=content,
        created_at=utcnow(),
    )


def unit_vectors(count: int, dim: int, seed: int = 1) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def plan(store: PostgresStore, model: str, dim: int, where: str = "true") -> str:
    query = array("f", [0.1] * dim).tobytes()
    from psycopg import sql

    from memlane.store.postgres import _Vector

    typed = sql.SQL("vector({})").format(sql.Literal(dim))
    with store._connection() as conn:
        rows = conn.execute(
            sql.SQL(
                "EXPLAIN SELECT e.memory_id FROM embeddings e JOIN memories m ON m.id = e.memory_id"
                " WHERE e.model = %s AND e.dim = {dim} AND {where}"
                " ORDER BY (e.vector::{typed}) <=> %s::{typed} LIMIT 10"
            ).format(dim=sql.Literal(dim), where=sql.SQL(where), typed=typed),
            [model, _Vector(query)],
        ).fetchall()
    return "\n".join(row[0] for row in rows)


def test_open_store_routes_urls_and_hides_the_password(pg_dsn: str) -> None:
    store = open_store(pg_dsn)
    try:
        assert isinstance(store, PostgresStore)
        assert store.backend == "postgresql"
        from psycopg.conninfo import conninfo_to_dict

        password = str(conninfo_to_dict(pg_dsn)["password"])
        assert password not in store.location
        assert store.location.startswith("postgresql://memlane@127.0.0.1:")
    finally:
        store.close()
    assert redact("host=db.example port=6543 dbname=mem user=u password=s3cret") == (
        "postgresql://u@db.example:6543/mem"
    )


def test_unreachable_server_is_a_store_error_quickly() -> None:
    with pytest.raises(StoreError, match="cannot open the database"):
        PostgresStore("postgresql://nobody:pw@127.0.0.1:1/none")


def test_a_server_that_hangs_up_is_tried_once_not_retried() -> None:
    # "Quickly" counted in work: one connection attempt, no pool retrying until a timeout.
    attempts: list[int] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        stop = threading.Event()

        def hang_up() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                attempts.append(1)
                conn.close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        try:
            with pytest.raises(StoreError, match="cannot open the database"):
                PostgresStore(f"postgresql://nobody:pw@127.0.0.1:{port}/none?sslmode=disable")
        finally:
            stop.set()
            thread.join(timeout=30)
    assert len(attempts) == 1, attempts


def test_hnsw_index_is_created_and_used(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        ids = store.insert_memories([new(f"row {i}", project=f"p{i % 3}") for i in range(300)])
        vectors = unit_vectors(300, 16)
        store.put_embeddings("m16", 16, [(i, vectors[n].tobytes()) for n, i in enumerate(ids)])
        names = store.vector_index_names()
        assert list(names) == [("m16", 16)]
        store._execute("ANALYZE embeddings")
        store._execute("SET enable_seqscan = off")  # a tiny table: make the planner show its hand
        explained = plan(store, "m16", 16)
        assert names[("m16", 16)] in explained, explained
        assert "embeddings_hnsw" not in plan(store, "other-model", 16)
        # the store's own query returns the exact neighbour first
        found = store.vector_candidates("m16", vectors[5].tolist(), MemoryFilter(), 10)
        assert found[0][0] == ids[5]
        assert found[0][1] == pytest.approx(1.0, abs=1e-5)
    finally:
        store.close()


def test_filtered_vector_search_stays_complete(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A selective filter must not starve HNSW: every row of a small project is reachable."""
    store = PostgresStore(pg_dsn)
    try:
        ids = store.insert_memories([new(f"r{i}", project="big") for i in range(400)])
        small = store.insert_memories([new(f"s{i}", project="small") for i in range(5)])
        vectors = unit_vectors(405, 8, seed=3)
        store.put_embeddings(
            "m8", 8, [(i, vectors[n].tobytes()) for n, i in enumerate([*ids, *small])]
        )
        import memlane.store.postgres as pg

        for threshold in (EXACT_SCAN_MAX, 1):  # exact scan, then the HNSW + iterative path
            monkeypatch.setattr(pg, "EXACT_SCAN_MAX", threshold)
            found = store.vector_candidates(
                "m8", vectors[0].tolist(), MemoryFilter(projects=("small",)), 10
            )
            assert sorted(i for i, _ in found) == sorted(small), threshold
            scores = [s for _, s in found]
            assert scores == sorted(scores, reverse=True)
    finally:
        store.close()


def test_deferred_indexes_are_built_at_the_end(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        ids = store.insert_memories([new(f"d{i}") for i in range(50)])
        vectors = unit_vectors(50, 4)
        with store.deferred_vector_indexes():
            store.put_embeddings("m4", 4, [(i, vectors[n].tobytes()) for n, i in enumerate(ids)])
            assert store.vector_index_names() == {}
        assert list(store.vector_index_names()) == [("m4", 4)]
        found = store.vector_candidates("m4", vectors[7].tolist(), MemoryFilter(), 1)
        assert found[0][0] == ids[7]
    finally:
        store.close()


def test_a_large_table_is_sized_by_the_planners_estimate(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from memlane.search.fts import unit_query
    from memlane.store import postgres

    store = PostgresStore(pg_dsn)
    try:
        store.insert_memories([new(f"cache note {i}") for i in range(5)])
        assert store.match_counts([unit_query("cache")]) == (5, [5])
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("ANALYZE memories")
        store.insert_memories([new("cache again"), new("and again")])
        assert store.match_counts([unit_query("cache")]) == (7, [6])  # small: counted
        monkeypatch.setattr(postgres, "EXACT_COUNT_ROWS", 1)
        # Past the bound the total is what ANALYZE saw; the word's count stays exact.
        assert store.match_counts([unit_query("cache")]) == (5, [6])
    finally:
        store.close()


def test_vectors_of_the_wrong_size_are_refused(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        mid = store.insert_memory(new("x"))
        with pytest.raises(ValueError, match="expected 3"):
            store.put_embeddings("m", 3, [(mid, array("f", [1.0, 2.0]).tobytes())])
    finally:
        store.close()


def test_nul_characters_are_stored_as_replacement_characters(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        mid = store.insert_memory(
            NewMemory(
                project="p",
                kind="note",
                type="note",
                content="a\x00b",
                title="t\x00",
                normalized_hash="h",
                created_at=utcnow(),
                metadata={"k\x00": ["v\x00"]},
                tags=("x\x00",),
            )
        )
        (got,) = store.get_memories([mid])
        assert (got.content, got.title, got.tags) == ("a\ufffdb", "t\ufffd", ("x\ufffd",))
        assert got.metadata == {"k\ufffd": ["v\ufffd"]}
    finally:
        store.close()


def test_a_record_the_database_refuses_is_record_refused(pg_dsn: str) -> None:
    """An integrity error is the record's (RecordRefused: the hooks' spool moves such a
    capture aside), not the database's state (a plain StoreError: kept for a later try)."""
    store = PostgresStore(pg_dsn)
    try:
        store.insert_memory(new("a fine note"))
        with store._connection() as conn:
            conn.execute(
                "ALTER TABLE memories ADD CONSTRAINT no_poison CHECK (content NOT LIKE '%poison%')"
            )
            conn.commit()
        with pytest.raises(RecordRefused, match="no_poison"):
            store.insert_memory(new("a poison note"))
        assert store.insert_memory(new("another fine note"))
    finally:
        store.close()


def test_query_rendering() -> None:
    redis, cache = Term("redis"), Term("cache", prefix=True)
    assert to_tsquery(FtsQuery(terms=(redis, cache))) == "'redis' | ('cache' | 'cache':*)"
    ab = Phrase(("a", "b"))
    assert to_tsquery(FtsQuery(terms=(Term("c"),), phrases=(ab,), operator="all")) == (
        "('c' & ('a' <-> 'b'))"
    )
    assert to_tsquery(FtsQuery(cjk_grams=(("東京", "京タ"),))) == "('東京':C <-> '京タ':C)"
    x, y, z = Term("x"), Term("y"), Term("z")
    assert to_tsquery(FtsQuery(terms=(x,), excluded=(y,), operator="all")) == "('x' & !'y')"
    assert to_tsquery(FtsQuery(terms=(x, z), excluded=(y,))) == "(('x' | 'z') & !'y')"
    assert to_tsquery(FtsQuery(terms=(x,), excluded=(Term("___"),))) == "'x'"
    assert to_tsquery(FtsQuery(terms=(Term("___"), z))) == "'z'"
    assert to_tsquery(FtsQuery(terms=(Term("___"), z), operator="all")) is None
    assert to_tsquery(FtsQuery(terms=(Term("Élan"),))) == "'elan'"
    assert to_tsquery(FtsQuery()) is None
    assert to_tsquery(FtsQuery(terms=(Term('it"s'),))) == "('it' <-> 's')"
    assert to_tsquery(FtsQuery(terms=(Term("x" * 3000),))) is None
    fielded = FtsQuery(
        terms=(Term("wal", field="title"), Term("app.p", prefix=True, field="files")),
        required=(AnyOf((Term("a"), Phrase(("b", "c"), field="title"), Grams(("設定",)))),),
        excluded=(Phrase(("x", "y")), Grams(("東京",)), Term("___")),
    )
    either = "('a' | ('b':A <-> 'c':A) | '設定':C)"
    ranked = "('wal':A | (('app':B <-> 'p':B) | ('app':B <-> 'p':*B)))"
    assert to_tsquery(fielded) == (
        f"({either} & ({either} | {ranked}) & !('x' <-> 'y') & !'東京':C)"
    )
    assert to_tsquery(FtsQuery(required=(AnyOf((Term("___"),)),))) is None
    assert to_tsquery(FtsQuery(terms=(z,), required=(Term("___"),))) is None


def test_database_operations_a_server_leaves_to_its_own_tools(pg_dsn: str, tmp_path: Path) -> None:
    store = PostgresStore(pg_dsn, pool_size=1)
    try:
        store.insert_memory(new("one row"))
        assert store.keeps_vector_index is True
        used, on_disk = store.storage_bytes()
        assert used == on_disk == store.stats().db_bytes > 0
        assert store.reclaim_space() is False
        assert store.same_database(store.location) is False
        with pytest.raises(InvalidInput, match="pg_dump"):
            store.backup_to(tmp_path / "copy.db", tmp_path)
    finally:
        store.close()


def test_search_vector_weights_and_gaps() -> None:
    vector = search_vector("Big Title", "body text", ["src/a.py"], ["tag"])
    assert "'big':1A" in vector and "'title':2A" in vector
    assert "'body':4 " in vector  # a gap of one position after the title
    assert "'py':9B" in vector and "'tag':11B" in vector
    assert search_vector("", "東京タワー", [], []) == (
        "'東京タワー':2 '東京':6C '京タ':7C 'タワ':8C 'ワー':9C"
    )


def test_an_upgraded_database_indexes_the_words_of_its_camel_case_identifiers(
    pg_dsn: str,
) -> None:
    import psycopg

    store = PostgresStore(pg_dsn)
    camel = store.insert_memory(new("alias Spotter.Services.TranscriptRenderer"))
    plain = store.insert_memory(new("plain words only"))
    assert store.backfill_index(10) == (0, 0)  # a new database has nothing to re-index
    store.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # as before migration 7
        conn.execute("UPDATE memories SET search = to_tsvector('simple', content)")
        conn.execute("DROP TABLE index_backfill")
        conn.execute("DELETE FROM schema_version WHERE version = 7")
    store = PostgresStore(pg_dsn)
    try:
        renderer = FtsQuery(terms=(Term("renderer"),))
        assert store.fts_candidates(renderer, MemoryFilter(), 10) == []
        assert store.backfill_index(1) == (1, 1)
        assert [mid for mid, _ in store.fts_candidates(renderer, MemoryFilter(), 10)] == [camel]
        assert store.backfill_index(1) == (1, 0)
        assert store.backfill_index(1) == (0, 0)
        words = FtsQuery(terms=(Term("plain"),))
        assert [mid for mid, _ in store.fts_candidates(words, MemoryFilter(), 10)] == [plain]
    finally:
        store.close()
