"""Privacy filters: <private> blocks, injected context, secret masking, normalized hash.

The two corpora live in tests/data/privacy/ (regenerate with make_corpus.py) so the
store-level test that greps the database file can reuse them.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import json
import logging
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from memlane import privacy, secret_gates, secret_rules, secret_values, secret_words, utf8
from memlane.privacy import (
    INJECTED_CLOSE,
    INJECTED_OPEN,
    is_env_file,
    mask_env_file,
    mask_secrets,
    normalized_hash,
    reveals_secret,
    scrub,
    strip_injected_context,
    strip_private,
)
from tests.conftest import FIXTURES as TRANSCRIPTS

DATA = Path(__file__).parent / "data" / "privacy"
MIN_UNCHANGED_RATE = 0.95


def load_jsonl(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


SECRETS = load_jsonl("secrets.jsonl")
ORDINARY = load_jsonl("ordinary.jsonl")


# ------------------------------------------------------------------ <private>


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>hidden</private> b", "a  b"),
        ("a<private>x</private>b<private>y</private>c", "abc"),
        ("keep\n<private>\nline 1\nline 2\n</private>\nafter", "keep\n\nafter"),
        ("x <PRIVATE>up</PRIVATE> y <Private>mixed</pRiVaTe> z", "x  y  z"),
        ('x <private reason="api key">k</private> y', "x  y"),
        ("x <private\n  reason='multi-line tag'>k</private> y", "x  y"),
        ("x < private >spaced</ private > y", "x  y"),
        ("outer <private>a <private>b</private> still hidden</private> out", "outer  out"),
        ("x <private>a <private>b <private>c</private></private></private> y", "x  y"),
        ("visible <private>everything after an unclosed tag", "visible "),
        ("v <private>a</private> w <private>unclosed tail\nmore", "v  w "),
        ("x <private>a <private>b</private> unclosed outer", "x "),
        # A closing tag with no opening tag before it: the text before it was private.
        ("stray </private> closing tag", " closing tag"),
        ("secret</private> tail", " tail"),
        ("a <private>x</private> b </private> c", " c"),
        ("a </private> b <private> c", " b "),
        ("a </private> b </PRIVATE > c", " c"),
        # The name opens the block, whatever the attributes hold or how long they are.
        ('x <private note="a<b">k</private> y', "x  y"),
        ("x <private note='a>b'>k</private> y", "x  y"),
        ('x <private reason="' + "r" * 600 + '">k</private> y', "x  y"),
        ("x <private but no end, k</private> y", "x  y"),
        ('x <private note="a<b"/> self-closing unread, so an opening tag', "x "),
        (
            "empty <private/> tag stays open? no: self-closing",
            "empty  tag stays open? no: self-closing",
        ),
        (
            "<privateer> and <private_data> are not tags",
            "<privateer> and <private_data> are not tags",
        ),
        # A namespace prefix on the name (XML's <x:private>): the same tag.
        ("a <x:private>k</x:private> b", "a  b"),
        ("a <foo:PRIVATE note='x'>k</Foo:private > b", "a  b"),
        ("a <ns.v-1_2:private>k</ ns.v-1_2:private> b", "a  b"),
        ("a &lt;x:private&gt;k&lt;/x:private&gt; b", "a  b"),
        ("a <x:private>k", "a "),
        ("stray </x:private> closing tag", " closing tag"),
        # Any whitespace between "<" (or "/") and the name, line breaks included.
        ("a <\nprivate>k</\nprivate> b", "a  b"),
        ("a <\r\n\t private >k< /\n private > b", "a  b"),
        ("a < \n x:private>k", "a "),
        # Not tags: a name glued on, a C++ scope, a colon after the name.
        (
            "<x:privateer>, <x::private>, <x:private_data> and std::map<K, private::V>",
            "<x:privateer>, <x::private>, <x:private_data> and std::map<K, private::V>",
        ),
        ("", ""),
    ],
)
def test_strip_private_forms(text: str, expected: str) -> None:
    assert strip_private(text) == expected


# "<" and ">" as HTML5, JavaScript and JSON read them: each pair spells the tags.
TAG_SPELLINGS = [
    ("&#060;", "&#062;"),
    ("&#0060;", "&#0062;"),
    ("&#x003c;", "&#x003e;"),
    ("&#X3C;", "&#X3E;"),
    ("&lt", "&gt"),
    ("&LT", "&GT"),
    ("&#60", "&#62"),
    ("&#x3c", "&#x3e"),
    ("\\x3c", "\\x3e"),
    ("\\X3C", "\\X3E"),
    # Escaped twice or more: a URL's "%" written "%25", HTML's "&" written "&amp;".
    ("%253C", "%253E"),
    ("%25253c", "%25253e"),
    ("&amp;lt;", "&amp;gt;"),
    ("&AMP;amp;lt", "&amp;AMP;gt"),
    ("&amp;#60;", "&amp;#62;"),
    ("&amp;#x3C;", "&amp;#x3E;"),
]


@pytest.mark.parametrize(("lt", "gt"), TAG_SPELLINGS)
def test_every_spelling_of_a_tag_is_read(lt: str, gt: str) -> None:
    payload = "QZXPRIVATEPAYLOADQZX"
    for text, expected in (
        (f"a {lt}private{gt}{payload}{lt}/private{gt} b", "a  b"),
        (f"a {lt}private{gt}{payload}", "a "),
        (f"a {lt} / private {gt} b", " b"),  # a closing tag alone: what is before it goes
        (f"a {lt}memlane-context{gt}{payload}{lt}/memlane-context{gt} b", "a  b"),
    ):
        assert privacy.needs_scrub(text), text
        assert scrub(text) == expected, text


@pytest.mark.parametrize(
    "text",
    [
        "a %253Cprivate%253EQZXPRIVATEPAYLOADQZX%253C%252Fprivate%253E b",
        "a %25253Cprivate%25253EQZXPRIVATEPAYLOADQZX%25253C/private%25253E b",
        "a %3Cx:private%3EQZXPRIVATEPAYLOADQZX%3C%2Fx:private%3E b",
        "a &amp;lt;x:private&amp;gt;QZXPRIVATEPAYLOADQZX&amp;lt;/x:private&amp;gt; b",
        "a \\u003c\nprivate\\u003eQZXPRIVATEPAYLOADQZX\\u003c/\nprivate\\u003e b",
        "a %3Cx%3Aprivate%3EQZXPRIVATEPAYLOADQZX%3C%2Fx%3Aprivate%3E b",
        "a %3C%20private%3EQZXPRIVATEPAYLOADQZX%3C%2F%20private%3E b",
        "a %3C+private%3EQZXPRIVATEPAYLOADQZX%3C%2F+private%3E b",
        "a <\\nprivate>QZXPRIVATEPAYLOADQZX<\\/\\nprivate> b",
        "a &lt;&nbsp;private&gt;QZXPRIVATEPAYLOADQZX&lt;/&#9;private&gt; b",
        "a &lt;x&#58;private&gt;QZXPRIVATEPAYLOADQZX&lt;/x&colon;private&gt; b",
        "a \\u003cx\\u003aprivate\\u003eQZXPRIVATEPAYLOADQZX\\u003c/x\\u003aprivate\\u003e b",
    ],
)
def test_spellings_combined_are_read(text: str) -> None:
    assert privacy.needs_scrub(text), text
    assert scrub(text) == "a  b", text


@pytest.mark.parametrize(
    "opening",
    [
        "%3C%20private%3E",
        "%3Cx%3Aprivate%3E",
        "%253C%2520private%253E",
        "<\\nprivate>",
        "<\\u0020private>",
        "&lt;&#x0A;private&gt;",
        "&amp;lt;&amp;nbsp;private&amp;gt;",
        "<x\\x3aprivate>",
    ],
)
def test_an_opening_tag_with_escaped_blanks_or_colon_hides_what_follows(opening: str) -> None:
    # No closing tag: only the opening tag's reading keeps what follows it out.
    text = f"kept {opening}QZXPRIVATEPAYLOADQZX and more"
    assert privacy.needs_scrub(text)
    assert scrub(text) == "kept "


def test_a_number_that_is_not_60_is_not_a_tag() -> None:
    # HTML reads "&#600" as one character (U+0258), not "<" then "0".
    for text in ("&#600private&#62;x", "&#x3c0private&#62;x", "&#160;private&#62;x"):
        assert strip_private(text) == text


def test_lt_ends_at_reads_what_the_tag_regex_reads() -> None:
    import re

    # The prefilter may say "maybe" wrongly, never "no": wherever _LT ends, it says yes.
    lt = re.compile(rf"{privacy._spelled(secret_gates.LT)}\Z", re.IGNORECASE)
    rng = random.Random(60)
    pieces = ["&", "#", "x", "X", "0", "60", "6", "3c", "3C", ";", "<", "\\", "u003c", "lt", "%"]
    pieces += ["25", "2", "5", "amp;", "amp", "AMP;"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        if lt.search(text):
            assert secret_gates.lt_ends_at(secret_gates.fold(text), len(text)), text


def test_tag_near_reads_what_the_tag_regex_reads() -> None:
    # The prefilter's reading of "<", blanks, "/", a namespace prefix and the name: it
    # may say "maybe" wrongly, never "no" wherever the tag regex finds a tag.
    tag = privacy._tag_regex("private")
    rng = random.Random(61)
    pieces = ["<", "%25", "%3c", "%2f", "&amp;", "&lt;", "/", "\\", " ", "\n", "\t", "\u3000"]
    pieces += ["x", "é", "_", ".", "-", ":", "::", "3c", "private", "PRİVATE", "\u00a0"]
    pieces += ["&lt", "&#", "#", "60", "0", "\\x3c", ";", "2f"]
    # Escaped blanks and colons.
    pieces += ["+", "%20", "%0a", "%2520", "\\n", "\\t", "\\u0020", "&nbsp", "&nbsp;", "&#9"]
    pieces += ["&#32;", "&#x0a;", "&amp;#10;", "%3a", "%253a", "\\x3a", "\\u003a", "&#58;"]
    pieces += ["&colon;", "3a", "20", "n", "a", "9"]
    for _ in range(40_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 9)))
        if tag.search(text):
            assert secret_gates.tag_near(secret_gates.fold(text), "private"), text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<private>x</private>" + "<" * 1_000_000, "<" * 1_000_000),
        ("%25" * 333_333 + "3Cprivate>x", "%25" * 333_332),
        ("&amp;" * 200_000 + "lt;private>x", "&amp;" * 199_999),
        (
            "keep <private>x</private> <" + " \n" * 500_000 + "/x",
            "keep  <" + " \n" * 500_000 + "/x",
        ),
        ("<private>x</private>" + "< " * 500_000, "< " * 500_000),
        (
            "<private>x</private> <" + "a" * 1_000_000 + ":privat",
            " <" + "a" * 1_000_000 + ":privat",
        ),
        ("<private>x</private>" + "<a:" * 333_333, "<a:" * 333_333),
        ("x" * 1_000_000 + ":private " + "a:private " * 100_000, None),
    ],
    ids=["lt", "pct25", "amp", "blanks", "lt-blank", "prefix-run", "prefixes", "no-lt"],
)
def test_crafted_runs_near_a_tag_are_read_once(text: str, expected: str | None) -> None:
    # Runs of "<", of escapes' leads, of blanks or of prefix characters are read once
    # each (a regex reading a run again at each of its characters took 6 s for 20,000
    # blanks after a "<"); their cost is measured in benchmarks/secrets_bench.py.
    assert scrub(text) == (text if expected is None else expected)


def test_strip_private_removes_glued_tag() -> None:
    # Removing the inner block glues "<priv" + "ate>" into a new opening tag.
    out = strip_private("<priv<private>x</private>ate>secret stuff")
    assert "secret" not in out
    assert "<private" not in out.lower()


def _python_calls(function: Callable[[str], str], text: str) -> int:
    """Python and builtin calls made while ``function(text)`` runs: a count of its work."""
    calls = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    function(text)  # warm: a pattern the `re` cache dropped (other tests ran) compiles now
    collecting = gc.isenabled()
    gc.disable()  # a collection's finalizers would count as calls of this run
    sys.setprofile(profile)
    try:
        function(text)
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return calls


def test_strip_private_crafted_glue_stays_linear() -> None:
    # Every pass glues "<priv" + "ate/>" into a new tag, each pass a scan of the whole
    # text; the fallback cuts instead of looping n times (quadratic: ~30 s at n = 20,000
    # before the fallback existed). So the passes, counted in calls, must not grow with n.
    # ("</priv" + "ate>" glued a stray closing tag at every pass; the first one now
    # removes the text before it, and one more pass finds no tag.)
    def crafted(n: int) -> str:
        return "<priv" * n + "<private/>" + "ate/>" * n + " tail"

    strip_private("<private>warm up: compile the pattern</private>")
    small = _python_calls(strip_private, crafted(200))
    large = _python_calls(strip_private, crafted(20_000))
    assert large == small, (small, large)
    assert large < 500, large
    assert strip_private(crafted(20_000)) == ""


def test_strip_private_gives_up_on_endless_glue_keeping_nothing() -> None:
    # A closing tag glued at the 8th pass (after seven self-closing layers) or later would
    # make "before" private, so the text before the first tag left is not kept either.
    for layers in (7, 8, 30):
        text = (
            "before </priv" + "<priv" * layers + "<private/>" + "ate/>" * layers + "ate> mid"
            + "<priv" * 50 + "<private/>" + "ate/>" * 50 + " tail"
        )  # fmt: skip
        assert strip_private(text) == "", layers


def test_strip_private_blank_runs_open_a_block() -> None:
    # Blanks after "<private" with no ">" in the 512-character look-ahead: the name opens
    # the block all the same. (Their cost, 512² steps each before, is timed in
    # benchmarks/secrets_bench.py's crafted tag texts, not here.)
    assert strip_private(("<private" + " " * 511) * 20) == ""
    assert strip_private("keep <private" + " " * 600 + "> gone") == "keep "


# ------------------------------------------------------------ injected context


def test_injected_markers_are_stable() -> None:
    assert INJECTED_OPEN == "<memlane-context>"
    assert INJECTED_CLOSE == "</memlane-context>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"{INJECTED_OPEN}\n# Recalled\n- memory 1\n{INJECTED_CLOSE}\nfix the bug",
            "\nfix the bug",
        ),
        (f"before {INJECTED_OPEN}ctx{INJECTED_CLOSE} after", "before  after"),
        (
            f"q1 {INJECTED_OPEN}a{INJECTED_CLOSE} q2 {INJECTED_OPEN}b{INJECTED_CLOSE} q3",
            "q1  q2  q3",
        ),
        (f"prompt {INJECTED_OPEN}truncated context without end", "prompt "),
        ("<MEMLANE-CONTEXT source='recall'>x</Memlane-Context>y", "y"),
        (f"{INJECTED_OPEN}a{INJECTED_OPEN}b{INJECTED_CLOSE}c{INJECTED_CLOSE}d", "d"),
        ("<memlane-contextual> is not ours", "<memlane-contextual> is not ours"),
    ],
)
def test_strip_injected_context(text: str, expected: str) -> None:
    assert strip_injected_context(text) == expected


def test_injected_context_inside_transcript_json_string() -> None:
    # A transcript line quotes what the hook injected; it goes before anything is stored.
    line = json.dumps({"additionalContext": f"{INJECTED_OPEN}old memory{INJECTED_CLOSE}"})
    assert "old memory" not in scrub(json.loads(line)["additionalContext"])
    assert "old memory" not in scrub(line)


# ---------------------------------------------------------------- secret corpus


def test_secret_corpus_size_and_variety() -> None:
    kinds = {item["kind"] for item in SECRETS}
    assert len(SECRETS) >= 100
    assert {
        "aws-key",
        "aws-secret",
        "github-token",
        "gitlab-token",
        "slack-token",
        "stripe-key",
        "openai-key",
        "anthropic-key",
        "jwt",
        "auth-header",
        "url-credentials",
        "private-key",
        "assignment",
        "high-entropy",
    } <= kinds


@pytest.mark.parametrize("item", SECRETS, ids=lambda item: item["kind"])
def test_every_corpus_secret_is_masked_with_its_kind(item: dict[str, str]) -> None:
    out = mask_secrets(item["text"])
    assert item["secret"] not in out
    assert f"[REDACTED:{item['kind']}]" in out
    assert item["secret"] not in scrub(item["text"])


# Tokens of well-known fixed-prefix formats glued to the word before them: the word
# boundary the other formats need would let them through.
_ALNUM = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6"
GLUED_TOKENS = [
    ("t", "ghp_" + _ALNUM[:36], "github-token"),
    ("xyz", "gho_" + _ALNUM[1:37], "github-token"),
    ("id_", "github_pat_11" + _ALNUM[:20] + "_" + _ALNUM[:40], "github-token"),
    ("key", "sk-ant-api03-" + _ALNUM * 2, "anthropic-key"),
    ("bot", "xoxb-1234567890-1234567890123-" + _ALNUM[:24], "slack-token"),
    ("aws", "AKIA2E0A8F3B244C9986", "aws-key"),
    ("9", "ASIA2E0A8F3B244C9986", "aws-key"),
    ("token", "glpat-" + _ALNUM[:20], "gitlab-token"),
    ("NPM_TOKEN", "npm_" + _ALNUM[:36], "npm-token"),
]


@pytest.mark.parametrize(("glue", "token", "kind"), GLUED_TOKENS, ids=lambda v: str(v)[:8])
def test_a_known_token_glued_to_a_word_is_masked(glue: str, token: str, kind: str) -> None:
    for text in (f"see {token} here", f"see {glue}{token} here", f"{glue}{token}"):
        assert privacy.needs_scrub(text), text
        out = scrub(text)
        assert token not in out and f"[REDACTED:{kind}]" in out, out
        assert out == _ungated_scrub(text)


def test_every_prefix_found_glued_is_masked_glued() -> None:
    # Every corpus or reference secret opening with a prefix found glued, glued to a
    # word: masked, the gates agreeing; the prefixes the corpora hold, all of them.
    reference = [item for item in load_jsonl("reference.jsonl") if item["expect"] == "masked"]
    glued = tuple(secret_gates.GLUED_PREFIXES)
    samples = {item["secret"] for item in (*SECRETS, *reference)}
    samples.update(token for _, token, _ in GLUED_TOKENS)
    samples = {secret for secret in samples if secret.startswith(glued)}
    covered = {prefix for prefix in glued if any(s.startswith(prefix) for s in samples)}
    assert len(covered) >= 20, sorted(covered)
    for secret in sorted(samples):
        for text in (f"x{secret}", f"a word_{secret} glued"):
            out = scrub(text)
            assert secret not in out and "[REDACTED:" in out, text
            assert out == _ungated_scrub(text)


@pytest.mark.parametrize(
    "text",
    [
        "task-1234567890abcdefghij done",  # OpenAI's sk- ends task-, risk-, desk-
        "risk-assessment-2024-q3-final.pdf",
        "work_live_" + _ALNUM[:24],  # Stripe's rk_live_ ends work_
        "monkey-0123456789abcdef0123456789abcdef",  # Mailgun's key-
        "compat." + _ALNUM[:22] + "." + _ALNUM[:24] + "." + _ALNUM[:20],  # Harness's pat.
        "MSG." + _ALNUM[:20] + "." + _ALNUM[20:40],  # SendGrid's SG.
        "client_secret_" + _ALNUM[:43],  # Notion's secret_
        "DEADBEEFACCA0123456789ABCDEF",  # AWS's ACCA, which hex can spell
    ],
)
def test_a_prefix_that_ends_words_still_needs_a_word_boundary(text: str) -> None:
    assert mask_secrets(text) == text


def test_secret_corpus_rate(capsys: pytest.CaptureFixture[str]) -> None:
    gone = sum(item["secret"] not in mask_secrets(item["text"]) for item in SECRETS)
    labelled = sum(f"[REDACTED:{item['kind']}]" in mask_secrets(item["text"]) for item in SECRETS)
    with capsys.disabled():
        print(f"\nsecret corpus: {gone}/{len(SECRETS)} masked, {labelled} with the right kind")
    assert gone == len(SECRETS)


def test_ordinary_corpus_passes_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(ORDINARY) >= 200
    changed = [item["text"] for item in ORDINARY if mask_secrets(item["text"]) != item["text"]]
    rate = 1 - len(changed) / len(ORDINARY)
    with capsys.disabled():
        print(
            f"\nordinary corpus: {len(ORDINARY) - len(changed)}/{len(ORDINARY)} unchanged "
            f"({rate:.1%}); changed: {changed!r}"
        )
    assert rate >= MIN_UNCHANGED_RATE, changed


def test_corpus_files_match_generator() -> None:
    gen = _load_generator()
    assert gen.secrets_corpus() == SECRETS
    assert [{"text": t} for t in gen.ORDINARY] == ORDINARY


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("privacy_corpus", DATA / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ assignments


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('API_KEY = "k3y-Value-123"', 'API_KEY = "[REDACTED:assignment]"'),
        ("password: hunter2", "password: [REDACTED:assignment]"),
        ('{"token": "abc123def456"}', '{"token": "[REDACTED:assignment]"}'),
        ("export SECRET=s3cr3t!x", "export SECRET=[REDACTED:assignment]"),
        ("run --password=hunter22 --user bob", "run --password=[REDACTED:assignment] --user bob"),
        ("run --token hunter22", "run --token [REDACTED:assignment]"),
        ("db_password := 'pa55w0rd'", "db_password := '[REDACTED:assignment]'"),
        ('api_key: str = "abc123secret"', 'api_key: str = "[REDACTED:assignment]"'),
        ("'password' => 'hunter2'", "'password' => '[REDACTED:assignment]'"),
        ("clientSecret: 'x9Yz8Wv7'", "clientSecret: '[REDACTED:assignment]'"),
        (r"{\"password\": \"hunter2\"}", r"{\"password\": \"[REDACTED:assignment]\"}"),
        (
            "aws_secret_access_key = " + "a" * 19 + "B7/" + "c" * 18,
            "aws_secret_access_key = [REDACTED:aws-secret]",
        ),
        ("postgres://app:s3cret@db:5432/x", "postgres://app:[REDACTED:url-credentials]@db:5432/x"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:auth-header]"),
    ],
)
def test_assignment_keeps_key_and_masks_value(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "def get_token(self):\n    return self._token",
        "password_field = forms.CharField()",
        "password: str",
        "token: Optional[str] = None",
        "token = os.environ['TOKEN']",
        "secret = secrets.token_hex(16)",
        "max_tokens=4096",
        "--token $GITHUB_TOKEN",
        "password = '********'",
        'label = "Enter your password"',
        'headers = {"Authorization": f"Bearer {token}"}',
        "Authorization: Bearer <token>",
        "https://user@example.com/path",
        "key = 'user:1234:profile'",
    ],
)
def test_ordinary_code_is_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


def test_pem_block_is_masked_whole() -> None:
    body = "MIIEowIBAAKCAQEA7xq" + "Q" * 45
    text = (
        f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\nend"
    )
    assert mask_secrets(text) == "key:\n[REDACTED:private-key]\nend"


def test_mask_secrets_is_idempotent_on_corpus() -> None:
    for item in SECRETS:
        once = mask_secrets(item["text"])
        assert mask_secrets(once) == once


# --------------------------------------------------------------- extra patterns


def test_extra_patterns_mask_as_custom() -> None:
    text = "ticket ACME-INT-9f8e7d and id 42"
    assert mask_secrets(text, [r"ACME-INT-[0-9a-f]{6}"]) == "ticket [REDACTED:custom] and id 42"


def test_invalid_extra_pattern_refuses_the_text() -> None:
    # Skipped with a warning, it let through what it was meant to mask; config loading
    # refuses it first (tests/test_config_refusals.py).
    with pytest.raises(ValueError, match="pattern 1 is not a regular expression"):
        mask_secrets("code ZZ-123 and AKIAABCDEFGHIJKLMNOP", ["(unclosed", r"ZZ-\d+"])


def test_single_extra_pattern_given_as_a_string() -> None:
    assert mask_secrets("id ZZ-12", r"ZZ-\d+") == "id [REDACTED:custom]"


def test_extra_patterns_never_grow_markers() -> None:
    # A pattern matching the marker text or the empty string must stay idempotent.
    patterns = ["REDACTED", "x*"]
    once = scrub("a REDACTED b", patterns)
    assert once == "a [REDACTED:custom] b"
    assert scrub(once, patterns) == once


def test_a_pattern_that_backtracks_without_end_withholds_the_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Python's re would run "(a|aa)+b" over 60 "a"s for longer than the universe has
    # been around, holding the GIL: the worker would hang and every hook wait out its budget.
    text = "note " + "a" * 60
    with caplog.at_level(logging.WARNING, logger="memlane.privacy"):
        out = scrub(text, [r"(a|aa)+b", r"note"])
    assert out == "[REDACTED:withheld]"
    assert any("(a|aa)+b" in record.getMessage() for record in caplog.records)
    # The same pattern over text it reads quickly masks as before.
    assert scrub("x aab y", [r"(a|aa)+b"]) == "x [REDACTED:custom] y"


# -------------------------------------------------------------------- env files


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".env", True),
        ("/srv/app/.env", True),
        ("C:\\proj\\.env.local", True),
        (".env.production", True),
        (".env.development.local", True),
        ("prod.env", True),
        ("docker/web.env", True),
        (".envrc", True),
        (".env.example", False),
        (".env.sample", False),
        (".env.template", False),
        (".env.defaults", False),
        (".env.example.bak", False),
        (".env.local.example", False),
        (".env.bak", True),
        ("'.env.local'", True),
        (".pgpass", True),
        ("env.py", False),
        ("environment.yml", False),
        (".venv", False),
        ("src/env", False),
        (".env/", True),
    ],
)
def test_is_env_file(path: str, expected: bool) -> None:
    assert is_env_file(path) is expected
    # One reading of the name: a dotenv file encoded by base64 is withheld when, and
    # only when, the same file read or printed would be masked as one.
    for command in (f"base64 {path}", f"base64 -w0 < {path}", f"cat {path} | base64"):
        assert reveals_secret("Bash", {"command": command}) is expected, command


def test_mask_env_file() -> None:
    text = (
        "# database\n"
        "DB_HOST=localhost\n"
        "export DB_PASSWORD='pa ss'\n"
        'PRIVATE_KEY="-----BEGIN KEY-----\nabc\n-----END KEY-----"\n'
        "EMPTY=\n"
        "     7→FEATURE_FLAG=true\n"
    )
    out = mask_env_file(text)
    assert out == (
        "# database\n"
        "DB_HOST=[REDACTED:env]\n"
        "export DB_PASSWORD='[REDACTED:env]'\n"
        'PRIVATE_KEY="[REDACTED:env]"\n'
        "EMPTY=\n"
        "     7→FEATURE_FLAG=[REDACTED:env]\n"
    )
    assert mask_env_file(out) == out


# ----------------------------------------------------------------------- scrub


def test_scrub_order_private_before_secrets() -> None:
    # The private block goes first, whole; no marker hints that something was there.
    assert scrub('a <private>password = "hunter2"</private> b') == "a  b"
    # A secret split by a private block is caught once the block is gone.
    assert scrub("AKIAABCDEFGH<private>note</private>IJKLMNOP") == "[REDACTED:aws-key]"
    assert scrub(f"{INJECTED_OPEN}token=abc123{INJECTED_CLOSE}ok") == "ok"


def test_scrub_removes_a_block_whose_tag_holds_a_secret_and_a_lt() -> None:
    # "<" inside the quoted value stopped the tag, and only masking the value let it
    # be read; the name alone opens the block now.
    text = '<private token="a<b1">hidden'
    assert strip_private(text) == ""
    assert scrub(text) == ""


# --------------------------------------------------------------- normalized hash


def test_normalized_hash_ignores_secrets_private_case_and_space() -> None:
    base = normalized_hash('Deploy with password = "hunter2" now')
    assert base == normalized_hash('deploy  with PASSWORD = "Tr0ub4dor&3"\n now ')
    assert normalized_hash("a <private>x</private> b") == normalized_hash(
        "A <private>other</private> B"
    )
    assert normalized_hash("key AKIAABCDEFGHIJKLMNOP") == normalized_hash(
        "key AKIAZZZZZZZZZZZZZZZZ"
    )
    assert normalized_hash("ＡＢＣ") == normalized_hash("abc")  # NFKC
    assert normalized_hash("Straße") == normalized_hash("STRASSE")  # casefold
    assert normalized_hash("fix bug A") != normalized_hash("fix bug B")
    assert len(base) == 64 and int(base, 16) >= 0


# -------------------------------------------------------------------- hypothesis

FRAGMENTS = [
    "<private>",
    "</private>",
    "<PRIVATE a='1'>",
    "< /private >",
    "<private/>",
    "<priv",
    "ate>",
    "&#x003c;private&#x003e;",
    "&ltprivate",
    "&#0060/private&#62",
    "\\x3cprivate",
    "\\x3e",
    "<private note='a<b'>",
    ' reason="' + "r" * 600 + '"',
    INJECTED_OPEN,
    INJECTED_CLOSE,
    "password = ",
    "token: ",
    "--api-key ",
    "export SECRET=",
    '"',
    "'",
    "=",
    ":",
    "\n",
    " ",
    "[REDACTED:aws-key]",
    "AKIA",
    "ABCDEFGHIJKLMNOP",
    "ghp_",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.",
    "https://u:",
    "@host",
    "Authorization: Bearer ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "hunter2",
    "x9Y8z7W6v5U4t3S2r1Q0",
    *[item["secret"] for item in SECRETS[::10]],
]
messy_text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(FRAGMENTS)), max_size=25).map(
    "".join
)


@settings(max_examples=400, deadline=None)
@given(messy_text)
def test_scrub_never_raises_and_is_idempotent(text: str) -> None:
    once = scrub(text)
    assert isinstance(once, str)
    assert scrub(once) == once


@settings(max_examples=300, deadline=None)
@given(messy_text)
def test_mask_secrets_is_idempotent(text: str) -> None:
    once = mask_secrets(text)
    assert mask_secrets(once) == once


@settings(max_examples=300, deadline=None)
@given(messy_text, messy_text, st.sampled_from(["<private>", "<Private a='<'>", "&#060;private "]))
def test_a_block_split_across_two_texts_leaves_nothing(before: str, after: str, tag: str) -> None:
    # A record's title and content are filtered apart: a block opened at the end of one
    # and closed in the other is removed from both.
    payload = "QZXPRIVATEPAYLOADQZX"
    head = scrub(f"{before}{tag}{payload}")
    tail = scrub(f"{payload}</private>{after}")
    assert payload not in head + tail


@settings(max_examples=300, deadline=None)
@given(messy_text, messy_text, st.sampled_from(["<private>", "<Private note='x'>", "<PRIVATE>"]))
def test_scrub_never_leaves_private_content(before: str, after: str, tag: str) -> None:
    payload = "QZXPRIVATEPAYLOADQZX"
    out = scrub(f"{before}{tag}{payload}</private>{after}")
    assert payload not in out
    assert strip_private(out) == out  # no private tag of any form is left


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.,;!?-()/=:", min_size=1, max_size=8),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.sampled_from([" ", "  ", "\t", "\n", " \r\n "]), min_size=11, max_size=11),
)
@example(words=["com2sec", "0", "0", "000"], spaces=[" "] * 11)  # a rule that reads case
def test_normalized_hash_stable_under_whitespace_and_case(
    words: list[str], spaces: list[str]
) -> None:
    plain = " ".join(words)
    gaps = [*spaces[: len(words) - 1], ""]
    spaced = "".join(w + s for w, s in zip(words, gaps, strict=True)).upper()
    # Texts a rule masks are left out: a key's unquoted value runs to the end of its line
    # ("pw: a b"), so a line break may end what is masked, and some rules read letter case
    # (net-snmp's `com2sec`, a `-P` option): "com2sec 0 0 000" is masked, "COM2SEC 0 0
    # 000" is not. Hypothesis draws such words from the constants of the code it tests.
    assume(all(scrub(t) == t for t in (plain, spaced, plain.swapcase())))
    assert normalized_hash(plain) == normalized_hash(f"  {spaced}\n")
    assert normalized_hash(plain) == normalized_hash(plain.swapcase())


# ----------------------------------------------------------------- import cost


def _imports(module: ModuleType) -> tuple[list[str], list[ast.stmt]]:
    """Every module a source file imports, and its module-level import statements."""
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return names, top


@pytest.mark.parametrize(
    "module", [privacy, secret_gates, secret_rules, secret_values, secret_words]
)
def test_privacy_modules_import_only_stdlib_and_themselves(module: ModuleType) -> None:
    names, _ = _imports(module)
    # ahocorasick_rs: the gates' scan automaton (a base dependency), imported on first use;
    # regex: runs configured patterns with a time limit, imported when one is configured.
    allowed = sys.stdlib_module_names | {"__future__", "memlane", "ahocorasick_rs", "regex"}
    assert [n for n in names if n.split(".")[0] not in allowed] == []
    inner = [n for n in names if n.startswith("memlane.")]
    # memlane.utf8 and memlane.digest import nothing of memlane: what UTF-8 can hold, sha256.
    leaves = ("memlane.secret_", "memlane.utf8", "memlane.digest")
    assert [n for n in inner if not n.startswith(leaves)] == []


def test_privacy_and_gates_import_nothing_at_module_level() -> None:
    # The prefilter's modules: only `from __future__`, the gates, the word checks they
    # call and memlane.utf8 (which import nothing themselves); regexes and the rules
    # load when a text needs them.
    _, top = _imports(privacy)
    assert {ast.unparse(n) for n in top} == {
        "from __future__ import annotations",
        "from memlane import secret_gates, secret_words",
        "from memlane.utf8 import storable",
    }
    _, top = _imports(secret_gates)
    assert [ast.unparse(n) for n in top] == [
        "from __future__ import annotations",
        "from memlane import secret_words",
        "from memlane.utf8 import storable",
    ]
    for module in (secret_words, utf8):
        _, top = _imports(module)
        assert [ast.unparse(n) for n in top] == ["from __future__ import annotations"]


# ------------------------------------------------------------- needs_scrub prefilter


def _params(test: object) -> list[Any]:
    """The argument values of a test's @pytest.mark.parametrize."""
    return list(getattr(test, "pytestmark")[0].args[1])


