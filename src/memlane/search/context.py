"""Turn ranked memories into text for an agent, within a token budget (DESIGN §6).

Progressive disclosure, cheapest first:

1. :func:`render_index`    — one compact line per hit (id, date, type, title, score);
2. :func:`render_timeline` — memories in time order around one id;
3. :func:`render_full`     — whole records.

:func:`pack_context` fills a budget (default 2000 tokens, estimated as chars/4 by
``memlane.text.estimate_tokens``) with full records in the given priority order,
drops duplicates (same normalized text), shortens the last record that only
partly fits, and lists what did not fit as index lines while they fit, so the
agent knows which ids to ask for. **The packed text never exceeds the budget**:
every addition is checked against the estimate of the whole text.

Items are anything with ``id``, ``title``, ``content``, ``created_at`` and
``type`` (``Memory``, ``SearchHit``); ``score`` and ``from_project`` are used when
present. Standard library only (+ ``memlane.text``): this runs in hooks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memlane.text import estimate_tokens, one_line, shorten

DEFAULT_BUDGET_TOKENS = 2000
# A record cut to fewer tokens than this says too little to be worth its header.
MIN_TRUNCATED_TOKENS = 24
TITLE_CHARS = 80
ELLIPSIS = "…"
_SPACE = re.compile(r"\s+")


class ContextItem(Protocol):
    """What the renderers read from a memory or a search hit."""

    @property
    def id(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def type(self) -> str: ...


def normalize_text(text: str) -> str:
    """Dedup key: lower-cased, whitespace collapsed, trimmed."""
    return _SPACE.sub(" ", text).strip().lower()


def _title(item: ContextItem) -> str:
    from memlane.search.framing import one_line_safe

    # (a long content is cut before it is made safe: only its start is shown)
    text = (item.title or item.content)[: TITLE_CHARS * 4]
    return one_line(one_line_safe(text), TITLE_CHARS) or "(empty)"


def _date(item: ContextItem) -> str:
    return item.created_at.strftime("%Y-%m-%d")


def _type(item: ContextItem) -> str:
    from memlane.search.framing import one_line_safe

    return one_line_safe(item.type)


def _origin(item: Any) -> str:
    from memlane.search.framing import one_line_safe

    project = getattr(item, "from_project", None)
    return f" [from: {one_line_safe(project)}]" if project else ""


def index_line(item: ContextItem) -> str:
    """``- #12 2024-05-01 decision: Use WAL mode (0.83) [from: api]`` for one item."""
    score = getattr(item, "score", None)
    score_text = f" ({float(score):.2f})" if isinstance(score, int | float) else ""
    return f"- #{item.id} {_date(item)} {_type(item)}: {_title(item)}{score_text}{_origin(item)}"


def render_index(hits: Iterable[ContextItem]) -> str:
    """Compact index, one line per hit in the given order (see :func:`index_line`)."""
    return "\n".join(index_line(hit) for hit in hits)


def render_timeline(memories: Iterable[ContextItem], anchor_id: int | None = None) -> str:
    """Memories in time order, one line each; the ``anchor_id`` line is marked ``→``."""
    ordered = sorted(memories, key=lambda m: (m.created_at, m.id))
    lines = []
    for memory in ordered:
        mark = "→" if memory.id == anchor_id else " "
        stamp = memory.created_at.strftime("%Y-%m-%d %H:%M")
        lines.append(f"{mark} #{memory.id} {stamp} {_type(memory)}: {_title(memory)}")
    return "\n".join(lines)


def _full_header(item: ContextItem) -> str:
    title = f" {_title(item)}" if item.title else ""
    return f"## #{item.id} {_date(item)} {_type(item)}{title}{_origin(item)}"


def render_full_one(item: ContextItem, content: str | None = None) -> str:
    """One full record: a header line, then its content (or ``content`` if given)."""
    body = item.content if content is None else content
    return f"{_full_header(item)}\n{body.strip()}"


def render_full(memories: Iterable[ContextItem]) -> str:
    """Full records separated by blank lines, in the given order."""
    return "\n\n".join(render_full_one(m) for m in memories)


@dataclass(frozen=True, slots=True)
class PackedContext:
    """Result of :func:`pack_context`.

    ``full_ids``: records shown in full (possibly shortened: ``truncated_ids``);
    ``index_ids``: listed as index lines only; ``duplicate_ids``: dropped as
    duplicates; ``dropped_ids``: neither shown nor listed (budget exhausted).
    """

    text: str
    tokens: int
    full_ids: tuple[int, ...] = ()
    truncated_ids: tuple[int, ...] = ()
    index_ids: tuple[int, ...] = ()
    duplicate_ids: tuple[int, ...] = ()
    dropped_ids: tuple[int, ...] = ()


