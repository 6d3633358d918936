"""A background command's output unit names the command (``memlane.capture.launches``).

A ``Bash`` call run in the background answers only "Command running in background with
ID: X"; its output comes from a ``TaskOutput`` (or ``BashOutput``) call or a ``tail`` of
``tasks/X.output``. Their units open with ``Output of $ <command> (<description>)``,
the same rows whether the transcript is ingested whole, in batches, in two Stop calls
split between the launch and its output, or with the prepare helper; the command is the
privacy-filtered one; a task whose launch is nowhere keeps "Output of background task X".
Real SQLite files through the public API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlane.capture import helper, pipeline
from memlane.capture.launches import launched_task, read_task
from memlane.capture.transcript import ToolCall
from memlane.config import Settings
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.test_bulk_write import rows
from tests.test_prepare_helper import (  # noqa: F401  (fixtures)
    helped,
    idle,
    prepare_helper,
    settings_for,
)

COMMAND = "mix test test/app/resources_test.exs test/app/renderer_test.exs 2>&1"
ABOUT = "Run resource and renderer tests"
TITLE = f"Output of $ {COMMAND} ({ABOUT})"
OUTPUT_FILE = "/tmp/claude-1000/-work-app/tasks/bd0afab.output"
PASSWORD = "Zq8-vault-Kp2-Lm9"
AWS_KEY = "AKIAABCDEFGHIJKLMNOP"


class Transcript:
    """A Claude Code transcript written record by record (one record a line)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def _add(self, role: str, content: Any) -> None:
        n = len(self.lines)
        stamp = f"2026-02-11T20:{n // 60 % 60:02d}:{n % 60:02d}Z"
        message = {"role": role, "content": content}
        if role == "assistant":
            message["id"] = f"msg{n}"
        record = {"type": role, "sessionId": "s1", "cwd": "/work/app", "timestamp": stamp}
        self.lines.append(json.dumps({**record, "message": message}))

    def prompt(self, text: str) -> Transcript:
        self._add("user", text)
        return self

    def call(self, call_id: str, name: str, args: dict[str, Any], result: str) -> Transcript:
        self._add("assistant", [{"type": "tool_use", "id": call_id, "name": name, "input": args}])
        block = {"type": "tool_result", "tool_use_id": call_id, "content": result}
        self._add("user", [block])
        return self

    def launch(self, call_id: str, task: str, command: str = COMMAND) -> Transcript:
        args = {"command": command, "description": ABOUT, "run_in_background": True}
        path = OUTPUT_FILE.replace("bd0afab", task)
        said = f"Command running in background with ID: {task}. Output is being written to: {path}"
        return self.call(call_id, "Bash", args, said)

    def write(self, path: Path, upto: int | None = None) -> Path:
        path.write_text("".join(line + "\n" for line in self.lines[:upto]), encoding="utf-8")
        return path


def session() -> Transcript:
    """A prompt, a background launch, a tail of its file, then TaskOutput and BashOutput."""
    done = "<retrieval_status>success</retrieval_status>\n<status>completed</status>\n<output>\n"
    return (
        Transcript()
        .prompt("Run only the resource and renderer test files")
        .launch("toolu_launch", "bd0afab")
        .call(
            "toolu_tail",
            "Bash",
            {"command": f"tail -30 {OUTPUT_FILE}", "description": "Check test results"},
            "==> mime\nCompiling 1 file (.ex)",
        )
        .call(
            "toolu_wait",
            "TaskOutput",
            {"task_id": "bd0afab", "block": True, "timeout": 120000},
            done + "Finished in 0.4 seconds\n43 tests, 0 failures\n</output>",
        )
        .call("toolu_old", "BashOutput", {"bash_id": "bd0afab"}, "43 tests, 0 failures")
        .call("toolu_lost", "TaskOutput", {"task_id": "b999999"}, "3 tests, 1 failure")
    )


def stored(memory: Memory) -> list[tuple[Any, ...]]:
    """Every stored field but the id (a batch stores its observations after its units)."""
    return sorted(row[1:] for row in rows(memory))


