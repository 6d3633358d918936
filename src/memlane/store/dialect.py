"""What the SQLite and PostgreSQL stores spell differently, in one place.

The statements both stores run alike are written once (``store/common.py``,
``store/injection_log.py``) with ``%s`` placeholders and a few blanks; a
:class:`Dialect` fills them in: the placeholder, how a column is matched
against a list, how times, JSON and booleans are stored, the names of a few
functions. It also reads rows (selected in the column orders below) back into
the domain records, so that one reader serves both stores.

What no blank can express (inserts that return ids, full text, vectors, bulk
upserts, transactions) stays in each store's own module.
"""

from __future__ import annotations

import json
from datetime import UTC

from memlane.models import Injection, Memory, Session, from_epoch, to_epoch

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from datetime import datetime
    from typing import Any

    from memlane.models import InjectedMemory

MEMORY_COLUMNS = (
    "id, project, session_id, kind, type, title, content, files, tags, topic_key, source,"
    " source_id, normalized_hash, revision_count, access_count, last_accessed_at, stale,"
    " created_at, updated_at, metadata"
)
SESSION_COLUMNS = (
    "id, project, agent, status, started_at, ended_at, last_activity_at, transcript_path,"
    " transcript_offset, prompt_count, parent_session_id"
)
INJECTION_COLUMNS = (
    "id, session_id, project, event, prompt_number, created_at, mode, relayed, hook_ms,"
    " chars, tokens, prompt, text, cleared"
)
JSON_FIELDS = frozenset({"files", "tags", "metadata"})


