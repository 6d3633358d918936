"""Gemini CLI: memlane's hooks in ``~/.gemini/settings.json`` (or the project's).

Gemini's events differ from Claude Code's: the prompt arrives in BeforeAgent,
tool results in AfterTool, the end of a turn is AfterAgent and compaction is
PreCompress. Timeouts are in milliseconds. Each hook carries a ``name`` so it
is recognisable in ``/hooks``. Gemini reads its settings as JSON with comments
(google-gemini/gemini-cli ``packages/cli/src/config/settings.ts``: strip-json-comments,
then JSON.parse) and keeps them when it writes the file: setup reads them so too, and
leaves a file holding comments as it is, printing the hooks to set by hand
(:func:`memlane.integrations.settings_merge.keep_comments`): rewritten as JSON, the
file would lose them.

Hooks run while Gemini's hooks system is on: the default in current versions, older ones
shipped it off (``hooksConfig.enabled``, earlier ``tools.enableHooks``; "Enable Hooks
System" in ``/settings``; https://geminicli.com/docs/hooks/, gemini-cli pull 15933).
``/hooks panel`` lists the hooks and whether they run; a project's hooks run only in a
folder the user trusts (gemini-cli pull 16816). Setup says so rather than editing the
setting.
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

# (Gemini event, memlane event, timeout in milliseconds)
HOOKS: tuple[tuple[str, str, int], ...] = (
    ("SessionStart", "session-start", 10_000),
    ("BeforeAgent", "user-prompt-submit", 10_000),
    ("AfterTool", "post-tool-use", 10_000),
    ("AfterAgent", "stop", 60_000),
    ("PreCompress", "pre-compact", 15_000),
    ("SessionEnd", "session-end", 2_000),
)


ENABLE_HINT = (
    "Gemini CLI runs hooks while its hooks system is on (the default in current versions):"
    " `/hooks panel` in Gemini shows memlane's; if it says disabled, turn on \"Enable Hooks"
    ' System" in /settings (hooksConfig.enabled) and restart Gemini'
)


def settings_path(*, home: Path, project_dir: Path | None) -> Path:
    return config_file(".gemini", "settings.json", home=home, project_dir=project_dir)


def hook_table() -> dict[str, list[dict[str, Any]]]:
    table: dict[str, list[dict[str, Any]]] = {}
    for native, event, timeout in HOOKS:
        hook = {
            "name": f"memlane-{event}",
            "type": "command",
            "command": hook_command(event, "gemini"),
            "timeout": timeout,
        }
        group: dict[str, Any] = {"hooks": [hook]}
        if native == "AfterTool":
            group["matcher"] = ".*"
        table[native] = [group]
    return table


def install(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = settings_path(home=home, project_dir=project_dir)
    messages = install_hooks(path, hook_table(), dry_run=dry_run, comments=True)
    return [*messages, ENABLE_HINT]


def uninstall(*, home: Path, project_dir: Path | None, dry_run: bool) -> list[str]:
    path = settings_path(home=home, project_dir=project_dir)
    return uninstall_hooks(path, dry_run=dry_run, comments=True)


def has_hooks(*, home: Path, project_dir: Path | None) -> bool:
    path = settings_path(home=home, project_dir=project_dir)
    return has_our_hooks(path, comments=True)
