"""Recall@10 and CPU of memlane's ANN graph on real embeddings, by search expansion.

Run: ``.venv/bin/python benchmarks/ann_recall.py [--cache DIR] [--size N] [--ef 128,256,512]``

Builds the graph ``search/ann.py`` builds (usearch HNSW, int8, the production
connectivity and add expansion; ``--connectivity`` overrides it) over the vectors of a
``real_vectors.py`` cache — the LongMemEval turns and, when present, its
``extra.npy`` (every other real text the retrieval benchmark embedded) — and asks
it the 150 real LongMemEval question embeddings. Rows get 10 projects in turn.
For each search expansion (``ef``) it prints, for all projects and for one:

* recall@10: the exact top 10 (a full scan) found among the candidates, re-scored
  exactly, as the vector table does;
* the CPU p50 of one query (walk, filter, widening, exact re-scoring).

A project-scoped walk asks for k × rows / rows allowed × 1.25 + 16 candidates and
widens ×4 while fewer than 100 pass the filter, as ``VectorTable`` does.
``--size`` larger than the cache repeats vectors with small noise
(``real_vectors.replicate``): near-copies, not real embeddings — say so wherever
such a figure is used.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from memlane.search import ann

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import real_vectors  # noqa: E402

K = 10
ASKED = 100  # the candidates a hybrid search asks the vector side for
PROJECTS = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=real_vectors.DEFAULT_CACHE)
    parser.add_argument("--size", type=int, help="rows (default: every vector of the cache)")
    parser.add_argument("--ef", default="128,256,512", help="search expansions to try")
    parser.add_argument("--connectivity", type=int, default=ann.CONNECTIVITY)
    parser.add_argument("--threads", type=int, default=2, help="threads adding to the graph")
    args = parser.parse_args()
    real, questions = real_vectors.load(args.cache)
    size = args.size or real.shape[0]
    matrix = real_vectors.replicate(real, size) if size > real.shape[0] else real[:size]
    n = matrix.shape[0]
    project = np.arange(n) % PROJECTS
    print(
        f"{n:,} vectors ({min(n, real.shape[0]):,} real), {len(questions)} questions;"
        f" int8, connectivity {args.connectivity}",
        flush=True,
    )
    truth_all, truth_one = [], []
    for q in questions:
        scores = matrix @ q
        truth_all.append(set(np.argpartition(-scores, K)[:K].tolist()))
        scores[project != 3] = -9.0
        truth_one.append(set(np.argpartition(-scores, K)[:K].tolist()))
    ann.CONNECTIVITY = args.connectivity
    started = time.perf_counter()
    graph = ann.AnnIndex.build(matrix, threads=args.threads)
    print(f"graph built in {time.perf_counter() - started:.0f} s", flush=True)
    print("| ef | scope | recall@10 | CPU p50 ms |\n|---:|---|---:|---:|")
    for ef in (int(x) for x in args.ef.split(",")):
        graph._index.expansion_search = ef
        for scope, truths, allowed in (
            ("all", truth_all, n),
            ("one project of 10", truth_one, n // PROJECTS),
        ):
            found, cpu = 0, []
            for q, truth in zip(questions, truths, strict=True):
                began = time.process_time()
                want = min(n, math.ceil(ASKED * n / allowed * 1.25) + 16)
                while True:
                    rows = graph.search(q, want)
                    if allowed < n:
                        rows = rows[project[rows] == 3]
                    if rows.size >= ASKED or want >= n // 2:
                        break
                    want = min(n, want * 4)
                rows = np.sort(rows)
                top = rows[np.argsort(-(matrix[rows] @ q), kind="stable")[:K]]
                cpu.append(time.process_time() - began)
                found += len(set(top.tolist()) & truth)
            recall = found / (K * len(questions))
            print(f"| {ef} | {scope} | {recall:.3f} | {np.median(cpu) * 1000:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
