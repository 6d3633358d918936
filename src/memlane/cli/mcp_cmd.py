"""``memlane mcp``: serve memlane's MCP tools over stdio (editors start it at launch)."""

from __future__ import annotations

import click

from memlane.cli.context import CliState

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    cli.add_command(mcp)


@click.command()
@pass_state
def mcp(state: CliState) -> None:
    """Serve the MCP tools on stdin/stdout (for Cursor, Windsurf, Cline, Claude Code).

    The project of a tool call is its `project` argument, else the global
    --project option, else the editor's workspace root, else the current directory.
    """
    from memlane.mcp_server import run_stdio
    from memlane.service import open as open_memory

    state.lenient = True  # started by the agent: a bad setting warns, on stderr
    settings = state.settings  # read here: the store opens later, on the first tool call
    run_stdio(lambda: open_memory(settings=settings), default_project=state.project)