def _fit_content(prefix: str, item: ContextItem, budget: int) -> str | None:
    """Longest cut of ``item``'s content whose record still fits after ``prefix``."""
    content = item.content.strip()
    lo, hi = 0, len(content)
    best: str | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        cut = content[:mid].rstrip() + ELLIPSIS
        if estimate_tokens(prefix + render_full_one(item, cut)) <= budget:
            best = cut
            lo = mid + 1
        else:
            hi = mid - 1
    if best is None or estimate_tokens(best) < MIN_TRUNCATED_TOKENS:
        return None
    return best


def pack_context(
    items: Sequence[ContextItem],
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    *,
    header: str = "",
    max_full: int | None = None,
    index_overflow: bool = True,
) -> PackedContext:
    """Pack ``items`` (best first) into at most ``budget_tokens`` estimated tokens.

    Walks the items in order: a duplicate (same normalized content, or title when
    content is empty) is skipped; otherwise the full record is added if it fits,
    else shortened (kept only if at least ``MIN_TRUNCATED_TOKENS`` of content
    remain), else — and for every item past ``max_full`` full records — noted for
    the index. Index lines for those follow the full records under "More:" while
    they fit (``index_overflow``). ``header`` opens the text if it fits.

    Guarantee: ``estimate_tokens(result.text) <= max(budget_tokens, 0)`` for any
    input; an empty or non-positive budget gives empty text.
    """
    budget = max(0, budget_tokens)
    text = ""

    def fits(candidate: str) -> bool:
        return estimate_tokens(candidate) <= budget

    if header and fits(header.strip()):
        text = header.strip()

    seen: set[str] = set()
    full_ids: list[int] = []
    truncated_ids: list[int] = []
    duplicate_ids: list[int] = []
    overflow: list[ContextItem] = []
    for item in items:
        key = normalize_text(item.content or item.title)
        if key in seen:
            duplicate_ids.append(item.id)
            continue
        seen.add(key)
        if max_full is not None and len(full_ids) >= max_full:
            overflow.append(item)
            continue
        prefix = text + "\n\n" if text else ""
        record = render_full_one(item)
        if fits(prefix + record):
            text = prefix + record
            full_ids.append(item.id)
            continue
        cut = _fit_content(prefix, item, budget)
        if cut is not None:
            text = prefix + render_full_one(item, cut)
            full_ids.append(item.id)
            truncated_ids.append(item.id)
        else:
            overflow.append(item)

    index_ids: list[int] = []
    dropped_ids: list[int] = []
    if overflow and index_overflow:
        section = (text + "\n\n" if text else "") + "More:"
        for item in overflow:
            candidate = section + "\n" + index_line(item)
            if fits(candidate):
                section = candidate
                index_ids.append(item.id)
            else:
                dropped_ids.append(item.id)
        if index_ids:
            text = section
    else:
        dropped_ids = [item.id for item in overflow]

    return PackedContext(
        text=text,
        tokens=estimate_tokens(text),
        full_ids=tuple(full_ids),
        truncated_ids=tuple(truncated_ids),
        index_ids=tuple(index_ids),
        duplicate_ids=tuple(duplicate_ids),
        dropped_ids=tuple(dropped_ids),
    )


# -- the SessionStart pack --------------------------------------------------------------
#
# What a new session of a project needs first, in this order, within the token budget:
#
# 1. **where the last session stopped**: the newest checkpoint (task, progress, next
#    steps, open questions, files);
# 2. **recent sessions**: the latest summaries (request, outcomes, lessons, files);
# 3. **worth knowing now**: knowledge, notes and lessons of past work (decisions,
#    fixes, constraints: never raw command output or file reads), best first by
#    their context score: recency, *recurrence* (the share of the last sessions whose
#    summaries list the memory's files: what keeps coming back, not what was injected
#    often), access count (its own signal), similarity to what the session is about
#    (the checkpoint's task, else the git branch, searched by keyword) and staleness.
#
# Every piece of memory text is neutralised and escaped (memlane.search.framing):
# only the headings written here start a line with "#".

PACK_CHECKPOINTS = 1
PACK_SUMMARIES = 3
PACK_CANDIDATES = 60
RECENT_SESSIONS = 10
USEFUL_TYPES = ("bugfix", "lesson", "decision", "constraint", "discovery", "feature")
USEFUL_KINDS = ("knowledge", "note")
# Shares of the budget each section may use at most (what one leaves, the next gets).
CHECKPOINT_SHARE = 0.25
SUMMARIES_SHARE = 0.5
ITEM_CHARS = 320
LIST_ITEMS = 6


