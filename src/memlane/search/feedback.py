"""Feedback as a ranking signal at recall time: noise demotes, useful lifts a little.

A user marks a memory injected for a prompt as ``noise`` or ``useful``
(:func:`memlane.injections.mark`). The mark holds for **similar prompts**: two
prompts are similar when they share at least ``SIMILAR_SHARE`` of the content
words (the prompt-word rule of recall selection: three letters or more, no stop
words) of the one that has fewer; the similarity ``s`` is that share (1 when
one prompt's words are all in the other). So "why does the retry pass an
idempotency key to stripe" and "does the stripe retry reuse the idempotency
key" are similar (s = 4/5), "fix the flaky login test" is not.

For each recalled memory the most similar mark applies (the latest on a tie):

* ``noise``: the score is multiplied by ``1 - s``: asked again with the same
  words, the memory is not injected again; a prompt sharing 60 % of the words
  keeps 40 % of the score;
* ``useful``: the score is multiplied by ``1 + USEFUL_LIFT * s`` (at most 1).

:func:`apply_feedback` runs in :func:`memlane.search.queries.recall` after the
search, never inside the engine's scoring; a hit that falls under the floor is
not injected, and a lift cannot bring back a hit the search left under it.
"""

from __future__ import annotations

from dataclasses import replace

from memlane.models import SearchResult

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Sequence

    from memlane.models import Feedback
    from memlane.store.base import Store

SIMILAR_SHARE = 0.5
USEFUL_LIFT = 0.2


def prompt_words(text: str) -> frozenset[str]:
    """The content words a mark is compared by (those of recall selection)."""
    from memlane.text import content_words

    return frozenset(content_words(text))


def prompt_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller word set found in the other; 0 below ``SIMILAR_SHARE``."""
    if not a or not b:
        return 0.0
    share = len(a & b) / min(len(a), len(b))
    return share if share >= SIMILAR_SHARE else 0.0


def factor(mark: str, s: float) -> float:
    """What a ``mark`` given for a prompt of similarity ``s`` multiplies a score by."""
    if s <= 0:
        return 1.0
    return 1.0 - s if mark == "noise" else 1.0 + USEFUL_LIFT * s


def strongest(words: frozenset[str], marks: Sequence[Feedback]) -> tuple[str, float] | None:
    """(mark, similarity) of the most similar mark in ``marks`` (oldest first), or None."""
    best: tuple[str, float] | None = None
    for feedback in marks:
        s = prompt_overlap(words, prompt_words(feedback.prompt))
        if s > 0 and (best is None or s >= best[1]):
            best = (feedback.mark, s)
    return best


def apply_feedback(store: Store, prompt: str, hits: SearchResult, floor: float) -> SearchResult:
    """``hits`` rescored by the marks given for similar prompts, best first, none under
    ``floor`` (the result's notice and mode are kept)."""
    if not hits:
        return hits
    marks: dict[int, list[Feedback]] = {}
    for feedback in store.feedback_for([hit.id for hit in hits]):
        marks.setdefault(feedback.memory_id, []).append(feedback)
    if not marks:
        return hits
    words = prompt_words(prompt)
    rescored = []
    for hit in hits:
        found = strongest(words, marks.get(hit.id, ()))
        if found is not None:
            hit = replace(hit, score=min(1.0, hit.score * factor(*found)))
            if hit.score <= 0:
                continue  # marked noise for these very words
        if hit.score >= floor:
            rescored.append(hit)
    rescored.sort(key=lambda hit: -hit.score)
    return SearchResult(rescored, hits.notice, hits.mode)
