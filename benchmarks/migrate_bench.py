"""Migrate benchmark: ``memlane migrate-store --from DB --to URL`` of a large database.

Run (a PostgreSQL with pgvector must be reachable; scripts/pg_server.py starts one):

    export MEMLANE_TEST_PG_DSN=$(.venv/bin/python scripts/pg_server.py start --dir $D | tail -1)
    .venv/bin/python benchmarks/migrate_bench.py [--memories 50000] [--runs 3]
        [--secrets-every 100]

A temporary home is filled with ``--memories`` varied memories (the generator of
``worker_bench.py``, set-up only); every ``--secrets-every``-th memory is then given a
GitHub token outside memlane, as in ``restore_bench.py``. Each run copies the database
into a new schema of that server with the real command (a new process; ``--runs`` runs
after one warm-up) and prints the median wall and CPU seconds of the command.

The copy passes every row through the privacy filter on its way
(``interop/transfer.py``). Not asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from restore_bench import filled_backup  # noqa: E402
from user_command import timed_run  # noqa: E402


def with_schema(base: str, schema: str) -> str:
    """``base`` (a postgresql:// URL) whose tables live in ``schema``."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-c%20search_path%3D{schema}%2Cpublic"


def run_migrate(env: dict[str, str], db: Path, base: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``memlane migrate-store`` into a new schema; fails loudly."""
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        target = with_schema(base, schema)
        args = ["migrate-store", "--from", str(db), "--to", target, "--json"]
        _done, wall, cpu = timed_run(args, env, "memlane migrate-store")
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--secrets-every", type=int, default=100)
    parser.add_argument("--pg-dsn", default=None, help="default: $MEMLANE_TEST_PG_DSN")
    args = parser.parse_args()
    base = args.pg_dsn or os.environ.get("MEMLANE_TEST_PG_DSN")
    if not base:
        raise SystemExit("give --pg-dsn or set MEMLANE_TEST_PG_DSN (see scripts/README-pg.md)")
    work = Path(tempfile.mkdtemp(prefix="memlane-migrate-bench-"))
    try:
        env, db = filled_backup(work, args.memories, args.secrets_every, "source.db")
        results = [run_migrate(env, db, base) for _ in range(args.runs + 1)][1:]
        walls = [wall for wall, _cpu in results]
        cpus = [cpu for _wall, cpu in results]
        print(
            f"memlane migrate-store ({args.memories:,} memories): median wall"
            f" {statistics.median(walls):.2f} s, CPU {statistics.median(cpus):.2f} s"
            f" (runs: {', '.join(f'{w:.2f}' for w in walls)})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
