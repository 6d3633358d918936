"""The activity report: what was remembered over a period.

Counts per day, type and project, the sessions active in the period and up to
20 knowledge highlights, as one plain dict that every interface can render
(CLI table, JSON, dashboard). The period defaults to the 7 days before
``end`` (default now); it is half-open, ``[start, end)``, like every time
filter of the store. A session counts when its activity overlaps the period.
Bounded like any listing: the period's first 100,000 memories, the 1,000
newest sessions.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memlane.errors import InvalidInput
from memlane.models import MemoryFilter

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.core import Core

DEFAULT_PERIOD = timedelta(days=7)
MAX_HIGHLIGHTS = 20


def activity_report(
    core: Core,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    project: str | None = None,
    all_projects: bool = False,
) -> dict[str, Any]:
    """Activity over a period: counts per day, type and project, sessions, highlights."""
    end = end or core.now()
    try:
        start = start or end - DEFAULT_PERIOD
    except OverflowError:
        raise InvalidInput(f"the report period ending {end:%Y-%m-%d} is out of range") from None
    if end <= start:
        raise InvalidInput("the report period is empty: end must be after start")
    projects = core.projects_for(project, all_projects)
    flt = MemoryFilter(projects=projects, created_after=start, created_before=end)
    per_day: dict[str, int] = {}
    per_type: dict[str, int] = {}
    per_project: dict[str, int] = {}
    highlights: list[dict[str, Any]] = []
    for record in core.store.list_memories(flt, limit=100_000, newest_first=False):
        day = record.created_at.strftime("%Y-%m-%d")
        per_day[day] = per_day.get(day, 0) + 1
        per_type[record.type] = per_type.get(record.type, 0) + 1
        per_project[record.project] = per_project.get(record.project, 0) + 1
        if record.kind == "knowledge" and len(highlights) < MAX_HIGHLIGHTS:
            highlights.append(
                {
                    "id": record.id,
                    "type": record.type,
                    "title": record.title or record.content[:80],
                }
            )
    sessions = [
        s
        for s in core.store.list_sessions(projects=projects, limit=1000)
        if s.last_activity_at >= start and s.started_at < end
    ]
    return {
        "start": start.isoformat(),
        "end": end.isoformat(),
        "projects": per_project,
        "per_day": per_day,
        "per_type": per_type,
        "sessions": len(sessions),
        "memories": sum(per_day.values()),
        "highlights": highlights,
    }
