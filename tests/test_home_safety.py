"""The memlane home and its files against another local user and planted links.

Attacks of the "home and files" part of the local-security issue, through the real
`memlane` command: a home another user owns or anyone can write is refused before a
byte is read or written; the token, the runtime file and the logs are never read or
written through a symbolic link; export and backup write a new 0600 file in place of
their target. Tests that need another uid run as root (tests/other_user.py).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from memlane.errors import ConfigError
from memlane.hooks.log import log_line
from memlane.paths import (
    UnsafePath,
    ensure_private_file,
    read_private_text,
    replace_privately,
    write_private_text,
)
from memlane.runtime import load_or_create_token, token_file
from tests.conftest import MEMLANE_CMD, one_line_error, run_env, run_memlane
from tests.test_web_support import free_port
from tests.test_worker import _paths


def memlane(
    home: Path, *args: str, stdin: str | None = None, umask: int | None = None
) -> subprocess.CompletedProcess[str]:
    return run_memlane(home, *args, stdin=stdin, umask=umask, env={"MEMLANE_EMBEDDER": "toy"})


def mode(path: Path) -> int:
    return path.lstat().st_mode & 0o777


def memories(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT content FROM memories")]


def hook(home: Path, event: str, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return memlane(home, "hook", event, stdin=json.dumps(payload))


# -- creating the home ----------------------------------------------------------------


def test_a_new_home_and_its_missing_parents_are_private_whatever_the_umask(
    tmp_path: Path,
) -> None:
    home = tmp_path / "a" / "b" / "memlane-home"
    done = memlane(home, "save", "the retry queue drains every 5 s", umask=0)
    assert done.returncode == 0, done.stderr
    for directory in (tmp_path / "a", tmp_path / "a" / "b", home):
        assert mode(directory) == 0o700, directory
    assert mode(home / "memlane.db") == 0o600


def _planter(whose: str, request: pytest.FixtureRequest) -> Callable[[Path], None]:
    """What another local user does to a folder name in a shared folder (/tmp): makes the
    folder theirs (as root: given to another uid), or one anyone can write."""
    user = request.getfixturevalue("other_user") if whose == "another user's" else None

    def plant(folder: Path) -> None:
        os.mkdir(folder, 0o700)
        if user is not None:
            os.chown(folder, user.pw_uid, user.pw_gid)
        else:
            folder.chmod(0o777)

    return plant


@pytest.mark.parametrize("whose", ["another user's", "anyone's to write"])
def test_a_home_made_by_someone_else_after_the_settings_were_read_is_refused(
    tmp_path: Path, whose: str, request: pytest.FixtureRequest
) -> None:
    """A new MEMLANE_HOME in a shared folder: the state folders are checked when the
    settings are read, when the home does not exist yet; another user who made it then
    got memlane's database, runtime files and logs in a folder of theirs."""
    from memlane.config import load_settings
    from memlane.runtime import write_signin_page
    from memlane.service import open as open_memory

    home = tmp_path / "shared" / "new-home"
    home.parent.mkdir()
    settings, _ = load_settings(environ=run_env(home))
    _planter(whose, request)(home)  # between the check and the first mkdir
    with pytest.raises(UnsafePath, match=str(home)):
        open_memory(settings=settings)
    with pytest.raises(UnsafePath, match=str(home)):
        write_signin_page(settings.paths, "http://127.0.0.1:1/auth?code=x")
    log_line(settings.paths.log_dir, "a hook's failure")
    assert sorted(home.iterdir()) == []


@pytest.mark.parametrize("whose", ["another user's", "anyone's to write", "the user's"])
def test_a_folder_made_by_someone_else_while_memlane_makes_it_is_refused(
    tmp_path: Path, whose: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same race one step later: memlane saw the folder missing, another user made it
    before memlane's own mkdir, which then failed as "exists" and was taken as made by
    another memlane process of the user's (which stays fine: that one is kept)."""
    from memlane.paths import make_private_dirs

    home = tmp_path / "shared" / "new-home"
    home.parent.mkdir()
    plant = _planter(whose, request) if whose != "the user's" else partial(os.mkdir, mode=0o700)
    real_mkdir = Path.mkdir

    def mkdir_after_them(self: Path, *args: Any, **kwargs: Any) -> None:
        if self == home and not home.exists():
            plant(home)  # the other mkdir comes first
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir_after_them)
    if whose == "the user's":
        assert make_private_dirs(home / "run") == [home / "run"]
        assert mode(home) == mode(home / "run") == 0o700
        return
    with pytest.raises(UnsafePath, match=str(home)):
        make_private_dirs(home / "run")
    assert sorted(home.iterdir()) == []


