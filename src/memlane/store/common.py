"""The Store statements SQLite and PostgreSQL write alike, written once.

A mixin of both SQL stores: reads of memories and sessions, session upkeep,
seen keys, the maintenance log and stats. Each statement is written with
``%s`` placeholders and the store's :class:`~memlane.store.dialect.Dialect`
fills in what differs. What a store does its own way (inserting memories and
their full-text terms, candidates, vectors, bulk writes, transactions) stays
in ``store/sqlite.py`` and ``store/postgres.py``.

A store provides ``dialect``, ``_query`` (rows of one statement), ``_execute``
(one write statement; its row count), ``_atomic`` (a unit of work yielding a
connection with ``execute``), ``_database_bytes``, ``_match_total``, ``_newest_matches``
and ``_reindex_rows``.
"""

from __future__ import annotations

from memlane.models import Stats, epoch_us
from memlane.store.dialect import MEMORY_COLUMNS, SESSION_COLUMNS, escape_like
from memlane.store.fields import EMBEDDED_FIELDS, SESSION_FIELDS, check_fields

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from contextlib import AbstractContextManager
    from datetime import datetime
    from typing import Any

    from memlane.models import Memory, MemoryFilter, Session
    from memlane.store.dialect import Dialect
    from memlane.store.query import FtsQuery


# ``match_counts`` counts at most this many (newest) matches of a word exactly; a word
# in more memories is counted from them: counting a word in half of 1M memories
# costs ~13 ms in FTS5, and a common word's weight (its idf) is small and flat anyway.
MATCH_COUNT_SCAN = 1_000
# What ``missing_embeddings`` reads: the text the vectors are computed from.
_EMBEDDED_COLUMNS = ", ".join(f"m.{name}" for name in EMBEDDED_FIELDS)


def estimated_count(counted: int, oldest: int, newest: int, total: int) -> int:
    """Memories holding a word of which ``counted`` were found among the newest, down to id
    ``oldest`` (``MATCH_COUNT_SCAN`` of them: else the count is exact): the share of the
    memories from ``oldest`` to ``newest`` that hold it, times ``total``."""
    if counted < MATCH_COUNT_SCAN:
        return counted
    span = max(newest - oldest + 1, counted)
    return min(total, max(counted, round(total * counted / span)))


