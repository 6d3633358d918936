"""A project's checkout is someone else's work: what it holds where memlane writes its
rules, hooks and settings (a link, dangling or not; a FIFO; a folder that is a link) never
makes memlane write, create or read a file outside the project."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memlane.integrations import editors, settings_merge
from memlane.paths import UnsafePath
from memlane.service import Memory
from tests.conftest import run_memlane


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A cloned project that was set up for Cursor (its rules file is there)."""
    path = tmp_path / "cloned"
    (path / ".git" / "info").mkdir(parents=True)
    rules = path / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "memlane.mdc").write_text("stub\n", encoding="utf-8")
    return path


def setup(home: Path, user_home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_memlane(home, "setup", *args, env={"HOME": str(user_home)}, cwd=cwd)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one-line error of a refused setup."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "symbolic link" in done.stderr or "not a regular file" in done.stderr, done.stderr
    return done.stderr


def test_a_dangling_backup_link_does_not_create_its_target(
    memory: Memory, checkout: Path, user_home: Path
) -> None:
    """The reported attack: the checkout ships a foreign context file and, where memlane
    keeps its backup, a dangling link to a file of the user's; the refresh (run by the MCP
    server on every session start) wrote the checkout's text into that file."""
    rules = checkout / ".cursor" / "rules"
    (rules / "memlane-context.mdc").write_text("echo owned > /tmp/owned\n", encoding="utf-8")
    target = user_home / ".bash_login"
    (rules / "memlane-context.mdc.memlane-backup").symlink_to(target)

    with pytest.raises(UnsafePath, match="symbolic link"):
        editors.refresh_cursor_context(memory, checkout)
    assert not target.exists()
    assert (rules / "memlane-context.mdc").read_text() == "echo owned > /tmp/owned\n"


def test_setup_never_copies_a_linked_file_into_the_checkout(
    home: Path, checkout: Path, user_home: Path
) -> None:
    """A rules file that links to a private file of the user's: read for its backup, it
    landed inside the checkout as a regular copy (and could be committed)."""
    secret = user_home / "id_ed25519"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="utf-8")
    windsurf = checkout / ".windsurf" / "rules"
    windsurf.mkdir(parents=True)
    (windsurf / "memlane.md").symlink_to(secret)

    refused(setup(home, user_home, checkout, "--editor", "windsurf"))
    assert not (windsurf / "memlane.md.memlane-backup").exists()
    assert secret.read_text() == "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    assert (windsurf / "memlane.md").is_symlink()


def test_project_settings_that_link_out_are_neither_read_nor_replaced(
    home: Path, tmp_path: Path, user_home: Path
) -> None:
    """`setup --project` merged a linked JSON file of the user's (credentials) into the
    checkout's settings and kept a copy of it there as the backup."""
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    credentials = user_home / "credentials.json"
    credentials.write_text('{"token": "s3cr3t-value"}\n', encoding="utf-8")
    (project / ".claude" / "settings.json").symlink_to(credentials)

    refused(setup(home, user_home, project, "--project"))
    assert [p.name for p in (project / ".claude").iterdir()] == ["settings.json"]
    assert credentials.read_text() == '{"token": "s3cr3t-value"}\n'


def test_kiro_hook_file_linking_to_a_dotfile_is_not_overwritten(
    home: Path, tmp_path: Path, user_home: Path
) -> None:
    project = tmp_path / "project"
    hooks = project / ".kiro" / "hooks"
    hooks.mkdir(parents=True)
    bashrc = user_home / ".bashrc"
    bashrc.write_text("export PATH=$PATH:~/bin\n", encoding="utf-8")
    (hooks / "memlane-prompt-submit.kiro.hook").symlink_to(bashrc)

    refused(setup(home, user_home, project, "--agent", "kiro", "--project"))
    assert bashrc.read_text() == "export PATH=$PATH:~/bin\n"


def test_a_folder_of_the_checkout_that_links_out_is_refused(
    home: Path, tmp_path: Path, user_home: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    elsewhere = user_home / ".config" / "autostart"
    elsewhere.mkdir(parents=True)
    (project / ".claude").symlink_to(elsewhere)

    refused(setup(home, user_home, project, "--project"))
    assert list(elsewhere.iterdir()) == []


def test_a_fifo_where_a_rules_file_goes_is_refused_without_waiting(
    home: Path, checkout: Path, user_home: Path
) -> None:
    """Reading it would wait for a writer that never comes."""
    os.mkfifo(checkout / ".cursor" / "rules" / "memlane-context.mdc")

    refused(setup(home, user_home, checkout, "--editor", "cursor"))


def test_a_link_planted_under_the_temporary_name_is_not_written_through(
    tmp_path: Path, user_home: Path
) -> None:
    """The new file was written next to its target under a predictable name, then renamed;
    it is written in a new private folder now (``paths.Staging``): a planted name is unused."""
    target = user_home / "authorized_keys"
    settings = tmp_path / "project" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    planted = settings.parent / f".settings.json.{os.getpid()}.tmp"
    planted.symlink_to(target)

    settings_merge.write_json(settings, {"model": "opus"})
    assert not target.exists()
    assert json.loads(settings.read_text()) == {"model": "opus"}
    assert sorted(p.name for p in settings.parent.iterdir()) == [planted.name, "settings.json"]


def test_setup_in_an_ordinary_checkout_still_works(
    home: Path, tmp_path: Path, user_home: Path
) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"model": "opus"}\n', encoding="utf-8")

    done = setup(home, user_home, project, "--project")
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and "UserPromptSubmit" in settings["hooks"]
    backup = project / ".claude" / "settings.json.memlane-backup"
    assert backup.read_text() == '{"model": "opus"}\n'
    assert backup.stat().st_mode & 0o777 == 0o600


def test_a_link_in_the_users_own_home_is_followed(
    home: Path, tmp_path: Path, user_home: Path
) -> None:
    """``~/.claude/settings.json`` kept in a dotfiles repository: the file it names is
    changed and backed up there; the link stays (memlane used to replace it with a file)."""
    dotfiles = user_home / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    (dotfiles / "settings.json").write_text('{"model": "opus"}\n', encoding="utf-8")
    (user_home / ".claude").mkdir()
    (user_home / ".claude" / "settings.json").symlink_to(dotfiles / "settings.json")
    project = tmp_path / "project"
    project.mkdir()

    done = setup(home, user_home, project)
    assert done.returncode == 0, done.stderr
    assert (user_home / ".claude" / "settings.json").is_symlink()
    settings = json.loads((dotfiles / "settings.json").read_text())
    assert settings["model"] == "opus" and "UserPromptSubmit" in settings["hooks"]
    assert (dotfiles / "settings.json.memlane-backup").read_text() == '{"model": "opus"}\n'


def test_a_linked_git_info_leaves_no_memory_file_git_could_commit(
    home: Path, tmp_path: Path, user_home: Path
) -> None:
    """`setup --editor cursor` refused a `.git/info` that is a link only after it had written
    the context file (the project's memories), which git then listed as committable."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".git" / "info").symlink_to(elsewhere)

    refused(setup(home, user_home, project, "--editor", "cursor"))
    assert not (project / ".cursor" / "rules" / "memlane-context.mdc").exists()
    assert list(elsewhere.iterdir()) == []
