"""Privacy filters: ``<private>`` blocks, memlane's own injected context, secrets.

Every entry point (hooks, CLI, HTTP, MCP, importers) calls :func:`scrub` on text
before it is hashed, stored or embedded, so nothing private ever reaches the
database file and :func:`normalized_hash` is computed on what is stored
(DESIGN §10, invariant 1).

Design notes:

* This module is on the per-prompt hook path, so importing it must be nearly free:
  at module level it imports only :mod:`memlane.secret_gates` and the word lists of
  :mod:`memlane.secret_words` (no regex, no import of their own); regular expressions
  are compiled on first use.
* Secrets are masked by principle, not by sample (:mod:`memlane.secret_rules`):
  a value after a secret-bearing key is masked whatever its characters, up to its
  natural end; known token formats, URL credentials, headers, tools' password
  options and prose ("the password is X") are rules of their own. Each rule has a
  gate (:mod:`memlane.secret_gates`); :func:`needs_scrub`, the OR of all gates and
  the tag test, lets :func:`scrub` return clean text untouched without importing
  :mod:`re` (most prompts and transcript chunks). Gates may say "maybe" wrongly,
  never "no" wrongly: tests compare gated and ungated scrubbing.
* Tags are removed by a small scanner (open/close depth counting) rather than one
  regex, because ``<private>`` blocks nest and may be left unclosed, or closed in a
  field whose opening tag was in another (a record's title and content are filtered
  apart). One rule for both sides: an opening tag without its closing tag removes the
  text after it, a closing tag without its opening tag the text before it. Removing a
  block can glue two halves of a tag together (``<priv<private>x</private>ate>``),
  so stripping repeats until nothing changes (a few passes; crafted input that
  glues a tag at every pass is cut at its first remaining tag instead).
* Secrets are replaced by ``[REDACTED:<kind>]``; key/value rules keep the key name
  and mask only the value.
* Characters a reader does not see (zero-width, soft hyphen, byte order mark) and the
  fullwidth forms of ASCII can split a key name, a token or a tag so that no rule
  matches; :func:`scrub` also filters the text's plain form (:func:`unhidden`) and keeps
  that, filtered, when it shows something.
* Files read or printed by tools: :func:`shows_env_file` says when a tool call
  reveals a dotenv file (Read of ``.env``, ``cat .env``…); the capture code then
  masks every ``KEY=VALUE`` value with :func:`mask_env_file` before storing.
* Filtering once: a transcript turn is scrubbed whole, then cut into units, and
  the write path would filter each unit again. :class:`CleanSource` scrubs the
  turn's texts and remembers their lines; :meth:`CleanSource.vouch` labels a
  unit :class:`Scrubbed` when every line of it is a line (or a piece of a line)
  of that scrubbed text, or one of the few words a unit puts before such a line
  (``$ command``). Such text can only show what the scrub let through, so
  :meth:`Filter.scrub` (the write path's filter) returns it as is. Only this
  module makes ``Scrubbed`` text, and any ``str`` operation on it returns a
  plain ``str``: an edit loses the label.
"""

from __future__ import annotations

from memlane import secret_gates, secret_words
from memlane.utf8 import storable

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence

__all__ = [
    "INJECTED_CLOSE",
    "INJECTED_OPEN",
    "CleanSource",
    "Filter",
    "Scrubbed",
    "hash_scrubbed",
    "is_env_file",
    "left_out",
    "mask_env_file",
    "mask_secrets",
    "needs_scrub",
    "normalized_hash",
    "redacted",
    "repeated",
    "scrub",
    "shows_env_file",
    "strip_injected_context",
    "strip_private",
    "vouched",
]

INJECTED_OPEN = "<memlane-context>"
INJECTED_CLOSE = "</memlane-context>"

# Upper bound of scrub passes; one pass is a fixpoint for all but contrived input.
_MAX_PASSES = 4
# Upper bound of tag-stripping passes before the cut-at-first-tag fallback.
_MAX_STRIP_PASSES = 8

redacted = secret_gates.redacted
is_env_file = secret_words.is_env_file


# --------------------------------------------------------------------------- tags