def _most_first(counts: dict[str, int]) -> dict[str, int]:
    """``counts`` ordered by count, largest first."""
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def filter_sql(d: Dialect, flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword, in dialect ``d``) and its parameters for a filter.

    An empty list of projects or ids matches nothing.
    """
    clauses: list[str] = []
    params: list[Any] = []

    def add(clause: str, values: list[Any]) -> None:
        clauses.append(clause)
        params.extend(values)

    if flt.projects is not None:
        if not flt.projects:
            return d.false, []
        add(*d.any_of(f"{alias}.project", flt.projects))
    if flt.session_id is not None:
        add(f"{alias}.session_id = %s", [d.text(flt.session_id)])
    if flt.kinds is not None:
        add(*d.any_of(f"{alias}.kind", flt.kinds))
    if flt.types is not None:
        add(*d.any_of(f"{alias}.type", flt.types))
    if flt.created_after is not None:
        add(f"{alias}.created_at >= %s", [d.time(flt.created_after)])
    if flt.created_before is not None:
        add(f"{alias}.created_at < %s", [d.time(flt.created_before)])
    if flt.ids is not None:
        if not flt.ids:
            return d.false, []
        add(*d.any_of(f"{alias}.id", flt.ids, "bigint"))
    if flt.files is not None:
        add(*d.any_file(f"{alias}.files", flt.files))
    return d.sql(" AND ".join(clauses) or d.true), params


# The columns a write looks a memory up by (present_keys).
KEY_COLUMNS = ("normalized_hash", "topic_key", "source_id")


class SqlStatements:
    """What a store provides to the shared statements (see the module docstring)."""

    dialect: Dialect

    def _query(
        self, query: Any, params: Sequence[Any] = ()
    ) -> list[Any]:  # pragma: no cover - the store's
        raise NotImplementedError

    def _execute(self, query: Any, params: Sequence[Any] = ()) -> int:  # pragma: no cover
        raise NotImplementedError

    def _atomic(self) -> AbstractContextManager[Any]:  # pragma: no cover - the store's
        raise NotImplementedError

    def _database_bytes(self) -> int:  # pragma: no cover - the store's
        raise NotImplementedError

    def _match_total(self) -> int:  # pragma: no cover - the store's
        """Memories in the full-text index, as cheaply as the store knows it."""
        raise NotImplementedError

    def _newest_matches(self, query: FtsQuery) -> tuple[int, int] | None:  # pragma: no cover
        """How many of the ``MATCH_COUNT_SCAN`` newest memories match ``query``, and the
        oldest id among them (None for a query with nothing to match)."""
        raise NotImplementedError

    def _reindex_rows(self, conn: Any, first: int, last: int) -> None:  # pragma: no cover
        """Recompute the full-text terms of the memories with ids ``first``..``last``
        (inside the caller's unit of work ``conn``)."""
        raise NotImplementedError

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of a shared ``statement`` (``%s`` placeholders)."""
        return self._query(self.dialect.sql(statement), params)


class CommonQueries(SqlStatements):
    """Store methods whose SQL differs between the dialects only in blanks."""

    def schema_version(self) -> int:
        row = self._rows("SELECT max(version) FROM schema_version")[0]
        return int(row[0] or 0)

    def match_counts(self, queries: Sequence[FtsQuery]) -> tuple[int, list[int]]:
        total = self._match_total()
        newest: int | None = None  # asked only when a count is estimated
        counts: list[int] = []
        for query in queries:
            found = self._newest_matches(query)
            if found is None:
                counts.append(0)
                continue
            counted, oldest = found
            if counted >= MATCH_COUNT_SCAN and newest is None:
                newest = int(self._rows("SELECT coalesce(max(id), 0) FROM memories")[0][0])
            counts.append(estimated_count(counted, oldest, newest or 0, total))
        return total, counts

    def backfill_index(self, batch: int) -> tuple[int, int]:
        d = self.dialect
        with self._atomic() as conn:
            row = conn.execute(
                d.sql(
                    "SELECT from_id, to_id, (SELECT coalesce(max(id), 0) FROM memories)"
                    " FROM index_backfill"
                )
            ).fetchone()
            if row is None:
                return 0, 0
            try:  # bounded by the ids there are: a restored file's row could say anything
                first, last = int(row[0]), min(int(row[1]), int(row[2]))
            except (TypeError, ValueError):
                first, last = 1, 0
            if first > last:
                conn.execute("DELETE FROM index_backfill")
                return 0, 0
            stop = min(last, first + batch - 1)
            self._reindex_rows(conn, first, stop)
            if stop >= last:
                conn.execute("DELETE FROM index_backfill")
            else:
                conn.execute(d.sql("UPDATE index_backfill SET from_id = %s"), (stop + 1,))
            return stop - first + 1, last - stop

    # -- memories -------------------------------------------------------------

    def delete_memories(self, ids: Sequence[int]) -> int:
        d = self.dialect
        total = 0
        with self._atomic() as conn:
            for where, params in d.in_chunks("id", ids, "bigint"):
                total += conn.execute(d.sql(f"DELETE FROM memories WHERE {where}"), params).rowcount
        return total

    def get_memories(self, ids: Sequence[int]) -> list[Memory]:
        d = self.dialect
        found: dict[int, Memory] = {}
        for where, params in d.in_chunks("id", ids, "bigint"):
            rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where}", params)
            found.update((int(row[0]), d.memory(row)) for row in rows)
        return [found[i] for i in ids if i in found]

    def find_memory(
        self,
        project: str,
        *,
        normalized_hash: str | None = None,
        topic_key: str | None = None,
        source: str | None = None,
        source_id: str | None = None,
        kinds: Sequence[str] | None = None,
        created_after: datetime | None = None,
    ) -> Memory | None:
        d = self.dialect
        clauses = ["project = %s"]
        params: list[Any] = [d.text(project)]
        for column, value in (
            ("normalized_hash", normalized_hash),
            ("topic_key", topic_key),
            ("source", source),
            ("source_id", source_id),
        ):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(d.text(value))
        # A hash names a handful of rows: keep SQLite's planner on memories_hash. Else
        # it prefers (project, kind, created_at) for the ORDER BY and walks every
        # memory of that kind (41.5 ms instead of 0.29 ms per lookup at 51k rows).
        plain = d.unindexed if normalized_hash is not None else ""
        if kinds is not None:
            clause, values = d.any_of(f"{plain}kind", kinds)
            clauses.append(clause)
            params.extend(values)
        if created_after is not None:
            clauses.append(f"{plain}created_at >= %s")
            params.append(d.time(created_after))
        rows = self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(clauses)}"
            f" ORDER BY {plain}created_at DESC, id DESC LIMIT 1",
            params,
        )
        return d.memory(rows[0]) if rows else None

    def find_by_source_ids(
        self, project: str, source: str, source_ids: Sequence[str]
    ) -> dict[str, Memory]:
        d = self.dialect
        # Compared as stored (see present_keys): the stored text maps back to the given ones.
        given: dict[str, list[str]] = {}
        for value in source_ids:
            given.setdefault(d.text(value), []).append(value)
        head = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE project = %s AND source = %s"
        found: dict[str, Memory] = {}
        # One memory per (project, source, source_id): the memories_source index is
        # unique. No ORDER BY: with one, SQLite walks the project's memories in time
        # order instead of seeking each id (50 ms instead of 1 ms per 500 ids at 10k rows).
        for where, part in d.in_chunks("source_id", list(given)):
            rows = self._rows(f"{head} AND {where}", [d.text(project), d.text(source), *part])
            for row in rows:
                memory = d.memory(row)
                for value in given.get(memory.source_id or "", ()):
                    found[value] = memory
        return found

    def present_keys(
        self, project: str, column: str, values: Sequence[str], *, source: str | None = None
    ) -> set[str]:
        d = self.dialect
        if column not in KEY_COLUMNS:
            raise ValueError(f"present_keys: {column!r} is not one of {', '.join(KEY_COLUMNS)}")
        # Compared as stored: a dialect may store a text changed (PostgreSQL: NUL), so
        # two values can stand for one stored text.
        wanted: dict[str, list[str]] = {}
        for value in values:
            wanted.setdefault(d.text(value), []).append(value)
        found: set[str] = set()
        head = f"SELECT DISTINCT {column} FROM memories WHERE project = %s"
        params: list[Any] = [d.text(project)]
        if source is not None:
            head += " AND source = %s"
            params.append(d.text(source))
        for where, part in d.in_chunks(column, list(wanted)):
            rows = self._rows(f"{head} AND {where}", [*params, *part])
            for row in rows:
                found.update(wanted.get(row[0], ()))
        return found

    def list_memories(
        self,
        flt: MemoryFilter,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Memory]:
        if flt.types is not None and len(set(flt.types)) > 1:
            # One ordered read per type over the project/kind/type/time index, then the
            # first of them: with `type IN (…)` the planners walk the project/kind/time
            # index instead and, when the types are rare, every memory of that kind.
            from dataclasses import replace

            wanted = offset + limit
            found = [
                memory
                for type_ in dict.fromkeys(flt.types)
                for memory in self.list_memories(
                    replace(flt, types=(type_,)), limit=wanted, newest_first=newest_first
                )
            ]
            found.sort(key=lambda m: (m.created_at, m.id), reverse=newest_first)
            return found[offset:wanted]
        where, params = filter_sql(self.dialect, flt)
        order = "DESC" if newest_first else "ASC"
        rows = self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where}"
            f" ORDER BY m.created_at {order}, m.id {order} LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        return [self.dialect.memory(row) for row in rows]

    def count_memories(self, flt: MemoryFilter) -> int:
        where, params = filter_sql(self.dialect, flt)
        return int(self._rows(f"SELECT count(*) FROM memories m WHERE {where}", params)[0][0])

    def has_memories(self, flt: MemoryFilter) -> bool:
        where, params = filter_sql(self.dialect, flt)
        return bool(self._rows(f"SELECT 1 FROM memories m WHERE {where} LIMIT 1", params))

    def memory_ids(self, flt: MemoryFilter) -> list[int]:
        where, params = filter_sql(self.dialect, flt)
        rows = self._rows(f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.id", params)
        return [int(row[0]) for row in rows]

    def like_candidates(
        self, needle: str, flt: MemoryFilter, limit: int, *, scan: int | None = None
    ) -> list[tuple[int, float]]:
        d = self.dialect
        where, params = filter_sql(d, flt)
        pattern = f"%{escape_like(d.text(needle))}%"
        if scan is not None:  # the newest ``scan`` memories of the filter only
            where = (
                f"m.id IN (SELECT m.id FROM memories m WHERE {where}"
                " ORDER BY m.created_at DESC LIMIT %s)"
            )
            params = [*params, scan]
        rows = self._rows(
            f"SELECT m.id FROM memories m WHERE {where} AND (m.title {d.like} %s ESCAPE '\\'"
            f" OR m.content {d.like} %s ESCAPE '\\') ORDER BY m.created_at DESC LIMIT %s",
            [*params, pattern, pattern, limit],
        )
        return [(int(row[0]), 1.0) for row in rows]

    # -- embeddings -----------------------------------------------------------

    def missing_embeddings(self, model: str, limit: int) -> list[tuple[int, str]]:
        rows = self._rows(
            f"SELECT m.id, {_EMBEDDED_COLUMNS} FROM memories m WHERE NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.memory_id = m.id AND e.model = %s)"
            " ORDER BY m.id LIMIT %s",
            (model, limit),
        )
        return [(int(r[0]), "\n".join(part for part in r[1:] if part)) for r in rows]

    def embedding_counts(self) -> dict[str, int]:
        rows = self._rows("SELECT model, count(*) FROM embeddings GROUP BY model")
        return {row[0]: int(row[1]) for row in rows}

    # -- sessions -------------------------------------------------------------

    def upsert_session(self, session: Session) -> None:
        d = self.dialect
        self._execute(
            d.sql(
                f"INSERT INTO sessions ({SESSION_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                f" ON CONFLICT (id) DO UPDATE SET last_activity_at ="
                f" {d.greatest}(sessions.last_activity_at, excluded.last_activity_at),"
                " transcript_path = coalesce(excluded.transcript_path, sessions.transcript_path)"
            ),
            d.session_params(session),
        )

    def get_session(self, session_id: str) -> Session | None:
        d = self.dialect
        rows = self._rows(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (d.text(session_id),)
        )
        return d.session(rows[0]) if rows else None

    def update_session(self, session_id: str, changes: dict[str, Any]) -> None:
        check_fields(changes, SESSION_FIELDS)
        if not changes:
            return
        d = self.dialect
        # Names are SESSION_FIELDS (checked above), never caller text.
        assignments = ", ".join(f"{name} = %s" for name in changes)
        params = [d.value(name, value) for name, value in changes.items()]
        self._execute(
            d.sql(f"UPDATE sessions SET {assignments} WHERE id = %s"),
            [*params, d.text(session_id)],
        )

    def list_sessions(
        self,
        *,
        projects: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        idle_before: datetime | None = None,
        limit: int = 50,
    ) -> list[Session]:
        d = self.dialect
        clauses: list[str] = []
        params: list[Any] = []
        for column, values in (("project", projects), ("status", statuses)):
            if values is not None:
                clause, found = d.any_of(column, values)
                clauses.append(clause)
                params.extend(found)
        if idle_before is not None:
            clauses.append("last_activity_at < %s")
            params.append(d.time(idle_before))
        where = " AND ".join(clauses) or d.true
        rows = self._rows(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {where}"
            " ORDER BY last_activity_at DESC LIMIT %s",
            [*params, limit],
        )
        return [d.session(row) for row in rows]

    def session_ids_starting(
        self, prefix: str, *, projects: Sequence[str] | None = None
    ) -> list[str]:
        d = self.dialect
        # substr, not LIKE: SQLite's LIKE ignores case and a prefix may hold % or _.
        clauses = ["substr(id, 1, %s) = %s"]
        params: list[Any] = [len(prefix), d.text(prefix)]
        if projects is not None:
            clause, found = d.any_of("project", projects)
            clauses.append(clause)
            params.extend(found)
        rows = self._rows(
            f"SELECT id FROM sessions WHERE {' AND '.join(clauses)} ORDER BY id", params
        )
        return [str(row[0]) for row in rows]

    def delete_sessions(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        where, params = self.dialect.any_of("id", ids)
        return self._execute(self.dialect.sql(f"DELETE FROM sessions WHERE {where}"), params)

    # -- bookkeeping ----------------------------------------------------------

    def seen(self, namespace: str, keys: Sequence[str]) -> set[str]:
        d = self.dialect
        found: set[str] = set()
        for where, params in d.in_chunks("key", keys):
            rows = self._rows(
                f"SELECT key FROM seen_keys WHERE namespace = %s AND {where}",
                [d.text(namespace), *params],
            )
            found.update(row[0] for row in rows)
        return found

    def iter_seen_keys(self, batch: int = 10_000) -> Iterator[list[tuple[str, str]]]:
        """Every (namespace, key) recorded, in batches (keyset pagination)."""
        last = ("", "")
        while True:
            rows = self._rows(
                "SELECT namespace, key FROM seen_keys WHERE (namespace, key) > (%s, %s)"
                " ORDER BY namespace, key LIMIT %s",
                [*last, batch],
            )
            if not rows:
                return
            yield [(str(row[0]), str(row[1])) for row in rows]
            last = (str(rows[-1][0]), str(rows[-1][1]))

    def last_maintenance(self, kind: str) -> datetime | None:
        rows = self._rows("SELECT max(finished_at) FROM maintenance_log WHERE kind = %s", (kind,))
        return self.dialect.optional_time(rows[0][0])

    def stats(self, project: str | None = None) -> Stats:
        d = self.dialect
        where, params = ("WHERE project = %s", [project]) if project is not None else ("", [])
        # One walk of the (project, kind, type, …) index gives the three groupings (a
        # GROUP BY kind alone sorts every row: at 1M memories ~0.25 s each).
        projects: dict[str, int] = {}
        kinds: dict[str, int] = {}
        types: dict[str, int] = {}
        for name, kind, type_, count in self._rows(
            f"SELECT project, kind, type, count(*) FROM memories {where}"
            " GROUP BY project, kind, type",
            params,
        ):
            for groups, key in ((projects, name), (kinds, kind), (types, type_)):
                groups[key] = groups.get(key, 0) + int(count)
        bounds = self._rows(
            f"SELECT min(created_at), max(created_at) FROM memories {where}", params
        )[0]
        sessions = int(self._rows(f"SELECT count(*) FROM sessions {where}", params)[0][0])
        # A vector goes with its memory (ON DELETE CASCADE): every project's count needs
        # no join.
        embedded_sql = (
            "SELECT count(DISTINCT memory_id) FROM embeddings"
            if project is None
            else "SELECT count(DISTINCT e.memory_id) FROM embeddings e"
            " JOIN memories m ON m.id = e.memory_id WHERE m.project = %s"
        )
        embedded = int(self._rows(embedded_sql, params)[0][0])
        return Stats(
            memories=sum(projects.values()),
            sessions=sessions,
            projects=_most_first(projects),
            kinds=_most_first(kinds),
            types=_most_first(types),
            embedded=embedded,
            db_bytes=self._database_bytes(),
            oldest=d.optional_time(bounds[0]),
            newest=d.optional_time(bounds[1]),
        )

    def change_marker(self) -> tuple[int, int]:
        row = self._rows(
            "SELECT (SELECT coalesce(max(id), 0) FROM memories),"
            " (SELECT max(last_activity_at) FROM sessions)"
        )[0]
        activity = 0 if row[1] is None else epoch_us(self.dialect.read_time(row[1]))
        return int(row[0]), activity
