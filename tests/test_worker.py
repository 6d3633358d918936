"""The worker process from the outside: serve, status, stop, dashboard, locks, ports."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memlane.config import Settings
from memlane.paths import StatePaths
from memlane.runtime import (
    LOGIN_CODE_TTL_S,
    SIGNIN_PAGE_PREFIX,
    SPAWN_STAMP,
    WorkerInfo,
    read_runtime,
    read_token,
    remove_stale_signin_pages,
    runtime_file,
    spawn_worker_detached,
    token_file,
    write_runtime,
    write_signin_page,
)
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.worker.server import EmbeddingLoop, bind_socket, worker_status
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import free_port, signed_in


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = run_env(home)
    env.update(MEMLANE_EMBEDDER="toy", **extra)
    return env


def _memlane(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args], env=_env(home, **extra), capture_output=True, text=True, timeout=60
    )


def _paths(home: Path) -> StatePaths:
    return StatePaths(home, home, home / "logs", home / "run")


def _start(home: Path, *args: str, **extra: str) -> subprocess.Popen[bytes]:
    """`memlane serve …` in the background; its output goes to <home>/serve.out."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / "serve.out").open("ab") as out:
        return subprocess.Popen(
            [*MEMLANE_CMD, *args], env=_env(home, **extra), stdout=out, stderr=subprocess.STDOUT
        )


def _wait_for_worker(home: Path, proc: subprocess.Popen[bytes] | None = None) -> WorkerInfo:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = read_runtime(_paths(home))
        if info is not None:
            try:
                if httpx.get(f"{info.base_url}/health", timeout=1).status_code == 200:
                    return info
            except httpx.HTTPError:
                pass
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"worker exited: {(home / 'serve.out').read_text()}")
        time.sleep(0.05)
    raise AssertionError("the worker did not come up")


@pytest.fixture
def worker(home: Path) -> Iterator[tuple[subprocess.Popen[bytes], WorkerInfo]]:
    proc = _start(home, "serve", "--port", str(free_port()))
    info = _wait_for_worker(home, proc)
    yield proc, info
    if proc.poll() is None:
        proc.terminate()
        proc.wait(15)


