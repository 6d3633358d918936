"""What a worker costs while it has nothing to do (printed, not asserted).

Starts ``memlane serve`` on a database (``search_perf.py``'s 1M one, say), waits until
its start-up work is over, then reads its process's CPU ticks over a window: the share
of one core an idle worker takes. The baseline is the same command on an empty
database in the same run: what a worker costs with nothing stored (its event loop,
its polls). Every ~2 s the worker's embedding loop asks whether a memory lacks a vector;
on a large database that check is what could cost.

Run: ``.venv/bin/python benchmarks/idle_worker.py DB [--settle 25] [--window 30]``
(``search_perf.py``'s databases are under its ``--workdir``: ``perf-1000000.db``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from search_perf import free_port


def idle_share(db: Path, home: Path, settle: float, window: float) -> float:
    """Share of one core ``memlane serve`` on ``db`` uses from ``settle`` seconds after its
    start, over ``window`` seconds."""
    env = dict(
        os.environ,
        MEMLANE_HOME=str(home),
        MEMLANE_WORKER_AUTOSTART="false",
        MEMLANE_MAINTENANCE_ENABLED="false",
        MEMLANE_EMBEDDER="use",
    )
    env.pop("MEMLANE_DB", None)
    command = [sys.executable, "-m", "memlane", "--db", str(db), "serve", "--port"]
    with (home / "idle-worker.log").open("ab") as log:
        proc = subprocess.Popen(
            [*command, str(free_port())], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            time.sleep(settle)
            if proc.poll() is not None:
                raise SystemExit(f"the worker exited: see {home / 'idle-worker.log'}")
            before, started = _cpu_seconds(proc.pid), time.perf_counter()
            time.sleep(window)
            return (_cpu_seconds(proc.pid) - before) / (time.perf_counter() - started)
        finally:
            proc.terminate()
            proc.wait(30)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--home", type=Path, help="MEMLANE_HOME (model cache) for the worker")
    parser.add_argument("--settle", type=float, default=25.0, help="seconds before the window")
    parser.add_argument("--window", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-idle-") as tmp:
        home = args.home or Path(tmp)
        empty = Path(tmp) / "empty.db"
        baseline = idle_share(empty, home, args.settle, args.window)
        share = idle_share(args.db, home, args.settle, args.window)
    print(f"idle worker, {args.window:.0f} s from {args.settle:.0f} s after its start:")
    print(f"  {args.db.name:<24} {share:6.1%} of a core")
    print(f"  empty database (baseline) {baseline:6.1%} of a core")


if __name__ == "__main__":
    main()
