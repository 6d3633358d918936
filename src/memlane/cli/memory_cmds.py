"""CLI commands over memories: save, search, get, timeline, list, stats, edit, delete,
prune, export and import."""

from __future__ import annotations

import sys
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memlane.cli.context import (
    CliState,
    confirm,
    echo_json,
    echo_line_errors,
    existing_folder,
    exit_if_bad_records,
    wire_json,
)
from memlane.cli.types import FiniteFloatRange
from memlane.config import MAX_CONTEXT_BUDGET, MIN_CONTEXT_BUDGET
from memlane.errors import InvalidInput
from memlane.models import FUSIONS, SCOPES, SEARCH_MODES
from memlane.models import Memory as MemoryRecord
from memlane.text import counted, one_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from memlane.service import Memory
from memlane.timeparse import parse_duration, parse_when

pass_state = click.make_pass_decorator(CliState)


def _when(value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{what}: {exc}") from None


def print_hits(hits: list[dict[str, Any]]) -> None:
    """Search hits (wire JSON, :class:`memlane.schemas.SearchHitOut`) as a table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False, header_style="bold")
    for column in ("id", "score", "date", "project", "type", "title / content"):
        table.add_column(column, overflow="fold")
    for hit in hits:
        label = _label(hit["title"], hit.get("snippet") or "") or hit["content"]
        if hit.get("from_project"):
            label = f"[from: {hit['from_project']}] {label}"
        if hit.get("stale"):
            label = f"(stale) {label}"
        if hit.get("relaxed"):
            label = f"(weak match) {label}"
        table.add_row(
            str(hit["id"]),
            f"{hit['score']:.3f}",
            str(hit["created_at"])[:10],
            # Text, not markup: a stored "[link=…]" or "[red]" is shown as typed.
            Text(hit["project"]),
            Text(hit["type"]),
            Text(one_line(label, 160)),
        )
    Console().print(table)


def _label(title: str, snippet: str) -> str:
    """A hit's title and its snippet, once when one begins as the other does (a title is
    often the content's first line, cut: "Continuing with gqc.6 — I need…")."""
    if not snippet or not title:
        return title or snippet
    head, passage = title.rstrip("…. "), snippet.rstrip("…. ")
    if head.startswith(passage) or passage.startswith(head):
        return title if len(head) >= len(passage) else snippet
    return f"{title}: {snippet}"


def print_memories(memories: list[MemoryRecord], *, in_full: bool = False) -> None:
    """Each memory's header line and title, then a one-line preview of its content, or
    with ``in_full`` (``get``) the whole content after a blank line, once, and its
    metadata, a key a line."""
    for m in memories:
        head = f"#{m.id}  {m.created_at:%Y-%m-%d %H:%M}  {m.project}  {m.kind}/{m.type}"
        if m.session_id:
            head += f"  session {m.session_id[:12]}"
        click.echo(click.style(head, bold=True))
        if m.title:
            click.echo(f"  {m.title}")
        if in_full:
            click.echo("")
            click.echo(m.content)
            print_metadata(m.metadata)
        else:
            click.echo(f"  {one_line(m.content, 160)}")


def print_metadata(metadata: dict[str, Any]) -> None:
    """``metadata`` under a blank line, a key a line (a value other than one line of
    text as JSON): the fields an import kept (a postmortem's ``root_cause``)."""
    if not metadata:
        return
    import json

    click.echo("")
    click.echo("metadata:")
    for key, value in metadata.items():
        plain = isinstance(value, str) and "\n" not in value
        shown = value if plain else json.dumps(value, ensure_ascii=False)
        click.echo(f"  {key}: {shown}")


def register(cli: click.Group) -> None:
    for command in (
        save,
        search,
        get,
        timeline,
        context,
        list_sessions,
        stats,
        edit,
        delete,
        prune,
        export,
        import_group,
    ):
        cli.add_command(command)


@click.command()
@click.argument("text")
@click.option("--type", "type_", default="note", show_default=True, help="Memory type.")
@click.option("--title", help="Short title.")
@click.option("--topic-key", help="Upsert key: a later save with it updates in place.")
@click.option("--session", "session_id", help="Session id to attach the memory to.")
@click.option("--project", help="Project (default: from cwd).")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable).")
@click.option("--file", "files", multiple=True, help="Linked file (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the SaveResult as JSON.")
@pass_state
def save(
    state: CliState,
    text: str,
    type_: str,
    title: str | None,
    topic_key: str | None,
    session_id: str | None,
    project: str | None,
    tags: tuple[str, ...],
    files: tuple[str, ...],
    as_json: bool,
) -> None:
    """Save TEXT as a memory (`-` reads it from stdin)."""
    content = stdin_text() if text == "-" else text
    result = state.memory().save(
        content,
        project=state.project_for(project),
        type=type_,
        title=title,
        topic_key=topic_key,
        session_id=session_id,
        tags=tags,
        files=files,
    )
    step = f"memlane edit {result.id} --type {type_}" if result.kept_type else None
    echo_notice(result.notice, step)
    if as_json:
        echo_json(asdict(result))
        return
    click.echo(f"{result.status} #{result.id}")


