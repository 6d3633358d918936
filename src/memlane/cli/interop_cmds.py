"""CLI commands for interop: other tools' stores, portable index, sync, backup/restore.

``memlane import claude-mem|jsonl-store|memlane|index`` join the ``import``
group (``import index`` is ``index import``); ``memlane index export|import``,
``memlane sync push|pull``, ``memlane backup``, ``memlane restore`` and
``memlane salvage`` are top-level. Each command calls one facade method (restore
and salvage work on the database file, which may be too broken to open).
"""

from __future__ import annotations

import io
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memlane.cli.context import (
    CliState,
    confirm,
    echo_json,
    echo_line_errors,
    existing_folder,
    exit_if_bad_records,
)
from memlane.cli.memory_cmds import import_group
from memlane.errors import InvalidInput
from memlane.paths import MissingFolder, same_file, write_private_text
from memlane.text import counted

if TYPE_CHECKING:
    from memlane.interop.report import InteropReport

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    for command in (import_claude_mem, import_jsonl_store, import_memlane):
        import_group.add_command(command)
    import_group.add_command(index_import, "index")  # `memlane import index FILE` too
    for command in (index_group, sync_group, backup_cmd, restore_cmd, salvage_cmd):
        cli.add_command(command)


def _report(report: InteropReport, as_json: bool) -> None:
    """Print an import report; bad records make the exit code 2 (after the output)."""
    if as_json:
        echo_json(
            {
                "source": report.source,
                "created": report.created,
                "updated": report.updated,
                "skipped": report.skipped,
                "sessions": report.sessions,
                "deleted": report.deleted,
                "vectors": report.vectors,
                "dry_run": report.dry_run,
                "details": report.details,
                "projects": report.projects,
                "notes": list(report.notes),
                "errors": [{"line": e.line, "message": e.message} for e in report.errors],
                "errors_omitted": report.errors_omitted,
            }
        )
    else:
        click.echo(report.summary())
        if report.details:
            click.echo("  " + ", ".join(f"{k} {v}" for k, v in report.details.items()))
        if report.projects:
            per_project = ", ".join(f"{k} {v}" for k, v in sorted(report.projects.items()))
            click.echo(f"  per project: {per_project}")
        for note in report.notes:
            click.echo(f"  note: {note}")
        echo_line_errors(report.errors, report.errors_omitted)
    # A session record is a good record too: "nothing was imported" must mean nothing.
    kept = report.created + report.updated + report.skipped + report.sessions
    exit_if_bad_records(report.error_count, kept, noun="record", dry_run=report.dry_run)


# -- import ------------------------------------------------------------------