# -- a home that is not the user's alone -------------------------------------------------


def test_a_home_anyone_can_write_is_refused_and_left_alone(home: Path) -> None:
    home.mkdir(mode=0o700)
    home.chmod(0o777)
    line = one_line_error(memlane(home, "save", "a note"), 2)
    assert f"{home} can be written by other users (mode 777)" in line
    # A folder the user named may be shared (a parent, a team's): never advise a chmod.
    assert "chmod" not in line
    assert "directory of your own: set MEMLANE_HOME to a new one" in line
    assert sorted(home.iterdir()) == []  # nothing created in it
    quiet = hook(home, "user-prompt-submit", {"session_id": "s", "prompt": "hello", "cwd": "/"})
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert sorted(home.iterdir()) == []  # the hook did not even log there


def test_a_shared_sticky_folder_as_home_is_refused_without_chmod_advice(tmp_path: Path) -> None:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: a chmod there breaks it for every user
    line = one_line_error(memlane(shared, "stats"), 2)
    assert f"{shared} can be written by other users (mode 1777)" in line
    assert "chmod" not in line
    assert "set MEMLANE_HOME to a new one" in line
    assert shared.stat().st_mode & 0o7777 == 0o1777


def test_a_folder_memlane_made_keeps_its_chmod_advice(tmp_path: Path) -> None:
    """The XDG folders (no MEMLANE_HOME) are memlane's: their mode may be tightened."""
    xdg = {name: str(tmp_path / name) for name in ("data", "config", "state")}
    env = {f"XDG_{name.upper()}_HOME": path for name, path in xdg.items()}
    env["HOME"] = str(tmp_path)
    for made in (tmp_path / "state" / "memlane" / "logs", tmp_path / "data" / "memlane"):
        made.mkdir(parents=True, mode=0o700)
        made.chmod(0o777)  # memlane made it 0700; the mode was changed since
        command = [*MEMLANE_CMD, "stats"]
        environ = {k: v for k, v in run_env(tmp_path).items() if k != "MEMLANE_HOME"}
        done = subprocess.run(
            command, env=environ | env, capture_output=True, text=True, check=False
        )
        assert f"run `chmod 700 {made}`" in one_line_error(done, 2)
        made.chmod(0o700)


@pytest.mark.parametrize("folder", ["memlane", "logs"])
def test_a_memlane_home_named_like_memlanes_own_gets_no_chmod_advice(
    tmp_path: Path, folder: str
) -> None:
    """A group-shared folder named ``memlane`` given as MEMLANE_HOME, or a ``logs``
    folder that was in it before: the user's, never told to chmod."""
    home = tmp_path / "memlane"
    home.mkdir(mode=0o700)
    shared = home if folder == "memlane" else home / "logs"
    shared.mkdir(mode=0o700, exist_ok=True)
    shared.chmod(0o775)
    line = one_line_error(memlane(home, "stats"), 2)
    assert f"{shared} can be written by other users (mode 775)" in line
    assert "chmod" not in line
    assert "set MEMLANE_HOME to a new one" in line


def test_a_state_directory_that_is_a_file_is_refused(home: Path) -> None:
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("not a directory")
    assert "is not a directory" in one_line_error(memlane(home, "stats"), 2)


def test_a_home_of_another_user_is_refused_with_its_planted_token(
    home: Path, other_user: object
) -> None:
    uid, gid = other_user.pw_uid, other_user.pw_gid  # type: ignore[attr-defined]
    home.mkdir(mode=0o700)
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE planted (x)")
    (home / "token").write_text("known-token-value\n")
    (home / "config.toml").write_text('secret_patterns = ["never"]\n')
    for path in (home, db, home / "token", home / "config.toml"):
        os.chown(path, uid, gid)
    home.chmod(0o777)
    (home / "token").chmod(0o644)
    before = sorted(p.name for p in home.iterdir())

    for args in (("save", "the db password is hunter2"), ("status",), ("serve",)):
        line = one_line_error(memlane(home, *args), 2)
        assert f"{home} belongs to {other_user.pw_name}" in line  # type: ignore[attr-defined]
    payload = {"session_id": "s", "prompt": "deploy with the staging key", "cwd": "/"}
    quiet = hook(home, "user-prompt-submit", payload)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert sorted(p.name for p in home.iterdir()) == before
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"planted"}  # never migrated, never written


def test_a_private_home_of_another_user_is_refused_too(home: Path, other_user: object) -> None:
    home.mkdir(mode=0o700)
    os.chown(home, other_user.pw_uid, other_user.pw_gid)  # type: ignore[attr-defined]
    assert "belongs to" in one_line_error(memlane(home, "stats"), 2)


