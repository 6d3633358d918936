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

The cache is derived data, and what is in its directory is not trusted: a crash,
a bad copy or (in a folder others could once write) another user may have left
anything there. ``meta.json`` may name only files the cache makes (plain names,
checked by pattern); each file is opened without following links or waiting
and must be a regular file of the user's; every field and key array is checked
before use; anything else means "not usable": one log line, and the caller
rebuilds. Files are created exclusively, and a save appends only to the very
file the table maps.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import mmap
import os
import re
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
from memlane.paths import (
    UnsafePath,
    ensure_private_dir,
    new_own_file,
    open_own_file,
    tighten_own_dir,
)
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
# The key arrays of a generation and their types.
_KEY_ARRAYS: dict[str, type[np.generic]] = {
    "ids": np.int64,
    "order": np.int64,
    "sorted": np.int64,
    "project": np.int32,
    "kind": np.int32,
    "type": np.int32,
    "created": np.float64,
}
# The only names meta.json may give (the cache makes them): no path, nothing else.
_GENERATION = re.compile(r"[0-9a-f]{12}")
_MATRIX_NAME = re.compile(r"matrix-[0-9a-f]{12}\.f32")
# Rows of a saved table compared with the store when it is opened (:meth:`VectorTable.differs`).
SPOT_CHECK = 16


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
    """Positions of the ``k`` highest scores, highest first (ties: lower position).

    A score that is not a number (a damaged row of the cache) is no match: it would
    otherwise sort anywhere.
    """
    finite = np.isfinite(scores)
    if not finite.all():
        keep = np.flatnonzero(finite).astype(np.int64)
        return keep[_top(scores[keep], k)]
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(k)
    return top[np.lexsort((top, -scores[top]))].astype(np.int64)


