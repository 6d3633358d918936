"""A worker's life: it ends with its database or its idleness, and is found by its socket."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from memlane.config import load_settings
from memlane.hooks.relay import database_identity
from memlane.integrations import hook_argv
from memlane.runtime import read_runtime, read_token, runtime_file
from memlane.store.sqlite import SQLiteStore
from memlane.worker.lifecycle import CHECK_INTERVAL_S, Activity, exit_reason
from memlane.worker.server import wait_until_ready
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_hooks import payload
from tests.test_web_support import free_port, signed_in

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sockets")

# How long a test waits for a worker to act on its own; a safety net, not a measurement.
PATIENCE_S = 180


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = run_env(home)
    env.update(MEMLANE_EMBEDDER="none", MEMLANE_RELAY_TIMEOUT_MS="20000", **extra)
    return env


def _serve(home: Path, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    """A foreground `memlane serve`, its output in ``log`` (outside the home)."""
    home.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [*MEMLANE_CMD, "serve", "--port", str(free_port())],
            env=_env(home, **extra),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    settings, _ = load_settings(environ=_env(home, **extra))
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        if wait_until_ready(settings, timeout=1).healthy:
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"the worker exited: {log.read_text()}")
    proc.kill()
    raise AssertionError(f"the worker did not come up: {log.read_text()}")


def _exit_code(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(PATIENCE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the worker did not exit by itself") from None


def _memlane(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_interval_bounds_the_exit_after_a_deleted_home() -> None:
    # The check runs every CHECK_INTERVAL_S, and the graceful shutdown takes at most
    # 5 s more (uvicorn's timeout_graceful_shutdown): a deleted home is noticed in time.
    assert CHECK_INTERVAL_S * 2 + 5 <= 60


def test_worker_exits_when_its_home_is_deleted_and_hooks_go_to_the_new_home(
    home: Path, tmp_path: Path, project: Path
) -> None:
    log = tmp_path / "serve.out"
    proc = _serve(home, log)
    shutil.rmtree(home)
    # A hook right after the deletion: never into the deleted file, always into the new one.
    data = payload("post_tool_use_bash", session="after-delete", cwd=str(project))
    done = subprocess.run(
        hook_argv("post-tool-use"),
        input=data,
        capture_output=True,
        env=_env(home),
        cwd=project,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert _exit_code(proc) == 0
    said = log.read_text()
    # deleted, or already replaced by the new home's file when the check ran
    assert "worker exiting: its database" in said
    assert "was deleted" in said or "was replaced" in said
    store = SQLiteStore(home / "memlane.db")
    try:
        sessions = {m.session_id for m in store.list_memories(_all())}
    finally:
        store.close()
    assert "after-delete" in sessions


def _all() -> object:
    from memlane.models import MemoryFilter

    return MemoryFilter()


def test_idle_worker_exits_by_itself(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "serve.out"
    proc = _serve(home, log, MEMLANE_WORKER_IDLE_EXIT_MINUTES="0.05")
    assert _exit_code(proc) == 0
    assert "worker.idle_exit_minutes" in log.read_text()
    assert not runtime_file(load_settings(environ=_env(home))[0].paths).exists()


def _sign_in(base: str, token: str) -> dict[str, str]:
    """A dashboard tab's sign-in headers, as a browser gets them from `memlane dashboard`."""
    link = httpx.post(
        f"{base}/api/dashboard/login", headers={"Authorization": f"Bearer {token}"}
    ).json()["url"]
    return signed_in(link)