# -- the token and runtime file -----------------------------------------------------------


def test_a_token_that_is_a_link_is_refused(home: Path, tmp_path: Path) -> None:
    home.mkdir(mode=0o700)
    known = tmp_path / "known-token"
    known.write_text("known-token-value\n")
    known.chmod(0o600)
    (home / "token").symlink_to(known)
    line = one_line_error(memlane(home, "serve", "--port", str(free_port())), 2)
    assert f"{home / 'token'} is a symbolic link" in line
    with pytest.raises(UnsafePath):
        load_or_create_token(_paths(home))
    assert known.read_text() == "known-token-value\n"


def test_a_token_of_another_user_is_refused(home: Path, other_user: object) -> None:
    home.mkdir(mode=0o700)
    token = home / "token"
    token.write_text("known-token-value\n")
    token.chmod(0o600)
    os.chown(token, other_user.pw_uid, other_user.pw_gid)  # type: ignore[attr-defined]
    with pytest.raises(UnsafePath, match="belongs to"):
        load_or_create_token(_paths(home))
    line = one_line_error(memlane(home, "serve", "--port", str(free_port())), 2)
    assert f"{token} belongs to" in line


def test_a_token_others_can_write_is_refused_one_they_can_read_is_tightened(home: Path) -> None:
    home.mkdir(mode=0o700)
    token = token_file(_paths(home))
    token.write_text("my-own-token\n")
    token.chmod(0o666)
    with pytest.raises(UnsafePath, match="mode 666"):
        load_or_create_token(_paths(home))
    token.chmod(0o644)
    assert load_or_create_token(_paths(home)) == "my-own-token"
    assert mode(token) == 0o600


def test_a_runtime_file_that_is_a_link_is_not_followed(home: Path, tmp_path: Path) -> None:
    (home / "run").mkdir(parents=True, mode=0o700)
    home.chmod(0o700)
    victim = tmp_path / "victim.json"
    victim.write_text('{"pid": 1, "host": "127.0.0.1", "port": 9, "started_at": 0, "db": "x"}')
    (home / "run" / "worker.json").symlink_to(victim)
    line = one_line_error(memlane(home, "status"), 2)
    assert "is a symbolic link" in line
    with pytest.raises(UnsafePath):
        write_private_text(home / "run" / "worker.json", "{}")
    assert victim.read_text().startswith('{"pid": 1')


# -- logs --------------------------------------------------------------------------------