# Every example text of this module: the parametrized cases, the fragments, both corpora.
EXAMPLES: list[str] = [
    *(item["text"] for item in SECRETS),
    *(item["text"] for item in ORDINARY),
    *(item["secret"] for item in SECRETS),
    *FRAGMENTS,
    "".join(FRAGMENTS),
    *(arg for params in _params(test_strip_private_forms) for arg in params),
    *(arg for params in _params(test_strip_injected_context) for arg in params),
    *(text for text, _ in _params(test_assignment_keeps_key_and_masks_value)),
    *_params(test_ordinary_code_is_left_alone),
    "<priv<private>x</private>ate>secret stuff",
    '<private token="a<b1">hidden',
    'a <private>password = "hunter2"</private> b',
    "AKIAABCDEFGH<private>note</private>IJKLMNOP",
]

# Characters re's IGNORECASE folds onto ASCII letters that str.lower() does not
# (ı, İ ~ i; ſ ~ s) or does (Kelvin sign ~ k): a key name spelled with them still
# matches the rules, so the prefilter must see it.
FOLDED = ["paſsword = 'hunter2x'", "<prıvate>x</private>", "<PRİVATE>x", "toKen: abc123def"]

ANCHOR_FRAGMENTS = [
    *FRAGMENTS,
    *FOLDED,
    "ſ",
    "ı",
    "İ",
    "K",
    "\u0307",
    "pass",
    "pwd",
    "-p",
    "mysql ",
    "machine h login u password ",
    "Authorization",
    "<password>",
    "</password>",
    "<apiKey>",
    "://",
    ":",
    "@",
    "\\",
    "]",
    "--",
    "-",
    "\t",
    "salt",
    "session_id",
    "cookie",
    "hmac",
    "pat",
    "signature",
    "credentials",
    "xoxb-",
    "sk-",
    "hf_",
    "SG.",
    "npm_",
    "AIza",
    "whsec_",
    "glpat-",
    "pypi-AgE",
    "0123456789abcdefABCDEF0123",
    # Weak names mask only random-looking values, after any separator form.
    " str = ",
    ": Optional[str] = ",
    "=>",
    ":=",
    '\\"',
    "`",
    "\u00a0",
    "aB3dE5gH7jK9mN1pQ",
    "ABCDEFGHIJKLMNOP2345",
    "deadbeefdeadbeefdeadbeefdeadbeef",
]
anchor_text = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from(ANCHOR_FRAGMENTS)), max_size=20
).map("".join)


