"""The timeline: memories in the order they happened.

Two views, both oldest first: the neighbourhood of one memory (``before``
older and ``after`` newer ones of the same project, whatever their session),
or a time range of a project, of every project or of one session, keeping the
``limit`` newest memories of the range. Nothing is ranked: the order is time.
"""

from __future__ import annotations

from datetime import datetime

from memlane.errors import InvalidInput
from memlane.models import MemoryFilter

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from memlane.models import Memory as MemoryRecord
    from memlane.service import Memory


def memory_timeline(
    memory: Memory,
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
    store = memory.store
    if around is not None:
        anchor = memory.get(around)
        older = store.list_memories(
            MemoryFilter(projects=(anchor.project,), created_before=anchor.created_at),
            limit=before,
        )
        newer = store.list_memories(
            MemoryFilter(
                projects=(anchor.project,),
                created_after=anchor.created_at,
            ),
            limit=after + 1,
            newest_first=False,
        )
        # created_after is inclusive: the anchor itself comes back among the newer ones.
        newer = [m for m in newer if m.id != anchor.id][:after]
        return [*reversed(older), anchor, *newer]
    if start is not None and end is not None and end <= start:
        raise InvalidInput("the time range is empty: end must be after start")
    projects = None if all_projects else (memory.resolve_project(project),)
    flt = MemoryFilter(
        projects=projects, session_id=session_id, created_after=start, created_before=end
    )
    return list(reversed(store.list_memories(flt, limit=limit)))
