"""SQLite specifics: migrations, pragmas, FTS kept in sync by triggers, MATCH, vacuum."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pytest import MonkeyPatch

from memlane.models import MemoryFilter, NewMemory, utcnow
from memlane.store.migrations.sqlite import MIGRATIONS, SCHEMA_VERSION_TABLE
from memlane.store.query import AnyOf, FtsQuery, Grams, Phrase, Term
from memlane.store.sqlite import (
    BULK_CACHE_KIB,
    ROWS_PER_STATEMENT,
    SQLiteStore,
    _varint,
    fts5_match,
)


def new(content: str, title: str = "") -> NewMemory:
    return NewMemory(
        project="p",
        kind="note",
        type="note",
        content=content,
        normalized_hash=content,
        created_at=utcnow(),
        title=title,
    )


def fts_ids(db: Path, match: str) -> set[int]:
    with sqlite3.connect(db) as conn:
        return {
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (match,)
            )
        }


def test_migrations_from_empty_and_rerun(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = SQLiteStore(db)
    assert store.schema_version() == MIGRATIONS[-1][0]
    store.close()
    again = SQLiteStore(db)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT version, name FROM schema_version").fetchall()
    assert [r[0] for r in rows] == [m[0] for m in MIGRATIONS]
    assert all(r[1] for r in rows)
    again.close()


def test_an_upgraded_database_indexes_the_words_of_its_camel_case_identifiers(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # as memlane left it before migration 7
        conn.execute(SCHEMA_VERSION_TABLE)
        for number, name, sql in MIGRATIONS:
            if number < 7:
                conn.executescript(sql)
                conn.execute("INSERT INTO schema_version VALUES (?, ?, 0)", (number, name))
        conn.executemany(
            "INSERT INTO memories(project, kind, type, title, content, normalized_hash,"
            " created_at, updated_at, last_accessed_at, cjk_terms)"
            " VALUES ('p', 'note', 'note', ?, ?, ?, 0, 0, 0, ?)",
            [
                ("", "alias TranscriptRenderer", "a", ""),
                ("getUserName", "東京タワー", "b", "東京 京タ タワ ワー"),
                ("", "plain words only", "c", ""),
            ],
        )
    store = SQLiteStore(db)  # the migration only notes the rows to re-index
    assert store.schema_version() == MIGRATIONS[-1][0]
    assert fts_ids(db, "renderer") == set()
    assert store.backfill_index(2) == (2, 1)
    assert fts_ids(db, "renderer") == {1}
    assert fts_ids(db, "user AND name AND 東京") == {2}  # the bigrams are kept
    assert store.backfill_index(2) == (1, 0)
    assert store.backfill_index(2) == (0, 0)
    assert fts_ids(db, "plain") == {3}
    store.close()
    fresh = SQLiteStore(tmp_path / "new.db")  # a new database has nothing to re-index
    assert fresh.backfill_index(2) == (0, 0)
    fresh.insert_memory(new("a TranscriptRenderer"))
    queue = tmp_path / "new.db"
    with sqlite3.connect(queue) as conn:  # a crafted file's rows: no endless run, no error
        conn.execute("INSERT INTO index_backfill VALUES (1, 4611686018427387904)")
    assert fresh.backfill_index(2) == (1, 0)  # bounded by the ids there are
    with sqlite3.connect(queue) as conn:
        conn.execute("INSERT INTO index_backfill VALUES ('x', 9)")
    assert fresh.backfill_index(2) == (0, 0)
    with sqlite3.connect(queue) as conn:
        assert conn.execute("SELECT count(*) FROM index_backfill").fetchone() == (0,)
    fresh.close()


def test_pragmas(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "p.db")
    conn = store.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    store.close()


def test_a_bulk_load_widens_the_page_cache_and_gives_it_back(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = SQLiteStore(db)
    conn = store.connection()
    before = conn.execute("PRAGMA cache_size").fetchone()[0]
    with store.bulk_load():
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -BULK_CACHE_KIB
        with store.transaction():
            store.insert_memory(new("bulk loaded row about kestrels"))
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == before != -BULK_CACHE_KIB
    assert fts_ids(db, "kestrels") == {1}
    store.close()


def test_fts_follows_insert_update_delete(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    store = SQLiteStore(db)
    a = store.insert_memory(new("alpha bravo"))
    b = store.insert_memory(new("charlie", title="delta"))
    assert fts_ids(db, "alpha") == {a}
    assert fts_ids(db, "delta") == {b}
    store.update_memory(a, {"content": "echo foxtrot"})
    assert fts_ids(db, "alpha") == set()
    assert fts_ids(db, "foxtrot") == {a}
    store.update_memory(b, {"access_count": 3})
    assert fts_ids(db, "delta") == {b}
    store.delete_memories([b])
    assert fts_ids(db, "delta") == set()
    assert store.fts_integrity_ok()
    store.close()


def test_embeddings_cascade_and_invalidate(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "e.db")
    a = store.insert_memory(new("one"))
    b = store.insert_memory(new("two"))
    vec = bytes(4 * 3)
    store.put_embeddings("toy", 3, [(a, vec), (b, vec)])
    assert store.embedding_counts() == {"toy": 2}
    store.update_memory(a, {"content": "one, edited"})
    assert store.embedding_counts() == {"toy": 1}
    assert [i for i, _ in store.missing_embeddings("toy", 10)] == [a]
    store.delete_memories([b])
    assert store.embedding_counts() == {}
    store.close()


def test_transaction_rolls_back(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    try:
        with store.transaction():
            store.insert_memory(new("kept?"))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert store.count_memories(MemoryFilter()) == 0
    store.close()


def test_query_rendering_quotes_every_word() -> None:
    query = FtsQuery(
        terms=(Term("redis"), Term('sa"y', prefix=True)),
        phrases=(Phrase(("red", "fox")),),
        cjk_grams=(("東京", "京タ"),),
    )
    expected = '"redis" OR ("sa""y" OR "sa""y"*) OR "red fox" OR cjk_terms : "東京 京タ"'
    assert fts5_match(query) == expected
    strict = FtsQuery(terms=(Term("NOT"), Term("a\x00b")), operator="all", excluded=(Term("x"),))
    assert fts5_match(strict) == '("NOT" AND "a b") NOT ("x")'
    assert fts5_match(FtsQuery(excluded=(Term("x"),))) is None
    fielded = FtsQuery(
        terms=(Term("wal", field="title"), Term("eng", prefix=True, field="files")),
        required=(AnyOf((Term("a"), Phrase(("b", "c"), field="title"), Grams(("設定",)))),),
        excluded=(Phrase(("x", "y")), Grams(("東京",))),
    )
    either = '("a" OR title : "b c" OR cjk_terms : "設定")'
    ranked = 'title : "wal" OR files : ("eng" OR "eng"*)'
    assert fts5_match(fielded) == (
        f'({either} AND ({either} OR {ranked})) NOT ("x y" OR cjk_terms : "東京")'
    )


def test_same_database_sees_through_spellings(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    try:
        (tmp_path / "link.db").symlink_to(db)
        monkeypatch.chdir(tmp_path)
        assert store.same_database(db)
        assert store.same_database("s.db")
        assert store.same_database(tmp_path / "link.db")
        assert not store.same_database(tmp_path / "s.db-wal")
    finally:
        store.close()
    memory_store = SQLiteStore(":memory:")
    assert not memory_store.same_database(":memory:")
    assert memory_store.storage_bytes() == (0, 0)
    assert memory_store.reclaim_space() is False
    memory_store.close()


def test_a_new_database_vacuums_incrementally_from_the_start(tmp_path: Path) -> None:
    # Its first maintenance then needs no full VACUUM, which holds the write lock (22 s at
    # 167 MB: prompt hooks waiting on it ran out of budget and lost their prompt).
    db = tmp_path / "new.db"
    SQLiteStore(db).close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
    conn.close()
    before = db.read_bytes()
    SQLiteStore(db).close()  # reopening an existing database writes nothing
    assert db.read_bytes() == before


def test_reclaim_space_switches_to_incremental_vacuum_and_shrinks(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    SQLiteStore(db).close()
    with sqlite3.connect(db) as conn:  # a database made before new ones were incremental
        conn.executescript("PRAGMA auto_vacuum = NONE; VACUUM;")
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    store = SQLiteStore(db)
    try:
        ids = [store.insert_memory(new(f"row {i} " + "words " * 200)) for i in range(400)]
        store.delete_memories(ids[:-1])
        before = store.storage_bytes()
        assert store.reclaim_space() is True
        after = store.storage_bytes()
        assert after[1] < before[1] and after[0] <= before[0]
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
        assert fts_ids(db, "row") == {ids[-1]}
    finally:
        store.close()


def _plans_of(store: SQLiteStore, call: object) -> list[str]:
    """The query plans of the statements ``call()`` runs on ``store``."""
    statements: list[str] = []
    conn = store.connection()
    conn.set_trace_callback(statements.append)
    try:
        call()  # type: ignore[operator]
    finally:
        conn.set_trace_callback(None)
    plans = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT"):
            rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
            plans.append(" | ".join(str(row[3]) for row in rows))
    return plans


def test_duplicate_lookups_use_the_hash_index(tmp_path: Path) -> None:
    """A dedup check reads the rows of one hash, not every memory of one kind."""
    from datetime import timedelta

    store = SQLiteStore(tmp_path / "h.db")
    for i in range(50):
        store.insert_memory(new(f"memory number {i}"))
    since = utcnow() - timedelta(days=1)
    lookups = [
        lambda: store.find_memory("p", normalized_hash="memory number 7", kinds=("note",)),
        lambda: store.find_memory(
            "p", normalized_hash="memory number 7", kinds=("note",), created_after=since
        ),
    ]
    for lookup in lookups:
        plans = _plans_of(store, lookup)
        assert plans and all("memories_hash" in plan for plan in plans), plans
    found = store.find_memory("p", normalized_hash="memory number 7", kinds=("note",))
    assert found is not None and found.content == "memory number 7"
    assert store.find_memory("p", normalized_hash="memory number 7", kinds=("turn",)) is None
    assert store.find_memory("p", normalized_hash="x", created_after=since) is None


def _forget_migration_4(db: Path) -> None:
    """Make ``db`` look like a database built before migration 4 existed (1-3 and 5)."""
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "DROP TRIGGER vector_changes_insert; DROP TRIGGER vector_changes_delete;"
            " DROP TRIGGER vector_changes_keys; DROP TABLE vector_changes;"
            " DROP INDEX memories_keys; DELETE FROM schema_version WHERE version = 4;"
        )
    conn.close()


def test_a_migration_numbered_below_the_newest_is_applied_later(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    SQLiteStore(db).close()
    _forget_migration_4(db)
    store = SQLiteStore(db)
    try:
        assert 4 in {r[0] for r in store._query("SELECT version FROM schema_version")}
        names = {r[0] for r in store._query("SELECT name FROM sqlite_master")}
        assert {"vector_changes", "memories_keys"} <= names
        mid = store.insert_memory(new("after the upgrade"))
        query = FtsQuery((Term("upgrade"),))
        assert [i for i, _ in store.fts_candidates(query, MemoryFilter(), 5)] == [mid]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"\x04", 4),
        (b"\x7f\xff", 127),
        (b"\x81\x00", 128),
        (bytes.fromhex("bd8440bd84"), 1_000_000),  # FTS5's averages record at 1M rows
        (b"\xff" * 8 + b"\x01", (1 << 64) - 255),
        (b"\x81", None),  # cut
    ],
)
def test_fts5_varints_are_read_as_sqlite_writes_them(data: bytes, value: int | None) -> None:
    assert _varint(data) == value


def test_empty_json_columns_read_back_as_fresh_values(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        common = {"project": "p", "kind": "note", "type": "note", "created_at": utcnow()}
        bare = store.insert_memory(NewMemory(content="bare", normalized_hash="a", **common))
        full = store.insert_memory(
            NewMemory(
                content="full",
                normalized_hash="b",
                files=("src/app.py",),
                tags=("db",),
                metadata={"chunk_index": 2},
                **common,
            )
        )
        first, second = store.get_memories([bare, bare])[0], store.get_memories([bare])[0]
        assert (first.files, first.tags, first.metadata) == ((), (), {})
        first.metadata["changed"] = True  # one reader's dict is not the next one's
        assert second.metadata == {}
        (read,) = store.get_memories([full])
        assert (read.files, read.tags, read.metadata) == (
            ("src/app.py",),
            ("db",),
            {"chunk_index": 2},
        )
    finally:
        store.close()


def test_a_batch_longer_than_one_statement_keeps_its_order_ids_and_full_text(
    tmp_path: Path,
) -> None:
    # Rows go ROWS_PER_STATEMENT to an INSERT … VALUES statement: ids come back in the
    # order given across the statements, each row under its own id and in the index,
    # and a lone surrogate in a later statement is stored as U+FFFD there alone.
    count = 2 * ROWS_PER_STATEMENT + 3
    texts = [f"row{i} batchword" for i in range(count)]
    texts[ROWS_PER_STATEMENT + 1] = "late \udfff surrogate"
    db = tmp_path / "long.db"
    store = SQLiteStore(db)
    with store.transaction():
        ids = store.insert_batch([new(t) for t in texts], beside=True).result()
    assert ids == list(range(ids[0], ids[0] + count))
    stored = {m.id: m.content for m in store.get_memories(ids)}
    expected = [t.replace("\udfff", "\ufffd") for t in texts]
    assert [stored[i] for i in ids] == expected
    assert fts_ids(db, "batchword") == set(ids) - {ids[ROWS_PER_STATEMENT + 1]}
    assert fts_ids(db, "surrogate") == {ids[ROWS_PER_STATEMENT + 1]}
    store.close()


def test_a_batch_fits_a_library_that_binds_few_parameters(tmp_path: Path) -> None:
    # A SQLite built with a low SQLITE_LIMIT_VARIABLE_NUMBER takes fewer rows a statement.
    store = SQLiteStore(tmp_path / "few.db")
    store.connection().setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 40)  # 2 rows of 16
    ids = store.insert_memories([new(f"few {i}") for i in range(5)])
    assert ids == list(range(ids[0], ids[0] + 5))
    assert [m.content for m in store.get_memories(ids)] == [f"few {i}" for i in range(5)]
    store.close()


def test_a_batch_stores_every_character_as_one_row_at_a_time_does(tmp_path: Path) -> None:
    # The batch's rows are bound as parameters of one statement: what is stored must
    # not depend on the way there (a JSON array before: orjson's spelling, a NUL).
    texts = [
        'quotes " and \\ backslashes \\n not a newline',
        "controls \x01\x08\x0c\x1f\x7f tab\tline\nreturn\r",
        "unicode é 日本語 😀 \u2028 \u2029 \ufeff \U0010ffff",
        "a NUL \x00 inside",
    ]
    store = SQLiteStore(tmp_path / "b.db")
    one = [store.insert_memory(new(text, title=text[:9])) for text in texts]
    many = store.insert_memories([new(text, title=text[:9]) for text in texts])
    got = {m.id: (m.title, m.content) for m in store.get_memories([*one, *many])}
    assert [got[i] for i in many] == [got[i] for i in one] == [(t[:9], t) for t in texts]
    # A lone surrogate, which UTF-8 cannot hold, is stored as U+FFFD in a batch as alone.
    alone = store.insert_memory(new("x \ud800"))
    batch = store.insert_memories([new("fine"), new("x \udfff")])
    stored = [m.content for m in store.get_memories([alone, *batch])]
    assert stored == ["x \ufffd", "fine", "x \ufffd"]
    store.close()
