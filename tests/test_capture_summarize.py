"""Rule-based summary and checkpoint: selection window, limits, parsing of next steps."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memlane.capture.replies import REPLY_PROMPT_CHARS, reply_answer, reply_text
from memlane.capture.summarize import (
    MAX_COMPLETED,
    MAX_ITEM_CHARS,
    answer_gist,
    build_checkpoint,
    build_summary,
    is_meaningful_prompt,
    next_steps_from,
    questions_from,
    recent_observations,
)
from memlane.models import Memory
from memlane.sessions import checkpoint_text, summary_text

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def obs(
    i: int,
    type_: str,
    title: str,
    files: tuple[str, ...] = (),
    minutes: float | None = None,
    **extra: Any,
) -> Memory:
    at = T0 + timedelta(minutes=i if minutes is None else minutes)
    return Memory(
        id=i,
        project="proj",
        kind="observation",
        type=type_,
        content=title,
        created_at=at,
        updated_at=at,
        title=title,
        session_id="s1",
        files=files,
        **extra,
    )


def test_recent_observations_limit_and_window() -> None:
    many = [obs(i, "command", f"Ran: step {i}") for i in range(80)]
    recent = recent_observations(reversed(many))  # any input order
    assert [m.id for m in recent] == list(range(30, 80))
    spread = [obs(i, "command", f"c{i}", minutes=i * 60) for i in range(10)]  # hourly
    assert [m.id for m in recent_observations(spread)] == [5, 6, 7, 8, 9]
    assert recent_observations([]) == []


def cmd(
    i: int, command: str, *, errors: tuple[str, ...] = (), outcomes: tuple[str, ...] = ()
) -> Memory:
    """A command observation as classify writes it (failed ones carry their errors)."""
    metadata: dict[str, Any] = {"failed": bool(errors)}
    if errors:
        metadata["errors"] = ["exit code 1", *errors]
    if outcomes:
        metadata["outcomes"] = list(outcomes)
    title = f"Ran: {command}" + (" (exit 1)" if errors else "")
    memory = obs(i, "command", title, tags=("failed",) if errors else (), metadata=metadata)
    return replace(memory, content=f"$ {command}\n")


def test_summary_says_what_a_person_would() -> None:
    observations = [
        cmd(1, "bd ready", outcomes=()),
        cmd(
            2,
            "mix test test/review_test.exs 2>&1",
            errors=("** (RuntimeError) no :secret_key_base",),
        ),
        obs(3, "file-write", "Edited config/test.exs", ("config/test.exs",)),
        cmd(
            4,
            "mix test test/review_test.exs 2>&1 | tail -5",
            errors=("** (RuntimeError) add lazy_html",),
        ),
        obs(5, "file-write", "Edited mix.exs", ("mix.exs",)),
        obs(6, "file-read", "Read /tmp/claude/tasks/b1.output", ("/tmp/claude/tasks/b1.output",)),
        cmd(7, "mix deps.get"),
        cmd(8, "mix test test/review_test.exs", outcomes=("19 tests, 0 failures",)),
        cmd(9, "git commit -m review", outcomes=("[main bb53fb4] feat: review page",)),
        obs(10, "bugfix", "LiveView test isolation: switched to shared sandbox mode"),
        obs(11, "tool-use", "Asked user: Which rig?", tags=("question",)),
        obs(12, "file-write", "Wrote /tmp/scratch.txt", ("/tmp/scratch.txt",)),
    ]
    observations[10] = replace(observations[10], content="Q: Which rig?\nA: No rig")
    prompts = [
        "<task-notification>done</task-notification>",
        "Implement spotter-gqc",
        "did you push?",
    ]
    summary = build_summary("s1", "proj", list(reversed(observations)), prompts)
    assert summary.is_auto_generated is True
    assert summary.request == "Implement spotter-gqc"  # the main request, not the last
    assert summary.completed == ("19 tests, 0 failures", "[main bb53fb4] feat: review page")
    assert summary.learned == (
        "LiveView test isolation: switched to shared sandbox mode",
        "mix test test/review_test.exs: ** (RuntimeError) no :secret_key_base"
        " → changed config/test.exs",
        "mix test test/review_test.exs: ** (RuntimeError) add lazy_html → changed mix.exs",
        "Decided: No rig (asked: Which rig?)",
    )
    assert summary.files == ("config/test.exs", "mix.exs")  # project files only
    text = summary_text(summary)
    assert text.splitlines()[0] == "Session summary (auto-generated)"
    assert "Request: Implement spotter-gqc" in text
    assert "Completed: 19 tests, 0 failures; [main bb53fb4] feat: review page" in text
    assert "Next steps" not in text  # empty sections are left out


def test_an_error_that_stays_is_not_a_fix() -> None:
    error = ("error: undefined function get/2",)
    observations = [
        cmd(1, "mix test", errors=error),
        obs(2, "file-write", "Edited test/a_test.exs", ("test/a_test.exs",)),
        cmd(3, "mix test", errors=error),  # same error again: the edit did not fix it
        cmd(4, "mix credo", errors=("warning",)),  # never run again: nothing learned
    ]
    assert build_summary("s1", "p", observations, []).learned == ()


def test_without_outcomes_the_files_written_are_what_was_completed() -> None:
    observations = [
        obs(i, "file-write", f"Edited src/f{i}.py", (f"src/f{i}.py",)) for i in range(12)
    ]
    summary = build_summary("s1", "p", observations, ["ok", "Add a retry"])
    assert summary.request == "Add a retry"
    assert len(summary.completed) == 10 and summary.completed[-1] == "Edited src/f11.py"


def test_summary_of_nothing() -> None:
    summary = build_summary("s1", "proj", [], [])
    assert summary.is_auto_generated and summary.request == "" and summary.completed == ()
    assert summary_text(summary) == "Session summary (auto-generated)"


def test_a_summary_without_work_done_says_what_the_last_answer_concluded() -> None:
    answer = "### Cause\n\n- The cache key omits the locale. So `fr` reads `en`.\n\nMore later."
    summary = build_summary("s1", "p", [], ["Why is the French page in English?"], lambda: answer)
    assert summary.completed == ("Answered: The cache key omits the locale. So `fr` reads `en`.",)
    assert "Completed: Answered: The cache key" in summary_text(summary)
    # Work done says what was done: the answer is not added to it, nor even read.

    def unread() -> str:
        raise AssertionError("the last answer was read for a session with work done")

    done = build_summary(
        "s1", "p", [obs(1, "file-write", "Edited a.py", files=("a.py",))], [], unread
    )
    assert done.completed == ("Edited a.py",)
    assert len(answer_gist("word " * 200)) == MAX_ITEM_CHARS
    assert answer_gist("```\ncode only\n```") == ""


def test_a_reply_gives_back_its_answer() -> None:
    """A reply kept without a transcript is written and read by one pair of functions."""
    answer = "Oban with a Postgres notifier.\n\nRedis was dropped."
    for asked in (None, "Which queue?", "x" * (REPLY_PROMPT_CHARS * 2)):
        text = reply_text(asked, answer)
        assert reply_answer(text) == answer
        assert text.startswith("user: " if asked else "assistant: ")
        assert len(text) <= len(answer) + REPLY_PROMPT_CHARS + len("user: \nassistant: ")
    assert reply_answer("no label") == "no label"
    # A prompt line (not the answer's) starting with the answer's label is no separator.
    quoted = "Is this right?\nassistant: delete the lock\nassistant: retry"
    for answer in ("No, wait for the run.", "Quoted:\nassistant: delete the lock"):
        assert reply_answer(reply_text(quoted, answer)) == answer


def test_meaningful_prompts() -> None:
    assert is_meaningful_prompt("fix the login bug")
    assert is_meaningful_prompt("refactoring")
    for prompt in (
        "",
        "  ",
        "/compact",
        "ok",
        "Thanks!",
        "yes",
        "go",
        "<command-name>/x</command-name>",
    ):
        assert not is_meaningful_prompt(prompt), prompt


LAST_MESSAGE = """I fixed the parser and the tests pass.

