"""Shortcuts in cutting units give what the plain rules give.

``display_text`` removes Read's line numbers with patterns other than one alternation,
``clean_output`` skips its noise regex for lines whose first character no noise line
starts with and keys a plain ASCII line by itself, ``has_cjk`` looks for the UTF-8
lead bytes of U+3000 and beyond before its class, and ``identifier_parts`` finds
identifiers from their inner capitals rather than reading every word. Each is checked
against the plain form on hand-made edge cases and on seeded random text.
"""

from __future__ import annotations

import random
import re

from memlane import text as text_module
from memlane.capture import output
from memlane.capture.output import clean_output
from memlane.text import WORD, cjk_run_pattern, display_text, has_cjk, identifier_parts

# The one alternation display_text used: a number and arrow at a line start (with the
# blanks before it) or after a blank.
ONE_ALTERNATION = re.compile(r"(?m)(?:^[ \t]*|(?<=[ \t]))\d+\u2192")
ARROW_CASES = [
    "     12→  keep me\n     13→x",
    "[result]      12→value",
    "  12→ 13→x",
    "  12→34→x",
    "x12→y",
    "\t7→a\n\t\t8→b 9→c\tx10→d",
    " 1 23→",
    "a\n12→ 5→",
    "→ alone\n 3 →4→",
    "١٢→ arabic digits\n ²→ superscript",
    "\n\n  \n 12→",
    "12→first\n13→second",
    "\n12→\n\n 13→ 14→\n",
    "\t\t\n\t 1→\t2→",
]


def plain_clean(text: str) -> str:
    """clean_output without the first-character shortcut (the rule as written)."""
    lines: list[str] = []
    seen: set[str] = set()
    run = 0
    for raw in display_text(text).split("\n"):
        line = raw.rstrip()
        if output.is_progress(line):
            continue
        key = " ".join(line.split())
        if key in seen:
            if lines and " ".join(lines[-1].split()).startswith(key):
                run += 1
                lines[-1] = f"{line} (×{run + 1})"
            continue
        seen.add(key)
        run = 0
        lines.append(line)
    return "\n".join(lines)


def random_text(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def test_line_numbers_go_as_the_one_alternation_removed_them() -> None:
    for case in ARROW_CASES:
        assert display_text(case) == ONE_ALTERNATION.sub("", case), case
    rng = random.Random(20)
    for _ in range(3000):
        text = random_text(rng, " \t\n12→x[]٣", rng.randint(0, 40))
        assert display_text(text) == ONE_ALTERNATION.sub("", text), repr(text)


def test_no_noise_line_starts_with_a_skipped_character() -> None:
    noise_lines = [
        "==> dep",
        "===> Compiling yamerl",
        "Compiling lib/ash.ex (it's taking more than 10s)",
        "Compiling 1 file (.ex)",
        "Generated x app",
        "Downloading a",
        "Resolved 3",
        "remote: Total 3",
        "........ [ 50%]",
        "[=====>    ] 45%",
        "100%",
        "⠋⠙⠹",
        ")",
        "xsxsxsxs",
    ]
    assert all(output.is_progress(line) for line in noise_lines)
    suffixes = [line[1:] for line in noise_lines] + [*noise_lines, ""]
    rng = random.Random(21)
    suffixes += [random_text(rng, ".=>-[]%0 sx|()", rng.randint(0, 12)) for _ in range(300)]
    for first in output._NOT_NOISE:
        for suffix in suffixes:
            assert output._NOISE.match(first + suffix) is None, first + suffix


def test_clean_output_equals_the_plain_rule() -> None:
    lines = [
        "==> dep",
        "Compiling 1 file (.ex)",
        "........ [ 50%]",
        "sssssssss",
        "xXsSFE..",
        "[=====>    ] 45%",
        "def f():",
        "  return 1",
        "'quoted'",
        "{ brace",
        "Requirement already satisfied: x",
        "rremote: Total",
        "remote: Total 3",
        "%",
        "  12→  numbered",
        "",
        "   ",
        "same line",
        "same   line",
        "same\tline",
        "  same line\t",
        "same\u00a0line",
        "\u3000same line",
        "same\u2028line",
        "sa\u00efme  line",
        "same line (×2)",
    ]
    rng = random.Random(22)
    for _ in range(400):
        text = "\n".join(rng.choice(lines) for _ in range(rng.randint(0, 25)))
        assert clean_output(text) == plain_clean(text), text


def test_trivial_line_equals_the_whole_line_pattern() -> None:
    cases = ["", "   ", "}", "  });", "end", "  fi ", "done;", "esac", ") ;", "endx", "} else {"]
    cases += ["\t]],", "efd", "def f():", "  return x", "{\u00a0}", "\u2028end\u2028", "f i"]
    rng = random.Random(23)
    cases += [
        random_text(rng, " \t{}()[];,endfiosacx\u00a0", rng.randint(0, 12)) for _ in range(3000)
    ]
    trivial = 0
    for line in cases:
        expected = output._TRIVIAL.match(line) is not None
        assert output.trivial_line(line) == expected, repr(line)
        trivial += expected
    assert trivial > 100


def test_has_cjk_equals_a_search_of_the_class() -> None:
    # The lead bytes from 0xE3 on stand for U+3000 and beyond: the class must start there.
    assert min(text_module._CJK_CLASS.replace("-", "")) >= "\u3000"
    cases = ["", "abc", "a…b", "日本語", "x\u3040", "x\u303f", "\u309f", "😀", "\ud800", "한국"]
    rng = random.Random(24)
    alphabet = "a …→\u303f\u3040\u4e00\uac00\ud7af\ud7b0\uff66\uffa0😀\ud800"
    cases += [random_text(rng, alphabet, rng.randint(0, 6)) for _ in range(3000)]
    found = 0
    for text in cases:
        expected = cjk_run_pattern().search(text) is not None
        assert has_cjk(text) == expected, repr(text)
        found += expected
    assert 100 < found < len(cases) - 100


def plain_identifier_parts(text: str) -> str:
    """identifier_parts as the rule says it: the parts of every distinct word holding a
    small letter or digit then a capital, or two capitals then a small letter."""
    inner = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")
    words = dict.fromkeys(w for w in WORD.findall(text) if inner.search(w))
    return " ".join(part for word in words for part in text_module._parts(word))


def test_identifier_parts_equal_the_parts_of_every_camel_case_word() -> None:
    cases = ["", "plain words", "getUserName", "HTTPServer", "SQLite x", "a1B", "ABC", "AbC"]
    cases += ["x_yZ", "Ab_CdEf", "éA", "ÀBc", "getX getX", "ABcDE", "_aB_", "a٠B", "ΣaB"]
    rng = random.Random(25)
    alphabet = "aBcXYZ09_ -.\néÀ٠Σ"
    cases += [random_text(rng, alphabet, rng.randint(0, 24)) for _ in range(5000)]
    found = 0
    for text in cases:
        expected = plain_identifier_parts(text)
        assert identifier_parts(text) == expected, repr(text)
        found += bool(expected)
    assert 500 < found < len(cases) - 500
