"""A database target's password stays off command lines, out of output and out of file names.

Every local user can read a process's command line (``/proc/PID/cmdline``, ``ps``), while
its environment is its owner's. The README's PostgreSQL setup puts the password in
``MEMLANE_DB``; the processes memlane starts (the worker, background maintenance, the
SessionEnd tail) get the database in their environment, never as ``--db``.

The spawn tests need no PostgreSQL: the URL points at a socket of the test that takes the
connection and never answers, so the child waits there (its first packet names the database
it uses) while the test reads every command line on the machine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memlane.config import Settings, display_target, load_settings
from memlane.errors import InvalidInput
from memlane.store import open_store
from tests.conftest import one_line_error, run_memlane

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def command_lines_holding(secret: str) -> list[str]:
    """The command line of every process on this machine that holds ``secret``."""
    found = []
    needle = secret.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if needle in argv:
            found.append(argv.replace(b"\0", b" ").decode(errors="replace"))
    return found


def pids_with_environment(line: str) -> list[int]:
    """Processes whose environment holds the entry ``line`` (``KEY=VALUE``)."""
    needle = line.encode() + b"\0"
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


class SilentServer:
    """A TCP listener that takes connections, keeps the first packet of each and never
    answers: a PostgreSQL client waits there (up to its connect timeout)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.packets: list[bytes] = []
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._held.append(conn)
            conn.settimeout(30)
            try:
                head = conn.recv(4)
                size = int.from_bytes(head, "big")
                body = b""
                while len(body) < size - 4:
                    chunk = conn.recv(size - 4 - len(body))
                    if not chunk:
                        break
                    body += chunk
            except OSError:
                continue
            self.packets.append(body)

    def wait_for_packet(self) -> bytes:
        deadline = time.monotonic() + 60  # a child process's start on a loaded machine
        while not self.packets and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.packets, "no process connected to the database in the URL"
        return self.packets[0]

    def close(self) -> None:
        self.sock.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def spawn_worker(settings: Settings) -> None:
    from memlane.hooks.agents import normalize
    from memlane.hooks.handlers import HookContext, start_worker

    ctx = HookContext(normalize("session-start", {"session_id": "s"}), settings, "p")
    assert start_worker(ctx)


def spawn_maintenance(settings: Settings) -> None:
    from memlane.maintenance import spawn_background

    spawn_background(settings)


def spawn_tail(settings: Settings) -> None:
    from memlane.hooks.agents import normalize
    from memlane.hooks.handlers import HookContext, spawn_detached

    ctx = HookContext(normalize("session-end", {"session_id": "s"}), settings, "p")
    spawn_detached(ctx, ["-m", "memlane.hooks.tail", "s"])


@pytest.mark.parametrize(
    ("spawn", "command"),
    [
        (spawn_worker, "memlane serve"),
        (spawn_maintenance, "memlane maintain --background"),
        (spawn_tail, "memlane.hooks.tail s"),
    ],
)
def test_a_spawned_process_gets_the_database_url_in_its_environment_not_its_command_line(
    home: Path,
    silent: SilentServer,
    spawn: Callable[[Settings], None],
    command: str,
) -> None:
    """The worker a SessionStart hook starts, the maintenance a Stop hook starts and the
    tail of a SessionEnd hook had ``--db postgresql://user:PASSWORD@…`` on their command
    line, where every local user read it."""
    password = f"pw-{uuid.uuid4().hex}"
    dbname = f"db_{uuid.uuid4().hex[:8]}"
    url = (
        f"postgresql://someone:{password}@127.0.0.1:{silent.port}/{dbname}"
        "?sslmode=disable&gssencmode=disable"
    )
    settings, _ = load_settings(db_target=url)  # as `memlane --db URL` or MEMLANE_DB=URL
    spawn(settings)
    children: list[int] = []
    try:
        startup = silent.wait_for_packet()
        # the child opened the database of the URL (user and database of its startup packet)
        assert b"user\0someone\0" in startup and b"database\0" + dbname.encode() + b"\0" in startup
        children = pids_with_environment(f"MEMLANE_DB={url}")
        assert children, "the child was not given MEMLANE_DB"
        lines = [(Path(f"/proc/{pid}/cmdline").read_bytes()) for pid in children]
        assert any(command.encode() in line.replace(b"\0", b" ") for line in lines), lines
        assert command_lines_holding(password) == []
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)


