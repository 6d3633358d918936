"""Sessions: their lifecycle, and the summary and checkpoint each one keeps.

Lifecycle rules:

* **idempotent start**: starting a session twice changes nothing but its
  activity; starting an ended one reactivates it;
* **activity never goes back**: ``last_activity_at`` only moves forward
  (:func:`memlane.memories.touch_session`, which every write calls), so a late
  or replayed hook cannot make a session look idle;
* **idle**: a session active but without activity for ``session_idle_hours``
  is idle (:func:`idle_sessions`); it is closed at its last real activity
  (:func:`mark_auto_closed`). Closing idle sessions with a rule-based summary,
  when a session starts or maintenance runs, is
  :mod:`memlane.capture.lifecycle`'s job: the rules that build summaries and
  checkpoints are capture's.

A summary says what a session did (request, completed, learned, next steps);
a checkpoint says where work stands (task, progress, open questions) so the
next session can resume. Both are ordinary memories of their own kind, saved
through the one write path (:mod:`memlane.memories`, so scrubbed and indexed
like the rest) as their text (:func:`summary_text`, :func:`checkpoint_text`),
with a ``topic_key`` of ``SUMMARY_TOPIC`` or ``CHECKPOINT_TOPIC`` + the
session id: one of each per session, replaced in place on refresh (its
``revision_count`` counts the refreshes). Their structured fields travel in
``metadata`` and are read back by :func:`summary_from_memory` and
:func:`checkpoint_from_memory`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from memlane import arguments, memories
from memlane.errors import InvalidInput, NotFound, NothingToStore
from memlane.memories import Draft
from memlane.models import (
    UNKNOWN_AGENT,
    Checkpoint,
    MemoryFilter,
    SaveResult,
    Session,
    Summary,
)
from memlane.privacy import excerpt
from memlane.text import one_line

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from memlane.config import Settings
    from memlane.core import Core
    from memlane.models import Memory as MemoryRecord

SUMMARY_TOPIC = "session-summary:"
CHECKPOINT_TOPIC = "session-checkpoint:"
# Most sessions closed by one start or maintenance pass (the rest wait for the next).
MAX_IDLE_CLOSED = 200
# A session's title in lists (its task or first prompt, one line).
TITLE_CHARS = 120
# The shortest prefix that names a session: as many characters as agent-facing text
# shows of one (``session 4f1c2a9e``, :func:`memlane.search.framing.session_label`).
MIN_SESSION_PREFIX = 8
# How many sessions an ambiguous prefix error names.
NAMED_CANDIDATES = 3
# What a "no session" error suggests, on every interface.
SESSION_ID_HINT = "a list of sessions shows their ids"


# -- lifecycle ----------------------------------------------------------------------


def start_session(
    core: Core,
    session_id: str,
    *,
    project: str | None = None,
    agent: str = UNKNOWN_AGENT,
    transcript_path: str | None = None,
    parent_session_id: str | None = None,
    now: datetime | None = None,
) -> Session:
    """Start (or resume) a session; calling it twice changes nothing but activity."""
    arguments.required_text("the session id", session_id)
    moment = now or core.now()
    project = core.resolve_project(project)
    store = core.store
    existing = store.get_session(core.plain_name("session id", session_id))
    transcript_path = core.stored_path(transcript_path)
    if existing is None:
        store.upsert_session(
            Session(
                id=session_id,
                project=project,
                agent=agent,
                status="active",
                started_at=moment,
                last_activity_at=moment,
                transcript_path=transcript_path,
                parent_session_id=parent_session_id,
            )
        )
    else:
        changes: dict[str, Any] = {"last_activity_at": max(moment, existing.last_activity_at)}
        if existing.status != "active":
            changes.update(status="active", ended_at=None)
        if transcript_path and transcript_path != existing.transcript_path:
            changes["transcript_path"] = transcript_path
        if memories.names_agent(existing, agent):  # started by a write that named none
            changes["agent"] = agent
        store.update_session(session_id, changes)
    return get_session(core, session_id)


def end_session(core: Core, session_id: str, *, now: datetime | None = None) -> Session:
    """Mark a session ended (cheap: Claude Code gives SessionEnd 1.5 s)."""
    session = get_session(core, session_id)
    moment = now or core.now()
    core.store.update_session(
        session_id,
        {
            "status": "ended",
            "ended_at": moment,
            "last_activity_at": max(moment, session.last_activity_at),
        },
    )
    return get_session(core, session_id)


def session_names(session: Session) -> tuple[tuple[str, str | None], ...]:
    """The names ``session`` is known by, each with what it is: identities the write path
    stores as given or refuses (:meth:`Core.plain_name`), never masks. None and "" are
    no name (a session without a parent)."""
    return (
        ("session id", session.id),
        ("session id", session.parent_session_id),
        ("project name", session.project),
        ("agent", session.agent),
    )


def session_id_for(core: Core, given: str, *, projects: Sequence[str] | None = None) -> str:
    """The id of the session ``given`` names, for every interface that reads or ends one.

    The rule: ``given`` is a session's whole id (a row, or memories that carry it), else
    a prefix of one id among the sessions of ``projects`` (None: every project), at least
    :data:`MIN_SESSION_PREFIX` characters long — what a context pack shows of a session.
    A prefix of several is :class:`InvalidInput` naming a few; no session is
    :class:`NotFound`. Writes that create a session never come here: a new id is a new
    session, not a prefix of an old one.
    """
    if isinstance(given, str) and core.store.get_session(given) is not None:
        return given  # even a blank one an older version stored
    given = arguments.required_text("the session id", given)
    if core.store.has_memories(MemoryFilter(session_id=given)):
        return given  # memories filed under a session that has no row (an import)
    if len(given) >= MIN_SESSION_PREFIX:
        found = core.store.session_ids_starting(given, projects=projects)
        if len(found) == 1:
            return found[0]
        if found:
            shown = ", ".join(found[:NAMED_CANDIDATES])
            left = len(found) - NAMED_CANDIDATES
            more = f" and {left} more" if left > 0 else ""
            raise InvalidInput(
                f"session {excerpt(given)} is ambiguous: {len(found)} sessions begin with it"
                f" ({shown}{more}); give more of its id"
            )
    raise NotFound(f"no session {excerpt(given)} ({SESSION_ID_HINT})")


def whole_session_id(core: Core, given: str) -> str:
    """``given`` when it is a session's whole id, for what deletes by session: a prefix
    names a session for reading, but a delete takes the id whole, naming the session the
    prefix begins (:class:`InvalidInput`); no session is :class:`NotFound`."""
    found = session_id_for(core, given)
    if found != given:
        raise InvalidInput(
            f"a delete takes a whole session id: {excerpt(given)} begins {found}; give it whole"
        )
    return found


def find_session(core: Core, session_id: str) -> Session | None:
    """The session ``session_id``, or None when it is unknown."""
    return core.store.get_session(session_id)


def get_session(core: Core, session_id: str) -> Session:
    """The session ``session_id`` (:class:`NotFound` when it is unknown)."""
    session = core.store.get_session(session_id)
    if session is None:
        # Quoted short: an id from a URL path can be any length.
        raise NotFound(f"no session {excerpt(session_id)} ({SESSION_ID_HINT})")
    return session


def list_sessions(
    core: Core, *, project: str | None = None, all_projects: bool = False, limit: int = 50
) -> list[Session]:
    """Sessions of a project (or every project), most recently active first."""
    projects = core.projects_for(project, all_projects)
    return core.store.list_sessions(projects=projects, limit=limit)


def session_titles(core: Core, session_ids: Sequence[str]) -> dict[str, str]:
    """Session id → what the session was about, in one line (sessions without one left out).

    A session id says nothing to a person: its title is the task its summary names
    (the summary's ``request``), else its first prompt. Two indexed queries for a
    whole page of sessions, whatever its length.
    """
    summaries = core.store.first_memories(session_ids, "summary")
    prompts = core.store.first_memories(session_ids, "prompt")
    titles: dict[str, str] = {}
    for session_id in session_ids:
        text = ""
        if session_id in summaries:
            text = summary_from_memory(summaries[session_id]).request
        if not text.strip() and session_id in prompts:
            text = prompts[session_id].content
        if text.strip():
            titles[session_id] = one_line(text, TITLE_CHARS)
    return titles


def idle_cutoff(settings: Settings, now: datetime) -> datetime:
    """The moment an active session quiet since before it is idle at ``now``."""
    return now - timedelta(hours=settings.session_idle_hours)


def is_idle(session: Session, cutoff: datetime) -> bool:
    """Whether ``session`` is idle: active, and quiet since before ``cutoff``
    (:func:`idle_cutoff`)."""
    return session.status == "active" and session.last_activity_at < cutoff


def idle_sessions(core: Core, *, project: str | None = None, now: datetime) -> list[Session]:
    """Active sessions idle longer than ``session_idle_hours`` at ``now``."""
    return core.store.list_sessions(
        projects=None if project is None else (project,),
        statuses=("active",),
        idle_before=idle_cutoff(core.settings, now),
        limit=MAX_IDLE_CLOSED,
    )


def mark_auto_closed(core: Core, session: Session) -> None:
    """End an idle session at its last real activity (status ``auto_closed``)."""
    core.store.update_session(
        session.id, {"status": "auto_closed", "ended_at": session.last_activity_at}
    )


# -- summaries ----------------------------------------------------------------------


# What a summary someone gives may hold (CLI, HTTP, MCP, the Python API alike; the wire
# models in memlane.schemas show the same bounds). Its searchable text is clipped by the
# write path like any derived text, so a longer one lost its end without a word; its lists
# are kept whole in its metadata, what resume, the context pack and the dashboard read.
# The rule-based summary writes at most 12 items of one line (capture.summarize), the pack
# shows 8 of 200 characters; 50 items of 2,000 characters keep a whole summary (at most
# 320,000 characters) under the worker's 1 MiB body. A rule-based summary (a hook's) is
# not bounded here: a hook never fails the agent, and what it derives is clipped.
MAX_SUMMARY_REQUEST_CHARS = 20_000
MAX_SUMMARY_ITEMS = 50
MAX_SUMMARY_ITEM_CHARS = 2_000


def given_request(request: str) -> str:
    """The request of a summary someone gives (CLI, HTTP, MCP, the Python API): refused
    when it holds only blanks or control characters, or is longer than
    :data:`MAX_SUMMARY_REQUEST_CHARS`."""
    arguments.required_text("the request", request, "say what the session set out to do")
    if len(request) > MAX_SUMMARY_REQUEST_CHARS:
        raise InvalidInput(
            f"the request is {len(request):,} characters; a summary's holds at most"
            f" {MAX_SUMMARY_REQUEST_CHARS:,} (nothing saved: say the task, and put the"
            " details in completed, learned or a memory of their own)"
        )
    return request


def given_items(what: str, items: Sequence[str]) -> Sequence[str]:
    """A list of a summary someone gives (``completed``, ``learned``, ``next_steps``):
    refused when it has more than :data:`MAX_SUMMARY_ITEMS` items, or one longer than
    :data:`MAX_SUMMARY_ITEM_CHARS`."""
    arguments.texts(what, items)
    if len(items) > MAX_SUMMARY_ITEMS:
        raise InvalidInput(
            f"{what} has {len(items):,} items; a summary keeps at most {MAX_SUMMARY_ITEMS}"
            " (nothing saved)"
        )
    for number, item in enumerate(items, 1):
        if len(item) > MAX_SUMMARY_ITEM_CHARS:
            raise InvalidInput(
                f"{what} item {number} is {len(item):,} characters; a summary's item holds at"
                f" most {MAX_SUMMARY_ITEM_CHARS:,} (nothing saved)"
            )
    return items


def save_summary(core: Core, summary: Summary, *, activity: bool = True) -> SaveResult:
    """Store a session summary (one per session, replaced on refresh). Each part is
    filtered as written, before a label ("Request: ") goes before it or the title cuts it:
    a rule reading a line's start (a ``$ pass show`` line) or a whole token sees it.

    A summary someone gives (not ``is_auto_generated``) names its session and its request
    (:func:`given_request`); a rule-based one is written for a session already stored,
    whatever its id (a blank one stored by an older version must not stop the idle
    sessions of its project from closing). One that says nothing once filtered (no request, nothing
    completed, learned or next) is NothingToStore when someone gave it or a summary is
    stored already: a stored summary is never replaced by an empty one (a session closed
    idle with nothing to say still gets its rule-based one). A rule-based one is
    NothingToStore too when the session's stored summary is one someone gave: what the
    agent wrote stays as written (Stop, an idle close and ``recover`` refresh only a
    rule-based summary)."""
    stored = None
    if summary.is_auto_generated:
        stored = _summary_memory(core, core.resolve_project(summary.project), summary.session_id)
        if stored is not None and not summary_from_memory(stored).is_auto_generated:
            raise NothingToStore("the session's summary was given: a rule-based one stays out")
    else:
        arguments.required_text("the session id", summary.session_id, "name the session")
        given_request(summary.request)
        given_items("completed", summary.completed)
        given_items("learned", summary.learned)
        given_items("next_steps", summary.next_steps)
    summary = replace(
        summary,
        request=core.scrub(summary.request),
        completed=memories.clean_strings(core, summary.completed),
        learned=memories.clean_strings(core, summary.learned),
        next_steps=memories.clean_strings(core, summary.next_steps),
    )
    says_nothing = not (
        summary.request.strip() or summary.completed or summary.learned or summary.next_steps
    )
    if says_nothing and (stored is not None or not summary.is_auto_generated):
        raise NothingToStore("nothing to save: the summary is empty once filtered")
    head = f"Session summary: {summary.request[:80]}" if summary.request else "Session summary"
    data = {
        "request": summary.request,
        "completed": list(summary.completed),
        "learned": list(summary.learned),
        "next_steps": list(summary.next_steps),
        "files": list(summary.files),
        "is_auto_generated": summary.is_auto_generated,
    }
    return _save_record(core, summary, summary_text(summary), head, data, activity=activity)


def get_summary(core: Core, session_id: str) -> Summary | None:
    """The stored summary of a session (None when it has none yet)."""
    found = _summary_memory(core, get_session(core, session_id).project, session_id)
    return None if found is None else summary_from_memory(found)


def _summary_memory(core: Core, project: str, session_id: str) -> MemoryRecord | None:
    """The memory holding the summary of ``session_id`` in ``project``, if one is stored."""
    return core.store.find_memory(project, topic_key=SUMMARY_TOPIC + session_id)


def summaries_and_checkpoints(
    core: Core, session_id: str, *, limit: int = 10
) -> list[MemoryRecord]:
    """The summary and checkpoint memories filed under ``session_id``, newest first: the id
    as the store holds it (one the store listed), neither resolved as a prefix nor
    checked as one a user gives (:func:`session_id_for`). A session without them, or
    deleted, has none."""
    flt = MemoryFilter(session_id=session_id, kinds=("summary", "checkpoint"))
    return core.store.list_memories(flt, limit=limit)


def latest_summary(core: Core, *, project: str | None = None) -> Summary | None:
    """The newest summary of ``project`` (None when it has none yet)."""
    rows = core.store.list_memories(
        MemoryFilter(projects=(core.resolve_project(project),), kinds=("summary",)), limit=1
    )
    return summary_from_memory(rows[0]) if rows else None


def summary_from_memory(memory: MemoryRecord) -> Summary:
    """The :class:`Summary` a summary memory holds (its ``metadata["summary"]``)."""
    data = memory.metadata.get("summary", {})
    return Summary(
        session_id=memory.session_id or "",
        project=memory.project,
        is_auto_generated=bool(data.get("is_auto_generated", True)),
        request=str(data.get("request", "")),
        completed=tuple(data.get("completed", ())),
        learned=tuple(data.get("learned", ())),
        next_steps=tuple(data.get("next_steps", ())),
        files=tuple(data.get("files", ())),
        created_at=memory.created_at,
        id=memory.id,
    )


# -- checkpoints --------------------------------------------------------------------


def save_checkpoint(core: Core, checkpoint: Checkpoint) -> SaveResult:
    """Store the latest checkpoint of a session (replaced on refresh), its parts filtered
    first as a summary's are."""
    checkpoint = replace(
        checkpoint,
        task=core.scrub(checkpoint.task),
        progress=memories.clean_strings(core, checkpoint.progress),
        next_steps=memories.clean_strings(core, checkpoint.next_steps),
        questions=memories.clean_strings(core, checkpoint.questions),
    )
    head = f"Checkpoint: {checkpoint.task[:80]}" if checkpoint.task else "Checkpoint"
    data = {
        "task": checkpoint.task,
        "progress": list(checkpoint.progress),
        "next_steps": list(checkpoint.next_steps),
        "questions": list(checkpoint.questions),
        "files": list(checkpoint.files),
    }
    return _save_record(core, checkpoint, checkpoint_text(checkpoint), head, data)


def _save_record(
    core: Core,
    record: Summary | Checkpoint,
    text: str,
    title: str,
    data: dict[str, Any],
    *,
    activity: bool = True,
) -> SaveResult:
    """Save a summary or checkpoint as the one memory of its kind in its session."""
    kind = "summary" if isinstance(record, Summary) else "checkpoint"
    topic = SUMMARY_TOPIC if kind == "summary" else CHECKPOINT_TOPIC
    draft = Draft(
        text,
        project=record.project,
        type=kind,
        kind=kind,
        title=title,
        session_id=record.session_id,
        topic_key=topic + record.session_id,
        files=record.files,
        created_at=record.created_at,
        metadata={kind: data},
        activity=activity,
    )
    return memories.save(core, draft)


def latest_checkpoint(
    core: Core, *, project: str | None = None, session_id: str | None = None
) -> Checkpoint | None:
    """The checkpoint of ``session_id``, else the newest one of ``project``."""
    if session_id is not None:
        session = get_session(core, session_id)
        found = core.store.find_memory(session.project, topic_key=CHECKPOINT_TOPIC + session_id)
        return None if found is None else checkpoint_from_memory(found)
    rows = core.store.list_memories(
        MemoryFilter(projects=(core.resolve_project(project),), kinds=("checkpoint",)), limit=1
    )
    return checkpoint_from_memory(rows[0]) if rows else None


def checkpoint_from_memory(memory: MemoryRecord) -> Checkpoint:
    """The :class:`Checkpoint` a checkpoint memory holds; dated by its last refresh."""
    data = memory.metadata.get("checkpoint", {})
    return Checkpoint(
        session_id=memory.session_id or "",
        project=memory.project,
        task=str(data.get("task", "")),
        progress=tuple(data.get("progress", ())),
        next_steps=tuple(data.get("next_steps", ())),
        questions=tuple(data.get("questions", ())),
        files=tuple(data.get("files", ())),
        created_at=memory.updated_at,
        id=memory.id,
    )


# -- their stored text --------------------------------------------------------------


def _section(label: str, items: Sequence[str]) -> str:
    return f"{label}: " + "; ".join(items) if items else ""


def summary_text(summary: Summary) -> str:
    """Compact searchable text of a summary (one line per non-empty part)."""
    head = "Session summary (auto-generated)" if summary.is_auto_generated else "Session summary"
    lines = [
        head,
        f"Request: {summary.request}" if summary.request else "",
        _section("Completed", summary.completed),
        _section("Learned", summary.learned),
        _section("Next steps", summary.next_steps),
        _section("Files", summary.files),
    ]
    return "\n".join(line for line in lines if line)


def checkpoint_text(checkpoint: Checkpoint) -> str:
    """Compact searchable text of a checkpoint (one line per non-empty part)."""
    lines = [
        "Checkpoint",
        f"Task: {checkpoint.task}" if checkpoint.task else "",
        _section("Progress", checkpoint.progress),
        _section("Next steps", checkpoint.next_steps),
        _section("Open questions", checkpoint.questions),
        _section("Files", checkpoint.files),
    ]
    return "\n".join(line for line in lines if line)
