"""Text helpers shared by the stores and search: CJK runs, bigrams, token estimates.

FTS5's ``unicode61`` tokenizer keeps an unspaced run of CJK characters as one
token, so a Japanese or Chinese word inside a sentence cannot be found by
itself. Every store therefore indexes, next to the text, the overlapping
bigrams of each CJK run (``cjk_terms``), and queries do the same.
"""

from __future__ import annotations

import re

# English stop words, defined once in three nested lists, each for one use:
# FUNCTION_WORDS carry no topic; reranking ignores them for coverage and proximity
# (they still count in phrases). QUERY_STOPWORDS add words common in questions;
# full-text ranking drops them from a query (a stop word's posting list is most of
# the table). PROMPT_STOPWORDS add chatter ("please", "thanks", "work"); a prompt
# made only of these is too vague to recall memories for.
# fmt: off
FUNCTION_WORDS: frozenset[str] = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for",
        "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
        "my", "not", "of", "on", "or", "our", "should", "so", "than", "that", "the", "their",
        "them", "then", "there", "these", "they", "this", "to", "was", "we", "were", "what",
        "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
    )
)
QUERY_STOPWORDS: frozenset[str] = FUNCTION_WORDS | frozenset(
    (
        "about", "all", "also", "am", "any", "been", "could", "did", "get", "got", "he", "her",
        "him", "his", "just", "much", "no", "out", "she", "some", "up", "us",
        # what a request asks for, not what it is about ("can you suggest…", "any tips?")
        "advice", "anything", "bit", "helpful", "ideas", "lately", "maybe", "perhaps",
        "quite", "really", "recommend", "recommendation", "recommendations", "something",
        "suggest", "suggestion", "suggestions", "sure", "think", "thinking", "thoughts",
        "tips", "useful", "wondering",
    )
)
PROMPT_STOPWORDS: frozenset[str] = QUERY_STOPWORDS | frozenset(
    (
        "after", "back", "because", "being", "come", "doing", "done", "even", "first", "give",
        "here", "know", "let", "like", "look", "make", "may", "more", "most", "need", "new",
        "now", "old", "one", "only", "over", "please", "put", "say", "see", "take", "thank",
        "thanks", "time", "too", "two", "use", "very", "want", "way", "well", "work",
        # the frame of a question ("how many…", "…before every commit", "…instead?")
        "again", "already", "before", "between", "during", "each", "every", "instead", "many",
        "once", "other", "per", "same", "still", "such", "though", "until", "whether", "while",
        # what is left of a contraction ("couldn't" → "couldn")
        "aren", "couldn", "didn", "doesn", "don", "hadn", "hasn", "haven", "isn", "shouldn",
        "wasn", "weren", "won", "wouldn",
    )
)
# fmt: on

# Han, Hiragana, Katakana, Hangul syllables, CJK punctuation-free ranges.
_CJK_CLASS = (
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uff66-\uff9f"  # Half-width Katakana
)
# The UTF-8 lead bytes of every character from U+3000 on, so of every character of the
# class: text whose encoding holds none of them has no CJK. bytes.translate drops them at
# C speed (10x faster than max(text), which makes an object per character; a regex of one
# such range takes 3 ms to compile, more than a prompt hook can give).
_HIGH_LEADS = bytes(range(0xE3, 0x100))
_cjk_run: re.Pattern[str] | None = None