def _map_rows(fd: int, rows: int, dim: int) -> tuple[mmap.mmap, NDArray[np.float32]]:
    """The first ``rows`` float32 rows of the file ``fd``, memory-mapped read-only (and the map).

    Marked for random access: a search reads a few hundred scattered rows, and
    the kernel's default read-ahead would page in ~128 KB around each (measured:
    half of a 100k-row matrix resident after 20 searches instead of a few MB).
    """
    mapped = mmap.mmap(fd, rows * dim * 4, access=mmap.ACCESS_READ)
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

    def rows_at(self, rows: NDArray[np.int64]) -> NDArray[np.float32]:
        """Copies of the rows ``rows``, read with ``pread`` (no page of the map faulted in)."""
        dim = int(self.columns.matrix.shape[1])
        out = np.empty((rows.size, dim), dtype=np.float32)
        width = dim * 4
        for i, row in enumerate(rows.tolist()):
            data = os.pread(self.fd, width, row * width) if self.fd >= 0 else b""
            if len(data) != width:
                raise OSError(f"short read of the vector file ({len(data)} of {width} bytes)")
            out[i] = np.frombuffer(data, dtype="<f4")
        return out

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
        # A damaged row (NaN) is no row: its NaN would poison a fused score.
        return {mid: float(score) for mid, score in out.items() if math.isfinite(score)}

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

        None, with one log line, when there is none or it cannot be used: the caller
        rebuilds it. Unusable: another format or model; a ``meta.json`` whose fields
        are not what :func:`save` writes (vectors of another dimension than the
        model's, a file name that is not one the cache makes — a path there would
        read, then append to, a file elsewhere); a missing, truncated or damaged
        file; key arrays that would fail a lookup or a filter; a link, a FIFO or
        another user's file in place of a cache file (each is opened without
        following links or waiting, and must be a regular file of the user's); a
        directory that is not the user's own or that others can write.
        """
        try:
            own_cache_dir(directory)
            try:
                raw = _read_json(directory / "meta.json")
            except FileNotFoundError:
                return None
            return cls._mapped(directory, _parse_meta(raw, model), model, ann_threshold)
        except (OSError, ValueError, TypeError, KeyError, IndexError, EOFError, UnsafePath) as exc:
            log.warning("vector cache %s is not usable (%s): rebuilding it", directory, exc)
            return None

    @classmethod
    def _mapped(cls, directory: Path, meta: _Meta, model: str, ann_threshold: int) -> VectorTable:
        """The table of the checked ``meta``: its files mapped and checked (ValueError)."""
        rows, dim = meta.rows, meta.dim
        columns = _Columns(dim)
        for name, dtype in _KEY_ARRAYS.items():
            path = directory / f"{name}-{meta.generation}.npy"
            setattr(columns, name, _map_npy(path, dtype, rows))
        _check_keys(columns, meta)
        ann = None
        if meta.ann is not None:
            ann = AnnIndex.open(directory / meta.ann, ndim=dim, rows=rows)
        fd, mapped = -1, None
        if rows:
            fd = open_own_file(directory / meta.matrix)
            try:
                if os.fstat(fd).st_size < rows * dim * 4:
                    raise ValueError(f"{meta.matrix} is shorter than {rows} rows")
                mapped, columns.matrix = _map_rows(fd, rows, dim)
            except BaseException:
                os.close(fd)
                raise
        table = cls(model, ann_threshold=ann_threshold)
        table.dim = dim
        table.mark = meta.mark
        table.identity = meta.identity
        table._tail = _Columns(dim)
        table._base = _Base(meta.generation, meta.matrix, columns, ann, fd, mapped)
        if fd >= 0:
            weakref.finalize(table._base, os.close, fd)
        table._dead = np.asarray(columns.ids) < 0
        table._dead_count = int(np.count_nonzero(table._dead))
        projects, kinds, types = meta.codes
        table._projects, table._kinds, table._types = _Codes(projects), _Codes(kinds), _Codes(types)
        return table

    def differs(self, log_store: VectorLog, sample: int = SPOT_CHECK) -> str | None:
        """Why the saved rows disagree with the store, judged on ``sample`` of them spread
        over the file; None when they agree.

        A damaged or crafted cache can pass every check of its own and still hold ids
        the store does not have (every search then finds nothing) or rows that are not
        the store's vectors (NaN, another file's bytes). Call it after :meth:`sync`:
        rows changed since the generation are no longer live in it.
        """
        base = self._base
        if base is None or not base.rows:
            return None
        live = np.flatnonzero(~self._dead)
        if not live.size:
            return None
        rows = np.unique(live[np.linspace(0, live.size - 1, min(sample, live.size)).astype(int)])
        ids = [int(mid) for mid in base.columns.ids[rows]]
        stored = dict(log_store.embeddings_of(self.model, ids))
        for mid, row in zip(ids, base.rows_at(rows), strict=True):
            blob = stored.get(mid)
            if blob is None:
                return f"memory {mid} has no {self.model} vector in the store"
            vector = _unit(np.frombuffer(blob, dtype="<f4")) if len(blob) == 4 * self.dim else None
            # Compared as vectors, not by their cosine: a zero vector (a text with nothing
            # to embed) has no cosine with itself and was rebuilt on every open.
            if vector is None or not np.allclose(row, vector, atol=1e-4, equal_nan=True):
                return f"the row of memory {mid} is not its vector in the store"
        return None


@dataclass(frozen=True, slots=True)
class _Meta:
    """The fields of a generation's ``meta.json``, checked (:func:`_parse_meta`)."""

    generation: str
    rows: int
    dim: int
    mark: int
    identity: str
    matrix: str
    ann: str | None
    codes: tuple[dict[str, int], dict[str, int], dict[str, int]]


def _count(meta: dict[str, Any], key: str) -> int:
    value = meta.get(key)
    if type(value) is not int or value < 0:
        raise ValueError(f"{key} is {value!r}, not a count")
    return value


def _is_code_book(value: Any) -> bool:
    """A string → code dict whose codes are 0..n-1, as :class:`_Codes` hands them out."""
    return (
        isinstance(value, dict)
        and all(isinstance(key, str) and type(code) is int for key, code in value.items())
        and sorted(value.values()) == list(range(len(value)))
    )


