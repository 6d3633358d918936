"""Stored text printed on a terminal: shown, never acted on (escape sequences, markup)."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
from pathlib import Path

from memlane.cli.terminal import printable
from tests.conftest import MEMLANE_CMD, run_env, run_memlane

TITLE = "\x1b]0;owned\x07"  # sets the terminal window's title
CLIPBOARD = "\x1b]52;c;ZWNobyBvd25lZA==\x07"  # writes the clipboard (OSC 52)
CLEAR = "\x1b[2J"  # clears the screen
ASK = "\x1b[6n"  # the terminal answers on the input, as if typed
RLO = "\u202e"  # shows the rest of the line reversed
HOSTILE = f"deploy notes {TITLE}{CLIPBOARD}{CLEAR}{ASK} then {RLO}txt.exe"


def on_terminal(home: Path, *args: str) -> bytes:
    """What ``memlane ARGS`` writes to stdout when stdout is a terminal."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*MEMLANE_CMD, *args],
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**run_env(home), "COLUMNS": "200"},
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        assert done.returncode == 0, done.stderr
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the writer's side is closed
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


def imported(home: Path, tmp_path: Path) -> None:
    """The hostile memory, as a database an earlier memlane wrote holds it: the write path
    now removes C0 controls (memlane.text.without_controls), so it is put back by SQL."""
    records = tmp_path / "records.jsonl"
    title = f"notes [link=https://example.invalid]x[/link] {TITLE}"
    record = {"text": HOSTILE, "project": "ops", "title": title}
    records.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert run_memlane(home, "import", "jsonl", str(records)).returncode == 0
    assert TITLE not in json.loads(run_memlane(home, "get", "1", "--json").stdout)["content"]
    stored_before(home, "UPDATE memories SET content = ?, title = ? WHERE id = 1", HOSTILE, title)


def stored_before(home: Path, sql: str, *params: str) -> None:
    with sqlite3.connect(home / "memlane.db") as conn:
        conn.execute(sql, params)


def test_a_terminal_is_shown_stored_escape_sequences_not_given_them(
    home: Path, tmp_path: Path
) -> None:
    imported(home, tmp_path)
    for args in (["get", "1"], ["search", "--all-projects", "deploy"], ["list", "--all-projects"]):
        out = on_terminal(home, *args)
        for sequence in (TITLE, CLIPBOARD, CLEAR, ASK, RLO):
            assert sequence.encode() not in out, (args, out)
        assert b"\x1b]" not in out, args  # no OSC at all: no hyperlink from "[link=…]" either
    assert b"deploy notes \\x1b]0;owned\\x07\\x1b]52;c;" in on_terminal(home, "get", "1")


def test_a_pipe_gets_the_text_as_stored(home: Path, tmp_path: Path) -> None:
    imported(home, tmp_path)
    done = run_memlane(home, "get", "1")
    assert f"deploy notes {TITLE}{CLIPBOARD}" in done.stdout


def test_printable_keeps_text_colours_and_line_breaks() -> None:
    assert printable("a\tb\r\nc é 日本") == "a\tb\r\nc é 日本"
    assert printable("\x1b[1mbold\x1b[0m") == "\x1b[1mbold\x1b[0m"
    assert printable(f"x{TITLE}") == "x\\x1b]0;owned\\x07"
    assert printable("\x9b2J \u202e \x00") == "\\x9b2J \\u202e \\x00"


def test_list_shows_each_session_by_its_first_prompt_escaped(home: Path, tmp_path: Path) -> None:
    prompt = {
        "session_id": "s-title",
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"Make the export stream {TITLE}its output",
        "cwd": str(tmp_path),
    }
    hooked = subprocess.run(
        [*MEMLANE_CMD, "hook", "user-prompt-submit"],
        input=json.dumps(prompt),
        capture_output=True,
        text=True,
        env=run_env(home),
        timeout=120,
        check=False,
    )
    assert hooked.returncode == 0, hooked.stderr
    stored = prompt["prompt"]  # as an earlier memlane stored it (see imported)
    stored_before(home, "UPDATE memories SET content = ? WHERE type = 'prompt'", stored)
    shown = on_terminal(home, "list", "--all-projects").decode()
    lines = shown.splitlines()
    assert lines[0].startswith("s-title  ")
    assert lines[1] == "  Make the export stream \\x1b]0;owned\\x07its output"
