"""Rule-based session summary and checkpoint: what a person would write, zero tokens.

No LLM: a summary is assembled from what the session recorded — observations
(from PostToolUse, or derived from the transcript), the knowledge and notes saved in
it, and prompts.

* ``build_summary``:
  - **request**: the session's main request — its first meaningful prompt, not
    the last short one ("did you push?"); harness messages are not prompts;
  - **completed**: outcomes, not commands — the lines a run printed to say what it
    achieved (``metadata.outcomes`` of command observations), most telling first when
    they do not all fit: commits, the last test totals, items closed, the last push,
    then other check marks (:func:`most_telling`); else the files written; else (a
    session of questions and answers) the gist of the last answer, its first
    sentences (:func:`answer_gist`), so the next session sees what was concluded;
    the titles of the features, changes and refactors saved come after the outcomes;
  - **learned**: lessons (``bugfix`` / ``lesson`` observations, e.g. the errors
    and fixes of a compaction summary; the decisions, lessons, discoveries, notes…
    saved), each error that a later run of the same
    command no longer showed, with the files changed in between (error → fix),
    and the user's answers to the agent's questions (decisions);
  - **files**: project files written (paths inside the project: relative ones);
  ``is_auto_generated`` is always True (a rule wrote it).
* ``build_checkpoint``: where the session stands — the main request as the
  task, recent outcomes and writes as progress, next steps and open questions
  read from the last assistant message, and up to 20 project files.

The summary covers the whole session (at most ``MAX_SUMMARY_OBSERVATIONS``);
the checkpoint only its recent part: at most the 50 latest observations, none
older than 4 hours before the newest one. Observations may come in any order;
they are sorted by ``created_at`` (then id).

Their stored text (``summary_text``, ``checkpoint_text``) is :mod:`memlane.sessions`' part.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta

from memlane.capture.prompts import TAGS as _TAGS
from memlane.capture.prompts import is_meaningful_prompt
from memlane.models import Checkpoint, Memory, Summary
from memlane.outcomes import most_telling
from memlane.text import LIST_ITEM

MAX_OBSERVATIONS = 50
MAX_SUMMARY_OBSERVATIONS = 500
WINDOW = timedelta(hours=4)
MAX_COMPLETED = 10
MAX_LEARNED = 12
MAX_PROGRESS = 10
MAX_NEXT_STEPS = 10
MAX_QUESTIONS = 5
MAX_CHECKPOINT_FILES = 20
MAX_SUMMARY_FILES = 50
MAX_ITEM_CHARS = 200
MAX_REQUEST_CHARS = 500
MAX_ERROR_CHARS = 140

LESSON_TYPES = frozenset(("bugfix", "lesson", "decision", "constraint"))
# What a memory saved in the session (knowledge, a note) adds: a finding is learned, a
# change is completed (a bugfix, a lesson, is learned as above).
FOUND_TYPES = frozenset(("discovery", "heuristic", "rejected-approach", "postmortem", "note"))
DONE_TYPES = frozenset(("feature", "change", "refactor"))
_NEXT_HEADING = re.compile(
    r"^\W*(?:#+\s*)?\**\s*(?:next(?:\s+steps?)?|todo|to-?do|remaining(?:\s+work)?|"
    r"follow[- ]ups?|plan)\b\s*\**\s*:?\s*\**\s*$",
    re.IGNORECASE,
)
_NEXT_INLINE = re.compile(
    r"^\W*\**\s*(?:next(?:\s+steps?)?|todo|to-?do)\s*\**\s*[:,-]\s*(.+)$", re.IGNORECASE
)
_LIST_ITEM = re.compile(LIST_ITEM)
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+(.+)$")
_CHECKBOX_OPEN = re.compile(r"^\s*[-*]\s+\[ \]\s+(.+)$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
# What a command line carries that does not change what it runs.
_COMMAND_NOISE = re.compile(r"\s+(?:2>&1|2>/dev/null|>/dev/null)|\s*\|\s*(?:tail|head)\b.*$")
_HARNESS_PROMPT = ("<task-notification>", "<local-command-", "<command-", "<system-reminder>")


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


def main_request(prompts: Sequence[str]) -> str:
    """The session's main request: its first meaningful prompt that is not harness XML
    (a slash command counts with its arguments: ``/review the parser``)."""
    for prompt in prompts:
        if prompt.lstrip().startswith(_HARNESS_PROMPT):
            continue
        command = prompt.strip().startswith("/") and len(prompt.split()) >= 3
        if command or is_meaningful_prompt(prompt):
            return _clean(_TAGS.sub(" ", prompt), MAX_REQUEST_CHARS)
    return ""


def outcome_lines(observations: Iterable[Memory]) -> tuple[str, ...]:
    """What the commands achieved (their ``outcomes``), in order, each line once (where
    it came last)."""
    lines: list[str] = []
    for memory in observations:
        found = memory.metadata.get("outcomes")
        if memory.type == "command" and isinstance(found, list):
            lines.extend(_clean(str(line)) for line in found)
    return tuple(reversed(dict.fromkeys(reversed(lines))))


def outcomes(observations: Iterable[Memory]) -> tuple[str, ...]:
    """What the session achieved: its :func:`most_telling` ``MAX_COMPLETED`` outcome
    lines. The last lines of a long session are mostly its last task's bookkeeping,
    while its commits say what each task delivered."""
    return most_telling(outcome_lines(observations), MAX_COMPLETED)


def command_key(command: str) -> str:
    """A command as run, without redirections or a trailing ``| tail``: what "the same
    command run again" means."""
    first = command.strip().split("\n", 1)[0]
    return " ".join(_COMMAND_NOISE.sub("", first).split())


