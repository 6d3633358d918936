"""Secret forms of the seventh blind probe: rules the main table of
:mod:`memlane.secret_rules` runs near its end (``TABLE``: before the lone AWS secret and a
wrapped token's tail; ``EARLY_TABLE``: before the word and prose rules), each with its
gate in :data:`memlane.secret_gates.FORM_GATES` (``EARLY_FORM_GATES``).

* **Recovery codes**: the codes right after "backup/recovery/emergency codes" or a
  "recovery key" (BitLocker, FileVault, Apple ID), one after another; and a list or a
  table column of four or more dashed codes of one shape (``k3m9x-qwzpt``) with no
  heading at all.
* **Passphrases of plain words** after "passphrase … is" / "passphrase:" (and "seed
  words", "the wifi password is"): every word to the clause's end, when none is a word
  of a sentence (:func:`memlane.secret_words.passphrase`).
* **Tools' positional passwords**: an argv list's ``"-pX"`` after ``mysql``, a list's
  password option and the element after it (``"--requirepass", "X"``), ``ipmitool -P``,
  expect's ``send "X\\r"`` after a password prompt, a password option read from
  ``<(echo X)``, ``keyring set … <<< 'X'``, httpie's ``-a user:X``, ``codecov -t``,
  ``cloudflared service install TOKEN``, ``client.auth("user", "X")``, OpenSSL's
  ``Enter PEM pass phrase: X`` prompt, Cisco's ``password 0 X`` and ``key-string X``,
  Junos's ``plain-text-password-value X``, ``chpasswd <<< 'user:X'``, a CSV line
  ``SMTP_PASSWORD,X``.
* **Prose**: "use password X for", "creds are U and X", "pass for … → X", a door code
  or a safe's combination, a network's key; a session cookie after "Cookie".
* **Lines of a format**: a ``.pgpass`` line (``host:port:db:user:X``), a pwdump line's
  NT hash, a ``Key: …/password`` / ``Value: X`` pair, a browser cookie export's
  ``"value"``, env names that hold a secret without a secret word (``PGPASS``,
  ``STRIPE_SK``, ``PEPPER``, ``VAULT_UNSEAL``, ``*_PRIVATE``, ``OP_SESSION_*``).
* **Wallet keys**: a 64-hex key in hardhat's ``accounts``, a Solana keypair's 64-byte
  array, a Bitcoin WIF key (its base58check checksum confirms it).
* **Webhook URLs** of Zapier and Mattermost; a query's ``sig=`` (Azure SAS).
* **A masked token's continuation**: a marker followed by more token characters after a
  percent escape (a query value cut at ``%2F``) or after ``<br>`` (a table cell wrapped);
  its rest on the next line is secret_rules' wrapped-tail rule.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from memlane import secret_gates as g
from memlane import secret_values as sv
from memlane import secret_words as sw

if TYPE_CHECKING:
    from collections.abc import Callable

    Span = tuple[int, int, str]
    Picker = Callable[[str, "re.Match[str]", str], "Span | list[Span] | None"]

REDACTED_PREFIX = g.REDACTED_PREFIX

# ------------------------------------------------------------------ recovery codes

# How far after "backup codes" its codes may be: the paragraph, at most this many chars.
RECOVERY_REACH = 1200
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
# Codes after "codes" or "keys": a list has two at least (one key after "recovery key").
MIN_CODES = 2
# Words between "backup codes" and the first code ("for the admin google account"): at most.
FILLER_WORDS = 8


def recovery_code(token: str) -> bool:
    """Whether ``token`` reads as a recovery code, not a word or a name: dashed groups of
    3 to 8 letters or digits (each group 4+ long, or a digit in it: ``K3PQ-7ZX2``, not
    ``two-factor``); 6 to 12 digits; or 8+ letters and digits of one case with two digits
    or none (``Q4821ZX07K``, ``PLMQWERTYU``, not ``1Password`` or ``YubiKey5``)."""
    if "-" in token:
        groups = token.split("-")
        return (
            2 <= len(groups) <= 10
            and all(3 <= len(p) <= 8 for p in groups)
            and (
                any(c.isdigit() for c in token)
                or (all(len(p) >= 4 for p in groups) and len({len(p) for p in groups}) == 1)
            )
            and (token == token.upper() or token == token.lower())
        )
    if token.isdigit():
        return 6 <= len(token) <= 12
    digits = sum(c.isdigit() for c in token)
    one_case = token == token.upper() or token == token.lower()
    if not one_case or len(token) < 8 or len(token) > 24:
        return False
    return digits >= 2 or (digits == 0 and token.isupper())


def _pick_recovery_codes(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """The codes (:func:`recovery_code`) right after "backup codes" / "recovery key":
    at most FILLER_WORDS words before the first ("for the admin account:"), then one
    after another, list numbers between them, up to the first other word or a blank
    line; after a plural, MIN_CODES of them. A word in backticks is an example."""
    start = m.end()
    end = min(len(text), start + RECOVERY_REACH)
    blank = _PARAGRAPH_END.search(text, start, end)
    if blank is not None:
        end = blank.start()
    spans: list[Span] = []
    filler = 0
    for t in _TOKEN.finditer(text, start, end):
        word = t.group()
        before, after = text[t.start() - 1 : t.start()], text[t.end() : t.end() + 1]
        glued = before in ("_", "`", "[") or after in ("_", "`")
        code = not glued and recovery_code(word)
        if code:
            spans.append((t.start(), t.end(), kind))
        elif spans and word.isdigit() and len(word) <= 2:
            continue  # "2." of a numbered list
        elif spans or filler >= FILLER_WORDS:
            break
        else:
            filler += 1
    if m.group().lower().endswith("s") and len(spans) < MIN_CODES:
        return None  # "recovery codes:" then one code-like word is no list of them
    return spans or None


# A list of dashed codes with no heading (a table's column, a pasted list): this many.
MIN_LISTED_CODES = 4
# Codes with a digit among them (a random code of 10 letters and digits has one 96% of
# the time; words joined by dashes have none).
MIN_CODES_WITH_DIGITS = 2


def _pick_code_list(text: str, m: re.Match[str], kind: str) -> list[Span] | None:
    """Four or more dashed codes of one shape in a row (``xxxxx-xxxxx``), only list
    numbers, table bars and punctuation between them, two with a digit."""
    codes = list(_LISTED_CODE.finditer(m.group()))
    shapes = {tuple(len(p) for p in c.group().split("-")) for c in codes}
    if len(codes) < MIN_LISTED_CODES or len(shapes) != 1:
        return None
    if sum(any(c.isdigit() for c in code.group()) for code in codes) < MIN_CODES_WITH_DIGITS:
        return None  # kebab-case words ("build-tools, react-hooks…")
    return [(m.start() + c.start(), m.start() + c.end(), kind) for c in codes]


_CODE = r"(?<![\w-])(?:[a-z0-9]{4,6}-[a-z0-9]{4,6}|[A-Z0-9]{4,6}-[A-Z0-9]{4,6})(?![\w-])"
_LISTED_CODE = re.compile(_CODE)
_CODE_GAP = r"(?:[ \t,;|.)#]|\r?\n|(?<![\w-])\d{1,2}(?=[.)| \t])){1,16}"

# ----------------------------------------------------------------------- passphrases

# The passphrase's words: letters and digits, blanks or dashes between them; its end.
_PHRASE = re.compile(r"[ \t]*([\"'“]?)([A-Za-z0-9]+(?:[ \t-]+[A-Za-z0-9]+){2,7})")
_PHRASE_END = re.compile(r"[ \t]*(?:[\"'”.,;!?)]|—|–|-[ \t]|\r?\n|$)")


def _pick_passphrase_words(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The words after "passphrase … is" up to the clause's end, when they are a
    passphrase of plain words (no word of a sentence)."""
    line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
    if line.count("`") % 2:
        return None  # an example in inline code ("`passphrase: mossy granite …`")
    found = _PHRASE.match(text, m.end())
    if found is None or _PHRASE_END.match(text, found.end()) is None:
        return None
    words = found.group(2)
    if not sw.passphrase(words.replace("-", " ")):
        return None
    if found.group(1) and text[found.end() : found.end() + 1] not in ("\"'”"):
        return None
    return found.start(2), found.end(2), kind