def _rule_gates_hold(text: str) -> None:
    """Each rule's gate is True wherever that rule's regex changes the text."""
    low = secret_gates.fold(text)
    for rule in secret_rules.rules():
        if rule.apply(text) != text:
            assert rule.gate(text, low), (rule.id, text)


def test_every_rule_has_a_gate() -> None:
    rules = secret_rules.rules()
    assert [rule.id for rule in rules] == list(secret_gates.RULE_GATES)
    assert all(rule.gate is secret_gates.RULE_GATES[rule.id] for rule in rules)
    # needs_scrub runs every distinct gate: anchors in one loop, the key-name ones
    # through one scan, the others one by one.
    g = secret_gates
    flat = g._flatten(tuple(rule.gate for rule in rules))
    anchors = {(a.root, x, a.offset) for a in flat if isinstance(a, g.Anchored) for x in a.anchors}
    assert anchors == {(root, x, offset) for root, xs, offset in g.ANCHORS for x in xs}
    others = {gate for gate in flat if not isinstance(gate, g.Anchored)}
    assert others <= {*g.OTHER_GATES, *g.KEY_NAME_GATES, *g.SHAPE_GATES, *g.WORD_GATES}


@pytest.mark.parametrize("word", secret_gates.STRONG_KEY_WORDS)
def test_a_strong_key_word_is_read_alike_by_the_key_rules_their_gates_and_starts(
    word: str,
) -> None:
    # One list (STRONG_KEY_WORDS): the key grammar's regex, the key-name scan's class and
    # the places the rules start at agree on every spelling of "<word> key" as a name.
    g = secret_gates
    for joiner in g.KEY_NAME_JOINERS:
        for name in (f"{word}{joiner}key", f"{word}{joiner}key".upper()):
            text = f"cfg {name}=Zq8vLx3pW0mN"
            low = g.fold(text)
            assert re.fullmatch(secret_rules.STRONG_KEY, name), name
            ends = {(end, cls) for _, end, cls in g.key_ends(low)}
            assert (4 + len(name), "strong") in ends, name
            assert 4 in secret_rules.key_name_starts(low), name
            assert scrub(text) == f"cfg {name}=[REDACTED:assignment]", name


