"""Cline: one executable hook file per event in ``~/Documents/Cline/Hooks/`` (or the
project's ``.clinerules/hooks/``).

Cline runs the file named after the hook (``UserPromptSubmit``, no extension) with
the event's JSON on stdin and reads a JSON answer from its stdout
(https://docs.cline.bot/features/hooks/hook-reference). PreCompact runs before Cline
compacts the conversation (https://docs.cline.bot/customization/hooks; its
``preCompact`` section holds sizes only): memlane refreshes the task's checkpoint.
memlane's files are short shell scripts that run memlane's hook command, marked as
memlane's by their second line: setup rewrites only such a file, and leaves a hook file
of the user's where it is (Cline runs one file per hook name), naming the command it
could call; uninstall deletes only memlane's files. Scripts are 0700: Cline runs them,
nobody else needs to.
"""

from __future__ import annotations

from pathlib import Path

from memlane.integrations import hook_command, remove_hook_files, write_hook_file
from memlane.integrations.settings_merge import config_dir
from memlane.paths import UnsafePath, read_regular_file

# (Cline hook file, memlane event)
HOOKS: tuple[tuple[str, str], ...] = (
    ("TaskStart", "session-start"),
    ("TaskResume", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PostToolUse", "post-tool-use"),
    ("TaskComplete", "stop"),
    ("TaskCancel", "session-end"),
    ("PreCompact", "pre-compact"),
)
MARKER = "# memlane: written by `memlane setup --agent cline`; `memlane uninstall` removes it"
MODE = 0o700
ENABLE_HINT = "Cline runs hooks once they are enabled: turn them on in Cline's Hooks tab"


def hooks_dir(*, home: Path, project_dir: Path | None) -> Path:
    if project_dir is not None:
        return config_dir(".clinerules", "hooks", home=home, project_dir=project_dir)
    return config_dir("Documents", "Cline", "Hooks", home=home, project_dir=None)


def script(event: str) -> str:
    """The hook file memlane writes for ``event``."""
    return f"#!/bin/sh\n{MARKER}\nexec {hook_command(event, 'cline')}\n"


def is_ours(path: Path) -> bool:
    """Whether the hook file at ``path`` is one memlane wrote (its marker line); a link
    there is the user's (memlane writes none), and so is a folder or a FIFO."""
    if path.is_symlink():
        return False
    try:
        data = read_regular_file(path, limit=4096)
    except UnsafePath:  # not a regular file
        return False
    return data is not None and MARKER.encode("utf-8") in data.split(b"\n", 2)[:2]


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    folder = hooks_dir(home=home, project_dir=project_dir)
    messages: list[str] = []
    for name, event in HOOKS:
        path = folder / name
        text = script(event)
        if (path.exists() or path.is_symlink()) and not is_ours(path):
            messages.append(
                f"{path} is a hook of yours and stays as it is: memlane's {name} hook is not"
                f" installed (to capture with yours, have it pass its input to"
                f" {hook_command(event, 'cline')})"
            )
        elif read_regular_file(path) == text.encode("utf-8"):
            messages.append(f"{path}: already up to date")
        elif dry_run:
            messages.append(f"would write {path}:\n{text.rstrip()}")
        else:
            write_hook_file(path, text.encode("utf-8"), MODE)
            messages.append(f"wrote {path}")
    return [*messages, ENABLE_HINT]


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    folder = hooks_dir(home=home, project_dir=project_dir)
    paths = (folder / name for name, _event in HOOKS)
    return remove_hook_files(folder, paths, dry_run=dry_run, ours=is_ours)


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    """Whether any of memlane's hook files is in the folder ``install`` writes."""
    folder = hooks_dir(home=home, project_dir=project_dir)
    return any(is_ours(folder / name) for name, _event in HOOKS)