# ------------------------------------------------------------------ one value each


def _pick_v(text: str, m: re.Match[str], kind: str) -> Span | None:
    """Group ``v``, unless it is a placeholder, a reference or a masked marker."""
    v = m.group("v")
    if not any(c.isalnum() for c in v) or REDACTED_PREFIX in m.group():
        return None
    if v.startswith(("$", "%", "{{", "<")):
        return None
    if sv.is_placeholder(v.strip("\"'")):
        return None
    return m.start("v"), m.end("v"), kind


def _pick_v_secret(text: str, m: re.Match[str], kind: str) -> Span | None:
    """Group ``v`` when it cannot be a word (a digit, a symbol, inner capitals) or is
    random-looking."""
    v = m.group("v")
    if not (sv.prose_secret(v) or sv.high_entropy(v)):
        return None
    return _pick_v(text, m, kind)


def _pick_random(text: str, m: re.Match[str], kind: str) -> Span | None:
    """Group ``v`` when it looks random, its percent escapes left out (a signature's
    ``%2B``, or a stray ``%``): not ``hmac_sha256_of_body``."""
    plain = re.sub(r"%[0-9A-Fa-f]{0,2}", "", m.group("v"))
    return _pick_v(text, m, kind) if sv.high_entropy(plain) or _mixed(plain) else None


