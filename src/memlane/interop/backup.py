"""Backup and restore of the SQLite database.

Backup asks the store for a verified copy (``Store.backup_to``): SQLite's
online backup API reads a consistent snapshot while hooks keep writing (WAL)
into a new 0600 file that is either complete or absent
(``store/sqlite_backup.py``).

Restore first takes a private snapshot of the backup (so the file cannot
change between its check and its use), and refuses one that fails
``integrity_check``, comes from a newer memlane, or whose schema is not
exactly what memlane's migrations build (a trigger, view, table or index of
anyone else's would run on every later write). Migrations bring that copy up to
date, and every text in it goes through today's privacy filter whatever the file
records of earlier passes (``refiltering.refilter_all``): a backup is a file anyone
may have edited, and the live database never holds a secret or a ``<private>`` block
a hook could inject. It keeps the current database as ``<db>.bak`` (``<db>.bak.2``,
``.bak.3``, … when that name is taken: an earlier restore's copy may be the only one
of the user's own data), then copies the backup into the live database through the
same API — connections other processes hold see the restored data. When the live
file is too damaged for that, it is replaced by a verified copy instead.

PostgreSQL is out of scope here: use ``pg_dump`` / ``pg_restore``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.errors import InvalidInput, StoreError
from memlane.models import utcnow
from memlane.paths import (
    Staging,
    output_folder,
    remove_temp,
    same_file,
)
from memlane.store import is_postgres_url
from memlane.store.sqlite_backup import (
    check_schema,
    copy_into_new_file,
    rewrite_clean,
    write_verified_copy,
)
from memlane.store.sqlite_errors import DiskFull, disk_full, ran_out_of_space

if TYPE_CHECKING:
    from collections.abc import Callable

    from memlane.config import Settings
    from memlane.core import Core
    from memlane.maintenance.refiltering import RefilterReport

log = logging.getLogger(__name__)

PG_HINT = "backup and restore work on SQLite databases; for PostgreSQL use pg_dump / pg_restore"


@dataclass(frozen=True, slots=True)
class BackupResult:
    path: str
    bytes: int
    memories: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RestoreResult:
    path: str
    previous: str | None
    memories: int
    # Memories and sessions of the backup left out by today's privacy filter (a name it
    # is known by, or all of its text, is a secret), and memories it changed (a text masked,
    # a field cleaned as a new memory's: a blank tag dropped, a type in lower case).
    left_out: int = 0
    filtered: int = 0


def free_name(first: Path, nth: Callable[[int], Path]) -> Path:
    """``first``, else the first of ``nth(2)``, ``nth(3)``… that nothing holds (a link,
    even a dangling one, holds its name)."""
    candidate, number = first, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = nth(number)
    return candidate


def default_backup_path(data_dir: Path) -> Path:
    """``<data dir>/backups/memlane-YYYYmmdd-HHMMSS.db`` (a free name)."""
    folder = data_dir / "backups"
    stem = f"memlane-{utcnow():%Y%m%d-%H%M%S}"
    return free_name(folder / f"{stem}.db", lambda n: folder / f"{stem}-{n}.db")


def backup(core: Core, path: str | None = None, *, create: bool = False) -> BackupResult:
    """Back up the database to ``path`` (default: under the data dir).

    The folder of a ``path`` given must exist, as a ``--db`` directory or a sync folder
    must: a typo would put the safety copy where nobody looks for it. With ``create``
    it is made (0700), but only inside an existing folder. The default folder is
    memlane's own and made when missing.
    """
    store = core.store
    dest = Path(path).expanduser() if path else default_backup_path(core.settings.paths.data_dir)
    if path:
        output_folder(dest, "the backup", create=create)  # MissingFolder: not made
    if dest.exists():
        raise InvalidInput(f"{dest} already exists; give a new backup path")
    if store.same_database(dest):
        raise InvalidInput("the backup path is the database itself; give another path")
    memories = store.backup_to(dest, core.settings.paths.data_dir)
    return BackupResult(path=str(dest), bytes=dest.stat().st_size, memories=memories)


def _open_read_only(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise InvalidInput(f"no backup file at {path}")
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{path} cannot be opened as SQLite ({exc})") from None


def _stage(backup_path: Path, db: Path) -> Path:
    """A private snapshot of the backup next to the database, checked once: its schema
    exactly what memlane's migrations build up to its version (``check_schema``: no
    trigger, view, table or index of anyone else's, which would run on every later
    write), then SQLite's integrity check (which evaluates every row's CHECK
    constraints: the schema goes first, so a crafted one never runs).

    Everything after works on this copy: the file given may sit in a folder
    other users can write, and must not change between its check and its use.
    """
    source = _open_read_only(backup_path)
    staged = db.with_name(f".{db.name}.restore")

    def vet(copy: sqlite3.Connection) -> None:
        check_schema(copy, str(backup_path))
        _check_rows(copy, backup_path)

    try:
        copy_into_new_file(source, staged, db.parent, vet=vet)
    except (sqlite3.DatabaseError, StoreError, OSError) as exc:
        if ran_out_of_space(exc):  # the backup is fine: the copy found no room
            raise _no_room(db) from None
        if isinstance(exc, OSError):
            raise
        raise InvalidInput(
            f"{backup_path} cannot be read as SQLite ({exc}); nothing restored"
        ) from None
    finally:
        source.close()
    return staged


def _no_room(db: Path) -> StoreError:
    return disk_full(f"{db} (a restore copies the backup next to the database)")


# Every column of every table as memlane reads it back (store.dialect). The schema alone
# lets any value through (SQLite's types are affinities); a backup edited outside memlane
# ("not a date", bad JSON, 1e300, a blob title, a session started at 'x') was restored,
# and then stats, get, search, export and even the worker's start ended in tracebacks.
# The generic rule is the column's declared type, from the one schema memlane's
# migrations build (``check_schema`` has made sure the backup's is exactly that): INTEGER
# holds integers, REAL numbers, TEXT text, BLOB bytes, and NULL only where the column
# allows it. Times (``*_at``) are epoch seconds in the years timeparse accepts, counts
# and offsets are not negative, and the JSON columns hold JSON of their shape.
_EPOCH = "typeof({c}) IN ('integer', 'real') AND {c} BETWEEN {earliest} AND {latest}"
_TYPES = {
    "INTEGER": "typeof({c}) = 'integer'",
    "REAL": "typeof({c}) IN ('integer', 'real')",
    "TEXT": "typeof({c}) = 'text'",
    "BLOB": "typeof({c}) = 'blob'",
}
_NOT_NEGATIVE = "{c} >= 0"
# CASE, not AND: SQLite may evaluate json_type of text json_valid refused (an error).
_TEXT_LIST = (
    "CASE WHEN json_valid({c}) THEN json_type({c}) = 'array' AND NOT EXISTS"
    " (SELECT 1 FROM json_each({c}) WHERE json_each.type != 'text') ELSE 0 END"
)
_COLUMN_RULES = {
    ("memories", "files"): _TEXT_LIST,
    ("memories", "tags"): _TEXT_LIST,
    ("memories", "metadata"): "CASE WHEN json_valid({c}) THEN json_type({c}) = 'object' ELSE 0 END",
    ("maintenance_log", "details"): "json_valid({c})",
}
# FTS5's own tables (rebuilt from memories) and SQLite's counter table carry no types.
_UNTYPED_TABLES = ("sqlite_sequence", "memories_fts")


def _column_rule(table: str, name: str, declared: str, not_null: bool) -> str | None:
    """The condition a value of ``table.name`` must meet, ``{c}`` standing for it."""
    rule = _TYPES.get(declared.upper())
    if rule is None:
        return None
    if name.endswith("_at"):
        rule = _EPOCH
    elif declared.upper() == "INTEGER" and name.endswith(("count", "offset", "chars", "tokens")):
        rule = f"{rule} AND {_NOT_NEGATIVE}"
    extra = _COLUMN_RULES.get((table, name))
    if extra is not None:
        rule = f"{rule} AND {extra}"
    return rule if not_null else f"{{c}} IS NULL OR ({rule})"


def _check_rows(copy: sqlite3.Connection, backup_path: Path) -> None:
    """Refuse a backup holding a value memlane cannot read back, naming the table, the
    column and the first row (see the rules above)."""
    from memlane.privacy import excerpt
    from memlane.timeparse import EARLIEST, LATEST

    bounds = {"earliest": int(EARLIEST.timestamp()), "latest": int(LATEST.timestamp())}
    tables = [
        row[0]
        for row in copy.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        if not row[0].startswith(_UNTYPED_TABLES)
    ]
    for table in tables:
        info = copy.execute(f'PRAGMA table_info("{table}")').fetchall()
        keys = [row[1] for row in sorted(info, key=lambda row: row[5]) if row[5]]
        key = keys[0] if keys else "rowid"
        for _cid, name, declared, not_null, _default, pk in info:
            rule = _column_rule(table, name, declared, bool(not_null or pk))
            if rule is None:
                continue
            condition = rule.format(c=f'"{table}"."{name}"', **bounds)
            bad = copy.execute(
                f'SELECT count(*), min("{key}") FROM "{table}" WHERE NOT coalesce(({condition}), 0)'
            ).fetchone()
            if bad[0]:
                raise InvalidInput(
                    f"{backup_path} holds {bad[0]:,} {table} rows whose {name} memlane cannot"
                    f" read (the first: {key} {excerpt(bad[1])}); nothing restored"
                )


def _filter_staged(staged: Path, settings: Settings, db: Path) -> RefilterReport:
    """Migrate the staged copy, pass its texts through the privacy filter of
    ``settings`` (module docstring), and rewrite it without what the filter masked
    (:func:`rewrite_clean`: a crafted file's index entries and free pages too); what the
    filter did."""
    from memlane.core import Core
    from memlane.maintenance.refiltering import refilter_all
    from memlane.store.sqlite import SQLiteStore

    try:
        store = SQLiteStore(staged)
        try:
            with store.transaction():
                report = refilter_all(Core(store, settings))
        finally:
            store.close()
        rewrite_clean(staged)
        return report
    except (sqlite3.DatabaseError, DiskFull) as exc:
        if ran_out_of_space(exc):
            raise _no_room(db) from None
        raise


def previous_path(db: Path) -> Path:
    """Where a restore keeps the database it replaces: ``<db>.bak``, else the first
    free ``<db>.bak.N`` (N from 2; a link or anything else holds its name too)."""
    return free_name(db.with_name(db.name + ".bak"), lambda n: db.with_name(f"{db.name}.bak.{n}"))


def _copy_previous(target: Path, kept: Staging) -> None:
    """A copy of the current database (through the backup API when it opens) in the
    private folder ``kept``: it gets its :func:`previous_path` once it is whole, before
    the restore touches the database, so a copy that fails (a full disk) leaves none
    behind and a restore interrupted after it leaves the previous database there."""
    try:
        try:
            current = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
            try:
                write_verified_copy(current, kept.sqlite_path())
            finally:
                current.close()
        except (sqlite3.DatabaseError, StoreError) as exc:
            if ran_out_of_space(exc):
                raise _no_room(target) from None
            # A damaged database is exactly when people restore: keep its raw bytes.
            log.warning("cannot read %s (%s); keeping a raw copy as its .bak", target, exc)
            kept.clear()
            with target.open("rb") as raw, os.fdopen(kept.new_file(), "wb") as copy:
                shutil.copyfileobj(raw, copy)
    except OSError as exc:
        if ran_out_of_space(exc):
            raise _no_room(target) from None
        raise


def restore_database(settings: Settings, backup_path: str) -> RestoreResult:
    """Replace ``settings``' database with the verified backup at ``backup_path``, its
    texts passed through the privacy filter ``settings`` configure (module docstring)."""
    target = settings.database
    if is_postgres_url(target):
        raise InvalidInput(PG_HINT)
    source_path = Path(backup_path).expanduser()
    db = Path(target).expanduser()
    if db.exists() and source_path.exists() and same_file(db, source_path):
        raise InvalidInput("the backup is the database itself; nothing to restore")
    staged = _stage(source_path, db)
    previous: Path | None = None
    try:
        filtered = _filter_staged(staged, settings, db)
        with contextlib.ExitStack() as keeping:
            kept: Staging | None = None
            if db.exists() and db.stat().st_size:
                kept = keeping.enter_context(Staging(db.with_name(db.name + ".bak")))
                _copy_previous(db, kept)
                # Published before the live file is touched: an interrupt (Ctrl-C)
                # during the copy in must not take the only copy of the old database.
                previous = previous_path(db)
                kept.publish(previous)
            _copy_in(staged, db)
    finally:
        remove_temp(staged)
    from memlane.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    try:
        memories = store.stats().memories
    finally:
        store.close()
    return RestoreResult(
        path=str(db),
        previous=None if previous is None else str(previous),
        memories=memories,
        left_out=len(filtered.deleted_memories) + len(filtered.deleted_sessions),
        filtered=len(filtered.memories),
    )


def _copy_in(staged: Path, db: Path) -> None:
    """Copy the verified ``staged`` database into ``db`` (in place, else by replacing it)."""
    source = sqlite3.connect(f"{staged.resolve().as_uri()}?mode=ro", uri=True)
    try:
        try:
            live = sqlite3.connect(db, timeout=10)
            try:
                source.backup(live)
                check = live.execute("PRAGMA integrity_check").fetchone()[0]
                if check != "ok":
                    raise sqlite3.DatabaseError(check)
            finally:
                live.close()
        except sqlite3.DatabaseError as exc:
            if ran_out_of_space(exc):  # the copy rolled back: the database is as it was
                raise _no_room(db) from None
            log.warning("restoring into %s in place failed (%s); replacing the file", db, exc)
            try:
                copy_into_new_file(source, db, db.parent)
            except (sqlite3.Error, StoreError, OSError) as error:
                if ran_out_of_space(error):
                    raise _no_room(db) from None
                raise
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(str(db) + suffix).unlink()
    finally:
        source.close()
