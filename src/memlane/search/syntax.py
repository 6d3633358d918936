"""Search syntax: what ``memlane search``, HTTP ``q=`` and MCP ``search`` understand.

Words are searched as always: memories holding *any* of them, those holding
more (and rarer) ones first. Operators add constraints:

* ``"exact phrase"`` — required: the words adjacent and in order;
* ``a OR b`` — required: one of them (``OR`` in capitals);
* ``a AND b`` — required: both (``AND`` in capitals);
* ``NOT word`` / ``-word`` — excluded (a phrase or a field term too);
* ``title:word``, ``file:name`` (also ``files:``) — required: in the title, in a
  linked file path (``file:engine.py``, ``file:"src/app.py"``);
* ``type:decision`` — only memories of that type (``type:a OR type:b``: either);
* ``word*`` — the word or any word it begins (an exact match ranks first).

A memory must satisfy every constraint, in every mode (a semantic candidate
that does not is dropped); the plain words still decide the order among those
that do. So a question that quotes a name (``what did we decide about
"pgbouncer" pooling``) requires the name and ranks by the rest, and a query
without operators behaves exactly as plain text always did. Bad syntax (an
unclosed quote, an operator with nothing to apply to, a query that only
excludes) raises :class:`InvalidInput` with a one-line message, never a
store's parser error. Recall never parses: a prompt is prose.

Loaded only when a search asks for the syntax: recall's plain prompts never import it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from memlane.errors import InvalidInput
from memlane.models import MAX_QUERY_CHARS, MAX_QUERY_TYPES
from memlane.search.fts import ParsedQuery, plain, query_terms, ranking_query
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


class _Token(NamedTuple):
    kind: str  # "op", "word", "phrase"
    text: str
    field: str | None = None  # what the user wrote before the colon, lower-cased
    negated: bool = False
    prefix: bool = False


class _Group(NamedTuple):
    tokens: list[_Token]  # alternatives joined by OR (one token without OR)
    required: bool


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
            out.append(_Token("word", word.rstrip("*"), field, negated, word.endswith("*")))
    return out


def has_syntax(query: str) -> bool:
    """Whether ``query`` may use an operator (a cheap test before tokenizing)."""
    if '"' in query or ":" in query or "*" in query or "-" in query:
        return True
    return any(word in OPERATORS for word in query.split())


def parse(query: str) -> ParsedQuery:
    """``query`` understood with the search syntax (see the module docstring)."""
    if len(query) > MAX_QUERY_CHARS:
        # Every typed search (CLI, HTTP, MCP) parses here: 5,000 prefixes took 52 s.
        raise _fail(f"the query is {len(query):,} characters long (at most {MAX_QUERY_CHARS:,})")
    if not has_syntax(query):
        return plain(query)
    toks = tokens(query)
    if not any(t.kind != "word" or t.negated or t.field or t.prefix for t in toks):
        return plain(query)  # a hyphen, colon or star inside words is prose
    groups, excluded = _structure(toks)
    return _build(groups, excluded)


def _structure(toks: list[_Token]) -> tuple[list[_Group], list[_Token]]:
    """The query's groups (required or only ranking) and its excluded tokens."""
    groups: list[_Group] = []
    excluded: list[_Token] = []
    last = -1  # index of the token that ended the last group
    joined = False  # the next group is required: an AND came before it
    i = 0
    while i < len(toks):
        tok = toks[i]
        after = toks[i + 1] if i + 1 < len(toks) else None
        if tok.kind != "op":
            if tok.negated:
                excluded.append(tok)
            else:
                required = joined or tok.kind == "phrase" or tok.field is not None
                groups.append(_Group([tok], required))
                last = i
            joined = False
            i += 1
        elif after is None or (after.kind == "op" and (tok.text, after.text) != ("AND", "NOT")):
            raise _operator_fail(tok.text, "after it")
        elif tok.text == "NOT":
            excluded.append(after)
            joined = False
            i += 2
        elif i == 0 or last != i - 1:
            raise _operator_fail(tok.text, "or phrase on each side")
        elif tok.text == "AND":
            groups[-1] = groups[-1]._replace(required=True)
            joined = True
            i += 1
        else:  # OR
            if after.negated:
                raise _operator_fail("OR", "or phrase on each side")
            groups[-1].tokens.append(after)
            groups[-1] = groups[-1]._replace(required=True)
            last = i + 1
            i += 2
    return groups, excluded


