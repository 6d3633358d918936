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
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from user_command import memlane_command  # noqa: E402
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


def run_restore(cmd: list[str], env: dict[str, str], backup: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``memlane restore -y backup``; fails loudly."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [*cmd, "restore", "-y", str(backup)], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"memlane restore failed ({done.returncode}): {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


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
        home = work / "home"
        home.mkdir(mode=0o700)
        seconds = fill(home, args.memories)
        print(f"filled {args.memories:,} memories in {seconds:.1f} s")
        env = env_for(home, "keyword")
        cmd = memlane_command()
        backup = work / "backup.db"
        subprocess.run([*cmd, "backup", str(backup)], env=env, check=True, capture_output=True)
        planted = plant_secrets(backup, args.secrets_every)
        size = backup.stat().st_size / 1_048_576
        print(f"backup: {size:.1f} MB, {planted:,} memories given a token")
        results = [run_restore(cmd, env, backup) for _ in range(args.runs + 1)][1:]
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
