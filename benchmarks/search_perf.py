"""Search at scale: hybrid latency with the ANN graph vs the exact scan, recall, worker start, RSS.

Run: ``.venv/bin/python benchmarks/search_perf.py [--sizes 10000,100000] [--queries 50]``

For each size N a SQLite database is filled with N synthetic memories (Zipf-
distributed words from a fixed vocabulary, ~600 characters each, 10 projects)
and N **real** 512-d USE embeddings from the cache of ``real_vectors.py``
(LongMemEval turns; past the number of distinct turns, noisy copies of them —
:func:`real_vectors.replicate`, cosine ~0.9 with their source). The vector table
and its ANN graph are built once per database (``build s``), as the worker's
background job would, and kept in the work directory, so a second run starts
from them. Per size, reported:

* **worker start → first hybrid answer**: ``memlane serve`` on the database, from
  the spawn to the first ``/api/hybrid-search`` answer (imports, model load,
  mapping the saved table; the model's derived cache, written once per install by
  the first load, exists), and the CPU seconds the worker had used by then (on a
  busy machine the wall time is mostly waiting for a core; the CPU time is what an
  idle one would take, the path being single-threaded); then its **RSS ÷ the float32
  vector bytes** (N x 512 x 4) after 20 more hybrid searches;
* **hybrid p50 / p95 / min** in a warm process (query embedding + FTS + vectors +
  fusion + rerank), project scope, and **all projects**;
* the **exact-scan hybrid p50** in the same process on the same table, with the
  graph switched off (the baseline: what search did before the graph);
* the **CPU p50** of both (``process_time`` per search: the path is single-threaded,
  so on a busy machine this is what an idle one would take);
* **ANN recall@10**: the top 10 of the table's search (the 100 candidates hybrid
  asks for) against the exact top 10, for the 150 real LongMemEval questions'
  USE embeddings, all projects and one project;
* keyword recall p50 (the per-prompt hook's in-process recall) and DB bytes / 1000.

The minimum of a series approximates an idle machine: on a shared one the median
includes time spent waiting for a CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import memlane
from memlane.config import load_settings
from memlane.models import MemoryFilter, NewMemory, from_epoch
from memlane.paths import state_paths
from memlane.search.embedder import UniversalSentenceEncoder
from memlane.service import Memory

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import real_vectors  # noqa: E402

MODEL = UniversalSentenceEncoder.name
DIM = 512
PROJECTS = 10
_TOPICS = """
payment retry idempotency key invoice webhook stripe timeout queue worker cache redis
migration schema index postgres sqlite vector embedding search ranking fusion chunk
transcript session summary checkpoint hook latency budget watchdog privacy secret refactor
parser tokenizer unicode bigram dashboard token cookie header origin deploy docker compose
kubernetes ingress certificate renewal backup restore snapshot replica
"""
TOPIC_WORDS = _TOPICS.split()
STOP_WORDS = "the a of to and in for is on that with as it be this by are from or was".split()  # noqa: SIM905
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
COLUMNS = (
    "| memories | hybrid p50 ms | hybrid p95 ms | hybrid min ms | exact-scan hybrid p50 ms |"
    " hybrid CPU p50 ms | exact-scan CPU p50 ms |"
    " hybrid all-projects p50 ms | ANN recall@10 | ANN recall@10 one project |"
    " start → first hybrid s | worker CPU s by then | worker RSS ÷ vector bytes | worker RSS MB |"
    " keyword recall p50 ms | build s | DB bytes / 1000 |"
)


def vocabulary() -> tuple[list[str], list[float]]:
    words = [*TOPIC_WORDS, *(f"term{i}" for i in range(5000))]
    random.Random(11).shuffle(words)
    words = STOP_WORDS + words  # stop words are the most common
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def synthetic_text(rng: random.Random, vocab: tuple[list[str], list[float]]) -> str:
    return " ".join(rng.choices(vocab[0], weights=vocab[1], k=90))


def open_memory(path: Path, workdir: Path) -> Memory:
    settings, _ = load_settings()
    # The vector cache goes into the work directory, not into the user's own data dir.
    paths = state_paths({"MEMLANE_HOME": str(workdir)})
    return memlane.open(str(path), settings=replace(settings, embedder="use", paths=paths))


# Bump when build() changes what it writes: databases stamped with another number rebuild.
BUILD_VERSION = 1


def build_stamp(size: int, real: np.ndarray) -> dict[str, Any]:
    """What a database of :func:`build` depends on; kept next to it as ``<db>.build.json``."""
    sample = np.ascontiguousarray(real[::1009]).tobytes()
    return {
        "builder": BUILD_VERSION,
        "size": size,
        "projects": PROJECTS,
        "model": MODEL,
        "dim": DIM,
        "noise": real_vectors.NOISE,
        "real_vectors": [int(real.shape[0]), hashlib.sha256(sample).hexdigest()],
    }


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".build.json")


def reusable(path: Path, stamp: dict[str, Any]) -> bool:
    """True when ``path`` was built by :func:`build` with ``stamp``'s parameters and holds
    every memory and vector; otherwise says why on stderr (the caller rebuilds)."""
    if not path.exists():
        return False
    try:
        saved = json.loads(stamp_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = None
    if saved != stamp:
        print(f"{path.name}: no build stamp or other parameters; rebuilding", file=sys.stderr)
        return False
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        counts = [
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("memories", "embeddings")
        ]
    except sqlite3.Error as exc:
        print(f"{path.name}: unreadable ({exc}); rebuilding", file=sys.stderr)
        return False
    finally:
        conn.close()
    size = stamp["size"]
    if counts != [size, size]:
        print(f"{path.name}: {counts} memories/vectors, not {size}; rebuilding", file=sys.stderr)
        return False
    return True


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".build.json"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def build(path: Path, size: int, real: np.ndarray, workdir: Path) -> float:
    """Fill ``path``; then build the vector table and its graph. Returns the build seconds."""
    memory = open_memory(path, workdir)
    store = memory.store
    rng = random.Random(7)
    vocab = vocabulary()
    start = time.time() - 365 * 86400
    batch = 10_000
    vectors = real_vectors.replicate(real, size)
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
        block = vectors[first : first + count]
        store.put_embeddings(MODEL, DIM, [(mid, block[i].tobytes()) for i, mid in enumerate(ids)])
        print(f"  {first + count}/{size}", file=sys.stderr, flush=True)
    del vectors
    started = time.perf_counter()
    engine = memory.search_engine
    engine.vector_table()  # reads every vector once, saves the float32 generation
    engine.persist_vectors(threads=os.cpu_count() or 1, force=True)  # the graph
    seconds = time.perf_counter() - started
    memory.close()
    return seconds


def timed(fn: Any, runs: list[str], cpu: list[float] | None = None) -> list[float]:
    """Wall milliseconds of ``fn(query)`` per query; CPU milliseconds into ``cpu``."""
    out = []
    for query in runs:
        started, began = time.perf_counter(), time.process_time()
        fn(query)
        out.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - began) * 1000)
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


# -- the worker: start → first hybrid answer, RSS ---------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_start(db: Path, workdir: Path, runs: int = 20) -> tuple[float, float, float]:
    """(seconds from spawn to the first hybrid answer, the worker's CPU seconds by then,
    RSS MB after ``runs`` more hybrid searches)."""
    port = free_port()
    env = dict(os.environ)
    env.update(
        MEMLANE_HOME=str(workdir),
        MEMLANE_WORKER_AUTOSTART="false",
        MEMLANE_MAINTENANCE_ENABLED="false",
        MEMLANE_EMBEDDER="use",
    )
    env.pop("MEMLANE_DB", None)
    log_path = workdir / f"serve-{db.stem}.log"
    started = time.perf_counter()
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memlane", "--db", str(db), "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}/api/hybrid-search?scope=all&limit=10&q="
            first = None
            while time.perf_counter() - started < 900:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited: {log_path.read_text()[-2000:]}")
                token_file = workdir / "token"
                if token_file.exists():
                    token = token_file.read_text().strip()
                    request = urllib.request.Request(
                        base + "postgres+migration+index",
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    try:
                        with urllib.request.urlopen(request, timeout=300) as response:
                            response.read()
                        first = time.perf_counter() - started
                        cpu = cpu_seconds(proc.pid)
                        break
                    except OSError:
                        pass
                time.sleep(0.05)
            if first is None:
                raise RuntimeError("the worker gave no hybrid answer within 900 s")
            for i in range(runs):
                query = QUERIES[i % len(QUERIES)].replace(" ", "+")
                request = urllib.request.Request(
                    base + query, headers={"Authorization": f"Bearer {token}"}
                )
                with urllib.request.urlopen(request, timeout=300) as response:
                    response.read()
            return first, cpu, rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(60)


# -- in-process measurements -------------------------------------------------------------------


def ann_recall(memory: Memory, questions: np.ndarray) -> tuple[float, float]:
    """Recall@10 of the table's search (100 candidates) against the exact top 10."""
    table = memory.search_engine.vector_table()
    threshold = table.ann_threshold
    results = []
    for flt in (MemoryFilter(), MemoryFilter(projects=("project-3",))):
        found = 0
        for q in questions:
            got = [mid for mid, _ in table.search(q, 100, flt)[:10]]
            table.ann_threshold = 10**12
            truth = [mid for mid, _ in table.search(q, 10, flt)]
            table.ann_threshold = threshold
            found += len(set(got) & set(truth))
        results.append(found / (10 * len(questions)))
    return results[0], results[1]


