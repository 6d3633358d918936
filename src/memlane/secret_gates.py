"""Gates: cheap tests that say whether a secret rule can match a text at all.

A gate is a function ``gate(text, low) -> bool`` made of ``str`` methods only (no
regex; ``low`` is :func:`fold` of ``text``); the anchors and key-name roots that
:func:`memlane.privacy.needs_scrub` looks for are found by an Aho-Corasick automaton
once a long text has built it (see ``SCAN_CHARS``). :mod:`memlane.secret_rules`
runs a rule's regex only when its gate passes, and :func:`memlane.privacy.needs_scrub`
is the OR of every gate, so most prompts and transcript chunks skip the filter
without importing :mod:`re`. A gate may say True wrongly (a regex runs for
nothing) but never False wrongly (a secret would leak): each is a superset of its
rule, built on a literal every match contains. The tests compare gated and
ungated scrubbing on corpora and on random text.

Key names are found through their *root* (``pass``, ``token``, ``key``…): a scan
for the root, one look at the character after it, then the rest of the key
grammar of :mod:`memlane.secret_rules` checked loosely (endings, qualifiers,
separators).
"""

from __future__ import annotations

from memlane import secret_words
from memlane.utf8 import storable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import TypeVar

    from ahocorasick_rs import AhoCorasick

    Gate = Callable[[str, str], bool]
    # A key root's (place, group) or a word's (place, root): its place first.
    _Item = TypeVar("_Item", tuple[int, int], tuple[int, str])
    # What a gate made of Anchored and Literal gates (without ``then``) asks of the
    # automaton's pass over a text: anchors found at a boundary, literals found.
    Needs = tuple[frozenset[str], frozenset[str]]

REDACTED_PREFIX = "[REDACTED:"
# A text's anchors and key-name roots are found by one pass of an Aho-Corasick automaton
# each (ahocorasick_rs, compiled) rather than a str.find loop per root: ~2x faster on
# transcript text, faster from 32 characters on. Importing and building the automata
# costs ~0.8 ms, more than the loops take on a prompt, so they are built by the first
# text of this length (a transcript's), and until then shorter texts use the loops.
# Both find every occurrence, so the gates say the same (tests compare them).
SCAN_CHARS = 256


def redacted(kind: str) -> str:
    """The marker that replaces a secret of ``kind`` (``[REDACTED:aws-key]``)."""
    return f"{REDACTED_PREFIX}{kind}]"


# Secret words by root (lower case), each with its class: "strong" (any literal
# value is a secret), "auth" (any literal but a plain word), "weak" (only a
# random-looking value), "pin" (a weak name whose 4 to 8 digit value is a secret
# too: ``pin=1234``, ``otp: 482913``). The key grammar (secret_rules) ends a key name
# with one of these words, then optional qualifiers (``_2``, ``_prod``, ``Confirm``…).
# Short words (cred, tok, sig, sid, code, pin) name a key only where a name or a part of it
# starts (secret_rules checks; "sacred" and "mapping" are no keys).
KEY_WORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "pass": (
        ("password", "strong"),
        ("passwd", "strong"),
        ("passphrase", "strong"),
        ("passcode", "strong"),
        ("pass", "strong"),
    ),
    "pw": (("pwd", "strong"), ("pw", "strong")),
    "secret": (("secret", "strong"),),
    "tok": (("token", "strong"), ("tok", "weak")),
    "cred": (
        ("credentials", "strong"),
        ("credential", "strong"),
        ("creds", "strong"),
        ("cred", "strong"),
    ),
    "dsn": (("dsn", "strong"),),
    "psk": (("psk", "strong"),),
    # "key" is strong after STRONG_KEY_PREFIXES (api_key, private_key_id…), weak alone.
    "key": (("key", "strong"),),
    "auth": (("auth", "auth"),),
    "salt": (("salt", "weak"),),
    "sig": (("signature", "weak"), ("sig", "weak")),
    "nonce": (("nonce", "weak"),),
    "seed": (("seed", "weak"),),
    "pin": (("pin", "pin"),),
    "otp": (("otp", "pin"),),
    # session_id and sessionid are session with the qualifier id: not scanned twice.
    # PHP's PHPSESSID and a plain sessid; sid (connect.sid, a CAS or SAML sid=).
    "sess": (("session", "weak"), ("sessid", "weak")),
    "sid": (("sid", "weak"),),
    # A CAS service ticket (ticket=ST-…), an OAuth authorization or device code
    # (?code=…, device_code, auth_code): random values only, like the other weak names.
    "ticket": (("ticket", "weak"),),
    "code": (("code", "weak"),),
    "cookie": (("cookie", "weak"),),
    "hmac": (("hmac", "weak"),),
    "pat": (("pat", "weak"),),
    # A software license, product or serial key (license_key itself is read as "key").
    "licen": (("license", "weak"), ("licence", "weak")),
    "serial": (("serial", "weak"),),
}
# Words that may follow a secret word inside a key name: PASSWORD_PROD, token2,
# passwordConfirm, SECRET_KEY_BASE. Shared with secret_rules (one list). A name holds
# at most MAX_QUALIFIERS of them (DB_PASSWORD_PROD_OLD_2 has three): a run of "key-key-key…"
# read as one name made every key in it end at every later one (quadratic).
MAX_QUALIFIERS = 6
QUALIFIERS = (
    "base",
    "prod",
    "production",
    "dev",
    "development",
    "stage",
    "staging",
    "test",
    "live",
    "local",
    "old",
    "new",
    "current",
    "confirm",
    "confirmation",
    "again",
    "repeat",
    "value",
    "plain",
    "plaintext",
    "raw",
    "b64",
    "base64",
    "hex",
    "enc",
    "encrypted",
    "str",
    "string",
    "bytes",
    "key",
    "id",
    "code",
)
# What makes a "key" strong (api_key, SigningKey, machineKey, "the API key is X"): the
# one list the key grammar (secret_rules' STRONG_KEY), the prose rule, the key-name gates
# and the rules' starting places read.
STRONG_KEY_WORDS = (
    "api",
    "access",
    "auth",
    "private",
    "signing",
    "session",
    "encryption",
    "master",
    "secret",
    "machine",
    "validation",
    "decryption",
)
# What joins such a word to "key" in a name (api_key, api-key, api.key, apikey).
KEY_NAME_JOINERS = ("_", "-", ".", "")
STRONG_KEY_PREFIXES = tuple(word + sep for word in STRONG_KEY_WORDS for sep in KEY_NAME_JOINERS)
# In a sentence the word may stand apart too ("the API key is X", "the machine key is X").
PROSE_KEY_PREFIXES = tuple(
    word + sep for word in STRONG_KEY_WORDS for sep in (*KEY_NAME_JOINERS, " ")
)
# Between a key name and its "=" or ":": the key's closing quote, a subscript's "]",
# TypeScript's "?"/"!", blanks, a JSON escape.
SEP_FILLER = "\\\"'] \t?!"
# high_entropy's alphabet: a value it accepts is 16+ of these ("%": it reads percent
# escapes as the characters they stand for, so an escaped value is at least as long).
ENTROPY_ALPHABET = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-.~:%"
)
_HEX_LETTERS = frozenset("abcdefABCDEF")
# How far along its line a rule reads (after a secret word, "password for prod is X";
# a value's run; a key's line either side, secret_values): a line of thousands of keys
# (a crafted file, a minified bundle) then costs each key the same, not the whole line
# again. A word cut by this reach is not read.
LINE_REACH = 1024


def fold(text: str) -> str:
    """``text`` lower-cased so that every (?i:…) match of an ASCII word shows as that
    word, at the same place (``low`` and ``text`` have the same length)."""
    low = text.lower()
    if not low.isascii():
        # re's IGNORECASE also matches ı and İ to i, ſ to s (the Kelvin sign lowers to k
        # already). İ is replaced before lowering, which would make it i + U+0307: every
        # other character lowers to one, and a U+0307 of the text stays where it is
        # (deleting it would join "key\u0307" to the word after it and hide the key).
        low = text.replace("İ", "i").lower().replace("ı", "i").replace("ſ", "s")
    return low


def _word_char(c: str) -> bool:
    # The class the regexes' boundaries exclude: ASCII letters, digits, underscore.
    return c.isascii() and (c.isalnum() or c == "_")


# (root, anchors, offset): every anchor holds ``root`` at ``offset``.
AnchorGroup = tuple[str, tuple[str, ...], int]


def bounded(text: str, groups: tuple[AnchorGroup, ...]) -> bool:
    """An anchor of any group occurs in ``text``, not after an ASCII word character
    unless it is one of ``GLUED_PREFIXES``.

    One scan for a group's short, rare root (one character scans at memchr speed) serves
    all its anchors; the groups run in one loop, without a call each.
    """
    for root, anchors, offset in groups:
        i = text.find(root)
        while i >= 0:
            start = i - offset
            if (
                start >= 0
                and text.startswith(anchors, start)
                and (
                    start == 0
                    or not _word_char(text[start - 1])
                    or any(a in GLUED_PREFIXES and text.startswith(a, start) for a in anchors)
                )
            ):
                return True
            i = text.find(root, i + 1)
    return False


class Anchored:
    """Gate of a case-sensitive rule whose match starts with an anchor at a word
    boundary (anywhere, for one of ``GLUED_PREFIXES``). ``root``: a substring every
    anchor holds at ``offset``, scanned for instead of each anchor. needs_scrub runs all
    of them in one loop (no call each)."""

    __slots__ = ("anchors", "groups", "offset", "root")

    def __init__(self, anchors: tuple[str, ...], root: str) -> None:
        offset = anchors[0].find(root)
        if offset < 0 or any(anchor.find(root) != offset for anchor in anchors):
            raise ValueError(f"privacy: root {root!r} is not at one offset in {anchors}")
        self.anchors = anchors
        self.root = root
        self.offset = offset
        self.groups: tuple[AnchorGroup, ...] = ((root, anchors, offset),)

    def __call__(self, text: str, low: str) -> bool:
        if _SCANNERS is None and len(text) < SCAN_CHARS:
            return bounded(text, self.groups)
        return not _text_scan(text)[0].isdisjoint(self.anchors)


class Either:
    """A gate that passes when any of its gates does. Made of :class:`Literal` gates
    over the text only (credential-call's hundred call names), it asks those whose
    literal the automaton found, not each in turn."""

    __slots__ = ("_by_literal", "gates")

    def __init__(self, gates: tuple[Gate, ...]) -> None:
        self.gates = gates
        literals = [gate for gate in gates if isinstance(gate, Literal) and not gate.folded]
        whole = bool(literals) and len(literals) == len(gates)
        self._by_literal = by_literal(literals) if whole else None

    def __call__(self, text: str, low: str) -> bool:
        by_literal = self._by_literal
        if by_literal is None or (_SCANNERS is None and len(text) < SCAN_CHARS):
            return any(gate(text, low) for gate in self.gates)
        return any_found(by_literal, _text_scan(text)[1], text, low)


def by_literal(gates: Iterable[Literal]) -> dict[str, list[Literal]]:
    """``gates`` by their literal, in their order."""
    table: dict[str, list[Literal]] = {}
    for gate in gates:
        table.setdefault(gate.literal, []).append(gate)
    return table


def any_found(table: dict[str, list[Literal]], found: Iterable[str], text: str, low: str) -> bool:
    """Whether a gate of ``table`` (:func:`by_literal`) whose literal is among ``found``
    passes: each found literal asks only its own gates (pure gates, an OR)."""
    return any(
        gate.then is None or gate.then(text, low)
        for literal in found
        for gate in table.get(literal, ())
    )


def cased(*anchors: str, root: str = "") -> Gate:
    """An :class:`Anchored` gate (several without a shared ``root``)."""
    if root or len(anchors) == 1:
        return Anchored(anchors, root or anchors[0])
    return Either(tuple(Anchored((anchor,), anchor) for anchor in anchors))


def either(*gates: Gate) -> Gate:
    """A gate that passes when any of ``gates`` does."""
    return Either(gates)


class Literal:
    """Gate of a rule every match of which holds ``literal`` (in ``low`` when
    ``folded``); ``then``, when given, checks further. needs_scrub finds the unfolded
    literals in the same automaton pass as the anchors."""

    __slots__ = ("folded", "literal", "then")

    def __init__(self, literal: str, *, folded: bool = False, then: Gate | None = None) -> None:
        self.literal = literal
        self.folded = folded
        self.then = then

    def __call__(self, text: str, low: str) -> bool:
        if self.folded:
            present = has_folded(low, self.literal)
        elif _SCANNERS is None and len(text) < SCAN_CHARS:
            present = self.literal in text
        else:
            present = self.literal in _text_scan(text)[1]
        return present and (self.then is None or self.then(text, low))


# ------------------------------------------------------------------ key names


_QUALIFIERS_BY_FIRST: dict[str, tuple[str, ...]] = {}
for _word in QUALIFIERS:
    _QUALIFIERS_BY_FIRST[_word[0]] = (*_QUALIFIERS_BY_FIRST.get(_word[0], ()), _word)


# What a qualifier may start with, besides a digit (see _one_qualifier).
_QUALIFIER_OPENERS = frozenset("_.-").union(_QUALIFIERS_BY_FIRST)


