"""SIGKILL a transcript ingest and a JSONL import at random points (issue 10, item 3).

Each round starts a real subprocess (``memlane hook stop`` on a big synthetic
transcript, or ``memlane import jsonl`` of a big file) on a fresh database, kills
it with SIGKILL at a random moment of its run, then checks that the database opens,
passes ``PRAGMA integrity_check``, that its FTS index matches the table, and that
re-running completes with exactly the rows of an uninterrupted run — no duplicate,
nothing missing. 50 rounds each in the full profile, 10 in the quick one.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import MEMLANE_CMD, run_env
from tests.test_reliability_support import (
    check_database,
    duplicate_source_ids,
    size_from_env,
    write_jsonl,
    write_transcript,
)

ROUNDS = size_from_env("MEMLANE_CRASH_ROUNDS", 10, 50)
TRANSCRIPT_TURNS = 1500  # exchanges: about 3,000 turns, about 2 s of ingest
IMPORT_RECORDS = 2000


def _env(home: Path) -> dict[str, str]:
    env = run_env(home)
    env["MEMLANE_CAPTURE_HOME_AND_TMP"] = "true"
    env["MEMLANE_EMBEDDER"] = "none"
    return env


def _rows(db: Path, source: str) -> set[tuple[str, str]]:
    """(source_id, sha of content) of every row of ``source``."""
    conn = sqlite3.connect(str(db))
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories'").fetchone():
            return set()  # killed before the first migration committed
        rows = conn.execute(
            "SELECT source_id, content FROM memories WHERE source = ?", (source,)
        ).fetchall()
    finally:
        conn.close()
    return {(sid, hashlib.sha256(content.encode()).hexdigest()) for sid, content in rows}


def _start(cmd: list[str], home: Path, stdin: bytes | None, cwd: Path) -> subprocess.Popen[bytes]:
    if stdin is None:
        source = subprocess.DEVNULL
    else:
        payload = cwd / "stdin.json"
        payload.write_bytes(stdin)
        source = os.open(payload, os.O_RDONLY)
    try:
        return subprocess.Popen(
            cmd, env=_env(home), stdin=source, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, cwd=cwd,
        )  # fmt: skip
    finally:
        if stdin is not None:
            os.close(source)


def _run_to_end(cmd: list[str], home: Path, stdin: bytes | None, cwd: Path) -> float:
    start = time.monotonic()
    proc = _start(cmd, home, stdin, cwd)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    return time.monotonic() - start


def _crash_rounds(
    tmp_path: Path, name: str, cmd: list[str], stdin: bytes | None, source: str
) -> dict[str, int]:
    """Reference run, then ROUNDS kill/check/re-run rounds; returns what happened.

    A kill lands at a random point of the expected run time: the reference run's, then
    that of each full re-run (one after a kill that left nothing), so the kills follow the
    machine's load. While no kill has landed in the middle of the writes, rounds go on, up
    to three times ROUNDS: on a loaded machine the write window is a small part of a run.
    """
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    ref_home = tmp_path / f"{name}-ref"
    duration = _run_to_end(cmd, ref_home, stdin, work)
    reference = _rows(ref_home / "memlane.db", source)
    assert len(reference) > 100, f"the reference {name} stored only {len(reference)} rows"
    rng = random.Random(f"{name}-{ROUNDS}")
    outcome = {"rounds": 0, "partial": 0, "empty": 0, "complete": 0}
    i = -1
    while outcome["rounds"] < ROUNDS or (not outcome["partial"] and outcome["rounds"] < 3 * ROUNDS):
        i += 1
        home = tmp_path / f"{name}-{i}"
        proc = _start(cmd, home, stdin, work)
        time.sleep(rng.uniform(0.0, duration * 1.05))
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        db = home / "memlane.db"
        if db.exists():
            check_database(db)
            assert duplicate_source_ids(db) == 0
            seen = _rows(db, source)
            assert seen <= reference, f"round {i}: rows an uninterrupted run never writes"
            key = "complete" if seen == reference else ("partial" if seen else "empty")
        else:
            key = "empty"
        outcome[key] += 1
        # Re-running completes, adds exactly what was missing, duplicates nothing.
        rerun = _run_to_end(cmd, home, stdin, work)
        if key == "empty":
            duration = rerun  # a whole run, at the machine's load now
        check_database(db)
        assert duplicate_source_ids(db) == 0
        assert _rows(db, source) == reference, f"round {i}: re-run differs from a clean run"
        outcome["rounds"] += 1
    print(f"{name} crash rounds (clean run {duration:.2f}s): {outcome}")
    return outcome


@pytest.mark.slow
def test_sigkill_during_transcript_ingest(tmp_path: Path) -> None:
    transcript = tmp_path / "transcripts" / "big.jsonl"
    write_transcript(transcript, turns=TRANSCRIPT_TURNS, session_id="crash-sess")
    payload = json.dumps(
        {
            "session_id": "crash-sess",
            "transcript_path": str(transcript),
            "cwd": str(tmp_path / "work"),
            "hook_event_name": "Stop",
        }
    ).encode()
    outcome = _crash_rounds(
        tmp_path, "ingest", [*MEMLANE_CMD, "hook", "stop"], payload, "transcript"
    )
    # The kills really landed in the middle of the ingest, not only before or after it.
    assert outcome["partial"] >= 1, outcome


@pytest.mark.slow
def test_sigkill_during_jsonl_import(tmp_path: Path) -> None:
    data = tmp_path / "bulk.jsonl"
    write_jsonl(data, IMPORT_RECORDS)
    outcome = _crash_rounds(
        tmp_path,
        "import",
        [*MEMLANE_CMD, "import", "jsonl", str(data), "--project", "bulk"],
        None,
        "jsonl",
    )
    assert outcome["partial"] >= 1, outcome
