"""Reading an index file: its shape checked, its vectors planned.

Shared by ``memlane import index`` (:mod:`memlane.interop.index`) and the
JSONL store import, which takes the vectors of an index kept next to the
store's files (:mod:`memlane.interop.jsonl_store`). The format is described in
:mod:`memlane.interop.index`; what happens to the vectors in
:mod:`memlane.interop.index_vectors`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlane.errors import InvalidInput
from memlane.interop import decode
from memlane.interop.index_vectors import BACKFILL_HINT, VectorPlan, plan_vectors
from memlane.privacy import excerpt
from memlane.search.model_names import dimensions

INDEX_FORMAT = "memlane-index"
INDEX_VERSION = 1


@dataclass(frozen=True, slots=True)
class IndexFile:
    """An index read from disk: its metadata, entries, and what to do with its vectors."""

    path: Path
    metadata: dict[str, Any]
    entries: list[Any]
    dim: int | None  # declared, else the first vector's size
    plan: VectorPlan


def _numbers(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    )


def embedding(value: Any, dim: int | None) -> bytes | None:
    """An entry's ``embedding`` as float32 bytes (None when it has none); checks the size."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise InvalidInput("'embedding' must be a list of numbers")
    if not _numbers(value):
        raise InvalidInput("'embedding' must hold numbers only")
    if dim is not None and len(value) != dim:
        raise InvalidInput(f"'embedding' has {len(value)} dimensions, the index says {dim}")
    # JSON as Python reads it spells NaN and Infinity; 1e39 or 10**400 are past float32.
    # One such number would make every similarity with the vector NaN or infinite.
    try:
        with np.errstate(over="ignore"):
            vector = np.asarray(value, dtype=np.float32)
        finite = bool(np.isfinite(vector).all())
    except OverflowError:  # an int past a float
        finite = False
    if not finite:
        raise InvalidInput("'embedding' must hold finite numbers that fit a 32-bit float")
    return vector.tobytes()


def vector_problem(model: str, blob: bytes) -> str | None:
    """Why float32 ``blob`` cannot be a stored vector of ``model``, or None: a model
    memlane knows has its own size (one vector of another made the vector table, and
    every hybrid search, fail), and no number may be NaN or infinite."""
    expected = dimensions(model)
    if expected is not None and len(blob) != 4 * expected:
        return f"has {len(blob) // 4} dimensions, not {expected}"
    if not np.isfinite(np.frombuffer(blob, dtype="<f4")).all():
        return "holds NaN or infinite numbers"
    return None


def looks_like_index(document: Any) -> bool:
    """Whether a parsed JSON document has an index's shape."""
    return isinstance(document, dict) and isinstance(document.get("vectors"), list)


def read_index(path: str | Path, *, embedder: str, with_vectors: bool = True) -> IndexFile:
    """Read and check the index at ``path`` and plan its vectors (raises InvalidInput).

    ``embedder`` is the configured one (``Settings.embedder``); ``with_vectors``
    false leaves every vector out.
    """
    file = decode.input_file(path)
    try:
        with file.open("r", encoding="utf-8") as handle:
            document = decode.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); nothing imported") from None
    if not looks_like_index(document):
        raise InvalidInput(f"{path} is not an index: expected {{'metadata': …, 'vectors': [...]}}")
    meta = document.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InvalidInput("the index 'metadata' must be an object")
    fmt = meta.get("format", INDEX_FORMAT)
    if fmt != INDEX_FORMAT or meta.get("version", INDEX_VERSION) != INDEX_VERSION:
        raise InvalidInput(
            f"unsupported index format {excerpt(fmt)} version {excerpt(meta.get('version'))}"
        )
    entries: list[Any] = document["vectors"]
    vectors = [e for e in entries if isinstance(e, dict) and _numbers(e.get("embedding"))]
    declared = meta.get("dimensions", meta.get("dimension"))
    dim = declared if isinstance(declared, int) and declared > 0 else None
    if dim is None and vectors:
        dim = len(vectors[0]["embedding"])
    named = meta.get("embedding_model", meta.get("model"))
    sample = [
        (e["text"], e["embedding"])
        for e in vectors
        if isinstance(e.get("text"), str) and e["text"].strip() and len(e["embedding"]) == dim
    ]
    if not with_vectors:
        plan = VectorPlan(None, f"vectors left out, as asked; {BACKFILL_HINT}")
    else:
        plan = plan_vectors(
            embedder,
            named=named if isinstance(named, str) and named else None,
            dim=dim,
            sample=sample,
        )
    if not vectors:
        plan = VectorPlan(None)  # nothing to keep or to say
    return IndexFile(file, meta, entries, dim, plan)
