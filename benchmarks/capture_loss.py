"""Capture loss: which lines of a transcript reach no stored memory?

Run: ``.venv/bin/python benchmarks/capture_loss.py [TRANSCRIPT.jsonl ...]`` (default: every
Claude Code transcript in ``../shared/fixtures/claude-code-transcripts``, subagents included).

Printed, not asserted. Each transcript is ingested (``Memory.ingest_transcript``, as the Stop
hook does) into a throw-away database; then every display line of 25 characters or more
(letters in it) of each tool result and each text block is looked up, whitespace-collapsed
and lower-cased, in the stored titles and contents. A line found nowhere is lost: a question
about it cannot be answered, whatever the ranking. Reported per source (``tool:<name>`` or
``text:<role>``) with a few examples of the most lost sources. Expected losses: tool output
kept by its first and last lines (``capture.output_head_lines`` / ``output_tail_lines``) and
within ``units.MAX_CALL_CHARS`` per call, trivial echoes ("The file … has been updated"),
build noise; a lost line of an answer or a decision is a defect.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import memlane
from memlane.capture.transcript import ToolCall, iter_turns
from memlane.text import display_text

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code-transcripts"
MIN_LINE = 25
EXAMPLES = 4


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def default_transcripts() -> list[Path]:
    if not FIXTURES.is_dir():
        raise SystemExit(f"no transcripts given and {FIXTURES} does not exist")
    return sorted([*FIXTURES.glob("*.jsonl"), *FIXTURES.glob("*/subagents/*.jsonl")])


def stored_text(transcripts: list[Path], workdir: Path) -> str:
    db = workdir / "capture-loss.db"
    with memlane.open(str(db)) as memory:
        for number, path in enumerate(transcripts):
            memory.ingest_transcript(f"loss-{number}", str(path), project="capture-loss")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT title || char(10) || content FROM memories").fetchall()
    return normalise("\n".join(text for (text,) in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    args = parser.parse_args()
    transcripts = args.transcripts or default_transcripts()
    with tempfile.TemporaryDirectory(prefix="memlane-capture-loss-") as tmp:
        stored = stored_text(transcripts, Path(tmp))
    total: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    examples: defaultdict[str, list[str]] = defaultdict(list)
    for path in transcripts:
        for turn in iter_turns(str(path)):
            for block in turn.blocks:
                if isinstance(block, ToolCall):
                    source, text = f"tool:{block.name or '?'}", block.result
                else:
                    source, text = f"text:{turn.role}", block
                for line in display_text(text or "").split("\n"):
                    key = normalise(line)
                    if len(key) < MIN_LINE or not re.search(r"[a-z]{3}", key):
                        continue
                    total[source] += 1
                    if key not in stored:
                        lost[source] += 1
                        if len(examples[source]) < EXAMPLES:
                            examples[source].append(key[:110])
    print(f"{len(transcripts)} transcripts; lines of {MIN_LINE}+ characters found in no memory:")
    print("| source | lines | lost | share |")
    print("|---|---:|---:|---:|")
    for source in sorted(total, key=lambda s: (-lost[s], s)):
        share = lost[source] / total[source]
        print(f"| {source} | {total[source]:,} | {lost[source]:,} | {share:.0%} |")
    for source in sorted(lost, key=lambda s: -lost[s])[:4]:
        print(f"\n{source}, examples of lost lines:")
        for line in examples[source]:
            print(f"  {line}")


if __name__ == "__main__":
    main()
