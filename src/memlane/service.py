"""The Memory facade: the only entry to memlane's core, and composition only.

Every interface (CLI, hooks, MCP, HTTP, dashboard) calls these methods. Each
one hands :attr:`Memory.core` (:class:`~memlane.core.Core`: store, settings,
privacy filter, project rule, clock) to the module doing the job and returns
its result; no rule lives here, and no module below calls back up:

* :mod:`memlane.memories` — the one write path (privacy first, clip, hash,
  upsert or dedup, session activity), edits, deletion, reading, the timeline;
* :mod:`memlane.sessions` — session lifecycle, summaries and checkpoints;
* :mod:`memlane.capture.pipeline` — what the hooks store;
  :mod:`memlane.capture.lifecycle` — session starts, auto-close, summaries and
  checkpoints rebuilt by rule;
* :mod:`memlane.search.queries` — search, recall, the context pack, backfill;
* :mod:`memlane.maintenance` — hygiene; :mod:`memlane.interop` — imports,
  exports, sync, backup; :mod:`memlane.activity` — the activity report.

The modules a hook does not need load on first use, so ``import
memlane.service`` stays lean on the per-prompt hook path.
"""

from __future__ import annotations

from dataclasses import replace

from memlane import memories
from memlane.config import Settings, load_settings
from memlane.core import Core
from memlane.store import open_configured

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from datetime import datetime, timedelta
    from typing import Any, TextIO

    from memlane.capture.pipeline import IngestReport, PromptRecord
    from memlane.capture.recover import RecoverReport
    from memlane.capture.sources import SessionFile
    from memlane.injections import Injected
    from memlane.interop.backup import BackupResult
    from memlane.interop.report import InteropReport
    from memlane.interop.sync import SyncPush
    from memlane.maintenance import (
        ForgetReport,
        MaintenanceReport,
        MergeReport,
        PruneReport,
        SizeReport,
        StaleReport,
    )
    from memlane.models import (
        Checkpoint,
        Feedback,
        ImportReport,
        Injection,
        SaveResult,
        SearchHit,
        SearchResult,
        Session,
        Stats,
        Summary,
    )
    from memlane.models import Memory as MemoryRecord
    from memlane.search.engine import SearchEngine
    from memlane.search.indexer import EmbedReport
    from memlane.store.base import Store


def open(target: str | None = None, *, settings: Settings | None = None) -> Memory:
    """Open memlane's memory at ``target`` (a path or ``postgresql://`` URL).

    Without a target the configured database is used (``MEMLANE_HOME`` /
    XDG data dir), created on first use.
    """
    if settings is None:
        settings, _warnings = load_settings(db_target=target)
    elif target is not None:
        settings = replace(settings, db_target=target)
    return Memory(open_configured(settings), settings)


