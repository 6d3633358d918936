"""Keep vectors in step with memories: backfill embeddings, and a vector table for search.

Two jobs, both about the ``embeddings`` table (the source of truth, DESIGN §4):

* :func:`embed_missing` embeds every memory that has no vector for the
  embedder's model, in batches, each batch committed on its own: interrupt it
  and the next run resumes where it stopped. The model name and dimension are
  stored with each vector, so switching models simply finds every memory
  "missing" again and re-embeds it; the old model's vectors are dropped once the
  new model covers everything (:func:`drop_other_models`).
* :class:`VectorTable` is the in-memory copy search uses on SQLite: a
  contiguous float32 matrix plus per-row filter keys (project, kind, type,
  creation time), so that project scope, ``as_of`` and kind filters are numpy
  masks instead of SQL. It syncs incrementally (rows with a higher memory id
  than it has seen) and reloads fully when the row count drifts (deletions,
  re-embedded edits). A warm process (the worker) keeps one for its lifetime;
  a cold one (the CLI) starts from a memory-mapped ``.npy`` cache of it
  (:meth:`VectorTable.save` / :meth:`VectorTable.load`) and syncs the rest.

numpy is imported here at module level: never import this module on the hook path.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlane.models import MemoryFilter, to_epoch
from memlane.paths import ensure_private_dir

if TYPE_CHECKING:
    from memlane.search.embedder import Embedder
    from memlane.store.base import Store

log = logging.getLogger(__name__)

# Longest text given to the embedder: the head of a long memory carries its topic,
# and embedding cost grows with length (USE: ~40 turns/s at ~1000 chars).
EMBED_MAX_CHARS = 4000
DEFAULT_BATCH = 64
SYNC_BATCH = 5000
# How often a long-lived table re-checks its row count against the store.
RECHECK_SECONDS = 30.0
CACHE_FORMAT = 1
_ARRAYS = ("ids", "matrix", "project", "kind", "type", "created")


@dataclass(frozen=True, slots=True)
class EmbedReport:
    """What :func:`embed_missing` did."""

    model: str
    dim: int
    embedded: int
    remaining: int
    seconds: float
    dropped_other_models: int = 0

    @property
    def per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


def missing_count(store: Store, model: str) -> int:
    """How many memories have no vector for ``model``."""
    total = store.count_memories(MemoryFilter())
    return max(0, total - store.embedding_counts().get(model, 0))


def drop_other_models(store: Store, model: str) -> int:
    """Delete vectors of every model but ``model``; returns how many were deleted."""
    dropped = 0
    for other in store.embedding_counts():
        if other != model:
            dropped += store.delete_embeddings(other)
    return dropped


def embed_missing(
    store: Store,
    embedder: Embedder,
    *,
    batch: int = DEFAULT_BATCH,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    drop_old: bool = True,
) -> EmbedReport:
    """Embed memories without a vector for ``embedder``, ``batch`` at a time.

    ``progress(done, total)`` is called after each committed batch. ``limit``
    caps how many are embedded in this call; ``should_stop()`` is polled between
    batches. When nothing is left missing and ``drop_old``, vectors of other
    models are deleted (they can never be searched with this embedder).
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch!r}")
    started = time.perf_counter()
    total = missing_count(store, embedder.name)
    if limit is not None:
        total = min(total, limit)
    done = 0
    while limit is None or done < limit:
        if should_stop is not None and should_stop():
            break
        size = batch if limit is None else min(batch, limit - done)
        rows = store.missing_embeddings(embedder.name, size)
        if not rows:
            break
        vectors = np.asarray(
            embedder.embed([text[:EMBED_MAX_CHARS] for _, text in rows]), dtype="<f4"
        )
        store.put_embeddings(
            embedder.name,
            embedder.dim,
            [(mid, vectors[i].tobytes()) for i, (mid, _) in enumerate(rows)],
        )
        done += len(rows)
        if progress is not None:
            progress(done, max(total, done))
    remaining = missing_count(store, embedder.name)
    dropped = drop_other_models(store, embedder.name) if drop_old and remaining == 0 else 0
    return EmbedReport(
        model=embedder.name,
        dim=embedder.dim,
        embedded=done,
        remaining=remaining,
        seconds=time.perf_counter() - started,
        dropped_other_models=dropped,
    )


