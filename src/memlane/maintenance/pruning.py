"""Prune: delete memories not touched for ``max_age_days`` (knowledge and summaries kept),
and the injection log's entries older than that."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memlane.errors import InvalidInput
from memlane.maintenance._common import PROTECTED_KINDS, _age_order, _iter_memories, last_touch
from memlane.maintenance.reports import PruneReport
from memlane.models import KINDS, MemoryFilter, utcnow

if TYPE_CHECKING:
    from memlane.core import Core


def plan_prune(
    core: Core,
    *,
    max_age_days: int,
    now: datetime,
    exempt: Sequence[str] = PROTECTED_KINDS,
    projects: tuple[str, ...] | None = None,
) -> list[int]:
    """Ids of memories last touched more than ``max_age_days`` ago, oldest first."""
    if not max_age_days >= 1:  # NaN too
        raise InvalidInput(f"max_age_days must be at least 1, got {max_age_days}")
    cutoff = now - timedelta(days=max_age_days)
    kinds = tuple(k for k in KINDS if k not in exempt)
    if not kinds:
        return []
    # last_touch >= created_at, so created_before narrows the scan without missing any.
    flt = MemoryFilter(projects=projects, kinds=kinds, created_before=cutoff)
    old = [m for m in _iter_memories(core.store, flt) if last_touch(m) < cutoff]
    return [m.id for m in _age_order(old)]


def prune_old(
    core: Core,
    *,
    max_age_days: int | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    exempt: Sequence[str] = PROTECTED_KINDS,
) -> PruneReport:
    """Delete memories older than ``max_age_days`` (default: the setting)."""
    started = utcnow()
    now = now or started
    days = max_age_days if max_age_days is not None else core.settings.maintenance__max_age_days
    ids = plan_prune(core, max_age_days=days, now=now, exempt=exempt)
    cutoff = now - timedelta(days=days)
    entries = core.store.count_injections_before(cutoff)
    report = PruneReport(dry_run, days, cutoff, tuple(ids), entries)
    if not dry_run:
        core.store.delete_memories(ids)
        core.store.prune_injections(cutoff)
        core.store.log_maintenance(
            "prune", started, {"removed": len(ids), "log_pruned": entries, "days": days}
        )
    return report
