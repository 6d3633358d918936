"""The ``memlane`` command: a thin adapter over the Memory facade.

Each command parses its options, calls one facade method and formats the
result. Domain errors become one line on stderr and the error's exit code.
Command groups live in sibling modules, each exposing ``register(group)``.
"""

from __future__ import annotations

import errno
import importlib
import sys
from typing import Any, NoReturn

import click

from memlane import __version__
from memlane.cli import progress
from memlane.cli.context import CliState, config_option
from memlane.errors import MemlaneError, StoreError

# Command groups, each a module with ``register(group)``.
COMMAND_MODULES = [
    "memlane.cli.memory_cmds",
    "memlane.cli.log_cmds",
    "memlane.cli.config_cmd",
    "memlane.cli.demo_cmd",
    "memlane.cli.mcp_cmd",
    "memlane.cli.worker_cmds",
    "memlane.cli.interop_cmds",
    "memlane.cli.setup_cmds",
    "memlane.cli.recover_cmd",
    "memlane.cli.maintain_cmds",
    "memlane.cli.store_cmds",
    "memlane.cli.embed_cmd",
]
# Which modules register which command, so that `memlane search` imports only its own
# module (a test keeps this complete; a command missing here is still found, slower).
# `import` is one group that two modules add subcommands to.
_MEMORY = "memlane.cli.memory_cmds"
_INTEROP = "memlane.cli.interop_cmds"
COMMANDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "save",
            "search",
            "get",
            "timeline",
            "context",
            "list",
            "stats",
            "edit",
            "delete",
            "prune",
        ),
        (_MEMORY,),
    ),
    "export": (_MEMORY,),
    "import": (_MEMORY, _INTEROP),
    "config": ("memlane.cli.config_cmd",),
    "demo": ("memlane.cli.demo_cmd",),
    "mcp": ("memlane.cli.mcp_cmd",),
    **dict.fromkeys(("serve", "status", "stop", "dashboard"), ("memlane.cli.worker_cmds",)),
    **dict.fromkeys(("index", "sync", "backup", "restore", "salvage"), (_INTEROP,)),
    **dict.fromkeys(("setup", "uninstall"), ("memlane.cli.setup_cmds",)),
    **dict.fromkeys(
        ("maintain", "merge", "stale", "forget", "refilter"), ("memlane.cli.maintain_cmds",)
    ),
    "recover": ("memlane.cli.recover_cmd",),
    "migrate-store": ("memlane.cli.store_cmds",),
    "embed": ("memlane.cli.embed_cmd",),
    **dict.fromkeys(("log", "feedback"), ("memlane.cli.log_cmds",)),
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()

    def _load(self, module: str) -> None:
        if module not in self._loaded:
            self._loaded.add(module)
            importlib.import_module(module).register(self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = COMMANDS.get(cmd_name)
        if known:
            for module in known:
                self._load(module)
        for module in COMMAND_MODULES:
            if cmd_name in self.commands:
                break
            self._load(module)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memlane")
@click.option("--db", "db", metavar="PATH|URL", help="Database file or postgresql:// URL.")
@click.option(
    "--create", is_flag=True, help="Create the --db file's directory when it does not exist."
)
@click.option("--project", "project", metavar="NAME", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True, help="Act on every project.")
@click.option(
    "--config",
    "config",
    metavar="PATH",
    callback=config_option,
    help="Config file to use instead of config.toml (env MEMLANE_CONFIG).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    db: str | None,
    create: bool,
    project: str | None,
    all_projects: bool,
    config: str | None,
) -> None:
    """memlane — local long-term memory for AI coding agents."""
    progress.install()
    if project is not None:  # refused here even for a command that takes no project
        from memlane.core import given_project

        project = given_project(project)
    ctx.obj = CliState(
        db=db, create=create, project=project, all_projects=all_projects, config=config
    )


@cli.command("hook")
@click.argument("event")
@click.pass_obj
def hook_cmd(state: CliState, event: str) -> None:
    """Run an agent hook (reads the hook's JSON on stdin; always exits 0).

    EVENT: session-start, user-prompt-submit, post-tool-use, stop,
    subagent-stop, pre-compact, session-end; for another agent than Claude Code,
    prefixed by it: codex:, gemini:, kiro:, cursor:, windsurf:, cline: (codex:stop).
    """
    from memlane.hooks.dispatch import run_hook

    raise SystemExit(run_hook(event, db=state.db))


def main(argv: list[str] | None = None) -> Any:
    from memlane.cli.terminal import guard_stdout

    guard_stdout()
    try:
        return cli.main(args=argv, prog_name="memlane", standalone_mode=False)
    except MemlaneError as exc:
        click.echo(f"error: {error_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # outside click's own handling (which makes it an Abort)
        _interrupted()
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            _interrupted()
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"error: {usage_error_line(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:  # the machine, not the input: a full disk, a read-only file system
        click.echo(f"error: {error_line(os_error_line(exc))}", err=True)
        sys.exit(StoreError.exit_code)


def _interrupted() -> NoReturn:
    """Ctrl-C: say what was kept, and exit 130 (128 + SIGINT), as a shell reports it."""
    click.echo(progress.interrupted_line(), err=True)
    sys.exit(130)


def error_line(message: str) -> str:
    """An error for the terminal: filtered (it may quote a path or a value given, a
    secret put in the wrong place) and on one line."""
    from memlane.cli.terminal import printable
    from memlane.privacy import scrub

    return printable(scrub(message), one_line=True)


# What a usage error quotes of the value given (a value may be megabytes long).
MAX_USAGE_ERROR_CHARS = 300


def usage_error_line(exc: click.ClickException) -> str:
    """Click's error for a bad command line, in one line: filtered (the value given may
    be a secret), shortened, and with where to look (click printed three lines, the
    usage first, and the whole value)."""
    from memlane.text import shorten

    message = shorten(exc.format_message(), 4 * MAX_USAGE_ERROR_CHARS)
    context = getattr(exc, "ctx", None)
    where = f" (see `{context.command_path} --help`)" if context is not None else ""
    return shorten(error_line(message), MAX_USAGE_ERROR_CHARS) + where


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