def _tag_regex(name: str) -> re.Pattern[str]:
    import re

    # A tag inside JSON or JavaScript text (a tool printing JSON, Go's encoder escaping
    # "<" as \u003c, "\/" for "/"), inside HTML (&lt;private&gt;, &#60;, with the
    # leading zeros and without the ";" that HTML5 still reads) or a URL (%3Cprivate%3E),
    # escaped twice or more (%253C, &amp;lt;), is the same tag to whoever reads it back;
    # so is one with blanks or line breaks after its "<" or "/", or a namespace prefix
    # on its name (<x:private>, XML's).
    #
    # The name is enough to make a tag: what follows an opening tag's name up to its ">"
    # (attributes of any length, quoted values holding "<" or ">") is inside the block
    # either way. The ">" is looked for over a bounded run without "<" (so a stray
    # "<private" costs a bounded look-ahead) only to see <private/> and where a closing
    # tag ends; beyond that run, the tag is its name. Blanks before the ">" are read by
    # the run itself, and after a "/" only: a run of blanks read again at every step of
    # the run cost 3 s per MB of "<private" and 511 spaces. Before the name, runs (blanks,
    # escapes' leads, the prefix) are possessive (*+, ++): none can give back a character
    # that what follows it would take, and a "<" then 20,000 blanks, read again from each
    # of them, took 6 s.
    lt, colon = _spelled(secret_gates.LT), _spelled(secret_gates.COLON)
    # An atomic group, not "*+": Python 3.11.0-3.11.2 match a possessive repeat of a group
    # holding a repeat wrongly (zero blanks then "%2f" failed: gh-101955, fixed in 3.11.3).
    blanks = f"(?>{_spelled(secret_gates.BLANK)}*)"
    return re.compile(
        rf"{lt}{blanks}(?P<close>{_SLASH})?{blanks}(?:[\w.\-]++{colon})?"
        + re.escape(name)
        + r"(?![\w-])"
        rf"(?:[^<>]{{0,512}}?(?P<selfclose>{_SLASH}[ \t]*)?{_GT})?",
        re.IGNORECASE,
    )


def _spelled(spelling: secret_gates.Spelling) -> str:
    """A pattern matching one character written any of ``spelling``'s ways: the one
    table the prefilter (secret_gates.spelled_at) reads too. Longer spellings first: in
    a possessive run of blanks, "&nbsp" taken for "&nbsp;" is not given back."""
    import re

    def longest_first(options: tuple[str, ...]) -> list[str]:
        return [re.escape(o) for o in sorted(options, key=len, reverse=True)]

    options = [re.escape(c) for c in spelling.plain]
    if spelling.whitespace:
        options.append(r"\s")
    options += longest_first(spelling.backslashed)
    if spelling.percent:
        options.append(rf"{_PCT}(?:{'|'.join(spelling.percent)})")
    references = longest_first(spelling.html)
    references += [rf"{re.escape(kind)}0*{number};?" for kind, number in spelling.numeric]
    if references:
        options.append(rf"{_AMP}(?:{'|'.join(references)})")
    return f"(?:{'|'.join(options)})"


# Kept in step with secret_gates' _slash_at and tag_near, the prefilter's reading of these.
# "&" and "%" lead an escape, and may be escaped themselves: "&amp;", "%25".
_AMP = r"&(?:amp;)*+"
_PCT = r"%(?:25)*+"
_GT = rf"(?:>|\\u003e|\\x3e|{_AMP}(?:gt;?|#0*62;?|#x0*3e;?)|{_PCT}3e)"
_SLASH = rf"(?:\\?/|{_PCT}2f)"


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
            if depth == 0:
                # No opening tag before it: that one was in another field of the record
                # (a title ending "<private>") or spelled in a way this cannot read. The
                # text before it was private, as the text after an unclosed opening tag is.
                pieces.clear()
            depth = max(depth - 1, 0)
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
    # Crafted input can glue a new tag at every pass ("<priv" * n ... "ate/>" * n),
    # which would make this quadratic: give up instead, keeping nothing. Not even the
    # text before the first tag left: a closing tag glued at a later pass would have
    # made it private. Removing more is the safe side.
    return text if tag.search(text) is None else ""