@dataclass(frozen=True, slots=True)
class PackWeights:
    """Weights of what is "worth knowing now" (each signal in 0..1)."""

    recency: float = 0.4
    recurrence: float = 0.3
    similarity: float = 0.2
    access: float = 0.1


def session_pack(
    store: Any,
    project: str,
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    half_life_days: float = 30.0,
    branch: str | None = None,
    now: datetime | None = None,
    weights: PackWeights | None = None,
    similarity: Callable[[str, int], dict[int, float]] | None = None,
) -> str:
    """The SessionStart pack of ``project`` read from ``store`` ('' when there is nothing).

    ``branch``: the git branch of the new session, the similarity query when no
    checkpoint names a task. ``similarity(query, limit)``: memory id → how well it
    matches the query, 0..1 (the caller's search; without it, no similarity signal).
    """
    from memlane.models import MemoryFilter, utcnow

    moment = now or utcnow()

    def latest(
        kinds: tuple[str, ...], limit: int, types: tuple[str, ...] | None = None
    ) -> list[Any]:
        flt = MemoryFilter(projects=(project,), kinds=kinds, types=types)
        return list(store.list_memories(flt, limit=limit))

    checkpoints = latest(("checkpoint",), PACK_CHECKPOINTS)
    recent_summaries = latest(("summary",), RECENT_SESSIONS)
    summaries = recent_summaries[:PACK_SUMMARIES]
    candidates = latest(USEFUL_KINDS, PACK_CANDIDATES)
    # One read per type (each a seek in the project/kind/type/time index), then the
    # newest of them: these types are rare among observations, so a single read
    # ordered by time would walk every observation of the project.
    observations = [
        m for t in USEFUL_TYPES for m in latest(("observation",), PACK_CANDIDATES, (t,))
    ]
    observations.sort(key=lambda m: (m.created_at, m.id), reverse=True)
    candidates += observations[:PACK_CANDIDATES]
    if not (checkpoints or summaries or candidates):
        return ""
    task = str(checkpoints[0].metadata.get("checkpoint", {}).get("task", "")) if checkpoints else ""
    query = task or (branch or "").replace("/", " ").replace("-", " ").replace("_", " ")
    similar = similarity(query, len(candidates)) if similarity and query.strip() else {}
    # What the last sessions worked on: the files their summaries list.
    recent = [frozenset(s.files) for s in recent_summaries if s.files]
    shown = [line for s in summaries for line in _summary_lines(s)]
    ordered = useful_order(
        candidates,
        recent_files=recent,
        similar=similar,
        now=moment,
        half_life_days=half_life_days,
        weights=weights or PackWeights(),
    )
    useful = _restating_left_out(ordered, shown)
    return render_pack(project, checkpoints[:1], summaries, useful, budget_tokens)


def _restating_left_out(memories: Sequence[Any], shown: Sequence[str] = ()) -> list[Any]:
    """``memories`` without restatements, by recall's rule (:func:`memlane.text.repeats`): one that
    says nothing a memory before it did not ("JSON is only processed on exit code 0" after
    "You must exit with code 0 for JSON output to be processed"), or a line of ``shown``
    (the summaries' outcomes and lessons, which list a bugfix cut short) did not, is left
    out, and when the later one is the fuller, it takes the earlier one's place."""
    from memlane.text import content_words, repeats

    above = [content_words(line) for line in shown]
    kept: list[tuple[Any, set[str]]] = []
    for memory in memories:
        words = content_words(memory.content or memory.title)
        if any(repeats(words, earlier) for earlier in above):
            continue
        if any(repeats(words, earlier) for _, earlier in kept):
            continue
        fuller = next((n for n, (_, earlier) in enumerate(kept) if repeats(earlier, words)), None)
        if fuller is None:
            kept.append((memory, words))
        else:
            kept[fuller] = (memory, words)
    return [memory for memory, _ in kept]


def recurrence(files: Sequence[str], recent_files: Sequence[frozenset[str]]) -> float:
    """Share of the recent sessions (the files each worked on) that touched ``files``."""
    if not files or not recent_files:
        return 0.0
    wanted = set(files)
    return sum(1 for touched in recent_files if wanted & touched) / len(recent_files)


def useful_order(
    memories: Sequence[Any],
    *,
    recent_files: Sequence[frozenset[str]],
    similar: dict[int, float],
    now: datetime,
    half_life_days: float,
    weights: PackWeights,
) -> list[Any]:
    """``memories`` best first for a new session (see the section comment), unique by id."""
    from memlane.models import to_epoch
    from memlane.search.scoring import frequency, recency, staleness_penalty

    def score(memory: Any) -> float:
        raw = (
            weights.recency * recency(to_epoch(now) - to_epoch(memory.created_at), half_life_days)
            + weights.recurrence * recurrence(memory.files, recent_files)
            + weights.similarity * similar.get(memory.id, 0.0)
            + weights.access * frequency(memory.access_count)
        )
        return raw * staleness_penalty(memory.stale)

    unique = {m.id: m for m in memories}
    return sorted(unique.values(), key=lambda m: (-score(m), -to_epoch(m.created_at), m.id))