def _one_qualifier(low: str, at: int) -> list[int]:
    """Where one qualifier starting at ``at`` (after an optional ``_ . -``) may end."""
    n = len(low)
    k = at + 1 if at < n and low[at] in "_.-" else at
    if k >= n:
        return []
    c = low[k]
    if c == "v" and low[k + 1 : k + 2].isdigit():
        k += 1  # a version: _v2, v4
        c = low[k]
    if c.isdigit():
        d = k + 1
        while d < n and low[d].isdigit():
            d += 1
        return [d]
    return [k + len(word) for word in _QUALIFIERS_BY_FIRST.get(c, ()) if low.startswith(word, k)]


def _qualifier_ends(low: str, j: int) -> list[int]:
    """Every index where the qualifiers following a secret word at ``j`` may end
    (``_prod``, ``2``, ``Confirm``…; none at all is one of them), up to
    ``MAX_QUALIFIERS`` of them."""
    more = _one_qualifier(low, j)
    if not more:
        return [j]  # the usual case: no qualifier
    ends = {j, *more}
    level = more
    for _ in range(MAX_QUALIFIERS - 1):
        level = [end for at in level for end in _one_qualifier(low, at) if end not in ends]
        if not level:
            break
        ends.update(level)
    return sorted(ends)


def _ends_name(c: str) -> bool:
    # The rules' (?![\w\-]) after a key, seen from ASCII only (non-ASCII: maybe).
    return not (c.isascii() and (c.isalnum() or c in "_-"))


class _Folded:
    """What the gates read of one folded text, each part found once, on first ask: its key
    roots' places (place, index in _KEY_GROUPS) and word places (one scan), the patterns
    the automaton found (None: a short text read by loops), its key names, the places the
    gates ask (:func:`gate_places`) and the word places by root."""

    __slots__ = ("by_root", "gate_places", "hits", "low", "names", "places", "words")

    def __init__(self, low: str) -> None:
        self.low = low
        self.words: frozenset[str] | None = None
        if _SCANNERS is None and len(low) < SCAN_CHARS:
            self.hits, self.places = _key_roots_by_loops(low), _word_places_by_loops(low)
        else:
            self.hits, self.places, self.words = _scan_by_automaton(low)
        self.names: list[tuple[int, int, str]] | None = None
        self.gate_places: tuple[list[tuple[int, int, str]], list[tuple[int, str]]] | None = None
        self.by_root: dict[str, list[int]] | None = None


# The last text folded and read: the rules of one masking pass ask for the same text's
# names (up to seven gates), and scrub asks again for the text needs_scrub folded (an
# equal string, not the same one; == on the same one is an identity check).
_LAST: _Folded | None = None


def _folded(low: str) -> _Folded:
    global _LAST
    last = _LAST  # one read: another thread may replace it (swapped whole)
    if last is None or last.low != low:
        last = _Folded(low)
        _LAST = last
    return last


def key_ends(low: str) -> list[tuple[int, int, str]]:
    """(start, end, class) of each secret-word key name in ``low``: a word of
    KEY_WORDS, its qualifiers, and no word character after them."""
    folded = _folded(low)
    if folded.names is None:
        folded.names = _names_of(low, folded.hits)
    return folded.names


def _names_of(low: str, hits: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """The key names that start at ``hits`` (key roots' places)."""
    found: list[tuple[int, int, str]] = []
    groups = _KEY_GROUPS
    for i, index in hits:
        _names_at(low, i, groups[index], found)
    return found


# A place of a word or a key name is asked by the gates once per run of places that
# repeat with one gap and the text around each the same for GATE_WINDOW characters
# either side (every gate reads a place's line LINE_REACH on at most): a word repeated
# thousands of times (a crafted text, a log on one line) is asked about at the run's
# first and last places, not at each. The rules still read every place.
GATE_WINDOW = 2 * LINE_REACH
_MIN_RUN = 3  # places: a shorter run is asked whole


def gate_places(low: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, str]]]:
    """:func:`key_ends` and the places of each root of WORD_ROOTS (found in the same
    pass) without the places inside a run of repeats (see GATE_WINDOW): what the gates
    ask."""
    folded = _folded(low)
    if folded.gate_places is None:
        names = _names_of(low, _runs_dropped(low, folded.hits))
        folded.gate_places = (names, _runs_dropped(low, folded.places))
    return folded.gate_places


def _runs_dropped(low: str, items: list[_Item]) -> list[_Item]:
    """``items`` (their place, then what each is: a run's items are alike) but
    the inner places of each run of _MIN_RUN or more alike items in a row, one gap
    apart, around which the text repeats with that gap."""
    n, w, count = len(low), GATE_WINDOW, len(items)
    if count < _MIN_RUN or n < 2 * w:
        return items
    kept: list[_Item] = []
    start = 0
    while start < count:
        first = items[start][0]
        end = start + 1
        if w <= first and end < count:
            gap = items[end][0] - first
            last = first
            while (
                end < count
                and items[end][0] - last == gap
                and items[end][0] <= n - w
                and items[end][1] == items[start][1]
            ):
                last = items[end][0]
                end += 1
            if (
                end - start >= _MIN_RUN
                and gap > 0
                and low[first - w : last + w - gap] == low[first - w + gap : last + w]
            ):
                kept += (items[start], items[end - 1])
            else:
                kept += items[start:end]  # each asked (a run is read once either way)
            start = end
            continue
        kept.append(items[start])
        start = end
    return kept


def has_folded(low: str, word: str) -> bool:
    """``word in low`` for a word of ``FOLDED_WORDS``, answered by the automaton's pass
    over ``low`` when one read it (the key names' scan: no scan of its own)."""
    words = _folded_words(low)
    return word in low if words is None else word in words


def _folded_words(low: str) -> frozenset[str] | None:
    """The patterns the folded text's automaton found in ``low``; None when a short text
    is read by loops (a prompt: no scan for words alone)."""
    if _SCANNERS is None and len(low) < SCAN_CHARS:
        return None
    return _folded(low).words


def key_names_by_loops(low: str) -> list[tuple[int, int, str]]:
    """:func:`key_ends` by a str.find loop per root."""
    return _names_of(low, _key_roots_by_loops(low))


def _key_roots_by_loops(low: str) -> list[tuple[int, int]]:
    hits: list[tuple[int, int]] = []
    for index, root in enumerate(KEY_WORDS):
        i = low.find(root)
        while i >= 0:
            hits.append((i, index))
            i = low.find(root, i + 1)
    return hits


def _word_places_by_loops(low: str) -> list[tuple[int, str]]:
    places: list[tuple[int, str]] = []
    for root in WORD_ROOTS:
        i = low.find(root)
        while i >= 0:
            places.append((i, root))
            i = low.find(root, i + 1)
    return places


def key_names_by_automaton(low: str) -> list[tuple[int, int, str]]:
    """:func:`key_ends` by one automaton pass, in the loops' order (root, then place)."""
    return _names_of(low, _scan_by_automaton(low)[0])


def _scan_by_automaton(
    low: str,
) -> tuple[list[tuple[int, int]], list[tuple[int, str]], frozenset[str]]:
    hits: list[tuple[int, int]] = []
    places: list[tuple[int, str]] = []
    keys, roots = len(_KEY_GROUPS), _FOLDED_ROOTS_END
    matches = sorted(_matches(_scanners()[1], low))
    for index, i, _ in matches:
        if index >= roots:
            continue  # one of FOLDED_WORDS only: the set below
        if index < keys:
            hits.append((i, index))
        root = _FOLDED_WORD_ROOTS.get(index)
        if root is not None:
            places.append((i, root))
    patterns = _FOLDED_PATTERNS
    return hits, places, frozenset([patterns[index] for index in {m[0] for m in matches}])


def _names_at(
    low: str, i: int, words: tuple[tuple[str, str], ...], found: list[tuple[int, int, str]]
) -> None:
    """Add to ``found`` the key names that start at ``i``, where a root of ``words`` is."""
    for word, cls in words:
        if not low.startswith(word, i):
            continue
        # Most occurrences are words going on ("tokens", "passed", "keyboard"):
        # no qualifier follows and the name does not end, which rules them out.
        j = i + len(word)
        after = low[j : j + 1]
        if (
            after in _QUALIFIERS_BY_FIRST
            and not low.startswith(_QUALIFIERS_BY_FIRST[after], j)
            and not (after == "v" and low[j + 1 : j + 2].isdigit())
        ):
            continue  # a letter no qualifier starts with here: the word goes on ("sessions")
        if after in _QUALIFIER_OPENERS or after.isdigit():
            ends = [e for e in _qualifier_ends(low, j) if _ends_name(low[e : e + 1])]
            if not ends:
                continue
        elif _ends_name(after):
            ends = [j]  # what _qualifier_ends gives when no qualifier can start here
        else:
            continue
        if word == "key" and not low[max(0, i - 12) : i].endswith(STRONG_KEY_PREFIXES):
            cls = "weak"
        found.extend((i, end, cls) for end in ends)


def _sep_after(low: str, j: int, seps: str) -> int:
    """Index of a separator in ``seps`` after the key ending at ``j`` (filler skipped),
    or -1."""
    n = len(low)
    while j < n and low[j] in SEP_FILLER:
        j += 1
    return j if j < n and low[j] in seps else -1


def _dash_before(low: str, i: int) -> bool:
    """A "-" starts the run of name characters ending at ``i`` (``--db-password``)."""
    while i > 0:
        i -= 1
        c = low[i]
        if c == "-":
            return True
        if c.isascii() and not (c.isalnum() or c == "_"):
            return False  # non-ASCII letters may be \w: scanning on is the safe side
    return False


def random_value_after(text: str, j: int) -> bool:
    """A value of 16+ characters of ENTROPY_ALPHABET, a digit among them, may follow
    the operator at ``j`` (``high_entropy`` accepts no value without a digit: letters
    alone are not hex or base32 that passes, nor three classes of characters). A run
    read to ``LINE_REACH`` may go on: it may be one."""
    return any(
        len(run) >= 16 and (len(run) >= LINE_REACH or any(c.isdigit() for c in run))
        for run in _runs_after(text, j)
    )


def digits_value_after(text: str, j: int) -> bool:
    """A value opening with 4 digits may follow the operator at ``j`` (a PIN)."""
    return any(run[:4].isdigit() and len(run) >= 4 for run in _runs_after(text, j))


def _runs_after(text: str, j: int) -> list[str]:
    """The runs of ENTROPY_ALPHABET where a value after the operator at ``j`` may start.

    Follows the separator and value grammar loosely (a superset): "=>" or ":=",
    blanks, an optional string prefix and (escaped) quote, the blanks strip() would
    drop. For ":", the value may also come after a type annotation (``key: str =
    "…"``), i.e. after the line's next "=".
    """
    runs = []
    n = len(text)
    starts = [j + 1]
    if j + 1 < n and text[j + 1] in "=>":
        starts.append(j + 2)
    if text[j] == ":":
        end = text.find("\n", j)
        eq = text.find("=", j, n if end < 0 else end)
        if eq >= 0:
            starts.append(eq + 1)
    for k in starts:
        while k < n and text[k] in " \t":
            k += 1
        # String prefix letters (b"…", f'…', @"…") only before a quote, as parse_value
        # takes them: a bare value may start with these letters.
        p = k
        while p < n and text[p] in "bBrRuUfF@":
            p += 1
        if p < n and text[p] in "\"'`\\":
            k = p
        while k < n and text[k] == "\\":  # \" in JSON, \\\" in JSON inside JSON
            k += 1
        if k < n and text[k] in "\"'`":
            k += 1
        while k < n and text[k].isspace():
            k += 1
        end = k
        # At most LINE_REACH of it: in "pat:pat:pat:…" every key's run was the rest of
        # the text (quadratic).
        stop = min(n, k + LINE_REACH)
        while end < stop and text[end] in ENTROPY_ALPHABET:
            end += 1
        runs.append(text[k:end])
    return runs


# Each key-name gate has a checker taking the key names already found (start, end,
# class), so needs_scrub scans for them once (any_key_rule). Windows and values are
# read from ``low``: folding only turns characters into ASCII letters, which can
# make a check pass wrongly, never fail wrongly.
if TYPE_CHECKING:
    Found = list[tuple[int, int, str]]


def _assignment(text: str, low: str, found: Found) -> bool:
    n = len(low)
    for _, j, cls in found:
        if cls in ("weak", "pin"):
            continue
        k = j
        while k < n and low[k] in SEP_FILLER:
            k += 1
        if k < n and (low[k] in "=:" or (low[k] == "," and ("'" in low[j:k] or '"' in low[j:k]))):
            return True
        if low[j : j + 1] in (" ", "\t") and _quoted_to_semicolon(low, j):
            return True
    return False


def _quoted_to_semicolon(low: str, j: int) -> bool:
    """Blanks, a quoted string on the line, and a ";" right after it: ``private_key
    "…";`` (nginx), as the separator's look-ahead reads it. Read to the closing quote
    only: a key repeated on a long line had the rest of the line read at each."""
    k = j
    while k < len(low) and low[k] in " \t":
        k += 1
    quote = low[k : k + 1]
    if quote not in ("'", '"'):
        return False
    close = low.find(quote, k + 1)
    return close >= 0 and low.find("\n", k, close) < 0 and low.startswith(";", close + 1)