def strip_private(text: str) -> str:
    """Remove ``<private>…</private>`` blocks, tags included.

    Handles closed, nested, multi-line and unclosed blocks (an unclosed opening tag
    removes everything after it), any letter case and attributes
    (``<Private reason="x">``, of any length, quoted values holding ``<``: the name
    opens the block). A closing tag that no opening tag before it matches removes
    everything before it: its block began in another field of the same record
    (``--title 'head <private>'``) or in a spelling the filter cannot read.
    ``<private/>`` is dropped.
    """
    global _PRIVATE_TAG
    if _PRIVATE_TAG is None:
        _PRIVATE_TAG = _tag_regex("private")
    return _strip_blocks(text, _PRIVATE_TAG)


def strip_injected_context(text: str) -> str:
    """Remove memlane's own injected context (``INJECTED_OPEN`` … ``INJECTED_CLOSE``).

    Captured prompts and transcripts contain what memlane injected earlier; removing
    it keeps memory from feeding on itself. Unclosed blocks run to the end of text, and a
    closing tag without its opening tag removes the text before it (as in
    :func:`strip_private`)."""
    global _INJECTED_TAG
    if _INJECTED_TAG is None:
        _INJECTED_TAG = _tag_regex(INJECTED_OPEN[1:-1])
    return _strip_blocks(text, _INJECTED_TAG)


# ------------------------------------------------------------------- secrets


def mask_secrets(text: str, extra_patterns: Sequence[str] = ()) -> str:
    """Replace secrets in ``text`` by ``[REDACTED:<kind>]`` markers.

    Kinds: private-key (a whole PEM, OpenSSH or PuTTY block), jwt, anthropic-key,
    openai-key, github-token, gitlab-token, slack-token, slack-webhook,
    discord-webhook, stripe-key, square-token, google-api-key, npm-token,
    pypi-token, huggingface-token, sendgrid-key, twilio-key, shopify-token,
    digitalocean-token, vault-token, databricks-token, telegram-token, mailgun-key,
    age-key, doppler-token, postman-key, linear-key, grafana-token, discord-token,
    notion-token, atlassian-token, newrelic-key, flyio-token, supabase-key and the other
    prefixed formats of :mod:`memlane.secret_rules`, aws-key, aws-secret (near a key id,
    after a secret word, or standing alone), pin (4 to 8 digits after ``pin``/``otp``),
    auth-header, cookie, url-credentials, assignment (``password =
    "…"``, ``--token …``: the key stays, the value is masked), high-entropy (a
    random value under a weak key name such as ``session_id``, or near a secret
    word), prose ("the password is …"), pin (also a one-time or card security code
    after its word: "verification code 493817", "cvv 123"), seed-phrase, card-number
    (:mod:`memlane.secret_words`), assertion (the values a failed assertion's report
    shows under a secret's name), mailgun-key (after the word "mailgun"), env (a
    ``heroku config`` listing's values), google-oauth-token and custom (``extra_patterns``,
    regex strings from config; an invalid one is skipped with a logged warning).
    """
    if isinstance(extra_patterns, str):  # one pattern passed bare, not as a list
        extra_patterns = (extra_patterns,)
    from memlane import secret_rules

    return secret_rules.mask(text, extra_patterns)


def needs_scrub(text: str) -> bool:
    """False only when :func:`scrub` (without extra patterns) returns ``text`` unchanged.

    A prefilter made of ``str`` methods and, once a long text has needed it, one
    Aho-Corasick pass (no regex; a short prompt imports nothing): microseconds on a
    prompt, so callers can skip the whole filter for text that cannot hold a secret
    or a tag. True means "maybe": run :func:`scrub`. A text with characters that hide
    what they spell (:func:`unhidden`) is asked about in its plain form too.
    """
    if _visible_needs_scrub(text):
        return True
    plain = unhidden(text)
    return plain is not None and _visible_needs_scrub(plain)


def unhidden(text: str) -> str | None:
    """``text`` without invisible characters (``secret_gates.INVISIBLE``) and with the
    fullwidth forms of ASCII (``ｐａｓｓｗｏｒｄ``) as ASCII; None when that changes
    nothing. :func:`scrub` filters this plain form too: when it shows a secret or a tag,
    the plain form is what is kept, filtered."""
    if not secret_gates.hides(text):
        return None
    plain = text.translate(secret_gates.PLAIN_FORMS)
    return plain if plain != text else None