def echo_notice(notice: str | None, step: str | None) -> None:
    """Say a notice of the core's (a save's, a search's) on stderr, with ``step``, the
    command to run about it here: the core's notices name no command (HTTP and MCP pass
    them on), the CLI adds its own, in this one form."""
    if notice:
        click.echo(f"note: {notice}" + (f" (run `{step}`)" if step else ""), err=True)


@click.command()
@click.argument("query")
@click.option("--project", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True, help="Search every project.")
@click.option("--scope", type=click.Choice(SCOPES), help="Project scope.")
@click.option("--limit", "-k", default=10, show_default=True, type=click.IntRange(1, 500))
@click.option("--mode", type=click.Choice(SEARCH_MODES), help="Search mode.")
@click.option("--as-of", help="Rank as if now were this time; ignore later memories.")
@click.option("--type", "types", multiple=True, help="Only these types (repeatable).")
@click.option("--since", help="Only memories created after this (ISO date or 7d).")
@click.option("--min-score", type=FiniteFloatRange(0, 1), help="Drop hits below this score (0..1).")
@click.option(
    "--fusion",
    type=click.Choice(FUSIONS),
    help="How hybrid search fuses keyword and semantic hits (default: search.fusion).",
)
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@pass_state
def search(
    state: CliState,
    query: str,
    project: str | None,
    all_projects: bool,
    scope: str | None,
    limit: int,
    mode: str | None,
    as_of: str | None,
    types: tuple[str, ...],
    since: str | None,
    min_score: float | None,
    fusion: str | None,
    as_json: bool,
) -> None:
    """Search memories for QUERY (through the running worker when there is one).

    Words find memories with any of them, best first. Operators add constraints:
    "exact phrase", a OR b, a AND b, NOT word or -word, title:word, file:name,
    type:decision; word* also matches the words it begins.
    """
    from memlane.cli.progress import spinner
    from memlane.cli.warm import ask
    from memlane.hooks.relay import SEARCH
    from memlane.project import project_name

    if state.all_for(all_projects):
        scope = "all"
    as_of_at, since_at = _when(as_of, "--as-of"), _when(since, "--since")
    named = state.project_for(project)  # the worker's directory is not this one
    request = {
        "query": query,
        "project": project_name() if named is None else named,
        "scope": scope,
        "limit": limit,
        "mode": mode,
        "as_of": as_of_at.isoformat() if as_of_at else None,
        "types": list(types) or None,
        "since": since_at.isoformat() if since_at else None,
        "min_score": min_score,
        "fusion": fusion,
    }
    with spinner("searching…", quiet=as_json):
        answer = ask(state.settings, SEARCH, request)
        if answer is None:
            from memlane.worker.queries import search as run_search

            answer = run_search(state.memory(), request)
    if answer.get("notice"):  # the search engine is not loaded when the worker answered
        from memlane.search.engine import NOTICE_NO_VECTORS

        notice = answer["notice"]
        echo_notice(notice, "memlane embed --backfill" if notice == NOTICE_NO_VECTORS else None)
    rows: list[dict[str, Any]] = answer["hits"]
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("no memories match", err=True)
        return
    print_hits(rows)


