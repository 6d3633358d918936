"""What of a recall result is worth injecting into a prompt.

The prompt hook searches a few more candidates than it may inject, then keeps,
best first, at most ``limit`` hits that pass every rule:

* never the current session's own memories (the agent has them);
* nothing for a prompt without content words (``ok``, a stop-word line);
* nothing scoring under the floor (``min_relevance_score``: search scores are
  absolute, 0..1);
* nothing for a prompt that **names only things memory has never seen**: when
  every identifier, acronym, file name or capitalised name in it
  (``total_cents``, ``OpenAPI``, ``PDF``, ``xterm.js``, ``Kotlin``:
  :func:`~memlane.search.passages.named_things`, ``proper_nouns``) is in no
  stored memory, not even as the start of a word, the prompt is about other
  work, and what its ordinary words ("add a migration for the … table") match is
  not about it. ``benchmarks/recall_floor.py`` counts the prompts it silences,
  related and not (README, "Coding recall");
* **visible evidence**: the passage the injection would show (its best window
  of ``EVIDENCE_ROOM`` characters, :mod:`memlane.search.passages`) and the
  title hold half of the prompt's content words, at least one (two of three or
  more) and at most ``MIN_SHOWN_TERMS``. A memory that shares one generic word
  with the prompt ("add", "test", "table") scores well against a small store,
  yet what it would show says nothing about the prompt. Measured on the coding-recall questions
  (dev split) and their 30 unrelated prompts, against the same floors without
  the rule: keyword recall keeps its answered questions and injects for about a
  third as many unrelated prompts; hybrid recall likewise (README, "Coding
  recall"). Half is rounded up when the prompt also names something memory has
  never seen (it is at least partly about other work: "add OpenTelemetry to the
  Flask API" against a memory about "the API route"), and down otherwise: a
  question about past work often pairs two of its words with a paraphrase
  ("why was the first push of the feature branch **rejected**" against
  ``fatal: … no upstream branch``). The two differ for a prompt of five words;
* **an instruction needs most of its words**: a prompt that asks for new work
  ("add a unique index on the users email column", "set up Oban with a cron
  job", "how do I stream a CSV download": :func:`asks_for_work`) and does not
  point back at past work ("like we did", "last time", "again") is answered by
  the code, not by memory. A past edit of the same project shares its everyday
  words (migration, LiveView, index, test) with almost any new task, so such a
  prompt gets a memory only when the shown passage holds ``WORK_SHARE`` (three in
  five) of its words, whatever ``MIN_SHOWN_TERMS`` says. Questions ("which
  commit…", "what does … default to") keep the rule above.

A hit that records the same tool call as a hit already chosen (an observation
and a transcript unit of one call, whatever their words: a web search's digest
and its results), or whose words are mostly those of one, is left out: it
would show the same thing twice; when the prompt asks for the last or the first
of several like things ("by the final credo run", "the first time the tests
passed": :func:`asks_for_order`), the later or the earlier of the two is shown
in that place; so is the one that shows what a call did, where the chosen one
only names the call (``Read lib/app.ex``, all a transcript-captured Read's
observation holds). Two hits about different files are never
the same thing: an edit of a module and one of its test share most of their
identifiers, yet each shows its own change. :func:`with_neighbours` then shows each
chosen transcript unit with the unit that followed it, and each imported chat turn
with the turn of its session that followed it (small to big): a question lands on the
turn that asked, the answer is in the reply.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from memlane.search.grouping import names_only
from memlane.search.passages import (
    asks_for_amount,
    best_passage,
    matching_terms,
    named_things,
    prompt_terms,
    proper_nouns,
)
from memlane.text import content_words, repeats

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from memlane.models import Memory, SearchHit
    from memlane.store.base import Store

MIN_SHOWN_TERMS = 3
# About what one of three items shows within the default 1,200-character budget.
EVIDENCE_ROOM = 330


def needed_terms(terms: tuple[str, ...], *, strict: bool = True) -> int:
    """How many prompt words a shown passage must hold: half of them, rounded up when
    ``strict``, else down but at least two of three or more; 1 to ``MIN_SHOWN_TERMS``."""
    count = len(terms)
    half = (count + 1) // 2 if strict else max(count // 2, 2 if count >= 3 else 1)
    return max(1, min(MIN_SHOWN_TERMS, half))


def shown_terms(hit: SearchHit, terms: tuple[str, ...], *, amounts: bool = False) -> int:
    """How many of ``terms`` the hit's title and best passage show (``amounts``: see
    :func:`~memlane.search.passages.best_passage`). One window: words scattered over a
    long memory are weaker evidence than words together, and a second window let
    memories about other things through (``recall_floor.py``: LongMemEval's
    nothing-relevant prompts that get anything 0.07 → 0.13, keyword recall)."""
    passage = best_passage(hit.content, terms, EVIDENCE_ROOM, amounts=amounts, second=False)
    return len(matching_terms(f"{hit.title}\n{passage.text}", terms))


# An instruction or a how-to ("add …", "set up …", "how do I …"): the prompt asks for
# new work. "Please" and "can you" may come first. Word sets, not one large regex: this
# runs on every prompt, and compiling such a pattern costs a hook process ~1 ms.
_WORK_VERBS = frozenset(
    [
        "add",
        "write",
        "setup",
        "configure",
        "make",
        "implement",
        "create",
        "fix",
        "refactor",
        "update",
        "remove",
        "delete",
        "migrate",
        "deploy",
        "use",
        "bind",
        "resize",
        "render",
        "build",
        "generate",
        "install",
        "run",
        "rename",
        "move",
        "convert",
        "split",
        "merge",
        "optimise",
        "optimize",
        "profile",
        "document",
        "enable",
        "disable",
        "replace",
        "upgrade",
        "bump",
        "debug",
        "investigate",
        "clean",
        "change",
        "rewrite",
        "port",
        "wire",
        "integrate",
        "extract",
        "parse",
        "translate",
        "cache",
        "validate",
        "handle",
        "review",
        "group",
    ]
)
_WORK_PAIRS = frozenset((("set", "up"), ("speed", "up")))
_POLITE = {("please",): 1, ("let's",): 1, ("lets",): 1, ("can", "you"): 2, ("could", "you"): 2}
_HOW_ASKED = frozenset(("do", "can", "should", "would"))
_HOW_WHO = frozenset(("i", "we", "you", "one"))
# Words that point back at past work ("like we did", "the fix from last time", "again").
_PAST_WORDS = frozenset(
    [
        "did",
        "didn't",
        "was",
        "wasn't",
        "were",
        "weren't",
        "had",
        "hadn't",
        "went",
        "got",
        "made",
        "found",
        "decided",
        "chose",
        "tried",
        "last",
        "earlier",
        "before",
        "previous",
        "previously",
        "again",
        "remember",
        "recall",
        "remind",
        "ago",
        "yesterday",
        "originally",
        "we've",
        "we'd",
    ]
)
_PAST_PAIRS = frozenset((("ended", "up"), ("used", "to")))
_PROMPT_WORD = re.compile(r"[\w']+")


def _asks_for_new_work(words: list[str]) -> bool:
    """Whether the prompt's ``words`` (lower-cased, in order) open an instruction or a how-to."""
    if words[:1] == ["how"]:
        return words[1:2] == ["to"] or (
            len(words) >= 3 and words[1] in _HOW_ASKED and words[2] in _HOW_WHO
        )
    skip = _POLITE.get(tuple(words[:1]), 0) or _POLITE.get(tuple(words[:2]), 0)
    first = words[skip : skip + 2]
    return bool(first) and (first[0] in _WORK_VERBS or tuple(first) in _WORK_PAIRS)


# Share of an instruction's words a memory must show to be injected for it.
WORK_SHARE = 0.6


def asks_for_work(prompt: str) -> bool:
    """Whether ``prompt`` asks for new work (an instruction or a how-to) without pointing
    back at past work: the last rule of the module docstring."""
    lowered = prompt.lower().lstrip()
    if not lowered[:1].isalpha():  # an instruction starts with its word
        return False
    words = _PROMPT_WORD.findall(lowered)
    if not _asks_for_new_work(words):
        return False
    return _PAST_WORDS.isdisjoint(words) and _PAST_PAIRS.isdisjoint(itertools.pairwise(words))


def evidence_needed(
    prompt: str, terms: tuple[str, ...], known: Callable[[str], bool] | None
) -> int | None:
    """How many of ``terms`` (the prompt's words) an injected memory must show, or None
    when ``prompt`` names things (:func:`~memlane.search.passages.named_things`,
    :func:`~memlane.search.passages.proper_nouns`) and ``known`` holds none of them:
    the rules of the module docstring. Without ``known``, names are not checked and
    half is rounded up."""
    needed = _words_needed(prompt, terms, known)
    if needed is not None and asks_for_work(prompt):
        return max(needed, math.ceil(WORK_SHARE * len(terms)))
    return needed


def _words_needed(
    prompt: str, terms: tuple[str, ...], known: Callable[[str], bool] | None
) -> int | None:
    if known is None:
        return needed_terms(terms)
    any_known = any_unknown = False
    for name in named_things(prompt) | proper_nouns(prompt):
        if known(name):
            any_known = True
        else:
            any_unknown = True
        if any_known and any_unknown:
            break
    if any_unknown and not any_known:
        return None
    return needed_terms(terms, strict=any_unknown)


def select_recall(
    prompt: str,
    hits: Sequence[SearchHit],
    *,
    session_id: str | None,
    limit: int,
    min_score: float = 0.0,
    known: Callable[[str], bool] | None = None,
) -> list[SearchHit]:
    """The hits worth injecting for ``prompt``, best first (see the module docstring).

    ``known(name)``: whether any stored memory holds ``name``; without it, names
    are not checked (:func:`evidence_needed`).
    """
    terms = prompt_terms(prompt)
    if limit <= 0 or not terms or not hits:
        return []
    needed = evidence_needed(prompt, terms, known)
    if needed is None:
        return []
    amounts = asks_for_amount(prompt)
    order = asks_for_order(prompt)
    chosen: list[SearchHit] = []
    seen: list[tuple[SearchHit, set[str]]] = []
    for hit in hits:
        if session_id is not None and hit.session_id == session_id:
            continue
        if hit.score < min_score or shown_terms(hit, terms, amounts=amounts) < needed:
            continue
        words = content_words(f"{hit.title}\n{hit.content}")
        twin = next(
            (n for n, earlier in enumerate(seen) if _same_thing(hit, words, *earlier)), None
        )
        if twin is not None:
            if (order and _further(hit, seen[twin][0], order)) or _shows_more_of_one_call(
                hit, seen[twin][0]
            ):
                seen[twin] = (hit, words)
                chosen[twin] = hit
            continue
        seen.append((hit, words))
        chosen.append(hit)
        if len(chosen) >= limit:
            break
    return chosen


# Words that ask for the last or the first of several like things ("by the final credo
# run", "the first time the tests passed"): of two hits saying the same thing, the later or
# the earlier one is shown (:func:`asks_for_order`).
_LAST_WORDS = frozenset(("final", "finally", "last", "latest", "eventually", "newest"))
_FIRST_WORDS = frozenset(("first", "initially", "originally", "earliest", "oldest"))


def asks_for_order(prompt: str) -> int:
    """1 when ``prompt`` asks for the last of several like things, -1 for the first, else 0
    (both or neither)."""
    words = set(_PROMPT_WORD.findall(prompt.lower()))
    last, first = not _LAST_WORDS.isdisjoint(words), not _FIRST_WORDS.isdisjoint(words)
    return int(last) - int(first)


def _further(hit: SearchHit, earlier: SearchHit, order: int) -> bool:
    """Whether ``hit`` is later (``order`` 1) or earlier (-1) than ``earlier``."""
    if hit.created_at == earlier.created_at:
        return False
    return (hit.created_at > earlier.created_at) == (order > 0)


def _shows_more_of_one_call(hit: SearchHit, earlier: SearchHit) -> bool:
    """Whether ``hit`` records the call ``earlier`` records and shows what it did where
    ``earlier`` only names it."""
    return (
        hit.call is not None
        and (hit.call, hit.session_id) == (earlier.call, earlier.session_id)
        and names_only(earlier)
        and not names_only(hit)
    )


def _same_thing(
    hit: SearchHit, words: set[str], earlier: SearchHit, earlier_words: set[str]
) -> bool:
    """Whether ``hit`` (its content words ``words``) says again what an ``earlier`` one
    said. The observation of a tool call and a transcript unit of the same call record
    one thing, however their words differ (a web search's digest and its results).
    Otherwise: its words are mostly the earlier one's, and the two are not about
    different files (an edit of ``lib/renderer.ex`` and one of
    ``test/renderer_test.exs`` share most of their identifiers, yet each shows its own
    change)."""
    one_call = hit.call is not None and (hit.call, hit.session_id) == (
        earlier.call,
        earlier.session_id,
    )
    if one_call and hit.kind != earlier.kind:
        return True
    if hit.files and earlier.files and set(hit.files).isdisjoint(earlier.files):
        return False
    return repeats(words, earlier_words)


def holds_word(store: Store, word: str, kinds: Sequence[str] | None = None) -> bool:
    """Whether a memory of ``store`` (of ``kinds``: all when None) holds ``word`` or a
    word it begins (``PDF`` in "PDFs"), its parts adjacent as the store tokenizes it.
    Recall asks among the kinds it injects, so the prompt being answered, stored as a
    ``prompt`` memory just before, does not count."""
    from memlane.models import MemoryFilter
    from memlane.store.query import FtsQuery, Term

    query = FtsQuery(terms=(Term(word.lower(), prefix=True),))
    flt = MemoryFilter(kinds=tuple(kinds) if kinds else None)
    return bool(store.fts_candidates(query, flt, 1, scan=1))


# -- small to big -----------------------------------------------------------------------

UNIT_SOURCE = "transcript"
# What a neighbour adds to a unit: enough for a passage to carry on past the unit's end.
NEIGHBOUR_CHARS = 600


def with_neighbours(
    store: Store, hits: Sequence[SearchHit], *, amounts: bool = False
) -> list[SearchHit]:
    """The chosen hits, each transcript unit or imported chat turn shown with what
    followed it (small to big).

    A unit is small so that a search lands on the piece holding the fact; shown,
    it may need the next piece (the command after "let me force a recompile", the
    answer after a question). A **request** — what the user asked — is shown only
    with its answer: without the unit that followed it, it is left out (a past
    prompt is context, not an answer). When the prompt asks for an amount
    (``amounts``), a piece of a long block also brings the definitions of the constants
    it uses from the block's earlier pieces (:func:`_with_block_definitions`).
    """
    out: list[SearchHit] = []
    for hit in hits:
        if amounts:
            hit = _with_block_definitions(store, hit)
        following = _next_unit(store, hit)
        if hit.kind == "turn" and hit.type == "request":
            if following is None:
                continue
            answer = following.content[:NEIGHBOUR_CHARS]
            out.append(replace(hit, content=f"{hit.content}\n→ {answer}"))
        elif following is not None:
            tail = following.content
            if following.title and following.title == hit.title and _unit_index(hit) is not None:
                tail = tail.partition("\n")[2]  # the next part of one call repeats its first line
            out.append(replace(hit, content=f"{hit.content}\n{tail[:NEIGHBOUR_CHARS]}"))
        else:
            out.append(hit)
    return out


# How many earlier pieces of one split block (a long Read) are read for definitions.
BLOCK_PIECES = 12


def _with_block_definitions(store: Store, hit: SearchHit) -> SearchHit:
    """A piece of a split block (a long Read cut into units with the same first line)
    with the lines of the block's earlier pieces that give a number to a constant it
    uses: search lands on the piece that uses ``@sessions_per_page``, and
    ``@sessions_per_page 20`` is at the top of the file, in the first piece."""
    index = _unit_index(hit)
    if index is None:
        return hit
    from memlane.search.passages import constants_used, definitions, segments

    used = constants_used(hit.content) - set(definitions(segments(hit.content)))
    if not used:
        return hit
    lines: list[str] = []
    for earlier in range(index - 1, max(index - BLOCK_PIECES, 0) - 1, -1):
        piece = _unit_at(store, hit, earlier)
        if piece is None or piece.title != hit.title:
            break  # the block's first piece is behind
        for name, (_, line) in definitions(segments(piece.content)).items():
            if name in used and line not in lines:
                lines.append(line)
    if not lines:
        return hit
    return replace(hit, content="\n".join([hit.content, *lines]))


def _unit_index(hit: SearchHit) -> int | None:
    """The index of ``hit`` in its session's transcript units (None for other memories)."""
    if hit.kind != "turn" or not hit.session_id or not hit.source_id:
        return None
    session, _, index = hit.source_id.rpartition(":")
    return int(index) if session == hit.session_id and index.isdigit() else None


def _unit_at(store: Store, hit: SearchHit, index: int) -> Memory | None:
    """The unit at ``index`` of ``hit``'s session's transcript."""
    return store.find_memory(hit.project, source=UNIT_SOURCE, source_id=f"{hit.session_id}:{index}")


def _next_unit(store: Store, hit: SearchHit) -> Memory | None:
    """The unit after ``hit`` in its session's transcript, or the chat turn imported
    after it in its session (None for other memories)."""
    index = _unit_index(hit)
    if index is not None:
        return _unit_at(store, hit, index + 1)
    return _next_turn(store, hit)


# Turns of a session read per query, and at most, to find the one after a turn: an
# imported session often gives every turn the same time, so the turns are read in
# time-then-import order from the hit's time on.
NEXT_TURN_PAGE = 64
NEXT_TURN_SCAN = 4096


def _next_turn(store: Store, hit: SearchHit) -> Memory | None:
    """The turn after ``hit`` in its session when ``hit`` is an imported chat turn
    (``memlane import jsonl``): the next by time, then by import order."""
    from memlane.models import JSONL_SOURCE, MemoryFilter

    if hit.kind != "turn" or not hit.session_id or hit.source != JSONL_SOURCE:
        return None  # e.g. a reply a hook stored: the next one is another exchange

    # The session alone, so the read walks the session's index, not the project's turns.
    flt = MemoryFilter(session_id=hit.session_id, created_after=hit.created_at)
    last = max((hit.id, *hit.members))
    for offset in range(0, NEXT_TURN_SCAN, NEXT_TURN_PAGE):
        page = store.list_memories(flt, limit=NEXT_TURN_PAGE, offset=offset, newest_first=False)
        for memory in page:
            if memory.kind != "turn" or memory.project != hit.project:
                continue
            if (memory.created_at, memory.id) > (hit.created_at, last):
                return memory
        if len(page) < NEXT_TURN_PAGE:
            break
    return None
