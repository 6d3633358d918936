"""Chunker: token budget, code fences, role prefixes, determinism, per-chunk metadata."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.capture.chunker import Chunk, chunk_turns, fenced_blocks, hard_split, split_blocks
from memlane.capture.transcript import Turn, iter_turns
from memlane.text import estimate_tokens

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code-transcripts"


def body(chunk: Chunk) -> str:
    prefix = f"{chunk.role}: "
    assert chunk.text.startswith(prefix)
    return chunk.text[len(prefix) :]


def squash(text: str) -> str:
    return "".join(text.split())


def paragraph(seed: int, words: int) -> str:
    return " ".join(f"word{seed}_{i}" for i in range(words))


def test_split_blocks_paragraphs_and_fences() -> None:
    text = "intro line\nsecond line\n\n```python\ndef f():\n\n    return 1\n```\n\n\nafter"
    assert split_blocks(text) == [
        ("intro line\nsecond line", False),
        ("```python\ndef f():\n\n    return 1\n```", True),
        ("after", False),
    ]
    # A longer closing fence closes; a shorter one does not; ~~~ fences work too.
    assert split_blocks("````\n```\nx\n````\ny") == [("````\n```\nx\n````", True), ("y", False)]
    assert split_blocks("~~~\na\n\nb") == [("~~~\na\n\nb", True)]  # unclosed runs to the end


def test_small_turns_of_one_role_share_a_chunk() -> None:
    turns = [
        Turn("user", "please fix the bug", end_offset=10),
        Turn("assistant", "Looking.\n\n[tool Read] a.py", tool_names=("Read",), end_offset=20),
        Turn("assistant", "[tool Bash] pytest", tool_names=("Bash",), end_offset=30),
        Turn("user", "thanks", end_offset=40),
    ]
    chunks = chunk_turns(turns)
    assert [(c.index, c.role) for c in chunks] == [(0, "user"), (1, "assistant"), (2, "user")]
    assert chunks[0].text == "user: please fix the bug"
    assert chunks[1].text == "assistant: Looking.\n\n[tool Read] a.py\n\n[tool Bash] pytest"
    assert chunks[1].tool_names == ("Read", "Bash")
    assert chunks[1].end_offset == 30
    assert chunks[1].token_estimate == estimate_tokens(chunks[1].text)


def test_never_over_budget_and_fence_kept_whole() -> None:
    code = "```python\n" + "\n".join(f"x_{i} = {i}  # value" for i in range(60)) + "\n```"
    assert len(code) < 2000
    text = "\n\n".join([paragraph(1, 150), code, paragraph(2, 150), paragraph(3, 10)])
    chunks = chunk_turns([Turn("assistant", text)])
    assert len(chunks) > 1
    assert all(c.token_estimate <= 512 and len(c.text) <= 2048 for c in chunks)
    holding = [c for c in chunks if "x_0 = 0" in c.text]
    assert len(holding) == 1 and code in holding[0].text
    assert squash("".join(body(c) for c in chunks)) == squash(text)


def test_oversized_code_block_is_split_by_lines() -> None:
    lines = [f"    call_number_{i}(argument_{i})" for i in range(300)]
    code = "```\n" + "\n".join(lines) + "\n```"
    chunks = chunk_turns([Turn("assistant", code)], max_tokens=128)
    assert len(chunks) > 5
    assert all(len(c.text) <= 512 for c in chunks)
    for line in lines:  # no line cut in two
        assert any(line in body(c).split("\n") for c in chunks)


def test_hard_split_long_line() -> None:
    pieces = hard_split("a" * 1000 + "\nshort", 300)
    assert pieces == ["a" * 300] * 3 + ["a" * 100 + "\nshort"]


def test_hard_split_cuts_a_long_line_of_words_between_words() -> None:
    line = " ".join(f"word{i}" for i in range(200))
    pieces = hard_split(line, 300)
    assert all(150 <= len(p) <= 300 for p in pieces[:-1])
    assert " ".join(pieces) == line
    words = set(line.split())
    assert all(set(p.split()) <= words for p in pieces)


def test_deterministic_and_start_index() -> None:
    turns = [Turn("user", paragraph(i, 300)) for i in range(3)]
    first = chunk_turns(turns)
    assert first == chunk_turns(turns)
    shifted = chunk_turns(turns, start_index=100)
    assert [c.index for c in shifted] == [c.index + 100 for c in first]
    assert [c.text for c in shifted] == [c.text for c in first]
    assert [c.index for c in first] == list(range(len(first)))


def test_split_turn_metadata_follows_the_text() -> None:
    text = "\n\n".join(
        [
            "[tool Read] src/a.py",
            paragraph(1, 400),
            "[tool Bash] make test",
            "[error] exit code 2",
        ]
    )
    turn = Turn(
        "assistant",
        text,
        tool_names=("Read", "Bash"),
        files=("src/a.py",),
        errors=("exit code 2",),
    )
    chunks = chunk_turns([turn])
    assert len(chunks) >= 2
    assert chunks[0].tool_names == ("Read",) and chunks[0].files == ("src/a.py",)
    assert chunks[0].errors == ()
    assert chunks[-1].tool_names == ("Bash",)
    assert chunks[-1].errors == ("exit code 2",)


def test_rejects_tiny_budget() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_turns([Turn("user", "x")], max_tokens=4)


def test_empty_input() -> None:
    assert chunk_turns([]) == []
    assert chunk_turns([Turn("user", " \n\n ")]) == []


text_strategy = st.text(
    alphabet=st.sampled_from(list("ab cd\n`~x#-*é漢\t")) | st.characters(), max_size=5000
)


@settings(max_examples=150, deadline=None)
@given(text_strategy, st.sampled_from([16, 50, 512]), st.sampled_from(["user", "assistant"]))
def test_any_text_chunks_within_budget_and_covered(text: str, max_tokens: int, role: str) -> None:
    chunks = chunk_turns([Turn(role, text)], max_tokens=max_tokens)
    for chunk in chunks:
        assert chunk.token_estimate <= max_tokens
        assert estimate_tokens(chunk.text) <= max_tokens
        assert chunk.role == role
    assert squash("".join(body(c) for c in chunks)) == squash(text)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), text_strategy), max_size=6))
def test_many_turns_keep_order_and_roles(turns_spec: list[tuple[str, str]]) -> None:
    turns = [Turn(role, text) for role, text in turns_spec]
    chunks = chunk_turns(turns)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert squash("".join(body(c) for c in chunks)) == squash("".join(t for _, t in turns_spec))
    assert all(c.token_estimate <= 512 for c in chunks)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared fixtures absent")
def test_real_transcripts_chunk_within_budget() -> None:
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        turns = list(iter_turns(str(path)))
        chunks = chunk_turns(turns)
        assert chunks == chunk_turns(turns)
        assert all(c.token_estimate <= 512 for c in chunks)
        assert squash("".join(body(c) for c in chunks)) == squash("".join(t.text for t in turns))
        # Every fenced block short enough is in one chunk, whole.
        for turn in turns:
            for block, is_code in split_blocks(turn.text):
                if is_code and len(block) < 1500:
                    assert any(block in c.text for c in chunks)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "b c", " ", "\t", "\r", "\n", "\n\n", "`", "``", "```", "~~~", "~"]),
        max_size=40,
    ).map("".join)
)
def test_split_blocks_fast_path_matches_reference(text: str) -> None:
    # Texts without a fence marker skip the per-line loop: same blocks either way.
    assert split_blocks(text) == fenced_blocks(text)
