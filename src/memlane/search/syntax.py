"""Search syntax: what ``memlane search``, HTTP ``q=`` and MCP ``search`` understand.

Plain text — no operator below — is searched as it always was: memories with
any of its content words, best matches first (:func:`memlane.search.fts.ranking_query`).
A query that uses an operator is a *boolean* query, as in SQLite FTS5 or a web
search engine:

* words and phrases are all required: ``redis timeout`` finds memories holding both;
* ``"exact phrase"`` — the words adjacent and in order;
* ``a OR b`` — either (``OR`` in capitals; it binds its neighbours: ``x a OR b``
  is ``x`` and one of ``a``, ``b``); ``AND`` may be written, it changes nothing;
* ``NOT word`` / ``-word`` — no memory holding it (a phrase or field term too);
* ``word*`` — any word starting with it (an exact match ranks first);
* ``title:word``, ``file:name`` (also ``files:``) — in the title, in a linked file
  path (``file:engine.py``, ``file:"src/app.py"``);
* ``type:decision`` — only memories of that type (``type:a OR type:b``: either).

The boolean match is a constraint in every mode: a semantic candidate that does
not satisfy it is dropped. Bad syntax (an unclosed quote, an operator with
nothing to apply to, a query that only excludes) raises :class:`InvalidInput`
with a one-line message, never a store's parser error. Agents' prompts are never
parsed (recall searches plain text): ``-x`` or a quote in a prompt is prose.

Loaded only when a search asks for the syntax: recall's plain prompts never import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memlane.errors import InvalidInput
from memlane.search.fts import ParsedQuery, plain
from memlane.store.query import AnyOf, FtsQuery, Grams, Phrase, Term
from memlane.text import QUERY_STOPWORDS, bigrams, cjk_run_pattern, has_cjk

OPERATORS = ("OR", "AND", "NOT")
# What a user types before the colon → the FtsQuery field (None: a memory filter).
FIELD_NAMES: dict[str, str | None] = {
    "title": "title",
    "file": "files",
    "files": "files",
    "type": None,
}
_FIELD = re.compile(r"(?i)(title|files?|type):(?=\S)")
_WORD = re.compile(r"\w+", re.UNICODE)

Atom = Term | Phrase | Grams


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "op", "word", "phrase"
    text: str
    field: str | None = None  # what the user wrote before the colon, lower-cased
    negated: bool = False
    prefix: bool = False


def _fail(message: str) -> InvalidInput:
    return InvalidInput(f"search syntax: {message}")


def _operator_fail(operator: str, where: str) -> InvalidInput:
    return _fail(
        f'{operator} needs a word {where} (to search the word itself, quote it: "{operator}")'
    )


def tokens(query: str) -> list[_Token]:
    """The query's operators, words and phrases, in order (raises on an unclosed quote)."""
    out: list[_Token] = []
    pos, end = 0, len(query)
    while pos < end:
        if query[pos].isspace():
            pos += 1
            continue
        negated = query[pos] == "-" and pos + 1 < end and not query[pos + 1].isspace()
        if negated:
            pos += 1
        field = None
        named = _FIELD.match(query, pos)
        if named:
            field = named.group(1).lower()
            pos = named.end()
        if query[pos] == '"':
            close = query.find('"', pos + 1)
            if close < 0:
                raise _fail(f"the quote at column {pos + 1} is not closed (close it, or drop it)")
            out.append(_Token("phrase", query[pos + 1 : close], field, negated))
            pos = close + 1
            continue
        stop = pos
        while stop < end and not query[stop].isspace() and query[stop] != '"':
            stop += 1
        word = query[pos:stop]
        pos = stop
        if word in OPERATORS and not negated and field is None:
            out.append(_Token("op", word))
        elif _WORD.search(word):  # punctuation alone is no word
            prefix = word.endswith("*")
            out.append(_Token("word", word.rstrip("*"), field, negated, prefix))
    return out


def has_syntax(query: str) -> bool:
    """Whether ``query`` uses an operator (see the module docstring): a cheap test."""
    if '"' in query or ":" in query or "*" in query or "-" in query:
        return True
    return any(word in OPERATORS for word in query.split())


def _atoms(token: _Token) -> list[Atom]:
    """What one word or phrase token matches (several atoms: all of them)."""
    field = FIELD_NAMES[token.field] if token.field else None
    if token.kind == "phrase":
        words = _WORD.findall(token.text.lower())
        if not words:
            return []
        if has_cjk(token.text):
            # The phrase's CJK runs are matched through their bigrams, its other words as words.
            return _word_atoms(token.text, field, prefix=False)
        return [Phrase(tuple(words), field)]
    return _word_atoms(token.text, field, prefix=token.prefix)