def _visible_needs_scrub(text: str) -> bool:
    g = secret_gates
    low = g.fold(text)
    # tag_near asks for a "<" (or an escaped one) before the name: a text without one is
    # ruled out by the two scans for the names, not five more for the escapes.
    if g.tag_near(low, "private") or g.tag_near(low, "memlane-context"):
        return True
    if g.any_anchor(text) or g.any_literal(text, low) or g.any_shape(text):
        return True
    return g.any_key_rule(text, low) or g.any_word_rule(text, low)


# --------------------------------------------------------------------- env files

_ENV_LINE: re.Pattern[str] | None = None
_PGPASS_LINE: re.Pattern[str] | None = None


def mask_env_file(text: str) -> str:
    """Mask every value of the ``KEY=VALUE`` lines of a dotenv file's contents.

    Keys, comments and blank lines stay (they tell what is configured); values (of
    ``KEY: value`` lines too, as ``heroku config`` prints them) become
    ``[REDACTED:env]``, quotes kept, multi-line quoted values included (``"…"``,
    triple-quoted; a private key in any of them, closed or not, is masked whole). ``export``
    prefixes and the line-number prefixes of tool output (``  12→KEY=v``) are
    understood. A ``.pgpass`` line (``host:port:database:user:password``, the port
    a number or ``*``) keeps its first four fields. The rest then goes through
    :func:`mask_secrets`.
    """
    import re

    global _ENV_LINE, _PGPASS_LINE
    if _PGPASS_LINE is None:
        from memlane.secret_rules import PGPASS_FIELDS

        # The password ends the line.
        _PGPASS_LINE = re.compile(
            rf"^(?P<pre>[ \t]*(?:\d+(?:\t|→|:|\|)[ \t]*)?{PGPASS_FIELDS})(?P<v>[^\n]*\S)",
            re.MULTILINE,
        )
    if _ENV_LINE is None:
        from memlane.secret_rules import ENV_LINE

        _ENV_LINE = re.compile(ENV_LINE, re.MULTILINE)
    marker = redacted("env")

    def hidden(value: str) -> str:
        return value if not value.strip() or value.strip() == marker else marker

    def replace(m: re.Match[str]) -> str:
        quote = m.group("q")
        if not quote:
            return m.group("pre") + hidden(m.group("v"))
        # After the closing quote: a comment stays, anything else is more of a value.
        rest = m.group("rest")
        tail = rest if rest.lstrip().startswith("#") else hidden(rest)
        return f"{m.group('pre')}{quote}{hidden(m.group('qv'))}{quote}{tail}"

    text = _PGPASS_LINE.sub(lambda m: m.group("pre") + marker, text)
    # A private key first: as a value (SIGNING_KEY="-----BEGIN…", multi-line in dotenv)
    # an env line would mask its first line only when the quote is not closed, taking
    # the BEGIN line that lets the private-key rule find the rest.
    from memlane.secret_gates import fold
    from memlane.secret_rules import rules

    low = fold(text)
    for rule in rules():
        if rule.kind == "private-key" and rule.gate(text, low):
            masked = rule.apply(text)
            if masked != text:
                text, low = masked, fold(masked)
    return mask_secrets(_ENV_LINE.sub(replace, text))


# Programs that, alone, print the environment.
_ENV_DUMPERS = frozenset(("env", "printenv", "export", "set", "declare"))


def reveals_secret(tool_name: str, tool_input: object) -> bool:
    """True when a tool call prints a secret (``pass show X``, ``op item get … --reveal``,
    ``kubectl get secret … | base64 -d``…): its whole output is one, withheld."""
    if tool_name != "Bash" or not isinstance(tool_input, dict):
        return False
    command = tool_input.get("command")
    if not isinstance(command, str):
        return False
    low = command.lower()
    if not secret_gates.may_reveal(low):
        return False  # the gate of the rule: most commands never load the rules
    from memlane import secret_rules

    return secret_rules.reveals_secret(command)


REVEALED = secret_gates.redacted("revealed-secret")


