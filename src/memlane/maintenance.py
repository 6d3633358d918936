"""Memory hygiene: prune, size cap, merge, staleness, forget, and the scheduled run.

A memory that repeats itself or grows without bound is worse than none. This
module keeps the store small and current; the facade's maintenance methods
(``Memory.maintain``, ``merge``, ``prune_old``, ``enforce_size_cap``,
``refresh_staleness``, ``forget``) are thin wrappers around these functions.

Design:

* **Plan, then apply.** Every operation first builds a plan from the current
  state (which rows go, which merge into which) with the same function whether
  it is a dry run or not; the real run applies exactly that plan. So a dry run
  lists exactly what the real run then removes, as long as nothing writes in
  between. The one exception is the size cap's safety net: the plan estimates
  the bytes each row frees; if the database is still over its cap after the
  vacuum, a corrective round removes more and reports it as ``extra_capped``.
* **Age** counts from a memory's last touch (the later of ``updated_at`` and
  ``last_accessed_at``), not from ``created_at``: an imported history from 2023
  is not wiped on the day it is imported, and a memory recalled last week is
  still useful. Knowledge and summaries are exempt by default.
* **Size cap.** When the database (file + WAL) is over ``SIZE_TRIGGER`` of
  ``max_db_size_mb``, the oldest rows (by last touch) are removed until the
  estimate falls under ``SIZE_TARGET`` of the cap — every other kind before
  knowledge and summaries. A row's cost is estimated from its text and JSON
  lengths plus a fixed overhead, scaled so that all rows add up to the pages in
  use. SQLite then optimizes the FTS index and reclaims pages: the first run
  switches the file to ``auto_vacuum=INCREMENTAL`` with one full VACUUM, later
  runs use ``PRAGMA incremental_vacuum``; the WAL is truncated last.
* **Merge** joins near-duplicates of one project, kind and type whose character
  trigram sets (lower-cased, whitespace collapsed, first ``MERGE_TEXT_CHARS``
  characters) have a Jaccard similarity at or above the threshold (0.6).
  Candidates come from MinHash LSH (128 seeded hashes in bands sized for the
  threshold: a pair at it is found with probability >= 0.98) and every one is
  verified exactly, so nothing below the threshold merges. Exact prefix
  filtering was tried first: on real project text it verified 1.5 M of 2.2 M
  pairs, because every chunk of one project shares trigrams. The richest
  memory of a group (longest content, then most links, most accesses) is kept;
  it inherits the others' files, tags, access counts, latest activity and a
  topic key it lacks. Two memories with different topic keys are distinct
  topics and never merge; summaries and checkpoints (one per session) are not
  merged. The automatic run is
  incremental: it looks only for pairs involving a memory created since the
  previous run (an hour of margin); ``memlane merge`` compares everything.
* **Staleness.** A memory linked to files is stale when one of them changed
  after capture: against the ``file_state`` recorded at capture
  (``{path: {"mtime": s, "size": n}}`` in metadata) when present, else when the
  file's mtime is later than the memory's ``updated_at``. Relative paths are
  resolved against ``metadata["project_root"]`` or ``metadata["cwd"]``, else
  against the root of the project the process runs in (by name). A file that
  cannot be found or resolved leaves the flag unchanged, unless its state was
  recorded (then it was deleted: stale).
* **Forget** removes rows; the FTS index follows by triggers and vectors by
  ``ON DELETE CASCADE``. The log records how many went and by which selector,
  never the query text (it may be the very thing to forget).
* **Scheduling.** :func:`maybe_schedule_maintenance` is cheap enough for the
  Stop hook: it reads the last ``maintain`` log row and, when one is due, spawns
  ``python -m memlane maintain --background`` detached (own session, output to
  ``maintenance.log``). A spawn stamp rate-limits attempts and a lock file keeps
  two runs from overlapping.

Every real run writes one ``maintenance_log`` row (kind ``maintain``,
``merge``, ``prune``, ``size-cap``, ``stale`` or ``forget``); dry runs write
nothing. Stdlib only at import time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.errors import InvalidInput, NotFound, StoreError
from memlane.filestate import file_state
from memlane.models import KINDS, MemoryFilter, to_epoch, utcnow
from memlane.models import Memory as MemoryRecord

if TYPE_CHECKING:
    from memlane.config import Settings
    from memlane.service import Memory
    from memlane.store.base import Store

log = logging.getLogger(__name__)

PROTECTED_KINDS: tuple[str, ...] = ("knowledge", "summary")
MERGE_SKIP_KINDS: frozenset[str] = frozenset({"summary", "checkpoint"})
DEFAULT_MERGE_THRESHOLD = 0.6
MERGE_TEXT_CHARS = 2000
# MinHash functions per memory and their fixed seed (plans must be reproducible).
MINHASH_SIZE = 128
MINHASH_SEED = 20240601
# Lists copied into a merged memory are capped so a hot file cannot grow a row forever.
MAX_MERGED_LINKS = 50
# The cap acts above SIZE_TRIGGER × cap and shrinks to SIZE_TARGET × cap: hysteresis,
# so one run buys room for the next interval instead of trimming a row at a time.
SIZE_TRIGGER = 0.9
SIZE_TARGET = 0.75
# Bytes a row costs beyond its text: row header, index entries, FTS doclist, JSON.
ROW_OVERHEAD = 300
CORRECTIVE_ROUNDS = 3
# Seconds between two spawn attempts of the background run (a failing run is not
# respawned on every Stop).
SPAWN_COOLDOWN_S = 600.0
OVER_CAP_COOLDOWN_S = 60.0
FETCH_BATCH = 500
# Seconds of clock slack when comparing a file's mtime with a capture time.
MTIME_SLACK_S = 1.0
FILE_STATE_KEY = "file_state"
ROOT_KEYS = ("project_root", "cwd")
LOG_FILE = "maintenance.log"
LOCK_FILE = "maintenance.lock"
SPAWN_STAMP = "maintenance.spawn"

MAINTAIN = "maintain"


# -- reports --------------------------------------------------------------------------


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
    skipped: str | None = None  # why nothing ran (disabled)
    seconds: float = 0.0

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
            "merged": len(self.merge.removed) if self.merge else 0,
            "merge_groups": len(self.merge.groups) if self.merge else 0,
            "capped": len(self.size.removed) if self.size else 0,
            "capped_extra": len(self.size.extra_removed) if self.size else 0,
            "size_before": self.size.size_before if self.size else None,
            "size_after": self.size.size_after if self.size else None,
            "cap_bytes": self.size.cap_bytes if self.size else None,
            "vacuumed": bool(self.size and self.size.vacuumed),
            "stale_marked": len(self.stale.marked) if self.stale else 0,
            "stale_cleared": len(self.stale.cleared) if self.stale else 0,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }


# -- helpers --------------------------------------------------------------------------


def last_touch(memory: MemoryRecord) -> datetime:
    """When a memory was last written or recalled: what its age counts from."""
    if memory.last_accessed_at is not None and memory.last_accessed_at > memory.updated_at:
        return memory.last_accessed_at
    return memory.updated_at


def _fetch(store: Store, ids: Sequence[int]) -> Iterator[MemoryRecord]:
    """Memories by id in batches (ids first: stable under concurrent inserts)."""
    for start in range(0, len(ids), FETCH_BATCH):
        yield from store.get_memories(list(ids[start : start + FETCH_BATCH]))


def _iter_memories(store: Store, flt: MemoryFilter) -> Iterator[MemoryRecord]:
    yield from _fetch(store, store.memory_ids(flt))


def _projects(memory: Memory, project: str | None, all_projects: bool) -> tuple[str, ...] | None:
    return None if all_projects else (memory.resolve_project(project),)


def _age_order(memories: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(memories, key=lambda m: (to_epoch(last_touch(m)), m.id))


# -- prune ------------------------------------------------------------------------------


def plan_prune(
    memory: Memory,
    *,
    max_age_days: int,
    now: datetime,
    exempt: Sequence[str] = PROTECTED_KINDS,
    projects: tuple[str, ...] | None = None,
) -> list[int]:
    """Ids of memories last touched more than ``max_age_days`` ago, oldest first."""
    if max_age_days < 1:
        raise InvalidInput(f"max_age_days must be at least 1, got {max_age_days}")
    cutoff = now - timedelta(days=max_age_days)
    kinds = tuple(k for k in KINDS if k not in exempt)
    if not kinds:
        return []
    # last_touch >= created_at, so created_before narrows the scan without missing any.
    flt = MemoryFilter(projects=projects, kinds=kinds, created_before=cutoff)
    old = [m for m in _iter_memories(memory.store, flt) if last_touch(m) < cutoff]
    return [m.id for m in _age_order(old)]


def prune_old(
    memory: Memory,
    *,
    max_age_days: int | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    exempt: Sequence[str] = PROTECTED_KINDS,
) -> PruneReport:
    """Delete memories older than ``max_age_days`` (default: the setting)."""
    started = utcnow()
    now = now or started
    days = max_age_days if max_age_days is not None else memory.settings.maintenance__max_age_days
    ids = plan_prune(memory, max_age_days=days, now=now, exempt=exempt)
    report = PruneReport(dry_run, days, now - timedelta(days=days), tuple(ids))
    if not dry_run:
        memory.store.delete_memories(ids)
        memory.store.log_maintenance("prune", started, {"removed": len(ids), "days": days})
    return report


# -- merge ------------------------------------------------------------------------------


def trigrams(text: str, limit: int = MERGE_TEXT_CHARS) -> frozenset[str]:
    """Character trigrams of ``text`` lower-cased with whitespace collapsed."""
    norm = " ".join(text.lower().split())[:limit]
    if len(norm) < 3:
        return frozenset({norm}) if norm else frozenset()
    return frozenset(norm[i : i + 3] for i in range(len(norm) - 2))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _bands(threshold: float) -> int:
    """Rows per LSH band: the most selective split that still finds J = threshold 98%."""
    for rows in (8, 4, 2):
        bands = MINHASH_SIZE // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= 0.98:
            return rows
    return 1


def _signature(tokens: frozenset[str], np: Any, seeds: Any) -> Any:
    """MinHash signature: per seed, the least splitmix64(crc32(token) ^ seed)."""
    # crc32, not hash(): str hashes are salted per process and a dry run in one
    # process must plan what the real run in another one does.
    values = np.fromiter(
        (zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in tokens),
        dtype=np.uint64,
        count=len(tokens),
    )
    z = values[None, :] ^ seeds[:, None]
    # uint64 arrays wrap on overflow, which is what the mixer wants.
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))).min(axis=1)


def similar_pairs(
    sets: dict[int, frozenset[str]], threshold: float, probe: set[int] | None = None
) -> dict[int, dict[int, float]]:
    """Pairs with Jaccard >= ``threshold``: MinHash LSH candidates, verified exactly.

    Every pair returned really is that similar; a pair at the threshold is found
    with probability >= 0.98 (far more above it): exact prefix filtering verifies
    most pairs of same-project text, whose trigram sets all overlap a little.
    With ``probe``, only pairs involving one of those ids are looked for.
    """
    if not 0.0 < threshold <= 1.0:
        raise InvalidInput(f"the merge threshold must be in (0, 1], got {threshold}")
    import numpy as np

    seeds = np.random.default_rng(MINHASH_SEED).integers(
        0, np.iinfo(np.uint64).max, size=MINHASH_SIZE, dtype=np.uint64
    )
    rows = _bands(threshold)
    buckets: dict[bytes, list[int]] = defaultdict(list)
    for i in sorted(sets):
        if not sets[i]:
            continue
        sig = _signature(sets[i], np, seeds)
        for band in range(MINHASH_SIZE // rows):
            key = band.to_bytes(2, "little") + sig[band * rows : (band + 1) * rows].tobytes()
            buckets[key].append(i)
    out: dict[int, dict[int, float]] = defaultdict(dict)
    checked: set[tuple[int, int]] = set()
    for members in buckets.values():
        if len(members) < 2:
            continue
        for x in range(len(members)):
            i = members[x]
            for j in members[x + 1 :]:
                if (i, j) in checked or (probe is not None and i not in probe and j not in probe):
                    continue
                checked.add((i, j))
                small, large = sorted((len(sets[i]), len(sets[j])))
                if small < threshold * large:  # J <= small/large
                    continue
                score = jaccard(sets[i], sets[j])
                if score >= threshold:
                    out[i][j] = score
                    out[j][i] = score
    return dict(out)


def _richness(m: MemoryRecord) -> tuple[int, int, int, int, int]:
    return (len(m.content), len(m.files) + len(m.tags), m.access_count, m.revision_count, -m.id)


def _group(
    members: Sequence[MemoryRecord], threshold: float, probe: set[int] | None
) -> tuple[list[MergeGroup], int]:
    if probe is not None and not probe.intersection(m.id for m in members):
        return [], 0
    sets = {m.id: trigrams(m.content) for m in members}
    pairs = similar_pairs(sets, threshold, probe)
    if not pairs:
        return [], len(sets)
    by_id = {m.id: m for m in members}
    assigned: set[int] = set()
    groups: list[MergeGroup] = []
    for keeper in sorted(members, key=_richness, reverse=True):
        if keeper.id in assigned or keeper.id not in pairs:
            continue
        assigned.add(keeper.id)
        topic = keeper.topic_key
        losers: list[int] = []
        lowest = 1.0
        for other_id, score in sorted(pairs[keeper.id].items(), key=lambda kv: (-kv[1], kv[0])):
            if other_id in assigned:
                continue
            other_topic = by_id[other_id].topic_key
            if other_topic is not None:
                if topic is not None and other_topic != topic:
                    continue  # two topics the agent keeps apart on purpose
                topic = other_topic
            assigned.add(other_id)
            losers.append(other_id)
            lowest = min(lowest, score)
        if losers:
            groups.append(MergeGroup(keeper.id, tuple(sorted(losers)), round(lowest, 4)))
    return groups, len(sets)


def plan_merge(
    memory: Memory,
    *,
    threshold: float = DEFAULT_MERGE_THRESHOLD,
    projects: tuple[str, ...] | None = None,
    exclude: frozenset[int] = frozenset(),
    since: datetime | None = None,
) -> tuple[list[MergeGroup], int]:
    """Merge groups of near-duplicates and how many memories were compared.

    With ``since``, only pairs involving a memory created at or after it are
    looked for (the automatic run: older pairs were compared by the last run).
    """
    kinds = tuple(k for k in KINDS if k not in MERGE_SKIP_KINDS)
    buckets: dict[tuple[str, str, str], list[MemoryRecord]] = defaultdict(list)
    probe: set[int] | None = None if since is None else set()
    for m in _iter_memories(memory.store, MemoryFilter(projects=projects, kinds=kinds)):
        if m.id not in exclude:
            buckets[(m.project, m.kind, m.type)].append(m)
            if probe is not None and since is not None and m.created_at >= since:
                probe.add(m.id)
    groups: list[MergeGroup] = []
    compared = 0
    for key in sorted(buckets):
        found, count = _group(buckets[key], threshold, probe)
        groups.extend(found)
        compared += count
    groups.sort(key=lambda g: g.keep)
    return groups, compared


def _union(first: Sequence[str], rest: Iterable[Sequence[str]]) -> tuple[str, ...]:
    seen = dict.fromkeys(first)
    for items in rest:
        seen.update(dict.fromkeys(items))
    return tuple(list(seen)[:MAX_MERGED_LINKS]) if len(seen) > len(first) else tuple(first)


def apply_merge(store: Store, groups: Sequence[MergeGroup]) -> int:
    """Apply merge groups; returns how many memories were removed."""
    removed = 0
    for group in groups:
        with store.transaction():
            found = {m.id: m for m in store.get_memories([group.keep, *group.remove])}
            keeper = found.get(group.keep)
            if keeper is None:
                continue  # removed meanwhile: nothing to merge into
            losers = [found[i] for i in group.remove if i in found]
            if not losers:
                continue
            topic = keeper.topic_key or next((m.topic_key for m in losers if m.topic_key), None)
            accessed = [m.last_accessed_at for m in (keeper, *losers) if m.last_accessed_at]
            merged_from = [*keeper.metadata.get("merged_from", []), *(m.id for m in losers)]
            changes: dict[str, Any] = {
                "files": _union(keeper.files, (m.files for m in losers)),
                "tags": _union(keeper.tags, (m.tags for m in losers)),
                "access_count": keeper.access_count + sum(m.access_count for m in losers),
                "revision_count": max(m.revision_count for m in (keeper, *losers)),
                "updated_at": max(m.updated_at for m in (keeper, *losers)),
                "metadata": {**keeper.metadata, "merged_from": merged_from[-MAX_MERGED_LINKS:]},
            }
            if accessed:
                changes["last_accessed_at"] = max(accessed)
            if topic != keeper.topic_key:
                changes["topic_key"] = topic
            # Losers go first: the topic key is unique per project.
            removed += store.delete_memories([m.id for m in losers])
            store.update_memory(keeper.id, changes)
    return removed


def merge(
    memory: Memory,
    *,
    threshold: float = DEFAULT_MERGE_THRESHOLD,
    project: str | None = None,
    all_projects: bool = False,
    dry_run: bool = False,
) -> MergeReport:
    """Join near-duplicate memories of a project (or every project)."""
    started = utcnow()
    projects = _projects(memory, project, all_projects)
    groups, compared = plan_merge(memory, threshold=threshold, projects=projects)
    report = MergeReport(dry_run, threshold, tuple(groups), compared)
    if not dry_run:
        apply_merge(memory.store, groups)
        memory.store.log_maintenance(
            "merge",
            started,
            {"groups": len(groups), "removed": len(report.removed), "threshold": threshold},
        )
    return report


# -- size cap ---------------------------------------------------------------------------


def _sqlite(store: Store) -> Any | None:
    """The raw sqlite3 connection of a SQLite store, else None."""
    if getattr(store, "backend", "") != "sqlite" or store.location == ":memory:":
        return None
    connection = getattr(store, "connection", None)
    return connection() if callable(connection) else None


def database_bytes(store: Store) -> tuple[int, int]:
    """(bytes in use, bytes on disk incl. WAL) of the database."""
    conn = _sqlite(store)
    on_disk = store.stats().db_bytes
    if conn is None:
        return on_disk, on_disk
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return (pages - free) * page_size, on_disk


def row_cost(m: MemoryRecord) -> int:
    """Unscaled cost of a row: its text and JSON lengths plus a fixed overhead."""
    size = len(m.content.encode("utf-8", "replace")) + len(m.title.encode("utf-8", "replace"))
    size += len(json.dumps(m.metadata, ensure_ascii=False, default=str))
    size += sum(len(f) for f in m.files) + sum(len(t) for t in m.tags)
    return size + ROW_OVERHEAD


def plan_size_cap(
    memory: Memory,
    *,
    cap_bytes: int,
    exclude: frozenset[int] = frozenset(),
    protected: Sequence[str] = PROTECTED_KINDS,
) -> tuple[list[int], int, int]:
    """(ids to remove oldest first, size now, estimated size after).

    ``exclude`` are rows other steps already remove: their cost counts as freed.
    Nothing is planned while the size is under ``SIZE_TRIGGER`` of the cap.
    """
    in_use, _on_disk = database_bytes(memory.store)
    everything = list(_iter_memories(memory.store, MemoryFilter()))
    total = sum(row_cost(m) for m in everything) or 1
    scale = in_use / total
    freed = sum(row_cost(m) for m in everything if m.id in exclude) * scale
    estimate = int(in_use - freed)
    # The WAL is not counted here: reclaim_space truncates it.
    if estimate <= SIZE_TRIGGER * cap_bytes:
        return [], in_use, max(estimate, 0)
    target = SIZE_TARGET * cap_bytes
    rest = [m for m in everything if m.id not in exclude]
    ordered = _age_order(m for m in rest if m.kind not in protected)
    ordered += _age_order(m for m in rest if m.kind in protected)
    chosen: list[int] = []
    for m in ordered:
        if estimate <= target:
            break
        chosen.append(m.id)
        estimate -= int(row_cost(m) * scale)
    return chosen, in_use, max(estimate, 0)


def reclaim_space(store: Store, *, full: bool = False) -> bool:
    """Give freed pages back to the file system (SQLite); True when it ran.

    Optimizes the FTS index, reclaims free pages (incremental vacuum once the
    file is in that mode, one full VACUUM to get there, or when ``full``: it
    also packs half-empty pages) and truncates the WAL. Another backend relies
    on its own autovacuum.
    """
    conn = _sqlite(store)
    execute = getattr(store, "execute_script", None)
    if conn is None or not callable(execute):
        return False
    try:
        execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize');")
        mode = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
        if mode != 2 or full:  # 2 = INCREMENTAL; switching needs one full VACUUM
            execute("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
        else:
            execute("PRAGMA incremental_vacuum;")
        execute("PRAGMA wal_checkpoint(TRUNCATE);")
    except (sqlite3.Error, StoreError) as exc:  # busy: the pages stay free for the next run
        log.warning("could not reclaim space in %s: %s", store.location, exc)
        return False
    return True


def enforce_size_cap(
    memory: Memory,
    *,
    max_mb: float | None = None,
    dry_run: bool = False,
    exclude: frozenset[int] = frozenset(),
    log_run: bool = True,
) -> SizeReport:
    """Keep the database under ``max_mb`` (default: ``maintenance.max_db_size_mb``)."""
    started = utcnow()
    mb = max_mb if max_mb is not None else memory.settings.maintenance__max_db_size_mb
    if mb <= 0:
        raise InvalidInput(f"the size cap must be positive, got {mb} MB")
    cap = int(mb * 1024 * 1024)
    ids, before, estimate = plan_size_cap(memory, cap_bytes=cap, exclude=exclude)
    if dry_run:
        return SizeReport(True, cap, before, estimate, removed=tuple(ids))
    memory.store.delete_memories(ids)
    vacuumed, extra, after = _settle_size(memory, cap, bool(ids or exclude))
    report = SizeReport(False, cap, before, estimate, after, tuple(ids), tuple(extra), vacuumed)
    if log_run:
        memory.store.log_maintenance(
            "size-cap",
            started,
            {"removed": len(ids), "extra": len(extra), "before": before, "after": after},
        )
    return report


def _settle_size(memory: Memory, cap: int, removed: bool) -> tuple[bool, list[int], int]:
    """Reclaim space, then remove more rows while the file is still over ``cap``.

    Returns (vacuumed, ids removed by corrective rounds, bytes on disk after).
    """
    store = memory.store
    vacuumed = False
    if removed or database_bytes(store)[1] > cap or _needs_vacuum(memory):
        vacuumed = reclaim_space(store)
    if database_bytes(store)[1] > SIZE_TRIGGER * cap:
        # Incremental vacuum frees whole pages only; rows deleted here and there leave
        # half-empty ones that a full VACUUM packs before any more rows have to go.
        vacuumed = reclaim_space(store, full=True) or vacuumed
    extra: list[int] = []
    for _ in range(CORRECTIVE_ROUNDS):
        if database_bytes(store)[1] <= cap:
            break
        more, _, _ = plan_size_cap(memory, cap_bytes=cap)
        if not more:
            break
        log.info("size cap: the estimate fell short, removing %d more rows", len(more))
        store.delete_memories(more)
        extra.extend(more)
        vacuumed = reclaim_space(store) or vacuumed
    return vacuumed, extra, database_bytes(store)[1]


def _needs_vacuum(memory: Memory) -> bool:
    """True when a quarter of the file is free pages, or the WAL is over 4 MB."""
    in_use, on_disk = database_bytes(memory.store)
    return on_disk > 0 and (on_disk - in_use > max(on_disk // 4, 4 * 1024 * 1024))


# -- staleness --------------------------------------------------------------------------


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
    memory: Memory,
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
    for m in _iter_memories(memory.store, MemoryFilter(projects=projects)):
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
    memory: Memory,
    *,
    project: str | None = None,
    all_projects: bool = False,
    dry_run: bool = False,
    roots: dict[str, Path] | None = None,
) -> StaleReport:
    """Re-check the linked files of memories and update their stale flag."""
    started = utcnow()
    projects = _projects(memory, project, all_projects)
    mark, clear, checked, unknown = plan_staleness(memory, projects=projects, roots=roots)
    if not dry_run:
        apply_staleness(memory.store, mark, clear)
        memory.store.log_maintenance(
            "stale", started, {"checked": checked, "marked": len(mark), "cleared": len(clear)}
        )
    return StaleReport(dry_run, checked, tuple(mark), tuple(clear), unknown)


def list_stale(
    memory: Memory, *, project: str | None = None, all_projects: bool = False, limit: int = 100
) -> list[MemoryRecord]:
    """Memories currently flagged stale, newest first."""
    projects = _projects(memory, project, all_projects)
    found = [m for m in _iter_memories(memory.store, MemoryFilter(projects=projects)) if m.stale]
    found.sort(key=lambda m: (to_epoch(m.created_at), m.id), reverse=True)
    return found[:limit]


# -- forget -----------------------------------------------------------------------------


def _label(m: MemoryRecord) -> str:
    text = " ".join((m.title or m.content).split())
    return text if len(text) <= 100 else text[:99] + "…"


def file_candidates(path: str, root: Path | None) -> tuple[str, ...]:
    """The spellings a linked file may be stored under (as given, relative, absolute)."""
    names = {path, os.path.normpath(path)}
    absolute = os.path.abspath(os.path.expanduser(path))
    names.add(absolute)
    for base in filter(None, (root, Path(os.getcwd()))):
        try:
            rel = os.path.relpath(absolute, base)
        except ValueError:  # another drive (Windows)
            continue
        if not rel.startswith(".."):
            names.add(rel)
    return tuple(sorted(n for n in names if n and n != "."))


def plan_forget(
    memory: Memory,
    query: str | None = None,
    *,
    memory_id: int | None = None,
    session_id: str | None = None,
    file: str | None = None,
    project: str | None = None,
    all_projects: bool = False,
) -> tuple[str, list[MemoryRecord]]:
    """(selector, memories to forget). Exactly one selector is required.

    QUERY matches memories whose title or content contains it (case-insensitive
    substring: forgetting is destructive, so no fuzzy ranking decides it).
    ``--id`` and ``--session`` ignore the project; QUERY and ``--file`` look in
    the project (or every project).
    """
    given = [
        name
        for name, value in (
            ("query", query),
            ("id", memory_id),
            ("session", session_id),
            ("file", file),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise InvalidInput("say what to forget: QUERY, --id, --session or --file (exactly one)")
    store = memory.store
    if memory_id is not None:
        found = store.get_memories([memory_id])
        if not found:
            raise NotFound(f"no memory with id {memory_id} (try `memlane search`)")
        return "id", found
    if session_id is not None:
        if not session_id.strip():
            raise InvalidInput("the session id is empty")
        return "session", list(_iter_memories(store, MemoryFilter(session_id=session_id)))
    projects = _projects(memory, project, all_projects)
    if file is not None:
        if not file.strip():
            raise InvalidInput("the file path is empty")
        root = project_roots().get(memory.resolve_project(project))
        flt = MemoryFilter(projects=projects, files=file_candidates(file.strip(), root))
        return "file", list(_iter_memories(store, flt))
    assert query is not None
    needle = query.strip()
    if not needle:
        raise InvalidInput("the query is empty: give the text of the memories to forget")
    hits = store.like_candidates(needle, MemoryFilter(projects=projects), 10_000_000)
    ids = sorted(memory_id for memory_id, _ in hits)
    return "query", list(_fetch(store, ids))


def forget(
    memory: Memory,
    query: str | None = None,
    *,
    memory_id: int | None = None,
    session_id: str | None = None,
    file: str | None = None,
    project: str | None = None,
    all_projects: bool = False,
    dry_run: bool = False,
) -> ForgetReport:
    """Remove matching memories everywhere (rows, FTS by triggers, vectors by cascade)."""
    started = utcnow()
    selector, found = plan_forget(
        memory,
        query,
        memory_id=memory_id,
        session_id=session_id,
        file=file,
        project=project,
        all_projects=all_projects,
    )
    found.sort(key=lambda m: m.id)
    items = tuple(ForgottenMemory(m.id, m.project, m.kind, m.type, _label(m)) for m in found)
    sessions: tuple[str, ...] = ()
    if session_id is not None and memory.store.get_session(session_id) is not None:
        sessions = (session_id,)
    report = ForgetReport(dry_run, selector, items, sessions)
    if not dry_run:
        with memory.store.transaction():
            memory.store.delete_memories([m.id for m in found])
            if sessions:
                memory.store.delete_sessions(list(sessions))
        memory.store.log_maintenance(
            "forget", started, {"selector": selector, "removed": len(items)}
        )
    return report


# -- the whole run ----------------------------------------------------------------------


def plan_idle_sessions(memory: Memory, now: datetime) -> list[str]:
    """Active sessions idle past ``session_idle_hours`` (what ``close_idle_sessions`` closes)."""
    cutoff = now - timedelta(hours=memory.settings.session_idle_hours)
    idle = memory.store.list_sessions(statuses=("active",), idle_before=cutoff, limit=200)
    return [s.id for s in idle]


def run_maintenance(
    memory: Memory,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    force: bool = False,
    roots: dict[str, Path] | None = None,
) -> MaintenanceReport:
    """One maintenance pass: close idle sessions, prune, merge, size cap, staleness.

    The whole plan is computed before anything changes; see the module
    docstring. ``maintenance.enabled = false`` skips it unless ``force``.
    """
    clock = time.monotonic()
    started = utcnow()
    now = now or started
    settings = memory.settings
    if not settings.maintenance__enabled and not force:
        return MaintenanceReport(dry_run, skipped="maintenance.enabled is false")
    days = settings.maintenance__max_age_days
    cap = int(settings.maintenance__max_db_size_mb * 1024 * 1024)
    sessions = plan_idle_sessions(memory, now)
    pruned = plan_prune(memory, max_age_days=days, now=now)
    gone = frozenset(pruned)
    # Pairs of memories both older than the last run were compared then (the margin
    # covers rows captured while that run was going).
    last = memory.store.last_maintenance(MAINTAIN)
    since = None if last is None else last - timedelta(hours=1)
    groups, compared = plan_merge(memory, exclude=gone, since=since)
    gone |= {i for g in groups for i in g.remove}
    capped, before, estimate = plan_size_cap(memory, cap_bytes=cap, exclude=gone)
    gone |= set(capped)
    mark, clear, checked, unknown = plan_staleness(memory, roots=roots, exclude=gone)
    prune_report = PruneReport(dry_run, days, now - timedelta(days=days), tuple(pruned))
    merge_report = MergeReport(dry_run, DEFAULT_MERGE_THRESHOLD, tuple(groups), compared)
    stale_report = StaleReport(dry_run, checked, tuple(mark), tuple(clear), unknown)
    if dry_run:
        size_report = SizeReport(True, cap, before, estimate, removed=tuple(capped))
        return MaintenanceReport(
            True,
            tuple(sessions),
            prune_report,
            merge_report,
            size_report,
            stale_report,
            seconds=time.monotonic() - clock,
        )
    closed = memory.close_idle_sessions(now=now)
    memory.store.delete_memories(pruned)
    apply_merge(memory.store, groups)
    memory.store.delete_memories(capped)
    apply_staleness(memory.store, mark, clear)
    vacuumed, extra, after = _settle_size(memory, cap, bool(gone))
    size_report = SizeReport(
        False, cap, before, estimate, after, tuple(capped), tuple(extra), vacuumed
    )
    report = MaintenanceReport(
        False,
        tuple(closed),
        prune_report,
        merge_report,
        size_report,
        stale_report,
        seconds=time.monotonic() - clock,
    )
    memory.store.log_maintenance(MAINTAIN, started, report.details())
    return report


# -- scheduling -------------------------------------------------------------------------


def maintenance_due(settings: Settings, last: datetime | None, now: datetime) -> bool:
    """True when automatic maintenance is on and ``interval_hours`` passed since ``last``."""
    if not settings.maintenance__enabled:
        return False
    return last is None or now - last >= timedelta(hours=settings.maintenance__interval_hours)


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
        from memlane.store import open_store

        own = open_store(settings.database)
        try:
            last = own.last_maintenance(MAINTAIN)
        finally:
            own.close()
    else:
        last = store.last_maintenance(MAINTAIN)
    cap_bytes = settings.maintenance__max_db_size_mb * 1024 * 1024
    over_cap = _file_bytes(settings.database) > SIZE_TRIGGER * cap_bytes
    if not over_cap and not maintenance_due(settings, last, now):
        return False
    from memlane.paths import ensure_private_file

    stamp = settings.paths.runtime_dir / SPAWN_STAMP
    # Over the cap, the size must not wait for the interval (nor the long cooldown).
    cooldown = OVER_CAP_COOLDOWN_S if over_cap else SPAWN_COOLDOWN_S
    with contextlib.suppress(FileNotFoundError):
        if time.time() - stamp.stat().st_mtime < cooldown:
            return False
    ensure_private_file(stamp)
    os.utime(stamp)
    spawn_background(settings)
    return True


def spawn_background(settings: Settings) -> None:
    """Start ``python -m memlane [--db X] maintain --background`` detached; never wait."""
    from memlane.runtime import spawn_detached

    argv = [sys.executable, "-m", "memlane"]
    if settings.db_target:
        argv += ["--db", settings.db_target]
    argv += ["maintain", "--background"]
    spawn_detached(argv, settings.paths.log_dir / LOG_FILE)


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


__all__ = [
    "DEFAULT_MERGE_THRESHOLD",
    "FILE_STATE_KEY",
    "ForgetReport",
    "MaintenanceReport",
    "MergeGroup",
    "MergeReport",
    "PruneReport",
    "SizeReport",
    "StaleReport",
    "enforce_size_cap",
    "file_state",
    "forget",
    "jaccard",
    "list_stale",
    "maintenance_due",
    "maintenance_lock",
    "maybe_schedule_maintenance",
    "merge",
    "prune_old",
    "refresh_staleness",
    "run_maintenance",
    "similar_pairs",
    "trigrams",
]
