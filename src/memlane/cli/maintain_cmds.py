"""CLI commands of memory hygiene: maintain, merge, stale, forget, refilter.

Each parses its options, calls one facade method and prints the report. Dry
runs print the same lists the real run acts on. (`memlane prune --older-than`
lives in memory_cmds.)
"""

from __future__ import annotations

import logging
import sys
import traceback
from typing import TYPE_CHECKING, Any, NoReturn

import click

from memlane.cli.context import CliState, confirm, echo_json
from memlane.cli.types import FiniteFloatRange
from memlane.errors import MemlaneError
from memlane.text import counted

if TYPE_CHECKING:
    from memlane.maintenance import ForgetReport, MaintenanceReport, MergeReport

pass_state = click.make_pass_decorator(CliState)

# Ids listed in full up to this many; longer lists are counted.
SHOW_IDS = 200


def register(cli: click.Group) -> None:
    for command in (maintain, merge, stale, forget, refilter):
        cli.add_command(command)


def _ids(ids: tuple[int, ...]) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:SHOW_IDS])
    return shown + (f" … (+{len(ids) - SHOW_IDS})" if len(ids) > SHOW_IDS else "")


def _mb(size: int | None) -> str:
    return "?" if size is None else f"{size / 1_048_576:.2f} MB"


def _merge_lines(report: MergeReport) -> list[str]:
    verb = "would merge" if report.dry_run else "merged"
    measure = f"(threshold {report.threshold}, {report.compared} compared)"
    if not report.groups:
        return [f"nothing to merge {measure}"]
    lines = [
        f"{verb} {counted(len(report.removed), 'memory')} into"
        f" {counted(len(report.groups), 'kept memory', 'kept memories')} {measure}"
    ]
    for group in report.groups[:SHOW_IDS]:
        lines.append(f"  keep #{group.keep} ← {_ids(group.remove)}  (J ≥ {group.similarity:.2f})")
    return lines


def _maintenance_lines(report: MaintenanceReport) -> list[str]:
    would = "would " if report.dry_run else ""
    lines = [f"{'dry run: ' if report.dry_run else ''}maintenance in {report.seconds:.2f}s"]
    if report.closed_sessions:
        lines.append(
            f"{would}close {len(report.closed_sessions)} idle sessions: "
            + ", ".join(report.closed_sessions[:20])
        )
    if report.prune is not None:
        lines.append(
            f"{would}prune {counted(len(report.prune.removed), 'memory')} untouched for"
            f" {report.prune.max_age_days} days"
            + (f": {_ids(report.prune.removed)}" if report.prune.removed else "")
        )
        if report.prune.log_entries:
            lines.append(f"{would}prune {report.prune.log_entries} injection log entries as old")
    if report.merge is not None:
        lines.extend(_merge_lines(report.merge))
    if report.size is not None:
        size = report.size
        lines.append(
            f"size {_mb(size.size_before)} in use, cap {_mb(size.cap_bytes)};"
            f" {would}remove {len(size.removed)} oldest"
            + (f": {_ids(size.removed)}" if size.removed else "")
        )
        if size.log_cleared:
            lines.append(
                f"{would}clear the text of the {size.log_cleared} oldest injection log entries"
            )
        if size.extra_removed:
            lines.append(f"estimate fell short: removed {len(size.extra_removed)} more")
        if not report.dry_run:
            lines.append(f"after: {_mb(size.size_after)}{' (vacuumed)' if size.vacuumed else ''}")
    if report.refiltered:
        lines.append(
            f"the privacy filter changed: masked what it now masks in {report.refiltered}"
            " memories stored before"
        )
    if report.refilter_deleted:
        lines.append(
            f"the privacy filter changed: deleted {counted(report.refilter_deleted, 'memory')}"
            " whose whole text it now takes for a secret"
        )
    if report.refilter_named:
        lines.append(
            "the privacy filter changed: kept"
            f" {counted(report.refilter_named, 'memory or session', 'memories or sessions')}"
            " known by a name it now takes for a secret (see `memlane refilter --dry-run`)"
        )
    if report.reindexed:
        lines.append(
            f"re-indexed {counted(report.reindexed, 'memory')} written before the words inside"
            " camelCase identifiers were indexed"
        )
    if report.stale is not None:
        lines.append(
            f"staleness: {report.stale.checked} checked, {would}mark {len(report.stale.marked)},"
            f" {would}clear {len(report.stale.cleared)}, {report.stale.unknown} undecidable"
        )
    return lines


