"""Claude Code: memlane's hooks in ``~/.claude/settings.json`` (or the project's).

PostToolUse, Stop and SubagentStop run ``async`` (Claude Code does not wait for
them); SessionStart and UserPromptSubmit inject context so they run in line;
SessionEnd gets a short timeout because Claude Code gives all SessionEnd hooks
1.5 s together. The plugin in ``plugin/`` registers the same hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlane.integrations import hook_command
from memlane.integrations.settings_merge import (
    config_file,
    has_our_hooks,
    install_hooks,
    uninstall_hooks,
)

# (Claude Code event, memlane event, timeout in seconds, async)
HOOKS: tuple[tuple[str, str, int, bool], ...] = (
    ("SessionStart", "session-start", 10, False),
    ("UserPromptSubmit", "user-prompt-submit", 10, False),
    ("PostToolUse", "post-tool-use", 10, True),
    ("Stop", "stop", 60, True),
    ("SubagentStop", "subagent-stop", 60, True),
    ("PreCompact", "pre-compact", 15, False),
    ("SessionEnd", "session-end", 2, False),
)


def settings_path(*, home: Path, project_dir: Path | None) -> Path:
    """``<project>/.claude/settings.json`` with ``--project``, else ``~/.claude/settings.json``."""
    return config_file(".claude", "settings.json", home=home, project_dir=project_dir)


def hook_table(agent: str = "claude-code") -> dict[str, list[dict[str, Any]]]:
    """memlane's hooks in Claude Code's settings shape (also used by Codex)."""
    table: dict[str, list[dict[str, Any]]] = {}
    for native, event, timeout, background in HOOKS:
        hook: dict[str, Any] = {
            "type": "command",
            "command": hook_command(event, agent),
            "timeout": timeout,
        }
        if background:
            hook["async"] = True
        group: dict[str, Any] = {"hooks": [hook]}
        if native == "PostToolUse":
            group["matcher"] = "*"
        table[native] = [group]
    return table


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = settings_path(home=home, project_dir=project_dir)
    return install_hooks(path, hook_table(), dry_run=dry_run)


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    return uninstall_hooks(settings_path(home=home, project_dir=project_dir), dry_run=dry_run)


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    """Whether memlane's hooks are in the settings ``install`` writes."""
    return has_our_hooks(settings_path(home=home, project_dir=project_dir))