def _word_atoms(text: str, field: str | None, *, prefix: bool) -> list[Atom]:
    atoms: list[Atom] = []
    pattern = cjk_run_pattern()
    rest = pattern.sub(" ", text) if has_cjk(text) else text
    for run in pattern.findall(text) if has_cjk(text) else ():
        atoms.append(Grams(tuple(bigrams(run))))
    pieces = rest.split()
    for i, piece in enumerate(pieces):
        if _WORD.search(piece):
            atoms.append(Term(piece, prefix=prefix and i == len(pieces) - 1, field=field))
    return atoms


def parse(query: str) -> ParsedQuery:
    """``query`` understood with the search syntax (plain text stays plain)."""
    if not has_syntax(query):
        return plain(query)
    toks = tokens(query)
    if not any(t.kind != "word" or t.negated or t.field or t.prefix for t in toks):
        return plain(query)  # a hyphen, colon or star inside words is prose
    groups, excluded = _structure(toks)
    return _build(groups, excluded)


def _structure(toks: list[_Token]) -> tuple[list[list[_Token]], list[_Token]]:
    """Required groups (each: alternatives joined by OR) and excluded tokens."""
    groups: list[list[_Token]] = []
    excluded: list[_Token] = []
    last = -1  # index of the token that ended the last group
    i = 0
    while i < len(toks):
        tok = toks[i]
        after = toks[i + 1] if i + 1 < len(toks) else None
        if tok.kind != "op":
            if tok.negated:
                excluded.append(tok)
            else:
                groups.append([tok])
                last = i
            i += 1
        elif after is None or (after.kind == "op" and tok.text != "AND"):
            raise _operator_fail(tok.text, "after it")
        elif tok.text == "NOT":
            excluded.append(after)
            i += 2
        elif tok.text == "AND":
            if i == 0:
                raise _operator_fail("AND", "before it")
            i += 1
        else:  # OR
            if i == 0 or last != i - 1 or after.negated:
                raise _operator_fail("OR", "or phrase on each side")
            groups[-1].append(after)
            last = i + 1
            i += 2
    return groups, excluded


def _build(groups: list[list[_Token]], excluded: list[_Token]) -> ParsedQuery:
    types: list[str] = []
    required: list[Atom] = []
    alternatives: list[AnyOf] = []
    words: list[str] = []
    for group in groups:
        typed = [t for t in group if t.field == "type"]
        if typed:
            if len(typed) < len(group):
                raise _fail("type: cannot be an alternative to words")
            types.extend(t.text.lower() for t in typed)
            continue
        words.extend(t.text for t in group)
        atoms = [atom for tok in group for atom in _atoms(tok)]
        if len(group) == 1:
            required.extend(atoms)
        elif atoms:
            alternatives.append(AnyOf(tuple(dict.fromkeys(atoms))))
    if any(t.field == "type" for t in excluded):
        raise _fail("type: cannot be excluded; name the types you want")
    # A bare stop word ("how", "the") would require nearly every memory: drop it,
    # unless nothing else is asked for.
    content = [a for a in required if not _stop_word(a)]
    if content or alternatives:
        required = content
    if not (required or alternatives):
        if types:
            return ParsedQuery(text="", match=None, types=tuple(types), boolean=True)
        if excluded:
            raise _fail("the query only excludes; add a word to search for")
        raise _fail("the query holds no word to search for")
    match = FtsQuery(
        terms=tuple(dict.fromkeys(a for a in required if isinstance(a, Term))),
        phrases=tuple(dict.fromkeys(a for a in required if isinstance(a, Phrase))),
        cjk_grams=tuple(dict.fromkeys(a.grams for a in required if isinstance(a, Grams))),
        operator="all",
        excluded=tuple(dict.fromkeys(atom for tok in excluded for atom in _atoms(tok))),
        alternatives=tuple(alternatives),
    )
    return ParsedQuery(text=" ".join(words), match=match, types=tuple(types) or None, boolean=True)


def _stop_word(atom: Atom) -> bool:
    return (
        isinstance(atom, Term)
        and atom.field is None
        and not atom.prefix
        and atom.text.lower() in QUERY_STOPWORDS
    )
