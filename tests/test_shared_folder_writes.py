"""Writes and reads in folders another local user can change (local probe s34).

A temporary file made safely, closed, then reopened by name was swapped for a link in
a shared folder: the database went into a file the attacker chose (backup, sync push).
A race is not tested by racing: each test checks the invariant that closes it (the
file is written in a folder only the user can enter, a folder others can change is
refused or skipped, a file is used through the descriptor that was checked).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from memlane.paths import UnsafePath
from memlane.store.sqlite_backup import copy_into_new_file
from tests.conftest import run_memlane

ATTACKER = 1001  # another local user (tests run as root in CI: chown only then)


def as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("out_mode", [0o755, 0o777])
def test_a_database_copy_is_written_in_a_folder_only_the_user_can_enter(
    tmp_path: Path, out_mode: int
) -> None:
    # HIGH-2: the temporary copy sat in the target folder under a name anyone there could
    # replace with a link between its creation and SQLite opening it. Beside a target in a
    # folder no one else can write, SQLite writes it there (its room taken once: a copy
    # in memlane's data folder first made a backup need room twice on the data disk).
    source = sqlite3.connect(tmp_path / "source.db")
    source.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT)")
    source.execute("INSERT INTO memories (content) VALUES ('kept')")
    source.commit()
    out, scratch = tmp_path / "out", tmp_path / "data"
    out.mkdir()
    out.chmod(out_mode)
    where: list[tuple[Path, int, int]] = []

    def vet(copy: sqlite3.Connection) -> None:
        folder = Path(copy.execute("PRAGMA database_list").fetchone()[2]).parent
        info = folder.stat()
        where.append((folder, stat.S_IMODE(info.st_mode), info.st_uid))

    assert copy_into_new_file(source, out / "b.db", scratch, vet=vet) == 1
    source.close()
    [(folder, folder_mode, owner)] = where
    # SQLite writes by name only where no one else can rename a folder on the way.
    assert folder.parent == (out if out_mode == 0o755 else scratch)
    assert (folder_mode, owner) == (0o700, os.geteuid())
    assert [p.name for p in out.iterdir()] == ["b.db"]  # the staging folders are gone
    assert not scratch.exists() or list(scratch.iterdir()) == []
    assert mode(out / "b.db") == 0o600


def test_a_failed_copy_leaves_no_staging_folder(tmp_path: Path) -> None:
    source = sqlite3.connect(tmp_path / "source.db")
    source.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY)")
    out, scratch = tmp_path / "out", tmp_path / "data"
    out.mkdir()

    def refuse(copy: sqlite3.Connection) -> None:
        raise ValueError("not this one")

    with pytest.raises(ValueError, match="not this one"):
        copy_into_new_file(source, out / "b.db", scratch, vet=refuse)
    source.close()
    assert list(out.iterdir()) == []
    assert not scratch.exists() or list(scratch.iterdir()) == []


def test_a_failure_inside_staging_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On NFS with root_squash, root's mkdir makes a folder of nobody's: refused, and the
    # folder made is removed (it stayed, one more per attempt).
    from memlane.paths import Staging

    me = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: me + 1)  # the folder made is not "ours"
    with pytest.raises(UnsafePath, match=r"belongs to .* not to you .* network drive"):
        Staging(tmp_path / "b.db")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["shared", "below a shared folder"])
def test_backup_writes_into_any_folder_the_user_can_write(tmp_path: Path, where: str) -> None:
    # HIGH-2 as run: `memlane backup <a world-writable folder>/b.db`. SQLite opens by name,
    # so it writes in memlane's own folder; the bytes go by descriptor into a staging folder
    # beside the target. `~/srv/team/alice/b.db` (team shared, alice the user's) was
    # refused: "use a folder of your own".
    home = tmp_path / "home"
    ok(run_memlane(home, "save", "a private decision", "--project", "p"))
    shared = tmp_path / "srv" / "team"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    folder = shared if where == "shared" else shared / "alice"
    folder.mkdir(mode=0o700, exist_ok=True)
    ok(run_memlane(home, "backup", str(folder / "b.db")))
    assert [p.name for p in folder.iterdir()] == ["b.db"]
    assert mode(folder / "b.db") == 0o600
    assert not [p for p in home.iterdir() if p.name.endswith(".stage")]
    restored = ok(run_memlane(tmp_path / "other", "restore", str(folder / "b.db"), "-y"))
    assert "restored 1 memory" in restored.stdout


def test_a_killed_backups_staging_folder_is_removed_by_the_next_backup(tmp_path: Path) -> None:
    # Default backups have timestamped names: the next backup's name is never the killed
    # one's, and only folders of the same name were removed (a full copy stayed for ever).
    home = tmp_path / "home"
    ok(run_memlane(home, "save", "a private decision", "--project", "p"))
    gone = _a_pid_not_running()
    orphans = [
        folder / f".memlane-20261201-000000.db.{gone}.00112233aabb.stage"
        for folder in (home, home / "backups")
    ]
    for orphan in orphans:
        orphan.mkdir(parents=True, mode=0o700)
        (orphan / "memlane-20261201-000000.db").write_text("a full copy of the memories")
    ok(run_memlane(home, "backup"))
    assert not any(orphan.exists() for orphan in orphans)
    [backup] = (home / "backups").iterdir()
    assert backup.name.startswith("memlane-") and backup.name.endswith(".db")


def _machine_folder(home: Path, shared: Path) -> Path:
    ok(run_memlane(home, "save", "a private decision", "--project", "p"))
    ok(run_memlane(home, "sync", "push", "--dir", str(shared)))
    [folder] = (shared / "machines").iterdir()
    return folder


@pytest.mark.parametrize("level", ["machine", "chunks", "root"])
def test_push_refuses_a_folder_others_can_write(tmp_path: Path, level: str) -> None:
    # HIGH-3: push wrote its chunk and manifest through a temporary file in a machine
    # folder anyone could write (swapped for a link before it was reopened).
    home, shared = tmp_path / "home", tmp_path / "sync"
    shared.mkdir()
    folder = _machine_folder(home, shared)
    target = {"machine": folder, "chunks": folder / "chunks", "root": shared}[level]
    before = sorted(p.name for p in folder.rglob("*"))
    target.chmod(0o777)
    ok(run_memlane(home, "save", "another decision", "--project", "p"))
    refused = run_memlane(home, "sync", "push", "--dir", str(shared))
    assert refused.returncode == 2, refused.stderr
    assert f"{target} in the sync folder can be written by other users (mode 777)" in (
        refused.stderr
    )
    assert sorted(p.name for p in folder.rglob("*")) == before  # nothing written


def test_push_refuses_a_machine_folder_of_another_user(tmp_path: Path) -> None:
    as_root()
    home, shared = tmp_path / "home", tmp_path / "sync"
    shared.mkdir()
    folder = _machine_folder(home, shared)
    os.chown(folder, ATTACKER, ATTACKER)
    ok(run_memlane(home, "save", "another decision", "--project", "p"))
    refused = run_memlane(home, "sync", "push", "--dir", str(shared))
    assert refused.returncode == 2, refused.stderr
    assert f"{folder} in the sync folder belongs to " in refused.stderr
    assert f"uid {ATTACKER}" in refused.stderr and "not to you" in refused.stderr


def _planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A sync folder where machine ``planter`` pushed a memory; ``reader``'s home."""
    shared = tmp_path / "sync"
    shared.mkdir()
    planter, reader = tmp_path / "planter", tmp_path / "reader"
    folder = _machine_folder(planter, shared)
    ok(run_memlane(reader, "save", "the reader's own", "--project", "p"))
    return shared, reader, folder


