"""``memlane demo``: a guided look at memlane on bundled sample sessions."""

from __future__ import annotations

import os
import tempfile
from importlib import resources
from pathlib import Path

import click

from memlane.cli.context import CliState

pass_state = click.make_pass_decorator(CliState)

DEMO_QUERIES = (
    ("billing-api", "payment retries double charge"),
    ("billing-api", "why is the reconciliation job slow"),
    ("mobile-app", "認証トークン"),
    ("tienda-online", "correos de confirmación"),
    ("web-dashboard", "XSS innerHTML"),
)

# What points memlane at the user's own state besides MEMLANE_HOME: the demo reads and
# writes only its throw-away home (MEMLANE_DB got the sample memories).
USERS_STATE = ("MEMLANE_CONFIG", "MEMLANE_DB")


def register(cli: click.Group) -> None:
    cli.add_command(demo)


def sample_path() -> Path:
    return Path(str(resources.files("memlane.demo").joinpath("sample.jsonl")))


@click.command()
@click.option("--keep", is_flag=True, help="Keep the throw-away home and print its path.")
def demo(keep: bool) -> None:
    """Load sample sessions into a throw-away home and show recall, context and stats."""
    from memlane.cli.memory_cmds import print_hits
    from memlane.config import load_settings
    from memlane.service import open as open_memory
    from memlane.worker.queries import search as run_search

    home = tempfile.mkdtemp(prefix="memlane-demo-")
    env = {k: v for k, v in os.environ.items() if k not in USERS_STATE} | {"MEMLANE_HOME": home}
    settings, _ = load_settings(environ=env)
    memory = open_memory(settings=settings)
    try:
        report = memory.import_jsonl(str(sample_path()))
        click.secho(f"Loaded {report.created} sample memories into {home}", bold=True)
        for project, query in DEMO_QUERIES:
            click.secho(f"\n$ memlane search {query!r} --project {project}", fg="cyan")
            hits = run_search(memory, {"query": query, "project": project, "limit": 3})["hits"]
            if hits:
                print_hits(hits)
            else:
                click.echo("  (no match)")
        click.secho("\nSession-start context for billing-api (budget 600 tokens):", fg="cyan")
        click.echo(memory.context(project="billing-api", budget=600))
        stats = memory.stats()
        click.secho("\nStats", fg="cyan")
        click.echo(
            f"  {stats.memories} memories in {len(stats.projects)} projects, "
            f"{stats.sessions} sessions, {stats.db_bytes / 1024:.0f} KB"
        )
        for name, count in stats.types.items():
            click.echo(f"  {name:<12} {count}")
    finally:
        memory.close()
        if keep:
            click.echo(f"\nDemo home kept at {home} (MEMLANE_HOME={home} memlane search …)")
        else:
            import shutil

            shutil.rmtree(home, ignore_errors=True)