def _command_of(memory: Memory) -> str:
    return memory.content.split("\n", 1)[0].removeprefix("$ ") if memory.content else ""


def _first_error(memory: Memory) -> str:
    errors = memory.metadata.get("errors")
    if isinstance(errors, list):
        for error in errors:
            if isinstance(error, str) and not error.startswith("exit code"):
                return _clean(error, MAX_ERROR_CHARS)
    return ""


def fixes(observations: Sequence[Memory]) -> tuple[str, ...]:
    """Errors the next try of the same command no longer showed: ``command: error → fix``.

    The next try is the next command with the same program and subcommand (its
    first two words). Run with other arguments, that command is the fix (``git
    push`` → ``git push --set-upstream …``); run the same, the fix is what changed
    in between: the files written, else the other commands run.
    """
    commands = [(i, command_key(_command_of(m))) for i, m in enumerate(observations)]
    commands = [(i, key) for i, key in commands if key and observations[i].type == "command"]
    found: list[str] = []
    for position, (index, key) in enumerate(commands):
        failed = observations[index]
        error = _first_error(failed)
        if not _failed(failed) or not error:
            continue
        stem = key.split()[:2]
        later = next(((i, k) for i, k in commands[position + 1 :] if k.split()[:2] == stem), None)
        if later is None or error == _first_error(observations[later[0]]):
            continue
        if later[1] != key:
            if _failed(observations[later[0]]):
                continue
            fix = f"ran {later[1]}"
        else:
            between = observations[index + 1 : later[0]]
            changed = project_files((m for m in between if m.type == "file-write"), 5)
            ran = [k for i, k in commands if index < i < later[0]]
            if changed:
                fix = "changed " + ", ".join(changed)
            elif ran:
                fix = "ran " + "; ".join(dict.fromkeys(ran[:3]))
            else:
                continue
        found.append(_clean(f"{key}: {error} → {fix}", 2 * MAX_ITEM_CHARS))
    return tuple(dict.fromkeys(found))