@click.command("claude-mem")
@click.option(
    "--source",
    type=click.Path(dir_okay=False),
    help="claude-mem database (default: ~/.claude-mem/claude-mem.db).",
)
@click.option("--project", help="Import only this claude-mem project (default: all).")
@click.option("--into", metavar="PROJECT", help="Put what is imported in this project.")
@click.option("--dry-run", is_flag=True, help="Only count what would be imported, per project.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def import_claude_mem(
    state: CliState,
    source: str | None,
    project: str | None,
    into: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Import a claude-mem database (repeatable: rows seen before are skipped).

    Each row keeps its claude-mem project unless --into names another one.
    """
    report = state.memory().import_claude_mem(
        source, project=state.project_for(project), into=into, dry_run=dry_run
    )
    _report(report, as_json)


@click.command("jsonl-store")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--project", help="Project (default: from cwd).")
@click.option("--no-vectors", is_flag=True, help="Ignore the vectors of an index file there.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def import_jsonl_store(
    state: CliState, directory: str, project: str | None, no_vectors: bool, as_json: bool
) -> None:
    """Import the new lines of a JSONL memory store (agent-notes, lessons, decisions, …).

    An index file in DIRECTORY (the semantic-memory tool's, with embeddings)
    gives its lines their vectors when they come from the model memlane uses.
    """
    report = state.memory().import_jsonl_store(
        directory, project=state.project_for(project), with_vectors=not no_vectors
    )
    _report(report, as_json)


@click.command("memlane")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--project", help="Put everything in this project (default: as exported).")
@click.option("--no-vectors", is_flag=True, help="Ignore vectors in the export.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def import_memlane(
    state: CliState, file: str, project: str | None, no_vectors: bool, as_json: bool
) -> None:
    """Import memlane's own export (JSON or JSONL), losslessly."""
    report = state.memory().import_export(
        file, project=state.project_for(project), with_vectors=not no_vectors
    )
    _report(report, as_json)


# -- index -------------------------------------------------------------------


@click.group("index")
def index_group() -> None:
    """Portable JSON index of a project (entries + vectors)."""


@index_group.command("export")
@click.option("--project", help="Project (default: from cwd).")
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="File (default or -: stdout)."
)
@click.option("--no-vectors", is_flag=True, help="Leave embeddings out.")
@pass_state
def index_export(
    state: CliState, project: str | None, output: str | None, no_vectors: bool
) -> None:
    """Write a project's portable JSON index."""
    if output == "-":  # the usual name of stdout
        output = None
    if output:
        existing_folder(Path(output), "the index")
    memory = state.memory()
    project = state.project_for(project)
    if output:
        buffer = io.StringIO()
        count = memory.export_index(buffer, project=project, with_vectors=not no_vectors)
        write_private_text(Path(output), buffer.getvalue())
        click.echo(f"wrote {count} entries to {output}", err=True)
    else:
        count = memory.export_index(sys.stdout, project=project, with_vectors=not no_vectors)
        click.echo(f"wrote {count} entries", err=True)


@index_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--project", help="Put entries in this project (default: the index's).")
@click.option("--no-vectors", is_flag=True, help="Leave the embeddings out (re-embed).")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def index_import(
    state: CliState, file: str, project: str | None, no_vectors: bool, as_json: bool
) -> None:
    """Read a portable JSON index back (memlane's, or the semantic-memory tool's).

    Embeddings are kept when they come from the model memlane searches with;
    the other entries are embedded later (worker or `memlane embed --backfill`).
    """
    report = state.memory().import_index(
        file, project=state.project_for(project), with_vectors=not no_vectors
    )
    _report(report, as_json)


# -- sync --------------------------------------------------------------------


@click.group("sync")
def sync_group() -> None:
    """Share memory between machines through a folder or a git repository."""


@sync_group.command("push")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option(
    "--create", is_flag=True, help="Create the folder (0700) if missing; its parent must exist."
)
@click.option("--json", "as_json", is_flag=True)
@pass_state
def sync_push(state: CliState, directory: str, create: bool, as_json: bool) -> None:
    """Append this machine's new memories and deletions to the sync folder."""
    from memlane.interop.sync import MissingSyncFolder

    try:
        result = state.memory().sync_push(directory, create=create)
    except MissingSyncFolder as exc:
        raise InvalidInput(f"{exc}: check the path, or add --create to make it") from None
    if as_json:
        echo_json(result.as_dict())
    else:
        click.echo(result.summary())


@sync_group.command("pull")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True)
@pass_state
def sync_pull(state: CliState, directory: str, as_json: bool) -> None:
    """Apply what other machines pushed to the sync folder since the last pull."""
    _report(state.memory().sync_pull(directory), as_json)


@sync_group.command("status")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True)
@pass_state
def sync_status_cmd(state: CliState, directory: str, as_json: bool) -> None:
    """Machines in the sync folder and how many of their chunks are not applied here."""
    status = state.memory().sync_status(directory)
    if as_json:
        echo_json(status)
        return
    click.echo(f"this machine: {status['machine']}")
    for name, info in sorted(status["machines"].items()):
        mark = " (this machine)" if name == status["machine"] else ""
        chunks = counted(info["chunks"], "chunk")
        click.echo(f"  {name}{mark}: {chunks}, {info['pending']} to pull")
    for problem in status["problems"]:
        click.echo(f"  skipped {problem}", err=True)


# -- backup / restore --------------------------------------------------------


