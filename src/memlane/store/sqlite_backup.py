"""Verified copies of a SQLite database, and the schema check: what backup and restore use.

A copy goes through SQLite's online backup API (``Connection.backup``) in one
step, so it reads a consistent snapshot while hooks keep writing (WAL). SQLite
opens files by name, so it writes the copy in a new private folder
(:class:`memlane.paths.Staging`, :meth:`~memlane.paths.Staging.sqlite_path`) beside the
target, or in a folder of memlane's own when another user could rename a folder on the
way to the target; there it is checked with ``integrity_check`` and switched to a
self-contained rollback journal, then renamed into place (from memlane's folder: its
bytes copied by descriptor into a new private folder beside the target first). A target
that is a link or not a regular file is refused; a copy is either complete or absent, in
any folder the user can write.

A database from elsewhere (a restore) must have exactly the schema memlane's
own migrations build (:func:`check_schema`): a trigger, view, table or index
they do not create — or one of theirs with other SQL — would run its own code
on every later write, so such a file is refused. Once a restore has filtered its
copy, :func:`rewrite_clean` leaves no earlier text in it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from memlane.errors import InvalidInput, StoreError
from memlane.paths import (
    Staging,
    UnsafePath,
    check_names_fixed,
    check_output_target,
    remove_orphaned_temps,
)
from memlane.store.sqlite_file import recorded_migrations


def copy_into_new_file(
    source: sqlite3.Connection,
    dest: Path,
    scratch: Path,
    *,
    vet: Callable[[sqlite3.Connection], object] | None = None,
) -> int:
    """Copy ``source`` into a new verified 0600 file at ``dest``; returns its memory count.

    SQLite writes the copy in a new private folder beside ``dest`` when no other user can
    rename a folder on the way there (:func:`check_names_fixed`), and renames it to
    ``dest``. Otherwise it writes in ``scratch``, a folder of memlane's own, and the
    verified bytes are copied by descriptor into a new private folder beside ``dest`` and
    renamed from there (:class:`Staging`: safe in any folder the user can write): only
    then does the copy take its room twice until it is done.
    ``vet``: as in :func:`write_verified_copy`.
    """
    check_output_target(dest)
    if _names_fixed(dest.parent):
        remove_orphaned_temps(scratch)  # a killed copy's folder there, a full copy
        scratch = dest.parent  # SQLite may write there: the copy takes its room once
    with Staging(scratch / dest.name) as written:
        memories = write_verified_copy(source, written.sqlite_path(), vet=vet)
        if dest.parent == scratch:
            written.publish(dest)
            return memories
        with Staging(dest) as stage:
            with open(written.read_file(), "rb") as copy, open(stage.new_file(), "wb") as out:
                shutil.copyfileobj(copy, out)
                out.flush()
                os.fsync(out.fileno())
            stage.publish()
    return memories


def _names_fixed(folder: Path) -> bool:
    """Whether SQLite may write by name in ``folder`` (:func:`check_names_fixed`); a folder
    not there yet is judged by the nearest one that is (the user's new folders follow)."""
    try:
        check_names_fixed(next(p for p in (folder, *folder.parents) if p.exists()))
    except (UnsafePath, OSError):  # shared on the way, or unreadable
        return False
    return True


def write_verified_copy(
    source: sqlite3.Connection,
    path: Path,
    *,
    vet: Callable[[sqlite3.Connection], object] | None = None,
) -> int:
    """Copy ``source`` into the new file ``path`` (in a :class:`Staging` folder), with a
    rollback journal, and check it; returns its memory count.

    ``vet``: called on the copy before its integrity check, which evaluates every
    row's CHECK constraints (a restore passes :func:`check_schema`, so a crafted
    file's constraints never run).
    """
    target = sqlite3.connect(path)
    try:
        source.backup(target)  # pages=-1: one step, one consistent snapshot
        # A backup should be one self-contained file, not a WAL database.
        target.execute("PRAGMA journal_mode = DELETE")
        if vet is not None:
            vet(target)
        check = target.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise StoreError(f"the backup failed its integrity check: {check}")
        return memory_count(target)
    finally:
        target.close()


def rewrite_clean(path: Path) -> None:
    """Rebuild the full-text index of the database at ``path`` from its rows, then
    rewrite the file (VACUUM) with a rollback journal: nothing of an earlier text is
    left in it, in an index entry or a free page (a restore's copy, once filtered)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()


def memory_count(conn: sqlite3.Connection) -> int:
    """Rows in ``memories`` (0 when the database has no such table or cannot be read)."""
    try:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0


# Tables SQLite itself may add (ANALYZE statistics); they hold no code.
SQLITE_STAT_TABLES = frozenset({"sqlite_stat1", "sqlite_stat4"})
SchemaObject = tuple[str, str, str, str | None]  # type, name, table, SQL


def schema_objects(conn: sqlite3.Connection) -> set[SchemaObject]:
    """Every object of ``conn``'s main schema (statistics tables aside)."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master").fetchall()
    return {
        (str(kind), str(name), str(table), sql)
        for kind, name, table, sql in rows
        if not (kind == "table" and name in SQLITE_STAT_TABLES)
    }


def expected_schema(version: int) -> set[SchemaObject]:
    """The schema memlane's migrations 1..``version`` build, from scratch in memory."""
    from memlane.store.migrations.sqlite import MIGRATIONS, SCHEMA_VERSION_TABLE

    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(SCHEMA_VERSION_TABLE)
        for number, _name, sql in MIGRATIONS:
            if number <= version:
                conn.executescript(sql)
        return schema_objects(conn)
    finally:
        conn.close()


def check_schema(conn: sqlite3.Connection, where: str) -> int:
    """Refuse ``conn`` unless its schema is exactly what memlane's migrations build.

    Returns the schema version. The versions recorded must be exactly those of
    memlane's migrations up to the newest recorded, N (no gap, nothing foreign);
    N must be one this memlane knows.
    """
    from memlane.store.migrations import refuse_newer
    from memlane.store.migrations.sqlite import MIGRATIONS

    recorded = recorded_migrations(conn, where)
    if recorded is None:
        raise InvalidInput(f"{where} is not a memlane database (no schema_version table)")
    versions = sorted(recorded)
    refuse_newer(versions, (number for number, _name, _sql in MIGRATIONS), where)
    known = [number for number, _name, _sql in MIGRATIONS if versions and number <= versions[-1]]
    if versions != known or not versions:
        raise InvalidInput(f"{where} records migrations {versions}, not 1..N: not memlane's")
    expected = expected_schema(versions[-1])
    found = schema_objects(conn)
    extra = sorted(found - expected, key=lambda item: (item[0], item[1]))
    missing = sorted(expected - found, key=lambda item: (item[0], item[1]))
    if extra or missing:
        changed = {name for _kind, name, _table, _sql in extra} & {
            name for _kind, name, _table, _sql in missing
        }
        names = [f"{kind} {name!r}" for kind, name, _table, _sql in extra if name not in changed]
        names += [f"{kind} {name!r} (changed)" for kind, name, _t, _s in missing if name in changed]
        names += [
            f"{kind} {name!r} (missing)" for kind, name, _t, _s in missing if name not in changed
        ]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise InvalidInput(
            f"{where} does not have memlane's schema ({shown}): objects memlane does not"
            " create would run on every later write; nothing restored"
        )
    return int(versions[-1])
