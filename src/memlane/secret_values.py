"""The value after a secret-bearing key: where it ends, and whether it is a secret.

:mod:`memlane.secret_rules` finds a key (``password``, ``api_key``…) and its
separator; this module reads the value that follows and decides. The principle:
**a literal value is a secret whatever its characters**; only values that are
provably not a literal are kept:

* **placeholders and references**: empty or tiny (under 3 characters), filler
  (``****``, ``xxxx``), a word standing for a secret (``password``, ``<token>``,
  ``your-api-key``), an environment variable's name (``GITHUB_TOKEN``), a
  reference resolved at run time (``$TOKEN``, ``${DB_PASSWORD}``, ``{{ vault }}``,
  ``%(pw)s``, ``os.environ[…]``, ``op://…``) or a template made only of such
  references and plain words (``Bearer {token}``, ``postgres://{user}:{pw}@{host}``);
* **code**, for unquoted values where code can stand (not a shell or env line, an
  option, or the end of a string): a variable (``password=pw``), an attribute, a
  call or subscript whose bracket closes on its line (``self.token``, ``get_pw()``,
  ``tokens[0]``), a type (``token: Optional[str]``), a language literal (``None``,
  ``true``), a number under six digits;
* **UI text** in quotes (``"Enter your password"``).

A value's natural end: the closing quote for quoted values (escapes honoured,
JSON-in-JSON ``\\"…\\"`` too; no closing quote on the line means the end of the
line); whitespace for bare values, whose last three characters at most stay when
they close the surrounding code (a quote, ``,``, ``;``, ``:``, a bracket the value
did not open). Everything here runs only after a rule's regex matched, so it may
use :mod:`re` freely.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from memlane import secret_gates


class Value(NamedTuple):
    """A value found in ``text[start:end]``; ``quote`` is its opening quote ('' if bare);
    ``closed`` says a bare value ended at a quote (the end of a string holding it)."""

    start: int
    end: int
    quote: str
    text: str
    string_prefix: str = ""
    closed: bool = False


# ------------------------------------------------------------------- parsing

_QUOTES = "\"'`"
# What code puts right after a string: operators, separators, a method call.
_AFTER_STRING = frozenset(",;)]}:.+*%|&<>=!?\"'`\\")
_STRING_PREFIXES = ("rb", "br", "fr", "rf", "b", "r", "u", "f", "@")


def parse_value(text: str, pos: int, *, prefixes: bool = True) -> Value | None:
    """The value starting at ``pos`` (after blanks), or None at end of line or text.
    ``prefixes``: read ``f"…"``, ``b'…'``, ``@"…"`` as strings (code, not shell)."""
    n = len(text)
    i = pos
    while i < n and text[i] in " \t":
        i += 1
    if i >= n or text[i] in "\r\n":
        return None
    prefix = ""
    for candidate in _STRING_PREFIXES if prefixes else ():
        j = i + len(candidate)
        if (
            text.startswith(candidate, i)
            and j < n
            and (text[j] in "\"'" or text.startswith('\\"', j))
            and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))
        ):
            prefix, i = candidate, j
            break
    if text.startswith('\\"', i):
        return _escaped_quoted(text, i, prefix)
    if text.startswith(("\\\\", "\\'"), i):
        escaped = _escaped_deeper(text, i, prefix)
        if escaped is not None:
            return escaped
    if text.startswith(('"""', "'''"), i):
        return _triple_quoted(text, i, prefix)
    if text[i] in _QUOTES:
        value = _quoted(text, i, prefix)
        closed = text[value.end : value.end + 1] == text[i]
        after = text[value.end + 1 : value.end + 2]
        xml_end = text.startswith("/>", value.end + 1)  # <add value="X"/>: the tag ends
        if closed and after and not after.isspace() and after not in _AFTER_STRING and not xml_end:
            # 'abc'def: one word glued from pieces (a shell does that), not a string.
            bare = _bare(text, i - len(prefix))
            return bare._replace(text=text[bare.start : bare.end])
        return value
    if prefix:
        return None  # not reached: a prefix is only taken before a quote
    return _bare(text, i)


def _triple_quoted(text: str, i: int, prefix: str) -> Value:
    """A Python or TOML triple-quoted string (``password = \"\"\"X\"\"\"``), over lines too;
    unclosed within VALUE_REACH, it runs to its first line's end."""
    quote = text[i : i + 3]
    close = text.find(quote, i + 3, i + 3 + VALUE_REACH)
    end = line_end(text, i + 3) if close < 0 else close
    return Value(i + 3, end, quote[0], text[i + 3 : end], prefix)