def _matvec(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ vector`` in numpy's own single-threaded loop.

    Not BLAS: OpenBLAS runs a matrix-vector product on all cores, and on a busy
    machine waking its threads costs a scheduler slice — measured median 28 ms
    instead of 0.2 ms for 10k x 512 under load. Capping BLAS to one thread would
    need a process-wide lock the background embedder holds for whole batches.
    einsum has no threads and no temporary: 0.5 ms for 10k x 512 either way.
    """
    result: NDArray[np.float32] = np.einsum("ij,j->i", matrix, vector)
    return result


class _Codes:
    """Small string → int code book for the filter columns."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        found = self.codes.get(value)
        if found is None:
            found = self.codes[value] = len(self.codes)
        return found

    def lookup(self, values: Sequence[str]) -> list[int]:
        return [self.codes[v] for v in values if v in self.codes]


class VectorTable:
    """The vectors of one model with filter keys per row; exact cosine top-k.

    Rows are L2-normalized float32 (the store keeps them normalized already; they
    are normalized again on the way in so a foreign row cannot skew scores).
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.dim = 0
        self._size = 0
        self._ids: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self._matrix: NDArray[np.float32] = np.empty((0, 0), dtype=np.float32)
        self._project: NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self._kind: NDArray[np.int16] = np.empty(0, dtype=np.int16)
        self._type: NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self._created: NDArray[np.float64] = np.empty(0, dtype=np.float64)
        self._row: dict[int, int] = {}
        self._projects, self._kinds, self._types = _Codes(), _Codes(), _Codes()
        self._max_id = 0
        self._checked_at = 0.0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    # -- keeping in sync ------------------------------------------------------------

    def sync(self, store: Store, *, recheck_seconds: float = RECHECK_SECONDS) -> int:
        """Load rows added since the last sync; reload all when the count drifted.

        Returns how many rows were added. Cheap when nothing changed: one indexed
        query (plus a count every ``recheck_seconds``).
        """
        added = self._load_tail(store)
        now = time.monotonic()
        if now - self._checked_at >= recheck_seconds:
            self._checked_at = now
            stored = store.embedding_counts().get(self.model, 0)
            if stored != self._size:
                log.info(
                    "vector table for %s has %d rows, the store %d: reloading",
                    self.model,
                    self._size,
                    stored,
                )
                self.clear()
                added = self._load_tail(store)
        return added

    def _load_tail(self, store: Store) -> int:
        added = 0
        for batch in store.iter_embeddings(self.model, after_id=self._max_id, batch=SYNC_BATCH):
            ids = [mid for mid, _ in batch]
            self._max_id = max(self._max_id, ids[-1])
            keys = {k[0]: k for k in store.memory_keys(ids)}
            keep = [(mid, blob) for mid, blob in batch if mid in keys]
            if not keep:
                continue
            dim = len(keep[0][1]) // 4
            vectors = np.frombuffer(b"".join(blob for _, blob in keep), dtype="<f4")
            matrix = vectors.reshape(len(keep), dim)
            self.add([keys[mid] for mid, _ in keep], matrix)
            added += len(keep)
        return added

    def clear(self) -> None:
        """Forget every row (the next sync reloads from the store)."""
        self.__init__(self.model)  # type: ignore[misc]

    def _grow(self, needed: int, dim: int) -> None:
        capacity = self._ids.shape[0]
        if self.dim == 0:
            self.dim = dim
        if needed <= capacity:
            return
        new = max(needed, capacity + capacity // 2, 256)

        def grown(array: NDArray[Any], shape: tuple[int, ...]) -> NDArray[Any]:
            out = np.empty(shape, dtype=array.dtype)
            out[: self._size] = array[: self._size]
            return out

        self._ids = grown(self._ids, (new,))
        self._matrix = grown(
            self._matrix if self._matrix.shape[1:] == (dim,) else np.empty((0, dim), np.float32),
            (new, dim),
        )
        self._project = grown(self._project, (new,))
        self._kind = grown(self._kind, (new,))
        self._type = grown(self._type, (new,))
        self._created = grown(self._created, (new,))

    def add(self, keys: Sequence[tuple[int, str, str, str, float]], vectors: Any) -> None:
        """Upsert rows: ``keys`` are (id, project, kind, type, created epoch) per vector."""
        matrix = np.array(vectors, dtype=np.float32, copy=True).reshape(len(keys), -1)
        if not len(keys):
            return
        if self.dim and matrix.shape[1] != self.dim:
            raise ValueError(f"vectors of dim {matrix.shape[1]} in a table of dim {self.dim}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        fresh = sum(1 for key in keys if key[0] not in self._row)
        self._grow(self._size + fresh, matrix.shape[1])
        for i, (mid, project, kind, type_, created) in enumerate(keys):
            row = self._row.get(mid)
            if row is None:
                row = self._size
                self._size += 1
                self._row[mid] = row
                self._ids[row] = mid
            self._matrix[row] = matrix[i]
            self._project[row] = self._projects.code(project)
            self._kind[row] = self._kinds.code(kind)
            self._type[row] = self._types.code(type_)
            self._created[row] = created
            self._max_id = max(self._max_id, mid)

    def remove(self, ids: Sequence[int]) -> int:
        """Drop rows (e.g. of memories found deleted); returns how many were removed."""
        removed = 0
        for mid in ids:
            row = self._row.pop(int(mid), None)
            if row is None:
                continue
            last = self._size - 1
            if row != last:
                moved = int(self._ids[last])
                for array in (
                    self._ids,
                    self._matrix,
                    self._project,
                    self._kind,
                    self._type,
                    self._created,
                ):
                    array[row] = array[last]
                self._row[moved] = row
            self._size -= 1
            removed += 1
        return removed

    # -- search -----------------------------------------------------------------------

    def _mask(self, flt: MemoryFilter) -> NDArray[np.bool_] | None:
        n = self._size
        mask: NDArray[np.bool_] | None = None

        def both(part: NDArray[np.bool_]) -> NDArray[np.bool_]:
            return part if mask is None else mask & part

        for values, codes, column in (
            (flt.projects, self._projects, self._project[:n]),
            (flt.kinds, self._kinds, self._kind[:n]),
            (flt.types, self._types, self._type[:n]),
        ):
            if values is not None:
                wanted = codes.lookup(values)
                part = (
                    np.isin(column, wanted)
                    if len(wanted) > 1
                    else column == (wanted[0] if wanted else -1)
                )
                mask = both(part)
        if flt.created_after is not None:
            mask = both(self._created[:n] >= to_epoch(flt.created_after))
        if flt.created_before is not None:
            mask = both(self._created[:n] < to_epoch(flt.created_before))
        return mask

    def search(self, query: Any, k: int, flt: MemoryFilter) -> list[tuple[int, float]]:
        """The ``k`` rows passing ``flt`` most cosine-similar to ``query``: (id, cosine).

        Supports the filter's projects, kinds, types and time bounds (the fields
        search uses); other fields are ignored.
        """
        if k <= 0 or self._size == 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm > 0:
            q = q / norm
        mask = self._mask(flt)
        rows: NDArray[np.int64] | None = None
        # Matrix-vector products go through _matvec (einsum), not BLAS: see there.
        if mask is not None:
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                return []
            if rows.size * 4 < self._size:
                scores = _matvec(self._matrix[rows], q)  # few rows: gather them
            else:
                scores = _matvec(self._matrix[: self._size], q)[rows]
        else:
            scores = _matvec(self._matrix[: self._size], q)
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(k)
        top = top[np.argsort(-scores[top], kind="stable")]
        picked = top if rows is None else rows[top]
        return list(
            zip(self._ids[picked].tolist(), scores[top].astype(np.float64).tolist(), strict=True)
        )

    def cosines(self, query: Any, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of ``query`` with each of ``ids`` that has a row."""
        rows = [(mid, self._row[mid]) for mid in ids if mid in self._row]
        if not rows:
            return {}
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm > 0:
            q = q / norm
        scores = _matvec(self._matrix[[row for _, row in rows]], q)
        return {mid: float(s) for (mid, _), s in zip(rows, scores.tolist(), strict=True)}

    # -- cache for cold processes -------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Write the table to ``directory`` (0700; files 0600) for :meth:`load`.

        Arrays go to files named by a fresh generation id, then ``meta.json`` (which
        names the generation) is replaced atomically, so a concurrent reader sees the
        old or the new table, never a mix. Older generations are removed.
        """
        ensure_private_dir(directory.parent)
        ensure_private_dir(directory)
        generation = uuid.uuid4().hex[:12]
        n = self._size
        arrays = {
            "ids": self._ids[:n],
            "matrix": self._matrix[:n],
            "project": self._project[:n],
            "kind": self._kind[:n],
            "type": self._type[:n],
            "created": self._created[:n],
        }
        for name, array in arrays.items():
            target = directory / f"{name}-{generation}.npy"
            with target.open("wb") as handle:
                np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
            os.chmod(target, 0o600)
        meta = {
            "format": CACHE_FORMAT,
            "model": self.model,
            "dim": self.dim,
            "count": n,
            "max_id": self._max_id,
            "generation": generation,
            "projects": self._projects.codes,
            "kinds": self._kinds.codes,
            "types": self._types.codes,
        }
        fd, tmp = tempfile.mkstemp(prefix="meta", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(meta, handle)
        os.chmod(tmp, 0o600)
        os.replace(tmp, directory / "meta.json")
        for old in directory.glob("*-*.npy"):
            if not old.name.endswith(f"-{generation}.npy"):
                old.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, model: str) -> VectorTable | None:
        """The table saved in ``directory`` for ``model``, memory-mapped; None if unusable.

        The arrays are mapped copy-on-write: searching reads the file pages lazily,
        and a later change copies only what it touches into memory.
        """
        try:
            meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
            if meta.get("format") != CACHE_FORMAT or meta.get("model") != model:
                return None
            generation = str(meta["generation"])
            loaded = {
                name: np.load(directory / f"{name}-{generation}.npy", mmap_mode="c")
                for name in _ARRAYS
            }
        except (OSError, ValueError, KeyError) as exc:
            log.info(
                "vector cache in %s is not usable (%s): loading from the store", directory, exc
            )
            return None
        count = int(meta["count"])
        if any(array.shape[0] != count for array in loaded.values()):
            log.info("vector cache in %s is inconsistent: loading from the store", directory)
            return None
        table = cls(model)
        table.dim = int(meta["dim"])
        table._size = count
        table._ids = loaded["ids"]
        table._matrix = loaded["matrix"]
        table._project = loaded["project"]
        table._kind = loaded["kind"]
        table._type = loaded["type"]
        table._created = loaded["created"]
        table._row = {int(mid): row for row, mid in enumerate(table._ids.tolist())}
        table._max_id = int(meta["max_id"])
        table._projects.codes = {str(k): int(v) for k, v in meta["projects"].items()}
        table._kinds.codes = {str(k): int(v) for k, v in meta["kinds"].items()}
        table._types.codes = {str(k): int(v) for k, v in meta["types"].items()}
        return table
