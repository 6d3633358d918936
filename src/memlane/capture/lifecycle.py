"""What capture does as sessions start, go idle and pause: rule-based wrap-ups.

* :func:`begin_session` — SessionStart: start (or resume) the session and
  close the project's other idle sessions, so no scheduler is needed;
* :func:`end_session` — a session ended (MCP ``session_end``, the Python API) gets
  its rule-based summary, as an idle one does;
* :func:`close_idle_sessions` — a session idle longer than
  ``session_idle_hours`` gets its rule-based summary and ends at its last real
  activity, not at closing time: the summary is written with
  ``activity=False`` (it is not work in the session);
* :func:`refresh_summary` — the summary rebuilt from the session's
  observations, prompts and last answer (Stop, auto-close), dated when the session
  worked;
* :func:`refresh_checkpoint` — the checkpoint rebuilt from the same plus the
  agent's last message (Stop, PreCompact); without a message its next steps stay, or
  come from the last answer stored when it has none yet (``memlane recover``).

The builders are :mod:`memlane.capture.summarize`'s; storing and reading the
records is :mod:`memlane.sessions`' (through the one write path).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from memlane import sessions
from memlane.capture.replies import reply_answer
from memlane.capture.summarize import (
    MAX_OBSERVATIONS,
    MAX_SUMMARY_OBSERVATIONS,
    build_checkpoint,
    build_summary,
)
from memlane.errors import NothingToStore
from memlane.models import IMPORT_SOURCES, UNKNOWN_AGENT, MemoryFilter

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from datetime import datetime

    from memlane.core import Core
    from memlane.models import Checkpoint, Session, Summary
    from memlane.models import Memory as MemoryRecord

# What a summary reads besides prompts: what was captured and what was saved on purpose
# (a session of MCP saves only has a summary too); a checkpoint reads the captured work.
SUMMARY_KINDS = ("observation", "knowledge", "note")
# The most prompts of a session a summary or checkpoint reads.
MAX_PROMPTS = 50
# The latest answer units read to find the last answer's first one (a long answer is
# several paragraph units of one turn).
MAX_ANSWER_UNITS = 20


def begin_session(
    core: Core,
    session_id: str,
    *,
    project: str | None = None,
    agent: str = UNKNOWN_AGENT,
    transcript_path: str | None = None,
    parent_session_id: str | None = None,
    now: datetime | None = None,
) -> Session:
    """Start (or resume) a session, and close the project's other idle sessions."""
    moment = now or core.now()
    session = sessions.start_session(
        core,
        session_id,
        project=project,
        agent=agent,
        transcript_path=transcript_path,
        parent_session_id=parent_session_id,
        now=moment,
    )
    close_idle_sessions(core, project=session.project, now=moment, keep=session_id)
    return session


def end_session(
    core: Core, session_id: str, *, now: datetime | None = None, summarize: bool = True
) -> Session:
    """End a session and write its rule-based summary (one the agent saved stays);
    ``summarize=False`` only marks it ended (SessionEnd: its budget is short, and the
    transcript's tail, read after it, refreshes the summary)."""
    session = sessions.end_session(core, session_id, now=now)
    if summarize:
        refresh_summary(core, session_id, activity=False)
    return session


def close_idle_sessions(
    core: Core,
    *,
    project: str | None = None,
    now: datetime | None = None,
    keep: str | None = None,
) -> list[str]:
    """Close sessions idle longer than ``session_idle_hours`` with an auto summary."""
    closed: list[str] = []
    for session in sessions.idle_sessions(core, project=project, now=now or core.now()):
        if session.id == keep:
            continue
        refresh_summary(core, session.id, activity=False)
        sessions.mark_auto_closed(core, session)
        closed.append(session.id)
    return closed


def refresh_summary(core: Core, session_id: str, *, activity: bool = True) -> Summary | None:
    """Rebuild the rule-based summary of a session from its observations, the knowledge
    and notes saved in it and its prompts.

    Dated by the session's newest observation (a session captured from its
    transcript later is dated when it happened, not when it was read).
    """
    found = _recent(
        core, session_id, SUMMARY_KINDS, earliest_prompts=True, limit=MAX_SUMMARY_OBSERVATIONS
    )
    if found is None:
        return None
    session, observations, prompts = found
    observations = [m for m in observations if m.kind == "observation" or _saved_here(m)]
    if not observations and not prompts:
        return None
    answer = partial(_last_answer, core, session_id)
    summary = build_summary(session_id, session.project, observations, prompts, answer)
    if observations:
        summary = replace(summary, created_at=max(m.created_at for m in observations))
    try:
        sessions.save_summary(core, summary, activity=activity)
    except NothingToStore:
        return None  # nothing to say, or the agent wrote the summary: the stored one stays
    return summary


