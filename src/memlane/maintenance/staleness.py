"""Staleness: flag memories whose linked files changed after capture.

The rule is the one search applies to its candidates,
:func:`memlane.search.scoring.linked_files_changed`: a recorded file state that
no longer holds, or an mtime later than the capture time. Here it refreshes the
stored ``stale`` flag of every memory linked to files, with relative paths
also resolved against the root of the project the process runs in (by name).
A memory none of whose files can be checked keeps its flag.
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
from memlane.search.scoring import linked_files_changed

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store


def project_roots(cwd: str | None = None) -> dict[str, Path]:
    """{project name: root} for the project the process (or ``cwd``) is in."""
    from memlane.project import identify

    try:
        identity = identify(cwd)
    except OSError as exc:  # a deleted cwd: resolve only what metadata says
        log.info("no project root for staleness (%s)", exc)
        return {}
    return {identity.name: identity.root}


def plan_staleness(
    core: Core,
    *,
    projects: tuple[str, ...] | None = None,
    roots: dict[str, Path] | None = None,
    exclude: frozenset[int] = frozenset(),
) -> tuple[list[int], list[int], int, int]:
    """(ids to mark stale, ids to clear, memories checked, undecidable ones)."""
    roots = project_roots() if roots is None else roots
    stat: dict[str, os.stat_result | None] = {}
    mark: list[int] = []
    clear: list[int] = []
    checked = unknown = 0
    for m in _iter_memories(core.store, MemoryFilter(projects=projects)):
        if not m.files or m.id in exclude:
            continue
        checked += 1
        verdict = linked_files_changed(m, roots, stat)
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