@click.command("backup")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--create", is_flag=True, help="Create PATH's folder (0700) if missing; its parent must exist."
)
@click.option("--json", "as_json", is_flag=True)
@pass_state
def backup_cmd(state: CliState, path: str | None, create: bool, as_json: bool) -> None:
    """Back up the database (SQLite online backup: safe while hooks write)."""
    try:
        result = state.memory().backup(path, create=create)
    except MissingFolder as exc:
        raise InvalidInput(f"{exc}: check the path, or add --create to make it") from None
    if as_json:
        echo_json(result.as_dict())
    else:
        click.echo(
            f"backed up {counted(result.memories, 'memory')} ({result.bytes / 1_048_576:.2f} MB)"
            f" to {result.path}"
        )


@click.command("restore")
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def restore_cmd(state: CliState, path: str, yes: bool) -> None:
    """Replace the database with a backup (the current one is kept as .bak, .bak.2, ...).

    What the backup holds goes through the privacy filter first, as if it were new.
    """
    from memlane.interop.backup import restore_database
    from memlane.store import check_target

    target = state.settings.database
    check_target(target)  # a libpq keyword string is no file to replace
    shown = state.settings.database_display
    if not yes and not confirm(f"replace {shown} with {path}?"):
        click.echo("nothing restored")
        raise SystemExit(1)
    result = restore_database(state.settings, path)
    click.echo(
        f"restored {counted(result.memories, 'memory')} from {path}"
        + (f"; previous database kept as {result.previous}" if result.previous else "")
    )
    if result.filtered or result.left_out:
        click.echo(
            f"today's privacy filter changed {counted(result.filtered, 'memory')} (masked"
            " what it masks now, fields cleaned as a new memory's) and"
            f" left out {counted(result.left_out, 'memory or session', 'memories or sessions')}"
            " known by a secret (or holding nothing else)"
        )


@click.command("salvage")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists.")
@pass_state
def salvage_cmd(state: CliState, output: Path, force: bool) -> None:
    """Write the still readable memories of a damaged database to a JSONL file.

    The database is only read. Import the file into a fresh database with
    `memlane --db NEW.db import jsonl OUTPUT`, then `memlane --db DAMAGED.db restore NEW.db`
    (without --db for the default database).
    """
    from memlane.interop.salvage import salvage
    from memlane.paths import check_output_target, replace_privately

    existing_folder(output, "the salvage")
    database = Path(state.settings.database).expanduser()
    if "://" not in state.settings.database and same_file(output, database):
        raise InvalidInput(f"{output} is the database being salvaged; give a new file")
    check_output_target(output)  # a link, even with --force: "remove it", not "--force"
    if output.exists() and not force:
        raise InvalidInput(f"{output} already exists; give a new file, or add --force")
    with replace_privately(output) as handle:
        report = salvage(state.settings, handle)
    fresh = _fresh_database(output, database)
    lost = f"{counted(report.lost_memories, 'memory')} unreadable"
    if report.lost_sessions:
        lost += f", {counted(report.lost_sessions, 'session')} unreadable"
    if report.sessions_unread:
        lost += ", sessions unreadable (import recreates those of the memories)"
    # The restore must replace the database salvaged: one named by --db (or MEMLANE_DB,
    # or a config) is named again, or the hint would restore over the default one.
    named = "" if same_file(database, state.settings.paths.db_path) else f" --db {_q(database)}"
    click.echo(
        f"salvaged {counted(report.memories, 'memory')} and"
        f" {counted(report.sessions, 'session')} to {output} ({lost}); next:"
        f" `memlane --db {_q(fresh)} import jsonl {_q(output)}`,"
        f" then `memlane{named} restore {_q(fresh)}`"
    )


def _q(path: Path) -> str:
    """``path`` as a shell word (a hint is pasted into a shell)."""
    return shlex.quote(str(path))


def _fresh_database(output: Path, database: Path) -> Path:
    """A new database file beside ``output`` for the salvage's next step (not the
    damaged database, not any file that exists)."""
    number = 0
    while True:
        fresh = output.with_name(f"{output.stem}{'' if not number else f'-{number}'}.db")
        if not fresh.exists() and not same_file(fresh, database):
            return fresh
        number += 1
