"""Bad numbers and a failing disk through every interface: one line (or a 4xx), never a traceback.

The "errors" part of the local-security issue: durations and dates out of range,
non-finite numbers, a read-only database and a full disk.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.service import Memory
from memlane.timeparse import MAX_WHEN_CHARS, parse_duration, parse_when
from tests.conftest import one_line_error, run_memlane
from tests.test_mcp_server import err, run
from tests.test_web_support import LiveServer

HUGE_DURATIONS = ["999999999d", "9" * 400 + "y", "1000000y", "99999999999999w"]
BAD_DATES = ["0001-01-01T00:00+14:00", "9999-12-31", "1969-12-31", *HUGE_DURATIONS]


def memlane(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_memlane(home, *args, stdin=stdin, env={"MEMLANE_EMBEDDER": "toy"})


@pytest.fixture
def server(server: LiveServer, memory: Memory) -> LiveServer:
    """The shared live server (tests/web_fixtures.py) over a memory holding one note."""
    memory.save("the retry queue drains every five seconds", project="api")
    return server


# -- durations and dates ---------------------------------------------------------------


@pytest.mark.parametrize("text", BAD_DATES)
def test_a_date_out_of_range_is_invalid_input(text: str) -> None:
    with pytest.raises(InvalidInput, match=r"too long|out of range"):
        parse_when(text)


def test_durations_up_to_the_bound_still_parse() -> None:
    now = datetime(2026, 1, 31, tzinfo=UTC)
    assert parse_when("7d", now=now) == now - timedelta(days=7)
    assert parse_duration("365000d") == timedelta(days=365000)
    assert parse_when("1970-01-01") == datetime(1970, 1, 1, tzinfo=UTC)
    with pytest.raises(InvalidInput, match="too long"):
        parse_duration("365001d")


@pytest.mark.parametrize(
    "args",
    [
        ("search", "retry", "--since", "999999999d"),
        ("search", "retry", "--as-of", "9" * 400 + "y"),
        ("timeline", "--start", "0001-01-01T00:00+14:00"),
        ("prune", "--older-than", "999999999d", "--yes"),
        ("delete", "--before", "1000000y", "--yes"),
    ],
)
def test_cli_refuses_durations_out_of_range_in_one_line(home: Path, args: tuple[str, ...]) -> None:
    line = one_line_error(memlane(home, *args), 2)
    assert "too long" in line or "out of range" in line


@pytest.mark.parametrize("text", HUGE_DURATIONS)
def test_http_answers_422_for_durations_out_of_range(server: LiveServer, text: str) -> None:
    for path in ("/api/search?q=retry&since=", "/api/timeline?start=", "/api/search?q=r&as_of="):
        response = httpx.get(server.base_url + path + text, headers=server.auth())
        assert response.status_code == 422, (path, response.text)
        body = response.json()
        assert body["error"] == "invalid_input" and "too long" in body["message"]


def test_mcp_refuses_durations_out_of_range(memory: Memory) -> None:
    async def body(client: object) -> list[str]:
        return [
            await err(client, "search", {"query": "retry", "since": "999999999d"}),  # type: ignore[arg-type]
            await err(client, "timeline", {"start": "9" * 400 + "y"}),  # type: ignore[arg-type]
        ]

    for message in run(memory, body):
        assert "too long" in message


def test_the_parsers_bound_a_date_or_age_in_one_place() -> None:
    """MAX_WHEN_CHARS is timeparse's: HTTP checked it itself and the CLI not at all."""
    padded = " " * (MAX_WHEN_CHARS - 2) + "7d"  # within the bound: parsed as typed
    assert parse_duration(padded) == timedelta(days=7)
    assert parse_when(padded.replace("7d", "2026-01-31")[-MAX_WHEN_CHARS:]) == datetime(
        2026, 1, 31, tzinfo=UTC
    )
    for parse, what in ((parse_when, "date"), (parse_duration, "duration")):
        with pytest.raises(InvalidInput) as refused:
            parse(" " + padded)  # one character past it
        message = str(refused.value)
        assert message.startswith(f"bad {what} '   ") and message.endswith(
            f": {MAX_WHEN_CHARS + 1:,} characters long (at most {MAX_WHEN_CHARS:,})"
        )
        assert "\n" not in message and len(message) < 200


@pytest.mark.parametrize(
    "args",
    [
        ("search", "retry", "--since", "7" * 99_999 + "d"),
        ("prune", "--older-than", "7" * 99_999 + "d", "--yes"),
    ],
)
def test_cli_refuses_a_long_date_or_age_in_one_short_line(
    home: Path, args: tuple[str, ...]
) -> None:
    line = one_line_error(memlane(home, *args), 2)
    assert "100,000 characters long (at most 1,000)" in line and len(line) < 200


