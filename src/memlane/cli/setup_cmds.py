"""``memlane setup`` and ``memlane uninstall``: hook memlane into agents and editors.

Agents get memlane's hooks (``--agent``, default Claude Code; Codex, Gemini CLI,
Kiro, Cursor, Windsurf and Cline too; ``--project`` writes the project's settings
instead of the user's). ``--editor`` registers
the MCP server and rules for Cursor, Windsurf or Cline (the MCP server alone for Codex,
Gemini CLI or Kiro) and ``--claude-code-mcp``
registers the MCP server with Claude Code; those live in
``memlane.integrations.editors``. Every change keeps a backup, and
``--dry-run`` prints it without writing. Installing hooks for Claude Code or
Codex offers to capture the sessions already on disk (``memlane recover``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import click
from click.decorators import FC

from memlane.errors import MemlaneError
from memlane.integrations import AGENTS
from memlane.text import counted

if TYPE_CHECKING:
    from memlane.integrations.editors import Removal


def register(cli: click.Group) -> None:
    cli.add_command(setup)
    cli.add_command(uninstall)


# What to do after setup for the hooks to run: agents read hooks when a session starts.
NEXT_STEP = {
    "claude-code": "start a new Claude Code session (running ones keep their old hooks)",
    "codex": "start a new Codex session (with the feature flag above)",
    "gemini": "start a new Gemini CLI session",
    "kiro": "reopen the project in Kiro",
    "cursor": "restart Cursor (it reads hooks.json when it starts)",
    "windsurf": "restart Windsurf (Cascade reads hooks.json when it starts)",
    "cline": "enable hooks in Cline's Hooks tab and start a new task",
}
# When an agent's hooks start the worker (with worker.autostart on) and what they capture.
# Kiro has no SessionStart (its prompt hook starts the worker) and passes no answers,
# tool results or transcript to its hooks.
# Cursor and Windsurf neither: their prompt hook starts it. Their hooks inject nothing, and
# Windsurf's get no command output.
WORKER_STARTS = {
    "kiro": "after your first prompt",
    "cursor": "after your first prompt",
    "windsurf": "after your first prompt",
}
CAPTURED = {
    "kiro": "the prompts it captured (Kiro's hooks get no answers or tool results)",
    "cursor": "what it captured (Cursor takes no context from hooks: `--editor cursor`"
    " gives it memlane's tools and context rules)",
    "windsurf": "what it captured (Windsurf's hooks get no command output and give no"
    " context: `--editor windsurf` gives it memlane's tools)",
}


def _agent_module(agent: str) -> ModuleType:
    from memlane.integrations import claude_code, cline, codex, cursor, gemini, kiro, windsurf

    modules = {
        "claude-code": claude_code,
        "codex": codex,
        "gemini": gemini,
        "kiro": kiro,
        "cursor": cursor,
        "windsurf": windsurf,
        "cline": cline,
    }
    return modules[agent]


def _options(action: str) -> list[Callable[[FC], FC]]:
    """The options setup and uninstall share, in the words of ``action``'s help."""
    install = action == "install"
    return [
        click.option(
            "--agent",
            type=click.Choice(AGENTS),
            default=None,
            help=f"Agent whose hooks to {'write' if install else 'remove'} (default:"
            " claude-code unless --editor or --claude-code-mcp alone is given).",
        ),
        click.option(
            "--project",
            "project_level",
            is_flag=True,
            help=f"{'Write' if install else 'Clean'} the current project's settings instead of"
            " the user's.",
        ),
        click.option(
            "--dry-run",
            is_flag=True,
            help=f"Print the changes without {'writing' if install else 'making'} them.",
        ),
        click.option(
            "--editor",
            type=click.Choice(("cursor", "windsurf", "cline", "codex", "gemini", "kiro", "all")),
            default=None,
            help="Also register the MCP server and rules of an editor (codex, gemini, kiro:"
            " the MCP server alone; all: cursor, windsurf and cline)."
            if install
            else "Also unregister the MCP server and remove the rules of an editor.",
        ),
        click.option(
            "--claude-code-mcp",
            is_flag=True,
            help="Also register memlane's MCP server in Claude Code."
            if install
            else "Also unregister memlane's MCP server from Claude Code (alone: only it;"
            " removing Claude Code's hooks removes it too).",
        ),
    ]


