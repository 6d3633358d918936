"""CLI benchmark: ``memlane search`` with a warm worker, and without one.

Run: ``.venv/bin/python benchmarks/cli_bench.py [--memories 10000] [--runs 10] [--mode hybrid]``

A temporary home is filled with ``--memories`` varied memories (the generator of
``worker_bench.py``, inserted through the store: set-up only) and, for hybrid,
embedded with the default model. Then, as a user types them (the ``memlane``
console script, a new process per call, wall time):

1. ``memlane search QUERY --mode M`` with a running worker (``memlane serve``):
   the CLI asks it over the hook relay's socket (its model and vectors warm).
   Target: median of ``--runs`` <= 0.3 s (hybrid, 10k memories).
2. the same with ``--json``;
3. the same with ``MEMLANE_RELAY=0``: the search runs in the CLI process, which
   loads the model and vectors itself (what every call cost before);
4. baselines: ``python -c pass`` and ``memlane --version`` (the CLI's own start).

Wall and the command's own CPU time are printed (and written to
benchmarks/results/cli.json), not asserted: on a shared machine the wall time
mostly shows the load (the CLI and the worker each wait for a core).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from user_command import memlane_command  # noqa: E402
from worker_bench import PROJECT, Worker, embed_all, env_for, fill, prompts  # noqa: E402

TARGET_S = 0.3


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of ``runs`` runs of ``cmd`` after one warm-up; fails loudly.

    CPU is the command's own (user + system): on a shared machine it shows what the
    command costs when the wall time mostly shows the machine's load.
    """
    times = []
    for attempt in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, timeout=300, check=False)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()[-2000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if attempt:
            times.append((elapsed, cpu))
    return times


def summary(times: list[tuple[float, float]]) -> dict[str, Any]:
    walls = [wall for wall, _ in times]
    return {
        "runs": len(times),
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "median_cpu_s": round(statistics.median(cpu for _, cpu in times), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--mode", choices=("keyword", "hybrid"), default="hybrid")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memlane-cli-bench-"))
    report: dict[str, Any] = {"memories": args.memories, "mode": args.mode}
    memlane = memlane_command()
    try:
        home = tmp / "home"
        report["fill_seconds"] = round(fill(home, args.memories), 1)
        if args.mode == "hybrid":
            report["embed_seconds"] = round(embed_all(home), 1)
        print(f"{args.memories} memories ready ({report})", flush=True)
        env = env_for(home, args.mode)
        query = prompts(1, seed=23)[0]
        search = [*memlane, "search", query, "--project", PROJECT, "--mode", args.mode]
        report["python_c_pass"] = summary(timed([sys.executable, "-c", "pass"], env, args.runs))
        report["memlane_version"] = summary(timed([*memlane, "--version"], env, args.runs))
        worker = Worker(home, args.mode, rate=0, write_rate=0)
        try:
            timed(search, env, 3)  # the worker's first searches load what it loads lazily
            report["warm_worker"] = summary(timed(search, env, args.runs))
            report["warm_worker_json"] = summary(timed([*search, "--json"], env, args.runs))
            in_process = {**env, "MEMLANE_RELAY": "0"}
            report["in_process"] = summary(timed(search, in_process, args.cold_runs))
        finally:
            worker.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    warm = report["warm_worker"]["median_s"]
    verdict = "meets" if warm <= TARGET_S else "MISSES"

    def both(name: str) -> str:
        return f"{report[name]['median_s']:.3f} s (CPU {report[name]['median_cpu_s']:.3f} s)"

    print(
        f"memlane search ({args.mode}, {args.memories} memories), median of {args.runs}:"
        f" warm worker {both('warm_worker')} ({verdict} the {TARGET_S} s target),"
        f" --json {both('warm_worker_json')}, in-process {both('in_process')};"
        f" baselines: python -c pass {both('python_c_pass')},"
        f" memlane --version {both('memlane_version')}",
        flush=True,
    )
    print(json.dumps(report, indent=2))
    out = HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "cli.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
