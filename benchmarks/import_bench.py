"""Import benchmark: ``memlane import jsonl`` of plain records, before embedding.

Run: ``.venv/bin/python benchmarks/import_bench.py [--records 100000] [--bytes 500]``

Writes ``--records`` plain DESIGN §7 records (an ``id``, ~``--bytes`` of text, a
session, a project, a timestamp) into two files of half each, then imports them
with the real command (``memlane import jsonl``, embedder off: the rate before
embedding) into one new database:

1. the first half into an empty database, then the second half on top: the two
   rates show whether the cost per record grows with the table (it did: every
   duplicate check walked every memory of its kind, 948 s for 51,500 records);
2. the first half again: every record is already there (the duplicate path).

Target: >= 5,000 records/s. Wall time and the command's CPU time are both
printed (on a shared machine the CPU rate is the steadier one); not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from user_command import timed_run

TARGET_PER_S = 5_000
WORD_TEXT = (
    "payment retry idempotency invoice webhook stripe timeout queue worker cache redis"
    " migration schema index postgres sqlite vector embedding search ranking fusion chunk"
    " transcript session summary checkpoint hook latency budget watchdog refactor parser"
)
WORDS = WORD_TEXT.split()


def write_records(path: Path, start: int, count: int, size: int, seed: int) -> None:
    rng = random.Random(seed)
    vocab = WORDS + [f"w{n}x" for n in range(5_000)]
    with path.open("w", encoding="utf-8") as out:
        for i in range(start, start + count):
            words: list[str] = []
            while sum(len(w) + 1 for w in words) < size:
                words.append(rng.choice(vocab))
            record = {
                "id": f"rec-{i}",
                "text": " ".join(words),
                "session": f"s-{i // 200}",
                "project": "bench-import",
                "timestamp": f"2026-01-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
            }
            out.write(json.dumps(record) + "\n")


def run_import(env: dict[str, str], path: Path, records: int) -> dict[str, Any]:
    """Import ``path``; wall and CPU seconds, and the rates."""
    done, wall, cpu = timed_run(["import", "jsonl", str(path), "--json"], env, "import")
    report = json.loads(done.stdout)
    return {
        "records": records,
        "created": report["created"],
        "already_present": report["skipped"],
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "per_s_wall": round(records / wall),
        "per_s_cpu": round(records / cpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--bytes", type=int, default=500, help="text bytes per record")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memlane-import-bench-"))
    half = args.records // 2
    report: dict[str, Any] = {"records": args.records, "bytes_per_record": args.bytes}
    try:
        first, second = tmp / "first.jsonl", tmp / "second.jsonl"
        write_records(first, 0, half, args.bytes, seed=1)
        write_records(second, half, args.records - half, args.bytes, seed=2)
        report["file_mb"] = round((first.stat().st_size + second.stat().st_size) / 1e6, 1)
        env = dict(os.environ)
        env.update(
            MEMLANE_HOME=str(tmp / "home"),
            MEMLANE_EMBEDDER="none",
            MEMLANE_WORKER_AUTOSTART="false",
            MEMLANE_MAINTENANCE_ENABLED="false",
        )
        env.pop("MEMLANE_DB", None)
        report["first_half"] = run_import(env, first, half)
        report["second_half"] = run_import(env, second, args.records - half)
        report["again"] = run_import(env, first, half)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    one, two, again = report["first_half"], report["second_half"], report["again"]
    total_wall = one["wall_s"] + two["wall_s"]
    total_cpu = one["cpu_s"] + two["cpu_s"]
    overall = round(args.records / total_wall)
    verdict = "meets" if overall >= TARGET_PER_S else "MISSES"
    print(
        f"import jsonl, {args.records} plain records ({report['file_mb']} MB), before embedding:"
        f" {overall}/s wall ({verdict} the {TARGET_PER_S}/s target),"
        f" {round(args.records / total_cpu)}/s of CPU;"
        f" first half {one['per_s_wall']}/s, second half on top {two['per_s_wall']}/s"
        f" (CPU {one['per_s_cpu']}/s, {two['per_s_cpu']}/s);"
        f" re-import of the first half (all present) {again['per_s_wall']}/s",
        flush=True,
    )
    print(json.dumps(report, indent=2))
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "import.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