def _with_options(action: str) -> Callable[[FC], FC]:
    def decorate(func: FC) -> FC:
        for option in reversed(_options(action)):
            func = option(func)
        return func

    return decorate


def _run(
    action: str,
    agent: str | None,
    project_level: bool,
    dry_run: bool,
    editor: str | None,
    claude_code_mcp: bool,
) -> None:
    # Before anything is written: hooks installed under settings that refuse every
    # command would store nothing. Uninstall reads none (a broken config must not keep
    # hooks in).
    autostart = _autostart() if action == "install" else False
    from memlane.integrations.settings_merge import CommentsKept

    home = Path.home()
    cwd = Path.cwd()
    if agent is None and editor is None and not claude_code_mcp:
        agent = "claude-code"
    messages: list[str] = []
    try:
        _change(action, agent, project_level, dry_run, editor, claude_code_mcp, messages)
    except CommentsKept as exc:
        if exc.to_set:  # what to set by hand, after what was done before: the error says so
            messages.append(exc.to_set)
        raise
    finally:
        for message in messages:
            click.echo(message)
    if action == "install" and agent in ("claude-code", "codex") and not dry_run:
        _offer_recover()
    hooked = []
    if action == "install" and agent is None and not dry_run:
        hooked = _hooked(editor, claude_code_mcp, home, cwd)
    click.echo(_next_step(action, agent, editor, claude_code_mcp, dry_run, autostart, hooked))


def _change(
    action: str,
    agent: str | None,
    project_level: bool,
    dry_run: bool,
    editor: str | None,
    claude_code_mcp: bool,
    messages: list[str],
) -> None:
    """Install or uninstall what the options name, adding the lines to say to ``messages``."""
    home = Path.home()
    cwd = Path.cwd()
    project_dir = cwd if project_level else None
    if agent is not None:
        module = _agent_module(agent)
        messages.extend(
            getattr(module, action)(home=home, project_dir=project_dir, dry_run=dry_run)
        )
    if editor is not None:
        from memlane.integrations import editors

        said: list[str] = []
        changed: Mapping[str, Removal]
        if action == "install":
            written = editors.install_editor(editor, project_dir=cwd, home=home, dry_run=dry_run)
            changed = dict.fromkeys(written, "change")
        else:
            changed = editors.uninstall_editor(
                editor, project_dir=cwd, home=home, dry_run=dry_run, said=said
            )
        messages.extend(_changed_lines(changed, dry_run) or [f"{editor}: nothing to change"])
        messages.extend(said)
    # Uninstalling Claude Code's hooks takes out its MCP server too: all that setup put in
    # Claude Code goes, whichever options put it there (said only when there was one).
    along = action == "uninstall" and agent == "claude-code" and not claude_code_mcp
    if claude_code_mcp or along:
        from memlane.integrations import editors

        said = []
        if action == "install":
            written = editors.install_claude_code_mcp(
                home=home, project_dir=project_dir, dry_run=dry_run
            )
            changed = dict.fromkeys(written, "change")
        else:
            changed = editors.uninstall_claude_code_mcp(
                home=home, project_dir=project_dir, dry_run=dry_run, said=said
            )
        nothing = [] if along else ["Claude Code MCP: nothing to change"]
        messages.extend(_changed_lines(changed, dry_run) or nothing)
        messages.extend(said)


def _hooked(editor: str | None, claude_code_mcp: bool, home: Path, cwd: Path) -> list[str]:
    """The MCP clients setup registered whose agent has memlane's hooks already (the
    user's settings or this project's), as the next step names them."""
    return [
        _shown(client)
        for client in _mcp_agents(editor, claude_code_mcp)
        if any(_has_hooks(client, home, where) for where in (None, cwd))
    ]


