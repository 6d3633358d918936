"""Shared fixtures: every test gets its own MEMLANE_HOME with a real SQLite file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, settings

from memlane.config import Settings, load_settings
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.store.base import Store
from memlane.store.sqlite import SQLiteStore
from memlane.worker.relay_server import HookRelay

# Generated inputs are checked by what they produce, never by how fast they were drawn: the
# suite runs on loaded machines, and wall-clock limits belong in benchmarks. The draws are
# the same on every run (a fresh clone's CI sees what the last green run saw); explore new
# ones with `--hypothesis-seed N` or MEMLANE_HYPOTHESIS_EXPLORE=1.
settings.register_profile(
    "memlane",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=not os.environ.get("MEMLANE_HYPOTHESIS_EXPLORE"),
)
settings.load_profile("memlane")

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures" / "claude-code-transcripts"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private MEMLANE_HOME for the test; the worker is never auto-started."""
    root = tmp_path / "memlane-home"
    monkeypatch.setenv("MEMLANE_HOME", str(root))
    monkeypatch.setenv("MEMLANE_WORKER_AUTOSTART", "false")
    monkeypatch.setenv("MEMLANE_MAINTENANCE_ENABLED", "false")
    monkeypatch.delenv("MEMLANE_DB", raising=False)
    monkeypatch.delenv("MEMLANE_DISABLED", raising=False)
    return root


@pytest.fixture
def settings(home: Path) -> Settings:
    loaded, warnings = load_settings()
    assert not warnings
    return loaded


@pytest.fixture
def memory(settings: Settings) -> Iterator[Memory]:
    mem = open_memory(settings=settings)
    yield mem
    mem.close()


@pytest.fixture
def relay_worker(home: Path, memory: Memory, settings: Settings) -> Iterator[HookRelay]:
    """The worker's hook relay, in this process, serving ``memory`` at ``home``'s address."""
    server = HookRelay(memory, settings, environ=run_env(home))
    assert server.start()
    yield server
    server.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project directory ``billing-api`` (hook tests run inside it)."""
    root = tmp_path / "billing-api"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "payments").mkdir(parents=True)
    return root


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """A copy of the recorded Claude Code transcript of tests/data/hooks."""
    path = tmp_path / "transcript.jsonl"
    path.write_bytes((Path(__file__).parent / "data" / "hooks" / "transcript.jsonl").read_bytes())
    return path


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """The ``HOME`` of the user running setup (agents' and editors' settings live there)."""
    path = tmp_path / "user"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def other_user() -> Any:
    """Another local user (a throwaway system account; root only, else the test skips)."""
    from tests.other_user import runnable_account

    return runnable_account()


def run_env(home: Path) -> dict[str, str]:
    """Environment for subprocesses of the real `memlane` command."""
    env = dict(os.environ)
    env.update(
        MEMLANE_HOME=str(home),
        MEMLANE_WORKER_AUTOSTART="false",
        MEMLANE_MAINTENANCE_ENABLED="false",
    )
    env.pop("MEMLANE_DB", None)
    return env


# The web tests' ``server`` and ``client`` fixtures.
pytest_plugins = ["tests.web_fixtures"]

MEMLANE_CMD = [sys.executable, "-m", "memlane"]


def without_dac_override() -> list[str]:
    """A command prefix under which a mode-000 file of our own is unreadable, as it is for
    another user's file (root reads anything with CAP_DAC_OVERRIDE: dropped by setpriv)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be denied")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]


def run_memlane(
    home: Path,
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    umask: int | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real `memlane` command run in ``home`` (``env`` added to :func:`run_env`; with
    ``umask``, under that umask; in ``cwd``); its exit code is the caller's to check."""
    command = [*MEMLANE_CMD, *args]
    if umask is not None:
        command = ["sh", "-c", f'umask {umask:03o}; exec "$@"', "sh", *command]
    return subprocess.run(
        command,
        env=run_env(home) | (env or {}),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    """The one ``error: …`` line a failed command printed, after checking its exit code."""
    assert done.returncode == code, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


# -- PostgreSQL (issue 9) ------------------------------------------------------------
# scripts/test.sh starts a real server and exports MEMLANE_TEST_PG_DSN. Without it the
# PostgreSQL tests skip on a laptop, but under CI=true they FAIL: CI must run them.
PG_DSN_ENV = "MEMLANE_TEST_PG_DSN"


def _require_pg() -> str:
    dsn = os.environ.get(PG_DSN_ENV)
    message = f"{PG_DSN_ENV} is not set: run `bash scripts/test.sh` (it starts PostgreSQL)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        dsn = None
        message = "psycopg is not installed: pip install -e '.[postgres,dev]'"
    if not dsn:
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return dsn


def pg_url(base: str, *, dbname: str | None = None, options: str | None = None) -> str:
    """A postgresql:// URL for ``base`` (URL or key=value DSN) with another db / options."""
    from psycopg.conninfo import conninfo_to_dict

    parts = {k: str(v) for k, v in conninfo_to_dict(base).items() if v is not None}
    if dbname is not None:
        parts["dbname"] = dbname
    if options is not None:
        parts["options"] = options
    user = quote(parts.pop("user", ""), safe="")
    password = quote(parts.pop("password", ""), safe="")
    host = parts.pop("host", "127.0.0.1")
    port = parts.pop("port", "5432")
    name = quote(parts.pop("dbname", ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    query = f"?{urlencode(parts, quote_via=quote)}" if parts else ""
    return f"postgresql://{auth}{host}:{port}/{name}{query}"


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    """A fresh database for the test module, created by the DSN's role and dropped after."""
    base = _require_pg()
    import psycopg
    from psycopg import sql

    name = f"memlane_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield pg_url(base, dbname=name)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def pg_dsn(pg_database: str) -> str:
    """A postgresql:// URL whose tables live in a fresh schema: every test starts empty."""
    import psycopg
    from psycopg import sql

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return pg_url(pg_database, options=f"-c search_path={schema},public")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_memory(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Memory]:
    """The Memory facade on SQLite, then on PostgreSQL."""
    target = None if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    mem = open_memory(target, settings=settings)
    yield mem
    mem.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """Opens a store on this test's database (a SQLite file, or a PostgreSQL schema)."""
    if request.param == "sqlite":
        path = tmp_path / "store.db"
        return lambda: SQLiteStore(path)
    from memlane.store.postgres import PostgresStore

    dsn = request.getfixturevalue("pg_dsn")
    return lambda: PostgresStore(dsn, pool_size=2)


@pytest.fixture
def store(reopen: Callable[[], Store]) -> Iterator[Store]:
    """A Store on SQLite, then on PostgreSQL, closed after the test."""
    opened = reopen()
    yield opened
    opened.close()