def test_a_command_line_db_reaches_the_spawned_process_too(home: Path, tmp_path: Path) -> None:
    """``memlane --db PATH serve --daemon``: the worker serves PATH, named in its environment
    (one rule for every target), and its ``--db`` still wins over a MEMLANE_DB of the shell."""
    from tests.test_web_support import free_port

    target = tmp_path / "elsewhere.db"
    assert run_memlane(home, "--db", str(target), "save", "kept elsewhere").returncode == 0
    extra = {
        "MEMLANE_DB": str(tmp_path / "not-this.db"),
        "MEMLANE_EMBEDDER": "none",
        "MEMLANE_WORKER_PORT": str(free_port()),
    }
    started = run_memlane(home, "--db", str(target), "serve", "--daemon", env=extra)
    try:
        assert started.returncode == 0, started.stderr
        status = json.loads(run_memlane(home, "status", "--json").stdout)
        assert status["db"] == str(target)
        pid = int(status["pid"])
        assert str(target).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
        assert f"MEMLANE_DB={target}\0".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    finally:
        assert run_memlane(home, "stop").returncode == 0
    assert not (tmp_path / "not-this.db").exists()


def test_a_relative_command_line_db_is_the_callers_file(home: Path, tmp_path: Path) -> None:
    """The worker runs in the data folder: ``--db rel.db`` handed over as typed made it open
    (and create) ``rel.db`` there instead of the caller's."""
    from tests.test_web_support import free_port

    workdir = tmp_path / "work"
    workdir.mkdir()
    saved = run_memlane(home, "--db", "rel.db", "save", "kept here", cwd=workdir)
    assert saved.returncode == 0, saved.stderr
    extra = {"MEMLANE_EMBEDDER": "none", "MEMLANE_WORKER_PORT": str(free_port())}
    started = run_memlane(home, "--db", "rel.db", "serve", "--daemon", env=extra, cwd=workdir)
    try:
        assert started.returncode == 0, started.stderr
        status = json.loads(run_memlane(home, "status", "--json", cwd=workdir).stdout)
        pid = int(status["pid"])
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert f"MEMLANE_DB={workdir / 'rel.db'}\0".encode() in environ
        # Asked again by the relative name: the same file, so the worker wanted is there.
        again = run_memlane(home, "--db", "rel.db", "serve", "--daemon", env=extra, cwd=workdir)
        assert again.returncode == 0, again.stderr
        assert f"already running at {status['url']} (pid {pid})" in again.stdout
    finally:
        assert run_memlane(home, "stop", cwd=workdir).returncode == 0
    assert sorted(p.name for p in workdir.iterdir() if p.suffix == ".db") == ["rel.db"]


# -- with a real PostgreSQL ------------------------------------------------------------


def password_of(dsn: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    password = str(conninfo_to_dict(dsn)["password"])
    assert len(password) >= 8
    return password


@pytest.mark.postgres
def test_worker_autostarted_on_postgres_keeps_the_password_off_command_lines(
    home: Path, project: Path, pg_dsn: str
) -> None:
    """The README's setup, ``MEMLANE_DB=postgresql://user:secret@…``: a prompt hook starts
    the worker, which serves that database and takes the next prompt over the relay."""
    from memlane.hooks.relay import flush, relay
    from memlane.paths import state_paths
    from memlane.runtime import read_runtime
    from memlane.service import open as open_memory
    from tests.test_hook_relay import worker_started_by_a_prompt

    with worker_started_by_a_prompt(home, project, {"MEMLANE_DB": pg_dsn}) as (env, data):
        info = read_runtime(state_paths(env))
        assert info is not None and info.db.startswith("postgresql://memlane@127.0.0.1:")
        assert command_lines_holding(password_of(pg_dsn)) == []
        # the autostarted worker takes a relayed hook (same environment, same database)
        assert relay("user-prompt-submit", data, environ=env, timeout_s=20) is not None
        assert flush(environ=env)
        with open_memory(pg_dsn) as memory:
            session = memory.find_session("s")
            assert session is not None and session.prompt_count == 2


@pytest.mark.postgres
def test_background_maintenance_runs_on_the_postgres_database(
    home: Path, settings: Settings, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from memlane.maintenance import MAINTAIN, spawn_background
    from memlane.store.postgres import PostgresStore

    monkeypatch.setenv("MEMLANE_MAINTENANCE_ENABLED", "true")  # the child's environment
    spawn_background(replace(settings, db_target=pg_dsn))
    store = PostgresStore(pg_dsn, pool_size=1)
    try:
        deadline = time.monotonic() + 60
        while store.last_maintenance(MAINTAIN) is None and time.monotonic() < deadline:
            assert command_lines_holding(password_of(pg_dsn)) == []
            time.sleep(0.05)
        assert store.last_maintenance(MAINTAIN) is not None, (
            settings.paths.log_dir / "maintenance.log"
        ).read_text()
    finally:
        store.close()


# -- shown targets and errors -----------------------------------------------------------

SECRET = "S3cr3tPW_zz9"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://memlane:{SECRET}@127.0.0.1:1/memlane_test",
        f"postgresql://memlane:{SECRET}@[::1/memlane_test",  # malformed: urlsplit refused it
        f"postgresql://memlane:{SECRET}@127.0.0.1:abc/memlane_test",
        f"postgresql://memlane:12/{SECRET}@127.0.0.1/memlane_test",  # an unescaped "/"
        f"postgresql://memlane:ab@{SECRET}@127.0.0.1/memlane_test",  # an unescaped "@"
        f"postgresql://memlane@127.0.0.1/memlane_test?sslmode=require&password={SECRET}",
    ],
)
def test_config_show_names_the_database_without_its_password(home: Path, url: str) -> None:
    for args in (("config", "show"), ("config", "show", "--json")):
        done = run_memlane(home, *args, env={"MEMLANE_DB": url})
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
    shown = run_memlane(home, "config", "show", env={"MEMLANE_DB": url}).stdout.splitlines()[-1]
    assert shown.startswith("# database: postgresql://memlane@")
    assert SECRET not in display_target(url)


