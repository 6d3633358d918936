"""The ``memlane`` command: a thin adapter over the Memory facade.

Each command parses its options, calls one facade method and formats the
result. Domain errors become one line on stderr and the error's exit code.
Command groups live in sibling modules, each exposing ``register(group)``.
"""

from __future__ import annotations

import errno
import sys
from typing import Any

import click

from memlane import __version__
from memlane.cli import (
    config_cmd,
    demo_cmd,
    embed_cmd,
    interop_cmds,
    log_cmds,
    maintain_cmds,
    mcp_cmd,
    memory_cmds,
    setup_cmds,
    store_cmds,
    worker_cmds,
)
from memlane.cli.context import CliState
from memlane.errors import MemlaneError, StoreError

COMMAND_MODULES = [
    memory_cmds,
    log_cmds,
    config_cmd,
    demo_cmd,
    mcp_cmd,
    worker_cmds,
    interop_cmds,
    setup_cmds,
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
    except OSError as exc:  # the machine, not the input: a full disk, a read-only file system
        click.echo(f"error: {os_error_line(exc)}", err=True)
        sys.exit(StoreError.exit_code)


OS_ERROR_HINTS = {
    errno.ENOSPC: "free some space and try again",
    errno.EDQUOT: "free some space (or raise your quota) and try again",
    errno.EROFS: "the file system is mounted read-only",
    errno.EACCES: "check its permissions",
    errno.EPERM: "check its permissions (and attributes such as immutable)",
}


def os_error_line(exc: OSError) -> str:
    """One line for a failed file operation: the file, the reason and the next step."""
    where = f"{exc.filename}: " if exc.filename else ""
    hint = OS_ERROR_HINTS.get(exc.errno or 0)
    return f"{where}{exc.strerror or exc}" + (f"; {hint}" if hint else "")
