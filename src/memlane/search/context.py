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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memlane.text import estimate_tokens, one_line

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
    return one_line(item.title or item.content, TITLE_CHARS) or "(empty)"


def _date(item: ContextItem) -> str:
    return item.created_at.strftime("%Y-%m-%d")


def _origin(item: Any) -> str:
    project = getattr(item, "from_project", None)
    return f" [from: {project}]" if project else ""


def index_line(item: ContextItem) -> str:
    """``- #12 2024-05-01 decision: Use WAL mode (0.83) [from: api]`` for one item."""
    score = getattr(item, "score", None)
    score_text = f" ({float(score):.2f})" if isinstance(score, int | float) else ""
    return f"- #{item.id} {_date(item)} {item.type}: {_title(item)}{score_text}{_origin(item)}"


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
        lines.append(f"{mark} #{memory.id} {stamp} {memory.type}: {_title(memory)}")
    return "\n".join(lines)


def _full_header(item: ContextItem) -> str:
    title = f" {one_line(item.title, TITLE_CHARS)}" if item.title else ""
    return f"## #{item.id} {_date(item)} {item.type}{title}{_origin(item)}"


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