class Memory:
    """memlane's memory service. Create it with :func:`memlane.open`."""

    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.core = Core(store, settings if settings is not None else load_settings()[0])
        self._engine: SearchEngine | None = None

    @property
    def store(self) -> Store:
        """The store under this memory (tests and tools; interfaces use the methods)."""
        return self.core.store

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self.core.settings = value

    @property
    def location(self) -> str:
        """Where the database is: a file path or a ``postgresql://`` URL."""
        return self.core.store.location

    def close(self) -> None:
        self.core.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------

    @property
    def default_project(self) -> str:
        """The project of the current working directory."""
        return self.core.default_project

    def resolve_project(self, project: str | None) -> str:
        """``project`` trimmed, or the current directory's project when it is None."""
        return self.core.resolve_project(project)

    def scrub(self, text: str) -> str:
        """Privacy filter applied at every entry point (private tags, own context, secrets)."""
        return self.core.scrub(text)

    def projects(self) -> list[str]:
        """Names of the projects that have memories (one cheap index walk)."""
        return self.core.store.project_names()

    def stats(self, *, project: str | None = None) -> Stats:
        """Database statistics, of every project or of ``project`` only, with what the
        hooks injected (tokens per session, the share of prompts that got anything)."""
        from memlane.injections import stats as injection_stats

        return replace(
            self.core.store.stats(project), injections=injection_stats(self.core, project)
        )

    def change_marker(self) -> tuple[int, int]:
        """(max memory id, max session activity): cheap to poll for a live feed."""
        return self.core.store.change_marker()

    def embedding_counts(self) -> dict[str, int]:
        """How many memories have a vector, per embedding model."""
        return self.core.store.embedding_counts()

    # -- sessions -------------------------------------------------------------

    def session_start(
        self,
        session_id: str,
        *,
        project: str | None = None,
        agent: str = "unknown",
        transcript_path: str | None = None,
        parent_session_id: str | None = None,
        now: datetime | None = None,
    ) -> Session:
        """Start (or resume) a session and close the project's other idle sessions.

        Calling it twice changes nothing but activity.
        """
        from memlane.capture.lifecycle import begin_session

        return begin_session(
            self.core,
            session_id,
            project=project,
            agent=agent,
            transcript_path=transcript_path,
            parent_session_id=parent_session_id,
            now=now,
        )

    def session_end(self, session_id: str, *, now: datetime | None = None) -> Session:
        """Mark a session ended (cheap: Claude Code gives SessionEnd 1.5 s)."""
        from memlane.sessions import end_session

        return end_session(self.core, session_id, now=now)

    def get_session(self, session_id: str) -> Session:
        """The session ``session_id`` (NotFound when it is unknown)."""
        from memlane.sessions import get_session

        return get_session(self.core, session_id)

    def find_session(self, session_id: str) -> Session | None:
        """The session ``session_id``, or None when it is unknown."""
        from memlane.sessions import find_session

        return find_session(self.core, session_id)

    def list_sessions(
        self, *, project: str | None = None, all_projects: bool = False, limit: int = 50
    ) -> list[Session]:
        from memlane.sessions import list_sessions

        return list_sessions(self.core, project=project, all_projects=all_projects, limit=limit)

    def session_titles(self, session_ids: Sequence[str]) -> dict[str, str]:
        """Each session's task or first prompt, in one line (sessions without one left out)."""
        from memlane.sessions import session_titles

        return session_titles(self.core, session_ids)

    def touch_session(
        self, session_id: str, project: str, *, now: datetime | None = None, prompt: bool = False
    ) -> Session:
        """Record activity in a session, creating it if this is the first we hear of it."""
        return memories.touch_session(self.core, session_id, project, now=now, prompt=prompt)

    def close_idle_sessions(
        self, *, project: str | None = None, now: datetime | None = None, keep: str | None = None
    ) -> list[str]:
        """Close sessions idle longer than ``session_idle_hours`` with an auto summary."""
        from memlane.capture.lifecycle import close_idle_sessions

        return close_idle_sessions(self.core, project=project, now=now, keep=keep)

    # -- memories -------------------------------------------------------------

    def save(
        self,
        content: str,
        *,
        project: str | None = None,
        type: str = "note",
        kind: str | None = None,
        title: str | None = None,
        session_id: str | None = None,
        topic_key: str | None = None,
        source: str = "memlane",
        source_id: str | None = None,
        created_at: datetime | None = None,
        files: Sequence[str] = (),
        tags: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
        dedup_window: timedelta | None = None,
    ) -> SaveResult:
        """Store one memory, or recognise it as an update or a duplicate.

        Returns ``SaveResult(status, id)`` where status is ``created``,
        ``updated`` (topic_key / source_id upsert) or ``deduplicated``.
        """
        draft = memories.Draft(
            content,
            project=project,
            type=type,
            kind=kind,
            title=title,
            session_id=session_id,
            topic_key=topic_key,
            source=source,
            source_id=source_id,
            created_at=created_at,
            files=files,
            tags=tags,
            metadata=metadata,
            dedup_window=dedup_window,
        )
        return memories.save(self.core, draft)

    def get(self, memory_id: int, *, record_access: bool = False) -> MemoryRecord:
        return memories.get(self.core, memory_id, record_access=record_access)

    def get_many(self, ids: Sequence[int]) -> list[MemoryRecord]:
        return memories.get_many(self.core, ids)

    def update(
        self,
        memory_id: int,
        *,
        content: str | None = None,
        title: str | None = None,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        files: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryRecord:
        """Edit a memory in place (privacy-filtered like a save)."""
        return memories.update(
            self.core,
            memory_id,
            content=content,
            title=title,
            type=type,
            tags=tags,
            files=files,
            metadata=metadata,
        )

    def delete(
        self,
        *,
        id: int | None = None,
        ids: Sequence[int] | None = None,
        session_id: str | None = None,
        before: datetime | None = None,
        project: str | None = None,
        dry_run: bool = False,
    ) -> list[int]:
        """Delete memories by id(s), session, age or project; returns the ids removed.

        Criteria combine with AND; at least one is required.
        """
        return memories.delete(
            self.core,
            id=id,
            ids=ids,
            session_id=session_id,
            before=before,
            project=project,
            dry_run=dry_run,
        )

    def select_for_delete(
        self,
        *,
        id: int | None = None,
        ids: Sequence[int] | None = None,
        session_id: str | None = None,
        before: datetime | None = None,
        project: str | None = None,
    ) -> list[int]:
        return memories.select_for_delete(
            self.core, id=id, ids=ids, session_id=session_id, before=before, project=project
        )

    def list_memories(
        self,
        *,
        project: str | None = None,
        all_projects: bool = False,
        kinds: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        session_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        return memories.list_memories(
            self.core,
            project=project,
            all_projects=all_projects,
            kinds=kinds,
            types=types,
            session_id=session_id,
            limit=limit,
            offset=offset,
        )

    def iter_all(
        self, projects: tuple[str, ...] | None, batch: int = 1000
    ) -> Iterator[MemoryRecord]:
        """Every memory of ``projects`` (None: all), oldest first, in batches."""
        return memories.iter_all(self.core, projects, batch)

    def timeline(
        self,
        *,
        around: int | None = None,
        before: int = 5,
        after: int = 5,
        start: datetime | None = None,
        end: datetime | None = None,
        project: str | None = None,
        all_projects: bool = False,
        session_id: str | None = None,
        limit: int = 50,
    ) -> list[MemoryRecord]:
        """Memories around one id (same project), or in a time range, oldest first."""
        return memories.timeline(
            self.core,
            around=around,
            before=before,
            after=after,
            start=start,
            end=end,
            project=project,
            all_projects=all_projects,
            session_id=session_id,
            limit=limit,
        )

    def record_access(self, ids: Sequence[int]) -> None:
        """Count one use of each memory in ``ids`` (the frequency signal of ranking)."""
        memories.record_access(self.core, ids)

    def report(
        self,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        project: str | None = None,
        all_projects: bool = False,
    ) -> dict[str, Any]:
        """Activity over a period: counts per day, type and project, sessions, highlights."""
        from memlane.activity import activity_report

        return activity_report(
            self.core, start=start, end=end, project=project, all_projects=all_projects
        )

    # -- search ---------------------------------------------------------------

    @property
    def search_engine(self) -> SearchEngine:
        """The search engine of this memory (keeps the embedder and vectors warm)."""
        if self._engine is None:
            from memlane.search.queries import new_engine

            self._engine = new_engine(self.core)
        return self._engine

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        scope: str | None = None,
        limit: int = 10,
        mode: str | None = None,
        as_of: datetime | None = None,
        kinds: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        since: datetime | None = None,
        record_access: bool = False,
        min_score: float | None = None,
        keyword_scan: int | None = None,
    ) -> SearchResult:
        """Find memories for ``query``; a list of :class:`SearchHit`, best first.

        ``scope``: ``project`` (only ``project``), ``all`` (every project) or
        ``tiered`` (the project first, others scaled by ``cross_project_penalty``
        and tagged with ``from_project``). ``as_of`` ranks as if now were that
        time and ignores memories created after it. ``mode`` defaults to
        ``search_mode`` (hybrid); without vectors for the configured embedder
        it runs in keyword mode and the result's ``notice`` says so.
        ``min_score`` is the floor of the hits returned (default 0: a ranked
        listing, with the relaxation cascade when fewer than ``limit`` hits are
        found); :meth:`recall` applies ``min_relevance_score``. ``keyword_scan``
        bounds how many full-text matches are scored (recall keeps it small).
        """
        from memlane.search.queries import search

        return search(
            self.core,
            self.search_engine,
            query,
            project=project,
            scope=scope,
            limit=limit,
            mode=mode,
            as_of=as_of,
            kinds=kinds,
            types=types,
            since=since,
            record_access=record_access,
            min_score=min_score,
            keyword_scan=keyword_scan,
        )

    def recall(
        self,
        prompt: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        min_score: float | None = None,
        mode: str | None = None,
        record_access: bool = True,
    ) -> SearchResult:
        """Memories worth injecting for ``prompt``: at most ``recall_limit`` above the floor.

        Returns nothing when nothing is relevant; records access of what it returns
        unless ``record_access`` is False (the hook records only what it injects,
        with :meth:`record_access`, after answering). Keyword-only recall needs
        ``KEYWORD_RECALL_MARGIN`` more than the floor (see
        :mod:`memlane.search.queries`).
        """
        from memlane.search.queries import recall

        return recall(
            self.core,
            self.search_engine,
            prompt,
            project=project,
            limit=limit,
            min_score=min_score,
            mode=mode,
            record_access=record_access,
        )

    def context(
        self,
        *,
        project: str | None = None,
        session_id: str | None = None,
        budget: int | None = None,
        branch: str | None = None,
    ) -> str:
        """The SessionStart context pack of a project, within a token budget.

        Where the last session stopped (its checkpoint), the latest summaries, then
        what is worth knowing now: decisions, fixes and constraints by recency,
        recurrence of their files in recent sessions, similarity to the task (or
        ``branch``) and use.
        """
        from memlane.search.queries import context_pack

        return context_pack(
            self.core, project=project, session_id=session_id, budget=budget, branch=branch
        )

    def embed_backfill(
        self,
        *,
        model: str | None = None,
        batch: int = 64,
        limit: int | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> EmbedReport:
        """Embed every memory without a vector for the embedder (resumable).

        ``model`` overrides the configured embedder (``use``, ``e5``, ``toy``).
        ``dry_run`` only counts what would be embedded (no model is loaded).
        """
        from memlane.search.queries import embed_backfill

        report, self._engine = embed_backfill(
            self.core,
            self.search_engine,
            model=model,
            batch=batch,
            limit=limit,
            dry_run=dry_run,
            progress=progress,
        )
        return report

    # -- capture --------------------------------------------------------------

    def record_prompt(
        self, session_id: str, prompt: str, *, project: str | None = None
    ) -> PromptRecord:
        """Store a user prompt with its number in the session (UserPromptSubmit)."""
        from memlane.capture.pipeline import record_prompt

        return record_prompt(
            self.core, session_id, prompt, project=self.core.resolve_project(project)
        )

    def record_tool_event(
        self,
        session_id: str,
        tool_name: Any,
        tool_input: Any,
        tool_response: Any,
        *,
        cwd: str | None = None,
        project: str | None = None,
        tool_use_id: str | None = None,
    ) -> SaveResult | None:
        """Classify a tool event and store it as an observation; None when dropped (or
        recorded already from the transcript: ``tool_use_id`` is the call's id)."""
        from memlane.capture.pipeline import record_tool_event

        return record_tool_event(
            self.core,
            session_id,
            tool_name,
            tool_input,
            tool_response,
            cwd=cwd,
            project=self.core.resolve_project(project),
            tool_use_id=tool_use_id,
        )

    def ingest_transcript(
        self,
        session_id: str,
        path: str | None = None,
        *,
        project: str | None = None,
        parent_session_id: str | None = None,
    ) -> IngestReport:
        """Ingest a session's transcript from its stored byte offset (idempotent)."""
        from memlane.capture.pipeline import ingest_transcript

        return ingest_transcript(
            self.core, session_id, path, project=project, parent_session_id=parent_session_id
        )

    def recover(
        self,
        files: Sequence[SessionFile],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> RecoverReport:
        """Capture sessions agents already wrote to disk (``memlane recover``; idempotent)."""
        from memlane.capture.recover import recover

        return recover(self.core, files, progress=progress)

    def transcript_pending(self, session_id: str) -> bool:
        """True when the session's transcript has bytes not ingested yet."""
        from memlane.capture.pipeline import transcript_pending

        return transcript_pending(self.core, session_id)

    def refresh_checkpoint(
        self, session_id: str, last_assistant_message: str | None = None
    ) -> Checkpoint | None:
        """Rebuild the rule-based checkpoint of a session (Stop, PreCompact)."""
        from memlane.capture.lifecycle import refresh_checkpoint

        return refresh_checkpoint(self.core, session_id, last_assistant_message)

    def select_recall(
        self, prompt: str, hits: Sequence[SearchHit], *, session_id: str | None = None
    ) -> list[SearchHit]:
        """The recall hits worth injecting for ``prompt`` (at most ``recall_limit``),
        each transcript unit with the one that followed it (a past request only with
        its answer): see :mod:`memlane.search.selection`."""
        from memlane.search.selection import select_recall, with_neighbours

        chosen = select_recall(
            prompt,
            hits,
            session_id=session_id,
            limit=self.settings.recall_limit,
            min_score=self.settings.min_relevance_score,
        )
        return with_neighbours(self.core.store, chosen)

    # -- the injection log ----------------------------------------------------

    def record_injection(self, injected: Injected) -> int | None:
        """Log what a SessionStart or prompt hook injected (a count when nothing);
        the entry's id, or None. The hooks call it after answering."""
        from memlane.injections import record

        return record(self.core, injected)

    def injection_log(
        self,
        *,
        session_id: str | None = None,
        project: str | None = None,
        all_projects: bool = False,
        limit: int = 20,
    ) -> list[Injection]:
        """The last ``limit`` injections in time order: of a session, a project or all."""
        from memlane.injections import entries

        return entries(
            self.core,
            session_id=session_id,
            project=project,
            all_projects=all_projects,
            limit=limit,
        )

    def feedback(self, memory_id: int, mark: str, *, injection_id: int | None = None) -> Feedback:
        """Mark an injected memory ``useful`` or ``noise`` for the prompt it was injected
        for (that of ``injection_id``, else its latest); recall then weighs it for
        similar prompts (see :mod:`memlane.search.feedback`)."""
        from memlane.injections import mark as mark_memory

        return mark_memory(self.core, memory_id, mark, injection_id=injection_id)

    # -- summaries and checkpoints --------------------------------------------

    def save_summary(self, summary: Summary) -> SaveResult:
        """Store a session summary (one per session, replaced on refresh)."""
        from memlane.sessions import save_summary

        return save_summary(self.core, summary)

    def get_summary(self, session_id: str) -> Summary | None:
        from memlane.sessions import get_summary

        return get_summary(self.core, session_id)

    def latest_summary(self, *, project: str | None = None) -> Summary | None:
        """The newest summary of a project (None when it has none yet)."""
        from memlane.sessions import latest_summary

        return latest_summary(self.core, project=project)

    def refresh_summary(self, session_id: str) -> Summary | None:
        """Rebuild the rule-based summary of a session from its observations."""
        from memlane.capture.lifecycle import refresh_summary

        return refresh_summary(self.core, session_id)

    def save_checkpoint(self, checkpoint: Checkpoint) -> SaveResult:
        """Store the latest checkpoint of a session (replaced on refresh)."""
        from memlane.sessions import save_checkpoint

        return save_checkpoint(self.core, checkpoint)

    def latest_checkpoint(
        self, *, project: str | None = None, session_id: str | None = None
    ) -> Checkpoint | None:
        from memlane.sessions import latest_checkpoint

        return latest_checkpoint(self.core, project=project, session_id=session_id)

    # -- maintenance ----------------------------------------------------------
    # Plan, then apply: dry runs list exactly what the real run removes.

    def maintain(self, *, dry_run: bool = False, force: bool = False) -> MaintenanceReport:
        """One maintenance pass: idle sessions, prune, merge, size cap, staleness, vacuum."""
        from memlane.maintenance import run_maintenance

        return run_maintenance(self.core, dry_run=dry_run, force=force)

    def maintenance_due(self) -> bool:
        """Whether automatic maintenance is on and its interval has passed."""
        from memlane.maintenance import due_now

        return due_now(self.core.settings, self.core.store)

    def schedule_maintenance(self) -> bool:
        """Start a detached maintenance run when one is due; True when started (cheap)."""
        from memlane.maintenance import maybe_schedule_maintenance

        return maybe_schedule_maintenance(self.core.settings, self.core.store)

    def merge(
        self,
        *,
        threshold: float = 0.6,
        project: str | None = None,
        all_projects: bool = False,
        dry_run: bool = False,
    ) -> MergeReport:
        """Join near-duplicate memories (trigram Jaccard >= ``threshold``), keeping the richer."""
        from memlane.maintenance import merge

        return merge(
            self.core,
            threshold=threshold,
            project=project,
            all_projects=all_projects,
            dry_run=dry_run,
        )

    def prune_old(self, *, max_age_days: int | None = None, dry_run: bool = False) -> PruneReport:
        """Delete memories untouched for ``max_age_days`` (knowledge and summaries stay)."""
        from memlane.maintenance import prune_old

        return prune_old(self.core, max_age_days=max_age_days, dry_run=dry_run)

    def enforce_size_cap(self, *, max_mb: float | None = None, dry_run: bool = False) -> SizeReport:
        """Keep the database under ``max_mb`` by removing the oldest non-knowledge rows first."""
        from memlane.maintenance import enforce_size_cap

        return enforce_size_cap(self.core, max_mb=max_mb, dry_run=dry_run)

    def refresh_staleness(
        self, *, project: str | None = None, all_projects: bool = False, dry_run: bool = False
    ) -> StaleReport:
        """Re-check files linked to memories; flag those whose file changed after capture."""
        from memlane.maintenance import refresh_staleness

        return refresh_staleness(
            self.core, project=project, all_projects=all_projects, dry_run=dry_run
        )

    def stale_memories(
        self, *, project: str | None = None, all_projects: bool = False, limit: int = 100
    ) -> list[MemoryRecord]:
        """Memories flagged stale, newest first."""
        from memlane.maintenance import list_stale

        return list_stale(self.core, project=project, all_projects=all_projects, limit=limit)

    def forget(
        self,
        query: str | None = None,
        *,
        id: int | None = None,
        session_id: str | None = None,
        file: str | None = None,
        project: str | None = None,
        all_projects: bool = False,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Remove the memories matching exactly one selector everywhere; lists what went."""
        from memlane.maintenance import forget

        return forget(
            self.core,
            query,
            memory_id=id,
            session_id=session_id,
            file=file,
            project=project,
            all_projects=all_projects,
            dry_run=dry_run,
        )

    # -- interop --------------------------------------------------------------

    def import_jsonl(self, path: str, *, project: str | None = None) -> ImportReport:
        """Import a JSONL file of memory records (DESIGN §7); bad lines are reported."""
        from memlane.interop.roundtrip import import_jsonl

        return import_jsonl(self.core, path, project=project)

    def export_records(
        self,
        out: TextIO,
        *,
        format: str = "jsonl",
        project: str | None = None,
        with_vectors: bool = False,
    ) -> int:
        """Lossless export (sessions + memories, optionally vectors) of a project or all."""
        from memlane.interop.export import export

        return export(self.core, out, format=format, project=project, with_vectors=with_vectors)

    def import_export(
        self, path: str, *, project: str | None = None, with_vectors: bool = True
    ) -> InteropReport:
        """Import memlane's own JSON/JSONL export (or plain JSONL records), losslessly."""
        from memlane.interop.roundtrip import import_export_file

        return import_export_file(self.core, path, project=project, with_vectors=with_vectors)

    def import_claude_mem(
        self, source: str | None = None, *, project: str | None = None, dry_run: bool = False
    ) -> InteropReport:
        """Import a claude-mem SQLite database (default ``~/.claude-mem/claude-mem.db``)."""
        from memlane.interop.claude_mem import import_claude_mem

        return import_claude_mem(self.core, source, project=project, dry_run=dry_run)

    def import_jsonl_store(self, directory: str, *, project: str | None = None) -> InteropReport:
        """Import the new lines of a JSONL memory store (agent-notes, lessons, …)."""
        from memlane.interop.jsonl_store import import_jsonl_store

        return import_jsonl_store(self.core, directory, project=project)

    def export_index(
        self, out: TextIO, *, project: str | None = None, with_vectors: bool = True
    ) -> int:
        """Write a project's portable JSON index; returns its entry count."""
        from memlane.interop.index import export_index

        return export_index(self.core, out, project=project, vectors=with_vectors)

    def import_index(self, path: str, *, project: str | None = None) -> InteropReport:
        """Read a portable JSON index back (entries and their vectors)."""
        from memlane.interop.index import import_index

        return import_index(self.core, path, project=project)

    def sync_push(self, directory: str) -> SyncPush:
        """Append this machine's new memories, sessions and deletions to a sync folder."""
        from memlane.interop.sync import push

        return push(self.core, directory)

    def sync_pull(self, directory: str) -> InteropReport:
        """Apply the chunks other machines pushed to a sync folder that are new here."""
        from memlane.interop.sync import pull

        return pull(self.core, directory)

    def sync_status(self, directory: str) -> dict[str, Any]:
        """Machines in a sync folder, their chunks, and how many are not applied here."""
        from memlane.interop.sync import sync_status

        return sync_status(self.core, directory)

    def backup(self, path: str | None = None) -> BackupResult:
        """Copy the database through SQLite's online backup API (0600 file)."""
        from memlane.interop.backup import backup

        return backup(self.core, path)
