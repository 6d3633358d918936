"""Streaming transcript parser and metadata extraction.

Synthetic transcripts in Claude Code's real record shapes are written to
tmp_path; the real transcripts in ../shared/fixtures are parsed completely when
that folder is present (as in CI).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memlane.capture.chunker import chunk_turns
from memlane.capture.metadata import (
    _errors_by_line,
    exit_code_in,
    extract_errors,
    extract_paths,
    extract_tool_names,
    relativize,
)
from memlane.capture.transcript import (
    ParseStats,
    Turn,
    clean_prompt,
    iter_records,
    iter_turns,
    subagent_session_id,
    transcript_source,
    trim_output,
)

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code-transcripts"
BIG = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SESSION = "11111111-2222-3333-4444-555555555555"
CWD = "/home/dev/proj"
# The record keys iter_turns reads.
TURN_KEYS = (
    "type",
    "message",
    "uuid",
    "timestamp",
    "sessionId",
    "cwd",
    "requestId",
    "isMeta",
    "isCompactSummary",
    "isVisibleInTranscriptOnly",
    "isSidechain",
    "agentId",
)


def fixture_files() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(FIXTURES.rglob("*.jsonl"))


needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared fixtures absent")


# -- synthetic transcript builders ------------------------------------------------


def base(
    kind: str, uuid: str, ts: str = "2026-02-10T21:11:56.846Z", **extra: Any
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.1.38",
        "type": kind,
        "uuid": uuid,
        "timestamp": ts,
    }
    record.update(extra)
    return record


def user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return base("user", uuid, message={"role": "user", "content": content}, **extra)


def assistant(uuid: str, message_id: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    message = {"id": message_id, "type": "message", "role": "assistant", "content": list(blocks)}
    return base("assistant", uuid, message=message, requestId="req_" + message_id, **extra)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def result(tool_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    return path


def session_records() -> list[dict[str, Any]]:
    long_output = "\n".join(f"line {i}" for i in range(100))
    return [
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        user("u1", "Fix the failing test in src/app.py please"),
        base("progress", "p1", data={"type": "hook_progress"}),
        assistant("a1", "msg_1", {"type": "thinking", "thinking": "secret plan", "signature": "s"}),
        assistant("a2", "msg_1", text("Let me run the tests.")),
        assistant("a3", "msg_1", tool_use("t1", "Bash", {"command": "pytest -q"})),
        user(
            "r1",
            [
                result(
                    "t1",
                    "Exit code 1\nTraceback (most recent call last):\n  File x\nKeyError: 'k'",
                    True,
                )
            ],
        ),
        assistant("a4", "msg_1", tool_use("t2", "Read", {"file_path": f"{CWD}/src/app.py"})),
        user("r2", [result("t2", [{"type": "text", "text": long_output}])]),
        assistant("a5", "msg_2", text("Fixed it in `src/app.py`.")),
        user("m1", "<local-command-caveat>Caveat</local-command-caveat>", isMeta=True),
        user(
            "c1",
            "This session is being continued from a previous conversation that ran out of"
            " context. The summary below covers the earlier portion of the conversation.\n\n"
            "Summary:\n1. Errors and fixes: KeyError 'k' fixed in src/app.py",
            isCompactSummary=True,
        ),
        base("system", "s1", subtype="compact_boundary", content="Conversation compacted"),
        base("weird-new-type", "w1"),
        user(
            "cmd",
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        ),
        user("i1", [text("[Request interrupted by user]")]),
        user("u2", "<command-name>/review</command-name>\n<command-args>the parser</command-args>"),
        assistant("a6", "msg_3", text("Reviewing.")),
    ]


# -- iter_records -------------------------------------------------------------------


def test_records_offsets_are_line_ends(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", session_records())
    data = path.read_bytes()
    ends = [end for _, end in iter_records(str(path))]
    line_ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    assert ends == line_ends


def test_partial_last_line_is_not_consumed(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", session_records()[:3])
    complete = path.stat().st_size
    line = json.dumps(user("late", "appended later")).encode()
    with path.open("ab") as handle:
        handle.write(line[:25])
    stats = ParseStats()
    records = list(iter_records(str(path), 0, stats))
    assert len(records) == 3
    assert stats.end_offset == complete
    assert stats.corrupt == 0
    with path.open("ab") as handle:
        handle.write(line[25:] + b"\n")
    rest = list(iter_records(str(path), stats.end_offset))
    assert [r["uuid"] for r, _ in rest] == ["late"]


def test_corrupt_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    good = json.dumps(user("ok", "a real prompt here")).encode()
    lines = [
        b"{not json",
        b"\xff\xfe\xfa invalid utf-8",
        b"[1, 2, 3]",
        b"42",
        b"[" * 100_000 + b"]" * 100_000,
        b"",
        b"   ",
        good,
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    stats = ParseStats()
    records = list(iter_records(str(path), 0, stats))
    assert [r["uuid"] for r, _ in records] == ["ok"]
    assert stats.corrupt == 5
    assert stats.records == 1
    assert stats.end_offset == path.stat().st_size


def test_a_line_past_the_record_bound_is_passed_over_unread(tmp_path: Path) -> None:
    from memlane.jsonlines import MAX_LINE_BYTES

    huge = json.dumps(user("huge", "x" * (MAX_LINE_BYTES + 10))).encode()
    good = json.dumps(user("ok", "a real prompt here")).encode()
    path = tmp_path / "t.jsonl"
    path.write_bytes(good + b"\n" + huge + b"\n" + good.replace(b'"ok"', b'"ok2"') + b"\n")
    stats = ParseStats()
    records = list(iter_records(str(path), 0, stats))
    assert [r["uuid"] for r, _ in records] == ["ok", "ok2"]
    assert stats.corrupt == 1
    assert stats.end_offset == path.stat().st_size


def test_an_unfinished_line_past_the_bound_waits_then_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane import jsonlines

    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 4096)
    good = json.dumps(user("ok", "a real prompt here")).encode() + b"\n"
    path = tmp_path / "t.jsonl"
    path.write_bytes(good + b'{"type": "user", "x": "' + b"y" * 10_000)
    stats = ParseStats()
    assert [r["uuid"] for r, _ in iter_records(str(path), 0, stats)] == ["ok"]
    assert stats.end_offset == len(good)  # still being written: resumed here next time
    with path.open("ab") as handle:
        handle.write(b'"}\n' + good.replace(b'"ok"', b'"ok2"'))
    later = ParseStats()
    rest = list(iter_records(str(path), stats.end_offset, later))
    assert [r["uuid"] for r, _ in rest] == ["ok2"]
    assert later.corrupt == 1
    assert later.end_offset == path.stat().st_size


def test_lean_cut_falls_back_on_nested_key(tmp_path: Path) -> None:
    nested = user("n1", [result("t1", "x")])
    nested["message"]["extra"] = {"a": 1, "toolUseResult": {"b": 2}}
    top = user("n2", [result("t2", "y")])
    top["toolUseResult"] = {"originalFile": "z" * 1000}
    top["after"] = "kept?"
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in (nested, top))
    )
    got = [r for r, _ in iter_records(str(path), lean=True)]
    assert got[0] == nested  # nested key: the cut is invalid, the whole line is decoded
    assert "toolUseResult" not in got[1] and "after" not in got[1]
    assert got[1]["message"] == top["message"] and got[1]["uuid"] == "n2"
    assert [r for r, _ in iter_records(str(path))] == [nested, top]


def test_offset_past_end_yields_nothing(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", session_records())
    assert list(iter_records(str(path), path.stat().st_size + 100)) == []


@settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_random_byte_lines_never_raise(tmp_path: Path, lines: list[bytes]) -> None:
    path = tmp_path / "random.jsonl"
    path.write_bytes(b"\n".join(lines))
    stats = ParseStats()
    for _record, end in iter_records(str(path), 0, stats):
        assert 0 < end <= path.stat().st_size
    assert stats.end_offset <= path.stat().st_size
    list(iter_turns(str(path)))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
record_shapes = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "summary", "x"])},
    optional={
        "message": st.fixed_dictionaries(
            {},
            optional={
                "id": json_values,
                "content": json_values
                | st.lists(
                    st.fixed_dictionaries(
                        {
                            "type": st.sampled_from(
                                ["text", "tool_use", "tool_result", "thinking", "image"]
                            )
                        },
                        optional={
                            "text": json_values,
                            "name": json_values,
                            "input": json_values,
                            "id": json_values,
                            "tool_use_id": json_values,
                            "content": json_values,
                            "is_error": json_values,
                        },
                    ),
                    max_size=4,
                ),
            },
        ),
        "isMeta": json_values,
        "isSidechain": json_values,
        "agentId": json_values,
        "sessionId": json_values,
        "timestamp": json_values,
        "cwd": json_values,
        "uuid": json_values,
    },
)


@settings(
    max_examples=80,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(record_shapes, max_size=12))
def test_random_records_never_raise(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    path = write_jsonl(tmp_path / "shapes.jsonl", records)
    turns = list(iter_turns(str(path)))
    for turn in turns:
        assert turn.role in ("user", "assistant")
        assert turn.text.strip()
    chunk_turns(turns)


# -- iter_turns ---------------------------------------------------------------------


def test_turns_of_a_session(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", session_records())
    turns = list(iter_turns(str(path)))
    roles = [t.role for t in turns]
    assert roles == ["user", "assistant", "assistant", "compact", "user", "assistant"]
    first, work, done, compact, review, last = turns
    assert first.text == "Fix the failing test in src/app.py please"
    assert first.files == ("src/app.py",)
    assert first.timestamp == datetime(2026, 2, 10, 21, 11, 56, 846000, tzinfo=UTC)
    assert first.uuid == "u1"
    assert first.session_id == SESSION
    assert not first.is_subagent and first.parent_session_id is None
    # Thinking dropped; the four records of msg_1 and both results are one turn.
    assert "secret plan" not in work.text
    assert work.tool_names == ("Bash", "Read")
    assert work.files == ("src/app.py",)
    assert "exit code 1" in work.errors
    assert "KeyError: 'k'" in work.errors
    assert work.text.startswith(
        "Let me run the tests.\n\n[tool Bash] pytest -q\n\n[error] Exit code 1"
    )
    # Each result follows its own call.
    assert work.text.index("[tool Read] src/app.py") < work.text.index("[result] line 0")
    # Tool output: first 20 and last 5 lines with an elision marker.
    assert "line 19\n… [75 lines omitted] …\nline 95" in work.text
    assert "line 20\n" not in work.text
    assert work.text.endswith("line 99")
    assert done.text == "Fixed it in `src/app.py`."
    # The compaction summary is a turn of its own, Claude Code's framing line dropped.
    summary = "Summary:\n1. Errors and fixes: KeyError 'k' fixed in src/app.py"
    assert compact.text == summary and compact.blocks == (summary,)
    # Meta, system, unknown, /clear and interruptions are skipped.
    assert review.text == "/review the parser"
    assert last.text == "Reviewing."
    assert last.end_offset == path.stat().st_size


def test_turn_offsets_resume_exactly(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", session_records())
    turns = list(iter_turns(str(path)))
    for i, turn in enumerate(turns):
        assert list(iter_turns(str(path), turn.end_offset)) == turns[i + 1 :]


def test_live_append_resumes_where_it_stopped(tmp_path: Path) -> None:
    records = session_records()
    full = write_jsonl(tmp_path / "full.jsonl", records)
    expected = list(iter_turns(str(full)))
    data = full.read_bytes()
    live = tmp_path / "live.jsonl"
    # Cut in the middle of the line of record u2 (a turn boundary).
    cut = data.index(b'"uuid": "u2"')
    live.write_bytes(data[:cut])
    stats = ParseStats()
    got = list(iter_turns(str(live), 0, stats))
    assert stats.end_offset < cut
    with live.open("ab") as handle:
        handle.write(data[cut:])
    got += list(iter_turns(str(live), stats.end_offset))
    assert got == expected


def test_orphan_tool_result_becomes_assistant_turn(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [user("r", [result("t9", "done: 3 files")])])
    turns = list(iter_turns(str(path)))
    assert [(t.role, t.text) for t in turns] == [("assistant", "[result] done: 3 files")]


def test_messages_with_other_ids_are_separate_turns(tmp_path: Path) -> None:
    records = [
        assistant("a1", "msg_1", text("one")),
        assistant("a2", "msg_2", text("two")),
        assistant("a3", "msg_2", text("three")),
    ]
    path = write_jsonl(tmp_path / "t.jsonl", records)
    assert [t.text for t in iter_turns(str(path))] == ["one", "two\n\nthree"]


def test_task_notification_and_system_reminders(tmp_path: Path) -> None:
    note = (
        "<task-notification>\n<task-id>b0</task-id>\n<status>completed</status>\n"
        '<summary>Background command "tests" completed (exit code 0)</summary>\n'
        "</task-notification>"
    )
    assert clean_prompt(note) == ""  # the harness, not the user
    assert clean_prompt("<system-reminder>be nice</system-reminder>\nhello there") == "hello there"
    assert clean_prompt("<local-command-stdout>ok</local-command-stdout>") == ""
    assert clean_prompt("[Request interrupted by user for tool use]") == ""


def test_subagent_transcript_links_parent(tmp_path: Path) -> None:
    folder = tmp_path / SESSION / "subagents"
    folder.mkdir(parents=True)
    records = [
        user("s1", "Research the hook contract", isSidechain=True, agentId="a881341"),
        assistant("s2", "msg_s", text("Here it is."), isSidechain=True, agentId="a881341"),
    ]
    path = write_jsonl(folder / "agent-a881341.jsonl", records)
    source = transcript_source(str(path))
    assert source.is_subagent and source.agent_id == "a881341"
    assert source.parent_session_id == SESSION
    turns = list(iter_turns(str(path)))
    assert len(turns) == 2
    assert all(t.is_subagent and t.agent_id == "a881341" for t in turns)
    assert turns[0].parent_session_id == SESSION
    assert subagent_session_id(SESSION, "a881341") == f"{SESSION}:agent-a881341"
    # Detected from the records alone too (an older layout with no subagents/ folder).
    flat = write_jsonl(tmp_path / "flat.jsonl", records)
    assert all(t.is_subagent for t in iter_turns(str(flat)))
    assert not transcript_source(str(flat)).is_subagent


def test_lone_surrogates_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    line = json.dumps(user("u", "emoji cut \ud83d here"), ensure_ascii=True)
    path.write_text(line + "\n")
    (turn,) = iter_turns(str(path))
    turn.text.encode("utf-8")  # storable
    assert turn.text.startswith("emoji cut ")


def test_trim_output_keeps_short_output_whole() -> None:
    assert trim_output("a\nb\nc") == "a\nb\nc"
    trimmed = trim_output("\n".join(str(i) for i in range(26)))
    assert trimmed.split("\n")[20] == "… [1 lines omitted] …"
    assert len(trim_output("x" * 5000)) < 500


# -- real fixtures ----------------------------------------------------------------------


@needs_fixtures
@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_fixture_parses_completely(path: Path) -> None:
    stats = ParseStats()
    turns = list(iter_turns(str(path), 0, stats))
    lines = path.read_bytes().count(b"\n")
    assert stats.records + stats.skipped == lines
    assert stats.corrupt == 0
    assert stats.end_offset == path.stat().st_size
    assert turns, "every fixture has at least one turn"
    assert all(isinstance(t, Turn) and t.text.strip() for t in turns)
    chunks = chunk_turns(turns)
    assert chunks and all(c.token_estimate <= 512 for c in chunks)
    if "subagents" in path.parts:
        assert all(t.is_subagent and t.parent_session_id for t in turns)


@needs_fixtures
@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_lean_records_lose_nothing_turns_need(path: Path) -> None:
    def turn_records(lean: bool) -> list[tuple[dict[str, Any], int]]:
        return [
            (r, end)
            for r, end in iter_records(str(path), lean=lean)
            if r.get("type") in ("user", "assistant")
        ]

    def needed(records: list[tuple[dict[str, Any], int]]) -> list[tuple[dict[str, Any], int]]:
        return [({k: r[k] for k in TURN_KEYS if k in r}, end) for r, end in records]

    lean = turn_records(lean=True)
    assert needed(lean) == needed(turn_records(lean=False))
    assert not any("toolUseResult" in r for r, _ in lean)


@needs_fixtures
def test_big_fixture_counts() -> None:
    path = FIXTURES / BIG
    stats = ParseStats()
    turns = list(iter_turns(str(path), 0, stats))
    assert stats.records + stats.skipped == 1863
    assert stats.records == 496  # user and assistant lines (and 5 agent_progress) decoded
    users = [t for t in turns if t.role == "user"]
    assert users[0].text == "Implement spotter-gqc"
    # The compaction summary is not a user turn, and its framing line is gone.
    assert not any(t.text.startswith("This session is being continued") for t in turns)
    (compact,) = [t for t in turns if t.role == "compact"]
    assert "4. Errors and fixes:" in compact.text
    assert "lazy_html" in compact.text
    assert any("exit code 128" in t.errors for t in turns)
    assert any("Task" in t.tool_names for t in turns)
    assert len(chunk_turns(turns)) >= 40


@needs_fixtures
def test_big_fixture_resumes_from_any_offset() -> None:
    path = FIXTURES / BIG
    records = list(iter_records(str(path)))
    for i in range(0, len(records), len(records) // 9):
        offset = records[i][1]
        assert list(iter_records(str(path), offset)) == records[i + 1 :]
    turns = list(iter_turns(str(path)))
    for i in range(0, len(turns), len(turns) // 7):
        assert list(iter_turns(str(path), turns[i].end_offset)) == turns[i + 1 :]


@needs_fixtures
def test_fixture_grown_in_pieces_gives_same_records(tmp_path: Path) -> None:
    data = (FIXTURES / "subagent.jsonl").read_bytes()
    live = tmp_path / "live.jsonl"
    live.write_bytes(b"")
    got: list[dict[str, Any]] = []
    offset = 0
    for cut in (1000, 5001, 77777, 150000, len(data)):  # mostly mid-line cuts
        live.write_bytes(data[:cut])
        stats = ParseStats()
        got.extend(r for r, _ in iter_records(str(live), offset, stats))
        offset = stats.end_offset
    assert got == [json.loads(line) for line in data.splitlines()]


# -- metadata -------------------------------------------------------------------------


def test_extract_paths() -> None:
    sample = (
        "Edit src/memlane/app.py:12 and ./tests/test_x.py, see https://x.org/a/b.html; "
        "also README and Makefile, config.toml. Version 2.1.38 e.g. and/or foo."
    )
    assert extract_paths(sample) == (
        "src/memlane/app.py",
        "./tests/test_x.py",
        "README",
        "Makefile",
        "config.toml",
    )
    assert extract_paths("") == ()
    assert extract_paths("/abs/dir/file.rs.") == ("/abs/dir/file.rs",)


def test_relativize() -> None:
    assert relativize("/home/dev/proj/src/a.py", "/home/dev/proj") == "src/a.py"
    assert relativize("/home/dev/proj", "/home/dev/proj/") == "."
    assert relativize("/home/dev/project2/a.py", "/home/dev/proj") == "/home/dev/project2/a.py"
    assert relativize("src/a.py", "/home/dev/proj") == "src/a.py"
    assert relativize("/x/a.py", None) == "/x/a.py"


def test_extract_errors() -> None:
    output = (
        "collected 3 items\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1, in <module>\n'
        "    main()\n"
        "ValueError: bad value\n"
        "error: linker failed\n"
        "fatal: not a git repository\n"
        "Error: Exit code 2\n"
        "exit status 0\n"
        "everything else is fine\n"
    )
    assert extract_errors(output) == (
        "ValueError: bad value",
        "error: linker failed",
        "fatal: not a git repository",
        "exit code 2",
    )
    assert extract_errors("all good\nexit code 0") == ()
    assert len(extract_errors("\n".join(f"error: e{i}" for i in range(50)))) == 10
    assert exit_code_in("Exit code 137\nKilled") == 137
    assert exit_code_in("no code") is None


def test_extract_tool_names() -> None:
    assert extract_tool_names(
        "[tool Bash] ls\n[tool Read] a.py\ncalled mcp__github__create_issue"
    ) == (
        "Bash",
        "Read",
        "mcp__github__create_issue",
    )


error_text = st.lists(
    st.sampled_from(
        [
            "ok",
            "",
            "  ValueError: bad",
            "error: x",
            "Error: Exit code 2",
            "exit status 0",
            "fatal: no",
            "** (Mix) failed",
            "npm ERR! code 1",
            "exit code 1 and error: both",
            "\t",
            "\r",
            "exit code\n5",
            "x\u2028error: y",
        ]
    )
    | st.text(max_size=30),
    max_size=30,
).map("\n".join)


@settings(max_examples=200)
@given(error_text)
def test_fast_error_scan_matches_line_by_line(text: str) -> None:
    if "Traceback (most recent call last)" not in text:
        assert extract_errors(text) == _errors_by_line(text, 10)


def _reference_loads(data: bytes) -> dict[str, Any] | None:
    """Line decoding as first written, with json.loads; a lone surrogate, which UTF-8
    cannot store, as U+FFFD."""
    try:
        record = json.loads(data.decode("utf-8").lstrip("\ufeff"))
    except (ValueError, RecursionError):
        return None
    return _without_lone_surrogates(record) if isinstance(record, dict) else None


def _without_lone_surrogates(value: Any) -> Any:
    # json joins a valid pair into one character: a surrogate left is a lone one.
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in value)
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        json_values.map(lambda v: json.dumps(v).encode()),
        st.tuples(
            st.sampled_from(["", " ", "\t", "\ufeff", "\n", "\x0c"]),
            json_values.map(json.dumps),
            st.sampled_from(["", " ", "\r\n", " x", "}", "\u00a0"]),
        ).map(lambda parts: "".join(parts).encode()),
        st.binary(max_size=40),
        st.sampled_from([b"", b" ", b"{", b"[1,", b'{"a": NaN}', b"\xff{}", b"[" * 5000]),
    )
)
# Where orjson (the fast path) and json differ, json's answer is kept.
@example(b'{"n": 123456789012345678901234567890}')  # beyond 64 bits: orjson gives a float
@example(b'{"n": -9223372036854775809}')
@example(b'{"n": [18446744073709551615, 1e400, 0.1000000000000000055511151231257827]}')
@example(b'\xef\xbb\xbf{"bom": 1}')
@example(b'{"nan": NaN, "inf": -Infinity}')
@example(b'{"lone": "\\ud800 \\udfff"}')
@example(b'{"a": 1, "a": 2}')
def test_line_decoding_matches_json_loads(data: bytes) -> None:
    from memlane.capture.transcript import _loads

    assert _loads(data) == _reference_loads(data)


@pytest.mark.parametrize("form", ["user", "system"])
def test_local_command_output_is_a_turn_in_either_record_form(tmp_path: Path, form: str) -> None:
    """What a local slash command printed is a ``local`` turn, named by its command, both
    when Claude Code writes it as user records (older versions) and as ``system`` records
    with subtype ``local_command`` (2.1 and later); ANSI codes are left out."""
    command = (
        "<command-name>/mcp</command-name>\n            <command-message>mcp</command-message>\n"
        "            <command-args></command-args>"
    )
    stdout = "<local-command-stdout>Reconnected to \x1b[1mtidewave\x1b[22m.</local-command-stdout>"

    def record(uuid: str, content: str) -> dict[str, Any]:
        if form == "user":
            return user(uuid, content)
        return base("system", uuid, subtype="local_command", content=content, level="info")

    records = [
        user("u1", "Start the phoenix server"),
        assistant("a1", "msg_1", text("Started.")),
        record("c1", command),
        record("c2", stdout),
        user("u2", "Now check the routes"),
    ]
    path = write_jsonl(tmp_path / "local.jsonl", records)
    turns = list(iter_turns(str(path)))
    assert [t.role for t in turns] == ["user", "assistant", "local", "user"]
    assert turns[2].text == "/mcp: Reconnected to tidewave."
    # Resumed between the command's record and its output's, the output is not named
    # after a command the parse did not see.
    after_command = sum(len(line) for line in path.read_bytes().splitlines(True)[:3])
    resumed = [(t.role, t.text) for t in iter_turns(str(path), after_command)]
    assert resumed == [("local", "Reconnected to tidewave."), ("user", "Now check the routes")]


def test_a_line_long_only_by_its_edited_file_copy_keeps_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane import jsonlines

    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 4096)
    edited = user("e1", [result("t1", "The file lib/big.ex has been updated.")])
    edited["toolUseResult"] = {"originalFile": "z" * 20_000}
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(edited, separators=(",", ":")).encode() + b"\n")
    stats = ParseStats()
    lean = [r for r, _ in iter_records(str(path), 0, stats, lean=True)]
    assert [r["uuid"] for r in lean] == ["e1"] and "toolUseResult" not in lean[0]
    assert lean[0]["message"] == edited["message"]
    assert stats.corrupt == 0 and stats.end_offset == path.stat().st_size
    whole = ParseStats()
    assert list(iter_records(str(path), 0, whole)) == []  # a whole record is too long
    assert whole.corrupt == 1