def test_http_refuses_a_long_date_by_timeparse(server: LiveServer) -> None:
    response = httpx.get(
        server.base_url + "/api/search",
        params={"q": "retry", "since": "7" * (MAX_WHEN_CHARS + 1)},
        headers=server.auth(),
    )
    assert response.status_code == 422, response.text
    assert "1,001 characters long (at most 1,000)" in response.json()["message"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_cli_refuses_non_finite_scores(home: Path, value: str) -> None:
    done = memlane(home, "search", "retry", "--min-score", value)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--min-score" in done.stderr


# -- a read-only database and a full disk ------------------------------------------------


def _saved_home(home: Path) -> Path:
    done = memlane(home, "save", "the retry queue drains every five seconds")
    assert done.returncode == 0, done.stderr
    return home


@pytest.fixture
def mount_point(tmp_path: Path) -> Iterator[Path]:
    """A fresh 4 MiB tmpfs (root only): a disk to fill or to remount read-only."""
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    point = tmp_path / "mnt"
    point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


@pytest.fixture
def read_only_file(home: Path) -> Iterator[Path]:
    """A home whose database file cannot be written (immutable as root, 0444 otherwise)."""
    db = _saved_home(home) / "memlane.db"
    if os.geteuid() == 0:
        locked = subprocess.run(["chattr", "+i", str(db)], capture_output=True, check=False)
        if locked.returncode != 0:
            pytest.skip("chattr +i is not supported here (root ignores file modes)")
    else:
        db.chmod(0o444)
    try:
        yield home
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(db)], capture_output=True, check=False)
        db.chmod(0o600)


def _read_only_mount(home: Path, point: Path) -> Path:
    remounted = subprocess.run(["mount", "-o", "remount,ro", str(point)], check=False)
    assert remounted.returncode == 0
    return home


def _assert_reads_work(home: Path) -> None:
    found = memlane(home, "search", "retry", "--json")
    assert found.returncode == 0, found.stderr
    assert "Traceback" not in found.stderr
    assert "retry queue" in found.stdout
    assert memlane(home, "stats").returncode == 0


def test_search_works_on_a_database_file_that_cannot_be_written(read_only_file: Path) -> None:
    _assert_reads_work(read_only_file)
    line = one_line_error(memlane(read_only_file, "save", "one more"), 4)
    assert "read-only" in line or "for writing" in line


def test_http_on_a_read_only_database_reads_and_answers_503_to_writes(
    read_only_file: Path,
) -> None:
    from memlane.service import open as open_memory

    memory = open_memory(str(read_only_file / "memlane.db"))
    live = LiveServer(memory).start()
    try:
        found = httpx.get(f"{live.base_url}/api/search?q=retry", headers=live.auth())
        assert found.status_code == 200 and found.json()["hits"], found.text
        saved = httpx.post(
            f"{live.base_url}/api/observations",
            json={"content": "x", "project": "p"},
            headers=live.auth(),
        )
        assert saved.status_code == 503
        assert "read-only" in saved.json()["message"]
    finally:
        live.stop()
        memory.close()


def test_search_works_on_a_read_only_file_system(mount_point: Path) -> None:
    home = _read_only_mount(_saved_home(mount_point / "home"), mount_point)
    _assert_reads_work(home)
    line = one_line_error(memlane(home, "save", "one more"), 4)
    assert "read-only" in line or "for writing" in line


def _fill(point: Path) -> None:
    with (point / "filler").open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass


def test_a_full_disk_is_one_line_and_exit_4_everywhere(mount_point: Path) -> None:
    home = _saved_home(mount_point / "home")
    _fill(mount_point)
    big = "the disk fills up " * 3_500  # under the 64,000 characters one memory holds
    line = one_line_error(memlane(home, "save", "-", stdin=big), 4)
    assert "full" in line
    exported = one_line_error(memlane(home, "export", "-o", str(mount_point / "x.jsonl")), 4)
    assert "No space left on device; free some space" in exported
    payload = '{"session_id": "s", "cwd": "/", "prompt": "' + "y" * 300_000 + '"}'
    quiet = memlane(home, "hook", "user-prompt-submit", stdin=payload)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    (mount_point / "filler").unlink()
    _assert_reads_work(home)  # nothing was damaged