def _has_hooks(agent: str, home: Path, project_dir: Path | None) -> bool:
    """Whether ``agent`` has memlane's hooks there. Asked only to word the next step, so
    a place that cannot be read (a link, no permission) has none: setup is done by then."""
    try:
        return bool(_agent_module(agent).has_hooks(home=home, project_dir=project_dir))
    except (MemlaneError, OSError):
        return False


def _autostart() -> bool:
    """Whether SessionStart (or a prompt) starts the worker: ``worker.autostart``. Reading
    it loads and checks the settings: setup calls this before it writes anything, so
    settings that refuse every command (a missing named config) install no hooks."""
    from memlane.cli.context import CliState

    state = click.get_current_context().find_object(CliState)
    return state is None or state.settings.worker__autostart


def _next_step(
    action: str,
    agent: str | None,
    editor: str | None,
    claude_code_mcp: bool,
    dry_run: bool,
    autostart: bool = True,
    hooked: list[str] | None = None,
) -> str:
    """The line that tells the user what to do now, and what they will see once they did.

    Only an agent's hooks start the worker and capture; an editor or Claude Code's MCP
    registration alone gives the assistant memlane's tools, and it saves what it saves,
    unless that agent has memlane's hooks already (``hooked``: their names).
    """
    if dry_run:
        return f"nothing written (--dry-run); run it without --dry-run to {action}"
    if action == "uninstall":
        return (
            "next: restart running sessions so they stop calling memlane; your memories stay"
            " where they are (`memlane stats` shows them)"
        )
    steps = [NEXT_STEP[agent]] if agent is not None else []
    servers = _mcp_clients(editor, claude_code_mcp)
    if servers:
        they = "it starts" if len(servers) == 1 else "they start"
        steps.append(f"restart {_joined(servers)} so {they} memlane's MCP server")
    if agent is None and hooked:
        bare = [_shown(name) for name in _mcp_agents(editor, claude_code_mcp)]
        bare = [name for name in bare if name not in hooked]
        uncaptured = f"; {_joined(bare)} capture nothing automatically" if bare else ""
        return (
            f"next: {'; '.join(steps)}; memlane's hooks, already installed for"
            f" {_joined(hooked)}, capture as before{uncaptured}; the assistant also saves"
            " and searches through memlane's MCP tools, and `memlane search WORDS` shows"
            " what was saved"
        )
    if agent is None:
        return (
            f"next: {'; '.join(steps)}; nothing is captured automatically (no memlane hooks"
            " found): the assistant saves and searches through memlane's MCP tools,"
            " and `memlane search WORDS` shows what it saved"
        )
    captured = CAPTURED.get(agent, "what it captured")
    if not autostart:  # the hooks then run in their own processes: no worker to show
        return f"next: {'; '.join(steps)}; then `memlane search WORDS` shows {captured}"
    when = WORKER_STARTS.get(agent)
    return (
        f"next: {'; '.join(steps)}; then{f', {when},' if when else ''} `memlane status` shows"
        f" the worker it starts and `memlane search WORDS` {captured}"
    )


