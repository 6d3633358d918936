"""The hooks' spool: a capture given up on while another process holds the write lock is
kept on disk and stored later, once (real SQLite file, real hook and lock processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memlane.config import Settings
from memlane.errors import StoreError
from memlane.hooks.agents import HookEvent, normalize
from memlane.hooks.relay import flush
from memlane.paths import UnsafePath
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.worker.relay_server import HookRelay
from tests.conftest import run_env
from tests.test_hooks import hook, log_lines, ok, rows

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
# Holds the database's write lock (BEGIN <argv[2]>) until its stdin closes.
LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN " + sys.argv[2])
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@contextmanager
def write_lock_held(db: Path, mode: str = "IMMEDIATE") -> Iterator[None]:
    """Another process holds ``db``'s write lock (a ``BEGIN mode``) inside the block."""
    with subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(db), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as locker:
        assert locker.stdin is not None and locker.stdout is not None
        try:
            assert locker.stdout.readline() == "locked\n"
            yield
        finally:
            locker.stdin.close()
            assert locker.wait(timeout=60) == 0


def prompt_hook(home: Path, project: Path, text: str) -> subprocess.CompletedProcess[bytes]:
    data = {"session_id": "s1", "cwd": str(project), "prompt": text}
    return hook(home, "user-prompt-submit", json.dumps(data).encode(), cwd=project)


def prompts(home: Path) -> list[tuple[str, str, float]]:
    """(content, source_id, created_at) of the stored prompts, in their order."""
    return [
        (str(content), str(source_id), float(created))
        for content, source_id, created in rows(
            home,
            "SELECT content, source_id, created_at FROM memories WHERE kind = 'prompt'"
            " ORDER BY source_id",
        )
    ]


def spooled(home: Path) -> list[Path]:
    """The spool files of every database, oldest first."""
    folder = home / "spool"
    found = folder.glob("*/*.json") if folder.exists() else []
    return sorted(found, key=lambda path: path.name)


def test_a_prompt_given_up_on_a_held_lock_is_spooled_then_stored_once(
    home: Path, project: Path
) -> None:
    ok(prompt_hook(home, project, "first prompt about the billing retries"))
    with write_lock_held(home / "memlane.db"):
        done = prompt_hook(home, project, f"second prompt: deploy with token {SECRET} today")
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
        files = spooled(home)
        assert len(files) == 1
    # One line: the watchdog's, saying where the prompt went.
    [line] = log_lines(home)
    assert "budget of 4.0s exceeded; hard exit; prompt kept in the spool" in line
    assert (home / "spool").stat().st_mode & 0o777 == 0o700
    assert files[0].stat().st_mode & 0o777 == 0o600
    text = files[0].read_text(encoding="ascii")
    assert SECRET not in text and "second prompt" in text  # scrubbed before it was written
    sent_at = json.loads(text)["at"]
    assert [p[0] for p in prompts(home)] == ["first prompt about the billing retries"]

    # The next prompt hook stores the spooled one first: it keeps its number and its time.
    ok(prompt_hook(home, project, "third prompt, after the lock"))
    stored = prompts(home)
    assert [(content[:13], source_id) for content, source_id, _ in stored] == [
        ("first prompt ", "s1:prompt:1"),
        ("second prompt", "s1:prompt:2"),
        ("third prompt,", "s1:prompt:3"),
    ]
    assert SECRET not in stored[1][0]
    assert abs(stored[1][2] - sent_at) < 0.001  # the hook's time, not the replay's
    assert spooled(home) == []
    ok(prompt_hook(home, project, "fourth prompt"))  # a second drain adds nothing
    assert len(prompts(home)) == 4
    assert rows(home, "SELECT prompt_count FROM sessions WHERE id = 's1'") == [(4,)]


