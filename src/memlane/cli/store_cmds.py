"""``memlane migrate-store``: copy a memory database into PostgreSQL."""

from __future__ import annotations

import click

from memlane.cli.context import CliState, echo_json
from memlane.text import counted

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    cli.add_command(migrate_store)


@click.command("migrate-store")
@click.option("--from", "source", required=True, metavar="PATH|URL", help="Database to copy.")
@click.option("--to", "target", required=True, metavar="URL", help="Empty postgresql:// database.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@pass_state
def migrate_store(state: CliState, source: str, target: str, as_json: bool, quiet: bool) -> None:
    """Copy sessions, memories (same ids), vectors and seen keys, then verify the counts.

    The target must be empty; the copy is one transaction (all or nothing). What is
    copied passes through today's privacy filter; a memory or session whose name holds
    a secret is left out.
    """
    from memlane.interop.transfer import migrate

    def progress(what: str, count: int) -> None:
        if not quiet and not as_json:
            click.echo(f"  {what}: {count}", err=True)

    report = migrate(source, target, state.settings, progress=progress)
    if as_json:
        echo_json(
            {
                "source": report.source,
                "target": report.target,
                "memories": report.memories,
                "sessions": report.sessions,
                "embeddings": report.embeddings,
                "seen_keys": report.seen_keys,
                "filtered": report.filtered,
                "left_out": {
                    "memories": report.left_out_memories,
                    "sessions": report.left_out_sessions,
                },
                "seconds": round(report.seconds, 3),
                "verified": True,
            }
        )
        return
    vectors = ", ".join(f"{model}: {n}" for model, n in report.embeddings.items()) or "none"
    click.echo(
        f"copied {counted(report.memories, 'memory')}, {counted(report.sessions, 'session')},"
        f" vectors ({vectors}),"
        f" {report.seen_keys} seen keys from {report.source} to {report.target}"
        f" in {report.seconds:.1f} s; counts verified"
    )
    if report.filtered:
        click.echo(
            f"today's privacy filter changed {counted(report.filtered, 'memory')} (masked what"
            " it masks now, fields cleaned as a new memory's)"
        )
    left_out = report.left_out_memories + report.left_out_sessions
    if left_out:
        click.echo(
            f"left out {counted(report.left_out_memories, 'memory')} and"
            f" {counted(report.left_out_sessions, 'session')} whose name holds a secret,"
            " a <private> block or a control character, or with no content once filtered"
        )