def titles(memory: Memory) -> list[str]:
    found = memory.store._query(  # type: ignore[attr-defined]
        "SELECT title FROM memories WHERE kind = 'turn' AND type = 'tool' ORDER BY id"
    )
    return [row[0] for row in found]


def texts(memory: Memory, tool: str) -> list[str]:
    found = memory.store._query(  # type: ignore[attr-defined]
        "SELECT content FROM memories WHERE kind = 'turn' AND tags LIKE ? ORDER BY id",
        (f'%"{tool}"%',),
    )
    return [row[0] for row in found]


def ingest_whole(settings: Settings, tmp_path: Path, lines: Transcript, **kw: Any) -> Memory:
    path = lines.write(tmp_path / "whole.jsonl")
    memory = open_memory(str(tmp_path / f"whole-{len(kw)}.db"), settings=settings)
    pipeline.ingest_transcript(memory.core, "s1", str(path), project="p", **kw)
    return memory


def ingest_in_two(settings: Settings, tmp_path: Path, lines: Transcript, upto: int) -> Memory:
    """Two Stop calls: the first ends after the launch's result, the second reads the rest."""
    path = lines.write(tmp_path / "grown.jsonl", upto)
    memory = open_memory(str(tmp_path / "in-two.db"), settings=settings)
    first = memory.ingest_transcript("s1", str(path), project="p", summarize=False)  # as Stop
    lines.write(path)
    second = memory.ingest_transcript("s1", str(path), project="p", summarize=False)
    assert second.start_offset == first.end_offset > 0
    return memory


def test_the_output_of_a_background_command_names_the_command(
    memory: Memory, tmp_path: Path
) -> None:
    path = session().write(tmp_path / "t.jsonl")
    memory.ingest_transcript("s1", str(path), project="p")
    assert titles(memory) == [
        one_line_title(f"$ {COMMAND}"),
        one_line_title(TITLE),  # the tail of its output file
        one_line_title(TITLE),  # TaskOutput
        one_line_title(TITLE),  # BashOutput (older versions)
        "Output of background task b999999",  # its launch is nowhere: as before
    ]
    tail = texts(memory, "Bash")[1]
    task_output, lost = texts(memory, "TaskOutput")
    assert tail.split("\n")[:3] == [TITLE, f"$ tail -30 {OUTPUT_FILE}", "(Check test results)"]
    assert task_output.startswith(TITLE + "\n") and "43 tests, 0 failures" in task_output
    assert lost.startswith("Output of background task b999999\n")
    # A search for the command's words finds the unit that holds the result.
    found = memory.search("renderer tests", project="p", mode="keyword", kinds=["turn"])
    assert [hit for hit in found if "43 tests, 0 failures" in hit.content]


def one_line_title(head: str) -> str:
    from memlane.capture.units import TITLE_CHARS
    from memlane.text import one_line

    return one_line(head, TITLE_CHARS)


def test_the_same_rows_whole_in_batches_and_in_two_stop_calls(
    settings: Settings, tmp_path: Path
) -> None:
    lines = session()
    whole = ingest_whole(settings, tmp_path, lines)
    batched = ingest_whole(settings, tmp_path, lines, batch_turns=1)
    # The first Stop ends right after the launch's result: the output is in the second.
    in_two = ingest_in_two(settings, tmp_path, lines, upto=3)
    try:
        assert titles(whole).count(one_line_title(TITLE)) == 3
        assert stored(batched) == stored(whole)
        assert stored(in_two) == stored(whole)
    finally:
        for memory in (whole, batched, in_two):
            memory.close()


def test_a_launch_before_many_other_records_is_found_by_a_later_stop(
    settings: Settings, tmp_path: Path
) -> None:
    lines = Transcript().prompt("Start the slow suite").launch("toolu_launch", "bd0afab")
    for n in range(40):  # other calls mention other tasks and the id in prose
        lines.launch(f"toolu_other{n}", f"b{n:06d}", command=f"sleep {n}")
        lines.prompt(f"is bd0afab done? ID: bd0afab, step {n}")
    lines.call("toolu_wait", "TaskOutput", {"task_id": "bd0afab"}, "43 tests, 0 failures")
    whole = ingest_whole(settings, tmp_path, lines)
    in_two = ingest_in_two(settings, tmp_path, lines, upto=len(lines.lines) - 2)
    try:
        assert titles(in_two)[-1] == one_line_title(TITLE)
        assert stored(in_two) == stored(whole)
    finally:
        whole.close()
        in_two.close()


