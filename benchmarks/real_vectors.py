"""A cache of real embeddings for the scale benchmarks: USE vectors of LongMemEval text.

Run: ``.venv/bin/python benchmarks/real_vectors.py [--data FILE] [--cache DIR] [--max N]``

Random unit vectors say nothing about an ANN index's recall: real sentence
embeddings cluster, and HNSW (usearch, pgvector) is weakest there. This script
embeds the distinct haystack turns of a LongMemEval file (user and assistant
turns, cut to the embedder's 4,000 characters) and its questions with the
default embedder (USE, one thread) and keeps them in ``DIR``:

* ``turns.npy`` (N x 512 float32, L2-normalized) and ``questions.npy``;
* ``meta.json`` (model, source file, counts, done).

It resumes where it stopped (the turn matrix is written every ``--chunk`` texts),
so a long run can be interrupted. :func:`load` is what the benchmarks call;
:func:`replicate` grows the real vectors to any size with small Gaussian noise
(a near-copy has cosine ~0.9 with its source; say so wherever it is used).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
# shared/ sits next to the checkout (or next to the folder of worktrees).
DEFAULT_DATA = next(
    (
        p / "shared" / "benchmarks" / "longmemeval"
        for p in HERE.parents
        if (p / "shared" / "benchmarks" / "longmemeval").is_dir()
    ),
    HERE.parents[2] / "shared" / "benchmarks" / "longmemeval",
)
DEFAULT_CACHE = HERE / "results" / "real-vectors"
EMBED_MAX_CHARS = 4000
NOISE = 0.02  # per-coordinate std of replicas: cosine ~0.9 with the source (512-d)


def source_file(data: Path | None) -> Path:
    if data is not None:
        return data
    for name in ("longmemeval_s_dev150.json.gz", "longmemeval_s_dev30.json.gz"):
        if (DEFAULT_DATA / name).exists():
            return DEFAULT_DATA / name
    raise SystemExit(f"no LongMemEval file in {DEFAULT_DATA}; pass --data FILE")


def texts_of(path: Path) -> tuple[list[str], list[str]]:
    """Distinct turn texts (first-seen order) and the questions of ``path``."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        records: list[dict[str, Any]] = json.load(handle)
    seen: dict[str, None] = {}
    for record in records:
        for session in record["haystack_sessions"]:
            for turn in session:
                text = str(turn.get("content") or "").strip()
                if text:
                    seen.setdefault(text[:EMBED_MAX_CHARS], None)
    return list(seen), [str(r["question"]) for r in records]


def build(data: Path, cache: Path, limit: int | None, chunk: int) -> None:
    from memlane.search.embedder import get_embedder

    cache.mkdir(parents=True, exist_ok=True)
    turns, questions = texts_of(data)
    if limit is not None:
        turns = turns[:limit]
    meta_path = cache / "meta.json"
    done = np.load(cache / "turns.npy") if (cache / "turns.npy").exists() else None
    if done is not None and done.shape[0] > len(turns):
        done = done[: len(turns)]
    embedder = get_embedder("use")
    if not (cache / "questions.npy").exists():
        np.save(cache / "questions.npy", np.asarray(embedder.embed(questions), dtype=np.float32))
    have = 0 if done is None else done.shape[0]
    parts = [] if done is None else [done]
    started = time.perf_counter()
    print(f"{len(turns)} distinct turns, {have} cached; embedding the rest", flush=True)
    for first in range(have, len(turns), chunk):
        batch = turns[first : first + chunk]
        parts.append(np.asarray(embedder.embed_batched(batch, 64), dtype=np.float32))
        matrix = np.concatenate(parts)
        parts = [matrix]
        tmp = cache / "turns.tmp.npy"
        np.save(tmp, matrix)
        tmp.replace(cache / "turns.npy")
        rate = (matrix.shape[0] - have) / (time.perf_counter() - started)
        print(f"  {matrix.shape[0]}/{len(turns)} ({rate:.0f}/s)", flush=True)
        meta = {
            "model": embedder.name,
            "source": data.name,
            "turns": int(matrix.shape[0]),
            "questions": len(questions),
            "done": matrix.shape[0] >= len(turns),
        }
        meta_path.write_text(json.dumps(meta, indent=1))


def load(cache: Path = DEFAULT_CACHE) -> tuple[np.ndarray, np.ndarray]:
    """(turn vectors, question vectors) of the cache; SystemExit with the command if absent."""
    try:
        return np.load(cache / "turns.npy"), np.load(cache / "questions.npy")
    except OSError:
        raise SystemExit(
            f"no real-vector cache in {cache}: run `.venv/bin/python benchmarks/real_vectors.py"
            f" --cache {cache}` first (~30 min: it embeds LongMemEval turns with USE)"
        ) from None


def replicate(real: np.ndarray, size: int, seed: int = 7) -> np.ndarray:
    """``size`` unit vectors: the real ones, then noisy copies of them (float32)."""
    rng = np.random.default_rng(seed)
    out = np.empty((size, real.shape[1]), dtype=np.float32)
    for first in range(0, size, real.shape[0]):
        count = min(real.shape[0], size - first)
        block = real[:count]
        if first:
            block = block + rng.normal(0.0, NOISE, block.shape).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[first : first + count] = block
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="LongMemEval JSON (default: shared dev150)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--max", type=int, help="embed at most N distinct turns")
    parser.add_argument("--chunk", type=int, default=2000)
    args = parser.parse_args()
    build(source_file(args.data), args.cache, args.max, args.chunk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
