"""Query-string models of the HTTP API (bodies and responses live in ``schemas.py``).

Each GET route validates its query string with one of these, so a bad value is
a 422 naming the field, and the OpenAPI document lists the same parameters. A
parameter the route does not take is a 422 too: ignored, ``mode=semantic`` or a
misspelt ``min_scor`` looked like it had been applied.
Times accept ISO-8601 (``2026-01-31``, ``2026-01-31T12:00Z``) or a duration ago
(``7d``, ``12h``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from memlane.errors import InvalidInput
from memlane.models import MAX_NAME_CHARS, MAX_QUERY_CHARS, SearchMode, SearchScope
from memlane.schemas import (
    PROJECT_PATTERN,
    Budget,
    Fusion,
    GivenProject,
    MemoryId,
    SessionId,
    SessionsLimit,
)
from memlane.timeparse import parse_when


def _when(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_when(value)  # timeparse's length and range (1970 to 9000)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
    return value


When = Annotated[datetime | None, BeforeValidator(_when)]
# A project to look up: any name memlane stores (core.plain_name).
Name = Annotated[
    str | None,
    Field(default=None, min_length=1, max_length=MAX_NAME_CHARS, pattern=PROJECT_PATTERN),
]


class Query(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoQuery(Query):
    """The query string of a route that takes none: any parameter is refused."""


class SearchQuery(Query):
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for")
    project: Name = None
    scope: SearchScope | None = Field(
        default=None, description="project scope; default: tiered with a project, else all"
    )
    limit: int = Field(default=10, ge=1, le=100)
    type: str | None = Field(default=None, min_length=1, max_length=40)
    kind: str | None = Field(default=None, min_length=1, max_length=40)
    since: When = Field(default=None, description="only memories created after this")
    as_of: When = Field(default=None, description="rank as if now were this time")
    mode: SearchMode | None = Field(
        default=None,
        description="keyword, semantic or hybrid (default: keyword for /api/search, the"
        " configured search mode for /api/hybrid-search)",
    )
    fusion: Fusion | None = Field(
        default=None, description="how hybrid search fuses its two sides (default: search.fusion)"
    )
    min_score: float | None = Field(
        default=None, ge=0.0, le=1.0, description="drop hits scoring below this (0..1)"
    )


class ContextQuery(Query):
    # No session id: the pack is the project's (what a new session starts from), as MCP
    # get_context gives it; HTTP took one and used it nowhere.
    budget: Budget | None = None


class TimelineQuery(Query):
    around: MemoryId | None = Field(default=None, description="memory id at the centre")
    before: int = Field(default=5, ge=0, le=100)
    after: int = Field(default=5, ge=0, le=100)
    start: When = None
    end: When = None
    project: Name = None
    session_id: SessionId = None
    limit: int = Field(default=50, ge=1, le=500)


class ListQuery(Query):
    project: Name = None
    kind: str | None = Field(default=None, min_length=1, max_length=40)
    type: str | None = Field(default=None, min_length=1, max_length=40)
    session_id: SessionId = None
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=1_000_000)


class ProjectQuery(Query):
    project: Name = None


class CheckpointQuery(Query):
    project: GivenProject


class DeleteQuery(Query):
    dry_run: bool = Field(
        default=False, description="only list what would go (would_delete); delete nothing"
    )


class SessionQuery(Query):
    session_id: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="any session id: one holding '/', '.' or '..' too",
    )


class SessionsQuery(Query):
    project: Name = None
    limit: SessionsLimit = 50


class ReportQuery(Query):
    start: When = None
    end: When = None
    project: Name = None


class InjectionsQuery(Query):
    session_id: SessionId = None
    project: Name = None
    limit: int = Field(default=50, ge=1, le=1000, description="the last N entries")
