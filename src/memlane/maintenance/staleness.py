"""Staleness: flag memories whose linked files changed after capture.

A memory linked to files is stale when one of them changed after capture:
against the ``file_state`` recorded at capture (``{path: {"mtime": s, "size":
n}}`` in metadata) when present, else when the file's mtime is later than the
memory's ``updated_at``. Relative paths are resolved against
``metadata["project_root"]`` or ``metadata["cwd"]``, else against the root of
the project the process runs in (by name). A file that cannot be found or
resolved leaves the flag unchanged, unless its state was recorded (then it was
deleted: stale).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.maintenance._common import _iter_memories, _projects, log
from memlane.maintenance.reports import StaleReport
from memlane.models import Memory as MemoryRecord
from memlane.models import MemoryFilter, to_epoch, utcnow

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store

# Seconds of clock slack when comparing a file's mtime with a capture time.
MTIME_SLACK_S = 1.0
FILE_STATE_KEY = "file_state"
ROOT_KEYS = ("project_root", "cwd")


def project_roots(cwd: str | None = None) -> dict[str, Path]:
    """{project name: root} for the project the process (or ``cwd``) is in."""
    from memlane.project import identify

    try:
        identity = identify(cwd)
    except OSError as exc:  # a deleted cwd: resolve only what metadata says
        log.info("no project root for staleness (%s)", exc)
        return {}
    return {identity.name: identity.root}


def _resolve(name: str, m: MemoryRecord, roots: dict[str, Path]) -> Path | None:
    path = Path(name).expanduser()
    if path.is_absolute():
        return path
    for key in ROOT_KEYS:
        base = m.metadata.get(key)
        if isinstance(base, str) and os.path.isabs(base):
            return Path(base) / path
    root = roots.get(m.project)
    return root / path if root is not None else None


def is_stale(
    m: MemoryRecord, roots: dict[str, Path], stat: dict[Path, os.stat_result | None]
) -> bool | None:
    """True / False when it can tell, None when no linked file could be checked."""
    recorded = m.metadata.get(FILE_STATE_KEY)
    recorded = recorded if isinstance(recorded, dict) else {}
    captured = to_epoch(m.updated_at)
    verdict: bool | None = None
    for name in m.files:
        path = _resolve(name, m, roots)
        if path is None:
            continue
        if path not in stat:
            try:
                stat[path] = path.stat()
            except OSError:
                stat[path] = None
        st = stat[path]
        known = recorded.get(name)
        if isinstance(known, dict) and "mtime" in known:
            changed = st is None or (
                abs(st.st_mtime - float(known["mtime"])) > 1e-6
                or ("size" in known and st.st_size != int(known["size"]))
            )
        elif st is None:
            continue  # never seen it: a wrong root looks like a missing file
        else:
            changed = st.st_mtime > captured + MTIME_SLACK_S
        if changed:
            return True
        verdict = False
    return verdict


def plan_staleness(
    core: Core,
    *,
    projects: tuple[str, ...] | None = None,
    roots: dict[str, Path] | None = None,
    exclude: frozenset[int] = frozenset(),
) -> tuple[list[int], list[int], int, int]:
    """(ids to mark stale, ids to clear, memories checked, undecidable ones)."""
    roots = project_roots() if roots is None else roots
    stat: dict[Path, os.stat_result | None] = {}
    mark: list[int] = []
    clear: list[int] = []
    checked = unknown = 0
    for m in _iter_memories(core.store, MemoryFilter(projects=projects)):
        if not m.files or m.id in exclude:
            continue
        checked += 1
        verdict = is_stale(m, roots, stat)
        if verdict is None:
            unknown += 1
        elif verdict and not m.stale:
            mark.append(m.id)
        elif not verdict and m.stale:
            clear.append(m.id)
    return mark, clear, checked, unknown


def apply_staleness(store: Store, mark: Sequence[int], clear: Sequence[int]) -> None:
    with store.transaction():
        for memory_id in mark:
            store.update_memory(memory_id, {"stale": True})
        for memory_id in clear:
            store.update_memory(memory_id, {"stale": False})


def refresh_staleness(
    core: Core,
    *,
    project: str | None = None,
    all_projects: bool = False,
    dry_run: bool = False,
    roots: dict[str, Path] | None = None,
) -> StaleReport:
    """Re-check the linked files of memories and update their stale flag."""
    started = utcnow()
    projects = _projects(core, project, all_projects)
    mark, clear, checked, unknown = plan_staleness(core, projects=projects, roots=roots)
    if not dry_run:
        apply_staleness(core.store, mark, clear)
        core.store.log_maintenance(
            "stale", started, {"checked": checked, "marked": len(mark), "cleared": len(clear)}
        )
    return StaleReport(dry_run, checked, tuple(mark), tuple(clear), unknown)


def list_stale(
    core: Core, *, project: str | None = None, all_projects: bool = False, limit: int = 100
) -> list[MemoryRecord]:
    """Memories currently flagged stale, newest first."""
    projects = _projects(core, project, all_projects)
    found = [m for m in _iter_memories(core.store, MemoryFilter(projects=projects)) if m.stale]
    found.sort(key=lambda m: (to_epoch(m.created_at), m.id), reverse=True)
    return found[:limit]
