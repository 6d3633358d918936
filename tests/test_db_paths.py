"""Paths that do not exist or are not memlane's, and a busy database, through the real CLI."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from memlane.errors import InvalidInput, StoreError
from memlane.service import open as open_memory
from memlane.store.sqlite import SQLiteStore
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_cli_progress import on_pty


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args],
        capture_output=True,
        text=True,
        env=run_env(home),
        timeout=120,
        check=False,
    )


def test_db_in_a_missing_directory_is_an_error_and_creates_nothing(
    home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "no" / "such" / "dir" / "x.db"
    result = run(home, "--db", str(target), "stats")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: the directory ")
    assert "--create" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "no").exists()


def test_a_db_path_that_names_no_file_is_bad_input(home: Path, tmp_path: Path) -> None:
    """`--db ' '` made a database file named " " in the working directory; a loop of links
    or a name too long was exit 4, a disk problem (probe s28 F11)."""
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    for target, says in [
        (" ", "the database path is blank"),
        (str(loop), "Too many levels of symbolic links"),
        (str(tmp_path / ("x" * 10_000)), "File name too long"),
    ]:
        result = subprocess.run(
            [*MEMLANE_CMD, "--db", target, "stats"],
            capture_output=True,
            text=True,
            env=run_env(home),
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert says in result.stderr and len(result.stderr) < 400
        assert result.stderr.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["loop"]  # nothing created


def test_an_empty_db_is_refused_never_the_default(home: Path, tmp_path: Path) -> None:
    # `--db ''` and `MEMLANE_DB=''` opened the default database: a script's `--db "$TEAM_DB"`
    # with the variable unset wrote into the personal memory; `--db ' ' config show`
    # printed "# database:  " (probe D8).
    cases = [
        (["--db", "", "save", "team note"], {}, "--db: the database path is empty"),
        (["save", "team note"], {"MEMLANE_DB": ""}, "MEMLANE_DB: the database path is empty"),
        (["--db", " ", "config", "show"], {}, "--db: the database path is blank"),
    ]
    for args, extra, says in cases:
        result = subprocess.run(
            [*MEMLANE_CMD, *args],
            capture_output=True,
            text=True,
            env=run_env(home) | extra,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    assert not (home / "memlane.db").exists()  # the default database was never opened
    assert [p for p in tmp_path.iterdir() if p != home] == []  # no file named "" or " "


def test_create_makes_the_directory_private(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "x.db"
    result = run(home, "--db", str(target), "--create", "save", "kept in a new place")
    assert result.returncode == 0, result.stderr
    assert target.is_file()
    assert target.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "new" / "dir").stat().st_mode & 0o777 == 0o700
    found = run(home, "--db", str(target), "search", "new place", "--mode", "keyword")
    assert "kept in a new place" in found.stdout


def test_default_location_is_created_on_first_use(home: Path) -> None:
    assert not home.exists()
    result = run(home, "save", "first memory")
    assert result.returncode == 0, result.stderr
    assert (home / "memlane.db").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("command", [("stats",), ("save", "x"), ("search", "x")])
def test_a_text_file_keeps_its_bytes_and_mode(
    home: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    target = tmp_path / "passwd"
    original = b"root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/sh\n"
    target.write_bytes(original)
    target.chmod(0o644)
    result = run(home, "--db", str(target), *command)
    assert result.returncode == 4, result.stderr
    assert "is not a SQLite database" in result.stderr
    assert "left it unchanged" in result.stderr
    assert target.read_bytes() == original
    assert target.stat().st_mode & 0o777 == 0o644


def test_another_programs_database_is_refused_unchanged(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "app.sqlite"
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO orders (total) VALUES (9.5)")
    conn.commit()
    conn.close()
    target.chmod(0o644)
    before = target.read_bytes()
    result = run(home, "--db", str(target), "save", "not here")
    assert result.returncode == 2, result.stderr
    assert "another program" in result.stderr
    assert target.read_bytes() == before
    assert target.stat().st_mode & 0o777 == 0o644


def test_an_existing_memlane_database_keeps_its_mode(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared.db"
    SQLiteStore(target).close()
    target.chmod(0o640)  # the owner chose this: memlane only sets the mode of files it creates
    result = run(home, "--db", str(target), "save", "still 0640")
    assert result.returncode == 0, result.stderr
    assert target.stat().st_mode & 0o777 == 0o640


def test_an_empty_file_becomes_a_database_without_a_mode_change(tmp_path: Path) -> None:
    target = tmp_path / "empty.db"
    target.touch(mode=0o640)
    target.chmod(0o640)
    SQLiteStore(target).close()
    assert target.stat().st_mode & 0o777 == 0o640
    assert target.stat().st_size > 0


def test_a_directory_or_fifo_is_not_a_database(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (tmp_path, fifo):
        with pytest.raises(InvalidInput, match="not a regular file"):
            SQLiteStore(target)


def test_python_api_with_a_missing_directory_is_an_error(tmp_path: Path, home: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        open_memory(str(tmp_path / "missing" / "x.db"))
    assert not (tmp_path / "missing").exists()


def test_a_damaged_database_suggests_restore(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "broken.db"
    store = SQLiteStore(target)
    for i in range(200):
        store.connection().execute(
            "INSERT INTO maintenance_log (kind, started_at, finished_at, details)"
            " VALUES (?, 0, 0, ?)",
            (f"k{i}", "x" * 2000),
        )
    store.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(target.read_bytes())
    page = 8192
    data[page : page * 3] = b"\xff" * (page * 2)  # keep the header, break the first pages
    target.write_bytes(bytes(data))
    result = run(home, "--db", str(target), "stats")
    assert result.returncode == 4, result.stderr
    assert "damaged" in result.stderr or "malformed" in result.stderr
    assert "memlane restore" in result.stderr
    assert "Traceback" not in result.stderr


# -- a busy database ----------------------------------------------------------------


def _hold_write_lock(path: Path, seconds: float | None) -> tuple[threading.Event, threading.Thread]:
    """Another writer: holds the write lock ``seconds`` (None: until the event is set)."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO maintenance_log (kind, started_at, finished_at, details)"
            " VALUES ('other', 0, 0, '{}')"
        )
        taken.set()
        release.wait(seconds)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(30)
    return release, thread


