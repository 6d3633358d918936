"""How many memories hold each query word, remembered between searches.

Keyword ranking weighs a word by its document frequency (its idf,
:mod:`memlane.search.bm25`). Counting a common word in the full-text index costs
~0.1 ms, and the worker's keyword recall counts every word of every prompt: ~1 ms
a prompt over 50,000 memories (``benchmarks/hooks_bench.py``). A word's weight
hardly moves when a few memories are added, so a count is reused while the store
holds within ``DRIFT`` of the memories it held when the word was counted, and
asked again past that. Standard library only: this runs on the per-prompt path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from memlane.store.base import Store
    from memlane.store.query import FtsQuery

# Share of the store's size it may grow or shrink by before a count is asked again.
DRIFT = 0.05
# Words remembered at most (the whole memory is dropped when full: a new vocabulary).
MAX_WORDS = 20_000


class WordCounts:
    """Document frequencies of words, from ``store.match_counts``, kept while the store's
    size stays within ``DRIFT`` of the size each was counted at. Thread-safe."""

    def __init__(self, store: Store, query_of: Callable[[str], FtsQuery]) -> None:
        self.store = store
        self.query_of = query_of
        self._counts: dict[str, tuple[int, int]] = {}  # word -> (count, store size then)
        self._lock = threading.Lock()

    def counts(self, words: Sequence[str]) -> tuple[int, list[int]]:
        """The store's size and how many memories hold each of ``words``."""
        total, _ = self.store.match_counts([])
        with self._lock:
            found = {
                word: entry[0]
                for word in words
                if (entry := self._counts.get(word)) is not None
                and abs(total - entry[1]) <= DRIFT * entry[1]
            }
        missing = [word for word in dict.fromkeys(words) if word not in found]
        if missing:
            total, fresh = self.store.match_counts([self.query_of(word) for word in missing])
            with self._lock:
                if len(self._counts) + len(missing) > MAX_WORDS:
                    self._counts.clear()
                for word, count in zip(missing, fresh, strict=True):
                    self._counts[word] = (count, total)
                    found[word] = count
        return total, [found[word] for word in words]
