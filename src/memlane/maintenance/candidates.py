"""Merge candidates: MinHash LSH buckets, with the work per memory bounded.

A text's trigrams (lower-cased, whitespace collapsed, first ``MERGE_TEXT_CHARS``
characters) are kept as a sorted array of 64-bit keys, three code points
each (:func:`trigram_keys`: injective, so the Jaccard similarity of two key
arrays is exactly that of the trigram sets, at 8 bytes a trigram instead of
~100 for a set of strings). Each memory's keys get a MinHash signature (128
hashes); its bands (rows sized for the threshold, see :func:`band_rows`) are
bucket keys, and two memories sharing a bucket are candidates, verified exactly
(:meth:`CandidateIndex.similar`), so nothing below the threshold is returned.

**Memory.** The index keeps the signatures (1 KiB a memory) and the key
counts; a memory's keys are computed while building its signature and dropped,
then computed again (a quarter of a millisecond for 2,000 characters) when a
pair is verified, and the last ``KEY_CACHE`` of those are kept. 8,000 memories
of 2,000 characters hold 8 MB of signatures and at most 64 MB of keys instead
of 2 GB of trigram sets.

The merge pass asks for a memory's candidates, then closes it and the
memories it absorbed; a closed memory is never a candidate again, so each
pair is verified at most once and nothing is kept per pair. A bucket holding
more than ``LARGE_BUCKET`` memories means its band is uninformative (texts of
one template or of one language share their commonest trigrams): in it a
memory is a candidate only for its ``WINDOW`` nearest open neighbours on
each side in signature order (sorted neighbourhood; fewer per bucket when many of
its buckets are large: ``LARGE_GATHER`` from all of them), because comparing every
member with every other made a pass quadratic in time and memory (12,000
near-identical imported records: more than 3 minutes and 6.5 GB). Smaller
buckets are compared in full: on LongMemEval turns (6,000 memories) the
largest holds 256, so realistic data is planned exactly as before. Before the
exact check, the signatures' own estimate of J rules a candidate out when it is
``ESTIMATE_MARGIN`` under the threshold: most candidates of real text are.

**Checks per memory.** With ``max_checks``, a memory takes part in at most that
many exact checks (as either side of a pair), its candidates taken in order of
signature agreement, so its likeliest matches come first. Texts crafted to sit
just under the threshold (hundreds of memories at J ~ 0.5 with one another)
pass the estimate and used to be verified pair by pair, quadratically; now a
pass verifies at most ``max_checks`` x memories / 2 pairs, and at most
``max_checks`` x probed memories when only pairs with a probed memory are
looked for. A candidate pair past the bound is not verified in that pass (it is
counted in ``pairs_skipped``): it stays two memories.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from memlane.errors import InvalidInput

# MinHash functions per memory and their fixed seed (plans must be reproducible).
MINHASH_SIZE = 128
MINHASH_SEED = 20240601
# Buckets up to this size are compared in full; larger ones through a window.
LARGE_BUCKET = 512
# Open neighbours on each side a memory is compared with in a large bucket.
WINDOW = 64
# Neighbours a memory gathers from all its large buckets together: in a template's
# buckets (every band large) the full window gathered 4,096 per memory, 32 M walks for
# 10,000 records of one template, of which only the likeliest MAX checks are verified.
LARGE_GATHER = 8 * WINDOW
# A candidate whose signatures agree on fewer than threshold - this of their hashes is
# not verified exactly (see CandidateIndex.similar).
ESTIMATE_MARGIN = 0.2
# Key arrays of a lazy source kept between checks (first in, first out): at most
# 4,096 x 16 KB = 64 MB for 2,000-character texts, and a crafted group of 510 is read once.
KEY_CACHE = 4096
# Characters of a text its trigrams are taken from.
MERGE_TEXT_CHARS = 2000
_GOLDEN = 0x9E3779B97F4A7C15


def _normalized(text: str, limit: int) -> str:
    return " ".join(text.lower().split())[:limit]


def trigrams(text: str, limit: int = MERGE_TEXT_CHARS) -> frozenset[str]:
    """Character trigrams of ``text`` lower-cased with whitespace collapsed."""
    norm = _normalized(text, limit)
    if len(norm) < 3:
        return frozenset({norm}) if norm else frozenset()
    return frozenset(norm[i : i + 3] for i in range(len(norm) - 2))


def _pack(points: Any, np: Any) -> Any:
    """Keys of code-point triples (columns of ``points``; 0 = no character)."""
    shift = np.uint64(21)
    return (points[0] << (shift + shift)) | (points[1] << shift) | points[2]


def _code_points(text: str, np: Any) -> Any:
    raw = text.encode("utf-32-le", "surrogatepass")
    # +1: a code point (< 0x110000, 21 bits) is never 0, which marks "no character".
    return np.frombuffer(raw, dtype="<u4").astype(np.uint64) + np.uint64(1)


def trigram_keys(text: str, limit: int = MERGE_TEXT_CHARS) -> Any:
    """The trigrams of ``text`` (as :func:`trigrams`) as sorted unique uint64 keys."""
    import numpy as np

    norm = _normalized(text, limit)
    points = _code_points(norm, np)
    if len(points) < 3:
        padded = np.zeros(3, dtype=np.uint64)
        padded[: len(points)] = points
        return _pack(padded, np).reshape(-1)[: 1 if len(points) else 0]
    return np.unique(_pack((points[:-2], points[1:-1], points[2:]), np))


def set_keys(tokens: Iterable[str]) -> Any:
    """:func:`trigram_keys` of an already built trigram set (strings of <= 3 characters)."""
    import numpy as np

    tokens = list(tokens)
    full = [t for t in tokens if len(t) == 3]
    parts = []
    if full:
        points = _code_points("".join(full), np).reshape(-1, 3).T
        parts.append(_pack(points, np))
    for token in tokens:
        if len(token) != 3:  # a text shorter than a trigram
            padded = np.zeros(3, dtype=np.uint64)
            padded[: len(token)] = _code_points(token, np)
            parts.append(_pack(padded, np).reshape(-1))
    if not parts:
        return np.zeros(0, dtype=np.uint64)
    return np.unique(np.concatenate(parts))


class TextKeys(Mapping[int, Any]):
    """Texts by id, read as their :func:`trigram_keys` (computed on each look-up)."""

    def __init__(self, texts: Mapping[int, str]) -> None:
        self._texts = texts

    def __getitem__(self, key: int) -> Any:
        return trigram_keys(self._texts[key])

    def __iter__(self) -> Iterator[int]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


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


def _mix(z: Any, np: Any) -> Any:
    """splitmix64's finalizer (uint64 arrays wrap on overflow, which is what it wants)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _signature(keys: Any, np: Any, seeds: Any) -> Any:
    """MinHash signature: per seed, the least ((mix(key) ^ seed) * golden) of the keys."""
    # Keys, not str hashes: those are salted per process, and a dry run in one
    # process must plan what the real run in another one does. One full mix per key,
    # then a cheap xor-multiply per seed (4x faster than a full mix per seed, with
    # the same estimate error: std 0.041 against 0.040 over 300 random pairs).
    mixed = _mix(keys, np)
    return ((mixed[None, :] ^ seeds[:, None]) * np.uint64(_GOLDEN)).min(axis=1)


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

    def near(
        self, position: int, rank: int, is_open: list[bool], window: int = WINDOW
    ) -> Iterable[int]:
        """The ``window`` nearest open members on each side of ``position``."""
        at = bisect_left(self.ranks, rank)
        k = self._skip(self.right, at + 1, is_open)
        for _ in range(window):
            if k >= len(self.members):
                break
            yield self.members[k]
            k = self._skip(self.right, k + 1, is_open)
        k = self._skip(self.left, at - 1, is_open)
        for _ in range(window):
            if k < 0:
                break
            yield self.members[k]
            k = self._skip(self.left, k - 1, is_open)


