"""A project's ``.git`` is read as git writes it: one short line, from a regular file.

memlane names a project after its git repository and reads the branch from
``HEAD`` without running git, on every hook. A project unpacked from an archive
(not cloned) may hold anything there: ``HEAD`` linked to ``/dev/zero`` took
SessionStart to 7.6 GB, a 1.5 GB ``commondir`` 3 GB per prompt hook, a FIFO
``HEAD`` stalled SessionStart for its whole budget, and ``gitdir: a<NUL>b`` ended
``memlane save`` in a traceback. The commands here run under a 1 GB address-space
limit, so reading such a file whole fails them instead of the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from memlane import project
from memlane.paths import UnsafePath, read_regular_file

from .conftest import MEMLANE_CMD, run_env

LIMIT = 1 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _run(home: Path, cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args],
        cwd=cwd,
        env=run_env(home),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
        check=False,
    )


def _repo(tmp_path: Path, name: str = "shop") -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    return root


def _head_to_dev_zero(root: Path) -> None:
    (root / ".git" / "HEAD").symlink_to("/dev/zero")


def _head_fifo(root: Path) -> None:
    os.mkfifo(root / ".git" / "HEAD")


def _head_huge(root: Path) -> None:
    with (root / ".git" / "HEAD").open("wb") as handle:
        handle.truncate(2 << 30)  # sparse: 2 GB of NULs, no disk


def _worktree_file_huge(root: Path) -> None:
    (root / ".git").rmdir()
    with (root / ".git").open("wb") as handle:
        handle.write(b"gitdir: ")
        handle.truncate(2 << 30)


def _commondir_huge(root: Path) -> None:
    (root / ".git").rmdir()
    gitdir = root / "meta"
    gitdir.mkdir()
    (root / ".git").write_text(f"gitdir: {gitdir}\n")
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    with (gitdir / "commondir").open("wb") as handle:
        handle.write(b"../")
        handle.truncate(2 << 30)


def _gitdir_with_nul(root: Path) -> None:
    (root / ".git").rmdir()
    (root / ".git").write_bytes(b"gitdir: a\0b\n")


CRAFTED = {
    "HEAD links to /dev/zero": _head_to_dev_zero,
    "HEAD is a FIFO": _head_fifo,
    "HEAD is 2 GB": _head_huge,
    "the .git file is 2 GB": _worktree_file_huge,
    "commondir is 2 GB": _commondir_huge,
    "gitdir holds a NUL": _gitdir_with_nul,
}


@pytest.mark.parametrize("craft", list(CRAFTED), ids=list(CRAFTED))
def test_hooks_and_commands_go_on_in_a_crafted_checkout(
    home: Path, tmp_path: Path, craft: str
) -> None:
    root = _repo(tmp_path)
    CRAFTED[craft](root)
    saved = _run(
        home, root, "save", "the shop deploys from the crafted checkout", "--type", "decision"
    )
    assert saved.returncode == 0, saved.stderr
    assert "Traceback" not in saved.stderr
    listed = _run(home, root, "search", "crafted checkout")
    assert listed.returncode == 0 and "crafted" in listed.stdout, listed.stderr
    # SessionStart reads the branch for its pack: it still injects the decision.
    start = _run(home, root, "hook", "session-start", stdin='{"session_id": "s1"}')
    assert start.returncode == 0, start.stderr
    assert "crafted checkout" in start.stdout, start


def test_the_branch_of_a_crafted_checkout_is_none(tmp_path: Path) -> None:
    for craft in CRAFTED:
        root = _repo(tmp_path, craft.replace(" ", "-").replace("/", "-"))
        CRAFTED[craft](root)
        done = subprocess.run(
            [
                *MEMLANE_CMD[:1],
                "-c",
                "import sys; from memlane import project;"
                " print(project.current_branch(sys.argv[1]), project.project_name(sys.argv[1]))",
                str(root),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited,
            check=False,
        )
        assert done.returncode == 0, (craft, done.stderr[-500:])
        expected = "main" if craft == "commondir is 2 GB" else "None"  # its HEAD is fine
        assert done.stdout.split()[0] == expected, craft


def test_an_ordinary_repository_and_worktree_are_still_read(tmp_path: Path) -> None:
    main = _repo(tmp_path, "app")
    (main / ".git" / "HEAD").write_text("ref: refs/heads/feature/login\n")
    linked = tmp_path / "app-wt"
    linked.mkdir()
    gitdir = main / ".git" / "worktrees" / "app-wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/fix\n")
    (gitdir / "commondir").write_text("../..\n")
    (linked / ".git").write_text(f"gitdir: {gitdir}\n")

    assert project.current_branch(main) == "feature/login"
    assert project.current_branch(linked) == "fix"
    assert project.identify(linked).root == main.resolve()
    assert project.project_name(linked / ".") == "app"


def test_a_git_file_is_read_as_any_file_of_a_checkout(tmp_path: Path) -> None:
    """One rule for a file in a project's checkout (paths.read_regular_file), with git's
    bound: a link is not followed, even to a well-formed file, and at most 4 KB is read."""
    root = _repo(tmp_path, "linked-head")
    elsewhere = tmp_path / "HEAD-elsewhere"
    elsewhere.write_text("ref: refs/heads/main\n")
    (root / ".git" / "HEAD").symlink_to(elsewhere)
    assert project.current_branch(root) is None
    (root / ".git" / "HEAD").unlink()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert project.current_branch(root) == "main"

    main = _repo(tmp_path, "app")
    gitdir = main / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (tmp_path / "dot-git").write_text(f"gitdir: {gitdir}\n")
    linked = tmp_path / "wt"
    linked.mkdir()
    (linked / ".git").symlink_to(tmp_path / "dot-git")
    assert project.identify(linked).root == linked.resolve()  # not app's worktree

    long_file = tmp_path / "long"
    long_file.write_bytes(b"x" * 10_000)
    assert read_regular_file(long_file, project.GIT_FILE_BYTES) == b"x" * 4096
    assert read_regular_file(long_file) == b"x" * 10_000
    link = tmp_path / "long-link"
    link.symlink_to(long_file)
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_regular_file(link, project.GIT_FILE_BYTES)