def test_serve_status_stop(home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]) -> None:
    proc, info = worker
    assert info.pid == proc.pid
    token_path = token_file(_paths(home))
    assert token_path.stat().st_mode & 0o777 == 0o600
    assert runtime_file(_paths(home)).stat().st_mode & 0o777 == 0o600
    status = _memlane(home, "status", "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["healthy"] is True and data["pid"] == proc.pid
    assert data["url"] == info.base_url
    # Never two workers on one database.
    second = _memlane(home, "serve", "--port", str(free_port()))
    assert second.returncode == 6
    assert "already running" in second.stderr
    assert f"(pid {proc.pid}, {info.base_url}); use `memlane status` or" in second.stderr
    # In the background, a running worker is what the user asked for: said, exit 0.
    daemon = _memlane(home, "serve", "--daemon")
    assert daemon.returncode == 0, daemon.stderr
    assert daemon.stdout == f"memlane worker already running at {info.base_url} (pid {proc.pid})\n"
    # Unless it serves another database than the one asked for.
    other = _memlane(home, "--db", str(home / "other.db"), "serve", "--daemon")
    assert other.returncode == 6, other.stderr
    assert "serves another database" in other.stderr and str(home / "other.db") in other.stderr
    stopped = _memlane(home, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"pid {proc.pid}" in stopped.stdout
    assert proc.wait(15) == 0  # graceful: exit code 0 after SIGTERM
    assert not runtime_file(_paths(home)).exists()
    after = _memlane(home, "status")
    assert after.returncode == 1 and "not running" in after.stdout


def test_the_401_names_the_token_file(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    _, info = worker
    refused = httpx.get(f"{info.base_url}/api/stats", timeout=10)
    assert refused.status_code == 401
    message = refused.json()["message"]
    assert f"the token is in {token_file(_paths(home))};" in message
    assert "`memlane status`" in message


def test_sigterm_ends_open_live_streams_promptly(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    proc, info = worker
    token = read_token(_paths(home))
    with httpx.stream(
        "GET",
        f"{info.base_url}/api/events",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,  # a loaded machine must not end the stream from our side
    ) as stream:
        assert stream.status_code == 200
        proc.send_signal(signal.SIGTERM)
        for _ in stream.iter_bytes():
            pass  # the server closes the stream
        assert proc.wait(30) == 0
    assert not runtime_file(_paths(home)).exists()
    # The stream ended because the worker closed it, not because uvicorn gave up
    # waiting for it after timeout_graceful_shutdown and cancelled it.
    served = (home / "serve.out").read_text(encoding="utf-8", errors="replace")
    assert "graceful shutdown exceeded" not in served, served


def test_taken_default_port_picks_a_free_one(home: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    taken = blocker.getsockname()[1]
    proc = _start(home, "serve", MEMLANE_WORKER_PORT=str(taken))
    try:
        info = _wait_for_worker(home, proc)
        assert info.port != taken
        # An explicit --port that is taken is an error, not silently moved.
        explicit = _memlane(home.parent / "other-home", "serve", "--port", str(taken))
        assert explicit.returncode == 6
        assert f"cannot listen on 127.0.0.1:{taken}" in explicit.stderr
    finally:
        proc.terminate()
        proc.wait(15)
        blocker.close()


def test_stale_runtime_file_is_detected_and_cleaned(home: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    paths = _paths(home)
    write_runtime(paths, WorkerInfo(dead.pid, "127.0.0.1", 1, time.time(), "x.db"))
    status = _memlane(home, "status")
    assert status.returncode == 1 and "stale" in status.stdout
    # A live pid of another program is not taken for a worker either.
    write_runtime(paths, WorkerInfo(os.getpid(), "127.0.0.1", 1, time.time(), "x.db"))
    assert "another program" in _memlane(home, "status").stdout
    assert "stale" in _memlane(home, "stop").stdout
    assert not runtime_file(paths).exists()
    write_runtime(paths, WorkerInfo(dead.pid, "127.0.0.1", 1, time.time(), "x.db"))
    proc = _start(home, "serve", "--port", str(free_port()))
    try:
        assert _wait_for_worker(home, proc).pid == proc.pid
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def test_binding_beyond_loopback_needs_the_flag(home: Path) -> None:
    refused = _memlane(home, "serve", "--host", "0.0.0.0")
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr


def test_daemon_dashboard_url_and_stop(home: Path) -> None:
    port = free_port()
    started = _memlane(home, "serve", "--daemon", "--port", str(port))
    try:
        assert started.returncode == 0, started.stderr
        assert f"127.0.0.1:{port}" in started.stdout
        url = _memlane(home, "dashboard", "--no-open")
        assert url.returncode == 0, url.stderr
        link = url.stdout.strip()
        assert link.startswith(f"http://127.0.0.1:{port}/auth?code=")
        redeemed = httpx.get(link, follow_redirects=False)
        assert redeemed.status_code == 303
        assert "HttpOnly" in redeemed.headers["set-cookie"]
        page = httpx.get(f"http://127.0.0.1:{port}/", cookies=redeemed.cookies)
        assert page.status_code == 200 and "/static/js/main.js" in page.text
        assert (home / "logs" / "worker.log").stat().st_mode & 0o777 == 0o600
    finally:
        stopped = _memlane(home, "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout


def _fake_browser(tmp_path: Path, exit_code: int = 0) -> tuple[Path, Path]:
    """A BROWSER that records its argv, environment and the page it was given."""
    record = tmp_path / "browser-record"
    script = tmp_path / "fake-browser.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$@\" > {record}.argv\n"
        f"env > {record}.env\n"
        f'case "$1" in file://*) cat "${{1#file://}}" > {record}.page ;; esac\n'
        f"exit {exit_code}\n"
    )
    script.chmod(0o700)
    return script, record


def _browser_env(script: Path) -> dict[str, str]:
    """Only ``script`` is a browser: no display, no console browsers."""
    return {"BROWSER": str(script), "DISPLAY": "", "WAYLAND_DISPLAY": "", "TERM": ""}


def test_dashboard_never_puts_the_sign_in_code_on_a_command_line(
    home: Path, tmp_path: Path
) -> None:
    """Every local user can read /proc/PID/cmdline: the browser gets a private page that
    forwards to the one-time URL, and following it signs in."""
    port = free_port()
    script, record = _fake_browser(tmp_path)
    started = _memlane(home, "serve", "--daemon", "--port", str(port))
    try:
        assert started.returncode == 0, started.stderr
        opened = _memlane(home, "dashboard", **_browser_env(script))
        assert opened.returncode == 0, opened.stderr
        assert "/auth" not in opened.stdout  # a browser opened: nothing to copy
        argv = Path(f"{record}.argv").read_text().splitlines()
        assert len(argv) == 1 and argv[0].startswith("file://"), argv
        page = Path(argv[0][len("file://") :])
        assert page.parent == home / "run"
        assert page.stat().st_mode & 0o777 == 0o600
        html = Path(f"{record}.page").read_text()
        assert "<script" not in html
        found = re.search(r'http-equiv="refresh" content="0; url=([^"]+)"', html)
        assert found is not None, html
        link = found.group(1)
        assert link.startswith(f"http://127.0.0.1:{port}/auth?code=")
        code = link.split("code=", 1)[1]
        assert len(code) >= 32
        assert code not in Path(f"{record}.argv").read_text()
        assert code not in Path(f"{record}.env").read_text()
        stats = httpx.get(f"http://127.0.0.1:{port}/api/stats", headers=signed_in(link))
        assert stats.status_code == 200
        assert httpx.get(link, follow_redirects=False).status_code == 403  # once only
    finally:
        stopped = _memlane(home, "stop")
    assert stopped.returncode == 0


def test_dashboard_without_a_browser_prints_the_url_and_keeps_no_page(
    home: Path, tmp_path: Path
) -> None:
    port = free_port()
    script, _ = _fake_browser(tmp_path, exit_code=1)
    started = _memlane(home, "serve", "--daemon", "--port", str(port))
    try:
        assert started.returncode == 0, started.stderr
        opened = _memlane(home, "dashboard", **_browser_env(script))
        assert opened.returncode == 0, opened.stderr
        assert f"browser (works once, for 2 minutes): http://127.0.0.1:{port}/auth?code=" in (
            opened.stdout
        )
        assert list((home / "run").glob(f"{SIGNIN_PAGE_PREFIX}*")) == []
    finally:
        _memlane(home, "stop")


def test_sign_in_pages_are_private_and_removed_once_their_code_is_dead(tmp_path: Path) -> None:
    paths = _paths(tmp_path / "home")
    url = 'http://127.0.0.1:9/auth?code=abc"><script>x</script>'
    page = write_signin_page(paths, url)
    assert page.parent == paths.runtime_dir and page.stat().st_mode & 0o777 == 0o600
    assert paths.runtime_dir.stat().st_mode & 0o777 == 0o700
    text = page.read_text()
    assert "<script>" not in text and "&quot;&gt;&lt;script&gt;" in text
    other = write_signin_page(paths, url)
    assert other != page  # two `memlane dashboard` at once get a page each
    target = tmp_path / "not-a-page"
    target.write_text("kept")
    link = paths.runtime_dir / f"{SIGNIN_PAGE_PREFIX}link.html"
    link.symlink_to(target)
    now = time.time()
    os.utime(page, (now - LOGIN_CODE_TTL_S - 5,) * 2)
    os.utime(link, (now - LOGIN_CODE_TTL_S - 5,) * 2, follow_symlinks=False)
    assert sorted(remove_stale_signin_pages(paths, now=now)) == sorted([page, link])
    assert not page.exists() and not link.is_symlink()
    assert other.exists() and target.read_text() == "kept"  # fresh page, link's target kept
    assert remove_stale_signin_pages(paths, now=now + LOGIN_CODE_TTL_S + 1) == [other]


def _stop_spawned(paths: StatePaths, pid: int) -> None:
    """Stop a worker spawn_worker_detached started, waiting until it removed its record."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while runtime_file(paths).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_spawn_detached_is_rate_limited(home: Path, settings: Settings) -> None:
    paths = settings.paths
    env = _env(home)
    env["MEMLANE_WORKER_PORT"] = str(free_port())
    pid = spawn_worker_detached(paths, env=env)
    try:
        assert pid is not None
        assert spawn_worker_detached(paths, env=env) is None  # a start is already in flight
        info = _wait_for_worker(home)
        assert info.pid == pid
        assert worker_status(settings).healthy
        assert spawn_worker_detached(paths, env=env, min_interval_s=0) is None  # running
    finally:
        _stop_spawned(paths, pid)


def test_a_worker_record_whose_pid_another_program_took_does_not_stop_autostart(
    home: Path, settings: Settings
) -> None:
    """The worker died and its pid went to another program (the record lives in the
    state folder, across reboots): autostart took the record for a running worker and
    every hook ran in-process, for good."""
    paths = settings.paths
    env = _env(home)
    env["MEMLANE_WORKER_PORT"] = str(free_port())
    other = subprocess.Popen(["sleep", "60"])
    pid = None
    try:
        write_runtime(paths, WorkerInfo(other.pid, "127.0.0.1", 1, time.time(), "x.db"))
        pid = spawn_worker_detached(paths, env=env, min_interval_s=0)
        assert pid is not None
        assert _wait_for_worker(home).pid == pid
    finally:
        other.kill()
        other.wait()
        if pid is not None:
            _stop_spawned(paths, pid)


def test_a_spawn_stamp_from_a_clock_that_was_ahead_does_not_stop_autostart(
    home: Path, settings: Settings
) -> None:
    paths = settings.paths
    env = _env(home)
    env["MEMLANE_WORKER_PORT"] = str(free_port())
    paths.runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = paths.runtime_dir / SPAWN_STAMP
    stamp.write_text("later")
    ahead = time.time() + 180 * 86400
    os.utime(stamp, (ahead, ahead))
    pid = spawn_worker_detached(paths, env=env)
    try:
        assert pid is not None
        assert _wait_for_worker(home).pid == pid
    finally:
        if pid is not None:
            _stop_spawned(paths, pid)


def test_embedding_loop_embeds_missing_rows(memory: Memory) -> None:
    ids = [memory.save(f"note number {i} about caching", project="p").id for i in range(5)]
    loop = EmbeddingLoop(memory, "toy", batch=3)
    assert loop.run_once() == 3
    assert loop.run_once() == 2
    assert loop.run_once() == 0
    assert memory.store.embedding_counts() == {"toy-64": len(ids)}
    loop.start()
    memory.save("a later note", project="p")
    deadline = time.monotonic() + 10
    while memory.store.embedding_counts()["toy-64"] < 6:
        assert time.monotonic() < deadline, loop.last_error
        time.sleep(0.05)
    loop.stop()
    assert loop.model == "toy-64" and loop.last_error is None
    assert loop.state in ("idle", "embedding")


def test_the_first_vectors_embedded_make_prompts_hybrid(memory: Memory) -> None:
    """A worker started on memories without vectors (a first `memlane recover`) warmed up
    in keyword mode; the vectors it then embedded were never loaded, so every relayed
    prompt stayed keyword until some search asked for hybrid."""
    for i in range(3):
        memory.save(f"note number {i} about caching", project="p")
    loop = EmbeddingLoop(memory, memory.settings.embedder, batch=2)
    loop._warm_search()  # what the loop does first: no vector yet
    assert memory.search_engine.semantic_ready() is False
    assert loop.run_once() == 2
    assert memory.search_engine.semantic_ready() is True
    assert loop.run_once() == 1
    found = memory.search("caching notes", project="p", limit=5)
    assert found.mode == "hybrid" and len(found) == 3


def test_an_idle_embedding_loop_counts_only_after_a_commit(memory: Memory) -> None:
    """Every few seconds the idle loop asks whether anything is missing: the two counts
    read every row (~0.08 s at 1M), so they run only after something was committed."""
    memory.save("a note about caching", project="p")
    loop = EmbeddingLoop(memory, "toy", batch=4)
    assert loop.run_once() == 1
    assert loop.run_once() == 0  # counted: nothing missing, the marker is kept
    statements: list[str] = []
    conn = memory.store.connection()  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        assert loop.run_once() == 0
        assert not any("count(" in sql.lower() for sql in statements), statements
        memory.update(1, content="a note about caching, edited")  # its vector is dropped
        assert loop.run_once() == 1
        assert any("count(" in sql.lower() for sql in statements)
    finally:
        conn.set_trace_callback(None)
    # Another connection's commit (a hook process writing the same file) shows too.
    other = open_memory(settings=memory.settings)
    try:
        other.save("a note from a hook process", project="p")
    finally:
        other.close()
    assert loop.run_once() == 1
    assert memory.store.embedding_counts() == {"toy-64": 2}


def test_embedding_stats_endpoint_reports_progress(memory: Memory) -> None:
    from tests.test_web_support import LiveServer

    for i in range(4):
        memory.save(f"memory {i} about vectors", project="p")
    loop = EmbeddingLoop(memory, "toy", batch=2)
    live = LiveServer(memory, embeddings=loop).start()
    try:
        stats = httpx.get(f"{live.base_url}/api/embeddings/stats", headers=live.auth()).json()
        assert stats["pending"] == 4 and stats["embedded"] == 0
        loop.start()
        deadline = time.monotonic() + 10
        while stats["pending"]:
            assert time.monotonic() < deadline, stats
            time.sleep(0.05)
            stats = httpx.get(f"{live.base_url}/api/embeddings/stats", headers=live.auth()).json()
        assert stats == {**stats, "model": "toy-64", "embedded": 4, "memories": 4}
        assert stats["state"] in ("idle", "embedding")
    finally:
        loop.stop()
        live.stop()


def test_bind_socket_fallback_and_explicit_conflict() -> None:
    first = bind_socket("127.0.0.1", 0, fallback=False)
    port = first.getsockname()[1]
    try:
        other = bind_socket("127.0.0.1", port, fallback=True)
        assert other.getsockname()[1] != port
        other.close()
        from memlane.errors import Conflict

        with pytest.raises(Conflict, match=str(port)):
            bind_socket("127.0.0.1", port, fallback=False)
    finally:
        first.close()


def test_real_worker_takes_relayed_hooks_until_it_stops(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo], tmp_path: Path
) -> None:
    from memlane.hooks.relay import flush, relay
    from memlane.integrations import hook_argv

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env = _env(home, MEMLANE_RELAY_TIMEOUT_MS="20000")
    data = json.dumps(
        {"session_id": "w1", "cwd": str(project), "prompt": "wire the retry to the queue"}
    ).encode()
    done = subprocess.run(
        [hook_argv("user-prompt-submit")[0], "-Ximporttime", *hook_argv("user-prompt-submit")[1:]],
        input=data, capture_output=True, env=env, cwd=project, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b""
    assert "memlane.hooks.relay" in done.stderr.decode()
    assert "memlane.hooks.dispatch" not in done.stderr.decode()  # the worker ran the hook
    assert flush(environ=env)
    with sqlite3.connect(home / "memlane.db") as conn:
        stored = conn.execute("SELECT content FROM memories WHERE kind = 'prompt'").fetchall()
    assert stored == [("wire the retry to the queue",)]
    status = json.loads(_memlane(home, "status", "--json").stdout)
    assert status["hook_relay"] == "relayed to the worker"
    other = json.loads(_memlane(home, "status", "--json", MEMLANE_RECALL_LIMIT="1").stdout)
    assert other["hook_relay"].startswith("run in their own processes")
    assert _memlane(home, "stop").returncode == 0
    worker[0].wait(15)
    assert relay("user-prompt-submit", data, environ=env) is None
