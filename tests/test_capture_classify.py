"""PostToolUse classification: every tool family, dropped tools, caps, garbage input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.capture.classify import (
    MAX_FIELD_CHARS,
    MAX_TITLE_CHARS,
    CapturedObservation,
    classify_tool_event,
    repeat_window_seconds,
)
from memlane.models import OBSERVATION_TYPES
from memlane.service import Memory
from tests.conftest import FIXTURES

CWD = "/home/dev/proj"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def classify(
    name: Any, tool_input: Any, response: Any = None, cwd: Any = CWD
) -> CapturedObservation:
    observation = classify_tool_event(name, tool_input, response, cwd)
    assert observation is not None
    assert observation.type in OBSERVATION_TYPES
    assert len(observation.title) <= MAX_TITLE_CHARS and "\n" not in observation.title
    assert len(observation.content) <= MAX_FIELD_CHARS
    assert all(len(f) <= MAX_FIELD_CHARS for f in observation.files)
    return observation


# -- file writes --------------------------------------------------------------------


def test_edit_is_file_write_relative_to_cwd() -> None:
    obs = classify(
        "Edit",
        {"file_path": f"{CWD}/src/app.py", "old_string": "a = 1", "new_string": "a = 2"},
        {"filePath": f"{CWD}/src/app.py", "structuredPatch": []},
    )
    assert (obs.type, obs.title, obs.files) == ("file-write", "Edited src/app.py", ("src/app.py",))
    assert "- a = 1" in obs.content and "+ a = 2" in obs.content


def test_write_outside_cwd_keeps_absolute_path() -> None:
    obs = classify("Write", {"file_path": "/etc/app.conf", "content": "x=1\ny=2"}, None)
    assert obs.title == "Wrote /etc/app.conf"
    assert obs.files == ("/etc/app.conf",)
    assert obs.content.startswith("Wrote /etc/app.conf (2 lines)\nx=1")


def test_multiedit_and_notebook_edit() -> None:
    edits = [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]
    multi = classify("MultiEdit", {"file_path": f"{CWD}/m.py", "edits": edits})
    assert multi.title == "Edited m.py (2 edits)"
    notebook = classify(
        "NotebookEdit",
        {"notebook_path": f"{CWD}/nb.ipynb", "new_source": "print(1)", "cell_id": "c1"},
    )
    assert notebook.type == "file-write" and notebook.title == "Edited notebook nb.ipynb"
    assert notebook.files == ("nb.ipynb",)


def test_huge_write_is_capped() -> None:
    obs = classify("Write", {"file_path": f"{CWD}/big.txt", "content": "z" * 100_000})
    assert len(obs.content) == MAX_FIELD_CHARS and obs.content.endswith("…")


# -- reads ---------------------------------------------------------------------------


def test_read_stores_the_path_only() -> None:
    secret_body = "SECRET FILE CONTENTS"
    obs = classify(
        "Read",
        {"file_path": f"{CWD}/src/a.py", "offset": 10, "limit": 20},
        {"type": "text", "file": {"filePath": f"{CWD}/src/a.py", "content": secret_body}},
    )
    assert (obs.type, obs.title, obs.files) == ("file-read", "Read src/a.py", ("src/a.py",))
    assert secret_body not in obs.content and "from line 10 (20 lines)" in obs.content


def test_grep_and_glob_store_matching_paths() -> None:
    found = [f"{CWD}/lib/a.ex", f"{CWD}/lib/b.ex", "/elsewhere/c.ex"]
    grep = classify(
        "Grep",
        {"pattern": "defmodule", "path": f"{CWD}/lib", "glob": "*.ex"},
        {"mode": "files_with_matches", "filenames": found, "numFiles": 3, "content": "secret"},
    )
    assert grep.type == "file-read"
    assert grep.title == "Searched for defmodule in lib (*.ex)"
    assert grep.files == ("lib/a.ex", "lib/b.ex", "/elsewhere/c.ex")
    assert "secret" not in grep.content and grep.metadata["matches"] == 3
    glob = classify(
        "Glob", {"pattern": "**/*.py"}, {"filenames": [f"{CWD}/x{i}.py" for i in range(50)]}
    )
    assert glob.title == "Globbed **/*.py" and len(glob.files) == 20
    assert classify("LS", {"path": f"{CWD}/src"}).title == "Listed src"


def test_a_search_result_of_the_wrong_shape_names_no_files() -> None:
    """A ``filenames`` that is a string is no list of names (it named each letter)."""
    glob = classify("Glob", {"pattern": "*.ex"}, {"filenames": "abc", "numFiles": 3})
    assert glob.files == ()


def test_a_huge_content_search_is_read_for_files_only_at_its_start() -> None:
    """A content search's output can be megabytes (the hook takes 8 MB): its files are read
    from its first MAX_LISTING_CHARS, not from every line."""
    from memlane.capture.classify import MAX_LISTING_CHARS

    head = "".join(f"{CWD}/lib/m{i}.ex:{i}:defmodule M{i}\n" for i in range(5))
    filler = f"{CWD}/lib/big.ex:1:" + "x" * MAX_LISTING_CHARS + "\n"
    late = f"{CWD}/lib/late.ex:9:defmodule Late\n"
    grep = classify(
        "Grep",
        {"pattern": "defmodule", "output_mode": "content"},
        {"mode": "content", "content": head + filler + late, "numFiles": 0, "filenames": []},
    )
    assert grep.files[:5] == tuple(f"lib/m{i}.ex" for i in range(5))
    assert "lib/late.ex" not in grep.files


@pytest.mark.parametrize(
    ("name", "tool_input", "result", "files", "count"),
    [
        ("Glob", {"pattern": "*.ex"}, f"{CWD}/a.ex\n{CWD}/lib/b.ex", ("a.ex", "lib/b.ex"), 2),
        ("Glob", {"pattern": "*.ex"}, "No files found", (), 0),
        (
            "Glob",
            {"pattern": "**"},
            f"{CWD}/a.ex\n(Results are truncated. Consider using a more specific path or pattern.)",
            ("a.ex",),
            1,
        ),
        ("Grep", {"pattern": "x"}, f"Found 2 files\n{CWD}/a.ex\n{CWD}/b.ex", ("a.ex", "b.ex"), 2),
        ("Grep", {"pattern": "x"}, f"Found 1 file limit: 1, offset: 0\n{CWD}/a.ex", ("a.ex",), 1),
        ("Grep", {"pattern": "x"}, "No files found", (), 0),
        (
            "Grep",
            {"pattern": "port", "output_mode": "content"},
            "config/dev.exs:1:import Config\nconfig/dev.exs-2-\n--\nlib/web.ex:13:  port: 1",
            ("config/dev.exs", "lib/web.ex"),
            2,
        ),
        ("Grep", {"pattern": "port", "output_mode": "content"}, "No matches found", (), 0),
        (
            "Grep",
            {"pattern": "port", "output_mode": "content", "-n": False},
            "config/dev.exs:import Config",
            ("config/dev.exs",),
            1,
        ),
        (
            "Grep",
            {"pattern": "port", "output_mode": "content", "path": f"{CWD}/config/dev.exs"},
            "13:  http: [port: 1100]",
            ("config/dev.exs",),
            1,
        ),
        (
            "Grep",
            {"pattern": "port", "output_mode": "count"},
            "a.ex:3\nb.ex:4\n\nFound 7 total occurrences across 2 files.",
            ("a.ex", "b.ex"),
            2,
        ),
    ],
)
def test_a_searchs_files_are_read_from_the_text_a_transcript_keeps(
    name: str, tool_input: dict[str, Any], result: str, files: tuple[str, ...], count: int
) -> None:
    obs = classify(name, tool_input, result)
    assert (obs.files, obs.metadata["matches"]) == (files, count)
    assert f": {count} file(s)" in obs.content


def test_a_content_search_links_the_files_of_its_lines() -> None:
    # PostToolUse's content search says numFiles 0 and no filenames: its lines name them.
    content = "config/dev.exs:13:  http: [port: 1100]\nlib/web.ex:2:  port"
    response = {"mode": "content", "numFiles": 0, "filenames": [], "content": content}
    obs = classify("Grep", {"pattern": "port", "output_mode": "content"}, response)
    assert (obs.files, obs.metadata["matches"]) == (("config/dev.exs", "lib/web.ex"), 2)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared fixtures absent")
def test_a_transcripts_searches_link_the_files_they_found(memory: Memory) -> None:
    transcript = FIXTURES / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    said: dict[str, int] = {}  # what Claude Code itself counted, beside the text it kept
    for line in transcript.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        result = record.get("toolUseResult")
        content = (record.get("message") or {}).get("content")
        if isinstance(result, dict) and "numFiles" in result and isinstance(content, list):
            lines = [n for n in str(result.get("content", "")).split("\n") if n]
            found = result["numFiles"] or len({n.split(":", 1)[0] for n in lines})
            said[content[0]["tool_use_id"]] = found
    memory.ingest_transcript("s", str(transcript), project="p")
    searches = {
        m.metadata["call"]: m
        for m in memory.list_memories(project="p", kinds=("observation",), limit=500)
        if m.metadata.get("tool") in ("Glob", "Grep")
    }
    assert len(searches) == len(said) == 13
    assert {call: m.metadata["matches"] for call, m in searches.items()} == said
    assert sum(len(m.files) for m in searches.values()) == sum(said.values()) == 23


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared fixtures absent")
def test_a_refused_search_links_no_file(memory: Memory) -> None:
    memory.ingest_transcript("s", str(FIXTURES / "short.jsonl"), project="p")
    [refused] = [
        m
        for m in memory.list_memories(project="p", kinds=("observation",), limit=500)
        if m.metadata.get("tool") == "Glob"
    ]
    assert refused.files == () and refused.metadata["matches"] == 0  # "The user doesn't want…"


# -- commands -----------------------------------------------------------------------


def test_successful_command_keeps_short_output() -> None:
    stdout = "\n".join(f"out {i}" for i in range(40))
    obs = classify(
        "Bash",
        {"command": "ls -la src/app.py", "description": "List files"},
        {"stdout": stdout, "stderr": "", "interrupted": False},
    )
    assert obs.type == "command" and obs.title == "Ran: ls -la src/app.py"
    assert obs.tags == () and obs.metadata["failed"] is False
    assert "out 0" in obs.content and "out 39" in obs.content and "out 20" not in obs.content
    assert "lines omitted" in obs.content
    assert obs.files == ("src/app.py",)


def test_failed_command_as_error_string() -> None:
    response = "Error: Exit code 1\nTraceback (most recent call last):\n  File x\nKeyError: 'id'"
    obs = classify("Bash", {"command": "pytest -q"}, response)
    assert obs.title == "Ran: pytest -q (exit 1)"
    assert obs.tags == ("failed",)
    assert obs.metadata["exit_code"] == 1 and obs.metadata["failed"] is True
    assert "KeyError: 'id'" in obs.content


@pytest.mark.parametrize(
    ("response", "title"),
    [
        ({"stdout": "", "stderr": "boom", "exit_code": 2}, "Ran: make (exit 2)"),
        ({"stdout": "", "stderr": "", "interrupted": True}, "Ran: make (interrupted)"),
        ({"stdout": "", "error": "Exit code 127\nmake: not found"}, "Ran: make (exit 127)"),
        ({"stdout": "", "stderr": "warning: deprecated"}, "Ran: make"),
        ({"stdout": "exit code 3 mentioned in output"}, "Ran: make"),
        ({"is_error": True, "stdout": "broken"}, "Ran: make (failed)"),
    ],
)
def test_command_failure_variants(response: dict[str, Any], title: str) -> None:
    assert classify("Bash", {"command": "make"}, response).title == title


def test_a_background_launch_keeps_its_task_id_not_its_temporary_output_file() -> None:
    launch = (
        "Command running in background with ID: bae407b. Output is being written to:"
        " /tmp/claude-1000/-home-marco-projects-spotter/tasks/bae407b.output"
    )
    for response in (launch, {"stdout": launch, "stderr": ""}):
        obs = classify("Bash", {"command": "mix phx.server"}, response)
        assert "Command running in background with ID: bae407b." in obs.content
        assert "/tmp/claude-1000" not in obs.content and "written to" not in obs.content
    # The same words in what a program printed stay.
    printed = {"stdout": "Output is being written to: build/out.log", "stderr": ""}
    assert "build/out.log" in classify("Bash", {"command": "make"}, printed).content


def test_long_command_title_is_short() -> None:
    obs = classify(
        "Bash", {"command": "python -c '" + "x" * 500 + "'\nsecond line"}, "Error: Exit code 1"
    )
    assert len(obs.title) <= MAX_TITLE_CHARS and obs.title.endswith("(exit 1)")


# -- research, delegation, mcp -----------------------------------------------------------


def test_web_fetch_and_search() -> None:
    fetch = classify(
        "WebFetch",
        {"url": "https://docs.example.com/guide?x=1", "prompt": "How to configure?"},
        {"code": 200, "result": "Set FOO=1 in the config file."},
    )
    assert fetch.type == "research" and fetch.title == "Fetched docs.example.com/guide"
    assert "Set FOO=1" in fetch.content and fetch.metadata["status"] == 200
    results = [{"content": [{"title": "Igniter docs", "url": "https://hexdocs.pm/igniter"}]}]
    search = classify("WebSearch", {"query": "igniter install"}, {"results": results})
    assert search.title == "Searched web: igniter install"
    assert "Igniter docs https://hexdocs.pm/igniter" in search.content
    # A response given as Claude Code's text lists its pages one per line too.
    text = 'Results\nLinks: [{"title": "Credo v1.7.15", "url": "https://hexdocs.pm/credo"}]'
    listed = classify("WebSearch", {"query": "credo"}, text)
    assert "- Credo v1.7.15 https://hexdocs.pm/credo" in listed.content
    assert "Links:" not in listed.content


@pytest.mark.parametrize("name", ["Agent", "Task"])
def test_delegation(name: str) -> None:
    obs = classify(
        name,
        {
            "description": "Research hooks",
            "prompt": "Find the hook contract",
            "subagent_type": "guide",
        },
        {
            "status": "completed",
            "agentId": "a88",
            "content": [{"type": "text", "text": "Use JSON."}],
        },
    )
    assert (obs.type, obs.title, obs.tags) == (
        "delegation",
        "Delegated: Research hooks",
        ("guide",),
    )
    assert "Result: Use JSON." in obs.content and obs.metadata["agentId"] == "a88"


def test_a_delegation_from_a_transcript_leaves_out_the_resume_id_and_usage() -> None:
    # A transcript's tool result holds Claude Code's trailer as a last text block.
    trailer = (
        "agentId: afb92ff (for resuming to continue this agent's work if needed)\n"
        "<usage>total_tokens: 33894\ntool_uses: 9\nduration_ms: 38799</usage>"
    )
    obs = classify(
        "Task",
        {"description": "Draft beads", "prompt": "Draft them", "subagent_type": "Plan"},
        [
            {"type": "text", "text": "Two tasks, the second depends on the first."},
            {"type": "text", "text": trailer},
        ],
    )
    assert obs.content.endswith("Result: Two tasks, the second depends on the first.")
    assert "afb92ff" not in obs.content and "total_tokens" not in obs.content


def test_mcp_tool_use() -> None:
    obs = classify(
        "mcp__github__create_issue",
        {"title": "Bug"},
        {"content": [{"type": "text", "text": "#12"}]},
    )
    assert (obs.type, obs.title) == ("tool-use", "Used github: create_issue")
    assert obs.tags == ("mcp", "github") and "#12" in obs.content


def test_ask_user_question_keeps_answers_and_what_was_offered() -> None:
    question = "Which database?"
    obs = classify(
        "AskUserQuestion",
        {"questions": [{"question": question, "options": []}]},
        {"answers": {question: "SQLite"}},
    )
    assert obs.title == "Asked user: Which database?"
    assert obs.content == "Q: Which database?\nA: SQLite"
    options = [
        {"label": "PostgreSQL (Recommended)", "description": "Shared by\nthe team"},
        {"label": "SQLite"},
        {"label": " ", "description": "no label: left out"},
        "not an option",
    ]
    offered = classify(
        "AskUserQuestion",
        {"questions": [{"question": question, "options": options}]},
        {"answers": {question: "SQLite"}},
    )
    assert offered.content == (
        "Q: Which database?\nOffered: PostgreSQL (Recommended) (Shared by the team); SQLite"
        "\nA: SQLite"
    )


@pytest.mark.parametrize(
    "name",
    [
        "TodoWrite",
        "ExitPlanMode",
        "mcp__sequential-thinking__sequentialthinking",
        "mcp__other__sequentialthinking",
        "mcp__memlane__search",
        "mcp__plugin_memlane_memlane__save",
        "decide",
        "think",
        "BashOutput",
    ],
)
def test_dropped_tools(name: str) -> None:
    assert classify_tool_event(name, {"x": 1}, {"y": 2}, CWD) is None


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("Edit", {}),
        ("Edit", {"file_path": 42}),
        ("Read", "not a dict"),
        ("Bash", {"command": ["ls"]}),
        ("Bash", None),
        ("WebFetch", {"url": None}),
        ("WebSearch", {"query": ""}),
        ("Task", {}),
        ("Grep", {"path": "/x"}),
        (None, {}),
        (42, {}),
        ("", {}),
        ("   ", {}),
    ],
)
def test_unusable_events_give_none(name: Any, tool_input: Any) -> None:
    assert classify_tool_event(name, tool_input, None, CWD) is None


def test_wrong_cwd_type_is_ignored() -> None:
    obs = classify("Read", {"file_path": "/a/b.py"}, None, cwd=["not", "a", "str"])
    assert obs.files == ("/a/b.py",)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=15,
)
tool_names = (
    st.sampled_from(
        [
            "Write",
            "Edit",
            "MultiEdit",
            "NotebookEdit",
            "Read",
            "Grep",
            "Glob",
            "LS",
            "Bash",
            "WebFetch",
            "WebSearch",
            "Agent",
            "Task",
            "mcp__x__y",
            "TodoWrite",
            "AskUserQuestion",
            "Unknown",
        ]
    )
    | json_values
)


@settings(max_examples=400, deadline=None)
@given(
    tool_names,
    json_values
    | st.dictionaries(
        st.sampled_from(
            [
                "file_path",
                "command",
                "url",
                "query",
                "pattern",
                "edits",
                "questions",
                "prompt",
                "description",
                "content",
                "path",
                "offset",
            ]
        ),
        json_values,
        max_size=4,
    ),
    json_values,
    json_values,
)
def test_garbage_never_raises(name: Any, tool_input: Any, response: Any, cwd: Any) -> None:
    obs = classify_tool_event(name, tool_input, response, cwd)
    if obs is not None:
        assert obs.type in OBSERVATION_TYPES
        assert len(obs.title) <= MAX_TITLE_CHARS
        assert len(obs.content) <= MAX_FIELD_CHARS
        json.dumps(obs.metadata)  # storable as JSON


def test_repeat_windows() -> None:
    assert repeat_window_seconds("file-read") == 300
    assert repeat_window_seconds("command") == 60
    assert repeat_window_seconds("research") > repeat_window_seconds("command")
    assert all(repeat_window_seconds(t) > 0 for t in OBSERVATION_TYPES)
    assert repeat_window_seconds("no-such-type") == 60


# Modules that importing classify may add to a bare interpreter (52 today): the
# import's cost is bounded by what it loads, not by a wall-clock figure.
CLASSIFY_IMPORT_MAX_MODULES = 80


def test_classify_import_is_light() -> None:
    code = (
        "import sys; before = set(sys.modules);"
        "import memlane.capture.classify;"
        "print(len(set(sys.modules) - before));"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC},
        check=True,
    ).stdout.split("\n")
    modules = set(out[1].split())
    heavy = {
        "pydantic",
        "numpy",
        "sqlite3",
        "click",
        "asyncio",
        "memlane.capture.transcript",
    }
    assert not modules & heavy
    assert int(out[0]) <= CLASSIFY_IMPORT_MAX_MODULES, out[0]
