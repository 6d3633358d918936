"""Observations derived from a transcript, for sessions PostToolUse did not see.

A session imported, replayed or captured from its transcript alone has no
PostToolUse observations, and summaries, checkpoints and the SessionStart pack
are built from observations. :func:`derived_observations` makes them from the
transcript, by the same rules as the hook:

* each tool call with its result goes through
  :func:`memlane.capture.classify.classify_tool_event` (a failed call too:
  Claude Code fires no PostToolUse for it, and its error is what a lesson is
  made of), keyed by the call's id so the one PostToolUse recorded is not
  stored twice (``memlane.capture.pipeline.tool_source_id``);
* a compaction summary's "Errors and fixes" section gives one ``bugfix``
  observation per item: Claude's own account of what broke and what fixed it.

Pure functions: the ingest stores what they return.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memlane.capture.classify import CapturedObservation, classify_tool_event
from memlane.capture.transcript import ToolCall, Turn
from memlane.text import one_line

MAX_LESSON_CHARS = 500
# "4. Errors and fixes:" / "## Errors and Fixes" / "**Errors and fixes**:"
_ERRORS_HEADING = re.compile(r"^\W*(?:\d+[.)]\s*)?\**\s*errors?\s+(?:and|&)\s+fix(?:es)?\b", re.I)
_SECTION_HEADING = re.compile(r"^(?:\d+[.)]\s+\S|#{1,6}\s+\S|\*\*[^*]+\*\*:?\s*$)")
_ITEM = re.compile(r"^\s*[-*•]\s+(.+)$")
_ANSWER = re.compile(r'"([^"\n]+)"="([^"\n]*)"')


@dataclass(frozen=True, slots=True)
class Derived:
    """One observation derived from a transcript, with the key that makes it unique."""

    key: str  # the tool call's id, or "compaction:<turn uuid>:<n>"
    observation: CapturedObservation
    turn: Turn


def derived_observations(turns: list[Turn]) -> list[Derived]:
    """The observations a transcript's ``turns`` hold, in order."""
    found: list[Derived] = []
    for turn in turns:
        if turn.role == "compact":
            found.extend(_lessons(turn))
            continue
        for block in turn.blocks:
            if not isinstance(block, ToolCall) or not block.id or not block.name:
                continue
            observation = _classify(block, turn.cwd)
            if observation is not None:
                found.append(Derived(block.id, observation, turn))
    return found


def _classify(call: ToolCall, cwd: str | None) -> CapturedObservation | None:
    """What PostToolUse would have recorded, from the result text the transcript keeps.

    A failed Bash call reads as Claude Code's ``Error: Exit code N`` string (which
    classify takes for a failure); the user's answers to AskUserQuestion are read
    back from their ``"question"="answer"`` text.
    """
    response: object = call.result
    if call.is_error and call.name == "Bash" and not call.result.startswith(("Error", "Exit")):
        response = f"Error: {call.result}"
    elif call.name == "AskUserQuestion":
        response = {"answers": dict(_ANSWER.findall(call.result))}
    return classify_tool_event(call.name, call.input, response, cwd)


def compaction_lessons(summary: str) -> list[str]:
    """The items of a compaction summary's "Errors and fixes" section, one line each."""
    lessons: list[str] = []
    inside = False
    current: list[str] = []
    for line in summary.split("\n"):
        stripped = line.strip()
        if _ERRORS_HEADING.match(stripped):
            inside = True
            continue
        if not inside:
            continue
        item = _ITEM.match(line)
        indent = len(line) - len(line.lstrip())
        if item and indent <= 4:
            if current:
                lessons.append(" ".join(current))
            current = [item.group(1)]
        elif stripped and _SECTION_HEADING.match(stripped) and indent == 0:
            break
        elif stripped and current:
            current.append(stripped.lstrip("-*• "))
    if current:
        lessons.append(" ".join(current))
    return [one_line(lesson.replace("**", ""), MAX_LESSON_CHARS) for lesson in lessons]


def _lessons(turn: Turn) -> list[Derived]:
    derived: list[Derived] = []
    for number, lesson in enumerate(compaction_lessons(turn.text)):
        observation = CapturedObservation(
            type="bugfix",
            title=one_line(lesson, 80),
            content=lesson,
            tags=("compaction",),
            metadata={"source": "compaction summary"},
        )
        derived.append(
            Derived(f"compaction:{turn.uuid or turn.end_offset}:{number}", observation, turn)
        )
    return derived