def _flag(text: str, low: str, found: Found) -> bool:
    n = len(low)
    return any(
        cls == "strong" and j < n and low[j] in " \t" and _dash_before(low, i)
        for i, j, cls in found
    )


def _weak(text: str, low: str, found: Found) -> bool:
    for _, j, cls in found:
        if cls != "auth":
            k = _sep_after(low, j, "=:")
            if k >= 0 and (
                random_value_after(low, k) or (cls == "pin" and digits_value_after(low, k))
            ):
                return True
    return False


def _tag(text: str, low: str, found: Found) -> bool:
    n = len(low)
    return any(cls == "strong" and j < n and low[j] == ">" for _, j, cls in found)


# How far after a key name the name-value rule's "value" may be: blanks, a quote and a
# comma, and one YAML comment line ("- name: DB_PASSWORD", "# from vault", "value: X").
_NAME_VALUE_REACH = 256


def _name_value(text: str, low: str, found: Found) -> bool:
    return any(
        cls == "strong"
        and "value" in low[j : j + _NAME_VALUE_REACH]
        and ("name" in low[max(0, i - 80) : i] or "key" in low[max(0, i - 80) : i])
        for i, j, cls in found
    )


PROSE_ROOTS = ("pass", "pw", "token", "secret", "cred", "dsn")
# Words of a sentence between a secret word and its connector ("the API key we use for
# Stripe in prod: X"): at most this many, so ordinary prose far from the word stays.
PROSE_FILLER_WORDS = 6
# What the prose rule strips around a word before judging it random-looking.
# A backslash and braces too: JSON that holds JSON escapes its quotes (\"…\"}).
TOKEN_PUNCTUATION = "\"'`.,;:!?()[]<>{}\\"  # noqa: S105 - punctuation, not a password
SENTENCE_END = ".!?,;"


# The last answers of the gates that read the words around each place of a word (the
# prefilter asks them, then each rule's gate again, of the same text): by gate, the text
# (folded) and the answer.
_ANSWERS: dict[object, tuple[str, bool]] = {}


def _remembered(gate: object, low: str) -> bool | None:
    last = _ANSWERS.get(gate)  # one read: another thread may replace it (a tuple)
    return last[1] if last is not None and last[0] == low else None


def _prose(text: str, low: str, found: Found) -> bool:
    answer = _remembered(_prose, low)
    if answer is None:
        answer = _prose_at(low, found)
        _ANSWERS[_prose] = (low, answer)
    return answer


def _prose_at(low: str, found: Found) -> bool:
    for i, j, cls in found:
        is_key = low.startswith("key", i)
        if cls in ("weak", "pin") and not is_key:
            continue  # the prose rule knows strong words, auth, key and bearer only
        count = PROSE_FILLER_WORDS + 4
        words = plain_words_after(low, j, count)
        if _random_word(words[:4]) or secret_words.value_below(low, j) is not None:
            return True
        strong = low.startswith(PROSE_ROOTS, i) or (
            is_key and low[max(0, i - 12) : i].endswith(PROSE_KEY_PREFIXES)
        )
        # Fewer words than asked: the line ended, or the reach cut it (then the value
        # after a connector may lie past it: maybe).
        cut = len(words) < count and low.find("\n", j, j + LINE_REACH) < 0
        if strong and _connector_in(words, cut=cut and j + LINE_REACH < len(low)):
            return True
    return False


# An adverb between the connector and the value: "the new password is now X".
PROSE_ADVERBS = frozenset(("now", "still", "currently", "actually", "just", "simply"))


def plain_words_after(line: str, j: int, count: int) -> list[str]:
    """The words of :func:`words_after`, without their offsets (a split, no search)."""
    end = line.find("\n", j, j + LINE_REACH)
    stop = end if end >= 0 else j + LINE_REACH
    parts = line[j:stop].split(None, count)
    if len(parts) <= count and end < 0 and stop < len(line) and not line[stop - 1].isspace():
        parts = parts[:-1]  # the last word runs past the reach: left out
    return parts[:count]


def words_after(line: str, j: int, count: int) -> list[tuple[int, str]]:
    """The first ``count`` words after index ``j`` on its line, with their offsets
    from ``j``, within LINE_REACH (a word the reach cuts is left out). The prose rule
    reads ``text`` with it, its gate ``low``: folding keeps every character's place, so
    the gate reads as far."""
    end = line.find("\n", j, j + LINE_REACH)
    cut = end < 0 and j + LINE_REACH < len(line)
    window = line[j : end if end >= 0 else j + LINE_REACH]
    # Splitting stops after ``count`` words: a secret word in a long line of prose
    # reads six words, not the whole reach.
    words = secret_words.blank_words(window, count)
    if cut and words and words[-1][0] + len(words[-1][1]) == len(window):
        words.pop()
    return words


def _connector_in(words: list[str], *, cut: bool) -> bool:
    """A connector among the filler words (or the word after them: "it's" after a
    clause), then a word long enough to be the value, maybe after an adverb ("is now
    X"); with ``cut`` (the reach ended ``words``), a connector whose value is past it."""
    for idx, w in enumerate(words[: PROSE_FILLER_WORDS + 2]):
        if w in secret_words.CONNECTORS or (idx > 0 and (w.endswith(":") or w == "=")):
            after = words[idx + 1 : idx + 3]
            if not after:
                if cut:
                    return True
                continue
            if len(after[0]) >= secret_words.PROSE_VALUE_CHARS:
                return True
            if after[0] in PROSE_ADVERBS:
                if len(after) < 2 and cut:
                    return True
                if len(after) > 1 and len(after[1]) >= secret_words.PROSE_VALUE_CHARS:
                    return True
    return False


def _random_word(words: list[str]) -> bool:
    """One of ``words`` (the next four) may pass high_entropy: 16+ characters of its
    alphabet, a digit, and 6+ distinct characters (12 needed before folding)."""
    for word in words:
        core = word.strip(TOKEN_PUNCTUATION)
        if (
            len(core) >= 16
            and all(c in ENTROPY_ALPHABET for c in core)
            and any(c.isdigit() for c in core)
            and len(set(core)) >= 6
        ):
            return True
    return False


def opens_line(text: str, i: int) -> bool:
    """Whether the name whose secret word starts at ``i`` opens its line: only blanks
    and the name's other parts (``wpa-``, ``db_``) before it (any case: ``text`` folded
    or not)."""
    k = i
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_.-"):
        k -= 1
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    return k == 0 or text[k - 1] == "\n"


def _line_key(text: str, low: str, found: Found) -> bool:
    n = len(low)
    return any(
        cls == "strong"
        and j < n
        and low[j] in " \t"
        and opens_line(low, i)
        and _one_value_after(low, j)
        for i, j, cls in found
    )


def _one_value_after(low: str, j: int) -> bool:
    """Whether the rest of the line after ``j`` may be one value, as the config-line
    rule reads it (secret_rules._line_value): a quote or a backslash on it (a string may
    hold blanks), or one run of non-blanks, then nothing or a "#" comment."""
    end = low.find("\n", j)
    line = low[j : end if end >= 0 else len(low)]
    if any(c in line for c in "\"'`\\"):
        return True
    words = line.split(None, 1)
    return len(words) < 2 or words[1].startswith("#") or secret_words.app_password(line)


_KEY_CHECKS = (_assignment, _flag, _weak, _tag, _name_value, _prose, _line_key)


def key_assignment(text: str, low: str) -> bool:
    """A strong or auth key name followed by "=", ":" or a call's "," (the key rules)."""
    return _assignment(text, low, gate_places(low)[0])


def key_then_blank(text: str, low: str) -> bool:
    """A strong key name followed by a blank (``set -x API_TOKEN value``)."""
    n = len(low)
    return any(cls == "strong" and j < n and low[j] in " \t" for _, j, cls in gate_places(low)[0])


def key_line(text: str, low: str) -> bool:
    """A strong key name opening its line, then a blank (``wpa-psk X``, ``password X``:
    a config file of ``name value`` lines)."""
    return _line_key(text, low, gate_places(low)[0])


def key_flag(text: str, low: str) -> bool:
    """A dash-led strong key name followed by a blank (``--password hunter2``)."""
    return _flag(text, low, gate_places(low)[0])


def weak_assignment(text: str, low: str) -> bool:
    """A weak key name ("salt", "session", a plain "key") followed by a separator and
    a value that may be random-looking."""
    return _weak(text, low, gate_places(low)[0])


def key_tag(text: str, low: str) -> bool:
    """``<…password>``: a key name closing an XML tag."""
    return ">" in text and _tag(text, low, gate_places(low)[0])


def name_value(text: str, low: str) -> bool:
    """``name: DB_PASSWORD`` then ``value: …`` (Kubernetes env, .NET appSettings)."""
    return "value" in low and _name_value(text, low, gate_places(low)[0])


# What every match of secret_rules.STRONG_KEY holds, folded: the roots of KEY_WORDS with
# a strong word ("pass", "pw", "secret", "tok", "cred", "dsn", "psk", the "key" of api_key).
_STRONG_ROOTS = tuple(
    root for root, words in KEY_WORDS.items() if any(kind == "strong" for _, kind in words)
)
# How far the gates below look for a quote that closes a name (a longer name: "maybe").
_NAME_REACH = 256


def _strong_name(low: str, start: int, end: int) -> bool:
    name = low[start:end]
    return any(root in name for root in _STRONG_ROOTS)


def named_element(text: str, low: str) -> bool:
    """An element named for a secret by its ``name``/``key`` attribute, as secret_rules'
    named-element reads it (``<property name="hibernate.connection.password">v</property>``):
    ``name=`` or ``key=`` then a quoted name holding a strong key's root, then within 200
    characters the tag's ">", then one line of text up to a closing tag ``</``."""
    if "</" not in text or not key_ends(low):
        return False
    for attribute in ("name=", "key="):
        i = low.find(attribute)
        while i >= 0:
            if _named_element_at(low, i + len(attribute)):
                return True
            i = low.find(attribute, i + 1)
    return False


def _named_element_at(low: str, q: int) -> bool:
    if low[q : q + 1] not in ('"', "'"):
        return False
    ends = [
        k
        for k in (low.find('"', q + 1, q + _NAME_REACH), low.find("'", q + 1, q + _NAME_REACH))
        if k >= 0
    ]
    if not ends:
        return True  # a long name: maybe
    close = min(ends)
    if not _strong_name(low, q + 1, close):
        return False
    gt = low.find(">", close + 1, close + 202)
    if gt < 0 or low.find("<", close + 1, gt) >= 0:
        return False
    lt = low.find("<", gt + 1, gt + 4098)
    return lt > gt + 1 and low.startswith("</", lt) and low.find("\n", gt + 1, lt) < 0


def object_value(text: str, low: str) -> bool:
    """A key named for a secret whose value is an object holding ``"value"``, as
    secret_rules' object-value reads it (``"spring.mail.password": {"value": "X"}``): a
    ``"value"`` with a "{" at most 400 characters before it and no brace between, that
    "{" after ``":`` (blanks allowed) and a quoted name holding a strong key's root."""
    if "{" not in text or not key_ends(low):
        return False
    v = text.find('"value')
    while v >= 0:
        closed = text[v + 6 : v + 7] == '"' or text.startswith('\\"', v + 6)
        if closed and _object_value_at(text, low, v - 1 if text[v - 1 : v] == "\\" else v):
            return True
        v = text.find('"value', v + 1)
    return False


def _object_value_at(text: str, low: str, v: int) -> bool:
    start = max(0, v - 401)
    brace = text.rfind("{", start, v)
    if brace < 0 or text.rfind("}", start, v) > brace:
        return False
    k = _blanks_before(text, brace)
    if k < 0:
        return True  # a long run of blanks: maybe
    if text[k - 1 : k] != ":":
        return False
    k = _blanks_before(text, k - 1)
    if k < 0:
        return True
    if text[k - 1 : k] != '"':
        return False
    opening = text.rfind('"', max(0, k - 1 - _NAME_REACH), k - 1)
    return opening < 0 or _strong_name(low, opening + 1, k - 1)


def _blanks_before(text: str, k: int) -> int:
    """Where the run of spaces and tabs that ends at ``k`` starts; -1 past _NAME_REACH
    of them (a gate then says "maybe" rather than read the run again for each place)."""
    limit = max(0, k - _NAME_REACH)
    while k > limit and text[k - 1] in " \t":
        k -= 1
    return -1 if k == limit and limit > 0 and text[k - 1] in " \t" else k


def prose(text: str, low: str) -> bool:
    """A secret word, then on its line a connector ("is", "for prod:") or a
    random-looking word (the prose and near-word rule)."""
    return _prose(text, low, gate_places(low)[0]) or bearer_word(text, low)


def bearer_word(text: str, low: str) -> bool:
    """The word "bearer" with a random-looking word after it on its line."""
    i = low.find("bearer")
    while i >= 0:
        if _random_word(plain_words_after(low, i + 6, 4)):
            return True
        i = low.find("bearer", i + 1)
    return False


