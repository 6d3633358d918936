"""Session summaries and checkpoints, stored as memories.

A summary says what a session did (request, completed, learned, next steps);
a checkpoint says where work stands (task, progress, open questions) so the
next session can resume. Both are ordinary memories of their own kind, saved
through :meth:`Memory.save <memlane.service.Memory.save>` (so scrubbed and
indexed like the rest), with a ``topic_key`` of ``SUMMARY_TOPIC`` or
``CHECKPOINT_TOPIC`` + the session id: one of each per session, replaced in
place on refresh (its ``revision_count`` counts the refreshes). Their
structured fields travel in ``metadata`` and are read back by
:func:`summary_from_memory` and :func:`checkpoint_from_memory`.

The rule-based builders (``memlane.capture.summarize``) are imported when
used, not at import time.
"""

from __future__ import annotations

from memlane.models import Checkpoint, MemoryFilter, SaveResult, Summary

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from memlane.models import Memory as MemoryRecord
    from memlane.service import Memory

SUMMARY_TOPIC = "session-summary:"
CHECKPOINT_TOPIC = "session-checkpoint:"


def save_summary(memory: Memory, summary: Summary) -> SaveResult:
    """Store a session summary (one per session, replaced on refresh)."""
    from memlane.capture.summarize import summary_text

    return memory.save(
        summary_text(summary),
        project=summary.project,
        type="summary",
        kind="summary",
        title=f"Session summary: {summary.request[:80]}" if summary.request else "Session summary",
        session_id=summary.session_id,
        topic_key=SUMMARY_TOPIC + summary.session_id,
        files=summary.files,
        metadata={
            "summary": {
                "request": summary.request,
                "completed": list(summary.completed),
                "learned": list(summary.learned),
                "next_steps": list(summary.next_steps),
                "files": list(summary.files),
                "is_auto_generated": summary.is_auto_generated,
            }
        },
    )


def get_summary(memory: Memory, session_id: str) -> Summary | None:
    """The stored summary of a session (None when it has none yet)."""
    session = memory.get_session(session_id)
    found = memory.store.find_memory(session.project, topic_key=SUMMARY_TOPIC + session_id)
    return None if found is None else summary_from_memory(found)


def save_checkpoint(memory: Memory, checkpoint: Checkpoint) -> SaveResult:
    """Store the latest checkpoint of a session (replaced on refresh)."""
    from memlane.capture.summarize import checkpoint_text

    return memory.save(
        checkpoint_text(checkpoint),
        project=checkpoint.project,
        type="checkpoint",
        kind="checkpoint",
        title=f"Checkpoint: {checkpoint.task[:80]}" if checkpoint.task else "Checkpoint",
        session_id=checkpoint.session_id,
        topic_key=CHECKPOINT_TOPIC + checkpoint.session_id,
        files=checkpoint.files,
        metadata={
            "checkpoint": {
                "task": checkpoint.task,
                "progress": list(checkpoint.progress),
                "next_steps": list(checkpoint.next_steps),
                "questions": list(checkpoint.questions),
                "files": list(checkpoint.files),
            }
        },
    )


def latest_checkpoint(
    memory: Memory, *, project: str | None = None, session_id: str | None = None
) -> Checkpoint | None:
    """The checkpoint of ``session_id``, else the newest one of ``project``."""
    if session_id is not None:
        session = memory.get_session(session_id)
        found = memory.store.find_memory(session.project, topic_key=CHECKPOINT_TOPIC + session_id)
        return None if found is None else checkpoint_from_memory(found)
    rows = memory.store.list_memories(
        MemoryFilter(projects=(memory.resolve_project(project),), kinds=("checkpoint",)), limit=1
    )
    return checkpoint_from_memory(rows[0]) if rows else None


def refresh_summary(memory: Memory, session_id: str) -> Summary | None:
    """Rebuild the rule-based summary of a session from its observations."""
    from memlane.capture.summarize import build_summary

    store = memory.store
    session = store.get_session(session_id)
    if session is None:
        return None
    observations = store.list_memories(
        MemoryFilter(session_id=session_id, kinds=("observation",)), limit=50
    )
    prompts = [
        m.content
        for m in store.list_memories(
            MemoryFilter(session_id=session_id, kinds=("prompt",)), limit=50, newest_first=False
        )
    ]
    if not observations and not prompts:
        return None
    summary = build_summary(session_id, session.project, observations, prompts)
    memory.save_summary(summary)
    return summary


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