def decisions(observations: Iterable[Memory]) -> tuple[str, ...]:
    """The user's answers to the agent's questions (``Q:`` / ``A:`` observations)."""
    found: list[str] = []
    for memory in observations:
        if "question" not in memory.tags:
            continue
        question = answer = ""
        for line in memory.content.split("\n"):
            if line.startswith("Q: "):
                question = line[3:]
            elif line.startswith("A: ") and question:
                answer = line[3:]
                found.append(_clean(f"Decided: {answer} (asked: {question})"))
    return tuple(found)


def build_summary(
    session_id: str,
    project: str,
    observations: Sequence[Memory],
    prompts: Sequence[str],
    last_answer: Callable[[], str | None] | None = None,
) -> Summary:
    """The rule-based summary of a session (``is_auto_generated`` is True);
    ``last_answer`` reads the text of the session's last answer, if any: only a session
    whose observations show no work done needs it."""
    ordered = sorted(observations, key=lambda m: (m.created_at, m.id))
    ordered = ordered[-MAX_SUMMARY_OBSERVATIONS:]
    writes = [m for m in ordered if m.type == "file-write"]
    done = (_title(m) for m in ordered if m.type in DONE_TYPES)
    completed = _first_unique([*outcomes(ordered), *done], MAX_COMPLETED) or _unique(
        (_title(m) for m in writes), MAX_COMPLETED
    )
    answer = last_answer() if not completed and last_answer is not None else None
    gist = answer_gist(answer) if answer else ""
    completed = completed or ((f"Answered: {gist}",) if gist else ())
    lessons = [
        _clean(m.content or m.title) for m in ordered if m.type in LESSON_TYPES | FOUND_TYPES
    ]
    learned = _first_unique([*lessons, *fixes(ordered), *decisions(ordered)], MAX_LEARNED)
    return Summary(
        session_id=session_id,
        project=project,
        is_auto_generated=True,
        request=main_request(prompts),
        completed=completed,
        learned=learned,
        files=project_files(writes, MAX_SUMMARY_FILES),
    )


def answer_gist(answer: str) -> str:
    """What an answer concluded, in a line: the first sentences of its first paragraph
    outside code and headings (a list's marks left out) up to ``MAX_ITEM_CHARS``, cut
    there if the first is longer."""
    gist = ""
    for line in _outside_code(answer):
        if line.lstrip().startswith("#"):
            continue  # a heading names the answer, it does not give it
        line = _LIST_ITEM.sub(r"\1", line).strip().replace("**", "")
        if not line:
            if gist:
                break  # the first paragraph only
            continue
        for sentence in _SENTENCE_SPLIT.split(line):
            joined = f"{gist} {sentence}".strip()
            if gist and len(joined) > MAX_ITEM_CHARS:
                return gist
            gist = joined
    return _clean(gist)


def project_files(memories: Iterable[Memory], limit: int) -> tuple[str, ...]:
    """Files of ``memories`` inside the project (stored relative to it), first seen first."""
    seen: dict[str, None] = {}
    for memory in memories:
        for path in memory.files:
            if path and path not in seen and _in_project(path):
                seen[path] = None
                if len(seen) >= limit:
                    return tuple(seen)
    return tuple(seen)


def _in_project(path: str) -> bool:
    return not path.startswith(("/", "~", "..", "\\")) and ":" not in path[:3]


def _first_unique(items: Iterable[str], limit: int) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for item in items if item))[:limit]


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
    task = main_request(prompts)
    if not task and prompts:
        task = _clean(_TAGS.sub(" ", prompts[-1]), MAX_REQUEST_CHARS)
    steps: list[str] = []
    for memory in recent:
        if memory.type == "file-write":
            steps.append(_title(memory))
        else:
            steps.extend(outcome_lines([memory]))
    progress = _unique(steps, MAX_PROGRESS)
    writes = [m for m in reversed(recent) if m.type == "file-write"]
    others = [m for m in reversed(recent) if m.type != "file-write"]
    # Files written come first (most recent first): they are what a resume needs.
    files = project_files([*writes, *others], MAX_CHECKPOINT_FILES)
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
