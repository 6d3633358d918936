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

A method that only hands the core on is bound with ``_on_core`` (its module's
signature and docstring, written once). The modules a hook does not need load
on first use, inside their methods, so ``import memlane.service`` stays lean on
the per-prompt hook path.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace

from memlane import arguments, injections, memories, sessions
from memlane.config import Settings, load_settings
from memlane.core import Core
from memlane.errors import InvalidInput
from memlane.models import UNKNOWN_AGENT
from memlane.search import queries
from memlane.store import open_configured

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator, Sequence
    from datetime import datetime, timedelta
    from typing import Any, Concatenate, ParamSpec, TextIO, TypeVar

    from memlane.capture.pipeline import IngestReport, PromptRecord
    from memlane.capture.recover import RecoverReport
    from memlane.capture.sources import SessionFile
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
    from memlane.maintenance.refiltering import RefilterReport
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

    P = ParamSpec("P")
    R = TypeVar("R")
    F = TypeVar("F", bound=Callable[..., Any])


def open(
    target: str | os.PathLike[str] | None = None, *, settings: Settings | None = None
) -> Memory:
    """Open memlane's memory at ``target`` (a path or ``postgresql://`` URL).

    Without a target the configured database is used (``MEMLANE_HOME`` /
    XDG data dir), created on first use. A target that is not a ``str`` or a
    ``pathlib.Path``, is blank, or names no possible file (a NUL, a loop of links)
    is refused with :class:`~memlane.errors.InvalidInput`.
    """
    if target is not None:
        target = arguments.path("the database path", target)
    if settings is not None and not isinstance(settings, Settings):
        raise InvalidInput(
            f"settings must be memlane.config.Settings, not {type(settings).__name__}"
            " (or leave it out: memlane reads the configuration)"
        )
    if settings is None:
        settings, _warnings = load_settings(db_target=target)
    elif target is not None:
        settings = replace(settings, db_target=target)
    return Memory(open_configured(settings), settings)


