"""What FTS5's ``bm25()`` costs the prompt hook's keyword candidates (printed, not asserted).

Run: ``.venv/bin/python benchmarks/bm25_cost.py [--memories 50000] [--vocabulary 43]``

The database is filled as ``hooks_bench.py`` fills it; then the statement of
``SQLiteStore.fts_candidates`` (the 250 newest matches of the prompt's words, ranked)
runs with ``bm25()`` and, as the baseline, with a constant in its place, alternating.
FTS5 counts every row that holds each query word to get its IDF, on every query, so the
difference grows with how common the prompt's words are, not with the 250 rows ranked.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from hooks_bench import WORDS, fill

PROMPT = "why does the payment retry use an idempotency key with the webhook?"
SCAN = 250


def statement(rank: str) -> str:
    inner = (
        f"SELECT m.id, {rank} AS rank FROM memories_fts JOIN memories m INDEXED BY memories_keys"
        " ON m.id = memories_fts.rowid WHERE memories_fts MATCH ? AND m.project = ?"
        " ORDER BY memories_fts.rowid DESC LIMIT ?"
    )
    return f"SELECT id, rank FROM ({inner}) ORDER BY rank LIMIT 40"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--vocabulary", type=int, default=len(WORDS))
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memlane-bm25-"))
    try:
        fill(tmp / "home", args.memories, "billing-api", args.vocabulary)
        db = next((tmp / "home").rglob("memlane.db"))
        con = sqlite3.connect(db)
        words = [w for w in PROMPT.rstrip("?").split() if len(w) > 3]
        match = " OR ".join(f'"{w}"' for w in words)
        costs: dict[str, list[float]] = {"bm25()": [], "constant (baseline)": []}
        ranks = {
            "bm25()": "bm25(memories_fts, 3.0, 1.0, 2.0, 2.0, 1.0)",
            "constant (baseline)": "0.0",
        }
        for i in range(args.runs):
            for name in list(ranks) if i % 2 == 0 else list(reversed(ranks)):
                start = time.thread_time()
                rows = con.execute(statement(ranks[name]), [match, "billing-api", SCAN]).fetchall()
                costs[name].append(time.thread_time() - start)
        con.close()
        print(
            f"{args.memories} memories over a {args.vocabulary}-word vocabulary; MATCH {match};"
            f" {len(rows)} rows; CPU per query, median of {args.runs}:"
        )
        base = statistics.median(costs["constant (baseline)"])
        for name, values in costs.items():
            med = statistics.median(values)
            print(f"  {name:22s} {med * 1000:6.2f} ms   ratio {med / base:5.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
