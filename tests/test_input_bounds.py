"""Inputs a command or a hook reads are bounded and never waited on.

Found by the 26th session's probes: a FIFO where memlane's log or config file goes
hung every hook (even its last-resort exit, which logs first) and every command;
`save -` read stdin without end (`< /dev/zero`: 10.5 GB in 25 s); a query naming
180 types took 25 s at 50,000 memories (one ordered read per type), and the CLI
took queries of any length where HTTP and MCP stop at 2,000 characters; an
invalid `secret_patterns` entry was accepted and then skipped at every filter.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .conftest import MEMLANE_CMD, one_line_error, run_env, run_memlane


def test_a_fifo_as_the_hook_log_does_not_hang_a_hook(home: Path, tmp_path: Path) -> None:
    logs = home / "logs"
    logs.mkdir(mode=0o700, parents=True)
    os.mkfifo(logs / "hooks.log", 0o600)
    # Not JSON: the hook logs the problem, which opened the FIFO and waited for a reader.
    done = run_memlane(home, "hook", "user-prompt-submit", stdin="not json", timeout=60)
    assert done.returncode == 0 and done.stdout == ""


def test_a_fifo_as_the_config_file_is_reported_not_waited_on(home: Path, tmp_path: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.mkfifo(home / "config.toml", 0o600)
    done = run_memlane(home, "stats", timeout=60)
    assert "config.toml is not a regular file; not read" in one_line_error(done, 2)
    prompt = '{"session_id": "s1", "prompt": "which port does the api use?"}'
    hook = run_memlane(home, "hook", "user-prompt-submit", stdin=prompt, timeout=60)
    assert hook.returncode == 0 and hook.stdout == ""


def test_save_from_stdin_refuses_a_text_past_the_bound(home: Path) -> None:
    done = run_memlane(home, "save", "-", stdin="x" * (8 * 1024 * 1024 + 1), timeout=120)
    assert "longer than 8,388,608 characters; nothing was changed" in one_line_error(done, 2)
    assert run_memlane(home, "save", "-", stdin="a note from a pipe").returncode == 0
    listed = run_memlane(home, "search", "note from a pipe")
    assert "pipe" in listed.stdout


def test_a_query_names_twenty_types_at_most(home: Path) -> None:
    assert run_memlane(home, "save", "the deploy runs at noon", "--type", "t3").returncode == 0
    query = " OR ".join(f"type:t{i}" for i in range(21))
    message = one_line_error(run_memlane(home, "search", query), 2)
    assert "a query names 20 types at most (21 given)" in message
    twenty = " OR ".join(f"type:t{i}" for i in range(20))
    done = run_memlane(home, "search", twenty)
    assert done.returncode == 0 and "noon" in done.stdout, done.stderr


def test_the_cli_takes_a_query_of_2000_characters_at_most(home: Path) -> None:
    message = one_line_error(run_memlane(home, "search", "ab* " * 600), 2)
    assert "the query is 2,400 characters long (at most 2,000)" in message


def test_an_invalid_secret_pattern_is_refused_when_set(home: Path) -> None:
    done = run_memlane(home, "config", "set", "secret_patterns", "(")
    assert "is not a regular expression" in one_line_error(done, 2)
    assert not (home / "config.toml").exists()
    assert run_memlane(home, "config", "set", "secret_patterns", "tok_[a-z]+").returncode == 0


def test_a_secret_pattern_that_backtracks_without_end_withholds_the_text(
    home: Path, tmp_path: Path
) -> None:
    # "(a|aa)+b" over 60 "a"s would run in Python's re for ages, holding the hook (or
    # the worker) until its budget ran out; each text is withheld after a short limit.
    assert run_memlane(home, "config", "set", "secret_patterns", "(a|aa)+b").returncode == 0
    prompt = {
        "session_id": "s-slow",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "remember " + "a" * 60,
        "cwd": str(tmp_path),
    }
    done = run_memlane(home, "hook", "user-prompt-submit", stdin=json.dumps(prompt), timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert done.stderr.count("was withheld") == 1, done.stderr
    saved = run_memlane(home, "save", "note " + "a" * 60, "--project", "P")
    assert saved.returncode == 0
    assert "ran past" in saved.stderr and "was withheld" in saved.stderr
    exported = run_memlane(home, "export", "--format", "jsonl")
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    texts = [r["text"] for r in records if r["record"] == "memory"]
    assert len(texts) == 2 and set(texts) == {"[REDACTED:withheld]"}  # the prompt, the note
    assert "aaaaaaaa" not in exported.stdout


def test_a_loop_of_links_or_a_name_not_in_utf8_is_one_line(home: Path, tmp_path: Path) -> None:
    # Python 3.11's Path.resolve raises RuntimeError on a loop (only OSError was caught),
    # and a sync folder's name was hashed as UTF-8: tracebacks, exit 1.
    assert run_memlane(home, "save", "the retry queue drains", "--project", "p").returncode == 0
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    one_line_error(run_memlane(home, "backup", str(loop)), 2)
    line = one_line_error(run_memlane(home, "sync", "push", "--dir", str(loop), "--create"), 2)
    assert "is a link" in line  # a loop of links is one
    odd = bytes(tmp_path) + b"/sync\xff"
    pushed = subprocess.run(
        [*MEMLANE_CMD, "sync", "push", "--dir", odd, "--create"],
        env=run_env(home),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert pushed.returncode == 0 and b"pushed 1 memory" in pushed.stdout, pushed.stderr
