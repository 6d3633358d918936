"""What several maintenance steps share: age, batched fetch, project scope, size trigger.

**Age** counts from a memory's last touch (the later of ``updated_at`` and
``last_accessed_at``), not from ``created_at``: an imported history from 2023 is
not wiped on the day it is imported, and a memory recalled last week is still
useful. Knowledge and summaries (``PROTECTED_KINDS``) are exempt by default.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memlane.models import Memory as MemoryRecord
from memlane.models import MemoryFilter, to_epoch

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store

# One logger for the package, named as before the split (log lines keep their name).
log = logging.getLogger("memlane.maintenance")

PROTECTED_KINDS: tuple[str, ...] = ("knowledge", "summary")
FETCH_BATCH = 500
# The cap acts above SIZE_TRIGGER × cap and shrinks to SIZE_TARGET × cap: hysteresis,
# so one run buys room for the next interval instead of trimming a row at a time.
# Here, not in size.py: the scheduler checks the trigger on the hook path.
SIZE_TRIGGER = 0.9
SIZE_TARGET = 0.75
# The maintenance_log kind of the whole run (written by run, read by the scheduler).
MAINTAIN = "maintain"


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


def _projects(core: Core, project: str | None, all_projects: bool) -> tuple[str, ...] | None:
    return core.projects_for(project, all_projects)


def _age_order(memories: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(memories, key=lambda m: (to_epoch(last_touch(m)), m.id))
