"""Kiro: one hook file per trigger in ``.kiro/hooks/`` (the project's, or ``~/.kiro/hooks``).

Kiro's agent hooks are JSON files (``*.kiro.hook``) naming a trigger (``when``)
and an action (``then``). memlane uses shell-command actions: on
``promptSubmit`` the prompt is in the ``USER_PROMPT`` environment variable and
the command's stdout is added to the prompt; ``agentStop`` ends a turn. Files
are memlane's own (``memlane-*.kiro.hook``), so setup overwrites them and
uninstall deletes them; nothing else in the folder is touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memlane.integrations import hook_command, remove_hook_files, write_hook_file
from memlane.integrations.settings_merge import config_dir
from memlane.paths import read_regular_file

# (file stem, Kiro trigger, memlane event, timeout in seconds)
HOOKS: tuple[tuple[str, str, str, int], ...] = (
    ("memlane-prompt-submit", "promptSubmit", "user-prompt-submit", 10),
    ("memlane-agent-stop", "agentStop", "stop", 60),
)


def hooks_dir(*, home: Path, project_dir: Path | None) -> Path:
    return config_dir(".kiro", "hooks", home=home, project_dir=project_dir)


def hook_files() -> dict[str, dict[str, Any]]:
    """File name → hook JSON."""
    files: dict[str, dict[str, Any]] = {}
    for stem, trigger, event, timeout in HOOKS:
        files[f"{stem}.kiro.hook"] = {
            "enabled": True,
            "name": f"memlane {event}",
            "description": f"memlane: {event} (local memory capture and recall)",
            "version": "1",
            "when": {"type": trigger},
            "then": {
                "type": "runCommand",
                "command": hook_command(event, "kiro"),
                "timeout": timeout,
            },
        }
    return files


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    folder = hooks_dir(home=home, project_dir=project_dir)
    messages: list[str] = []
    for name, data in hook_files().items():
        path = folder / name
        text = json.dumps(data, indent=2) + "\n"
        if read_regular_file(path) == text.encode("utf-8"):
            messages.append(f"{path}: already up to date")
        elif dry_run:
            messages.append(f"would write {path}:\n{text.rstrip()}")
        else:
            write_hook_file(path, text.encode("utf-8"), 0o644)
            messages.append(f"wrote {path}")
    return messages


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    folder = hooks_dir(home=home, project_dir=project_dir)
    paths = (folder / name for name in hook_files())
    return remove_hook_files(folder, paths, dry_run=dry_run, ours=lambda _path: True)


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    """Whether memlane's hook files are in the folder ``install`` writes."""
    folder = hooks_dir(home=home, project_dir=project_dir)
    return any((folder / name).is_file() for name in hook_files())