@click.command()
@click.option("--dry-run", is_flag=True, help="Only list what would change.")
@click.option("--background", is_flag=True, help="Quiet run for the scheduler (skips if not due).")
@click.option("--force", is_flag=True, hidden=True)  # a manual run always runs; kept for scripts
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@pass_state
def maintain(state: CliState, dry_run: bool, background: bool, force: bool, as_json: bool) -> None:
    """Prune, merge, cap the size, refresh staleness, close idle sessions, vacuum.

    It runs even with maintenance.enabled = false, which turns off only the automatic runs.
    """
    from memlane.maintenance import maintenance_lock

    del force  # accepted for scripts from when a disabled maintenance needed it

    if background:
        _run_background(state)
        return
    memory = state.memory()
    with maintenance_lock(state.settings) as locked:
        if not locked:
            click.echo("maintenance is already running; try again later", err=True)
            raise SystemExit(6)
        report = memory.maintain(dry_run=dry_run)
    if as_json:
        echo_json(report.details())
        return
    for line in _maintenance_lines(report):
        click.echo(line)


def _run_background(state: CliState) -> None:
    """The scheduled run: lock, re-check it is due, run, one log line; never raise."""
    from memlane.maintenance import maintenance_lock

    logging.basicConfig(level=logging.INFO, format="%(asctime)s memlane maintain %(message)s")
    # Strict, as a person's run: a retention key's default may delete what the user's
    # value keeps; the run waits for the fix (the spawn cooldown keeps retries rare).
    try:
        state.settings  # noqa: B018 - read and checked here
    except MemlaneError as exc:  # a bad setting or --db
        _not_run(exc)
    try:
        with maintenance_lock(state.settings) as locked:
            if not locked:
                return
            try:
                memory = state.memory()
            except MemlaneError as exc:  # a database the settings name that cannot open
                _not_run(exc)
            if not memory.maintenance_due():
                return
            report = memory.maintain()
            logging.info("%s", report.details())
    except Exception:  # detached: nobody reads the exit code, the log must say why
        logging.error("maintenance failed:\n%s", traceback.format_exc())
        sys.exit(1)


def _not_run(exc: MemlaneError) -> NoReturn:
    """A setting refused: one line in the log, in the words `memlane maintain` exits 2
    with, and exit 2."""
    logging.error("not run: %s", exc)
    sys.exit(2)


