"""When two similar texts still say different things: merge's wording rule.

Character trigrams find near-duplicates, but they cannot tell "Do run
migrations" from "Do NOT run migrations", "Retry 3 times" from "Retry 30
times", or "Use PostgreSQL; MySQL was rejected" from the reverse: those pairs
share 70-90% of their trigrams. Before merge deletes one memory of a pair, the
two texts are compared word by word, and the pair is **distinct** (never merged)
when the words that differ carry meaning. The rule, with no tuned weights:

1. Both texts become word sequences (:func:`words`): lower-cased; words are runs
   of letters and digits (an inner ``'`` or ``.`` kept: ``don't``, ``3.5``,
   ``deploy.sh``; a sign before a digit kept: ``-1``); runs of operator
   symbols (``!=``, ``==``, ``<``, ``>=``, ``+``, ``/``…) are words too;
   sentence punctuation (``. , ; : ! ? ( ) " -``…) and whitespace are dropped.
2. The sequences are aligned (longest common blocks, in order, as ``difflib``
   does); a word outside a matching block is **changed** - added, removed,
   replaced or moved. A moved word counts, so swapping two names is a change.
3. The pair is distinct when a changed word is
   * a number (holds a digit, or is a number word: ``three``, ``twice``…),
   * a polarity, modality or logic word (``POLARITY_WORDS``: not, no, never,
     without, always, must, should, only, except, or, before/after,
     enable/disable, allow/deny…, and every ``n't`` / ``nt`` contraction), or
   * an operator symbol;
   or when more than a small edit changed: the changed content words (not in
   ``memlane.text.FUNCTION_WORDS``), counted on both sides, exceed
   ``SMALL_EDIT_SHARE`` (one tenth) of the content words of the shorter text.
   So a short decision merges only with a copy that differs in case,
   punctuation, whitespace or function words ("the", "a", "to"); a 300-word
   turn tolerates a few edited words, never an edited number or a "not".

Two texts are **the same** (:func:`same_text`) when their word sequences are
equal: case, whitespace and punctuation aside, nothing differs. That is the only
sameness the automatic maintenance run accepts for knowledge and notes.

The rule errs towards keeping two memories: a false "distinct" leaves a
duplicate (search shows both), a false "same" deletes what a user saved.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from difflib import SequenceMatcher

from memlane.text import FUNCTION_WORDS

# Changed content words (both sides) allowed per content word of the shorter text.
SMALL_EDIT_SHARE = 0.1

# Operator characters; "!" alone is an exclamation mark, "!=" an operator.
_OPS = r"!<>=~^&|*/%+$#@\\"
_WORD = re.compile(
    r"(?:(?<![\w.])[-+](?=\d))?[^\W_]+(?:['.][^\W_]+)*"  # words, numbers, contractions
    rf"|[{_OPS}]*[{_OPS.replace('!', '')}][{_OPS}]*"  # operator runs
)
_OPERATOR = re.compile(rf"[{_OPS}]+")
_DIGIT = re.compile(r"\d")

# fmt: off
NUMBER_WORDS: frozenset[str] = frozenset(
    (
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
        "eighty", "ninety", "hundred", "thousand", "million", "billion", "once", "twice",
        "thrice", "single", "double", "triple", "half", "dozen", "first", "second", "third",
        "last", "none", "all", "every", "each", "both", "any", "few", "many", "several",
    )
)
POLARITY_WORDS: frozenset[str] = frozenset(
    (
        # negation
        "not", "no", "never", "nothing", "nobody", "nowhere", "neither", "nor", "without",
        "cannot", "non", "nope", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt",
        "werent", "wont", "wouldnt", "cant", "couldnt", "shouldnt", "mustnt", "havent",
        "hasnt", "hadnt", "neednt", "aint",
        # negation in other languages the default embedder reads (words of CJK scripts run
        # together, so any edit there changes a whole word and keeps the pair apart)
        "nicht", "kein", "keine", "keinen", "nie", "niemals", "ohne",  # German
        "ne", "pas", "jamais", "aucun", "aucune", "sans", "rien",  # French
        "nunca", "jamás", "ningún", "ninguna", "ninguno", "sin", "nada",  # Spanish
        "não", "nao", "nenhum", "nenhuma", "sem",  # Portuguese (nunca above)
        "mai", "senza", "nessun", "nessuno", "nessuna",  # Italian (non above)
        "niet", "geen", "nooit", "zonder",  # Dutch
        "нет", "не", "ни", "никогда", "без",  # Russian
        # absolutes and modality
        "always", "sometimes", "usually", "rarely", "seldom", "often", "must", "should",
        "shall", "may", "might", "can", "could", "will", "would", "need", "needs", "required",
        "optional", "only", "just", "except", "unless", "instead", "but", "or", "if", "else",
        "otherwise", "either",
        # switches and verdicts
        "yes", "true", "false", "on", "off", "enable", "enabled", "enables", "disable",
        "disabled", "disables", "allow", "allowed", "allows", "deny", "denied", "denies",
        "forbid", "forbidden", "forbids", "prohibit", "prohibited", "block", "blocked",
        "permit", "permitted", "reject", "rejected", "accept", "accepted", "avoid", "prefer",
        "preferred", "stop", "keep", "remove", "removed", "add", "added", "include",
        "included", "exclude", "excluded", "fail", "failed", "fails", "pass", "passed",
        "passes", "succeed", "succeeded", "broken", "fixed", "works", "worked", "require",
        "ignore", "skip", "break", "green", "red",
        # order and direction
        "before", "after", "above", "below", "over", "under", "more", "less", "fewer",
        "most", "least", "min", "max", "minimum", "maximum", "increase", "decrease",
        "higher", "lower", "up", "down", "old", "new",
        "older", "newer", "early", "late", "earlier", "later",
    )
)
# fmt: on


def words(text: str) -> list[str]:
    """``text`` as merge compares it: lower-cased words and operators (module docstring)."""
    return _WORD.findall(text.lower().replace("\u2019", "'").replace("\u2018", "'"))


def same_text(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one text but for case, whitespace and punctuation."""
    return words(a) == words(b)