def test_pull_skips_a_machine_folder_others_can_write(tmp_path: Path) -> None:
    # MED-1: anyone who could write the sync folder planted memories that pull brought
    # into the user's prompts.
    shared, reader, folder = _planted(tmp_path)
    folder.chmod(0o777)
    pulled = ok(run_memlane(reader, "sync", "pull", "--dir", str(shared)))
    assert "imported 0 new" in pulled.stdout
    [note] = [line for line in pulled.stdout.splitlines() if "note:" in line]
    expected = "skipped 1 folder not yours alone (another user's, or others can write it)"
    assert f"{expected}: {folder.name} (can be written by other users (mode 777))" in note
    found = ok(run_memlane(reader, "search", "private decision"))
    assert "a private decision" not in found.stdout
    folder.chmod(0o700)  # the user's alone again: read
    assert "imported 1 new" in ok(run_memlane(reader, "sync", "pull", "--dir", str(shared))).stdout


def test_pull_skips_a_machine_folder_of_another_user(tmp_path: Path) -> None:
    as_root()
    shared, reader, folder = _planted(tmp_path)
    for path in (folder, *folder.rglob("*")):
        os.chown(path, ATTACKER, ATTACKER, follow_symlinks=False)
    pulled = ok(run_memlane(reader, "sync", "pull", "--dir", str(shared)))
    assert "imported 0 new" in pulled.stdout
    expected = "skipped 1 folder not yours alone (another user's, or others can write it)"
    assert f"{expected}: {folder.name} (belongs to " in pulled.stdout
    assert f"uid {ATTACKER}" in pulled.stdout
    status = ok(run_memlane(reader, "sync", "status", "--dir", str(shared)))
    assert f"{folder.name} (belongs to" in status.stderr


def test_the_worker_lock_is_used_through_the_descriptor_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MED-2: `<db>.worker.lock` was checked, then opened again by name: a link swapped in
    # between was followed. The swap is made exactly there, as an attacker would.
    from memlane.config import load_settings
    from memlane.worker import server

    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path / "home"))
    settings, _warnings = load_settings()
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    checked = server.ensure_private_file

    def then_swapped(path: Path) -> Path:
        checked(path)
        if path.name.endswith(".worker.lock"):
            path.unlink()
            path.symlink_to(victim)
        return path

    monkeypatch.setattr(server, "ensure_private_file", then_swapped)
    with pytest.raises(UnsafePath, match="is a symbolic link"), server.worker_locks(settings):
        pass
    assert victim.read_text() == "the user's file\n"


