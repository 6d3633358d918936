"""Split conversation turns into search chunks of at most ``max_tokens`` tokens.

Tokens are estimated as characters / 4 (``memlane.text.estimate_tokens``), so a
chunk's whole text, role prefix included, is at most ``4 * max_tokens``
characters.

A turn is cut into blocks: paragraphs (separated by blank lines) and fenced
code blocks (```` ``` ```` or ``~~~``), which are never cut unless a block alone
exceeds the budget; then it is split by lines, and a single over-long line by
characters. Blocks are packed greedily, and consecutive turns of the same role
share a chunk when they fit (an assistant message is often one short line plus
a tool call: alone it would make a poor search document). A role change always
starts a new chunk, whose text begins with ``"user: "`` or ``"assistant: "``.

Chunk indexes run from ``start_index`` in order, so the same turns with the
same ``start_index`` always give the same ``(index, text)`` pairs: the store's
unique (session, chunk index) key makes a re-ingest idempotent. The caller
saves the next index together with the transcript offset it reached.

A chunk's files, tool names and errors are those of the turns it holds; for a
turn split across chunks, only the ones whose text appears in the chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memlane.capture.metadata import TOOL_MARKER
from memlane.capture.transcript import Turn
from memlane.text import estimate_tokens

DEFAULT_MAX_TOKENS = 512
MIN_MAX_TOKENS = 16
_SEPARATOR = "\n\n"
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One searchable piece of a transcript."""

    index: int
    text: str
    role: str
    files: tuple[str, ...] = ()
    tool_names: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    timestamp: datetime | None = None
    token_estimate: int = 0
    # Transcript byte offset after the last turn in this chunk.
    end_offset: int = 0


def split_blocks(text: str) -> list[tuple[str, bool]]:
    """Paragraphs and fenced code blocks of ``text`` as ``(block, is_code)`` pairs.

    An unclosed fence runs to the end of the text (as Markdown renders it).
    """
    if "```" not in text and "~~~" not in text:
        return _paragraphs(text)  # no line can open a fence: skip the per-line regex
    return fenced_blocks(text)


def fenced_blocks(text: str) -> list[tuple[str, bool]]:
    """:func:`split_blocks` line by line, fences recognised (any text; the general case)."""
    blocks: list[tuple[str, bool]] = []
    paragraph: list[str] = []
    fence: list[str] = []
    fence_char = ""
    fence_len = 0
    for line in text.split("\n"):
        if fence:
            fence.append(line)
            stripped = line.strip()
            if (
                len(stripped) >= fence_len
                and stripped == fence_char * len(stripped)
                and len(line) - len(line.lstrip(" ")) <= 3
            ):
                blocks.append(("\n".join(fence), True))
                fence = []
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            if paragraph:
                blocks.append(("\n".join(paragraph), False))
                paragraph = []
            fence = [line]
            fence_char = opening.group(1)[0]
            fence_len = len(opening.group(1))
            continue
        if line.strip():
            paragraph.append(line)
        elif paragraph:
            blocks.append(("\n".join(paragraph), False))
            paragraph = []
    if fence:
        blocks.append(("\n".join(fence), True))
    if paragraph:
        blocks.append(("\n".join(paragraph), False))
    return blocks


def _paragraphs(text: str) -> list[tuple[str, bool]]:
    """split_blocks of a text without fences: runs of non-blank lines."""
    blocks: list[tuple[str, bool]] = []
    paragraph: list[str] = []
    for line in text.split("\n"):
        if line.strip():
            paragraph.append(line)
        elif paragraph:
            blocks.append(("\n".join(paragraph), False))
            paragraph = []
    if paragraph:
        blocks.append(("\n".join(paragraph), False))
    return blocks


