"""PostgreSQL + pgvector next to SQLite at the same size: ingest rate and hybrid search latency.

Run (a PostgreSQL with pgvector must be reachable; scripts/pg_server.py starts one):

    D=$(mktemp -d /tmp/pg.XXXX)
    export MEMLANE_TEST_PG_DSN=$(.venv/bin/python scripts/pg_server.py start --dir $D | tail -1)
    .venv/bin/python benchmarks/pg_vs_sqlite.py --size 100000          # quick
    nohup .venv/bin/python benchmarks/pg_vs_sqlite.py --size 1000000 > bench.log 2>&1 &

Both stores receive the same synthetic corpus (seeded): memories of 25-70 words drawn
from a Zipf vocabulary over 40 projects, and one random unit 512-d float32 vector each —
or, with ``--real-vectors``, real USE embeddings of LongMemEval turns (``real_vectors.py``;
noisy copies past their number) and real question embeddings as query vectors: HNSW
recall on random vectors says little. Queries are 2-3 words and a vector taken from a
stored memory (noise added), so every query has real matches.

* **Ingest**: memories through each store's batch path (SQLite: ``insert_memory`` in
  transactions of ``--batch``; PostgreSQL: ``insert_memories``, one pipelined round trip
  per batch), then vectors with ``put_embeddings`` (PostgreSQL maintains its HNSW index
  while inserting, as in production).
* **Search** (``--queries`` each, p50/p95 in ms, whole project and one project):
  keyword = ``fts_candidates`` (200) with the bound memlane's search passes (only the
  newest ``Ranking.keyword_scan`` matches ranked), and for the first 20 queries without it
  (every match ranked: the baseline); semantic = top 200 by cosine — PostgreSQL:
  ``vector_candidates`` (HNSW, ``iterative_scan`` under a filter; exact below 20k rows),
  SQLite: the in-memory ``VectorTable`` search uses (numpy, exact; load time reported);
  hybrid = both (full-text bounded by ``Ranking.hybrid_keyword_scan``) + RRF (k=60) +
  fetching the top 10 memories.
* **Recall@10** of PostgreSQL's vector candidates against the exact top 10.

Prints a markdown table and writes the numbers as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memlane.models import MemoryFilter, NewMemory  # noqa: E402
from memlane.search.engine import Ranking  # noqa: E402
from memlane.search.fts import build_query  # noqa: E402
from memlane.search.fusion import rrf  # noqa: E402
from memlane.search.vectors import VectorTable  # noqa: E402
from memlane.store.base import Store  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
import real_vectors  # noqa: E402

MODEL = "bench-512"
CANDIDATES = 200
# Queries that also rank every full-text match (seconds each at 1M on PostgreSQL).
UNBOUNDED_QUERIES = 20
PROJECTS = 40
CHUNK = 10_000
T0 = datetime(2025, 1, 1, tzinfo=UTC)
TYPES = ("note", "decision", "bugfix", "command", "file-write", "lesson")
KINDS = {
    "note": "note",
    "decision": "knowledge",
    "bugfix": "knowledge",
    "lesson": "knowledge",
    "command": "observation",
    "file-write": "observation",
}


@dataclass(frozen=True)
class Corpus:
    size: int
    dim: int
    seed: int
    vocab: list[str]
    # Real embeddings (real_vectors.py): turns, then noisy copies; questions as queries.
    real: np.ndarray | None = None
    questions: np.ndarray | None = None

    @classmethod
    def make(cls, size: int, dim: int, seed: int, real_dir: Path | None = None) -> Corpus:
        rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        vocab: set[str] = set()
        while len(vocab) < 30_000:
            vocab.add("".join(rng.choice(letters, size=int(rng.integers(3, 10)))))
        if real_dir is None:
            return cls(size, dim, seed, sorted(vocab))
        real, questions = real_vectors.load(real_dir)
        return cls(size, int(real.shape[1]), seed, sorted(vocab), real, questions)

    def vectors(self, start: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """Unit vectors of rows ``start..start+count``: random, or real and noisy copies."""
        if self.real is None:
            vectors = rng.standard_normal((count, self.dim), dtype=np.float32)
        else:
            rows = np.arange(start, start + count)
            vectors = self.real[rows % self.real.shape[0]].copy()
            copies = rows >= self.real.shape[0]
            noise = rng.normal(0.0, real_vectors.NOISE, vectors.shape).astype(np.float32)
            vectors[copies] += noise[copies]
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def chunk(self, index: int) -> tuple[list[NewMemory], np.ndarray]:
        """Memories and unit vectors of chunk ``index`` (CHUNK rows), identical every call."""
        rng = np.random.default_rng((self.seed, index))
        start = index * CHUNK
        count = min(CHUNK, self.size - start)
        ranks = np.minimum(rng.zipf(1.15, size=(count, 80)) - 1, len(self.vocab) - 1)
        lengths = rng.integers(25, 70, size=count)
        projects = np.minimum(rng.zipf(1.6, size=count), PROJECTS) - 1
        types = rng.integers(0, len(TYPES), size=count)
        memories = []
        for row in range(count):
            words = [self.vocab[r] for r in ranks[row, : lengths[row]]]
            type_ = TYPES[int(types[row])]
            content = " ".join(words)
            memories.append(
                NewMemory(
                    project=f"project-{int(projects[row]):02d}",
                    kind=KINDS[type_],
                    type=type_,
                    content=content,
                    normalized_hash=f"h{start + row}",
                    created_at=T0 + timedelta(seconds=30 * (start + row)),
                    title=" ".join(words[:5]),
                    session_id=f"s{(start + row) // 50}",
                )
            )
        return memories, self.vectors(start, count, rng)

    def chunks(self) -> Iterator[tuple[list[NewMemory], np.ndarray]]:
        for index in range((self.size + CHUNK - 1) // CHUNK):
            yield self.chunk(index)

    def queries(self, count: int) -> list[tuple[str, np.ndarray, str]]:
        """(text, vector, project) taken from stored memories, with noise on the vector."""
        rng = np.random.default_rng((self.seed, 999_999))
        rank = {word: i for i, word in enumerate(self.vocab)}
        out = []
        chunks = (self.size + CHUNK - 1) // CHUNK
        for n in range(count):
            memories, vectors = self.chunk(int(rng.integers(0, chunks)))
            row = int(rng.integers(0, len(memories)))
            # Words past the 300 most frequent: a Zipf corpus' head words are stop words.
            words = [w for w in memories[row].content.split() if rank[w] >= 300]
            if len(words) < 3:
                words = memories[row].content.split()
            picked = rng.choice(len(words), size=int(rng.integers(2, 4)), replace=False)
            if self.questions is not None:  # a real question's embedding
                vector = self.questions[n % self.questions.shape[0]]
            else:
                vector = vectors[row] + rng.standard_normal(self.dim).astype(np.float32) * 0.03
                vector /= np.linalg.norm(vector)
            out.append((" ".join(words[i] for i in sorted(picked)), vector, memories[row].project))
        return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], Any], runs: list[float]) -> Any:
    began = time.perf_counter()
    result = fn()
    runs.append((time.perf_counter() - began) * 1000)
    return result


def ingest(store: Store, corpus: Corpus, batch: int, log: Callable[[str], None]) -> dict[str, Any]:
    from memlane.store.postgres import PostgresStore

    mem_s = vec_s = 0.0
    done = 0
    all_ids: list[int] = []
    for memories, vectors in corpus.chunks():
        began = time.perf_counter()
        ids: list[int] = []
        for start in range(0, len(memories), batch):
            part = memories[start : start + batch]
            if isinstance(store, PostgresStore):
                ids.extend(store.insert_memories(part))
            else:
                with store.transaction():
                    ids.extend(store.insert_memory(m) for m in part)
        mem_s += time.perf_counter() - began
        began = time.perf_counter()
        blobs = [vectors[i].tobytes() for i in range(len(ids))]
        for start in range(0, len(ids), batch):
            store.put_embeddings(
                MODEL,
                corpus.dim,
                list(zip(ids[start : start + batch], blobs[start : start + batch], strict=True)),
            )
        vec_s += time.perf_counter() - began
        all_ids.extend(ids)
        done += len(ids)
        if done % 100_000 == 0 or done == corpus.size:
            log(
                f"  {store.backend}: {done} rows, memories {done / mem_s:,.0f}/s,"
                f" vectors {done / max(vec_s, 1e-9):,.0f}/s"
            )
    return {
        "memories_per_s": corpus.size / mem_s,
        "vectors_per_s": corpus.size / vec_s,
        "ingest_s": mem_s + vec_s,
        "_ids": all_ids,  # in corpus order (not written to --out)
    }


def exact_top10(
    corpus: Corpus, ids: list[int], queries: list[tuple[str, np.ndarray, str]]
) -> list[list[int]]:
    """The exact top 10 (all projects) of each query, by streaming the corpus' vectors
    chunk by chunk: the recall truth without a second store."""
    matrix = np.stack([qvec for _, qvec, _ in queries]).astype(np.float32)
    best_scores = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), 10), dtype=np.int64)
    for index in range((corpus.size + CHUNK - 1) // CHUNK):
        _, vectors = corpus.chunk(index)
        scores = matrix @ vectors.T
        rows = np.broadcast_to(np.arange(vectors.shape[0]) + index * CHUNK, scores.shape)
        merged_scores = np.concatenate([best_scores, scores], axis=1)
        merged_rows = np.concatenate([best_rows, rows], axis=1)
        keep = np.argsort(-merged_scores, axis=1, kind="stable")[:, :10]
        best_scores = np.take_along_axis(merged_scores, keep, axis=1)
        best_rows = np.take_along_axis(merged_rows, keep, axis=1)
    return [[ids[int(row)] for row in rows] for rows in best_rows]


def search(
    store: Store,
    queries: list[tuple[str, np.ndarray, str]],
    semantic: Callable[[np.ndarray, MemoryFilter], list[tuple[int, float]]],
    unbounded: int = UNBOUNDED_QUERIES,
) -> dict[str, Any]:
    """p50/p95 per kind of search and scope. Full-text scores at most the newest
    ``keyword_scan`` (keyword) or ``hybrid_keyword_scan`` (hybrid) matches, as memlane's
    search asks the store; the first ``unbounded`` queries also rank every match (the
    baseline: what the bound saves)."""
    ranking = Ranking()
    out: dict[str, Any] = {}
    for scope in ("all", "project"):
        keyword: list[float] = []
        every: list[float] = []
        vector: list[float] = []
        hybrid: list[float] = []
        for n, (text, qvec, project) in enumerate(queries):
            flt = MemoryFilter(projects=(project,)) if scope == "project" else MemoryFilter()
            built = build_query(text)
            assert built is not None
            timed(
                lambda: store.fts_candidates(built, flt, CANDIDATES, scan=ranking.keyword_scan),
                keyword,
            )
            if n < unbounded:
                timed(lambda: store.fts_candidates(built, flt, CANDIDATES), every)
            timed(lambda: semantic(qvec, flt), vector)

            def run() -> list[Any]:
                scan = ranking.hybrid_keyword_scan
                kw = store.fts_candidates(built, flt, CANDIDATES, scan=scan)
                sem = semantic(qvec, flt)
                fused = rrf([[i for i, _ in kw], [i for i, _ in sem]])
                top = sorted(fused, key=lambda i: fused[i], reverse=True)[:10]
                return store.get_memories(top)

            timed(run, hybrid)
        for name, runs in (
            ("keyword", keyword),
            ("keyword_unbounded", every),
            ("semantic", vector),
            ("hybrid", hybrid),
        ):
            if runs:
                out[f"{name}_{scope}_p50_ms"] = statistics.median(runs)
                out[f"{name}_{scope}_p95_ms"] = percentile(runs, 0.95)
    return out


def sqlite_run(
    corpus: Corpus, args: argparse.Namespace, log: Callable[[str], None]
) -> dict[str, Any]:
    from memlane.store.sqlite import SQLiteStore

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="memlane-bench-"))
    path = workdir / f"bench-{corpus.size}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store = SQLiteStore(path)
    try:
        log(f"SQLite: ingest {corpus.size} into {path}")
        result = ingest(store, corpus, args.batch, log)
        result.pop("_ids")
        store.execute_script("PRAGMA wal_checkpoint(TRUNCATE);")
        result["db_mb"] = store.stats().db_bytes / 1e6
        began = time.perf_counter()
        table = VectorTable(MODEL)  # exact: no graph (search_perf.py measures that)
        table.load_all(store, store)
        result["vector_index_load_s"] = time.perf_counter() - began

        def semantic(qvec: np.ndarray, flt: MemoryFilter) -> list[tuple[int, float]]:
            return table.search(qvec, CANDIDATES, flt)

        log("SQLite: search")
        result.update(search(store, corpus.queries(args.queries), semantic))
        result["_exact"] = table
        return result
    finally:
        store.close()
        if not args.keep:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)


def postgres_run(
    corpus: Corpus,
    args: argparse.Namespace,
    log: Callable[[str], None],
    exact: VectorTable | None,
) -> dict[str, Any]:
    """Ingest, HNSW build and search on PostgreSQL; recall against ``exact`` (SQLite's
    exact table) or, without it, the exact top 10 computed from the corpus."""
    import psycopg
    from psycopg import sql

    from memlane.store.postgres import PostgresStore

    base = args.pg_dsn or os.environ.get("MEMLANE_TEST_PG_DSN")
    if not base:
        raise SystemExit("give --pg-dsn or set MEMLANE_TEST_PG_DSN (see scripts/README-pg.md)")
    dbname = f"memlane_bench_{corpus.size}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    dsn = psycopg.conninfo.make_conninfo(base, dbname=dbname)
    store = PostgresStore(dsn, pool_size=4)
    try:
        log(f"PostgreSQL: ingest {corpus.size} into {dbname}")
        store.index_build_memory = args.index_memory
        with store.deferred_vector_indexes():
            result = ingest(store, corpus, args.batch, log)
            ids = result.pop("_ids")
            log("  building the HNSW index (progress: pg_stat_progress_create_index)")
            began = time.perf_counter()
        result["hnsw_build_s"] = time.perf_counter() - began
        result["ingest_s"] += result["hnsw_build_s"]
        log(f"  HNSW build {result['hnsw_build_s']:.1f} s")
        began = time.perf_counter()
        store._execute("VACUUM ANALYZE memories")  # benchmark set-up
        store._execute("VACUUM ANALYZE embeddings")
        result["vacuum_analyze_s"] = time.perf_counter() - began
        result["db_mb"] = store.stats().db_bytes / 1e6

        def semantic(qvec: np.ndarray, flt: MemoryFilter) -> list[tuple[int, float]]:
            return store.vector_candidates(MODEL, qvec.tolist(), flt, CANDIDATES)

        log("PostgreSQL: search")
        queries = corpus.queries(args.queries)
        result.update(search(store, queries, semantic))
        if exact is not None:
            truths = [[i for i, _ in exact.search(q, 10, MemoryFilter())] for _, q, _ in queries]
        else:
            log("PostgreSQL: exact top 10 of each query from the corpus")
            truths = exact_top10(corpus, ids, queries)
        if truths:
            recall, first = [], []
            for (_, qvec, _), truth in zip(queries, truths, strict=True):
                found = store.vector_candidates(MODEL, qvec.tolist(), MemoryFilter(), CANDIDATES)
                got = [i for i, _ in found[:10]]
                recall.append(len(set(truth) & set(got)) / 10)
                first.append(float(bool(got) and got[0] == truth[0]))
            result["hnsw_recall_at_10"] = statistics.mean(recall)
            result["hnsw_top1"] = statistics.mean(first)
        return result
    finally:
        store.close()
        if not args.keep:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(dbname)
                    )
                )


def table(size: int, lite: dict[str, Any] | None, pg: dict[str, Any]) -> str:
    nan = float("nan")
    if lite is None:  # --postgres-only
        lite = defaultdict(lambda: nan)
    rows = [
        ("memories ingest (rows/s)", "memories_per_s", "{:,.0f}"),
        ("vectors ingest (rows/s, PostgreSQL: index built after)", "vectors_per_s", "{:,.0f}"),
        ("database size (MB)", "db_mb", "{:,.0f}"),
    ]
    ranking = Ranking()
    names = {
        "keyword": f"keyword (newest {ranking.keyword_scan:,} matches ranked)",
        "keyword_unbounded": f"keyword, every match ranked (first {UNBOUNDED_QUERIES} queries)",
        "semantic": "semantic",
        "hybrid": f"hybrid (newest {ranking.hybrid_keyword_scan:,} matches ranked)",
    }
    for scope, label in (("all", "all projects"), ("project", "one project")):
        for name, title in names.items():
            rows.append((f"{title} p50 / p95 ms, {label}", f"{name}_{scope}", "p"))
    lines = [f"| {size:,} memories, 512-d | SQLite | PostgreSQL |", "|---|---:|---:|"]
    for label, key, fmt in rows:
        if fmt == "p":
            cells = [
                f"{r.get(key + '_p50_ms', nan):.1f} / {r.get(key + '_p95_ms', nan):.1f}"
                for r in (lite, pg)
            ]
        else:
            cells = [fmt.format(r[key]) for r in (lite, pg)]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    if "hnsw_recall_at_10" in pg:
        lines.append(
            f"| vector recall@10 (top-1 found) | 1.00 (exact) | {pg['hnsw_recall_at_10']:.2f}"
            f" ({pg['hnsw_top1']:.2f}) |"
        )
    lines.append(f"| HNSW build after load (s) | - | {pg['hnsw_build_s']:,.0f} |")
    lines.append(
        f"| vector matrix load into the worker (s) | {lite['vector_index_load_s']:,.0f} | - |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-dsn", default=None, help="default: $MEMLANE_TEST_PG_DSN")
    parser.add_argument("--workdir", default=None, help="where the SQLite file goes")
    parser.add_argument("--keep", action="store_true", help="keep both databases")
    parser.add_argument("--index-memory", default="4GB", help="maintenance_work_mem for HNSW")
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    parser.add_argument("--table-from", default=None, help="print the table of a saved --out")
    parser.add_argument(
        "--real-vectors",
        nargs="?",
        type=Path,
        const=real_vectors.DEFAULT_CACHE,
        help="real USE embeddings (real_vectors.py cache) instead of random vectors",
    )
    parser.add_argument(
        "--postgres-only",
        action="store_true",
        help="skip SQLite (recall truth computed from the corpus): PostgreSQL's figures alone",
    )
    args = parser.parse_args()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    if args.table_from:
        saved = json.loads(Path(args.table_from).read_text())
        print(table(saved["size"], saved["sqlite"], saved["postgres"]))
        return
    corpus = Corpus.make(args.size, args.dim, args.seed, args.real_vectors)
    if corpus.real is not None:
        log(
            f"vectors: {corpus.real.shape[0]:,} real USE embeddings, then noisy copies;"
            f" queries: {corpus.questions.shape[0] if corpus.questions is not None else 0}"
            " real question embeddings"
        )
    lite = None if args.postgres_only else sqlite_run(corpus, args, log)
    exact = lite.pop("_exact") if lite is not None else None
    pg = postgres_run(corpus, args, log, exact)
    print(table(args.size, lite, pg), flush=True)
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {"size": args.size, "dim": args.dim, "sqlite": lite, "postgres": pg}, indent=2
            )
        )


if __name__ == "__main__":
    main()