@pytest.mark.postgres
@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://memlane:{SECRET}@[::1/memlane_test",  # libpq quoted the whole URL
        f"postgresql://memlane:{SECRET}%zz@127.0.0.1:1/memlane_test",  # ... and the bad token
        f"postgresql://memlane:{SECRET}@127.0.0.1:abc/memlane_test",
        f"postgresql://memlane:ab@{SECRET}@127.0.0.1:1/memlane_test",  # the rest is the host
        f"postgresql://memlane@127.0.0.1:1/memlane_test?password={SECRET}%zz",
    ],
)
def test_a_url_libpq_refuses_is_reported_without_its_password(home: Path, url: str) -> None:
    done = run_memlane(home, "--db", url, "stats")
    line = one_line_error(done, 4)
    assert SECRET not in line, line
    assert "postgresql://memlane@" in line


@pytest.mark.postgres
def test_a_url_libpq_cannot_parse_is_said_to_be_one() -> None:
    """The message names the problem and the fix, and its cause (in a logged traceback)
    does not carry the password either."""
    from memlane.errors import StoreError

    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://memlane:{SECRET}%zz@127.0.0.1:1/memlane_test")
    message = str(caught.value)
    assert message.startswith("invalid PostgreSQL URL postgresql://memlane@127.0.0.1:1/")
    assert "%40" in message and SECRET not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


KEYWORD_DSNS = [
    f"host=127.0.0.1 port=5432 user=memlane password={SECRET} dbname=memlane_test",
    f"dbname=memlane_test password = {SECRET}",
    f"password={SECRET}/x host=db",  # its "directory" would have been created by --create
]


@pytest.mark.parametrize("dsn", KEYWORD_DSNS)
def test_a_libpq_keyword_string_is_refused_and_no_file_is_created(
    home: Path, tmp_path: Path, dsn: str
) -> None:
    """It was taken for a SQLite path: an empty database named after the connection string,
    password included, appeared in the working directory."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for args in (("stats",), ("--create", "save", "x"), ("serve", "--port", "1")):
        done = run_memlane(home, "--db", dsn, *args, cwd=cwd)
        line = one_line_error(done, 2)
        assert "libpq keyword connection string" in line and "postgresql://" in line
        assert SECRET not in line
        done = run_memlane(home, *args, cwd=cwd, env={"MEMLANE_DB": dsn})
        assert SECRET not in one_line_error(done, 2)
    assert list(cwd.iterdir()) == []
    shown = run_memlane(home, "config", "show", env={"MEMLANE_DB": dsn}).stdout
    assert SECRET not in shown


def test_only_libpq_keywords_make_a_keyword_string() -> None:
    from memlane.config import is_libpq_keywords

    assert is_libpq_keywords("host=db user=me password=x dbname=m")
    assert is_libpq_keywords("service=team")
    assert is_libpq_keywords("host = db dbname = m")
    paths = ["memlane.db", "/data/a=b.db", "/tmp/run=1/memlane.db", "postgresql://u@h/d?x=1"]
    # A keyword inside a path component is a directory's name (review: these were refused).
    paths += ["/data/user=me/memlane.db", "/srv/dbname=prod/mem.db", "./host=a/x.db"]
    for path in paths:
        assert not is_libpq_keywords(path), path
    with pytest.raises(InvalidInput, match="postgresql:// URL"):
        open_store("host=db password=x")


def test_restore_asks_about_the_database_without_its_password(home: Path, tmp_path: Path) -> None:
    backup = tmp_path / "backup.db"
    backup.write_bytes(b"")
    url = f"postgresql://memlane:{SECRET}@127.0.0.1:1/memlane_test"
    done = run_memlane(home, "restore", str(backup), stdin="n\n", env={"MEMLANE_DB": url})
    assert "replace postgresql://memlane@127.0.0.1:1/memlane_test with" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = run_memlane(home, "--db", KEYWORD_DSNS[0], "restore", str(backup), "-y", cwd=cwd)
    assert "libpq keyword connection string" in one_line_error(done, 2)
    assert list(cwd.iterdir()) == []