class CandidateIndex:
    """LSH buckets over trigram keys; :meth:`similar` verifies a memory's open candidates.

    ``sets`` maps ids to :func:`trigram_keys` arrays (:func:`set_keys` of a trigram
    set); a lazy mapping (:class:`TextKeys`) is read once to build the signatures and again
    for each memory a check needs, so no set is kept. ``pairs_verified`` counts
    exact Jaccard computations (the bound tests read it), ``pairs_skipped`` the
    candidate pairs left unverified because a side had used its ``max_checks``,
    ``memories_spent`` the memories asked for when they had used them all.
    """

    def __init__(
        self, sets: Mapping[int, Any], threshold: float, *, max_checks: int | None = None
    ) -> None:
        rows = band_rows(threshold)
        import numpy as np

        self.threshold = threshold
        self.max_checks = max_checks
        self.pairs_verified = 0
        self.pairs_skipped = 0
        self.memories_spent = 0  # asked for after all their checks were taken
        # Keys given whole are kept; a lazy source (TextKeys) is read again for each
        # check, the last KEY_CACHE of them kept.
        self._source = sets
        self._cache: dict[int, Any] = {}
        seeds = np.random.default_rng(MINHASH_SEED).integers(
            0, np.iinfo(np.uint64).max, size=MINHASH_SIZE, dtype=np.uint64
        )
        ids: list[int] = []
        sizes: list[int] = []
        signatures: list[Any] = []
        for i in sorted(sets):
            keys = sets[i]
            if len(keys):
                ids.append(i)
                sizes.append(len(keys))
                signatures.append(_signature(keys, np, seeds))
        self._ids = ids
        self._sizes = sizes
        self._position = {i: p for p, i in enumerate(self._ids)}
        self._open = [True] * len(self._ids)
        self._checks = [0] * len(self._ids)
        # Per memory: its small buckets (member lists) and large ones.
        self._small: list[list[list[int]]] = [[] for _ in self._ids]
        self._large: list[list[_Large]] = [[] for _ in self._ids]
        self._rank: list[int] = []
        self._sig: Any = None
        if len(self._ids) < 2:
            return
        sig = self._sig = np.stack(signatures)
        del signatures
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

    def _keys(self, i: int) -> Any:
        if not isinstance(self._source, TextKeys):
            return self._source[i]
        keys = self._cache.get(i)
        if keys is None:
            keys = self._cache[i] = self._source[i]
            if len(self._cache) > KEY_CACHE:
                del self._cache[next(iter(self._cache))]
        return keys

    def _spent(self, p: int) -> bool:
        return self.max_checks is not None and self._checks[p] >= self.max_checks

    def similar(self, i: int, among: set[int] | None = None) -> list[tuple[int, float]]:
        """Open memories (in ``among``, when given) with Jaccard >= threshold with ``i``."""
        import numpy as np

        p = self._position.get(i)
        if p is None:
            return []
        if self._spent(p):
            # Its checks were all taken as another memory's candidate: gathering its own
            # (thousands, in a large template's buckets) would find none to verify.
            self.memories_spent += 1
            return []
        is_open = self._open
        seen: set[int] = {p}
        for members in self._small[p]:
            seen.update(q for q in members if is_open[q])
        larges = self._large[p]
        window = min(WINDOW, max(4, LARGE_GATHER // (2 * len(larges)))) if larges else WINDOW
        for large in larges:
            seen.update(large.near(p, self._rank[p], is_open, window))
        seen.discard(p)
        candidates = sorted(seen)
        if among is not None:
            candidates = [q for q in candidates if self._ids[q] in among]
        if not candidates:
            return []
        # The signatures' agreement estimates J (std <= 0.045 with 128 hashes): one
        # more than ESTIMATE_MARGIN under the threshold is no match, 4.4 std away,
        # and the exact check (most of a plan's time) is skipped.
        agree = (self._sig[candidates] == self._sig[p]).mean(axis=1).tolist()
        floor = self.threshold - ESTIMATE_MARGIN
        # Likeliest first: with max_checks, a memory's checks go to its best candidates.
        ranked = sorted(
            ((a, q) for q, a in zip(candidates, agree, strict=True) if a >= floor),
            key=lambda aq: (-aq[0], aq[1]),
        )
        mine: Any = None
        size = self._sizes[p]
        found: list[tuple[int, float]] = []
        for at, (_agree, q) in enumerate(ranked):
            if self._spent(p):  # the rest are skipped too: counted, not walked
                self.pairs_skipped += len(ranked) - at
                break
            other_size = self._sizes[q]
            small, large_size = sorted((size, other_size))
            if small < self.threshold * large_size:  # J <= small/large
                continue
            if self._spent(q):
                self.pairs_skipped += 1
                continue
            if mine is None:
                mine = self._keys(i)
            other = self._keys(self._ids[q])
            self.pairs_verified += 1
            self._checks[p] += 1
            self._checks[q] += 1
            inter = int(np.intersect1d(mine, other, assume_unique=True).size)
            score = inter / (size + other_size - inter)
            if score >= self.threshold:
                found.append((self._ids[q], score))
        return found
