"""The ``memlane`` command: a thin adapter over the Memory facade.

Each command parses its options, calls one facade method and formats the
result. Domain errors become one line on stderr and the error's exit code.
Command groups live in sibling modules, each exposing ``register(group)``.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from memlane import __version__
from memlane.cli import (
    config_cmd,
    demo_cmd,
    embed_cmd,
    interop_cmds,
    maintain_cmds,
    mcp_cmd,
    memory_cmds,
    recover_cmd,
    setup_cmds,
    store_cmds,
    worker_cmds,
)
from memlane.cli.context import CliState
from memlane.errors import MemlaneError

COMMAND_MODULES = [
    memory_cmds,
    config_cmd,
    demo_cmd,
    mcp_cmd,
    worker_cmds,
    interop_cmds,
    setup_cmds,
    recover_cmd,
    maintain_cmds,
    store_cmds,
    embed_cmd,
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memlane")
@click.option("--db", "db", metavar="PATH|URL", help="Database file or postgresql:// URL.")
@click.option("--project", "project", metavar="NAME", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True, help="Act on every project.")
@click.pass_context
def cli(ctx: click.Context, db: str | None, project: str | None, all_projects: bool) -> None:
    """memlane — local long-term memory for AI coding agents."""
    ctx.obj = CliState(db=db, project=project, all_projects=all_projects)


@cli.command("hook")
@click.argument("event")
@click.pass_obj
def hook_cmd(state: CliState, event: str) -> None:
    """Run an agent hook (reads the hook's JSON on stdin; always exits 0).

    EVENT: session-start, user-prompt-submit, post-tool-use, stop,
    subagent-stop, pre-compact, session-end.
    """
    from memlane.hooks.dispatch import run_hook

    raise SystemExit(run_hook(event, db=state.db))


for _module in COMMAND_MODULES:
    _module.register(cli)


def main(argv: list[str] | None = None) -> Any:
    try:
        return cli.main(args=argv, prog_name="memlane", standalone_mode=False)
    except MemlaneError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
