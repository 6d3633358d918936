"""Setup and uninstall of memlane in agents and editors.

- ``settings_merge``: idempotent merge of hooks into JSON settings, with backup
  and dry-run diff.
- ``claude_code``, ``codex``, ``gemini``, ``kiro``, ``cursor``, ``windsurf``,
  ``cline``: each agent's hook file and hook table (``install(...)`` /
  ``uninstall(...)`` return messages for the user).
- ``editors`` (MCP helper): Cursor, Windsurf, Cline rules and MCP registration.

``hook_command`` is the command every agent runs: this installation's
interpreter with ``-S`` and the hook launcher, both by absolute path (so no PATH
or venv activation is needed; see :mod:`memlane.hooks.launch`).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from memlane.hooks.agents import AGENTS as AGENTS  # the agents memlane hooks into
from memlane.integrations.folders import make_dir, remove_made
from memlane.paths import UnsafePath, refuse_shared_folder, replace_file


def memlane_executable() -> list[str]:
    """argv prefix that runs this installation's memlane."""
    script = Path(sys.executable).parent / "memlane"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "memlane"]


def launcher_path() -> Path:
    """The hook launcher script of this installation (see memlane.hooks.launch)."""
    return Path(__file__).resolve().parents[1] / "hooks" / "launch.py"


def hook_argv(event: str, agent: str = "claude-code") -> list[str]:
    """argv an agent runs for ``event``: ``python -S …/memlane/hooks/launch.py [agent:]event``.

    ``-S`` and the launcher skip site-packages processing and the console-script
    wrapper, and the launcher relays to a running worker: a hook then costs little
    more than a bare interpreter start. It behaves exactly like ``memlane hook``.
    """
    target = event if agent == "claude-code" else f"{agent}:{event}"
    launcher = launcher_path()
    if os.name != "posix" or not launcher.is_file():  # pragma: no cover - the launcher is POSIX
        return [*memlane_executable(), "hook", target]
    return [sys.executable, "-S", str(launcher), target]


def hook_command(event: str, agent: str = "claude-code") -> str:
    """The shell command an agent runs for ``event`` (see :func:`hook_argv`)."""
    return shlex.join(hook_argv(event, agent))


def write_hook_file(path: Path, data: bytes, mode: int) -> None:
    """Write one of memlane's hook files (agents with one file per hook: Kiro, Cline), in
    a folder no other user can write (:func:`memlane.paths.refuse_shared_folder`)."""
    refuse_shared_folder(path)
    make_dir(path.parent)
    replace_file(path, data, mode)


def remove_hook_files(
    folder: Path, paths: Iterable[Path], *, dry_run: bool, ours: Callable[[Path], bool]
) -> list[str]:
    """Delete the hook files among ``paths`` that ``ours`` says memlane wrote (agents with
    one file per hook: Kiro, Cline); messages for the user. One of them that is not a
    regular file is refused (UnsafePath): memlane wrote none such."""
    messages: list[str] = []
    for path in paths:
        if not (path.exists() or path.is_symlink()) or not ours(path):
            continue
        if path.is_symlink() or not path.is_file():
            raise UnsafePath(f"{path} is not a regular file: memlane did not write it, remove it")
        if dry_run:
            messages.append(f"would delete {path}")
        else:
            path.unlink()
            messages.append(f"deleted {path}")
    if not messages:
        return [f"{folder}: no memlane hook files, nothing to remove"]
    return messages if dry_run else [*messages, *remove_made(folder)]