def shows_env_file(tool_name: str, tool_input: object) -> bool:
    """True when a tool call shows the contents of a dotenv file, so its output (or,
    for Write/Edit, its new text) must go through :func:`mask_env_file`.

    Read/Write/Edit of a path :func:`is_env_file` accepts; a Bash command that runs
    a printer (``cat``, ``head``, ``grep``, ``source``…) on such a path, dumps the
    environment (``env``, ``printenv``, ``export -p``) or lists an app's config vars
    (``heroku config``: ``NAME:  value`` lines).
    """
    if not isinstance(tool_input, dict):
        return False
    if tool_name != "Bash":
        path = (
            tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
        )
        return isinstance(path, str) and is_env_file(path)
    command = tool_input.get("command")
    if not isinstance(command, str):
        return False
    if "env" not in command and not any(
        w in command for w in ("export", "set", "declare", "pgpass", "config")
    ):
        return False  # every dotenv name, dumper and config listing holds one of these
    if secret_words.lists_env(command):
        return True
    for segment in _command_segments(command):
        words = secret_words.command_words(segment)
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program in _ENV_DUMPERS and (len(words) == 1 or words[1:] in (["-p"], ["-x"])):
            return True
        if program in secret_words.FILE_READERS and any(
            is_env_file(w) for w in words[1:] if not w.startswith("-")
        ):
            return True
    return False


def _command_segments(command: str) -> list[str]:
    """The simple commands of a shell line, split on ``;``, ``&&``, ``||``, ``|``."""
    return [
        stage.strip()
        for stages in secret_words.pipelines(command)
        for stage in stages
        if stage.strip()
    ]


# ------------------------------------------------------------------ entry points


def _strip_all(text: str) -> str:
    return strip_injected_context(strip_private(text))


def scrub(text: str, extra_patterns: Sequence[str] = ()) -> str:
    """strip_private, then strip_injected_context, then mask_secrets.

    Every entry point calls this before hashing, storing or embedding. The result is
    a fixpoint (``scrub(scrub(x)) == scrub(x)``): if masking changed what a tag
    reads (a value masked inside a tag), the passes repeat. Masking
    itself is idempotent, so a pass whose stripping changes nothing is the last. A lone
    surrogate, which UTF-8 cannot store, becomes U+FFFD first (:func:`memlane.utf8.storable`).
    """
    text = storable(text)
    if not extra_patterns and not needs_scrub(text):
        return text
    out = _scrub_visible(text, extra_patterns)
    plain = unhidden(text)
    if plain is not None:
        clean = _scrub_visible(plain, extra_patterns)
        if clean != plain:
            out = clean  # what the plain form shows: kept in that form, filtered
    return out


def _scrub_visible(text: str, extra_patterns: Sequence[str]) -> str:
    stripped = _strip_all(text)
    out = mask_secrets(stripped, extra_patterns)
    if out == stripped == text:
        return out  # the next pass would strip this same text again: a fixpoint
    for _ in range(_MAX_PASSES):
        stripped = _strip_all(out)
        if stripped == out:
            break
        out = mask_secrets(stripped, extra_patterns)
    return out


# How much of a bad value an error message shows, and how much is filtered to show it.
EXCERPT_CHARS = 80
_EXCERPT_WINDOW = 1000


def excerpt(value: object) -> str:
    """A short, filtered quote of a value from input, for an error message.

    A bad field can be megabytes long or hold a secret: the message shows its first
    ``EXCERPT_CHARS`` characters after :func:`scrub`, quoted like ``repr``. Only a
    window is scrubbed (a long value costs nothing), wide enough that a secret
    starting in the part shown is seen whole by the filter.
    """
    text = value if isinstance(value, str) else repr(value)
    clean = scrub(text[:_EXCERPT_WINDOW])
    shown = repr(clean[:EXCERPT_CHARS]) if isinstance(value, str) else clean[:EXCERPT_CHARS]
    return shown + "…" if len(text) > EXCERPT_CHARS or len(clean) > EXCERPT_CHARS else shown


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

    from memlane.digest import sha256_hex

    # "…" (memlane's own elision marks) is the usual reason text is not ASCII or NFKC;
    # its decomposition spelled out, the text is often ASCII, and normalize() mostly
    # takes its quick-check exit. NFKC depends only on the full decomposition, so the
    # result is the same.
    spelled = clean if clean.isascii() else clean.replace("\u2026", "...")
    if spelled.isascii():
        norm = spelled.lower()  # ASCII is NFKC-stable, and casefolds to its lower case
    else:
        norm = unicodedata.normalize("NFKC", spelled)
        # NFKC again after casefold: casefolding can produce non-normalized sequences.
        norm = unicodedata.normalize("NFKC", norm.casefold())
    # Collapse whitespace runs without re: str.split() and re's \s agree on what
    # whitespace is (Py_UNICODE_ISSPACE), so this equals re.sub(r"\s+", " ", norm).strip().
    norm = " ".join(norm.split())
    return sha256_hex(norm.encode("utf-8"))


