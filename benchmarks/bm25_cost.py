"""What FTS5's ``bm25()`` costs the prompt hook's keyword candidates (printed, not asserted).

Run: ``.venv/bin/python benchmarks/bm25_cost.py [--memories 50000] [--vocabulary 43]``

The database is filled as ``hooks_bench.py`` fills it; then ``SQLiteStore.fts_candidates``
(the ``RECALL_KEYWORD_SCAN`` newest matches of the prompt's words, ranked) runs for the
benchmark prompt as recall builds its query, with the store's ``FTS_RANK`` and, as the
baseline, with a constant in its place, alternating. FTS5 counts every row that holds each
query word to get its IDF, on every query, so the difference grows with how common the
prompt's words are, not with the rows ranked.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

from hooks_bench import PROMPT, WORDS, fill

import memlane
import memlane.store.sqlite as sqlite_store
from memlane.models import MemoryFilter
from memlane.search.fts import build_query
from memlane.search.queries import RECALL_KEYWORD_SCAN

PROJECT = "billing-api"
LIMIT = 40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--vocabulary", type=int, default=len(WORDS))
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memlane-bm25-"))
    try:
        fill(tmp / "home", args.memories, PROJECT, args.vocabulary)
        memory = memlane.open(str(next((tmp / "home").rglob("memlane.db"))))
        query = build_query(PROMPT, drop_stopwords=True)
        assert query is not None
        flt = MemoryFilter(projects=(PROJECT,))
        ranks = {"bm25()": sqlite_store.FTS_RANK, "constant (baseline)": "0.0"}
        costs: dict[str, list[float]] = {name: [] for name in ranks}
        for i in range(args.runs):
            for name in list(ranks) if i % 2 == 0 else list(reversed(ranks)):
                with mock.patch.object(sqlite_store, "FTS_RANK", ranks[name]):
                    start = time.thread_time()
                    rows = memory.store.fts_candidates(query, flt, LIMIT, scan=RECALL_KEYWORD_SCAN)
                    costs[name].append(time.thread_time() - start)
        memory.close()
        print(
            f"{args.memories} memories over a {args.vocabulary}-word vocabulary; {PROMPT!r};"
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