def test_the_command_named_is_the_filtered_one(settings: Settings, tmp_path: Path) -> None:
    command = f"AWS_ACCESS_KEY_ID={AWS_KEY} sshpass -p '{PASSWORD}' ssh deploy@web1 make test"
    lines = (
        Transcript()
        .prompt("Run the remote tests")
        .launch("toolu_launch", "bd0afab", command=command)
        .call("toolu_wait", "TaskOutput", {"task_id": "bd0afab"}, "12 tests, 0 failures")
    )
    whole = ingest_whole(settings, tmp_path, lines)
    in_two = ingest_in_two(settings, tmp_path, lines, upto=3)  # read back from the file
    try:
        for memory in (whole, in_two):
            everything = json.dumps(rows(memory))
            assert PASSWORD not in everything and AWS_KEY not in everything
            launch, output = texts(memory, "Bash") + texts(memory, "TaskOutput")
            shown = launch.split("\n")[0]  # "$ <the command, filtered>"
            assert "[REDACTED" in shown and "ssh deploy@web1 make test" in shown
            assert output.startswith(f"Output of {shown} ({ABOUT})\n")
        assert stored(in_two) == stored(whole)
    finally:
        whole.close()
        in_two.close()


def test_what_a_background_command_revealed_is_withheld_where_it_is_read(
    settings: Settings, tmp_path: Path
) -> None:
    """``pass show`` in the background: its output came back through TaskOutput (or a
    tail of its file), whose own input names no revealing command, and was stored."""
    secret = "harbor-Orbit-7741!"
    lines = (
        Transcript()
        .prompt("get the db password")
        .launch("toolu_launch", "bd0afab", command="pass show prod/db")
        .call("toolu_wait", "TaskOutput", {"task_id": "bd0afab"}, f"<output>\n{secret}\n</output>")
        .call("toolu_old", "BashOutput", {"bash_id": "bd0afab"}, secret)
        .call("toolu_tail", "Bash", {"command": f"tail -3 {OUTPUT_FILE}"}, secret)
    )
    whole = ingest_whole(settings, tmp_path, lines)
    in_two = ingest_in_two(settings, tmp_path, lines, upto=3)
    try:
        for memory in (whole, in_two):
            assert secret not in json.dumps(rows(memory))
            assert texts(memory, "Bash")[-1].startswith("Output of $ pass show prod/db")
            assert all("pass show prod/db" in text for text in texts(memory, "TaskOutput"))
    finally:
        whole.close()
        in_two.close()


def test_a_read_of_a_revealing_background_commands_file_is_withheld(
    settings: Settings, tmp_path: Path
) -> None:
    """A Read of the output file was no read of the task: its unit held the secret."""
    secret = "harbor-Orbit-7741!"
    lines = (
        Transcript()
        .prompt("get the db password")
        .launch("toolu_launch", "bd0afab", command="pass show prod/db")
        .call("toolu_read", "Read", {"file_path": OUTPUT_FILE}, f"     1→{secret}")
    )
    memory = ingest_whole(settings, tmp_path, lines)
    try:
        assert secret not in json.dumps(rows(memory))
    finally:
        memory.close()


def test_a_background_dotenv_dump_is_masked_where_it_is_read(
    settings: Settings, tmp_path: Path
) -> None:
    """`cat .env` run in the foreground had its values masked; in the background, the
    TaskOutput that read it back stored them."""
    value = "whsec-harbor-Orbit-7741"
    lines = (
        Transcript()
        .prompt("show the env")
        .launch("toolu_launch", "bd0afab", command="cat .env")
        .call("toolu_wait", "TaskOutput", {"task_id": "bd0afab"}, f"STRIPE_SIGNING={value}\n")
    )
    memory = ingest_whole(settings, tmp_path, lines)
    try:
        assert value not in json.dumps(rows(memory))
        assert "STRIPE_SIGNING=" in texts(memory, "TaskOutput")[0]
    finally:
        memory.close()


