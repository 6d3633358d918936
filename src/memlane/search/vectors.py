"""In-memory vector index: exact cosine top-k over a contiguous float32 matrix.

The store's ``embeddings`` table is the source of truth; this index is a cache
of it for fast search (DESIGN §6): a ``(capacity, dim)`` float32 matrix whose
first ``len(index)`` rows are live, a parallel int64 id array, and a dict from id
to row. Rows are L2-normalized on the way in, so a search is one matrix-vector
product plus ``argpartition`` (measured 10k/100k/500k × 512: see the report in
the issue).

* :meth:`VectorIndex.add` upserts (an id already present is overwritten) and
  grows capacity geometrically, so incremental adds are amortized O(1) rows.
* :meth:`VectorIndex.remove` moves the last row into the hole: O(1) per id.
* :meth:`VectorIndex.save` / :meth:`VectorIndex.load` keep ``ids.npy``,
  ``vectors.npy`` and ``meta.json`` (model name, dim, count) in a directory; a
  cold CLI loads the matrix memory-mapped (read-only until the first change,
  which copies it into memory).
* Above ``ann_threshold`` vectors, and when ``usearch`` is installed
  (``pip install 'memlane[ann]'``), unfiltered searches go through an HNSW index
  built lazily from the matrix; filtered searches (``allowed_ids``) stay exact.

Not thread-safe: the worker serializes writes (or guards the index with a lock).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memlane.errors import NotFound, StoreError

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
DEFAULT_ANN_THRESHOLD = 500_000
_IDS_FILE = "ids.npy"
_VECTORS_FILE = "vectors.npy"
_META_FILE = "meta.json"
_MIN_CAPACITY = 64


def _usearch_available() -> bool:
    try:
        import usearch.index  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


class VectorIndex:
    """Exact cosine top-k over float32 vectors keyed by int64 memory ids."""

    def __init__(
        self,
        dim: int,
        model: str = "",
        *,
        ann_threshold: int | None = DEFAULT_ANN_THRESHOLD,
    ) -> None:
        """An empty index of ``dim``-dimensional vectors made by embedder ``model``.

        ``ann_threshold``: size above which unfiltered searches use usearch HNSW
        when it is importable (None: always exact).
        """
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim!r}")
        self.dim = dim
        self.model = model
        self.ann_threshold = ann_threshold
        self._matrix: NDArray[np.float32] = np.empty((0, dim), dtype=np.float32)
        self._ids: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._size = 0
        self._ann: Any = None  # usearch.index.Index once built

    def __len__(self) -> int:
        return self._size

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    def __repr__(self) -> str:
        return f"VectorIndex(dim={self.dim}, model={self.model!r}, size={self._size})"

    @property
    def ids(self) -> NDArray[np.int64]:
        """Ids of the live rows (a read-only view, in row order)."""
        view = self._ids[: self._size]
        view.flags.writeable = False
        return view

    def vector(self, memory_id: int) -> NDArray[np.float32]:
        """The stored (normalized) vector of ``memory_id``; KeyError if absent."""
        return np.array(self._matrix[self._row[memory_id]])

    # --- changes -------------------------------------------------------------------

    def _ensure_capacity(self, needed: int) -> None:
        capacity = self._matrix.shape[0]
        writable = isinstance(self._matrix, np.ndarray) and not isinstance(self._matrix, np.memmap)
        if needed <= capacity and writable and self._ids.flags.writeable:
            return
        new_capacity = max(needed, capacity + capacity // 2, _MIN_CAPACITY)
        matrix = np.empty((new_capacity, self.dim), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        ids = np.empty(new_capacity, dtype=np.int64)
        ids[: self._size] = self._ids[: self._size]
        self._matrix, self._ids = matrix, ids

    def add(self, ids: Sequence[int] | NDArray[np.integer[Any]], vectors: ArrayLike) -> None:
        """Insert or overwrite vectors: ``vectors`` is ``(len(ids), dim)``.

        Vectors are L2-normalized on the way in (all-zero vectors stay zero and
        never match). A repeated id within one call keeps its last vector.
        """
        id_array = np.asarray(ids, dtype=np.int64).reshape(-1)
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim == 1:
            matrix = matrix.reshape(1, -1)
        if matrix.shape != (len(id_array), self.dim):
            raise ValueError(
                f"expected vectors of shape ({len(id_array)}, {self.dim}), got {matrix.shape}"
            )
        if not len(id_array):
            return
        matrix = matrix.copy()
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)

        # Last occurrence wins for ids repeated within the call.
        _, last_rev = np.unique(id_array[::-1], return_index=True)
        keep = np.sort(len(id_array) - 1 - last_rev)
        id_array, matrix = id_array[keep], matrix[keep]
        id_list = id_array.tolist()
        existing = [pos for pos, memory_id in enumerate(id_list) if memory_id in self._row]
        fresh = np.ones(len(id_list), dtype=bool)
        fresh[existing] = False
        count = int(fresh.sum())
        # Also makes a memory-mapped (read-only) matrix writable before any change.
        self._ensure_capacity(self._size + count)
        if existing:
            rows = [self._row[id_list[pos]] for pos in existing]
            self._matrix[rows] = matrix[existing]
        if count:
            start, stop = self._size, self._size + count
            self._matrix[start:stop] = matrix[fresh]
            self._ids[start:stop] = id_array[fresh]
            for row, memory_id in enumerate(id_array[fresh].tolist(), start=start):
                self._row[memory_id] = row
            self._size = stop
        if self._ann is not None:
            self._ann_upsert(id_array, matrix)

    def remove(self, ids: Iterable[int]) -> int:
        """Remove ids (absent ones are ignored); returns how many were removed."""
        targets = [int(i) for i in ids if int(i) in self._row]
        if not targets:
            return 0
        self._ensure_capacity(self._size)  # a memory-mapped matrix becomes writable
        removed = 0
        for memory_id in targets:
            row = self._row.pop(memory_id, None)
            if row is None:
                continue
            last = self._size - 1
            if row != last:
                moved = int(self._ids[last])
                self._matrix[row] = self._matrix[last]
                self._ids[row] = moved
                self._row[moved] = row
            self._size -= 1
            removed += 1
        if self._ann is not None:
            for memory_id in targets:
                self._ann.remove(memory_id)
        return removed

    def clear(self) -> None:
        """Drop every vector (e.g. before re-embedding with another model)."""
        self._matrix = np.empty((0, self.dim), dtype=np.float32)
        self._ids = np.empty(0, dtype=np.int64)
        self._row = {}
        self._size = 0
        self._ann = None

    # --- search --------------------------------------------------------------------

    def search(
        self,
        query_vec: ArrayLike,
        k: int,
        allowed_ids: set[int] | frozenset[int] | NDArray[np.integer[Any]] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` ids most cosine-similar to ``query_vec``, best first.

        ``allowed_ids`` restricts candidates (e.g. one project's memories); ids not
        in the index are ignored. Returns ``(id, cosine)`` pairs, at most ``k``;
        ties are broken by row order. A zero query vector gives cosine 0 for all.
        """
        if k <= 0 or self._size == 0:
            return []
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise ValueError(f"query has dim {query.shape[0]}, index has dim {self.dim}")
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm

        if allowed_ids is None:
            if self._use_ann():
                return self._ann_search(query, k)
            rows: NDArray[np.int64] | None = None
            scores = self._matrix[: self._size] @ query
        else:
            rows = self._allowed_rows(allowed_ids)
            if rows.size == 0:
                return []
            scores = self._matrix[rows] @ query

        k = min(k, scores.shape[0])
        if k < scores.shape[0]:
            top = np.argpartition(-scores, k - 1)[:k]
        else:
            top = np.arange(scores.shape[0])
        top = top[np.lexsort((top, -scores[top]))]
        picked = top if rows is None else rows[top]
        return [
            (int(i), float(s))
            for i, s in zip(self._ids[picked].tolist(), scores[top].tolist(), strict=True)
        ]

    def _allowed_rows(
        self, allowed: set[int] | frozenset[int] | NDArray[np.integer[Any]]
    ) -> NDArray[np.int64]:
        """Sorted row numbers of the allowed ids present in the index."""
        count = len(allowed)
        if count <= max(1, self._size // 8):
            # A small filter: look the rows up one by one.
            found = [self._row[i] for i in (int(x) for x in allowed) if i in self._row]
            return np.array(sorted(set(found)), dtype=np.int64)
        wanted = (
            np.asarray(allowed, dtype=np.int64)
            if isinstance(allowed, np.ndarray)
            else np.fromiter(allowed, dtype=np.int64, count=count)
        )
        mask = np.isin(self._ids[: self._size], wanted)
        return np.flatnonzero(mask).astype(np.int64)

    # --- optional ANN (usearch) ----------------------------------------------------

    def _use_ann(self) -> bool:
        if self.ann_threshold is None or self._size <= self.ann_threshold:
            return False
        if self._ann is not None:
            return True
        if not _usearch_available():
            return False
        from usearch.index import Index  # type: ignore[import-not-found, unused-ignore]

        log.info("building HNSW index over %d vectors", self._size)
        index = Index(ndim=self.dim, metric="cos", dtype="f32")
        index.add(self._ids[: self._size].copy(), self._matrix[: self._size])
        self._ann = index
        return True

    def _ann_upsert(self, ids: NDArray[np.int64], matrix: NDArray[np.float32]) -> None:
        for memory_id in ids.tolist():
            if self._ann.contains(memory_id):
                self._ann.remove(memory_id)
        self._ann.add(ids, matrix)

    def _ann_search(self, query: NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        matches = self._ann.search(query, k)
        # usearch's "cos" metric returns a distance: 1 - cosine.
        return [
            (int(key), 1.0 - float(dist))
            for key, dist in zip(matches.keys.tolist(), matches.distances.tolist(), strict=True)
        ]

    # --- persistence ---------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` (created 0700, files 0600).

        Each file is written to a temporary name and renamed, so a concurrent
        reader sees the old or the new file, never a partial one; ``meta.json``
        (written last) records the count, which :meth:`load` checks.
        """
        directory = Path(path)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        size = self._size
        self._atomic_npy(directory / _IDS_FILE, np.ascontiguousarray(self._ids[:size]))
        self._atomic_npy(directory / _VECTORS_FILE, np.ascontiguousarray(self._matrix[:size]))
        meta = {"format": FORMAT_VERSION, "model": self.model, "dim": self.dim, "count": size}
        self._atomic_write(directory / _META_FILE, json.dumps(meta).encode("utf-8"))

    @staticmethod
    def _atomic_npy(target: Path, array: NDArray[Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                np.save(handle, array, allow_pickle=False)
            os.chmod(tmp, 0o600)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _atomic_write(target: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, 0o600)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        mmap: bool = True,
        *,
        model: str | None = None,
        ann_threshold: int | None = DEFAULT_ANN_THRESHOLD,
    ) -> VectorIndex:
        """Load an index saved by :meth:`save`.

        ``mmap``: map the matrix read-only instead of reading it (fast cold start;
        the first change copies it into memory). ``model``: when given, raise
        :class:`~memlane.errors.StoreError` if the saved vectors were made by another
        model (they must be recomputed, not mixed). Raises
        :class:`~memlane.errors.NotFound` when nothing was saved there and
        ``StoreError`` when the files disagree with each other (rebuild).
        """
        directory = Path(path)
        meta_path = directory / _META_FILE
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotFound(
                f"no vector index in {directory} (missing {_META_FILE}; "
                "run `memlane embed --backfill` to build one)"
            ) from None
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"vector index in {directory} has unknown format {meta.get('format')!r}"
            )
        saved_model = str(meta.get("model", ""))
        if model is not None and saved_model != model:
            raise StoreError(
                f"vector index in {directory} was built with model {saved_model!r}, "
                f"not {model!r}: re-embed (memlane embed --backfill)"
            )
        dim = int(meta["dim"])
        ids = np.load(directory / _IDS_FILE, allow_pickle=False)
        matrix = np.load(
            directory / _VECTORS_FILE, mmap_mode="r" if mmap else None, allow_pickle=False
        )
        count = int(meta["count"])
        if ids.shape != (count,) or matrix.shape != (count, dim) or matrix.dtype != np.float32:
            raise StoreError(
                f"vector index in {directory} is inconsistent (meta count {count}, dim {dim}; "
                f"ids {ids.shape}, vectors {matrix.shape} {matrix.dtype}): rebuild it"
            )
        index = cls(dim, saved_model, ann_threshold=ann_threshold)
        index._ids = ids.astype(np.int64, copy=False)
        index._matrix = matrix
        index._size = count
        index._row = {int(memory_id): row for row, memory_id in enumerate(ids.tolist())}
        if len(index._row) != count:
            raise StoreError(f"vector index in {directory} has duplicate ids: rebuild it")
        if not mmap:
            index._ids.flags.writeable = True
        return index