def cjk_run_pattern() -> re.Pattern[str]:
    """The CJK-run regex, compiled on first use (its large class costs ms at import)."""
    global _cjk_run
    if _cjk_run is None:
        _cjk_run = re.compile(f"[{_CJK_CLASS}]+")
    return _cjk_run


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a character of a CJK run."""
    # isascii() reads a flag of the string object: most text never gets further.
    if not text or text.isascii():
        return False
    encoded = text.encode("utf-8", "surrogatepass")  # a lone surrogate encodes as ED…
    if len(encoded.translate(None, _HIGH_LEADS)) == len(encoded):
        return False
    return cjk_run_pattern().search(text) is not None


def cjk_runs(text: str) -> list[str]:
    """Every unspaced CJK run of ``text`` in order."""
    if not has_cjk(text):
        return []
    return cjk_run_pattern().findall(text)


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of one CJK run; a single character stays itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def cjk_terms(text: str) -> str:
    """Space-separated bigrams of every CJK run in ``text`` ('' when there is none)."""
    terms: list[str] = []
    for run in cjk_runs(text):
        terms.extend(bigrams(run))
    return " ".join(terms)


def index_terms(text: str) -> str:
    """What the full-text index holds for ``text`` besides its tokens: CJK bigrams and
    the parts of camelCase identifiers."""
    return " ".join(filter(None, (cjk_terms(text), identifier_parts(text))))


def estimate_tokens(text: str) -> int:
    """Cheap token estimate (chars / 4, at least 1 for non-empty text)."""
    return (len(text) + 3) // 4


def __getattr__(name: str) -> re.Pattern[str]:
    # ``CJK_RUN`` stays importable as a constant but compiles only when first asked for.
    if name == "CJK_RUN":
        return cjk_run_pattern()
    raise AttributeError(f"module 'memlane.text' has no attribute {name!r}")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when cut. A number is
    never cut in two: "falls back to 8080" cut after "80" would name another port, and
    "1.4.7" cut after "1." another version, so the cut moves before the number, its sign
    included ("falls back to …")."""
    if len(text) <= limit:
        return text
    cut = max(limit - 1, 0)
    if cut > 0 and _continues_number(text, cut) and text[cut - 1] in _NUMBER_PART:
        while cut and text[cut - 1] in _NUMBER_PART:
            cut -= 1
    return text[:cut].rstrip() + "…"


# What may stand inside a number between its digits: 8,080 · 1.4.7 · 10_000 · 12:30.
_NUMBER_INNER = ".,_:"
# What a number cut in two may end in: digits, those separators, a sign (-1234, +3).
_NUMBER_PART = frozenset("0123456789" + _NUMBER_INNER + "+-")