@pytest.mark.parametrize("word", secret_gates.STRONG_KEY_WORDS)
def test_a_prose_key_word_is_read_alike_by_the_prose_rule_and_its_gate(word: str) -> None:
    # The same list: the prose rule's words, its strong words and its gate (four words
    # had drifted out of the prose copies: "the machine key is X" was kept).
    for joiner in (*secret_gates.KEY_NAME_JOINERS, " "):
        name = f"{word}{joiner}key"
        text = f"the {name} is hunter2x for prod"
        assert secret_rules._PROSE_STRONG.fullmatch(name), name
        assert secret_gates.prose(text, secret_gates.fold(text)), name
        assert scrub(text) == f"the {name} is [REDACTED:prose] for prod", name


@pytest.mark.parametrize(
    "text",
    [
        "the auth key is required for prod",
        "the machine key is stored in web.config",
        "the decryption key is rotated daily",
        "the validation key is generated by IIS",
        "the auth key is AUTH_KEY",
    ],
)
def test_a_strong_key_word_in_ordinary_prose_is_kept(text: str) -> None:
    assert scrub(text) == text


def test_gate_roots_sit_at_one_offset() -> None:
    gate = secret_gates.cased("ABIA", "ACCA", root="A")
    assert gate("key ABIA1", "") and gate("(ACCA", "") and not gate("xABIA", "")
    # A prefix of GLUED_PREFIXES passes after a word character too.
    assert secret_gates.cased("AKIA", "ASIA", root="A")("xAKIA", "")
    assert secret_gates.cased("eyJ", root="J")("a.eyJhb", "")
    with pytest.raises(ValueError, match="one offset"):
        secret_gates.cased("ghp_", "github_pat_", root="_")