def test_the_hook_records_nothing_for_a_read_of_a_task_output_file(home: Path) -> None:
    """The PostToolUse hook cannot know what a background task ran: a `tail` of its
    output file (a `pass show` maybe) is neither stored nor spooled; the transcript's
    unit, with the launch named, is the call's record."""
    from tests.conftest import run_memlane

    payload = {
        "session_id": "s1",
        "cwd": str(home),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"tail -3 {OUTPUT_FILE}"},
        "tool_response": {"stdout": "harbor-Orbit-7741!", "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_tail",
    }
    test_run = {
        **payload,
        "tool_input": {"command": "mix test"},
        "tool_response": {"stdout": "43 tests, 0 failures", "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_test",
    }
    for call in (test_run, payload):
        done = run_memlane(home, "hook", "post-tool-use", stdin=json.dumps(call))
        assert done.returncode == 0 and not done.stdout, done.stderr
    every_file = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"43 tests, 0 failures" in every_file  # this hook stores what it records
    every_file = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"harbor-Orbit" not in every_file  # the database, its WAL, any spool file


def test_the_prepare_helper_names_the_launch_of_the_other_half(
    settings: Settings,
    helped: Settings,  # noqa: F811
    tmp_path: Path,
    prepare_helper: helper.PrepareHelper,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = Transcript().prompt("Run the tests").launch("toolu_launch", "bd0afab")
    for n in range(30):
        lines.prompt(f"meanwhile, look at worker {n}: " + "the retry queue stalls. " * 20)
    lines.call("toolu_wait", "TaskOutput", {"task_id": "bd0afab"}, "43 tests, 0 failures")
    path = lines.write(tmp_path / "t.jsonl")
    monkeypatch.setattr(pipeline, "HELPER_MIN_BYTES", 1)  # this small batch is shared too
    by_helper = open_memory(settings=helped)
    alone = open_memory(settings=settings_for(settings, tmp_path, "alone"))
    try:
        by_helper.ingest_transcript("s1", str(path), project="p")
        assert prepare_helper.requests == 1  # the TaskOutput was the helper's
        helper.stop()
        alone.ingest_transcript("s1", str(path), project="p")
        assert titles(by_helper)[-1] == one_line_title(TITLE)
        assert stored(by_helper) == stored(alone)
    finally:
        by_helper.close()
        alone.close()


@pytest.mark.parametrize(
    "said",
    [
        "Command running in background with ID: b7x. Output is being written to: /tmp/t/b7x.output",
        "Command was manually backgrounded by user with ID: b7x. Output is being written to: …",
        "Command did not complete within its 120s timeout and was moved to the background"
        " (ID: b7x). Output is being written to: …",
    ],
)
def test_each_way_claude_code_says_a_command_went_to_the_background(said: str) -> None:
    call = ToolCall("Bash", {"command": "make test"}, "toolu_1", said, answered=True)
    assert launched_task(call) == "b7x"


def test_what_reads_a_task_output_and_what_does_not() -> None:
    def read(name: str, args: dict[str, Any]) -> str:
        return read_task(ToolCall(name, args, "toolu_2", "", answered=True))

    assert read("TaskOutput", {"task_id": "b7x", "block": True}) == "b7x"
    assert read("BashOutput", {"shell_id": "bash_3"}) == "bash_3"
    assert read("Bash", {"command": "tail -5 C:\\Temp\\claude\\p\\tasks\\b7x.output"}) == "b7x"
    assert read("Bash", {"command": "cat build.output"}) == ""
    assert read("Read", {"file_path": "/tmp/tasks/b7x.output"}) == "b7x"
    assert read("Read", {"file_path": "/tmp/build.output"}) == ""
    said = "Command failed: exit 1 (the background ID: b7x was not started)"
    assert launched_task(ToolCall("Bash", {}, "t", "Exit code 1\n" + said)) == ""
