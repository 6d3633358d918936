"""Rule-based summary and checkpoint: selection window, limits, parsing of next steps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memlane.capture.summarize import (
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


def test_summary_fields_and_limits() -> None:
    observations = [
        obs(i, "file-write", f"Edited src/f{i % 4}.py", (f"src/f{i % 4}.py",)) for i in range(8)
    ]
    observations += [obs(10 + i, "command", f"Ran: pytest -k t{i}") for i in range(8)]
    observations += [obs(30, "command", "Ran: make (exit 2)", tags=("failed",))]
    observations += [obs(40 + i, "research", f"Searched web: topic {i}") for i in range(9)]
    observations += [obs(60, "file-read", "Read README.md", ("README.md",))]
    observations += [obs(61, "delegation", "Delegated: audit deps")]
    prompts = ["/clear", "ok", "Add a retry to the HTTP client", "thanks"]
    summary = build_summary("s1", "proj", observations, prompts)
    assert summary.is_auto_generated is True
    assert summary.request == "Add a retry to the HTTP client"
    assert len(summary.completed) == 10
    assert summary.completed[-1] == "Delegated: audit deps"
    assert "Ran: make (exit 2)" not in summary.completed
    assert "Read README.md" not in summary.completed
    assert summary.files == ("src/f0.py", "src/f1.py", "src/f2.py", "src/f3.py")
    assert len(summary.learned) == 5 and summary.learned[-1] == "Searched web: topic 8"
    text = summary_text(summary)
    assert text.splitlines()[0] == "Session summary (auto-generated)"
    assert "Request: Add a retry to the HTTP client" in text
    assert "Files: src/f0.py; src/f1.py; src/f2.py; src/f3.py" in text
    assert "Next steps" not in text  # empty sections are left out


def test_summary_of_nothing() -> None:
    summary = build_summary("s1", "proj", [], [])
    assert summary.is_auto_generated and summary.request == "" and summary.completed == ()
    assert summary_text(summary) == "Session summary (auto-generated)"


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
    prompts = ["Implement the parser", "now wire it into the Stop hook", "ok"]
    cp = build_checkpoint("s1", "proj", observations, prompts, LAST_MESSAGE)
    assert cp.task == "now wire it into the Stop hook"
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
    assert len(cp.progress) == 10 and cp.progress[-1] == "Ran: pytest (exit 1)"
    text = checkpoint_text(cp)
    assert text.startswith("Checkpoint\nTask: now wire it into the Stop hook\n")
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
