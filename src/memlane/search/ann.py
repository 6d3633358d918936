"""Approximate nearest neighbours for large vector tables: a usearch HNSW graph.

The graph covers the *base* rows of a persisted vector table (see
:mod:`memlane.search.vectors`); its keys are row numbers of that base, so a hit
is checked against the table's filter columns and re-scored exactly against the
float32 matrix without any id lookup. Vectors inside the graph are stored as
``int8`` (a quarter of float32): they only steer the walk, the final order and
every score come from the float32 rows (measured: recall@10 of the re-scored
candidates on real USE embeddings in BENCHMARKS.md).

A graph is saved to one file and opened memory-mapped (``view``): a worker
starting on a 1M-vector table maps it in milliseconds and pages in only the
nodes its searches visit. A mapped graph is read-only; :meth:`AnnIndex.extended`
makes an in-memory copy with new rows added, which is saved as the next file.

usearch is imported on first use: this module is never on the hook path.
"""

from __future__ import annotations

import logging
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.paths import UnsafePath, new_own_file, open_own_file
from memlane.store.vector_walk import walk_width

log = logging.getLogger(__name__)

# Graph parameters. Connectivity 16 and 128 candidates while adding are usearch's
# defaults; the search expansion is raised from 64 so that the walk stays
# accurate for the 100 candidates a hybrid search asks for: at 1M real vectors
# and their near-copies, recall@10 is 0.979 with 128 and 0.991 with 256, for
# +0.5 ms of CPU per search (benchmarks/search_perf.py). A graph of WIDE_WALK_ROWS rows
# or more keeps twice as many (memlane.store.vector_walk).
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 256
DTYPE = "i8"
ADD_BATCH = 50_000


def _index_class() -> Any:
    from usearch.index import Index

    return Index


class AnnIndex:
    """An HNSW graph over rows ``0..rows-1`` of a float32 matrix (cosine)."""

    def __init__(self, index: Any) -> None:
        self._index = index
        self._mapped: mmap.mmap | None = None
        self._index.expansion_search = walk_width(EXPANSION_SEARCH, int(index.size))

    @property
    def rows(self) -> int:
        """How many rows the graph covers (keys are ``0..rows-1``)."""
        return int(self._index.size)

    @property
    def ndim(self) -> int:
        return int(self._index.ndim)

    @classmethod
    def build(
        cls, matrix: NDArray[np.float32], *, first: int = 0, threads: int = 1, base: Any = None
    ) -> AnnIndex:
        """A graph of ``matrix`` (rows keyed ``first, first+1, …``), added in batches.

        ``base``: an in-memory usearch index to add to (see :meth:`extended`).
        ``threads``: threads usearch adds with (the worker uses 1: it shares two
        cores with the agent).
        """
        index = base
        if index is None:
            index = _index_class()(
                ndim=int(matrix.shape[1]),
                metric="cos",
                dtype=DTYPE,
                connectivity=CONNECTIVITY,
                expansion_add=EXPANSION_ADD,
            )
        for start in range(0, matrix.shape[0], ADD_BATCH):
            part = np.ascontiguousarray(matrix[start : start + ADD_BATCH], dtype=np.float32)
            keys = np.arange(first + start, first + start + part.shape[0], dtype=np.uint64)
            index.add(keys, part, threads=threads)
        return cls(index)

    def extended(self, matrix: NDArray[np.float32], *, threads: int = 1) -> AnnIndex:
        """A new in-memory graph: this one plus ``matrix`` as rows ``rows, rows+1, …``."""
        return AnnIndex.build(matrix, first=self.rows, threads=threads, base=self._index.copy())

    def save(self, path: Path) -> None:
        """Write the graph to ``path``, a new 0600 file (never written through a link)."""
        os.close(new_own_file(path))  # usearch writes into this file of ours, by name
        self._index.save(str(path))

    @classmethod
    def open(cls, path: Path, *, ndim: int, rows: int) -> AnnIndex | None:
        """The graph saved at ``path``, memory-mapped; None (and one log line) if unusable.

        The file must be a regular file of the user's (not a link, not a FIFO): it is
        opened without following links or waiting, and usearch maps the graph from that
        descriptor's map, not from the name.
        """
        try:
            fd = open_own_file(path)
            try:
                mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
            index = _index_class().restore(memoryview(mapped), view=True)
        except (OSError, RuntimeError, ValueError, UnsafePath) as exc:
            log.warning("ANN index %s is not usable (%s): searching exactly", path, exc)
            return None
        if index is None or int(index.ndim) != ndim or int(index.size) != rows:
            found = "nothing" if index is None else f"{index.size} x {index.ndim}"
            log.warning(
                "ANN index %s holds %s, expected %d x %d: searching exactly",
                path,
                found,
                rows,
                ndim,
            )
            return None
        opened = cls(index)
        opened._mapped = mapped  # the graph views this map: it lives as long as the index
        return opened

    def search(self, query: NDArray[np.float32], count: int) -> NDArray[np.int64]:
        """Row numbers of about the ``count`` nearest rows, nearest first."""
        matches = self._index.search(query, count, threads=1)
        keys: NDArray[np.int64] = np.asarray(matches.keys, dtype=np.int64)
        return keys