def url_userinfo(text: str, low: str) -> bool:
    """ "://" with an "@" within reach: a URL that may carry credentials."""
    i = text.find("://")
    while i >= 0:
        if "@" in text[i + 3 : i + 3 + 520]:
            return True
        i = text.find("://", i + 3)
    return False


def cookie_header(text: str, low: str) -> bool:
    """ "cookie" followed by blanks and ":" (a Cookie or Set-Cookie header)."""
    i = low.find("cookie")
    while i >= 0:
        j = i + 6
        while j < len(low) and low[j] in " \t":
            j += 1
        if j < len(low) and low[j] == ":":
            return True
        i = low.find("cookie", i + 1)
    return False


def mailchimp_key(text: str, low: str) -> bool:
    """ "-us" and a digit after 32 characters, the last a lowercase hex digit."""
    i = text.find("-us", 32)
    while i >= 0:
        if text[i + 3 : i + 4].isdecimal() and text[i - 1] in "0123456789abcdef":
            return True
        i = text.find("-us", i + 1)
    return False


# ------------------------------------------------------------------ shapes
# Two rules have no literal at all: a Discord bot token (three dotted base64url parts)
# and an AWS secret access key standing alone (40 base64 characters). Their gates
# look for the shape: the text as bytes, each character mapped to a class letter by
# bytes.translate (C speed, like the literal scans), then one substring search. A
# character outside ASCII becomes bytes of 0x80 and more, mapped to a blank: no
# rule's class holds one.
_BASE64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# Base64 ("+/") is "a"; base64url's "_-" are "c"; "." stays; everything else a blank.
_SHAPE_TABLE = bytes(
    ord("a")
    if c in _BASE64_CHARS or c in b"+/"
    else ord("c")
    if c in b"_-"
    else ord(".")
    if c == ord(".")
    else ord(" ")
    for c in range(256)
)
# Base64url as one class letter: "_-" like the letters, "+/" too (a superset).
_URLSAFE_TABLE = bytes(ord("a") if c == ord("c") else c for c in range(256))
_AWS_RUN = b"a" * 40
# A bot token's parts: 23+ characters (first segment), 6, 27+.
_DISCORD_SHAPE = b"a" * 23 + b"." + b"a" * 6 + b"." + b"a" * 27
_LAST_SHAPES: tuple[str, bytes] = ("", b" ")


def _shapes(text: str) -> bytes:
    """``text`` translated to class letters (see ``_SHAPE_TABLE``), a blank either side."""
    global _LAST_SHAPES
    last = _LAST_SHAPES  # one read: another thread may replace it (swapped whole)
    if text == last[0]:
        return last[1]
    shapes = b" " + text.encode("utf-8", "surrogatepass").translate(_SHAPE_TABLE) + b" "
    _LAST_SHAPES = (text, shapes)
    return shapes


def base64_run(text: str, low: str) -> bool:
    """A run of exactly 40 base64 characters, not glued to a ``_`` or ``-`` (a bare AWS
    secret access key: the rule asks more of it)."""
    if len(text) < 40:
        return False
    shapes = _shapes(text)
    if _AWS_RUN not in shapes:
        return False
    return b" " + _AWS_RUN + b" " in shapes or b" " + _AWS_RUN + b"." in shapes


def discord_shape(text: str, low: str) -> bool:
    """Three base64url parts of 23+, 6 and 27+ characters joined by dots."""
    if len(text) < len(_DISCORD_SHAPE) or "." not in text:
        return False
    shapes = _shapes(text)
    if b"." + b"a" * 6 + b"." not in shapes and b"c" not in shapes:
        return False
    return _DISCORD_SHAPE in shapes.translate(_URLSAFE_TABLE)


_HEX_DIGITS = frozenset("0123456789abcdef")


def airtable_token(text: str, low: str) -> bool:
    """ "pat", 14 ASCII letters and digits, "." and 64 lowercase hex digits (an Airtable
    personal access token); "pat" alone is in every "path" and "pattern"."""
    i = text.find("pat")
    while 0 <= i <= len(text) - 82:
        body = text[i + 3 : i + 17]
        if (
            text[i + 17] == "."
            and body.isascii()
            and body.isalnum()
            and _HEX_DIGITS.issuperset(text[i + 18 : i + 82])
        ):
            return True
        i = text.find("pat", i + 1)
    return False


class Spelling:
    """The ways the tag regexes (:mod:`memlane.privacy`, which builds its patterns from
    these) read one character of a tag: ``plain`` characters (and any whitespace when
    ``whitespace``); as JSON (``\\u003c``) or JavaScript (``\\x3c``) write it, lower
    case (``backslashed``); as a URL writes it, hex digits after "%" (``percent``); as
    HTML writes it, after "&": a name (``html``; HTML5 reads some without their ";") or a
    numeric reference (``numeric``: "#" or "#x", any leading zeros, the number, maybe
    ";"). A URL's "%" and HTML's "&" may be escaped again, any number of times: a URL
    encoded twice writes "%" as "%25" (%253c), HTML escaped twice "&" as "&amp;"
    (&amp;lt;)."""

    __slots__ = ("backslashed", "html", "numeric", "percent", "plain", "whitespace")

    def __init__(
        self,
        plain: str,
        *,
        backslashed: tuple[str, ...],
        percent: tuple[str, ...],
        html: tuple[str, ...],
        numeric: tuple[tuple[str, str], ...],
        whitespace: bool = False,
    ) -> None:
        self.plain = plain
        self.backslashed = backslashed
        self.percent = percent
        self.html = html
        self.numeric = numeric
        self.whitespace = whitespace


LT = Spelling(
    "<",
    backslashed=("\\u003c", "\\x3c"),
    percent=("3c",),
    html=("lt", "lt;"),
    numeric=(("#", "60"), ("#x", "3c")),
)
# A namespace prefix's ":" (<x:private>, %3Cx%3Aprivate%3E).
COLON = Spelling(
    ":",
    backslashed=("\\u003a", "\\x3a"),
    percent=("3a",),
    html=("colon;",),
    numeric=(("#", "58"), ("#x", "3a")),
)
# A blank after "<" or "/": whitespace, a form-encoded space ("+"), and the escapes of
# space, tab, line feed and carriage return (JSON's \n, %20, %0A, &nbsp;, &#9;…).
BLANK = Spelling(
    "+",
    whitespace=True,
    backslashed=(
        *("\\n", "\\r", "\\t"),
        *("\\u0020", "\\u0009", "\\u000a", "\\u000d"),
        *("\\x20", "\\x09", "\\x0a", "\\x0d"),
    ),
    percent=("20", "09", "0a", "0d"),
    html=("nbsp", "nbsp;", "tab;", "newline;"),
    numeric=(
        *(("#", "32"), ("#", "9"), ("#", "10"), ("#", "13")),
        *(("#x", "20"), ("#x", "9"), ("#x", "a"), ("#x", "d")),
    ),
)


def _lead_at(low: str, end: int, lead: str, again: str) -> int:
    """Where ``lead`` ("&" or "%") starts when ``low[:end]`` ends with it, escaped any
    number of times (``again``: what its escape adds, "amp;" or "25"); -1 when it does
    not. A run of escapes is read once, backwards from ``end``."""
    while low.endswith(again, 0, end):
        end -= len(again)
    return end - 1 if end > 0 and low[end - 1] == lead else -1


def spelled_at(low: str, end: int, spelling: Spelling) -> int:
    """Where a character written one of ``spelling``'s ways starts, when ``low[:end]``
    ends with one; -1 when it does not."""
    if end > 0:
        last = low[end - 1]
        if last in spelling.plain or (spelling.whitespace and last.isspace()):
            return end - 1
    for escape in spelling.backslashed:
        if low.endswith(escape, 0, end):
            return end - len(escape)
    for code in spelling.percent:
        if low.endswith(code, 0, end):
            start = _lead_at(low, end - len(code), "%", "25")
            if start >= 0:
                return start
    for name in spelling.html:
        if low.endswith(name, 0, end):
            start = _lead_at(low, end - len(name), "&", "amp;")
            if start >= 0:
                return start
    stem = end - 1 if low.endswith(";", 0, end) else end
    for prefix, number in spelling.numeric:
        if low.endswith(number, 0, stem):
            k = stem - len(number)
            while k > 0 and low[k - 1] == "0":
                k -= 1
            if low.endswith(prefix, 0, k):
                start = _lead_at(low, k - len(prefix), "&", "amp;")
                if start >= 0:
                    return start
    return -1


def lt_ends_at(low: str, end: int) -> bool:
    """Whether ``low[:end]`` ends with a "<" as the tag regexes read one (:data:`LT`)."""
    return spelled_at(low, end, LT) >= 0


def _blanks_start(low: str, end: int) -> int:
    """Where the run of blanks (:data:`BLANK`) ending at ``end`` starts (``end`` when
    there is none)."""
    start = spelled_at(low, end, BLANK)
    while start >= 0:
        end = start
        start = spelled_at(low, end, BLANK)
    return end


def _slash_at(low: str, end: int) -> int:
    """Where a "/" ending at ``end`` starts (``/``, ``\\/``, ``%2f`` with its "%"
    escaped any number of times), or -1."""
    if end > 0 and low[end - 1] == "/":
        return end - 2 if end > 1 and low[end - 2] == "\\" else end - 1
    return _lead_at(low, end - 2, "%", "25") if low.endswith("2f", 0, end) else -1


def _tag_opens_at(low: str, end: int) -> bool:
    """Whether ``<`` [blanks] [``/``] [blanks] ends at ``end``."""
    j = _blanks_start(low, end)
    slash = _slash_at(low, j)
    if slash >= 0:
        j = _blanks_start(low, slash)
    return lt_ends_at(low, j)


def _prefix_char(c: str) -> bool:
    # The tag regexes' [\w.\-] seen from the folded text: ASCII exactly; any other
    # character but whitespace may be a word character (maybe).
    return (c.isalnum() or c in "_.-") if c.isascii() else not c.isspace()


def tag_near(low: str, name: str) -> bool:
    """``<`` [blanks] [``/``] [blanks] [prefix ``:``] ``name``: where a tag regex can
    match (``<`` also escaped, see :func:`lt_ends_at`; ``/`` also ``\\/`` or ``%2f``;
    blanks any whitespace; the prefix, XML's namespace, word characters, dots and
    hyphens). Each run of blanks, escapes or a prefix's characters is read back from
    one name only (a prefix ends at its ":"), so crafted text costs linear time."""
    i = low.find(name)
    while i >= 0:
        if _tag_opens_at(low, i):
            return True
        colon = spelled_at(low, i, COLON)
        if colon >= 0 and _prefix_opens(low, colon):
            return True
        i = low.find(name, i + 1)
    return False


def _prefix_opens(low: str, colon: int) -> bool:
    """Whether a tag's opening may end where a namespace prefix ending at ``colon``
    starts. At the start of the run of prefix characters; or inside it, after an escaped
    "<" or "/" whose first characters are not prefix characters but whose last ones are
    (\\x3cx:, %253cx:, &ltx:, &#60x:): said "maybe" when the run follows the first
    character of one, without reading the run again."""
    k = colon
    while k > 0 and _prefix_char(low[k - 1]):
        k -= 1
    if k == colon:
        return False
    return _tag_opens_at(low, k) or (k > 0 and low[k - 1] in _ESCAPE_LEADS)


# What comes before the prefix characters of an escaped "<" or "/": its "\\", "%",
# "&", "#" or (after "&amp;") ";".
_ESCAPE_LEADS = "\\%&#;"


# ------------------------------------------------------------------ words
# Secrets a word announces and a check confirms (memlane.secret_words): the gate is
# the check itself, run where the word is.


# Where the word rules' words may start, found with the key names (one pass).
WORD_ROOTS = tuple(
    dict.fromkeys(
        (
            *secret_words.CODE_ROOTS,
            *secret_words.SEED_ROOTS,
            *secret_words.FOREIGN_PASSWORD_WORDS,
            *secret_words.SHAPE_WORDS,
            *secret_words.COLUMN_WORDS,
            *secret_words.OTP_SEED_WORDS,
            *secret_words.UUID_TOKEN_VENDORS,
            *secret_words.PAIR_WORDS,
            *secret_words.RESET_WORDS,
            "mailgun",
        )
    )
)
_CODE_ROOTS = frozenset(secret_words.CODE_ROOTS)
_SEED_ROOTS = frozenset(secret_words.SEED_ROOTS)
_PASSWORD_WORDS = frozenset(secret_words.FOREIGN_PASSWORD_WORDS)
_SHAPE_WORDS = frozenset(secret_words.SHAPE_WORDS)
_COLUMN_WORDS = frozenset(secret_words.COLUMN_WORDS)
_OTP_SEED_WORDS = frozenset(secret_words.OTP_SEED_WORDS)
_UUID_VENDORS = frozenset(secret_words.UUID_TOKEN_VENDORS)
_PAIR_WORDS = frozenset(secret_words.PAIR_WORDS)
_RESET_WORDS = frozenset(secret_words.RESET_WORDS)


