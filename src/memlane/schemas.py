"""Pydantic wire models: the one shape HTTP and MCP both serialize.

Built from the core records of ``models.py`` with ``Model.model_validate(record)``:
every wire model reads attributes (``from_attributes``), so a field that has the
record's name is copied as is; the few derived fields (a headline, a date, a
snippet) are computed in one ``mode="before"`` validator of their model. No wire
model carries ``normalized_hash`` (invariant 6); a test pins that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import ErrorDetails

from memlane import models
from memlane.arguments import optional_text, required_text
from memlane.config import MAX_CONTEXT_BUDGET, MIN_CONTEXT_BUDGET
from memlane.errors import InvalidInput
from memlane.memories import MAX_CONTENT_CHARS, MAX_TITLE_CHARS, given_content
from memlane.sessions import (
    MAX_SUMMARY_ITEM_CHARS,
    MAX_SUMMARY_ITEMS,
    MAX_SUMMARY_REQUEST_CHARS,
    given_request,
)

if TYPE_CHECKING:
    from memlane.service import Memory


# Lists of models.py as pydantic takes them (a Literal built from the tuple), one
# definition each; mypy sees a text, since a Literal of a tuple is not mypy's:
# - the types a save over HTTP or MCP takes (models.SAVED_OBSERVATION_TYPES,
#   SAVED_KNOWLEDGE_TYPES): HTTP took any type ("banana", counted by stats) where MCP
#   refused it;
# - how hybrid search fuses keyword and semantic hits (models.FUSIONS, search.fusion);
# - a mark on an injected memory (models.FEEDBACK_MARKS).
if TYPE_CHECKING:
    ObservationType = str
    KnowledgeType = str
    Fusion = str
    FeedbackMark = str
else:
    ObservationType = Literal[models.SAVED_OBSERVATION_TYPES]
    KnowledgeType = Literal[models.SAVED_KNOWLEDGE_TYPES]
    Fusion = Literal[models.FUSIONS]
    FeedbackMark = Literal[models.FEEDBACK_MARKS]


class Wire(BaseModel):
    """A response model: frozen, no unknown fields, built from a core record's attributes."""

    model_config = ConfigDict(frozen=True, extra="forbid", from_attributes=True)