def _bears_meaning(word: str) -> bool:
    return (
        bool(_DIGIT.search(word))
        or word in NUMBER_WORDS
        or any(form in POLARITY_WORDS for form in _forms(word))
        or word.endswith("n't")
        or bool(_OPERATOR.fullmatch(word))
    )


# Endings a polarity word is inflected with: "enabling", "fails", "passing", "skipped".
_ENDINGS = ("ing", "ed", "es", "s", "d")


def _forms(word: str) -> Iterator[str]:
    """``word`` and its possible uninflected forms ("enabling" -> "enabl", "enable")."""
    yield word
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) > len(ending) + 2:
            base = word[: -len(ending)]
            yield base
            yield base + "e"
            if len(base) > 2 and base[-1] == base[-2]:  # "skipped" -> "skip"
                yield base[:-1]


def _content(seq: list[str]) -> int:
    return sum(1 for w in seq if w not in FUNCTION_WORDS)


def changed_words(a: list[str], b: list[str]) -> list[str]:
    """Words of ``a`` and ``b`` outside their aligned common blocks (both sides)."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0  # the common tail, never overlapping the head
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    mid_a, mid_b = a[start : len(a) - end], b[start : len(b) - end]
    if not mid_a or not mid_b:
        return mid_a + mid_b
    changed: list[str] = []
    matcher = SequenceMatcher(None, mid_a, mid_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed.extend(mid_a[i1:i2])
            changed.extend(mid_b[j1:j2])
    return changed


def meaning_differs(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ in a meaning-bearing way (the module's rule)."""
    return Worded.of(a).differs_from(Worded.of(b))


class Worded:
    """A text's :func:`words` and how often each meaning-bearing one occurs, made once
    for the many pairs a memory is compared in."""

    __slots__ = ("bearing", "words")

    def __init__(self, seq: list[str]) -> None:
        self.words = seq
        self.bearing = Counter(w for w in seq if _bears_meaning(w))

    @classmethod
    def of(cls, text: str) -> Worded:
        return cls(words(text))

    def differs_from(self, other: Worded) -> bool:
        """:func:`meaning_differs` of the two texts."""
        # A meaning-bearing word more often in one text is changed in any alignment.
        if self.bearing != other.bearing:
            return True
        return words_differ_in_meaning(self.words, other.words)


def words_differ_in_meaning(wa: list[str], wb: list[str]) -> bool:
    """:func:`meaning_differs` of two texts' :func:`words`."""
    if wa == wb:
        return False
    # A word more often in one text than in the other is changed in any alignment: when
    # such words already decide, the alignment (most of the cost) is not needed.
    ca, cb = Counter(wa), Counter(wb)
    surplus = list(((ca - cb) + (cb - ca)).elements())
    if any(_bears_meaning(w) for w in surplus):
        return True
    shorter = min(_content(wa), _content(wb))
    if sum(1 for w in surplus if w not in FUNCTION_WORDS) > SMALL_EDIT_SHARE * shorter:
        return True
    changed = changed_words(wa, wb)
    if any(_bears_meaning(w) for w in changed):
        return True
    edited = sum(1 for w in changed if w not in FUNCTION_WORDS)
    return edited > SMALL_EDIT_SHARE * shorter