def _found_at_words(
    low: str, roots: frozenset[str], found_at: Callable[[str, int], object]
) -> bool:
    """Whether ``found_at`` (a finder of :mod:`memlane.secret_words`) finds what its rule
    masks at a place of one of ``roots`` (asked once per place: two roots may start at one,
    "pass" and "password")."""
    answer = _remembered(found_at, low)
    if answer is None:
        answer = _found_at_places(low, roots, found_at)
        _ANSWERS[found_at] = (low, answer)
    return answer


def _found_at_places(
    low: str, roots: frozenset[str], found_at: Callable[[str, int], object]
) -> bool:
    by_root = _places_by_root(low)
    asked: set[int] = set()
    for root in roots.intersection(by_root):
        for i in by_root[root]:
            if i not in asked:
                if found_at(low, i) is not None:
                    return True
                asked.add(i)
    return False


# The last text's word places by root (a gate asks only for its roots' places).
def _places_by_root(low: str) -> dict[str, list[int]]:
    folded = _folded(low)
    if folded.by_root is None:
        by_root: dict[str, list[int]] = {}
        for i, root in gate_places(low)[1]:
            by_root.setdefault(root, []).append(i)
        folded.by_root = by_root
    return folded.by_root


def one_time_code(text: str, low: str) -> bool:
    """A PIN, one-time or card security code after its word (``verification code:
    493817``)."""
    return _found_at_words(low, _CODE_ROOTS, secret_words.code_value_at)


def seed_phrase(text: str, low: str) -> bool:
    """12 to 24 mnemonic words after ``seed phrase`` and its kin."""
    return _found_at_words(low, _SEED_ROOTS, secret_words.seed_words_at)


def foreign_password(text: str, low: str) -> bool:
    """A value after "password" in another language (``Passwort:``, ``パスワードは``)."""
    return _found_at_words(low, _PASSWORD_WORDS, secret_words.password_value_at)


def password_shape(text: str, low: str) -> bool:
    """A word shaped like a made-up password near a password word, on its line."""
    return _found_at_words(low, _SHAPE_WORDS, secret_words.shaped_value_near)


def password_pair(text: str, low: str) -> bool:
    """A user and a password split by " / " after "login is", "wifi:"…"""
    return _found_at_words(low, _PAIR_WORDS, secret_words.pair_value_at)


def password_reset(text: str, low: str) -> bool:
    """A secret set to a new value: "reset it to X" after a secret word."""
    return _found_at_words(low, _RESET_WORDS, secret_words.reset_value_at)


def mailgun_key(text: str, low: str) -> bool:
    """A Mailgun key without its prefix after the word "mailgun"."""
    return _found_at_words(low, frozenset(("mailgun",)), secret_words.mailgun_key_near)


def secret_column(text: str, low: str) -> bool:
    """A table with a column named for a secret, and rows under it."""
    return _found_at_words(low, _COLUMN_WORDS, secret_words.column_cells_at)


def vendor_uuid(text: str, low: str) -> bool:
    """A vendor whose tokens are UUIDs (``SNYK=…``; found with the word roots) and a
    UUID's four dashes: the rule's regex finds the vendor's word, secret_words the UUID
    set to its name."""
    return any(root in _UUID_VENDORS for _, root in gate_places(low)[1]) and text.count("-") >= 4


def otp_seed_groups(text: str, low: str) -> bool:
    """Groups of base32 characters near a one-time password's seed word (RECE GUYU…
    after "enter manually")."""
    return any(root in _OTP_SEED_WORDS for _, root in gate_places(low)[1]) and base32_groups(text)


def base32_groups(text: str) -> bool:
    """Four groups of four base32 characters in one case, one space apart, not glued to
    a word character or a "-" (a seed shown for manual entry), as the rule reads them:
    the text translated to class letters (see "shapes") for each case, then a substring
    search."""
    if len(text) < len(_BASE32_GROUPS):
        return False
    raw = text.encode("utf-8", "surrogatepass")
    return _groups_in(raw.translate(_BASE32_UPPER_TABLE)) or _groups_in(
        raw.translate(_BASE32_LOWER_TABLE)
    )


def _groups_in(shapes: bytes) -> bool:
    """Whether ``shapes`` (a text as ``_BASE32_*_TABLE`` translates it) holds four groups
    with neither a group character nor a word character right before or after them: where
    the rule's match may start (more groups may follow, a space apart)."""
    last = len(shapes) - len(_BASE32_GROUPS)
    at = shapes.find(_BASE32_GROUPS)
    while at >= 0:
        if (at == 0 or shapes[at - 1] not in b"bw") and (
            at == last or shapes[at + len(_BASE32_GROUPS)] not in b"bw"
        ):
            return True
        at = shapes.find(_BASE32_GROUPS, at + 1)
    return False


def _base32_table(group: bytes) -> bytes:
    """The rule's class (``group``) as "b", its one-space gap as " ", the other characters
    its look-arounds refuse (ASCII word characters and "-") as "w", the rest as "."."""
    table = bytearray(b"." * 256)
    for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-":
        table[c] = ord("w")
    for c in group:
        table[c] = ord("b")
    table[ord(" ")] = ord(" ")
    return bytes(table)


_BASE32_UPPER_TABLE = _base32_table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_BASE32_LOWER_TABLE = _base32_table(b"abcdefghijklmnopqrstuvwxyz234567")
_BASE32_GROUPS = b"bbbb bbbb bbbb bbbb"


def chap_line(text: str, low: str) -> bool:
    """A "*" standing alone as the second or the last of four or more fields of a line
    (pppd's chap-secrets: "bob * X *"); not Markdown's stars or a product's. Looked for
    where a blank comes before a star (str.find; "*" alone is in most Markdown)."""
    return any(_star_field(text, lead) for lead in (" *", "\t*"))


def _star_field(text: str, lead: str) -> bool:
    i = text.find(lead)
    while i >= 0:
        i += 1  # the star
        if text[i + 1 : i + 2] in (" ", "\t", "\r", "\n", ""):
            start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            line = text[start : end if end >= 0 else len(text)]
            fields = line.split()
            # "*" the server or the addresses (the last field); a quoted client may hold
            # blanks.
            if len(fields) >= 4 and ("*" in (fields[1], fields[-1]) or '"' in line):
                return True
        i = text.find(lead, i)
    return False


def twilio_client(text: str, low: str) -> bool:
    """Client(…), init(…): a Twilio client's when the text names Twilio or a SID."""
    return "twilio" in low or "sid" in low or "AC" in text


def _twilio_called(name: str) -> Gate:
    """``name`` called (:func:`_called`) in a text that names Twilio or a SID."""
    called = _called(name)
    return lambda text, low: twilio_client(text, low) and called(text, low)


def auth_pair(text: str, low: str) -> bool:
    """``auth=(`` (blanks allowed around "=", PHP's ``->__construct`` before "("), as the
    credential-call rule reads requests' ``auth=(user, pw)``."""
    i = text.find("auth")
    while i >= 0:
        k = _blanks_after(text, i + 4)
        if text.startswith("=", k):
            k = _blanks_after(text, k + 1)
            if text.startswith(secret_words.CONSTRUCTOR_CALL, k):
                k += len(secret_words.CONSTRUCTOR_CALL)
            if text.startswith("(", _blanks_after(text, k)):
                return True
        i = text.find("auth", i + 1)
    return False


def _blanks_after(text: str, k: int) -> int:
    while text[k : k + 1] in (" ", "\t"):
        k += 1
    return k


def hcl_variable(text: str, low: str) -> bool:
    """``variable`` then blanks and a quoted name holding a strong key's root (HCL's
    ``variable "db_password" {``), in a text that says ``default``: what the
    hcl-variable-default rule reads."""
    if "default" not in text:
        return False
    i = text.find("variable")
    while i >= 0:
        k = _blanks_after(text, i + 8)
        k += k > i + 8 and text.startswith('\\"', k)  # an escaped quote (JSON in JSON)
        if k > i + 8 and text.startswith('"', k):
            close = text.find('"', k + 1, k + _NAME_REACH)
            if close < 0 or _strong_name(low, k + 1, close):
                return True
        i = text.find("variable", i + 1)
    return False


def net_use(text: str, low: str) -> bool:
    """``net`` then blanks and ``use`` (``net use \\\\host\\share …``, ``net user name pw``)
    in any case, as the net-use rule reads it."""
    i = low.find("net")
    while i >= 0:
        k = _blanks_after(low, i + 3)
        if k > i + 3 and low.startswith("use", k):
            return True
        i = low.find("net", i + 1)
    return False


# The longest name the rule's set/with branch reads: "set_", a letter, 63 more.
_SETTER_CHARS = 68


def secret_setter(text: str, low: str) -> bool:
    """A call named for a secret (setPassword(, withApiKey(): a key name right before
    a "(" (the key names are found once for every key rule), in a name that starts with
    "set" or "with" (the rule's name is one run of word characters)."""
    for i, j, _ in gate_places(low)[0]:
        if _sep_after(low, j, "(") < 0:
            continue
        start, limit = i, max(0, j - _SETTER_CHARS)
        while start > limit and _name_char(text[start - 1]):
            start -= 1
        if (start <= limit and limit > 0) or low.startswith(("set", "with"), start):
            return True  # (a run longer than a setter's: maybe, not read further)
    return False


def _name_char(c: str) -> bool:
    # The regexes' \w (Unicode word characters).
    return c.isalnum() or c == "_"


def salesforce_session(text: str, low: str) -> bool:
    """The "!" between a Salesforce token's org id and its session."""
    return "!" in text


def uuid_after_kind(text: str, low: str) -> bool:
    """The kind's "-" and a UUID's four (LaunchDarkly's ``sdk-<uuid>``)."""
    return text.count("-") >= 5


# The words a placeholder the placeholder-default rule reads is named with (folded).
_PLACEHOLDER_SECRET_WORDS = ("pass", "pwd", "secret", "token", "cred", "key")


def secret_placeholder(text: str, low: str) -> bool:
    """A placeholder's name holding a word of a secret's (``${DB_PASSWORD:x}``): the run
    of name characters after each "${" (the rule's name is part of it)."""
    i = low.find("${")
    while i >= 0:
        end = i + 2
        while end < len(low) and end - i <= 130 and (low[end].isalnum() or low[end] in "_.-"):
            end += 1
        if any(word in low[i + 2 : end] for word in _PLACEHOLDER_SECRET_WORDS):
            return True
        i = low.find("${", i + 2)
    return False


def card_number(text: str, low: str) -> bool:
    """A run of digits that may be a card number (its network's first digits, Luhn)."""
    return secret_words.has_card_number(text)


# --------------------------------------------------------------- the registry

GITLAB_PREFIXES = tuple(
    f"gl{p}-"
    for p in ("pat", "dt", "rt", "ptt", "soat", "ffct", "cbt", "imt", "oas", "agent", "ft")
)
GITHUB_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
SLACK_PREFIXES = ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-")
AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA")
# The token prefixes found even glued to a word character before them (a token pasted
# onto the word before it: "tghp_…", "NPM_TOKENnpm_…"); every other prefix opens a
# token at a word boundary only. Both the gates (Anchored) and the rules' regexes
# (secret_rules._prefix) read this one set. A prefix is here when it is a vendor's mark
# that ends no word or identifier: four characters or more, not letters alone, and the
# body after it no run of words either; or AWS's AKIA and ASIA (then 16 capitals and
# digits). Left out: prefixes that end words — sk- (task-, risk-), sk_/rk_/pk_live_
# (task_, work_, park_), key- (monkey-), ico- (Mexico-), pat. and sat. (compat.),
# secret_ (client_secret_), lin_ (kotlin_), pscale_ (upscale_), ops_ (devops_),
# sb_secret_ (usb_), fo1_ (info1_), tk-us- (a region after "…tk"), api_org_, sm_,
# access-, SG. (MSG.), API-, v1.0-; the short ones (hf_, r8_, y0_, sl., dp., A3-); and
# letters alone, which a run of base64 or hex spells by chance (AIza, dapi, ATBB,
# ACCA…). Glued, the prefixes kept match nothing more in 144 M characters of source,
# docs and chat turns (sk- matched "task-1234…" and "risk-assessment-2024-…").
GLUED_PREFIXES = frozenset(
    (
        *GITHUB_PREFIXES, "github_pat_", *GITLAB_PREFIXES, *SLACK_PREFIXES, "xapp-",
        "sk-ant-", "whsec_", "sq0atp-", "sq0csp-", "ya29.", "npm_", "pypi-AgE",
        "shpat_", "shpca_", "shppa_", "shpss_", "doo_v1_", "dop_v1_", "dor_v1_",
        "hvs.", "hvb.", "hvr.", "PMAK-", "glsa_", "glc_", "sntrys_", "sntryu_", "gsk_",
        "xai-", "HRKU-", "ntn_", "ATATT3", "NRAK-", "NRII-", "NRJS-", "fm1a_", "fm1r_",
        "fm2_", "pul-", "pplx-", "pnu_", "rdme_", "rubygems_", "shippo_", "CFPAT-",
        "dt0c01.", "sbp_", "dckr_pat_", "lsv2_pt_", "lsv2_sk_", "tvly-", "pcsk_", "nfp_",
        "aio_", "CLOJARS_", "duffel_test_", "duffel_live_", "fio-u-", "sha256~", "sgp_",
        "bkua_", "CCIPAT_", "CCIPRJ_", "rnd_", "napi_", "xkeysib-", "xsmtpsib-", "tfp_",
        "tskey-", "GR1348941", "p8e-", "dnkey-", "squ_", "sqp_", "sqa_",
        "bedrock-api-key-", "AKIA", "ASIA",
    )
)  # fmt: skip
# crypt(3) and related schemes: "$" + an id + "$" (argon2's and pbkdf2's run on).
_CRYPT_PREFIXES = (
    "$1$", "$apr1$", "$md5$", "$2$", "$2a$", "$2b$", "$2x$", "$2y$", "$5$", "$6$",
    "$y$", "$gy$", "$7$", "$argon2", "$pbkdf2",
)  # fmt: skip

