"""Secrets hidden behind characters a reader does not see: a zero-width space or a soft
hyphen inside a key name, a token or a ``<private>`` tag, or the fullwidth forms of
ASCII (``ｐａｓｓｗｏｒｄ``). The filter reads the plain form too; when that shows a
secret or a tag, the plain form is kept, filtered (a fullwidth colon before a masked
value becomes ":"). Text whose hiding characters hide nothing stays as it is."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane import privacy
from tests.test_hooks import hook, ok
from tests.test_privacy_entrypoints import leaked

ZWSP, SHY = "\u200b", "\u00ad"

HIDDEN = [
    (f"pass{ZWSP}word=Hid7secretx", "Hid7secretx"),
    (f"pass{SHY}word: Shy7secretx", "Shy7secretx"),
    ("ｐａｓｓｗｏｒｄ＝Full7secretx", "Full7secretx"),
    (f"export API{ZWSP}_TOKEN=Tok7secretvalue", "Tok7secretvalue"),
    (f"gh{ZWSP}p_wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx", "wWPw5k4aXcaT4fNP0Ucn"),
    (f"ghp_wWPw5k4aXcaT4fNP0Ucn{ZWSP}ZwJUVFk6LO0pINUx", "ZwJUVFk6LO0pINUx"),
    (f"<priv{ZWSP}ate>Zw7secret plan</priv{ZWSP}ate> the rest", "Zw7secret"),
    ("<ｐｒｉｖａｔｅ>Fw7secret plan</ｐｒｉｖａｔｅ>", "Fw7secret"),
    (f"your verification{ZWSP} code is 493817", "493817"),
    ("\ufeffDB_PASSWORD=Bom7secretx", "Bom7secretx"),
]

KEPT = [
    f"a zero{ZWSP}width space between words",
    "Ｗｉｎｄｏｗｓ１１ と 設定ファイル",
    f"soft{SHY}hyphenated text, nothing secret",
    "café naïve — … → fine",
]


@pytest.mark.parametrize(("text", "secret"), HIDDEN)
def test_a_secret_behind_hiding_characters_is_masked(text: str, secret: str) -> None:
    out = privacy.scrub(text)
    assert secret not in out, out
    assert privacy.needs_scrub(text)
    assert privacy.scrub(out) == out
    assert privacy.unhidden(out) is None, out  # the plain form is what is kept


@pytest.mark.parametrize("text", KEPT)
def test_hiding_characters_that_hide_nothing_stay(text: str) -> None:
    assert privacy.scrub(text) == text


def test_a_private_tag_behind_a_soft_hyphen_is_removed_whole() -> None:
    out = privacy.scrub(f"before <pri{SHY}vate>plan</pri{SHY}vate> after")
    assert out == "before  after"


_PIECES = st.sampled_from(
    [
        "pass", "word", "=", ":", " ", "Hunter2xyz!", "<", ">", "/", "private", "priv", "ate",
        ZWSP, SHY, "\ufeff", "ｐ", "ａ", "ｓ", "＝", "ghp_", "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx",
        "x", "\n", "token", "é", "→",
    ]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_scrub_stays_a_fixpoint_and_its_prefilter_exact(text: str) -> None:
    out = privacy.scrub(text)
    assert privacy.scrub(out) == out
    assert privacy.needs_scrub(text) or out == text
    plain = privacy.unhidden(text)
    if plain is not None and privacy.scrub(plain) != plain:
        assert out == privacy.scrub(plain)


def test_hidden_secrets_reach_no_stored_row(tmp_path: Path) -> None:
    """Real hook processes: a prompt and a Bash command holding hidden secrets."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    base = {"session_id": "hidden", "cwd": str(work)}
    prompt = "remember: " + " ; ".join(text for text, _ in HIDDEN[:5])
    events = [
        ("user-prompt-submit", base | {"hook_event_name": "UserPromptSubmit", "prompt": prompt}),
        (
            "post-tool-use",
            base
            | {
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_use_id": "t1",
                "tool_input": {"command": "\n".join(text for text, _ in HIDDEN[5:])},
                "tool_response": {"stdout": "ok", "stderr": ""},
            },
        ),
    ]
    for name, payload in events:
        ok(hook(home, name, json.dumps(payload).encode(), cwd=work))
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        stored = "\n".join(row[0] for row in conn.execute("SELECT content FROM memories"))
    assert "remember:" in stored and "[REDACTED:" in stored, stored
    secrets = [secret for _, secret in HIDDEN]
    assert [s for s in secrets if s in stored] == []
    assert leaked(db, secrets) == {}
