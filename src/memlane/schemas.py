"""Pydantic wire models: the one shape HTTP and MCP both serialize.

Built from the core records of ``models.py`` with ``from_record``. No wire
model carries ``normalized_hash`` (invariant 6); a test pins that.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memlane import models


class Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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

    @classmethod
    def from_record(cls, m: models.Memory) -> MemoryOut:
        return cls(
            id=m.id,
            project=m.project,
            session_id=m.session_id,
            kind=m.kind,
            type=m.type,
            title=m.title,
            content=m.content,
            files=list(m.files),
            tags=list(m.tags),
            topic_key=m.topic_key,
            source=m.source,
            source_id=m.source_id,
            revision_count=m.revision_count,
            access_count=m.access_count,
            last_accessed_at=m.last_accessed_at,
            stale=m.stale,
            created_at=m.created_at,
            updated_at=m.updated_at,
            metadata=m.metadata,
        )


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

    @classmethod
    def from_record(cls, h: models.SearchHit) -> SearchHitOut:
        return cls(
            id=h.id,
            project=h.project,
            kind=h.kind,
            type=h.type,
            title=h.title,
            content=h.content,
            created_at=h.created_at,
            score=h.score,
            source_id=h.source_id,
            session_id=h.session_id,
            files=list(h.files),
            stale=h.stale,
            from_project=h.from_project,
        )


class IndexEntry(Wire):
    """Compact search result: what an agent needs to decide what to fetch."""

    id: int
    title: str
    type: str
    date: str
    score: float
    project: str | None = None

    @classmethod
    def from_hit(cls, h: models.SearchHit) -> IndexEntry:
        title = h.title or h.content.strip().splitlines()[0][:100] if h.content.strip() else h.title
        return cls(
            id=h.id,
            title=title,
            type=h.type,
            date=h.created_at.strftime("%Y-%m-%d"),
            score=round(h.score, 3),
            project=h.from_project,
        )


class SaveResultOut(Wire):
    status: Literal["created", "updated", "deduplicated"]
    id: int

    @classmethod
    def from_record(cls, r: models.SaveResult) -> SaveResultOut:
        return cls(status=r.status, id=r.id)


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

    @classmethod
    def from_record(cls, s: models.Session) -> SessionOut:
        return cls(
            id=s.id,
            project=s.project,
            agent=s.agent,
            status=s.status,
            auto_closed=s.auto_closed,
            started_at=s.started_at,
            ended_at=s.ended_at,
            last_activity_at=s.last_activity_at,
            prompt_count=s.prompt_count,
            parent_session_id=s.parent_session_id,
        )


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

    @classmethod
    def from_record(cls, s: models.Summary) -> SummaryOut:
        return cls(
            session_id=s.session_id,
            project=s.project,
            is_auto_generated=s.is_auto_generated,
            request=s.request,
            completed=list(s.completed),
            learned=list(s.learned),
            next_steps=list(s.next_steps),
            files=list(s.files),
            created_at=s.created_at,
        )


class CheckpointOut(Wire):
    session_id: str
    project: str
    task: str
    progress: list[str]
    next_steps: list[str]
    questions: list[str]
    files: list[str]
    created_at: datetime | None

    @classmethod
    def from_record(cls, c: models.Checkpoint) -> CheckpointOut:
        return cls(
            session_id=c.session_id,
            project=c.project,
            task=c.task,
            progress=list(c.progress),
            next_steps=list(c.next_steps),
            questions=list(c.questions),
            files=list(c.files),
            created_at=c.created_at,
        )


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

    @classmethod
    def from_record(cls, s: models.Stats) -> StatsOut:
        return cls(
            memories=s.memories,
            sessions=s.sessions,
            projects=s.projects,
            kinds=s.kinds,
            types=s.types,
            embedded=s.embedded,
            db_bytes=s.db_bytes,
            oldest=s.oldest,
            newest=s.newest,
        )


class LineErrorOut(Wire):
    line: int
    message: str


class ImportReportOut(Wire):
    path: str
    created: int
    updated: int
    skipped: int
    errors: list[LineErrorOut]

    @classmethod
    def from_record(cls, r: models.ImportReport) -> ImportReportOut:
        return cls(
            path=r.path,
            created=r.created,
            updated=r.updated,
            skipped=r.skipped,
            errors=[LineErrorOut(line=e.line, message=e.message) for e in r.errors],
        )


class SaveRequest(BaseModel):
    """Input of POST /api/observations, /api/knowledge and the MCP save tools."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=1_000_000)
    project: str | None = Field(default=None, max_length=200)
    type: str = Field(default="note", max_length=40)
    title: str | None = Field(default=None, max_length=500)
    session_id: str | None = Field(default=None, max_length=200)
    topic_key: str | None = Field(default=None, max_length=200)
    files: list[str] = Field(default_factory=list, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=100)
    metadata: dict[str, Any] | None = None


class UpdateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(default=None, min_length=1, max_length=1_000_000)
    title: str | None = Field(default=None, max_length=500)
    type: str | None = Field(default=None, max_length=40)
    tags: list[str] | None = None
    files: list[str] | None = None


# -- HTTP worker wire models (issue 5) ---------------------------------------------------


# A project name must hold something besides spaces (the facade refuses blank names).
PROJECT_PATTERN = r"\S"


class RecallRequest(BaseModel):
    """Input of POST /api/recall, the hooks' fast path."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str = Field(min_length=1, max_length=20_000)
    project: str | None = Field(default=None, max_length=200, pattern=PROJECT_PATTERN)
    session_id: str | None = Field(default=None, max_length=200)
    limit: int | None = Field(default=None, ge=1, le=20)


class HitsOut(Wire):
    """Search or recall results, best first."""

    hits: list[SearchHitOut]


class MemoriesOut(Wire):
    memories: list[MemoryOut]


class SessionsOut(Wire):
    sessions: list[SessionOut]


class IdsRequest(BaseModel):
    """Input of POST /api/observations/batch: fetch memories by id."""

    model_config = ConfigDict(extra="forbid", strict=True)

    ids: list[int] = Field(min_length=1, max_length=500)


class SummaryRequest(BaseModel):
    """Input of POST /api/summaries (one summary per session, replaced on refresh)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    session_id: str = Field(min_length=1, max_length=200)
    project: str | None = Field(default=None, max_length=200, pattern=PROJECT_PATTERN)
    request: str = Field(default="", max_length=20_000)
    completed: list[str] = Field(default_factory=list, max_length=100)
    learned: list[str] = Field(default_factory=list, max_length=100)
    next_steps: list[str] = Field(default_factory=list, max_length=100)
    files: list[str] = Field(default_factory=list, max_length=200)
    is_auto_generated: bool = False


class DeletedOut(Wire):
    deleted: list[int]


class ContextOut(Wire):
    project: str
    text: str


class CheckpointResult(Wire):
    checkpoint: CheckpointOut | None


class SessionDetailOut(Wire):
    session: SessionOut
    summary: SummaryOut | None
    checkpoint: CheckpointOut | None


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

    @classmethod
    def from_record(cls, m: models.Memory) -> FeedMemoryOut:
        return cls(
            id=m.id,
            project=m.project,
            session_id=m.session_id,
            kind=m.kind,
            type=m.type,
            title=m.title,
            snippet=m.content[:300],
            created_at=m.created_at,
            updated_at=m.updated_at,
        )


# -- MCP tool results (issue 6); HTTP may serve the same shapes ---------------


class SearchResultOut(Wire):
    """Result of the MCP ``search`` tool: a compact index, not full records."""

    query: str
    project: str
    results: list[IndexEntry]


class TimelineEntry(Wire):
    """One line of a timeline: enough to decide which records to fetch in full."""

    id: int
    date: str
    kind: str
    type: str
    title: str
    session_id: str | None = None

    @classmethod
    def from_record(cls, m: models.Memory) -> TimelineEntry:
        first_line = m.content.strip().splitlines()[0] if m.content.strip() else ""
        return cls(
            id=m.id,
            date=m.created_at.strftime("%Y-%m-%d %H:%M"),
            kind=m.kind,
            type=m.type,
            title=(m.title or first_line)[:120],
            session_id=m.session_id,
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
