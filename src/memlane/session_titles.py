"""What a session was about, in one line, for lists of sessions (the dashboard).

A session id says nothing to a person. Its title is the task its summary names
(the summary's ``request``), else its first prompt; a session with neither yet
(only tool calls so far) has none. Two indexed queries for a whole page of
sessions, whatever its length.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlane.session_records import summary_from_memory
from memlane.store.base import Store
from memlane.text import one_line

TITLE_CHARS = 120


def session_titles(store: Store, session_ids: Sequence[str]) -> dict[str, str]:
    """Session id → its title (sessions without one left out)."""
    summaries = store.first_memories(session_ids, "summary")
    prompts = store.first_memories(session_ids, "prompt")
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
