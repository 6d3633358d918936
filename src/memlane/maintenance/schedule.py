"""When maintenance runs: the due check, the detached spawn, and the lock.

:func:`maybe_schedule_maintenance` is cheap enough for the Stop hook: it reads
the last ``maintain`` log row and, when one is due, spawns
``python -m memlane maintain --background`` detached (own session, output to
``maintenance.log``). A spawn stamp rate-limits attempts and a lock file keeps
two runs from overlapping. This module imports none of the steps: the hook
path loads only it and ``_common``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memlane.maintenance._common import MAINTAIN, SIZE_TRIGGER
from memlane.models import utcnow

if TYPE_CHECKING:
    from memlane.config import Settings
    from memlane.store.base import Store

# Seconds between two spawn attempts of the background run (a failing run is not
# respawned on every Stop).
SPAWN_COOLDOWN_S = 600.0
OVER_CAP_COOLDOWN_S = 60.0
LOG_FILE = "maintenance.log"
LOCK_FILE = "maintenance.lock"
SPAWN_STAMP = "maintenance.spawn"


def maintenance_due(settings: Settings, last: datetime | None, now: datetime) -> bool:
    """True when automatic maintenance is on and ``interval_hours`` passed since ``last``."""
    if not settings.maintenance__enabled:
        return False
    if last is None or last > now:  # a run stamped by a clock that was ahead
        return True
    return now - last >= timedelta(hours=settings.maintenance__interval_hours)


def _over_size_trigger(settings: Settings) -> bool:
    """True when the database file is over ``SIZE_TRIGGER`` of ``max_db_size_mb``."""
    cap_bytes = settings.maintenance__max_db_size_mb * 1024 * 1024
    return _file_bytes(settings.database) > SIZE_TRIGGER * cap_bytes


def due_reason(settings: Settings, last: datetime | None, now: datetime) -> str | None:
    """Why an automatic run is due: ``"size"`` (over the size trigger: it must not wait
    for the interval), ``"interval"`` (:func:`maintenance_due`), or None (not due, or
    automatic runs are off). The one rule for the scheduler and the run it spawns."""
    if not settings.maintenance__enabled:
        return None
    if _over_size_trigger(settings):
        return "size"
    return "interval" if maintenance_due(settings, last, now) else None


def due_now(settings: Settings, store: Store, now: datetime | None = None) -> bool:
    """:func:`due_reason` against the last ``maintain`` run logged in ``store``."""
    return due_reason(settings, store.last_maintenance(MAINTAIN), now or utcnow()) is not None


def maybe_schedule_maintenance(
    settings: Settings, store: Store | None = None, *, now: datetime | None = None
) -> bool:
    """Spawn a detached background maintenance run when one is due; True when spawned.

    Cheap (one indexed query and a stat): meant for the Stop hook after capture.
    Pass the hook's open store to avoid opening another connection.
    """
    if not settings.maintenance__enabled:
        return False
    now = now or utcnow()
    if store is None:
        from memlane.store import open_configured

        own = open_configured(settings)
        try:
            last = own.last_maintenance(MAINTAIN)
        finally:
            own.close()
    else:
        last = store.last_maintenance(MAINTAIN)
    reason = due_reason(settings, last, now)
    if reason is None:
        return False
    from memlane.paths import ensure_private_file

    stamp = settings.paths.runtime_dir / SPAWN_STAMP
    # Over the cap, the size must not wait for the long cooldown either.
    cooldown = OVER_CAP_COOLDOWN_S if reason == "size" else SPAWN_COOLDOWN_S
    with contextlib.suppress(FileNotFoundError):
        if time.time() - stamp.stat().st_mtime < cooldown:
            return False
    ensure_private_file(stamp)
    os.utime(stamp)
    spawn_background(settings)
    return True


def spawn_background(settings: Settings) -> None:
    """Start ``python -m memlane maintain --background`` detached on ``settings``' database
    (given in its environment, never on its command line: :func:`memlane.runtime.spawn_detached`);
    never wait."""
    from memlane.runtime import spawn_detached

    argv = [sys.executable, "-m", "memlane", "maintain", "--background"]
    spawn_detached(argv, settings.paths.log_dir / LOG_FILE, db=settings.db_target)


def _file_bytes(database: str) -> int:
    """Size of a SQLite database file plus its WAL (0 for URLs and missing files)."""
    if "://" in database:
        return 0
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(database + suffix).st_size
    return total


@contextlib.contextmanager
def maintenance_lock(settings: Settings) -> Iterator[bool]:
    """Hold the maintenance lock file while the block runs; yields False when taken.

    Without ``fcntl`` (Windows) the lock always succeeds.
    """
    from memlane.paths import ensure_private_file

    path = ensure_private_file(settings.paths.runtime_dir / LOCK_FILE)
    try:
        import fcntl
    except ImportError:
        yield True
        return
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