@click.command()
@click.argument("memory_id", type=int)
@click.option("--json", "as_json", is_flag=True)
@pass_state
def get(state: CliState, memory_id: int, as_json: bool) -> None:
    """Show one memory in full."""
    memory = state.memory().get(memory_id, record_access=True)
    if as_json:
        from memlane.schemas import MemoryOut

        echo_json(wire_json(MemoryOut.model_validate(memory)))
        return
    print_memories([memory], in_full=True)


@click.command()
@click.option("--around", type=int, help="Memory id to center on.")
@click.option("--before", "n_before", default=5, show_default=True, type=click.IntRange(0, 200))
@click.option("--after", "n_after", default=5, show_default=True, type=click.IntRange(0, 200))
@click.option("--start", help="Range start (ISO date or 7d).")
@click.option("--end", help="Range end (ISO date or 1d).")
@click.option("--session", "session_id", help="Only this session.")
@click.option("--project", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True)
@pass_state
def timeline(
    state: CliState,
    around: int | None,
    n_before: int,
    n_after: int,
    start: str | None,
    end: str | None,
    session_id: str | None,
    project: str | None,
    all_projects: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Memories around an id, or in a time range, oldest first."""
    rows = state.memory().timeline(
        around=around,
        before=n_before,
        after=n_after,
        start=_when(start, "--start"),
        end=_when(end, "--end"),
        session_id=session_id,
        project=state.project_for(project),
        all_projects=state.all_for(all_projects),
        limit=limit,
    )
    if as_json:
        from memlane.schemas import MemoryOut

        echo_json(wire_json([MemoryOut.model_validate(m) for m in rows]))
        return
    print_memories(rows)


@click.command()
@click.option("--project", help="Project (default: from cwd).")
@click.option(
    "--budget",
    type=click.IntRange(MIN_CONTEXT_BUDGET, MAX_CONTEXT_BUDGET),
    help="Token budget (default: config).",
)
@click.option("--json", "as_json", is_flag=True)
@pass_state
def context(state: CliState, project: str | None, budget: int | None, as_json: bool) -> None:
    """Print the project's context pack: what a new session starts from (HTTP
    GET /api/context/{project}, MCP get_context)."""
    memory = state.memory()
    name = memory.resolve_project(state.project_for(project))
    text = memory.context(project=name, budget=budget)
    if as_json:
        from memlane.schemas import ContextOut

        echo_json(wire_json(ContextOut(project=name, text=text)))
        return
    if not text.strip():  # said where other empty results are (stderr), not a blank line
        click.echo(f"nothing stored for project {name!r} yet", err=True)
        return
    click.echo(text)


@click.command("list")
@click.option("--project", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@click.option("--json", "as_json", is_flag=True)
@pass_state
def list_sessions(
    state: CliState, project: str | None, all_projects: bool, limit: int, as_json: bool
) -> None:
    """List sessions, most recently active first."""
    sessions = state.memory().list_sessions(
        project=state.project_for(project), all_projects=state.all_for(all_projects), limit=limit
    )
    if as_json:
        from memlane.schemas import SessionOut

        echo_json(wire_json(SessionOut.titled(state.memory(), sessions)))
        return
    if not sessions:
        click.echo("no sessions", err=True)
    titles = state.memory().session_titles([s.id for s in sessions])
    for s in sessions:
        # The status in words ("auto-closed"); the flag only where the status does not say
        # it already (it read "auto_closed (auto-closed)").
        status = s.status.replace("_", "-")
        flag = " (auto-closed)" if s.auto_closed and status != "auto-closed" else ""
        click.echo(
            f"{s.id}  {s.project}  {status}{flag}  {s.started_at:%Y-%m-%d %H:%M}"
            f" → {s.last_activity_at:%Y-%m-%d %H:%M}  prompts {s.prompt_count}  {s.agent}"
        )
        if s.id in titles:
            click.echo(f"  {titles[s.id]}")


@click.command()
@click.option("--project", help="Only this project's counts (the database size stays whole).")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def stats(state: CliState, project: str | None, as_json: bool) -> None:
    """Counts per project, kind and type; database size."""
    result = state.memory().stats(project=state.project_for(project))
    if as_json:
        from memlane.schemas import StatsOut

        echo_json(wire_json(StatsOut.model_validate(result)))
        return
    click.echo(f"memories   {result.memories}")
    click.echo(f"sessions   {result.sessions}")
    click.echo(f"embedded   {result.embedded}")
    click.echo(f"database   {result.db_bytes / 1_048_576:.2f} MB")
    if result.oldest and result.newest:
        click.echo(f"span       {result.oldest:%Y-%m-%d} → {result.newest:%Y-%m-%d}")
    for title, counts in (
        ("projects", result.projects),
        ("kinds", result.kinds),
        ("types", result.types),
    ):
        if counts:
            click.echo(f"{title:<10} " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    shown = result.injections
    if shown.prompts or shown.session_starts:
        click.echo(
            f"injected   {shown.prompts_injected} of {shown.prompts} prompts"
            f" ({shown.injected_share:.0%}), {shown.session_starts_injected} of"
            f" {shown.session_starts} session starts"
        )
        click.echo(
            f"tokens     {shown.tokens_total} injected in {counted(shown.sessions, 'session')};"
            " per session"
            f" median {shown.tokens_per_session_median:g}, p95 {shown.tokens_per_session_p95:g}"
        )
        if shown.marked_useful or shown.marked_noise:
            click.echo(f"marked     useful {shown.marked_useful}, noise {shown.marked_noise}")


@click.command()
@click.argument("memory_id", type=int)
@click.option("--content", help="New content (`-` reads stdin).")
@click.option("--title", help="New title.")
@click.option("--type", "type_", help="New type.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def edit(
    state: CliState,
    memory_id: int,
    content: str | None,
    title: str | None,
    type_: str | None,
    as_json: bool,
) -> None:
    """Edit a memory's content, title or type."""
    if content is None and title is None and type_ is None:
        # The core's message names the API's fields (tags, files): edit has only these.
        raise InvalidInput(
            "nothing to change: give --content, --title or --type"
            f" (memlane edit {memory_id} --title 'New title')"
        )
    if content == "-":
        content = stdin_text()
    updated = state.memory().update(memory_id, content=content, title=title, type=type_)
    if as_json:
        from memlane.schemas import MemoryOut

        echo_json(wire_json(MemoryOut.model_validate(updated)))
    else:
        click.echo(f"updated #{updated.id} (revision {updated.revision_count})")


