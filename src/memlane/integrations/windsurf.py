"""Windsurf: memlane's hooks in ``~/.codeium/windsurf/hooks.json`` (or the workspace's
``.windsurf/hooks.json``).

Cascade's hook file is ``{"hooks": {"<event>": [{"command": …, "show_output": …}]}}``
(https://docs.windsurf.com/windsurf/cascade/hooks). memlane runs on the prompt
(``pre_user_prompt``), each file write, command and MCP call (``post_write_code``,
``post_run_command``, ``post_mcp_tool_use``) and each finished response
(``post_cascade_response``). Cascade reads a hook's answer only from its exit code
(2 blocks a pre-hook; memlane always exits 0) and shows its output at most in the UI
(``show_output`` is off), so nothing is injected.
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

# (Cascade event, memlane event)
HOOKS: tuple[tuple[str, str], ...] = (
    ("pre_user_prompt", "user-prompt-submit"),
    ("post_write_code", "post-tool-use"),
    ("post_run_command", "post-tool-use"),
    ("post_mcp_tool_use", "post-tool-use"),
    ("post_cascade_response", "stop"),
)


def hooks_path(*, home: Path, project_dir: Path | None) -> Path:
    if project_dir is not None:
        return config_file(".windsurf", "hooks.json", home=home, project_dir=project_dir)
    return config_file(".codeium", "windsurf", "hooks.json", home=home, project_dir=None)


def hook_table() -> dict[str, list[dict[str, Any]]]:
    return {
        native: [{"command": hook_command(event, "windsurf"), "show_output": False}]
        for native, event in HOOKS
    }


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = hooks_path(home=home, project_dir=project_dir)
    return install_hooks(path, hook_table(), dry_run=dry_run)


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    return uninstall_hooks(hooks_path(home=home, project_dir=project_dir), dry_run=dry_run)


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    """Whether memlane's hooks are in the settings ``install`` writes."""
    return has_our_hooks(hooks_path(home=home, project_dir=project_dir))