def test_a_staging_folder_left_by_a_process_gone_is_removed(tmp_path: Path) -> None:
    # A backup killed mid-copy left a full copy of the memories in its staging folder.
    from memlane.paths import Staging

    gone_pid = _a_pid_not_running()
    orphan = tmp_path / f".b.db.{gone_pid}.0011aabb0011.stage"
    orphan.mkdir(mode=0o700)
    (orphan / "b.db").write_text("an old copy")
    (orphan / "b.db-journal").symlink_to(tmp_path / "elsewhere")
    live = tmp_path / f".b.db.{os.getppid()}.0011aabb0011.stage"  # a running process's
    live.mkdir(mode=0o700)
    with Staging(tmp_path / "b.db") as stage:
        os.close(stage.new_file())
        stage.publish()
    assert not orphan.exists() and live.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "b.db"]


def _a_pid_not_running() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_folders_of_the_users_private_group_are_the_users(tmp_path: Path) -> None:
    # Under Debian's user private groups (umask 002) every folder a user or git makes is
    # group-writable, by a group of the user alone: sync and backup go on there.
    import grp
    import pwd

    me = pwd.getpwuid(os.geteuid())
    group = grp.getgrgid(me.pw_gid)
    if group.gr_name != me.pw_name or set(group.gr_mem) - {me.pw_name}:
        pytest.skip("the user's group is not a private group")
    shared = tmp_path / "sync"
    shared.mkdir()
    shared.chmod(0o775)
    folder = _machine_folder(tmp_path / "one", shared)
    for path in (shared / "machines", folder, folder / "chunks"):
        path.chmod(0o775)
    ok(run_memlane(tmp_path / "one", "save", "another decision", "--project", "p"))
    ok(run_memlane(tmp_path / "one", "sync", "push", "--dir", str(shared)))
    pulled = ok(run_memlane(tmp_path / "two", "sync", "pull", "--dir", str(shared)))
    assert "imported 2 new" in pulled.stdout and "note:" not in pulled.stdout
    ok(run_memlane(tmp_path / "two", "backup", str(shared / "b.db")))


def test_a_sync_folder_that_is_a_link_of_the_users_is_used(tmp_path: Path) -> None:
    real = tmp_path / "drive" / "sync"
    real.mkdir(parents=True)
    shared = tmp_path / "sync"
    shared.symlink_to(real, target_is_directory=True)
    _machine_folder(tmp_path / "one", shared)
    pulled = ok(run_memlane(tmp_path / "two", "sync", "pull", "--dir", str(shared)))
    assert "imported 1 new" in pulled.stdout and "note:" not in pulled.stdout


def test_every_whole_file_write_goes_through_a_staging_folder(tmp_path: Path) -> None:
    # `export -o`, state files and the editors' files (`replace_file`: one mechanism) were
    # written beside the target under a name anyone who can write the folder could swap,
    # then renamed by name.
    from memlane.paths import replace_file, replace_privately

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    target = shared / "out.jsonl"
    with replace_privately(target) as out:
        written = Path(os.readlink(f"/proc/self/fd/{out.fileno()}"))
        out.write("{}\n")
    assert written.parent.parent == shared and written.parent.name.endswith(".stage")
    assert [p.name for p in shared.iterdir()] == ["out.jsonl"]
    assert (target.read_text(), mode(target)) == ("{}\n", 0o600)
    replace_file(target, b"[]\n", 0o644)
    assert [p.name for p in shared.iterdir()] == ["out.jsonl"]
    assert (target.read_text(), mode(target)) == ("[]\n", 0o644)


def test_push_writes_into_the_folders_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MED: push checked the sync folder's levels by name, then opened them by name again to
    # write: a level swapped for a link in between was followed. The swap is made exactly
    # there, as whoever can rename things on the way would.
    from memlane.config import load_settings
    from memlane.interop import sync
    from memlane.service import open as open_memory

    shared, elsewhere = tmp_path / "sync", tmp_path / "elsewhere"
    shared.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path / "home"))
    settings, _warnings = load_settings()
    memory = open_memory(settings=settings)
    try:
        memory.save("a private decision", project="p")
        split = sync._parts

        def then_swapped(records: list[dict[str, object]]) -> object:
            [machine] = (shared / "machines").iterdir()
            machine.rename(tmp_path / "moved")
            machine.symlink_to(elsewhere, target_is_directory=True)
            (elsewhere / "chunks").mkdir()
            return split(records)

        monkeypatch.setattr(sync, "_parts", then_swapped)
        memory.sync_push(str(shared))
    finally:
        memory.close()
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["chunks"]  # nothing written there
    written = sorted(p.name for p in (tmp_path / "moved").rglob("*") if p.is_file())
    assert len(written) == 2 and "manifest.json" in written