def test_reading_commands_do_not_wait_for_a_writer(home: Path) -> None:
    assert run(home, "save", "written before the import").returncode == 0
    release, thread = _hold_write_lock(home / "memlane.db", None)
    try:
        stats = run(home, "stats")
        found = run(home, "search", "import", "--mode", "keyword", "--json")
    finally:
        release.set()
        thread.join()
    assert stats.returncode == 0, stats.stderr
    assert found.returncode == 0, found.stderr
    assert "written before the import" in found.stdout


def test_a_write_waits_for_a_busy_database_with_a_spinner(home: Path) -> None:
    assert run(home, "save", "first").returncode == 0
    _release, thread = _hold_write_lock(home / "memlane.db", 2.5)
    code, _, shown = on_pty([*MEMLANE_CMD, "save", "second, after the lock"], run_env(home))
    thread.join()
    assert code == 0, shown
    assert "the database is busy" in shown
    assert "restore" not in shown


def test_a_database_busy_for_too_long_says_so_without_restore(home: Path) -> None:
    assert run(home, "save", "first").returncode == 0
    release, thread = _hold_write_lock(home / "memlane.db", None)
    started = time.monotonic()
    try:
        result = run(home, "save", "blocked")
    finally:
        release.set()
        thread.join()
    assert result.returncode == 4, result.stderr
    assert "is busy" in result.stderr
    assert "restore" not in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started >= 9  # it did wait (a lower bound, not a limit)


def test_serve_on_a_file_that_is_not_ours_creates_nothing_next_to_it(
    home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    target = folder / "passwd"
    target.write_text("root:x:0:0:root:/root:/bin/bash\n")
    target.chmod(0o644)
    from tests.test_web_support import free_port

    result = run(home, "--db", str(target), "serve", "--port", str(free_port()))
    assert result.returncode == 4, result.stderr
    assert "is not a SQLite database" in result.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["passwd"]
    assert target.stat().st_mode & 0o777 == 0o644


def test_an_existing_database_under_an_odd_path_is_checked_and_opened(tmp_path: Path) -> None:
    folder = tmp_path / "we?ird #dir %20x"
    folder.mkdir()
    target = folder / "m.db"
    SQLiteStore(target).close()
    store = SQLiteStore(target)  # the read-only check must find this very file
    try:
        assert store.schema_version() > 0
    finally:
        store.close()
    (folder / "notes.txt").write_text("plain text\n")
    with pytest.raises(StoreError, match="not a SQLite database"):
        SQLiteStore(folder / "notes.txt")


def test_the_default_database_is_never_a_link(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    SQLiteStore(elsewhere).close()
    home.mkdir(mode=0o700)
    (home / "memlane.db").symlink_to(elsewhere)
    result = run(home, "stats")
    assert result.returncode == 2, result.stderr
    assert "symbolic link" in result.stderr
    # an explicit --db may be a link the user made
    assert run(home, "--db", str(home / "memlane.db"), "stats").returncode == 0