def error_message(error: ErrorDetails) -> str:
    """What one pydantic error says to a person, as HTTP and MCP both render it.

    A validator's own ValueError (``bad date 'yesterday' …``) is given in its own words:
    pydantic's message prefixes it with "Value error, ".
    """
    cause = error.get("ctx", {}).get("error")
    if error["type"] in ("value_error", "assertion_error") and cause is not None and str(cause):
        return str(cause)
    return error["msg"]


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped ("" for blank text)."""
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def derived(record: object, model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """``record``'s attributes named like ``model``'s fields, then ``fields`` over them.

    For the ``mode="before"`` validators of models with derived fields: the fields
    that share the record's names are read as ``from_attributes`` would read them.
    """
    values = {name: getattr(record, name) for name in model.model_fields if hasattr(record, name)}
    return {**values, **fields}


class MemoryOut(Wire):
    id: int
    project: str
    session_id: str | None
    kind: str
    type: str
    title: str
    content: str
    files: list[str]
    tags: list[str]
    topic_key: str | None
    source: str
    source_id: str | None
    revision_count: int
    access_count: int
    last_accessed_at: datetime | None
    stale: bool
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]


class SearchHitOut(Wire):
    id: int
    project: str
    kind: str
    type: str
    title: str
    content: str
    created_at: datetime
    score: float
    source_id: str | None = None
    session_id: str | None = None
    files: list[str] = Field(default_factory=list)
    stale: bool = False
    from_project: str | None = None
    snippet: str = ""
    members: list[int] = Field(
        default_factory=list,
        description="ids of every memory this hit stands for (pieces of one split record)",
    )
    source_ids: list[str] = Field(default_factory=list, description="their source ids")
    relaxed: bool = Field(
        default=False,
        description="scored below the noise floor: a weak match the search padded with",
    )


class IndexEntry(Wire):
    """Compact search result: what an agent needs to decide what to fetch. Its title, type
    and project are made safe as a prompt hook's header makes them
    (:func:`memlane.search.framing.one_line_safe`): stored names come from imports too."""

    id: int
    title: str
    type: str
    date: str
    score: float
    project: str | None = None  # the project of a hit from another project (tiered scope)
    snippet: str = ""  # the part of the memory that matches the query
    # Set when the hit stands for several pieces of one split record: fetch them all.
    members: list[int] | None = None
    relaxed: bool = False  # a weak match (below the noise floor) the search padded with

    @model_validator(mode="before")
    @classmethod
    def _from_hit(cls, data: Any) -> Any:
        if not isinstance(data, models.SearchHit):
            return data
        from memlane.search.framing import one_line_safe

        return derived(
            data,
            cls,
            title=one_line_safe(data.title or first_line(data.content)[:100]),
            type=one_line_safe(data.type),
            date=data.created_at.strftime("%Y-%m-%d"),
            score=round(data.score, 3),
            project=one_line_safe(data.from_project) if data.from_project else None,
            members=list(data.members) if len(data.members) > 1 else None,
        )


class SaveResultOut(Wire):
    status: Literal["created", "updated", "deduplicated"]
    id: int
    # Set when deduplicated onto a memory of another type (models.SaveResult).
    kept_type: str | None = None
    notice: str | None = None


class SessionOut(Wire):
    id: str
    project: str
    agent: str
    status: str
    auto_closed: bool
    started_at: datetime
    ended_at: datetime | None
    last_activity_at: datetime
    prompt_count: int
    parent_session_id: str | None
    # What the session was about (memlane.sessions.session_titles): its task or first
    # prompt. Required, so every answer gets it the one way, :meth:`titled`.
    title: str | None

    @classmethod
    def titled(cls, memory: Memory, sessions: Sequence[models.Session]) -> list[SessionOut]:
        """``sessions`` on the wire, each with its title (two queries for all of them)."""
        titles = memory.session_titles([s.id for s in sessions])
        fields = [name for name in cls.model_fields if name != "title"]
        return [
            cls(**{name: getattr(s, name) for name in fields}, title=titles.get(s.id))
            for s in sessions
        ]


class SummaryOut(Wire):
    session_id: str
    project: str
    is_auto_generated: bool
    request: str
    completed: list[str]
    learned: list[str]
    next_steps: list[str]
    files: list[str]
    created_at: datetime | None


class CheckpointOut(Wire):
    session_id: str
    project: str
    task: str
    progress: list[str]
    next_steps: list[str]
    questions: list[str]
    files: list[str]
    created_at: datetime | None


class InjectionStatsOut(Wire):
    """What the hooks injected (``Stats.injections``): the token meter of every session."""

    prompts: int
    prompts_injected: int
    injected_share: float
    session_starts: int
    session_starts_injected: int
    sessions: int
    tokens_total: int
    tokens_per_session_median: float
    tokens_per_session_p95: float
    per_day: dict[str, int]
    marked_useful: int
    marked_noise: int

    @model_validator(mode="before")
    @classmethod
    def _from_stats(cls, data: Any) -> Any:
        if not isinstance(data, models.InjectionStats):
            return data
        return derived(data, cls, injected_share=round(data.injected_share, 4))


class StatsOut(Wire):
    memories: int
    sessions: int
    projects: dict[str, int]
    kinds: dict[str, int]
    types: dict[str, int]
    embedded: int
    db_bytes: int
    oldest: datetime | None
    newest: datetime | None
    injections: InjectionStatsOut


class InjectedMemoryOut(Wire):
    """A memory an injection showed, in the order shown, with the user's mark."""

    memory_id: int
    rank: int
    score: float | None
    feedback: FeedbackMark | None


class InjectionOut(Wire):
    """One entry of the injection log (``text`` is '' when ``cleared``)."""

    id: int
    session_id: str
    project: str
    event: str
    prompt_number: int | None
    created_at: datetime
    mode: str
    relayed: bool
    hook_ms: float
    chars: int
    tokens: int
    prompt: str
    text: str
    cleared: bool
    memories: list[InjectedMemoryOut]


class InjectionsOut(Wire):
    """Injection log entries in time order."""

    injections: list[InjectionOut]


# An id a memory or an injection can have (SQLite's INTEGER): HTTP and MCP inputs alike.
MemoryId = Annotated[int, Field(ge=1, le=models.MAX_ID)]


class FeedbackRequest(BaseModel):
    """Input of POST /api/feedback and the MCP ``feedback`` tool."""

    model_config = ConfigDict(extra="forbid", strict=True)

    memory_id: MemoryId
    mark: FeedbackMark
    injection_id: MemoryId | None = None


