"""Query-biased passages: the lines of a memory that answer the prompt.

A recalled memory is shown by the part of it that matches the prompt, not by
its head: a tool result's fact often sits in its last lines, an explanation's
in its third sentence. :func:`best_passage` picks, within a character budget:

1. **segments**: the memory's lines, cleaned for display (line-number arrows,
   ANSI codes, runs of spaces) and long lines cut at sentence or word
   boundaries into pieces of at most ``SEGMENT_CHARS``;
2. **weights**: each query term (content words, stop words dropped) weighs
   ``log(1 + n / df)`` where ``df`` counts the segments holding it: a term on
   every line says little about which line to show;
3. **specific lines**: a matching segment that also names something the prompt
   does not and no other segment names (an identifier, a path, an acronym, a
   hash: :func:`named_things`), or holds ``#2388`` or code in backticks, gains
   half the weight of the prompt's rarest term. A question asks for a thing; the
   line that holds it usually also holds some of the question's words, while the
   line that holds the most of them often only restates the question ("which
   script did we add to the plugin…" against the task description it came
   from). A name on several lines (the file being edited, the task id) is what
   the whole memory is about, not an answer: the commit's output line
   ``[main ceff8c3] feat: add state`` is the answer to "which commit added the
   state", not the ``feat: add state`` of the command that made it. When the
   prompt asks for an amount ("how many tests…", "how often…", "what version…":
   :func:`asks_for_amount`), a matching segment holding a number gains the same:
   ``43 tests, 0 failures`` answers it, the command that printed it does not; and a
   line that uses a named constant whose value, a number, another line gives
   (``@review_heartbeat_interval``, ``MAX_RETRIES``) shows that definition after it
   (:func:`with_definitions`);
4. **the window**: the segment with the most weight (the earliest on a tie),
   the line before it as context, then what follows it (answers come after
   what they answer) as far as the budget goes; at the end of the text,
   earlier lines fill what is left. An earlier start wins when its window, still
   holding that segment, holds more matching weight: the lines of a file about
   the asked thing sit on both sides of the densest one (``"too many commit
   hashes (max 50)"`` above the ``def commit_event`` clause that matched best);
5. **a second window** when a segment outside the first holds a prompt word the
   first does not and weighs at least ``SECOND_WEIGHT`` of the best: the first
   window gets ``FIRST_SHARE`` of the budget and that segment, with what
   follows it, the rest, in text order with an ellipsis between (as a search
   engine's snippet joins fragments). A question pairs words about the context
   ("the review hook", "the plugin") with words about the thing it asks for,
   and a long memory often holds the two in different places: its task
   description first, the line with the answer much further down. Failing that,
   the second window goes to an **echo**: a segment with only words the first
   window shows, but naming something no other segment names (step 3), with the
   same least weight: the outcome that repeats what the window describes
   (git's ``[main 05fd186] feat: close review session`` below a ``git commit -m``
   whose long message fills the first window), so long as the two windows show
   no fewer of the prompt's words than the first alone.

The prompt's terms are its content words and its two-letter acronyms typed in
capitals (``CI``, ``PR``, ``DB``). A term matches a word exactly or, for words of
five letters or more, by its first five letters (``migrations`` finds
``migration``); the words inside a camelCase or PascalCase identifier count as
words (``TranscriptSelection`` holds "transcript" and "selection"), those of a
name the language reserves do not (``__MODULE__``, ``__init__``); CJK terms
match as substrings. The same passages
serve the prompt hook, ``memlane search`` snippets, the dashboard and the MCP
compact index. Standard library only: this runs on every prompt.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from memlane.text import PROMPT_STOPWORDS, content_words, display_text, has_cjk, shorten
from memlane.text import words as text_words

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable

SEGMENT_CHARS = 220
# A second window (step 5 of the module docstring): the weight its segment needs, as a
# share of the best segment's; the share of the room the first window keeps; the least
# room worth giving the second.
SECOND_WEIGHT = 0.5
FIRST_SHARE = 0.6
MIN_SECOND_ROOM = 60
ELLIPSIS = "…"
PREFIX_LETTERS = 5
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """The shown part of a text: ``text`` (ellipses mark cuts) and how much it matched."""

    text: str
    matched: int  # distinct query terms in the passage
    start: int  # index of the first segment shown
    cut_before: bool = False
    cut_after: bool = False


def _is_cjk_term(term: str) -> bool:
    return has_cjk(term[:1])


def segments(text: str, limit: int = SEGMENT_CHARS) -> list[str]:
    """The non-blank display lines of ``text``, each at most ``limit`` characters."""
    out: list[str] = []
    for raw in display_text(text).split("\n"):
        line = " ".join(raw.split())
        while len(line) > limit:
            cut = _cut_point(line, limit)
            out.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        if line:
            out.append(line)
    return out


def _cut_point(line: str, limit: int) -> int:
    """Where to cut an over-long line: the last sentence end, else word break, before ``limit``."""
    best = 0
    for match in _SENTENCE_END.finditer(line, 0, limit):
        best = match.end()
    if best >= limit // 3:
        return best
    space = line.rfind(" ", 0, limit)
    return space if space >= limit // 3 else limit


def query_terms(words: set[str] | frozenset[str]) -> tuple[str, ...]:
    """Query content words as match terms: lower-cased, longest first (deterministic)."""
    return tuple(sorted({w.lower() for w in words if w}, key=lambda w: (-len(w), w)))


SNIPPET_CHARS = 240


def snippet(text: str, query: str, room: int = SNIPPET_CHARS) -> str:
    """The passage of ``text`` that best matches ``query``, for a search result."""
    return best_passage(text, prompt_terms(query), room, amounts=asks_for_amount(query)).text


_ASKS_AMOUNT = re.compile(
    r"\bhow\s+(?:many|much|long|often|frequently|big|large|old|far|fast|slow)\b"
    r"|\b(?:what|which)(?:\s+[\w.+-]+){0,2}?\s+"
    r"(?:version|release|port|size|number|count|timeout|limit|interval)\b",
    re.IGNORECASE,
)
# A number standing alone (``43``, ``10_000``, ``2.1``, a version ``v1.4.7``), not inside a
# name, hash, path or date.
_NUMBER = re.compile(r"(?<![\w.#/:-])(?:v(?=\d))?\d+(?:[_.,]\d+)*(?![\w/:-])")


def asks_for_amount(prompt: str) -> bool:
    """Whether ``prompt`` asks for an amount (how many, how long, which version, what
    Phoenix version, which dialyxir release…)."""
    return _ASKS_AMOUNT.search(prompt) is not None


# A two-letter acronym typed in capitals ("CI", "PR", "DB", "S3"): a content word of the
# prompt, though content words have three letters or more.
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]\b")


def prompt_terms(prompt: str) -> tuple[str, ...]:
    """The match terms of a prompt: its content words (stop words dropped) and its
    two-letter acronyms (``CI`` in "did the plan cover our CI pipeline")."""
    acronyms = {a.lower() for a in _ACRONYM.findall(prompt)} - PROMPT_STOPWORDS
    return query_terms(content_words(prompt) | acronyms)


def _matcher(term: str) -> tuple[str, bool, bool]:
    """(probe, is_prefix, is_cjk): words of five letters or more match by their first
    five; a CJK term as a substring."""
    if _is_cjk_term(term):
        return term, False, True
    if len(term) >= PREFIX_LETTERS:
        return term[:PREFIX_LETTERS], True, False
    return term, False, False


def matching_terms(text: str, terms: tuple[str, ...]) -> set[str]:
    """The ``terms`` that ``text`` holds, matched as passages match them."""
    probes = [_matcher(t) for t in terms]
    return {terms[i] for i in _terms_in(text, probes)}


# A name a language reserves (``__MODULE__``, ``__init__``, ``__name__``): it holds no
# word a question means ("the name of the module" is not ``name: __MODULE__``). A folder
# named so (``src/__tests__/``, ``__mocks__/``) is the project's own word.
_DUNDER = r"(?<![\w/])__[^\W_]\w*?__(?![\w/])"  # compiled (and cached) on first use


def _terms_in(segment: str, probes: list[tuple[str, bool, bool]]) -> set[int]:
    if "__" in segment:
        segment = re.sub(_DUNDER, " ", segment)
    lowered = segment.lower()
    words = set(text_words(segment))  # camelCase identifiers' parts too
    found: set[int] = set()
    heads: set[str] | None = None  # each word's first PREFIX_LETTERS, once a probe needs them
    for index, (probe, prefix, cjk) in enumerate(probes):
        if cjk:
            if probe in lowered:
                found.add(index)
        elif prefix:
            # A prefix probe has PREFIX_LETTERS characters: it starts a word exactly when
            # it is that word's head (one set lookup instead of a scan of the words).
            if probe in lowered:
                if heads is None:
                    heads = {w[:PREFIX_LETTERS] for w in words}
                if probe in heads:
                    found.add(index)
        elif probe in words:
            found.add(index)
    return found


# What a matching line that names something specific gains, as a share of the weight
# of the prompt's rarest term (step 3 of the module docstring).
SPECIFIC_BONUS = 0.5
_TOKEN = re.compile(r"[\w./:-]+")
# One of: snake_case; camelCase or PascalCase with an inner capital; an acronym (PDF,
# APIs); a file or dotted name (xterm.js, a/b.exs); letters then digits (s3, utf8); a
# commit hash (7 to 40 hex digits, letters and digits both: 05fd186, not 2026 or cafe).
_NAME_SHAPE = re.compile(
    r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]|^[A-Z]{2,}s?$|[A-Za-z0-9][./][A-Za-z]|^[A-Za-z]+[0-9]"
    r"|^(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}$"
)
_REFERENCE = re.compile(r"#[0-9]+\b|`[^`\n]+`")  # an issue or PR number, code


def named_things(text: str) -> set[str]:
    """The words of ``text`` that name one specific thing: identifiers (snake_case,
    camelCase), acronyms, file and dotted names, letters with digits (``s3``), commit
    hashes (``05fd186``); as
    written, without trailing punctuation; not plain words, numbers or ordinals."""
    found: set[str] = set()
    for token in _TOKEN.findall(text):
        word = token.strip(".,:;/-")
        if len(word) >= 2 and _NAME_SHAPE.search(word):
            found.add(word)
    return found


def named_files(text: str) -> tuple[str, ...]:
    """The files ``text`` names (``mix.exs``, ``config/test.exs``), lower-cased, each
    after a ``/``: a path names one when ``"/" + path`` ends so."""
    found = []
    for name in named_things(text):
        stem, dot, extension = name.rpartition(".")
        if "/" in name or (dot and stem and extension.isalpha()):
            found.append("/" + name.lower().lstrip("/"))
    return tuple(found)


# A word and what precedes it: a sentence start (text start, after . ! ? or a line
# break) or nothing.
_WORD_IN_SENTENCE = re.compile(r"(^|[.!?]\s+|\n\s*)?([A-Za-z][\w'’-]*)")


# Capitalised by convention, yet no thing a memory is about: days, months, and "I" with
# its contractions ("I'm", "I've").
_CALENDAR = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)


def proper_nouns(text: str) -> set[str]:
    """The capitalised words inside the sentences of ``text`` (``Vue``, ``Kotlin``,
    ``Claude's`` → ``Claude``): names as people write them. A sentence's first word
    is capitalised whatever it is, so it is left out, as are words with more than
    their first letter capitalised (:func:`named_things` covers those), days and
    months, and "I" in a contraction."""
    found: set[str] = set()
    for match in _WORD_IN_SENTENCE.finditer(text):
        if match.group(1) is not None:
            continue
        word = re.sub(r"['’]s$", "", match.group(2))
        if "'" in word or "’" in word or word.lower() in _CALENDAR:
            continue
        if len(word) >= 2 and word[0].isupper() and word[1:].islower():
            found.add(word)
    return found


def _names_more(segs: list[str], index: int, asked: set[str], words: list[set[str]]) -> bool:
    """Whether ``segs[index]`` names something specific that is not among ``asked`` and
    that no other segment names, or holds a reference or code (step 3 of the module
    docstring). ``words``: each segment's tokens as :func:`named_things` cuts them,
    filled on first need."""
    segment = segs[index]
    if _REFERENCE.search(segment):
        return True
    names = {name.lower() for name in named_things(segment)} - asked
    if not names:
        return False
    if not words:
        words.extend({t.strip(".,:;/-") for t in _TOKEN.findall(seg.lower())} for seg in segs)
    others = [other for position, other in enumerate(words) if position != index]
    return any(not any(name in other for other in others) for name in names)


# A named constant as code uses it: an Elixir or Ruby attribute (``@sessions_per_page``)
# or an upper-case name (``MAX_RETRIES``, ``TIMEOUT``). This pattern and the next are
# strings that ``re`` compiles on first use (most prompts ask for no amount), not at
# every hook's import.
_CONSTANT = r"@[a-z_][A-Za-z0-9_]*|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{4,}\b"
# The line that gives one its value: ``@name 10_000``, ``NAME = 30``, ``const NAME = 5``,
# ``#define NAME 64``, ``NAME: int = 3``, ``NAME := 2`` (a diff's ``+``/``-`` before it).
_DEFINITION = (
    r"[+-]?\s*(?:(?:export|const|let|var|final|static|public|private|readonly|val|#define)\s+)*"
    r"(?P<name>@[a-z_][A-Za-z0-9_]*|[A-Z][A-Z0-9_]*)"
    r"(?:\s*:\s*[\w\[\]., |]+?)?(?:\s*:?=\s*|\s+)(?P<value>\S.*)"
)
DEFINITION_CHARS = 80
DEFINITION_MARK = " \u2190 "  # "←": the value of a name the line uses, from elsewhere


def definitions(segs: list[str]) -> dict[str, tuple[int, str]]:
    """The named constants ``segs`` give a number to: name → (index, the line)."""
    defined: dict[str, tuple[int, str]] = {}
    for index, seg in enumerate(segs):
        match = re.fullmatch(_DEFINITION, seg)
        if (
            match is not None
            and len(seg) <= DEFINITION_CHARS
            and _NUMBER.search(match.group("value")) is not None
            and (
                match.group("name").startswith("@") or re.fullmatch(_CONSTANT, match.group("name"))
            )
        ):
            defined.setdefault(match.group("name"), (index, seg.lstrip("+- ")))
    return defined


def constants_used(text: str) -> set[str]:
    """The named constants ``text`` mentions (``@sessions_per_page``, ``MAX_RETRIES``)."""
    return set(re.findall(_CONSTANT, text))


def with_definitions(segs: list[str]) -> list[str]:
    """``segs`` where a line that uses a named constant (``@review_heartbeat_interval``,
    ``MAX_RETRIES``) whose value, a number, another line of the text gives also shows
    that definition after ``DEFINITION_MARK``. For a prompt that asks for an amount:
    code names its amounts, and the line that uses one (``Process.send_after(self(),
    :tick, @review_heartbeat_interval)``) is the one that matches the prompt's words,
    while the number sits at the top of the file."""
    defined = definitions(segs)
    if not defined:
        return segs
    out: list[str] = []
    for index, seg in enumerate(segs):
        shown = []
        for name in dict.fromkeys(re.findall(_CONSTANT, seg)):  # in order, once each
            at, line = defined.get(name, (index, ""))
            if at != index:  # a definition is not annotated with itself
                shown.append(line)
        out.append(seg + "".join(DEFINITION_MARK + line for line in shown[:2]))
    return out


def best_passage(
    text: str,
    terms: tuple[str, ...],
    room: int,
    *,
    line_cost: int = 0,
    amounts: bool = False,
    second: bool = True,
) -> Passage:
    """The window of ``text`` that best matches ``terms`` within ``room`` characters.

    Without a match, the head of the text. Ellipses mark text left out before
    or after; they, and ``line_cost`` per line (the indent a caller adds), count
    against ``room``. ``amounts``: the prompt asks for an amount (step 3 of the
    module docstring); ``second``: a second window may be added (step 5).
    """
    return PassagePlan(text, terms, amounts=amounts).fit(room, line_cost=line_cost, second=second)


class PassagePlan:
    """The segments of a text scored for ``terms`` once, to fit into several rooms
    (:func:`best_passage` fits one; ``amounts`` as there)."""

    def __init__(self, text: str, terms: tuple[str, ...], *, amounts: bool = False) -> None:
        segs = self.segs = with_definitions(segments(text)) if amounts else segments(text)
        probes = [_matcher(t) for t in terms]
        found = self.found = [_terms_in(s, probes) for s in segs]
        df = [0] * len(probes)
        for hits in found:
            for index in hits:
                df[index] += 1
        weight = [math.log(1 + len(segs) / d) if d else 0.0 for d in df]
        scores = [sum(weight[i] for i in hits) for hits in found]
        bonus = SPECIFIC_BONUS * max(weight, default=0.0)
        asked = {t.lower() for t in terms}
        words: list[set[str]] = []
        contest = max(scores, default=0.0) - bonus  # a segment under it cannot become the best
        for index in range(len(segs)):
            if 0 < scores[index] >= contest and (
                (amounts and _NUMBER.search(segs[index]) is not None)
                or _names_more(segs, index, asked, words)
            ):
                scores[index] += bonus
        self.scores = scores
        self.best = max(range(len(segs)), key=lambda i: (scores[i], -i)) if segs else 0
        self.matches = bool(segs) and scores[self.best] > 0
        self._asked, self._words = asked, words

    def fit(self, room: int, *, line_cost: int = 0, second: bool = True) -> Passage:
        """The best-matching window within ``room`` characters, and (``second``) a second
        window when it shows more of the prompt's words (see :func:`best_passage`)."""
        segs = self.segs
        if not segs or room <= 0:
            return Passage("", 0, 0)
        if not self.matches:
            start, end = _extend(segs, 0, room - len(ELLIPSIS) - 1, line_cost)
            return _render(segs, start, end, 0, room, line_cost)
        start, end = self._window(room, line_cost)
        covered = self._covered(start, end)
        if second:
            # A second window must show more of the prompt's words; an echo, no fewer.
            other, at_least = self._second(start, end, covered), len(covered) + 1
            if other is None:
                other, at_least = self._echo(start, end, covered), len(covered)
            if other is not None:
                both = self._two_windows(room, line_cost, other, at_least)
                if both is not None:
                    return both
        return _render(segs, start, end, len(covered), room, line_cost)

    def _window(self, room: int, line_cost: int = 0) -> tuple[int, int]:
        """(start, end) of the best segment's window: the line before it, then what follows."""
        best = self.best
        anchor = best - 1 if best > 0 else best
        inner = room - 2 * len(ELLIPSIS) - 2
        start, end = _extend(self.segs, anchor, inner, line_cost)
        if best >= end:  # the context line left no room for the match itself
            return _extend(self.segs, best, inner, line_cost)
        return self._pull_back(start, end, inner, line_cost)

    def _pull_back(self, start: int, end: int, room: int, line_cost: int) -> tuple[int, int]:
        """The window of ``room`` that still holds the best segment and holds the most
        matching weight, starting no later than ``start`` (the line before the best; it
        wins ties): a file's lines about the asked thing sit on both sides of the
        densest one, and lines further on that match nothing say less than earlier
        ones that match."""
        segs, scores = self.segs, self.scores
        best_start, best_end, most = start, end, sum(scores[start:end])
        for earlier in range(start - 1, -1, -1):
            later = _forward(segs, earlier, room, line_cost)
            if later <= self.best:
                break
            weight = sum(scores[earlier:later])
            if weight > most:
                best_start, best_end, most = earlier, later, weight
        return best_start, best_end

    def _covered(self, start: int, end: int) -> set[int]:
        covered: set[int] = set()
        for hits in self.found[start:end]:
            covered |= hits
        return covered

    def _second(self, start: int, end: int, covered: set[int]) -> int | None:
        """The weightiest segment outside ``start:end`` that holds a term not in
        ``covered`` (earliest on a tie; see :meth:`_outside`)."""
        found = self.found
        return self._outside(start, end, lambda i: not found[i] <= covered)

    def _echo(self, start: int, end: int, covered: set[int]) -> int | None:
        """The weightiest segment outside ``start:end`` that holds only prompt words the
        window shows and names something no other segment names (step 3): the outcome
        that echoes what the window describes, ``[main 05fd186] feat: close review``
        after the ``git commit -m "feat: close review…"`` the window shows."""
        found, asked, words = self.found, self._asked, self._words
        return self._outside(
            start,
            end,
            lambda i: found[i] <= covered and _names_more(self.segs, i, asked, words),
        )

    def _outside(self, start: int, end: int, wanted: Callable[[int], bool]) -> int | None:
        """The weightiest ``wanted`` segment outside ``start:end`` that matches and
        weighs at least ``SECOND_WEIGHT`` of the best (the earliest on a tie)."""
        scores = self.scores
        least = SECOND_WEIGHT * scores[self.best]
        outside = [
            i
            for i in itertools.chain(range(start), range(end, len(self.segs)))
            if scores[i] > 0 and scores[i] >= least and wanted(i)
        ]
        return max(outside, key=lambda i: (scores[i], -i)) if outside else None

    def _two_windows(self, room: int, line_cost: int, second: int, at_least: int) -> Passage | None:
        """The best window in ``FIRST_SHARE`` of ``room`` and ``second``'s window in what
        it leaves, in text order; None when the two show fewer than ``at_least`` terms,
        or touch, or the second has no room."""
        segs = self.segs
        start, end = self._window(int(room * FIRST_SHARE), line_cost)
        if start <= second <= end:
            return None  # inside or right after it: one window says it
        first = _render(segs, start, end, 0, room, line_cost, close=False)
        used = len(first.text) + line_cost * (end - start) + 1  # and the line break
        second_room = room - used
        if second_room < MIN_SECOND_ROOM:
            return None
        # The second window runs forward only: what follows a line is what it leads to.
        s_end = _forward(segs, second, second_room - 2 * len(ELLIPSIS) - 2, line_cost)
        if second < start <= s_end:
            return None
        covered = self._covered(start, end) | self._covered(second, s_end)
        if len(covered) < at_least:
            return None
        if second < start:  # text order: the second window comes first
            head = _render(segs, second, s_end, 0, second_room, line_cost, close=False)
            head_cost = len(head.text) + line_cost * (s_end - second) + 1
            tail = _render(segs, start, end, 0, room - head_cost, line_cost)
        else:
            head = first
            tail = _render(segs, second, s_end, 0, second_room, line_cost)
        return Passage(
            f"{head.text}\n{tail.text}", len(covered), head.start, head.cut_before, tail.cut_after
        )


def _extend(segs: list[str], anchor: int, room: int, line_cost: int) -> tuple[int, int]:
    """The run of segments from ``anchor`` on that fits ``room`` (at least the anchor); at
    the end of the text, earlier segments fill what room is left. Returns (start, end)."""
    start, end = anchor, _forward(segs, anchor, room, line_cost)
    if end < len(segs):
        return start, end
    size = _size(segs, start, end, line_cost)
    while start > 0 and size + len(segs[start - 1]) + line_cost + 1 <= room:
        start -= 1
        size += len(segs[start]) + line_cost + 1
    return start, end


def _forward(segs: list[str], anchor: int, room: int, line_cost: int) -> int:
    """The end of the run of segments from ``anchor`` on that fits ``room`` (at least one)."""
    end, size = anchor, 0
    while end < len(segs):
        added = len(segs[end]) + line_cost + (1 if end > anchor else 0)
        if size + added > room and end > anchor:
            break
        size += added
        end += 1
    return end


def _size(segs: list[str], start: int, end: int, line_cost: int) -> int:
    """Characters of segments ``start:end`` joined by line breaks, with ``line_cost`` each."""
    return sum(len(seg) + line_cost for seg in segs[start:end]) + max(end - start - 1, 0)


def _render(
    segs: list[str],
    start: int,
    end: int,
    matched: int,
    room: int,
    line_cost: int,
    *,
    close: bool = True,
) -> Passage:
    """Segments ``start:end`` within ``room``, ellipses marking text left out before and
    (when ``close``: nothing else follows) after."""
    before = start > 0
    after = close and end < len(segs)
    body = "\n".join(segs[start:end])
    limit = room - (len(ELLIPSIS) + 1) * (before + after) - line_cost * (end - start)
    if len(body) > limit:
        body = shorten(body, limit)
        after = False  # the cut already says so
    text = (f"{ELLIPSIS} " if before else "") + body + (f" {ELLIPSIS}" if after else "")
    return Passage(text, matched, start, before, after)
