"""Project identity and capture opt-outs.

A project is named after the root of its git repository, found through the
git *common* dir so that every worktree of one repository is one project;
outside git it is the real path of the working directory (named by its last
component). Capture is off for a directory holding (or under) a
``.memlane-ignore`` file, for paths matching ``exclude_projects`` globs, when
``MEMLANE_DISABLED=1``, and for the home directory and /tmp unless enabled.
The standard library and :mod:`memlane.paths` only (hook path).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from memlane.paths import UnsafePath, read_regular_file

IGNORE_MARKER = ".memlane-ignore"


@dataclass(frozen=True, slots=True)
class ProjectIdentity:
    name: str
    root: Path


# A git file memlane reads (a worktree's ``.git``, ``HEAD``, ``commondir``) holds one short
# line; more is not git's.
GIT_FILE_BYTES = 4096


def _git_line(path: Path) -> str | None:
    """The first line of the small git file ``path``, read as any file of a checkout is
    (:func:`memlane.paths.read_regular_file`, at most :data:`GIT_FILE_BYTES`); None when it
    is missing, a link, no regular file, unreadable or holds a NUL. A project unpacked
    from an archive may hold anything there (a FIFO, a link to ``/dev/zero``, 1.5 GB)."""
    try:
        data = read_regular_file(path, GIT_FILE_BYTES)
    except (OSError, ValueError, UnsafePath):  # ValueError: a NUL in the path
        return None
    if data is None:
        return None
    line = data.decode("utf-8", errors="replace").split("\n", 1)[0].strip()
    return None if "\0" in line else line


def _linked_gitdir(directory: Path, dot_git: Path) -> Path | None:
    """The git dir a worktree's ``.git`` file names (``gitdir: …``), None when it names
    none."""
    text = _git_line(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.split(":", 1)[1].strip())
    return gitdir if gitdir.is_absolute() else directory / gitdir


def _git_common_root(start: Path) -> Path | None:
    """Root of the main worktree of the repository containing ``start``, if any."""
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return directory
        if not dot_git.is_file():
            continue
        gitdir = _linked_gitdir(directory, dot_git)
        common_text = None if gitdir is None else _git_line(gitdir / "commondir")
        if gitdir is None or not common_text:
            return directory
        try:
            common = Path(common_text)
            if not common.is_absolute():
                common = (gitdir.resolve() / common).resolve()
        except (OSError, RuntimeError):  # a link loop on the way
            return directory
        return common.parent if common.name == ".git" else common
    return None


def current_branch(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The git branch checked out in ``cwd`` (its worktree's HEAD), None when detached or
    outside git. Reads ``.git/HEAD`` (or the worktree's gitdir): no git process."""
    start = Path(os.path.realpath(cwd if cwd is not None else os.getcwd()))
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            head: Path | None = dot_git / "HEAD"
        elif dot_git.is_file():
            gitdir = _linked_gitdir(directory, dot_git)
            head = None if gitdir is None else gitdir / "HEAD"
        else:
            continue
        ref = None if head is None else _git_line(head)
        prefix = "ref: refs/heads/"
        return ref[len(prefix) :] if ref and ref.startswith(prefix) else None
    return None


def identify(cwd: str | os.PathLike[str] | None = None) -> ProjectIdentity:
    """The project of ``cwd`` (default: the process's working directory)."""
    start = Path(os.path.realpath(cwd if cwd is not None else os.getcwd()))
    root = _git_common_root(start) or start
    name = root.name or str(root)
    return ProjectIdentity(name=name, root=root)


def project_name(cwd: str | os.PathLike[str] | None = None) -> str:
    return identify(cwd).name


def capture_disabled(
    cwd: str | os.PathLike[str] | None,
    *,
    exclude_globs: tuple[str, ...] = (),
    capture_home_and_tmp: bool = False,
    environ: dict[str, str] | None = None,
) -> str | None:
    """Why capture is off for ``cwd`` (a short reason), or None when it is on."""
    env = os.environ if environ is None else environ
    if env.get("MEMLANE_DISABLED", "").strip().lower() in {"1", "true", "yes"}:
        return "MEMLANE_DISABLED is set"
    path = Path(os.path.realpath(cwd if cwd is not None else os.getcwd()))
    for directory in (path, *path.parents):
        if (directory / IGNORE_MARKER).exists():
            return f"{directory / IGNORE_MARKER} exists"
    text = str(path)
    for pattern in exclude_globs:
        if fnmatch.fnmatch(text, os.path.expanduser(pattern)):
            return f"matches exclude_projects pattern {pattern!r}"
    if not capture_home_and_tmp:
        home = Path(os.path.realpath(Path.home()))
        tmp_roots = {Path(os.path.realpath(t)) for t in ("/tmp", env.get("TMPDIR") or "/tmp")}
        if path == home or path in tmp_roots:
            return f"{path} is the home or temp directory"
    return None
