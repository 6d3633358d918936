"""The vector table search uses on SQLite: float32 rows, filter keys, exact or ANN top-k.

The ``embeddings`` table is the source of truth (DESIGN §4); this is its
searchable copy, in two parts:

* the **base**: the rows of the last saved *generation* (see :func:`save`),
  memory-mapped from the cache directory — a float32 matrix, the memory ids
  (-1 for a hole), filter keys per row (project, kind, type codes; creation
  time), the ids' sort order for lookups, and, from ``ann_threshold`` rows on,
  an HNSW graph (:mod:`memlane.search.ann`). Nothing of it is read at start:
  pages come in as searches touch them. Rows removed since are marked dead.
* the **tail**: rows added or re-embedded since that generation, in memory,
  always searched exactly.

It stays current through the store's vector change log (:class:`VectorLog`):
:meth:`VectorTable.sync` asks for the sequence number (one indexed lookup per
search) and replays the ids logged since — each id's current vector and keys
are re-read, so a deleted memory or an edited one that lost its vector leaves
the table before the next search, and a re-embedded one is replaced.

A search restricted to fewer than ``ann_threshold`` rows is an exact scan of
those rows; a larger one walks the graph for more candidates than asked for
(in proportion to the share of rows the filter allows), keeps those the
filter allows, widens the walk when too few survive, and re-scores them
exactly. Below the threshold no graph is built at all. Measured (CPU per
query, 512-d): an exact top-100 takes 0.9 ms at 5k rows, 3.2 ms at 20k, 7.6 ms
at 50k, 15 ms at 100k; the graph walk for 141 candidates and their re-scoring
~0.6 ms at 100k. At 20k the graph would save ~2.5 ms of a ~20 ms hybrid search,
not worth its build time and memory; past it the scan grows linearly.

Generations are written whole or not at all: arrays under names carrying the
generation, then ``meta.json`` replaced atomically. The float32 matrix is the
exception that makes saving cheap: one file that only grows (a generation
records how many of its rows it owns) until holes pass a fifth of it and a
new file is written. numpy is imported here: never import this module on the
hook path.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import mmap
import os
import tempfile
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlane.models import MemoryFilter, to_epoch
from memlane.paths import ensure_private_dir
from memlane.search.ann import AnnIndex
from memlane.search.model_names import dimensions

if TYPE_CHECKING:
    from memlane.store.base import Store, VectorLog

log = logging.getLogger(__name__)

FORMAT = 2
ANN_THRESHOLD = 20_000  # the engine keeps the same default (keyword search imports no numpy)
SYNC_BATCH = 5_000
# Scattered row reads with pread up to this many runs; past it, through the map.
MAX_READS = 512
# Rows scanned through the map before their pages are released (8 MB at 512-d).
SCAN_BLOCK = 4096
# A rewrite (instead of an append) once holes pass this share of the base.
REWRITE_HOLES = 0.2
_KEY_ARRAYS = ("ids", "order", "sorted", "project", "kind", "type", "created")


def _matvec(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ vector`` in numpy's own single-threaded loop.

    Not BLAS: OpenBLAS runs a matrix-vector product on all cores, and on a busy
    machine waking its threads costs a scheduler slice — measured median 28 ms
    instead of 0.2 ms for 10k x 512 under load. einsum has no threads and no
    temporary: 0.5 ms for 10k x 512 either way.
    """
    result: NDArray[np.float32] = np.einsum("ij,j->i", matrix, vector)
    return result


def _unit(vector: Any) -> NDArray[np.float32]:
    q = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q


