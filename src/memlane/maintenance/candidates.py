"""Merge candidates: MinHash LSH buckets, with the work per memory bounded.

Each memory's trigram set gets a MinHash signature (128 seeded hashes); its
bands (rows sized for the threshold, see :func:`band_rows`) are bucket keys,
and two memories sharing a bucket are candidates, verified exactly
(:meth:`CandidateIndex.similar`), so nothing below the threshold is returned.

The merge pass asks for a memory's candidates, then closes it and the
memories it absorbed; a closed memory is never a candidate again, so each
pair is verified at most once and nothing is kept per pair. A bucket holding
more than ``LARGE_BUCKET`` memories means its band is uninformative (texts of
one template or of one language share their commonest trigrams): in it a
memory is a candidate only for its ``WINDOW`` nearest open neighbours on
each side in signature order (sorted neighbourhood), because comparing every
member with every other made a pass quadratic in time and memory (12,000
near-identical imported records: more than 3 minutes and 6.5 GB). Smaller
buckets are compared in full: on LongMemEval turns (6,000 memories) the
largest holds 256, so realistic data is planned exactly as before. Before the
exact check, the signatures' own estimate of J rules a candidate out when it is
``ESTIMATE_MARGIN`` under the threshold: most candidates of real text are.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from memlane.errors import InvalidInput

# MinHash functions per memory and their fixed seed (plans must be reproducible).
MINHASH_SIZE = 128
MINHASH_SEED = 20240601
# Buckets up to this size are compared in full; larger ones through a window.
LARGE_BUCKET = 512
# Open neighbours on each side a memory is compared with in a large bucket.
WINDOW = 64
# A candidate whose signatures agree on fewer than threshold - this of their hashes is
# not verified exactly (see CandidateIndex.similar).
ESTIMATE_MARGIN = 0.2


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def band_rows(threshold: float) -> int:
    """Rows per LSH band: the most selective split that still finds J = threshold 98%."""
    if not 0.0 < threshold <= 1.0:
        raise InvalidInput(f"the merge threshold must be in (0, 1], got {threshold}")
    for rows in (8, 4, 2):
        bands = MINHASH_SIZE // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= 0.98:
            return rows
    return 1


def _signature(tokens: frozenset[str], np: Any, seeds: Any) -> Any:
    """MinHash signature: per seed, the least splitmix64(crc32(token) ^ seed)."""
    # crc32, not hash(): str hashes are salted per process and a dry run in one
    # process must plan what the real run in another one does.
    values = np.fromiter(
        (zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in tokens),
        dtype=np.uint64,
        count=len(tokens),
    )
    z = values[None, :] ^ seeds[:, None]
    # uint64 arrays wrap on overflow, which is what the mixer wants.
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))).min(axis=1)


class _Large:
    """A large bucket: members in signature order, with skip links over closed ones."""

    def __init__(self, members: list[int], rank: list[int]) -> None:
        self.members = sorted(members, key=rank.__getitem__)
        self.ranks = [rank[p] for p in self.members]
        count = len(self.members)
        # right[k] / left[k]: where to look next when member k is closed (compressed).
        self.right = list(range(1, count + 1))
        self.left = list(range(-1, count - 1))

    def _skip(self, links: list[int], k: int, is_open: list[bool]) -> int:
        path: list[int] = []
        while 0 <= k < len(self.members) and not is_open[self.members[k]]:
            path.append(k)
            k = links[k]
        for p in path:
            links[p] = k
        return k

    def near(self, position: int, rank: int, is_open: list[bool]) -> Iterable[int]:
        """The ``WINDOW`` nearest open members on each side of ``position``."""
        at = bisect_left(self.ranks, rank)
        k = self._skip(self.right, at + 1, is_open)
        for _ in range(WINDOW):
            if k >= len(self.members):
                break
            yield self.members[k]
            k = self._skip(self.right, k + 1, is_open)
        k = self._skip(self.left, at - 1, is_open)
        for _ in range(WINDOW):
            if k < 0:
                break
            yield self.members[k]
            k = self._skip(self.left, k - 1, is_open)


class CandidateIndex:
    """LSH buckets over trigram sets; :meth:`similar` verifies a memory's open candidates.

    ``pairs_verified`` counts exact Jaccard computations (the bound tests read it).
    """

    def __init__(self, sets: dict[int, frozenset[str]], threshold: float) -> None:
        rows = band_rows(threshold)
        import numpy as np

        self.threshold = threshold
        self.pairs_verified = 0
        self._ids = sorted(i for i in sets if sets[i])
        self._sets = [sets[i] for i in self._ids]
        self._position = {i: p for p, i in enumerate(self._ids)}
        self._open = [True] * len(self._ids)
        # Per memory: its small buckets (member lists) and large ones.
        self._small: list[list[list[int]]] = [[] for _ in self._ids]
        self._large: list[list[_Large]] = [[] for _ in self._ids]
        self._rank: list[int] = []
        self._sig: Any = None
        if len(self._ids) < 2:
            return
        seeds = np.random.default_rng(MINHASH_SEED).integers(
            0, np.iinfo(np.uint64).max, size=MINHASH_SIZE, dtype=np.uint64
        )
        sig = self._sig = np.stack([_signature(s, np, seeds) for s in self._sets])
        # Signature order (ties by id) ranks the members of a large bucket.
        order = np.lexsort(sig.T[::-1])
        rank = self._rank = [0] * len(self._ids)
        for r, p in enumerate(order.tolist()):
            rank[p] = r
        for band in range(MINHASH_SIZE // rows):
            _, inverse = np.unique(
                sig[:, band * rows : (band + 1) * rows], axis=0, return_inverse=True
            )
            grouped: dict[int, list[int]] = {}
            for p, key in enumerate(inverse.reshape(-1).tolist()):
                grouped.setdefault(key, []).append(p)
            for members in grouped.values():
                if len(members) > LARGE_BUCKET:
                    large = _Large(members, rank)
                    for p in members:
                        self._large[p].append(large)
                elif len(members) > 1:
                    for p in members:
                        self._small[p].append(members)

    def close(self, i: int) -> None:
        """``i`` is settled (kept or absorbed): never a candidate again."""
        p = self._position.get(i)
        if p is not None:
            self._open[p] = False

    def similar(self, i: int, among: set[int] | None = None) -> list[tuple[int, float]]:
        """Open memories (in ``among``, when given) with Jaccard >= threshold with ``i``."""
        p = self._position.get(i)
        if p is None:
            return []
        is_open = self._open
        seen: set[int] = {p}
        for members in self._small[p]:
            seen.update(q for q in members if is_open[q])
        for large in self._large[p]:
            seen.update(large.near(p, self._rank[p], is_open))
        seen.discard(p)
        candidates = sorted(seen)
        if among is not None:
            candidates = [q for q in candidates if self._ids[q] in among]
        if candidates:
            # The signatures' agreement estimates J (std <= 0.045 with 128 hashes): one
            # more than ESTIMATE_MARGIN under the threshold is no match, 4.4 std away,
            # and the exact check (most of a plan's time) is skipped.
            agree = (self._sig[candidates] == self._sig[p]).mean(axis=1)
            floor = self.threshold - ESTIMATE_MARGIN
            candidates = [q for q, a in zip(candidates, agree.tolist(), strict=True) if a >= floor]
        mine = self._sets[p]
        found: list[tuple[int, float]] = []
        for q in candidates:
            j = self._ids[q]
            other = self._sets[q]
            small, large_size = sorted((len(mine), len(other)))
            if small < self.threshold * large_size:  # J <= small/large
                continue
            self.pairs_verified += 1
            score = jaccard(mine, other)
            if score >= self.threshold:
                found.append((j, score))
        return found