def hard_split(block: str, budget: int) -> list[str]:
    """Cut ``block`` into pieces of at most ``budget`` characters at line boundaries.

    A line longer than the budget is cut at its last space within the budget (the space
    dropped) when that space lies in the budget's second half, else into budget-sized
    slices (a long URL, minified code): a word split in two is found by neither half.
    """
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in block.split("\n"):
        while len(line) > budget:
            if current:
                pieces.append("\n".join(current))
                current, size = [], 0
            space = line.rfind(" ", budget // 2, budget + 1)
            if space > 0:
                pieces.append(line[:space])
                line = line[space + 1 :]
            else:
                pieces.append(line[:budget])
                line = line[budget:]
        added = len(line) + (1 if current else 0)
        if current and size + added > budget:
            pieces.append("\n".join(current))
            current, size = [], 0
            added = len(line)
        current.append(line)
        size += added
    if current:
        pieces.append("\n".join(current))
    return [p for p in pieces if p.strip()]


def _turn_pieces(text: str, budget: int) -> list[str]:
    pieces: list[str] = []
    for block, _is_code in split_blocks(text):
        if len(block) <= budget:
            pieces.append(block)
        else:
            pieces.extend(hard_split(block, budget))
    return pieces


class _Pending:
    """The chunk being filled: its role, pieces and, per turn, the pieces it holds."""

    __slots__ = ("pieces", "role", "size", "turns")

    def __init__(self, role: str) -> None:
        self.role = role
        self.pieces: list[str] = []
        self.size = 0
        # (turn, text of the pieces of that turn in this chunk, whole turn inside?)
        self.turns: list[tuple[Turn, list[str], int]] = []


def chunk_turns(
    turns: Iterable[Turn], max_tokens: int = DEFAULT_MAX_TOKENS, start_index: int = 0
) -> list[Chunk]:
    """Chunks of ``turns``, each at most ``max_tokens`` estimated tokens.

    Raises ``ValueError`` when ``max_tokens`` is below 16 (no room for text).
    """
    if max_tokens < MIN_MAX_TOKENS:
        raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, got {max_tokens}")
    limit = max_tokens * 4
    chunks: list[Chunk] = []
    pending: _Pending | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None and pending.pieces:
            chunks.append(_make_chunk(start_index + len(chunks), pending))
        pending = None

    for turn in turns:
        prefix = f"{turn.role}: "
        budget = limit - len(prefix)
        if pending is not None and pending.role != turn.role:
            flush()
        pieces = _turn_pieces(turn.text, budget)
        total = len(pieces)
        for piece in pieces:
            added = len(piece) + (len(_SEPARATOR) if pending and pending.pieces else 0)
            if pending is not None and pending.size + added > budget:
                flush()
            if pending is None:
                pending = _Pending(turn.role)
                added = len(piece)
            pending.pieces.append(piece)
            pending.size += added
            if pending.turns and pending.turns[-1][0] is turn:
                pending.turns[-1][1].append(piece)
            else:
                pending.turns.append((turn, [piece], total))
    flush()
    return chunks


def _make_chunk(index: int, pending: _Pending) -> Chunk:
    text = f"{pending.role}: " + _SEPARATOR.join(pending.pieces)
    files: list[str] = []
    tools: list[str] = []
    errors: list[str] = []
    for turn, pieces, total in pending.turns:
        if len(pieces) == total:
            files.extend(turn.files)
            tools.extend(turn.tool_names)
            errors.extend(turn.errors)
            continue
        body = _SEPARATOR.join(pieces)
        files.extend(f for f in turn.files if f in body)
        tools.extend(t for t in turn.tool_names if TOOL_MARKER.format(name=t) in body)
        errors.extend(e for e in turn.errors if _error_in(e, body))
    first = pending.turns[0][0]
    return Chunk(
        index=index,
        text=text,
        role=pending.role,
        files=_unique(files),
        tool_names=_unique(tools),
        errors=_unique(errors),
        timestamp=first.timestamp,
        token_estimate=estimate_tokens(text),
        end_offset=max(turn.end_offset for turn, _, _ in pending.turns),
    )


def _error_in(error: str, body: str) -> bool:
    # Errors are normalised ("exit code 1" from "Exit code 1"), so compare loosely.
    probe = error[:60].lower()
    return probe in body.lower()


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
