"""One odd record in a transcript does not stop the rest of it from being stored.

A tool call's id holding a control character or a secret's shape made its
observation's ``source_id`` refused (``Core.plain_name``): the InvalidInput ended
the whole ingest, the
session's offset stayed where it was, and every later Stop failed on the same
record, so nothing said in that session after it was ever stored. Run through the
Stop command ``memlane setup`` writes (``memlane hook stop``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memlane.timeparse import EARLIEST, LATEST

from .conftest import run_memlane

SESSION = "odd-records"


def _user(n: int, text: str, cwd: Path) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": SESSION,
        "cwd": str(cwd),
        "uuid": f"u{n}",
        "timestamp": f"2026-12-01T00:00:{n:02d}Z",
        "message": {"role": "user", "content": text},
    }


def _tool_pair(n: int, tool_id: str, tool_input: str, cwd: Path) -> list[str]:
    use = {
        "type": "assistant",
        "sessionId": SESSION,
        "cwd": str(cwd),
        "uuid": f"a{n}",
        "timestamp": f"2026-12-01T00:00:{n:02d}Z",
        "message": {
            "id": f"m{n}",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}],
        },
    }
    result = {
        "type": "user",
        "sessionId": SESSION,
        "cwd": str(cwd),
        "uuid": f"r{n}",
        "timestamp": f"2026-12-01T00:00:{n:02d}Z",
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": "build finished"}
            ],
        },
    }
    # The input is spliced in as written: a NaN is no JSON json.dumps would write.
    line = json.dumps(use).replace('"input": {}', f'"input": {tool_input}')
    return [line, json.dumps(result)]


def _stop(home: Path, transcript: Path, cwd: Path) -> None:
    payload = {"session_id": SESSION, "cwd": str(cwd), "transcript_path": str(transcript)}
    done = run_memlane(home, "hook", "stop", stdin=json.dumps(payload), cwd=cwd)
    assert done.returncode == 0 and done.stdout == "", done


def _contents(home: Path) -> list[str]:
    with sqlite3.connect(home / "memlane.db") as db:
        return [row[0] for row in db.execute("SELECT content FROM memories")]


@pytest.mark.parametrize(
    ("tool_id", "tool_input"),
    [
        ("toolu_\x07bell", '{"command": "make build"}'),
        ("AKIAIOSFODNN7EXAMPLE", '{"command": "make build"}'),
        ("toolu_" + "x" * 5000, '{"command": "make build"}'),
    ],
    ids=["control character", "secret shape", "5,000 characters"],
)
def test_the_session_goes_on_past_an_odd_tool_call(
    home: Path, tmp_path: Path, tool_id: str, tool_input: str
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    transcript = tmp_path / "session.jsonl"
    lines = [json.dumps(_user(1, "first request about the walrus build", cwd))]
    lines += _tool_pair(2, tool_id, tool_input, cwd)
    transcript.write_text("\n".join(lines) + "\n")
    _stop(home, transcript, cwd)

    with transcript.open("a") as handle:
        handle.write(json.dumps(_user(3, "later request about the narwhal migration", cwd)) + "\n")
    _stop(home, transcript, cwd)

    stored = _contents(home)
    assert any("walrus" in text for text in stored)
    assert any("narwhal" in text for text in stored), stored
    assert any("build finished" in text for text in stored)
    assert not any("AKIAIOSFODNN7EXAMPLE" in text for text in stored)
    with sqlite3.connect(home / "memlane.db") as db:
        offset = db.execute("SELECT transcript_offset FROM sessions WHERE id = ?", (SESSION,))
        assert offset.fetchone()[0] == transcript.stat().st_size
        ids = [row[0] for row in db.execute("SELECT source_id FROM memories")]
    assert all(i is None or (i.isprintable() and len(i) < 200) for i in ids), ids


def test_the_same_odd_call_is_stored_once_from_the_hook_and_the_transcript(
    home: Path, tmp_path: Path
) -> None:
    """PostToolUse and the transcript key the call by the same digest of its id."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    tool_id = "toolu_\x1b[2Jodd"
    event = {
        "session_id": SESSION,
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": tool_id,
        "tool_input": {"command": "make walrus"},
        "tool_response": {"stdout": "walrus built", "stderr": "", "exit_code": 0},
    }
    done = run_memlane(home, "hook", "post-tool-use", stdin=json.dumps(event), cwd=cwd)
    assert done.returncode == 0 and done.stdout == "", done
    transcript = tmp_path / "session.jsonl"
    lines = [json.dumps(_user(1, "build the walrus", cwd))]
    lines += _tool_pair(2, tool_id, '{"command": "make walrus"}', cwd)
    transcript.write_text("\n".join(lines) + "\n")
    _stop(home, transcript, cwd)
    with sqlite3.connect(home / "memlane.db") as db:
        rows = db.execute(
            "SELECT source, source_id FROM memories WHERE kind = 'observation'"
            " AND source_id LIKE ?",
            (f"{SESSION}:tool:%",),
        ).fetchall()
    assert len(rows) == 1, rows
    assert rows[0][0] == "hook"


@pytest.mark.parametrize(
    "stamp",
    ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-12-01T00:00:02"],
    ids=["year 1", "year 9999", "no time zone"],
)
def test_an_odd_timestamp_neither_stops_the_session_nor_spoils_a_backup(
    home: Path, tmp_path: Path, stamp: str
) -> None:
    """A timestamp outside 1970-9000 was stored as is: `backup` then wrote a file
    `restore` refused, and export and sync left the memories out. One without a time
    zone failed every Stop of the session (naive and aware times compared)."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    transcript = tmp_path / "session.jsonl"
    odd = _user(2, "second request about the narwhal migration", cwd)
    odd["timestamp"] = stamp
    lines = [_user(1, "first request about the walrus build", cwd), odd]
    lines.append(_user(3, "third request about the otter cache", cwd))
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _stop(home, transcript, cwd)

    stored = _contents(home)
    for animal in ("walrus", "narwhal", "otter"):
        assert any(animal in text for text in stored), stored
    with sqlite3.connect(home / "memlane.db") as db:
        times = [row[0] for row in db.execute("SELECT created_at FROM memories")]
    assert all(EARLIEST.timestamp() <= t <= LATEST.timestamp() for t in times), times
    backup = tmp_path / "backup.db"
    assert run_memlane(home, "backup", str(backup)).returncode == 0
    restored = run_memlane(home, "restore", "--yes", str(backup))
    assert restored.returncode == 0, restored.stderr


def _numbered(text: str) -> str:
    """``text`` as Claude Code's Read tool shows it: each line after ``     N→``."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(text.split("\n"), 1))


NETRC = "machine api.example.com\n  login me@example.com\n  password walnut@7647@Falcon!\n"
KEY_BODY = [
    "HHEu9/cpm6KFdm37Q+oE4+PRC9QzrS9y2wqsrdhK5RLWYCJUmKko/dGPGa9WbAL+",
    "YewMfuEtB1AxSaeB9q9LX+/ykxOZr+0Oh6VT5jLnfJMxI1KKfVtI/WQ5lJfZ4s+B",
]
CUT_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(KEY_BODY) + "\n... [truncated]"
ECS = (
    '{\n  "environment": [\n    {\n      "name": "DB_PASSWORD",\n'
    '      "value": "Quartz.9024.velvet!"\n    }\n  ]\n}'
)


@pytest.mark.parametrize(
    ("content", "secrets", "name"),
    [
        (NETRC, ["walnut@7647@Falcon!"], "settings.txt"),
        (CUT_KEY, KEY_BODY, "settings.txt"),
        (ECS, ["Quartz.9024.velvet!"], "settings.txt"),
        (CUT_KEY, KEY_BODY, "deploy.env"),
    ],
    ids=["netrc", "private key cut by the output limit", "name/value pair", "dotenv file"],
)
def test_a_read_result_is_filtered_as_it_reads_without_line_numbers(
    home: Path, tmp_path: Path, content: str, secrets: list[str], name: str
) -> None:
    """Filtered with Read's "     N→" numbers, the rules that read a line's start or
    several lines missed these, and the stored unit (numbers removed) held the secret;
    the same text without numbers was masked. A dotenv file's own pass ran on the
    numbered text too: it ate the cut key's BEGIN line (probe s29 F4)."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    transcript = tmp_path / "session.jsonl"
    use = {
        "type": "assistant",
        "sessionId": SESSION,
        "cwd": str(cwd),
        "uuid": "a2",
        "timestamp": "2026-12-01T00:00:02Z",
        "message": {
            "id": "m2",
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_r1", "name": "Read",
                 "input": {"file_path": str(cwd / "config" / name)}}
            ],
        },
    }  # fmt: skip
    result = {
        "type": "user",
        "sessionId": SESSION,
        "cwd": str(cwd),
        "uuid": "r2",
        "timestamp": "2026-12-01T00:00:03Z",
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_r1", "content": _numbered(content)}
            ],
        },
    }
    lines = [_user(1, "show me the settings file", cwd), use, result]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _stop(home, transcript, cwd)
    stored = "\n".join(_contents(home))
    assert name in stored  # the call was captured
    for secret in secrets:
        assert secret[:12] not in stored, stored


def test_the_output_of_a_command_that_prints_a_secret_is_withheld(
    home: Path, tmp_path: Path
) -> None:
    """A Bash call's command and output are filtered apart, so `pass show work/ldap`
    followed by the password alone, which no rule can tell from a word, was stored;
    through the PostToolUse hook too."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    transcript = tmp_path / "session.jsonl"
    lines = [json.dumps(_user(1, "get me the ldap password", cwd))]
    lines += _tool_pair(2, "toolu_pass", '{"command": "pass show work/ldap"}', cwd)
    transcript.write_text(
        "\n".join(lines).replace("build finished", "maple4180Lumen-stored") + "\n"
    )
    _stop(home, transcript, cwd)
    hook = {
        "session_id": SESSION,
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_op",
        "tool_input": {"command": "op item get 'Prod DB' --fields password --reveal"},
        "tool_response": {"stdout": "Quartz-7731-harbor-hooked", "stderr": ""},
    }
    done = run_memlane(home, "hook", "post-tool-use", stdin=json.dumps(hook), cwd=cwd)
    assert done.returncode == 0 and done.stdout == "", done
    stored = "\n".join(_contents(home))
    assert "pass show work/ldap" in stored and "--reveal" in stored  # the calls were kept
    assert "maple4180Lumen" not in stored and "Quartz-7731" not in stored, stored