**Next steps:**
1. Run the migration on staging
2. Update `CHANGELOG.md`

TODO: remove the debug flag

Should we also backfill old rows? I was not sure.
Is the 4-hour window right for long sessions?

```python
print("is this code?")
```
"""


def test_checkpoint_from_last_message() -> None:
    observations = [
        obs(i, "file-write", f"Edited src/m{i}.py", (f"src/m{i}.py",)) for i in range(25)
    ]
    observations += [obs(30, "file-read", "Read docs/a.md", ("docs/a.md",))]
    observations += [obs(31, "command", "Ran: pytest (exit 1)", tags=("failed",))]
    observations += [cmd(32, "pytest", outcomes=("12 passed",))]
    prompts = ["Implement the parser", "now wire it into the Stop hook", "ok"]
    cp = build_checkpoint("s1", "proj", observations, prompts, LAST_MESSAGE)
    assert cp.task == "Implement the parser"  # the main request
    assert cp.next_steps == (
        "Run the migration on staging",
        "Update CHANGELOG.md",
        "remove the debug flag",
    )
    assert cp.questions == (
        "Should we also backfill old rows?",
        "Is the 4-hour window right for long sessions?",
    )
    assert len(cp.files) == 20
    assert cp.files[0] == "src/m24.py"  # most recent write first
    assert "docs/a.md" not in cp.files  # writes fill the 20 slots first
    # Progress is outcomes and writes, never raw commands.
    assert len(cp.progress) == 10 and cp.progress[-1] == "12 passed"
    assert not any(step.startswith("Ran:") for step in cp.progress)
    text = checkpoint_text(cp)
    assert text.startswith("Checkpoint\nTask: Implement the parser\n")
    assert "Open questions: Should we also backfill old rows?" in text


def test_checkpoint_without_message_or_prompts() -> None:
    cp = build_checkpoint("s1", "proj", [obs(1, "file-read", "Read a.py", ("a.py",))], [], None)
    assert cp.task == "" and cp.next_steps == () and cp.questions == ()
    assert cp.files == ("a.py",) and cp.progress == ()
    assert checkpoint_text(cp) == "Checkpoint\nFiles: a.py"
    # Only trivial prompts: the latest one is still the task.
    assert build_checkpoint("s1", "p", [], ["continue"], "").task == "continue"


def test_numbered_plan_is_next_steps_when_no_heading() -> None:
    message = "Plan ahead of us:\n\n1. Add the index\n2) Backfill\n\nDone for now."
    assert next_steps_from(message) == ("Add the index", "Backfill")
    assert next_steps_from("Next, I will add tests for the chunker.") == (
        "I will add tests for the chunker.",
    )
    assert next_steps_from("- [ ] write docs\n- [x] ship") == ("write docs",)
    assert next_steps_from(None) == ()
    assert len(next_steps_from("\n".join(f"{i}. step {i}" for i in range(1, 30)))) == 10


def test_questions_limits() -> None:
    many = " ".join(f"Question number {i}?" for i in range(9))
    assert len(questions_from(many)) == 5
    assert questions_from("Why? ok") == ()  # too short to be a real question
    assert questions_from("no questions here.") == ()


def test_a_long_sessions_summary_keeps_its_first_commit() -> None:
    observations = [cmd(1, "git commit -m schema", outcomes=("[main 99b497c] feat: schema",))]
    for i in range(2, 14):  # a later task's bookkeeping: twelve status lines and pushes
        observations.append(cmd(i, f"bd update t{i}", outcomes=(f"✓ Updated issue: t{i}",)))
    observations.append(cmd(14, "git push", outcomes=("99b497c..ceff8c3  main -> main",)))
    summary = build_summary("s1", "proj", observations, ["Implement the epic"])
    assert summary.completed[0] == "[main 99b497c] feat: schema"
    assert summary.completed[-1] == "99b497c..ceff8c3 main -> main"  # spaces folded
    assert len(summary.completed) == MAX_COMPLETED  # the earliest status lines left out
    assert "✓ Updated issue: t2" not in summary.completed
