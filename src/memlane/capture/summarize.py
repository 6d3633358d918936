"""Rule-based session summary and checkpoint, built from observations and prompts.

No LLM: a summary is assembled from what the session recorded.

* ``build_summary``: the request is the first meaningful prompt; "completed"
  lists the 10 latest titles of file-write, command and delegation observations
  (failed commands excluded); "files" the files written, deduplicated;
  "learned" up to 5 titles of research observations. ``is_auto_generated`` is
  always True (a rule wrote it).
* ``build_checkpoint``: where the session stands: the latest prompt as the
  task, recent observation titles as progress, next steps and open questions
  read from the last assistant message, and up to 20 files.

Both look only at the recent part of the session: at most the 50 latest
observations, and none older than 4 hours before the newest one, so that a
long session's summary reflects what it is doing now. Observations may come in
any order; they are sorted by ``created_at`` (then id).

Their stored text (``summary_text``, ``checkpoint_text``) is :mod:`memlane.sessions`' part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import timedelta

from memlane.capture.prompts import TAGS as _TAGS
from memlane.capture.prompts import is_meaningful_prompt
from memlane.models import Checkpoint, Memory, Summary

MAX_OBSERVATIONS = 50
WINDOW = timedelta(hours=4)
MAX_COMPLETED = 10
MAX_LEARNED = 5
MAX_PROGRESS = 10
MAX_NEXT_STEPS = 10
MAX_QUESTIONS = 5
MAX_CHECKPOINT_FILES = 20
MAX_SUMMARY_FILES = 50
MAX_ITEM_CHARS = 200
MAX_REQUEST_CHARS = 500

COMPLETED_TYPES = frozenset(("file-write", "command", "delegation"))
PROGRESS_TYPES = frozenset(("file-write", "command", "delegation", "research"))
_NEXT_HEADING = re.compile(
    r"^\W*(?:#+\s*)?\**\s*(?:next(?:\s+steps?)?|todo|to-?do|remaining(?:\s+work)?|"
    r"follow[- ]ups?|plan)\b\s*\**\s*:?\s*\**\s*$",
    re.IGNORECASE,
)
_NEXT_INLINE = re.compile(
    r"^\W*\**\s*(?:next(?:\s+steps?)?|todo|to-?do)\s*\**\s*[:,-]\s*(.+)$", re.IGNORECASE
)
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*•+]|- \[ \])\s+(.+)$")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+(.+)$")
_CHECKBOX_OPEN = re.compile(r"^\s*[-*]\s+\[ \]\s+(.+)$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def recent_observations(
    observations: Iterable[Memory],
    limit: int = MAX_OBSERVATIONS,
    window: timedelta = WINDOW,
) -> list[Memory]:
    """At most ``limit`` latest observations within ``window`` of the newest, oldest first."""
    ordered = sorted(observations, key=lambda m: (m.created_at, m.id))
    if not ordered:
        return []
    newest = ordered[-1].created_at
    return [m for m in ordered[-limit:] if newest - m.created_at <= window]


def _clean(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unique(items: Iterable[str], limit: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    values = tuple(seen)
    return values[-limit:] if len(values) > limit else values


def _failed(memory: Memory) -> bool:
    return "failed" in memory.tags or memory.metadata.get("failed") is True


def _title(memory: Memory) -> str:
    if memory.title:
        return _clean(memory.title)
    first = memory.content.strip().split("\n", 1)[0] if memory.content else ""
    return _clean(first)


def build_summary(
    session_id: str,
    project: str,
    observations: Sequence[Memory],
    prompts: Sequence[str],
) -> Summary:
    """The rule-based summary of a session (``is_auto_generated`` is True)."""
    recent = recent_observations(observations)
    request = next((p for p in prompts if is_meaningful_prompt(p)), "")
    completed = _unique(
        (_title(m) for m in recent if m.type in COMPLETED_TYPES and not _failed(m)),
        MAX_COMPLETED,
    )
    learned = _unique((_title(m) for m in recent if m.type == "research"), MAX_LEARNED)
    files = _files_first_seen((m for m in recent if m.type == "file-write"), MAX_SUMMARY_FILES)
    return Summary(
        session_id=session_id,
        project=project,
        is_auto_generated=True,
        request=_clean(_TAGS.sub(" ", request), MAX_REQUEST_CHARS),
        completed=completed,
        learned=learned,
        files=files,
    )


def _files_first_seen(memories: Iterable[Memory], limit: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for memory in memories:
        for path in memory.files:
            if path and path not in seen:
                seen[path] = None
                if len(seen) >= limit:
                    return tuple(seen)
    return tuple(seen)


def next_steps_from(message: str | None) -> tuple[str, ...]:
    """Next steps stated in an assistant message.

    Items under a "Next steps" / "TODO" / "Plan" heading, lines such as
    "Next: run the migration" or "TODO: ...", open checkboxes, and, when none
    of these exist, a numbered plan.
    """
    if not isinstance(message, str) or not message.strip():
        return ()
    steps: list[str] = []
    numbered: list[str] = []
    under_heading = False
    for line in _outside_code(message):
        stripped = line.strip()
        if not stripped:
            continue
        if _NEXT_HEADING.match(stripped):
            under_heading = True
            continue
        inline = _NEXT_INLINE.match(stripped)
        if inline:
            steps.append(inline.group(1))
            under_heading = False
            continue
        item = _LIST_ITEM.match(line)
        if under_heading and item:
            steps.append(item.group(1))
            continue
        under_heading = False
        box = _CHECKBOX_OPEN.match(line)
        if box:
            steps.append(box.group(1))
            continue
        number = _NUMBERED.match(line)
        if number:
            numbered.append(number.group(1))
    chosen = steps or numbered
    cleaned = (_clean(s.replace("**", "").replace("`", "")) for s in chosen)
    return tuple(dict.fromkeys(c for c in cleaned if c))[:MAX_NEXT_STEPS]


def questions_from(message: str | None) -> tuple[str, ...]:
    """Sentences ending with "?" in an assistant message (outside code), at most 5."""
    if not isinstance(message, str) or "?" not in message:
        return ()
    found: list[str] = []
    text = "\n".join(_outside_code(message))
    for sentence in _SENTENCE_SPLIT.split(text):
        sentence = _LIST_ITEM.sub(r"\1", sentence).strip().strip("*").strip()
        if sentence.endswith("?") and len(sentence) >= 8:
            found.append(_clean(sentence.replace("**", "")))
    return tuple(dict.fromkeys(found))[:MAX_QUESTIONS]


def _outside_code(message: str) -> list[str]:
    lines: list[str] = []
    in_code = False
    for line in message.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if not in_code:
            lines.append(line)
    return lines


def build_checkpoint(
    session_id: str,
    project: str,
    observations: Sequence[Memory],
    prompts: Sequence[str],
    last_assistant_message: str | None,
) -> Checkpoint:
    """Where the session stands, enough to resume after a compaction or a break."""
    recent = recent_observations(observations)
    meaningful = [p for p in prompts if is_meaningful_prompt(p)]
    task_source = meaningful[-1] if meaningful else (prompts[-1] if prompts else "")
    task = _clean(_TAGS.sub(" ", task_source), MAX_REQUEST_CHARS) if task_source else ""
    progress = _unique((_title(m) for m in recent if m.type in PROGRESS_TYPES), MAX_PROGRESS)
    writes = [m for m in reversed(recent) if m.type == "file-write"]
    others = [m for m in reversed(recent) if m.type != "file-write"]
    # Files written come first (most recent first): they are what a resume needs.
    files = _files_first_seen([*writes, *others], MAX_CHECKPOINT_FILES)
    message = last_assistant_message if isinstance(last_assistant_message, str) else None
    return Checkpoint(
        session_id=session_id,
        project=project,
        task=task,
        progress=progress,
        next_steps=next_steps_from(message),
        questions=questions_from(message),
        files=files,
    )
