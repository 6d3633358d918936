"""Which outcome lines of a session a summary and the SessionStart pack list."""

from __future__ import annotations

from memlane.outcomes import most_telling

# A session of three tasks, as its commands printed them, in order.
SESSION = (
    "✓ Updated issue: app-1",
    "14 tests, 0 failures",
    "✓ Closed app-1: Closed",
    "[main 99b497c] feat: annotations schema (app-1)",
    "* [new branch]      main -> main",
    "✓ Updated issue: app-2",
    "18 tests, 0 failures",
    "✓ Closed app-2: lifecycle state done",
    "[main ceff8c3] feat: lifecycle state (app-2)",
    "99b497c..ceff8c3  main -> main",
    "✓ Updated issue: app-3",
    "21 tests, 0 failures",
    "✓ Closed app-3: review page",
    "[main bb53fb4] feat: review page (app-3)",
    "✓ Exported 12 issues",
    "ceff8c3..bb53fb4  main -> main",
)


def test_every_commit_is_kept_while_the_last_lines_are_bookkeeping() -> None:
    # The last five lines are the third task's; the first commit is what a person lists.
    assert most_telling(SESSION, 5) == (
        "[main 99b497c] feat: annotations schema (app-1)",
        "[main ceff8c3] feat: lifecycle state (app-2)",
        "21 tests, 0 failures",
        "✓ Closed app-3: review page",
        "[main bb53fb4] feat: review page (app-3)",
    )


def test_only_the_last_test_totals_and_push_say_where_the_session_ended() -> None:
    chosen = most_telling(SESSION, 100)
    assert [line for line in chosen if "tests," in line] == ["21 tests, 0 failures"]
    assert [line for line in chosen if "->" in line] == ["ceff8c3..bb53fb4  main -> main"]


def test_status_lines_come_last_and_the_order_is_kept() -> None:
    chosen = most_telling(SESSION, 10)
    assert "✓ Exported 12 issues" in chosen and "✓ Updated issue: app-1" not in chosen
    assert list(chosen) == [line for line in SESSION if line in chosen]
    assert most_telling(SESSION, 100)[0] == "✓ Updated issue: app-1"


def test_a_short_list_is_kept_whole() -> None:
    lines = ("12 passed", "[main 1a2b3c4] fix: retry")
    assert most_telling(lines, 10) == lines
    assert most_telling((), 10) == ()