def run_size(
    size: int, queries: int, workdir: Path, real: np.ndarray, questions: np.ndarray
) -> dict[str, float]:
    path = workdir / f"perf-{size}.db"
    build_s = float("nan")  # nan: reused, built by an earlier run with the same parameters
    stamp = build_stamp(size, real)
    if not reusable(path, stamp):
        remove_db(path)
        build_s = build(path, size, real, workdir)
        stamp_path(path).write_text(json.dumps(stamp, indent=1), encoding="utf-8")
    warm = open_memory(path, workdir)
    warm.search_engine.embedder  # writes the model cache once, as the first start after install
    warm.close()
    first_s, first_cpu, rss = worker_start(path, workdir)
    memory = open_memory(path, workdir)
    memory.store.execute_script("PRAGMA wal_checkpoint(TRUNCATE);")  # type: ignore[attr-defined]
    bytes_per_1000 = db_bytes(path) / size * 1000
    engine = memory.search_engine
    engine.embedder  # load the model outside the timed path
    table = engine.vector_table()
    runs = [QUERIES[i % len(QUERIES)] for i in range(queries)]

    def hybrid(q: str) -> None:
        memory.search(q, project="project-3", scope="project", mode="hybrid", limit=10)

    def hybrid_all(q: str) -> None:
        memory.search(q, scope="all", mode="hybrid", limit=10)

    def keyword(q: str) -> None:
        memory.recall(q, project="project-3", mode="keyword")

    timed(hybrid, runs[:3])
    h_cpu: list[float] = []
    h = timed(hybrid, runs, h_cpu)
    ha = timed(hybrid_all, runs)
    k = timed(keyword, runs)
    threshold = table.ann_threshold
    table.ann_threshold = 10**12  # the baseline: the same search, exact scan
    timed(hybrid, runs[:3])
    exact_cpu: list[float] = []
    exact = timed(hybrid, runs, exact_cpu)
    table.ann_threshold = threshold
    recall_all, recall_project = ann_recall(memory, questions)
    memory.close()
    return {
        "size": size,
        "hybrid_p50": p(h, 0.5),
        "hybrid_p95": p(h, 0.95),
        "hybrid_min": min(h),
        "exact_p50": p(exact, 0.5),
        "hybrid_cpu_p50": p(h_cpu, 0.5),
        "exact_cpu_p50": p(exact_cpu, 0.5),
        "hybrid_all_p50": p(ha, 0.5),
        "recall": recall_all,
        "recall_project": recall_project,
        "first_s": first_s,
        "first_cpu": first_cpu,
        "rss_ratio": rss * 1024 * 1024 / (size * DIM * 4),
        "rss_mb": rss,
        "keyword_p50": p(k, 0.5),
        "build_s": build_s,
        "bytes_per_1000": bytes_per_1000,
        "has_ann": float(table.has_ann),
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


def build_cell(seconds: float) -> str:
    return "reused" if seconds != seconds else f"{seconds:.0f}"  # nan: built by an earlier run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--real-vectors", type=Path, default=real_vectors.DEFAULT_CACHE)
    parser.add_argument("--lme-db", type=Path, help="the retrieval benchmark's database")
    parser.add_argument("--throughput", type=int, default=0, help="texts to embed (0: skip)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-perf-"))
    workdir.mkdir(parents=True, exist_ok=True)
    real, questions = real_vectors.load(args.real_vectors)
    print(
        f"cpus: {os.cpu_count()}; workdir {workdir}; {real.shape[0]:,} real USE vectors"
        f" ({args.real_vectors}), noisy copies past that; {questions.shape[0]} question vectors",
        flush=True,
    )
    print(COLUMNS)
    print("|" + "---:|" * (COLUMNS.count("|") - 1))
    for size in (int(s) for s in args.sizes.split(",") if s):
        r = run_size(size, args.queries, workdir, real, questions)
        print(
            f"| {size:,} | {r['hybrid_p50']:.1f} | {r['hybrid_p95']:.1f} | {r['hybrid_min']:.1f} |"
            f" {r['exact_p50']:.1f} | {r['hybrid_cpu_p50']:.1f} | {r['exact_cpu_p50']:.1f} |"
            f" {r['hybrid_all_p50']:.1f} | {r['recall']:.3f} |"
            f" {r['recall_project']:.3f} | {r['first_s']:.2f} | {r['first_cpu']:.2f} |"
            f" {r['rss_ratio']:.2f} |"
            f" {r['rss_mb']:.0f} | {r['keyword_p50']:.1f} | {build_cell(r['build_s'])} |"
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
