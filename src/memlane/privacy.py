"""Privacy filters: ``<private>`` blocks, memlane's own injected context, secrets.

Every entry point (hooks, CLI, HTTP, MCP, importers) calls :func:`scrub` on text
before it is hashed, stored or embedded, so nothing private ever reaches the
database file and :func:`normalized_hash` is computed on what is stored
(DESIGN §10, invariant 1).

Design notes:

* This module is on the per-prompt hook path, so importing it must be nearly free:
  it imports nothing at module level (not even :mod:`re`); regular expressions are
  compiled on first use, each rule's only when its gate first lets it run.
* Every secret rule has a gate: a test made of ``str`` methods on a literal that
  each of its matches contains (``AKIA``, a key name followed by ``=``…). A rule's
  regex runs only when its gate passes, and :func:`needs_scrub`, the OR of all
  gates and the tag test, lets :func:`scrub` return clean text untouched without
  importing :mod:`re` (most prompts and transcript chunks). Gates may say "maybe"
  wrongly, never "no" wrongly: tests compare gated and ungated scrubbing.
* Tags are removed by a small scanner (open/close depth counting) rather than one
  regex, because ``<private>`` blocks nest and may be left unclosed. Removing a
  block can glue two halves of a tag together (``<priv<private>x</private>ate>``),
  so stripping repeats until nothing changes (a few passes; crafted input that
  glues a tag at every pass is cut at its first remaining tag instead).
* Secrets are replaced by ``[REDACTED:<kind>]``. Specific token formats (PEM, JWT,
  provider keys) run first; then context rules (Authorization headers, URL
  credentials); then key/value assignments, which keep the key name and mask only
  the value, and skip values that are code (``os.environ[...]``, ``self.token``),
  placeholders (``$TOKEN``, ``<your-key>``, ``***``) or already masked. A weak key
  name (``license_key``, ``salt``) only masks a high-entropy value.
* Files read by tools: when ``is_env_file(path)``, the caller masks the whole
  content with :func:`mask_env_file` (every ``KEY=VALUE`` value) before
  :func:`scrub`; ordinary files only get :func:`scrub`.
* Bias: inside a secret-suggesting assignment we prefer masking (privacy first);
  outside one, only well-known token formats are touched, so ordinary code and
  prose pass through unchanged (measured by ``tests/test_privacy.py``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Sequence

__all__ = [
    "INJECTED_CLOSE",
    "INJECTED_OPEN",
    "hash_scrubbed",
    "is_env_file",
    "mask_env_file",
    "mask_secrets",
    "needs_scrub",
    "normalized_hash",
    "redacted",
    "scrub",
    "strip_injected_context",
    "strip_private",
]

INJECTED_OPEN = "<memlane-context>"
INJECTED_CLOSE = "</memlane-context>"

_REDACTED_PREFIX = "[REDACTED:"
# Upper bound of scrub passes; one pass is a fixpoint for all but contrived input.
_MAX_PASSES = 4
# Upper bound of tag-stripping passes before the cut-at-first-tag fallback.
_MAX_STRIP_PASSES = 8


def redacted(kind: str) -> str:
    """The marker that replaces a secret of ``kind`` (``[REDACTED:aws-key]``)."""
    return f"{_REDACTED_PREFIX}{kind}]"


# --------------------------------------------------------------------------- tags


def _tag_regex(name: str) -> re.Pattern[str]:
    import re

    # Attributes are tolerated but bounded, so a stray "<private" cannot make the
    # scanner look arbitrarily far ahead for a ">".
    return re.compile(
        r"<[ \t]*(?P<close>/)?[ \t]*" + re.escape(name) + r"(?![\w-])"
        r"(?P<attrs>[^<>]{0,512}?)(?P<selfclose>/)?[ \t]*>",
        re.IGNORECASE,
    )


_PRIVATE_TAG: re.Pattern[str] | None = None
_INJECTED_TAG: re.Pattern[str] | None = None


def _strip_blocks_once(text: str, tag: re.Pattern[str]) -> str:
    pieces: list[str] = []
    depth = 0
    pos = 0
    for m in tag.finditer(text):
        if depth == 0:
            pieces.append(text[pos : m.start()])
        if m.group("selfclose") and not m.group("close"):
            pass  # <private/> holds nothing: drop the tag, depth unchanged
        elif m.group("close"):
            depth = max(depth - 1, 0)  # a stray closing tag is dropped
        else:
            depth += 1
        pos = m.end()
    if depth == 0:
        pieces.append(text[pos:])
    # depth > 0: unclosed block, everything after its opening tag is removed.
    return "".join(pieces)


def _strip_blocks(text: str, tag: re.Pattern[str]) -> str:
    # Each pass that finds a tag removes at least that tag, so this terminates; real
    # text needs one pass, rarely two.
    for _ in range(_MAX_STRIP_PASSES):
        if tag.search(text) is None:
            return text
        text = _strip_blocks_once(text, tag)
    # Crafted input can glue a new tag at every pass ("</priv" * n ... "ate>" * n),
    # which would make this quadratic: cut at the first remaining tag instead. The
    # text before the leftmost match holds no tag, and removing more is the safe side.
    first = tag.search(text)
    return text if first is None else text[: first.start()]


def strip_private(text: str) -> str:
    """Remove ``<private>…</private>`` blocks, tags included.

    Handles closed, nested, multi-line and unclosed blocks (an unclosed opening tag
    removes everything after it), any letter case and attributes
    (``<Private reason="x">``). A stray closing tag and ``<private/>`` are dropped.
    """
    global _PRIVATE_TAG
    if _PRIVATE_TAG is None:
        _PRIVATE_TAG = _tag_regex("private")
    return _strip_blocks(text, _PRIVATE_TAG)


def strip_injected_context(text: str) -> str:
    """Remove memlane's own injected context (``INJECTED_OPEN`` … ``INJECTED_CLOSE``).

    Captured prompts and transcripts contain what memlane injected earlier; removing
    it keeps memory from feeding on itself. Unclosed blocks run to the end of text.
    """
    global _INJECTED_TAG
    if _INJECTED_TAG is None:
        _INJECTED_TAG = _tag_regex(INJECTED_OPEN[1:-1])
    return _strip_blocks(text, _INJECTED_TAG)


# ------------------------------------------------------------------- value checks

# Words that, as a whole unquoted value, are language literals or type names.
_LITERALS = frozenset(
    {
        "true",
        "false",
        "null",
        "none",
        "nil",
        "undefined",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "str",
        "string",
        "int",
        "bool",
        "bytes",
        "any",
        "object",
        "char",
        "float",
        "number",
        "void",
        "self",
        "this",
        "new",
        "await",
        "return",
        "async",
        "function",
        "lambda",
        "def",
        "let",
        "const",
        "var",
        "secret",
        "password",
        "token",
        "key",
    }
)
_PLACEHOLDER_START = (
    "$",
    "{",
    "<",
    "%",
    "#{",
    "[REDACTED",
    "process.env",
    "os.environ",
    "os.getenv",
    "env(",
    "ENV[",
    "secrets.",
    "!vault",
    "vault:",
    "op://",
)
_PLACEHOLDER_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "key",
        "redacted",
        "masked",
        "hidden",
        "example",
        "dummy",
        "placeholder",
        "none",
        "null",
        "undefined",
        "todo",
        "tbd",
    }
)
_FILLER_CHARS = frozenset("*xX.•-_#?… ")


def _is_placeholder(value: str) -> bool:
    """True for values that stand for a secret without being one."""
    import re

    s = value.strip()
    if len(s) < 3:
        return True
    if s.startswith(_PLACEHOLDER_START):
        return True
    if set(s) <= _FILLER_CHARS:
        return True
    low = s.lower()
    if low in _PLACEHOLDER_WORDS:
        return True
    if "{{" in s or "}}" in s or "%s" in s or "%(" in s or ("{" in s and "}" in s):
        return True  # a template or format string, filled in at run time
    if re.match(r"(?i)(?:your|insert|enter|replace|put)[\s_-]", s) or re.search(
        r"(?i)[\s_-]here$", s
    ):
        return True
    # An environment variable's name (token = "GITHUB_TOKEN"), not its value.
    return re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", s) is not None


def _is_label(value: str) -> bool:
    """A human-readable UI label or message ("Enter your password"), not a secret."""
    import re

    return re.fullmatch(r"[A-Z][a-z']*(?:[ ,][A-Za-z'.,!?:-]+)+[.!?:]?", value.strip()) is not None


def _plausible_unquoted(value: str, after: str) -> bool:
    """Decide whether an unquoted assignment value is a literal secret, not code."""
    import re

    if after and after in "([":  # a call or subscript: code, not a literal
        return False
    if _is_placeholder(value):
        return False
    if value.lower() in _LITERALS:
        return False
    if re.fullmatch(r"[A-Za-z_][\w]*(?:(?:\.|->|::)[A-Za-z_][\w]*)+", value):
        return False  # a dotted name: settings.SECRET_KEY, self.token, os.environ
    if re.fullmatch(r"[A-Za-z_]\w*", value):
        # A bare identifier is a variable unless it carries digits (hunter2, s3cr3t)
        # or is long and mixed-case like a generated key.
        has_digit = any(c.isdigit() for c in value)
        generated = len(value) >= 24 and "_" not in value and not value.islower()
        return has_digit or generated
    return not (value.isdigit() and len(value) < 6)


def _entropy(value: str) -> float:
    import math
    from collections import Counter

    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _high_entropy(value: str) -> bool:
    """A long random-looking value (generated key), not a word, UUID or template."""
    import re

    s = value.strip()
    if len(s) < 16 or _is_placeholder(s):
        return False
    if not re.fullmatch(r"[A-Za-z0-9+/=_\-.~:]+", s):
        return False
    if re.fullmatch(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", s):
        return False  # a UUID is an identifier
    if _entropy(s) < 3.5:
        return False
    lower = any(c.islower() for c in s)
    upper = any(c.isupper() for c in s)
    digit = any(c.isdigit() for c in s)
    if lower and upper and digit:
        return True  # a random alphanumeric string of 16+ chars has all three
    # Two-class alphabets that generated keys use: hex (32+) and base32 (16+).
    # Anything else with two classes is usually structured: "user:1234:profile".
    return re.fullmatch(r"[0-9a-f]{32,}|[0-9A-F]{32,}", s) is not None or (
        re.fullmatch(r"[A-Z2-7]{16,}=*", s) is not None and digit
    )


# ------------------------------------------------------------------------ rules

# A rule: kind, regex, validator and gate (below). When the regex has a value group
# ("v", or "v1".."v4" for the quoted/bare alternatives) only that group is replaced,
# otherwise the whole match. A validator gets (value, quoted, next char after match).
if TYPE_CHECKING:
    _Validator = Callable[[str, bool, str], bool]

# Speed note: Python's re only skips ahead quickly when a pattern starts with a literal
# or a plain character class. So patterns start with their literal prefix and check
# the word boundary afterwards with a fixed-width lookbehind (_boundary), and key
# names spell their first letter as [Pp] with the rest under a scoped (?i:...) flag;
# a leading \b or a global IGNORECASE made each pass 10-20x slower.


def _boundary(n: int) -> str:
    """After a literal of n characters: the character before it is not a word char."""
    return rf"(?<![A-Za-z0-9_].{{{n}}})"


# Key names (suffix of the identifier) that make any plausible value a secret.
_STRONG_KEY = (
    r"(?:[Pp](?i:assword|asswd|assphrase|rivate[_-]?key)"
    r"|[Ss](?i:ecret(?:[_-]?key)?|igning[_-]?key)"
    r"|[Tt](?i:oken)"
    r"|[Aa](?i:pi[_-]?key|ccess[_-]?key)"
    r"|[Ee](?i:ncryption[_-]?key)"
    r"|[Mm](?i:aster[_-]?key)"
    r"|[Cc](?i:redentials?)"
    r"|[Pp](?<=[_.\-][Pp])(?i:ass|wd))(?![\w\-])"
)
# Key names that suggest a secret only when the value looks random.
_WEAK_KEY = (
    r"(?:[Kk](?i:ey)|[Ss](?i:alt|ignature|ession(?:_?id)?)|[Cc](?i:ookie)|[Aa](?i:uth)"
    r"|[Hh](?i:mac)|[Pp](?i:at))(?![\w\-])"
)

# Separator between key and value: =, :, =>, :=, or a typed assignment (x: str = "v").
_SEP = (
    r"(?P<sep>(?:\\?[\"'])?\]?[ \t]*"
    r"(?::[ \t]*&?[A-Za-z_][\w.]*(?:\[[\w., |\[\]]*\])?(?:[ \t]*\|[ \t]*None)?[ \t]*=(?!=)"
    r"|=>|:=|(?<![=!<>])=(?!=)|:(?!:))[ \t]*)"
)
# Value: double-quoted (JSON-escaped quotes tolerated), single-quoted, backticked or bare.
_VALUE = (
    r"(?:(?P<dq>\\?\")(?P<v1>(?:[^\"\\\n]|\\[^\"\n]){0,1024})\\?\""
    r"|'(?P<v2>[^'\n]{0,1024})'"
    r"|`(?P<v3>[^`\n]{0,1024})`"
    r"|(?P<v4>[^\s\"'`<>{}\[\](),;&|]{1,1024}))"
)
_AUTH_SCHEMES = r"bearer|basic|token|digest|bot|apikey|negotiate|sso-key|aws4-hmac-sha256"


def _is_aws_secret(key: str, value: str) -> bool:
    """An AWS secret access key: 40 base64 chars under a key like aws_secret_access_key."""
    import re

    return (
        len(value) == 40
        and re.fullmatch(r"[A-Za-z0-9/+]{40}", value) is not None
        and re.search(r"(?i)secret_?(?:access_?)?key[\"']?\W*$", key) is not None
    )


def _check_strong(value: str, quoted: bool, after: str) -> bool:
    # Quoted values are literals; bare ones may be code (see _plausible_unquoted).
    if quoted:
        return not _is_placeholder(value) and not _is_label(value)
    return _plausible_unquoted(value, after)


def _check_weak(value: str, quoted: bool, after: str) -> bool:
    return _high_entropy(value)


def _check_not_placeholder(value: str, quoted: bool, after: str) -> bool:
    return not _is_placeholder(value)


# ------------------------------------------------------------------------ gates

# A gate is a cheap test (str methods only: no regex, no import) that runs before its
# rule's regex: gate(text, low) False means the rule cannot match ``text`` (``low`` is
# _fold(text)). needs_scrub is the OR of every gate plus the tag test. A gate may say
# True wrongly (a regex runs for nothing) but never False wrongly (a secret would leak).
# EVERY NEW RULE MUST COME WITH ITS GATE here, built on a literal (its anchor) that
# every match of the rule contains; tests/test_privacy.py checks gates against the
# corpora and random text.
if TYPE_CHECKING:
    _Gate = Callable[[str, str], bool]

# Key names end with one of these endings (lower case), found through the root each
# begins with: the strong alternatives of _STRONG_KEY (``private_key``, ``api-key``…
# end in "key") and the weak ones of _WEAK_KEY. Each ending says (strong, weak).
_KEY_ENDINGS: dict[str, tuple[tuple[str, bool, bool], ...]] = {
    "pass": (
        ("password", True, False),
        ("passwd", True, False),
        ("passphrase", True, False),
        ("pass", True, False),
    ),
    "pwd": (("pwd", True, False),),
    "key": (("key", True, True),),
    "secret": (("secret", True, False),),
    "token": (("token", True, False),),
    "credential": (("credentials", True, False), ("credential", True, False)),
    "salt": (("salt", False, True),),
    "signature": (("signature", False, True),),
    "session": (
        ("session_id", False, True),
        ("sessionid", False, True),
        ("session", False, True),
    ),
    "cookie": (("cookie", False, True),),
    "auth": (("auth", False, True),),
    "hmac": (("hmac", False, True),),
    "pat": (("pat", False, True),),
}
# What _SEP may hold between a key name and its "=" or ":" (a superset, any order).
_SEP_FILLER = "\\\"'] \t"
# What may follow a root where a key name can end: a separator, a blank (flags), or
# the next letter of a longer ending ("pass" → "password"). The empty string (end of
# text) is not in it: a name at the very end has no value.
_KEY_FOLLOW = {
    root: frozenset(_SEP_FILLER + "=:").union(
        word[len(root)] for word, _, _ in endings if len(word) > len(root)
    )
    for root, endings in _KEY_ENDINGS.items()
}
_SECRET_TAG_NAMES = ("password", "passwd", "secret", "token", "apiKey", "api_key", "accessToken")
_GITLAB_PREFIXES = tuple(
    f"gl{p}-" for p in ("pat", "dt", "rt", "ptt", "soat", "ffct", "cbt", "imt", "oas", "agent")
)
_GITHUB_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")
_SLACK_PREFIXES = ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xapp-")


def _fold(text: str) -> str:
    """``text`` lower-cased so that every (?i:…) match of an ASCII word shows as that word."""
    low = text.lower()
    if not low.isascii():
        # re's IGNORECASE also matches ı and İ to i, ſ to s (the Kelvin sign lowers to k
        # already, and İ lowers to i + U+0307). Deleting U+0307 only joins neighbours,
        # which can make a gate say True, never False.
        low = low.replace("ı", "i").replace("ſ", "s").replace("\u0307", "")
    return low


def _word_char(c: str) -> bool:
    # The class _boundary excludes: ASCII letters, digits, underscore.
    return c.isascii() and (c.isalnum() or c == "_")


def _bounded(text: str, anchors: tuple[str, ...], root: str, offset: int) -> bool:
    """An anchor occurs in ``text``, not after an ASCII word character.

    Every anchor holds ``root`` at ``offset``: one scan for a short, rare root (one
    character scans at memchr speed) serves them all.
    """
    i = text.find(root)
    while i >= 0:
        start = i - offset
        if (
            start >= 0
            and (start == 0 or not _word_char(text[start - 1]))
            and text.startswith(anchors, start)
        ):
            return True
        i = text.find(root, i + 1)
    return False


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


def _key_names(low: str, strong_sep: bool, strong_flag: bool, weak_sep: bool) -> bool:
    """A key name ending is followed by "=" or ":" (``*_sep``) or, after a dash, by a
    blank (``strong_flag``: ``--password hunter2``). Under a weak name only, the value
    must also be able to pass _high_entropy (``session: current`` cannot)."""
    n = len(low)
    for root, endings in _KEY_ENDINGS.items():
        i = low.find(root)
        follow = _KEY_FOLLOW[root]
        while i >= 0:
            # Most occurrences are words going on ("sessions", "path"): one look at the
            # character after the root rules them out.
            if low[i + len(root) : i + len(root) + 1] not in follow:
                i = low.find(root, i + 1)
                continue
            for word, strong, weak in endings:
                if not low.startswith(word, i):
                    continue
                j = i + len(word)
                if strong and strong_flag and j < n and low[j] in " \t" and _dash_before(low, i):
                    return True
                if (strong and strong_sep) or (weak and weak_sep):
                    while j < n and low[j] in _SEP_FILLER:
                        j += 1
                    if j < n and low[j] in "=:":
                        if strong and strong_sep:
                            return True
                        if _random_value_after(low, j):
                            return True
            i = low.find(root, i + 1)
    return False


# _high_entropy's alphabet, lower-cased: a value it accepts starts with 16 of these.
_ENTROPY_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789+/=_-.~:"


def _random_value_after(low: str, j: int) -> bool:
    """A value of 16+ characters of _ENTROPY_ALPHABET may follow the operator at ``j``.

    Follows _SEP and _VALUE loosely (a superset): "=>" or ":=", blanks, an optional
    (escaped) quote, the blanks strip() would drop. For ":", the value may also come
    after a type annotation (``key: str = "…"``), i.e. after the line's next "=".
    """
    n = len(low)
    starts = [j + 1]
    if j + 1 < n and low[j + 1] in "=>":
        starts.append(j + 2)
    if low[j] == ":":
        end = low.find("\n", j)
        eq = low.find("=", j, n if end < 0 else end)
        if eq >= 0:
            starts.append(eq + 1)
    for k in starts:
        while k < n and low[k] in " \t":
            k += 1
        if k < n and low[k] == "\\":
            k += 1
        if k < n and low[k] in "\"'`":
            k += 1
        while k < n and low[k].isspace():
            k += 1
        run = low[k : k + 16]
        if len(run) == 16 and not run.strip(_ENTROPY_ALPHABET):
            return True
    return False


def _url_credentials(text: str) -> bool:
    # "://", then within the rule's reach a ":" and later an "@".
    i = text.find("://")
    while i >= 0:
        window = text[i + 3 : i + 3 + 514]
        at = window.find("@")
        if at > 0 and ":" in window[:at]:
            return True
        i = text.find("://", i + 3)
    return False


def _tag_near(low: str, name: str) -> bool:
    """``<`` [blanks] [``/``] [blanks] ``name``: where _tag_regex(name) can match."""
    i = low.find(name)
    while i >= 0:
        j = i - 1
        while j >= 0 and low[j] in " \t":
            j -= 1
        if j >= 0 and low[j] == "/":
            j -= 1
            while j >= 0 and low[j] in " \t":
                j -= 1
        if j >= 0 and low[j] == "<":
            return True
        i = low.find(name, i + 1)
    return False


def _cased(*anchors: str, root: str = "") -> _Gate:
    """Gate of a case-sensitive rule whose match starts with an anchor at a word boundary.

    ``root``: a substring every anchor holds at the same offset, scanned for instead
    of each anchor.
    """
    if not root:
        return lambda text, low: any(_bounded(text, (a,), a, 0) for a in anchors)
    offset = anchors[0].find(root)
    if offset < 0 or any(anchor.find(root) != offset for anchor in anchors):
        raise ValueError(f"privacy: root {root!r} is not at one offset in {anchors}")
    return lambda text, low: _bounded(text, anchors, root, offset)


def _either(*gates: _Gate) -> _Gate:
    return lambda text, low: any(gate(text, low) for gate in gates)


_STRONG_FLAG_GATE: _Gate = lambda text, low: _key_names(low, False, True, False)  # noqa: E731
_STRONG_SEP_GATE: _Gate = lambda text, low: _key_names(low, True, False, False)  # noqa: E731
_WEAK_SEP_GATE: _Gate = lambda text, low: _key_names(low, False, False, True)  # noqa: E731
_OPENAI_GATE = _cased("sk-")

# Token rules are case-sensitive and start at a word boundary (but PEM and webhook URLs).
_TOKEN_GATES: tuple[tuple[str, _Gate], ...] = (
    ("private-key", lambda text, low: "-----BEGIN" in text),
    ("jwt", _cased("eyJ", root="J")),
    ("anthropic-key", _OPENAI_GATE),  # "sk-ant-" starts with "sk-"
    ("openai-key", _OPENAI_GATE),
    ("github-token", _either(_cased(*_GITHUB_PREFIXES[:-1], root="gh"), _cased("github_pat_"))),
    ("gitlab-token", _cased(*_GITLAB_PREFIXES, root="gl")),
    ("slack-webhook", lambda text, low: "https://hooks.slack.com/" in text),
    ("slack-token", _either(_cased(*_SLACK_PREFIXES[:-1], root="xox"), _cased("xapp-"))),
    (
        "stripe-key",
        _either(
            _cased("sk_live_", "sk_test_", "rk_live_", "rk_test_", root="k_"), _cased("whsec_")
        ),
    ),
    ("google-api-key", _cased("AIza", root="z")),
    ("npm-token", _cased("npm_")),
    ("pypi-token", _cased("pypi-AgE")),
    ("huggingface-token", _cased("hf_")),
    ("sendgrid-key", _cased("SG.", root="G")),
    ("aws-key", _cased("AKIA", "ASIA", "ABIA", "ACCA", root="A")),
)
# In the order of _build_rules' context rules.
_CONTEXT_GATES: tuple[_Gate, ...] = (
    lambda text, low: "z" in low and "authorization" in low,  # "z" is rare: memchr first
    _cased("Bearer", root="B"),
    lambda text, low: _url_credentials(text),
    _cased("machine"),
    _cased("mysql"),
    lambda text, low: "</" in text and any(f"<{n.lower()}>" in low for n in _SECRET_TAG_NAMES),
    _STRONG_FLAG_GATE,
    _STRONG_SEP_GATE,
    _WEAK_SEP_GATE,
)
# needs_scrub runs each distinct gate once, the three key-name gates as one scan.
_KEY_GATES = (_STRONG_FLAG_GATE, _STRONG_SEP_GATE, _WEAK_SEP_GATE)
_PREFILTER_GATES: tuple[_Gate, ...] = tuple(
    dict.fromkeys(
        gate
        for gate in (*(gate for _, gate in _TOKEN_GATES), *_CONTEXT_GATES)
        if gate not in _KEY_GATES
    )
)


def needs_scrub(text: str) -> bool:
    """False only when :func:`scrub` (without extra patterns) returns ``text`` unchanged.

    A prefilter made of ``str`` methods (no regex, no import): microseconds on a
    prompt, so callers can skip the whole filter for text that cannot hold a secret
    or a tag. True means "maybe": run :func:`scrub`.
    """
    low = _fold(text)
    if "<" in text and (_tag_near(low, "private") or _tag_near(low, "memlane-context")):
        return True
    if any(gate(text, low) for gate in _PREFILTER_GATES):
        return True
    return _key_names(low, True, True, True)


class _Rule:
    """One secret rule. Its regex compiles on first use: compiling all of them costs
    ~10 ms, and the gates keep most rules from ever running in a hook process."""

    __slots__ = ("_compiled", "check", "gate", "kind", "source")

    def __init__(self, kind: str, source: str, check: _Validator | None, gate: _Gate) -> None:
        self.kind = kind
        self.source = source
        self.check = check
        self.gate = gate
        self._compiled: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex."""
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.source)
        return self._compiled


