"""Search performance: warm hybrid and keyword latency by corpus size, DB bytes, embedding rate.

Run: ``.venv/bin/python benchmarks/search_perf.py [--sizes 10000,100000] [--queries 50]``

For each size N a SQLite database is filled with N synthetic memories (Zipf-
distributed words from a fixed vocabulary, ~600 characters each, 10 projects)
and N random unit 512-d vectors stored under the default model's name: embedding
a million real texts with USE would take hours, and search latency does not
depend on what the vectors mean. Queries are real USE query embeddings (the
model runs in the timed path, as it does in the worker). Reported, in one warm
process (the worker's situation: the vector table is loaded once, then synced):

* hybrid p50/p95 (query embedding + FTS + vectors + fusion + rerank), project scope;
* keyword recall p50/p95 (the per-prompt hook's in-process recall: limit 3) and
  keyword search p50 (limit 10, as `memlane search --mode keyword`);
* vector table load time (first search: from the store, or from the memory-mapped
  cache when the database was built in an earlier run) and database bytes per 1000
  memories;
* the minimum of each series as well: on a shared machine the median includes time
  the process spent waiting for a CPU, the minimum approximates an idle machine.

``--lme-db PATH`` additionally reports bytes per 1000 *real* memories with their
vectors (the LongMemEval database the retrieval benchmark builds), and
``--throughput`` the embedding rate of real chunks (USE, one BLAS thread).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import memlane
from memlane.config import load_settings
from memlane.models import MemoryFilter, NewMemory, from_epoch
from memlane.paths import state_paths
from memlane.search.embedder import UniversalSentenceEncoder
from memlane.service import Memory

MODEL = UniversalSentenceEncoder.name
DIM = 512
PROJECTS = 10
# The words queries use, hidden among 5,000 filler terms; all are drawn with Zipf
# weights (rank r has weight 1/(r+1)), so some query words are common and some rare.
_TOPICS = """
payment retry idempotency key invoice webhook stripe timeout queue worker cache redis
migration schema index postgres sqlite vector embedding search ranking fusion chunk
transcript session summary checkpoint hook latency budget watchdog privacy secret refactor
parser tokenizer unicode bigram dashboard token cookie header origin deploy docker compose
kubernetes ingress certificate renewal backup restore snapshot replica
"""
TOPIC_WORDS = _TOPICS.split()
STOP_WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "for",
    "is",
    "on",
    "that",
    "with",
    "as",
    "it",
    "be",
    "this",
    "by",
    "are",
    "from",
    "or",
    "was",
]
QUERIES = [
    "why did the payment webhook retry twice",
    "postgres migration index timeout",
    "how do we rotate the certificate for ingress",
    "sqlite vector search latency budget",
    "redis cache invalidation after deploy",
    "tokenizer unicode bigram bug",
    "backup restore snapshot of the replica",
    "dashboard cookie origin header",
]


def vocabulary() -> tuple[list[str], list[float]]:
    words = [*TOPIC_WORDS, *(f"term{i}" for i in range(5000))]
    random.Random(11).shuffle(words)
    words = STOP_WORDS + words  # stop words are the most common
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def synthetic_text(rng: random.Random, vocab: tuple[list[str], list[float]]) -> str:
    return " ".join(rng.choices(vocab[0], weights=vocab[1], k=90))


def build(path: Path, size: int, log: object) -> Memory:
    settings, _ = load_settings()
    # The vector cache goes next to the database, not into the user's own data dir.
    paths = state_paths({"MEMLANE_HOME": str(path.parent)})
    memory = memlane.open(str(path), settings=replace(settings, embedder="use", paths=paths))
    store = memory.store
    rng = random.Random(7)
    vocab = vocabulary()
    vrng = np.random.default_rng(7)
    start = time.time() - 365 * 86400
    batch = 10_000
    for first in range(0, size, batch):
        count = min(batch, size - first)
        with store.transaction():
            ids = [
                store.insert_memory(
                    NewMemory(
                        project=f"project-{(first + i) % PROJECTS}",
                        kind="observation",
                        type="command",
                        content=synthetic_text(rng, vocab),
                        normalized_hash=f"h{first + i}",
                        created_at=from_epoch(start + (first + i) * 365 * 86400 / size),
                    )
                )
                for i in range(count)
            ]
        vectors = vrng.standard_normal((count, DIM), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.put_embeddings(
            MODEL, DIM, [(mid, vectors[i].astype("<f4").tobytes()) for i, mid in enumerate(ids)]
        )
        print(f"  {first + count}/{size}", file=sys.stderr, flush=True)
    return memory


def timed(fn: object, runs: list[str]) -> list[float]:
    out = []
    for query in runs:
        started = time.perf_counter()
        fn(query)  # type: ignore[operator]
        out.append((time.perf_counter() - started) * 1000)
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def db_bytes(path: Path) -> int:
    return sum(
        Path(str(path) + suffix).stat().st_size
        for suffix in ("", "-wal")
        if Path(str(path) + suffix).exists()
    )


def run_size(size: int, queries: int, workdir: Path) -> dict[str, float]:
    path = workdir / f"perf-{size}.db"
    if path.exists():
        settings, _ = load_settings()
        paths = state_paths({"MEMLANE_HOME": str(workdir)})
        memory = memlane.open(str(path), settings=replace(settings, embedder="use", paths=paths))
    else:
        memory = build(path, size, None)
    memory.store.execute_script("PRAGMA wal_checkpoint(TRUNCATE);")  # type: ignore[attr-defined]
    bytes_per_1000 = db_bytes(path) / size * 1000
    engine = memory.search_engine
    engine.embedder  # load the model outside the timed path
    started = time.perf_counter()
    engine.vector_table()
    load_s = time.perf_counter() - started
    runs = [QUERIES[i % len(QUERIES)] for i in range(queries)]

    def hybrid(q: str) -> None:
        memory.search(q, project="project-3", scope="project", mode="hybrid", limit=10)

    def keyword(q: str) -> None:
        memory.recall(q, project="project-3", mode="keyword")

    def keyword_search(q: str) -> None:
        memory.search(q, project="project-3", scope="project", mode="keyword", limit=10)

    def hybrid_all(q: str) -> None:
        memory.search(q, scope="all", mode="hybrid", limit=10)

    timed(hybrid, runs[:3])
    h = timed(hybrid, runs)
    ha = timed(hybrid_all, runs)
    k = timed(keyword, runs)
    ks = timed(keyword_search, runs)
    memory.close()
    return {
        "size": size,
        "hybrid_min": min(h),
        "keyword_min": min(k),
        "hybrid_p50": p(h, 0.5),
        "hybrid_p95": p(h, 0.95),
        "hybrid_all_p50": p(ha, 0.5),
        "keyword_p50": p(k, 0.5),
        "keyword_p95": p(k, 0.95),
        "keyword_search_p50": p(ks, 0.5),
        "load_s": load_s,
        "bytes_per_1000": bytes_per_1000,
    }


def throughput(samples: int) -> float:
    from memlane.search.embedder import get_embedder

    rng = random.Random(3)
    vocab = vocabulary()
    texts = [synthetic_text(rng, vocab) for _ in range(samples)]
    embedder = get_embedder("use")
    started = time.perf_counter()
    embedder.embed_batched(texts, 64)
    return samples / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--lme-db", type=Path, help="the retrieval benchmark's database")
    parser.add_argument("--throughput", type=int, default=0, help="texts to embed (0: skip)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-perf-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"cpus: {os.cpu_count()}; workdir {workdir}", flush=True)
    print(
        "| memories | hybrid p50 ms | hybrid p95 ms | hybrid min ms | hybrid all-projects p50 ms |"
        " keyword recall p50 ms | keyword p95 ms | keyword min ms | keyword search p50 ms |"
        " vector load s | DB bytes / 1000 |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",") if s):
        r = run_size(size, args.queries, workdir)
        print(
            f"| {size:,} | {r['hybrid_p50']:.1f} | {r['hybrid_p95']:.1f} | {r['hybrid_min']:.1f} |"
            f" {r['hybrid_all_p50']:.1f} | {r['keyword_p50']:.1f} | {r['keyword_p95']:.1f} |"
            f" {r['keyword_min']:.1f} | {r['keyword_search_p50']:.1f} | {r['load_s']:.1f} |"
            f" {r['bytes_per_1000'] / 1e6:.2f} MB |",
            flush=True,
        )
    if args.lme_db:
        memory = memlane.open(str(args.lme_db))
        count = memory.store.count_memories(MemoryFilter())
        embedded = sum(memory.store.embedding_counts().values())
        memory.close()
        size = db_bytes(args.lme_db)
        print(
            f"real memories (LongMemEval turns, ~1 KB each) with {DIM}-d vectors: "
            f"{count} memories, {embedded} vectors, {size / count * 1000 / 1e6:.2f} MB per 1000"
        )
    if args.throughput:
        print(f"embedding throughput (USE, 1 thread): {throughput(args.throughput):.0f} chunks/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