def _atoms(token: _Token) -> list[Atom]:
    """What one word or phrase token matches (several atoms: all of them)."""
    field = FIELD_NAMES[token.field] if token.field else None
    if token.kind == "phrase" and not has_cjk(token.text):
        words = _WORD.findall(token.text.lower())
        return [Phrase(tuple(words), field)] if words else []
    # A CJK run is matched through its bigrams, the other words as words.
    atoms: list[Atom] = []
    text = token.text
    if has_cjk(text):
        pattern = cjk_run_pattern()
        atoms.extend(Grams(tuple(bigrams(run))) for run in pattern.findall(text) if len(run) > 1)
        text = pattern.sub(" ", text)
    pieces = [piece for piece in text.split() if _WORD.search(piece)]
    for i, piece in enumerate(pieces):
        atoms.append(Term(piece, prefix=token.prefix and i == len(pieces) - 1, field=field))
    return atoms


def _build(groups: list[_Group], excluded: list[_Token]) -> ParsedQuery:
    if any(t.field == "type" for t in excluded):
        raise _fail("type: cannot be excluded; name the types you want")
    types: list[str] = []
    required: list[Term | Phrase | Grams | AnyOf] = []
    plain_words: list[str] = []
    typed_prefixes: list[Term] = []
    words: list[str] = []
    for group in groups:
        typed = [t for t in group.tokens if t.field == "type"]
        if typed:
            if len(typed) < len(group.tokens):
                raise _fail("type: cannot be an alternative to words")
            types.extend(t.text.lower() for t in typed)
            continue
        words.extend(t.text for t in group.tokens)
        atoms = [atom for tok in group.tokens for atom in _atoms(tok)]
        if len(group.tokens) > 1:
            if atoms:
                required.append(AnyOf(tuple(dict.fromkeys(atoms))))
        elif group.required:
            required.extend(atoms)
        elif group.tokens[0].prefix:
            typed_prefixes.extend(a for a in atoms if isinstance(a, Term))
        else:
            plain_words.append(group.tokens[0].text)
    types = list(dict.fromkeys(types))
    if len(types) > MAX_QUERY_TYPES:
        # Each type is one ordered read of the store: 180 of them took 25 s at 50,000
        # memories, and four such queries held every search thread of the worker.
        raise _fail(f"a query names {MAX_QUERY_TYPES} types at most ({len(types)} given)")
    ranking = _ranking_words(" ".join(plain_words), constrained=bool(required))
    terms = tuple(dict.fromkeys((*(ranking.terms if ranking else ()), *typed_prefixes)))
    grams = ranking.cjk_grams if ranking else ()
    if not (required or terms or grams):
        if types:
            return ParsedQuery(text="", match=None, types=tuple(types), structured=True)
        if excluded:
            raise _fail("the query only excludes; add a word to search for")
        raise _fail("the query holds no word to search for")
    not_atoms = tuple(dict.fromkeys(atom for tok in excluded for atom in _atoms(tok)))
    match = FtsQuery(
        terms=terms, cjk_grams=grams, required=tuple(dict.fromkeys(required)), excluded=not_atoms
    )
    return ParsedQuery(
        text=" ".join(words),
        match=match,
        types=tuple(types) or None,
        structured=True,
        must=FtsQuery(required=match.required) if required else None,
        must_not=FtsQuery(required=(AnyOf(not_atoms),)) if not_atoms else None,
    )


def _ranking_words(text: str, *, constrained: bool) -> FtsQuery | None:
    """The plain words' clauses, as plain text ranks them; only stop words rank nothing
    next to a constraint."""
    words, runs = query_terms(text)
    if constrained and not runs and all(w in QUERY_STOPWORDS for w in words):
        return None
    return ranking_query(text)
