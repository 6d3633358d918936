"""Whether the vectors in another tool's index can serve memlane's search.

A vector is only worth keeping under the model memlane embeds its queries
with (the configured ``embedder``): a cosine between two models' vectors means
nothing. So, for the vectors of one index file:

* the index names its model (``embedding_model``, or ``model``): kept when it
  is the configured model, stored under that name; otherwise left out;
* the index names none (the semantic-memory tool writes none): when they have
  the configured model's dimensions, a sample of entries (``SAMPLE``) is
  embedded with the configured embedder, and the vectors are kept, recorded
  under its name, only if every sampled pair agrees (cosine >= ``AGREEMENT``),
  i.e. the index was embedded with this very model; otherwise left out.

Vectors left out cost nothing but time: their memories have no vector of the
configured model, so the worker (or ``memlane embed --backfill``) embeds them
like any new memory. The plan says why in one line for the import report.
Loading the embedder (about a second for the default) happens only for the
sample check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlane.errors import MemlaneError
from memlane.search.engine import model_name
from memlane.search.model_names import dimensions

# Entries embedded again to recognise an unnamed model, and how close they must come.
SAMPLE = 8
AGREEMENT = 0.95
BACKFILL_HINT = "the worker or `memlane embed --backfill` embeds them"


@dataclass(frozen=True, slots=True)
class VectorPlan:
    """What to do with an index's vectors: store them under ``model``, or (None) not."""

    model: str | None
    note: str | None = None  # one line for the report, when there is something to say


def plan_vectors(
    embedder: str,
    *,
    named: str | None,
    dim: int | None,
    sample: Sequence[tuple[str, Sequence[float]]],
) -> VectorPlan:
    """Decide for one index: ``named`` is the model it names, ``dim`` its vectors' size,
    ``sample`` some (text, vector) entries of it; ``embedder`` is the configured one."""
    if not sample:
        return VectorPlan(None)
    current = model_name(embedder)
    if current is None:
        return VectorPlan(None, "vectors left out: the embedder is 'none' (vectors are off)")
    if named is not None:
        if named != current:
            return VectorPlan(
                None,
                f"vectors of {named!r} left out (memlane embeds with {current!r}); {BACKFILL_HINT}",
            )
        if dim is not None and dimensions(current) not in (None, dim):
            return VectorPlan(
                None,
                f"vectors left out: {dim} dimensions, but {current!r} has"
                f" {dimensions(current)}; {BACKFILL_HINT}",
            )
        return VectorPlan(current)
    expected = dimensions(current)
    if expected is not None and dim != expected:
        return VectorPlan(
            None,
            f"vectors left out: the index names no model, and {current!r} has {expected}"
            f" dimensions, not {dim}; {BACKFILL_HINT}",
        )
    agreement = _agreement(embedder, sample[:SAMPLE])
    if isinstance(agreement, str):
        return VectorPlan(None, f"vectors left out: {agreement}; {BACKFILL_HINT}")
    if agreement < AGREEMENT:
        return VectorPlan(
            None,
            f"vectors left out: the index names no model and they do not match {current!r}"
            f" (cosine {agreement:.2f} on a sample); {BACKFILL_HINT}",
        )
    return VectorPlan(
        current,
        f"vectors kept as {current!r}: the index names no model and a sample re-embedded"
        f" matches (cosine >= {agreement:.2f})",
    )


def _agreement(embedder: str, sample: Sequence[tuple[str, Sequence[float]]]) -> float | str:
    """The lowest cosine between ``sample``'s vectors and the same texts embedded now,
    or why it cannot be measured."""
    import numpy as np

    from memlane.search.embedder import get_embedder, normalize_rows

    try:
        model = get_embedder(embedder)
        fresh = model.embed([text for text, _ in sample])
    except MemlaneError as exc:
        return f"cannot load the embedder to compare ({exc})"
    given = normalize_rows(np.asarray([vector for _, vector in sample], dtype=np.float32))
    if given.shape != fresh.shape:
        return f"{given.shape[1]} dimensions, but {model.name!r} has {fresh.shape[1]}"
    return float(np.min(np.sum(given * fresh, axis=1)))