class FeedbackOut(Wire):
    """A recorded mark: memory, mark, and the injection whose prompt it is for."""

    memory_id: int
    mark: FeedbackMark
    injection_id: int | None
    prompt: str
    created_at: datetime


class LineErrorOut(Wire):
    line: int
    message: str


class ImportReportOut(Wire):
    path: str
    created: int
    updated: int
    skipped: int
    errors: list[LineErrorOut]
    errors_omitted: int = 0  # bad lines counted beyond those listed
    sessions: int = 0  # sessions created or refreshed


T = TypeVar("T")


def core_rule(check: Callable[[T], T]) -> AfterValidator:
    """A validator applying the core's ``check`` to a text, its refusal (InvalidInput) in
    its words: a ValueError is what pydantic reports (:func:`error_message`)."""

    def validate(text: T) -> T:
        try:
            return check(text)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None

    return AfterValidator(validate)


# A memory's content as HTTP and MCP take it: the core's one bound, checked by the core's
# rule (blanks around the text aside) with its message; the schema shows the bound.
Content = Annotated[
    str,
    Field(min_length=1, json_schema_extra={"maxLength": MAX_CONTENT_CHARS}),
    core_rule(given_content),
]
# A summary's request as HTTP and MCP take it, required by both and bounded by the core's
# rule (sessions.given_request): blank or "" refused with its one message (so no
# min_length of pydantic's own; the schema still shows it).
SummaryTask = Annotated[
    str,
    Field(max_length=MAX_SUMMARY_REQUEST_CHARS, json_schema_extra={"minLength": 1}),
    core_rule(given_request),
]


# A session id where one may be left out (a save, a lookup, a recall), HTTP and MCP alike:
# the facade's rule, "" is not given (an agent fills an optional field with "") and a
# blank one refused, with the facade's message.
SESSION_HINT = "give an id or leave it out"
SessionId = Annotated[
    str | None,
    Field(max_length=models.MAX_NAME_CHARS),
    core_rule(partial(optional_text, "the session id", hint=SESSION_HINT)),
]
# A session id that must be given (the session a summary is filed under, over HTTP).
GivenSessionId = Annotated[
    str,
    Field(max_length=models.MAX_NAME_CHARS, json_schema_extra={"minLength": 1}),
    core_rule(partial(required_text, "the session id", hint="name the session")),
]
# A memory's title as given: the write path clips a longer one (MAX_TITLE_CHARS), so a
# client is told instead; MCP refused past 200 while HTTP took 500 and clipped.
Title = Annotated[str, Field(max_length=MAX_TITLE_CHARS)]
# A memory's tags and linked files: as many as the facade keeps (models.MAX_TAGS,
# MAX_FILES; it refuses more), each as long as a tag or a path can usefully be (a path
# no longer than Linux's PATH_MAX). One type for HTTP and MCP: MCP took 50 tags.
MAX_TAG_CHARS = 100
MAX_PATH_CHARS = 4096
Tags = Annotated[
    list[Annotated[str, Field(max_length=MAX_TAG_CHARS)]], Field(max_length=models.MAX_TAGS)
]
Files = Annotated[
    list[Annotated[str, Field(max_length=MAX_PATH_CHARS)]], Field(max_length=models.MAX_FILES)
]
# A summary's list (completed, learned, next steps), HTTP and MCP alike, in the core's
# bounds (memlane.sessions, why these); HTTP took 100 items of any length.
SummaryItems = Annotated[
    list[Annotated[str, Field(max_length=MAX_SUMMARY_ITEM_CHARS)]],
    Field(max_length=MAX_SUMMARY_ITEMS),
]
# A context pack's token budget (GET /api/context, MCP get_context), in config's bounds.
Budget = Annotated[
    int, Field(ge=MIN_CONTEXT_BUDGET, le=MAX_CONTEXT_BUDGET, description="Token budget.")
]


# A project name must hold something besides spaces (the facade refuses blank names).
PROJECT_PATTERN = r"\S"
# The project of an HTTP save, recall or checkpoint: required, since the worker serves every
# project from its data folder, whose name is none of them (a call that named none was
# filed under the worker's directory; the worker's /mcp refuses it too).
GivenProject = Annotated[
    str,
    Field(
        min_length=1,
        max_length=models.MAX_NAME_CHARS,
        pattern=PROJECT_PATTERN,
        description="the project (required: the worker serves every project)",
    ),
]


