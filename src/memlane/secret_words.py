"""Secrets that no token format announces: one-time codes, seed phrases, passwords named
in other languages, card numbers.

Each is found by a word or a shape and confirmed by what follows or by a checksum,
with ``str`` methods only (this runs inside :func:`memlane.privacy.needs_scrub`, on
every prompt and transcript text):

* **one-time codes**: 4 to 8 digits (or ``493 817``) after a code word — ``pin``,
  ``otp``/``totp``/``hotp``, ``passcode``, ``code`` after a word that makes it a secret
  one (``verification``, ``one-time``, ``2FA``, ``login``, ``backup``…; ``exit code
  2`` and ``error code 1045`` are no secrets), ``cvv``/``cvc``/``csc`` (3 or 4 digits);
  between them only blanks, ``: = #``, a quote and up to two of ``is was are number
  no code``, or an owner in any language and a link ("die PIN für das Tor ist X"), or a
  few words without a digit and a link ("the code I got by SMS was X");
* **seed phrases**: 12 to 24 words of 3 to 8 letters (a BIP-39 mnemonic, any case)
  after ``seed``/``recovery``/``backup``/``wallet``/``secret``/``mnemonic`` +
  ``phrase`` or ``words``, or after ``mnemonic`` alone;
* **passwords by their shape**: a word mixing letters, digits and a symbol
  (``maple@5835@Falcon&``) among the eight words after a password word of any of
  these languages (or ``login``, ``creds``, ``secret``, ``unseal``), or the four before,
  on its line, however the sentence runs;
* **a table's secret column**: the cells under a ``password``/``secret``/``token``
  header of a CSV, a TSV or a table a command printed;
* **passwords in other languages**: the value after ``Passwort``, ``mot de passe``,
  ``contraseña``, ``пароль``, ``パスワード``, ``密码``… and ``:``/``=`` or a linking word
  (``ist``, ``est``, ``は``, ``是``…), which :mod:`memlane.secret_rules` judges as it
  judges English ones; in scripts without blanks the link may end a few characters of
  the sentence (``APIキーはこちら：X``), in Hindi and Persian a verb follows the value
  (``पासवर्ड X है``); English words count there too (``我的token是X``), and in English
  prose after "my" or as the last word after an owner (``password for the server X``);
* **pairs, resets, values below**: the second of "user / password" after ``login is``
  or ``wifi:``; X in "reset it to X" after a secret word; a value alone on the line
  after "the key is" or "the token:"; a Mailgun key without its prefix after
  ``mailgun``;
* **names and commands**: what a variable's or a file's name says it holds, which
  commands print a file, a variable or an app's config vars, and a dotenv file's name
  (:func:`is_env_file`), for the rules that mask what such a command printed;
* **card numbers**: 13 to 19 digits, bare or in groups of four (Amex and Diners
  4-6-5 and 4-6-4) split by one kind of separator, that pass the Luhn checksum and
  start as a card network's numbers do.

:mod:`memlane.secret_gates` asks these functions whether a text holds one;
:mod:`memlane.secret_rules` masks the spans they give.
"""

from __future__ import annotations

_ASCII_DIGITS = frozenset("0123456789")

# ---------------------------------------------------- words the other modules share

# English "is" and its kin between a secret word and its value ("the password is X").
LINKING_VERBS = ("is", "was", "are")
# Other languages' "is" that also follows an English secret word ("la password del
# server è X", "el token de acceso es X", "das Token lautet X").
FOREIGN_LINKING_VERBS = ("est", "ist", "é", "è", "är", "es", "lautet")
# A dash or an arrow between a secret word and its value ("db password - X", "new
# password → X"); "it's" after a question or a clause ("wifi password? it's X", "the
# password was reset, it's now X").
DASHES = ("-", "–", "—", "→", "->", "=>", "⇒")
ITS = ("it's", "it’s", "its")
# What links a secret word to its value in an English sentence, the prose rule's
# connectors ("is", "was:", "ist", "è:", "→", "it's"); a ":" or "=" ending a word links too
# after other words ("password for prod: X").
CONNECTORS = frozenset(
    (
        *LINKING_VERBS,
        *(verb + ":" for verb in (*LINKING_VERBS, *FOREIGN_LINKING_VERBS)),
        *FOREIGN_LINKING_VERBS,
        *DASHES,
        *ITS,
    )
)
# The least length of the word the prose rules take after a connector or an owner
# (secret_values.prose_secret, quoted_secret): "pass is x" holds no secret.
PROSE_VALUE_CHARS = 4
# English prepositions before a secret's owner ("password for the server X", "PIN for
# the HSM slot 0 is X").
ENGLISH_PREPOSITIONS = ("for", "of", "to")
# What continues a key's or a variable's name (folded) past one of its words.
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
# The English words a password's name or a prose word for one starts with ("password",
# "passphrase", "passwd", "pwd", "pw"): the prose rule reads letters alone after them.
PASSWORD_WORDS_EN = ("pass", "pwd", "pw")
# What a name holds when its value is a password or a secret, never a publishable key
# that starts like one (password=pk_live_…, STRIPE_SECRET=pk_…), and what a typing
# call's field must name ("pw" only where no letter follows: "pwd", not "pword").
PASSWORD_NAME_WORDS = (*PASSWORD_WORDS_EN, "secret", "cred")
# A word before "key" that makes it a public one (public_key, PublishableKey, "age pub key").
PUBLIC_WORDS = ("public", "publishable", "pub")

# ------------------------------------------------------------------ one-time codes