def refresh_checkpoint(
    core: Core, session_id: str, last_assistant_message: str | None = None
) -> Checkpoint | None:
    """Rebuild the session's checkpoint; None when the session has nothing to say.

    Its next steps and open questions are read from ``last_assistant_message``. Without
    one (Claude Code's PreCompact sends none, nor did its Stop before the field existed,
    nor does ``memlane recover``) the stored checkpoint's stay: no message is no news of
    them, and a checkpoint built from a later message than the last answer stored (a
    transcript written late) must not get older steps back. A session without a stored
    checkpoint reads them from its last answer as stored: the whole of the transcript's
    last assistant turn, or the reply kept without one. Dated like the summary, by the
    session's newest observation: the
    SessionStart pack's "where the last session stopped" is then the session that happened
    last, not the one read last (``memlane recover`` reads old sessions in any order)."""
    found = _recent(
        core, session_id, ("observation",), earliest_prompts=False, limit=MAX_OBSERVATIONS
    )
    if found is None:
        return None
    session, observations, prompts = found
    message = core.scrub(last_assistant_message) if last_assistant_message else None
    stored = None if message else sessions.latest_checkpoint(core, session_id=session_id)
    if message is None and stored is None:
        message = _last_turn(core, session_id)
    checkpoint = build_checkpoint(session_id, session.project, observations, prompts, message)
    if stored is not None:
        checkpoint = replace(checkpoint, next_steps=stored.next_steps, questions=stored.questions)
    if not (checkpoint.task or checkpoint.progress or checkpoint.next_steps):
        return None
    if observations:
        checkpoint = replace(checkpoint, created_at=max(m.created_at for m in observations))
    sessions.save_checkpoint(core, checkpoint)
    return checkpoint


def _last_answer(core: Core, session_id: str) -> str | None:
    """The text of the session's last answer as stored: the first paragraph unit of the
    transcript's last assistant turn, or the reply kept without a transcript."""
    parts = _last_answer_parts(core, session_id)
    return parts[0] if parts else None


def _last_turn(core: Core, session_id: str) -> str | None:
    """The whole of the session's last answer as stored (where an answer states its next
    steps: at its end)."""
    parts = _last_answer_parts(core, session_id)
    return "\n\n".join(parts) if parts else None


def _last_answer_parts(core: Core, session_id: str) -> list[str]:
    """The session's last answer as stored, in order: the paragraph units of the
    transcript's last assistant turn (of its last ``MAX_ANSWER_UNITS``), or the answer of
    the reply kept without a transcript (stored after the prompt it answers)."""
    rows = core.store.list_memories(
        MemoryFilter(session_id=session_id, kinds=("turn",), types=("reply", "turn")),
        limit=MAX_ANSWER_UNITS,
        newest_first=True,
    )
    if not rows:
        return []
    turn = rows[0].metadata.get("turn")
    if turn is None:
        return [reply_answer(rows[0].content)]
    units = [m for m in rows if m.metadata.get("turn") == turn]
    return [m.content for m in sorted(units, key=lambda m: (m.metadata.get("part") or 0, m.id))]


def _saved_here(memory: MemoryRecord) -> bool:
    """A note or knowledge saved in its session (by the agent, over MCP or HTTP, or with
    the library), not brought in by an import that names the session."""
    return memory.source not in IMPORT_SOURCES


def _recent(
    core: Core, session_id: str, kinds: tuple[str, ...], *, earliest_prompts: bool, limit: int
) -> tuple[Session, list[MemoryRecord], list[str]] | None:
    """A session's ``limit`` latest memories of ``kinds`` and its prompts in the order they
    were made.

    The prompts are its first ``MAX_PROMPTS`` (what a summary's request is read from)
    or its last ones (what a checkpoint's task is read from); a session captured from
    its transcript alone has no prompt memories, and its requests are units.
    None: no such session.
    """
    store = core.store
    session = store.get_session(session_id)
    if session is None:
        return None
    observations = store.list_memories(
        MemoryFilter(session_id=session_id, kinds=kinds), limit=limit
    )
    prompts: list[str] = []
    for flt in (
        MemoryFilter(session_id=session_id, kinds=("prompt",)),
        MemoryFilter(session_id=session_id, kinds=("turn",), types=("request",)),
    ):
        rows = store.list_memories(flt, limit=MAX_PROMPTS, newest_first=not earliest_prompts)
        prompts = [m.content for m in (rows if earliest_prompts else reversed(rows))]
        if prompts:
            break
    return session, observations, prompts
