"""SQLiteStore: the embedded default — one file, WAL, FTS5 kept in sync by triggers.

Writes run in ``BEGIN IMMEDIATE`` transactions so that concurrent hooks queue
on ``busy_timeout`` instead of failing mid-transaction. Times are stored as
epoch seconds (REAL); files, tags and metadata as JSON text.

Many rows are inserted by one multi-row ``INSERT … VALUES`` statement
(:meth:`SQLiteStore.insert_batch`): its one ``sqlite3_step`` writes the rows, their
indexes and FTS5 entries in C without the GIL, so inside a transaction it can run on a
thread of its own while the caller prepares the next rows; the connection then waits
for it before any other use (:attr:`SQLiteStore._conn`), and only the thread holding
the store's lock gets that far.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from memlane import feedback
from memlane.background import Job
from memlane.errors import StoreError
from memlane.models import (
    Memory,
    MemoryFilter,
    NewMemory,
    to_epoch,
    utcnow,
)
from memlane.paths import same_file
from memlane.store import common
from memlane.store.common import CommonQueries
from memlane.store.dialect import MEMORY_COLUMNS, SQLITE
from memlane.store.fields import UPDATABLE_FIELDS, check_fields
from memlane.store.injection_log import InjectionLogQueries
from memlane.store.migrations import refuse_newer
from memlane.store.migrations.sqlite import MIGRATIONS, SCHEMA_VERSION_TABLE
from memlane.store.query import AnyOf, FtsQuery, Grams, Phrase, Term
from memlane.store.sqlite_errors import (
    DiskFull,
    ReadOnlyDatabase,
    StoreBusy,
    is_read_only_file_system,
    no_space_left,
    storage_error,
)
from memlane.store.sqlite_file import prepare, recorded_migrations, uri_path, writes_pending
from memlane.text import index_terms
from memlane.utf8 import storable_params

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

BUSY_TIMEOUT_MS = 10_000
# A write lock taken within this is not worth mentioning; past it the wait is announced.
QUIET_WAIT_MS = 500
# How full-text candidates rank: BM25 with column weights title 3, content 1, files 2, tags 2,
# CJK bigrams 1 (the PostgreSQL store mirrors them, memlane.store.pg_text).
FTS_RANK = "bm25(memories_fts, 3.0, 1.0, 2.0, 2.0, 1.0)"
# FTS5's automerge during a bulk load and its default after; the merge that follows is
# bounded (pages written) so a huge import does not end with minutes of merging.
BULK_AUTOMERGE = 16
DEFAULT_AUTOMERGE = 4
BULK_MERGE_PAGES = 20_000
# Page cache during a bulk load (KiB, allocated only as pages are read): SQLite's default
# 2 MB no longer holds the hot pages of the seven memories indexes and the FTS5 segments
# once the table grows, and every page it drops is read again with a system call.
BULK_CACHE_KIB = 65_536
# WAL frames between automatic checkpoints during a bulk load (SQLite's default: 1000).
# Each checkpoint copies the hot index and FTS5 pages again; spaced out, a page
# rewritten by many batches is copied once: ~10% less CPU per imported row.
BULK_CHECKPOINT_PAGES = 10_000


def filter_sql(flt: MemoryFilter, alias: str = "m", *, seek: bool = True) -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword) and its parameters for a filter.

    ``seek=False``: the planner may not look rows up by the filter's columns (each is
    ``unindexed``); they are only tested on the row (or index entry) found by another key.
    """
    return common.filter_sql(SQLITE, flt, alias if seek else SQLITE.unindexed + alias)


def _quoted(text: str) -> str:
    # FTS5 reads a NUL as the end of the query; to its tokenizer it is a separator anyway.
    return '"' + text.replace('"', '""').replace("\x00", " ") + '"'


# FTS5 columns of the fields a clause may be restricted to, and of the CJK bigrams.
_FIELD_COLUMNS = {"title": "title", "files": "files"}
_CJK_COLUMN = "cjk_terms"


