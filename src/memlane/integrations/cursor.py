"""Cursor: memlane's hooks in ``~/.cursor/hooks.json`` (or ``<project>/.cursor/hooks.json``).

Cursor's hook file is ``{"version": 1, "hooks": {"<event>": [{"command": …}]}}``,
each event's commands listed flat (https://cursor.com/docs/agent/hooks). memlane
runs on the prompt (``beforeSubmitPrompt``), each shell command and file edit
(``afterShellExecution``, ``afterFileEdit``) and the agent's reply
(``afterAgentResponse``: its text is stored as the turn's answer, then the summary and
checkpoint are refreshed, as after Windsurf's ``post_cascade_response``). Not on
``stop`` too: it ends the loop with no text, and a checkpoint rebuilt then would drop
the next steps the reply named. Not on ``afterMCPExecution``: it names a tool but not
its server, so memlane's own MCP calls (its search results) could not be told apart
and left out. Cursor takes no context from these hooks, so they inject nothing (the
MCP server's rules file carries the context pack: ``--editor cursor``), and memlane
runs no hook before a command: nothing can be blocked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlane.integrations import hook_command
from memlane.integrations.settings_merge import (
    apply,
    config_file,
    has_our_hooks,
    load_json,
    merge_hooks,
    uninstall_hooks,
)

# (Cursor event, memlane event)
HOOKS: tuple[tuple[str, str], ...] = (
    ("beforeSubmitPrompt", "user-prompt-submit"),
    ("afterShellExecution", "post-tool-use"),
    ("afterFileEdit", "post-tool-use"),
    ("afterAgentResponse", "stop"),
)
# The file's format version (Cursor's docs: "version": 1).
VERSION = 1


def hooks_path(*, home: Path, project_dir: Path | None) -> Path:
    return config_file(".cursor", "hooks.json", home=home, project_dir=project_dir)


def hook_table() -> dict[str, list[dict[str, Any]]]:
    return {native: [{"command": hook_command(event, "cursor")}] for native, event in HOOKS}


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = hooks_path(home=home, project_dir=project_dir)
    merged = merge_hooks(load_json(path), hook_table())
    if "version" not in merged:  # a new file: first, as Cursor's docs write it
        merged = {"version": VERSION, **merged}
    return apply(path, merged, dry_run=dry_run)


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = hooks_path(home=home, project_dir=project_dir)
    return uninstall_hooks(path, dry_run=dry_run, bare={"version": VERSION})


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    """Whether memlane's hooks are in the settings ``install`` writes."""
    return has_our_hooks(hooks_path(home=home, project_dir=project_dir))