def _pick_not_port(text: str, m: re.Match[str], kind: str) -> Span | None:
    """Group ``v`` unless it is a port or a number (``"-p", "8080:80"``)."""
    if re.fullmatch(r"[\d.:\-]+(?:/(?:tcp|udp|sctp))?", m.group("v")):
        return None
    return _pick_v(text, m, kind)


# Programs whose short "-p" / "-P" takes a password; elsewhere it is a port (docker,
# ssh), "print" (tmux display-message -p "#{session_name}"), parents (mkdir)…
_PASSWORD_P_PROGRAMS = re.compile(r"[\"'/](?:sshpass|mysql\w*|mariadb\w*|mycli|ipmitool)[\"']")


def _pick_argv_password(text: str, m: re.Match[str], kind: str) -> Span | None:
    """An argv list's password option's value; a short ``-p`` / ``-P`` only in the list of
    a program whose ``-p`` takes one (same line)."""
    if m.group("o") in ("-p", "-P"):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not _PASSWORD_P_PROGRAMS.search(text, line_start, m.start()):
            return None
    return _pick_not_port(text, m, kind)


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58check(value: str) -> bool:
    """Whether ``value`` decodes from base58 with a valid 4-byte checksum."""
    number = 0
    for c in value:
        digit = _BASE58.find(c)
        if digit < 0:
            return False
        number = number * 58 + digit
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    if len(raw) < 5:
        return False
    body, check = raw[:-4], raw[-4:]
    return hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4] == check


