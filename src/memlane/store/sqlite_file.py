"""Opening a file as memlane's SQLite database without harming anything else.

A typo in ``--db`` must not start a second memory, and a path to someone
else's file must not change it. So, before SQLite writes a byte:

* a missing parent directory is an error unless the caller may create it (the
  default location, or ``--create``);
* a missing file is created here, exclusively and 0600: memlane sets the mode
  of the files it creates and of no other;
* an existing file must be a regular file and is first opened read-only: it
  must be empty, an empty SQLite database or memlane's own. Anything else is
  refused and left exactly as it was (bytes and mode);
* which migrations a database ran is read only from memlane's own
  ``schema_version`` table (:func:`recorded_migrations`), for opening and restoring.

SQLite's errors become one-line messages in :mod:`memlane.store.sqlite_errors`.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path

from memlane.errors import InvalidInput, StoreError
from memlane.paths import check_own_file, check_private_dir, ensure_private_dir
from memlane.store.migrations.sqlite import SCHEMA_VERSION_TABLE
from memlane.store.sqlite_errors import (
    disk_full,
    is_read_only_file_system,
    no_space_left,
    storage_error,
)
from memlane.text import shorten

# Tables every memlane database has; a database with other tables and not these is not ours.
MEMLANE_TABLES = frozenset({"schema_version", "memories"})
CHECK_TIMEOUT_S = 5.0
# SCHEMA_VERSION_TABLE as SQLite records it in sqlite_master.
SCHEMA_VERSION_SQL = SCHEMA_VERSION_TABLE.replace(" IF NOT EXISTS", "")


class MissingDirectory(InvalidInput):
    """The directory of an explicitly named database does not exist (not created for it)."""


def prepare(path: Path, *, create_dir: bool) -> bool:
    """Make ``path`` safe to open as memlane's database; True when this call created it.

    ``create_dir``: ``path`` is memlane's own location (its home): the directory is
    created if missing, and an existing file there must be a regular file of the
    user's, not a link (:func:`memlane.paths.check_own_file`). A path given
    explicitly (``--db``) may be a link the user made.
    """
    parent = path.parent
    if not parent.is_dir():
        if not create_dir:
            raise MissingDirectory(
                f"the directory {parent} of the database {path} does not exist;"
                " check the path, or create the directory first"
            )
        ensure_private_dir(parent)
    if create_dir:
        # Its home was checked when the settings were read; missing then, it may have
        # been made since by another user (a new MEMLANE_HOME in /tmp).
        check_private_dir(parent)
        check_own_file(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        return _create(path)
    except OSError as exc:  # a loop of links, a name too long: not a path to a database
        shown = shorten(str(path), 200)
        if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG, errno.ENOTDIR):
            raise InvalidInput(f"{shown}: {exc.strerror}; give memlane a database file") from None
        raise StoreError(f"cannot open the database {shown} ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"{path} is not a regular file; give memlane a database file")
    if info.st_size:
        _check_existing(path)
    return False


def _create(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:  # another process created it a moment ago: check it like any
        _check_existing(path)
        return False
    except OSError as exc:
        raise StoreError(f"cannot create the database {path} ({exc.strerror})") from None
    os.close(fd)
    return True


def _check_existing(path: Path) -> None:
    """Refuse a file that is not an (empty) SQLite database or memlane's, reading only."""
    uri = f"file:{uri_path(path)}?mode=ro"
    full = no_space_left(str(path))
    if (is_read_only_file_system(str(path)) or full) and not writes_pending(path):
        # WAL needs a -shm file it could not create there. Not with a -wal holding
        # writes: immutable reads the main file without them, which then looks damaged.
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=CHECK_TIMEOUT_S)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if full:  # whatever SQLite says, a full disk is what to fix first
            raise disk_full(str(path)) from None
        raise storage_error(str(path), exc) from None
    if tables and not MEMLANE_TABLES.issubset(tables):
        raise InvalidInput(
            f"{path} is a SQLite database of another program (no memlane tables);"
            " memlane left it unchanged: give memlane its own file"
        )


def writes_pending(path: Path) -> bool:
    """Whether ``path``'s ``-wal`` holds writes not yet in the main file: an
    ``immutable`` read, which ignores the WAL, would then miss them (and may find the
    main file half-checkpointed: "malformed")."""
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except OSError:
        return False


def uri_path(path: Path) -> str:
    """``path`` for a SQLite ``file:`` URI (urllib.parse would cost the hook path ~2 ms)."""
    text = str(path.absolute())
    for char, code in (("%", "%25"), ("?", "%3f"), ("#", "%23")):
        text = text.replace(char, code)
    return text


def recorded_migrations(conn: sqlite3.Connection, where: str) -> set[int] | None:
    """The migrations ``conn``'s database records as applied; None without a record.

    Read only from memlane's own ``schema_version`` table, its SQL compared first:
    a view, a virtual table or a generated column of that name would run the file's
    own SQL on the read (a recursive view never ends). Anything else of that name
    (in any letter case: SQLite's names ignore it) is refused.
    """
    found = [
        (str(kind), sql)
        for kind, sql in conn.execute(
            "SELECT type, sql FROM sqlite_master WHERE name = 'schema_version' COLLATE NOCASE"
        )
    ]
    if not found:
        return None
    if found != [("table", SCHEMA_VERSION_SQL)]:
        raise InvalidInput(f"{where} is not a memlane database (no schema_version table)")
    return {int(row[0]) for row in conn.execute("SELECT version FROM schema_version")}