def test_a_prefix_found_glued_is_glued_in_its_gate_and_its_rule() -> None:
    # One set says which prefixes glue: each is an anchor of a gate, and no rule asks for
    # a word boundary before it (the gate would let it through, the regex not).
    g = secret_gates
    gates = g._flatten(tuple(g.RULE_GATES.values()))
    anchors = {x for gate in gates if isinstance(gate, g.Anchored) for x in gate.anchors}
    assert not g.GLUED_PREFIXES - anchors, g.GLUED_PREFIXES - anchors
    sources = "".join(rule.source for rule in secret_rules.rules())
    for prefix in g.GLUED_PREFIXES:
        assert secret_rules._prefix(prefix) + "(?<!" not in sources, prefix


@pytest.mark.parametrize("text", [*EXAMPLES, *FOLDED])
def test_needs_scrub_never_misses_a_change(text: str) -> None:
    assert privacy.needs_scrub(text) or scrub(text) == text
    _rule_gates_hold(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("session: current", False),
        ("salt = 'short'", False),
        ("session_id = x9Y8z7W6v5U4t3S2r1Q0", True),
        ('"cookie": "  aB3dE5gH7jK9mN1pQrS"', True),
        ("hmac: str = 'aB3dE5gH7jK9mN1pQrS'", True),
        ("auth => `aB3dE5gH7jK9mN1pQrS`", True),
    ],
)
def test_weak_names_need_a_random_looking_value(text: str, expected: bool) -> None:
    assert privacy.needs_scrub(text) is expected
    assert (scrub(text) != text) is expected