TopicKey = Annotated[
    str | None,
    Field(
        max_length=models.MAX_TOPIC_KEY_CHARS,
        description="Stable key; a later save with it updates in place.",
    ),
]
# A save's own fields, kept with the memory (not searched); MCP took none.
Metadata = Annotated[
    dict[str, Any] | None, Field(description="Fields of your own, kept with the memory.")
]


class SaveRequest(BaseModel):
    """The fields of every save: POST /api/observations and /api/knowledge (with their
    ``type``: :class:`ObservationRequest`, :class:`KnowledgeRequest`), and the arguments
    of the MCP save tools, which take the same types (a test compares them)."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    project: GivenProject
    title: Title | None = None
    session_id: SessionId = None
    topic_key: TopicKey = None
    files: Files = Field(default_factory=list)
    tags: Tags = Field(default_factory=list)
    metadata: Metadata = None


class ObservationRequest(SaveRequest):
    """Input of POST /api/observations and the MCP ``save_observation`` tool."""

    type: ObservationType = "note"


class KnowledgeRequest(SaveRequest):
    """Input of POST /api/knowledge and the MCP ``save_knowledge`` tool."""

    type: KnowledgeType


class UpdateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: Content | None = None
    title: Title | None = None
    type: str | None = Field(default=None, max_length=models.MAX_TYPE_CHARS)
    tags: Tags | None = None
    files: Files | None = None


# -- HTTP worker wire models ---------------------------------------------------------


class RecallRequest(BaseModel):
    """Input of POST /api/recall: what the prompt hook injects for ``prompt`` in
    ``session_id`` (a memory of that session is not recalled into it), at most ``limit``
    (default ``recall_limit``; above or below it, ``limit`` is the one that counts)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str = Field(min_length=1, max_length=20_000)
    project: GivenProject
    session_id: SessionId = None
    limit: int | None = Field(default=None, ge=1, le=20)


# Why a search ran otherwise than asked ("keyword mode: no vectors yet …"): every
# interface passes on the facade's ``SearchResult.notice``.
Notice = Annotated[
    str | None, Field(description="why the search ran otherwise than asked (None: as asked)")
]


class HitsOut(Wire):
    """Search or recall results, best first, and the search's notice."""

    hits: list[SearchHitOut]
    notice: Notice = None


class MemoriesOut(Wire):
    memories: list[MemoryOut]


class SessionsOut(Wire):
    sessions: list[SessionOut]

    @classmethod
    def listed(
        cls, memory: Memory, *, project: str | None, all_projects: bool, limit: int
    ) -> SessionsOut:
        """The sessions of ``project`` (or of every project), most recently active first,
        each titled: GET /api/sessions and MCP ``list_sessions``."""
        rows = memory.list_sessions(project=project, all_projects=all_projects, limit=limit)
        return cls(sessions=SessionOut.titled(memory, rows))


# How many sessions one listing shows (GET /api/sessions, MCP list_sessions).
SessionsLimit = Annotated[
    int, Field(ge=1, le=500, description="At most this many, most recently active first.")
]


class IdsRequest(BaseModel):
    """Input of POST /api/observations/batch: fetch memories by id."""

    model_config = ConfigDict(extra="forbid", strict=True)

    ids: list[MemoryId] = Field(min_length=1, max_length=500)


def new_session_id(interface: Literal["api", "mcp"]) -> str:
    """The id of a session HTTP (``api``) or MCP (``mcp``) starts without one: the
    interface, "-" and 12 hex digits (``mcp-3f2a9c01b7de``)."""
    import uuid

    return f"{interface}-{uuid.uuid4().hex[:12]}"


class SessionStartRequest(BaseModel):
    """Input of POST /api/sessions: start (or resume) a session, as MCP ``session_start``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    project: GivenProject
    session_id: SessionId = None  # None: a new id
    agent: str | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _endable(self) -> SessionStartRequest:
        # POST /api/sessions/{id}/end names it in a URL path, where "." and ".." are gone.
        if self.session_id in (".", ".."):
            raise ValueError("the session id cannot be '.' or '..': give another")
        return self


class SummaryRequest(BaseModel):
    """Input of POST /api/summaries (one summary per session, replaced on refresh)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    session_id: GivenSessionId
    project: str | None = Field(
        default=None, max_length=models.MAX_NAME_CHARS, pattern=PROJECT_PATTERN
    )
    request: SummaryTask
    completed: SummaryItems = Field(default_factory=list)
    learned: SummaryItems = Field(default_factory=list)
    next_steps: SummaryItems = Field(default_factory=list)
    files: Files = Field(default_factory=list)
    is_auto_generated: bool = False