def _continues_number(text: str, at: int) -> bool:
    """Whether a number goes on at ``at``: a digit, or a separator then one."""
    if text[at].isdigit():
        return True
    return text[at] in _NUMBER_INNER and text[at + 1 : at + 2].isdigit()


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` and its noun: "1 memory", "2 memories", "0 bad lines", "12 entries"."""
    if count == 1:
        return f"1 {singular}"
    if plural is None:
        after_consonant = singular.endswith("y") and singular[-2:-1] not in "aeiou"
        plural = singular[:-1] + "ies" if after_consonant else singular + "s"
    return f"{count} {plural}"


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, then :func:`shorten`."""
    return shorten(" ".join(text.split()), limit)


# A line of a bulleted or numbered list ("- x", "* x", "• x", "+ x", "2. x", "3) x"); its
# text is group 1 (a "- [ ] x" checkbox keeps its box). A string, as the patterns below.
LIST_ITEM = r"^\s*(?:\d{1,3}[.)]|[-*•+])\s+(.+)$"

# Characters that act instead of showing, defined once here and combined below into one
# set per use. Each is the body of a regular-expression character class in the syntax
# Python's and JavaScript's share (the dashboard's script gets SHOWN_ESCAPED as it is).
_C0_BUT_LAYOUT = r"\x00-\x08\x0b\x0c\x0e-\x1f"  # C0 controls but tab, line feed, CR
_LINE_BREAKS = r"\n\r"
_TAB = r"\t"
_DEL = r"\x7f"
_C1 = r"\x80-\x9f"
# Bidirectional controls (marks, embeddings, overrides, isolates) reorder the text around
# them: "invoice_\u202efdp.exe" shows as "invoice_exe.pdf".
_BIDI_CONTROLS = r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"

# Unicode's control characters (category Cc: C0, DEL, C1). No name holds one: a project,
# a session id or a type with one is refused (memlane.core.Core.plain_name).
CONTROL_CHARACTERS = f"[{_C0_BUT_LAYOUT}{_LINE_BREAKS}{_TAB}{_DEL}{_C1}]"
# Wherever memlane shows stored text to a person, each of these is written as its escape
# (``\u202e``): the CLI on a terminal (memlane.cli.terminal) and the dashboard, whose
# script gets this class from the worker (``/static/js/escapes.js``). Tab and line breaks
# lay the text out and are kept.
SHOWN_ESCAPED = f"[{_C0_BUT_LAYOUT}{_DEL}{_C1}{_BIDI_CONTROLS}]"
# The same in a text shown as one line (an error quoting a file name anyone may choose):
# a line break there is escaped too, so it does not start a line of its own.
SHOWN_ESCAPED_IN_A_LINE = f"[{_C0_BUT_LAYOUT}{_LINE_BREAKS}{_DEL}{_C1}{_BIDI_CONTROLS}]"
# What display_text removes from a tool's output as terminal noise. C1 and the bidi
# controls are kept as they came, and escaped where shown (SHOWN_ESCAPED).
_REMOVED_FROM_OUTPUT = f"[{_C0_BUT_LAYOUT}{_DEL}]"
# What no stored text keeps (without_controls): a NUL, a bell, a backspace, an escape.
_NOT_STORED = f"[{_C0_BUT_LAYOUT}]"
# The same as bytes (tests/test_control_characters.py checks they agree).
_NOT_STORED_BYTES = bytes(range(32)).translate(None, b"\t\n\r")

# Read's line numbers (at a line start or after a label such as "[result] ") and ANSI
# escapes. Strings, not compiled: re caches them on first use, and every hook imports
# this module. The line numbers are two patterns, run in this order: one alternation of
# both tried its look-behind at every character (3x slower), and no match of either can
# make or break a match of the other. The line-start one is the text's first line, then
# the lines after a newline: a pattern opening with a literal is searched for that
# character first, where (?m)^ is tried at every character (1.5x).
_ARROW_AT_TEXT_START = r"[ \t]*\d+\u2192"
_ARROW_AFTER_NEWLINE = r"\n[ \t]*\d+\u2192"
_ARROW_AFTER_BLANK = r"(?<=[ \t])\d+\u2192"
_ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"


# A line holding this many literal ``\\n`` escapes is a JSON string printed as is (a
# subagent's answer, a tool's JSON result), not code that writes one newline.
ESCAPED_LINES = 3


def without_line_numbers(text: str) -> str:
    """``text`` without Read's line-number arrows (``  12→``): the file as it reads."""
    if "\u2192" not in text:
        return text
    first = re.match(_ARROW_AT_TEXT_START, text)
    if first is not None:
        text = text[first.end() :]
    text = re.sub(_ARROW_AFTER_NEWLINE, "\n", text)
    if "\u2192" in text:
        text = re.sub(_ARROW_AFTER_BLANK, "", text)
    return text


def display_text(text: str) -> str:
    """``text`` as a terminal showed it: without Read's line-number arrows (``  12→``),
    ANSI escape codes, carriage-return redraws (the line's last state is kept) or
    other control characters; a line of JSON-escaped text (``ESCAPED_LINES``
    literal ``\\n`` or more) as the lines it stands for."""
    if "\\n" in text:
        text = "\n".join(
            line.replace("\\n", "\n") if line.count("\\n") >= ESCAPED_LINES else line
            for line in text.split("\n")
        )
    text = without_line_numbers(text)
    if "\x1b" in text:
        text = re.sub(_ANSI, "", text)
    if "\r" in text:
        lines = text.replace("\r\n", "\n").split("\n")
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in lines)
    return re.sub(_REMOVED_FROM_OUTPUT, "", text)


def without_controls(text: str) -> str:
    """``text`` as memlane stores and indexes it: without the C0 control characters but
    tab, line feed and carriage return (a NUL, a bell, a backspace: a prompt, a tool's
    output or a transcript may hold them, and PostgreSQL cannot store a NUL), each ANSI
    escape sequence removed whole (not leaving its ``[31m``). ``text`` itself (the same
    object) when it holds none, which is checked at C speed."""
    if text.isprintable():
        return text
    if text.isascii():
        raw = text.encode("ascii")
        if len(raw.translate(None, _NOT_STORED_BYTES)) == len(raw):
            return text
    elif re.search(_NOT_STORED, text) is None:
        return text
    if "\x1b" in text:
        text = re.sub(_ANSI, "", text)
    return re.sub(_NOT_STORED, "", text)


# A word as FTS5's unicode61 tokenizer indexes it: a run of letters and digits, so an
# identifier is its parts (`sessions_per_page` is sessions, per, page). Search's text
# measures (reranking, keyword evidence, passages) split text the same way: a
# question's "sessions per page" is then a phrase of that line, not a prefix of one word.
WORD = re.compile(r"[^\W_]+")
# A capital after a small letter or a digit, or the last capital of a run before small
# letters, starts a new word: camelCase and PascalCase identifiers (``TranscriptRenderer``,
# ``getUserName``, ``HTTPServer``) hold words a reader sees and a question uses, which
# FTS5 keeps as one token (kept whole too: ``SQLite`` is sqlite, sq, lite). Strings, as
# the patterns below: compiled on first use (0.16 ms), not by every hook's import.
# Matched at the capital itself: a pattern opening with one class lets the regex engine
# skip to the next capital in C, 3x faster over a stored row than opening with the
# letter before it (``[a-z0-9][A-Z]|[A-Z][A-Z][a-z]``, which finds the same words).
_INNER_CAPITAL = r"[A-Z](?:(?<=[a-z0-9][A-Z])|(?<=[A-Z][A-Z])(?=[a-z]))"
_CASED_PART = r"[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*(?![a-z])|[0-9]+"


def _parts(identifier: str) -> list[str]:
    """The lower-cased words of one camelCase identifier."""
    return [part.lower() for part in re.findall(_CASED_PART, identifier)]


def words(text: str) -> list[str]:
    """Lower-cased :data:`WORD` s of ``text`` in order, each camelCase identifier followed
    by its parts: the words the full-text index holds for ``text`` (with
    :func:`index_terms`)."""
    if not re.search(_INNER_CAPITAL, text):
        return WORD.findall(text.lower())
    out: list[str] = []
    for token in WORD.findall(text):
        out.append(token.lower())
        if re.search(_INNER_CAPITAL, token):
            out.extend(_parts(token))
    return out


def identifier_parts(text: str) -> str:
    """Space-separated parts of each distinct camelCase identifier in ``text`` ('' when
    none): what the full-text index holds besides the identifier itself."""
    parts: list[str] = []
    seen: set[str] = set()
    end = 0
    # Found from its inner capitals (C speed), not by reading every word: this runs
    # for every row stored.
    for capital in re.finditer(_INNER_CAPITAL, text):
        start = capital.start()
        if start < end:
            continue  # another capital of the identifier just read
        while start > 0 and text[start - 1].isalnum():
            start -= 1
        found = WORD.match(text, start)
        if found is None:  # a letter str.isalnum accepts and the word pattern does not
            end = capital.end()
            continue
        token = found.group()
        end = found.end()
        if token not in seen:
            seen.add(token)
            parts.extend(_parts(token))
    return " ".join(parts)


_CONTENT_WORD = re.compile(r"[^\W_]{3,}")
# Share of a text's content words already in one shown before it from which it says
# nothing new (recall's choice of memories and the SessionStart pack's alike).
REPEAT_SHARE = 0.6


def content_words(text: str) -> set[str]:
    """Lower-cased words of three letters or more that are not stop words, plus CJK chars."""
    lowered = text.lower()
    words = {w for w in _CONTENT_WORD.findall(lowered) if w not in PROMPT_STOPWORDS}
    if has_cjk(text):
        words.update(char for run in cjk_runs(text) for char in run)
    return words


def repeats(words: set[str] | frozenset[str], earlier: set[str] | frozenset[str]) -> bool:
    """Whether at least ``REPEAT_SHARE`` of ``words`` (:func:`content_words`) are in
    ``earlier``: the text says nothing the earlier one did not."""
    return bool(words) and len(words & earlier) >= REPEAT_SHARE * len(words)