# ------------------------------------------------------------- filtering once

# What only this module holds: the key Scrubbed's constructor asks for.
_MINT = object()
# Words a unit puts before a line of the text it shows (memlane.capture.units: "$ cmd",
# "Read path", "+ added line"); fixed words, none of them a secret or a key name.
FRAME_WORDS = frozenset(
    ("$", "+", "-", "Read", "Edit", "Write", "Grep", "Glob", "Asked:", "WebFetch", "WebSearch")
)


def left_out(count: int) -> str:
    """The line a unit puts where it leaves ``count`` lines of a text out; its own words
    and a number, so :meth:`CleanSource.vouch` takes it as it takes a frame word."""
    return f"\u2026 {'1 line' if count == 1 else f'{count} lines'} left out \u2026"


def _is_left_out(line: str) -> bool:
    if not (line.startswith("\u2026 ") and line.endswith(" left out \u2026")):
        return False
    count = line[2:].partition(" ")[0]
    return _is_count(count) and line == left_out(int(count))


def _is_count(digits: str) -> bool:
    """Whether ``digits`` can be a count memlane wrote: ASCII digits, short enough for
    ``int`` (a crafted run of thousands of digits would make it raise)."""
    return 0 < len(digits) <= 12 and digits.isascii() and digits.isdigit()


def repeated(line: str, times: int) -> str:
    """``line`` as tool output shows it when it came ``times`` times in a row (its own
    words: :meth:`CleanSource.vouch` takes it when it takes ``line``)."""
    return f"{line} (\u00d7{times})"


def _unrepeated(line: str) -> str | None:
    """The line :func:`repeated` made ``line`` from; None when it made none."""
    base, mark, times = line.rpartition(" (\u00d7")
    digits = times[:-1]
    if mark and _is_count(digits) and line == repeated(base, int(digits)):
        return base
    return None


# A line that is not a whole line of the clean text is looked for inside it, at most
# this many times per vouched text and only in clean text up to this size; beyond
# either, the text is not vouched for (and is filtered again, which is always right).
VOUCH_SEARCHES = 4
VOUCH_SEARCH_CHARS = 64_000
# Texts up to this length that a Filter left unchanged are remembered, at most
# CLEAN_CACHE_SIZE of them (then the memory starts over).
CLEAN_CACHE_CHARS = 200
CLEAN_CACHE_SIZE = 4096


class Filter:
    """:func:`scrub` with fixed extra ``patterns``, remembering the short texts it left
    unchanged (the same tool names, roles and paths come back on every chunk), so
    they are not filtered again; a text that needed masking is never remembered.
    Text :func:`vouched` for under the same patterns is returned as it is."""

    __slots__ = ("_clean", "patterns")

    def __init__(self, patterns: Sequence[str] = ()) -> None:
        if isinstance(patterns, str):
            patterns = (patterns,)
        self.patterns = tuple(patterns)
        self._clean: set[str] = set()

    def scrub(self, text: str) -> str:
        """:func:`scrub` of ``text`` under this filter's patterns."""
        short = len(text) <= CLEAN_CACHE_CHARS
        if (short and text in self._clean) or vouched(text, self.patterns):
            return text
        clean = scrub(text, self.patterns)
        if short and clean == text:
            if len(self._clean) >= CLEAN_CACHE_SIZE:
                self._clean = set()
            self._clean.add(text)
        return clean


class Scrubbed(str):
    """Text this module vouches for: made of what :func:`scrub` returned under
    ``patterns`` (see :class:`CleanSource`). Only this module makes one."""

    patterns: tuple[str, ...]

    def __new__(cls, text: str, patterns: tuple[str, ...], mint: object) -> Scrubbed:
        if mint is not _MINT:
            raise TypeError("Scrubbed text is made by memlane.privacy only (CleanSource.vouch)")
        self = super().__new__(cls, text)
        self.patterns = patterns
        return self

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return (str, (str(self),))  # a copy is plain text: the label stays in this process


