"""Restore benchmark: ``memlane restore -y BACKUP`` of a large database, as typed.

Run: ``.venv/bin/python benchmarks/restore_bench.py [--memories 50000] [--runs 3]
[--secrets-every 100]``

A temporary home is filled with ``--memories`` varied memories (the generator of
``worker_bench.py``, inserted through the store: set-up only) and backed up with
``memlane backup``. The backup is then edited outside memlane, as a crafted file
would be: every ``--secrets-every``-th memory gets a GitHub token in its content (0:
none). Each run restores it over the live database with the real command (a new
process; ``--runs`` runs after one warm-up) and prints the wall and CPU seconds, next to
a baseline measured in the same run: SQLite's backup API copying the same file into a
new one (the least a restore does).

Restore passes what it brings in through the privacy filter before the live database
sees it (``interop/backup.py``): that pass is most of the difference. Not asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from user_command import timed_run  # noqa: E402
from worker_bench import env_for, fill  # noqa: E402

TOKEN = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"


def plant_secrets(backup: Path, every: int) -> int:
    """Append a token to every ``every``-th memory of ``backup``; returns how many.

    The generator's titles end in a blank, which memlane's write path trims: trimmed here
    too, so the filter changes only what holds a token, as in a database memlane wrote.
    """
    conn = sqlite3.connect(backup)
    try:
        conn.execute("UPDATE memories SET title = rtrim(title)")
        done = 0
        if every > 0:
            done = conn.execute(
                "UPDATE memories SET content = content || ' token ' || ? WHERE id % ? = 0",
                (TOKEN, every),
            ).rowcount
        conn.commit()
    finally:
        conn.close()
    return int(done)


def run_restore(env: dict[str, str], backup: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``memlane restore -y backup``; fails loudly."""
    _done, wall, cpu = timed_run(["restore", "-y", str(backup)], env, "memlane restore")
    return wall, cpu


def filled_backup(work: Path, memories: int, every: int, name: str) -> tuple[dict[str, str], Path]:
    """A data folder under ``work`` filled with ``memories``, its environment, and its backup
    ``work/name`` with every ``every``-th memory given a token (printed as it goes)."""
    home = work / "home"
    home.mkdir(mode=0o700)
    seconds = fill(home, memories)
    print(f"filled {memories:,} memories in {seconds:.1f} s")
    env = env_for(home, "keyword")
    backup = work / name
    timed_run(["backup", str(backup)], env, "memlane backup")
    planted = plant_secrets(backup, every)
    size = backup.stat().st_size / 1_048_576
    print(f"{name}: {size:.1f} MB, {planted:,} memories given a token")
    return env, backup


def backup_api_copy(backup: Path, folder: Path) -> float:
    """Seconds SQLite's backup API takes to copy ``backup`` into a new file."""
    dest = folder / "baseline-copy.db"
    dest.unlink(missing_ok=True)
    started = time.perf_counter()
    source = sqlite3.connect(f"{backup.resolve().as_uri()}?mode=ro", uri=True)
    target = sqlite3.connect(dest)
    source.backup(target)
    target.close()
    source.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--secrets-every", type=int, default=100)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memlane-restore-bench-"))
    try:
        env, backup = filled_backup(work, args.memories, args.secrets_every, "backup.db")
        results = [run_restore(env, backup) for _ in range(args.runs + 1)][1:]
        baseline = [backup_api_copy(backup, work) for _ in range(args.runs)]
        walls = [wall for wall, _cpu in results]
        cpus = [cpu for _wall, cpu in results]
        print(
            f"memlane restore -y ({args.memories:,} memories): median wall"
            f" {statistics.median(walls):.2f} s, CPU {statistics.median(cpus):.2f} s"
            f" (runs: {', '.join(f'{w:.2f}' for w in walls)})"
        )
        print(f"baseline, backup API copy of the file: median {statistics.median(baseline):.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