def test_a_disk_filled_by_an_import_leaves_a_readable_database_not_a_damaged_one(
    mount_point: Path, tmp_path: Path
) -> None:
    """An import filled the disk, leaving its writes in the -wal: the check before
    opening read the main file alone (immutable) and every command and hook said the
    healthy database was damaged and to restore a backup, losing what came after it."""
    home = _saved_home(mount_point / "home")
    records = tmp_path / "records.jsonl"
    records.write_text(
        "".join(f'{{"text": "imported fact {i} about the walrus"}}\n' for i in range(2000))
    )
    memlane(home, "import", "jsonl", str(records), "--project", "imp")  # fills the disk
    _fill(mount_point)
    wal = home / "memlane.db-wal"
    assert wal.exists() and wal.stat().st_size > 0
    _assert_reads_work(home)
    line = one_line_error(memlane(home, "save", "one more"), 4)
    assert "is full" in line and "damaged" not in line


def test_a_restore_on_a_nearly_full_disk_is_one_line_and_keeps_the_previous_bak(
    mount_point: Path, tmp_path: Path
) -> None:
    """With too little room for the copies a restore makes, it ended in a traceback (or
    called the good backup unreadable as SQLite), and the .bak of the restore before had
    already been replaced."""
    home = _saved_home(mount_point / "home")
    for n in range(30):
        assert (
            memlane(home, "save", f"decision {n}: zebra tables for the frobnicator").returncode == 0
        )
    backup = tmp_path / "b1.db"
    assert memlane(home, "backup", str(backup)).returncode == 0
    assert memlane(home, "restore", "--yes", str(backup)).returncode == 0
    assert memlane(home, "save", "saved after the first restore: okapi").returncode == 0
    bak = home / "memlane.db.bak"
    kept = bak.read_bytes()
    with (mount_point / "filler").open("wb") as out:  # leave ~200 KB
        free = os.statvfs(mount_point).f_bavail * os.statvfs(mount_point).f_frsize
        out.write(b"\0" * max(free - 200 * 1024, 0))
    line = one_line_error(memlane(home, "restore", "--yes", str(backup)), 4)
    assert "is full" in line and "cannot be read" not in line
    assert bak.read_bytes() == kept
    (mount_point / "filler").unlink()
    found = memlane(home, "search", "okapi")
    assert found.returncode == 0 and "okapi" in found.stdout


# -- non-finite numbers in metadata --------------------------------------------------------


def test_the_write_path_refuses_non_finite_metadata(memory: Memory) -> None:
    for value in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(InvalidInput, match=r"metadata\.stats\.ratio\[1\] is .*not a finite"):
            memory.save("c", project="p", metadata={"stats": {"ratio": [1.0, value]}})
    assert memory.save("c", project="p", metadata={"ratio": 0.5}).status == "created"


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_http_answers_422_for_non_finite_metadata(server: LiveServer, number: str) -> None:
    for path, kind in (("/api/observations", "note"), ("/api/knowledge", "lesson")):
        body = (
            f'{{"content": "a ratio", "project": "api", "type": "{kind}", "metadata": {{"ratio": '
            + number
            + "}}"
        )
        response = httpx.post(
            server.base_url + path,
            content=body,
            headers={**server.auth(), "Content-Type": "application/json"},
        )
        assert response.status_code == 422, response.text
        assert "metadata.ratio" in response.json()["message"]


@pytest.mark.parametrize("number", ["1e999", "NaN", "-Infinity"])
def test_imports_refuse_non_finite_metadata_line_by_line(
    home: Path, tmp_path: Path, number: str
) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"text": "fine", "metadata": {"ratio": 0.5}}\n'
        '{"text": "bad", "metadata": {"ratio": ' + number + "}}\n"
    )
    done = memlane(home, "import", "jsonl", str(records))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "line 2" in done.stderr and "metadata.ratio" in done.stderr
    export = memlane(home, "export", "--format", "jsonl")
    assert '"fine"' in export.stdout and '"bad"' not in export.stdout
    assert "Infinity" not in export.stdout and "NaN" not in export.stdout
    lines = export.stdout.splitlines()
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text(
        "\n".join(
            line.replace('"ratio": 0.5', f'"ratio": {number}').replace('"fine"', '"edited"')
            for line in lines
        )
        + "\n"
    )
    again = memlane(tmp_path / "elsewhere", "import", "memlane", str(crafted))
    assert again.returncode != 0 and "Traceback" not in again.stderr
    assert "metadata.ratio" in again.stderr + again.stdout