@click.command()
@click.option("--threshold", default=0.6, show_default=True, type=FiniteFloatRange(0.05, 1.0))
@click.option("--project", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True, help="Merge within every project.")
@click.option("--dry-run", is_flag=True, help="Only list the merges.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def merge(
    state: CliState,
    threshold: float,
    project: str | None,
    all_projects: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Join near-duplicate memories (trigram Jaccard), keeping the richer one."""
    report = state.memory().merge(
        threshold=threshold,
        project=state.project_for(project),
        all_projects=state.all_for(all_projects),
        dry_run=dry_run,
    )
    if as_json:
        echo_json(
            {
                "dry_run": report.dry_run,
                "threshold": report.threshold,
                "compared": report.compared,
                "groups": [
                    {"keep": g.keep, "remove": list(g.remove), "similarity": g.similarity}
                    for g in report.groups
                ],
            }
        )
        return
    for line in _merge_lines(report):
        click.echo(line)


@click.command()
@click.option("--refresh", is_flag=True, help="Re-check linked files first.")
@click.option("--project", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@click.option("--json", "as_json", is_flag=True)
@pass_state
def stale(
    state: CliState,
    refresh: bool,
    project: str | None,
    all_projects: bool,
    limit: int,
    as_json: bool,
) -> None:
    """List memories whose linked files changed after capture."""
    memory = state.memory()
    project = state.project_for(project)
    every = state.all_for(all_projects)
    result: dict[str, Any] = {}
    if refresh:
        report = memory.refresh_staleness(project=project, all_projects=every)
        result = {
            "checked": report.checked,
            "marked": list(report.marked),
            "cleared": list(report.cleared),
            "undecidable": report.unknown,
        }
        if not as_json:
            click.echo(
                f"checked {report.checked}: {len(report.marked)} newly stale,"
                f" {len(report.cleared)} fresh again, {report.unknown} undecidable",
                err=True,
            )
    rows = memory.stale_memories(project=project, all_projects=every, limit=limit)
    if as_json:
        result["stale"] = [
            {"id": m.id, "project": m.project, "type": m.type, "title": m.title, "files": m.files}
            for m in rows
        ]
        echo_json(result)
        return
    if not rows:
        click.echo("no stale memories", err=True)
    for m in rows:
        title = " ".join((m.title or m.content).split())[:80]
        click.echo(f"#{m.id}  {m.created_at:%Y-%m-%d}  {m.type}  {title}  [{', '.join(m.files)}]")


def _forget_lines(report: ForgetReport) -> list[str]:
    verb = "would forget" if report.dry_run else "forgot"
    lines = [f"{verb} {counted(len(report.memories), 'memory')}"]
    if report.sessions:
        lines[0] += f" and session {', '.join(report.sessions)}"
    if report.log_cleared:
        lines[0] += f"; cleared {report.log_cleared} injection log entries that quoted it"
    for m in report.memories[:SHOW_IDS]:
        lines.append(f"  #{m.id}  {m.project}  {m.kind}/{m.type}  {m.label}")
    if len(report.memories) > SHOW_IDS:
        lines.append(f"  … (+{len(report.memories) - SHOW_IDS})")
    return lines


@click.command()
@click.argument("query", required=False)
@click.option("--id", "memory_id", type=int, help="Forget this memory.")
@click.option("--session", "session_id", help="Forget a session and all its memories.")
@click.option("--file", "file", metavar="PATH", help="Forget the memories linked to PATH.")
@click.option("--project", help="Project for QUERY and --file (default: from cwd).")
@click.option("--all-projects", is_flag=True, help="QUERY and --file in every project.")
@click.option("--dry-run", is_flag=True, help="Only list what would go.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def forget(
    state: CliState,
    query: str | None,
    memory_id: int | None,
    session_id: str | None,
    file: str | None,
    project: str | None,
    all_projects: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Remove memories everywhere (rows, full-text index, vectors): QUERY matches text."""
    memory = state.memory()
    options: dict[str, Any] = {
        "id": memory_id,
        "session_id": session_id,
        "file": file,
        "project": state.project_for(project),
        "all_projects": state.all_for(all_projects),
    }
    plan = memory.forget(query, dry_run=True, **options)
    if not dry_run and plan.memories and not yes:
        for line in _forget_lines(plan)[1:21]:
            click.echo(line)
        if not confirm(f"forget {counted(len(plan.memories), 'memory')}?"):
            click.echo("nothing forgotten")
            raise SystemExit(1)
    report = plan if dry_run else memory.forget(query, **options)
    if as_json:
        echo_json(
            {
                "dry_run": report.dry_run,
                "selector": report.selector,
                "sessions": list(report.sessions),
                "log_cleared": report.log_cleared,
                "memories": [
                    {"id": m.id, "project": m.project, "kind": m.kind, "type": m.type}
                    for m in report.memories
                ],
            }
        )
        return
    for line in _forget_lines(report):
        click.echo(line)


@click.command()
@click.option("--dry-run", is_flag=True, help="Only count what would change.")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def refilter(state: CliState, dry_run: bool, as_json: bool) -> None:
    """Pass every stored text through today's privacy filter again (rules added since)."""
    report = state.memory().refilter(dry_run=dry_run)
    if as_json:
        echo_json(
            {
                "dry_run": report.dry_run,
                "memories": list(report.memories),
                "sessions": list(report.sessions),
                "log_entries": list(report.log_entries),
                "deleted_memories": list(report.deleted_memories),
                "deleted_sessions": list(report.deleted_sessions),
                "mark_prompts": report.mark_prompts,
                "named": list(report.named),
                "unfit": list(report.unfit),
            }
        )
        return
    verb = "would change" if dry_run else "changed"
    click.echo(
        f"{verb}: {counted(len(report.memories), 'memory')},"
        f" {counted(len(report.sessions), 'session path')};"
        f" {'would clear' if dry_run else 'cleared'}"
        f" {counted(len(report.log_entries), 'log entry')}"
    )
    gone = len(report.deleted_memories) + len(report.deleted_sessions) + report.mark_prompts
    if gone:
        click.echo(
            f"{'would delete' if dry_run else 'deleted'}"
            f" {counted(len(report.deleted_memories), 'memory')} and"
            f" {counted(len(report.deleted_sessions), 'session')} whose name the filter"
            f" changes (or with no content left), and the feedback marks of"
            f" {counted(report.mark_prompts, 'prompt')}"
        )
    if report.named:
        click.echo(
            f"kept {counted(len(report.named), 'memory or session', 'memories or sessions')}"
            " known by a name the filter now takes for a secret (a project, session or"
            " source name): delete them yourself if they should go"
        )
    if report.unfit:
        click.echo(
            f"kept {counted(len(report.unfit), 'memory')} with a field stored as it"
            " was, which memlane refuses today (metadata nested too deep, a tag or file that"
            " is no text): the rest of each is filtered"
        )
