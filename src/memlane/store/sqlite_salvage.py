"""Reading what is still readable from a damaged SQLite database, without writing it.

A damaged file makes every normal command refuse (``storage_error``: "restore a
backup"). For a user without a backup, :class:`SalvageReader` reads the memories
and sessions tables row by row range: a range whose read fails with a
``sqlite3.DatabaseError`` is halved until single rows, so every row SQLite can
still read is kept and each unreadable one is counted as lost. A row whose
values no longer decode (a page overwritten with other bytes) is lost too.

The file is opened read-only by URI (``mode=ro``; ``immutable=1`` when no WAL
holds pending writes, so not even a lock or a ``-shm`` file is written), with
``trusted_schema`` off and ``writable_schema`` on (which tolerates a schema naming
pages that were cut off: SQLite's ``.recover`` does the same), and only real
tables named ``memories`` and ``sessions`` are read: a crafted view or trigger
runs nothing here.

A lost count is of row ids that could not be read: an id deleted before the
damage, in a damaged page, is counted too (SQLite cannot tell them apart).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memlane.errors import InvalidInput, StoreError
from memlane.models import Memory, Session
from memlane.store.dialect import MEMORY_COLUMNS, SESSION_COLUMNS, SQLITE
from memlane.store.sqlite_file import uri_path, writes_pending
from memlane.text import shorten

# Rows one range read asks for; a failed range is halved down to single rows.
RANGE = 512
# Past every row id SQLite can give (a rowid is a signed 64-bit integer).
SQLITE_MAX_ROWID = 2**63
Row = Sequence[Any]
# What reading a row whose values are not memlane's raises (json, datetime, int).
BAD_ROW = (TypeError, ValueError, KeyError, OverflowError, OSError, RecursionError)


class SalvageReader:
    """The readable rows of a damaged memlane database (see the module docstring).

    ``lost_memories`` and ``lost_sessions`` count the rows the iterators could not
    give, final once each is exhausted.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lost_sessions = 0
        self.sessions_unread = False  # no bound on the sessions' row ids could be read
        self._kept: set[int] = set()  # memory ids given
        self._failed: set[int] = set()  # memory ids whose read or decoding failed
        self._listed: set[int] | None = None  # memory ids an index lists
        shown = shorten(str(path), 200)
        if not path.exists():
            raise InvalidInput(f"there is no database at {shown}; check the damaged file's path")
        if not path.is_file():
            raise InvalidInput(f"{shown} is not a regular file; give the damaged database file")
        uri = f"file:{uri_path(path)}?mode=ro"
        if not writes_pending(path):
            uri += "&immutable=1"
        self._conn = sqlite3.connect(uri, uri=True)
        try:
            self._conn.execute("PRAGMA trusted_schema = OFF")
            # Without it one index whose root page was cut off makes SQLite refuse the
            # whole schema, so no table could be read (writes stay impossible: read-only).
            self._conn.execute("PRAGMA writable_schema = ON")
            tables = {
                str(name): str(kind)
                for name, kind in self._conn.execute(
                    "SELECT name, type FROM sqlite_master WHERE name IN"
                    " ('memories', 'sessions', 'sqlite_sequence', 'memories_created')"
                )
            }
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(
                f"nothing can be salvaged from {shown}: SQLite cannot read its list of"
                f" tables ({exc}); restore a backup with `memlane restore` if you have one"
            ) from None
        if tables.get("memories") != "table":
            self._conn.close()
            raise InvalidInput(f"{shown} is not a memlane database (no memories table)")
        self._sessions = tables.get("sessions") == "table"
        self._sequence = tables.get("sqlite_sequence") == "table"
        self._index = tables.get("memories_created") == "index"

    def close(self) -> None:
        self._conn.close()

    @property
    def lost_memories(self) -> int:
        """Memories not given: an index lists them (or their read failed), and no read
        of the table gave them. Without a readable index, the ids whose read failed."""
        if self._listed is None:
            return len(self._failed - self._kept)
        return len((self._listed | self._failed) - self._kept)

    def drop(self, memory_id: int) -> None:
        """Count a memory given but not usable (a caller could not write it) as lost."""
        self._kept.discard(memory_id)
        self._failed.add(memory_id)

    def drop_session(self) -> None:
        """Count a session given but not usable (a caller could not write it) as lost."""
        self.lost_sessions += 1

    def memories(self) -> Iterator[Memory]:
        """Every readable memory, in id order."""
        top = self._highest("memories")
        if top is None:
            raise StoreError(
                f"nothing can be salvaged from {shorten(str(self.path), 200)}: the highest"
                " memory id cannot be read; restore a backup with `memlane restore`"
            )
        self._listed = self._indexed_ids()
        for row in self._rows("memories", MEMORY_COLUMNS, top, self._failed):
            try:
                memory = _memory(row)
            except BAD_ROW:
                if isinstance(row[0], int) and 0 < row[0] <= top:  # not a wrong id
                    self._failed.add(row[0])
                continue
            self._kept.add(memory.id)
            yield memory

    def sessions(self) -> Iterator[Session]:
        """Every readable session (none when the table's extent cannot be read)."""
        if not self._sessions:
            return
        top = self._highest("sessions")
        if top is None:
            self.sessions_unread = True
            return
        failed: set[int] = set()
        for row in self._rows("sessions", SESSION_COLUMNS, top, failed):
            try:
                session = _session(row)
            except BAD_ROW:
                self.lost_sessions += 1
                continue
            yield session
        self.lost_sessions += len(failed)

    def _indexed_ids(self) -> set[int] | None:
        """The memory ids the ``memories_created`` index lists (a b-tree of its own,
        often intact where the table's pages are not); None when it cannot be read."""
        if not self._index:
            return None
        try:
            rows = self._conn.execute(
                "SELECT rowid FROM memories INDEXED BY memories_created ORDER BY created_at"
            ).fetchall()
        except sqlite3.DatabaseError:
            return None
        return {int(row[0]) for row in rows if isinstance(row[0], int)}

    def _highest(self, table: str) -> int | None:
        """The highest row id ``table`` holds or held, None when none can be read."""
        found: list[int] = []
        try:
            row = self._conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()
            found.append(int(row[0] or 0))
        except (sqlite3.DatabaseError, TypeError, ValueError):
            pass
        if self._sequence:  # AUTOINCREMENT's record: in a page of its own, often intact
            try:
                row = self._conn.execute(
                    "SELECT max(seq) FROM sqlite_sequence WHERE name = ?", (table,)
                ).fetchone()
                if row is not None and row[0] is not None:
                    found.append(int(row[0]))
            except (sqlite3.DatabaseError, TypeError, ValueError):
                pass
        return max(found) if found else None

    def _rows(self, table: str, columns: str, top: int, failed: set[int]) -> Iterator[Row]:
        statement = f"SELECT {columns} FROM {table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid"
        start = 1
        while start <= top:
            end = min(start + RANGE - 1, top)
            yield from self._range(statement, start, end, failed)
            start = self._next_id(table, end)

    def _next_id(self, table: str, after: int) -> int:
        """The lowest row id above ``after`` (past the end when none): ids can be far
        apart, and a crafted file can claim 9e18 of them (in ``sqlite_sequence``, or one
        row's id), which reading range by range would take forever. A seek trusts the
        b-tree as a range read does; when it fails, ``after + 1``."""
        try:
            row = self._conn.execute(
                f"SELECT min(rowid) FROM {table} WHERE rowid > ?", (after,)
            ).fetchone()
        except sqlite3.DatabaseError:
            return after + 1
        found = row[0] if row is not None else None
        return found if isinstance(found, int) and found > after else SQLITE_MAX_ROWID

    def _range(self, statement: str, low: int, high: int, failed: set[int]) -> Iterator[Row]:
        """The rows of ids ``low`` to ``high``; a failed read is halved down to single
        ids (those failing alone go to ``failed``). A damaged cell can hold a wrong id
        that ends a range scan early without an error: the ids after the last one read
        are read again, until a read gives nothing new."""
        while low <= high:
            try:
                rows = self._conn.execute(statement, (low, high)).fetchall()
            except sqlite3.DatabaseError:
                if low == high:
                    failed.add(low)
                    return
                middle = (low + high) // 2
                yield from self._range(statement, low, middle, failed)
                yield from self._range(statement, middle + 1, high, failed)
                return
            yield from rows
            last = rows[-1][0] if rows else None
            if not isinstance(last, int) or not low <= last < high:
                return
            low = last + 1


