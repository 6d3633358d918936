"""Text helpers shared by the stores and search: CJK runs, bigrams, token estimates.

FTS5's ``unicode61`` tokenizer keeps an unspaced run of CJK characters as one
token, so a Japanese or Chinese word inside a sentence cannot be found by
itself. Every store therefore indexes, next to the text, the overlapping
bigrams of each CJK run (``cjk_terms``), and queries do the same.
"""

from __future__ import annotations

import re

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
CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_HAS_CJK = re.compile(f"[{_CJK_CLASS}]")


def has_cjk(text: str) -> bool:
    return _HAS_CJK.search(text) is not None


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of one CJK run; a single character stays itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def cjk_terms(text: str) -> str:
    """Space-separated bigrams of every CJK run in ``text`` ('' when there is none)."""
    if not has_cjk(text):
        return ""
    terms: list[str] = []
    for match in CJK_RUN.finditer(text):
        terms.extend(bigrams(match.group()))
    return " ".join(terms)


def estimate_tokens(text: str) -> int:
    """Cheap token estimate (chars / 4, at least 1 for non-empty text)."""
    return (len(text) + 3) // 4
