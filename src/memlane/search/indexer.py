"""Keep vectors in step with memories: backfill embeddings.

:func:`embed_missing` embeds every memory that has no vector for the
embedder's model, in batches, each batch committed on its own: interrupt it
and the next run resumes where it stopped. The model name and dimension are
stored with each vector, so switching models simply finds every memory
"missing" again and re-embeds it; the old model's vectors are dropped once the
new model covers everything (:func:`drop_other_models`). The searchable copy
of the vectors is :class:`memlane.search.vectors.VectorTable`.

numpy is imported here at module level: never import this module on the hook path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memlane import feedback
from memlane.models import MemoryFilter

if TYPE_CHECKING:
    from memlane.search.embedder import Embedder
    from memlane.store.base import Store

log = logging.getLogger(__name__)

# Longest text given to the embedder: the head of a long memory carries its topic,
# and embedding cost grows with length (USE: ~40 turns/s at ~1000 chars).
EMBED_MAX_CHARS = 4000
DEFAULT_BATCH = 64


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


def missing_count(store: Store, model: str, counts: dict[str, int] | None = None) -> int:
    """How many memories have no vector for ``model`` (``counts``: the store's
    ``embedding_counts()``, if read already). A vector is keyed by its memory and model,
    and goes with its memory: the difference of the two counts is exact."""
    total = store.count_memories(MemoryFilter())
    if counts is None:
        counts = store.embedding_counts()
    return max(0, total - counts.get(model, 0))


def drop_other_models(store: Store, model: str, counts: dict[str, int] | None = None) -> int:
    """Delete vectors of every model but ``model``; returns how many were deleted."""
    dropped = 0
    for other in store.embedding_counts() if counts is None else counts:
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
    counts = store.embedding_counts()
    missing = missing_count(store, embedder.name, counts)
    total = missing if limit is None else min(missing, limit)
    done = 0
    # Nothing missing is the worker's every idle check (each few seconds): the search for
    # rows without a vector would read every memory (~0.45 s of CPU at 1M), so it is skipped.
    while missing and (limit is None or done < limit):
        if should_stop is not None and should_stop():
            break
        size = batch if limit is None else min(batch, limit - done)
        rows = store.missing_embeddings(embedder.name, size)
        if not rows:
            break
        vectors = np.asarray(
            embedder.embed([text[:EMBED_MAX_CHARS] for _, text in rows]), dtype="<f4"
        )
        with feedback.commit_and_count():
            store.put_embeddings(
                embedder.name,
                embedder.dim,
                [(mid, vectors[i].tobytes()) for i, (mid, _) in enumerate(rows)],
            )
            done += len(rows)
            if progress is not None:
                progress(done, max(total, done))
    if missing:  # counted again after embedding
        counts = store.embedding_counts()
        missing = missing_count(store, embedder.name, counts)
    dropped = drop_other_models(store, embedder.name, counts) if drop_old and not missing else 0
    return EmbedReport(
        model=embedder.name,
        dim=embedder.dim,
        embedded=done,
        remaining=missing,
        seconds=time.perf_counter() - started,
        dropped_other_models=dropped,
    )
