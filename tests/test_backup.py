"""Backup through SQLite's online backup API, and a verified restore that keeps a .bak."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.integrations import hook_argv
from memlane.interop.backup import restore_database
from memlane.models import NewInjection, utcnow
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.conftest import MEMLANE_CMD, run_env, run_memlane
from tests.test_privacy_entrypoints import leaked


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_backup_is_a_private_sound_copy(memory: Memory, tmp_path: Path) -> None:
    for i in range(20):
        memory.save(f"decision number {i} about caching", project="api", type="decision")
    result = memory.backup(str(tmp_path / "b" / "one.db"), create=True)
    path = Path(result.path)
    assert result.memories == 20
    assert mode(path) == 0o600
    assert not Path(str(path) + "-wal").exists()  # self-contained file
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 20
    # FTS came along too
    hits = conn.execute(
        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'caching'"
    ).fetchone()[0]
    assert hits == 20
    conn.close()
    with pytest.raises(InvalidInput, match="already exists"):
        memory.backup(str(path))


def test_a_backup_path_in_a_missing_folder_is_refused(memory: Memory, tmp_path: Path) -> None:
    """A typo in the folder put the safety copy in a new chain of folders (probe s28 F9):
    refused, nothing created; ``create`` makes one folder inside an existing one."""
    memory.save("kept in the backup", project="api")
    with pytest.raises(InvalidInput, match=r"of the backup .* does not exist$"):
        memory.backup(str(tmp_path / "no" / "b.db"))
    with pytest.raises(InvalidInput, match="does not exist either"):
        memory.backup(str(tmp_path / "no" / "such" / "b.db"), create=True)
    assert not (tmp_path / "no").exists()
    made = memory.backup(str(tmp_path / "new" / "b.db"), create=True)
    assert made.memories == 1
    assert mode(tmp_path / "new") == 0o700


def test_cli_backup_refuses_a_missing_folder(home: Path, tmp_path: Path) -> None:
    env = run_env(home)
    subprocess.run([*MEMLANE_CMD, "save", "remember the milk"], env=env, check=True)
    target = tmp_path / "no" / "such" / "b.db"
    out = subprocess.run(
        [*MEMLANE_CMD, "backup", str(target)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert "does not exist: check the path, or add --create" in out.stderr
    assert not (tmp_path / "no").exists()
    target = tmp_path / "new" / "b.db"
    done = subprocess.run(
        [*MEMLANE_CMD, "backup", str(target), "--create"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert target.is_file()


def test_default_backup_path_is_under_the_data_dir(memory: Memory, settings: Settings) -> None:
    memory.save("x marks the spot", project="api")
    first = memory.backup()
    second = memory.backup()
    assert Path(first.path).parent == settings.paths.data_dir / "backups"
    assert first.path != second.path


def test_backup_while_another_process_writes(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    """Writers keep going during the backup; the copy is consistent and complete."""
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        other = open_memory(settings=settings)
        n = 0
        while not stop.is_set():
            other.save(f"concurrent note {n}", project="api", type="note")
            n += 1
        written.append(n)
        other.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        results = [memory.backup(str(tmp_path / f"b{i}.db")) for i in range(5)]
    finally:
        stop.set()
        thread.join()
    assert written[0] > 0
    counts = [r.memories for r in results]
    assert counts == sorted(counts)
    for result in results:
        conn = sqlite3.connect(result.path)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()


def test_restore_replaces_and_keeps_previous(memory: Memory, settings: Settings) -> None:
    memory.save("kept in the backup", project="api", type="decision")
    result = memory.backup()
    memory.save("written after the backup", project="api", type="decision")
    memory.close()

    restored = restore_database(settings, result.path)
    assert restored.memories == 1
    bak = Path(settings.database + ".bak")
    assert restored.previous == str(bak)
    assert mode(bak) == 0o600
    conn = sqlite3.connect(bak)
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 2
    conn.close()

    again = open_memory(settings=settings)
    assert [m.content for m in again.iter_all(None)] == ["kept in the backup"]
    assert again.search("backup", project="api")
    again.close()


def test_restore_while_another_connection_is_open(memory: Memory, settings: Settings) -> None:
    memory.save("alpha", project="api")
    result = memory.backup()
    memory.save("beta", project="api")
    # `memory` stays open (like a running worker) while the restore happens.
    restore_database(settings, result.path)
    assert [m.content for m in memory.iter_all(None)] == ["alpha"]


def test_restore_refuses_bad_backups(memory: Memory, settings: Settings, tmp_path: Path) -> None:
    memory.save("precious", project="api")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with pytest.raises(InvalidInput):
        restore_database(settings, str(junk))
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(InvalidInput, match="not a memlane database"):
        restore_database(settings, str(foreign))
    newer = tmp_path / "newer.db"
    memory.backup(str(newer))
    conn = sqlite3.connect(newer)
    conn.execute("INSERT INTO schema_version VALUES (999, 'future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(InvalidInput, match="newer memlane"):
        restore_database(settings, str(newer))
    # nothing was touched
    assert [m.content for m in memory.iter_all(None)] == ["precious"]
    assert not Path(settings.database + ".bak").exists()


def test_restore_over_a_corrupt_database(memory: Memory, settings: Settings) -> None:
    memory.save("survivor", project="api")
    result = memory.backup()
    memory.close()
    db = Path(settings.database)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"garbage" * 1000)
    restored = restore_database(settings, result.path)
    assert restored.memories == 1
    assert Path(str(db) + ".bak").read_bytes() == b"garbage" * 1000
    again = open_memory(settings=settings)
    assert [m.content for m in again.iter_all(None)] == ["survivor"]
    again.close()


def test_postgres_targets_are_refused_clearly(settings: Settings, tmp_path: Path) -> None:
    backup_file = tmp_path / "x.db"
    postgres = replace(settings, db_target="postgresql://localhost/memlane")
    with pytest.raises(InvalidInput, match="pg_dump"):
        restore_database(postgres, str(backup_file))


def test_cli_backup_and_restore(home: Path, tmp_path: Path) -> None:
    env = run_env(home)
    subprocess.run([*MEMLANE_CMD, "save", "remember the milk"], env=env, check=True)
    target = tmp_path / "cli.db"
    out = subprocess.run(
        [*MEMLANE_CMD, "backup", str(target)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "backed up 1 memory" in out.stdout
    subprocess.run([*MEMLANE_CMD, "save", "then the eggs"], env=env, check=True)
    done = subprocess.run(
        [*MEMLANE_CMD, "restore", str(target), "--yes"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "restored 1 memory" in done.stdout
    assert ".bak" in done.stdout


def test_copies_left_by_a_killed_backup_or_restore_are_removed(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    """A backup or restore killed half-way left its temporary copy (all the memories, 72 MB
    in the probe) and SQLite's journal beside it; no later run removed them."""
    memory.save("a decision worth keeping", project="api", type="decision")
    gone = subprocess.Popen(["true"])
    gone.wait()
    target = tmp_path / "b" / "one.db"
    target.parent.mkdir()
    dead = [
        target.parent / f".one.db.{gone.pid}.tmp",
        target.parent / f".one.db.{gone.pid}.tmp-journal",
    ]
    live = target.parent / f".one.db.{os.getppid()}.tmp"  # a process still running
    other = target.parent / f".two.db.{gone.pid}.tmp"
    for path in (*dead, live, other):
        path.write_bytes(b"a full copy of the memories")

    memory.backup(str(target))
    assert not any(path.exists() for path in dead)
    assert live.exists() and other.exists()  # a running process's; another file's
    assert sorted(p.name for p in target.parent.iterdir()) == sorted(
        [target.name, live.name, other.name]
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("created_at", "not a date"),
        ("updated_at", 1e300),
        ("last_accessed_at", -5.0),
        ("files", "[1, 2, {}]"),
        ("tags", "not json"),
        ("metadata", "[]"),
    ],
)
def test_restore_refuses_a_backup_with_a_row_memlane_cannot_read(
    memory: Memory, settings: Settings, tmp_path: Path, column: str, value: object
) -> None:
    # The schema was exact, so it was restored; then stats, get, search and export ended
    # in tracebacks (probe round s27: a backup edited outside memlane).
    memory.save("kept in the backup", project="api")
    edited = tmp_path / "edited.db"
    memory.backup(str(edited))
    memory.save("the live database", project="api")
    conn = sqlite3.connect(edited)
    conn.execute(f"UPDATE memories SET {column} = ?", (value,))
    conn.commit()
    conn.close()
    with pytest.raises(InvalidInput, match=f"whose {column} memlane cannot read"):
        restore_database(settings, str(edited))
    assert sorted(m.content for m in memory.iter_all(None)) == [
        "kept in the backup",
        "the live database",
    ]
    assert not Path(settings.database + ".bak").exists()


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("memories", "title", b"\xff\x00"),
        ("memories", "project", b"api"),
        ("memories", "access_count", "many"),
        ("memories", "revision_count", -1),
        ("sessions", "started_at", "x"),
        ("sessions", "last_activity_at", "soon"),
        ("sessions", "transcript_offset", "x"),
        ("sessions", "ended_at", "later"),
        ("injections", "prompt", b"bytes"),
        ("maintenance_log", "details", "{not json"),
    ],
)
def test_restore_checks_every_column_of_every_table(
    memory: Memory, settings: Settings, tmp_path: Path, table: str, column: str, value: object
) -> None:
    # Only seven columns of `memories` were checked: a blob title, or a session started at
    # 'x', was restored, and then search, export, list and the worker's start ended in
    # tracebacks (probe s31 D2).
    memory.save("kept in the backup", project="api")
    memory.session_start("s-1", project="api", agent="claude-code")
    memory.record_prompt("s-1", "how do we deploy", project="api")
    memory.store.log_maintenance("maintain", utcnow(), {})
    memory.store.insert_injection(
        NewInjection(
            "s-1",
            "api",
            "user-prompt-submit",
            utcnow(),
            "keyword",
            False,
            3.0,
            10,
            3,
            "kept in the backup",
            prompt="how do we deploy",
            prompt_number=1,
        )
    )
    sound = tmp_path / "sound.db"
    memory.backup(str(sound))
    edited = tmp_path / "edited.db"
    memory.backup(str(edited))
    memory.save("the live database", project="api")
    conn = sqlite3.connect(edited)
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] >= 1, table
    conn.execute(f"UPDATE {table} SET {column} = ?", (value,))
    conn.commit()
    conn.close()
    before = sorted(m.content for m in memory.iter_all(None))
    assert "the live database" in before
    refused = subprocess.run(
        [*MEMLANE_CMD, "restore", str(edited), "--yes"],
        env=run_env(settings.paths.data_dir.parent),
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1
    assert f"{table} rows whose {column} memlane cannot read" in refused.stderr
    assert "nothing restored" in refused.stderr
    assert sorted(m.content for m in memory.iter_all(None)) == before
    assert not Path(settings.database + ".bak").exists()
    restore_database(settings, str(sound))  # the unedited backup passes every rule


TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def test_a_restored_backup_is_filtered_before_any_hook_reads_it(home: Path, tmp_path: Path) -> None:
    """A backup edited outside memlane kept its raw token, AWS key and <private> block for
    good, and SessionStart injected them: maintenance filters stored texts again once per
    filter version, and the backup carried this version's mark (probe s33). What a restore
    brings in is filtered before the live database holds it, whatever the file records."""
    work = tmp_path / "work"
    work.mkdir()
    env = run_env(home)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*MEMLANE_CMD, *args], env=env, cwd=work, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done

    run("save", "the deploy goes through the blue-green switch")
    run("maintain")  # records the filter version in the database, so in the backup
    backup = tmp_path / "bk.db"
    run("backup", str(backup))
    conn = sqlite3.connect(backup)
    marks = conn.execute("SELECT count(*) FROM seen_keys WHERE namespace = 'privacy-filter'")
    assert marks.fetchone()[0] == 1
    conn.execute(
        "UPDATE memories SET content = ?, title = ?, tags = ?",
        (f"leak2 {TOKEN} <private>RPRIV2</private>", AWS_KEY, json.dumps([TOKEN])),
    )
    conn.commit()
    conn.close()

    restored = run("restore", "-y", str(backup))
    assert "restored 1 memory" in restored.stdout
    assert "today's privacy filter changed 1 memory (masked what it masks now" in restored.stdout
    db = home / "memlane.db"
    secrets = [TOKEN, AWS_KEY, "RPRIV2"]
    assert leaked(db, secrets) == {}
    payload = {"session_id": "z1", "cwd": str(work), "source": "startup"}
    started = subprocess.run(
        hook_argv("session-start"), input=json.dumps(payload), env=env, cwd=work,
        capture_output=True, text=True,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "leak2 [REDACTED:github-token]" in started.stdout  # the memory, filtered
    assert [s for s in secrets if s in started.stdout] == []
    assert leaked(db, secrets) == {}
    staged = [p.name for p in db.parent.iterdir() if ".restore" in p.name]
    assert staged == []


def test_a_second_restore_keeps_the_first_restores_copy(
    home: Path, memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    """`restore A` then `restore B` left `.bak` = A: the user's own database, the only copy
    of it, was replaced without a word (probe s33). Each restore keeps what it replaces
    under a name nothing holds: `.bak`, then `.bak.2`, `.bak.3`."""
    memory.save("the user's own database", project="api")
    backups = []
    for name in ("alpha", "beta", "gamma"):
        path = tmp_path / f"{name}.db"
        memory.backup(str(path))
        backups.append(path)
        memory.save(f"after backup {name}", project="api")
    memory.close()
    db = Path(settings.database)
    names = [db.name + ".bak", db.name + ".bak.2", db.name + ".bak.3"]
    for path, name in zip(backups, names, strict=True):
        done = run_memlane(home, "restore", "-y", str(path))
        assert done.returncode == 0, done.stderr
        assert done.stdout.rstrip().endswith(f"previous database kept as {db.with_name(name)}")

    def contents(path: Path) -> list[str]:
        conn = sqlite3.connect(path)
        try:
            return sorted(row[0] for row in conn.execute("SELECT content FROM memories"))
        finally:
            conn.close()

    assert "after backup gamma" in contents(db.with_name(names[0]))  # the user's original
    assert contents(db.with_name(names[1])) == contents(backups[0])
    assert contents(db.with_name(names[2])) == contents(backups[1])
    assert all(mode(db.with_name(name)) == 0o600 for name in names)
    assert contents(db) == contents(backups[2])
    (tmp_path / "elsewhere").write_text("not a database")
    db.with_name(db.name + ".bak.4").symlink_to(tmp_path / "elsewhere")  # a link holds a name
    assert restore_database(settings, str(backups[0])).previous == str(db) + ".bak.5"
    assert (tmp_path / "elsewhere").read_text() == "not a database"


def test_a_restore_drops_transcript_paths_and_rows_named_by_a_secret(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    """A restored backup kept its sessions' transcript paths (masked only), which a later
    hook of the session that names none reads, and its names were never filtered: a
    project name, session id, topic key or feedback prompt kept a raw token. A restore
    treats them as an import does: the path is dropped, a row named by a secret goes,
    a topic key is masked and a mark on a prompt holding one is dropped."""
    from memlane.models import Feedback

    name_token, key_token, mark_token = ("ghp_" + c * 36 for c in "QRS")
    memory.session_start("s-1", project="api", agent="claude-code")
    memory.session_start("s-2", project="api", agent="claude-code")
    kept = memory.save("kept in the backup", project="api", topic_key="auth/x").id
    named = memory.save("filed under a token", project="api").id
    memory.store.put_feedback(Feedback(kept, "useful", f"token {mark_token}", utcnow()))
    backup = tmp_path / "bk.db"
    memory.backup(str(backup))
    memory.close()
    with sqlite3.connect(backup) as conn:
        conn.execute("UPDATE sessions SET transcript_path = '/etc/shadow' WHERE id = 's-1'")
        conn.execute("UPDATE sessions SET project = ? WHERE id = 's-2'", (f"p-{name_token}",))
        conn.execute("UPDATE memories SET project = ? WHERE id = ?", (f"p-{name_token}", named))
        conn.execute("UPDATE memories SET topic_key = ? WHERE id = ?", (f"auth/{key_token}", kept))
    conn.close()

    restored = restore_database(settings, str(backup))
    db = Path(settings.database)
    assert leaked(db, [name_token, key_token, mark_token]) == {}
    assert restored.memories == 1
    assert restored.left_out == 2  # the memory and the session named by the token
    again = open_memory(settings=settings)
    try:
        session = again.store.get_session("s-1")
        assert session is not None and session.transcript_path is None
        assert again.store.get_session("s-2") is None
        memory_kept = again.get(kept)
        assert memory_kept is not None and memory_kept.topic_key == "auth/[REDACTED:github-token]"
        assert again.store.feedback_for([kept]) == []
    finally:
        again.close()


def test_a_restore_declined_by_the_end_of_input_says_nothing_restored(
    home: Path, tmp_path: Path
) -> None:
    env = {"MEMLANE_EMBEDDER": "toy"}
    assert run_memlane(home, "save", "kept as it is", env=env).returncode == 0
    copy = tmp_path / "copy.db"
    assert run_memlane(home, "backup", str(copy), env=env).returncode == 0
    assert run_memlane(home, "save", "after the backup", env=env).returncode == 0
    declined = run_memlane(home, "restore", str(copy), stdin="", env=env)  # </dev/null
    assert declined.returncode == 1, declined.stderr
    assert declined.stdout.splitlines()[-1] == "nothing restored"
    assert "aborted" not in declined.stderr
    found = run_memlane(home, "search", "after the backup", "--mode", "keyword", env=env)
    assert "after the backup" in found.stdout  # not replaced
    kept = run_memlane(home, "--all-projects", "delete", "--before", "2999-01-01", stdin="")
    assert kept.returncode == 1, kept.stderr
    assert kept.stdout.splitlines()[-1] == "nothing deleted"


def test_a_restore_interrupted_while_copying_in_keeps_the_previous_database(
    memory: Memory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the live file was overwritten: the old database is still in .bak."""
    from memlane.interop import backup

    memory.save("kept in the backup", project="api")
    result = memory.backup()
    memory.save("only in the current database", project="api")
    memory.close()
    copy_in = backup._copy_in

    def copy_in_then_interrupted(staged: Path, db: Path) -> None:
        copy_in(staged, db)
        raise KeyboardInterrupt

    monkeypatch.setattr(backup, "_copy_in", copy_in_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        restore_database(settings, result.path)
    bak = Path(settings.database + ".bak")
    assert bak.exists()
    conn = sqlite3.connect(bak)
    contents = [row[0] for row in conn.execute("SELECT content FROM memories")]
    conn.close()
    assert "only in the current database" in contents