def _summary_lines(summary: Any) -> list[str]:
    data = summary.metadata.get("summary", {})
    return [str(x) for key in ("completed", "learned") for x in data.get(key, ())]


def render_pack(
    project: str,
    checkpoints: Sequence[Any],
    summaries: Sequence[Any],
    useful: Sequence[Any],
    budget_tokens: int,
) -> str:
    """The pack's text: its three sections, each within its share of ``budget_tokens``."""
    from memlane.search.framing import one_line_safe

    budget = max(0, budget_tokens) * 4
    parts = [f"# memlane: past context for {one_line_safe(project)}"]
    used = len(parts[0])

    def add(section: list[str], share: float) -> list[str]:
        """Adds what fits of ``section``; returns the lines added."""
        nonlocal used
        room = min(budget - used, int(budget * share)) if share < 1 else budget - used
        lines: list[str] = []
        size = 0
        for line in section:
            if size + len(line) + 1 > room:
                break
            lines.append(line)
            size += len(line) + 1
        if len(lines) > 1:  # a heading alone says nothing
            parts.append("\n".join(lines))
            used += size + 2
            return lines
        return []

    # Outcomes a checkpoint shows as its progress are not listed again under its session.
    progress: dict[str | None, set[str]] = {}
    for checkpoint in checkpoints:
        added = add(_checkpoint_lines(checkpoint), CHECKPOINT_SHARE)
        if any(line.startswith("Progress: ") for line in added):
            shown = list(checkpoint.metadata.get("checkpoint", {}).get("progress", ()))
            progress.setdefault(checkpoint.session_id, set()).update(
                normalize_text(str(item)) for item in shown[-LIST_ITEMS:]
            )
    if summaries:
        lines = ["## Recent sessions"]
        for summary in summaries:
            lines.extend(_summary_block(summary, progress.get(summary.session_id, set())))
        add(lines, SUMMARIES_SHARE)
    if useful:
        lines = ["## Worth knowing"]  # each line names its type: decision, note, …
        lines.extend(
            f"- {_date(m)} {_type(m)}: {_shorten(one_line_safe(m.content or m.title))}"
            for m in useful
        )
        add(lines, 1.0)
    return "\n\n".join(parts) if len(parts) > 1 else ""


def _shorten(text: str, limit: int = ITEM_CHARS) -> str:
    return shorten(text, limit)


def _items(label: str, values: Any, limit: int = LIST_ITEMS, *, last: bool = False) -> str:
    """``label: a; b; c`` of the first (or ``last``) ``limit`` values, each made safe."""
    from memlane.search.framing import one_line_safe

    chosen = list(values or ())
    chosen = chosen[-limit:] if last else chosen[:limit]
    items = [_shorten(one_line_safe(str(v)), 200) for v in chosen]
    return f"{label}: " + "; ".join(items) if items else ""


def _checkpoint_lines(memory: Any) -> list[str]:
    from memlane.search.framing import one_line_safe, session_label

    data = memory.metadata.get("checkpoint", {})
    session = session_label(memory.session_id)
    lines = [f"## Where the last session stopped ({_date(memory)}, session {session})"]
    if data.get("task"):
        lines.append("Task: " + _shorten(one_line_safe(str(data["task"])), 400))
    lines += [
        _items("Progress", data.get("progress"), last=True),
        _items("Next steps", data.get("next_steps")),
        _items("Open questions", data.get("questions")),
        _items("Files", data.get("files"), 10),
    ]
    return [line for line in lines if line]


def _summary_block(memory: Any, shown: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """A recent session's lines; outcomes whose normalised text is in ``shown`` left out."""
    from memlane.search.framing import one_line_safe, session_label

    data = memory.metadata.get("summary", {})
    session = session_label(memory.session_id)
    request = _shorten(one_line_safe(str(data.get("request") or memory.title)), 300)
    lines = [f"- {_date(memory)} · session {session}: {request}"]
    from memlane.outcomes import most_telling

    completed = [str(c) for c in data.get("completed", ()) if normalize_text(str(c)) not in shown]
    for label, values, limit, last in (
        ("Completed", most_telling(completed, 5), 5, True),
        ("Learned", data.get("learned"), 8, False),
    ):
        line = _items(label, values, limit, last=last)
        if line:
            lines.append("  " + line)
    files = _items("Files", data.get("files"), 8)
    if files:
        lines.append("  " + files)
    return lines
