"""``memlane`` as a user runs it, for the benchmarks that time the CLI as typed."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path


def memlane_command() -> list[str]:
    """The console script next to this interpreter (what a user runs), else ``-m memlane``."""
    script = Path(sys.executable).with_name("memlane")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memlane"]


def timed_run(
    args: list[str], env: dict[str, str], what: str
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run ``memlane args`` as a user types it: its result, wall and CPU seconds (the child's
    user + system time); a failure stops the benchmark, naming ``what`` ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [*memlane_command(), *args], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu
