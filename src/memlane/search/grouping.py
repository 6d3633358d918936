"""Group the hits that are pieces of one split record (DESIGN §6, "Grouping").

The capture pipeline cuts a long transcript turn into several memories so that
each is a good search document. When a search finds two neighbouring pieces of
one turn, they are one answer, not two: they become one hit, represented by its
best-scored piece, and the hit lists every piece it stands for (``members``).

Only what the write path records says that two memories are pieces of one
record — never time (imported chats carry one timestamp per session, so a time
window merged whole sessions and hid their evidence), and never a field a
user's file may carry (an imported JSONL record is never split):

* both come from transcript ingestion (``source == TRANSCRIPT_SOURCE``) in one
  session, at consecutive ``metadata["chunk_index"]`` positions, and
* units (which record ``metadata["part"]``, the piece's number within its
  block, and ``metadata["turn"]``): the later one continues the earlier one —
  its ``part`` is the earlier one's plus one, in the same turn. Two units of one
  turn that are separate blocks (two tool calls, two reply paragraphs) are
  separate evidence and stay apart;
* chunks (no ``part``): the same ``metadata["role"]``; the chunker starts a new
  chunk on every role change, so same-role neighbours are one turn cut in pieces.

Memories that record one tool call (``metadata[CALL_KEY]``, in one session: the
PostToolUse observation and the transcript units of that call) are one answer
too, whatever their words: a search listed every command twice, as ``Ran: X`` and
``$ X``. Such a group is shown by the member that shows what the call did when its
best-scored one only names the call (``Read lib/app.ex``: all a transcript-captured
Read's observation holds). Recall asks for them apart (``calls=False``): the prompt
hook's selection shows, of one call's memories, the first whose passage holds the
prompt's words (:mod:`memlane.search.selection`), which another member's may not.

Standard library only: this runs on the per-prompt path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memlane.models import CALL_KEY, TRANSCRIPT_SOURCE

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Group(Generic[T]):
    """Pieces of one record among the hits, represented by their best-scored piece."""

    best: T
    score: float
    members: tuple[T, ...]  # in piece order, ``best`` included


def _int(metadata: dict[str, Any], key: str) -> int | None:
    value = metadata.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _piece(item: Any) -> tuple[str, int, dict[str, Any]] | None:
    """(session, chunk index, metadata) of a transcript piece; None for anything else."""
    if getattr(item, "source", None) != TRANSCRIPT_SOURCE:
        return None
    session = getattr(item, "session_id", None)
    metadata = getattr(item, "metadata", None)
    if not session or not isinstance(metadata, dict):
        return None
    index = _int(metadata, "chunk_index")
    return None if index is None else (str(session), index, metadata)


def call_of(item: Any) -> tuple[str, str] | None:
    """(session, call id) of a memory that records one tool call; None otherwise."""
    session = getattr(item, "session_id", None)
    metadata = getattr(item, "metadata", None)
    if not session or not isinstance(metadata, dict):
        return None
    call = metadata.get(CALL_KEY)
    return (str(session), call) if isinstance(call, str) and call else None


def names_only(item: Any) -> bool:
    """Whether ``item`` holds nothing but its title (``Read lib/app.ex``: the observation of
    a call captured from its transcript, whose unit holds what the call read)."""
    return (
        str(getattr(item, "content", "")).strip() == str(getattr(item, "title", "") or "").strip()
    )


def continues(earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """Whether the piece with metadata ``later`` continues the one with ``earlier``.

    Both are at consecutive chunk indexes of one session (the caller checks).
    """
    part_a, part_b = _int(earlier, "part"), _int(later, "part")
    if part_a is not None or part_b is not None:
        return (
            part_a is not None and part_b == part_a + 1 and earlier.get("turn") == later.get("turn")
        )
    return earlier.get("role") == later.get("role")


def group_pieces(hits: Sequence[tuple[T, float]], *, calls: bool = True) -> list[Group[T]]:
    """Group ``(item, score)`` hits that are pieces of one record or (with ``calls``)
    record one tool call; best groups first.

    Only hits given are grouped: two pieces separated by a piece that is not a
    hit stay apart. Each group carries its best member's score (the first in
    input order on ties) and is shown by that member, unless it only names its call
    and another member shows more; items that are no piece stay alone. The sort is
    stable, so groups of equal score keep the input order.
    """
    parent = list(range(len(hits)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    pieces: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
    for i, (item, _) in enumerate(hits):
        found = _piece(item)
        if found is not None:
            session, index, metadata = found
            pieces.setdefault((session, index), (i, metadata))
    for (session, index), (i, metadata) in sorted(pieces.items()):
        before = pieces.get((session, index - 1))
        if before is not None and continues(before[1], metadata):
            a, b = find(before[0]), find(i)
            parent[max(a, b)] = min(a, b)
    first_of_call: dict[tuple[str, str], int] = {}
    for i, (item, _) in enumerate(hits):
        call = call_of(item) if calls else None
        if call is not None:
            a, b = find(first_of_call.setdefault(call, i)), find(i)
            parent[max(a, b)] = min(a, b)

    groups: dict[int, list[int]] = {}
    for i in range(len(hits)):
        groups.setdefault(find(i), []).append(i)
    result: list[Group[T]] = []
    for member_idx in groups.values():
        best_i = max(member_idx, key=lambda i: (hits[i][1], -i))
        shown_i = best_i
        if names_only(hits[best_i][0]):
            shown_i = max(member_idx, key=lambda i: (not names_only(hits[i][0]), hits[i][1], -i))

        def order(i: int) -> tuple[int, int]:
            found = _piece(hits[i][0])
            return (found[1] if found is not None else 0, i)

        ordered = tuple(hits[i][0] for i in sorted(member_idx, key=order))
        result.append(Group(best=hits[shown_i][0], score=hits[best_i][1], members=ordered))
    result.sort(key=lambda g: -g.score)
    return result