def _pick_wif(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A Bitcoin private key in wallet import format, in a text that names one: "WIF"
    right before it, or its base58check checksum holds."""
    low = text.lower()
    if not any(word in low for word in sw.WIF_WORDS):
        return None
    named = "wif" in low[max(0, m.start() - 24) : m.start()]
    return (m.start(), m.end(), kind) if named or _base58check(m.group()) else None


def _pick_byte_array(text: str, m: re.Match[str], kind: str) -> Span | None:
    """A 64-byte array (a Solana keypair file): 64 numbers, each a byte, not all alike."""
    numbers = [int(n) for n in m.group("v").split(",")]
    if len(numbers) != 64 or max(numbers) > 255 or len(set(numbers)) < 16:
        return None
    return m.start("v"), m.end("v"), kind


def _pick_continuation(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The rest of a masked token after the marker (see the ``continued`` rules)."""
    v = m.group("v")
    if "<br" in m.group():
        return m.start("v"), m.end("v"), kind
    # A query value's rest after "%2F": "/20261207/us-east-1/s3/aws4_request" (a
    # credential's scope) is no token; what goes on random is.
    plain = re.sub(r"%[0-9A-Fa-f]{2}", "", v) if v.startswith("%") else v
    if not (sv.high_entropy(plain) or _mixed(plain)):
        return None
    return m.start("v"), m.end("v"), kind


def _mixed(token: str) -> bool:
    return sv.mixed_token(token, 12)


_PASSWORD_PROMPT = r"(?i:assword|passphrase|pass phrase|passcode)"  # noqa: S105 - a pattern

# An OpenSSH public key's type, written before its base64 body (which repeats it).
SSH_PUBLIC_TYPES = ("ssh-rsa", "ssh-dss", "ssh-ed25519", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-")


def ssh_public_body(text: str, start: int) -> bool:
    """Whether the value at ``start`` is an OpenSSH public key's body (``ssh-rsa AAAA…``):
    a public key is no secret, whatever the words before it ("deploy key: ssh-rsa …")."""
    if not text.startswith("AAAA", start):
        return False
    before = text[max(0, start - 48) : start].rstrip(" \t")
    word = before.rsplit(None, 1)[-1] if before.split() else ""
    return word.lower().startswith(SSH_PUBLIC_TYPES)


# Door, alarm and safe codes: the word before "code" or the owner after "code for".
_DOOR_WORDS = "(?:" + "|".join(sw.DOOR_WORDS) + ")"

# Rules that run before the prose rule (which would mask a quoted passphrase's first
# word alone): (rule id, kind, regex, span picker).
EARLY_TABLE: tuple[tuple[str, str, str, Picker | None], ...] = (
    (
        "passphrase-words",
        "passphrase",
        r"(?i:pass[ \-]?phrase|seed words|(?:wifi|wi-fi|wlan) password)"
        r"(?:[ \t]+(?i:for|of|to)(?:[ \t]+[\w.\-]+){1,5})?"
        r"(?:[ \t]+(?i:is|was|=)|[ \t]*:)",
        _pick_passphrase_words,
    ),
)
# (rule id, kind, regex, span picker), in the order they run.
TABLE: tuple[tuple[str, str, str, Picker | None], ...] = (
    (
        "recovery-codes",
        "recovery-code",
        "(?i:" + "|".join(map(re.escape, sw.RECOVERY_NAMES)) + r")s?\b",
        _pick_recovery_codes,
    ),
    ("code-list", "recovery-code", _CODE + rf"(?:{_CODE_GAP}{_CODE}){{3,64}}", _pick_code_list),
    (
        "use-password",
        "password",
        r"(?i:\b(?:use|try|using|with) (?:the )?(?:pass|pwd)(?:word|wd|code)?)"
        r"[ \t]+(?P<q>[\"'`]?)(?P<v>[^\s\"'`]{4,128})(?P=q)[ \t]+(?i:for|to|on|as|when|at)\b",
        _pick_v_secret,
    ),
    (
        "password-arrow",
        "password",
        r"(?m)^[ \t]*(?:[-*][ \t]+)?(?i:(?:the[ \t]+)?(?:pass(?:word|wd)?|pwd|pw|creds?))\b"
        r"[^\n]{0,60}?[ \t](?:→|->|=>|⇒)[ \t]*(?P<v>[^\s(]{6,128})[ \t]*$",
        _pick_v_secret,
    ),
    (
        "network-key",
        "password",
        r"\b(?i:" + "|".join(map(re.escape, sw.NETWORK_KEY_NAMES)) + r")"
        r"[ \t]*(?:(?i:is)[ \t]+|:[ \t]*)(?P<q>[\"'`]?)(?P<v>[^\s\"'`]{6,128})(?P=q)",
        _pick_v_secret,
    ),
    (
        "door-code",
        "pin",
        r"(?i:\b(?:"
        + _DOOR_WORDS
        + r"[ \t]+code|code[ \t]+(?:for|to|of)[ \t]+(?:[\w'\-]+[ \t]+){0,6}?"
        + _DOOR_WORDS
        + r"s?|combination))"
        r"[^\n:]{0,40}?(?::|[ \t](?i:is))[ \t]*(?P<v>\d[\d*#\-]{3,15})(?![\w])",
        _pick_v,
    ),
    (
        "argv-glued-password",
        "password",
        r"\b(?:mysql\w*|mariadb\w*|mycli)[\"']?[^\n]{0,200}?[\"']-p(?P<v>[^\"'\s]{3,128})[\"']",
        _pick_v,
    ),
    (
        "argv-password",
        "password",
        r"[\"'](?P<o>--requirepass|--masterauth|--password|--passwd|--pass|-p|-P|--token)"
        r"[\"'][ \t]*,[ \t]*[\"'](?P<v>[^\"'\n]{3,256})[\"']",
        _pick_argv_password,
    ),
    ("ipmitool", "password", r"\bipmitool\b[^\n|;&]{0,200}?[ \t]-P[ \t]+(?P<v>[^\s'\"]+)", _pick_v),
    (
        "expect-send",
        "password",
        _PASSWORD_PROMPT + r"[^\n]{0,80}?\bsend (?:-- )?\"(?P<v>[^\"\\\n]{1,128})"
        r"(?:\\r|\\n)?\"",
        _pick_v,
    ),
    (
        "process-substitution",
        "password",
        r"(?:pass\w*|-p)[ \t=]+<\([ \t]*(?:echo|printf)[ \t]+(?:-n[ \t]+)?"
        r"(?P<q>[\"']?)(?P<v>[^)\"'\s]{1,256})(?P=q)[ \t]*\)",
        _pick_v,
    ),
    (
        "keyring-herestring",
        "password",
        r"\b(?:keyring[ \t]+set|secret-tool[ \t]+store)\b[^\n|;&]{0,200}?<<<[ \t]*"
        r"(?P<q>[\"']?)(?P<v>[^\s\"']{1,256})(?P=q)",
        _pick_v,
    ),
    (
        "httpie-auth",
        "password",
        r"\bhttps? +(?:[^\n|;&]{0,200}? )?(?:-a|--auth)(?:[ \t]+|=)"
        r"(?P<q>[\"']?)[^\s:\"'@]{1,64}:(?P<v>[^\s\"']{1,256})(?P=q)",
        _pick_v,
    ),
    (
        "ci-upload-token",
        "token",
        r"\b(?:codecov|coveralls|codacy-coverage-reporter)\b[^\n|;&]{0,200}?[ \t]"
        r"(?:-t|--token)(?:[ \t]+|=)(?P<q>[\"']?)(?P<v>[^\s\"']{8,256})(?P=q)",
        _pick_v,
    ),
    (
        "cloudflared-token",
        "cloudflare-token",
        r"\bcloudflared\b[^\n|;&]{0,100}?(?:service[ \t]+install|--token)(?:[ \t]+|=)"
        r"(?P<v>[A-Za-z0-9+/_=.\-]{32,4096})",
        _pick_v,
    ),
    (
        "auth-call",
        "password",
        r"\.(?:auth|login|authenticate|basic_auth|set_auth)\([ \t]*[\"'][^\"'\n]{1,64}[\"']"
        r"[ \t]*,[ \t]*[\"'](?P<v>[^\"'\n]{4,256})[\"']",
        _pick_v_secret,
    ),
    (
        "pem-passphrase-prompt",
        "passphrase",
        r"(?i:enter)[ \t]+(?:[\w\-]+[ \t]+){0,3}(?i:pass[ \t]?phrase|password)[^:\n]{0,40}:"
        r"[ \t]*(?P<v>\S{4,256})",
        _pick_v_secret,
    ),
    (
        "creds-pair",
        "password",
        r"(?i:\b(?:creds|credentials|logins?)(?: are| is|:))[ \t]+"
        r"[\w.@\-]{1,64}(?:[ \t]+(?i:and)[ \t]+|[ \t]*,[ \t]*|[ \t]+/[ \t]+)"
        r"(?P<q>[\"'`]?)(?P<v>[^\s\"'`]{4,128})(?P=q)",
        _pick_v_secret,
    ),
    (
        "session-cookie",
        "cookie",
        r"(?i:cookie)[^\n]{0,200}?(?<![\w.\-])[\w\-]{0,32}(?i:sess|sid)[\w\-]{0,32}="
        r"(?P<v>[A-Za-z0-9%_\-+/=.]{20,4096})",
        _pick_v_secret,
    ),
    (
        "csv-secret",
        "password",
        r"(?m)^[ \t]*[\w.\-]{0,64}(?i:" + "|".join(sw.CSV_SECRET_NAMES) + r"),[ \t]*"
        r"(?P<q>[\"']?)(?P<v>[^,\s\"']{4,256})(?P=q)[ \t]*(?:,|\r?$)",
        _pick_v_secret,
    ),
    (
        "ios-password",
        "password",
        r"\b(?i:password|secret|key)[ \t][057][ \t]+(?P<v>[^\s`'\"]{4,256})(?![`'\"])",
        _pick_v_secret,
    ),
    (
        "chpasswd-herestring",
        "password",
        r"\bchpasswd\b[^\n|;&]{0,40}?<<<[ \t]*(?P<q>[\"']?)[^:\s\"']{1,64}:"
        r"(?P<v>[^\s\"']{1,256})(?P=q)",
        _pick_v,
    ),
    (
        "device-key-string",
        "password",
        r"(?<![\w\-])(?:key-string|plain-text-password-value|authentication-key)"
        r"[ \t]+(?:[0-7][ \t]+)?(?P<v>[^\s;]{4,256})",
        _pick_v,
    ),
    (
        "nt-hash",
        "password-hash",
        r"(?m)^[^:\s]{1,128}:\d{1,10}:[0-9a-fA-F]{32}:(?P<v>[0-9a-fA-F]{32}):(?=::|\[REDACTED:)",
        _pick_v,
    ),
    (
        "pgpass-line",
        "password",
        # PostgreSQL's usual ports (secret_words.PGPASS_PORTS, the gate's literals).
        r"(?m)^[ \t]*[^:\\\s]{1,256}+:(?:"
        + "|".join(map(re.escape, sw.PGPASS_PORTS))
        + r"):(?:\\.|[^:\\\s]){1,256}+:"
        r"(?:\\.|[^:\\\s]){1,256}+:(?P<v>[^\s:]\S{0,255})[ \t]*$",
        _pick_v,
    ),
    (
        "key-value-lines",
        "password",
        r"(?m)^[ \t]*(?i:key|name|parameter)[ \t]*:[ \t]*\S*"
        r"(?i:pass|pwd|secret|token|cred|private)\S*[ \t]*\r?\n"
        r"[ \t]*(?i:value):[ \t]*(?P<v>\S[^\n]{0,255}?)[ \t]*$",
        _pick_v,
    ),
    (
        "cookie-export",
        "cookie",
        r"\"domain\"[ \t]*:[ \t]*\"[^\"\n]{1,256}\"[^{}]{0,512}?\"value\"[ \t]*:[ \t]*"
        r"\"(?P<v>[^\"\n]{8,4096})\"",
        _pick_v,
    ),
    (
        "secret-env-name",
        "password",
        r"(?m)^[ \t]*(?:export[ \t]+)?(?:(?:[A-Z][A-Z0-9_]*)?(?:"
        + "|".join(sw.SECRET_ENV_ENDINGS)
        + r")|OP_SESSION_\w+)=(?P<q>[\"']?)(?P<v>[^\s\"']{8,4096})(?P=q)",
        _pick_v,
    ),
    (
        "hardhat-accounts",
        "private-key",
        r"\baccounts[\"']?[ \t]*:[ \t]*\[[ \t]*(?:[\"'](?P<v>(?:0x)?[0-9a-fA-F]{64})[\"'])",
        _pick_v,
    ),
    (
        "byte-array-key",
        "private-key",
        r"\[(?P<v>[ \t]*\d{1,3}(?:[ \t]*,[ \t]*\d{1,3}){63})[ \t]*\]",
        _pick_byte_array,
    ),
    (
        "wif",
        "private-key",
        r"(?<![A-Za-z0-9])[5KL][1-9A-HJ-NP-Za-km-z]{50,51}(?![A-Za-z0-9])",
        _pick_wif,
    ),
    (
        "webhook-url",
        "webhook",
        r"https://(?:hooks\.zapier\.com/hooks/catch/\d+/[A-Za-z0-9]+"
        r"|[\w.\-]+/hooks/[a-z0-9]{26}(?![A-Za-z0-9]))",
        None,
    ),
    (
        # An Azure SAS's or a signed URL's signature, whatever its escapes ("%2B", a
        # stray "%"): what a query rule reading it as one value leaves.
        "query-signature",
        "signature",
        r"[?&](?:sig|signature|Signature)=(?P<v>[A-Za-z0-9%+/=_\-]{16,1024})(?=[&#\s\"'<>]|$)",
        _pick_random,
    ),
    (
        "continued",
        "continued-token",
        r"\[REDACTED:[a-z0-9-]{1,40}\](?:<br\s*/?>|(?=%[0-9A-Fa-f]{2}))"
        r"(?P<v>[A-Za-z0-9+/_~.%\-]{6,4096}={0,2})",
        _pick_continuation,
    ),
)
