"""Codex CLI: memlane's hooks in ``~/.codex/hooks.json`` (or ``<project>/.codex/hooks.json``).

Codex reads hooks in Claude Code's shape. Its events are SessionStart,
UserPromptSubmit, PostToolUse, Stop, and in recent versions PreCompact and SubagentStop
(a thread-spawned subagent's turn ending: ``agent_id``, ``agent_transcript_path`` its own
rollout, ``transcript_path`` the parent's, ``last_assistant_message``; openai/codex
``codex-rs/hooks/schema/generated/subagent-stop.command.input.schema.json``); there is
no SessionEnd. Codex 0.124 and later runs hooks by default, but a
command hook that is not managed by an admin runs only once the user has reviewed and
trusted it (``/hooks`` in Codex; https://developers.openai.com/codex/hooks); before
0.124, hooks are behind ``[features] codex_hooks = true`` in ``~/.codex/config.toml``
(``hooks`` is the key now, ``codex_hooks`` its deprecated alias). Setup says so rather
than editing config.toml, so a hand-written config.toml is never rewritten.
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

HOOKS: tuple[tuple[str, str, int], ...] = (
    ("SessionStart", "session-start", 10),
    ("UserPromptSubmit", "user-prompt-submit", 10),
    ("PostToolUse", "post-tool-use", 10),
    ("Stop", "stop", 60),
    ("PreCompact", "pre-compact", 15),
    ("SubagentStop", "subagent-stop", 60),
)
FEATURE_HINT = (
    "Codex runs a new or changed hook only once you trust it: open /hooks in Codex and"
    " trust memlane's (Codex before 0.124 also needs `[features]` / `codex_hooks = true`"
    " in ~/.codex/config.toml)"
)


def hooks_path(*, home: Path, project_dir: Path | None) -> Path:
    return config_file(".codex", "hooks.json", home=home, project_dir=project_dir)


def hook_table() -> dict[str, list[dict[str, Any]]]:
    table: dict[str, list[dict[str, Any]]] = {}
    for native, event, timeout in HOOKS:
        hook = {"type": "command", "command": hook_command(event, "codex"), "timeout": timeout}
        table[native] = [{"hooks": [hook]}]
    return table


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = hooks_path(home=home, project_dir=project_dir)
    messages = install_hooks(path, hook_table(), dry_run=dry_run)
    return [*messages, FEATURE_HINT]


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    return uninstall_hooks(hooks_path(home=home, project_dir=project_dir), dry_run=dry_run)


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    return has_our_hooks(hooks_path(home=home, project_dir=project_dir))