def test_the_worker_stores_what_was_spooled_when_it_starts(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    from memlane.hooks import spool

    memory.record_prompt("s1", "already here", project="billing-api")
    with write_lock_held(settings.paths.db_path):
        data = {
            "session_id": "s1",
            "cwd": str(project),
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q tests/test_refunds.py"},
            "tool_response": {"stdout": "3 failed, 12 passed", "exit_code": 1},
            "tool_use_id": "toolu_01",
        }
        done = hook(home, "post-tool-use", json.dumps(data).encode(), cwd=project)
        assert done.returncode == 0 and done.stdout == b""
    [kept] = spooled(home)
    copy = kept.read_bytes()
    server = HookRelay(memory, settings, environ=run_env(home))
    assert server.start()
    try:
        assert flush(environ=run_env(home), timeout_s=30)  # answered after the start's replay
    finally:
        server.stop()
    assert spooled(home) == []
    found = rows(home, "SELECT source_id FROM memories WHERE kind = 'observation'")
    assert found == [("s1:tool:toolu_01",)]
    kept.write_bytes(copy)  # as a replay that died before removing it left it
    assert spool.replay(memory, settings) == (0, False)
    assert spooled(home) == []
    assert len(rows(home, "SELECT id FROM memories WHERE kind = 'observation'")) == 1


def event_of(project: Path, text: str) -> HookEvent:
    data = {"session_id": "s1", "cwd": str(project), "prompt": text}
    return normalize("user-prompt-submit", data)


def test_crafted_and_garbage_spool_files_are_moved_aside_with_a_log_line(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    from memlane.hooks import spool

    good = spool.keep(event_of(project, "a kept prompt"), "billing-api", settings, 1.7e9, notes=[])
    assert good is not None
    folder = good.parent
    record = json.loads(good.read_text())
    crafted = {
        "0000000000000001-1-1.json": b"not json at all",
        "0000000000000002-1-1.json": json.dumps({**record, "at": "yesterday"}).encode(),
        "0000000000000003-1-1.json": json.dumps({**record, "agent": "evil"}).encode(),
        "0000000000000004-1-1.json": json.dumps([record]).encode(),
        "0000000000000005-1-1.json": b"[" * 100_000,
        "0000000000000006-1-1.json": json.dumps({**record, "session_id": ""}).encode(),
        "0000000000000007-1-1.json": json.dumps({**record, "db": "another"}).encode(),
        "junk.json": b"\xff\xfe garbage",
    }
    for name, data in crafted.items():
        (folder / name).write_bytes(data)
    (folder / "0000000000000008-1-1.json").mkdir()
    assert spool.replay(memory, settings) == (1, False)
    assert [p.name for p in spooled(home)] == []
    assert [c for c, _, _ in prompts(home)] == ["a kept prompt"]
    aside = sorted(path.name for path in (folder / "rejected").iterdir())
    assert aside == sorted([*crafted, "0000000000000008-1-1.json"])
    [dropped] = [line for line in log_lines(home) if "spool file" in line]  # one a replay
    assert dropped.endswith(f"; moved to {folder / 'rejected'} (and {len(crafted)} more)")


def test_the_spool_folder_must_be_private_and_no_link(
    home: Path, project: Path, settings: Settings, tmp_path: Path
) -> None:
    from memlane.hooks import spool

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    home.mkdir(parents=True, exist_ok=True)
    (home / "spool").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="symbolic link"):
        spool.keep(event_of(project, "hello"), "billing-api", settings, 1.7e9, notes=[])
    assert list(elsewhere.iterdir()) == []
    (home / "spool").unlink()
    (home / "spool").mkdir()
    os.chmod(home / "spool", 0o777)
    with pytest.raises(UnsafePath, match="can be written by other users"):
        spool.keep(event_of(project, "hello"), "billing-api", settings, 1.7e9, notes=[])


def test_a_replay_removes_the_temporary_files_of_dead_writers_only(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """A hook killed while it wrote a capture leaves ``.<name>.<pid>.tmp``: the next replay
    removes it at once (it waited a minute), and never a live writer's, however old (it
    removed one after a minute, and that hook's rename then failed)."""
    from memlane.hooks import spool

    kept = spool.keep(event_of(project, "a kept prompt"), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = kept.parent / f".{kept.name}.{gone.pid}.tmp"
    live = kept.parent / f".0000000000000009-1-1.json.{os.getppid()}.tmp"
    for path in (dead, live):
        path.write_bytes(b"half a capture")
    os.utime(live, (1.6e9, 1.6e9))  # written long ago, its writer still running
    assert spool.replay(memory, settings) == (1, False)
    assert not dead.exists() and live.exists()


def test_the_oldest_captures_go_beyond_the_cap(
    home: Path, project: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.hooks import spool

    monkeypatch.setattr(spool, "MAX_FILES", 3)
    notes: list[str] = []
    for second in range(5):
        spool.keep(
            event_of(project, f"prompt {second}"),
            "billing-api",
            settings,
            1.7e9 + second,
            notes=notes,
        )
    kept = [json.loads(path.read_text())["prompt"] for path in spooled(home)]
    assert kept == ["prompt 2", "prompt 3", "prompt 4"]
    assert len([note for note in notes if "spool full" in note]) == 2


def test_a_replay_keeps_files_while_the_database_is_busy(
    home: Path,
    project: Path,
    memory: Memory,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memlane.hooks import spool
    from memlane.store import sqlite as sqlite_store

    spool.keep(event_of(project, "waiting prompt"), "billing-api", settings, 1.7e9, notes=[])
    memory.close()  # reopened below with a short wait for the lock
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 100)
    busy = open_memory(settings=settings)
    try:
        with write_lock_held(settings.paths.db_path), pytest.raises(StoreError):
            spool.replay(busy, settings)
        assert len(spooled(home)) == 1
        assert spool.replay(busy, settings) == (1, False)
    finally:
        busy.close()
    assert spooled(home) == []
    assert [(c, created) for c, _, created in prompts(home)] == [("waiting prompt", 1.7e9)]


def test_a_prompt_the_worker_cannot_write_is_spooled_and_stored_next(
    home: Path, project: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 200)  # the worker's wait for the lock
    memory = open_memory(settings=settings)
    server = HookRelay(memory, settings, environ=run_env(home))
    assert server.start()
    env = run_env(home)
    try:
        ok(prompt_hook(home, project, "first prompt"))
        assert flush(environ=env, timeout_s=30)
        with write_lock_held(settings.paths.db_path):
            ok(prompt_hook(home, project, "second prompt, answered before its write failed"))
            assert flush(environ=env, timeout_s=30)  # its writes were tried by now
            assert len(spooled(home)) == 1
        assert any("(worker): StoreBusy" in line for line in log_lines(home))
        ok(prompt_hook(home, project, "third prompt"))
        assert flush(environ=env, timeout_s=30)
        assert server.handled == 3  # every prompt went through the worker
    finally:
        server.stop()
        memory.close()
    assert [(content[:13], source_id) for content, source_id, _ in prompts(home)] == [
        ("first prompt", "s1:prompt:1"),
        ("second prompt", "s1:prompt:2"),
        ("third prompt", "s1:prompt:3"),
    ]
    assert spooled(home) == []


def test_no_secret_reaches_the_spool(home: Path, project: Path, settings: Settings) -> None:
    from memlane.hooks import spool

    tool = {
        "session_id": "s1",
        "cwd": str(project),
        "tool_name": "Bash",
        "tool_input": {"command": f"curl -H 'Authorization: token {SECRET}' api", SECRET: 1},
        "tool_response": {"stdout": f"echo {SECRET}", "exit_code": 0},
        "tool_use_id": "toolu_02",
    }
    kept = spool.keep(normalize("post-tool-use", tool), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    text = kept.read_text(encoding="ascii")
    assert SECRET not in text and "toolu_02" in text and "curl" in text
    leaking = normalize("user-prompt-submit", {"session_id": SECRET, "cwd": str(project)})
    assert spool.keep(leaking, "billing-api", settings, 1.7e9, notes=[]) is None
    assert len(spooled(home)) == 1


def test_a_hook_giving_up_waits_for_the_watchdogs_spool_writer(
    home: Path, project: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog's writer took the capture and is still writing when the main thread
    gives up: the hook waits for the file before it ends (its exit would cut the write)."""
    import threading
    import time

    from memlane.hooks import dispatch, spool
    from memlane.hooks.handlers import HookContext

    entered = threading.Event()
    keep = spool.keep

    def slow_keep(*args: Any, **kwargs: Any) -> Path | None:
        entered.set()
        time.sleep(0.3)  # still writing when the main thread gives up
        return keep(*args, **kwargs)

    def stuck_handle(event_arg: str, raw: bytes, settings: Settings, **kw: Any) -> str:
        pending = kw["pending"]
        event = event_of(project, "a prompt the watchdog spools")
        pending[:] = [HookContext(event, settings, "billing-api")]
        timeout = dispatch.HookTimeout("budget exceeded; hard exit")
        threading.Thread(
            target=dispatch._spool_in_time, args=(event_arg, timeout), daemon=True
        ).start()
        assert entered.wait(30)
        raise dispatch.HookTimeout("budget exceeded")

    monkeypatch.setattr(spool, "keep", slow_keep)
    monkeypatch.setattr(dispatch, "handle", stuck_handle)
    monkeypatch.setattr(dispatch, "SPOOL_GRACE_S", 60.0)
    payload = json.dumps({"session_id": "s1", "cwd": str(project), "prompt": "x"}).encode()
    dispatch.run_hook("user-prompt-submit", stdin=payload, exit_when_done=False, relay=False)
    assert [json.loads(p.read_text())["prompt"] for p in spooled(home)] == [
        "a prompt the watchdog spools"
    ]
    [line] = log_lines(home)  # the writer's: the main thread's failure is the same one
    assert "HookTimeout: budget exceeded; hard exit; prompt kept in the spool (" in line


def test_a_replay_killed_after_its_commit_stores_nothing_twice(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """A replay that committed a capture but died before removing its file: the next
    replay finds the capture stored and only removes the file."""

    from memlane.hooks import spool

    prompt = spool.keep(
        event_of(project, f"a prompt with {SECRET} in it"), "billing-api", settings, 1.7e9, notes=[]
    )
    stop = {
        "session_id": "s1",
        "cwd": str(project),
        "last_assistant_message": "the refunds now retry twice",
        "turn_id": "turn-7",
    }
    reply = spool.keep(normalize("codex:stop", stop), "billing-api", settings, 1.7e9 + 1, notes=[])
    assert prompt is not None and reply is not None
    copies = {path: path.read_bytes() for path in (prompt, reply)}
    assert spool.replay(memory, settings) == (2, False)
    memory.record_prompt("s1", "a later prompt", project="billing-api")
    for path, data in copies.items():  # as the killed replay left them
        path.write_bytes(data)
        path.chmod(0o600)
    assert spool.replay(memory, settings) == (0, False)
    assert spooled(home) == []
    assert [(c[:8], s) for c, s, _ in prompts(home)] == [
        ("a prompt", "s1:prompt:1"),
        ("a later ", "s1:prompt:2"),
    ]
    assert rows(home, "SELECT prompt_count FROM sessions WHERE id = 's1'") == [(2,)]
    assert len(rows(home, "SELECT id FROM memories WHERE kind = 'turn'")) == 1


def test_the_worker_logs_a_failing_replay_once_and_backs_off(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """A spool the worker cannot replay (here a folder others can write) is one log line,
    not one every SPOOL_IDLE_S, and the idle replays come less and less often."""
    from memlane.hooks import spool
    from memlane.worker import relay_server

    assert (
        spool.keep(event_of(project, "waiting"), "billing-api", settings, 1.7e9, notes=[])
        is not None
    )
    settings.paths.spool_dir.chmod(0o777)
    server = HookRelay(memory, settings, environ=run_env(home))
    waits = []
    for _ in range(4):
        server._replay_spool()  # as before a capturing hook: tried each time
        waits.append(server._spool_wait)
    assert waits == [relay_server.SPOOL_IDLE_S * 2**n for n in range(1, 5)]
    failures = [line for line in log_lines(home) if "hook spool (worker)" in line]
    assert len(failures) == 1 and "can be written by other users" in failures[0]
    settings.paths.spool_dir.chmod(0o700)
    server._replay_spool(idle=True)  # within the back-off: not tried
    assert len(spooled(home)) == 1
    server._replay_spool()
    assert spooled(home) == [] and server._spool_wait == relay_server.SPOOL_IDLE_S


def ls_call(project: Path, tool_use_id: str) -> dict[str, Any]:
    """A PostToolUse payload of an agent with a transcript (Stop stores the call from it)."""
    return {
        "session_id": "s1",
        "cwd": str(project),
        "transcript_path": str(project / "session.jsonl"),
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "src", "exit_code": 0},
        "tool_use_id": tool_use_id,
    }


def test_only_what_no_transcript_holds_is_spooled(
    home: Path, project: Path, settings: Settings
) -> None:
    """A tool event of an agent with a transcript is not spooled (Stop stores the call from
    it); a reply is, when the Stop handler keeps it (it read no transcript), under the key
    the handler gives it."""
    from memlane.hooks import dispatch, spool
    from memlane.hooks.handlers import HookContext, reply_key

    tool = ls_call(project, "toolu_03")
    assert (
        spool.keep(normalize("post-tool-use", tool), "billing-api", settings, 1.7e9, notes=[])
        is None
    )
    del tool["transcript_path"]
    assert spool.keep(
        normalize("gemini:post-tool-use", tool), "billing-api", settings, 1.7e9, notes=[]
    )

    stop = {
        "session_id": "s2",
        "cwd": str(project),
        "transcript_path": str(project / "missing-rollout.jsonl"),
        "last_assistant_message": "the refunds now retry twice",
    }
    event = normalize("codex:stop", stop)
    assert spool.capture_kind(event) is None  # Stop may read its transcript
    ctx = HookContext(event, settings, "billing-api")
    ctx.keeps_reply = True  # it read nothing: the handler keeps the reply
    assert dispatch.spool_pending([ctx]).startswith("reply kept in the spool (")
    replies = [json.loads(p.read_text()) for p in spooled(home)]
    replies = [r for r in replies if r["kind"] == "reply"]
    assert [r["key"] for r in replies] == [reply_key(event, ctx.started_at)]
    assert replies[0]["at"] == ctx.started_at


def test_another_databases_captures_are_neither_seen_nor_replayed(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """Each database has its spool folder: a capture of another one does not make this
    one's hooks load the spool and replay on every event."""
    from dataclasses import replace

    from memlane.hooks import spool
    from memlane.hooks.dispatch import spool_waiting

    other = replace(settings, db_target=str(home / "other.db"))
    kept = spool.keep(event_of(project, "for the other one"), "billing-api", other, 1.7e9, notes=[])
    assert kept is not None and kept.parent.parent == settings.paths.spool_dir
    assert spool_waiting(other) and not spool_waiting(settings)
    assert spool.replay(memory, settings) == (0, False)
    assert spooled(home) == [kept]


def test_a_stop_keeping_its_reply_marks_it_spoolable_under_the_spools_key(
    home: Path, project: Path, settings: Settings
) -> None:
    """The Stop handler that read no transcript stores the reply under the key the spool
    would give it (one rule, one time), and marks it as what the spool keeps."""
    from memlane.hooks.dispatch import handle
    from memlane.hooks.handlers import HookContext, reply_key
    from memlane.hooks.spool import capture_kind

    stop = {
        "session_id": "s2",
        "cwd": str(project),
        "transcript_path": str(project / "missing-rollout.jsonl"),
        "last_assistant_message": "the refunds now retry twice",
    }
    pending: list[HookContext] = []
    handle("codex:stop", json.dumps(stop).encode(), settings, pending=pending)
    [ctx] = pending
    assert ctx.captured and ctx.keeps_reply
    assert capture_kind(ctx.event, reply=ctx.keeps_reply) == "reply"
    key = reply_key(ctx.event, ctx.started_at)
    assert rows(home, "SELECT source_id FROM memories WHERE kind = 'turn'") == [
        (f"s2:reply:{key}",)
    ]


def test_only_events_that_capture_are_pending(project: Path, settings: Settings) -> None:
    from memlane.hooks.dispatch import handle
    from memlane.hooks.handlers import HookContext

    pending: list[HookContext] = []
    data = {"session_id": "s3", "cwd": str(project)}
    handle("pre-compact", json.dumps(data).encode(), settings, pending=pending)
    assert pending == []
    handle(
        "user-prompt-submit",
        json.dumps({**data, "prompt": "hi"}).encode(),
        settings,
        pending=pending,
    )
    assert [ctx.event.event for ctx in pending] == ["user-prompt-submit"]


def test_a_replayed_prompt_is_neither_stored_nor_counted_twice(
    tmp_path: Path, settings: Settings
) -> None:
    """A replay whose first attempt committed (killed before its file was removed): a
    prompt over the content limit is compared as it was stored (clipped), and a prompt
    that is never stored (the harness's) is not counted again."""
    from datetime import UTC, datetime

    memory = open_memory(str(tmp_path / "m.db"), settings=settings)
    try:
        sent = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
        long_prompt = "why does the build fail " * 5_000  # 120,000 characters
        harness = "<task-notification>build finished</task-notification>"
        for _ in range(2):
            memory.record_prompt("s1", long_prompt, project="p", now=sent, once=True)
            memory.record_prompt("s1", harness, project="p", now=sent, once=True)
        session = memory.get_session("s1")
        assert session is not None and session.prompt_count == 1
        assert len(memory.list_memories(project="p", kinds=["prompt"])) == 1
    finally:
        memory.close()


def imported_by_prompt_hook(home: Path, project: Path, text: str) -> set[str]:
    """The modules the installed prompt hook command imported, run in its own process."""
    from memlane.integrations import hook_argv

    argv = hook_argv("user-prompt-submit")
    argv.insert(1, "-Ximporttime")
    data = json.dumps({"session_id": "s1", "cwd": str(project), "prompt": text}).encode()
    env = {**run_env(home), "MEMLANE_RELAY": "0"}
    done = subprocess.run(
        argv, input=data, capture_output=True, env=env, cwd=project, timeout=60, check=False
    )
    assert done.returncode == 0 and done.stdout == b""
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:")
    }


def test_a_drained_spool_does_not_load_the_spool_module_on_a_prompt(
    home: Path, project: Path, settings: Settings
) -> None:
    """What a replay leaves (the database's folder, its lock file, the rejected captures'
    folder) makes no hook load the spool: it does only while a capture waits."""
    from memlane.hooks import spool

    kept = spool.keep(event_of(project, "spooled"), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    imported = imported_by_prompt_hook(home, project, "a prompt that replays the spool")
    assert "memlane.hooks.dispatch" in imported and "memlane.hooks.spool" in imported
    assert spooled(home) == [] and (kept.parent / spool.LOCK_NAME).exists()
    (kept.parent / "rejected").mkdir(mode=0o700)
    (kept.parent / "rejected" / kept.name).write_bytes(b"{}")
    imported = imported_by_prompt_hook(home, project, "a prompt with nothing waiting")
    assert "memlane.hooks.dispatch" in imported and "memlane.hooks.spool" not in imported
    assert [c for c, _, _ in prompts(home)] == [
        "spooled",
        "a prompt that replays the spool",
        "a prompt with nothing waiting",
    ]


def test_the_spooled_events_are_the_events_with_a_capture_kind(project: Path) -> None:
    """The spool's capture_kind (what is kept) reads the table the dispatcher reads (which
    hooks replay and are pending): only what it names is kept, as what."""
    from memlane.hooks.events import EVENTS
    from memlane.hooks.spool import capture_kind

    data = {
        "session_id": "s1",
        "cwd": str(project),
        "prompt": "hi",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "last_assistant_message": "done",
    }
    kinds = {name: capture_kind(normalize(f"codex:{name}", data)) for name in EVENTS}
    assert kinds == {
        **dict.fromkeys(EVENTS),
        "user-prompt-submit": "prompt",
        "post-tool-use": "tool",
        "stop": "reply",
    }


# The database refuses a memory holding "poison", whenever it is written (a constraint).
REFUSE_POISON = (
    "CREATE TRIGGER refuse_poison BEFORE INSERT ON memories WHEN NEW.content LIKE '%poison%'"
    " BEGIN SELECT RAISE(ABORT, 'poison refused'); END"
)


def refuse_poison(db: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        conn.execute(REFUSE_POISON)
        conn.commit()
    finally:
        conn.close()


def rejected(home: Path) -> list[Path]:
    folder = home / "spool"
    return sorted(folder.glob("*/rejected/*.json"), key=lambda path: path.name)


def test_a_record_the_database_refuses_is_moved_aside_and_the_rest_is_stored(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """A capture the database always refuses (a constraint) is no busy database: it is
    moved to rejected/ with one log line, and the captures after it are stored; it kept
    every replay failing, the worker's and the hooks', for good."""
    from memlane.errors import RecordRefused
    from memlane.hooks import spool

    memory.record_prompt("s1", "already here", project="billing-api")
    refuse_poison(settings.paths.db_path)
    with pytest.raises(RecordRefused, match="poison refused"):
        memory.record_prompt("s1", "a poison prompt", project="billing-api")
    for at, text in ((1.7e9, "a poison prompt"), (1.7e9 + 1, "a good prompt")):
        spool.keep(event_of(project, text), "billing-api", settings, at, notes=[])
    [poison, _good] = spooled(home)
    assert spool.replay(memory, settings) == (1, False)
    assert spooled(home) == []
    assert [path.name for path in rejected(home)] == [poison.name]
    [moved] = rejected(home)
    assert moved.stat().st_mode & 0o777 == 0o600
    assert moved.parent.stat().st_mode & 0o777 == 0o700
    assert "a poison prompt" in moved.read_text()  # kept as it was, for a look
    [line] = [line for line in log_lines(home) if "spool file" in line]
    assert f"{poison.name}: not stored (RecordRefused: " in line
    assert f"moved to {moved.parent}" in line
    assert [c for c, _, _ in prompts(home)] == ["already here", "a good prompt"]
    assert spool.replay(memory, settings) == (
        0,
        False,
    )  # nothing waits: the rejected one stays aside
    assert [path.name for path in rejected(home)] == [poison.name]


def test_a_hook_neither_spools_nor_is_blocked_by_a_refused_record(
    home: Path, project: Path, settings: Settings
) -> None:
    """A hook process whose capture the database refuses does not spool it (it would be
    refused again), and one replaying a refused capture moves it aside and goes on."""
    from memlane.hooks import spool

    ok(prompt_hook(home, project, "first prompt"))
    refuse_poison(settings.paths.db_path)
    done = prompt_hook(home, project, "a poison prompt")
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert spooled(home) == []
    [line] = log_lines(home)
    assert "RecordRefused" in line and "kept in the spool" not in line
    spool.keep(event_of(project, "poison kept by an older memlane"), "p", settings, 1.7e9, notes=[])
    spool.keep(event_of(project, "second prompt, spooled"), "p", settings, 1.7e9 + 1, notes=[])
    ok(prompt_hook(home, project, "third prompt"))
    assert spooled(home) == [] and len(rejected(home)) == 1
    assert [(c[:13], s) for c, s, _ in prompts(home)] == [
        ("first prompt", "s1:prompt:1"),
        ("second prompt", "s1:prompt:2"),
        ("third prompt", "s1:prompt:3"),
    ]


def keep_prompts(project: Path, settings: Settings, texts: list[str], at: float) -> None:
    """Spool a prompt of session s1 for each of ``texts``, a second apart from ``at``."""
    from memlane.hooks import spool

    for n, text in enumerate(texts):
        assert spool.keep(event_of(project, text), "billing-api", settings, at + n, notes=[])


def test_a_worker_pass_replays_a_bounded_number_of_files(
    home: Path,
    project: Path,
    memory: Memory,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One pass reads at most REPLAY_PER_PASS files, oldest first, and says more wait; the
    next pass goes on from there (it replayed the whole backlog, the runner's hooks waiting)."""
    from memlane.worker import relay_server

    monkeypatch.setattr(relay_server, "REPLAY_PER_PASS", 3)
    keep_prompts(project, settings, [f"spooled {n}" for n in range(7)], 1.7e9)
    server = HookRelay(memory, settings, environ=run_env(home))
    assert server._replay_spool() is True
    assert len(spooled(home)) == 4
    assert [c for c, _, _ in prompts(home)] == ["spooled 0", "spooled 1", "spooled 2"]
    assert server._replay_spool(idle=True) is True
    assert server._replay_spool(idle=True) is False
    assert spooled(home) == []
    assert [(c, s) for c, s, _ in prompts(home)] == [
        (f"spooled {n}", f"s1:prompt:{n + 1}") for n in range(7)
    ]


def test_the_worker_drains_a_backlog_in_passes_and_keeps_a_sessions_order(
    home: Path,
    project: Path,
    memory: Memory,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A relayed prompt arriving while a backlog waits (the pass before its write left
    files) goes to the spool after them: the spooled prompts keep their numbers; the
    passes that follow, with no hook queued, store the rest (the idle wait is an hour)."""
    import time

    from memlane.worker import relay_server

    monkeypatch.setattr(relay_server, "REPLAY_PER_PASS", 2)
    monkeypatch.setattr(relay_server, "SPOOL_IDLE_S", 3600.0)
    memory.record_prompt("s1", "prompt 1", project="billing-api", agent="claude-code")
    server = HookRelay(memory, settings, environ=run_env(home))
    assert server.start()
    env = run_env(home)
    try:
        assert flush(environ=env, timeout_s=30)  # the start's replay found nothing
        keep_prompts(project, settings, [f"prompt {n}" for n in range(2, 7)], time.time() - 60)
        ok(prompt_hook(home, project, "prompt 7"))
        assert flush(environ=env, timeout_s=30)
        assert server.handled == 1  # relayed, not run in its own process
        for _ in range(600):  # the passes that follow the prompt's, on the runner
            if not spooled(home):
                break
            time.sleep(0.05)
    finally:
        server.stop()
    assert spooled(home) == []
    assert [(c, s) for c, s, _ in prompts(home)] == [
        (f"prompt {n}", f"s1:prompt:{n}") for n in range(1, 8)
    ]


def test_a_hook_process_puts_its_capture_after_what_its_replay_left(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """A hook process replays at most REPLAY_IN_HOOK files; when more wait, its own prompt
    goes to the spool after them instead of taking a number before theirs."""
    from memlane.hooks import dispatch, spool

    memory.record_prompt("s1", "prompt 1", project="billing-api", agent="claude-code")
    backlog = dispatch.REPLAY_IN_HOOK + 2
    keep_prompts(project, settings, [f"prompt {n}" for n in range(2, backlog + 2)], 1.7e9)
    last = f"prompt {backlog + 2}"
    ok(prompt_hook(home, project, last))
    assert [json.loads(p.read_text())["prompt"] for p in spooled(home)][-1] == last
    assert len(spooled(home)) == 3 and log_lines(home) == []
    assert spool.replay(memory, settings) == (3, False)
    numbered = sorted((int(s.rsplit(":", 1)[1]), c) for c, s, _ in prompts(home))
    assert numbered == [(n, f"prompt {n}") for n in range(1, backlog + 3)]


def test_a_hook_puts_its_capture_after_what_another_process_is_replaying(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """Another process holds the replay (its lock): the captures it has not stored yet
    still wait, and a prompt of this moment goes after them (it took a number before
    theirs: the replay said nothing waits)."""
    import fcntl

    from memlane.hooks import spool

    memory.record_prompt("s1", "prompt 1", project="billing-api", agent="claude-code")
    keep_prompts(project, settings, ["prompt 2", "prompt 3"], 1.7e9)
    [folder] = {path.parent for path in spooled(home)}
    lock = os.open(folder / spool.LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert spool.replay(memory, settings) == (0, None)
        ok(prompt_hook(home, project, "prompt 4"))
    finally:
        os.close(lock)
    assert len(spooled(home)) == 3
    assert spool.replay(memory, settings) == (3, False)
    numbered = sorted((int(s.rsplit(":", 1)[1]), c) for c, s, _ in prompts(home))
    assert numbered == [(n, f"prompt {n}") for n in range(1, 5)]


def test_a_capture_behind_the_spool_is_kept_only_when_the_spool_keeps_its_kind(
    home: Path, project: Path, settings: Settings
) -> None:
    """Behind a backlog, a prompt goes to the spool; a tool event a transcript holds (the
    spool does not keep those) is stored as before, without a log line."""
    from memlane.hooks.dispatch import keep_behind
    from memlane.hooks.handlers import HookContext, store_own_capture

    prompt = HookContext(event_of(project, "after the backlog"), settings, "billing-api")
    tool = ls_call(project, "toolu_04")
    call = HookContext(normalize("post-tool-use", tool), settings, "billing-api")
    try:
        for ctx in (prompt, call):
            ctx.spool_first = keep_behind
            store_own_capture(ctx, "prompt" if ctx is prompt else "tool")
            assert ctx.captured
    finally:
        prompt.close()
        call.close()
    assert [json.loads(p.read_text())["prompt"] for p in spooled(home)] == ["after the backlog"]
    assert prompts(home) == [] and log_lines(home) == []
    assert rows(home, "SELECT source_id FROM memories WHERE kind = 'observation'") == [
        ("s1:tool:toolu_04",)
    ]


def unmovable(folder: Path, name: str) -> None:
    """A spool entry ``name`` in ``folder`` that no replay can remove nor move aside, root
    or not: a folder holding a file, with such folders where it would be moved."""
    for path in (folder / name, folder / "rejected" / name, folder / f".{name}.bad"):
        path.mkdir(parents=True)
        (path / "x").write_text("x")


def test_a_pass_that_can_remove_nothing_does_not_say_more_wait(
    home: Path,
    project: Path,
    memory: Memory,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spool files a replay can neither remove nor move (an unwritable folder) are read by
    every pass: a pass that removed none said more waited, and the worker's runner, which
    goes on at once then (no wait), read the same files again, without end."""
    from memlane.hooks import spool
    from memlane.worker import relay_server

    monkeypatch.setattr(relay_server, "REPLAY_PER_PASS", 2)
    kept = spool.keep(event_of(project, "after them"), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    stuck = [f"000000000000000{n}-1-1.json" for n in range(1, 4)]
    for name in stuck:
        unmovable(kept.parent, name)
    server = HookRelay(memory, settings, environ=run_env(home))
    for _ in range(2):
        assert server._replay_spool(idle=True) is False
        assert server._spool_more is False and server._spool_failure == ""
    assert spool.replay(memory, settings, limit=2) == (0, False)
    assert all((kept.parent / name).is_dir() for name in stuck)
    lines = [line for line in log_lines(home) if "spool file" in line]
    assert lines and all("2 could not be moved and stay in the spool" in x for x in lines)
    assert spool.replay(memory, settings) == (1, False)  # what can be stored is
    assert [c for c, _, _ in prompts(home)] == ["after them"]


def test_a_file_where_the_rejected_folder_goes_does_not_block_the_spool(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """No ``rejected`` folder can be made (a file has its name): a refused capture is
    renamed in place instead, and the captures behind it are stored (every replay raised,
    and none was)."""
    from memlane.hooks import spool

    refuse_poison(settings.paths.db_path)
    keep_prompts(project, settings, ["poison prompt", "a good prompt"], 1.7e9)
    [folder] = {path.parent for path in spooled(home)}
    (folder / spool.REJECTED).write_text("not a folder")
    assert spool.replay(memory, settings) == (1, False)
    assert spooled(home) == [] and [c for c, _, _ in prompts(home)] == ["a good prompt"]
    assert len(list(folder.glob(".*.bad"))) == 1


def test_a_replay_says_how_many_old_rejected_files_it_removed(
    home: Path,
    project: Path,
    memory: Memory,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rejected folder keeps at most MAX_FILES: the oldest there went with no word
    (the folder listed again for each file moved); the replay's one line counts them."""
    from memlane.hooks import spool

    monkeypatch.setattr(spool, "MAX_FILES", 3)
    kept = spool.keep(event_of(project, "a kept prompt"), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    for n in range(1, 6):
        (kept.parent / f"000000000000000{n}-1-1.json").write_bytes(b"not json")
    assert spool.replay(memory, settings) == (1, False)
    aside = sorted(path.name for path in (kept.parent / "rejected").iterdir())
    assert aside == [f"000000000000000{n}-1-1.json" for n in range(3, 6)]
    [line] = [line for line in log_lines(home) if "spool file" in line]
    assert "0000000000000001-1-1.json: not JSON" in line and "(and 4 more)" in line
    assert line.endswith("; removed the 2 oldest there (at most 3)")


def test_only_a_spool_file_name_loads_the_spool_module_on_a_prompt(
    home: Path, project: Path, settings: Settings
) -> None:
    """The dispatcher's look for waiting captures takes the spool's rule for a file's
    name: a file no replay reads (a note left there) loaded the spool module each prompt."""
    from memlane.hooks import spool

    kept = spool.keep(event_of(project, "first"), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    kept.unlink()
    (kept.parent / "README.txt").write_text("a note, no capture")
    assert "memlane.hooks.spool" not in imported_by_prompt_hook(home, project, "second")


def test_a_call_that_is_never_recorded_is_not_spooled(home: Path, project: Path) -> None:
    """On a busy database, a read of a background task's output file (what `pass show`
    printed, maybe) is not written to the spool: before this session's fix it was recorded,
    so spooled. A dropped tool is not either (classify drops it before the write waits)."""
    ok(prompt_hook(home, project, "first prompt about the billing retries"))

    def call(tool: str, tool_input: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        return {
            "session_id": "s1",
            "cwd": str(project),
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_response": {"stdout": "harbor-Orbit-7741!", "exit_code": 0},
            "tool_use_id": tool_use_id,
        }

    never = [
        call("TodoWrite", {"todos": []}, "toolu_01"),
        call("Bash", {"command": "tail -3 /tmp/claude-0/-w/tasks/bd0afab.output"}, "toolu_02"),
    ]
    with write_lock_held(home / "memlane.db"):
        for payload in never:
            ok(hook(home, "gemini:post-tool-use", json.dumps(payload).encode(), cwd=project))
        assert spooled(home) == []
        recorded = call("Bash", {"command": "mix test"}, "toolu_03")
        ok(hook(home, "gemini:post-tool-use", json.dumps(recorded).encode(), cwd=project))
        assert len(spooled(home)) == 1  # what is recorded is spooled on a busy database
