"""Merge planning on one template of distinct facts (printed, not asserted).

Run: ``.venv/bin/python benchmarks/merge_bench.py [--records 10000]``

Imports ``--records`` notes of one template that differ in a number (``write {i} abc
def …``: each a distinct fact, which merge must keep apart, and the shape that puts
every memory in the same large LSH buckets) with the real command, then times, each in
its own process with its peak RSS: ``memlane merge --dry-run`` (the explicit pass: the
similarity and wording rules on every pair it checks), ``memlane maintain --dry-run``
(the automatic pass: notes merge only when their texts are the same) and, as the
same-run baseline, ``memlane stats`` on the same database (start-up and opening it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from user_command import memlane_command


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and the first output line of ``memlane ARGS``."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(
            [*memlane_command(), *args], env=env, stdout=out, stderr=subprocess.STDOUT
        )
        _pid, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if child.returncode != 0:
        raise SystemExit(f"memlane {' '.join(args)} failed: {text[-1000:]}")
    lines = text.strip().splitlines()
    return wall, usage.ru_maxrss / 1024, lines[0] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memlane-merge-bench-"))
    try:
        env = {
            **os.environ,
            "MEMLANE_HOME": str(tmp / "home"),
            "MEMLANE_EMBEDDER": "none",
            "MEMLANE_WORKER_AUTOSTART": "false",
        }
        env.pop("MEMLANE_DB", None)
        records = tmp / "template.jsonl"
        template = "write {} abc def ghi jkl mno pqr stu vwx yz the build step for module {}"
        with records.open("w", encoding="utf-8") as out:
            for i in range(args.records):
                text = template.format(i, i % 7)
                out.write(json.dumps({"text": text, "project": "p"}) + "\n")
        imported = subprocess.run(
            [*memlane_command(), "import", "jsonl", str(records), "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if imported.returncode != 0:
            raise SystemExit(f"import failed: {imported.stderr[-1000:]}")
        print(f"{args.records:,} notes of one template, each a distinct fact")
        for title, command in (
            ("memlane stats (baseline)", ["stats"]),
            ("memlane merge --dry-run", ["--project", "p", "merge", "--dry-run"]),
            ("memlane maintain --dry-run", ["maintain", "--dry-run"]),
        ):
            wall, peak, first = timed(command, env)
            print(f"  {title:28s} {wall:7.2f} s  peak {peak:6.0f} MB   {first}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
