"""PostgresStore: the Store protocol on PostgreSQL + pgvector, for a team's shared memory.

Same concepts and semantics as ``SQLiteStore`` (the contract suite in
``tests/store_contract.py`` runs on both); what differs is how:

* **Connections**: a ``psycopg_pool.ConnectionPool`` of autocommit connections.
  A single statement runs on any pooled connection. ``transaction()`` holds one
  connection per thread for the outer block (nested calls join it, as in
  SQLite) and takes a transaction-scoped advisory lock first: writers queue
  like SQLite's ``BEGIN IMMEDIATE``, so the facade's check-then-insert (dedup,
  topic upserts) stays race-free across processes and machines. Prepared
  statements are off (``prepare_threshold=None``): every plan sees the real
  parameter values (partial vector indexes need that) and the store works
  behind PgBouncer in transaction mode.
* **Full text**: a ``tsvector`` column computed in Python (``store/pg_text.py``:
  FTS5-identical tokens, CJK bigrams, weights per field) with a GIN index; an
  :class:`~memlane.store.query.FtsQuery` is rendered as a ``tsquery`` and
  ranked with ``ts_rank_cd``.
* **Vectors**: pgvector, one ``embeddings`` table keyed (memory_id, model) with an
  untyped ``vector`` column, and one partial HNSW expression index per
  (model, dim) created on first use (see ``migrations/postgres.py``). Vectors
  travel in pgvector's binary format. ``vector_candidates`` scans exactly when
  the filter leaves few rows (HNSW would starve) and uses HNSW with
  ``iterative_scan`` otherwise.
* Times are ``timestamptz``; files, tags and metadata ``jsonb``. PostgreSQL text
  cannot hold NUL characters: they are stored as U+FFFD.
"""

from __future__ import annotations

import hashlib
import logging
import math
import struct
import sys
import threading
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane.background import Job
from memlane.errors import InvalidInput, MissingDependency, RecordRefused, StoreError
from memlane.models import Memory, MemoryFilter, NewMemory, Session, utcnow
from memlane.store import common
from memlane.store.common import CommonQueries
from memlane.store.dialect import (
    JSON_FIELDS,
    MEMORY_COLUMNS,
    POSTGRES,
    SESSION_COLUMNS,
    as_json,
    clean,
)
from memlane.store.fields import UPDATABLE_FIELDS, check_fields
from memlane.store.injection_log import InjectionLogQueries
from memlane.store.migrations import refuse_newer
from memlane.store.migrations.postgres import MIGRATIONS
from memlane.store.pg_text import RANK_WEIGHTS, search_vector, to_tsquery
from memlane.store.query import FtsQuery
from memlane.store.vector_walk import WIDE_WALK_ROWS, walk_width
from memlane.text import identifier_parts
from memlane.utf8 import storable_params

try:
    import psycopg
    from psycopg import sql
    from psycopg.adapt import Buffer, Dumper, Loader
    from psycopg.pq import Format
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependency.for_extra("psycopg (PostgreSQL support)", "postgres") from exc

log = logging.getLogger(__name__)

# Advisory lock keys (any two fixed bigints; they only need to be distinct from each other).
WRITE_LOCK = 0x6D656D6C616E6501  # "memlane" + 1: the writers' queue
MIGRATE_LOCK = 0x6D656D6C616E6502
# Filters that leave fewer candidate rows than this are scanned exactly.
EXACT_SCAN_MAX = 20_000
# HNSW candidates kept per walk (``hnsw.ef_search``): the hits asked for, at least 40
# (pgvector's default), at most this; twice as many on a large table (store.vector_walk).
MAX_WALK = 1000

HNSW_MAX_DIM = 2000
# From this many rows (the planner's estimate) match_counts takes the estimate as the total:
# counting a larger table on every keyword search costs milliseconds.
EXACT_COUNT_ROWS = 10_000
CONNECT_TIMEOUT_S = 10
_CHUNK = 10_000


_SEARCH_FIELDS = frozenset({"title", "content", "files", "tags"})


# -- values -------------------------------------------------------------------


def filter_sql(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword) and its parameters for a filter."""
    return common.filter_sql(POSTGRES, flt, alias)


def redact(dsn: str) -> str:
    """The DSN without its password, fit for logs and `memlane status`."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        from memlane.config import display_target

        return display_target(dsn)
    user = str(parts.get("user") or "")
    # An unescaped "@" in the password puts the rest of it into the host.
    host = str(parts.get("host") or "localhost").rpartition("@")[2]
    port = parts.get("port")
    where = f"{host}:{port}" if port else host
    return f"postgresql://{user + '@' if user else ''}{where}/{parts.get('dbname') or ''}"


def scrub(message: str, dsn: str) -> str:
    """psycopg's error ``message`` about ``dsn`` without the DSN or its password.

    libpq quotes a URL it cannot parse whole, and a bad percent escape by its token,
    which may be the password itself. Every candidate for the password is removed: the
    text after the user name up to the first or the last ``@`` (an unescaped ``@``
    splits it), each piece of that between ``@``, ``password=`` values of the query,
    and their percent-decoded forms.
    """
    from urllib.parse import unquote

    rest = dsn.partition("://")[2]
    found = {dsn}
    for userinfo in (rest.partition("@")[0] if "@" in rest else "", rest.rpartition("@")[0]):
        password = userinfo.partition(":")[2]
        found.update((password, *password.split("@")))
    for pair in rest.partition("?")[2].split("&"):
        key, _, value = pair.partition("=")
        if key.strip().lower() == "password":
            found.add(value)
    found |= {unquote(text) for text in found}
    for text in sorted(found - {""}, key=len, reverse=True):
        message = message.replace(text, "***")
    return message


# -- pgvector binary format -----------------------------------------------------


class _Vector(bytes):
    """A float32 little-endian vector blob, sent in pgvector's binary format."""


def _to_wire(blob: bytes) -> bytes:
    values = array("f")
    values.frombytes(blob)
    if sys.byteorder == "little":
        values.byteswap()
    return struct.pack(">HH", len(values), 0) + values.tobytes()


def _from_wire(data: Buffer) -> bytes:
    raw = bytes(data)
    (dim,) = struct.unpack_from(">H", raw)
    values = array("f")
    values.frombytes(raw[4 : 4 + 4 * dim])
    if sys.byteorder == "little":
        values.byteswap()
    return values.tobytes()


class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        return _to_wire(obj)


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return _from_wire(data)


def _as_blob(query: Sequence[float]) -> _Vector:
    return _Vector(array("f", [float(x) for x in query]).tobytes())


def _index_name(model: str, dim: int) -> str:
    digest = hashlib.sha1(f"{model}\0{dim}".encode(), usedforsecurity=False).hexdigest()
    return f"embeddings_hnsw_{digest[:16]}"


# -- the store ------------------------------------------------------------------