def _on_core(fn: Callable[Concatenate[Core, P], R]) -> Callable[Concatenate[Memory, P], R]:
    """A facade method handing ``self.core`` to ``fn``; it has ``fn``'s parameters (after
    the core) and docstring, so a module's signature is written once."""

    @functools.wraps(fn)
    def method(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return fn(self.core, *args, **kwargs)

    return _shown_as_method(method, fn, passed=1)


def _naming_session(
    fn: Callable[Concatenate[Core, P], R], *, listing: bool = False, deleting: bool = False
) -> Callable[Concatenate[Memory, P], R]:
    """A facade method handing ``self.core`` to ``fn`` with its ``session_id`` keyword
    resolved first (:func:`memlane.sessions.session_id_for`: a unique prefix names its
    session, an unknown id is :class:`NotFound`): for a ``listing``, among the projects it
    lists (``project``, ``all_projects``), else in every project; for ``deleting``, only
    a whole id (:func:`memlane.sessions.whole_session_id`). A blank id goes on as given,
    for ``fn`` to refuse (or read as "not given") by its own rule."""

    @functools.wraps(fn)
    def method(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        given = kwargs.get("session_id")
        if isinstance(given, str) and not arguments.blank(given):
            core = self.core
            projects = None
            if listing:
                project = kwargs.get("project")
                named = project if isinstance(project, str) else None
                projects = core.projects_for(named, kwargs.get("all_projects") is True)
            kwargs["session_id"] = (
                sessions.whole_session_id(core, given)
                if deleting
                else sessions.session_id_for(core, given, projects=projects)
            )
        return fn(self.core, *args, **kwargs)

    return _shown_as_method(method, fn, passed=1)


def _with_engine(
    fn: Callable[Concatenate[Core, SearchEngine, P], R],
) -> Callable[Concatenate[Memory, P], R]:
    """A facade method handing ``self.core`` and the warm search engine to ``fn``."""

    @functools.wraps(fn)
    def method(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return fn(self.core, self.search_engine, *args, **kwargs)

    return _shown_as_method(method, fn, passed=2)


def _shown_as_method(method: F, fn: Callable[..., Any], *, passed: int) -> F:
    """``method`` with the signature a caller sees: ``fn``'s without the ``passed``
    collaborators the facade hands in (``functools.wraps`` showed ``fn``'s own, so
    ``help(mem.search)`` began with ``engine``), after ``self``."""
    import inspect  # loaded already (dataclasses imports it): no cost on the hook path

    signature = inspect.signature(fn)
    kept = list(signature.parameters.values())[passed:]
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    shown = signature.replace(parameters=[self_parameter, *kept])
    setattr(method, "__signature__", shown)  # noqa: B010 (a function has no such attribute to mypy)
    return method


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

        project = self.core.named_project(project)
        return replace(
            self.core.store.stats(project), injections=injection_stats(self.core, project)
        )

    def change_marker(self) -> tuple[int, int]:
        """(max memory id, max session activity): cheap to poll for a live feed."""
        return self.core.store.change_marker()

    def commit_marker(self) -> Hashable | None:
        """A value that changes whenever anything is committed (None: the store cannot
        tell); see :meth:`memlane.store.base.Store.commit_marker`."""
        return self.core.store.commit_marker()

    def embedding_counts(self) -> dict[str, int]:
        """How many memories have a vector, per embedding model."""
        return self.core.store.embedding_counts()

    def memory_count(self) -> int:
        """How many memories there are, in every project (one index count, not
        :meth:`stats`' scans)."""
        from memlane.models import MemoryFilter

        return self.core.store.count_memories(MemoryFilter())

    # -- sessions -------------------------------------------------------------

    def get_session(self, session_id: str) -> Session:
        """The session ``session_id`` names: its id, or a unique prefix of at least 8
        characters (:func:`memlane.sessions.session_id_for`); :class:`NotFound` when none."""
        return sessions.get_session(self.core, sessions.session_id_for(self.core, session_id))

    find_session = _on_core(sessions.find_session)
    list_sessions = _on_core(sessions.list_sessions)
    session_titles = _on_core(sessions.session_titles)

    def session_start(
        self,
        session_id: str,
        *,
        project: str | None = None,
        agent: str | None = None,
        transcript_path: str | None = None,
        parent_session_id: str | None = None,
        now: datetime | None = None,
    ) -> Session:
        """Start (or resume) a session and close the project's other idle sessions.

        Calling it twice changes nothing but activity. ``agent`` left out (None, or ``""``
        as an agent's tool call fills it) is :data:`~memlane.models.UNKNOWN_AGENT`, which
        the session's first hook then names, whichever interface started it.
        """
        from memlane.capture.lifecycle import begin_session

        return begin_session(
            self.core,
            session_id,
            project=project,
            agent=arguments.optional_text("the agent", agent, "name it or leave it out")
            or UNKNOWN_AGENT,
            transcript_path=transcript_path,
            parent_session_id=parent_session_id,
            now=now,
        )

    def session_end(
        self, session_id: str, *, now: datetime | None = None, summarize: bool = True
    ) -> Session:
        """End a session and write its rule-based summary (one the agent saved stays);
        ``summarize=False`` only marks it ended (the SessionEnd hook: the transcript's
        tail, read after it, refreshes the summary)."""
        from memlane.capture.lifecycle import end_session

        session_id = sessions.session_id_for(self.core, session_id)  # a prefix ends its own
        return end_session(self.core, session_id, now=now, summarize=summarize)

    def touch_session(
        self,
        session_id: str,
        project: str,
        *,
        now: datetime | None = None,
        prompt: bool = False,
        agent: str = UNKNOWN_AGENT,
    ) -> Session:
        """Record activity in a session, creating it if this is the first we hear of it;
        ``agent`` names a session that has none yet."""
        return memories.touch_session(
            self.core, session_id, project, now=now, prompt=prompt, agent=agent
        )

    def close_idle_sessions(
        self, *, project: str | None = None, now: datetime | None = None, keep: str | None = None
    ) -> list[str]:
        """Close sessions idle longer than ``session_idle_hours`` with an auto summary."""
        from memlane.capture.lifecycle import close_idle_sessions

        return close_idle_sessions(self.core, project=project, now=now, keep=keep)

    # -- memories -------------------------------------------------------------

    get = _on_core(memories.get)
    get_many = _on_core(memories.get_many)
    update = _on_core(memories.update)
    delete = _naming_session(memories.delete, deleting=True)
    list_memories = _naming_session(memories.list_memories, listing=True)
    timeline = _naming_session(memories.timeline, listing=True)

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
        ``updated`` (topic_key / source_id upsert) or ``deduplicated`` (with the kept
        type and a notice when the duplicate holds another type).
        """
        draft = memories.Draft(
            content,
            project=project,
            type=arguments.given_type(type),
            kind=kind,
            title=title,
            session_id=arguments.optional_text("the session id", session_id),
            topic_key=memories.given_topic_key(topic_key),
            source=source,
            source_id=source_id,
            created_at=arguments.moment("created_at", created_at),
            files=files,
            tags=tags,
            metadata=metadata,
            dedup_window=dedup_window,
            given=True,
        )
        return memories.save(self.core, draft)

    def iter_all(
        self, projects: tuple[str, ...] | None, batch: int = 1000
    ) -> Iterator[MemoryRecord]:
        """Every memory of ``projects`` (None: all), oldest first, in batches."""
        return memories.iter_all(self.core, projects, batch)

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
            self.core,
            start=arguments.moment("start", start),
            end=arguments.moment("end", end),
            project=project,
            all_projects=all_projects,
        )

    # -- search ---------------------------------------------------------------

    @property
    def search_engine(self) -> SearchEngine:
        """The search engine of this memory (keeps the embedder and vectors warm)."""
        if self._engine is None:
            from memlane.search.queries import new_engine

            self._engine = new_engine(self.core)
        return self._engine

    search = _with_engine(queries.search)
    recall = _with_engine(queries.recall)
    context = _on_core(queries.context_pack)

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
        self,
        session_id: str,
        prompt: str,
        *,
        project: str | None = None,
        agent: str = UNKNOWN_AGENT,
        now: datetime | None = None,
        once: bool = False,
        turn: str | None = None,
    ) -> PromptRecord:
        """Store a user prompt with its number in the session (UserPromptSubmit); ``agent``
        names a session that has none yet; ``now``: when it was sent (default: now);
        ``once``: not when the session holds it, sent at ``now``, already (a replay);
        ``turn``: the agent's turn id, not again when the session's latest prompt is this
        one in that turn (two hooks delivering it)."""
        from memlane.capture.pipeline import record_prompt

        return record_prompt(
            self.core,
            session_id,
            prompt,
            project=self.core.resolve_project(project),
            agent=agent,
            now=now,
            once=once,
            turn=turn,
        )

    def record_reply(
        self,
        session_id: str,
        reply: str,
        *,
        key: str,
        agent: str,
        project: str | None = None,
        now: datetime | None = None,
    ) -> SaveResult:
        """Store a turn's final answer no transcript holds, under the prompt it answers
        (Stop of agents without a transcript); ``now``: when the turn ended."""
        from memlane.capture.pipeline import record_reply

        return record_reply(
            self.core,
            session_id,
            reply,
            project=self.core.resolve_project(project),
            key=key,
            agent=agent,
            now=now,
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
        agent: str = UNKNOWN_AGENT,
        now: datetime | None = None,
    ) -> SaveResult | None:
        """Classify a tool event and store it as an observation; None when dropped (or
        recorded already from the transcript: ``tool_use_id`` is the call's id).
        ``agent`` names a session that has none yet; ``now``: when the tool ran."""
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
            agent=agent,
            now=now,
        )

    def ingest_transcript(
        self,
        session_id: str,
        path: str | None = None,
        *,
        project: str | None = None,
        parent_session_id: str | None = None,
        deadline: float | None = None,
        summarize: bool = True,
    ) -> IngestReport:
        """Ingest a session's transcript from its stored byte offset (idempotent), in
        batches; none begins after ``deadline`` (``time.monotonic()``) but the first.
        When it read something, the session's rule-based summary is refreshed, as
        ``memlane recover`` does (one the agent saved stays); ``summarize=False``: not
        now (the hooks refresh it once the agent has its answer)."""
        from memlane.capture.lifecycle import refresh_summary
        from memlane.capture.pipeline import ingest_transcript

        report = ingest_transcript(
            self.core,
            session_id,
            path,
            project=project,
            parent_session_id=parent_session_id,
            deadline=deadline,
        )
        if summarize and report.end_offset > report.start_offset:
            refresh_summary(self.core, session_id, activity=False)
        return report

    def recover(
        self,
        files: Sequence[SessionFile],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> RecoverReport:
        """Capture sessions agents already wrote to disk (``memlane recover``; idempotent)."""
        from memlane.capture.recover import recover

        return recover(self.core, files, progress=progress)

    def to_recover(self, files: Sequence[SessionFile]) -> int:
        """How many of ``files`` :meth:`recover` would capture something of (its skip
        rules, and a cheap lookup each for those read up to their end already)."""
        from memlane.capture.recover import would_read

        settings, store, now = self.core.settings, self.core.store, self.core.now()
        return sum(would_read(settings, store, found, now=now) for found in files)

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
        self,
        prompt: str,
        hits: Sequence[SearchHit],
        *,
        session_id: str | None = None,
        limit: int | None = None,
    ) -> list[SearchHit]:
        """The recall hits worth injecting for ``prompt`` (at most ``limit``, by default
        ``recall_limit``), each transcript unit with the one that followed it (a past
        request only with its answer): see :mod:`memlane.search.selection`."""
        from memlane.search.passages import asks_for_amount
        from memlane.search.queries import RECALL_KINDS
        from memlane.search.selection import holds_word, select_recall, with_neighbours

        chosen = select_recall(
            prompt,
            hits,
            session_id=session_id,
            limit=self.settings.recall_limit if limit is None else limit,
            min_score=self.settings.min_relevance_score,
            known=functools.partial(holds_word, self.core.store, kinds=RECALL_KINDS),
        )
        return with_neighbours(self.core.store, chosen, amounts=asks_for_amount(prompt))

    def prompt_recall(
        self,
        prompt: str,
        *,
        project: str | None = None,
        session_id: str | None = None,
        mode: str | None = None,
        limit: int | None = None,
    ) -> tuple[SearchResult, list[SearchHit]]:
        """What the prompt hook injects for ``prompt`` in ``session_id``, for every
        interface that offers it: the recalled candidates (three times ``limit``, by
        default ``recall_limit``, at most 20) and at most ``limit`` hits chosen from them
        (:meth:`select_recall`), both recalled for
        :meth:`recall_query` of the prompt; none for a prompt not worth a recall. An
        injection is not a use: the candidates' access is not counted (it would make
        injected memories rank higher the next time, README "Coding recall")."""
        query = self.recall_query(prompt)
        if not query:
            from memlane.models import SearchResult

            return SearchResult(), []
        wanted = self.settings.recall_limit if limit is None else limit
        pool = min(max(wanted, 1) * 3, 20)
        hits = self.recall(query, project=project, limit=pool, mode=mode)
        return hits, self.select_recall(query, hits, session_id=session_id, limit=wanted)

    def recall_query(self, prompt: str) -> str:
        """What ``prompt`` is recalled with (:meth:`prompt_recall`): scrubbed of secrets
        and private parts, clipped to ``MAX_QUERY_CHARS``; '' for a prompt not worth a
        recall (a slash command, "ok": :func:`memlane.capture.prompts.is_meaningful_prompt`)."""
        from memlane.capture.prompts import is_meaningful_prompt
        from memlane.models import MAX_QUERY_CHARS

        clean = self.scrub(prompt).strip()
        return clean[:MAX_QUERY_CHARS] if is_meaningful_prompt(clean) else ""

    # -- the injection log ----------------------------------------------------

    record_injection = _on_core(injections.record)

    def injection_log(
        self,
        *,
        session_id: str | None = None,
        project: str | None = None,
        all_projects: bool = False,
        limit: int = 20,
    ) -> list[Injection]:
        """The last ``limit`` entries of the injection log, oldest first: of one session
        (any project; its id, or a unique prefix of it), else of ``project`` (default: the
        current one) or every project."""
        found = injections.entries(
            self.core, session_id=session_id, project=project, all_projects=all_projects,
            limit=limit,
        )  # fmt: skip
        if found or session_id is None or arguments.blank(session_id):
            return found
        # Nothing logged under the id as given: a prefix of a session's id, or no session.
        whole = sessions.session_id_for(self.core, session_id)
        if whole == session_id:
            return found
        return injections.entries(self.core, session_id=whole, limit=limit)

    def feedback(self, memory_id: int, mark: str, *, injection_id: int | None = None) -> Feedback:
        """Mark an injected memory ``useful`` or ``noise`` for the prompt it was injected
        for (that of ``injection_id``, else its latest); recall then weighs it for
        similar prompts (see :mod:`memlane.search.feedback`)."""
        from memlane.injections import mark as mark_memory

        return mark_memory(self.core, memory_id, mark, injection_id=injection_id)

    # -- summaries and checkpoints --------------------------------------------

    get_summary = _on_core(sessions.get_summary)
    latest_summary = _on_core(sessions.latest_summary)
    summaries_and_checkpoints = _on_core(sessions.summaries_and_checkpoints)
    save_checkpoint = _on_core(sessions.save_checkpoint)
    latest_checkpoint = _naming_session(sessions.latest_checkpoint)

    def save_summary(self, summary: Summary) -> SaveResult:
        """Store a session summary (one per session, replaced on refresh)."""
        from memlane.sessions import save_summary

        return save_summary(self.core, summary)

    def refresh_summary(self, session_id: str) -> Summary | None:
        """Rebuild the rule-based summary of a session from its observations."""
        from memlane.capture.lifecycle import refresh_summary

        return refresh_summary(self.core, session_id)

    # -- maintenance ----------------------------------------------------------
    # Plan, then apply: dry runs list exactly what the real run removes.

    def maintain(self, *, dry_run: bool = False) -> MaintenanceReport:
        """One maintenance pass: idle sessions, prune, merge, size cap, staleness, vacuum.

        It runs whatever ``maintenance.enabled`` says: that key turns off the automatic
        runs only.
        """
        from memlane.maintenance import run_maintenance

        return run_maintenance(self.core, dry_run=dry_run)

    def maintenance_due(self) -> bool:
        """Whether an automatic run is due: maintenance is on and the database is over its
        size trigger or the interval has passed (the scheduler's rule)."""
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

        if session_id is not None and not arguments.blank(session_id):
            session_id = sessions.whole_session_id(self.core, session_id)
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

    def refilter(self, *, dry_run: bool = False) -> RefilterReport:
        """Pass every stored text through today's privacy filter again (rules added after
        it was stored); see :mod:`memlane.maintenance.refiltering`."""
        from memlane.maintenance.refiltering import refilter

        return refilter(self.core, dry_run=dry_run)

    # -- interop --------------------------------------------------------------

    def import_jsonl(self, path: str, *, project: str | None = None) -> ImportReport:
        """Import a JSONL file of memory records (DESIGN §7); bad lines are reported."""
        from memlane.interop.roundtrip import import_jsonl

        return import_jsonl(self.core, arguments.path("the JSONL file", path), project=project)

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

        return import_export_file(
            self.core,
            arguments.path("the export file", path),
            project=project,
            with_vectors=with_vectors,
        )

    def import_claude_mem(
        self,
        source: str | None = None,
        *,
        project: str | None = None,
        into: str | None = None,
        dry_run: bool = False,
    ) -> InteropReport:
        """Import a claude-mem SQLite database (default ``~/.claude-mem/claude-mem.db``).

        ``project`` imports only that claude-mem project; ``into`` relabels the rows.
        """
        from memlane.interop.claude_mem import import_claude_mem

        if source is not None:
            source = arguments.path("the claude-mem database", source)
        return import_claude_mem(self.core, source, project=project, into=into, dry_run=dry_run)

    def import_jsonl_store(
        self, directory: str, *, project: str | None = None, with_vectors: bool = True
    ) -> InteropReport:
        """Import the new lines of a JSONL memory store (agent-notes, lessons, …).

        Vectors come from an index file kept in the store's directory, when they fit.
        """
        from memlane.interop.jsonl_store import import_jsonl_store

        return import_jsonl_store(
            self.core,
            arguments.path("the store folder", directory),
            project=project,
            with_vectors=with_vectors,
        )

    def export_index(
        self, out: TextIO, *, project: str | None = None, with_vectors: bool = True
    ) -> int:
        """Write a project's portable JSON index; returns its entry count."""
        from memlane.interop.index import export_index

        return export_index(self.core, out, project=project, vectors=with_vectors)

    def import_index(
        self, path: str, *, project: str | None = None, with_vectors: bool = True
    ) -> InteropReport:
        """Read a portable JSON index back (entries, and their vectors when they fit)."""
        from memlane.interop.index import import_index

        return import_index(
            self.core,
            arguments.path("the index file", path),
            project=project,
            with_vectors=with_vectors,
        )

    def sync_push(self, directory: str, *, create: bool = False) -> SyncPush:
        """Append this machine's new memories, sessions and deletions to a sync folder
        (a missing one only with ``create``)."""
        from memlane.interop.sync import push

        return push(self.core, arguments.path("the sync folder", directory), create=create)

    def sync_pull(self, directory: str) -> InteropReport:
        """Apply the chunks other machines pushed to a sync folder that are new here."""
        from memlane.interop.sync import pull

        return pull(self.core, arguments.path("the sync folder", directory))

    def sync_status(self, directory: str) -> dict[str, Any]:
        """Machines in a sync folder, their chunks, and how many are not applied here."""
        from memlane.interop.sync import sync_status

        return sync_status(self.core, arguments.path("the sync folder", directory))

    def backup(self, path: str | None = None, *, create: bool = False) -> BackupResult:
        """Copy the database through SQLite's online backup API (0600 file); the folder
        of ``path`` must exist (``create``: make it, inside an existing folder)."""
        from memlane.interop.backup import backup

        target = None if path is None else arguments.path("the backup path", path)
        return backup(self.core, target, create=create)