# Where a code word may start (lower case); "totp", "hotp" and "passcode" hold one.
CODE_ROOTS = ("code", "pin", "otp", "cvv", "cvc", "csc", "puk", "пин")
# A PIN (or a SIM's PUK) in any script, and the endings that make one word of it and
# "code" ("pincode", "PIN-Code", "ПИН-код").
_PIN_ROOTS = ("pin", "puk", "пин")
_PIN_CODE_SUFFIXES = ("code", "-code", "-kod", "kod", "-код", "код")
# Before "code", what makes it a secret (hyphens and blanks dropped: "one-time" → onetime).
CODE_QUALIFIERS = frozenset(
    (
        "verification", "verify", "security", "confirmation", "confirm", "onetime",
        "2fa", "mfa", "twofactor", "2step", "twostep", "login", "signin", "auth",
        "authentication", "sms", "access", "otp", "totp", "backup", "recovery",
        "reset", "activation", "unlock",
    )
)  # fmt: skip
_CODE_CONNECTORS = (*LINKING_VERBS, "number", "no.", "no", "code")
_CODE_FILLER = " \t:=#\"'`"
_SHORT_CODES = ("cvv", "cvc", "csc")  # a card's 3 or 4 digits


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def by_first(words: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """``words`` by their first character, in their order."""
    table: dict[str, tuple[str, ...]] = {}
    for word in words:
        table[word[0]] = (*table.get(word[0], ()), word)
    return table


def _word_at(low: str, i: int, table: dict[str, tuple[str, ...]]) -> str | None:
    """The first word of ``table`` (see :func:`by_first`) that ``low`` holds at ``i``."""
    return next((w for w in table.get(low[i : i + 1], ()) if low.startswith(w, i)), None)


def code_value_at(low: str, i: int) -> tuple[int, int] | None:
    """(start, end) of the code that the code word whose root (``CODE_ROOTS``) is at
    ``i`` in ``low`` (folded text) gives, or None."""
    root = next((r for r in CODE_ROOTS if low.startswith(r, i)), None)
    if root is None:
        return None
    start, end = i, i + len(root)
    if root == "code" and low[max(0, i - 4) : i] == "pass":
        start = i - 4
    elif root == "otp" and i > 0 and low[i - 1] in "th":
        start = i - 1
    elif root in _SHORT_CODES and low[end : end + 1] == "2":
        end += 1
    if start > 0 and _word_char(low[start - 1]):
        return None  # inside a word: "opcode", "spin", "hotpath"
    if root in _PIN_ROOTS:
        end += next((len(x) for x in _PIN_CODE_SUFFIXES if low.startswith(x, end)), 0)
    if root == "code" and low[end : end + 1] == "s":
        end += 1  # "backup codes: …"
    if end < len(low) and _word_char(low[end]):
        return None
    if root == "code" and start == i and not _qualified(low, i):
        return None
    span = _digits_after(low, end, short=root in _SHORT_CODES)
    if span is None and (root in _PIN_ROOTS or root == "code"):
        span = _digits_after_owner(low, end)
    if root != "code" or low[end - 1] != "s":
        return span
    if span is not None:
        return _code_list(low, span)  # "backup codes: 1234 5678, 9012 3456"
    listed = _dashed_codes(low, end)  # "recovery codes:" then bhrt-a8xz, 5f2c1-9e0ab…
    below = _below_heading(low, end) if listed is None else None
    if below is not None:
        # "GitHub recovery codes (keep safe):" then one code a line
        listed = _dashed_codes(low, below)
        first = _code(low, below, short=False) if listed is None else None
        if first is not None:
            listed = _code_list(low, (below, first))
    return listed


def _code_list(low: str, span: tuple[int, int]) -> tuple[int, int]:
    """``span`` (a code) stretched over the codes that follow it in a list."""
    while True:
        k = span[1]
        while k < len(low) and k - span[1] < 3 and low[k] in " ,\t\r\n":
            k += 1
        more = _code(low, k, short=False) if k > span[1] else None
        if more is None:
            return span
        span = (span[0], more)


# How long the rest of a heading line ("recovery codes (keep them safe):") may be.
_HEADING_REST = 80


def _below_heading(low: str, j: int) -> int | None:
    """Where the next line starts when the rest of the line from ``j`` is a heading's
    end: short, without digits (no code of its own)."""
    end = low.find("\n", j, j + _HEADING_REST)
    if end < 0 or any(c in _ASCII_DIGITS for c in low[j:end]):
        return None
    return end + 1


# A recovery code of letters and digits: two groups of 4 to 6 joined by a dash
# (GitHub's 5f2c1-9e0ab, bhrt-a8xz); a list needs MIN_DASHED_CODES of them in a row.
MIN_DASHED_CODES = 2
_DASHED_GROUP = (4, 6)
_LIST_GAP = " ,;\t\r\n"


def _dashed_codes(low: str, j: int) -> tuple[int, int] | None:
    """The span of the list of dashed codes after "recovery codes" (at ``j``: after
    blanks, ``:`` and line breaks), or None when fewer than MIN_DASHED_CODES follow."""
    n = len(low)
    k = j
    while k < n and k - j < 8 and low[k] in " \t:=\r\n":
        k += 1
    first, last, count = k, k, 0
    while count < 64:
        end = _dashed_code(low, k)
        if end is None:
            break
        last, count = end, count + 1
        k = end
        gap = k
        while k < n and k - gap < 4 and low[k] in _LIST_GAP:
            k += 1
    return (first, last) if count >= MIN_DASHED_CODES else None


def _dashed_code(low: str, k: int) -> int | None:
    """Where the dashed code starting at ``k`` ends (``bhrt-a8xz``), or None."""
    ends = []
    for _ in range(2):
        start = k
        while (
            k < len(low)
            and k - start <= _DASHED_GROUP[1]
            and (low[k] in _ASCII_DIGITS or "a" <= low[k] <= "z")
        ):
            k += 1
        if not _DASHED_GROUP[0] <= k - start <= _DASHED_GROUP[1]:
            return None
        ends.append(k)
        if len(ends) == 1:
            if low[k : k + 1] != "-":
                return None
            k += 1
    after = low[k : k + 1]
    return None if after and (_word_char(after) or after == "-") else k


def _qualified(low: str, i: int) -> bool:
    """Whether the word (or two) before ``code`` at ``i`` is in CODE_QUALIFIERS."""
    words: list[str] = []
    k = i
    for _ in range(2):
        gap = k
        while k > 0 and low[k - 1] in " \t-":
            k -= 1
        if k == gap or k == 0:
            break
        end = k
        while k > 0 and low[k - 1].isalnum():
            k -= 1
        words.insert(0, low[k:end])
        if "".join(words) in CODE_QUALIFIERS:
            return True
    return False


def _digits_after(low: str, j: int, *, short: bool) -> tuple[int, int] | None:
    n = len(low)
    k = j
    for _ in range(3):  # fillers, then up to two connector words
        while k < n and low[k] in _CODE_FILLER:
            k += 1
        word = next(
            (
                w
                for w in _CODE_CONNECTORS
                if low.startswith(w, k) and not _word_char(low[k + len(w) : k + len(w) + 1] or " ")
            ),
            None,
        )
        if word is None:
            break
        k += len(word)
    end = _code(low, k, short=short)
    return (k, end) if end is not None else None


_PIN_OWNER_WORDS = 6
# A few words without a preposition before the link ("Mi PIN nuevo es X", "the
# verification code I got by SMS was X"): none may hold a digit ("pin 17 is 3300").
# A word naming a measure of the pins, not their code ("the pin count is 2048").
_MEASURES = frozenset(("count", "number", "size", "length", "width", "height", "limit"))
# What links a PIN (after its owner) to its code: a linking verb, a dash or an arrow, "=".
_CODE_LINKS = frozenset((*LINKING_VERBS, *FOREIGN_LINKING_VERBS, *DASHES, "="))


def _digits_after_owner(low: str, j: int) -> tuple[int, int] | None:
    """The code after "PIN for <owner>" and "is", "was", "=" or a word ending in ":"
    (or with no link, ending its line: "ПИН-код от карты X"), or after a few words
    without a digit and such a link ("PIN nuevo es X"). A password's owner
    (:func:`_unlinked_start`) has no link: its value ends the line."""
    line, whole = _line_after(low, j)
    words = blank_words(line, _PIN_OWNER_WORDS + 2)
    if not words:
        return None
    owned = words[0][1] in _PIN_PREPOSITIONS
    for index, (offset, word) in enumerate(words):
        if word in _CODE_LINKS or (index and word.endswith(":")):
            if owned:
                return _digits_after(low, j + offset + len(word), short=False)
            if words[index - 1][1] in _MEASURES:
                return None
            span = _digits_after(low, j + offset + len(word), short=False)
            return span if span is not None and _blank_or_stop_at(low, span[1]) else None
        if owned and index > 1 and index == len(words) - 1 and whole:
            end = _code(low, j + offset, short=False)
            return (j + offset, end) if end is not None and _ends_sentence(low, end) else None
        if word[-1] in ".!?,;" or (not owned and any(c in _ASCII_DIGITS for c in word)):
            return None
    return None


def _blank_or_stop_at(low: str, k: int) -> bool:
    """Whether the code ending at ``k`` ends its clause by what the next two characters
    hold: nothing but blanks, or a punctuation mark then a blank or nothing ("PIN nuevo
    es 6240, no…"; not "the PIN field was 2024 pixels wide"). Compare
    :func:`memlane.secret_rules._word_ends_clause`, which reads the rest of the line."""
    after = low[k : k + 2]
    return not after.strip() or (after[0] in ".,;!?)" and not after[1:].strip())


def _ends_sentence(low: str, k: int) -> bool:
    """Nothing but a full stop and blanks after ``k`` on its line."""
    line_end = low.find("\n", k)
    return not low[k : len(low) if line_end < 0 else line_end].strip(" \t\r.")


def _line_after(low: str, k: int) -> tuple[str, bool]:
    """The rest of ``k``'s line, SHAPE_REACH characters at most (where an owner's words
    are read), and whether that is all of it."""
    line_end = low.find("\n", k, k + SHAPE_REACH)
    if line_end >= 0:
        return low[k:line_end], True
    return low[k : k + SHAPE_REACH], k + SHAPE_REACH >= len(low)


_CODE_GROUPS = 4  # at most, in a code written in dashed groups


def _dashed_group(low: str, k: int, size: int) -> bool:
    """Whether a "-" then a group of ``size`` digits (no more) is at ``k``."""
    group = low[k + 1 : k + 2 + size]
    return (
        low[k : k + 1] == "-"
        and len(group) >= size
        and all(c in _ASCII_DIGITS for c in group[:size])
        and group[size:] not in _ASCII_DIGITS
    )


def _code(low: str, k: int, *, short: bool) -> int | None:
    """Where the code of digits starting at ``k`` ends, or None when none starts there."""
    n = len(low)
    start = k
    while k < n and low[k] in _ASCII_DIGITS:
        k += 1
    count = k - start
    grouped = not short and count in (3, 4) and _dashed_group(low, k, count)
    if grouped:
        # "493-817", "4711-0815", "4711-0815-2231": groups of one length, a date's are not
        for _ in range(_CODE_GROUPS - 1):
            if not _dashed_group(low, k, count):
                break
            k += 1 + count
    elif count == 3 and not short and low[k : k + 1] == " ":
        rest = low[k + 1 : k + 4]
        if len(rest) == 3 and all(c in _ASCII_DIGITS for c in rest):
            k += 4
            count = 6
    if not (grouped or (3 <= count <= 4 if short else 4 <= count <= 8)):
        return None
    after = low[k : k + 1]
    decimal = after == "." and low[k + 1 : k + 2] in _ASCII_DIGITS
    if after and (_word_char(after) or after == "-" or decimal):
        return None  # a version, a date, a longer number
    return k


# ------------------------------------------------------------------- seed phrases

SEED_WORDS = (12, 24)
_SEED_QUALIFIERS = ("seed", "recovery", "backup", "wallet", "secret", "mnemonic")
SEED_ROOTS = ("phrase", "words", "mnemonic")
_SEED_QUALIFIER_REACH = 60  # characters of "for the test wallet" before a colon


def seed_words_at(low: str, i: int) -> tuple[int, int] | None:
    """(start, end) of the 12 to 24 mnemonic words after the seed-phrase name whose
    root (``SEED_ROOTS``) is at ``i`` in ``low``, or None."""
    root = next((r for r in SEED_ROOTS if low.startswith(r, i)), None)
    if root is None or (i > 0 and _word_char(low[i - 1])):
        return None
    end = i + len(root)
    if root != "mnemonic":
        k = i
        while k > 0 and low[k - 1] in " \t-_":
            k -= 1
        if k == i or not low.endswith(_SEED_QUALIFIERS, 0, k):
            return None
    found = _mnemonic(low, end)
    if found is None:
        # A qualifier, then a colon: "seed phrase for the test wallet:", "the mnemonic
        # for the ledger:" and the words there or on the next line.
        colon = low.find(":", end, end + _SEED_QUALIFIER_REACH)
        if colon >= 0 and low[end : end + 1] in (" ", "\t") and "\n" not in low[end:colon]:
            found = _mnemonic(low, colon + 1)
    return found


def _mnemonic(low: str, j: int) -> tuple[int, int] | None:
    n = len(low)
    k = j
    while k < n and low[k] in " \t:=\"'`\n":
        k += 1
    for connector in LINKING_VERBS:
        if low.startswith(connector, k) and low[k + len(connector) : k + len(connector) + 1] in (
            " ",
            ":",
        ):
            k += len(connector)
            while k < n and low[k] in " \t:\"'`\n":
                k += 1
            break
    start = end = k
    words = 0
    while words < SEED_WORDS[1]:
        w = k
        while w < n and "a" <= low[w] <= "z":
            w += 1
        if not 3 <= w - k <= 8 or (w < n and _word_char(low[w])):
            break
        words += 1
        end = w
        k = w
        while k < n and low[k] in " \t,\n":
            k += 1
    return (start, end) if words >= SEED_WORDS[0] else None


# ----------------------------------------------------- passwords in other languages

# "password" in other languages (folded), longest first where one begins another.
PASSWORD_WORDS = (
    "passwort", "kennwort", "mot de passe", "mot_de_passe", "motdepasse", "mdp",
    "contraseña", "contrasena", "senha", "wachtwoord", "hasło", "haslo", "heslo",
    "lösenord", "losenord", "passord", "adgangskode", "salasana", "şifre", "sifre",
    "parolă", "parola", "jelszó", "jelszo", "пароль", "парола", "лозинка", "κωδικός",
    "パスワード", "暗証番号", "密码", "密碼", "口令", "비밀번호", "암호", "كلمة المرور",
    "كلمة السر", "סיסמה", "पासवर्ड", "mật khẩu", "kata sandi", "katalaluan", "รหัสผ่าน",
    "clave api", "clave", "apiキー", "api キー", "アクセスキー", "シークレットキー", "トークン",
    "秘密鍵", "api密钥", "密钥", "秘钥", "令牌", "api 키", "api키", "토큰",
    # An API key, an access key, a token ("clé d'API", "API-Schlüssel", "jeton").
    "clé api", "clé d'api", "clé d’api", "clé de l'api", "clé de l’api", "cle api",
    "cle d'api", "clé d'accès", "clé d’accès", "jeton", "chave da api", "chave de api",
    "chave api", "chave de acesso", "chiave api", "chiave dell'api", "chiave dell’api",
    "chiave di accesso", "klucz api", "api-schlüssel", "api-schluessel",
    "api schlüssel", "apischlüssel", "zugangsschlüssel", "zugriffsschlüssel", "zugangscode",
    "api-sleutel", "api sleutel", "apisleutel", "toegangssleutel", "api-nøgle",
    "api-nyckel", "api-nøkkel",
    # Russian, Ukrainian, Arabic, Persian, Hindi, Turkish, Hebrew, Thai, Vietnamese,
    # Indonesian, Chinese, Korean: a token, an API or access key, a private key.
    "токен", "api-ключ", "api ключ", "апи-ключ", "апи ключ", "ключ api", "ключ апи",
    "ключ доступа", "ключ доступу", "секретный ключ", "секретний ключ", "закрытый ключ",
    "приватний ключ", "رمز الوصول", "رمز الدخول", "رمز مميز", "الرمز المميز", "مفتاح api",
    "مفتاح الوصول", "مفتاح سري", "المفتاح السري", "رمز عبور", "گذرواژه", "टोकन",
    "एपीआई कुंजी", "api कुंजी", "गुप्त कुंजी", "api anahtar", "erişim anahtar",
    "gizli anahtar", "טוקן", "מפתח api", "מפתח גישה", "โทเค็น", "mã thông báo", "khóa api",
    "kunci api", "私钥", "访问令牌", "액세스 키", "비밀 키",
    # Malay, Swahili, Catalan, Croatian/Serbian/Bosnian, Lithuanian, Estonian, Latvian.
    "kata laluan", "nenosiri", "contrasenya", "lozinka", "slaptažodis", "slaptazodis",
    "parool", "parole",
)  # fmt: skip
# The words above that name a PIN, whose value is 4 to 8 digits ("暗証番号は4729です").
PIN_WORDS = ("暗証番号",)
# English secret words as other languages' text uses them: glued to CJK text or set
# among it ("我的token是X", "用这个 token 调用接口：X"), the value after the sentence's
# link; in English prose, after "my" ("my password X") or as the last word after a
# preposition and its owner ("password for the server X"), where no connector links it
# (the prose rule's). Longest first where one begins another.
LATIN_WORDS = (
    "password", "passwd", "passphrase", "access token", "access key", "api key",
    "api_key", "apikey", "secret key", "secret", "token", "pwd",
)  # fmt: skip
_LATIN_WORDS = frozenset(LATIN_WORDS)
# The words the foreign-password rule starts at (its regex, its gate, password_value_at).
FOREIGN_PASSWORD_WORDS = (*PASSWORD_WORDS, *LATIN_WORDS)
_PASSWORD_BY_FIRST = by_first(FOREIGN_PASSWORD_WORDS)
# Words that also mean something else ("parola" is Italian for "word", "암호" a cipher):
# the value after them must look like a secret even after ":" or "=".
AMBIGUOUS_PASSWORD_WORDS = frozenset(
    ("parola", "mdp", "heslo", "口令", "암호", "clave", "parole", "parool")
)
# Turkish puts the possessive on the word ("veritabanı şifresi X", "şifreniz: X"): these
# endings keep it the word, and the value may follow it with no linking word.
# The Nordic languages put the definite article on the word ("lösenordet är X",
# "passordet er X", "adgangskoden er X"), Finnish and Romanian their endings
# ("salasanasi on X"); German adds an "s" ("des Passworts").
_SUFFIXES = {
    "şifre": ("si", "niz", "miz", "n", "m"),
    "sifre": ("si", "niz", "miz", "n", "m"),
    "parola": ("sı", "si", "nız", "mız", "n", "m"),
    "lösenord": ("et",),
    "losenord": ("et",),
    "passord": ("et",),
    "adgangskode": ("n",),
    "wachtwoord": ("en",),
    "salasana": ("si", "nne", "mme", "n"),
    "api anahtar": ("iniz", "imiz", "im", "i"),
    "erişim anahtar": ("iniz", "imiz", "im", "i"),
    "gizli anahtar": ("iniz", "imiz", "im", "i"),
    "passwort": ("s",),
    "kennwort": ("s",),
    # Indonesian and Malay put the possessive on the word too ("kata sandinya X").
    "kata sandi": ("nya", "mu", "ku"),
    "kata laluan": ("nya", "mu", "ku"),
}
_POSSESSIVE_WORDS = frozenset(
    (
        *("şifre", "sifre", "parola", "api anahtar", "erişim anahtar", "gizli anahtar"),
        *("kata sandi", "kata laluan"),
    )
)
# German, Dutch and the Nordic languages write a password's kind glued to the word
# ("Datenbankpasswort", "Adminkennwort", "databasewachtwoord", "rootlösenord").
_COMPOUNDING_WORDS = frozenset(
    ("passwort", "kennwort", "wachtwoord", "lösenord", "losenord", "passord", "adgangskode")
)
# Words between the password word and its linking word or colon ("het wachtwoord van de
# router is X", "contraseña del usuario root en el servidor es X"): at most this many.
_FILLER_WORDS = 7
# What links the word to its value in a sentence ("das Passwort ist …", "hasło to …",
# "mật khẩu là …", "كلمة المرور هي …", "パスワードは…").
_LINKS = (
    "is", *FOREIGN_LINKING_VERBS, "es", "er", "on", "jest", "to", "je", "era", "war",
    "lautet", "heißt", "adalah", "ialah", "là", "هي", "هو", "είναι", "це", "это", "е",
    "是", "为", "為", "は", "が", "는", "은", "이", "가", "-", "–", "—", "→", "है",
    "היא", "הוא", "זה", "זו", "คือ", "เป็น",
    # Romanian, Swahili, Lithuanian, Latvian, Catalan.
    "este", "ni", "yra", "ir", "és",
)  # fmt: skip
# Verbs that end the sentence after the value (Hindi's and Persian's word order):
# "पासवर्ड X है", "رمز عبور سرور X است"; and Japanese's particles after it ("トークン X
# を使って"), read after a word of a script written without blanks.
_FINAL_LINKS = frozenset(("है", "था", "हैं", "است", "بود", "هست", "です", "だ"))
# What may end the clause right after such a verb ("पासवर्ड X है, इसे…", "X है।").
_CLAUSE_END = ",;.!?।"
# Hebrew writes "the", "and", "to"… as a letter glued to the word ("הסיסמה", "לסיסמה").
_HEBREW_PREFIXES = "הובלמשכ"
# Characters of a word before a link in a script written without blanks ("こちら" of
# "APIキーはこちら：X", "ของเซิร์ฟเวอร์" of Thai's "รหัสผ่านของเซิร์ฟเวอร์คือ X"): at most.
_GLUED_FILLER = 24
_OPENING_QUOTES = "\"'`«“‘「『"
_CLOSING_QUOTES = "\"'`»”’」』"
# Scripts written with spaces end below the CJK blocks; a value stops at a CJK character.
_CJK_START = 0x2E80


class PasswordValue:
    """Where the value after a password word is, and how it was written (a plain class:
    ``typing`` is not imported on the prefilter's path)."""

    __slots__ = ("ambiguous", "end", "quoted", "separated", "start")

    def __init__(
        self, start: int, end: int, *, separated: bool, quoted: bool, ambiguous: bool
    ) -> None:
        self.start = start
        self.end = end
        self.separated = separated  # after ":" or "=", not a linking word
        self.quoted = quoted  # between quotes, which are not part of it
        self.ambiguous = ambiguous  # the word is in AMBIGUOUS_PASSWORD_WORDS


def password_value_at(low: str, i: int) -> PasswordValue | None:
    """The value after the password word of another language at ``i`` in ``low``, or
    None. The rule then judges it (:mod:`memlane.secret_rules`)."""
    word = _word_at(low, i, _PASSWORD_BY_FIRST)
    if word is None:
        return None
    end = i + len(word)
    n = len(low)
    suffix = next((x for x in _SUFFIXES.get(word, ()) if low.startswith(x, end)), "")
    end += len(suffix)
    latin = word in _LATIN_WORDS
    if latin:
        if (i > 0 and (low[i - 1].isascii() and _word_char(low[i - 1]))) or (
            end < n and low[end].isascii() and _word_char(low[end])
        ):
            return None  # inside a longer word or name: "tokens", "db_password"
        glued = _among_glued(low, i, end)
    else:
        glued = _glued_script(word[-1])  # CJK and Thai text have no blanks between words
        if (
            not glued
            and i > 0
            and low[i - 1].isalpha()
            and ord(low[i - 1]) < _CJK_START  # CJK text glues words: "我的API密钥"
            and word not in _COMPOUNDING_WORDS
            and not _hebrew_prefixed(low, i)
        ) or (not glued and end < n and low[end].isalpha()):
            return None  # inside a longer word
    k = end
    while k < n and low[k] in " \t":
        k += 1
    separated = k < n and low[k] in ":=：＝"
    if separated and latin and not glued:
        return None  # "my token: X": an English assignment, the key rules' business
    if separated:
        k += 1
    elif latin and not glued:
        # English: after a preposition, its owner and the value ending the line; else
        # after "my", the next word.
        if any(_word_then_blank(low, k, word) for word in ENGLISH_PREPOSITIONS):
            k = _unlinked_start(low, i, k, owned=False)
            if k < 0 or _links_by_words(low[end:k]):
                return None
        elif not _owned(low, i):
            return None
    else:
        link_end = _link_end(low, k, glued=glued)
        if link_end < 0:
            # Turkish's possessive alone may name the value ("şifresi X"), as "my" does
            # ("мой токен X", "我的密码X"); or an owner after a preposition ("пароль от
            # сервера X"), the value ending the line; or a verb after it ("पासवर्ड X है").
            link_end = _unlinked_start(
                low, i, k, owned=bool(suffix and word in _POSSESSIVE_WORDS) or _owned(low, i)
            )
            if link_end < 0 and glued and k > end:
                link_end = _before_glued_text(low, k)  # "トークン X を使って"
            if link_end < 0:
                return None
        elif glued:
            link_end = _past_glued_colon(low, link_end)  # "APIキーはこちら：X"
        k = link_end
        if k < n and low[k] in ":：":
            k += 1  # "Passwort lautet: X"
    while k < n and low[k] in " \t":
        k += 1
    closing = (
        _CLOSING_QUOTES[_OPENING_QUOTES.index(low[k])]
        if k < n and low[k] in _OPENING_QUOTES
        else ""
    )
    if closing:
        k += 1
    start = k
    if closing:  # a quoted value runs to its closing quote, on its line (« X »: X)
        while k < n and low[k] != closing and low[k] != "\n":
            k += 1
        while start < k and low[start] == " ":
            start += 1
        while k > start and low[k - 1] == " ":
            k -= 1
    while (
        not closing
        and k < n
        and not low[k].isspace()
        and low[k] not in _CLOSING_QUOTES
        and not _glued_script(low[k])
    ):
        k += 1
    if k == start:
        return None
    if latin and not (glued or separated or closing):
        while start < k and low[start] in _MARKUP:
            start += 1
        while k > start and low[k - 1] in _MARKUP:
            k -= 1  # "a strong password for each **account**."
        if not _english_value(low, start, k):
            return None
    if not (word.isascii() or separated or closing) and not _ascii_alnum(low, start, k):
        return None  # a word of the sentence's own script ("पासवर्ड सही है"), no secret
    return PasswordValue(
        start,
        k,
        separated=separated,
        quoted=bool(closing),
        ambiguous=word in AMBIGUOUS_PASSWORD_WORDS,
    )


def _word_then_blank(low: str, k: int, word: str) -> bool:
    return low.startswith(word, k) and low[k + len(word) : k + len(word) + 1] in (" ", "\t")


def _links_by_words(words: str) -> bool:
    """Whether the words between an English secret word and its value link them ("for
    prod:", "is", "="): the prose rule's sentence, read as a whole there."""
    return any(w in CONNECTORS or w[-1] in ":=" for w in words.split())


# Markdown's emphasis and a sentence's end around a word: not part of a value.
_MARKUP = frozenset("*_~.,;:!?")


def _english_value(low: str, start: int, end: int) -> bool:
    """Whether the word after "my password" or "password for the server" may be its
    value: 4 characters or more, not letters alone ("my password manager"; the case,
    which folding lost, does not tell a word from a value here)."""
    return end - start >= PROSE_VALUE_CHARS and not low[start:end].isalpha()


def _glued_script(c: str) -> bool:
    """Whether ``c`` is of a script written without blanks between words: CJK (from
    _CJK_START, but not the fullwidth forms of ASCII: "：" ends a run), Thai, Lao, Khmer,
    Myanmar."""
    o = ord(c)
    if o >= _CJK_START:
        return not 0xFF01 <= o <= 0xFF5E
    return 0x0E00 <= o <= 0x0EFF or 0x1000 <= o <= 0x109F or 0x1780 <= o <= 0x17FF


def _among_glued(low: str, i: int, end: int) -> bool:
    """Whether the Latin word at ``i`` (to ``end``) stands in CJK or Thai text: such a
    character or a fullwidth colon right before or after it, blanks skipped."""
    j = i
    while j > 0 and low[j - 1] in " \t":
        j -= 1
    k = end
    while k < len(low) and low[k] in " \t":
        k += 1
    before = j > 0 and _glued_script(low[j - 1])
    return before or (k < len(low) and (_glued_script(low[k]) or low[k] == "："))


def _hebrew_prefixed(low: str, i: int) -> bool:
    """Whether one or two of Hebrew's glued prefixes (_HEBREW_PREFIXES) open the word
    that the Hebrew password word at ``i`` ends: "הסיסמה", "ולסיסמה"."""
    if not "\u0590" <= low[i : i + 1] <= "\u05ff":
        return False
    j = i
    while j > 0 and i - j < 2 and low[j - 1] in _HEBREW_PREFIXES:
        j -= 1
    return j < i and (j == 0 or not low[j - 1].isalpha())


def _past_glued_colon(low: str, k: int) -> int:
    """After a link in glued text, where a colon ends a few more of its characters
    ("は" then "こちら：" then the value); ``k`` when none does."""
    j = k
    while j < len(low) and j - k < _GLUED_FILLER and _glued_script(low[j]):
        j += 1
    return j if j > k and low[j : j + 1] in (":", "：") else k


def _before_glued_text(low: str, k: int) -> int:
    """``k`` when a word of other characters there (after a blank, not glued to the
    password word) is followed, blanks between, by glued text or the line's end
    ("トークン X を使って"); -1 otherwise."""
    j = k
    while j < len(low) and not low[j].isspace() and not _glued_script(low[j]):
        j += 1
    if j == k:
        return -1
    while j < len(low) and low[j] in " \t":
        j += 1
    return k if j >= len(low) or low[j] in "\r\n" or _glued_script(low[j]) else -1


def _ascii_alnum(low: str, start: int, end: int) -> bool:
    return any(c.isascii() and c.isalnum() for c in low[start:end])


def _link_end(low: str, k: int, *, glued: bool) -> int:
    """Where the linking word at ``k`` ends, maybe after up to _FILLER_WORDS words of a
    sentence ("van de router is"); -1 when there is none. In text without blanks
    (パスワードは, 接口：) the link or a colon ends a short run of its characters."""
    start = k
    for _ in range(_FILLER_WORDS + 1):
        link = next((w for w in _LINKS if _links_at(low, k, w)), None)
        if link is not None:
            if link in _FINAL_LINKS and k > start:
                return -1  # "पासवर्ड X है और …": the verb after the value (_unlinked_start)
            return k + len(link)
        if glued and _glued_script(low[k : k + 1] or " "):
            return _glued_link_end(low, k)
        if low[k : k + 1] in (":", "=") and low[k + 1 : k + 2] in (" ", "\t", "\n", ""):
            return k + 1  # "du serveur : X", "für prod = X"
        j = k
        # A word of the sentence: "Staging-Server", "prod01", "l'admin".
        while j < len(low) and (low[j].isalnum() or low[j] in "'’-_"):
            j += 1
        if low[j : j + 1] == ":" and low[j + 1 : j + 2] in (" ", "\t", "\n", ""):
            return j + 1  # a qualifier, then a colon: "senha do banco: X", "du serveur : X"
        if j == k or j >= len(low) or low[j] not in " \t":
            return -1  # not a word, or the sentence ends
        k = j
        while k < len(low) and low[k] in " \t":
            k += 1
    return -1


def _glued_link_end(low: str, k: int) -> int:
    """In text without blanks, where a link or a colon ends among the next _GLUED_FILLER
    characters of that text ("的密码是", "ของเซิร์ฟเวอร์คือ", "调用接口："); -1 when none."""
    j = k
    while j < len(low) and j - k < _GLUED_FILLER and _glued_script(low[j]):
        link = next((w for w in _LINKS if _glued_script(w[0]) and _links_at(low, j, w)), None)
        if link is not None and j > k:
            return j + len(link)
        j += 1
    return j if j > k and low[j : j + 1] in (":", "：") else -1


# "my" before a password word ("мой пароль X", "我的密码X", "내 비밀번호 X", "मेरा पासवर्ड X
# है"): the value may follow the word with no linking word. CJK owners are glued to it.
_OWNERS = frozenset(
    (
        "мой", "моя", "мій", "моє", "мое", "наш", "наша", "my", "mein", "meine", "mon", "ma",
        "mi", "mio", "mia", "meu", "minha", "moje", "mój", "moja", "mijn", "min", "mitt",
        "benim", "내", "나의", "제", "मेरा", "मेरी", "मेरे", "हमारा",
    )
)  # fmt: skip
_LONGEST_OWNER = max(map(len, _OWNERS))
# "my" after the word: "كلمة السر الخاصة بي X".
_OWNERS_AFTER = ("الخاصة بي", "الخاص بي", "حقي")
_GLUED_OWNERS = ("我的", "我們的", "我们的", "私の", "僕の", "俺の", "自分の")
# Prepositions before a password's owner ("пароль от сервера X", "contraseña del wifi
# X", "Passwort für den Server X"): the value is then the last word of its line, at most
# _OWNER_WORDS words after the preposition.
_PREPOSITIONS = frozenset(
    (
        *ENGLISH_PREPOSITIONS, "от", "для", "к", "від", "до", "на", "für", "vom", "von", "zum",
        "zur", "pour", "du", "de", "des", "del", "para", "da", "do", "per", "della", "dello",
        "dla", "van", "voor", "för", "til", "av", "का", "की", "के", "ل", "لل",
    )
)  # fmt: skip
# A PIN's owner between the word and its link ("PIN for the HSM slot 0 is X", "pin of
# the office safe: X", "die PIN für das Tor ist X", "le code PIN de la carte est X"): a
# password owner's preposition (_PREPOSITIONS), then at most _PIN_OWNER_WORDS words. A
# PIN is also "on" a card and "from" a letter (not a password's owner: "the password on
# the sticky note", "password from the email"); "fur" is "für" typed without its umlaut.
# Not "per": after "pin" it is English more often than Italian ("the pin per board is
# 4096 wide" counts pins).
_PIN_PREPOSITIONS = (_PREPOSITIONS - {"per"}) | {"on", "from", "fur", "di"}
_OWNER_WORDS = 3


def _owned(low: str, i: int) -> bool:
    """Whether "my" (_OWNERS, _GLUED_OWNERS) ends just before the password word at ``i``."""
    if low.endswith(_GLUED_OWNERS, 0, i):
        return True
    j = i
    while j > 0 and low[j - 1] in " \t":
        j -= 1
    if j == i:
        return False
    k = j
    while k > 0 and not low[k - 1].isspace() and j - k <= _LONGEST_OWNER:
        k -= 1  # not isalpha: Devanagari's vowel signs are marks ("मेरा")
    return low[k:j] in _OWNERS


def _unlinked_start(low: str, i: int, k: int, *, owned: bool) -> int:
    """Where the value after a password word with no linking word starts (the word ends
    before ``k``, blanks skipped), or -1: the last word of the line after a preposition
    and its owner, or else, after "my", the next word."""
    line, whole = _line_after(low, k)
    owner_after = next((w for w in _OWNERS_AFTER if line.startswith(w + " ")), "")
    if owner_after:
        return k + len(line) - len(line[len(owner_after) + 1 :].lstrip())
    words = blank_words(line, _OWNER_WORDS + 2)
    if (
        len(words) >= 3
        and words[0][1] in _PREPOSITIONS
        and any(c.isdigit() or c in _PASSWORD_SYMBOLS for c in words[-1][1])
        and len(words) <= _OWNER_WORDS + 1
        and not line[words[-1][0] + len(words[-1][1]) :].strip()
        and whole
    ):
        return k + words[-1][0]
    if owned and words and words[0][1] not in _PREPOSITIONS:
        return k
    # The verb ends the sentence, the value before it: "पासवर्ड X है", "رمز عبور سرور X
    # است" (an owner's words between).
    last = next((n for n, (_, w) in enumerate(words) if w.rstrip(_CLAUSE_END) in _FINAL_LINKS), -1)
    if last > 0:
        return k + words[last - 1][0]
    return -1


def _links_at(low: str, k: int, link: str) -> bool:
    if not low.startswith(link, k):
        return False
    if ord(link[0]) >= _CJK_START:
        return True  # glued: "パスワードはX"
    after = low[k + len(link) : k + len(link) + 1]
    return after in (" ", "\t", ":")


# -------------------------------------------------------- passwords by their shape

# Words near which a made-up password stands however the sentence runs ("user app,
# password X", "the login for grafana is admin / X", "use `X` as the password", "El
# password del servidor es X", "new NetworkCredential(\"svc\", \"X\")"): English and
# the other languages' PASSWORD_WORDS, longest first. A word may be the end of a name
# (db_password, NetworkCredential) and take a plural "s", but not go on as another word.
SHAPE_WORDS = tuple(
    sorted(
        (
            "password", "passwd", "passphrase", "pwd", "credential", "creds", "cred",
            "login", "log in", "logon", "secret", "unseal", *PASSWORD_WORDS,
        ),
        key=len,
        reverse=True,
    )
)  # fmt: skip
_SHAPE_BY_FIRST = by_first(SHAPE_WORDS)
SHAPE_WORDS_AFTER = 8  # words read after the word, on its line
SHAPE_WORDS_BEFORE = 4  # and before it ("`X` as the password")
SHAPE_REACH = 200  # characters either side
# A made-up password mixes letters, digits and one of these; the other symbols make
# code, paths, markup or a sentence's punctuation (trimmed from the ends first).
_PASSWORD_SYMBOLS = frozenset("!@#$%^&*?~+|")
_NEVER_IN_PASSWORD_SHAPE = frozenset("/\\()[]{}<>\"'`=:;,")
_SHAPE_OPENING = "\"'`([{<«“‘*_"
_SHAPE_CLOSING = "\"'`)]}>»”’*_.,;:"


def shaped_value_near(low: str, i: int) -> tuple[int, int] | None:
    """The span of the first word shaped like a made-up password (see
    :func:`password_shaped`) near the password word at ``i`` in ``low``: among the
    SHAPE_WORDS_AFTER words after it on its line, then the SHAPE_WORDS_BEFORE before."""
    word = _word_at(low, i, _SHAPE_BY_FIRST)
    if word is None:
        return None
    end = i + len(word)
    if low.startswith("s", end):
        end += 1
    if end < len(low) and low[end].isalpha() and ord(low[end]) < _CJK_START:
        return None  # another word ("secretary", "passwordless")
    line_end = low.find("\n", end, end + SHAPE_REACH)
    after_end = line_end if line_end >= 0 else end + SHAPE_REACH
    line_start = low.rfind("\n", max(0, i - SHAPE_REACH), i) + 1
    start = max(line_start, i - SHAPE_REACH)
    if not _digit_between(low, start, min(after_end, len(low))):
        return None  # a made-up password holds a digit: none on either side
    after = low[end:after_end]
    for offset, token in blank_words(after, SHAPE_WORDS_AFTER):
        span = _shaped_span(token)
        if span is not None:
            return end + offset + span[0], end + offset + span[1]
    before = low[start:i]
    for offset, token in reversed(last_blank_words(before, SHAPE_WORDS_BEFORE)):
        span = _shaped_span(token)
        if span is not None:
            return start + offset + span[0], start + offset + span[1]
    return None


# The last text asked about and a stretch of it known to hold no ASCII digit: the words'
# windows around the places of one text overlap (a word repeated every few characters),
# so each character is looked at about once, not once per window.
_NO_DIGIT: tuple[str, int, int] = ("", 0, 0)


def _digit_between(low: str, start: int, end: int) -> bool:
    """Whether ``low[start:end]`` holds an ASCII digit."""
    global _NO_DIGIT
    known, clear_from, clear_to = _NO_DIGIT
    same = known is low
    if same and clear_from <= start <= clear_to:
        if end <= clear_to:
            return False
        start = clear_to  # only the part past the stretch is new
    else:
        clear_from = start
    if not _ASCII_DIGITS.isdisjoint(low[start:end]):
        return True
    _NO_DIGIT = (low, clear_from, end)
    return False


def blank_words(text: str, count: int = -1) -> list[tuple[int, str]]:
    """(offset, word) of the first ``count`` blank-separated words of ``text`` (every
    word when ``count`` is -1): the split stops there, so a long line costs no more."""
    words = []
    k = 0
    for word in text.split(None, count)[:count] if count >= 0 else text.split():
        k = text.find(word, k)
        words.append((k, word))
        k += len(word)
    return words


def last_blank_words(text: str, count: int) -> list[tuple[int, str]]:
    """``blank_words(text)[-count:]``, split from the end: only those words are read."""
    parts = text.rsplit(None, count)
    if len(parts) > count:
        parts = parts[1:]  # the rest of the text, before the last ``count`` words
    words = []
    k = len(text)
    for word in reversed(parts):
        k = text.rfind(word, 0, k)
        words.append((k, word))
    words.reverse()
    return words


# Words judged by _shaped_span, and what it found (the same words come back in the
# windows of nearby password words); started over when full.
_SHAPED: dict[str, tuple[tuple[int, int] | None]] = {}
_SHAPED_SIZE = 4096


def _shaped_span(token: str) -> tuple[int, int] | None:
    cached = _SHAPED.get(token)  # one read: another thread may clear it
    if cached is not None:
        return cached[0]
    start, end = 0, len(token)
    while start < end and token[start] in _SHAPE_OPENING:
        start += 1
    while end > start and token[end - 1] in _SHAPE_CLOSING:
        end -= 1
    span = (start, end) if password_shaped(token[start:end]) else None
    if len(_SHAPED) >= _SHAPED_SIZE:
        _SHAPED.clear()
    _SHAPED[token] = (span,)
    return span


def password_shaped(core: str) -> bool:
    """Whether ``core`` (a word, its quotes and punctuation trimmed) looks like a
    made-up password: 8 to 64 characters mixing ASCII letters, digits and one of
    ``!@#$%^&*?~+|`` — ``maple@5835@Falcon&``, ``Tango1603Orbit!`` — and none of the
    characters of code, paths or markup; not an address (``deploy@web01``), a package
    version (``typescript@5.3.3``), an issue (``issue#1234``), a variable (``$PASS2``)."""
    if not 8 <= len(core) <= 64 or not core.isascii() or core[0] in "$%&-+!":
        return False
    symbols = {c for c in core if c in _PASSWORD_SYMBOLS}
    if not symbols or not any(c.isdigit() for c in core) or not any(c.isalpha() for c in core):
        return False
    if any(c in _NEVER_IN_PASSWORD_SHAPE or c.isspace() for c in core):
        return False
    if symbols == {"@"} and core.count("@") == 1:
        host = core.partition("@")[2]
        if any(c.isalpha() for c in host) or "." in host:
            return False  # user@host, a mail address, name@1.2.3
    if symbols == {"#"} and core.rpartition("#")[2].isdigit():
        return False  # issue#1234, PR#42
    return symbols != {"+"}  # a version's build (1.2.3+build5), C++17


# ------------------------------------------------------- a table's secret column

# A column named for a secret in a CSV, TSV or a table a command printed (psql, mysql,
# markdown): its header cell is one of these words, maybe after a name ("db_password").
COLUMN_WORDS = (
    "passphrase", "password", "passwd", "pwd", "secret", "token", "api_key", "apikey",
    "api key", "private_key",
)  # fmt: skip
_COLUMN_DELIMITERS = ",|\t;"
_CELL_NAME = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.- ")
_CELL_EDGE = " \t\"'`"
_TABLE_RULE = frozenset("+-=|: \t")
MAX_TABLE_ROWS = 200
MAX_TABLE_LINE = 4000


def column_cells_at(low: str, i: int) -> list[tuple[int, int]] | None:
    """The cells under the secret column whose header word is at ``i`` in ``low``:
    the header a line of at least two names split by one of ``, | tab ;``, each row
    below it (rules of ``-+=|`` skipped) as many cells, up to MAX_TABLE_ROWS rows,
    a blank line, a row of another shape or one naming a column word (a header
    repeated) ending the table. None when there is no
    such table; the rule judges each cell's value."""
    word = next((w for w in COLUMN_WORDS if low.startswith(w, i)), None)
    if word is None:
        return None
    # Both ends read within MAX_TABLE_LINE: a long line is no header (nor read whole
    # for each word in it).
    line_end = low.find("\n", i, i + MAX_TABLE_LINE)
    if line_end < 0:
        line_end = len(low) if len(low) - i <= MAX_TABLE_LINE else -1
        if line_end < 0:
            return None
    reach = max(0, i - MAX_TABLE_LINE)
    line_start = low.rfind("\n", reach, i) + 1
    if (line_start == 0 and reach > 0) or line_end - line_start > MAX_TABLE_LINE:
        return None
    header = low[line_start:line_end]
    left = header[: i - line_start]
    right = header[i - line_start + len(word) :]
    cell_start = max(left.rfind(d) for d in _COLUMN_DELIMITERS) + 1
    ends = [k for k in (right.find(d) for d in _COLUMN_DELIMITERS) if k >= 0]
    cell_end = min(ends) if ends else len(right)
    before, after = left[cell_start:], right[:cell_end]
    if not all(c in _CELL_NAME or c in _CELL_EDGE for c in before + after):
        return None  # a sentence, code: no header cell
    named = before.strip(_CELL_EDGE)
    if named and named[-1] not in "_-. ":
        return None  # glued to a name: reclaimERC20Token is a function, not a column
    if after.strip(_CELL_EDGE) not in ("", "s"):
        return None  # the word goes on ("password_hash", "secret_gates.py")
    delimiter = (left[cell_start - 1] if cell_start else "") or (
        right[cell_end] if cell_end < len(right) else ""
    )
    if not delimiter:
        return None
    cells = header.split(delimiter)
    column = left.count(delimiter)
    if _row_above(low, line_start, delimiter, len(cells)):
        return None  # a row of a table whose header is above: a value, not a column name
    names = [cell for cell in cells if cell.strip(_CELL_EDGE)]
    if len(names) < 2 or not all(c in _CELL_NAME or c in _CELL_EDGE for c in "".join(names)):
        return None  # a header names its columns: no code, no sentence
    spans: list[tuple[int, int]] = []
    pos = line_end + 1
    rows = 0
    while pos < len(low) and rows < MAX_TABLE_ROWS:
        end = low.find("\n", pos)
        end = len(low) if end < 0 else end
        row = low[pos:end].rstrip("\r")
        if not row.strip() or end - pos > MAX_TABLE_LINE:
            break
        if all(c in _TABLE_RULE for c in row):
            pos = end + 1
            continue
        row_cells = row.split(delimiter)
        if len(row_cells) != len(cells) or any(w in row for w in COLUMN_WORDS):
            break  # another shape, or a header (each row is read for one header)
        start = pos + sum(len(cell) + 1 for cell in row_cells[:column])
        cell = row_cells[column]
        core = cell.strip(_CELL_EDGE)
        if core and not any(c.isspace() for c in core):  # words or code: no password
            offset = cell.find(core)
            spans.append((start + offset, start + offset + len(core)))
        rows += 1
        pos = end + 1
    return spans or None


def _row_above(low: str, line_start: int, delimiter: str, count: int) -> bool:
    """Whether the line above ``line_start`` (rules of ``-+=|`` skipped, two at most) is
    a row of as many cells: then the line at ``line_start`` is no header."""
    end = line_start - 1
    for _ in range(3):
        if end <= 0:
            return False
        start = low.rfind("\n", max(0, end - MAX_TABLE_LINE), end) + 1
        row = low[start:end].rstrip("\r")
        if not row.strip():
            return False
        if not all(c in _TABLE_RULE for c in row):
            return len(row.split(delimiter)) == count
        end = start - 1
    return False


# ------------------------------------------------------------------- card numbers

# Digits as "d", blanks and dashes as "s", everything else a blank: the shapes a card
# number takes (bare 13+, 4-4-4-4…, 4-6-5/4-6-4) are substrings of the translation.
_CARD_TABLE = bytearray(b" " * 256)
_CARD_TABLE[ord("0") : ord("9") + 1] = b"d" * 10
_CARD_TABLE[ord(" ")] = _CARD_TABLE[ord("-")] = ord("s")
_BARE, _GROUPED, _GROUPED_AMEX = b"d" * 13, b"ddddsddddsddddsdddd", b"ddddsddddddsdddd"


def has_card_number(text: str) -> bool:
    """Whether ``text`` may hold a card number the rule masks (C speed for most text: a
    translation and three substring searches). A bare run of digits is checked as the
    rule checks it, in the UTF-8 bytes (a character outside ASCII beside it counts as
    no word character: maybe); digits in groups say maybe."""
    if len(text) < 13:
        return False
    raw = text.encode("utf-8", "surrogatepass")
    shapes = raw.translate(_CARD_TABLE)
    four = shapes.find(b"dddd")  # every shape starts with four digits; most text has none
    if four < 0:
        return False
    if shapes.find(_GROUPED, four) >= 0 or shapes.find(_GROUPED_AMEX, four) >= 0:
        return True
    bare = _BARE
    i = shapes.find(bare, four)
    while i >= 0:
        end = i + len(bare)
        while end < len(raw) and 48 <= raw[end] <= 57:
            end += 1
        if _bounded(raw, i, end) and is_card_number(raw[i:end].decode("ascii")):
            return True
        i = shapes.find(bare, end)
    return False


# ASCII bytes that may not touch a bare card number (the rule's look-arounds).
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NOT_BEFORE = _WORD_BYTES | frozenset(b".+-/")
_NOT_AFTER = _WORD_BYTES | frozenset(b"-/")


def _bounded(raw: bytes, start: int, end: int) -> bool:
    """The rule's boundaries around the bare run ``raw[start:end]``: no word
    character nor ``. + - /`` before it; no word character, ``-``, ``/`` nor a decimal
    point after it."""
    if start and raw[start - 1] in _NOT_BEFORE:
        return False
    if end < len(raw) and raw[end] in _NOT_AFTER:
        return False
    return not (raw[end : end + 1] == b"." and raw[end + 1 : end + 2].isdigit())


def is_card_number(candidate: str) -> bool:
    """Whether ``candidate`` (digits, maybe split by one kind of separator into a
    card's groups) is a card number: its length, its network's first digits, Luhn."""
    sep = next((c for c in candidate if c in " -"), "")
    groups = candidate.split(sep) if sep else [candidate]
    digits = "".join(groups)
    if not (13 <= len(digits) <= 19) or not all(c in _ASCII_DIGITS for c in digits):
        return False
    if sep and [len(g) for g in groups] not in (
        [4, 4, 4, 4],
        [4, 4, 4, 4, 3],
        [4, 4, 4, 4, 2],
        [4, 6, 5],
        [4, 6, 4],
        [4, 4, 4, 1],
        [4, 4, 4, 4, 1],
    ):
        return False
    return _issued(digits) and _luhn(digits)


def _issued(digits: str) -> bool:
    """Whether a card network issues numbers of this start and length."""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":  # Visa
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:  # Mastercard
        return n == 16
    if two in (34, 37):  # American Express
        return n == 15
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:  # Diners Club
        return 14 <= n <= 19
    if four == 6011 or two == 65 or 644 <= int(digits[:3]) <= 649 or two == 62:
        return 16 <= n <= 19  # Discover, UnionPay
    if 3528 <= four <= 3589:  # JCB
        return 16 <= n <= 19
    return False


def _luhn(digits: str) -> bool:
    total = 0
    for index, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if index % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# ------------------------------------------------------------ vendors' UUID tokens

# Services whose API tokens are bare UUIDs: Snyk's API token, Heroku's API key (before
# its HRKU- form), Postmark's server and account tokens, Codecov's upload token, Sauce
# Labs' access key, Opsgenie's API key, Loggly's customer token, Railway's tokens,
# Pinecone's first API keys, HubSpot's retired API key.
UUID_TOKEN_VENDORS = (
    "snyk", "heroku", "postmark", "codecov", "sauce", "opsgenie", "loggly", "railway",
    "pinecone", "hubspot",
)  # fmt: skip
# A name's last part that makes its UUID an identifier (SNYK_ORG, HEROKU_APP_ID,
# codecov_project_uuid), not a token.
_ID_PARTS = frozenset(
    (
        "id", "ids", "uuid", "guid", "org", "organization", "project", "team", "user",
        "account", "tenant", "client", "app", "application", "workspace", "environment",
        "env", "service", "deployment", "region", "instance", "index", "build", "job",
        "run", "request", "trace", "device", "node", "cluster", "host", "url", "name",
        "slug", "version", "channel", "stack", "pipeline", "repo", "integration",
    )
)  # fmt: skip
_UUID_GROUPS = (8, 4, 4, 4, 12)
_HEX = frozenset("0123456789abcdef")
_NAME_REACH = 64  # characters of a name read either side of the vendor's word


def vendor_uuid_at(low: str, i: int) -> tuple[int, int] | None:
    """(start, end) of the UUID that a name holding a vendor of UUID_TOKEN_VENDORS (its
    word at ``i`` in ``low``, opening a part of the name) is set to, when it is the whole
    value: ``ENV["SNYK"] = "…"``, ``SNYK_CI=…``, ``"heroku": "…"``. A name whose last part
    says it is an identifier (``SNYK_ORG_ID``) keeps its UUID; so does a made-up one
    (``00000000-0000-…``)."""
    vendor = next((v for v in UUID_TOKEN_VENDORS if low.startswith(v, i)), None)
    if vendor is None or (i > 0 and low[i - 1].isalnum()):
        return None
    end = i + len(vendor)
    stop = min(len(low), end + _NAME_REACH)
    while end < stop and low[end] in NAME_CHARS:
        end += 1
    start = i
    while start > max(0, i - _NAME_REACH) and low[start - 1] in NAME_CHARS:
        start -= 1
    last = low[start:end].replace(".", "_").replace("-", "_").rsplit("_", 1)[-1]
    if last in _ID_PARTS or last.endswith(("id", "ids", "uuid", "guid")):
        return None
    k = end
    while k < len(low) and k - end < 8 and low[k] in "\"'`] \t":
        k += 1
    sep = next((s for s in ("=>", ":=", "=", ":") if low.startswith(s, k)), None)
    if sep is None:
        return None
    k += len(sep)
    while k < len(low) and low[k] in " \t":
        k += 1
    if k < len(low) and low[k] in "\"'`":
        k += 1
    return _uuid_span(low, k)


def _uuid_span(low: str, k: int) -> tuple[int, int] | None:
    """(start, end) of a UUID at ``k`` standing alone (no word character or "-" after
    it), not one of a single repeated digit."""
    j = k
    for index, size in enumerate(_UUID_GROUPS):
        group = low[j : j + size]
        if len(group) != size or not set(group) <= _HEX:
            return None
        j += size
        if index < len(_UUID_GROUPS) - 1:
            if low[j : j + 1] != "-":
                return None
            j += 1
    if j < len(low) and (low[j].isalnum() or low[j] in "_-"):
        return None
    if len(set(low[k:j]) - {"-"}) < 4:
        return None  # 00000000-0000-0000-0000-000000000000 and its kin: placeholders
    return k, j


# -------------------------------------------------------------------- passphrases

# Words of a sentence that describes a secret ("password: must be at least 8
# characters", "token: sent in the Authorization header", "password: changes every 90
# days"), which the words of a passphrase (random dictionary words, a number) are not.
_SENTENCE_WORDS = frozenset(
    (
        "a", "an", "the", "and", "or", "nor", "but", "not", "no", "is", "are", "was",
        "were", "be", "been", "being", "am", "do", "does", "did", "has", "have", "had",
        "can", "could", "may", "might", "must", "shall", "should", "will", "would", "to",
        "of", "in", "on", "at", "by", "for", "from", "with", "without", "as", "if", "when",
        "then", "than", "into", "onto", "via", "per", "it", "its", "this", "that", "these",
        "those", "you", "your", "we", "our", "they", "their", "he", "she", "his", "her",
        "i", "my", "me", "us", "them", "who", "which", "what", "how", "why", "where",
        "all", "any", "each", "every", "some", "same", "other", "only", "also", "just",
        "up", "out", "off", "so", "too", "very", "here", "there", "see", "use", "used",
        "set", "unset", "leave", "empty", "blank", "required", "optional", "default",
        "none", "null", "value", "values", "string", "characters", "chars", "letters",
        "digits", "days", "hours", "minutes", "weeks", "months", "years", "least", "most",
        "ask", "asked", "enter", "entered", "prompted", "stored", "hashed", "sent",
        "rotated", "changed", "changes", "expires", "expired",
    )
)  # fmt: skip
PASSPHRASE_WORDS = (3, 8)


def passphrase(rest: str) -> bool:
    """Whether ``rest`` (a line's rest after a secret key's ``:`` or `` = ``) is a
    passphrase of PASSPHRASE_WORDS words (``correct horse battery staple``, ``purple
    monkey dishwasher 42``): letters and digits only, no word of a sentence
    (_SENTENCE_WORDS) and no punctuation, which a description of the secret has."""
    low, high = PASSPHRASE_WORDS
    words = rest.split(None, high)
    if not low <= len(words) <= high:
        return False
    return all(
        word.isascii() and word.isalnum() and len(word) <= 16
        and word.lower() not in _SENTENCE_WORDS
        for word in words
    )  # fmt: skip


def app_password(rest: str) -> bool:
    """Whether ``rest`` (a line's rest after a password key and a blank, as msmtp's
    ``password fwgk bgee feet ubkm``) is a Google app password: four groups of four
    lower-case letters, none a word of a sentence ("password that will work fine")."""
    groups = rest.split()
    return len(groups) == 4 and all(
        len(group) == 4 and group.isascii() and group.isalpha() and group.islower()
        and group not in _SENTENCE_WORDS
        for group in groups
    )  # fmt: skip


# ------------------------------------------------- a user and a password, by "/"

# Words a "user / password" pair follows ("login is admin / X", "wifi: SSID / X").
# Words after which a user and a password come in pairs ("login is admin / X", "login
# with admin:X", "ssh in as root with X"), and the password words a pair or a value in
# front of "as the password" ends at ("user admin pass X", "use 'X' as the db password").
_LOGIN_WORDS = (
    "login", "logon", "log in", "logging in", "logged in", "sign in", "signing in",
    "signed in", "signin", "ssh",
)  # fmt: skip
_PAIR_PASSWORDS = ("password", "passwd", "passphrase", "pass", "pwd", "pw")
PAIR_WORDS = (
    "credentials", "passphrase", "password", "passwd", "log in", "logging in", "logged in",
    "sign in", "signing in", "signed in", "signin", "login", "logon", "wi-fi", "creds",
    "wifi", "pass", "pwd", "ssh", "pw",
    # "credentials" in other languages ("Zugangsdaten: admin / X").
    "zugangsdaten", "anmeldedaten", "identifiants", "credenciales", "credenciais",
    "credenziali", "inloggegevens",
)  # fmt: skip
_PAIR_BY_FIRST = by_first(PAIR_WORDS)
# What links a pair word to its pair: a ":" ending the word before, or one of these
# ("creds are admin / X", "Zugangsdaten sind admin / X", "creds = ops / X").
_PAIR_LINKS = frozenset(
    (
        *LINKING_VERBS, *FOREIGN_LINKING_VERBS, "=", "with", "sind", "lauten", "sont",
        "son", "são", "sono", "zijn",
    )
)  # fmt: skip
_PAIR_READ = 8  # words read after the word, on its line ("login for the vendor portal:")
_USER_WORDS = frozenset(("user", "username", "usr", "login", "user:", "username:", "login:"))
_PAIR_SEPARATORS = frozenset(("/", "|", ",", ";", "-", "–", "—"))
_AS_OWNERS = frozenset(("the", "my", "our", "your", "a", "its", "their"))


def pair_value_at(low: str, i: int) -> tuple[int, int] | None:
    """(start, end) of a password given with its user, or named by where it stands:
    the second of two words split by " / " after the pair word at ``i`` and its ":" or
    linking verb (``login is admin / X``, ``wifi: Home / X``); ``X`` of ``login (with)
    admin:X`` and ``log in as root with X``; after a password word, ``X`` of ``user
    admin pass X``; before one, ``X`` of ``use "X" as the db password``."""
    word = _word_at(low, i, _PAIR_BY_FIRST)
    if word is None or (i > 0 and _word_char(low[i - 1])):
        return None
    end = i + len(word)
    if end < len(low) and _word_char(low[end]):
        return None
    line_end = low.find("\n", end, end + SHAPE_REACH)
    after = low[end : line_end if line_end >= 0 else end + SHAPE_REACH]
    # The words after the word are split only when a form needs them: a word repeated
    # every few characters has each of its places asked.
    if word in _PAIR_PASSWORDS:
        found = _after_user(low, i, end, after) or _before_as(low, i, after)
        if found is not None:
            return found
        first = blank_words(after, 1) if word == "pw" and _bare_word(low, i, end) else []
        if first and first[0][1][0] not in "/-":
            # "pw" names nothing but a password: the word after it is one ("ssh root@db
            # pw X"), which the rule then judges as the word after "password is"; not
            # user:pw@host, an option or a path ("PW /user:x").
            return _trimmed(end + first[0][0], first[0][1])
    elif word in _LOGIN_WORDS:
        found = _login_pair(end, blank_words(after, _PAIR_READ))
        if found is not None or word == "ssh":
            return found
    if "/" not in after:
        return None  # no pair split by "/"
    return _slashed_pair(end, blank_words(after, _PAIR_READ), bare=word not in _PAIR_PASSWORDS)


def _bare_word(low: str, i: int, end: int) -> bool:
    """The word at ``i:end`` stands alone: a blank (or the text's start) before it, a
    blank after it."""
    return (i == 0 or low[i - 1].isspace()) and low[end : end + 1] in (" ", "\t")


def _linked(word: str) -> bool:
    return word in _PAIR_LINKS or word.endswith(":")


def _slashed_pair(end: int, words: list[tuple[int, str]], *, bare: bool) -> tuple[int, int] | None:
    """The password of a user and a password split by "/" after a pair word (its words
    ``words``, at ``end``): ``login is admin / X``, ``login for grafana: admin / X``,
    ``creds = ops / X``, ``login: admin/X``; with ``bare``, ``login admin / X`` too."""
    slash = next((k for k, (_, w) in enumerate(words) if w == "/"), -1)
    if 1 <= slash < len(words) - 1 and (
        (slash == 1 and bare) or (slash >= 2 and _linked(words[slash - 2][1]))
    ):
        offset, value = words[slash + 1]
        return _trimmed(end + offset, value)
    # One word "user/X" right after the link ("login: admin/X", "log in with admin/X",
    # "login for the NAS: admin/X").
    for k in range(len(words) - 1):
        if not _linked(words[k][1]):
            continue
        offset, pair = words[k + 1]
        user, _, secret = pair.partition("/")
        if _user_name(user) and "/" not in secret and any(not c.isalpha() for c in secret):
            return _trimmed(end + offset + len(user) + 1, secret)
    return None


def _user_name(word: str) -> bool:
    """A login name before "/X": a letter, then letters, digits, ``._-@``."""
    return word[:1].isalpha() and word.isascii() and all(c.isalnum() or c in "._-@" for c in word)


# How one logs in rather than with what: a method, a key type or a key file ("login as
# admin using oauth2", "ssh as deploy with id_rsa_2", "login via sso:okta2").
_LOGIN_METHODS = (
    "oauth", "oidc", "saml", "sso", "ldap", "kerberos", "sudo", "ed25519", "rsa", "ecdsa",
    "dsa", "id_", "-i",
)  # fmt: skip
_KEY_FILES = (".pem", ".key", ".pub", ".ppk")


def _login_method(word: str) -> bool:
    w = word.strip(_TRIM)
    return w.startswith(_LOGIN_METHODS) or w.endswith(_KEY_FILES) or "/" in w


def _login_pair(end: int, words: list[tuple[int, str]]) -> tuple[int, int] | None:
    """``X`` of ``admin:X`` as the first or second word after a login word (``login
    with admin:X``), or of ``as root with X`` among its words; not a login method or a
    key (_LOGIN_METHODS, a key file)."""
    for offset, w in words[:2]:
        name, colon, secret = w.partition(":")
        if colon and name.isalnum() and secret.strip(_TRIM) and "/" not in secret:
            if _login_method(name):
                continue
            found = _trimmed(end + offset + len(name) + 1, secret)
            if found is not None:
                return found
    plain = [w for _, w in words]
    for k in range(len(plain) - 3):
        if plain[k] == "as" and plain[k + 2] in ("with", "using") and plain[k + 1].isalnum():
            offset, value = words[k + 3]
            if _login_method(value):
                return None
            return _trimmed(end + offset, value)
    return None


def _after_user(low: str, i: int, end: int, after: str) -> tuple[int, int] | None:
    """``X`` of ``user admin pass X`` (``:``/``=`` after the words allowed; ``after``: the
    rest of the line from ``end``)."""
    before = low[max(0, i - 60) : i].rsplit(None, 3)
    if before and before[-1] in _PAIR_SEPARATORS:
        before.pop()  # "user admin / pass X", "user admin | pass X"
    if len(before) < 2 or before[-2] not in _USER_WORDS:
        return None
    words = blank_words(after, 2)
    if not words:
        return None
    offset, value = words[0]
    if value in (":", "=", "is") and len(words) > 1:
        offset, value = words[1]
    stripped = value.lstrip(":=")
    return _trimmed(end + offset + len(value) - len(stripped), stripped)


# Words after a password word that make it a hash's or a key derivation's name: "use
# argon2id as the password hash" names an algorithm.
_SCHEME_WORDS = (
    "hash", "hashes", "hashing", "hasher", "kdf", "digest", "algorithm", "algo", "alg",
    "scheme", "cipher", "encoder", "encoding", "format", "policy", "function",
)  # fmt: skip


def _before_as(low: str, i: int, after: str) -> tuple[int, int] | None:
    """``X`` of ``use "X" as the (db) password``: the word before "as", up to two words
    after an owner word before the password word, which ends the phrase (not "as the
    password hash"; ``after``: the rest of the line after the password word)."""
    base = max(0, i - 120)
    window = low[base:i]
    if "as" not in window.rsplit(None, 5)[-4:]:
        return None  # "as" is among the last four words
    first = after.split(None, 1)[:1]
    if first and first[0].strip(_TRIM) in _SCHEME_WORDS:
        return None
    before = last_blank_words(window, 5)
    for k in range(len(before) - 1, 0, -1):
        if before[k][1] == "as":
            between = [w for _, w in before[k + 1 :]]
            if between and between[0] not in _AS_OWNERS:
                return None
            offset, value = before[k - 1]
            return _trimmed(base + offset, value)
    return None


# Quotes, brackets and a sentence's punctuation around a word.
_TRIM = "\"'`.,;:!?()[]<>{}"


def _trimmed(start: int, word: str) -> tuple[int, int] | None:
    """(start, end) of ``word`` (at ``start``) without _TRIM at its ends; None if empty."""
    core = word.strip(_TRIM)
    if not core:
        return None
    start += word.find(core)
    return start, start + len(core)


# ------------------------------------------------------- a password reset to X

# Verbs that set a secret to a new value ("I just reset it to X"), and the secret words
# that must name what they set: the object's last word, or before a pronoun.
RESET_WORDS = ("reset", "changed", "rotated", "updated", "set", "change", "rotate", "update")
_RESET_SECRETS = ("password", "passwd", "passphrase", "passcode", "token", "secret", "pin")
_PRONOUNS = frozenset(("it", "that", "this", "them"))
# The secret words a verb's subject may end with ("the api key was rotated to X"), and
# the words between the subject and the verb ("has just been changed to X").
_RESET_SUBJECTS = frozenset((*_RESET_SECRETS, "pw", "pwd", "key", "creds"))
_AUXILIARIES = frozenset(
    ("was", "is", "has", "have", "had", "been", "got", "were", "be", "just", "now", "since",
     "already", "finally", "recently", "also", "then")
)  # fmt: skip
_RESET_BEFORE = 200  # characters before a pronoun where the secret word may be


def reset_value_at(low: str, i: int) -> tuple[int, int] | None:
    """(start, end) of X in "reset it to X" (after a secret word) or "changed the wifi
    password to X": a verb of RESET_WORDS at ``i``, up to three words, "to", X."""
    word = next((w for w in RESET_WORDS if low.startswith(w, i)), None)
    if word is None or (i > 0 and _word_char(low[i - 1])):
        return None
    end = i + len(word)
    line_end = low.find("\n", end, end + SHAPE_REACH)
    words = blank_words(low[end : line_end if line_end >= 0 else end + SHAPE_REACH], 6)
    to = next((k for k, (_, w) in enumerate(words[:4]) if w == "to"), -1)
    if to < 0 or to + 1 >= len(words):
        return None
    if to == 0:  # "the pw was rotated to X", "password changed to X": named before
        subject = [w.strip(_TRIM) for _, w in last_blank_words(low[max(0, i - 80) : i], 4)]
        while subject and subject[-1] in _AUXILIARIES:
            subject.pop()
        if not subject or subject[-1] not in _RESET_SUBJECTS:
            return None
        offset, value = words[1]
        return _trimmed(end + offset, value)
    last = words[to - 1][1].strip(_TRIM)
    if last in _PRONOUNS:
        if to > 1 or not any(w in low[max(0, i - _RESET_BEFORE) : i] for w in _RESET_SECRETS):
            return None
    elif last not in _RESET_SECRETS:
        return None
    offset, value = words[to + 1]
    return _trimmed(end + offset, value)


# ------------------------------------------------------------- Mailgun's keys

# A Mailgun API key without its "key-" prefix: 32 hex digits, maybe then "-" and two
# groups of 8 (today's private keys), after the word "mailgun" on its line; not when a
# word before it says the hex is an identifier or a digest (a message id, a checksum).
_MAILGUN_READ = 8
_MAILGUN_BEFORE = 3  # words read before "mailgun" on its line
_DIGEST_WORDS = frozenset(
    (
        "id", "ids", "msgid", "uuid", "guid", "checksum", "md5", "sha", "sha1", "sha256",
        "sha512", "hash", "digest", "commit", "etag",
    )
)  # fmt: skip


def mailgun_key_near(low: str, i: int) -> tuple[int, int] | None:
    """(start, end) of a Mailgun key among the words after "mailgun" at ``i``."""
    if not low.startswith("mailgun", i):
        return None
    line_start = low.rfind("\n", max(0, i - SHAPE_REACH), i) + 1
    before = low[max(line_start, i - SHAPE_REACH) : i].split()[-_MAILGUN_BEFORE:]
    if any(_digest_word(word) for word in before):
        return None
    end = i + len("mailgun")
    line_end = low.find("\n", end, end + SHAPE_REACH)
    for offset, word in blank_words(
        low[end : line_end if line_end >= 0 else end + SHAPE_REACH], _MAILGUN_READ
    ):
        head, _, tail = word.rpartition("=")  # MAILGUN_API_KEY=…
        span = _trimmed(end + offset + len(word) - len(tail), tail)
        if span is not None and _mailgun_key(low[span[0] : span[1]]):
            return None if _digest_word(head) else span
        if _digest_word(word):
            return None  # mailgun message id 9b2e…
    return None


def _digest_word(word: str) -> bool:
    """Whether a word (or a part of a name: message-id, mailgun_msg_id) is _DIGEST_WORDS'."""
    parts = word.strip(_TRIM).replace("_", "-").replace(".", "-").split("-")
    return not _DIGEST_WORDS.isdisjoint(parts)


def _mailgun_key(core: str) -> bool:
    first = core.split("-", 1)[0]
    if len(first) != 32 or (first != core and not mailgun_private_key(core)):
        return False
    digits = sum(c in _ASCII_DIGITS for c in first)
    return set(first) <= _HEX and 4 <= digits <= 28


def mailgun_private_key(value: str) -> bool:
    """A Mailgun private key of today: 32, 8 and 8 hex digits joined by "-" (48 in
    all; a UUID's 32 in five groups is none), each group of varied digits."""
    parts = value.lower().split("-")
    return [len(part) for part in parts] == [32, 8, 8] and all(
        set(part) <= _HEX and len(set(part)) >= len(part) // 4 + 2 for part in parts
    )


# ------------------------------------------------ a value on the line below

# How far the value may be indented on its line, and its least length.
_BELOW_INDENT = 8
BELOW_MIN_CHARS = 8


def value_below(low: str, j: int) -> tuple[int, int] | None:
    """(start, end) of the value alone on the next line, when the line of the secret
    word ending at ``j`` ends with a linking verb or a ":" after it ("the key is" then
    the key, "here's the token:" then the token): one word of BELOW_MIN_CHARS or more
    filling its line. None otherwise."""
    n = len(low)
    k = j
    while k < n and low[k] in " \t":
        k += 1
    linked = colon = False
    verb = next((v for v in LINKING_VERBS if low.startswith(v, k)), None)
    if verb is not None and not _word_char(low[k + len(verb) : k + len(verb) + 1] or " "):
        k += len(verb)
        linked = True
    if low.startswith(":", k):
        k += 1
        colon = True
    while k < n and low[k] in " \t\r":
        k += 1
    if not (linked or colon) or not low.startswith("\n", k):
        return None
    start = k + 1
    while start < n and start - k <= _BELOW_INDENT and low[start] in " \t":
        start += 1
    if start > k + 1 and not linked:
        return None  # "key:" then an indented line: YAML's (the next-line rule's)
    end = start
    while end < n and not low[end].isspace():
        end += 1
    rest = end
    while rest < n and low[rest] in " \t\r":
        rest += 1
    if end - start < BELOW_MIN_CHARS or (rest < n and low[rest] != "\n"):
        return None
    return None if low[end - 1] == ":" else (start, end)  # "credential1:" is a key


# ------------------------------------------- names that say they hold a secret

# A file's or a variable's name whose last word is one of these holds a secret: what
# prints it (``cat secrets/db_password.txt``, ``echo $API_TOKEN``) prints the secret.
NAME_SECRET_WORDS = frozenset(
    (
        "password", "passwd", "passphrase", "pass", "pwd", "pw", "secret", "token",
        "apikey", "credential", "credentials", "creds", "psk", "key", "privkey",
    )
)  # fmt: skip
# Words after the secret word that still name the value (API_TOKEN_PROD, jwt_key_b64).
_NAME_QUALIFIERS = frozenset(
    (
        "prod", "production", "dev", "staging", "stage", "test", "live", "local", "old",
        "new", "current", "b64", "base64", "hex", "raw", "value", "enc", "encrypted",
    )
)  # fmt: skip
# A key that is no secret: "public_key", "sort_key", "cache_key", "primary key".
_PLAIN_KEYS = frozenset(
    (
        *PUBLIC_WORDS, "sort", "cache", "partition", "primary",
        "foreign", "idempotency", "object", "lookup", "routing", "hash", "row", "map",
        "hot", "shortcut", "composite", "unique", "index", "dedup", "group", "range",
    )
)  # fmt: skip
# A file that holds the value alone (not a document or code, whose key rules read it).
_VALUE_FILE_EXTENSIONS = frozenset(
    (
        "", "txt", "key", "pem", "secret", "secrets", "token", "pass", "pwd", "b64", "base64",
        "asc", "raw",
    )
)  # fmt: skip
# An extension that says the file holds secrets whatever its name (rsyncd.secrets).
_SECRET_EXTENSIONS = frozenset(("key", "secret", "secrets"))
# A file named with one of these words is a template meant to be committed: its values
# are placeholders (token.example, .env.sample).
TEMPLATE_WORDS = ("example", "sample", "template", "dist")
_NOT_SECRET_FILE_WORDS = frozenset((*PUBLIC_WORDS, *TEMPLATE_WORDS))
# A dotenv file's template: .env.example, .env.defaults, .env.example.bak (a copy of one).
_ENV_TEMPLATE_WORDS = frozenset((*TEMPLATE_WORDS, "defaults"))
_SECRET_DIRECTORIES = frozenset(("secrets", ".secrets", "secret", "credentials"))


def name_words(name: str) -> list[str]:
    """The words of an identifier or a file name, lower case: ``API_TOKEN``,
    ``dbPassword``, ``db-password.txt`` → ``[api, token]``, ``[db, password]``,
    ``[db, password, txt]``."""
    words: list[str] = []
    current = ""
    for i, c in enumerate(name):
        if not c.isalnum():
            if current:
                words.append(current.lower())
            current = ""
            continue
        if current and c.isupper() and name[i - 1].islower():
            words.append(current.lower())
            current = ""
        current += c
    if current:
        words.append(current.lower())
    return words


def secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret: its last word (after
    qualifiers) is a secret word (``API_TOKEN``, ``DB_PASSWORD_PROD``, ``jwtSecret``),
    and a key is not a public or a lookup key (``PUBLIC_KEY``, ``CACHE_KEY``);
    ``AWS_ACCESS_KEY_ID``, ``TOKEN_FILE``, ``SSH_AUTH_SOCK`` name no secret."""
    words = name_words(name)
    while len(words) > 1 and (words[-1] in _NAME_QUALIFIERS or words[-1].isdigit()):
        words.pop()
    if not words or words[-1] not in NAME_SECRET_WORDS:
        return False
    return not (words[-1] == "key" and len(words) > 1 and words[-2] in _PLAIN_KEYS)


def secret_path(path: str) -> bool:
    """Whether a file's path says it holds a secret alone: a value file (no extension,
    ``.txt``, ``.key``, ``.pem``…) whose name ends in a secret word
    (``secrets/db_password.txt``, ``config/master.key``, ``.git-credentials``) or that
    lies in a ``secrets`` directory (``/run/secrets/jwt``); not a public key, a template
    or a document (``id_rsa.pub``, ``token.example``, ``secrets/README.md``)."""
    parts = path.strip("\"'").replace("\\", "/").split("/")
    base = parts[-1]
    words = name_words(base)
    if not words or not _NOT_SECRET_FILE_WORDS.isdisjoint(words):
        return False
    dotted = "." in base.lstrip(".")
    extension = words[-1] if dotted else ""
    if extension not in _VALUE_FILE_EXTENSIONS:
        return False
    if extension in _SECRET_EXTENSIONS or not _SECRET_DIRECTORIES.isdisjoint(
        p.lower() for p in parts[:-1]
    ):
        return True
    stem = words[:-1] if dotted else words
    return bool(stem) and secret_name("_".join(stem))


def is_env_file(path: str) -> bool:
    """True when ``path`` names a dotenv-style file whose values are secrets.

    ``.env``, ``.env.local``, ``.env.production``, ``prod.env``, and ``.envrc``
    (direnv: it is a shell script, but its point is to export secrets, and
    :func:`memlane.privacy.mask_env_file` only touches its ``KEY=VALUE`` lines), and
    PostgreSQL's ``.pgpass`` (``host:port:database:user:password`` lines). Templates
    meant to be committed are not (``.env.example``, ``.env.sample``,
    ``.env.template``, ``.env.dist``, ``.env.defaults``, and a copy such as
    ``.env.example.bak``): their values are placeholders and their text is useful memory
    (their real secrets, if any, are still caught by the secret rules).
    """
    name = path.strip("\"'").replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    if name in (".env", ".envrc", ".pgpass"):
        return True
    if name.startswith(".env."):
        return _ENV_TEMPLATE_WORDS.isdisjoint(name[len(".env.") :].split("."))
    return name.endswith(".env") and len(name) > len(".env")


# Commands that print a file whole, and those that print what they read from one (a
# part, a transform, or as the shell reads it: ``source``).
FILE_PRINTERS = frozenset(
    ("cat", "bat", "batcat", "head", "tail", "tac", "nl", "less", "more", "type",
     "get-content", "gc")
)  # fmt: skip
FILE_READERS = FILE_PRINTERS | frozenset(
    ("grep", "rg", "egrep", "fgrep", "awk", "sed", "sort", "uniq", "cut", "strings", "xxd",
     "od", "hexdump", "source", ".", "diff", "tee")
)  # fmt: skip
# Commands that print their arguments, and the one that prints a variable it names.
ECHOES = frozenset(("echo", "printf", "print", "write-output", "write-host"))
VARIABLE_PRINTER = "printenv"
# Stages a printed secret may go through and still reach the terminal, changed or not.
_PASS_THROUGH = frozenset(
    ("base64", "xxd", "od", "tr", "head", "tail", "cut", "sed", "awk", "jq", "rev", "fold", "cat")
)


def pipelines(command: str) -> list[list[str]]:
    """The pipelines of a shell line (split on newlines, ``;``, ``&&``, ``||``), each as
    its stages (split on ``|``, unstripped)."""
    for sep in ("&&", "||", ";"):
        command = command.replace(sep, "\n")
    return [line.split("|") for line in command.split("\n")]


# Words that run the command after them: ``sudo heroku config``, ``time cat .env``.
COMMAND_PREFIXES = frozenset(("sudo", "command", "exec", "time", "nohup", "npx"))
# Options of a prefix that take the next word as their value (``sudo -u deploy …``,
# ``exec -a name …``).
_VALUE_OPTIONS = {
    "sudo": frozenset(("-u", "-g", "-U", "-C", "-D", "-h", "-p", "-r", "-t", "-T")),
    "exec": frozenset(("-a",)),
}
# Option letters with which ``command`` runs nothing and only says what the words after
# it are (``command -v heroku``): ``command`` is then the program.
_COMMAND_LOCATING = frozenset("vV")
# Programs that only say where or what the words after them are: ``which heroku config``
# and ``type heroku`` run no heroku.
_LOCATORS = frozenset(("command", "which", "type", "where", "whereis"))


def command_words(stage: str) -> list[str]:
    """The words of one simple command from its program on, quotes dropped and a ``#``
    comment cut (enough to see a program and its files; shlex would be exact, and cost
    milliseconds on a long heredoc): leading ``NAME=value`` words and a prefix
    (:data:`COMMAND_PREFIXES`) skipped with its options (``sudo -u deploy``), unless an
    option makes it a locator (``command -v heroku``: the program is ``command``)."""
    words = [w.strip("\"'") for w in stage.split("#", 1)[0].split()]
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # FOO=1 cat .env
    while words and words[0] in COMMAND_PREFIXES:
        at_prefix = words
        valued = _VALUE_OPTIONS.get(words[0], frozenset())
        locating = _COMMAND_LOCATING if words[0] == "command" else frozenset()
        words = words[1:]
        while words and words[0].startswith("-"):
            if not words[0].startswith("--") and not locating.isdisjoint(words[0][1:]):
                return at_prefix
            words = words[2:] if words[0] in valued else words[1:]
    return words


# Programs that only print or look up the words after them: ``echo heroku config``,
# ``man heroku config`` and ``which heroku`` list nothing.
_WORD_READERS = ECHOES | _LOCATORS | {"man", "grep", "egrep", "rg", "apropos", "whatis", "help"}


def lists_env(command: str) -> bool:
    """Whether a shell command prints an app's config vars, its environment, as
    ``NAME: value`` or ``NAME='value'`` lines (``heroku config``, ``heroku config -s |
    grep STRIPE``): values to mask as a dotenv file's, names to keep. ``heroku config``
    anywhere in the stage that prints counts (``timeout 10 heroku config``, ``bundle exec
    heroku config``, ``( heroku config )``), unless the stage's program only prints or
    looks up words (``echo heroku config``: :data:`_WORD_READERS`)."""
    for stages in pipelines(command):
        words = command_words(stages[0])  # the stage that prints; the later ones filter
        if not words or words[0].rsplit("/", 1)[-1].lower() in _WORD_READERS:
            continue
        for k in range(len(words) - 1):
            if words[k].rsplit("/", 1)[-1] == "heroku" and words[k + 1].rstrip(";") == "config":
                return True
    return False


def prints_secret_name(command: str) -> bool:
    """Whether a shell command prints a file or a variable whose name says it holds a
    secret (:func:`secret_path`, :func:`secret_name`): ``cat /run/secrets/jwt_key``,
    ``echo $API_TOKEN``, ``printenv DB_PASSWORD``. Not when the output goes to a file or
    into a program that is no filter (``echo $TOKEN | docker login --password-stdin``,
    ``echo $TOKEN | wc -c``)."""
    for stages in pipelines(command):
        for index, stage in enumerate(stages):
            if _prints_secret(stage) and _reaches_terminal(stages[index:]):
                return True
    return False


def _prints_secret(stage: str) -> bool:
    words = stage.split()
    for k, word in enumerate(words):
        program = word.lower().rsplit("/", 1)[-1]
        args = [w for w in words[k + 1 :] if not w.startswith("-")]
        if program in FILE_PRINTERS:
            return any(secret_path(arg) for arg in args if not arg.startswith(("<", ">")))
        if program == VARIABLE_PRINTER:
            return any(secret_name(arg) for arg in args)
        if program in ECHOES:
            return any(secret_name(name) for name in _expanded_names(" ".join(args)))
    return False


def _expanded_names(text: str) -> list[str]:
    """The variables ``text`` expands: ``$NAME``, ``${NAME}``, ``${NAME:-x}``,
    ``$env:NAME`` (PowerShell), ``%NAME%`` (cmd); not ``${#NAME}`` (its length)."""
    names = []
    for marker in ("$", "%"):
        k = text.find(marker)
        while k >= 0:
            j = k + 1
            if marker == "$" and text.startswith("{", j):
                j += 1
            if text[j : j + 4].lower() == "env:":
                j += 4
            end = j
            while end < len(text) and (text[end].isalnum() or text[end] == "_"):
                end += 1
            closed = marker == "$" or text.startswith("%", end)
            if end > j and closed:
                names.append(text[j:end])
            k = text.find(marker, max(end, k + 1) + (0 if marker == "$" else 1))
    return names


def _reaches_terminal(stages: list[str]) -> bool:
    """Whether the output of ``stages[0]`` reaches the terminal: no redirection to a
    file, and only filters after it."""
    for k, stage in enumerate(stages):
        out = stage.replace("2>&1", "").replace("2>", "").replace(">&", "")
        if ">" in out:
            return False
        if k > 0:
            words = stage.split()
            if not words or words[0].rsplit("/", 1)[-1] not in _PASS_THROUGH:
                return False
    return True


# ------------------------------------------------- passwords passed by position

# SDK clients built from a token, a key or a secret by position, and its index: Slack's
# WebClient, Stripe, Telegram bots, PagerDuty's APISession, Dropbox, Discord's
# client.run/bot.run and client.login, ethers' and web3's wallets from a private key,
# Heroku's from_key, SendGrid's client; Algolia's algoliasearch(APPID, KEY). Their
# argument is one word that could be a token (never a sentence, a URL or a path).
TOKEN_CALLS = {
    **dict.fromkeys(
        (
            "WebClient", "AsyncWebClient", "Stripe", "telegram.Bot", "TeleBot", "Telegraf",
            "TelegramBot", "APISession", "EventsAPISession", "Dropbox", "client.run",
            "bot.run", "client.login", "bot.login", "Wallet", "privateKeyToAccount",
            "privateKeyToAddress", "Account.from_key", "from_key", "SendGridAPIClient",
        ),
        0,
    ),
    "algoliasearch": 1,
    "SearchClient.create": 1,
}  # fmt: skip
# Calls that take a password (or an API secret) by position, not by a named key, and
# the index of that argument: JDBC's DriverManager.getConnection(url, user, pw), PHP's
# new PDO(dsn, user, pw), NetworkCredential(user, pw), HTTPBasicAuth(user, pw), an SDK
# built from an id and a secret (new Twilio(sid, token), OAuthHandler(key, secret))…
# How a PHP stack trace writes a constructor's call: PDO->__construct('dsn', 'u', 'pw').
CONSTRUCTOR_CALL = "->__construct"
CREDENTIAL_CALLS = {
    "getConnection": 2,
    "PDO": 2,
    "mysqli": 2,
    "mysqli_connect": 2,
    "mysql_connect": 2,
    "mysqli_real_connect": 3,
    "ftp_login": 2,
    "ssh2_auth_password": 2,
    "NetworkCredential": 1,
    "UsernamePasswordCredentials": 1,
    "UsernamePasswordAuthenticationToken": 1,
    "PasswordAuthentication": 1,
    "HTTPBasicAuth": 1,
    "HTTPDigestAuth": 1,
    "HTTPProxyAuth": 1,
    "BasicAuth": 1,
    "basic_auth": 1,
    "basicAuth": 1,
    "setBasicAuth": 1,
    "withBasicAuth": 1,
    "simple_bind_s": 1,
    "simple_bind": 1,
    "login": 1,
    "log_in": 1,
    "logIn": 1,
    "signIn": 1,
    "sign_in": 1,
    "authenticate": 1,
    "set_password": 2,
    # Django's create_user(username, email, password), Firebase's (auth, email, password),
    # DB-API connects of MySQL and SQL Server (host, user, password), Oracle's (user,
    # password), ftplib's FTP(host, user, passwd), PHP's ldap_bind(link, dn, password).
    "create_user": 2,
    "create_superuser": 2,
    "signInWithEmailAndPassword": 2,
    "createUserWithEmailAndPassword": 2,
    "mysql.connector.connect": 2,
    "MySQLdb.connect": 2,
    "pymysql.connect": 2,
    "pymssql.connect": 2,
    "mariadb.connect": 2,
    "cx_Oracle.connect": 1,
    "oci_connect": 1,
    "FTP": 2,
    "FTP_TLS": 2,
    "ldap_bind": 2,
    "BasicAWSCredentials": 1,
    "OAuthHandler": 1,
    "set_access_token": 1,
    "MailjetClient": 1,
    "apiConnect": 1,
    "Twilio": 1,
    "twilio": 1,
    "TwilioRestClient": 1,
    "Pusher": 2,
    "DBI->connect": 2,
    **TOKEN_CALLS,
}
# Accounts every system has, whose "name:password" line a dump of a password list shows
# (secret_rules' "user-password-line").
ACCOUNT_NAMES = frozenset(
    (
        "root", "admin", "administrator", "postgres", "sa", "pi", "ubuntu", "oracle",
        "mysql", "guest", "deploy", "jenkins", "ec2-user", "centos", "debian", "vagrant",
        "elastic", "kibana", "grafana", "rabbitmq", "superuser", "sysadmin",
    )
)  # fmt: skip
# Calls of test and browser-automation tools that type text into a field (Cypress,
# Playwright, Puppeteer, Selenium, WebdriverIO, TestCafe, Detox, Espresso, Capybara):
# what they type into a password field is one (secret_rules._pick_typed).
TYPING_CALLS = (
    "type", "fill", "send_keys", "sendKeys", "setValue", "addValue", "typeText",
    "replaceText", "pressSequentially", "press_sequentially", "fill_in", "input_text",
)  # fmt: skip
# Words near which groups of base32 characters are a one-time password's seed (shown
# for manual entry when a QR code cannot be scanned): "enter manually", "setup key"…
OTP_SEED_WORDS = ("manual", "seed", "authenticator", "2fa", "mfa", "totp", "otp", "two-factor",
                  "setup key", "secret key")  # fmt: skip
OTP_SEED_REACH = 200  # characters before the groups


def otp_seed_context(low: str, start: int) -> bool:
    """Whether an OTP seed word stands in the OTP_SEED_REACH characters before ``start``."""
    before = low[max(0, start - OTP_SEED_REACH) : start]
    return any(word in before for word in OTP_SEED_WORDS)


# Names that take the secret second only when they build a Twilio client (the word in
# the call's qualifier, or an account SID first): Twilio.init, TwilioClient.Init, Client.
TWILIO_CALLS = ("init", "Init", "Client")


# ------------------------------------------------ env names without a secret word

# Env names that hold a secret though they have no secret word, or only one too short to
# be read as a key (``PGPASS``, ``STRIPE_SK``, ``SIGNATURE_SALT``, ``PEPPER``,
# ``VAULT_UNSEAL``, ``PAYMENT_GATEWAY_PRIVATE``): secret_forms' env rule, its gate.
SECRET_ENV_ENDINGS = ("PGPASS", "_SK", "SALT", "PEPPER", "UNSEAL", "UNSEAL_KEY", "_PRIVATE")

# What a door or alarm code opens ("the door code", "code for the garage"); a safe's is
# its "combination":
# secret_forms' door-code rule, its gate.
DOOR_WORDS = ("door", "alarm", "keypad", "garage", "lockbox")

# Names a CSV line's first cell ends with when its second is a secret ("SMTP_PASSWORD,X"
# under "name,value"): secret_forms' csv rule, its gate.
CSV_SECRET_NAMES = ("password", "passwd", "secret", "token", "pwd", "api_key", "apikey")

# Words that name a wallet's private key: secret_forms' WIF rule asks for one in the
# text (and its gate).
WIF_WORDS = ("wif", "privkey", "private key")

# What names recovery codes or a recovery key ("backup codes", "recovery-key", "scratch
# code"; an "s" may follow): secret_forms' recovery rule and its gate.
RECOVERY_NAMES = tuple(
    f"{kind}{joiner}{what}"
    for kind in ("backup", "recovery", "emergency", "scratch", "rescue")
    for joiner in (" ", "-", "_", "")
    for what in ("code", "key")
)
# A network's key in prose ("guest wifi key is X"): secret_forms' rule and its gate.
NETWORK_KEY_NAMES = tuple(
    f"{net} key" for net in ("wifi", "wi-fi", "wlan", "wpa", "wpa2", "network", "guest", "router")
)

# A .pgpass line's port: PostgreSQL's, PgBouncer's, a second cluster's, or "*" (a line
# of another port is read only where a command writes it or "pgpass" is named).
PGPASS_PORTS = ("5432", "5433", "6432", "*")