@click.command()
@click.option("--id", "memory_id", type=int, help="Delete one memory.")
@click.option("--session", "session_id", help="Delete a session's memories.")
@click.option("--before", help="Delete memories created before (ISO date or 90d).")
@click.option("--project", help="Delete within / all of this project.")
@click.option("--dry-run", is_flag=True, help="Only list what would go.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete(
    state: CliState,
    memory_id: int | None,
    session_id: str | None,
    before: str | None,
    project: str | None,
    dry_run: bool,
    yes: bool,
) -> None:
    """Delete memories (criteria combine with AND)."""
    memory = state.memory()
    when = _when(before, "--before")

    def select(dry: bool) -> list[int]:
        return memory.delete(
            id=memory_id,
            session_id=session_id,
            before=when,
            project=state.project_for(project),
            dry_run=dry,
        )

    delete_listed(memory, select, ("delete", "deleted"), dry_run=dry_run, yes=yes)


@click.command()
@click.option("--older-than", required=True, help="Age, e.g. 90d.")
@click.option("--project", help="Only this project.")
@click.option("--dry-run", is_flag=True, help="Only list what would go.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def prune(state: CliState, older_than: str, project: str | None, dry_run: bool, yes: bool) -> None:
    """Delete memories older than an age (e.g. --older-than 90d)."""
    from memlane.models import utcnow

    cutoff = utcnow() - parse_duration(older_than)
    memory = state.memory()

    def select(dry: bool) -> list[int]:
        return memory.delete(before=cutoff, project=state.project_for(project), dry_run=dry)

    delete_listed(memory, select, ("prune", "pruned"), dry_run=dry_run, yes=yes)


def delete_listed(
    memory: Memory,
    select: Callable[[bool], list[int]],
    verb: tuple[str, str],
    *,
    dry_run: bool,
    yes: bool,
) -> None:
    """delete and prune: list what ``select(dry_run=True)`` finds, ask unless ``yes``,
    then delete it (``select(False)``); ``verb``: the command's verb and its past."""
    do, done = verb
    selected = select(True)
    if not selected:
        click.echo(f"would {do} 0 memories" if dry_run else f"nothing to {do}")
        return
    if dry_run or not yes:
        echo_selection(memory, selected, f"would {do}" if dry_run else "selected")
    if dry_run:
        return
    if not yes and not confirm(f"{do} {counted(len(selected), 'memory')}?"):
        click.echo(f"nothing {done}")
        raise SystemExit(1)
    click.echo(f"{done} {counted(len(select(False)), 'memory')}")


# Memories a dry run of delete or prune (or its question) lists; the rest are counted.
LISTED = 50


def echo_selection(memory: Memory, ids: list[int], verb: str) -> None:
    """``verb`` and the count, then the first LISTED memories of ``ids``, one line each
    (id, date, type, title or content), then how many more there are."""
    click.echo(f"{verb} {counted(len(ids), 'memory')}:")
    found = {m.id: m for m in memory.get_many(ids[:LISTED])}
    for memory_id in ids[:LISTED]:
        m = found.get(memory_id)
        if m is not None:  # gone since it was selected
            label = one_line(m.title or m.content, 100)
            click.echo(f"  #{m.id}  {m.created_at:%Y-%m-%d}  {m.type}  {label}")
    if len(ids) > LISTED:
        click.echo(f"  … and {len(ids) - LISTED} more")


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "json", "markdown"]),
    default="jsonl",
    show_default=True,
)
@click.option("--project", help="Only this project (default: all).")
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="File (default or -: stdout)."
)
@click.option("--with-vectors", is_flag=True, help="Include embeddings (base64 float32).")
@pass_state
def export(
    state: CliState, fmt: str, project: str | None, output: str | None, with_vectors: bool
) -> None:
    """Export memories (and sessions) as JSONL, JSON or Markdown; lossless for JSON/JSONL."""
    if output == "-":  # the usual name of stdout
        output = None
    if output:
        existing_folder(Path(output), "the export")
    memory = state.memory()
    project = state.project_for(project)
    if output:
        from memlane.paths import replace_privately

        with replace_privately(Path(output)) as handle:
            count = memory.export_records(
                handle, format=fmt, project=project, with_vectors=with_vectors
            )
        click.echo(f"exported {counted(count, 'memory')} to {output}", err=True)
    else:
        count = memory.export_records(
            sys.stdout, format=fmt, project=project, with_vectors=with_vectors
        )
        click.echo(f"exported {counted(count, 'memory')}", err=True)


