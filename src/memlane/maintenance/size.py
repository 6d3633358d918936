"""Size cap: keep the database under ``max_db_size_mb``, then give the pages back.

When the database (file + WAL) is over ``SIZE_TRIGGER`` of ``max_db_size_mb``,
first the injection log's oldest texts are cleared (the log is derived data; its
entries keep their counts for the token meter), then the oldest rows (by last
touch) are removed until the estimate falls under ``SIZE_TARGET`` of the cap —
every other kind before knowledge and summaries. A row's cost is estimated from
its text and JSON lengths plus a fixed overhead (a log entry's: its prompt and
text), scaled so that all of them add up to the bytes in use. The store then reclaims the
freed space (``Store.reclaim_space``; SQLite: FTS optimize, vacuum, WAL
truncate). The plan only estimates the bytes each row frees: if the database is
still over its cap after the vacuum, a corrective round removes more
(``SizeReport.extra_removed``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlane.errors import InvalidInput, StoreError
from memlane.maintenance._common import (
    PROTECTED_KINDS,
    SIZE_TARGET,
    SIZE_TRIGGER,
    _age_order,
    _iter_memories,
    log,
)
from memlane.maintenance.reports import SizeReport
from memlane.models import Memory as MemoryRecord
from memlane.models import MemoryFilter, utcnow

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store

# Bytes a row costs beyond its text: row header, index entries, FTS doclist, JSON.
ROW_OVERHEAD = 300
CORRECTIVE_ROUNDS = 3


def database_bytes(store: Store) -> tuple[int, int]:
    """(bytes in use, bytes on disk incl. WAL) of the database."""
    return store.storage_bytes()


def row_cost(m: MemoryRecord) -> int:
    """Unscaled cost of a row: its text and JSON lengths plus a fixed overhead."""
    size = len(m.content.encode("utf-8", "replace")) + len(m.title.encode("utf-8", "replace"))
    size += len(json.dumps(m.metadata, ensure_ascii=False, default=str))
    size += sum(len(f) for f in m.files) + sum(len(t) for t in m.tags)
    return size + ROW_OVERHEAD


@dataclass(frozen=True, slots=True)
class SizePlan:
    """What the size cap does: memories to remove and log entries whose text to clear
    (oldest first), the bytes in use now and the estimate after."""

    size_before: int
    estimate: int
    remove: list[int] = field(default_factory=list)
    clear_log: list[int] = field(default_factory=list)


def plan_size_cap(
    core: Core,
    *,
    cap_bytes: int,
    exclude: frozenset[int] = frozenset(),
    protected: Sequence[str] = PROTECTED_KINDS,
) -> SizePlan:
    """The size cap's plan (see the module docstring).

    ``exclude`` are rows other steps already remove: their cost counts as freed.
    Nothing is planned while the size is under ``SIZE_TRIGGER`` of the cap.
    """
    in_use, _on_disk = database_bytes(core.store)
    everything = list(_iter_memories(core.store, MemoryFilter()))
    log = core.store.injection_text_sizes()
    total = (sum(row_cost(m) for m in everything) + sum(size for _, size in log)) or 1
    scale = in_use / total
    freed = sum(row_cost(m) for m in everything if m.id in exclude) * scale
    estimate = int(in_use - freed)
    # The WAL is not counted here: reclaim_space truncates it.
    if estimate <= SIZE_TRIGGER * cap_bytes:
        return SizePlan(in_use, max(estimate, 0))
    target = SIZE_TARGET * cap_bytes
    cleared: list[int] = []
    for entry_id, size in log:
        if estimate <= target:
            break
        cleared.append(entry_id)
        estimate -= int(size * scale)
    rest = [m for m in everything if m.id not in exclude]
    ordered = _age_order(m for m in rest if m.kind not in protected)
    ordered += _age_order(m for m in rest if m.kind in protected)
    chosen: list[int] = []
    for m in ordered:
        if estimate <= target:
            break
        chosen.append(m.id)
        estimate -= int(row_cost(m) * scale)
    return SizePlan(in_use, max(estimate, 0), chosen, cleared)


def reclaim_space(store: Store, *, full: bool = False) -> bool:
    """Give freed pages back to the file system; True when it ran.

    See ``Store.reclaim_space``: SQLite optimizes the FTS index, vacuums
    (``full`` also packs half-empty pages) and truncates the WAL; PostgreSQL
    relies on its own autovacuum. A busy database keeps its free pages for the
    next run.
    """
    try:
        return store.reclaim_space(full=full)
    except StoreError as exc:
        log.warning("could not reclaim space in %s: %s", store.location, exc)
        return False


def enforce_size_cap(
    core: Core,
    *,
    max_mb: float | None = None,
    dry_run: bool = False,
    exclude: frozenset[int] = frozenset(),
    log_run: bool = True,
) -> SizeReport:
    """Keep the database under ``max_mb`` (default: ``maintenance.max_db_size_mb``)."""
    started = utcnow()
    mb = max_mb if max_mb is not None else core.settings.maintenance__max_db_size_mb
    if not 0 < mb < float("inf"):  # NaN and infinity too
        raise InvalidInput(f"the size cap must be a positive number of MB, got {mb}")
    cap = int(mb * 1024 * 1024)
    plan = plan_size_cap(core, cap_bytes=cap, exclude=exclude)
    before, estimate = plan.size_before, plan.estimate
    if dry_run:
        return SizeReport(
            True, cap, before, estimate, removed=tuple(plan.remove), log_cleared=len(plan.clear_log)
        )
    core.store.clear_injection_text(plan.clear_log)
    core.store.delete_memories(plan.remove)
    changed = bool(plan.remove or plan.clear_log or exclude)
    vacuumed, extra, after = _settle_size(core, cap, changed)
    report = SizeReport(
        False,
        cap,
        before,
        estimate,
        after,
        tuple(plan.remove),
        tuple(extra),
        vacuumed,
        log_cleared=len(plan.clear_log),
    )
    if log_run:
        core.store.log_maintenance(
            "size-cap",
            started,
            {
                "removed": len(plan.remove),
                "extra": len(extra),
                "log_cleared": len(plan.clear_log),
                "before": before,
                "after": after,
            },
        )
    return report


def _settle_size(core: Core, cap: int, removed: bool) -> tuple[bool, list[int], int]:
    """Reclaim space, then remove more rows while the file is still over ``cap``.

    Returns (vacuumed, ids removed by corrective rounds, bytes on disk after); log
    texts a corrective round clears are not listed.
    """
    store = core.store
    vacuumed = False
    if removed or database_bytes(store)[1] > cap or _needs_vacuum(core):
        vacuumed = reclaim_space(store)
    if database_bytes(store)[1] > SIZE_TRIGGER * cap:
        # Incremental vacuum frees whole pages only; rows deleted here and there leave
        # half-empty ones that a full VACUUM packs before any more rows have to go.
        vacuumed = reclaim_space(store, full=True) or vacuumed
    extra: list[int] = []
    for _ in range(CORRECTIVE_ROUNDS):
        if database_bytes(store)[1] <= cap:
            break
        plan = plan_size_cap(core, cap_bytes=cap)
        if not plan.remove and not plan.clear_log:
            break
        log.info(
            "size cap: the estimate fell short, removing %d more rows, clearing %d log texts",
            len(plan.remove),
            len(plan.clear_log),
        )
        store.clear_injection_text(plan.clear_log)
        store.delete_memories(plan.remove)
        extra.extend(plan.remove)
        vacuumed = reclaim_space(store) or vacuumed
    return vacuumed, extra, database_bytes(store)[1]


def _needs_vacuum(core: Core) -> bool:
    """True when a quarter of the file is free pages, or the WAL is over 4 MB."""
    in_use, on_disk = database_bytes(core.store)
    return on_disk > 0 and (on_disk - in_use > max(on_disk // 4, 4 * 1024 * 1024))