def vouched(text: str, patterns: Sequence[str] = ()) -> bool:
    """True when ``text`` is :class:`Scrubbed` under exactly ``patterns``: filtering it
    again would show nothing more of what the filter removed."""
    return isinstance(text, Scrubbed) and text.patterns == tuple(patterns)


class CleanSource:
    """Texts scrubbed together (one transcript turn), and the proof that a text cut
    from them shows nothing the scrub removed (:meth:`vouch`).

    Only what :meth:`scrub` returned (through ``filter``, a :class:`Filter`) is
    remembered, so nothing unfiltered can be vouched for.
    """

    __slots__ = ("_filter", "_lines", "_parts", "_size", "_whole", "patterns")

    def __init__(self, filter: Filter) -> None:
        if not isinstance(filter, Filter):
            raise TypeError("CleanSource filters through a privacy.Filter")
        self._filter = filter
        self.patterns = filter.patterns
        self._lines: set[str] = set()
        self._parts: list[str] = []
        self._size = 0
        self._whole: str | None = None

    def scrub(self, text: str) -> str:
        """:func:`scrub` under this source's patterns; the result is remembered."""
        clean = self._filter.scrub(text)
        lines = list(map(str.strip, clean.split("\n")))
        self._lines.update(lines)
        if "\u2192" in clean:
            # A tool's numbered lines ("  12→code") are shown without their numbers.
            for line in lines:
                number, arrow, rest = line.partition("\u2192")
                if arrow and number.isdigit():
                    self._lines.add(rest.strip())
        self._parts.append(clean)
        self._size += len(clean)
        self._whole = None
        return clean

    def vouch(self, text: str) -> str:
        """``text`` as :class:`Scrubbed` when each of its lines, stripped, is blank, a
        line of the scrubbed texts (a numbered line also without its number), a piece
        of one, one of these in parentheses, a word of ``FRAME_WORDS`` and then one
        of these (and maybe a line count, ``(12 lines)``), a :func:`left_out` line, or
        one of these :func:`repeated` that the filter leaves as it is; otherwise
        ``text`` unchanged (the write path filters it)."""
        lines = self._lines
        searches = 0
        for line in map(str.strip, text.split("\n")):
            if not line or line in lines or (line[0] == "\u2026" and _is_left_out(line)):
                continue
            # A repeat's count is memlane's, its line the source's: taken if the filter
            # leaves the two together as they are.
            base = _unrepeated(line) if line[-1] == ")" else None
            if base is not None and base.strip() in lines and self._filter.scrub(line) == line:
                continue
            if line.startswith("(") and line.endswith(")"):  # "(what the command does)"
                line = line[1:-1].strip()
                if line in lines:
                    continue
            word, _, rest = line.partition(" ")
            if word in FRAME_WORDS:
                line = rest.strip()
                if line.endswith(" lines)"):  # "Write app.py (12 lines)"
                    cut = line.rfind(" (")
                    if line[cut + 2 : -len(" lines)")].isdigit():
                        line = line[:cut]
                if not line or line in lines:
                    continue
            # A piece of a line (a cut, a relative path, an output's line without its
            # display prefix): looked for in the clean text itself, a few times at most,
            # and only as whole words there.
            searches += 1
            if searches > VOUCH_SEARCHES or self._size > VOUCH_SEARCH_CHARS:
                return text
            if self._whole is None:
                self._whole = "\n".join(self._parts)
            if not _whole_words_in(line, self._whole):
                return text
        return Scrubbed(text, self.patterns, _MINT)


def _whole_words_in(piece: str, text: str, tries: int = 8) -> bool:
    """Whether ``piece`` occurs in ``text`` between spaces (or line ends). A rule with a
    boundary (``\\b``, a look-behind on ``+/``…) may match a piece cut inside a run of
    characters where it did not match the whole line, so such a piece is not vouched for."""
    start = text.find(piece)
    while start >= 0 and tries > 0:
        end = start + len(piece)
        if (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace()):
            return True
        start = text.find(piece, start + 1)
        tries -= 1
    return False