def _quoted(text: str, i: int, prefix: str) -> Value:
    quote = text[i]
    n = min(len(text), i + 1 + VALUE_REACH)
    j = i + 1
    while j < n and text[j] != "\n":
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return Value(i + 1, j, quote, text[i + 1 : j], prefix)
        j += 1
    if j >= n and n < len(text) and text[n] != "\n":
        # Longer than a rule reads: judged by its head, masked to its closing quote (or
        # its line's end), as a long bare value is.
        stop = line_end(text, n)
        close = text.find(quote, n, stop)
        return Value(i + 1, stop if close < 0 else close, quote, text[i + 1 : n], prefix)
    # No closing quote on the line: a cut or multi-line value runs to the line's end.
    end = min(j, n)
    return Value(i + 1, end, quote, text[i + 1 : end], prefix)


# What joins two string literals into one: + (most languages), . (PHP), .. (Lua), || (SQL),
# & (VB); at most this many pieces are read after the first.
_JOINS = ("+", "..", ".", "||", "&")
MAX_JOINED = 8


def joined_end(text: str, value: Value) -> int:
    """Where a quoted value ends once the literals joined to it are counted
    (``"Sup3r" + "Secret99"``, across a line break too): the end of the last one's
    text, or ``value.end`` when nothing is joined."""
    end = value.end
    if not value.quote or value.quote not in _QUOTES:
        return end
    pos = end + 1  # after the closing quote
    for _ in range(MAX_JOINED):
        k = pos
        while k < len(text) and text[k] in " \t":
            k += 1
        join = next((j for j in _JOINS if text.startswith(j, k)), None)
        if join is None:
            break
        k += len(join)
        while k < len(text) and text[k] in " \t\r\n" and k - pos < 200:
            k += 1
        if k >= len(text) or text[k] not in _QUOTES:
            break
        piece = _quoted(text, k, "")
        if piece.end >= len(text) or text[piece.end] != text[k]:
            break  # not closed on its line
        end, pos = piece.end, piece.end + 1
    return end


MAX_ARGUMENTS = 8


