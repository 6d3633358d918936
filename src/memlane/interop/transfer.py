"""Copy one store into another: ``memlane migrate-store --from PATH_OR_URL --to URL``.

Sessions, memories (ids kept, every field), embeddings of every model and seen
keys move in batches inside ONE target transaction: the copy lands whole or
not at all. The target must be empty (ids are kept, so merging could clash)
and must offer the bulk entry points of ``PostgresStore`` (``import_sessions``,
``import_memories``, ``seen_count``). Afterwards the counts of both sides are
compared and a mismatch is an error.

The source is a file or a database anyone may have edited: every row passes
through today's privacy filter on its way (:class:`refiltering.Screen`, the rule a
restore and maintenance apply), so the target never holds a secret or a
``<private>`` block. A row the write path would refuse (a name holding a secret) is
left out and counted, a changed memory's vectors are left for the worker to compute
again, transcript paths are dropped (this machine's hooks give them), and the
source's record of filter passes is not copied: the target records the pass this
copy made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memlane.core import Core
from memlane.errors import InvalidInput, StoreError
from memlane.maintenance.refiltering import FILTER_NAMESPACE, Screen, filter_version
from memlane.models import Memory, MemoryFilter, Session
from memlane.store import is_postgres_url, open_store
from memlane.store.base import Store
from memlane.store.fields import EMBEDDED_FIELDS

if TYPE_CHECKING:
    from memlane.config import Settings

BATCH = 1000
Progress = Callable[[str, int], None]


@runtime_checkable
class BulkTarget(Protocol):
    """What a migration target offers on top of the Store protocol."""

    def import_memories(self, memories: list[Memory]) -> None: ...

    def import_sessions(self, sessions: list[Session]) -> None: ...

    def seen_count(self) -> int: ...

    def deferred_vector_indexes(self) -> AbstractContextManager[None]: ...


@dataclass(frozen=True, slots=True)
class TransferReport:
    """What was copied; ``filtered``: memories the privacy filter changed on the way;
    ``left_out_*``: rows the write path would refuse, not copied."""

    source: str
    target: str
    memories: int
    sessions: int
    embeddings: dict[str, int] = field(default_factory=dict)
    seen_keys: int = 0
    seconds: float = 0.0
    filtered: int = 0
    left_out_memories: int = 0
    left_out_sessions: int = 0


def copy_store(
    source: Store, target: Store, settings: Settings, *, progress: Progress | None = None
) -> TransferReport:
    """Copy everything from ``source`` into the empty ``target`` through the privacy
    filter ``settings`` configure (module docstring); verify the counts."""
    if not isinstance(target, BulkTarget):
        raise InvalidInput(
            f"cannot migrate into a {target.backend} store: the target must be a postgresql:// URL"
        )
    already = target.count_memories(MemoryFilter())
    if already or target.stats().sessions:
        raise InvalidInput(
            f"the target {target.location} is not empty ({already} memories): migrate into a"
            " new, empty database"
        )
    began = time.monotonic()
    note = progress or (lambda _what, _count: None)
    core = Core(target, settings)
    screen = Screen(core, foreign=True, copying=True)
    wanted_sessions = source.stats().sessions
    with target.deferred_vector_indexes(), target.transaction():
        sessions: list[Session] = []
        left_out_sessions = 0
        for session in source.list_sessions(limit=max(wanted_sessions, 1)):
            session_changes = screen.session_changes(session)
            if session_changes is None:
                left_out_sessions += 1
            else:
                sessions.append(replace(session, **session_changes))
        for start in range(0, len(sessions), BATCH):
            target.import_sessions(sessions[start : start + BATCH])
        note("sessions", len(sessions))
        ids = source.memory_ids(MemoryFilter())
        copied_memories = filtered = 0
        stale_vectors: set[int] = set()  # of memories left out or whose text changed
        for start in range(0, len(ids), BATCH):
            batch: list[Memory] = []
            for memory in source.get_memories(ids[start : start + BATCH]):
                changes = screen.memory_changes(memory)
                if changes is None or not changes.keys().isdisjoint(EMBEDDED_FIELDS):
                    stale_vectors.add(memory.id)
                if changes is not None:
                    batch.append(replace(memory, **changes) if changes else memory)
                    filtered += bool(changes)
            target.import_memories(batch)
            copied_memories += len(batch)
            note("memories", min(start + BATCH, len(ids)))
        embeddings: dict[str, int] = {}
        for model in source.embedding_counts():
            copied = 0
            for chunk in source.iter_embeddings(model, batch=BATCH):
                by_dim: dict[int, list[tuple[int, bytes]]] = {}
                for memory_id, blob in chunk:
                    if memory_id not in stale_vectors:
                        by_dim.setdefault(len(blob) // 4, []).append((memory_id, blob))
                for dim, items in by_dim.items():
                    target.put_embeddings(model, dim, items)
                    copied += len(items)
                note(f"embeddings {model}", copied)
            if copied:
                embeddings[model] = copied
        seen = 0
        for pairs in source.iter_seen_keys():
            by_namespace: dict[str, list[str]] = {}
            for namespace, key in pairs:
                if namespace != FILTER_NAMESPACE:  # the source's word, not this copy's
                    by_namespace.setdefault(namespace, []).append(key)
            for namespace, keys in by_namespace.items():
                target.mark_seen(namespace, keys)
                seen += len(keys)
        target.mark_seen(FILTER_NAMESPACE, [filter_version(core)])
        seen += 1
        note("seen keys", seen)
    report = TransferReport(
        source=source.location,
        target=target.location,
        memories=copied_memories,
        sessions=len(sessions),
        embeddings=embeddings,
        seen_keys=seen,
        seconds=time.monotonic() - began,
        filtered=filtered,
        left_out_memories=len(ids) - copied_memories,
        left_out_sessions=left_out_sessions,
    )
    _verify(source, target, report)
    return report


def _verify(source: Store, target: Store, report: TransferReport) -> None:
    """The source holds what was read of it, the target what the report says was copied."""
    assert isinstance(target, BulkTarget)
    checks = {
        "source memories": (
            report.memories + report.left_out_memories,
            source.count_memories(MemoryFilter()),
        ),
        "source sessions": (report.sessions + report.left_out_sessions, source.stats().sessions),
        "memories": (report.memories, target.count_memories(MemoryFilter())),
        "sessions": (report.sessions, target.stats().sessions),
        "embeddings": (report.embeddings, target.embedding_counts()),
        "seen keys": (report.seen_keys, target.seen_count()),
    }
    wrong = {name: pair for name, pair in checks.items() if pair[0] != pair[1]}
    if wrong:
        details = "; ".join(f"{name}: copied {a}, found {b}" for name, (a, b) in wrong.items())
        raise StoreError(f"the copy does not match the source ({details})")


def migrate(
    source: str, target: str, settings: Settings, *, progress: Progress | None = None
) -> TransferReport:
    """Open both stores, copy ``source`` into ``target`` through the privacy filter
    ``settings`` configure, close both."""
    if source == target:
        raise InvalidInput("the source and the target are the same database; name two")
    if not is_postgres_url(target):
        raise InvalidInput(f"the target must be a postgresql:// URL, not {target!r}")
    if not is_postgres_url(source) and not Path(source).is_file():
        raise InvalidInput(f"no database file at {source} (give its path or a postgresql:// URL)")
    src = open_store(source)
    try:
        dst = open_store(target)
        try:
            return copy_store(src, dst, settings, progress=progress)
        finally:
            dst.close()
    finally:
        src.close()
