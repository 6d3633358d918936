"""Copy one store into another: ``memlane migrate-store --from PATH_OR_URL --to URL``.

Sessions, memories (ids kept, every field), embeddings of every model and seen
keys move in batches inside ONE target transaction: the copy lands whole or
not at all. The target must be empty (ids are kept, so merging could clash)
and must offer the bulk entry points of ``PostgresStore`` (``import_sessions``,
``import_memories``, ``seen_count``). Afterwards the counts of both sides are
compared and a mismatch is an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from memlane.errors import InvalidInput, StoreError
from memlane.models import Memory, MemoryFilter, Session
from memlane.store import open_store
from memlane.store.base import Store

BATCH = 1000
_URL_SCHEMES = ("postgresql://", "postgres://")
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
    source: str
    target: str
    memories: int
    sessions: int
    embeddings: dict[str, int] = field(default_factory=dict)
    seen_keys: int = 0
    seconds: float = 0.0


def copy_store(source: Store, target: Store, *, progress: Progress | None = None) -> TransferReport:
    """Copy everything from ``source`` into the empty ``target``; verify the counts."""
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
    wanted_sessions = source.stats().sessions
    with target.deferred_vector_indexes(), target.transaction():
        sessions = source.list_sessions(limit=max(wanted_sessions, 1))
        for start in range(0, len(sessions), BATCH):
            target.import_sessions(sessions[start : start + BATCH])
        note("sessions", len(sessions))
        ids = source.memory_ids(MemoryFilter())
        for start in range(0, len(ids), BATCH):
            target.import_memories(source.get_memories(ids[start : start + BATCH]))
            note("memories", min(start + BATCH, len(ids)))
        embeddings: dict[str, int] = {}
        for model in source.embedding_counts():
            copied = 0
            for chunk in source.iter_embeddings(model, batch=BATCH):
                by_dim: dict[int, list[tuple[int, bytes]]] = {}
                for memory_id, blob in chunk:
                    by_dim.setdefault(len(blob) // 4, []).append((memory_id, blob))
                for dim, items in by_dim.items():
                    target.put_embeddings(model, dim, items)
                copied += len(chunk)
                note(f"embeddings {model}", copied)
            embeddings[model] = copied
        seen = 0
        for pairs in source.iter_seen_keys():
            by_namespace: dict[str, list[str]] = {}
            for namespace, key in pairs:
                by_namespace.setdefault(namespace, []).append(key)
            for namespace, keys in by_namespace.items():
                target.mark_seen(namespace, keys)
            seen += len(pairs)
        note("seen keys", seen)
    report = TransferReport(
        source=source.location,
        target=target.location,
        memories=len(ids),
        sessions=len(sessions),
        embeddings=embeddings,
        seen_keys=seen,
        seconds=time.monotonic() - began,
    )
    _verify(source, target, report)
    return report


def _verify(source: Store, target: Store, report: TransferReport) -> None:
    assert isinstance(target, BulkTarget)
    checks = {
        "memories": (source.count_memories(MemoryFilter()), target.count_memories(MemoryFilter())),
        "sessions": (source.stats().sessions, target.stats().sessions),
        "embeddings": (source.embedding_counts(), target.embedding_counts()),
        "seen keys": (report.seen_keys, target.seen_count()),
    }
    wrong = {name: pair for name, pair in checks.items() if pair[0] != pair[1]}
    if wrong:
        details = "; ".join(f"{name}: source {a}, target {b}" for name, (a, b) in wrong.items())
        raise StoreError(f"the copy does not match the source ({details})")


def migrate(source: str, target: str, *, progress: Progress | None = None) -> TransferReport:
    """Open both stores, copy ``source`` into ``target``, close both."""
    if source == target:
        raise InvalidInput("the source and the target are the same database; name two")
    if not target.startswith(_URL_SCHEMES):
        raise InvalidInput(f"the target must be a postgresql:// URL, not {target!r}")
    if not source.startswith(_URL_SCHEMES) and not Path(source).is_file():
        raise InvalidInput(f"no database file at {source} (give its path or a postgresql:// URL)")
    src = open_store(source)
    try:
        dst = open_store(target)
        try:
            return copy_store(src, dst, progress=progress)
        finally:
            dst.close()
    finally:
        src.close()