def call_arguments(text: str, pos: int) -> list[int]:
    """Where each argument of a call starts (blanks skipped), ``pos`` just after its
    "(": commas at its own depth split them, strings and nested brackets are read
    whole; at most MAX_ARGUMENTS, within VALUE_REACH characters."""
    starts = [pos]
    depth = 0
    quote = ""
    stop = min(len(text), pos + VALUE_REACH)
    k = pos
    while k < stop:
        c = text[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote or c == "\n":
                quote = ""
        elif c in _QUOTES:
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            if len(starts) == MAX_ARGUMENTS:
                break
            starts.append(k + 1)
        k += 1
    result = []
    for start in starts:
        while start < len(text) and text[start] in " \t\r\n":
            start += 1
        result.append(start)
    return result


def _escaped_quoted(text: str, i: int, prefix: str) -> Value:
    """A value inside a JSON string: ``\\"…\\"``, inner quotes written ``\\\\\\"``."""
    n = len(text)
    j = i + 2
    while j < n and text[j] != "\n":
        if text.startswith("\\\\\\\\", j) or text.startswith('\\\\\\"', j):
            j += 4
        elif text.startswith('\\"', j):
            return Value(i + 2, j, '\\"', text[i + 2 : j], prefix)
        elif text[j] == "\\":
            j += 2
        else:
            j += 1
    end = min(j, n)
    return Value(i + 2, end, '\\"', text[i + 2 : end], prefix)


def _escaped_deeper(text: str, i: int, prefix: str) -> Value | None:
    """A value between two equal runs of backslashes and a quote: ``\\'…\\'``, or
    ``\\\\\\"…\\\\\\"`` (JSON inside JSON inside a JSON string)."""
    k = i
    while k < len(text) and text[k] == "\\":
        k += 1
    if k >= len(text) or text[k] not in "\"'":
        return None
    opener = text[i : k + 1]
    end = line_end(text, k)
    close = text.find(opener, k + 1, end)
    close = end if close < 0 else close
    return Value(k + 1, close, opener, text[k + 1 : close], prefix)


_CLOSERS = {")": "(", "]": "[", "}": "{"}


# How much of one value a rule judges: a value longer than this (no blank in 4,096
# characters) is judged by its first VALUE_REACH characters, and masked whole. A run of
# thousands of keys ("pat:pat:pat:…") made each key read the rest of the run: quadratic.
VALUE_REACH = 4096
_BARE = re.compile(rf"\S{{0,{VALUE_REACH}}}")
_NON_BLANK = re.compile(r"\S*")
# The last long run of non-blank characters found: (text, start, end). The keys of one
# run share its end, found once (the text is compared by identity: the same string).
_LAST_RUN: tuple[str, int, int] = ("", 0, 0)


def _run_end(text: str, i: int) -> int:
    """Where the run of non-blank characters holding ``i`` ends."""
    global _LAST_RUN
    last_text, start, end = _LAST_RUN  # one read: another thread may swap it whole
    if last_text is text and start <= i < end:
        return end
    found = _NON_BLANK.match(text, i)
    end = found.end() if found is not None else i
    _LAST_RUN = (text, i, end)
    return end


def _bare(text: str, i: int) -> Value:
    found = _BARE.match(text, i)
    end = found.end() if found is not None else i
    if end - i == VALUE_REACH and end < len(text) and not text[end].isspace():
        # Longer than a rule reads: judged by its head, masked to its end (its last
        # character goes when it is code punctuation, as below, without the checks that
        # would read the whole run).
        end = _run_end(text, i)
        if text[end - 1] in ",;":
            end -= 1
        return Value(i, end, "", text[i : i + VALUE_REACH])
    closed = False
    # Code punctuation after the value: "f(password=x)", "k=v;", '-H "Key: v"'. At most
    # three characters go, and a closer only when the value does not open it.
    for _ in range(3):
        if end - i < 2:
            break
        c = text[end - 1]
        if c in ",;:" or c in _QUOTES or (c in _CLOSERS and _CLOSERS[c] not in text[i : end - 1]):
            end -= 1
            # A quote the value does not open: the end of a string holding it (not a
            # backtick: Markdown's `password=pw` is code, not a string).
            closed = closed or (c in "\"'" and text.count(c, i, end) % 2 == 0)
            while c in "\"'" and end - i > 1 and text[end - 1] == "\\":
                end -= 1  # the quote is escaped (\" in a JSON string): its backslash goes too
        else:
            break
    return Value(i, end, "", text[i:end], closed=closed)


# How far a value's rule reads its line around it (a key's line start before it, the
# code after it): the one reach of every rule (secret_gates, the lean prefilter).
LINE_REACH = secret_gates.LINE_REACH


def line_rest(text: str, pos: int) -> str:
    """The line from ``pos`` on, within LINE_REACH."""
    return text[pos : line_end(text, pos, LINE_REACH)]


def line_start(text: str, pos: int) -> int:
    """Where the line holding ``pos`` starts, or LINE_REACH before ``pos`` if further."""
    start = max(0, pos - LINE_REACH)
    return text.rfind("\n", start, pos) + 1 or start


def line_end(text: str, pos: int, reach: int | None = None) -> int:
    """Index of the end of the line holding ``pos`` (before ``\\r\\n`` or ``\\n``), or
    ``reach`` characters after ``pos`` if that comes first."""
    stop = len(text) if reach is None else min(len(text), pos + reach)
    end = text.find("\n", pos, stop)
    end = stop if end < 0 else end
    return end - 1 if end > pos and text[end - 1] == "\r" else end


_NOTE_BRACKETS = {"(": ")", "[": "]", "<": ">"}


def before_note(text: str, start: int, end: int) -> int:
    """Where ``text[start:end]`` ends when a blank and a note in brackets close it
    (``X w0rd (prod only)``, ``X [rotated]``, ``X (expires 2027)``): the note's blank;
    else ``end``. A note reads as words (or numbers): ``Tr0ub4dor &3 (x9Q!)`` is one
    value."""
    part = text[start:end].rstrip()
    closer = part[-1:]
    opener = next((o for o, c in _NOTE_BRACKETS.items() if c == closer), "")
    if not opener:
        return end
    i = part.rfind(opener)
    if i <= 0 or not part[i - 1].isspace() or part.find(closer, i) != len(part) - 1:
        return end
    if not all(_note_word(w) for w in part[i + 1 : -1].split()):
        return end
    return start + len(part[:i].rstrip())


def _note_word(word: str) -> bool:
    """A note's word: letters (a "-" or "'" inside, ",.;:" after), or digits alone."""
    core = word.rstrip(",.;:")
    return core.isdigit() or (core.replace("-", "").replace("'", "").isalpha())


# ------------------------------------------------------------ not a secret

# Words that, as a whole value, are language literals, keywords or type names.
LITERALS = frozenset(
    (
        "true",
        "false",
        "null",
        "none",
        "nil",
        "undefined",
        "nan",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "str",
        "string",
        "int",
        "integer",
        "bool",
        "boolean",
        "bytes",
        "any",
        "object",
        "char",
        "float",
        "double",
        "number",
        "bigint",
        "symbol",
        "unknown",
        "never",
        "void",
        "self",
        "this",
        "cls",
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
        "raise",
        "yield",
        "continue",
        "break",
        "pass",
        "del",
        "assert",
        "import",
        "from",
        "else",
        "elif",
        "not",
        "and",
        "or",
        "in",
        "is",
        "if",
        "for",
        "while",
        "with",
        "try",
        "except",
        "finally",
        "include",
        "omit",
        "same-origin",
        "readonly",
        "static",
        "final",
        "public",
        "private",
        "protected",
        "mut",
        "ref",
        "dyn",
        "impl",
        "usize",
        "isize",
        "secretstr",
    )
)
_PLACEHOLDER_WORDS = frozenset(
    (
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
        "fixme",
        "xxx",
        "changed",
        "sample",
        "test",
    )
)
_FILLER = frozenset("*xX.•-_#?… ")
_CODE_PREFIXES = (
    "process.env",
    "os.environ",
    "os.getenv",
    "getenv(",
    "env(",
    "env.",
    "ENV[",
    "ENV.fetch",
    "$(",
    "${",
    "secrets.",
    "Secret(",
    "!vault",
    "vault:",
    "op://",
    "sm://",
    "ssm:",
    "arn:aws:secretsmanager",
    "[REDACTED",
)

_REFERENCE_WHOLE: re.Pattern[str] | None = None
_REFERENCE_PART: re.Pattern[str] | None = None
_TEMPLATE_REST: re.Pattern[str] | None = None


def _references() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    global _REFERENCE_WHOLE, _REFERENCE_PART, _TEMPLATE_REST
    if _REFERENCE_WHOLE is None or _REFERENCE_PART is None or _TEMPLATE_REST is None:
        _REFERENCE_WHOLE = re.compile(
            r"\$[A-Za-z_]\w*|\$\d|\$\{[^{}\n]*\}|\$\([^()\n]*\)|%[A-Za-z_]\w*%"
            r"|</?[A-Za-z][^<>\n]{0,60}>|\{\$[A-Za-z_][\w\->\[\]'\"]*\}"
            r"|\[[A-Za-z][\w .\-]*\]"
            r"|\{\{[^\n]*\}\}|\{%[^\n]*%\}|#\{[^{}\n]*\}|\$\{\{[^\n]*\}\}"
            r"|<%[^\n]*%>"  # ERB's and EJS's <%= ENV['SECRET_KEY_BASE'] %>
            # A docstring's cross-reference, Sphinx role and target: :data:`TOKEN_TTL`.
            r"|:?(?:(?:py|c|cpp|js|rst|std):)?(?:func|meth|class|attr|data|const|mod|obj|exc"
            r"|ref|doc|term|envvar|option|program|file|code|kbd|samp|command|any|type|member"
            r"|var|macro|struct|enum):`[^`\n]+`?"
        )
        _REFERENCE_PART = re.compile(
            r"\$\{[^{}\s]*\}|\$[A-Z_][A-Z0-9_]+|\{\{[^{}]*\}\}|#\{[^{}]*\}|\{\$[A-Za-z_]\w*\}"
            r"|\{[A-Za-z_][\w.]*(?:\[[^\]{}]*\])?(?:![rsa])?(?::[^{}]*)?\}|\{\d*\}"
            r"|%\([A-Za-z_]\w*\)[sdrif]|%[sdrif]"
        )
        # What a template may hold besides its references: words, blanks, URL marks.
        _TEMPLATE_REST = re.compile(r"[A-Za-z \t:/@._\-,;=]*")
    return _REFERENCE_WHOLE, _REFERENCE_PART, _TEMPLATE_REST


def is_reference(value: str) -> bool:
    """A value resolved at run time: ``$TOKEN``, ``${PW}``, ``{{ x }}``, ``<key>``, a
    docstring's ``:class:`Token```, or a template made of such references and plain words
    (``Bearer {token}``)."""
    whole, part, rest = _references()
    s = value.strip()
    if whole.fullmatch(s):
        return True
    if part.search(s) is None:
        return False
    return rest.fullmatch(part.sub("", s)) is not None


# Keys made to be published (in a web page, a mobile app): Stripe's and Clerk's
# publishable keys, Mapbox's public tokens. Their secret kin (sk_…, sk.eyJ…) are masked.
def publishable_key(value: str) -> bool:
    """Whether ``value`` has a publishable key's shape (``pk_live_`` or ``pk_test_`` then
    letters and digits, ``pk.eyJ…`` then a JWT's dotted base64url). Only a random-looking
    value and a key or token's value are read so: a password, a URL's userinfo or
    ``-u user:pass`` that starts ``pk_`` is a password (see :func:`is_placeholder`)."""
    s = value.strip()
    return re.fullmatch(r"pk_(?:live|test)_[A-Za-z0-9]{16,}|pk\.eyJ[\w-]+\.[\w-]+", s) is not None


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret without being one (see module docstring)."""
    s = value.strip()
    if len(s) < 3 or set(s) <= _FILLER:
        return True
    if s.startswith(_CODE_PREFIXES):
        return True
    low = s.lower()
    if low in _PLACEHOLDER_WORDS:
        return True
    if re.fullmatch(r"(?i)(?:your|insert|enter|replace|put|add)[\s_-][A-Za-z\s_-]*", s):
        return True
    # The same glued: "yourpassword", "YourApiKey".
    if re.fullmatch(r"(?i)your[a-z]*?(?:password|passwd|pass|token|key|secret|pin)s?", s):
        return True
    if re.fullmatch(r"(?i)[A-Za-z\s_-]*[\s_-](?:here|goes|placeholder)", s):
        return True
    # A token's prefix then filler: sk_test_..., ghp_xxxx, xoxb-****.
    head = s.rstrip(".…*xX")
    if len(s) - len(head) >= 3 and head.endswith(("_", "-")) and len(head) <= 16:
        return True
    # An environment variable's name (token = "GITHUB_TOKEN"), not its value.
    if re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", s):
        return True
    return is_reference(s)


_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{3,}")


def filler_token(token: str) -> bool:
    """Whether a token found by its format ends in filler: x, X or 0 repeated
    (``ghp_xxxx…``, ``AKIA0000…``), or parts of one letter each (``…/XXX/YYY/ZZZ``): a
    placeholder, where a real token has its random part (a test's ``CCCC…`` after a
    prefix is taken for one)."""
    runs = _ALNUM_RUN.findall(token)
    if not runs or len(set(runs[-1])) != 1:
        return False
    return runs[-1][0] in "xX0" or (len(runs) > 1 and len(set(runs[-2])) == 1)


_UI_WORDS = frozenset(
    (
        "enter",
        "your",
        "please",
        "invalid",
        "incorrect",
        "wrong",
        "required",
        "confirm",
        "forgot",
        "reset",
        "new",
        "current",
        "show",
        "hide",
        "must",
        "should",
        "characters",
        "least",
        "match",
        "matches",
        "do",
        "does",
        "not",
        "the",
        "a",
        "an",
        "is",
        "are",
        "change",
        "password",
        "token",
        "key",
        "secret",
        "passphrase",
        "and",
        "or",
        "to",
        "of",
        "for",
        "with",
    )
)


def is_label(value: str) -> bool:
    """UI text ("Enter your password", "Invalid token."), not a secret: two or more
    words of letters, the first capitalized, one of them a word interfaces use."""
    s = value.strip()
    if re.fullmatch(r"[A-Z][A-Za-z']*(?:[ ,]+[A-Za-z'.,!?:-]+)+[.!?:…]?", s) is None:
        return False
    words = {w.strip(".,!?:'").lower() for w in s.split()}
    return bool(words & _UI_WORDS)


_NAME_ONLY: re.Pattern[str] | None = None
_CALL_HEAD: re.Pattern[str] | None = None
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def is_expression(token: str, rest: str = "") -> bool:
    """An unquoted value that is code, not a literal: an attribute (``self.token``), a
    name behind a sigil (``$pw``, ``@token``, ``&str``, ``:password``), or a call,
    subscript, generic type or object whose bracket closes on the line or is the
    line's last character (``get_pw()``, ``tokens[0]``, ``Option<String>``,
    ``{"type": …}``, ``create_token(`` before its arguments' lines). ``rest``: the
    line from the value on (the value alone when empty). ``Y(W~;m`` is a literal:
    its bracket never closes."""
    global _NAME_ONLY, _CALL_HEAD
    if _NAME_ONLY is None or _CALL_HEAD is None:
        ident = r"[A-Za-z_][\w$]*"
        chain = rf"{ident}(?:(?:\.|\?\.|->|::){ident})"
        sigil = r"(?:@@?|\$\$?|&|\*\*?|!|:)"  # @ivar @@cvar $var $$var &ref *ptr !x :sym
        _NAME_ONLY = re.compile(rf"(?:{sigil}(?:mut[ \t]+)?{ident}|{chain}+)[?!]?[,;]?")
        _CALL_HEAD = re.compile(rf"(?:{sigil}?{chain}*[ \t]*)?([(\[{{<])")
    if _NAME_ONLY.fullmatch(token):
        return True
    line = (rest or token).rstrip()
    head = _CALL_HEAD.match(line)
    if head is None or (head.start(1) == 0 and head.group(1) == "<"):
        return False
    name = line[: head.start(1)]
    if name[-1:].isspace() and not _spaced_call_name(name.strip()):
        return False  # "X (prod only)", "X [rotated]": a value, then a note
    return _closes(line, head.start(1))


# A dotted name's part ending in 4 or more digits ("saturn5051"): no attribute is named so
# (``sha256``, ``x509``, ``int64`` have fewer), a made-up password is.
_NUMBERED_PART = re.compile(r"(?:^|\.)[A-Za-z]+\d{4,}(?=\.|$)")


def numbered_chain(token: str) -> bool:
    """A value shaped like an attribute (``Cricket.saturn5051``) with a part of letters
    then 4+ digits: a password of words and a number, not code."""
    return "." in token and _NUMBERED_PART.search(token) is not None


def _spaced_call_name(name: str) -> bool:
    """A name a blank may part from its call's bracket (``get_password (user)``,
    ``self.fetch (key)``): a word, or a name behind a sigil or with an attribute. A
    random-looking run (``TBvtK17QsyBf (prod only)``) is a value and its note."""
    return is_word(name.lstrip("@$&*!:")) or any(sep in name for sep in (".", "->", "::"))


def _closes(line: str, i: int) -> bool:
    """The bracket at ``line[i]`` is closed later on the line (quoted strings skipped),
    or the line ends open (an opener, a comma: the call goes on next line)."""
    if line.endswith((",", "(", "[", "{", "\\")):
        return True
    stack = [_PAIRS[line[i]]]
    j = i + 1
    n = len(line)
    while j < n:
        c = line[j]
        if c in "\"'`":
            end = line.find(c, j + 1)
            if end < 0:
                return False
            j = end + 1
            continue
        if c in _PAIRS and c != "<":
            stack.append(_PAIRS[c])
        elif c == stack[-1]:
            stack.pop()
            if not stack:
                return True
        j += 1
    return False


def is_word(token: str) -> bool:
    """Letters and ``_`` only: a variable in code, a literal in a config line. Long
    mixed-case runs (24+ letters, no ``_``) and scrambled ones (:func:`scrambled_case`)
    are generated keys, not words."""
    if re.fullmatch(r"[A-Za-z_]+", token) is None:
        return False
    generated = len(token) >= 24 and "_" not in token and not token.islower()
    return not (generated or scrambled_case(token))


# A name's humps are a capital (or an acronym's) and then lower-case letters: a lone
# lower-case letter between two capitals ("CiK") is rare in one and common in a
# generated password of letters (nTCiKHgRPrCXHw has three).
_LONE_LOWER = re.compile(r"(?<=[A-Z])[a-z](?=[A-Z])")
SCRAMBLED_MIN_CHARS = 10


def scrambled_case(token: str) -> bool:
    """Letters whose case changes as no identifier's does: SCRAMBLED_MIN_CHARS or more,
    with two or more lone lower-case letters between capitals."""
    return len(token) >= SCRAMBLED_MIN_CHARS and len(_LONE_LOWER.findall(token)) >= 2


def is_type_name(token: str, key_word: str) -> bool:
    """``SecretStr``, ``SessionToken``, ``Token`` (under ``token:``): a type annotation."""
    if token.lower() in LITERALS:
        return True
    if not token[:1].isupper():
        return False
    humps = sum(c.isupper() for c in token[1:])
    return humps >= 1 or token.lower() == key_word.lower()


def is_pin(token: str) -> bool:
    """4 to 8 digits: a PIN or a one-time code (under ``pin`` or ``otp``)."""
    return 4 <= len(token) <= 8 and token.isascii() and token.isdigit()


def is_small_number(token: str) -> bool:
    """A port, count or length, not a PIN-like secret (six digits and more are)."""
    return token.isdigit() and len(token) < 6


# A price ("€62", "£1.70", "¥2,800", "US$30", "$55/month", "25 USD") or a decimal
# ("0.01", "12.5%"): what "Monthly pass: $55" or "pass: 0.01 s" hold, no password.
_AMOUNT = re.compile(
    r"(?:[A-Z]{0,3}[$€£¥₹₩₽])\d{1,3}(?:,\d{3})*(?:\.\d{1,2})?(?:/[A-Za-z]+)?"
    r"|\d+\.\d+%?|\d+%"
    r"|\d{1,3}(?:,\d{3})*(?:\.\d{1,2})?(?:USD|EUR|GBP|JPY|CAD|AUD|CHF|CNY|INR)"
)


def is_amount(token: str) -> bool:
    """A price or a decimal number: a quantity, not a secret."""
    return _AMOUNT.fullmatch(token) is not None


# Where a secret is kept, not the secret: an absolute path of two or more parts, a
# path from ".", ".." or "~", a Windows path; Docker's "host:container[:ro]" of two.
_PATH = r"(?:(?:~|\.{1,2})?(?:/[\w.\-]+){2,}|(?:~|\.{1,2})(?:/[\w.\-]+)+|[A-Za-z]:\\[\w.\-\\]+)/?"
_FILE_PATH = re.compile(rf"{_PATH}(?::{_PATH})?(?::(?:ro|rw|z|Z))?")


# Sentry's DSN (https://<public key>@o1.ingest.sentry.io/2) is public by design: the
# browser SDK ships it in page code, and it only lets one send events. A DSN holding
# the legacy secret (https://<key>:<secret>@…) is not, and stays masked; so does a
# self-hosted one, which nothing tells from another service's key in a URL. The DSN
# ends the URL: a path after the project number is no DSN, a full stop ends a sentence.
_SENTRY_DSN = re.compile(
    r"https?://(?P<key>[0-9a-fA-F]{32})@(?:[\w\-]+\.)*sentry\.io/\d+/?(?![\w/]|\.[\w/])"
)


# What may follow a value to the end of its line, masked with it: the punctuation that
# ends a sentence or closes a bracket or quote ("set SENTRY_DSN=https://…/2."), blanks,
# a comment. Nothing of a secret: a legacy secret sits inside the URL, before the "@".
_DSN_TAIL = re.compile(r"[.,;:!?)\]'\"]*(?:[ \t]+#.*)?[ \t]*")


def public_dsn_at(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, a span a rule would mask, is a Sentry DSN with its
    public key only (closing punctuation or a comment after it aside), or that key (a
    URL's user): never a secret, whatever rule found it."""
    for opening in (start, start - len("https://"), start - len("http://")):
        if opening < 0 or not text.startswith("http", opening):
            continue
        found = _SENTRY_DSN.match(text, opening)
        if found is None:
            continue
        if found.start() == start and _DSN_TAIL.fullmatch(text, found.end(), end):
            return True
        if (found.start("key"), found.end("key")) == (start, end):
            return True
    return False


def is_file_path(token: str) -> bool:
    """A path to a file or folder (``/run/secrets/db.json``, ``~/.aws/credentials``,
    ``./credentials:/etc/creds``): a key such as GOOGLE_APPLICATION_CREDENTIALS names
    where its secret is."""
    return _FILE_PATH.fullmatch(token) is not None


# ---------------------------------------------------------------- entropy


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    import math
    from collections import Counter

    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def mixed_token(token: str, least: int) -> bool:
    """Whether ``token`` has at least ``least`` characters mixing a capital after its
    first, a small letter and a digit (``Zq8plmn77xKw``): no word is written so."""
    return (
        len(token) >= least
        and any(c.isupper() for c in token[1:])
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
    )


def high_entropy(value: str) -> bool:
    """A long random-looking value (generated key), not a word, UUID or template.

    Percent escapes are read as the characters they stand for: a key in a URL's
    query (``sig=Zx9…%2BDc%3D``) is as random as the key itself.
    """
    s = value.strip()
    if "%" in s:
        s = re.sub(r"%[0-9A-Fa-f]{2}", lambda m: chr(int(m.group()[1:], 16)), s)
    if len(s) < 16 or is_placeholder(s) or publishable_key(s):
        return False
    if not re.fullmatch(r"[A-Za-z0-9+/=_\-.~:]+", s):
        return False
    if re.fullmatch(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", s):
        return False  # a UUID is an identifier
    # ASCII by now: a letter changes case when there is one (C-speed, not a loop).
    lower, upper = s != s.upper(), s != s.lower()
    digit = re.search(r"\d", s) is not None
    if lower and upper and digit:
        # A random alphanumeric string of 16+ chars has all three.
        return _random(s, 62)
    # Two-class alphabets that generated keys use: hex (32+), base32 (16+), and
    # base36 (20+) when letters and digits alternate as chance has them do.
    # Anything else with two classes is usually structured: "user:1234:profile",
    # "release20240101final".
    if re.fullmatch(r"[0-9a-f]{32,}|[0-9A-F]{32,}", s):
        return _random(s, 16)
    if re.fullmatch(r"[A-Z2-7]{16,}=*", s) and digit:
        return _random(s, 32)
    if re.fullmatch(r"[a-z0-9]{20,}|[A-Z0-9]{20,}", s) and digit:
        return _alternations(s) >= len(s) // 5 and _random(s, 36)
    return False


_UUID_SHAPE = r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"
_PREFIXED_UUID = r"[A-Za-z][A-Za-z0-9]{1,15}[-_]" + _UUID_SHAPE


def prefixed_uuid(value: str) -> bool:
    """A UUID after a short kind and "-" or "_" (``sdk-<uuid>``, ``svc_<uuid>``): how
    several vendors spell their keys; a bare UUID is an identifier (:func:`high_entropy`)."""
    return re.fullmatch(_PREFIXED_UUID, value.strip()) is not None


def _random(value: str, alphabet: int) -> bool:
    """``value`` shows the entropy a random string of its alphabet would, and is not a
    name made of words (checked second: it costs more)."""
    return entropy(value) >= entropy_floor(len(value), alphabet) and not _made_of_words(value)


# Bits per character below the most a string can show: a random one reaches it.
ENTROPY_MARGIN = 0.8
# The floor for long strings of large alphabets: below it, a value repeats itself.
ENTROPY_CEILING = 3.5


def entropy_floor(length: int, alphabet: int) -> float:
    """The entropy a random string of ``length`` characters from ``alphabet`` nearly
    always shows (fails ~1 in 200 or fewer): ENTROPY_MARGIN below the most it can show,
    log2 of the distinct characters it can hold, and never above ENTROPY_CEILING.
    32 hex digits show at most 4 bits a character (3.2 is asked, not 3.5, which one
    random key in five missed); 16 alphanumerics at most 4 (3.2)."""
    import math

    return min(ENTROPY_CEILING, math.log2(min(length, alphabet)) - ENTROPY_MARGIN)


def _alternations(value: str) -> int:
    """How often a digit follows a letter or a letter a digit in ``value``."""
    from itertools import pairwise

    return sum(a.isdigit() != b.isdigit() for a, b in pairwise(value))


def _made_of_words(value: str) -> bool:
    """A name built from words (``Phoenix.Token.get_endpoint_key_base/1``), not a key:
    most of its characters are in parts that are words (lower, Capitalized, UPPER)."""
    parts = re.split(r"[._/\-:~+=]", value)
    wordy = sum(
        len(p) for p in parts if len(p) >= 3 and re.fullmatch(r"(?:[A-Z]?[a-z]+)+|[A-Z]+", p)
    )
    return wordy >= 0.7 * len(value) or _dotted_words(value)


_DOTTED_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"


def _dotted_words(value: str) -> bool:
    """A dotted path of names made of words, a digit among them allowed
    (``django.contrib.auth.hashers.Argon2PasswordHasher``): an import path, not a key.
    Most of its characters are in words of three letters or more (camel case split)."""
    if re.fullmatch(_DOTTED_NAME, value) is None:
        return False
    wordy = sum(len(w) for w in re.findall(r"[A-Z][a-z]{2,}|[a-z]{3,}|[A-Z]{3,}(?![a-z])", value))
    return wordy >= 0.7 * (len(value) - value.count("."))


# What a sentence says a secret *is* ("the password is 'incorrect'"), not the secret.
STATE_WORDS = frozenset(
    (
        "invalid", "incorrect", "wrong", "correct", "valid", "required", "missing", "empty",
        "blank", "expired", "revoked", "set", "unset", "changed", "hidden", "masked",
        "redacted", "secret", "unknown", "weak", "strong", "same", "different", "ok", "fine",
        "long", "short", "stored", "saved", "encrypted", "hashed",
    )
)  # fmt: skip


def quoted_secret(token: str) -> bool:
    """A word in quotes after "the password is" is the password ("sunshine"), unless it
    says what the password is (STATE_WORDS), stands for one, is too short to be one or
    is a name (``rate_per_minute``)."""
    return (
        len(token) >= 4
        and token.isalpha()  # a word: "rate_per_minute" or "x.y" is a name
        and token.lower() not in STATE_WORDS
        and token.lower() not in LITERALS
        and not is_placeholder(token)
    )


def quoted_passphrase(token: str) -> bool:
    """A quoted word or words joined by ``-`` that a sentence gives as a password ("use
    'cinnamon-toast-crunch' as the passphrase"): :func:`quoted_secret` of its letters."""
    parts = token.split("-")
    return all(parts) and quoted_secret("".join(parts))


# The least length of a password of letters alone that a sentence names: longer than
# nearly every English word ("correcthorsebatterystaple", words run together).
PASSPHRASE_LETTERS = 16


def letters_passphrase(token: str) -> bool:
    """A password of ASCII letters alone, too long to be a word (PASSPHRASE_LETTERS)."""
    return len(token) >= PASSPHRASE_LETTERS and token.isascii() and token.isalpha()


def prose_secret(token: str) -> bool:
    """The word after "password is" / "token:" in a sentence is a secret when it cannot
    be an English word or a name: it has a digit, a symbol (not ``_ ' -``) or inner
    capitals ("Tr0ub4dor&3"), and is not a placeholder. "the password is wrong" and
    "the key is rate_per_minute" stay."""
    if len(token) < 4 or is_placeholder(token) or token.lower() in LITERALS:
        return False
    if is_file_path(token) or is_amount(token):
        return False
    if token.isdigit():
        return len(token) >= 6
    if any(c.isdigit() for c in token):
        return True
    if any(not (c.isalpha() or c in "'-_") for c in token):
        return not re.fullmatch(r"[A-Za-z]+(?:[./][A-Za-z]+)+", token)  # a path or a.b
    return any(c.isupper() for c in token[1:]) and not token.isupper()