@pytest.mark.parametrize(
    "text",
    [
        "session_id=bRxk3Jq9Lm2Pz8Wt",
        "salt=fubar9Lm2Pz8WtqQ",
        "cookie: Fxk3Jq9Lm2Pz8Wtqz",
        "key = uBfR7xk3Jq9Lm2Pz8W",
        'hmac = b"Rxk3Jq9Lm2Pz8Wtqb"',
    ],
)
def test_a_weak_value_starting_with_string_prefix_letters_is_masked(text: str) -> None:
    # b, r, u, f and @ open a string only before a quote: a bare value may start with them.
    assert privacy.needs_scrub(text)
    assert "[REDACTED:high-entropy]" in scrub(text)
    assert scrub(text) == _ungated_scrub(text)


def test_a_random_looking_value_holds_a_digit() -> None:
    # The weak gate asks for a digit in the value: high_entropy accepts none without one.
    rng = random.Random(25)
    alphabets = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/=_-.~:",
        "abcdefABCDEF",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ=",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    ]
    for _ in range(4000):
        alphabet = rng.choice(alphabets)
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(16, 64)))
        assert not secret_values.high_entropy(value), value
        text = f"session_id={value} salt: {value}"
        assert not privacy.needs_scrub(text) or scrub(text) == text, text
        with_digit = value[:7] + "7" + value[8:]
        assert scrub(f"salt={with_digit}") == _ungated_scrub(f"salt={with_digit}")


def test_needs_scrub_true_on_every_secret_and_tag() -> None:
    for item in SECRETS:
        assert privacy.needs_scrub(item["text"]), item
    for text in (
        *FOLDED,
        INJECTED_OPEN,
        "< / PRIVATE >",
        "x <private/> y",
        "<memlane-context a>",
        *(f"{lt}private{gt}" for lt, gt in TAG_SPELLINGS),
    ):
        assert privacy.needs_scrub(text), text


@settings(max_examples=1500, deadline=None)
@given(anchor_text)
def test_needs_scrub_false_implies_scrub_is_identity(text: str) -> None:
    assert privacy.needs_scrub(text) or scrub(text) == text
    _rule_gates_hold(text)


ORDINARY_PROMPTS = [
    "fix the retry bug in the worker",
    "why does the test in tests/test_store.py fail on CI?",
    "Refactor search/engine.py so ranking lives outside the store",
    "add a --limit option to `memlane search` and document it in the README",
    "def chunk(text: str) -> list[str]:\n    return text.split('\\n\\n')",
    "The build is slow; can you profile it and tell me where the time goes?",
    "rename the function load_config to read_settings everywhere",
    "Écris un test pour le parseur de transcripts (avec des accents → unicode)",
    "for i in range(10): print(i)",
    "what changed since yesterday in the capture pipeline",
]


@pytest.mark.parametrize("text", ORDINARY_PROMPTS)
def test_needs_scrub_false_on_ordinary_prompts(text: str) -> None:
    assert not privacy.needs_scrub(text)
    assert scrub(text) == text


