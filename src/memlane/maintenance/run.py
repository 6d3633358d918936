"""The whole maintenance pass: plan every step, then apply that plan.

:func:`run_maintenance` closes idle sessions, prunes, merges, enforces the size
cap and refreshes staleness; after a change of the privacy filter, it passes what
is stored through it again (``refiltering.refilter_once``). Each step plans with
the rows earlier steps remove excluded, all before anything changes; then the
plan is applied in that order and one ``maintain`` row is logged. ``schedule``
decides when it runs.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.capture.lifecycle import close_idle_sessions
from memlane.maintenance._common import MAINTAIN
from memlane.maintenance.merging import DEFAULT_MERGE_THRESHOLD, apply_merge, plan_merge
from memlane.maintenance.pruning import plan_prune
from memlane.maintenance.refiltering import refilter_once
from memlane.maintenance.reports import (
    MaintenanceReport,
    MergeReport,
    PruneReport,
    SizeReport,
    StaleReport,
)
from memlane.maintenance.size import _settle_size, plan_size_cap
from memlane.maintenance.staleness import apply_staleness, plan_staleness
from memlane.models import utcnow
from memlane.sessions import idle_sessions

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store

# Ids re-indexed per transaction by backfill_index (`benchmarks/reindex_bench.py`).
BACKFILL_BATCH = 2000


def backfill_index(store: Store, batch: int = BACKFILL_BATCH) -> int:
    """Re-index every memory written before the index held the words inside camelCase
    identifiers, one short transaction per ``batch`` ids (a hook waits for one at most);
    returns how many ids were gone through."""
    done = 0
    while True:
        went, left = store.backfill_index(batch)
        done += went
        if not left:
            return done


def plan_idle_sessions(core: Core, now: datetime) -> list[str]:
    """Active sessions idle past ``session_idle_hours`` (what ``close_idle_sessions`` closes)."""
    return [s.id for s in idle_sessions(core, now=now)]


def run_maintenance(
    core: Core,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    roots: dict[str, Path] | None = None,
) -> MaintenanceReport:
    """One maintenance pass: close idle sessions, prune, merge, size cap, staleness.

    The whole plan is computed before anything changes; see the module
    docstring. It runs when called: ``maintenance.enabled`` governs only the automatic
    runs, which ``schedule`` starts.
    """
    clock = time.monotonic()
    started = utcnow()
    now = now or started
    settings = core.settings
    days = settings.maintenance__max_age_days
    cap = int(settings.maintenance__max_db_size_mb * 1024 * 1024)
    sessions = plan_idle_sessions(core, now)
    pruned = plan_prune(core, max_age_days=days, now=now)
    gone = frozenset(pruned)
    # Pairs of memories both older than the last run were compared then (the margin
    # covers rows captured while that run was going).
    last = core.store.last_maintenance(MAINTAIN)
    since = None if last is None else last - timedelta(hours=1)
    groups, compared = plan_merge(core, exclude=gone, since=since, automatic=True)
    gone |= {i for g in groups for i in g.remove}
    sized = plan_size_cap(core, cap_bytes=cap, exclude=gone)
    capped, before, estimate = sized.remove, sized.size_before, sized.estimate
    gone |= set(capped)
    mark, clear, checked, unknown = plan_staleness(core, roots=roots, exclude=gone)
    cutoff = now - timedelta(days=days)
    old_entries = core.store.count_injections_before(cutoff)
    prune_report = PruneReport(dry_run, days, cutoff, tuple(pruned), old_entries)
    merge_report = MergeReport(dry_run, DEFAULT_MERGE_THRESHOLD, tuple(groups), compared)
    stale_report = StaleReport(dry_run, checked, tuple(mark), tuple(clear), unknown)
    if dry_run:
        size_report = SizeReport(
            True, cap, before, estimate, removed=tuple(capped), log_cleared=len(sized.clear_log)
        )
        return MaintenanceReport(
            True,
            tuple(sessions),
            prune_report,
            merge_report,
            size_report,
            stale_report,
            seconds=time.monotonic() - clock,
        )
    closed = close_idle_sessions(core, now=now)
    core.store.delete_memories(pruned)
    core.store.prune_injections(cutoff)
    apply_merge(core.store, groups)
    core.store.clear_injection_text(sized.clear_log)
    core.store.delete_memories(capped)
    apply_staleness(core.store, mark, clear)
    reindexed = backfill_index(core.store)
    refiltered = refilter_once(core)
    vacuumed, extra, after = _settle_size(core, cap, bool(gone))
    size_report = SizeReport(
        False,
        cap,
        before,
        estimate,
        after,
        tuple(capped),
        tuple(extra),
        vacuumed,
        log_cleared=len(sized.clear_log),
    )
    report = MaintenanceReport(
        False,
        tuple(closed),
        prune_report,
        merge_report,
        size_report,
        stale_report,
        seconds=time.monotonic() - clock,
        reindexed=reindexed,
        refiltered=len(refiltered.memories) if refiltered else 0,
        refilter_deleted=len(refiltered.deleted_memories) if refiltered else 0,
        refilter_named=len(refiltered.named) if refiltered else 0,
    )
    core.store.log_maintenance(MAINTAIN, started, report.details())
    return report
