"""Session lifecycle: idempotent start, activity, end, and auto-close of idle sessions.

The facade's session methods (``Memory.session_start``, ``session_end``,
``touch_session``, ``close_idle_sessions``) delegate here. The rules:

* **idempotent start**: starting a session twice changes nothing but its
  activity; starting an ended one reactivates it. Each start first closes the
  project's other idle sessions, so no separate scheduler is needed;
* **activity never goes back**: ``last_activity_at`` only moves forward, so a
  late or replayed hook cannot make a session look idle;
* **any write counts**: a memory saved in a session nobody announced creates
  it (hooks can arrive in any order, or SessionStart not at all);
* **auto-close**: a session idle longer than ``session_idle_hours`` gets its
  rule-based summary and ends at its last real activity, not at closing time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memlane.errors import InvalidInput
from memlane.models import Session, utcnow

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.service import Memory


def start_session(
    memory: Memory,
    session_id: str,
    *,
    project: str | None = None,
    agent: str = "unknown",
    transcript_path: str | None = None,
    parent_session_id: str | None = None,
    now: datetime | None = None,
) -> Session:
    """Start (or resume) a session; calling it twice changes nothing but activity."""
    if not session_id.strip():
        raise InvalidInput("session id is empty")
    moment = now or utcnow()
    project = memory.resolve_project(project)
    memory.close_idle_sessions(project=project, now=moment, keep=session_id)
    store = memory.store
    existing = store.get_session(session_id)
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
        store.update_session(session_id, changes)
    session = store.get_session(session_id)
    assert session is not None
    return session


def end_session(memory: Memory, session_id: str, *, now: datetime | None = None) -> Session:
    """Mark a session ended (cheap: Claude Code gives SessionEnd 1.5 s)."""
    session = memory.get_session(session_id)
    moment = now or utcnow()
    memory.store.update_session(
        session_id,
        {
            "status": "ended",
            "ended_at": moment,
            "last_activity_at": max(moment, session.last_activity_at),
        },
    )
    return memory.get_session(session_id)


def touch_session(
    memory: Memory,
    session_id: str,
    project: str,
    *,
    now: datetime | None = None,
    prompt: bool = False,
) -> Session:
    """Record activity in a session, creating it if this is the first we hear of it."""
    moment = now or utcnow()
    store = memory.store
    session = store.get_session(session_id)
    if session is None:
        store.upsert_session(
            Session(
                id=session_id,
                project=project,
                status="active",
                started_at=moment,
                last_activity_at=moment,
                prompt_count=1 if prompt else 0,
            )
        )
    else:
        changes: dict[str, Any] = {"last_activity_at": max(moment, session.last_activity_at)}
        if prompt:
            changes["prompt_count"] = session.prompt_count + 1
        store.update_session(session_id, changes)
    result = store.get_session(session_id)
    assert result is not None
    return result


def close_idle_sessions(
    memory: Memory,
    *,
    project: str | None = None,
    now: datetime | None = None,
    keep: str | None = None,
) -> list[str]:
    """Close sessions idle longer than ``session_idle_hours`` with an auto summary."""
    moment = now or utcnow()
    cutoff = moment - timedelta(hours=memory.settings.session_idle_hours)
    idle = memory.store.list_sessions(
        projects=None if project is None else (project,),
        statuses=("active",),
        idle_before=cutoff,
        limit=200,
    )
    closed: list[str] = []
    for session in idle:
        if session.id == keep:
            continue
        memory.refresh_summary(session.id)
        # Saving the summary touched the session; its last activity stays the real one.
        memory.store.update_session(
            session.id,
            {
                "status": "auto_closed",
                "ended_at": session.last_activity_at,
                "last_activity_at": session.last_activity_at,
            },
        )
        closed.append(session.id)
    return closed