def test_needs_scrub_skips_most_ordinary_text(capsys: pytest.CaptureFixture[str]) -> None:
    texts = [item["text"] for item in ORDINARY]
    passed = sum(not privacy.needs_scrub(t) for t in texts)
    with capsys.disabled():
        print(f"\nneeds_scrub False on {passed}/{len(texts)} ordinary corpus texts")
    # The corpus is made of near-misses (password fields, token counts): most still pass.
    assert passed / len(texts) >= 0.5


@pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason="../shared fixtures absent")
def test_needs_scrub_on_real_transcript_turns(capsys: pytest.CaptureFixture[str]) -> None:
    from memlane.capture.transcript import iter_turns

    texts = [
        turn.text for path in sorted(TRANSCRIPTS.rglob("*.jsonl")) for turn in iter_turns(str(path))
    ]
    skipped = [t for t in texts if not privacy.needs_scrub(t)]
    with capsys.disabled():
        print(f"\nneeds_scrub False on {len(skipped)}/{len(texts)} real transcript turns")
    assert all(scrub(t) == t for t in skipped)
    assert len(skipped) / len(texts) >= 0.6


def test_scrub_returns_clean_text_itself() -> None:
    text = "nothing to hide here " * 50
    assert scrub(text) is text


WHITESPACE = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(WHITESPACE) + list("ab\u00e9\u0307_-"))))
def test_whitespace_collapse_without_re_matches_regex(text: str) -> None:
    import re

    assert " ".join(text.split()) == re.sub(r"\s+", " ", text).strip()


def test_whitespace_collapse_covers_every_unicode_space() -> None:
    import re

    assert {c for c in WHITESPACE if re.fullmatch(r"\s", c)} == set(WHITESPACE)
    text = "a" + WHITESPACE + "b" + WHITESPACE
    assert normalized_hash(text) == normalized_hash("a b")


def _isolated_words(code: str) -> list[str]:
    """The words ``code`` prints in a fresh isolated interpreter that imports this memlane."""
    import subprocess

    return subprocess.run(
        [sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(privacy.__file__).parents[1])},
    ).stdout.split()


def test_prefilter_and_hash_import_no_regex_module() -> None:

    code = (
        "import sys\n"
        "before = 're' in sys.modules\n"
        "from memlane.privacy import hash_scrubbed, needs_scrub, scrub\n"
        "assert not needs_scrub('fix the retry bug')\n"
        "clean = scrub('fix the retry bug')\n"
        "hash_scrubbed(clean)\n"
        "print(before, 're' in sys.modules)\n"
    )
    out = _isolated_words(code)
    assert out == ["False", "False"]


def _reference_hash(clean: str) -> str:
    """The normalized hash as first defined: NFKC, casefold, NFKC, re whitespace collapse."""
    import hashlib
    import re
    import unicodedata

    norm = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", clean).casefold())
    return hashlib.sha256(re.sub(r"\s+", " ", norm).strip().encode("utf-8")).hexdigest()


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.lists(st.sampled_from([*"aA \t\n…\u0301é\u0130ßﬁ①Ｋ\u2028K.", "..."])).map("".join),
    )
)
def test_hash_scrubbed_matches_reference_definition(text: str) -> None:
    # Stored rows keep their hashes: the fast paths must not change a single digest.
    assert privacy.hash_scrubbed(text) == _reference_hash(text)


def test_hash_scrubbed_on_real_chunks_matches_reference() -> None:
    texts = [*(item["text"] for item in ORDINARY), "a … b", "Straße …\u0301 ①"]
    if TRANSCRIPTS.is_dir():
        from memlane.capture.transcript import iter_turns

        path = TRANSCRIPTS / "tool_heavy.jsonl"
        texts.extend(turn.text for turn in iter_turns(str(path)))
    for text in texts:
        assert privacy.hash_scrubbed(text) == _reference_hash(text)


def _ungated_scrub(text: str) -> str:
    """scrub as it was before gates: every rule's regex runs on every text."""

    def mask(value: str) -> str:
        return secret_rules.mask(value, gated=False)

    def visible(text: str) -> str:
        out = mask(privacy._strip_all(text))
        for _ in range(privacy._MAX_PASSES):
            stripped = privacy._strip_all(out)
            if stripped == out:
                break
            out = mask(stripped)
        return out

    out = visible(text)
    plain = privacy.unhidden(text)  # as scrub does: the plain form kept when it shows more
    if plain is not None and visible(plain) != plain:
        out = visible(plain)
    return out


EDIT_CHARS = ["ı", "İ", "ſ", "K", "\u0307", "\u00a0", "\u2028"]
EDIT_CHARS += ["'", '"', "\\", "]", " ", "=", ":", "-", "`"]
CORPUS_TEXTS = [item["text"] for item in SECRETS] + [item["text"] for item in ORDINARY]


@st.composite
def edited_corpus_text(draw: st.DrawFn) -> str:
    """A corpus text with a few characters swapped case, folded, inserted or dropped."""
    chars = list(draw(st.sampled_from(CORPUS_TEXTS)))
    for _ in range(draw(st.integers(0, 4))):
        if not chars:
            break
        i = draw(st.integers(0, len(chars) - 1))
        action = draw(st.sampled_from(["case", "insert", "replace", "drop"]))
        if action == "case":
            chars[i] = chars[i].swapcase()
        elif action == "drop":
            del chars[i]
        else:
            new = draw(st.sampled_from(EDIT_CHARS))
            if action == "insert":
                chars.insert(i, new)
            else:
                chars[i] = new
    text = "".join(chars)
    return text[draw(st.integers(0, len(text))) :] if draw(st.booleans()) else text


ANCHORED_GATES = [
    gate
    for gate in secret_gates._flatten(tuple(secret_gates.RULE_GATES.values()))
    if isinstance(gate, secret_gates.Anchored)
]


SCAN_WORDS = (
    *secret_gates.KEY_WORDS,
    *(gate.literal for gate in secret_gates.OTHER_GATES),
    *(anchor for _, anchors, _ in secret_gates.ANCHORS for anchor in anchors),
)


def _same_scan(text: str) -> None:
    g = secret_gates
    low = g.fold(text)
    g._scanners()  # built: the gates below use the automaton
    assert g.any_anchor(text) == g.bounded(text, g.ANCHORS), text
    for gate in ANCHORED_GATES:
        assert gate(text, low) == g.bounded(text, gate.groups), (gate.anchors, text)
    plain = [
        gate.literal in (low if gate.folded else text)
        and (gate.then is None or gate.then(text, low))
        for gate in g.OTHER_GATES
    ]
    assert [gate(text, low) for gate in g.OTHER_GATES] == plain, text
    assert g.any_literal(text, low) == any(plain), text
    assert g.key_names_by_automaton(low) == g.key_names_by_loops(low), text
    assert g.key_names_by_loops(low) == _reference_key_names(low), text
    # The folded words come from the key names' automaton pass; may_reveal reads them.
    for word in g.FOLDED_WORDS:
        assert g.has_folded(low, word) == (word in low), (word, text)
    revealing = any(word in low for word in g.REVEALING_WORDS) or (
        any(root in low for root in g.NAME_ROOTS) and any(word in low for word in g.PRINTING_WORDS)
    )
    assert g.may_reveal(low) == revealing, text
    # Masking decides the gates made of anchors and literals from the pass's findings.
    found = g.text_found(text)
    assert found is not None
    for rule in secret_rules.rules():
        if rule.needs is not None:
            said = not (found[0].isdisjoint(rule.needs[0]) and found[1].isdisjoint(rule.needs[1]))
            assert said == rule.gate(text, low), (rule.id, text)


