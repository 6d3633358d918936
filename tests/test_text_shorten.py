"""text.shorten: a cut never changes what a number says."""

from __future__ import annotations

from memlane.models import Checkpoint
from memlane.service import Memory
from memlane.text import one_line, shorten


def test_a_text_that_fits_is_kept_whole() -> None:
    assert shorten("port 8080", 9) == "port 8080"


def test_a_cut_ends_in_an_ellipsis_within_the_limit() -> None:
    cut = shorten("the quick brown fox jumps", 12)
    assert cut == "the quick b…"
    assert len(cut) <= 12


def test_a_number_is_not_cut_in_two() -> None:
    # "8080" cut after "80" would name another port.
    text = "the server falls back to 8080 when PORT is empty"
    assert shorten(text, 28) == "the server falls back to…"
    assert shorten("falls back to 8080", 17) == "falls back to…"


def test_a_version_or_a_grouped_number_is_not_cut_inside() -> None:
    assert shorten("upgraded dialyxir to 1.4.7 today", 25) == "upgraded dialyxir to…"
    assert shorten("took 10_000 ms", 10) == "took…"
    assert shorten("max 8,080 rows", 8) == "max…"


def test_a_cut_after_a_separator_or_a_sign_moves_before_the_number() -> None:
    assert shorten("max 8,080 rows", 7) == "max…"
    assert shorten("upgrade to 1.4.7 today", 14) == "upgrade to…"
    assert shorten("costs -1234 units", 9) == "costs…"


def test_a_number_that_ends_at_the_cut_is_kept() -> None:
    assert shorten("port 8080 is taken by nginx", 11) == "port 8080…"
    assert shorten("dialyxir 1.4.7 is out", 15) == "dialyxir 1.4.7…"


def test_one_line_keeps_the_rule() -> None:
    assert one_line("falls back\n  to 8080", 17) == "falls back to…"


def test_the_context_packs_lists_cut_no_number_in_two(memory: Memory) -> None:
    head = "Move the health check off the port the server falls back to "
    step = head + "x" * (196 - len(head)) + " 8080"  # 201 characters: cut inside 8080
    memory.session_start("s", project="p")
    memory.record_prompt("s", "make the server start when PORT is empty", project="p")
    memory.save_checkpoint(
        Checkpoint(session_id="s", project="p", task="fix the PORT fallback", next_steps=(step,))
    )
    pack = memory.context(project="p")
    assert "Move the health check" in pack
    assert "808…" not in pack and "80…" not in pack and "8…" not in pack