def _joined(names: list[str]) -> str:
    """``names`` as prose: "A", "A and B", "A, B and C"."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if names[:-1] else names)


def _mcp_clients(editor: str | None, claude_code_mcp: bool) -> list[str]:
    """The editors (and Claude Code) setup registered memlane's MCP server with, as the
    user restarts them."""
    return [_CLIENT_SHOWN.get(name, _shown(name)) for name in _mcp_agents(editor, claude_code_mcp)]


def _mcp_agents(editor: str | None, claude_code_mcp: bool) -> list[str]:
    """Those clients as agent names (each editor is an agent with hooks of its own too)."""
    from memlane.integrations.editors import EDITORS

    names = list(EDITORS) if editor == "all" else [editor] if editor else []
    return [*names, *(["claude-code"] if claude_code_mcp else [])]


def _shown(agent: str) -> str:
    return "Claude Code" if agent == "claude-code" else agent.capitalize()


# What the user restarts for an editor's MCP registration: Cline runs inside VS Code.
_CLIENT_SHOWN = {"cline": "VS Code (for Cline)"}


def _offer_recover() -> None:
    """Offer to capture the sessions already on disk: asked on a terminal, hinted otherwise."""
    from memlane.capture.sources import find_session_files
    from memlane.cli.context import CliState, confirm
    from memlane.cli.recover_cmd import to_recover

    files = find_session_files()
    state = click.get_current_context().find_object(CliState)
    if state is None or not files:
        return
    try:  # the hooks are written: a hint never makes setup fail
        new = to_recover(state, files)
    except MemlaneError as exc:
        click.echo(f"warning: cannot tell which sessions are captured already: {exc}", err=True)
        found = counted(len(files), "existing session")
        them = "it" if len(files) == 1 else "them"
        click.echo(f"{found} found: run `memlane recover` to capture {them}")
        return
    if not new:
        return
    question = f"Capture the {counted(new, 'session')} already on disk now (memlane recover)?"
    them = "it" if new == 1 else "them"
    later = f"{counted(new, 'existing session')} not captured yet: run `memlane recover`"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        click.echo(f"{later} to capture {them}")
        return
    if not confirm(question, default=True):  # a no, or the end of input: said, not silent
        click.echo(f"skipped: {later} to capture {them} later")
        return
    report = state.memory().recover(files)
    click.echo(
        f"captured {counted(report.sessions, 'session')} ({counted(report.units, 'unit')})"
        f" in {report.seconds:.1f}s"
    )


def _changed_lines(touched: Mapping[str, Removal], dry_run: bool) -> list[str]:
    """A line for each file changed or deleted (uninstall deletes only a file memlane
    created with nothing else in it, as the hooks' lines say), or that would be."""
    said = {
        "change": ("would change", "changed", ""),
        "delete": ("would delete", "deleted", ": memlane created it and nothing else is in it"),
    }
    lines = []
    for path, removal in touched.items():
        would, done, why = said[removal]
        lines.append(f"{would if dry_run else done} {path}{why}")
    return lines


@click.command("setup")
@_with_options("install")
def setup(
    agent: str | None,
    project_level: bool,
    dry_run: bool,
    editor: str | None,
    claude_code_mcp: bool,
) -> None:
    """Install memlane's hooks into an agent (idempotent; keeps every other hook).

    \b
    memlane setup                      # Claude Code, ~/.claude/settings.json
    memlane setup --project            # Claude Code, ./.claude/settings.json
    memlane setup --agent codex        # ~/.codex/hooks.json
    memlane setup --agent gemini       # ~/.gemini/settings.json
    memlane setup --agent kiro --project   # ./.kiro/hooks/memlane-*.kiro.hook
    memlane setup --agent cursor       # ~/.cursor/hooks.json
    memlane setup --agent windsurf     # ~/.codeium/windsurf/hooks.json
    memlane setup --agent cline        # ~/Documents/Cline/Hooks/<Hook>
    memlane setup --editor cursor      # MCP server + rules for Cursor
    memlane setup --editor codex       # MCP server for Codex (~/.codex/config.toml)
    memlane setup --claude-code-mcp    # MCP server for Claude Code (~/.claude.json)
    """
    _run("install", agent, project_level, dry_run, editor, claude_code_mcp)


@click.command("uninstall")
@_with_options("uninstall")
def uninstall(
    agent: str | None,
    project_level: bool,
    dry_run: bool,
    editor: str | None,
    claude_code_mcp: bool,
) -> None:
    """Remove memlane's hooks from an agent (other hooks and settings stay); for Claude
    Code, memlane's MCP server entry (`mcpServers.memlane`) too."""
    _run("uninstall", agent, project_level, dry_run, editor, claude_code_mcp)
