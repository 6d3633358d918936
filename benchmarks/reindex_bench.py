"""What upgrading a database to schema 7 costs (printed, not asserted).

Schema 7 indexes the words inside camelCase identifiers. The migration only notes the
rows written before (it runs when a hook opens the database); ``memlane maintain``
re-indexes them in transactions of ``BACKFILL_BATCH`` ids. This builds ``--rows``
memories in a temporary SQLite file (one in three holding an identifier), makes them
look as schema 6 left them (extra terms empty, the queue and version 7 gone), and times

1. the baseline: inserting the same rows through the store, in the same run;
2. opening the database, which runs migration 7;
3. the whole backfill, and one batch.

Run: ``.venv/bin/python benchmarks/reindex_bench.py [--rows 100000]``.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from memlane.maintenance.run import BACKFILL_BATCH, backfill_index
from memlane.models import NewMemory, utcnow
from memlane.store.sqlite import SQLiteStore

WORDS = [
    "render",
    "session",
    "page",
    "token",
    "review",
    "annotation",
    "context",
    "builder",
    "test",
    "commit",
]
IDENTIFIERS = ("TranscriptRenderer", "ReviewContextBuilder", "getUserName", "HTTPServer")


def rows(count: int) -> list[NewMemory]:
    rng = random.Random(1)
    now = utcnow()
    out = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(80))
        if i % 3 == 0:
            text += " " + rng.choice(IDENTIFIERS)
        out.append(
            NewMemory(
                project="p",
                kind="turn",
                type="turn",
                content=text,
                normalized_hash=str(i),
                created_at=now,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    drafts = rows(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "m.db"
        store = SQLiteStore(db)
        clock = time.perf_counter()
        for start in range(0, len(drafts), 5000):
            with store.transaction():
                store.insert_memories(drafts[start : start + 5000])
        insert = time.perf_counter() - clock
        store.close()
        with sqlite3.connect(db) as conn:  # as schema 6 left it
            conn.execute("UPDATE memories SET cjk_terms = ''")
            conn.execute("DROP TABLE index_backfill")
            conn.execute("DELETE FROM schema_version WHERE version = 7")
        clock = time.perf_counter()
        store = SQLiteStore(db)
        migrate = time.perf_counter() - clock
        clock = time.perf_counter()
        store.backfill_index(BACKFILL_BATCH)
        batch = time.perf_counter() - clock
        clock = time.perf_counter()
        done = backfill_index(store) + BACKFILL_BATCH
        backfill = time.perf_counter() - clock + batch
        store.close()
    print(f"{args.rows:,} memories, a third holding a camelCase identifier")
    print(f"  insert (baseline, same run)   {insert:7.2f} s   ratio 1.00x")
    print(f"  open, migration 7             {migrate:7.3f} s   ratio {migrate / insert:.3f}x")
    print(f"  backfill of {done:,} ids       {backfill:7.2f} s   ratio {backfill / insert:.2f}x")
    print(f"  one batch of {BACKFILL_BATCH:,} ids        {batch * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
