"""SQLite failures as one-line StoreErrors that say what happened and what to do.

A full disk and a read-only database are the machine's state, not a bug: they
get their own classes (:class:`DiskFull`, :class:`ReadOnlyDatabase`, exit 4
and HTTP 503 like every StoreError) so callers can react — a search skips its
access counting on a read-only database instead of failing; so does a busy one
(:class:`StoreBusy`). Only a damaged file suggests ``memlane restore`` (or ``memlane salvage``).

SQLite often reports a full disk as a plain I/O error (creating the WAL index
fails before any page is written), or as a read-only database (when it was
opened for reading only, see ``SQLiteStore``), so such errors on a file system
with no space left are called what they are.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from memlane.errors import RecordRefused, StoreError

# What SQLite says of a value it refuses whenever it is given (RecordRefused); a bind
# parameter out of range (SQLITE_RANGE) is a statement's mistake, refused again every time.
REFUSALS = (
    sqlite3.SQLITE_CONSTRAINT,
    sqlite3.SQLITE_TOOBIG,
    sqlite3.SQLITE_MISMATCH,
    sqlite3.SQLITE_RANGE,
)


class DiskFull(StoreError):
    """The disk holding the database has no space left."""


class ReadOnlyDatabase(StoreError):
    """The database (its file, or the file system) cannot be written."""


class StoreBusy(StoreError):
    """Another process held the database's write lock for the whole wait."""


def _code(exc: sqlite3.Error) -> int:
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def ran_out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` is a write stopped by a full disk (SQLite's, or the OS's)."""
    if isinstance(exc, DiskFull):
        return True
    if isinstance(exc, OSError):
        return exc.errno == errno.ENOSPC
    return isinstance(exc, sqlite3.Error) and _code(exc) == sqlite3.SQLITE_FULL


def no_space_left(location: str) -> bool:
    """True when the file system holding ``location`` has no block or inode left."""
    try:
        info = os.statvfs(Path(location).parent)
    except OSError:
        return False
    return info.f_bavail == 0 or info.f_favail == 0


def is_read_only_file_system(location: str) -> bool:
    """True when the file system holding ``location`` is mounted read-only."""
    try:
        return bool(os.statvfs(Path(location).parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def disk_full(location: str) -> DiskFull:
    """The error for a write ``location``'s full disk stopped."""
    return DiskFull(f"the disk holding {location} is full; free some space and try again")


def storage_error(location: str, exc: sqlite3.Error) -> StoreError:
    """The one-line error for a SQLite failure on ``location``, with the next step."""
    code = _code(exc)
    unwritable = (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN)
    if code == sqlite3.SQLITE_FULL or (code in unwritable and no_space_left(location)):
        return disk_full(location)
    if code == sqlite3.SQLITE_READONLY or is_read_only_file_system(location):
        return ReadOnlyDatabase(
            f"the database {location} is read-only ({exc}): searches work, but saving needs"
            " write permission on the file and its directory"
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreBusy(
            f"the database {location} is busy: another memlane process (an import, the"
            " worker) held its write lock for too long; try again when it has finished"
        )
    if code in REFUSALS:
        return RecordRefused(f"the database {location} refuses a value given to it: {exc}")
    if code == sqlite3.SQLITE_NOTADB:
        return StoreError(
            f"{location} is not a SQLite database; memlane left it unchanged (check the path;"
            " if it was memlane's database, restore a backup with `memlane restore`)"
        )
    if code == sqlite3.SQLITE_CORRUPT:
        return StoreError(
            f"the database {location} is damaged ({exc}); restore a backup with `memlane"
            " restore`, or, without one, save what is still readable with `memlane salvage"
            " FILE.jsonl`"
        )
    if code == sqlite3.SQLITE_CANTOPEN:
        return StoreError(
            f"cannot open the database {location} ({exc}); check that its directory exists"
            " and can be written"
        )
    if code == sqlite3.SQLITE_IOERR:
        return StoreError(f"disk I/O error on the database {location} ({exc}); check the disk")
    return StoreError(f"database error on {location}: {exc}")
