"""The Store protocol: storage primitives only.

A store inserts, updates, deletes and fetches records and produces raw
candidates (full-text, LIKE, vector) for a filter. It never ranks, fuses or
decides business rules: that lives in ``search/`` and ``memories.py``, so the
SQLite and PostgreSQL stores stay small and alike. The same contract suite
(``tests/store_contract.py``) runs against every implementation.

Vectors cross this boundary as float32 ``bytes`` (little-endian) so that the
protocol itself needs no numpy; candidates are ``(id, score)`` pairs where a
higher score is better.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memlane.models import (
    Feedback,
    Injection,
    InjectionTotals,
    Memory,
    MemoryFilter,
    NewInjection,
    NewMemory,
    Session,
    Stats,
)
from memlane.store.fields import SESSION_FIELDS, UPDATABLE_FIELDS
from memlane.store.query import FtsQuery

if TYPE_CHECKING:
    from memlane.background import Job

__all__ = ["NO_LIMIT", "SESSION_FIELDS", "UPDATABLE_FIELDS", "InjectionLog", "Store", "VectorLog"]

# A listing's ``limit`` that takes every row: no store keeps this many sessions or
# injection log entries.
NO_LIMIT = 10**9


class InjectionLog(Protocol):
    """The injection log's storage: what the hooks injected, quiet hooks, feedback marks.

    Deleting a memory clears the text of every logged injection that showed it and
    drops its marks; deleting a session drops its log (both inside the store, by
    triggers, so no deletion path can miss them).
    """

    def insert_injection(self, new: NewInjection) -> int:
        """Store one injection with its memories; returns its id.

        When a memory it showed no longer exists (deleted meanwhile), the entry is
        stored with its text cleared: the log never quotes a deleted memory.
        """
        ...

    def count_quiet_hook(self, session_id: str, project: str, event: str, day: str) -> None:
        """Count one hook of ``event`` that injected nothing (per session and UTC day)."""
        ...

    def list_injections(
        self,
        *,
        session_id: str | None = None,
        projects: Sequence[str] | None = None,
        memory_id: int | None = None,
        event: str | None = None,
        ids: Sequence[int] | None = None,
        limit: int = 50,
    ) -> list[Injection]:
        """Logged injections matching every given filter, newest first, with their
        memories and the marks given for this injection."""
        ...

    def injection_totals(self, projects: Sequence[str] | None, since: datetime) -> InjectionTotals:
        """Per-session tokens, injected and quiet hooks per event, tokens per UTC day
        since ``since`` and marks per kind, of ``projects`` (None: all)."""
        ...

    def put_feedback(self, feedback: Feedback) -> None:
        """Record a mark; a mark on the same (injection, memory) replaces the earlier one."""
        ...

    def feedback_for(self, memory_ids: Sequence[int]) -> list[Feedback]:
        """Every mark given on ``memory_ids``, oldest first."""
        ...

    def feedback_prompts(self) -> list[str]:
        """The distinct prompts the marks were given for (what the privacy filter reads)."""
        ...

    def delete_feedback(self, prompts: Sequence[str]) -> int:
        """Drop the marks given for one of ``prompts``; how many."""
        ...

    def count_injections_before(self, before: datetime) -> int:
        """How many entries are older than ``before`` (what :meth:`prune_injections` drops)."""
        ...

    def prune_injections(self, before: datetime) -> int:
        """Delete the entries (and quiet counts) older than ``before``; how many entries."""
        ...

    def injection_text_sizes(self) -> list[tuple[int, int]]:
        """(id, bytes of prompt and text) of entries that still have text, oldest first."""
        ...

    def clear_injection_text(self, ids: Sequence[int]) -> int:
        """Remove the prompt and text of entries ``ids`` (their counts stay)."""
        ...

    def forget_injection_text(self, needle: str, projects: Sequence[str] | None) -> int:
        """Clear the entries whose prompt or text contains ``needle`` (case-insensitive)
        and drop the marks whose prompt does; returns how many entries were cleared."""
        ...


class Store(InjectionLog, Protocol):
    """What every storage backend offers. See the module docstring."""

    backend: str  # a name for messages ("sqlite", "postgresql"); never branch on it
    location: str
    # True when ``vector_candidates`` answers from the store's own vector index
    # (PostgreSQL: HNSW); False when search keeps a persisted vector table instead
    # (``search/vectors.py``), kept current through the store's :class:`VectorLog`.
    keeps_vector_index: bool
    # True when ``fts_candidates`` scores with BM25 (SQLite FTS5); False when its
    # full-text score knows no word weights (PostgreSQL's ts_rank_cd): keyword search
    # then ranks the candidates by its own BM25 from ``match_counts``.
    ranks_by_bm25: bool

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction; nested calls join the outer one."""
        ...

    def bulk_load(self) -> AbstractContextManager[None]:
        """Around many write transactions in a row (an import): the store may defer index
        upkeep it can do cheaper at the end. Searches stay correct throughout."""
        ...

    # memories
    def insert_memory(self, new: NewMemory) -> int: ...

    def insert_memories(self, news: Sequence[NewMemory]) -> list[int]:
        """Insert ``news`` in this order (one statement or round trip); their ids."""
        ...

    def insert_batch(self, news: Sequence[NewMemory], *, beside: bool = False) -> Job[list[int]]:
        """:meth:`insert_memories` as a job. ``beside``: a store that can (SQLite) runs
        it on a thread of its own inside the current transaction while the caller
        goes on, and makes every other use of the store wait for it; the others
        insert at once."""
        ...

    def update_memory(self, memory_id: int, changes: dict[str, Any]) -> None: ...

    def delete_memories(self, ids: Sequence[int]) -> int: ...

    def get_memories(self, ids: Sequence[int]) -> list[Memory]: ...

    def find_memory(
        self,
        project: str,
        *,
        normalized_hash: str | None = None,
        topic_key: str | None = None,
        source: str | None = None,
        source_id: str | None = None,
        kinds: Sequence[str] | None = None,
        created_after: datetime | None = None,
    ) -> Memory | None:
        """The newest memory of ``project`` matching every given key, or None."""
        ...

    def find_by_source_ids(
        self, project: str, source: str, source_ids: Sequence[str]
    ) -> dict[str, Memory]:
        """The memory of ``project`` and ``source`` holding each of ``source_ids`` (one at
        most: the key is unique; those no memory holds are left out): what many
        :meth:`find_memory` calls would find, in one query per few hundred ids."""
        ...

    def present_keys(
        self, project: str, column: str, values: Sequence[str], *, source: str | None = None
    ) -> set[str]:
        """Which of ``values`` some memory of ``project`` holds in ``column``.

        ``column`` is ``normalized_hash``, ``topic_key`` or ``source_id`` (then only
        memories of ``source`` count). One query per few hundred values: a batch of
        writes learns which of its keys are new before it saves them.
        """
        ...

    def list_memories(
        self,
        flt: MemoryFilter,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Memory]: ...

    def count_memories(self, flt: MemoryFilter) -> int: ...

    def has_memories(self, flt: MemoryFilter) -> bool:
        """Whether any memory matches ``flt``: the first found answers, where a count
        reads them all."""
        ...

    def memory_ids(self, flt: MemoryFilter) -> list[int]: ...

    def record_access(self, ids: Sequence[int], at: datetime) -> None:
        """Count a read of ``ids``; best effort: skipped (not waited for) when another
        process holds the write lock, so a search never waits for an import."""
        ...

    # candidates
    def fts_candidates(
        self, query: FtsQuery, flt: MemoryFilter, limit: int, *, scan: int | None = None
    ) -> list[tuple[int, float]]:
        """(id, relevance) of the best ``limit`` full-text matches, higher is better.

        The store renders ``query`` in its own dialect; no query can make it
        fail. ``scan`` bounds the work: only the ``scan`` newest matches are
        scored (None: all). The per-prompt hook uses it so that a very common
        word cannot make recall score the whole table.
        """
        ...

    def like_candidates(
        self, needle: str, flt: MemoryFilter, limit: int, *, scan: int | None = None
    ) -> list[tuple[int, float]]:
        """Memories whose title or content holds ``needle`` (case-insensitive, literal),
        newest first; ``scan``: looked for among the ``scan`` newest memories of ``flt``
        only (None: all of them)."""
        ...

    def match_counts(self, queries: Sequence[FtsQuery]) -> tuple[int, list[int]]:
        """How many memories the full-text index holds, and how many match each query.

        Over every project, as full-text ranking counts them: the document
        frequencies that search turns into each query word's weight (its idf).
        """
        ...

    def vector_candidates(
        self, model: str, query: Sequence[float], flt: MemoryFilter, limit: int
    ) -> list[tuple[int, float]]: ...

    # embeddings
    def put_embeddings(self, model: str, dim: int, items: Sequence[tuple[int, bytes]]) -> None: ...

    def iter_embeddings(
        self, model: str, *, after_id: int = 0, batch: int = 10_000
    ) -> Iterator[list[tuple[int, bytes]]]: ...

    def missing_embeddings(self, model: str, limit: int) -> list[tuple[int, str]]:
        """(id, text to embed) of memories with no vector for ``model``, oldest first."""
        ...

    def embedding_counts(self) -> dict[str, int]: ...

    def commit_marker(self) -> Hashable | None:
        """A value that changes whenever anything is committed to the store, by this
        connection, another one or another process; None when the store cannot tell.
        Two equal markers mean nothing was committed in between: a poller (the worker's
        idle embedding check) can skip its counts."""
        ...

    def memory_keys(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, float]]:
        """(id, project, kind, type, created_at epoch seconds) of existing ``ids``.

        Cheap filter keys for an in-memory vector index (no content is read).
        """
        ...

    def project_names(self) -> list[str]:
        """Distinct project names of stored memories, sorted (cheap: no stats scan)."""
        ...

    def delete_embeddings(self, model: str | None = None) -> int: ...

    # sessions
    def upsert_session(self, session: Session) -> None: ...

    def get_session(self, session_id: str) -> Session | None: ...

    def update_session(self, session_id: str, changes: dict[str, Any]) -> None: ...

    def list_sessions(
        self,
        *,
        projects: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        idle_before: datetime | None = None,
        limit: int = 50,
    ) -> list[Session]: ...

    def session_ids_starting(
        self, prefix: str, *, projects: Sequence[str] | None = None
    ) -> list[str]:
        """The ids of the sessions (of ``projects``; None: every project) that begin with
        ``prefix``, in order; only the ids are read."""
        ...

    def delete_sessions(self, ids: Sequence[str]) -> int: ...

    def first_memories(self, session_ids: Sequence[str], kind: str) -> dict[str, Memory]:
        """The earliest memory of ``kind`` of each session (sessions without one left out)."""
        ...

    # bookkeeping
    def seen(self, namespace: str, keys: Sequence[str]) -> set[str]:
        """The subset of ``keys`` already recorded under ``namespace``."""
        ...

    def mark_seen(self, namespace: str, keys: Sequence[str]) -> None: ...

    def iter_seen_keys(self, batch: int = 10_000) -> Iterator[list[tuple[str, str]]]:
        """Every (namespace, key) recorded, in batches, ordered."""
        ...

    def log_maintenance(self, kind: str, started_at: datetime, details: dict[str, Any]) -> None: ...

    def last_maintenance(self, kind: str) -> datetime | None: ...

    def stats(self, project: str | None = None) -> Stats:
        """Counts of the whole store, or of one project (``db_bytes`` is always the whole)."""
        ...

    def change_marker(self) -> tuple[int, int]:
        """(max memory id, max session activity) — cheap to poll for live feeds."""
        ...

    def schema_version(self) -> int: ...

    # the database as a whole
    def same_database(self, path: str | Path) -> bool:
        """Whether ``path`` names this store's database file (never for a server database)."""
        ...

    def storage_bytes(self) -> tuple[int, int]:
        """(bytes the data uses, bytes the database takes on disk incl. its write-ahead log)."""
        ...

    def backfill_index(self, batch: int) -> tuple[int, int]:
        """Re-index the next ``batch`` ids written before the full-text index held the
        words inside camelCase identifiers (migration 7), in one transaction.

        Returns (ids gone through, ids left); (0, 0) when nothing is left. Maintenance runs it: a
        migration must stay fast, it runs when a hook opens the database.
        """
        ...

    def reclaim_space(self, *, full: bool = False) -> bool:
        """Give freed space back to the file system; True when it ran.

        False when the store has nothing to do (PostgreSQL: autovacuum). ``full``
        also packs half-empty pages, at the cost of rewriting the file. Raises
        StoreError when it cannot run now (e.g. the database is busy).
        """
        ...

    def backup_to(self, dest: Path, scratch: Path) -> int:
        """Copy the database, consistent and verified, to the new file ``dest``.

        ``scratch``: a private folder of memlane's where the copy may be written first
        (the data folder): SQLite writes by name, safe only where no one else can rename.

        Returns the copy's memory count. Raises InvalidInput where memlane cannot
        (PostgreSQL: the message names pg_dump).
        """
        ...


@runtime_checkable
class VectorLog(Protocol):
    """What a store offers a local, persisted vector index (SQLite; not PostgreSQL,
    which searches its own HNSW): a log of which memories' vectors changed.

    Every vector write or delete, and every change of a vectored memory's filter
    keys, appends the memory id with a growing sequence number. An index saved at
    sequence S replays the ids logged after S instead of rereading every vector.
    """

    def vector_change_mark(self) -> int:
        """The highest sequence number ever logged (0 before the first change)."""
        ...

    def vector_changes(self, model: str, after: int, upto: int) -> list[int] | None:
        """Distinct ids of ``model`` logged in ``(after, upto]``; None when the log was
        pruned past ``after`` (the caller must reload from the embeddings table)."""
        ...

    def embeddings_of(self, model: str, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """(id, float32 bytes) of the ``ids`` that have a vector of ``model`` now."""
        ...

    def prune_vector_changes(self, upto: int) -> int:
        """Forget log entries up to ``upto`` (a persisted index has them)."""
        ...

    def identity(self) -> str:
        """A string that differs between two databases at the same path (e.g. restored)."""
        ...
