"""How wide an approximate nearest-neighbour walk is, for either store's vector index.

Both vector indexes are HNSW graphs — the SQLite store's usearch graph
(:mod:`memlane.search.ann`) and pgvector's index in PostgreSQL — and both lose
recall as they grow: among a million vectors the true top 10 have more near-equal
neighbours to be told from. One rule for both: a graph of ``WIDE_WALK_ROWS`` rows
or more keeps twice the candidates per walk. Measured with ``search_perf.py`` and
``pg_vs_sqlite.py`` at 1M (136,648 real USE vectors and noisy copies): usearch
recall@10 0.969 → 0.987, pgvector 0.95 → 0.97 (BENCHMARKS.md). Below the
threshold, where a prompt's store usually is, a walk costs what it did.
"""

from __future__ import annotations

WIDE_WALK_ROWS = 500_000


def walk_width(width: int, rows: int) -> int:
    """The candidates a walk keeps in a graph of ``rows`` rows, ``width`` being what a
    smaller graph keeps."""
    return 2 * width if rows >= WIDE_WALK_ROWS else width
