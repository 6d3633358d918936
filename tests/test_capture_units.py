"""Units, cleaned tool output and observations derived from a transcript.

``tests/data/transcripts/webhook-retry.jsonl`` is a small session in Claude
Code's record format (tool calls and results, a failed command, a compaction
summary, a task notification, a question to the user, a subagent).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from memlane.capture import output
from memlane.capture.metadata import extract_errors, extract_outcomes
from memlane.capture.observations import compaction_lessons, derived_observations
from memlane.capture.output import clean_output
from memlane.capture.transcript import ToolCall, iter_turns
from memlane.capture.units import (
    MAX_CALL_CHARS,
    OUTPUT_HEAD_LINES,
    OUTPUT_TAIL_LINES,
    UNIT_CHARS,
    describe,
    iter_units,
    pack_paragraphs,
    task_output,
)

SESSION = Path(__file__).parent / "data" / "transcripts" / "webhook-retry.jsonl"


def units() -> list:  # type: ignore[type-arg]
    return list(iter_units(list(iter_turns(str(SESSION)))))


def test_turns_keep_each_call_with_its_whole_result() -> None:
    turns = list(iter_turns(str(SESSION)))
    calls = [b for t in turns for b in t.blocks if isinstance(b, ToolCall)]
    assert [c.name for c in calls] == [
        "Bash", "Read", "Edit", "Bash", "Bash", "AskUserQuestion", "Bash", "Bash", "Task",
    ]  # fmt: skip
    assert all(c.answered for c in calls)
    assert [c.id for c in calls if c.is_error] == ["toolu_01", "toolu_07"]
    assert calls[0].result.endswith("1 failed, 4 passed in 0.31s")
    # The task notification is the harness, not a prompt: no user turn for it.
    prompts = [t.text for t in turns if t.role == "user"]
    assert prompts == [
        "The webhook retry test fails on CI. Fix it and keep the idempotency key stable"
        " across retries.",
        "Which queue should the retries use, and did you push?",
    ]
    assert [t.role for t in turns].count("compact") == 1


def test_units_are_small_and_each_says_what_it_is() -> None:
    found = units()
    kinds = Counter(u.kind for u in found)
    assert kinds == {"request": 2, "reply": 4, "tool": 9, "compaction": 2}
    assert all(len(u.text) <= UNIT_CHARS for u in found)
    titles = [u.title for u in found if u.kind == "tool"]
    assert titles[:4] == [
        "$ pytest tests/test_webhooks.py -q 2>&1",
        "Read src/payments/retry.py",
        "Edit src/payments/retry.py",
        "$ pytest tests/test_webhooks.py -q 2>&1",
    ]
    failed = found[2]
    assert failed.failed and failed.tool == "Bash"
    # The failure and its real error come first, the "Exit code" line and ANSI go.
    assert failed.text.split("\n")[1] == "failed (exit code 1): E   KeyError: 'Idempotency-Key'"
    assert "Exit code 1" not in failed.text and "\x1b" not in failed.text
    read = found[3]
    assert read.files == ("src/payments/retry.py",)
    assert "1→" not in read.text and "def send_with_retry" in read.text
    edit = found[5]
    assert edit.text == (
        "Edit src/payments/retry.py\n+ fresh.headers.update(request.headers)"
        "  # keep Idempotency-Key stable"
    )
    ask = next(u for u in found if u.tool == "AskUserQuestion")
    assert ask.title == "Asked the user: Which queue should retries use?"
    assert "Offered: Redis; SQS" in ask.text  # what the user chose among
    task = next(u for u in found if u.tool == "Task")
    assert task.title == "Task (Explore): Find other rebuild() callers"
    assert "src/payments/refunds.py:58" in task.text
    # Every unit knows its turn.
    assert all(u.turn for u in found)


def test_long_results_are_split_into_parts_that_repeat_the_call() -> None:
    lines = "\n".join(f"line {i}: value {i * 7}" for i in range(1000))
    parts = pack_paragraphs(lines)
    assert all(len(p) <= UNIT_CHARS for p in parts)
    assert "\n".join(parts) == lines
    from memlane.capture.transcript import Turn
    from memlane.capture.units import turn_units

    wide = "\n".join(f"line {i}: value {i * 7} " + "x" * 80 for i in range(1000))
    call = ToolCall("Bash", {"command": "seq 1000"}, "t1", wide, False, True)
    made = turn_units(Turn(role="assistant", text="", blocks=(call,)))
    most = MAX_CALL_CHARS // UNIT_CHARS
    assert len(made) == most
    assert all(u.text.startswith("$ seq 1000\n") for u in made)
    assert [u.part for u in made] == list(range(most))
    # More parts than that: the first ones and the last (how the command ended) are kept.
    assert "line 0: value 0 " in made[0].text and "line 999: value 6993 " in made[-1].text
    # A long output keeps its first and last lines, saying how many it left out.
    call = ToolCall("Bash", {"command": "seq 1000"}, "t1", lines, False, True)
    shown = "\n".join(u.text for u in turn_units(Turn(role="assistant", text="", blocks=(call,))))
    assert "line 0: value 0" in shown and "line 999: value 6993" in shown
    assert f"… {1000 - OUTPUT_HEAD_LINES - OUTPUT_TAIL_LINES} lines left out …" in shown
    assert "line 500: value" not in shown


def test_unit_shape_sets_the_size_and_the_lines_kept() -> None:
    from memlane.capture.transcript import Turn
    from memlane.capture.units import UnitShape, turn_units

    output = "\n".join(f"row {i}" for i in range(50))
    call = ToolCall("Bash", {"command": "rows"}, "t1", output, False, True)
    turn = Turn(role="assistant", text="", blocks=(call,))
    made = turn_units(turn, UnitShape(chars=200, head_lines=3, tail_lines=2))
    assert [u.text for u in made] == [
        "$ rows\nrow 0\nrow 1\nrow 2\n… 45 lines left out …\nrow 48\nrow 49"
    ]
    no_tail = turn_units(turn, UnitShape(chars=200, head_lines=2, tail_lines=0))
    assert no_tail[0].text == "$ rows\nrow 0\nrow 1\n… 48 lines left out …"
    prose = Turn(role="assistant", text="", blocks=("word " * 200,))
    assert all(len(u.text) <= 200 for u in turn_units(prose, UnitShape(chars=200)))
    assert len(turn_units(prose, UnitShape(chars=200))) > len(turn_units(prose))


def test_clean_output_drops_what_carries_no_fact() -> None:
    raw = (
        "\x1b[0mWaiting for lock\r\x1b[2KDone waiting\n==> ash_oban\nCompiling 19 files (.ex)\n"
        "Generated ash_oban app\n.......F....\n[=====>     ] 45%\n"
        "(phoenix 1.8.3) lib/x.ex:1: f\n(phoenix 1.8.3) lib/x.ex:1: f\n"
        "     12→  keep me\n\n87 tests, 0 failures"
    )
    assert clean_output(raw) == (
        "Done waiting\n(phoenix 1.8.3) lib/x.ex:1: f (×2)\n  keep me\n87 tests, 0 failures"
    )


def test_build_status_lines_of_rebar3_and_slow_mix_files_are_progress() -> None:
    raw = (
        "===> Analyzing applications...\n===> Compiling yamerl\n"
        "Compiling lib/ash/changeset/changeset.ex (it's taking more than 10s)\n"
        "Compiling the release (slowly)\n43 tests, 0 failures"
    )
    assert clean_output(raw) == "Compiling the release (slowly)\n43 tests, 0 failures"


def test_a_task_output_unit_shows_the_status_and_the_output_without_the_envelope() -> None:
    result = (
        "<retrieval_status>success</retrieval_status>\n\n<task_id>bd0afab</task_id>\n\n"
        "<task_type>local_bash</task_type>\n\n<status>completed</status>\n\n"
        "<exit_code>0</exit_code>\n\n<output>\n==> file_system\nFinished in 0.7 seconds\n"
        "43 tests, 0 failures\n</output>"
    )
    assert task_output(result) == (
        "completed, exit code 0\n==> file_system\nFinished in 0.7 seconds\n43 tests, 0 failures"
    )
    running = "<retrieval_status>timeout</retrieval_status>\n<status>running</status>\n<output>\nx"
    assert task_output(running) == "running\nx"
    assert task_output("no envelope <status>x</status>") == "no envelope <status>x</status>"
    call = ToolCall("TaskOutput", {"task_id": "bd0afab"}, "t1", result)
    head, body, _ = describe("TaskOutput", {"task_id": "bd0afab"}, call, None)
    assert head == "Output of background task bd0afab"
    assert body == "completed, exit code 0\nFinished in 0.7 seconds\n43 tests, 0 failures"


def test_a_subagent_unit_shows_its_answer_without_the_resume_id_and_usage() -> None:
    answer = "Found two callers:\nsrc/payments/refunds.py:58 rebuild(order)"
    trailer = (
        "agentId: a881341 (for resuming to continue this agent's work if needed)\n"
        "<usage>total_tokens: 43179\ntool_uses: 2\nduration_ms: 32855</usage>"
    )
    args = {"description": "Find callers", "prompt": "Find rebuild() callers"}
    call = ToolCall("Task", args, "t1", f"{answer}\n{trailer}")
    _, body, _ = describe("Task", args, call, None)
    assert body == f"Asked: Find rebuild() callers\n{answer}"
    # Only a trailer that ends the answer, on a line of its own, goes.
    quoted = "The log said agentId: a881341 (for resuming to continue this agent's work)"
    assert output.without_subagent_trailer(quoted) == quoted
    middle = f"{trailer}\nThen more of the answer."
    assert output.without_subagent_trailer(middle) == middle
    assert output.without_subagent_trailer(trailer) == ""


def test_a_background_launch_unit_keeps_the_task_id_not_the_output_file() -> None:
    result = (
        "Command was manually backgrounded by user with ID: b0be39e. Output is being written"
        " to: /tmp/claude-1000/-home-u-projects-app/tasks/b0be39e.output"
    )
    args = {"command": "mix test", "description": "Run the tests"}
    _, body, _ = describe("Bash", args, ToolCall("Bash", args, "t1", result), None)
    assert body == ("(Run the tests)\nCommand was manually backgrounded by user with ID: b0be39e.")


def test_progress_is_any_of_the_three_patterns() -> None:
    # is_progress matches one pattern joined from three; each line must get the answer
    # the three give one by one.
    lines = [
        "==> dep",
        "Compiling 1 file (.ex)",
        "Generated x app",
        "Generated x app y",
        "Compiled lib/x",
        "Downloading a",
        "Downloadinga",
        "Resolved 3",
        "Resolving deltas: 50%",
        "remote: Total 3",
        "Updating crates.io index",
        "Running ExUnit with seed: 1",
        "........ [ 50%]",
        ".F.E.s",
        "[=====>    ] 45%",
        "100%",
        "⠋⠙⠹",
        "▓▓▓░░ 12.5%",
        "x = 1",
        "  end",
        "def f():",
        "87 tests, 0 failures",
        " Requirement already satisfied: x",
        " ",
        "(x)",
        "",
    ]
    for line in lines:
        stripped = line.strip()
        expected = not stripped or any(
            p.match(stripped) for p in (output._PROGRESS, output._TEST_DOTS, output._STATUS)
        )
        assert output.is_progress(line) == expected, line
    assert sum(map(output.is_progress, lines)) == 18


def test_outcomes_and_pytest_errors() -> None:
    output = (
        "F\nE   KeyError: 'k'\n1 failed, 4 passed in 0.3s\n5 passed in 0.2s\n"
        "[main 4e5f6a7] fix: keep the key\n   05fd186..a230dbf  main -> main\n✓ Closed x-1: done"
    )
    assert "E   KeyError: 'k'" in extract_errors(output)
    assert extract_outcomes(output) == (
        "5 passed in 0.2s",  # the failing total is not an outcome
        "[main 4e5f6a7] fix: keep the key",
        "05fd186..a230dbf  main -> main",
        "✓ Closed x-1: done",
    )


def test_derived_observations_match_what_post_tool_use_records() -> None:
    derived = derived_observations(list(iter_turns(str(SESSION))))
    by_key = {d.key: d.observation for d in derived}
    assert list(by_key)[:3] == ["toolu_01", "toolu_02", "toolu_03"]
    failed = by_key["toolu_01"]
    assert failed.type == "command" and failed.metadata["failed"] is True
    assert "E   KeyError: 'Idempotency-Key'" in failed.metadata["errors"]
    assert by_key["toolu_04"].metadata["outcomes"] == ["5 passed in 0.28s"]
    assert by_key["toolu_04"].content.endswith("5 passed in 0.28s")  # short: said once
    assert by_key["toolu_03"].type == "file-write"
    assert by_key["toolu_06"].content == (
        "Q: Which queue should retries use?\nOffered: Redis; SQS\nA: Redis"
    )
    assert by_key["toolu_09"].type == "delegation"
    lessons = [d.observation for d in derived if d.observation.type == "bugfix"]
    assert [lesson.content for lesson in lessons] == [
        "KeyError 'Idempotency-Key' in test_retry_keeps_key: `rebuild()` dropped the headers."
        " Fixed by copying the original headers onto the rebuilt request in"
        " `src/payments/retry.py`.",
        "Flaky backoff timing: the test slept for real. Fixed by patching `time.sleep`.",
    ]


def test_compaction_lessons_read_only_their_section() -> None:
    summary = (
        "1. Primary Request:\n   - not a lesson\n\n"
        "4. Errors and fixes:\n   - **A broke**: fixed by B.\n     More detail on B.\n"
        "   - **C broke**: fixed by D.\n\n5. Problem Solving:\n   - not a lesson either"
    )
    assert compaction_lessons(summary) == [
        "A broke: fixed by B. More detail on B.",
        "C broke: fixed by D.",
    ]
    assert compaction_lessons("no such section") == []


def test_stated_findings_and_decisions_become_lessons() -> None:
    from memlane.capture.observations import stated_lessons

    reply = (
        "Good - I have enough context now. Key findings:\n\n"
        "- **No Igniter installers** exist for credo or dialyxir: they are plain deps\n"
        "- `mix igniter.install` adds them to mix.exs\n"
        "  (even without custom installers)\n\n"
        "Now let me draft the beads."
    )
    assert stated_lessons(reply) == [
        ("lesson", "No Igniter installers exist for credo or dialyxir: they are plain deps"),
        ("lesson", "`mix igniter.install` adds them to mix.exs (even without custom installers)"),
    ]
    notes = "### Important Notes\n1. Hooks cannot block the session\n2. JSON is read on exit 0\nok"
    assert [text for _, text in stated_lessons(notes)] == [
        "Hooks cannot block the session",
        "JSON is read on exit 0",
    ]
    assert stated_lessons("Root cause: the sandbox ran in manual mode for the test.") == [
        ("lesson", "the sandbox ran in manual mode for the test.")
    ]
    assert stated_lessons("**Decision**: keep the tokens in ETS, not in the database.") == [
        ("decision", "keep the tokens in ETS, not in the database.")
    ]
    # Words that only look like a label, and a label with no list, state nothing.
    assert stated_lessons("The important thing: nothing.\nFindings:\n\nthen prose") == []


def test_a_transcript_s_stated_findings_are_observations_once() -> None:
    from memlane.capture.transcript import Turn

    text = "Key findings:\n- The sandbox must be shared for LiveView tests\n- Port 4002 is free"
    turn = Turn(role="assistant", text=text, uuid="u1", blocks=(text,))
    derived = derived_observations([turn, Turn(role="user", text=text, blocks=(text,))])
    assert [(d.key, d.observation.type) for d in derived] == [
        ("stated:u1:0", "lesson"),
        ("stated:u1:1", "lesson"),
    ]
    assert derived[0].observation.tags == ("stated",)


def test_a_label_is_looked_for_only_in_a_short_line_s_last_sentence() -> None:
    from memlane.capture.observations import MAX_LABEL_CHARS, stated_lessons

    # Only a short line's last sentence is matched (each line once, in linear time): a
    # long line is prose, whatever it ends with, and a run of '#' or '*' is no label.
    items = "\n- The sandbox must be shared for LiveView tests"
    assert stated_lessons("We looked around. Key findings:" + items)
    long_line = "x" * MAX_LABEL_CHARS + ". Key findings:"
    assert stated_lessons(long_line + items) == []
    assert stated_lessons("#" * 5000 + items) == []
    assert stated_lessons("*" * 5000 + " findings" + items) == []


def test_a_web_search_unit_lists_the_pages_found_one_per_line() -> None:
    links = [
        {
            "title": "GitHub - jeremyjh/dialyxir: Mix tasks",
            "url": "https://github.com/jeremyjh/dialyxir",
        },
        {"title": "Dialyxir v1.4.7 — Documentation", "url": "https://hexdocs.pm/dialyxir/"},
    ]
    result = (
        'Web search results for query: "dialyxir install"\n\n'
        f"Links: {json.dumps(links)}\n\n"
        "Based on the search results, add dialyxir to your deps."
    )
    args = {"query": "dialyxir install"}
    head, body, _ = describe("WebSearch", args, ToolCall("WebSearch", args, "t1", result), None)
    assert head == "WebSearch dialyxir install"
    assert body.split("\n") == [
        'Web search results for query: "dialyxir install"',
        "- GitHub - jeremyjh/dialyxir: Mix tasks https://github.com/jeremyjh/dialyxir",
        "- Dialyxir v1.4.7 — Documentation https://hexdocs.pm/dialyxir/",
        "Based on the search results, add dialyxir to your deps.",
    ]
    # A line that only looks like the list stays as it was.
    for line in ("Links: [not json", 'Links: [{"title": 1}]', "Links: [1, 2]"):
        assert output.with_links_listed(f"x\n{line}\ny") == f"x\n{line}\ny"
