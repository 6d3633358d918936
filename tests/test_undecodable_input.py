"""Text UTF-8 cannot hold: a lone UTF-16 surrogate.

JSON can escape one (``"\\ud83d"``: an emoji cut in half) and Python reads an
undecodable byte of a command line or a pipe as one. SQLite and the hashes take
UTF-8, which has no form for it: a prompt carrying one was lost by the prompt hook,
and the CLI, ``import jsonl`` and the Python API ended with a traceback. Now it is
stored (and searched) as U+FFFD.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memlane.errors import NotFound
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env

CUT_EMOJI = "\\ud83d"  # as JSON escapes it: the first half of 😀 alone


def run(home: Path, *args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*MEMLANE_CMD, *args], input=stdin, capture_output=True, env=run_env(home), timeout=120
    )


def stored(home: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(home / "memlane.db") as conn:
        rows = conn.execute("SELECT kind, content FROM memories ORDER BY id").fetchall()
    conn.close()
    return [(str(kind), str(content)) for kind, content in rows]


def test_a_prompt_with_a_cut_emoji_is_stored(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    event = {"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    first = dict(event, prompt=f"the login bug {CUT_EMOJI} comes from the session cookie")
    raw = json.dumps(first).replace("\\\\ud83d", CUT_EMOJI).encode()
    assert CUT_EMOJI.encode() in raw
    done = run(home, "hook", "user-prompt-submit", stdin=raw)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert stored(home) == [("prompt", "the login bug \ufffd comes from the session cookie")]
    assert not (home / "logs" / "hooks.log").exists()


def test_a_tool_output_with_a_cut_emoji_is_captured(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    event = {
        "session_id": "s1",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q", "description": f"run tests {CUT_EMOJI}"},
        "tool_response": {"stdout": f"3 failed, 12 passed {CUT_EMOJI}", "exit_code": 1},
    }
    raw = json.dumps(event).replace("\\\\ud83d", CUT_EMOJI).encode()
    done = run(home, "hook", "post-tool-use", stdin=raw)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    [(kind, content)] = stored(home)
    assert kind == "observation" and "3 failed, 12 passed \ufffd" in content
    assert not (home / "logs" / "hooks.log").exists()


def test_undecodable_bytes_on_the_command_line_and_stdin(home: Path) -> None:
    assert run(home, "save", b"caf\xe9 au lait").returncode == 0
    piped = run(home, "save", "-", stdin=b"latin-1 pipe: na\xefve")
    assert piped.returncode == 0, piped.stderr
    assert stored(home) == [("note", "caf\ufffd au lait"), ("note", "latin-1 pipe: na\ufffdve")]
    found = run(home, "search", b"caf\xe9", "--mode", "keyword", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["content"] for hit in json.loads(found.stdout)] == ["caf\ufffd au lait"]
    for args in (("list", "--project", b"\xff"), ("forget", b"\xff", "--dry-run")):
        done = run(home, *args)
        assert b"Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr


def test_an_import_line_with_a_lone_surrogate(home: Path, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        f'{{"text": "half an emoji {CUT_EMOJI} here", "title": "t{CUT_EMOJI}"}}\n'
        '{"text": "a whole one \\ud83d\\ude00 stays"}\n'
    )
    done = run(home, "import", "jsonl", str(records))
    assert done.returncode == 0, done.stderr
    assert stored(home) == [("note", "half an emoji \ufffd here"), ("note", "a whole one 😀 stays")]


@pytest.mark.parametrize("number", ["9223372036854775808", "999999999999999999999"])
def test_forget_an_id_no_memory_can_have(home: Path, number: str) -> None:
    done = run(home, "forget", "--id", number, "--yes")
    assert done.returncode != 0
    message = f"error: no memory with id {number} (a search shows the ids of memories)"
    assert done.stderr.decode().strip() == message


def test_the_python_api_takes_a_lone_surrogate(memory: Memory) -> None:
    saved = memory.save("a cut \ud83d emoji", project="p")
    assert memory.get(saved.id).content == "a cut \ufffd emoji"
    assert [hit.id for hit in memory.search("cut \ud83d emoji", project="p", mode="keyword")] == [
        saved.id
    ]


def test_a_filter_with_a_lone_surrogate_finds_nothing(memory: Memory) -> None:
    memory.save("kept", project="p", session_id="s1")
    with pytest.raises(NotFound, match="no session"):  # not a crash, nor another session
        memory.delete(session_id="s1\udcff", dry_run=True)
    assert memory.list_memories(project="p\udcff") == []
