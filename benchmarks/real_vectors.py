"""A cache of real embeddings for the scale benchmarks: USE vectors of LongMemEval text.

Run: ``.venv/bin/python benchmarks/real_vectors.py [--data FILE] [--cache DIR] [--max N]``

Random unit vectors say nothing about an ANN index's recall: real sentence
embeddings cluster, and HNSW (usearch, pgvector) is weakest there. This script
embeds the distinct haystack turns of a LongMemEval file (user and assistant
turns, cut to the embedder's 4,000 characters) and its questions with the
default embedder (USE, one thread) and keeps them in ``DIR``:

* ``turns.npy`` (N x 512 float32, L2-normalized) and ``questions.npy``;
* ``meta.json`` (model, source file, counts, done);
* ``extra.npy``: vectors added with ``--add-from DIR`` — the part files of a
  :mod:`vector_cache` directory (``retrieval_longmemeval.py`` fills
  ``benchmarks/results/cache/use-multilingual-v3`` with the USE vectors of every
  text it stores: turns titled by speaker, dev30 and dev150 haystacks), without
  duplicates of the turns or of each other, and without the questions themselves.

It resumes where it stopped (the turn matrix is written every ``--chunk`` texts),
so a long run can be interrupted. :func:`load` is what the benchmarks call (turns
and extra vectors); :func:`replicate` grows the real vectors to any size with
small Gaussian noise (a near-copy has cosine ~0.9 with its source; say so
wherever it is used).
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


def add_from(cache: Path, sources: list[Path]) -> int:
    """Add the vectors of ``sources`` (vector_cache part files) to ``extra.npy``; returns
    how many were new (not a turn's, not already there, not a question's own vector)."""
    known, questions = load(cache)
    extra_path = cache / "extra.npy"
    seen = {row.tobytes() for row in np.round(known, 4)}
    fresh: list[np.ndarray] = []
    for source in sources:
        for part in sorted(source.glob("part-*.npz")):
            with np.load(part) as data:
                vectors = np.asarray(data["vectors"], dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[1] != known.shape[1]:
                continue  # another model's vectors
            for row in vectors:
                key = np.round(row, 4).tobytes()
                if key not in seen:
                    seen.add(key)
                    fresh.append(row)
    if not fresh:
        return 0
    added = np.stack(fresh)
    added /= np.linalg.norm(added, axis=1, keepdims=True)
    # A question's own vector would be its exact first neighbour: not a haystack text.
    added = added[(added @ questions.T).max(axis=1) < 0.999]
    merged = np.concatenate([np.load(extra_path), added]) if extra_path.exists() else added
    tmp = cache / "extra.tmp.npy"
    np.save(tmp, merged.astype(np.float32))
    tmp.replace(extra_path)
    return int(added.shape[0])


def load(cache: Path = DEFAULT_CACHE) -> tuple[np.ndarray, np.ndarray]:
    """(turn vectors then extra vectors, question vectors) of the cache; SystemExit with
    the command if absent."""
    try:
        turns = np.load(cache / "turns.npy")
        if (cache / "extra.npy").exists():
            # Turns embedded after the extra vectors were added may be among them.
            extra = np.load(cache / "extra.npy")
            own = {row.tobytes() for row in np.round(turns, 4)}
            keep = [row.tobytes() not in own for row in np.round(extra, 4)]
            turns = np.concatenate([turns, extra[np.asarray(keep, dtype=bool)]])
        return turns, np.load(cache / "questions.npy")
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
    parser.add_argument(
        "--add-from",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="also keep the vectors of a vector_cache directory (repeatable)",
    )
    args = parser.parse_args()
    build(source_file(args.data), args.cache, args.max, args.chunk)
    for source in args.add_from:
        print(f"{source}: {add_from(args.cache, [source])} vectors added", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