class DeletedOut(Wire):
    """What a delete removed, or with ``dry_run`` what it would remove (``would_delete``):
    a preview never reads as a deletion."""

    deleted: list[int]
    would_delete: list[int] = Field(default_factory=list)
    dry_run: bool = False

    @classmethod
    def of(cls, ids: list[int], *, dry_run: bool = False) -> DeletedOut:
        """The answer for ``ids``: removed, or on a dry run only selected."""
        if dry_run:
            return cls(deleted=[], would_delete=ids, dry_run=True)
        return cls(deleted=ids)


class ContextOut(Wire):
    project: str
    text: str


class CheckpointResult(Wire):
    checkpoint: CheckpointOut | None


class SessionDetailOut(Wire):
    session: SessionOut
    summary: SummaryOut | None
    checkpoint: CheckpointOut | None

    @classmethod
    def of(cls, memory: Memory, session_id: str) -> SessionDetailOut:
        """The session ``session_id`` with its summary and latest checkpoint: GET
        /api/sessions/{id} and MCP ``get_session``."""
        session = memory.get_session(session_id)  # its id, or a prefix of it
        summary = memory.get_summary(session.id)
        found = memory.latest_checkpoint(session_id=session.id)
        return cls(
            session=SessionOut.titled(memory, [session])[0],
            summary=SummaryOut.model_validate(summary) if summary else None,
            checkpoint=CheckpointOut.model_validate(found) if found else None,
        )


class ReportOut(Wire):
    start: str
    end: str
    projects: dict[str, int]
    per_day: dict[str, int]
    per_type: dict[str, int]
    sessions: int
    memories: int
    highlights: list[dict[str, Any]]


class EmbeddingStatsOut(Wire):
    model: str | None
    state: str
    memories: int
    per_model: dict[str, int]
    embedded: int
    pending: int
    last_error: str | None


class HealthOut(Wire):
    status: str
    version: str
    pid: int | None = None
    started_at: float | None = None
    db: str | None = None


class FieldErrorOut(Wire):
    field: str | None
    message: str


class ErrorOut(Wire):
    """Every 4xx/5xx body of the HTTP API."""

    error: str
    message: str
    fields: list[FieldErrorOut] = Field(default_factory=list)


class FeedMemoryOut(Wire):
    """A memory as the live feed (SSE) announces it: compact, content cut to a snippet."""

    id: int
    project: str
    session_id: str | None
    kind: str
    type: str
    title: str
    snippet: str
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="before")
    @classmethod
    def _from_memory(cls, data: Any) -> Any:
        if not isinstance(data, models.Memory):
            return data
        return derived(data, cls, snippet=data.content[:300])


# -- MCP tool results; HTTP may serve the same shapes -----------------------------


class SearchResultOut(Wire):
    """Result of the MCP ``search`` tool: a compact index, not full records."""

    query: str
    project: str
    results: list[IndexEntry]
    notice: Notice = None


class TimelineEntry(Wire):
    """One line of a timeline: enough to decide which records to fetch in full (title and
    type made safe, as :class:`IndexEntry`'s)."""

    id: int
    date: str
    kind: str
    type: str
    title: str
    session_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_memory(cls, data: Any) -> Any:
        if not isinstance(data, models.Memory):
            return data
        from memlane.search.framing import one_line_safe

        return derived(
            data,
            cls,
            date=data.created_at.strftime("%Y-%m-%d %H:%M"),
            title=one_line_safe((data.title or first_line(data.content))[:120]),
            type=one_line_safe(data.type),
        )


class TimelineOut(Wire):
    project: str | None
    anchor: int | None
    items: list[TimelineEntry]


class ResumeOut(Wire):
    """Where to pick up: the last checkpoint, the last summary and their next steps."""

    project: str
    session_id: str | None
    checkpoint: CheckpointOut | None
    summary: SummaryOut | None
    next_steps: list[str]