def _top(scores: NDArray[np.float32], k: int) -> NDArray[np.int64]:
    """Positions of the ``k`` highest scores, highest first (ties: lower position)."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(k)
    return top[np.lexsort((top, -scores[top]))].astype(np.int64)


def _map_rows(path: Path, rows: int, dim: int) -> tuple[mmap.mmap, NDArray[np.float32]]:
    """The first ``rows`` float32 rows of ``path``, memory-mapped read-only (and the map).

    Marked for random access: a search reads a few hundred scattered rows, and
    the kernel's default read-ahead would page in ~128 KB around each (measured:
    half of a 100k-row matrix resident after 20 searches instead of a few MB).
    """
    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), rows * dim * 4, access=mmap.ACCESS_READ)
    if hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_RANDOM)
    return mapped, np.frombuffer(mapped, dtype="<f4").reshape(rows, dim)


class _Codes:
    """Small string → int code book for the filter columns."""

    def __init__(self, codes: dict[str, int] | None = None) -> None:
        self.codes: dict[str, int] = dict(codes or {})

    def code(self, value: str) -> int:
        found = self.codes.get(value)
        if found is None:
            found = self.codes[value] = len(self.codes)
        return found

    def lookup(self, values: Sequence[str]) -> list[int]:
        return [self.codes[v] for v in values if v in self.codes]


class _Columns:
    """Parallel arrays of rows: ids, float32 vectors and filter keys."""

    def __init__(self, dim: int, capacity: int = 0) -> None:
        self.ids: NDArray[np.int64] = np.empty(capacity, dtype=np.int64)
        # Saved bases only: the rows in id order, and the ids in that order (lookups).
        self.order: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self.sorted: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self.matrix: NDArray[np.float32] = np.empty((capacity, dim), dtype=np.float32)
        self.project: NDArray[np.int32] = np.empty(capacity, dtype=np.int32)
        self.kind: NDArray[np.int32] = np.empty(capacity, dtype=np.int32)
        self.type: NDArray[np.int32] = np.empty(capacity, dtype=np.int32)
        self.created: NDArray[np.float64] = np.empty(capacity, dtype=np.float64)

    def arrays(self) -> tuple[NDArray[Any], ...]:
        return (self.ids, self.matrix, self.project, self.kind, self.type, self.created)

    def grow(self, size: int, needed: int) -> None:
        capacity = self.ids.shape[0]
        if needed <= capacity:
            return
        new = max(needed, capacity + capacity // 2, 256)
        for name in ("ids", "matrix", "project", "kind", "type", "created"):
            old = getattr(self, name)
            grown = np.empty((new, *old.shape[1:]), dtype=old.dtype)
            grown[:size] = old[:size]
            setattr(self, name, grown)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class _Base:
    """One saved generation, memory-mapped (read-only)."""

    generation: str
    matrix_file: str
    columns: _Columns
    ann: AnnIndex | None
    fd: int = -1  # the float32 file, open for scattered reads (closed with the base)
    mapped: mmap.mmap | None = None  # the float32 file's map (columns.matrix views it)

    @property
    def rows(self) -> int:
        return int(self.columns.ids.shape[0])

    def scores(self, q: NDArray[np.float32], rows: NDArray[np.int64] | None) -> NDArray[np.float32]:
        """Exact cosines of ``q`` with the rows ``rows`` (ascending; None: every row).

        The worker's RSS must not grow with the pages searches touch: a mapped
        page stays counted once faulted in (with up to 64 KB of cached neighbours,
        the kernel's fault-around). So a span — one project's rows, or all of
        them — is scanned through the map and its pages are dropped from the
        process right after (the page cache keeps them warm; measured at 100k
        rows: 3 ms for a 10k-row project instead of 16 ms copying it out with
        ``pread``); a few hundred scattered rows (re-scoring) are copied out with
        ``pread``, one call per run of consecutive rows.
        """
        matrix = self.columns.matrix
        if rows is None:
            return self._scan(q, 0, matrix.shape[0])
        if rows.size == 0:
            return np.empty(0, dtype=np.float32)
        first, last = int(rows[0]), int(rows[-1])
        if last - first + 1 <= 2 * rows.size:  # dense (one project's span)
            return self._scan(q, first, last + 1)[rows - first]
        if rows.size * 4 >= matrix.shape[0]:  # many, scattered: one pass over all
            return self._scan(q, 0, matrix.shape[0])[rows]
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        if self.fd < 0 or breaks.size > MAX_READS or not hasattr(os, "preadv"):
            # Rows all over the file: one call each would cost more than the faults.
            scores = _matvec(np.ascontiguousarray(matrix[rows]), q)
            self._release(first, last + 1)
            return scores
        dim = int(matrix.shape[1])
        width = dim * 4
        out = np.empty((rows.size, dim), dtype=np.float32)
        view = out.data.cast("B")
        for start, stop in zip([0, *breaks.tolist()], [*breaks.tolist(), rows.size], strict=True):
            want = (stop - start) * width
            got = os.preadv(self.fd, [view[start * width : stop * width]], int(rows[start]) * width)
            if got != want:
                raise OSError(f"short read of the vector file ({got} of {want} bytes)")
        return _matvec(out, q)

    def _scan(self, q: NDArray[np.float32], start: int, stop: int) -> NDArray[np.float32]:
        """Cosines of rows ``start:stop`` through the map, releasing each block after it."""
        matrix = self.columns.matrix
        out = np.empty(stop - start, dtype=np.float32)
        for first in range(start, stop, SCAN_BLOCK):
            end = min(stop, first + SCAN_BLOCK)
            out[first - start : end - start] = _matvec(matrix[first:end], q)
            self._release(first, end)
        return out

    def _release(self, start: int, stop: int) -> None:
        """Drop the pages of rows ``start:stop`` from the process (not from the page cache)."""
        mapped = self.mapped
        if mapped is None or not hasattr(mapped, "madvise") or stop <= start:
            return
        width = int(self.columns.matrix.shape[1]) * 4
        low = start * width // mmap.PAGESIZE * mmap.PAGESIZE
        mapped.madvise(mmap.MADV_DONTNEED, low, stop * width - low)


class VectorTable:
    """The vectors of one model with filter keys per row; cosine top-k (exact or ANN).

    Rows are L2-normalized float32 (normalized again on the way in so that a
    foreign row cannot skew scores). Not thread-safe: the search engine holds a
    lock around every use.
    """

    def __init__(self, model: str, *, ann_threshold: int = ANN_THRESHOLD) -> None:
        self.model = model
        self.dim = 0
        self.ann_threshold = ann_threshold
        self.mark = 0  # the store's change-log sequence this table reflects
        self.identity = ""
        self._base: _Base | None = None
        self._dead: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._dead_count = 0
        self._tail = _Columns(0)
        self._size = 0  # tail rows in use
        self._row: dict[int, int] = {}  # tail id -> tail row
        self._projects, self._kinds, self._types = _Codes(), _Codes(), _Codes()

    def __len__(self) -> int:
        base = self._base.rows - self._dead_count if self._base is not None else 0
        return base + self._size

    def __contains__(self, memory_id: object) -> bool:
        if not isinstance(memory_id, int):
            return False
        return memory_id in self._row or self._base_row(memory_id) is not None

    @property
    def has_ann(self) -> bool:
        return self._base is not None and self._base.ann is not None

    @property
    def generation(self) -> str | None:
        return None if self._base is None else self._base.generation

    @property
    def tail_rows(self) -> int:
        """Rows held in memory since the last saved generation (adds and re-embeds)."""
        return self._size

    @property
    def dead_rows(self) -> int:
        """Rows of the saved generation removed since (deleted or re-embedded)."""
        return self._dead_count

    # -- changes ----------------------------------------------------------------------

    def _base_row(self, memory_id: int) -> int | None:
        base = self._base
        if base is None or base.rows == 0:
            return None
        columns = base.columns
        pos = int(np.searchsorted(columns.sorted, memory_id))
        if pos >= columns.sorted.shape[0] or int(columns.sorted[pos]) != memory_id:
            return None
        row = int(columns.order[pos])
        return None if self._dead[row] else row

    def add(self, keys: Sequence[tuple[int, str, str, str, float]], vectors: Any) -> None:
        """Upsert rows: ``keys`` are (id, project, kind, type, created epoch) per vector."""
        if not len(keys):
            return
        matrix = np.array(vectors, dtype=np.float32, copy=True).reshape(len(keys), -1)
        if self.dim == 0:
            self.dim = int(matrix.shape[1])
            self._tail = _Columns(self.dim)
        if matrix.shape[1] != self.dim:
            raise ValueError(f"vectors of dim {matrix.shape[1]} in a table of dim {self.dim}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        self._drop_base([key[0] for key in keys])
        fresh = sum(1 for key in keys if key[0] not in self._row)
        tail = self._tail
        tail.grow(self._size, self._size + fresh)
        for i, (mid, project, kind, type_, created) in enumerate(keys):
            row = self._row.get(mid)
            if row is None:
                row = self._row[mid] = self._size
                self._size += 1
                tail.ids[row] = mid
            tail.matrix[row] = matrix[i]
            tail.project[row] = self._projects.code(project)
            tail.kind[row] = self._kinds.code(kind)
            tail.type[row] = self._types.code(type_)
            tail.created[row] = created

    def _drop_base(self, ids: Sequence[int]) -> int:
        dropped = 0
        for mid in ids:
            row = self._base_row(int(mid))
            if row is not None:
                self._dead[row] = True
                self._dead_count += 1
                dropped += 1
        return dropped

    def remove(self, ids: Sequence[int]) -> int:
        """Drop rows (memories deleted, or edited and not yet re-embedded)."""
        removed = self._drop_base(ids)
        tail = self._tail
        for mid in ids:
            row = self._row.pop(int(mid), None)
            if row is None:
                continue
            last = self._size - 1
            if row != last:
                moved = int(tail.ids[last])
                for array in tail.arrays():
                    array[row] = array[last]
                self._row[moved] = row
            self._size -= 1
            removed += 1
        return removed

    # -- keeping in step with the store ---------------------------------------------------

    def load_all(self, store: Store, log_store: VectorLog) -> int:
        """Read every vector of the model from the store (no saved generation)."""
        self.mark = log_store.vector_change_mark()  # before reading: replay covers the rest
        self.identity = log_store.identity()
        added = 0
        for batch in store.iter_embeddings(self.model, batch=SYNC_BATCH):
            added += self._apply(store, batch, [mid for mid, _ in batch])
        return added

    def sync(self, store: Store, log_store: VectorLog) -> bool:
        """Replay the change log since :attr:`mark`; False when the log no longer reaches
        back that far (the caller reloads)."""
        mark = log_store.vector_change_mark()
        if mark == self.mark:
            return True
        if mark < self.mark:
            return False  # another database, or one restored from an older copy
        changed = log_store.vector_changes(self.model, self.mark, mark)
        if changed is None:
            return False
        for start in range(0, len(changed), SYNC_BATCH):
            part = changed[start : start + SYNC_BATCH]
            self._apply(store, log_store.embeddings_of(self.model, part), part)
        self.mark = mark
        return True

    def _apply(self, store: Store, found: list[tuple[int, bytes]], ids: Sequence[int]) -> int:
        """Upsert the vectors ``found`` (with their memories' keys); remove the other ids."""
        keys = {k[0]: k for k in store.memory_keys([mid for mid, _ in found])}
        keep = [(mid, blob) for mid, blob in found if mid in keys]
        if keep:
            # A row of another size or with a NaN (a crafted import, a database written
            # by an older memlane) is left out: it would fail the table or every score.
            dim = self.dim or dimensions(self.model) or len(keep[0][1]) // 4
            keep = [(mid, blob) for mid, blob in keep if len(blob) == 4 * dim]
            matrix = np.frombuffer(b"".join(blob for _, blob in keep), dtype="<f4")
            matrix = matrix.reshape(len(keep), dim)
            finite = np.isfinite(matrix).all(axis=1)
            if not finite.all():
                keep = [row for row, ok in zip(keep, finite, strict=True) if ok]
                matrix = matrix[finite]
            if keep:
                self.add([keys[mid] for mid, _ in keep], matrix)
        present = {mid for mid, _ in keep}
        self.remove([mid for mid in ids if mid not in present])
        return len(keep)

    # -- search -----------------------------------------------------------------------------

    def _mask(
        self, columns: _Columns, n: int, flt: MemoryFilter, alive: NDArray[np.bool_] | None
    ) -> NDArray[np.bool_] | None:
        mask = alive

        def both(part: NDArray[np.bool_]) -> NDArray[np.bool_]:
            return part if mask is None else mask & part

        for values, codes, column in (
            (flt.projects, self._projects, columns.project[:n]),
            (flt.kinds, self._kinds, columns.kind[:n]),
            (flt.types, self._types, columns.type[:n]),
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
            mask = both(columns.created[:n] >= to_epoch(flt.created_after))
        if flt.created_before is not None:
            mask = both(columns.created[:n] < to_epoch(flt.created_before))
        return mask

    @staticmethod
    def _exact(
        score: Callable[[NDArray[np.int64] | None], NDArray[np.float32]],
        k: int,
        mask: NDArray[np.bool_] | None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """(rows, scores) of the exact top ``k`` of the rows ``mask`` allows.

        ``score(rows)`` gives the cosines of chosen rows (ascending; None: all).
        """
        if mask is None:
            scores = score(None)
            top = _top(scores, k)
            return top, scores[top]
        rows = np.flatnonzero(mask).astype(np.int64)
        if rows.size == 0:
            return rows, np.empty(0, dtype=np.float32)
        scores = score(rows)
        top = _top(scores, k)
        return rows[top].astype(np.int64), scores[top]

    def _search_base(
        self, q: NDArray[np.float32], k: int, flt: MemoryFilter
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        base = self._base
        assert base is not None
        n = base.rows
        alive = ~self._dead if self._dead_count else None
        mask = self._mask(base.columns, n, flt, alive)
        allowed = n if mask is None else int(np.count_nonzero(mask))
        score = functools.partial(base.scores, q)
        if base.ann is None or allowed < self.ann_threshold:
            return self._exact(score, k, mask)
        # Walk the graph for more than k: about k / (share allowed), widened while
        # too few of the candidates pass the filter.
        want = min(n, math.ceil(k * n / allowed * 1.25) + 16)
        while True:
            rows = base.ann.search(q, want)
            rows = rows[(rows >= 0) & (rows < n)]
            if mask is not None:
                rows = rows[mask[rows]]
            if rows.size >= k or want >= n // 2:
                break
            want = min(n, want * 4)
        if rows.size < k and want >= n // 2:
            return self._exact(score, k, mask)
        rows = np.sort(rows)
        scores = base.scores(q, rows)
        top = _top(scores, k)
        return rows[top], scores[top]

    def search(self, query: Any, k: int, flt: MemoryFilter) -> list[tuple[int, float]]:
        """The ``k`` rows passing ``flt`` most cosine-similar to ``query``: (id, cosine).

        Supports the filter's projects, kinds, types and time bounds (the fields
        search uses); other fields are ignored. Scores are exact float32 cosines.
        """
        if k <= 0 or len(self) == 0:
            return []
        q = _unit(query)
        found: list[tuple[int, float]] = []
        if self._base is not None and self._base.rows:
            rows, scores = self._search_base(q, k, flt)
            ids = self._base.columns.ids[rows]
            found += zip(ids.tolist(), scores.astype(np.float64).tolist(), strict=True)
        if self._size:
            n = self._size
            mask = self._mask(self._tail, n, flt, None)
            tail = self._tail.matrix[:n]

            def score(rows: NDArray[np.int64] | None) -> NDArray[np.float32]:
                if rows is None:
                    return _matvec(tail, q)
                if rows.size * 4 < n:  # few rows: only those
                    return _matvec(tail[rows], q)
                return _matvec(tail, q)[rows]  # many: one pass over all and pick

            rows, scores = self._exact(score, k, mask)
            ids = self._tail.ids[rows]
            found += zip(ids.tolist(), scores.astype(np.float64).tolist(), strict=True)
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:k]

    def cosines(self, query: Any, ids: Sequence[int]) -> dict[int, float]:
        """Exact cosine of ``query`` with each of ``ids`` that has a row."""
        q = _unit(query)
        out: dict[int, float] = {}
        tail_rows = [(mid, self._row[mid]) for mid in ids if mid in self._row]
        if tail_rows:
            scores = _matvec(self._tail.matrix[[row for _, row in tail_rows]], q)
            out.update(zip([mid for mid, _ in tail_rows], scores.tolist(), strict=True))
        if self._base is not None:
            base_rows = [
                (mid, row)
                for mid in ids
                if mid not in self._row and (row := self._base_row(mid)) is not None
            ]
            if base_rows:
                base_rows.sort(key=lambda pair: pair[1])
                rows = np.array([row for _, row in base_rows], dtype=np.int64)
                scores = self._base.scores(q, rows)
                out.update(zip([mid for mid, _ in base_rows], scores.tolist(), strict=True))
        return {mid: float(score) for mid, score in out.items()}

    # -- generations ------------------------------------------------------------------------

    def snapshot(self, *, copy: bool = True) -> Snapshot:
        """What :func:`save` writes: the live rows, copied where they may still change.

        ``copy=False`` for a table no other thread can change meanwhile (a table
        just read from the store: no second copy of a large tail).
        """
        n = self._size
        tail = _Columns(self.dim)
        for name in ("ids", "matrix", "project", "kind", "type", "created"):
            rows = getattr(self._tail, name)[:n]
            setattr(tail, name, rows.copy() if copy else rows)
        return Snapshot(
            model=self.model,
            dim=self.dim,
            mark=self.mark,
            identity=self.identity,
            base=self._base,
            dead=self._dead.copy(),
            tail=tail,
            codes=(
                dict(self._projects.codes),
                dict(self._kinds.codes),
                dict(self._types.codes),
            ),
        )

    @classmethod
    def open(
        cls, directory: Path, model: str, *, ann_threshold: int = ANN_THRESHOLD
    ) -> VectorTable | None:
        """The generation saved in ``directory`` for ``model``, memory-mapped.

        None, with one log line, when there is none or it cannot be used (another
        format or model, a missing or truncated file): the caller rebuilds it.
        """
        meta_path = directory / "meta.json"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("format") != FORMAT or meta.get("model") != model:
                raise ValueError(f"format {meta.get('format')!r}, model {meta.get('model')!r}")
            generation = str(meta["generation"])
            rows, dim = int(meta["rows"]), int(meta["dim"])
            columns = _Columns(dim)
            for name in _KEY_ARRAYS:
                array = np.load(directory / f"{name}-{generation}.npy", mmap_mode="r")
                if array.shape != (rows,):
                    raise ValueError(f"{name} has {array.shape[0]} rows, not {rows}")
                setattr(columns, name, array)
            matrix_path = directory / str(meta["matrix"])
            if matrix_path.stat().st_size < rows * dim * 4:
                raise ValueError(f"{matrix_path.name} is shorter than {rows} rows")
            mapped = None
            if rows:
                mapped, columns.matrix = _map_rows(matrix_path, rows, dim)
            ann = None
            if meta.get("ann"):
                ann = AnnIndex.open(directory / str(meta["ann"]), ndim=dim, rows=rows)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("vector cache %s is not usable (%s): rebuilding it", directory, exc)
            return None
        table = cls(model, ann_threshold=ann_threshold)
        table.dim = dim
        table.mark = int(meta["mark"])
        table.identity = str(meta["identity"])
        table._tail = _Columns(dim)
        fd = os.open(directory / str(meta["matrix"]), os.O_RDONLY) if rows else -1
        table._base = _Base(generation, str(meta["matrix"]), columns, ann, fd, mapped)
        if fd >= 0:
            weakref.finalize(table._base, os.close, fd)
        table._dead = np.asarray(columns.ids) < 0
        table._dead_count = int(np.count_nonzero(table._dead))
        projects, kinds, types = meta["codes"]
        table._projects, table._kinds, table._types = _Codes(projects), _Codes(kinds), _Codes(types)
        return table


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A table's rows at one moment, for :func:`save` (run without the table's lock)."""

    model: str
    dim: int
    mark: int
    identity: str
    base: _Base | None
    dead: NDArray[np.bool_]
    tail: _Columns
    codes: tuple[dict[str, int], dict[str, int], dict[str, int]]

    @property
    def rows(self) -> int:
        return (0 if self.base is None else self.base.rows) + int(self.tail.ids.shape[0])


@contextlib.contextmanager
def _save_lock(directory: Path) -> Iterator[bool]:
    """An exclusive, non-blocking lock on ``directory`` (False: another process saves)."""
    import fcntl

    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    handle: IO[str] = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        handle.close()


def _read_meta(directory: Path) -> dict[str, Any]:
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _write_private(path: Path, array: NDArray[Any]) -> None:
    with path.open("wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
    os.chmod(path, 0o600)


def save(
    directory: Path,
    snap: Snapshot,
    *,
    ann_threshold: int = ANN_THRESHOLD,
    build_ann: bool = True,
    threads: int = 1,
) -> bool:
    """Write ``snap`` as the next generation in ``directory`` (0700; files 0600).

    The live base rows keep their row numbers and the tail is appended (to the
    float32 file and to the graph), unless holes pass :data:`REWRITE_HOLES` of
    the base, the base is not the one on disk, or a graph is due for the first
    time (``build_ann`` and ``ann_threshold`` rows): then everything is written
    anew. Returns False when nothing was written (another process holds the
    lock, or the directory has a newer generation of the same database).
    """
    ensure_private_dir(directory.parent)
    ensure_private_dir(directory)
    with _save_lock(directory) as locked:
        if not locked:
            return False
        meta = _read_meta(directory)
        if int(meta.get("mark", -1)) > snap.mark and meta.get("identity") == snap.identity:
            return False  # someone saved a newer state of the same database
        base = snap.base
        on_disk = base is not None and meta.get("generation") == base.generation
        holes = 0 if base is None else int(np.count_nonzero(snap.dead))
        wants_ann = build_ann and snap.rows - holes >= ann_threshold
        if (
            base is not None
            and on_disk
            and holes <= REWRITE_HOLES * max(base.rows, 1)
            and (base.ann is not None or not wants_ann)
        ):
            new_meta = _append(directory, snap, base, threads=threads)
        else:
            new_meta = _rewrite(directory, snap, wants_ann=wants_ann, threads=threads)
        fd, tmp = tempfile.mkstemp(prefix="meta", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(new_meta, handle)
        os.chmod(tmp, 0o600)
        os.replace(tmp, directory / "meta.json")
        _remove_old(directory, new_meta)
    return True


def _meta(
    snap: Snapshot, generation: str, rows: int, matrix: str, ann: str | None
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "model": snap.model,
        "dim": snap.dim,
        "rows": rows,
        "mark": snap.mark,
        "identity": snap.identity,
        "generation": generation,
        "matrix": matrix,
        "ann": ann,
        "codes": list(snap.codes),
    }


def _key_arrays(
    ids: NDArray[np.int64], project: Any, kind: Any, type_: Any, created: Any
) -> dict[str, NDArray[Any]]:
    order = np.argsort(ids, kind="stable").astype(np.int64)
    return {
        "ids": ids,
        "order": order,
        "sorted": ids[order],
        "project": np.asarray(project, dtype=np.int32),
        "kind": np.asarray(kind, dtype=np.int32),
        "type": np.asarray(type_, dtype=np.int32),
        "created": np.asarray(created, dtype=np.float64),
    }


def _append(directory: Path, snap: Snapshot, base: _Base, *, threads: int) -> dict[str, Any]:
    generation = uuid.uuid4().hex[:12]
    tail, cols = snap.tail, base.columns
    rows = base.rows + int(tail.ids.shape[0])
    matrix_path = directory / base.matrix_file
    with matrix_path.open("r+b") as handle:
        handle.truncate(base.rows * snap.dim * 4)  # bytes a crashed append left behind
        handle.seek(0, os.SEEK_END)
        handle.write(np.ascontiguousarray(tail.matrix, dtype="<f4").tobytes())
    ids = np.concatenate([np.where(snap.dead, -1, cols.ids), tail.ids]).astype(np.int64)
    arrays = _key_arrays(
        ids,
        np.concatenate([cols.project, tail.project]),
        np.concatenate([cols.kind, tail.kind]),
        np.concatenate([cols.type, tail.type]),
        np.concatenate([cols.created, tail.created]),
    )
    for name, array in arrays.items():
        _write_private(directory / f"{name}-{generation}.npy", array)
    ann_name = None
    if base.ann is not None:
        ann_name = f"ann-{generation}.usearch"
        extended = base.ann.extended(tail.matrix, threads=threads) if tail.ids.size else base.ann
        extended.save(directory / ann_name)
        os.chmod(directory / ann_name, 0o600)
    return _meta(snap, generation, rows, base.matrix_file, ann_name)


def _rewrite(directory: Path, snap: Snapshot, *, wants_ann: bool, threads: int) -> dict[str, Any]:
    generation = uuid.uuid4().hex[:12]
    matrix_name = f"matrix-{generation}.f32"
    matrix_path = directory / matrix_name
    parts: list[tuple[_Columns, NDArray[np.int64]]] = []
    if snap.base is not None and snap.base.rows:
        parts.append((snap.base.columns, np.flatnonzero(~snap.dead)))
    parts.append((snap.tail, np.arange(snap.tail.ids.shape[0])))

    def joined(name: str) -> NDArray[Any]:
        return np.concatenate([getattr(columns, name)[keep] for columns, keep in parts])

    # Rows are grouped by project (then id): a project-scoped exact scan reads one
    # contiguous span of the file instead of rows scattered over all of it.
    order = np.lexsort((joined("ids"), joined("project")))
    source = np.concatenate([np.full(keep.size, i) for i, (_, keep) in enumerate(parts)])
    source_row = np.concatenate([keep for _, keep in parts])
    rows = int(order.size)
    fd = os.open(matrix_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        for start in range(0, rows, 50_000):
            chunk = order[start : start + 50_000]
            block = np.empty((chunk.size, snap.dim), dtype="<f4")
            for i, (columns, _) in enumerate(parts):
                mine = source[chunk] == i
                block[mine] = columns.matrix[source_row[chunk][mine]]
            handle.write(block.tobytes())
    arrays = _key_arrays(
        joined("ids")[order].astype(np.int64),
        joined("project")[order],
        joined("kind")[order],
        joined("type")[order],
        joined("created")[order],
    )
    for name, array in arrays.items():
        _write_private(directory / f"{name}-{generation}.npy", array)
    ann_name = None
    if wants_ann and rows:
        matrix = np.memmap(matrix_path, dtype="<f4", mode="r", shape=(rows, snap.dim))
        ann_name = f"ann-{generation}.usearch"
        log.info("building the ANN index of %d vectors (%s)", rows, directory.name)
        AnnIndex.build(matrix, threads=threads).save(directory / ann_name)
        os.chmod(directory / ann_name, 0o600)
        del matrix
    return _meta(snap, generation, rows, matrix_name, ann_name)


def _remove_old(directory: Path, meta: dict[str, Any]) -> None:
    """Delete the files of older generations (mapped copies stay valid until closed)."""
    generation = str(meta["generation"])
    keep = {str(meta["matrix"]), "meta.json", "lock"}
    for path in directory.iterdir():
        name = path.name
        if name in keep or f"-{generation}." in name or name.endswith(".tmp"):
            continue
        if name.endswith((".npy", ".f32", ".usearch")):
            path.unlink(missing_ok=True)
