"""Stop relayed to the worker's ingest thread (real sockets, real hook subprocesses).

A HookRelay serves a real Memory on a temp home; Stop runs as the command ``memlane
setup`` installs. The worker ingests on a thread and connection of its own, so a
prompt is answered while an ingest waits for the database, and a hook that gave up
on the worker ingests itself without storing a unit twice. The database is held
busy by a plain ``BEGIN IMMEDIATE`` from the test: nothing of memlane is replaced.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlane.hooks.relay import relay
from memlane.integrations import hook_argv
from memlane.worker.relay_server import HookRelay
from tests.conftest import run_env
from tests.test_hook_relay import answer, handled, launch_hook
from tests.test_hooks import payload, rows

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sockets")


def stop_payload(session: str, project: Path, transcript: Path) -> bytes:
    return payload("stop", session=session, cwd=str(project), transcript=str(transcript))


def units(home: Path, session: str) -> list[tuple[str, str, str]]:
    """The session's transcript units: (type, content, source_id without the session)."""
    found = rows(
        home,
        "SELECT type, content, source_id FROM memories"
        " WHERE session_id = ? AND kind = 'turn' ORDER BY id",
        (session,),
    )
    return [(kind, content, source_id.removeprefix(session)) for kind, content, source_id in found]


def next_steps(home: Path, session: str) -> list[str]:
    found = rows(
        home,
        "SELECT metadata FROM memories WHERE kind = 'checkpoint' AND session_id = ?",
        (session,),
    )
    assert len(found) == 1
    steps: list[str] = json.loads(found[0][0])["checkpoint"]["next_steps"]
    return steps


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def launch_stop(
    home: Path, project: Path, data: bytes, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """The installed Stop command, started with ``data`` on its stdin (not waited for)."""
    proc = subprocess.Popen(
        hook_argv("stop"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**run_env(home), **env},
        cwd=project,
    )
    assert proc.stdin is not None
    proc.stdin.write(data)
    proc.stdin.close()
    return proc


def finished(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of a process :func:`launch_stop` started."""
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        code = proc.wait(timeout=60)
        return code, proc.stdout.read(), proc.stderr.read()


def test_relayed_stop_stores_what_the_hook_process_stores(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay
) -> None:
    relayed = launch_hook(home, "stop", stop_payload("w", project, transcript), cwd=project)
    assert answer(relayed) == b""
    assert handled(home, relay_worker) == 1
    local = launch_hook(
        home,
        "stop",
        stop_payload("p", project, transcript),
        cwd=project,
        env={"MEMLANE_RELAY": "0"},
    )
    assert answer(local) == b""
    assert handled(home, relay_worker) == 1  # that one ran in its own process
    assert len(units(home, "w")) >= 5
    assert units(home, "w") == units(home, "p")
    # Its observations are stored (the same calls in the other session are repeats).
    observations = "SELECT count(*) FROM memories WHERE kind = 'observation' AND session_id = ?"
    assert rows(home, observations, ("w",)) >= [(2,)]
    assert "add a test for webhook timeouts" in next_steps(home, "w")
    assert next_steps(home, "w") == next_steps(home, "p")
    # Again: the stored offset says everything is in; nothing is added.
    before = rows(home, "SELECT count(*) FROM memories")
    again = launch_hook(home, "stop", stop_payload("w", project, transcript), cwd=project)
    assert answer(again) == b""
    assert handled(home, relay_worker) == 2
    assert rows(home, "SELECT count(*) FROM memories") == before


def test_relayed_stop_loads_nothing_of_the_ingest_in_the_hook_process(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay
) -> None:
    data = stop_payload("w", project, transcript)
    done = launch_hook(home, "stop", data, cwd=project, importtime=True)
    assert done.returncode == 0 and done.stdout == b""
    imported = set(re.findall(r"\|\s+([\w.]+)\s*$", done.stderr.decode(), re.MULTILINE))
    assert "memlane.hooks.relay" in imported
    assert not imported & {"json", "re", "sqlite3", "site", "memlane.capture.pipeline"}
    assert handled(home, relay_worker) == 1
    assert len(units(home, "w")) >= 5


def test_a_prompt_is_answered_while_a_stop_ingests(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay
) -> None:
    busy = sqlite3.connect(home / "memlane.db", isolation_level=None)
    busy.execute("BEGIN IMMEDIATE")  # the Stop's writes wait for this
    try:
        stop = launch_stop(home, project, stop_payload("w", project, transcript), {})
        wait_for(lambda: relay_worker.pending == 1, "the Stop reached the worker")
        prompt = {
            "session_id": "w",
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why does the retry pass an idempotency key?",
        }
        # Queued after the Stop: answered by the runner while the ingest thread waits
        # (a Stop run on the runner would hold it for the database's busy timeout, 10 s).
        replied = relay(
            "user-prompt-submit", json.dumps(prompt).encode(), environ=run_env(home), timeout_s=5
        )
        assert replied is not None
        assert stop.poll() is None  # the Stop still waits for the database
        assert units(home, "w") == []
    finally:
        busy.execute("ROLLBACK")
        busy.close()
    assert finished(stop) == (0, b"", b"")
    assert handled(home, relay_worker) == 2
    assert len(units(home, "w")) >= 5
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'prompt'") == [(1,)]


def test_a_stop_the_worker_answers_too_late_is_stored_once(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay
) -> None:
    reference = launch_hook(
        home,
        "stop",
        stop_payload("ref", project, transcript),
        cwd=project,
        env={"MEMLANE_RELAY": "0"},
    )
    assert answer(reference) == b""
    busy = sqlite3.connect(home / "memlane.db", isolation_level=None)
    busy.execute("BEGIN IMMEDIATE")
    try:
        stop = launch_stop(
            home,
            project,
            stop_payload("late", project, transcript),
            {"MEMLANE_RELAY_TIMEOUT_MS": "300"},
        )
        wait_for(lambda: relay_worker.pending == 1, "the Stop reached the worker")
        # The hook gives up on the worker after 0.3 s and ingests itself; both wait here.
        time.sleep(1.0)
    finally:
        busy.execute("ROLLBACK")
        busy.close()
    assert finished(stop) == (0, b"", b"")
    assert relay_worker.wait_quiet()
    assert relay_worker.handled == 0  # its answer found nobody listening
    assert units(home, "late") == units(home, "ref")
    duplicates = rows(
        home,
        "SELECT source_id FROM memories WHERE session_id = 'late'"
        " GROUP BY source_id HAVING count(*) > 1",
    )
    assert duplicates == []
    assert next_steps(home, "late") == next_steps(home, "ref")


def test_relayed_subagent_stop_ingests_the_subagent_transcript(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay, tmp_path: Path
) -> None:
    sub = tmp_path / "sess-a" / "subagents" / "agent-a1b2c3d.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes(transcript.read_bytes())
    data = payload(
        "subagent_stop",
        session="sess-a",
        cwd=str(project),
        transcript=str(transcript),
        agent_transcript=str(sub),
    )
    assert answer(launch_hook(home, "subagent-stop", data, cwd=project)) == b""
    assert handled(home, relay_worker) == 1
    child = "sess-a:agent-a1b2c3d"
    assert rows(home, "SELECT parent_session_id FROM sessions WHERE id = ?", (child,)) == [
        ("sess-a",)
    ]
    assert len(units(home, child)) >= 5


def test_relayed_session_end_ingests_the_tail_after_its_answer(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay
) -> None:
    stop = launch_hook(home, "stop", stop_payload("a", project, transcript), cwd=project)
    assert answer(stop) == b""
    before = len(units(home, "a"))
    record = {
        "type": "user",
        "sessionId": "a",
        "uuid": "late",
        "timestamp": "2026-01-10T10:00:00Z",
        "message": {"role": "user", "content": "one more thing: log every retry attempt"},
    }
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    end = payload("session_end", session="a", cwd=str(project), transcript=str(transcript))
    assert answer(launch_hook(home, "session-end", end, cwd=project)) == b""
    # Done once the worker is quiet: its ingest thread ran the tail, no process was started
    # (one would still be importing memlane here).
    assert handled(home, relay_worker) == 2
    assert rows(home, "SELECT status FROM sessions WHERE id = 'a'") == [("ended",)]
    tail = units(home, "a")[before:]
    assert any("log every retry attempt" in content for _, content, _ in tail)
