"""``memlane recover``: capture every session agents already wrote to disk.

A thin adapter over :meth:`memlane.service.Memory.recover`. Claude Code
transcripts (``~/.claude/projects``) and Codex rollouts (``~/.codex/sessions``)
are ingested as the Stop hook would have: units, observations, summaries.
Running it again ingests only what was appended since. A progress bar shows on
a terminal; piped or with ``--json`` only the result is printed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click

from memlane.cli.context import CliState, echo_json
from memlane.text import counted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.capture.sources import SessionFile

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    cli.add_command(recover)


def _folder(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A folder given: click's ``file_okay=False`` let a FIFO or a device through, read as
    a folder holding no sessions ("would read 0 session files")."""
    if value is not None and not value.is_dir():
        raise click.BadParameter(f"{value} is not a folder", ctx=ctx, param=param)
    return value


# The folder inside an agent's own folder that holds its sessions, by option.
_SESSION_FOLDERS = (("--claude-dir", "projects"), ("--codex-dir", "sessions"))


def misplaced(given: dict[str, Path | None], files: Sequence[SessionFile]) -> list[str]:
    """A hint for each folder given (by option) that yielded no session file but holds the
    folder that would: ``--claude-dir ~/.claude`` for ``~/.claude/projects`` read nothing
    and said only "read 0 sessions"."""
    hints: list[str] = []
    for option, inner in _SESSION_FOLDERS:
        folder = given.get(option)
        if folder is None or not (folder / inner).is_dir():
            continue
        prefix = os.path.join(folder, "")
        if any(found.path.startswith(prefix) for found in files):
            continue
        hints.append(f"hint: no sessions in {folder}; did you mean {option} {folder / inner}?")
    return hints


def to_recover(state: CliState, files: Sequence[SessionFile]) -> int:
    """How many of ``files`` ``memlane recover`` would capture something of. The database
    is opened only when its file exists, never made for a count; a PostgreSQL one is not
    connected to: nothing counts as captured there."""
    from memlane.capture.recover import would_read
    from memlane.store import is_postgres_url

    if not files:
        return 0
    settings = state.settings
    target = settings.database
    if is_postgres_url(target) or not Path(target).is_file():
        return sum(would_read(settings, None, found) for found in files)
    return state.memory().to_recover(files)


@click.command()
@click.option(
    "--claude-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    callback=_folder,
    help="Claude Code projects folder [default: ~/.claude/projects].",
)
@click.option(
    "--codex-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    callback=_folder,
    help="Codex sessions folder [default: ~/.codex/sessions].",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be read.")
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@pass_state
def recover(
    state: CliState,
    claude_dir: Path | None,
    codex_dir: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Capture every existing Claude Code and Codex session (idempotent)."""
    from memlane.capture.sources import find_session_files

    files = find_session_files(claude_dir, codex_dir)
    for hint in misplaced({"--claude-dir": claude_dir, "--codex-dir": codex_dir}, files):
        click.echo(hint, err=True)
    if dry_run:
        new = to_recover(state, files)
        if as_json:
            echo_json({"files": len(files), "would_read": new, "dry_run": True})
        else:
            others = len(files) - new
            why = f" ({others} captured already or skipped)" if others else ""
            click.echo(f"would read {counted(new, 'session file')} of {len(files)} found{why}")
        return
    from memlane.cli.progress import bar

    memory = state.memory()
    with bar("recovering sessions", len(files), quiet=as_json or not files) as tracker:
        report = memory.recover(files, progress=lambda done, total: tracker.update(done, total))
    if as_json:
        echo_json(
            {
                "files": report.files,
                "sessions": report.sessions,
                "units": report.units,
                "unchanged": report.unchanged,
                "skipped": report.skipped,
                "errors": list(report.errors),
                "seconds": round(report.seconds, 3),
            }
        )
    else:
        from memlane.cli.terminal import printable

        for error in report.errors:
            # A file name is anyone's to choose: an escape sequence in it is shown, not
            # obeyed, and a line break in it does not start a line of its own.
            click.echo(f"error: {printable(error, one_line=True)}", err=True)
        not_read = f"; {counted(len(report.errors), 'error')} above" if report.errors else ""
        click.echo(
            f"read {counted(report.sessions, 'session')} ({counted(report.units, 'unit')})"
            f" of {counted(report.files, 'file')}"
            f" in {report.seconds:.1f}s; {report.unchanged} already captured,"
            f" {report.skipped} skipped (no project or capture off){not_read}"
        )
    if report.errors:
        # As an import that left records out: what was read is kept, but a script must
        # notice what was not.
        raise SystemExit(2)
