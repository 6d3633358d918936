"""A content-addressed cache of embedding vectors for benchmarks.

Embedding every turn of a benchmark with the default model takes tens of minutes
on a small machine, and most benchmark runs embed exactly the same texts again.
:class:`CachedEmbedder` wraps a real :class:`~memlane.search.embedder.Embedder`
(same ``name`` and ``dim``, so the vectors it returns are stored under the
model's own name) and keys each vector by the model name and the SHA-256 of the
exact text it was asked to embed: a changed text (e.g. a speaker prefix) is a
new key, never a stale vector.

On disk: ``<directory>/<model>/part-*.npz``, each part holding ``keys`` (SHA-256
digests as uint8 rows) and ``vectors`` (float32). New vectors are flushed to a new part every
``flush_every`` vectors, so an interrupted cold run keeps what it computed.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memlane.search.embedder import Embedder


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder(Embedder):
    """``inner`` with a persistent vector cache (see the module docstring)."""

    def __init__(self, inner: Embedder, directory: Path, *, flush_every: int = 2048) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.directory = directory / _safe(inner.name)
        self.flush_every = flush_every
        self.hits = 0
        self.misses = 0
        self._rows: dict[bytes, np.ndarray[Any, np.dtype[np.float32]]] = {}
        self._pending: dict[bytes, np.ndarray[Any, np.dtype[np.float32]]] = {}
        self._load()

    def __len__(self) -> int:
        return len(self._rows)

    def _load(self) -> None:
        if not self.directory.is_dir():
            return
        for part in sorted(self.directory.glob("part-*.npz")):
            with np.load(part) as data:
                keys, vectors = data["keys"], data["vectors"]
            if vectors.ndim != 2 or vectors.shape[1] != self.dim:
                continue  # written by another version of the model: ignore
            for key, vector in zip(keys, vectors, strict=True):
                self._rows[key.tobytes()] = vector

    def embed(self, texts: Sequence[str]) -> Any:
        keys = [_digest(text) for text in texts]
        todo = sorted({i for i, key in enumerate(keys) if key not in self._rows})
        # The same text twice in one batch is embedded once.
        first: dict[bytes, int] = {}
        for i in todo:
            first.setdefault(keys[i], i)
        if first:
            fresh = self.inner.embed([texts[i] for i in first.values()])
            for key, vector in zip(first, fresh, strict=True):
                row = np.asarray(vector, dtype=np.float32)
                self._rows[key] = row
                self._pending[key] = row
            if len(self._pending) >= self.flush_every:
                self.flush()
        self.misses += len(first)
        self.hits += len(texts) - len(first)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = self._rows[key]
        return out

    def embed_query(self, text: str) -> Any:
        # Asymmetric models (e5) embed queries differently: key them apart.
        if type(self.inner).embed_query is Embedder.embed_query:
            return self.embed([text])[0]
        return self.inner.embed_query(text)

    def flush(self) -> None:
        """Write the vectors computed since the last flush to a new part file."""
        if not self._pending:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"part-{time.time_ns()}-{os.getpid()}.npz"
        tmp = self.directory / (name + ".tmp")
        # uint8 rows, not "S32": numpy's bytes dtype drops trailing NUL bytes.
        keys = np.frombuffer(b"".join(self._pending), dtype=np.uint8).reshape(-1, 32)
        vectors = np.stack(list(self._pending.values())).astype(np.float32)
        with tmp.open("wb") as handle:
            np.savez(handle, keys=keys, vectors=vectors)
        tmp.replace(self.directory / name)
        self._pending.clear()