@click.group("import")
def import_group() -> None:
    """Import memories from files and other tools."""


@import_group.command("jsonl")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--project", help="Put every record in this project.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def import_jsonl(state: CliState, file: str, project: str | None, as_json: bool) -> None:
    """Import a JSONL file of memory records."""
    report = state.memory().import_jsonl(file, project=state.project_for(project))
    if as_json:
        from memlane.schemas import ImportReportOut

        echo_json(wire_json(ImportReportOut.model_validate(report)))
    else:
        sessions = f" {counted(report.sessions, 'session')}," if report.sessions else ""
        click.echo(
            f"imported {report.created} new, {report.updated} updated,"
            f" {report.skipped} already present,{sessions}"
            f" {counted(report.error_count, 'bad line')}"
        )
        echo_line_errors(report.errors, report.errors_omitted)
    # A session record is a good line too: "nothing was imported" must mean nothing.
    kept = report.created + report.updated + report.skipped + report.sessions
    exit_if_bad_records(report.error_count, kept, noun="line")


# What `-` reads from stdin at most: a memory keeps far less (it is cut when stored), and
# `save - < /dev/zero` read until the machine ran out of memory (10.5 GB in 25 s).
STDIN_CHARS = 8 * 1024 * 1024


def stdin_text() -> str:
    """The text piped to a command's `-`, refused whole past :data:`STDIN_CHARS`."""
    text = sys.stdin.read(STDIN_CHARS + 1)
    if len(text) > STDIN_CHARS:
        from memlane.memories import MAX_CONTENT_CHARS

        raise InvalidInput(
            f"the text on stdin is longer than {STDIN_CHARS:,} characters; nothing was"
            f" changed: save a shorter text (a memory holds at most {MAX_CONTENT_CHARS:,}"
            " characters)"
        )
    return text