def _fts5_clause(clause: Term | Phrase | Grams | AnyOf) -> str:
    """One clause as an FTS5 expression (every word an FTS5 string, never syntax)."""
    if isinstance(clause, AnyOf):
        return "(" + " OR ".join(_fts5_clause(option) for option in clause.options) + ")"
    if isinstance(clause, Grams):
        return f"{_CJK_COLUMN} : " + _quoted(" ".join(clause.grams))
    if isinstance(clause, Phrase):
        expr = _quoted(" ".join(clause.words))
    elif clause.prefix:
        # The word itself as well as the words it begins: an exact match scores both.
        expr = f"({_quoted(clause.text)} OR {_quoted(clause.text)}*)"
    else:
        expr = _quoted(clause.text)
    return f"{_FIELD_COLUMNS[clause.field]} : {expr}" if clause.field else expr


def fts5_match(query: FtsQuery) -> str | None:
    """The FTS5 MATCH expression of ``query``; None when it has no clause.

    Every word is an FTS5 string (embedded quotes doubled), so no text can
    raise a syntax error; a string the tokenizer splits is matched as a phrase.
    """
    if query.empty:
        return None
    clauses = [_fts5_clause(clause) for clause in query.clauses]
    match = (" OR " if query.operator == "any" else " AND ").join(clauses)
    if query.required:
        required = [_fts5_clause(clause) for clause in query.required]
        if clauses:
            # Ranked, not selecting: "first required OR the others" adds them to bm25.
            required.append(f"({required[0]} OR {match})")
        match = " AND ".join(required)
    if query.excluded:
        excluded = " OR ".join(_fts5_clause(clause) for clause in query.excluded)
        match = f"({match}) NOT ({excluded})"
    return match