# A URL query's parameters that hold an application's key, as people write them (the
# rule's regex reads these spellings).
QUERY_APP_KEYS = ("appid=", "appId=", "AppId=", "APPID=", "app_id=", "APP_ID=", "ak=", "AK=")
# The hosts of Blockchain RPC providers that put the key in the path.
RPC_HOSTS = ("infura.io", "alchemy.com", "alchemyapi.io", "quiknode.pro", "rpc.ankr.com")
# One gate per rule of secret_rules, by rule id, in the rules' order (checked when
# the rules are built). needs_scrub runs each distinct gate once.
# A word every command secret_rules.reveals_secret names holds (lower case): age's
# decryption takes options ("age -d", "age -i KEY -d", "age -o FILE -d").
REVEALING_WORDS = (
    "pass show",
    "pass otp",
    "op read",
    "op inject",
    "--reveal",
    "bw get",
    "-password",
    "base64",
    ".data",
    "view-secret",
    "get-secret-value",
    "--with-decryption",
    "keyvault",
    "decrypt",
    "-token",
    "vault kv",
    "vault read",
    "versions access",
    "doppler secrets",
    "heroku config",
    "env:get",
    "railway variable",
    "env pull",
    "terraform",
    "auth token",
    "aws_secret_access_key",
    "sops",
    "age -",
    "gpg",
    "ansible-vault",
    "auth:token",
    "openssl rand",
    "pwgen",
    "secrets.token_",
    "rails secret",
    "rake secret",
    "gen.secret",
    "key:generate",
    "random_secret_key",
)
# Programs that print a file or a variable (secret_words.prints_secret_name), and the
# roots of KEY_WORDS that the words of a name saying it holds a secret hold.
PRINTING_WORDS = tuple(
    sorted((*secret_words.FILE_PRINTERS, *secret_words.ECHOES, secret_words.VARIABLE_PRINTER))
)
NAME_ROOTS = tuple(
    root for root in KEY_WORDS if any(root in word for word in secret_words.NAME_SECRET_WORDS)
)


def may_reveal(low: str) -> bool:
    """Whether a command (folded) may print a secret (secret_rules.reveals_secret): a
    revealing word, or a printer and a secret word's root."""
    words = _folded_words(low)
    if words is None:
        return command_may_reveal(low)
    # The key names' automaton pass found these words too.
    if not words.isdisjoint(REVEALING_WORDS):
        return True
    return not words.isdisjoint(NAME_ROOTS) and any(word in low for word in PRINTING_WORDS)


def revealed_below(text: str, low: str) -> bool:
    """A line of one word below a line that may be a revealing command (secret_rules'
    revealed-bare: ``bw get password x`` then ``X``)."""
    if not may_reveal(low):
        return False
    lines = low.split("\n")
    for k in range(1, len(lines)):
        word = lines[k].strip()
        one_word = len(word) >= 4 and " " not in word and "\t" not in word
        if one_word and command_may_reveal(lines[k - 1]):
            return True
    return False


def prompt_may_reveal(prompt_end: str, *, also: str = "") -> Gate:
    """A gate for secret_rules' revealed rule at prompts ending in ``prompt_end`` ("$",
    "#", ">"): in a text where :func:`may_reveal` and that holds ``also`` (the "@" of
    root@host:/#, the "ps" of PS C:\\>), a line with ``prompt_end`` that a line break
    ends (the rule reads the lines below a command) and that may reveal a secret
    (:func:`command_may_reveal`) or list an app's config vars ("heroku" and "config",
    which secret_words.lists_env needs). The rule masks only below such a command; a
    revealing word elsewhere in the text (its output, a comment) made every prompt's
    output read."""

    def check(text: str, low: str) -> bool:
        if (also and also not in low) or not may_reveal(low):
            return False
        i = low.find(prompt_end)
        while i >= 0:
            end = low.find("\n", i)
            if end < 0:
                return False
            line = low[low.rfind("\n", 0, i) + 1 : end]
            if command_may_reveal(line) or ("heroku" in line and "config" in line):
                return True
            i = low.find(prompt_end, end)
        return False

    return check


def command_may_reveal(low: str) -> bool:
    """:func:`may_reveal` by substring tests, for a command cut from a longer text (the
    revealed rule's, one per shell prompt): the automaton's pass, remembered for one
    text, stays that of the longer text, which the next gates read."""
    if any(word in low for word in REVEALING_WORDS):
        return True
    return any(root in low for root in NAME_ROOTS) and any(word in low for word in PRINTING_WORDS)


def _called(name: str, *, password: bool = False) -> Gate:
    """A gate: ``name`` then "(" (blanks between allowed), as a call's rule reads it;
    "fill_in" also before a blank and a quote (Ruby's call without parentheses). With
    ``password``, in a text that names a password (see _names_password)."""

    def called(text: str, low: str) -> bool:
        if password and not _names_password(text, low):
            return False
        i = text.find(name)
        while i >= 0:
            k = i + len(name)
            if text.startswith(secret_words.CONSTRUCTOR_CALL, k):
                k += len(secret_words.CONSTRUCTOR_CALL)
            while text[k : k + 1] in (" ", "\t"):
                k += 1
            if text[k : k + 1] == "(" or (
                name == "fill_in" and k > i + len(name) and text[k : k + 1] in ("'", '"')
            ):
                return True
            i = text.find(name, i + 1)
        return False

    return called


def _names_password(text: str, low: str) -> bool:
    return any(word in low for word in secret_words.PASSWORD_NAME_WORDS)


def _login_word(text: str, low: str) -> bool:
    """A login, auth or setup subcommand may be there (secret_rules' login-password)."""
    return any(word in low for word in ("login", "auth", "setup", "signin"))


def token_after_login(text: str, low: str) -> bool:
    """A word of 16+ letters, digits, "-" or "_" with a digit after "login " or "auth "
    (secret_rules' login-token: ``cargo login X``, ``snyk auth X``)."""
    for word in ("login", "auth"):
        i = low.find(word + " ")
        while i >= 0:
            after = low[i + len(word) : i + len(word) + 300].split(None, 1)
            token = after[0] if after else ""
            if (
                len(token) >= 16
                and any(c.isdigit() for c in token)
                and all(c.isalnum() or c in "-_" for c in token)
            ):
                return True
            i = low.find(word + " ", i + 1)
    return False


# How base64 of a token starts when the token opens with one of these prefixes (its first
# whole groups of three bytes): gh[pousr]_ (Z2h), github_pat_, glpat-, xox[bpae]-, sk-,
# sk_, AKIA, ASIA, npm_, hf_, AIza, ya29. (tests/test_secret_rules.py checks them).
ENCODED_TOKEN_OPENINGS = (
    "Z2h", "Z2l0aHVi", "Z2xwYXQt", "eG94", "c2st", "c2tf", "QUtJ", "QVNJ", "bnBt", "aGZf",
    "QUl6", "eWEy",
)  # fmt: skip


# The gate of the rules that read an ``openssl`` command line (-k, ca -key, -K, -*opt); the
# openssl-pass rule reads ``pass:`` after any -pass* option, so its gate is that literal.
OPENSSL = cased("openssl")

# ------------------------------------------------- the forms of secret_forms (probe 7)


# Letters and digits as "a", "-" and "_" as themselves, anything else a blank: dashed codes.
_CODE_TABLE = bytes(
    ord("a") if chr(c).isascii() and chr(c).isalnum() else c if c in b"-_" else ord(" ")
    for c in range(256)
)
_DIGIT_TABLE = bytes(ord("9") if c in b"0123456789" else ord(" ") for c in range(256))
_CODE_SHAPES = tuple(b" " + b"a" * n + b"-" + b"a" * m + b" " for n in (4, 5, 6) for m in (4, 5, 6))


def dashed_codes(text: str, low: str) -> bool:
    """Four or more dashed codes of one shape (``k3m9x-qwzpt``: 4 to 6 letters or digits,
    a dash, 4 to 6 more), two of them with a digit (secret_forms' code list). Each code
    stands between two blanks in the translated text; counted without overlap, one shape
    is there twice at least when four codes are separated by single blanks, and only
    those shapes are then found one by one (sharing a blank) and checked for a digit."""
    if len(text) < 36 or _shapes(text).count(b"aaaacaaaa") < 4:
        return False  # _shapes is cached (the other shape gates read it); "_" is "c" too
    raw = b" " + text.encode("utf-8", "surrogatepass") + b" "
    shapes = raw.translate(_CODE_TABLE)
    digits: bytes | None = None
    for shape in _CODE_SHAPES:
        if shapes.count(shape) < 2:
            continue
        if digits is None:
            digits = raw.translate(_DIGIT_TABLE)
        codes = with_digit = 0
        i = shapes.find(shape)
        while i >= 0:
            codes += 1
            with_digit += b"9" in digits[i : i + len(shape)]
            i = shapes.find(shape, i + len(shape) - 1)
        if codes >= 4 and with_digit >= 2:
            return True
    return False


def byte_array(text: str, low: str) -> bool:
    """A list of 64 numbers (a Solana keypair file): 63 commas and a bracket."""
    return text.count(",") >= 63 and "[" in text


def _form_words(*words: str) -> Gate:
    return either(*(Literal(word, folded=True) for word in words))


def _with(*parts: str) -> Gate:
    return lambda text, low: any(part in low for part in parts)


# "use password X for": a verb, maybe "the", then the word (secret_forms' regex).
_USE_PASSWORD = tuple(
    f"{verb} {the}{word}"
    for verb in ("use", "try", "using", "with")
    for the in ("", "the ")
    for word in ("pass", "pwd")
)


def _hook_id(text: str, low: str) -> bool:
    """A webhook's 26-character id after "/hooks/" (Mattermost), or Zapier's hooks."""
    if "hooks.zapier.com" in low:
        return True
    i = text.find("/hooks/")
    while i >= 0:
        hook = text[i + 7 : i + 33]
        if len(hook) == 26 and hook.isalnum() and hook == hook.lower():
            return True
        i = text.find("/hooks/", i + 7)
    return False


# The gates of secret_forms.EARLY_TABLE, then of secret_forms.TABLE.
EARLY_FORM_GATES: dict[str, Gate] = {
    "passphrase-words": either(
        Literal("phrase", folded=True),
        Literal("seed words", folded=True),
        _form_words("wifi password", "wi-fi password", "wlan password"),
    ),
}
FORM_GATES: dict[str, Gate] = {
    "recovery-codes": _form_words(*secret_words.RECOVERY_NAMES),
    "code-list": dashed_codes,
    "use-password": _form_words(*_USE_PASSWORD),
    "password-arrow": either(
        *(Literal(arrow, then=_with("pass", "pw", "cred")) for arrow in ("→", "->", "=>", "⇒"))
    ),
    "network-key": _form_words(*secret_words.NETWORK_KEY_NAMES),
    "door-code": either(
        Literal("code", folded=True, then=_with(*secret_words.DOOR_WORDS)),
        Literal("combination", folded=True),
    ),
    "argv-glued-password": either(
        *(Literal(q + "-p", then=_with("mysql", "mariadb", "mycli")) for q in "\"'")
    ),
    "argv-password": either(
        *(
            Literal(q + opt, then=lambda text, low: "," in text)
            for q in "\"'"
            for opt in ("-p", "-P", "--")
        )
    ),
    "ipmitool": Literal("ipmitool"),
    "expect-send": either(
        Literal('send "', then=_with("ass")), Literal('send -- "', then=_with("ass"))
    ),
    "process-substitution": Literal("<(", then=_with("echo", "printf")),
    "keyring-herestring": Literal("<<<", then=_with("keyring", "secret-tool")),
    "httpie-auth": Literal("http", then=lambda text, low: " -a" in text or " --auth" in text),
    "ci-upload-token": either(Literal("codecov"), Literal("coveralls"), Literal("codacy")),
    "cloudflared-token": Literal("cloudflared"),
    "auth-call": either(
        *(
            Literal(f".{name}(")
            for name in ("auth", "login", "authenticate", "basic_auth", "set_auth")
        )
    ),
    "pem-passphrase-prompt": Literal("enter", folded=True, then=_with("phrase", "password")),
    "creds-pair": either(
        *(
            Literal(word + link, folded=True)
            for word in ("creds", "credentials", "login", "logins")
            for link in (" are", " is", ":")
        )
    ),
    "session-cookie": Literal("cookie", folded=True, then=_with("sess", "sid")),
    "csv-secret": _form_words(*(name + "," for name in secret_words.CSV_SECRET_NAMES)),
    "ios-password": either(
        *(
            Literal(f"{word}{blank}{digit}", folded=True)
            for word in ("password", "secret", "key")
            for blank in " \t"
            for digit in "057"
        ),
    ),
    "chpasswd-herestring": Literal("chpasswd", then=lambda text, low: "<<<" in text),
    "device-key-string": either(
        Literal("key-string"), Literal("plain-text-password-value"), Literal("authentication-key")
    ),
    "nt-hash": Literal(":::"),
    "pgpass-line": either(*(Literal(f":{port}:") for port in secret_words.PGPASS_PORTS)),
    "key-value-lines": Literal("value:", folded=True, then=_with("key", "name", "parameter")),
    "cookie-export": Literal('"domain"', then=lambda text, low: '"value"' in text),
    "secret-env-name": either(
        *(Literal(ending + "=") for ending in secret_words.SECRET_ENV_ENDINGS),
        Literal("OP_SESSION_"),
    ),
    "hardhat-accounts": Literal("accounts"),
    "byte-array-key": byte_array,
    "wif": _form_words(*secret_words.WIF_WORDS),
    "webhook-url": Literal("/hooks/", then=_hook_id),
    "query-signature": either(
        Literal("sig=", then=lambda text, low: "?sig=" in text or "&sig=" in text),
        Literal("signature=", folded=True),
    ),
    "continued": Literal(REDACTED_PREFIX, then=lambda text, low: "<br" in low or "]%" in text),
}

