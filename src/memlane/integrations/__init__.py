"""Setup and uninstall of memlane in agents and editors.

- ``settings_merge``: idempotent merge of hooks into JSON settings, with backup
  and dry-run diff.
- ``claude_code``, ``codex``, ``gemini``, ``kiro``: each agent's hook file and
  hook table (``install(...)`` / ``uninstall(...)`` return messages for the user).
- ``editors`` (MCP helper): Cursor, Windsurf, Cline rules and MCP registration.

``hook_command`` is the command every agent runs: the absolute path of this
installation's ``memlane`` script (so no PATH or venv activation is needed),
falling back to ``python -m memlane``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

AGENTS = ("claude-code", "codex", "gemini", "kiro")


def memlane_executable() -> list[str]:
    """argv prefix that runs this installation's memlane."""
    script = Path(sys.executable).parent / "memlane"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "memlane"]


def hook_command(event: str, agent: str = "claude-code") -> str:
    """The shell command an agent runs for ``event`` (``memlane hook [agent:]event``)."""
    target = event if agent == "claude-code" else f"{agent}:{event}"
    return shlex.join([*memlane_executable(), "hook", target])
