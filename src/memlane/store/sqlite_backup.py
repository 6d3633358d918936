"""Verified copies of a SQLite database: what backup and restore are built on.

A copy goes through SQLite's online backup API (``Connection.backup``) in one
step, so it reads a consistent snapshot while hooks keep writing (WAL). It is
written to a temporary 0600 file next to the target, checked with
``integrity_check``, switched to a self-contained rollback journal and renamed
into place: a copy is either complete or absent.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from memlane.errors import StoreError
from memlane.paths import ensure_private_dir


def copy_into_new_file(source: sqlite3.Connection, dest: Path) -> int:
    """Copy ``source`` into a new verified 0600 file at ``dest``; returns its memory count."""
    ensure_private_dir(dest.parent)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    os.close(fd)
    try:
        target = sqlite3.connect(tmp)
        try:
            source.backup(target)  # pages=-1: one step, one consistent snapshot
            # A backup should be one self-contained file, not a WAL database.
            target.execute("PRAGMA journal_mode = DELETE")
            check = target.execute("PRAGMA integrity_check").fetchone()[0]
            if check != "ok":
                raise StoreError(f"the backup failed its integrity check: {check}")
            memories = memory_count(target)
        finally:
            target.close()
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return memories


def memory_count(conn: sqlite3.Connection) -> int:
    """Rows in ``memories`` (0 when the database has no such table or cannot be read)."""
    try:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0