def test_the_hook_log_is_never_written_through_a_link(home: Path, tmp_path: Path) -> None:
    logs = home / "logs"
    logs.mkdir(parents=True, mode=0o700)
    home.chmod(0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (logs / "hooks.log").symlink_to(victim)
    log_line(logs, "a failure")
    bad = subprocess.run(
        [*MEMLANE_CMD, "hook", "user-prompt-submit"],
        input=b"{not json",
        env=run_env(home),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (bad.returncode, bad.stdout, bad.stderr) == (0, b"", b"")
    assert victim.read_text() == "precious\n"
    assert (logs / "hooks.log").is_symlink()


def test_the_hook_log_is_not_written_into_a_shared_directory(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    logs.chmod(0o777)
    log_line(logs, "a failure")
    assert list(logs.iterdir()) == []


def test_the_worker_log_is_never_appended_through_a_link(home: Path, tmp_path: Path) -> None:
    logs = home / "logs"
    logs.mkdir(parents=True, mode=0o700)
    home.chmod(0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (logs / "worker.log").symlink_to(victim)
    line = one_line_error(memlane(home, "serve", "--daemon", "--port", str(free_port())), 2)
    assert "worker.log is a symbolic link" in line
    assert victim.read_text() == "precious\n"


# -- state files: helpers --------------------------------------------------------------


def test_ensure_private_file_never_changes_a_link_or_a_file_of_another_user(
    tmp_path: Path,
) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    target.chmod(0o644)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(UnsafePath, match="symbolic link"):
        ensure_private_file(link)
    assert mode(target) == 0o644
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_private_text(link)
    assert issubclass(UnsafePath, ConfigError)
    created = ensure_private_file(tmp_path / "new" / "lock")
    assert mode(created) == 0o600 and mode(created.parent) == 0o700


# -- export and backup -------------------------------------------------------------------


@pytest.fixture
def saved(home: Path) -> Path:
    done = memlane(home, "save", "the billing queue retries 3 times")
    assert done.returncode == 0, done.stderr
    return home


def test_export_replaces_an_open_target_with_a_new_private_file(
    saved: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    target.chmod(0o644)
    done = memlane(saved, "export", "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert mode(target) == 0o600
    assert "billing queue" in target.read_text()
    assert not list(tmp_path.glob(".out.jsonl.*"))  # no temporary left


@pytest.mark.parametrize("command", ["export", "index", "backup"])
def test_export_and_backup_refuse_a_target_that_is_a_link(
    saved: Path, tmp_path: Path, command: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    link = tmp_path / "out"
    link.symlink_to(victim)
    args = {
        "export": ("export", "-o", str(link)),
        "index": ("index", "export", "-o", str(link)),
        "backup": ("backup", str(link)),
    }[command]
    line = one_line_error(memlane(saved, *args), 2)
    assert f"{link} is a symbolic link" in line or f"{link} already exists" in line
    assert victim.read_text() == "precious\n" and mode(victim) == 0o644
    assert link.is_symlink()


@pytest.mark.parametrize("command", ["export", "backup"])
def test_a_dangling_link_does_not_create_its_target(
    saved: Path, tmp_path: Path, command: str
) -> None:
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "elsewhere")
    args = ("export", "-o", str(link)) if command == "export" else ("backup", str(link))
    assert f"{link} is a symbolic link" in one_line_error(memlane(saved, *args), 2)
    assert not (tmp_path / "elsewhere").exists()


def test_export_refuses_a_device(saved: Path, tmp_path: Path) -> None:
    """Refused with the next step a user can take: never "remove it" (/dev/null, a FIFO)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in ("/dev/null", str(fifo)):
        line = one_line_error(memlane(saved, "export", "--format", "jsonl", "-o", target), 2)
        assert f"{target} is not a regular file" in line
        assert line.endswith("give the path of one") and "remove" not in line, line
    assert fifo.exists()


def test_a_failed_export_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("previous export\n")
    with pytest.raises(RuntimeError), replace_privately(target) as out:
        out.write("half")
        raise RuntimeError("disk trouble")
    assert target.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


# -- the config file ----------------------------------------------------------------------

HOSTILE_CONFIG = 'exclude_projects = ["*"]\n[maintenance]\nmax_age_days = 1\n'


def test_a_config_file_anyone_can_write_is_not_read(home: Path, tmp_path: Path) -> None:
    """Whoever can write config.toml could turn capture off or have maintenance delete
    memories after a day: a world-writable one (or a link to one) is refused, with why."""
    home.mkdir(mode=0o700)
    shared = tmp_path / "shared.toml"
    shared.write_text(HOSTILE_CONFIG)
    shared.chmod(0o666)
    for config in (home / "config.toml", tmp_path / "link.toml"):
        if config.name == "link.toml":
            config.symlink_to(shared)
            env = {"MEMLANE_EMBEDDER": "toy", "MEMLANE_CONFIG": str(config)}
        else:
            config.write_text(HOSTILE_CONFIG)
            config.chmod(0o666)
            env = {"MEMLANE_EMBEDDER": "toy"}
        # Refused, as any config file that cannot be read: defaults in its place would
        # capture the projects the user excluded and prune on the default retention.
        line = one_line_error(run_memlane(home, "config", "show", env=env), 2)
        assert "can be written by other users (mode 666); not read" in line
    (home / "config.toml").chmod(0o664)  # the user's group, under umask 002: still read
    done = memlane(home, "config", "show")
    assert "maintenance.max_age_days = 1 *" in done.stdout, done.stderr


def test_a_config_file_a_shared_group_can_write_is_not_read(home: Path) -> None:
    """Group write is the user's own only for their private group (umask 002): a config
    file a shared group can write lets every member choose where memories go."""
    import grp

    mine = os.getgid()
    shared = next(
        (g for g in grp.getgrall() if g.gr_gid != mine and g.gr_gid in os.getgroups()),
        None,
    )
    if os.geteuid() == 0:
        shared = next((g for g in grp.getgrall() if g.gr_gid != mine), None)
    if shared is None:
        pytest.skip("no group but the user's own to give the file to")
    home.mkdir(mode=0o700)
    config = home / "config.toml"
    config.write_text(HOSTILE_CONFIG)
    config.chmod(0o664)
    os.chown(config, -1, shared.gr_gid)
    line = one_line_error(run_memlane(home, "config", "show"), 2)
    assert "can be written by other users (mode 664); not read" in line


def test_a_config_file_of_another_user_is_not_read(
    home: Path, tmp_path: Path, other_user: object
) -> None:
    home.mkdir(mode=0o700)
    config = home / "config.toml"
    config.write_text(HOSTILE_CONFIG)
    config.chmod(0o644)
    os.chown(config, other_user.pw_uid, other_user.pw_gid)  # type: ignore[attr-defined]
    assert "belongs to another user" in one_line_error(memlane(home, "config", "show"), 2)