def _parse_meta(meta: Any, model: str) -> _Meta:
    """The generation ``meta`` (a parsed ``meta.json``) describes, or ValueError.

    Names of files must be the ones :func:`save` makes, so nothing outside the
    directory is ever read or written; the dimension must be the model's.
    """
    if not isinstance(meta, dict):
        raise ValueError(f"meta.json holds {type(meta).__name__}, not an object")
    if meta.get("format") != FORMAT or meta.get("model") != model:
        raise ValueError(f"format {meta.get('format')!r}, model {meta.get('model')!r}")
    rows, dim, mark = _count(meta, "rows"), _count(meta, "dim"), _count(meta, "mark")
    expected = dimensions(model)
    if dim == 0 or (expected is not None and dim != expected):
        raise ValueError(f"vectors of dim {dim}, {model}'s have {expected}")
    identity = meta.get("identity")
    if not isinstance(identity, str):
        raise ValueError(f"database identity {identity!r}")
    generation = meta.get("generation")
    if not isinstance(generation, str) or not _GENERATION.fullmatch(generation):
        raise ValueError(f"generation {generation!r}")
    matrix = meta.get("matrix")
    if not isinstance(matrix, str) or not _MATRIX_NAME.fullmatch(matrix):
        raise ValueError(f"matrix file {matrix!r} is not a name the cache makes")
    ann = meta.get("ann")
    if ann is not None and ann != f"ann-{generation}.usearch":
        raise ValueError(f"ANN file {ann!r} is not a name the cache makes")
    codes = meta.get("codes")
    if not (isinstance(codes, list) and len(codes) == 3 and all(map(_is_code_book, codes))):
        raise ValueError("damaged filter codes")
    return _Meta(generation, rows, dim, mark, identity, matrix, ann, (codes[0], codes[1], codes[2]))


def _read_json(path: Path) -> Any:
    """The JSON in the cache file ``path`` (a regular file of the user's: :func:`open_own_file`)."""
    with os.fdopen(open_own_file(path), "rb") as handle:
        return json.loads(handle.read())


