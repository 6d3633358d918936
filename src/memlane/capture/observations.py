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
  observation per item: Claude's own account of what broke and what fixed it;
* what the assistant states as a finding or a decision (:func:`stated_lessons`)
  gives one ``lesson`` or ``decision`` observation per item: the items under a
  label such as "Key findings:", "Root cause:", "Important notes" or
  "Decisions:" (as a heading, or ending the line before a list), and a line
  that starts with one ("Root cause: the sandbox ran in manual mode"). The
  research a subagent reports and the reason the assistant gives for its
  choice are what the next session needs, and the summary's "learned" is made
  of lessons and decisions.

Pure functions: the ingest stores what they return.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memlane.capture.classify import FILE_WRITE_TOOLS, CapturedObservation, classify_tool_event
from memlane.capture.transcript import ToolCall, Turn
from memlane.text import LIST_ITEM, one_line

MAX_LESSON_CHARS = 500
# "4. Errors and fixes:" / "## Errors and Fixes" / "**Errors and fixes**:"
_ERRORS_HEADING = re.compile(r"^\W*(?:\d+[.)]\s*)?\**\s*errors?\s+(?:and|&)\s+fix(?:es)?\b", re.I)
_SECTION_HEADING = re.compile(r"^(?:\d+[.)]\s+\S|#{1,6}\s+\S|\*\*[^*]+\*\*:?\s*$)")
_ITEM = re.compile(r"^\s*[-*•]\s+(.+)$")
_ANSWER = re.compile(r'"([^"\n]+)"="([^"\n]*)"')
# The labels under which an assistant states what it found or decided.
_FOUND = (
    r"(?:key\s+)?findings?|what\s+i\s+found|(?:the\s+)?root\s+causes?|lessons?(?:\s+learned)?|"
    r"learnings|takeaways?|gotchas?|important(?:\s+notes?)?|caveats?"
)
_DECIDED = r"(?:key\s+|design\s+)?decisions?|chosen\s+approach"
# A label alone (a heading, bold, or the last sentence of a line that opens a list): the
# items follow. Matched whole against a short line's last sentence (linear time).
_LIST_LABEL = re.compile(rf"[\W_]*(?P<label>{_FOUND}|{_DECIDED})[\s*:]*", re.IGNORECASE)
# A line that starts with a label and says it: "Root cause: the sandbox was manual."
_INLINE_LABEL = re.compile(
    rf"[\W_]*(?P<label>{_FOUND}|{_DECIDED})[\s*]*:[\s*]*(?P<text>\S.{{10,}})", re.IGNORECASE
)
# A block without any of these words states nothing (checked once per block).
_LABEL_HINT = re.compile(
    r"finding|found|cause|lesson|learning|takeaway|gotcha|important|caveat|decision|approach",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?]\s+")
MAX_LABEL_CHARS = 200
_LIST_ITEM = re.compile(LIST_ITEM)
_DECISION_LABEL = re.compile(_DECIDED, re.IGNORECASE)
MAX_STATED = 8


@dataclass(frozen=True, slots=True)
class Derived:
    """One observation derived from a transcript, with the key that makes it unique."""

    key: str  # the tool call's id, or "compaction:<turn uuid>:<n>"
    observation: CapturedObservation
    turn: Turn
    call: str | None = None  # the tool call's id, for an observation of one


def derived_observations(turns: list[Turn]) -> list[Derived]:
    """The observations a transcript's ``turns`` hold, in order."""
    found: list[Derived] = []
    for turn in turns:
        if turn.role == "compact":
            found.extend(_lessons(turn))
            continue
        stated = 0
        for block in turn.blocks:
            if isinstance(block, str):
                if turn.role == "assistant" and stated < MAX_STATED:
                    items = stated_lessons(block)[: MAX_STATED - stated]
                    found.extend(_stated(turn, stated, items))
                    stated += len(items)
                continue
            if not block.id or not block.name:
                continue
            observation = _classify(block, turn.cwd)
            if observation is not None:
                found.append(Derived(block.id, observation, turn, call=block.id))
    return found


def stated_lessons(text: str) -> list[tuple[str, str]]:
    """(type, text) of what ``text`` states as found (``lesson``) or decided
    (``decision``): the items under such a label, and lines that start with one."""
    out: list[tuple[str, str]] = []
    if _LABEL_HINT.search(text) is None:
        return out
    kind: str | None = None  # the type of the list being read, if any
    current: list[str] = []

    def close() -> None:
        if kind is not None and current:
            out.append((kind, one_line(" ".join(current).replace("**", ""), MAX_LESSON_CHARS)))
        current.clear()

    for line in text.split("\n"):
        stripped = line.strip()
        item = _LIST_ITEM.match(line)
        if kind is not None and item:
            close()
            current.append(item.group(1).strip())
            continue
        if kind is not None and stripped and current and line[:1].isspace():
            current.append(stripped)  # an item's continuation line
            continue
        if kind is not None and not stripped and not current:
            continue  # a blank line between the label and its list
        close()
        kind = None
        if len(stripped) <= MAX_LABEL_CHARS:
            label = _LIST_LABEL.fullmatch(_SENTENCE_END.split(stripped)[-1])
            if label is not None:
                kind = _type_of(label.group("label"))
                continue
        inline = _INLINE_LABEL.match(stripped)
        if inline is not None:
            text_of = inline.group("text").replace("**", "").strip()
            out.append((_type_of(inline.group("label")), one_line(text_of, MAX_LESSON_CHARS)))
    close()
    return out


def _type_of(label: str) -> str:
    return "decision" if _DECISION_LABEL.fullmatch(label.strip()) else "lesson"


def _stated(turn: Turn, first: int, items: list[tuple[str, str]]) -> list[Derived]:
    return [
        Derived(
            f"stated:{turn.uuid or turn.end_offset}:{first + number}",
            CapturedObservation(
                type=kind,
                title=one_line(text, 80),
                content=text,
                tags=("stated",),
                metadata={"source": "assistant"},
            ),
            turn,
        )
        for number, (kind, text) in enumerate(items)
    ]


def _classify(call: ToolCall, cwd: str | None) -> CapturedObservation | None:
    """What PostToolUse would have recorded, from the result text the transcript keeps.

    A failed Bash call reads as Claude Code's ``Error: Exit code N`` string (which
    classify takes for a failure), a failed write or edit as a result with its
    ``error`` (a failure, not a change); the user's answers to AskUserQuestion are
    read back from their ``"question"="answer"`` text; classify reads the files of a
    Glob or Grep from its text (not from a failed one's).
    """
    response: object = call.result
    if call.is_error and call.name == "Bash" and not call.result.startswith(("Error", "Exit")):
        response = f"Error: {call.result}"
    elif call.is_error and call.name in FILE_WRITE_TOOLS:
        response = {"error": call.result or "failed"}
    elif call.is_error and call.name in ("Glob", "Grep"):
        response = {}  # a refusal or an error is no list of files
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