def _build_rules() -> tuple[_Rule, ...]:
    b = _boundary
    tail = r"(?![A-Za-z0-9_\-])"
    # Each rule takes its gate from _TOKEN_GATES or _CONTEXT_GATES (above), in the same
    # order (checked here and by a test).
    token_rules = [
        (
            "private-key",
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"|[A-Za-z0-9+/=\s:,.\\-]*)",
        ),
        ("jwt", r"eyJ" + b(3) + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.?[A-Za-z0-9_\-+/=]*"),
        ("anthropic-key", r"sk-ant-" + b(7) + r"[A-Za-z0-9_\-]{20,}"),
        (
            "openai-key",
            r"sk-" + b(3) + r"(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_\-]*\d)"
            r"[A-Za-z0-9_\-]{20,}" + tail,
        ),
        (
            "github-token",
            r"(?:gh[pousr]_" + b(4) + r"[A-Za-z0-9]{36,255}"
            r"|github_pat_" + b(11) + r"[A-Za-z0-9_]{50,255})\b",
        ),
        (
            "gitlab-token",
            "(?:" + "|".join(f"{p}{b(len(p))}" for p in _GITLAB_PREFIXES) + r")[A-Za-z0-9_\-]{20,}",
        ),
        ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/\-]+"),
        ("slack-token", r"(?:xox[abposre]|xapp)-" + b(5) + r"[A-Za-z0-9\-]{10,}"),
        (
            "stripe-key",
            r"(?:[sr]k_(?:live|test)_" + b(8) + r"|whsec_" + b(6) + r")[A-Za-z0-9]{16,}\b",
        ),
        ("google-api-key", r"AIza" + b(4) + r"[0-9A-Za-z_\-]{35}" + tail),
        ("npm-token", r"npm_" + b(4) + r"[A-Za-z0-9]{36}\b"),
        ("pypi-token", r"pypi-AgE" + b(8) + r"[A-Za-z0-9_\-]{50,}"),
        ("huggingface-token", r"hf_" + b(3) + r"[A-Za-z0-9]{30,}\b"),
        ("sendgrid-key", r"SG\." + b(3) + r"[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
        ("aws-key", r"(?:AKIA|ASIA|ABIA|ACCA)" + b(4) + r"[A-Z0-9]{16}\b"),
    ]
    if [kind for kind, _ in token_rules] != [kind for kind, _ in _TOKEN_GATES]:
        raise AssertionError("privacy: every token rule needs its gate in _TOKEN_GATES")
    rules = [
        _Rule(kind, pattern, None, gate)
        for (kind, pattern), (_, gate) in zip(token_rules, _TOKEN_GATES, strict=True)
    ]
    context_rules: list[tuple[str, str, _Validator | None]] = [
        (
            "auth-header",
            r"[Aa](?i:uthorization)(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
            rf"(?:(?i:{_AUTH_SCHEMES})[ \t]+)?"
            rf"(?!(?i:{_AUTH_SCHEMES})\b)"
            r"(?P<v>[^\s\"'`\\<>{}$\[\]]{6,}(?:[ \t][^\s\"'`\\<>{}$\[\]]+=[^\s\"'`\\]+)*)",
            _check_not_placeholder,
        ),
        ("auth-header", r"Bearer" + b(6) + r"[ \t]+(?P<v>[A-Za-z0-9._~+/\-]{20,}=*)", None),
        (
            # Only the password is masked; the scheme is not needed to find it.
            "url-credentials",
            r"://[^\s:/@'\"<>\[\]]{1,256}:(?P<v>[^\s@/'\"<>\[\]]{1,256})@",
            _check_not_placeholder,
        ),
        (
            "assignment",
            r"machine" + b(7) + r"[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+(?P<v>\S+)",
            None,
        ),
        (
            "assignment",
            r"mysql" + b(5) + r"(?:dump|admin|sh)?\b[^\n|;&]*?[ \t]-p(?P<v>[^\s'\"\-$][^\s'\"]*)",
            None,
        ),
        (
            "assignment",
            r"<(?P<tag>(?i:" + "|".join(_SECRET_TAG_NAMES) + r"))>"
            r"(?P<v>[^<\n]{1,512})</(?P=tag)>",
            _check_not_placeholder,
        ),
        (
            # CLI flags with a space before the value: --password hunter2
            "assignment",
            r"-(?<![\w-].)-?[\w-]*?" + _STRONG_KEY + r"[ \t]+" + _VALUE,
            _check_strong,
        ),
        ("assignment", _STRONG_KEY + _SEP + _VALUE, _check_strong),
        ("high-entropy", _WEAK_KEY + _SEP + _VALUE, _check_weak),
    ]
    rules.extend(
        _Rule(kind, pattern, check, gate)
        for (kind, pattern, check), gate in zip(context_rules, _CONTEXT_GATES, strict=True)
    )
    return tuple(rules)


_RULES: tuple[_Rule, ...] | None = None
_CUSTOM: dict[tuple[str, ...], tuple[re.Pattern[str], ...]] = {}


def _rules() -> tuple[_Rule, ...]:
    global _RULES
    if _RULES is None:
        _RULES = _build_rules()
    return _RULES


def _custom_rules(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    import re

    key = tuple(patterns)
    cached = _CUSTOM.get(key)
    if cached is not None:
        return cached
    compiled: list[re.Pattern[str]] = []
    for pattern in key:
        try:
            compiled.append(re.compile(pattern))
        except (re.error, TypeError, ValueError) as exc:
            import logging

            # A bad pattern from config must never break capture: skip it, say why.
            logging.getLogger(__name__).warning(
                "privacy: skipping invalid extra secret pattern %r: %s", pattern, exc
            )
    result = tuple(compiled)
    _CUSTOM[key] = result
    return result


_VALUE_GROUPS = (("v", False), ("v1", True), ("v2", True), ("v3", True), ("v4", False))


def _value_group(m: re.Match[str]) -> tuple[str, bool, int, int] | None:
    """(value, quoted, start, end) of the group to mask, None to mask the whole match."""
    groups = m.re.groupindex
    for name, quoted in _VALUE_GROUPS:
        if name in groups and m.group(name) is not None:
            return m.group(name), quoted, m.start(name), m.end(name)
    return None


def _apply_rule(text: str, kind: str, pattern: re.Pattern[str], check: _Validator | None) -> str:
    marker = redacted(kind)

    def replace(m: re.Match[str]) -> str:
        found = _value_group(m)
        if found is None:
            return marker if m.group() else m.group()
        value, quoted, start, end = found
        if not value or value.startswith(_REDACTED_PREFIX):
            return m.group()
        if check is not None and not check(value, quoted, text[m.end() : m.end() + 1]):
            return m.group()
        mark = marker
        if kind == "assignment" and _is_aws_secret(text[max(m.start() - 24, 0) : start], value):
            mark = redacted("aws-secret")
        whole = m.group()
        base = m.start()
        return whole[: start - base] + mark + whole[end - base :]

    return pattern.sub(replace, text)


def _apply_custom(text: str, pattern: re.Pattern[str]) -> str:
    import re

    marker = redacted("custom")
    # Never match inside an existing marker, so a pattern like "REDACTED" stays
    # idempotent; the text is split on markers and each piece is masked alone.
    parts = re.split(r"(\[REDACTED:[a-z0-9-]+\])", text)
    for idx in range(0, len(parts), 2):
        parts[idx] = pattern.sub(lambda m: marker if m.group() else "", parts[idx])
    return "".join(parts)


def mask_secrets(text: str, extra_patterns: Sequence[str] = ()) -> str:
    """Replace secrets in ``text`` by ``[REDACTED:<kind>]`` markers.

    Kinds: private-key (a whole PEM block), jwt, anthropic-key, openai-key,
    github-token, gitlab-token, slack-token, slack-webhook, stripe-key,
    google-api-key, npm-token, pypi-token, huggingface-token, sendgrid-key, aws-key,
    aws-secret, auth-header, url-credentials, assignment (``password = "…"``,
    ``--token …``: the key stays, the value is masked), high-entropy (a random value
    under a weak key name such as ``license_key``) and custom (``extra_patterns``,
    regex strings from config; an invalid one is skipped with a logged warning).
    """
    if isinstance(extra_patterns, str):  # one pattern passed bare, not as a list
        extra_patterns = (extra_patterns,)
    low = _fold(text)
    for rule in _rules():
        if not rule.gate(text, low):
            continue  # the rule's anchor is absent: its regex cannot match
        masked = _apply_rule(text, rule.kind, rule.pattern, rule.check)
        if masked != text:
            text = masked
            low = _fold(text)
    for custom in _custom_rules(extra_patterns) if extra_patterns else ():
        text = _apply_custom(text, custom)
    return text


# --------------------------------------------------------------------- env files

_ENV_LINE: re.Pattern[str] | None = None
_ENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults")


def is_env_file(path: str) -> bool:
    """True when ``path`` names a dotenv-style file whose values are secrets.

    ``.env``, ``.env.local``, ``.env.production``, ``prod.env``, and ``.envrc``
    (direnv: it is a shell script, but its point is to export secrets, and
    :func:`mask_env_file` only touches its ``KEY=VALUE`` lines). Templates meant to be
    committed (``.env.example``, ``.env.sample``, ``.env.template``, ``.env.dist``)
    are not: their values are placeholders and their text is useful memory (their
    real secrets, if any, are still caught by :func:`mask_secrets`).
    """
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    if name in (".env", ".envrc"):
        return True
    if name.startswith(".env."):
        return not name.endswith(_ENV_TEMPLATE_SUFFIXES)
    return name.endswith(".env") and len(name) > len(".env")


def mask_env_file(text: str) -> str:
    """Mask every value of the ``KEY=VALUE`` lines of a dotenv file's contents.

    Keys, comments and blank lines stay (they tell what is configured); values become
    ``[REDACTED:env]``, quotes kept, multi-line quoted values included. ``export``
    prefixes and the line-number prefixes of tool output (``  12→KEY=v``) are
    understood. The rest then goes through :func:`mask_secrets`.
    """
    import re

    global _ENV_LINE
    if _ENV_LINE is None:
        _ENV_LINE = re.compile(
            r"^(?P<pre>[ \t]*(?:\d+(?:\t|→|:|\|)[ \t]*)?(?:export[ \t]+)?"
            r"[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*=[ \t]*)"
            r"(?:(?P<q>[\"'`])(?P<qv>(?:\\.|(?!(?P=q))[\s\S]){0,65536}?)(?P=q)|(?P<v>[^\n]*))",
            re.MULTILINE,
        )
    marker = redacted("env")

    def replace(m: re.Match[str]) -> str:
        quote = m.group("q")
        value = m.group("qv") if quote else m.group("v")
        if not value.strip() or value.strip() == marker:
            return m.group()
        if quote:
            return f"{m.group('pre')}{quote}{marker}{quote}"
        return m.group("pre") + marker

    return mask_secrets(_ENV_LINE.sub(replace, text))


# ------------------------------------------------------------------ entry points


def _strip_all(text: str) -> str:
    return strip_injected_context(strip_private(text))


def scrub(text: str, extra_patterns: Sequence[str] = ()) -> str:
    """strip_private, then strip_injected_context, then mask_secrets.

    Every entry point calls this before hashing, storing or embedding. The result is
    a fixpoint (``scrub(scrub(x)) == scrub(x)``): if masking glued a new tag
    together (``<private`` + a masked secret + ``>``), the passes repeat. Masking
    itself is idempotent, so a pass whose stripping changes nothing is the last.
    """
    if not extra_patterns and not needs_scrub(text):
        return text
    out = mask_secrets(_strip_all(text), extra_patterns)
    for _ in range(_MAX_PASSES):
        stripped = _strip_all(out)
        if stripped == out:
            break
        out = mask_secrets(stripped, extra_patterns)
    return out


def normalized_hash(text: str) -> str:
    """sha256 hex of ``text`` after :func:`scrub`, NFKC, casefold and whitespace collapse.

    Two texts that differ only in a secret, a ``<private>`` block, letter case or
    whitespace hash the same (DESIGN §10, invariant 1).
    """
    return hash_scrubbed(scrub(text))


def hash_scrubbed(clean: str) -> str:
    """:func:`normalized_hash` of text the caller has already passed through :func:`scrub`.

    Entry points scrub once (with the configured extra patterns) and hash the
    result; scrubbing again here would double the cost of every stored chunk.
    """
    import unicodedata

    try:  # the builtin module skips loading OpenSSL through hashlib (ms on every hook)
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha256

    if clean.isascii():
        norm = clean.lower()  # ASCII is NFKC-stable, and casefolds to its lower case
    else:
        # "…" (memlane's own elision marks) is the usual reason text is not NFKC; its
        # decomposition spelled out, normalize() mostly takes its quick-check exit.
        # NFKC depends only on the full decomposition, so the result is the same.
        norm = unicodedata.normalize("NFKC", clean.replace("\u2026", "..."))
        # NFKC again after casefold: casefolding can produce non-normalized sequences.
        norm = unicodedata.normalize("NFKC", norm.casefold())
    # Collapse whitespace runs without re: str.split() and re's \s agree on what
    # whitespace is (Py_UNICODE_ISSPACE), so this equals re.sub(r"\s+", " ", norm).strip().
    norm = " ".join(norm.split())
    digest: str = sha256(norm.encode("utf-8")).hexdigest()
    return digest