def _map_npy(path: Path, dtype: type[np.generic], rows: int) -> NDArray[Any]:
    """The ``.npy`` file ``path``, memory-mapped read-only through a checked descriptor
    (:func:`open_own_file`): ``rows`` values of ``dtype`` and nothing else (ValueError)."""
    with os.fdopen(open_own_file(path), "rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, found = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, _, found = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f"{path.name} is a .npy file of version {version}")
        want = np.dtype(dtype)
        if shape != (rows,) or found != want:
            raise ValueError(f"{path.name} holds {shape} {found}, not ({rows},) {want}")
        offset = handle.tell()
        size = os.fstat(handle.fileno()).st_size
        if size != offset + rows * want.itemsize:
            raise ValueError(f"{path.name} has {size} bytes, not {offset + rows * want.itemsize}")
        if not rows:
            return np.empty(0, dtype=want)
        return np.memmap(handle, dtype=want, mode="r", offset=offset, shape=(rows,))


def _check_keys(columns: _Columns, meta: _Meta) -> None:
    """Refuse key arrays that would fail a lookup or a filter, or answer wrongly (ValueError)."""
    if not meta.rows:
        return
    ids, order, ordered = columns.ids, columns.order, columns.sorted
    if int(ids.min()) < -1:
        raise ValueError("an id below -1")
    if int(order.min()) < 0 or int(order.max()) >= meta.rows:
        raise ValueError("the id order points outside the rows")
    live = ordered[int(np.searchsorted(ordered, 0)) :]
    if (
        not np.array_equal(ids[order], ordered)
        or bool(np.any(ordered[1:] < ordered[:-1]))
        or bool(np.any(live[1:] == live[:-1]))
    ):
        raise ValueError("the id order is damaged")
    for name, book in zip(("project", "kind", "type"), meta.codes, strict=True):
        column = getattr(columns, name)
        if int(column.min()) < 0 or int(column.max()) >= len(book):
            raise ValueError(f"a {name} code outside its code book")
    if not bool(np.isfinite(columns.created).all()):
        raise ValueError("a creation time that is not a number")


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

    fd = _lock_file(directory / "lock")
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


def _lock_file(path: Path) -> int:
    """A descriptor of the lock file ``path``, a regular file of the user's: created
    exclusively, or opened without following a link; anything else there is removed
    (the entry, not what a link points to) and the file created anew."""
    for _ in range(3):
        with contextlib.suppress(FileExistsError):
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            return open_own_file(path, os.O_RDWR)
        except FileNotFoundError:
            continue  # removed a moment ago
        except UnsafePath as exc:
            log.warning("%s: replacing it", exc)
            path.unlink(missing_ok=True)
    raise OSError(f"cannot create the lock file {path}")


def _read_meta(directory: Path) -> dict[str, Any]:
    """The last generation's ``meta.json`` as saved, unchecked; {} when it cannot be read."""
    try:
        meta = _read_json(directory / "meta.json")
    except (OSError, ValueError, UnsafePath):
        return {}
    return meta if isinstance(meta, dict) else {}


def _write_private(path: Path, array: NDArray[Any]) -> None:
    with os.fdopen(new_own_file(path), "wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)


def own_cache_dir(directory: Path, *, create: bool = False) -> bool:
    """Check the folders of one database's cache: the cache root (``directory``'s
    parent, which may be a link: a cache moved to another disk) and ``directory`` (never
    a link), each the user's, a mode that lets others in tightened to 0700
    (:func:`memlane.paths.tighten_own_dir`); with ``create``, made first when missing.
    UnsafePath for another user's folder or a link; True when a mode was tightened."""
    tightened = False
    for folder, follow_link in ((directory.parent, True), (directory, False)):
        if create:
            ensure_private_dir(folder)
        tightened = tighten_own_dir(folder, follow_link=follow_link) or tightened
    return tightened


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

    ``directory`` and its parent must be the user's (a mode that lets others in
    is tightened to 0700; another user's, or a link: UnsafePath); files are
    created anew, never written through a link, and the float32 file is appended
    to only when it is the very file the base maps.
    """
    own_cache_dir(directory, create=True)
    with _save_lock(directory) as locked:
        if not locked:
            return False
        meta = _read_meta(directory)
        mark = meta.get("mark")
        if type(mark) is int and mark > snap.mark and meta.get("identity") == snap.identity:
            return False  # someone saved a newer state of the same database
        base = snap.base
        on_disk = base is not None and meta.get("generation") == base.generation
        holes = 0 if base is None else int(np.count_nonzero(snap.dead))
        wants_ann = build_ann and snap.rows - holes >= ann_threshold
        new_meta = None
        if (
            base is not None
            and base.rows
            and on_disk
            and holes <= REWRITE_HOLES * max(base.rows, 1)
            and (base.ann is not None or not wants_ann)
        ):
            new_meta = _append(directory, snap, base, threads=threads)
        if new_meta is None:
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


def _open_for_append(path: Path, base: _Base) -> int | None:
    """A descriptor writing the float32 file ``path`` when it is the file ``base`` maps
    (same device and inode; a regular file of the user's, not a link: see
    :func:`open_own_file`); None, with one log line, when it is not."""
    try:
        fd = open_own_file(path, os.O_RDWR)
    except (OSError, UnsafePath) as exc:
        log.warning("cannot append to the vector file (%s): writing a new one", exc)
        return None
    found, mapped = os.fstat(fd), os.fstat(base.fd)
    if (found.st_dev, found.st_ino) != (mapped.st_dev, mapped.st_ino):
        os.close(fd)
        log.warning("%s is not the vector file searches read: writing a new one", path)
        return None
    return fd


def _append(directory: Path, snap: Snapshot, base: _Base, *, threads: int) -> dict[str, Any] | None:
    """The tail appended to the base's float32 file; None when that file cannot be
    written safely (the caller writes everything anew)."""
    generation = uuid.uuid4().hex[:12]
    tail, cols = snap.tail, base.columns
    rows = base.rows + int(tail.ids.shape[0])
    fd = _open_for_append(directory / base.matrix_file, base)
    if fd is None:
        return None
    with os.fdopen(fd, "r+b") as handle:
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
    with os.fdopen(new_own_file(matrix_path), "wb") as handle:
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
        fd = open_own_file(matrix_path)
        try:
            mapped, matrix = _map_rows(fd, rows, snap.dim)
        finally:
            os.close(fd)
        ann_name = f"ann-{generation}.usearch"
        log.info("building the ANN index of %d vectors (%s)", rows, directory.name)
        AnnIndex.build(matrix, threads=threads).save(directory / ann_name)
        del matrix, mapped
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
            try:
                path.unlink(missing_ok=True)  # a link: the link itself
            except OSError as exc:  # e.g. a directory by that name: leave it, say so
                log.warning("cannot remove %s from the vector cache (%s)", path, exc)
