"""Ctrl-C during a long command (probe s35): exit 130, and one line saying what was kept.

The real `memlane import jsonl` in a subprocess gets SIGINT once its first batch is
committed (seen in the database, polled: no wait of a set length); a run again imports
the rest, since an import skips what is in already. Where the signal lands is the
kernel's choice, so the line is checked against what the database holds then: a batch
is counted in one step with its commit (tests/test_cli_interrupt_window.py puts a SIGINT
between the two), so the count it says is kept is exact wherever the signal lands.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.conftest import MEMLANE_CMD, run_env

RECORDS = 60_000


def memory_count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


# Only against a hung process: nothing here waits a set time for something to happen.
HUNG_S = 600


def interrupted(home: Path, command: list[str]) -> tuple[str, int]:
    """Run ``command`` and send it Ctrl-C once its first batch is committed: the one line
    it printed (it exited 130) and how many memories the database kept."""
    env = run_env(home) | {"MEMLANE_EMBEDDER": "toy"}
    running = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    hung = time.monotonic() + HUNG_S
    try:
        while running.poll() is None and memory_count(home / "memlane.db") == 0:
            assert time.monotonic() < hung, "no batch committed: the command hangs"
            time.sleep(0.01)  # a poll, not a limit
        assert running.poll() is None, "the import ended before its first batch was seen"
        running.send_signal(signal.SIGINT)
        _, err = running.communicate(timeout=HUNG_S)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert running.returncode == 130, err
    [line] = err.decode().strip().splitlines()
    return line, memory_count(home / "memlane.db")


def kept_line(label: str, kept: int, total: int) -> str:
    """What an interrupted loop says when ``kept`` of its ``total`` items are committed."""
    if kept == total:  # the signal came after the last batch
        return f"interrupted after {label}: all {kept:,} are done and kept"
    return (
        f"interrupted while {label}: the {kept:,} of {total:,} done so far are kept; run the"
        " same command again to do the rest (what is in already is skipped)"
    )


def test_ctrl_c_during_an_import_exits_130_and_says_what_is_kept(
    home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "big.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for n in range(RECORDS):
            out.write(json.dumps({"content": f"note {n} about the retry queue"}) + "\n")
    command = [*MEMLANE_CMD, "import", "jsonl", str(data), "--project", "P"]
    line, kept = interrupted(home, command)
    assert kept > 0
    assert line == kept_line(f"importing {data.name}", kept, RECORDS)

    env = run_env(home) | {"MEMLANE_EMBEDDER": "toy"}
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=HUNG_S)
    assert again.returncode == 0, again.stderr
    assert memory_count(home / "memlane.db") == RECORDS


def claude_mem_database(path: Path, observations: int) -> None:
    """A claude-mem database of one session and ``observations`` observations."""
    moment = 1_700_000_000_000
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE sdk_sessions (id INTEGER PRIMARY KEY, claude_session_id TEXT,"
            " sdk_session_id TEXT, project TEXT, started_at TEXT, started_at_epoch INTEGER,"
            " status TEXT);"
            "CREATE TABLE observations (id INTEGER PRIMARY KEY, sdk_session_id TEXT,"
            " project TEXT, text TEXT, type TEXT, created_at TEXT, created_at_epoch INTEGER);"
        )
        conn.execute(
            "INSERT INTO sdk_sessions VALUES (1, 'cc-old', 'sdk-old', 'legacy',"
            " '2023-11-14T22:13:20+00:00', ?, 'completed')",
            (moment,),
        )
        conn.executemany(
            "INSERT INTO observations VALUES (?, 'sdk-old', 'legacy', ?, 'feature',"
            " '2023-11-14T22:13:20+00:00', ?)",
            [
                (n + 1, f"observation {n} about the retry queue", moment + n)
                for n in range(observations)
            ],
        )


def test_ctrl_c_during_a_claude_mem_import_counts_only_committed_rows(
    home: Path, tmp_path: Path
) -> None:
    """The rows of a batch count as done once it is committed, not as they are read."""
    source = tmp_path / "claude-mem.db"
    claude_mem_database(source, RECORDS)
    command = [*MEMLANE_CMD, "import", "claude-mem", "--source", str(source)]
    line, kept = interrupted(home, command)
    assert kept > 0
    assert line == kept_line(f"importing {source.name}", kept, RECORDS)
