"""``memlane embed --backfill``: embed every memory that has no vector yet.

A thin adapter over :meth:`memlane.service.Memory.embed_backfill`. Each batch is
committed as it goes, so an interrupted run (Ctrl-C) resumes where it stopped.
"""

from __future__ import annotations

import click

from memlane.cli.context import CliState, echo_json
from memlane.text import counted

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    cli.add_command(embed)


@click.command()
@click.option("--backfill", is_flag=True, help="Embed every memory that has no vector yet.")
@click.option("--dry-run", is_flag=True, help="Only count what would be embedded.")
@click.option("--model", help="Embedder (use, e5, toy); default: the configured one.")
@click.option("--batch", default=64, show_default=True, type=click.IntRange(1, 4096))
@click.option("--limit", type=click.IntRange(1), help="Embed at most this many now.")
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@pass_state
def embed(
    state: CliState,
    backfill: bool,
    dry_run: bool,
    model: str | None,
    batch: int,
    limit: int | None,
    as_json: bool,
) -> None:
    """Compute vectors for semantic and hybrid search.

    Changing the embedder (config `embedder` or --model) re-embeds everything;
    the old model's vectors are dropped once the new one covers every memory.
    """
    if not backfill:
        raise click.UsageError("say what to do: memlane embed --backfill [--dry-run]")
    memory = state.memory()
    if dry_run:
        report = memory.embed_backfill(model=model, limit=limit, dry_run=True)
        if as_json:
            echo_json({"model": report.model, "would_embed": report.remaining, "dry_run": True})
        else:
            click.echo(f"would embed {counted(report.remaining, 'memory')} with {report.model}")
        return
    from memlane.cli.progress import bar

    with bar("embedding", None, quiet=as_json) as tracker:
        report = memory.embed_backfill(
            model=model, batch=batch, limit=limit, progress=tracker.update
        )
    if as_json:
        echo_json(
            {
                "model": report.model,
                "dim": report.dim,
                "embedded": report.embedded,
                "remaining": report.remaining,
                "seconds": round(report.seconds, 3),
                "dropped_other_models": report.dropped_other_models,
            }
        )
        return
    line = (
        f"embedded {counted(report.embedded, 'memory')} with {report.model}"
        f" in {report.seconds:.1f}s ({report.per_second:.0f}/s)"
    )
    if report.remaining:
        line += f"; {report.remaining} left (run it again to continue)"
    if report.dropped_other_models:
        line += f"; dropped {report.dropped_other_models} vectors of other models"
    click.echo(line)