def escape_like(needle: str) -> str:
    """``needle`` with LIKE's wildcards escaped (statements say ``ESCAPE '\\'``)."""
    return needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class Dialect:
    """How one SQL dialect fills the blanks of the shared statements (see the module)."""

    true: str  # a condition that always holds; also the boolean literal true
    false: str
    like: str  # the case-insensitive LIKE operator
    greatest: str  # the function: the larger of two values
    unindexed: str  # a prefix that keeps the planner off a column's index ("" if none)
    chunk: int  # how many values one list parameter carries

    def sql(self, statement: str) -> str:
        """``statement`` (written with ``%s`` placeholders) in this dialect."""
        raise NotImplementedError

    def any_of(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        """A condition ``column`` is one of ``values``, and its parameters."""
        raise NotImplementedError

    def in_chunks(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> Iterator[tuple[str, list[Any]]]:
        """:meth:`any_of` over ``values`` in parts of :attr:`chunk` (a statement each)."""
        for start in range(0, len(values), self.chunk):
            yield self.any_of(column, values[start : start + self.chunk], sql_type)

    def any_file(self, column: str, paths: Sequence[str]) -> tuple[str, list[Any]]:
        """A condition: the JSON list ``column`` holds one of ``paths``."""
        raise NotImplementedError

    def day(self, column: str) -> str:
        """The UTC day (``YYYY-MM-DD``) of the time ``column``."""
        raise NotImplementedError

    def byte_length(self, column: str) -> str:
        """The length in bytes of the text ``column``."""
        raise NotImplementedError

    def text(self, value: str) -> str:
        """A string as this dialect can store it."""
        return value

    def time(self, value: datetime) -> Any:
        """A time as stored."""
        raise NotImplementedError

    def flag(self, value: bool) -> Any:
        """A boolean as stored."""
        raise NotImplementedError

    def read_time(self, value: Any) -> datetime:
        """A stored time as an aware UTC datetime."""
        raise NotImplementedError

    def read_json(self, value: Any) -> Any:
        """A stored JSON value as Python."""
        raise NotImplementedError

    def value(self, name: str, value: Any) -> Any:
        """The stored form of ``value`` for the memory or session column ``name``."""
        raise NotImplementedError

    def insert_id(self, conn: Any, statement: str, params: Sequence[Any]) -> int:
        """Run the INSERT ``statement`` (this dialect's) on ``conn``; the new row's id."""
        raise NotImplementedError

    def execute_many(self, conn: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``statement`` (this dialect's) once per row of parameters on ``conn``."""
        raise NotImplementedError

    # -- rows read back -----------------------------------------------------------

    def optional_time(self, value: Any) -> datetime | None:
        return None if value is None else self.read_time(value)

    def memory(self, row: Sequence[Any]) -> Memory:
        """A row of :data:`MEMORY_COLUMNS` as a Memory."""
        return Memory(
            id=int(row[0]),
            project=row[1],
            session_id=row[2],
            kind=row[3],
            type=row[4],
            title=row[5],
            content=row[6],
            files=tuple(self.read_json(row[7])),
            tags=tuple(self.read_json(row[8])),
            topic_key=row[9],
            source=row[10],
            source_id=row[11],
            normalized_hash=row[12],
            revision_count=row[13],
            access_count=row[14],
            last_accessed_at=self.optional_time(row[15]),
            stale=bool(row[16]),
            created_at=self.read_time(row[17]),
            updated_at=self.read_time(row[18]),
            metadata=self.read_json(row[19]),
        )

    def session(self, row: Sequence[Any]) -> Session:
        """A row of :data:`SESSION_COLUMNS` as a Session."""
        return Session(
            id=row[0],
            project=row[1],
            agent=row[2],
            status=row[3],
            started_at=self.read_time(row[4]),
            ended_at=self.optional_time(row[5]),
            last_activity_at=self.read_time(row[6]),
            transcript_path=row[7],
            transcript_offset=int(row[8]),
            prompt_count=row[9],
            parent_session_id=row[10],
        )

    def session_params(self, session: Session) -> tuple[Any, ...]:
        """The values of :data:`SESSION_COLUMNS` for ``session``, as stored."""
        return (
            self.text(session.id),
            self.text(session.project),
            session.agent,
            session.status,
            self.time(session.started_at),
            None if session.ended_at is None else self.time(session.ended_at),
            self.time(session.last_activity_at),
            None if session.transcript_path is None else self.text(session.transcript_path),
            session.transcript_offset,
            session.prompt_count,
            None if session.parent_session_id is None else self.text(session.parent_session_id),
        )

    def injection(self, row: Sequence[Any], memories: tuple[InjectedMemory, ...]) -> Injection:
        """A row of :data:`INJECTION_COLUMNS` with its memories as an Injection."""
        return Injection(
            id=int(row[0]),
            session_id=row[1],
            project=row[2],
            event=row[3],
            prompt_number=row[4],
            created_at=self.read_time(row[5]),
            mode=row[6],
            relayed=bool(row[7]),
            hook_ms=float(row[8]),
            chars=int(row[9]),
            tokens=int(row[10]),
            prompt=row[11],
            text=row[12],
            memories=memories,
            cleared=bool(row[13]),
        )


class SQLiteDialect(Dialect):
    """SQLite: ``?`` placeholders, times as epoch seconds, JSON as text, booleans as 0/1."""

    true = "1"
    false = "0"
    like = "LIKE"  # case-insensitive for ASCII
    greatest = "max"
    # A unary + on a column keeps the planner off its index (see CommonQueries.find_memory).
    unindexed = "+"
    chunk = 500  # well below SQLite's limit of bound variables

    def sql(self, statement: str) -> str:
        return statement.replace("%s", "?")

    def any_of(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def any_file(self, column: str, paths: Sequence[str]) -> tuple[str, list[Any]]:
        ors = [f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)" for _ in paths]
        return "(" + " OR ".join(ors or ["0"]) + ")", list(paths)

    def day(self, column: str) -> str:
        return f"strftime('%Y-%m-%d', {column}, 'unixepoch')"

    def byte_length(self, column: str) -> str:
        return f"length(CAST({column} AS BLOB))"

    def time(self, value: datetime) -> float:
        return to_epoch(value)

    def flag(self, value: bool) -> int:
        return int(bool(value))

    def read_time(self, value: Any) -> datetime:
        return from_epoch(value)

    def read_json(self, value: Any) -> Any:
        # What `value` writes for the many rows without files, tags or metadata: a
        # search reads three per candidate (json.loads costs ~1.5 µs each).
        if value == "[]":
            return []
        if value == "{}":
            return {}
        return json.loads(value)

    def value(self, name: str, value: Any) -> Any:
        if name in JSON_FIELDS:
            if not value:  # most rows: no files, tags or metadata (json.dumps costs µs each)
                return "{}" if name == "metadata" else "[]"
            if name == "metadata":
                return _METADATA_JSON(value)
            return json_text(list(value))
        if name in _SQLITE_TIME_FIELDS:
            return None if value is None else to_epoch(value)
        if name == "stale":
            return self.flag(value)
        return value

    def insert_id(self, conn: Any, statement: str, params: Sequence[Any]) -> int:
        return int(conn.execute(statement, params).lastrowid)

    def execute_many(self, conn: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        conn.executemany(statement, rows)


# json.dumps with these options, without building an encoder per call (one per JSON field
# of every stored row, and a batch insert's rows).
_METADATA_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
json_text = json.JSONEncoder(ensure_ascii=False).encode

_SQLITE_TIME_FIELDS = frozenset(
    {"created_at", "updated_at", "last_accessed_at", "ended_at", "last_activity_at", "started_at"}
)


def clean(value: Any) -> Any:
    """Replace NUL characters (PostgreSQL text cannot store them) in strings, lists, dicts."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {clean(str(k)): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def as_json(value: Any) -> str:
    """``value`` as JSON text PostgreSQL can store (NUL-free, keys sorted)."""
    return json.dumps(clean(value), ensure_ascii=False, sort_keys=True, default=str)


class PostgresDialect(Dialect):
    """PostgreSQL: ``%s`` placeholders, ``timestamptz``, ``jsonb``, array parameters;
    NUL characters are stored as U+FFFD."""

    true = "true"
    false = "false"
    like = "ILIKE"
    greatest = "greatest"
    unindexed = ""
    chunk = 10_000  # one array parameter each; bounds a statement's size

    def sql(self, statement: str) -> str:
        return statement

    def any_of(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        items = [clean(v) for v in values] if sql_type == "text" else list(values)
        return f"{column} = ANY(%s::{sql_type}[])", [items]

    def any_file(self, column: str, paths: Sequence[str]) -> tuple[str, list[Any]]:
        if not paths:
            return "false", []
        return f"{column} ?| %s::text[]", [[clean(path) for path in paths]]

    def day(self, column: str) -> str:
        return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')"

    def byte_length(self, column: str) -> str:
        return f"octet_length({column})"

    def text(self, value: str) -> str:
        return str(clean(value))

    def time(self, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value

    def flag(self, value: bool) -> bool:
        return bool(value)

    def read_time(self, value: Any) -> datetime:
        moment: datetime = value.astimezone(UTC)
        return moment

    def read_json(self, value: Any) -> Any:
        return value  # psycopg loads jsonb

    def value(self, name: str, value: Any) -> Any:
        if name in JSON_FIELDS:
            if name == "metadata":
                return as_json(value or {})
            return as_json(list(value or ()))
        if name == "stale":
            return self.flag(value)
        return clean(value)

    def insert_id(self, conn: Any, statement: str, params: Sequence[Any]) -> int:
        row = conn.execute(statement + " RETURNING id", params).fetchone()
        return int(row[0])

    def execute_many(self, conn: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with conn.cursor() as cur:
                cur.executemany(statement, rows)


SQLITE = SQLiteDialect()
POSTGRES = PostgresDialect()