RULE_GATES: dict[str, Gate] = {
    "pem": Literal("-----BEGIN"),
    "pem-tail": Literal("-----END"),
    "putty": Literal("Private-Lines:"),
    "pem-base64": Literal("LS0tLS1CRUdJTi"),  # "-----BEGIN" in base64
    "encoded-token": either(*(Literal(opening) for opening in ENCODED_TOKEN_OPENINGS)),
    "jwt": cased("eyJ", root="J"),
    "anthropic": cased("sk-ant-"),
    "openai": cased("sk-"),
    "github": either(cased(*GITHUB_PREFIXES, root="gh"), cased("github_pat_")),
    "gitlab": cased(*GITLAB_PREFIXES, root="gl"),
    "slack-webhook": Literal("https://hooks.slack.com/"),
    "discord-webhook": Literal("/api/webhooks/"),
    "slack": either(cased(*SLACK_PREFIXES, root="xox"), cased("xapp-")),
    "stripe": either(
        cased("sk_live_", "sk_test_", "rk_live_", "rk_test_", root="k_"),
        cased("whsec_"),
    ),
    "square": cased("sq0atp-", "sq0csp-", root="sq0"),
    "google": cased("AIza", root="z"),
    "google-oauth": cased("ya29."),
    "google-refresh": Literal("1//0"),
    "google-client-secret": cased("GOCSPX-"),
    "aws-session": either(
        Literal("IQoJb3JpZ2luX2Vj"), Literal("FwoGZXIvYXdzE"), Literal("AQoDYXdzE")
    ),
    "npm": cased("npm_"),
    "pypi": cased("pypi-AgE"),
    "huggingface": cased("hf_"),
    "sendgrid": cased("SG.", root="G"),
    "twilio": cased("SK"),
    "shopify": cased("shpat_", "shpca_", "shppa_", "shpss_", root="shp"),
    "digitalocean": cased("doo_v1_", "dop_v1_", "dor_v1_", root="_v1_"),
    "vault": cased("hvs.", "hvb.", "hvr.", root="hv"),
    "databricks": cased("dapi"),
    "telegram": Literal(":AA"),
    "mailgun": cased("key-"),
    "age": Literal("AGE-SECRET-KEY-1"),
    "doppler": cased("dp."),
    "postman": cased("PMAK-"),
    "linear": cased("lin_api_"),
    "grafana": either(cased("glsa_", "glc_", root="gl"), cased("eyJrIjoi", root="J")),
    "mailchimp": Literal("-us", then=mailchimp_key),
    "sentry": cased("sntrys_", "sntryu_", root="sntry"),
    "groq": cased("gsk_"),
    "xai": cased("xai-"),
    "replicate": cased("r8_"),
    "heroku": cased("HRKU-"),
    "onepassword": cased("ops_eyJ"),
    "notion": cased("ntn_"),
    "atlassian": cased("ATATT3", "ATBB", root="AT"),
    "planetscale": cased("pscale_tkn_", "pscale_pw_", "pscale_oauth_", root="pscale_"),
    "newrelic": cased("NRAK-", "NRII-", "NRJS-", root="NR"),
    "flyio": either(cased("fo1_"), cased("fm1a_", "fm1r_", "fm2_", root="fm")),
    "pulumi": cased("pul-"),
    "perplexity": cased("pplx-"),
    "prefect": cased("pnu_"),
    "readme": cased("rdme_"),
    "rubygems": cased("rubygems_"),
    "scalingo": cased("tk-us-"),
    "shippo": cased("shippo_"),
    "terraform": Literal(".atlasv1."),
    "infracost": cased("ico-"),
    "artifactory": cased("AKCp"),
    "cloudflare": cased("v1.0-"),
    "huggingface-org": cased("api_org_"),
    "dynatrace": cased("dt0c01."),
    "contentful": cased("CFPAT-"),
    "supabase": cased("sbp_", "sb_secret_", root="sb"),
    "docker": cased("dckr_pat_"),
    "langsmith": cased("lsv2_pt_", "lsv2_sk_", root="lsv2_"),
    "resend": cased("re_"),
    "hubspot": cased("pat-"),
    "launchdarkly": either(
        *(Literal(kind, then=uuid_after_kind) for kind in ("sdk-", "mob-", "api-"))
    ),
    "salesforce": Literal("00D", then=salesforce_session),
    "jwk-private": Literal("kty"),
    "kubeconfig-key": Literal("client-key"),
    "placeholder-default": Literal("${", then=secret_placeholder),
    "wifi-qr": Literal("WIFI:"),
    "otp-seed": either(
        Literal("oathtool"),
        *(Literal(call + "(") for call in ("TOTP", "HOTP", "Totp", "Hotp", "totp", "hotp")),
        Literal("authenticator."),
    ),
    "otp-groups": otp_seed_groups,
    "figma": cased("figd_"),
    "braintree": Literal("access_token$"),
    "tavily": cased("tvly-"),
    "pinecone": cased("pcsk_"),
    "mapbox": cased("sk.eyJ"),
    "netlify": cased("nfp_"),
    "airtable": Literal("pat", then=airtable_token),
    "adafruit": cased("aio_"),
    "clojars": cased("CLOJARS_"),
    "duffel": cased("duffel_test_", "duffel_live_", root="duffel_"),
    "frameio": cased("fio-u-"),
    "harness": cased("pat.", "sat.", root="at."),
    "openshift": cased("sha256~"),
    "octopus": cased("API-"),
    "yandex": either(cased("y0_"), cased("AQVN")),
    "sourcegraph": cased("sgp_"),
    "buildkite": cased("bkua_"),
    "circleci": cased("CCIPAT_", "CCIPRJ_", root="CCIP"),
    "render": cased("rnd_"),
    "neon": cased("napi_"),
    "brevo": cased("xkeysib-", "xsmtpsib-"),
    "easypost": cased("EZAK", "EZTK", root="EZ"),
    "flutterwave": cased("FLWSECK"),
    "twitter": cased("AAAAAAAAAAAAAAAAAAAAA"),
    "typeform": cased("tfp_"),
    "alibaba": cased("LTAI"),
    "dropbox": cased("sl."),
    "facebook": cased("EAAM", "EAAC", root="EAA"),
    "square-eaaa": cased("EAAA"),
    "okta": cased("SSWS"),
    "teams-webhook": Literal("office.com/webhook"),
    "fcm": Literal(":APA91b"),
    "notion-secret": cased("secret_"),
    "plaid": cased("access-sandbox-", "access-development-", "access-production-", root="access-"),
    "tailscale": cased("tskey-"),
    "linear-oauth": cased("lin_oauth_"),
    "onepassword-secret-key": cased("A3-"),
    "artifactory-reference": cased("cmVmd"),
    "clickhouse": cased("4b1d"),
    "bedrock": either(cased("ABSK"), cased("bedrock-api-key-")),
    "maxmind": Literal("_mmk"),
    "settlemint": cased("sm_aat_", "sm_pat_", "sm_sat_", root="sm_"),
    "gitlab-registration": cased("GR1348941"),
    "intra42": cased("s-s4t2"),
    "adobe": cased("p8e-"),
    "defined-networking": cased("dnkey-"),
    "authress": either(Literal(".acc_"), Literal(".acc-")),
    "sonarqube": cased("squ_", "sqp_", "sqa_", root="sq"),
    "sonar-login": Literal("sonar.login"),
    "jwt-base64": cased("ZXlK"),
    "bundler": cased("BUNDLE_"),
    "openvpn": Literal("-----BEGIN OpenVPN Static key"),
    "password-hash": either(
        cased(*_CRYPT_PREFIXES, root="$"),
        cased("pbkdf2_sha"),
        cased("{SHA", "{SSHA", root="{"),
        cased("md5", "SCRAM-SHA-256$"),
    ),
    "openvpn-auth": Literal("<auth-user-pass>"),
    "discord": discord_shape,
    "azure-secret": Literal("Q~"),
    "aws": cased(*AWS_PREFIXES, root="A"),
    "aws-secret": Literal(redacted("aws-key")),
    "authorization": Literal("authorization", folded=True),
    "bearer": Literal("bearer", folded=True),
    "cookie": Literal("cookie", folded=True, then=cookie_header),
    "curl-cookie": cased("curl"),
    "url": Literal("://", then=url_userinfo),
    "query-app-key": either(*(Literal(name) for name in QUERY_APP_KEYS)),
    "rpc-path-key": either(*(Literal(host) for host in RPC_HOSTS)),
    "netrc": cased("machine"),
    "pgpass": Literal("pgpass", folded=True),
    "mysql": cased("mysql"),
    "sshpass": cased("sshpass"),
    "redis-cli": cased("redis-cli"),
    "curl": cased("curl"),
    "login-password": either(
        *(Literal(option, then=_login_word) for option in ("-p", "--pass", "--token"))
    ),
    "user-password": cased("-u", "--user", root="-"),
    "login-token": either(
        Literal("login", then=token_after_login), Literal("auth", then=token_after_login)
    ),
    "positional-password": either(
        Literal("http-basic."), Literal("alias set"), Literal("host add")
    ),
    "stdin-password": either(
        cased("--password-stdin", "--with-token", root="--"),
        cased("passwd"),
        cased("chpasswd"),
        cased("sudo"),
        cased("secret"),
        cased("sshpass"),
        cased("az", "vault", "kinit", "cryptsetup", "gpg", "htpasswd", "smbpasswd"),
        Literal("signin"),  # op signin
    ),
    "mongo": cased("mongo"),
    "smbclient": cased("smbclient"),
    "lftp": cased("lftp"),
    "rdp": cased("xfreerdp", "wlfreerdp", "freerdp", "rdesktop"),
    "vault-login": cased("vault"),
    "wpa-passphrase": cased("wpa_passphrase"),
    "sqlplus": cased("sqlplus"),
    "oracle-ezconnect": Literal("@//"),
    "sqlcmd": cased("sqlcmd", "bcp"),
    "zip": cased("zip", "7z"),
    "rar": cased("rar", "unrar"),
    "ssh-keygen": cased("ssh-keygen"),
    "ssh-keygen-new": cased("ssh-keygen"),
    "openssl": OPENSSL,
    "openssl-ca-key": OPENSSL,
    "openssl-hex-key": OPENSSL,
    "openssl-option": OPENSSL,
    "mosquitto": cased("mosquitto_"),
    "client-password": cased(
        "cqlsh", "rabbitmqadmin", "evil-winrm", "netexec", "nxc", "crackmapexec", "cme", "smbmap"
    ),
    "mosquitto-passwd": cased("mosquitto_passwd"),
    "sql-password": either(  # the rule reads these words in any case
        Literal("identified", folded=True),
        Literal("password", folded=True, then=lambda text, low: "with" in low),
    ),
    "basic-encoded": either(
        *(Literal(w) for w in ("base64", "b64encode", "btoa", "encodeToString", "encode64"))
    ),
    "gh-secret": cased("gh"),
    "secret-store-value": either(
        Literal("keyvault"), Literal("secretsmanager"), Literal("put-parameter")
    ),
    "ldap": cased("ldap"),
    "htpasswd": cased("htpasswd"),
    # secret_rules._PROMPT: "$", root@host:/# (a "#" alone is a heading or a comment),
    # PowerShell's PS C:\>, each followed by a blank of either kind.
    "assertion": Literal("\nE ", then=lambda text, low: "assert" in low),
    "revealed": either(
        Literal("$", then=prompt_may_reveal("$")),
        Literal("#", then=prompt_may_reveal("#", also="@")),
        Literal(">", then=prompt_may_reveal(">", also="ps")),
    ),
    "revealed-bare": Literal("\n", then=revealed_below),
    "credential-call": either(
        *(Literal(name, then=_called(name)) for name in secret_words.CREDENTIAL_CALLS),
        *(Literal(name, then=_twilio_called(name)) for name in secret_words.TWILIO_CALLS),
        Literal("(", then=secret_setter),
        Literal("auth", then=auth_pair),
    ),
    "typed-password": either(
        *(Literal(name, then=_called(name, password=True)) for name in secret_words.TYPING_CALLS)
    ),
    "user-p": cased("p:", "P:", "p=", "P="),
    "user-password-line": either(
        Literal("chpasswd", folded=True),
        *(Literal(name + ":", folded=True) for name in secret_words.ACCOUNT_NAMES),
    ),
    "chap-secret": chap_line,
    "snmp-community": either(
        cased("snmp"),
        cased("com2sec"),
        Literal(
            "community",
            folded=True,
            then=lambda text, low: "rocommunity" in low or "rwcommunity" in low,
        ),
    ),
    "rabbitmqctl": cased("rabbitmqctl"),
    "net-use": Literal("net", folded=True, then=net_use),
    "key-tag": key_tag,
    "key-tag-escaped": Literal(
        "&lt;", then=lambda text, low: "&gt;" in text and bool(key_ends(low))
    ),
    "name-value": name_value,
    "dotnet-setting": Literal("<setting", then=lambda text, low: "<value>" in text),
    "named-element": either(
        Literal("name=", then=named_element), Literal("key=", then=named_element)
    ),
    "object-value": Literal("value", then=object_value),
    "sensitive-value": Literal("sensitive", then=lambda text, low: "value" in text),
    "random-password": Literal("random_password", then=lambda text, low: "result" in text),
    "hcl-variable-default": Literal("variable", then=hcl_variable),
    "secure-string": Literal("SecureString", then=lambda text, low: "Value" in text),
    "call-argument": key_assignment,
    "set-variable": either(
        Literal("set", then=key_then_blank),
        Literal("config", then=key_then_blank),
        Literal("consul", then=key_then_blank),
        Literal("nmcli", then=key_then_blank),
    ),
    "config-line": key_line,
    "next-line": key_assignment,
    "docker-config": Literal(".docker"),
    "redis-config": cased("requirepass", "masterauth"),
    "ipsec-secret": cased("PSK", "EAP", "XAUTH", "NTLM"),
    "openssl-pass": Literal("pass:"),
    "flag": key_flag,
    "assignment": key_assignment,
    "auth": key_assignment,
    "weak": weak_assignment,
    **EARLY_FORM_GATES,
    "one-time-code": one_time_code,
    "seed-phrase": seed_phrase,
    "foreign-password": foreign_password,
    "card-number": card_number,
    "prose": prose,
    "password-shape": password_shape,
    "password-pair": password_pair,
    "password-reset": password_reset,
    "mailgun-bare": mailgun_key,
    "app-password": Literal("password", folded=True, then=lambda text, low: "app" in low),
    "vendor-uuid": vendor_uuid,
    "env-literal": Literal(
        "env",
        folded=True,
        then=lambda text, low: "=" in text and any(w in low for w in ("env[", "environ[", "env.")),
    ),
    "secret-column": secret_column,
    **FORM_GATES,
    "aws-secret-alone": base64_run,
    "wrapped-tail": Literal(REDACTED_PREFIX, then=lambda text, low: "\n" in text),
}
# The gates that scan for key names: needs_scrub runs them as one scan.
KEY_NAME_GATES = (key_tag, name_value, key_assignment, key_flag, key_line, weak_assignment, prose)
# The gates of rules without a literal (see "shapes"): one translated copy serves both.
SHAPE_GATES = (discord_shape, base64_run, chap_line, dashed_codes, byte_array)
# The gates of rules a word or a checksum confirms: needs_scrub runs each.
# The word gates that need a word only where :func:`gate_places` finds one.
_PLACED_WORD_GATES = (
    one_time_code,
    seed_phrase,
    foreign_password,
    password_shape,
    secret_column,
    otp_seed_groups,
    vendor_uuid,
    password_pair,
    password_reset,
    mailgun_key,
)
WORD_GATES = (*_PLACED_WORD_GATES, card_number)