def _varint(data: bytes) -> int | None:
    """The SQLite varint at the start of ``data`` (FTS5's records use it); None if cut."""
    value = 0
    for i, byte in enumerate(data[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return None


class SQLiteStore(CommonQueries, InjectionLogQueries):
    """The Store protocol on one SQLite file (what it writes as PostgreSQL does:
    ``common.py``, ``injection_log.py``)."""

    backend = "sqlite"
    dialect = SQLITE
    # Search keeps a persisted vector table (search/vectors.py) fed by the change log below.
    keeps_vector_index = False
    ranks_by_bm25 = True

    def __init__(self, path: str | Path, *, create_dir: bool = False) -> None:
        """Open (or create) the database at ``path``; see :mod:`memlane.store.sqlite_file`.

        ``create_dir``: create a missing parent directory (the default location, or
        ``--create``); otherwise a missing directory is an error.
        """
        self.location = str(path)
        self._lock = threading.RLock()
        self._depth = 0
        self._beside: Job[list[int]] | None = None
        if self.location != ":memory:":
            prepare(Path(self.location), create_dir=create_dir)
        try:
            self._db = sqlite3.connect(
                self.location,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if self._conn.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file
                # 8 KB pages hold three 512-d float32 vectors per page instead of one
                # (a 2.1 KB row does not fit twice in 4 KB): fixed once WAL is on.
                self._conn.execute("PRAGMA page_size = 8192")
                # Pages freed incrementally from the start: switching a database
                # later takes a full VACUUM, which holds the write lock for seconds
                # (22 s at 167 MB: prompt hooks waiting on it lost their prompt).
                self._conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.Error as exc:
            if not self._open_read_only_medium():
                raise storage_error(self.location, exc) from exc

    def _open_read_only_medium(self) -> bool:
        """Open the database of a read-only or full file system for reading; False if not.

        WAL mode needs a writable ``-shm`` file, so such a database opens only as
        ``immutable`` — which would ignore a ``-wal`` file: with one, it is not opened.
        Writes then fail as ReadOnlyDatabase (or DiskFull).
        """
        path = Path(self.location)
        if self.location == ":memory:" or not (
            is_read_only_file_system(self.location) or no_space_left(self.location)
        ):
            return False
        if not path.is_file() or writes_pending(path):
            return False
        with contextlib.suppress(AttributeError, sqlite3.Error):
            self._conn.close()
        try:
            self._db = sqlite3.connect(
                f"file:{uri_path(path)}?mode=ro&immutable=1",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
            self._conn.row_factory = sqlite3.Row
            done = recorded_migrations(self._conn, self.location) or set()
        except sqlite3.Error:
            return False
        # By number, not the newest: branches' migrations may land out of order.
        missing = sorted(number for number, _name, _sql in MIGRATIONS if number not in done)
        if missing:
            raise ReadOnlyDatabase(
                f"the database {self.location} needs an upgrade (migration"
                f" {', '.join(map(str, missing))} not applied) but its file system is"
                " read-only; copy it somewhere writable"
            )
        return True

    # -- plumbing -------------------------------------------------------------

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection, once the statement :meth:`insert_batch` runs beside has ended
        (its error raised here): this thread never uses it while that one does."""
        if self._beside is not None:
            job, self._beside = self._beside, None
            job.result()
        return self._db

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._write_transaction(wait=True):
            yield

    @contextmanager
    def _write_transaction(self, *, wait: bool) -> Iterator[None]:
        """A write transaction (nested ones join it); ``wait=False``: StoreBusy at once
        when another process holds the write lock past QUIET_WAIT_MS."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin(wait=wait)
            self._depth = 1
            try:
                yield
                self._depth = 0
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._depth = 0
                if self._beside is not None:  # its error, if any, is not this one's cause
                    job, self._beside = self._beside, None
                    job.wait()
                if self._conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(self.location, exc) from exc
                raise

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        # FTS5 merges its index segments as it goes (automerge 4): raising it while
        # thousands of rows arrive, then merging once, costs ~10% less per row (FTS5 is
        # ~80% of an insert); queries stay correct, only read more segments meanwhile.
        fts = "INSERT INTO memories_fts(memories_fts, rank) VALUES"
        self._fts_config(f"{fts} ('automerge', {BULK_AUTOMERGE})")
        with self._lock:
            cache = int(self._conn.execute("PRAGMA cache_size").fetchone()[0])
            pages = int(self._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
            self._conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
            if pages > 0:  # 0: the user checkpoints by hand
                self._conn.execute(
                    f"PRAGMA wal_autocheckpoint = {max(pages, BULK_CHECKPOINT_PAGES)}"
                )
        try:
            yield
        finally:
            with self._lock:
                self._conn.execute(f"PRAGMA cache_size = {cache}")
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {pages}")
            self._fts_config(f"{fts} ('automerge', {DEFAULT_AUTOMERGE})")
            self._fts_config(f"{fts} ('merge', -{BULK_MERGE_PAGES})")

    def _fts_config(self, sql: str) -> None:
        """One FTS5 special command, in its own transaction; skipped when the lock is busy."""
        try:
            with self._write_transaction(wait=False):
                self._conn.execute(sql)
        except StoreBusy:
            return  # another writer: its own merges keep the index in shape

    def _begin(self, *, wait: bool) -> None:
        """Take the write lock; a wait past a moment is announced (memlane.feedback)."""
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {QUIET_WAIT_MS}")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or not wait:
                    raise
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            seconds = (BUSY_TIMEOUT_MS - QUIET_WAIT_MS) / 1000
            with feedback.waiting(
                f"the database is busy (another memlane process is writing);"
                f" waiting up to {seconds:.0f} s"
            ):
                self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS - QUIET_WAIT_MS}")
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except sqlite3.Error as exc:
            raise storage_error(self.location, exc) from exc

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._bound(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                raise storage_error(self.location, exc) from exc

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self._lock:
            if self._depth:  # inside a transaction (a batch): join it without ceremony
                return self._bound(sql, params)
        with self.transaction():
            return self._bound(sql, params)

    def _bound(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        return _bound(self._conn, sql, params)

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write statement; returns the row count."""
        return int(self._write(sql, params).rowcount)

    @contextmanager
    def _atomic(self) -> Iterator[sqlite3.Connection]:
        """Several statements as one unit (a write transaction) on the connection."""
        with self.transaction():
            yield self._conn

    def _migrate(self) -> None:
        """Apply pending migrations; an up-to-date database is only read (no write lock).

        So opening never waits for a writer: ``stats`` answers during an import.
        """
        if not self._pending_migrations():
            return
        with self.transaction():
            self._conn.execute(SCHEMA_VERSION_TABLE)
            done = recorded_migrations(self._conn, self.location) or set()
            for version, name, sql in MIGRATIONS:
                if version in done:
                    continue
                for statement in _split_sql(sql):
                    self._conn.execute(statement)
                self._conn.execute(
                    "INSERT INTO schema_version(version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, to_epoch(utcnow())),
                )

    def _pending_migrations(self) -> bool:
        done = recorded_migrations(self._conn, self.location)
        if done is not None:
            refuse_newer(done, (version for version, _name, _sql in MIGRATIONS), self.location)
        return done is None or any(version not in done for version, _name, _sql in MIGRATIONS)

    # -- memories -------------------------------------------------------------

    def insert_memory(self, new: NewMemory) -> int:
        cursor = self._write(_INSERT_MEMORY, _memory_params(new, to_epoch(utcnow())))
        assert cursor.lastrowid is not None
        return int(cursor.lastrowid)

    def insert_memories(self, news: Sequence[NewMemory]) -> list[int]:
        """Insert ``news`` in this order, in one statement; their ids."""
        return self.insert_batch(news).result()

    def insert_batch(self, news: Sequence[NewMemory], *, beside: bool = False) -> Job[list[int]]:
        """Insert ``news`` in this order with one statement (rows, indexes and FTS5 all
        in one ``sqlite3_step``, without the GIL); the job gives their ids.

        ``beside``: inside a transaction, the statement runs on a thread of its own
        while the caller goes on in Python; any other use of the connection waits
        for it first (and raises its error), the transaction's end included.
        """
        if not news:
            return Job(list, beside=False)
        now = to_epoch(utcnow())
        rows = [_memory_params(new, now) for new in news]
        with self._lock:
            db = self._conn  # after the statement still running beside, if any
            if beside and self._depth:
                self._beside = Job(lambda: _insert_rows(db, rows), beside=True)
                return self._beside
        with self.transaction():
            return Job(lambda: _insert_rows(db, rows), beside=False)

    def update_memory(self, memory_id: int, changes: dict[str, Any]) -> None:
        check_fields(changes, UPDATABLE_FIELDS)
        if not changes:
            return
        with self.transaction():
            values = dict(changes)
            if "title" in values or "content" in values:
                row = self._conn.execute(
                    "SELECT title, content FROM memories WHERE id = ?", (memory_id,)
                ).fetchone()
                if row is None:
                    return
                title = values.get("title", row["title"])
                content = values.get("content", row["content"])
                values["cjk_terms"] = index_terms(f"{title}\n{content}")
            assignments = ", ".join(f"{name} = ?" for name in values)
            params = [SQLITE.value(name, value) for name, value in values.items()]
            self._conn.execute(
                f"UPDATE memories SET {assignments} WHERE id = ?", [*params, memory_id]
            )

    def record_access(self, ids: Sequence[int], at: datetime) -> None:
        if not ids:
            return
        try:
            with self._write_transaction(wait=False):
                self._conn.execute(
                    "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?"
                    f" WHERE id IN ({','.join('?' * len(ids))})",
                    [to_epoch(at), *ids],
                )
        except StoreBusy:
            return  # a writer holds the lock (an import): this read goes uncounted
        except (ReadOnlyDatabase, DiskFull):
            return  # a read-only or full database still answers searches, uncounted

    # -- candidates -----------------------------------------------------------

    def fts_candidates(
        self, query: FtsQuery, flt: MemoryFilter, limit: int, *, scan: int | None = None
    ) -> list[tuple[int, float]]:
        match = fts5_match(query)
        if match is None:
            return []
        # The filter reads its columns from the memories_keys index (a few dozen
        # bytes per row) instead of each matching memory's row with its content:
        # measured at 100k rows, 2x less CPU for a common word. One seek per match,
        # by id: seeking by (id, project, kind) too would seek once per kind the
        # filter lists (recall lists 5: 1.9 -> 1.4 ms of CPU at 50k memories).
        where, params = filter_sql(flt, seek=False)
        select = (
            f"SELECT m.id, {FTS_RANK} AS rank"
            " FROM memories_fts JOIN memories m INDEXED BY memories_keys"
            " ON m.id = memories_fts.rowid"
            f" WHERE memories_fts MATCH ? AND {where}"
        )
        if scan is None:
            rows = self._query(f"{select} ORDER BY rank LIMIT ?", [match, *params, limit])
        else:
            # FTS5 walks doclists in rowid order and stops after `scan` rows the
            # filter allows, so bm25 is computed for at most `scan` matches (the
            # newest ones of the filter: a small project's older matches count).
            rows = self._query(
                f"SELECT id, rank FROM ({select} ORDER BY memories_fts.rowid DESC LIMIT ?)"
                " ORDER BY rank LIMIT ?",
                [match, *params, scan, limit],
            )
        return [(int(row[0]), -float(row[1])) for row in rows]

    def _newest_matches(self, query: FtsQuery) -> tuple[int, int] | None:
        match = fts5_match(query)
        if match is None:
            return None
        # FTS5 walks the word's matches newest first and stops after the bound.
        counted, oldest = self._query(
            "SELECT count(*), min(rowid) FROM (SELECT rowid FROM memories_fts"
            " WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?)",
            [match, common.MATCH_COUNT_SCAN],
        )[0]
        return int(counted), int(oldest or 0)

    def _match_total(self) -> int:
        """Rows in the full-text index, from FTS5's averages record (one row read).

        Counting ``memories`` walks a whole index (~10 ms at 1M rows); FTS5 keeps
        the total it ranks with as the first varint of the record with id 1.
        """
        rows = self._query("SELECT block FROM memories_fts_data WHERE id = 1")
        if rows and isinstance(rows[0][0], bytes):
            total = _varint(rows[0][0])
            if total is not None:
                return total
        return int(self._query("SELECT count(*) FROM memories")[0][0])

    def vector_candidates(
        self, model: str, query: Sequence[float], flt: MemoryFilter, limit: int
    ) -> list[tuple[int, float]]:
        import numpy as np

        where, params = filter_sql(flt)
        # Rows of the query's size only, and no NaN score: a crafted import or an older
        # memlane may have stored a vector of another size or a NaN under the model.
        rows = self._query(
            "SELECT e.memory_id, e.vector FROM embeddings e JOIN memories m ON m.id = e.memory_id"
            f" WHERE e.model = ? AND length(e.vector) = ? AND {where}",
            [model, 4 * len(query), *params],
        )
        if not rows:
            return []
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), -1)
        q = np.asarray(query, dtype=np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            scores = matrix @ q
        finite = np.isfinite(scores)
        if not finite.all():
            ids, scores = ids[finite], scores[finite]
        k = min(limit, len(ids))
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(ids[i]), float(scores[i])) for i in top]

    # -- embeddings -----------------------------------------------------------

    def put_embeddings(self, model: str, dim: int, items: Sequence[tuple[int, bytes]]) -> None:
        now = to_epoch(utcnow())
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO embeddings (memory_id, model, dim, vector, created_at)"
                " SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?)",
                [(mid, model, dim, vec, now, mid) for mid, vec in items],
            )

    def iter_embeddings(
        self, model: str, *, after_id: int = 0, batch: int = 10_000
    ) -> Iterator[list[tuple[int, bytes]]]:
        last = after_id
        while True:
            rows = self._query(
                "SELECT memory_id, vector FROM embeddings WHERE model = ? AND memory_id > ?"
                " ORDER BY memory_id LIMIT ?",
                (model, last, batch),
            )
            if not rows:
                return
            yield [(int(row[0]), bytes(row[1])) for row in rows]
            last = int(rows[-1][0])

    def memory_keys(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, float]]:
        found: list[tuple[int, str, str, str, float]] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            rows = self._query(
                "SELECT id, project, kind, type, created_at FROM memories"
                f" WHERE id IN ({','.join('?' * len(part))})",
                part,
            )
            found.extend((int(r[0]), r[1], r[2], r[3], float(r[4])) for r in rows)
        return found

    def project_names(self) -> list[str]:
        # A skip-scan over the (project, created_at) index: one seek per project.
        rows = self._query(
            "WITH RECURSIVE p(name) AS ("
            " SELECT min(project) FROM memories"
            " UNION ALL SELECT (SELECT min(project) FROM memories WHERE project > p.name)"
            " FROM p WHERE p.name IS NOT NULL)"
            " SELECT name FROM p WHERE name IS NOT NULL"
        )
        return [str(row[0]) for row in rows]

    def delete_embeddings(self, model: str | None = None) -> int:
        if model is None:
            return self._write("DELETE FROM embeddings").rowcount
        return self._write("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount

    # -- vector change log (store/base.py VectorLog) ---------------------------

    def vector_change_mark(self) -> int:
        rows = self._query("SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'")
        return int(rows[0][0]) if rows else 0

    def vector_changes(self, model: str, after: int, upto: int) -> list[int] | None:
        first = self._query("SELECT min(seq) FROM vector_changes")[0][0]
        if after < upto and (first is None or int(first) > after + 1):
            return None  # pruned past ``after``: the caller must reload
        rows = self._query(
            "SELECT DISTINCT memory_id FROM vector_changes"
            " WHERE seq > ? AND seq <= ? AND model = ?",
            (after, upto, model),
        )
        return [int(row[0]) for row in rows]

    def embeddings_of(self, model: str, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            rows = self._query(
                "SELECT memory_id, vector FROM embeddings WHERE model = ?"
                f" AND memory_id IN ({','.join('?' * len(part))})",
                [model, *part],
            )
            found.extend((int(row[0]), bytes(row[1])) for row in rows)
        return found

    def prune_vector_changes(self, upto: int) -> int:
        return self._write("DELETE FROM vector_changes WHERE seq <= ?", (upto,)).rowcount

    def identity(self) -> str:
        rows = self._query("SELECT applied_at FROM schema_version ORDER BY version LIMIT 1")
        return f"sqlite:{rows[0][0]!r}" if rows else "sqlite:new"

    # -- sessions -------------------------------------------------------------

    def first_memories(self, session_ids: Sequence[str], kind: str) -> dict[str, Memory]:
        found: dict[str, Memory] = {}
        unique = list(dict.fromkeys(session_ids))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            # One row per session: the one of the smallest (created_at, id), on memories_session.
            rows = self._query(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ("
                " SELECT (SELECT f.id FROM memories f WHERE f.session_id = s.value"
                " AND f.kind = ? ORDER BY f.created_at, f.id LIMIT 1)"
                f" FROM json_each(?) s)",
                [kind, json.dumps(part)],
            )
            found.update((row["session_id"], SQLITE.memory(row)) for row in rows)
        return found

    # -- bookkeeping ----------------------------------------------------------

    def mark_seen(self, namespace: str, keys: Sequence[str]) -> None:
        with self.transaction():
            self._conn.executemany(
                "INSERT OR IGNORE INTO seen_keys (namespace, key) VALUES (?, ?)",
                [(namespace, key) for key in keys],
            )

    def log_maintenance(self, kind: str, started_at: datetime, details: dict[str, Any]) -> None:
        self._write(
            "INSERT INTO maintenance_log (kind, started_at, finished_at, details)"
            " VALUES (?, ?, ?, ?)",
            (kind, to_epoch(started_at), to_epoch(utcnow()), json.dumps(details, default=str)),
        )

    # -- the database file ------------------------------------------------------

    def _database_bytes(self) -> int:
        """Bytes of the database file and its WAL (0 in memory)."""
        if self.location == ":memory:":
            return 0
        total = 0
        for suffix in ("", "-wal"):
            path = Path(self.location + suffix)
            if path.exists():
                total += path.stat().st_size
        return total

    def same_database(self, path: str | Path) -> bool:
        return self.location != ":memory:" and same_file(self.location, path)

    def storage_bytes(self) -> tuple[int, int]:
        on_disk = self._database_bytes()
        if self.location == ":memory:":
            return on_disk, on_disk
        page_size, pages, free = (
            int(self._query(f"PRAGMA {name}")[0][0])
            for name in ("page_size", "page_count", "freelist_count")
        )
        return (pages - free) * page_size, on_disk

    def _reindex_rows(self, conn: sqlite3.Connection, first: int, last: int) -> None:
        rows = conn.execute(
            "SELECT id, title, content, cjk_terms FROM memories WHERE id BETWEEN ? AND ?",
            (first, last),
        ).fetchall()
        changed = [
            (terms, mid)
            for mid, title, content, old in rows
            if (terms := index_terms(f"{title}\n{content}")) != old
        ]
        conn.executemany("UPDATE memories SET cjk_terms = ? WHERE id = ?", changed)

    def reclaim_space(self, *, full: bool = False) -> bool:
        """Optimize the FTS index, vacuum, truncate the WAL; True when it ran.

        The first run switches the file to ``auto_vacuum=INCREMENTAL`` with one full
        VACUUM; later runs vacuum incrementally; ``full`` also packs half-empty pages.
        """
        if self.location == ":memory:":
            return False
        try:
            self.execute_script("INSERT INTO memories_fts(memories_fts) VALUES ('optimize');")
            mode = int(self._query("PRAGMA auto_vacuum")[0][0])
            if mode != 2 or full:  # 2 = INCREMENTAL; switching needs one full VACUUM
                self.execute_script("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            else:
                self.execute_script("PRAGMA incremental_vacuum;")
            self.execute_script("PRAGMA wal_checkpoint(TRUNCATE);")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot reclaim space in {self.location}: {exc}") from exc
        return True

    def backup_to(self, dest: Path, scratch: Path) -> int:
        from memlane.store.sqlite_backup import copy_into_new_file

        try:
            with self._lock:
                return copy_into_new_file(self._conn, dest, scratch)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"backup to {dest} failed: {exc}") from exc

    def execute_script(self, sql: str) -> None:
        """Run maintenance SQL outside a transaction (VACUUM, optimize)."""
        with self._lock:
            self._conn.executescript(sql)

    def fts_integrity_ok(self) -> bool:
        try:
            self._query(
                "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)"
            )
        except StoreError:
            return False
        return True

    def connection(self) -> sqlite3.Connection:
        """The raw connection (tests check its PRAGMAs)."""
        return self._conn

    def commit_marker(self) -> tuple[int, int]:
        """(``PRAGMA data_version``, rows this connection changed): the first moves when
        another connection commits, the second when this one writes."""
        with self._lock:
            conn = self._conn
            (version,) = conn.execute("PRAGMA data_version").fetchone()
            return int(version), conn.total_changes


_NEW_COLUMNS = (
    "project, session_id, kind, type, title, content, files, tags, cjk_terms, topic_key,"
    " source, source_id, normalized_hash, created_at, updated_at, metadata"
)
_INSERT_MEMORY = (
    f"INSERT INTO memories ({_NEW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Rows one INSERT statement takes at most (fewer if the library allows fewer than their
# 16 parameters each: SQLITE_LIMIT_VARIABLE_NUMBER, 32,766 by default); each size is
# compiled once per connection.
ROWS_PER_STATEMENT = 1024
_ROW_PLACES = "(" + ", ".join("?" * 16) + ")"


def _memory_params(new: NewMemory, now: float) -> tuple[Any, ...]:
    """The parameters of :data:`_INSERT_MEMORY` for ``new``, inserted at ``now``."""
    created = to_epoch(new.created_at)
    return (
        new.project,
        new.session_id,
        new.kind,
        new.type,
        new.title,
        new.content,
        SQLITE.value("files", new.files),
        SQLITE.value("tags", new.tags),
        index_terms(f"{new.title}\n{new.content}"),
        new.topic_key,
        new.source,
        new.source_id,
        new.normalized_hash,
        created,
        max(now, created),
        SQLITE.value("metadata", new.metadata),
    )


def _insert_statement(count: int) -> str:
    """The ``INSERT … VALUES`` of ``count`` rows of :func:`_memory_params`."""
    return f"INSERT INTO memories ({_NEW_COLUMNS}) VALUES " + ", ".join([_ROW_PLACES] * count)


def _bound(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
    """``sql`` run on ``db`` with ``params``; a string UTF-8 cannot hold (a lone surrogate)
    is bound as U+FFFD in its place (:func:`memlane.utf8.storable`)."""
    try:
        return db.execute(sql, params)
    except UnicodeEncodeError:
        return db.execute(sql, storable_params(params))


def _insert_rows(db: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> list[int]:
    """Insert ``rows`` (:func:`_memory_params`) in this order, by multi-row ``VALUES``
    statements of up to :data:`ROWS_PER_STATEMENT`; their ids, in order.

    Bound values are read as they are: no text to build or parse, unlike a JSON array
    read by ``json_each`` (whose ``value ->> i`` was two thirds of an insert without
    FTS5), and a NUL inside a text is stored whole. A string UTF-8 cannot hold (a lone
    surrogate) is bound as U+FFFD, as :meth:`SQLiteStore._bound` binds it.
    ``memories.id`` is AUTOINCREMENT: each new id exceeds every id before it, so one
    statement's rows hold consecutive ids ending at the last one inserted.
    """
    ids: list[int] = []
    size = max(1, min(ROWS_PER_STATEMENT, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // 16))
    for start in range(0, len(rows), size):
        part = rows[start : start + size]
        params = [value for row in part for value in row]
        sql = _insert_statement(len(part))
        cursor = _bound(db, sql, params)
        last, count = cursor.lastrowid, len(part)
        if cursor.rowcount != count or last is None:
            raise StoreError(f"a batch insert stored {cursor.rowcount} of {count} rows")
        ids.extend(range(last - count + 1, last + 1))
    return ids


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buffer: list[str] = []
    for line in script.splitlines():
        buffer.append(line)
        candidate = "\n".join(buffer).strip()
        if candidate.endswith(";") and sqlite3.complete_statement(candidate):
            statements.append(candidate)
            buffer = []
    rest = "\n".join(buffer).strip()
    if rest:
        statements.append(rest)
    return statements