def test_an_open_dashboard_live_feed_keeps_the_worker(home: Path, tmp_path: Path) -> None:
    """A dashboard's live feed is one long request: while it is open the worker does not
    idle out (it did, and the page's feed then reconnected to whoever took the port)."""
    log = tmp_path / "serve.out"
    proc = _serve(home, log, MEMLANE_WORKER_IDLE_EXIT_MINUTES="0.05")  # 3 s
    try:
        paths = load_settings(environ=_env(home))[0].paths
        info, token = read_runtime(paths), read_token(paths)
        assert info is not None and token is not None
        tab = _sign_in(info.base_url, token)
        feed = http.client.HTTPConnection("127.0.0.1", info.port, timeout=30)
        feed.request("GET", "/api/events", headers=tab)
        assert feed.getresponse().status == 200
        # Three idle limits and two watchdog checks go by with only the feed open.
        time.sleep(3 * 3 + 2 * CHECK_INTERVAL_S)
        assert proc.poll() is None, log.read_text()
        assert "worker exiting" not in log.read_text()
        feed.close()  # the dashboard is closed: now the worker is idle
        assert _exit_code(proc) == 0
        assert "worker.idle_exit_minutes" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_requests_without_the_token_do_not_keep_the_worker(home: Path, tmp_path: Path) -> None:
    """Another local user sent `GET /health` (no token) every 20 s and the owner's worker
    never reached its idle exit; refused requests counted too."""
    import threading

    log = tmp_path / "serve.out"
    proc = _serve(home, log, MEMLANE_WORKER_IDLE_EXIT_MINUTES="0.05")  # 3 s
    paths = load_settings(environ=_env(home))[0].paths
    info = read_runtime(paths)
    assert info is not None
    done = threading.Event()

    def knock() -> None:
        while not done.wait(0.5):
            for path in ("/health", "/api/stats"):
                try:
                    httpx.get(f"{info.base_url}{path}", timeout=2)
                except httpx.HTTPError:
                    return  # the worker is gone

    knocker = threading.Thread(target=knock, daemon=True)
    knocker.start()
    try:
        assert _exit_code(proc) == 0
        assert "worker.idle_exit_minutes" in log.read_text()
    finally:
        done.set()
        knocker.join(timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_status_and_stop_find_a_worker_by_its_socket(home: Path, tmp_path: Path) -> None:
    proc = _serve(home, tmp_path / "serve.out")
    try:
        paths = load_settings(environ=_env(home))[0].paths
        assert read_runtime(paths) is not None
        runtime_file(paths).unlink()  # e.g. a cleanup of the run directory
        status = _memlane(home, "status", "--json")
        assert status.returncode == 0, status.stderr
        record = json.loads(status.stdout)
        assert record["pid"] == proc.pid and record["running"] is True
        assert "socket" in record["detail"]
        stopped = _memlane(home, "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert f"pid {proc.pid}" in stopped.stdout and "socket" in stopped.stdout
        assert _exit_code(proc) == 0
        assert _memlane(home, "status").returncode == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- the rule itself, on real files --------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_exit_reason_follows_the_file_and_the_idle_clock(home: Path) -> None:
    settings, _ = load_settings(overrides={"worker.idle_exit_minutes": 2})
    # Held open like the worker holds it: a deleted file keeps its inode, so a new file at
    # the same path cannot get the same number.
    held = SQLiteStore(settings.database, create_dir=True)
    identity = database_identity(settings.database)
    clock = _Clock()
    activity = Activity(clock)
    assert exit_reason(settings, identity, activity) is None
    clock.now += 119
    assert exit_reason(settings, identity, activity) is None
    clock.now += 1
    assert "idle_exit_minutes" in (exit_reason(settings, identity, activity) or "")
    assert exit_reason(settings, identity, activity, busy=True) is None  # still embedding
    activity.touch()
    assert exit_reason(settings, identity, activity) is None
    db = Path(settings.database)
    copy = db.read_bytes()
    db.unlink()
    assert "was deleted" in (exit_reason(settings, identity, activity) or "")
    db.write_bytes(copy)
    assert "was replaced" in (exit_reason(settings, identity, activity) or "")
    held.close()


def test_a_request_counts_as_activity_until_it_is_answered() -> None:
    clock = _Clock()
    activity = Activity(clock)
    clock.now += 50
    assert activity.idle_seconds() == 50
    activity.begin()  # a live feed opens
    clock.now += 10**6
    assert activity.idle_seconds() == 0
    activity.begin()
    activity.end()
    assert activity.idle_seconds() == 0  # one still open
    clock.now += 5
    activity.end()
    clock.now += 7
    assert activity.idle_seconds() == 7  # counted from its end


def test_idle_exit_zero_means_never(home: Path) -> None:
    settings, warnings = load_settings(overrides={"worker.idle_exit_minutes": 0})
    assert not warnings
    SQLiteStore(settings.database, create_dir=True).close()
    clock = _Clock()
    activity = Activity(clock)
    clock.now += 10**9
    assert exit_reason(settings, database_identity(settings.database), activity) is None


def test_idle_exit_minutes_is_validated(home: Path) -> None:
    settings, warnings = load_settings(overrides={"worker.idle_exit_minutes": -5})
    assert settings.worker__idle_exit_minutes == 30  # the default: out of range, not clamped
    assert warnings and "worker.idle_exit_minutes" in warnings[0]
    settings, warnings = load_settings(overrides={"worker.idle_exit_minutes": "soon"})
    assert settings.worker__idle_exit_minutes == 30
    assert "worker.idle_exit_minutes" in warnings[0]