def _flatten(gates: tuple[Gate, ...]) -> list[Gate]:
    flat: list[Gate] = []
    for gate in gates:
        flat.extend(_flatten(gate.gates) if isinstance(gate, Either) else [gate])
    return flat


_DISTINCT = list(dict.fromkeys(_flatten(tuple(RULE_GATES.values()))))
# needs_scrub: the anchors as plain data for one tight loop, then the other gates.
_BY_ROOT: dict[tuple[str, int], tuple[str, ...]] = {}
for _gate in _DISTINCT:
    if isinstance(_gate, Anchored):
        _key = (_gate.root, _gate.offset)
        _BY_ROOT[_key] = tuple(dict.fromkeys((*_BY_ROOT.get(_key, ()), *_gate.anchors)))
ANCHORS: tuple[AnchorGroup, ...] = tuple(
    (root, anchors, offset) for (root, offset), anchors in _BY_ROOT.items()
)
# The other gates: each needs a literal (needs_scrub finds the unfolded ones by automaton).
OTHER_GATES: tuple[Literal, ...] = tuple(gate for gate in _DISTINCT if isinstance(gate, Literal))
_TEXT_GATES = tuple(gate for gate in OTHER_GATES if not gate.folded)
_FOLDED_GATES = tuple(gate for gate in OTHER_GATES if gate.folded)
_FOLDED_GATES_BY_LITERAL = by_literal(_FOLDED_GATES)
_TEXT_GATES_BY_LITERAL = by_literal(_TEXT_GATES)


def needs_of(gate: Gate) -> Needs | None:
    """The anchors and literals of which one in :func:`text_found` makes ``gate`` pass,
    when that alone decides it; None when the gate checks more."""
    if isinstance(gate, Anchored):
        return frozenset(gate.anchors), frozenset()
    if isinstance(gate, Literal):
        return None if gate.folded or gate.then else (frozenset(), frozenset((gate.literal,)))
    if isinstance(gate, Either):
        parts = [needs_of(part) for part in gate.gates]
        if any(part is None for part in parts):
            return None
        anchors = frozenset().union(*(part[0] for part in parts if part is not None))
        return anchors, frozenset().union(*(part[1] for part in parts if part is not None))
    return None


def text_found(text: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The anchors and literals the automaton finds in ``text`` (what Anchored and
    Literal gates read); None when the gates read a short text by loops instead."""
    if _SCANNERS is None and len(text) < SCAN_CHARS:
        return None
    return _text_scan(text)


def any_anchor(text: str) -> bool:
    """The OR of every :class:`Anchored` gate, without a call per gate."""
    if _SCANNERS is None and len(text) < SCAN_CHARS:
        return bounded(text, ANCHORS)
    return bool(_text_scan(text)[0])


def any_literal(text: str, low: str) -> bool:
    """The OR of every :class:`Literal` gate (OTHER_GATES), a gate called only when
    its literal is there."""
    found: Iterable[str]
    if _SCANNERS is None and len(text) < SCAN_CHARS:
        found = [literal for literal in _TEXT_GATES_BY_LITERAL if literal in text]
    else:
        found = _text_scan(text)[1]
    if any_found(_TEXT_GATES_BY_LITERAL, found, text, low):
        return True
    words = _folded_words(low)
    folded = [w for w in _FOLDED_GATES_BY_LITERAL if w in low] if words is None else words
    return any_found(_FOLDED_GATES_BY_LITERAL, folded, text, low)


# The last text scanned and what was found: the masking pass asks each rule's gate
# about the text needs_scrub scanned (an equal string, maybe not the same).
_LAST_SCAN: tuple[str, tuple[frozenset[str], frozenset[str]]] = ("", (frozenset(), frozenset()))


def _text_scan(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The anchors that occur in ``text`` at a word boundary (anywhere, for one of
    ``GLUED_PREFIXES``), and the unfolded literals of the Literal gates that occur in
    it: one automaton pass."""
    global _LAST_SCAN
    last = _LAST_SCAN  # one read: another thread may replace it (swapped whole)
    if text == last[0]:
        return last[1]
    patterns, first_literal = _TEXT_PATTERNS, len(_ANCHOR_LIST)
    anchors: set[str] = set()
    literals: set[str] = set()
    for index, start, _ in _matches(_scanners()[0], text):
        if index >= first_literal:
            literals.add(patterns[index])
        elif start == 0 or not _word_char(text[start - 1]) or patterns[index] in GLUED_PREFIXES:
            anchors.add(patterns[index])
    found = (frozenset(anchors), frozenset(literals))
    _LAST_SCAN = (text, found)
    return found


# The Aho-Corasick automata, built on first use: every anchor and unfolded literal
# (over the text); every key-name root (over the folded text).
_SCANNERS: tuple[AhoCorasick, AhoCorasick] | None = None
_KEY_GROUPS = tuple(KEY_WORDS.values())
# Words looked for in folded text (``in low``) that the folded text's automaton finds in
# the pass it makes for key names anyway: the folded Literal gates' and may_reveal's.
FOLDED_WORDS = (*(gate.literal for gate in _FOLDED_GATES), *REVEALING_WORDS)
# The folded text's patterns: the key-name roots, then the word roots that are none, then
# the FOLDED_WORDS that are neither.
_FOLDED_PATTERNS = (*KEY_WORDS, *(root for root in WORD_ROOTS if root not in KEY_WORDS))
_FOLDED_ROOTS_END = len(_FOLDED_PATTERNS)
_KNOWN = frozenset(_FOLDED_PATTERNS)
_FOLDED_PATTERNS += tuple(word for word in dict.fromkeys(FOLDED_WORDS) if word not in _KNOWN)
_WORD_ROOT_SET = frozenset(WORD_ROOTS)
_FOLDED_WORD_ROOTS = {
    index: root
    for index, root in enumerate(_FOLDED_PATTERNS[:_FOLDED_ROOTS_END])
    if root in _WORD_ROOT_SET
}
_ANCHOR_LIST = tuple(dict.fromkeys(anchor for _, group, _ in ANCHORS for anchor in group))
# Characters that spell nothing a reader sees, so that "pass\u200bword=x" or
# "<priv\u00adate>" slip past the rules: zero-width and other invisible format
# characters (soft hyphen, Mongolian vowel separator, word joiner and invisible
# operators, byte order mark); and the fullwidth forms of ASCII ("ｐａｓｓｗｏｒｄ").
INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
FULLWIDTH = "".join(map(chr, range(0xFF01, 0xFF5F)))
HIDING = frozenset(INVISIBLE + FULLWIDTH)
# str.translate's table from a text to its plain form: invisible characters dropped,
# fullwidth ASCII as ASCII (U+FF01 "！" is "!", 0xFEE0 further on).
PLAIN_FORMS: dict[int, int | None] = {
    **dict.fromkeys(map(ord, INVISIBLE)),
    **{ord(c): ord(c) - 0xFEE0 for c in FULLWIDTH},
}
_TEXT_PATTERNS = (
    *_ANCHOR_LIST,
    *dict.fromkeys(gate.literal for gate in _TEXT_GATES),
    *sorted(HIDING),  # found among the literals
)


def hides(text: str) -> bool:
    """Whether ``text`` holds a character of HIDING (found in the anchors' pass)."""
    if text.isascii():
        return False
    if _SCANNERS is None and len(text) < SCAN_CHARS:
        return any(c in HIDING for c in text)
    return not _text_scan(text)[1].isdisjoint(HIDING)


def _matches(automaton: AhoCorasick, text: str) -> list[tuple[int, int, int]]:
    """(pattern index, start, end) of every match in ``text``, overlapping, in characters."""
    try:
        return automaton.find_matches_as_indexes(text, overlapping=True)
    except UnicodeEncodeError:
        # A lone surrogate has no UTF-8 form. Every pattern is ASCII, and U+FFFD is one
        # character for one and, like a surrogate, no word character: a copy with it in
        # their place has the same matches, indexes and boundaries.
        return automaton.find_matches_as_indexes(storable(text), overlapping=True)


def _scanners() -> tuple[AhoCorasick, AhoCorasick]:
    global _SCANNERS
    if _SCANNERS is None:
        from ahocorasick_rs import AhoCorasick, Implementation

        # DFAs (built in under a millisecond): for the text's ~125 patterns the library's
        # own choice is an automaton that scans about half as fast.
        dfa = Implementation.DFA
        _SCANNERS = (
            AhoCorasick(list(_TEXT_PATTERNS), implementation=dfa),
            AhoCorasick(list(_FOLDED_PATTERNS), implementation=dfa),
        )
    return _SCANNERS


def any_shape(text: str) -> bool:
    """The OR of SHAPE_GATES."""
    return any(gate(text, "") for gate in SHAPE_GATES)


def any_word_rule(text: str, low: str) -> bool:
    """The OR of WORD_GATES, the placed ones asked only where a word is."""
    if gate_places(low)[1] and any(gate(text, low) for gate in _PLACED_WORD_GATES):
        return True
    return card_number(text, low)


def any_key_rule(text: str, low: str) -> bool:
    """The OR of KEY_NAME_GATES, with the key names found once."""
    found = gate_places(low)[0]
    if not found:
        return bearer_word(text, low)
    return any(check(text, low, found) for check in _KEY_CHECKS) or bearer_word(text, low)