# The value each column holds as memlane writes it, in the order of MEMORY_COLUMNS and
# SESSION_COLUMNS; "?" allows NULL.
MEMORY_SHAPE = (
    "id", "text", "text?", "text", "text", "text", "text", "list", "list", "text?", "text",
    "text?", "text", "count", "count", "time?", "flag", "time", "time", "object",
)  # fmt: skip
SESSION_SHAPE = (
    "text", "text", "text", "text", "time", "time?", "time", "text?", "count", "count", "text?",
)  # fmt: skip


def _fits(value: Any, kind: str) -> bool:
    if kind == "id":
        return type(value) is int and value > 0
    if kind == "text":
        return isinstance(value, str)
    if kind == "count":
        return type(value) is int and value >= 0
    if kind == "flag":
        return type(value) is int and value in (0, 1)
    if kind == "time":
        return type(value) in (int, float) and math.isfinite(value)
    if kind == "list":
        items = json.loads(value) if isinstance(value, str) else None
        return isinstance(items, list) and all(isinstance(item, str) for item in items)
    if kind == "object":
        return isinstance(value, str) and isinstance(json.loads(value), dict)
    raise AssertionError(kind)


def _check(row: Row, shape: tuple[str, ...]) -> None:
    """Refuse (TypeError) a row with a value of another type than memlane writes there:
    a damaged page can hold other bytes in the place of a row's values, a crafted file
    anything (``"abc"`` as the files would read as three file names)."""
    if len(row) != len(shape):
        raise TypeError("not a row of this table")
    for value, kind in zip(row, shape, strict=True):
        if not (value is None and kind.endswith("?")) and not _fits(value, kind.rstrip("?")):
            raise TypeError(f"not {kind}")


def _memory(row: Row) -> Memory:
    """A row as a Memory; TypeError (or another of BAD_ROW) when it is not one."""
    _check(row, MEMORY_SHAPE)
    return SQLITE.memory(row)


def _session(row: Row) -> Session:
    """A row as a Session; TypeError (or another of BAD_ROW) when it is not one."""
    _check(row, SESSION_SHAPE)
    return SQLITE.session(row)
