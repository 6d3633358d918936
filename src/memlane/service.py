"""The Memory facade: the only entry to memlane's core.

Every interface (CLI, hooks, MCP, HTTP, dashboard, importers) calls these
methods; none of them holds SQL, ranking or business rules. The facade is the
one place they all go through, so the rules that make memory trustworthy
apply to every entry point; each rule lives in the module doing that job:

* ``memlane.saving`` — privacy first: ``<private>`` blocks, injected memlane
  context and secrets are removed before anything is hashed, stored or
  embedded (invariant 1); dedup on the normalized hash of the scrubbed
  content, project-wide for knowledge and notes, within a per-type time window
  for captured observations; ``topic_key`` upserts update in place, bump
  ``revision_count`` and move the memory to the current session (invariant 4);
* ``memlane.sessions`` — idempotent start, activity tracking, auto-close of
  idle ones; ``memlane.session_records`` — their summaries and checkpoints;
* ``memlane.deletion``, ``memlane.timeline``, ``memlane.activity`` — delete,
  browse in time order, report a period; ``memlane.capture``,
  ``memlane.search``, ``memlane.maintenance``, ``memlane.importers`` — the
  rest.

Most methods only delegate (``search``, ``recall`` and ``context`` still build
their requests here). Those modules and the heavy parts (embedder, hybrid
engine, importers) are imported on first use, so ``import memlane.service``
stays lean on the hook path; the names that moved out (``MAX_CONTENT_CHARS``,
``SUMMARY_TOPIC``, ``summary_from_memory``, …) are still importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memlane import privacy
from memlane.config import Settings, load_settings
from memlane.errors import InvalidInput, NotFound
from memlane.models import (
    SCOPES,
    SEARCH_MODES,
    Checkpoint,
    ImportReport,
    MemoryFilter,
    SaveResult,
    SearchHit,
    Session,
    Stats,
    Summary,
    utcnow,
)
from memlane.models import (
    Memory as MemoryRecord,
)
from memlane.project import project_name
from memlane.store import open_configured

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any, TextIO

    from memlane.backup import BackupResult
    from memlane.capture.pipeline import IngestReport, PromptRecord
    from memlane.importers.report import InteropReport
    from memlane.maintenance import (
        ForgetReport,
        MaintenanceReport,
        MergeReport,
        PruneReport,
        SizeReport,
        StaleReport,
    )
    from memlane.saving import DEFAULT_OBSERVATION_WINDOW as DEFAULT_OBSERVATION_WINDOW
    from memlane.saving import MAX_CONTENT_CHARS as MAX_CONTENT_CHARS
    from memlane.saving import MAX_TITLE_CHARS as MAX_TITLE_CHARS
    from memlane.saving import PROJECT_WIDE_DEDUP as PROJECT_WIDE_DEDUP
    from memlane.saving import TRUNCATION_MARK as TRUNCATION_MARK
    from memlane.search.engine import SearchEngine
    from memlane.search.indexer import EmbedReport
    from memlane.session_records import CHECKPOINT_TOPIC as CHECKPOINT_TOPIC
    from memlane.session_records import SUMMARY_TOPIC as SUMMARY_TOPIC
    from memlane.session_records import checkpoint_from_memory as checkpoint_from_memory
    from memlane.session_records import summary_from_memory as summary_from_memory
    from memlane.store.base import Store
    from memlane.sync import SyncPush

# Recall runs on every prompt: score at most this many (newest) full-text matches.
RECALL_KEYWORD_SCAN = 500

# Keyword-only scores run higher than hybrid ones for the same (ir)relevance: the
# best keyword hit's BM25 part is always 1 (relative to itself) and long chunks share
# common words with any prompt. Measured with benchmarks/recall_floor.py (coding
# prompts with and without real transcripts as background, LongMemEval dev): at the
# 0.35 floor keyword recall injected something for 22-92% of prompts with nothing
# relevant (hybrid: 0-44%); at 0.45 for 3-57%, keeping 73-83% of related prompts.
KEYWORD_RECALL_MARGIN = 0.10

# Names that moved to the modules doing the work, still importable from here. They load
# on first use, so `import memlane.service` stays as light as it was on the hook path.
_MOVED: dict[str, str] = {
    "DEFAULT_OBSERVATION_WINDOW": "memlane.saving",
    "MAX_CONTENT_CHARS": "memlane.saving",
    "MAX_TITLE_CHARS": "memlane.saving",
    "PROJECT_WIDE_DEDUP": "memlane.saving",
    "TRUNCATION_MARK": "memlane.saving",
    "CHECKPOINT_TOPIC": "memlane.session_records",
    "SUMMARY_TOPIC": "memlane.session_records",
    "checkpoint_from_memory": "memlane.session_records",
    "summary_from_memory": "memlane.session_records",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        value = getattr(importlib.import_module(_MOVED[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memlane.service' has no attribute {name!r}")


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
        self.store = store
        self.settings = settings if settings is not None else load_settings()[0]
        self._default_project: str | None = None
        # Set by search(): a one-line notice for people (e.g. "keyword mode: no vectors").
        self.last_search_notice: str | None = None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------

    @property
    def default_project(self) -> str:
        """The project of the current working directory."""
        if self._default_project is None:
            self._default_project = project_name()
        return self._default_project

    def resolve_project(self, project: str | None) -> str:
        if project is None:
            return self.default_project
        project = project.strip()
        if not project:
            raise InvalidInput("project name is empty (give --project NAME or omit it)")
        return project

    def scrub(self, text: str) -> str:
        """Privacy filter applied at every entry point (private tags, own context, secrets)."""
        return privacy.scrub(text, self.settings.secret_patterns)

    def projects(self) -> list[str]:
        """Names of the projects that have memories (one cheap index walk)."""
        return self.store.project_names()

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
        """Start (or resume) a session; calling it twice changes nothing but activity."""
        from memlane.sessions import start_session

        return start_session(
            self,
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

        return end_session(self, session_id, now=now)

    def get_session(self, session_id: str) -> Session:
        session = self.store.get_session(session_id)
        if session is None:
            raise NotFound(f"no session {session_id!r} (try `memlane list`)")
        return session

    def list_sessions(
        self, *, project: str | None = None, all_projects: bool = False, limit: int = 50
    ) -> list[Session]:
        projects = None if all_projects else (self.resolve_project(project),)
        return self.store.list_sessions(projects=projects, limit=limit)

    def session_titles(self, session_ids: Sequence[str]) -> dict[str, str]:
        """Each session's task or first prompt, in one line (sessions without one left out)."""
        from memlane.session_titles import session_titles

        return session_titles(self.store, session_ids)

    def touch_session(
        self, session_id: str, project: str, *, now: datetime | None = None, prompt: bool = False
    ) -> Session:
        """Record activity in a session, creating it if this is the first we hear of it."""
        from memlane.sessions import touch_session

        return touch_session(self, session_id, project, now=now, prompt=prompt)

    def close_idle_sessions(
        self, *, project: str | None = None, now: datetime | None = None, keep: str | None = None
    ) -> list[str]:
        """Close sessions idle longer than ``session_idle_hours`` with an auto summary."""
        from memlane.sessions import close_idle_sessions

        return close_idle_sessions(self, project=project, now=now, keep=keep)

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
        from memlane.saving import save_memory

        return save_memory(
            self,
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

    def get(self, memory_id: int, *, record_access: bool = False) -> MemoryRecord:
        # An id outside SQLite's 64-bit INTEGER cannot exist (and would raise OverflowError).
        valid = 0 < memory_id < 2**63
        if record_access and valid:  # count first, so the record returned includes this use
            self.store.record_access([memory_id], utcnow())
        found = self.store.get_memories([memory_id]) if valid else []
        if not found:
            raise NotFound(f"no memory with id {memory_id} (try `memlane search`)")
        return found[0]

    def get_many(self, ids: Sequence[int]) -> list[MemoryRecord]:
        return self.store.get_memories([i for i in ids if 0 < i < 2**63])

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
        from memlane.saving import update_memory

        return update_memory(
            self,
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
        from memlane.deletion import delete_memories

        return delete_memories(
            self,
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
        from memlane.deletion import select_for_delete

        return select_for_delete(
            self, id=id, ids=ids, session_id=session_id, before=before, project=project
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
        projects = None if all_projects else (self.resolve_project(project),)
        flt = MemoryFilter(
            projects=projects,
            kinds=tuple(kinds) if kinds else None,
            types=tuple(types) if types else None,
            session_id=session_id,
        )
        return self.store.list_memories(flt, limit=limit, offset=offset)

    # -- search ---------------------------------------------------------------

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
    ) -> list[SearchHit]:
        """Find memories for ``query``.

        ``scope``: ``project`` (only ``project``), ``all`` (every project) or
        ``tiered`` (the project first, others scaled by ``cross_project_penalty``
        and tagged with ``from_project``). ``as_of`` ranks as if now were that
        time and ignores memories created after it. ``mode`` defaults to
        ``search_mode`` (hybrid); without vectors for the configured embedder
        it runs in keyword mode and says so in :attr:`last_search_notice`.
        ``min_score`` is the floor of the hits returned (default 0: a ranked
        listing, with the relaxation cascade when fewer than ``limit`` hits are
        found); :meth:`recall` applies ``min_relevance_score``. ``keyword_scan``
        bounds how many full-text matches are scored (recall keeps it small).
        """
        from memlane.search.engine import SearchRequest

        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the search query is empty")
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, got {limit}")
        scope = scope or self.settings.scope
        if scope not in SCOPES:
            raise InvalidInput(f"unknown scope {scope!r} ({', '.join(SCOPES)})")
        if mode is not None and mode not in SEARCH_MODES:
            raise InvalidInput(f"unknown mode {mode!r} ({', '.join(SEARCH_MODES)})")
        engine = self.search_engine
        resolved = engine.resolve_mode(mode, self.settings.search_mode)
        own = None if scope == "all" else self.resolve_project(project)
        request = SearchRequest(
            query=query,
            projects=(own,) if scope == "project" and own is not None else None,
            limit=min(limit, 500),
            mode=resolved,
            as_of=as_of,
            kinds=tuple(kinds) if kinds else None,
            types=tuple(types) if types else None,
            since=since,
            half_life_days=self.settings.recency_half_life_days,
            home_project=own if scope == "tiered" else None,
            cross_project_penalty=self.settings.cross_project_penalty,
            min_score=0.0 if min_score is None else min_score,
            keyword_scan=keyword_scan,
        )
        hits = engine.search(request)
        self.last_search_notice = engine.notice
        if record_access and hits:
            self.store.record_access([hit.id for hit in hits], utcnow())
        return hits

    @property
    def search_engine(self) -> SearchEngine:
        """The search engine of this memory (keeps the embedder and vectors warm)."""
        engine: SearchEngine | None = self.__dict__.get("_search_engine")
        if engine is None:
            from memlane.search.engine import SearchEngine

            engine = SearchEngine(
                self.store,
                embedder=self.settings.embedder,
                cache_dir=self.settings.paths.data_dir / "vectors",
            )
            self.__dict__["_search_engine"] = engine
        return engine

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
        from memlane.search.engine import SearchEngine, model_name
        from memlane.search.indexer import EmbedReport, embed_missing, missing_count

        name = model or self.settings.embedder
        target = model_name(name)
        if target is None:
            raise InvalidInput("embedding is disabled (embedder = none); pick --model use")
        if dry_run:
            todo = missing_count(self.store, target)
            if limit is not None:
                todo = min(todo, limit)
            return EmbedReport(model=target, dim=0, embedded=0, remaining=todo, seconds=0.0)
        engine = self.search_engine
        if model is not None and engine.model != target:
            engine = SearchEngine(self.store, embedder=name, cache_dir=engine.cache_dir)
            self.__dict__["_search_engine"] = engine
        return embed_missing(
            self.store, engine.embedder, batch=batch, limit=limit, progress=progress
        )

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
        from memlane.timeline import memory_timeline

        return memory_timeline(
            self,
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

    def stats(self, *, project: str | None = None) -> Stats:
        """Database statistics, of every project or of ``project`` only."""
        return self.store.stats(project)

    def recall(
        self,
        prompt: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        min_score: float | None = None,
        mode: str | None = None,
        record_access: bool = True,
    ) -> list[SearchHit]:
        """Memories worth injecting for ``prompt``: at most ``recall_limit`` above the floor.

        Returns nothing when nothing is relevant; records access of what it returns
        unless ``record_access`` is False (the hook records only what it injects,
        with :meth:`record_access`, after answering). Keyword-only recall needs
        ``KEYWORD_RECALL_MARGIN`` more than the floor (see there).
        """
        floor = self.settings.min_relevance_score if min_score is None else min_score
        resolved = self.search_engine.resolve_mode(mode, self.settings.search_mode)
        if resolved == "keyword" and floor > 0:
            floor = min(1.0, floor + KEYWORD_RECALL_MARGIN)
        hits = self.search(
            prompt,
            project=project,
            limit=limit or max(self.settings.recall_limit, 1),
            mode=resolved,
            kinds=("observation", "turn", "knowledge", "summary", "note"),
            min_score=floor,
            keyword_scan=RECALL_KEYWORD_SCAN,
        )
        if hits and record_access:
            self.record_access([hit.id for hit in hits])
        return hits

    def record_access(self, ids: Sequence[int]) -> None:
        """Count one use of each memory in ``ids`` (the frequency signal of ranking)."""
        if ids:
            self.store.record_access(list(ids), utcnow())

    def context(
        self,
        *,
        project: str | None = None,
        session_id: str | None = None,
        budget: int | None = None,
    ) -> str:
        """The SessionStart context pack of a project, within a token budget.

        Last checkpoint first, then the latest summaries, then knowledge and
        observations ordered by their context score (recency, use, staleness).
        Every list is an indexed ``(project, kind, created_at)`` walk.
        """
        from memlane.search.context import pack_context
        from memlane.search.engine import context_order

        project = self.resolve_project(project)
        budget = budget or self.settings.context_token_budget
        items: list[MemoryRecord] = []

        def latest(kinds: tuple[str, ...], limit: int) -> list[MemoryRecord]:
            flt = MemoryFilter(projects=(project,), kinds=kinds)
            return self.store.list_memories(flt, limit=limit)

        items.extend(latest(("checkpoint",), 1))
        items.extend(latest(("summary",), 3))
        ranked = latest(("knowledge",), 20) + latest(("observation",), 20) + latest(("note",), 20)
        items.extend(context_order(ranked, half_life_days=self.settings.recency_half_life_days))
        if not items:
            return ""
        packed = pack_context(items, budget, header=f"# memlane: past context for {project}")
        return packed.text

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
            self, start=start, end=end, project=project, all_projects=all_projects
        )

    # -- capture (issue 3: hook-facing methods go here) -----------------------
    # Logic lives in memlane.capture.pipeline; these parse nothing and delegate.

    def record_prompt(
        self, session_id: str, prompt: str, *, project: str | None = None
    ) -> PromptRecord:
        """Store a user prompt with its number in the session (UserPromptSubmit)."""
        from memlane.capture.pipeline import record_prompt

        return record_prompt(self, session_id, prompt, project=self.resolve_project(project))

    def record_tool_event(
        self,
        session_id: str,
        tool_name: Any,
        tool_input: Any,
        tool_response: Any,
        *,
        cwd: str | None = None,
        project: str | None = None,
    ) -> SaveResult | None:
        """Classify a tool event and store it as an observation; None when dropped."""
        from memlane.capture.pipeline import record_tool_event

        return record_tool_event(
            self,
            session_id,
            tool_name,
            tool_input,
            tool_response,
            cwd=cwd,
            project=self.resolve_project(project),
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
            self, session_id, path, project=project, parent_session_id=parent_session_id
        )

    def transcript_pending(self, session_id: str) -> bool:
        """True when the session's transcript has bytes not ingested yet."""
        from memlane.capture.pipeline import transcript_pending

        return transcript_pending(self, session_id)

    def refresh_checkpoint(
        self, session_id: str, last_assistant_message: str | None = None
    ) -> Checkpoint | None:
        """Rebuild the rule-based checkpoint of a session (Stop, PreCompact)."""
        from memlane.capture.pipeline import refresh_checkpoint

        return refresh_checkpoint(self, session_id, last_assistant_message)

    def select_recall(
        self, prompt: str, hits: Sequence[SearchHit], *, session_id: str | None = None
    ) -> list[SearchHit]:
        """The recall hits worth injecting for ``prompt`` (at most ``recall_limit``)."""
        from memlane.capture.pipeline import select_recall

        return select_recall(
            prompt,
            hits,
            session_id=session_id,
            limit=self.settings.recall_limit,
            min_score=self.settings.min_relevance_score,
        )

    # -- maintenance (issue 7: dedup/merge/prune/staleness/forget go here) ----
    # Logic lives in memlane.maintenance (plan, then apply: dry runs list exactly
    # what the real run removes); these methods only delegate.

    def maintain(self, *, dry_run: bool = False, force: bool = False) -> MaintenanceReport:
        """One maintenance pass: idle sessions, prune, merge, size cap, staleness, vacuum."""
        from memlane.maintenance import run_maintenance

        return run_maintenance(self, dry_run=dry_run, force=force)

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
            self, threshold=threshold, project=project, all_projects=all_projects, dry_run=dry_run
        )

    def prune_old(self, *, max_age_days: int | None = None, dry_run: bool = False) -> PruneReport:
        """Delete memories untouched for ``max_age_days`` (knowledge and summaries stay)."""
        from memlane.maintenance import prune_old

        return prune_old(self, max_age_days=max_age_days, dry_run=dry_run)

    def enforce_size_cap(self, *, max_mb: float | None = None, dry_run: bool = False) -> SizeReport:
        """Keep the database under ``max_mb`` by removing the oldest non-knowledge rows first."""
        from memlane.maintenance import enforce_size_cap

        return enforce_size_cap(self, max_mb=max_mb, dry_run=dry_run)

    def refresh_staleness(
        self, *, project: str | None = None, all_projects: bool = False, dry_run: bool = False
    ) -> StaleReport:
        """Re-check files linked to memories; flag those whose file changed after capture."""
        from memlane.maintenance import refresh_staleness

        return refresh_staleness(self, project=project, all_projects=all_projects, dry_run=dry_run)

    def stale_memories(
        self, *, project: str | None = None, all_projects: bool = False, limit: int = 100
    ) -> list[MemoryRecord]:
        """Memories flagged stale, newest first."""
        from memlane.maintenance import list_stale

        return list_stale(self, project=project, all_projects=all_projects, limit=limit)

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
            self,
            query,
            memory_id=id,
            session_id=session_id,
            file=file,
            project=project,
            all_projects=all_projects,
            dry_run=dry_run,
        )

    # -- interop (issue 8: claude-mem/jsonl-store/sync/backup go here) --------

    def export_records(
        self,
        out: TextIO,
        *,
        format: str = "jsonl",
        project: str | None = None,
        with_vectors: bool = False,
    ) -> int:
        """Lossless export (sessions + memories, optionally vectors) of a project or all."""
        from memlane.importers.export import export

        projects = None if project is None else (self.resolve_project(project),)
        return export(self, out, format=format, projects=projects, with_vectors=with_vectors)

    def import_export(
        self, path: str, *, project: str | None = None, with_vectors: bool = True
    ) -> InteropReport:
        """Import memlane's own JSON/JSONL export (or plain JSONL records), losslessly."""
        from memlane.importers.roundtrip import import_export_file

        return import_export_file(self, path, project=project, with_vectors=with_vectors)

    def import_claude_mem(
        self, source: str | None = None, *, project: str | None = None, dry_run: bool = False
    ) -> InteropReport:
        """Import a claude-mem SQLite database (default ``~/.claude-mem/claude-mem.db``)."""
        from memlane.importers.claude_mem import import_claude_mem

        return import_claude_mem(self, source, project=project, dry_run=dry_run)

    def import_jsonl_store(self, directory: str, *, project: str | None = None) -> InteropReport:
        """Import the new lines of a JSONL memory store (agent-notes, lessons, …)."""
        from memlane.importers.jsonl_store import import_jsonl_store

        return import_jsonl_store(self, directory, project=project)

    def export_index(
        self, out: TextIO, *, project: str | None = None, with_vectors: bool = True
    ) -> int:
        """Write a project's portable JSON index; returns its entry count."""
        from memlane.importers.index import export_index

        return export_index(self, out, project=self.resolve_project(project), vectors=with_vectors)

    def import_index(self, path: str, *, project: str | None = None) -> InteropReport:
        """Read a portable JSON index back (entries and their vectors)."""
        from memlane.importers.index import import_index

        return import_index(self, path, project=project)

    def sync_push(self, directory: str) -> SyncPush:
        """Append this machine's new memories, sessions and deletions to a sync folder."""
        from memlane.sync import push

        return push(self, directory)

    def sync_pull(self, directory: str) -> InteropReport:
        """Apply the chunks other machines pushed to a sync folder that are new here."""
        from memlane.sync import pull

        return pull(self, directory)

    def sync_status(self, directory: str) -> dict[str, Any]:
        """Machines in a sync folder, their chunks, and how many are not applied here."""
        from memlane.sync import sync_status

        return sync_status(self, directory)

    def backup(self, path: str | None = None) -> BackupResult:
        """Copy the database through SQLite's online backup API (0600 file)."""
        from memlane.backup import backup

        return backup(self, path)

    # -- summaries and checkpoints --------------------------------------------

    def save_summary(self, summary: Summary) -> SaveResult:
        """Store a session summary (one per session, replaced on refresh)."""
        from memlane.session_records import save_summary

        return save_summary(self, summary)

    def get_summary(self, session_id: str) -> Summary | None:
        from memlane.session_records import get_summary

        return get_summary(self, session_id)

    def save_checkpoint(self, checkpoint: Checkpoint) -> SaveResult:
        """Store the latest checkpoint of a session (replaced on refresh)."""
        from memlane.session_records import save_checkpoint

        return save_checkpoint(self, checkpoint)

    def latest_checkpoint(
        self, *, project: str | None = None, session_id: str | None = None
    ) -> Checkpoint | None:
        from memlane.session_records import latest_checkpoint

        return latest_checkpoint(self, project=project, session_id=session_id)

    def refresh_summary(self, session_id: str) -> Summary | None:
        """Rebuild the rule-based summary of a session from its observations."""
        from memlane.session_records import refresh_summary

        return refresh_summary(self, session_id)

    # -- import / export ------------------------------------------------------

    def import_jsonl(self, path: str, *, project: str | None = None) -> ImportReport:
        """Import a JSONL file of memory records (DESIGN §7); bad lines are reported."""
        from memlane.importers.jsonl import import_jsonl

        return import_jsonl(self, path, project=project)

    def iter_all(
        self, projects: tuple[str, ...] | None, batch: int = 1000
    ) -> Iterator[MemoryRecord]:
        """Every memory of ``projects`` (None: all), oldest first, in batches."""
        offset = 0
        flt = MemoryFilter(projects=projects)
        while True:
            rows = self.store.list_memories(flt, limit=batch, offset=offset, newest_first=False)
            if not rows:
                return
            yield from rows
            offset += len(rows)