def test_a_read_only_database_missing_a_lower_migration_says_so(mount_point: Path) -> None:
    from tests.test_sqlite_store import _forget_migration_4

    home = _saved_home(mount_point / "home")
    _forget_migration_4(home / "memlane.db")
    _read_only_mount(home, mount_point)
    line = one_line_error(memlane(home, "search", "retry"), 4)
    assert "migration 4 not applied" in line and "read-only" in line


def test_months_are_mo_and_a_bare_m_is_refused_as_ambiguous() -> None:
    assert parse_duration("3mo") == timedelta(days=90)
    assert parse_duration("30min") == timedelta(minutes=30)
    for text in ("3m", "3M", " 3 m "):
        with pytest.raises(InvalidInput, match=r"ambiguous.*3min for minutes or 3mo for months"):
            parse_duration(text)
    with pytest.raises(InvalidInput, match="ambiguous"):
        parse_when("3m")


def test_prune_older_than_3m_deletes_nothing_and_says_why(home: Path) -> None:
    # Meant as three months, read as three minutes, it deleted every memory but the newest.
    assert memlane(home, "save", "the retry queue uses idempotency keys").returncode == 0
    line = one_line_error(memlane(home, "prune", "--older-than", "3m", "--yes"), 2)
    assert "3min" in line and "3mo" in line
    listed = memlane(home, "search", "idempotency")
    assert "idempotency" in listed.stdout


@pytest.mark.parametrize(
    ("args", "done"),
    [
        (("delete", "--project", "default-x"), "deleted"),
        (("prune", "--older-than", "0d"), "pruned"),
    ],
)
def test_a_declined_delete_or_prune_lists_asks_and_keeps_everything(
    home: Path, args: tuple[str, ...], done: str
) -> None:
    # One flow for both commands: list, ask, and on "no" say nothing went (exit 1).
    saved = memlane(home, "save", "the retry queue uses idempotency keys", "--project", "default-x")
    assert saved.returncode == 0, saved.stderr
    answered = memlane(home, *args, stdin="n\n")
    assert answered.returncode == 1, answered.stderr
    assert "selected 1 memory:" in answered.stdout and f"nothing {done}" in answered.stdout
    assert "idempotency" in memlane(home, "search", "idempotency", "--project", "default-x").stdout


def test_a_database_of_a_newer_memlane_is_refused_not_written(home: Path, tmp_path: Path) -> None:
    """It was opened and written without a word (only `restore` refused it): an older
    install beside a newer one, on the same file."""
    import hashlib
    import sqlite3

    db = _saved_home(home) / "memlane.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO schema_version(version, name, applied_at) VALUES (9999, 'future', 0)"
        )
    conn.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    line = one_line_error(memlane(home, "save", "one more"), 2)
    assert "comes from a newer memlane (schema 9999 > " in line and "upgrade memlane" in line
    one_line_error(memlane(home, "search", "retry"), 2)
    project = tmp_path / "proj"
    project.mkdir()
    prompt = '{"session_id": "s", "cwd": "' + str(project) + '", "prompt": "retry queue"}'
    quiet = memlane(home, "hook", "user-prompt-submit", stdin=prompt)
    assert (quiet.returncode, quiet.stdout) == (0, "")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_value_the_database_refuses_is_invalid_input_not_an_unavailable_store(
    server: LiveServer, settings: Settings, home: Path
) -> None:
    """A record the database refuses whenever it is written (here a constraint) was exit 4
    and HTTP 503 "store_unavailable", which tell a caller to retry: it is refused again."""
    from tests.test_hooks_spool import refuse_poison

    refuse_poison(settings.paths.db_path)
    line = one_line_error(memlane(home, "save", "a poison note"), 2)
    assert "refuses a value given to it" in line and "poison refused" in line, line
    saved = httpx.post(
        f"{server.base_url}/api/observations",
        json={"content": "poison", "project": "p"},
        headers=server.auth(),
    )
    assert saved.status_code == 422, saved.text
    assert "poison refused" in saved.json()["message"]


def test_a_bind_parameter_out_of_range_is_refused_not_retried() -> None:
    """SQLITE_RANGE (a statement bound a parameter it does not have) was a plain
    StoreError, one that may succeed later: the spool kept such a capture at its front and
    retried it at every replay."""
    import sqlite3

    from memlane.errors import RecordRefused, write_may_succeed_later
    from memlane.store.sqlite_errors import storage_error

    exc = sqlite3.InterfaceError("column index out of range")
    exc.sqlite_errorcode = sqlite3.SQLITE_RANGE
    error = storage_error("/tmp/memlane.db", exc)
    assert isinstance(error, RecordRefused), error
    assert not write_may_succeed_later(error)
