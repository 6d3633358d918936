"""The shared ranking signals, defined once (DESIGN §6, invariants 3 and 5).

Every score memlane computes is built here from the same small helpers:

* ``recency``            exponential decay of age, 1.0 when new, 0.5 after one half-life;
                         ages count back from the newest memory ranked (:func:`recency_anchor`);
* ``frequency``          log-saturating access count, 0.0 never read .. 1.0 read often;
* ``similarity``         cosine similarity clamped to 0..1 (0.0 when there is no vector);
* ``staleness_penalty``  a multiplier, 1.0 when fresh, < 1.0 when a linked file changed;
* ``restatement_penalty`` a multiplier, < 1.0 for a compaction summary, which retells
                         what other memories hold first-hand.

Whether a linked file changed is one rule too, :func:`linked_files_changed`:
search applies it to each candidate, maintenance to every memory when it
refreshes the stored ``stale`` flag.

A candidate's signals are computed once into a :class:`Signals` record. Two scores
are then built from them with explicit weight tuples:

* :func:`search_score` ranks hits for a query: query relevance (fused keyword /
  semantic rank), a share of which the signals decide, as a :class:`SearchScore`;
* :func:`context_score` picks what to inject at session start (no query), as a
  :class:`ContextScore`.

The two scores live on different scales and answer different questions, so they
are different types: comparing one with the other raises ``TypeError`` at run
time and is rejected by mypy (their comparison methods only accept their own type).
Sort with ``key=float`` or compare ``.value`` of the same type.

The module imports only the standard library: it is on the per-prompt hook path.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from memlane.filestate import FILE_STATE_KEY
from memlane.models import to_epoch

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, Self

    from memlane.models import Memory

SECONDS_PER_DAY = 86_400.0
DEFAULT_HALF_LIFE_DAYS = 30.0
# Access count at which ``frequency`` reaches 1.0; beyond it more reads add nothing,
# so one very popular memory cannot outrank every relevant one.
DEFAULT_FREQUENCY_SATURATION = 20
DEFAULT_STALE_FACTOR = 0.5


def recency(age_seconds: float, half_life_days: float = DEFAULT_HALF_LIFE_DAYS) -> float:
    """Exponential decay of age: 1.0 at age 0, 0.5 after ``half_life_days``, → 0.

    A negative age (a memory "from the future", e.g. clock skew or ``as_of`` in the
    past of a row that slipped through) counts as age 0. ``half_life_days`` must be
    positive; ``math.inf`` disables decay (always 1.0).
    """
    if half_life_days <= 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days!r}")
    age = max(0.0, float(age_seconds))
    if math.isinf(half_life_days):
        return 1.0
    return math.pow(0.5, age / (half_life_days * SECONDS_PER_DAY))


def frequency(access_count: int, saturation: int = DEFAULT_FREQUENCY_SATURATION) -> float:
    """Log-saturating use count: 0.0 for never accessed, 1.0 at ``saturation`` or more.

    ``log1p(n) / log1p(saturation)``: the first few reads matter most.
    """
    if saturation < 1:
        raise ValueError(f"saturation must be >= 1, got {saturation!r}")
    n = max(0, int(access_count))
    return min(1.0, math.log1p(n) / math.log1p(saturation))


def similarity(cosine: float | None) -> float:
    """Semantic similarity as a 0..1 signal: the cosine clamped, 0.0 when unknown.

    Negative cosines carry no useful evidence for ranking, so they count as 0.
    ``None`` (no vector for this memory or no query vector) and NaN are 0.0.
    """
    if cosine is None or math.isnan(cosine):
        return 0.0
    return min(1.0, max(0.0, float(cosine)))


# Memory types that restate other memories in the agent's words: Claude Code's compaction
# summary retells the session's requests, errors and fixes, whose own units hold the same
# facts first-hand (the command with its output, the edit, the reply). At equal relevance
# the first-hand unit ranks first; a restatement still ranks where nothing else matches.
# Coding recall (README, "Coding recall"): against 1.0, 0.8 answered 0 to 2 more of the
# held-out questions per row (+0 / +1 / +1 / +2), 0.65 the same total with fewer holdout.
RESTATEMENT_FACTOR = 0.8
RESTATEMENT_TYPES = frozenset(["compaction"])


def restatement_penalty(restated: bool) -> float:
    """A multiplier: ``RESTATEMENT_FACTOR`` for a memory that restates others (a
    compaction summary: :attr:`Signals.restated`), 1.0 otherwise."""
    return RESTATEMENT_FACTOR if restated else 1.0


def staleness_penalty(stale: bool, factor: float = DEFAULT_STALE_FACTOR) -> float:
    """Multiplier applied to a score: 1.0 when fresh, ``factor`` (0 < f ≤ 1) when stale.

    A memory is stale when a file it links to changed after capture; it is demoted,
    not hidden, since it may still be the best explanation available.
    """
    if not 0.0 < factor <= 1.0:
        raise ValueError(f"stale factor must be in (0, 1], got {factor!r}")
    return factor if stale else 1.0


# Seconds of clock slack when comparing a file's mtime with a capture time.
MTIME_SLACK_S = 1.0
# Metadata keys naming the directory a memory's relative file paths start from.
ROOT_KEYS = ("project_root", "cwd")


def capture_time(memory: Memory) -> float:
    """Epoch seconds when the memory's text was written: its creation, or its last revision.

    Not ``updated_at`` alone: a transcript ingested at the end of a session
    stores each turn at the moment it happened, when the files it names were
    as it describes them.
    """
    return to_epoch(memory.updated_at if memory.revision_count else memory.created_at)


def _linked_path(
    name: str, memory: Memory, roots: Mapping[str, str | os.PathLike[str]]
) -> str | None:
    path = os.path.expanduser(name)
    if os.path.isabs(path):
        return path
    for key in ROOT_KEYS:
        base = memory.metadata.get(key)
        if isinstance(base, str) and os.path.isabs(base):
            return os.path.join(base, path)
    root = roots.get(memory.project)
    return None if root is None else os.path.join(root, path)


def _recorded_mtime(state: object) -> tuple[float, int | None] | None:
    """(mtime, size or None) that capture recorded for a file, None when nothing usable was."""
    if not isinstance(state, dict) or "mtime" not in state:
        return None
    try:
        size = state.get("size")
        return float(state["mtime"]), None if size is None else int(size)
    except (TypeError, ValueError):
        return None


def linked_files_changed(
    memory: Memory,
    roots: Mapping[str, str | os.PathLike[str]] | None = None,
    stat: dict[str, os.stat_result | None] | None = None,
) -> bool | None:
    """Whether a file ``memory`` links to changed after capture; None when none could be checked.

    A file whose state capture recorded (``metadata["file_state"]``: mtime and
    size) changed when either differs now, or when it is gone. Otherwise it
    changed when its mtime is later than :func:`capture_time` (plus
    ``MTIME_SLACK_S``), and a file that cannot be found says nothing (a wrong
    root looks like a missing file). Relative paths start from
    ``metadata["project_root"]`` or ``metadata["cwd"]``, else from ``roots``
    (project name → directory); without one they cannot be checked. ``stat``
    caches ``os.stat`` results across calls.
    """
    if not memory.files:
        return None
    recorded = memory.metadata.get(FILE_STATE_KEY)
    recorded = recorded if isinstance(recorded, dict) else {}
    captured = capture_time(memory)
    cache: dict[str, os.stat_result | None] = {} if stat is None else stat
    verdict: bool | None = None
    for name in memory.files:
        path = _linked_path(name, memory, roots or {})
        if path is None:
            continue
        if path not in cache:
            try:
                cache[path] = os.stat(path)
            except OSError:
                cache[path] = None
        st = cache[path]
        known = _recorded_mtime(recorded.get(name))
        if known is not None:
            mtime, size = known
            changed = st is None or (
                abs(st.st_mtime - mtime) > 1e-6 or (size is not None and st.st_size != size)
            )
        elif st is None:
            continue
        else:
            changed = st.st_mtime > captured + MTIME_SLACK_S
        if changed:
            return True
        verdict = False
    return verdict


def recency_anchor(created: Iterable[float], now: float) -> float:
    """The moment ages are counted from: the newest of ``created``, never after ``now``.

    ``created``: epoch seconds of the memories being ranked together. Recency
    thus orders them among themselves — a project whose newest memory is
    months old still sees its latest work first, where ages counted from the
    clock would make every memory equally old — and nothing after ``now`` (an
    ``as_of`` moment) counts. ``now`` when ``created`` is empty.
    """
    return min(max(created, default=now), now)


@dataclass(frozen=True, slots=True)
class Signals:
    """Query-independent and semantic signals of one candidate, each in 0..1.

    Computed once per candidate (see :func:`compute_signals`) and shared by
    :func:`search_score` and :func:`context_score`. Query relevance is not part of
    it: it only exists for a search and is passed to :func:`search_score` directly.
    """

    recency: float
    frequency: float
    similarity: float = 0.0
    stale: bool = False
    restated: bool = False  # a compaction summary: it retells other memories


def compute_signals(
    *,
    age_seconds: float,
    access_count: int = 0,
    cosine: float | None = None,
    stale: bool = False,
    memory_type: str | None = None,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
    frequency_saturation: int = DEFAULT_FREQUENCY_SATURATION,
) -> Signals:
    """Build a candidate's :class:`Signals` from raw facts.

    ``age_seconds`` is ``anchor - created_at`` where ``anchor`` is the
    :func:`recency_anchor` of the memories ranked together (the real time or a
    query's ``as_of`` moment bounds it). ``cosine`` is the query/memory cosine when both
    vectors exist (for context scoring, the similarity to the current task, if any).
    """
    return Signals(
        recency=recency(age_seconds, half_life_days),
        frequency=frequency(access_count, frequency_saturation),
        similarity=similarity(cosine),
        stale=stale,
        restated=memory_type in RESTATEMENT_TYPES,
    )


@dataclass(frozen=True, slots=True)
class SearchWeights:
    """Shares of a hit's relevance that its signals decide (see :func:`search_score`).

    A hit keeps ``1 - (recency + frequency + similarity)`` of its relevance
    whatever its signals and earns the rest by being recent, used and similar:
    the signals order memories of similar relevance and never lift an
    irrelevant one. Defaults: recency 0.2 — of two memories with the same
    words, the one five months older than the newest candidate ranks ~20 %
    lower, yet an old fact that answers the query outranks newer memories
    that answer it less than ~3/4 as well; frequency 0.05; similarity 0.0
    (the fused relevance already holds the semantic rank). A stale memory
    keeps half its score. Recency was chosen on the January/June case and
    LongMemEval dev150 (README "Retrieval quality"), where 0–0.3 move turn R@5 by ≤ 0.02.
    """

    recency: float = 0.2
    frequency: float = 0.05
    similarity: float = 0.0
    stale_factor: float = DEFAULT_STALE_FACTOR

    def __post_init__(self) -> None:
        shares = (self.recency, self.frequency, self.similarity)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError(f"search weights must be >= 0 and sum to at most 1, got {shares}")


@dataclass(frozen=True, slots=True)
class ContextWeights:
    """Weights of :func:`context_score` (what to inject when there is no query).

    Defaults: recency first (0.6: the latest work is what a resumed session needs),
    frequency (0.3: what keeps being recalled), similarity to the current task if
    known (0.1); a stale memory keeps half its score.
    """

    recency: float = 0.6
    frequency: float = 0.3
    similarity: float = 0.1
    stale_factor: float = DEFAULT_STALE_FACTOR


class _Score:
    """A float that only compares with scores of its own type (see module docstring)."""

    __slots__ = ("value",)
    value: float

    def __init__(self, value: float) -> None:
        object.__setattr__(self, "value", float(value))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.value))

    def _check(self, other: object) -> float:
        if type(other) is not type(self):
            raise TypeError(
                f"cannot compare {type(self).__name__} with {type(other).__name__}: "
                "search and context scores are on different scales"
            )
        assert isinstance(other, _Score)
        return other.value

    def __eq__(self, other: object) -> bool:
        return self.value == self._check(other)

    def __lt__(self, other: Self) -> bool:
        return self.value < self._check(other)

    def __le__(self, other: Self) -> bool:
        return self.value <= self._check(other)

    def __gt__(self, other: Self) -> bool:
        return self.value > self._check(other)

    def __ge__(self, other: Self) -> bool:
        return self.value >= self._check(other)


class SearchScore(_Score):
    """Rank of a hit for a query. Only comparable with other ``SearchScore``s."""

    __slots__ = ()


class ContextScore(_Score):
    """Priority of a memory for context injection. Only comparable with ``ContextScore``s."""

    __slots__ = ()


def search_score(
    relevance: float, signals: Signals, weights: SearchWeights = SearchWeights()
) -> SearchScore:
    """Score of a hit for a query: its relevance, a share of it decided by its signals.

    ``relevance × (1 - r - f - s + r·recency + f·frequency + s·similarity)
    × staleness_penalty(stale, w.stale_factor) × restatement_penalty(restated)`` with
    ``r, f, s`` the weights.

    ``relevance`` is the query relevance in 0..1 (values outside are used as
    given); the score is never above it.
    """
    w = weights
    kept = 1.0 - w.recency - w.frequency - w.similarity
    earned = (
        w.recency * signals.recency
        + w.frequency * signals.frequency
        + w.similarity * signals.similarity
    )
    penalty = staleness_penalty(signals.stale, w.stale_factor)
    penalty *= restatement_penalty(signals.restated)
    return SearchScore(relevance * (kept + earned) * penalty)


def context_score(signals: Signals, weights: ContextWeights = ContextWeights()) -> ContextScore:
    """Priority of a memory for context injection (no query).

    ``(w.recency·recency + w.frequency·frequency + w.similarity·similarity)
    × staleness_penalty(stale, w.stale_factor)``.
    """
    raw = (
        weights.recency * signals.recency
        + weights.frequency * signals.frequency
        + weights.similarity * signals.similarity
    )
    return ContextScore(raw * staleness_penalty(signals.stale, weights.stale_factor))