class PostgresStore(CommonQueries, InjectionLogQueries):
    """The Store protocol on a PostgreSQL database with the pgvector extension (what it
    writes as SQLite does: ``common.py``, ``injection_log.py``)."""

    backend = "postgresql"
    dialect = POSTGRES
    # pgvector's HNSW indexes answer vector_candidates; search keeps no copy in memory.
    keeps_vector_index = True
    ranks_by_bm25 = False  # ts_rank_cd: no idf, no length normalisation

    def __init__(self, dsn: str, *, pool_size: int = 8) -> None:
        self._dsn = dsn
        self.location = redact(dsn)
        self._local = threading.local()
        self._indexed: set[tuple[str, int]] = set()
        self._deferred: set[tuple[str, int]] | None = None
        # maintenance_work_mem for HNSW builds (a 1M x 512 graph needs about 2.5 GB).
        self.index_build_memory = "1GB"
        self._vector_oid = self._migrate()
        dumper = type("VectorDumper", (_VectorDumper,), {"oid": self._vector_oid})
        self._dumper: type[Dumper] = dumper
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(1, pool_size),
            open=False,
            configure=self._configure,
            # A connection is checked when taken from the pool (one empty query): after a
            # server restart the store reconnects instead of failing the next call.
            check=ConnectionPool.check_connection,
            kwargs={"autocommit": True, "prepare_threshold": None},
            name="memlane",
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreError(
                f"cannot connect to {self.location} within {CONNECT_TIMEOUT_S} s"
                " (is the server up and the DSN right?)"
            ) from exc

    # -- plumbing -------------------------------------------------------------

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SET TIME ZONE 'UTC'")
        conn.adapters.register_dumper(_Vector, self._dumper)
        conn.adapters.register_loader(self._vector_oid, _VectorLoader)

    def _migrate(self) -> int:
        """Apply pending migrations under an advisory lock; return the oid of ``vector``."""
        try:
            psycopg.conninfo.conninfo_to_dict(self._dsn)
        except psycopg.ProgrammingError as exc:  # libpq cannot parse it
            text, cause = self._driver_text(exc)
            raise StoreError(
                f"invalid PostgreSQL URL {self.location} ({text}): check it (a password's"
                " special characters are written %XX: %40 for @, %2F for /, %25 for %)"
            ) from cause
        try:
            with psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            ) as conn:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY,"
                        " name text NOT NULL, applied_at timestamptz NOT NULL)"
                    )
                    done = {row[0] for row in conn.execute("SELECT version FROM schema_version")}
                    refuse_newer(done, (number for number, _n, _s in MIGRATIONS), self.location)
                    for version, name, statements in MIGRATIONS:
                        if version in done:
                            continue
                        for statement in statements:
                            conn.execute(statement.encode())
                        conn.execute(
                            "INSERT INTO schema_version (version, name, applied_at)"
                            " VALUES (%s, %s, now())",
                            (version, name),
                        )
                row = conn.execute("SELECT 'vector'::regtype::oid").fetchone()
        except psycopg.errors.InsufficientPrivilege as exc:
            text, cause = self._driver_text(exc)
            raise StoreError(
                f"cannot set up {self.location}: {text} (the pgvector extension must be"
                " installed by a superuser: CREATE EXTENSION vector)"
            ) from cause
        except psycopg.Error as exc:
            text, cause = self._driver_text(exc)
            raise StoreError(f"cannot open the database {self.location} ({text})") from cause
        assert row is not None
        return int(row[0])

    def _driver_text(self, exc: psycopg.Error) -> tuple[str, psycopg.Error | None]:
        """psycopg's message about connecting, scrubbed of the DSN and its password
        (:func:`scrub`), and the cause to chain: ``exc``, or None when its message quoted
        them (a traceback in a log would repeat it)."""
        text = str(exc).strip()
        shown = scrub(text, self._dsn)
        return shown, (exc if shown == text else None)

    def commit_marker(self) -> None:
        """None: the server does not say cheaply whether anything was committed (the
        idle embedding check counts on the server instead)."""

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The thread's transaction connection, or a pooled one for one unit of work."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        try:
            with self._pool.connection(timeout=60) as conn:
                yield conn
        except PoolTimeout as exc:
            raise StoreError(f"no free connection to {self.location} (pool exhausted)") from exc

    @contextmanager
    def _atomic(self) -> Iterator[psycopg.Connection[Any]]:
        """Several statements as one unit: joins the outer transaction or opens a plain one."""
        with self._connection() as conn:
            if getattr(self._local, "conn", None) is conn:
                yield conn
            else:
                with _errors(), conn.transaction():
                    yield conn

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        yield  # PostgreSQL maintains its indexes itself (autovacuum, GIN pending list)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction; nested calls join the outer one. Writers queue on a lock."""
        if getattr(self._local, "conn", None) is not None:
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with self._connection() as conn:
            self._local.conn = conn
            self._local.depth = 1
            try:
                with conn.transaction():
                    with _errors():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    yield
            except psycopg.Error as exc:
                raise _store_error(exc) from exc
            finally:
                self._local.conn = None
                self._local.depth = 0

    def _query(self, query: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as conn, _errors():
            return _bound(conn, query, params).fetchall()

    def _execute(self, query: Any, params: Sequence[Any] = ()) -> int:
        """Run one write statement; returns the row count."""
        with self._connection() as conn, _errors():
            return _bound(conn, query, params).rowcount

    # -- memories -------------------------------------------------------------

    def insert_memory(self, new: NewMemory) -> int:
        now = utcnow()
        created = POSTGRES.time(new.created_at)
        row = self._query(
            f"INSERT INTO memories ({_NEW_COLUMNS}) VALUES ({_NEW_VALUES}) RETURNING id",
            _memory_params(new, created, max(now, created)),
        )
        return int(row[0][0])

    def insert_batch(self, news: Sequence[NewMemory], *, beside: bool = False) -> Job[list[int]]:
        return Job(lambda: self.insert_memories(news), beside=False)  # one round trip already

    def insert_memories(self, news: Sequence[NewMemory]) -> list[int]:
        """Insert many memories in one round trip (bulk import, benchmarks); ids in order."""
        if not news:
            return []
        now = utcnow()
        rows = [
            _memory_params(n, POSTGRES.time(n.created_at), max(now, POSTGRES.time(n.created_at)))
            for n in news
        ]
        with self._atomic() as conn, _errors(), conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO memories ({_NEW_COLUMNS}) VALUES ({_NEW_VALUES}) RETURNING id",
                rows,
                returning=True,
            )
            ids: list[int] = []
            while True:
                fetched = cur.fetchone()
                if fetched is not None:
                    ids.append(int(fetched[0]))
                if not cur.nextset():
                    break
            return ids

    def update_memory(self, memory_id: int, changes: dict[str, Any]) -> None:
        check_fields(changes, UPDATABLE_FIELDS)
        if not changes:
            return
        with self._atomic() as conn, _errors():
            values = {name: POSTGRES.value(name, value) for name, value in changes.items()}
            assignments: list[sql.Composable] = [
                sql.SQL("{} = %s::jsonb" if name in JSON_FIELDS else "{} = %s").format(
                    sql.Identifier(name)
                )
                for name in values
            ]
            params = list(values.values())
            if _SEARCH_FIELDS & set(changes):
                row = conn.execute(
                    "SELECT title, content, files, tags FROM memories WHERE id = %s FOR UPDATE",
                    (memory_id,),
                ).fetchone()
                if row is None:
                    return
                title = changes.get("title", row[0])
                content = changes.get("content", row[1])
                files = changes.get("files", row[2])
                tags = changes.get("tags", row[3])
                assignments.append(sql.SQL("search = %s::tsvector"))
                params.append(search_vector(title, content, files or (), tags or ()))
            conn.execute(
                sql.SQL("UPDATE memories SET {} WHERE id = %s").format(
                    sql.SQL(", ").join(assignments)
                ),
                [*params, memory_id],
            )

    def record_access(self, ids: Sequence[int], at: datetime) -> None:
        if not ids:
            return
        self._execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s"
            " WHERE id = ANY(%s::bigint[])",
            (POSTGRES.time(at), list(ids)),
        )

    # -- candidates -----------------------------------------------------------

    def fts_candidates(
        self, query: FtsQuery, flt: MemoryFilter, limit: int, *, scan: int | None = None
    ) -> list[tuple[int, float]]:
        tsquery = to_tsquery(query)
        if tsquery is None:
            return []
        where, params = filter_sql(flt)
        if scan is None:
            rows = self._query(
                f"SELECT m.id, ts_rank_cd('{RANK_WEIGHTS}'::float4[], m.search, q.q) AS rank"
                " FROM memories m, (SELECT %s::tsquery AS q) q"
                f" WHERE m.search @@ q.q AND {where} ORDER BY rank DESC, m.id DESC LIMIT %s",
                [tsquery, *params, limit],
            )
        else:
            # Score only the ``scan`` newest matches, as the SQLite store does.
            rows = self._query(
                f"SELECT s.id, ts_rank_cd('{RANK_WEIGHTS}'::float4[], s.search, s.q) AS rank"
                " FROM (SELECT m.id, m.search, q.q FROM memories m,"
                " (SELECT %s::tsquery AS q) q"
                f" WHERE m.search @@ q.q AND {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT %s) s"
                " ORDER BY rank DESC, s.id DESC LIMIT %s",
                [tsquery, *params, scan, limit],
            )
        return [(int(row[0]), float(row[1])) for row in rows]

    def _newest_matches(self, query: FtsQuery) -> tuple[int, int] | None:
        tsquery = to_tsquery(query)
        if tsquery is None:
            return None
        counted, oldest = self._query(
            "SELECT count(*), min(id) FROM (SELECT id FROM memories"
            " WHERE search @@ %s::tsquery ORDER BY id DESC LIMIT %s) s",
            [tsquery, common.MATCH_COUNT_SCAN],
        )[0]
        return int(counted), int(oldest or 0)

    def _match_total(self) -> int:
        """Rows of ``memories``: the planner's estimate (kept by autovacuum and ANALYZE)
        once it is large, where ``count(*)`` would scan a whole index per search (tens of
        ms at 1M rows); counted exactly below that. An idf needs the size, not the unit."""
        estimate = self._query(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories'::regclass"
        )[0][0]
        if estimate is not None and int(estimate) >= EXACT_COUNT_ROWS:
            return int(estimate)
        return int(self._query("SELECT count(*) FROM memories")[0][0])

    def memory_keys(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, float]]:
        if not ids:
            return []
        rows = self._query(
            "SELECT id, project, kind, type, extract(epoch FROM created_at) FROM memories"
            " WHERE id = ANY(%s)",
            [list(ids)],
        )
        return [(int(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4])) for r in rows]

    def project_names(self) -> list[str]:
        rows = self._query("SELECT DISTINCT project FROM memories ORDER BY project")
        return [str(row[0]) for row in rows]

    def vector_candidates(
        self, model: str, query: Sequence[float], flt: MemoryFilter, limit: int
    ) -> list[tuple[int, float]]:
        dim = len(query)
        if dim == 0 or limit < 1:
            return []
        vector = _as_blob(query)
        where, params = filter_sql(flt)
        with self._atomic() as conn, _errors():
            exact = dim > HNSW_MAX_DIM or self._few_rows(conn, where, params)
            if exact:
                rows = conn.execute(
                    "SELECT e.memory_id, e.vector <=> %s AS distance"
                    " FROM embeddings e JOIN memories m ON m.id = e.memory_id"
                    f" WHERE e.model = %s AND e.dim = %s AND {where}"
                    " ORDER BY distance LIMIT %s",
                    [vector, model, dim, *params, limit],
                ).fetchall()
            else:
                # The walk widens on a large table (store.vector_walk); the row count is
                # the planner's estimate, read in this statement (no scan, no round trip).
                width = max(40, limit)
                conn.execute(
                    "SELECT set_config('hnsw.ef_search', (CASE WHEN (SELECT reltuples"
                    " FROM pg_class WHERE oid = 'embeddings'::regclass) >= %s"
                    " THEN %s ELSE %s END)::text, true),"
                    " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                    (
                        WIDE_WALK_ROWS,
                        min(walk_width(width, WIDE_WALK_ROWS), MAX_WALK),
                        min(width, MAX_WALK),
                    ),
                )
                typed = sql.SQL("vector({})").format(sql.Literal(dim))
                rows = conn.execute(
                    sql.SQL(
                        "SELECT e.memory_id, (e.vector::{typed}) <=> %s::{typed} AS distance"
                        " FROM embeddings e JOIN memories m ON m.id = e.memory_id"
                        " WHERE e.model = %s AND e.dim = {dim} AND {where}"
                        " ORDER BY distance LIMIT %s"
                    ).format(typed=typed, dim=sql.Literal(dim), where=sql.SQL(where)),
                    [vector, model, *params, limit],
                ).fetchall()
        scored: list[tuple[int, float]] = []
        for memory_id, distance in rows:
            score = 0.0 if distance is None or math.isnan(distance) else 1.0 - float(distance)
            scored.append((int(memory_id), score))
        # relaxed_order may return a slightly unsorted list
        scored.sort(key=lambda pair: pair[1], reverse=True)
        return scored

    def _few_rows(self, conn: psycopg.Connection[Any], where: str, params: list[Any]) -> bool:
        """Whether a filter leaves so few memories that an exact scan beats HNSW."""
        if where == "true":
            return False
        row = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT %s) s",
            [*params, EXACT_SCAN_MAX],
        ).fetchone()
        return row is not None and int(row[0]) < EXACT_SCAN_MAX

    # -- embeddings -----------------------------------------------------------

    def put_embeddings(self, model: str, dim: int, items: Sequence[tuple[int, bytes]]) -> None:
        if not items:
            return
        for memory_id, blob in items:
            if len(blob) != 4 * dim:
                raise ValueError(
                    f"vector of memory {memory_id} has {len(blob) // 4} values, expected {dim}"
                )
        now = utcnow()
        with self._atomic() as conn, _errors():
            self._ensure_vector_index(conn, model, dim)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO embeddings (memory_id, model, dim, vector, created_at)"
                    " SELECT %s, %s, %s, %s, %s WHERE EXISTS"
                    " (SELECT 1 FROM memories WHERE id = %s)"
                    " ON CONFLICT (memory_id, model) DO UPDATE SET dim = excluded.dim,"
                    " vector = excluded.vector, created_at = excluded.created_at",
                    [(mid, model, dim, _Vector(blob), now, mid) for mid, blob in items],
                )

    def _ensure_vector_index(self, conn: psycopg.Connection[Any], model: str, dim: int) -> None:
        """Create the partial HNSW index of (model, dim) the first time it is needed."""
        if (model, dim) in self._indexed or dim > HNSW_MAX_DIM:
            return
        if self._deferred is not None:
            self._deferred.add((model, dim))
            return
        known = conn.execute(
            "SELECT 1 FROM vector_indexes WHERE model = %s AND dim = %s", (model, dim)
        ).fetchone()
        if known is None:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            # A build over many existing rows is much faster when the graph fits in memory.
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, true)", (self.index_build_memory,)
            )
            name = _index_name(model, dim)
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw"
                    " ((vector::vector({dim})) vector_cosine_ops)"
                    " WHERE model = {model} AND dim = {dim}"
                ).format(name=sql.Identifier(name), dim=sql.Literal(dim), model=sql.Literal(model))
            )
            conn.execute(
                "INSERT INTO vector_indexes (model, dim, index_name, created_at)"
                " VALUES (%s, %s, %s, now()) ON CONFLICT DO NOTHING",
                (model, dim, name),
            )
            log.info("created HNSW index %s for model %r (dim %d)", name, model, dim)
        self._indexed.add((model, dim))

    @contextmanager
    def deferred_vector_indexes(self) -> Iterator[None]:
        """Bulk loads: store vectors without HNSW upkeep, build the missing indexes at the end.

        pgvector inserts into an HNSW graph one by one far slower than it builds the
        graph over existing rows (≈300 vs several thousand vectors/s on 2 cores), so
        ``migrate-store`` and the benchmark load inside this block. The indexes are
        built when the block ends (after its transaction, if it holds one).
        """
        self._deferred = set()
        try:
            yield
        finally:
            pending, self._deferred = self._deferred, None
        for model, dim in sorted(pending):
            with self._atomic() as conn, _errors():
                self._ensure_vector_index(conn, model, dim)

    def iter_embeddings(
        self, model: str, *, after_id: int = 0, batch: int = 10_000
    ) -> Iterator[list[tuple[int, bytes]]]:
        last = after_id
        while True:
            with self._connection() as conn, _errors(), conn.cursor(binary=True) as cur:
                rows = cur.execute(
                    "SELECT memory_id, vector FROM embeddings WHERE model = %s AND memory_id > %s"
                    " ORDER BY memory_id LIMIT %s",
                    (model, last, batch),
                ).fetchall()
            if not rows:
                return
            yield [(int(row[0]), bytes(row[1])) for row in rows]
            last = int(rows[-1][0])

    def delete_embeddings(self, model: str | None = None) -> int:
        if model is None:
            return self._execute("DELETE FROM embeddings")
        return self._execute("DELETE FROM embeddings WHERE model = %s", (model,))

    # -- sessions -------------------------------------------------------------

    def first_memories(self, session_ids: Sequence[str], kind: str) -> dict[str, Memory]:
        if not session_ids:
            return {}
        rows = self._query(
            f"SELECT DISTINCT ON (session_id) {MEMORY_COLUMNS} FROM memories"
            " WHERE session_id = ANY(%s::text[]) AND kind = %s"
            " ORDER BY session_id, created_at, id",
            [[clean(s) for s in dict.fromkeys(session_ids)], kind],
        )
        memories = [POSTGRES.memory(row) for row in rows]
        return {m.session_id: m for m in memories if m.session_id is not None}

    # -- bookkeeping ----------------------------------------------------------

    def mark_seen(self, namespace: str, keys: Sequence[str]) -> None:
        if not keys:
            return
        with self._atomic() as conn, _errors():
            for start in range(0, len(keys), _CHUNK):
                part = [clean(key) for key in keys[start : start + _CHUNK]]
                conn.execute(
                    "INSERT INTO seen_keys (namespace, key) SELECT %s, unnest(%s::text[])"
                    " ON CONFLICT DO NOTHING",
                    (clean(namespace), part),
                )

    def log_maintenance(self, kind: str, started_at: datetime, details: dict[str, Any]) -> None:
        self._execute(
            "INSERT INTO maintenance_log (kind, started_at, finished_at, details)"
            " VALUES (%s, %s, %s, %s::jsonb)",
            (kind, POSTGRES.time(started_at), utcnow(), as_json(details)),
        )

    # -- the database ----------------------------------------------------------

    def _database_bytes(self) -> int:
        """Bytes of this schema's tables with their indexes and TOAST."""
        size = self._query(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
        )[0][0]
        return int(size)

    def same_database(self, path: str | Path) -> bool:
        return False  # a server database is never a local file

    def storage_bytes(self) -> tuple[int, int]:
        size = self._database_bytes()
        return size, size

    def _reindex_rows(self, conn: psycopg.Connection[Any], first: int, last: int) -> None:
        rows = conn.execute(
            "SELECT id, title, content, files, tags FROM memories WHERE id BETWEEN %s AND %s",
            (first, last),
        ).fetchall()
        for mid, title, content, files, tags in rows:
            if not identifier_parts(f"{title}\n{content}"):
                continue  # indexed as it would be now
            conn.execute(
                "UPDATE memories SET search = %s::tsvector WHERE id = %s",
                (search_vector(title, content, files or (), tags or ()), mid),
            )

    def reclaim_space(self, *, full: bool = False) -> bool:
        return False  # PostgreSQL's autovacuum reclaims dead rows

    def backup_to(self, dest: Path, scratch: Path) -> int:
        raise InvalidInput(
            f"{self.location} is a PostgreSQL database: back it up with pg_dump"
            " (memlane backup writes SQLite files)"
        )

    # -- PostgreSQL specifics (copy between stores) -----------------------------

    def import_memories(self, memories: Sequence[Memory]) -> None:
        """Insert memories keeping their ids and every field (``memlane migrate-store``)."""
        if not memories:
            return
        rows = [
            (
                *_memory_params(m, POSTGRES.time(m.created_at), POSTGRES.time(m.updated_at)),
                m.id,
                m.revision_count,
                m.access_count,
                m.last_accessed_at,
                m.stale,
            )
            for m in memories
        ]
        with self._atomic() as conn, _errors(), conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO memories ({_NEW_COLUMNS}, id, revision_count, access_count,"
                f" last_accessed_at, stale) VALUES ({_NEW_VALUES}, %s, %s, %s, %s, %s)",
                rows,
            )
            # Later inserts must not collide with the copied ids.
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('memories', 'id'),"
                " greatest((SELECT max(id) FROM memories), 1))"
            )

    def import_sessions(self, sessions: Sequence[Session]) -> None:
        """Insert sessions as they are (an existing id is left alone)."""
        if not sessions:
            return
        with self._atomic() as conn, _errors(), conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO sessions ({SESSION_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                [POSTGRES.session_params(s) for s in sessions],
            )

    def seen_count(self) -> int:
        return int(self._query("SELECT count(*) FROM seen_keys")[0][0])

    def vector_index_names(self) -> dict[tuple[str, int], str]:
        """The HNSW index of each (model, dim) created so far."""
        rows = self._query("SELECT model, dim, index_name FROM vector_indexes")
        return {(row[0], int(row[1])): row[2] for row in rows}


# The columns a memory is inserted with and their placeholders (_memory_params: values).
_NEW_COLUMNS = (
    "project, session_id, kind, type, title, content, files, tags, topic_key, source,"
    " source_id, normalized_hash, created_at, updated_at, metadata, search"
)
_NEW_VALUES = (
    "%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::tsvector"
)


def _memory_params(
    new: NewMemory | Memory, created: datetime, updated: datetime
) -> tuple[Any, ...]:
    """The values of ``_NEW_COLUMNS`` for ``new``."""
    return (
        clean(new.project),
        clean(new.session_id),
        new.kind,
        new.type,
        clean(new.title),
        clean(new.content),
        POSTGRES.value("files", new.files),
        POSTGRES.value("tags", new.tags),
        clean(new.topic_key),
        clean(new.source),
        clean(new.source_id),
        new.normalized_hash,
        created,
        updated,
        POSTGRES.value("metadata", new.metadata),
        search_vector(new.title, new.content, new.files, new.tags),
    )


@contextmanager
def _errors() -> Iterator[None]:
    """Turn driver errors into StoreError (the domain error adapters know how to show)."""
    try:
        yield
    except psycopg.Error as exc:
        raise _store_error(exc) from exc


def _store_error(exc: psycopg.Error) -> StoreError:
    """A driver error as a StoreError: RecordRefused when a value the statement gives is
    refused (an integrity or data error: SQLSTATE classes 23 and 22; a read's too, an
    out-of-range value asked for), whenever it is given."""
    if isinstance(exc, (psycopg.IntegrityError, psycopg.DataError)):
        return RecordRefused(f"the database refuses a value given to it: {exc}")
    return StoreError(f"database error: {exc}")


def _bound(conn: psycopg.Connection[Any], query: Any, params: Sequence[Any]) -> psycopg.Cursor[Any]:
    """``query`` run with ``params``; a string UTF-8 cannot hold (a lone surrogate) is
    bound as U+FFFD in its place (:func:`memlane.utf8.storable`). The driver encodes
    before it sends, so the transaction is untouched by the first try."""
    try:
        return conn.execute(query, params)
    except UnicodeEncodeError:
        return conn.execute(query, storable_params(params))
