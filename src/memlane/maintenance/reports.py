"""What each maintenance operation did (or would do, on a dry run).

Frozen dataclasses, no logic beyond the counts ``MaintenanceReport.details``
writes to the ``maintenance_log``; the CLI and the facade render them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class MergeGroup:
    """One merge: ``keep`` absorbs ``remove`` (same project, kind and type)."""

    keep: int
    remove: tuple[int, ...]
    similarity: float  # the lowest Jaccard similarity between ``keep`` and a removed one


@dataclass(frozen=True, slots=True)
class MergeReport:
    dry_run: bool
    threshold: float
    groups: tuple[MergeGroup, ...] = ()
    compared: int = 0

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(i for g in self.groups for i in g.remove)


@dataclass(frozen=True, slots=True)
class PruneReport:
    dry_run: bool
    max_age_days: int
    cutoff: datetime
    removed: tuple[int, ...] = ()
    log_entries: int = 0  # injection log entries older than the cutoff


@dataclass(frozen=True, slots=True)
class SizeReport:
    dry_run: bool
    cap_bytes: int
    size_before: int
    estimated_after: int
    size_after: int | None = None  # measured after the vacuum (real runs only)
    removed: tuple[int, ...] = ()
    extra_removed: tuple[int, ...] = ()  # corrective rounds after a short estimate
    vacuumed: bool = False
    log_cleared: int = 0  # injection log entries whose text the cap clears first


@dataclass(frozen=True, slots=True)
class StaleReport:
    dry_run: bool
    checked: int = 0
    marked: tuple[int, ...] = ()
    cleared: tuple[int, ...] = ()
    unknown: int = 0


@dataclass(frozen=True, slots=True)
class ForgottenMemory:
    id: int
    project: str
    kind: str
    type: str
    label: str


@dataclass(frozen=True, slots=True)
class ForgetReport:
    dry_run: bool
    selector: str
    memories: tuple[ForgottenMemory, ...] = ()
    sessions: tuple[str, ...] = ()
    # Injection log entries whose text held the query, cleared (real runs by query only;
    # entries that showed a forgotten memory are cleared by the store in any case).
    log_cleared: int = 0

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(m.id for m in self.memories)


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    dry_run: bool
    closed_sessions: tuple[str, ...] = ()
    prune: PruneReport | None = None
    merge: MergeReport | None = None
    size: SizeReport | None = None
    stale: StaleReport | None = None
    seconds: float = 0.0
    # Memories re-indexed as written before the index held camelCase identifiers' words.
    reindexed: int = 0
    # Memories today's privacy filter changed, on the first pass after the filter did,
    # and those it deleted (a name they are known by, or all their text, is a secret).
    refiltered: int = 0
    refilter_deleted: int = 0
    # Memories and sessions kept though a name they are known by now looks like a secret.
    refilter_named: int = 0

    @property
    def removed(self) -> tuple[int, ...]:
        """Every memory id the run removes (prune, merge, size cap incl. corrective)."""
        out: list[int] = []
        if self.prune:
            out.extend(self.prune.removed)
        if self.merge:
            out.extend(self.merge.removed)
        if self.size:
            out.extend(self.size.removed)
            out.extend(self.size.extra_removed)
        return tuple(out)

    def details(self) -> dict[str, Any]:
        """Counts for the maintenance log and `--json` (ids are not logged)."""
        return {
            "dry_run": self.dry_run,
            "closed_sessions": len(self.closed_sessions),
            "pruned": len(self.prune.removed) if self.prune else 0,
            "log_pruned": self.prune.log_entries if self.prune else 0,
            "merged": len(self.merge.removed) if self.merge else 0,
            "merge_groups": len(self.merge.groups) if self.merge else 0,
            "capped": len(self.size.removed) if self.size else 0,
            "capped_extra": len(self.size.extra_removed) if self.size else 0,
            "log_cleared": self.size.log_cleared if self.size else 0,
            "size_before": self.size.size_before if self.size else None,
            "size_after": self.size.size_after if self.size else None,
            "cap_bytes": self.size.cap_bytes if self.size else None,
            "vacuumed": bool(self.size and self.size.vacuumed),
            "stale_marked": len(self.stale.marked) if self.stale else 0,
            "stale_cleared": len(self.stale.cleared) if self.stale else 0,
            "reindexed": self.reindexed,
            "refiltered": self.refiltered,
            "refilter_deleted": self.refilter_deleted,
            "refilter_named": self.refilter_named,
            "seconds": round(self.seconds, 3),
        }