def _reference_key_names(low: str) -> list[tuple[int, int, str]]:
    """key_names_by_loops with every occurrence through the whole qualifier grammar
    (no shortcut for a name that no qualifier can follow)."""
    g = secret_gates
    found: list[tuple[int, int, str]] = []
    for root, words in g.KEY_WORDS.items():
        i = low.find(root)
        while i >= 0:
            for word, cls in words:
                if not low.startswith(word, i):
                    continue
                ends = g._qualifier_ends(low, i + len(word))
                ends = [e for e in ends if g._ends_name(low[e : e + 1])]
                prefixed = low[max(0, i - 12) : i].endswith(g.STRONG_KEY_PREFIXES)
                if word == "key" and not prefixed:
                    cls = "weak"
                found.extend((i, end, cls) for end in ends)
            i = low.find(root, i + 1)
    return found


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        edited_corpus_text(),
        anchor_text,
        st.lists(
            st.one_of(
                st.sampled_from(
                    (*SCAN_WORDS, "İ", "ſ", "ı", "\U0001d11e", "\ud800", "\udfff", "=", "@", " ")
                ),
                st.text(max_size=4),
            ),
            max_size=30,
        ).map("".join),
    )
)
def test_automaton_scan_finds_what_the_loops_find(text: str) -> None:
    # The gates scan by automaton once it is built, by str.find loops before: the same
    # anchors at a word boundary, literals, and key names in the same order.
    _same_scan(text)


def test_automaton_scan_on_transcript_texts() -> None:
    texts = [*EXAMPLES, *FOLDED]
    for path in sorted(TRANSCRIPTS.glob("*.jsonl"))[:3] if TRANSCRIPTS.is_dir() else ():
        texts.extend(path.read_text(encoding="utf-8").splitlines())
    for text in texts:
        _same_scan(text)
    # Built by the first long text, never by a prompt-sized one.
    assert secret_gates._scanners() is secret_gates._SCANNERS


def test_a_lone_surrogate_is_scanned_like_any_character() -> None:
    # JSON can carry one (a cut emoji); it has no UTF-8 form for the automaton.
    for text in (
        "\ud800 password = 'hunter2x' ghp_" + "a" * 36 + " \udfff",
        "x\udc80AKIAABCDEFGHIJKLMNOP token\ud800: abcdef0123456789abcdef " * 20,
        "\ud800" * 300,
    ):
        _same_scan(text)
        _same_scan(secret_gates.fold(text))
        # scrub stores it as U+FFFD (UTF-8 has no form for a lone surrogate).
        assert scrub(text) == _ungated_scrub(utf8.storable(text))


def test_a_short_prompt_builds_no_automaton() -> None:

    code = (
        "import sys\n"
        "from memlane import privacy, secret_gates\n"
        "privacy.needs_scrub('fix the retry bug in the password reset flow')\n"
        "print(secret_gates._SCANNERS is None, 'ahocorasick_rs' in sys.modules)\n"
        "privacy.needs_scrub('fix the retry bug ' * 40)\n"
        "print(secret_gates._SCANNERS is None, 'ahocorasick_rs' in sys.modules)\n"
    )
    out = _isolated_words(code)
    assert out == ["True", "False", "False", "True"]


@settings(max_examples=600, deadline=None)
@given(st.one_of(edited_corpus_text(), anchor_text))
def test_gates_never_change_what_scrub_does(text: str) -> None:
    # The gates only skip regexes that cannot match: the output is the ungated one.
    expected = _ungated_scrub(text)
    assert scrub(text) == expected
    assert privacy.needs_scrub(text) or expected == text


def test_the_tag_pattern_repeats_no_group_possessively() -> None:
    # Python 3.11.0-3.11.2 (Debian 12's) mis-match a possessive repeat of a group that
    # holds a repeat (gh-101955): "(?:%(?:25)*+20)*+%2f" failed on "%2f", and every
    # escaped closing tag went unread there (what followed the opening tag was removed).
    import re

    pattern = privacy._tag_regex("private").pattern
    # A literal group repeated possessively ("%" escaped again: "(?:25)*+") is read right.
    rest = re.sub(r"\(\?:[^()*+?{}|]*\)[*+]\+", "", pattern)
    assert ")*+" not in rest and ")++" not in rest, rest
    closing = "a %3Cprivate%3Ex%3C%2Fprivate%3E b"
    assert privacy.scrub(closing) == "a  b"


def test_most_rules_are_skipped_by_the_scan_alone() -> None:
    # Gates of anchors and literals (no further check) are read off the automaton's
    # findings: masking calls only the others.
    decided = [rule.id for rule in secret_rules.rules() if rule.needs is not None]
    assert len(decided) > 0.6 * len(secret_rules.rules())
    assert "aws" in decided and "stdin-password" in decided and "credential-call" not in decided


SETTER_TEXTS = (
    'obj.setPassword("hunter2xyz")',
    'withApiKey("abcd1234efgh")',
    'set_token ("aZ9xx1234")',
    'SETPASSWORD("Qx7kLm2zz")',
    "a" * 100 + 'setPassword("hunter2xyz")',
    "x_" * 40 + 'password("hunter2xyz")',
)


def test_a_setters_gate_asks_for_set_or_with_before_the_key() -> None:
    # The credential-call rule's setters are one run of word characters opening with
    # "set" or "with": a key name before "(" in any other name does not run its regex.
    gate = secret_gates.RULE_GATES["credential-call"]
    for text in ("client.getToken(user)", "check_password(pw)", 'ééésetSecret("xyzzy12345")'):
        assert not gate(text, secret_gates.fold(text)), text
        assert mask_secrets(text) == secret_rules.mask(text, gated=False)
    for text in SETTER_TEXTS:
        assert gate(text, secret_gates.fold(text)), text
        assert mask_secrets(text) == secret_rules.mask(text, gated=False)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            (
                "set",
                "Set",
                "SET",
                "with",
                "get",
                "é",
                "$",
                "_",
                "-",
                ".",
                "x",
                "Api",
                "password",
                "Token",
                "secret",
                "key",
                "_prod",
                "2",
                " ",
                "\t",
                "(",
                '("hunter2xyz")',
                "auth",
                "=",
                "init",
                "twilio",
                "\n",
            )
        ),
        max_size=12,
    ).map("".join)
)
def test_setter_gate_admits_what_the_rule_masks(text: str) -> None:
    assert mask_secrets(text) == secret_rules.mask(text, gated=False)


def test_a_prompts_literal_gates_are_read_by_substring_as_each_gate_reads() -> None:
    # Before the automaton is built (a prompt), any_literal tests each literal once and
    # calls only its gates: the OR of every Literal gate all the same.
    code = (
        "import json, sys\n"
        "from memlane import secret_gates as g\n"
        "texts = json.loads(sys.argv[1])\n"
        "for text in texts:\n"
        "    low = g.fold(text)\n"
        "    plain = any(gate(text, low) for gate in g.OTHER_GATES)\n"
        "    print(g.any_literal(text, low) == plain)\n"
        "print(g._SCANNERS is None)\n"
    )
    texts = [
        *(text for text in EXAMPLES if len(text) < secret_gates.SCAN_CHARS),
        *FOLDED,
        "curl -H 'Authorization: Bearer abc'",
        "see https://hooks.slack.com/ and -us and pat",
        "nothing to see here",
    ]
    import subprocess

    out = subprocess.run(
        [sys.executable, "-I", "-c", code, json.dumps(texts)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(privacy.__file__).parents[1])},
    ).stdout.split()
    assert out == ["True"] * (len(texts) + 1)
