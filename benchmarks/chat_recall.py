"""What the prompt hook injects for LongMemEval questions: does it carry the answer?

``retrieval_longmemeval.py`` scores rankings (R@k, nDCG); this script scores what an
agent is given. Per question (dev150 by default):

1. **Its haystack**, imported as the README's plain JSONL records into its own
   database and embedded: ``retrieval_longmemeval.Memlane.open``, the same
   databases, reused from ``--workdir`` when their records are unchanged.
2. **keyword**: the UserPromptSubmit command ``memlane setup`` writes, run in a
   sandbox whose ``MEMLANE_HOME`` holds a copy of that database, its working
   directory named as the question's project (worker autostart off): what a hook
   process injects. **hybrid**: the calls the worker's prompt handler makes
   (``recall`` in the default mode, ``select_recall``, ``recall_block``) on the
   database with its vectors, in this process: what a warm worker injects.
   **bm25** (the same-run baseline): a plain Okapi BM25 over the same turns
   (``retrieval_longmemeval.Bm25``), its first three turns shown from their start
   in the same 1,200 characters, no floor.
3. **Scores**, overall and per question type: *evidence*, a turn marked
   ``has_answer`` is among the injected items; *answer shown*, for answers of at most
   four words, each of the answer's words (numbers as digits or words) is in the
   injected memories (not in their frame: markers, header, item numbers, provenance);
   *injected*, the prompt got anything; *noise*, the question asked against the next
   question's database, whose haystack does not hold its evidence sessions, got
   anything (hard negatives: every haystack is personal chat); mean characters.

Printed, not asserted (a benchmark, not a test)::

    .venv/bin/python benchmarks/chat_recall.py --workdir /tmp/lme-dbs [--show 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coding_recall import Sandbox
from retrieval_longmemeval import (
    DATA_DIR,
    DATA_NAME,
    Bm25,
    Memlane,
    Timing,
    exposed,
    gold_turns,
    load_questions,
    project_of,
    turns_of,
)

BUDGET = 1200  # recall_max_chars's default
BASELINE_ITEMS = 3  # recall_limit's default
SHORT_ANSWER_WORDS = 4
MODES = ("bm25", "keyword", "hybrid")
# fmt: off
_NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)
# fmt: on
_ARTICLES = frozenset(("the", "a", "an"))


def words_of(text: str) -> set[str]:
    """Lower-cased words of ``text``, a number also as its word and a number word as its
    digits (``7`` ↔ ``seven``)."""
    found = set(re.findall(r"[a-z0-9]+", text.lower()))
    for number, word in enumerate(_NUMBER_WORDS):
        if str(number) in found:
            found.add(word)
        if word in found:
            found.add(str(number))
    return found


def answer_words(answer: Any) -> list[str] | None:
    """The words an injection must show for ``answer``, or None when it is longer than
    ``SHORT_ANSWER_WORDS`` (a sentence is not checked by its words)."""
    found = [w for w in re.findall(r"[a-z0-9]+", str(answer).lower()) if w not in _ARTICLES]
    return found if 0 < len(found) <= SHORT_ANSWER_WORDS else None


@dataclass
class Asked:
    """One mode's answer to one question."""

    injected: str
    evidence: bool
    answer_shown: bool | None
    noise: bool


@dataclass
class Tally:
    asked: dict[str, dict[str, Asked]] = field(default_factory=lambda: defaultdict(dict))


class HookSandbox:
    """The coding benchmark's sandbox (a HOME with the hooks ``memlane setup`` writes),
    its MEMLANE_HOME holding a copy of the database being asked."""

    def __init__(self, root: Path) -> None:
        self.box = Sandbox(root, "chat", {"MEMLANE_MAINTENANCE_ENABLED": "0"})
        self.box.setup_hooks()

    def ask(self, database: Path, project: str, prompt: str) -> str:
        """What the installed prompt hook injects for ``prompt`` in ``project``."""
        target = self.box.db
        for stale in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
            stale.unlink(missing_ok=True)
        shutil.copyfile(database, target)
        target.chmod(0o600)
        self.box.enter(self.box.dir / "projects" / project)
        payload = self.box.base_payload(f"ask-{project}", self.box.project / "ask.jsonl")
        return self.box.hook("UserPromptSubmit", {**payload, "prompt": prompt}).injected

    def injected_ids(self) -> set[str]:
        """The record ids of the memories the last prompt got, from the injection log
        the hook writes (``memlane log``)."""
        db = sqlite3.connect(f"file:{self.box.db}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT m.source_id FROM injected_memories i JOIN memories m ON m.id = i.memory_id"
                " WHERE i.injection_id = (SELECT max(id) FROM injections)"
            ).fetchall()
        finally:
            db.close()
        return {str(source) for (source,) in rows if source}


def worker_injection(memory: Any, question: dict[str, Any], project: str) -> tuple[str, list[Any]]:
    """What the worker's prompt handler injects (``hooks.handlers.recall_for_prompt``, the
    warm worker's mode: the configured one, hybrid)."""
    from memlane.hooks.handlers import recall_for_prompt

    hits, chosen, block = recall_for_prompt(
        memory, memory.settings, question["question"], project=project, session_id=None, mode=None
    )
    if hits.mode != "hybrid":
        raise SystemExit(f"hybrid recall fell back to {hits.mode}: {hits.notice}")
    return block, chosen


def baseline_injection(question: dict[str, Any]) -> tuple[str, set[str]]:
    """Plain BM25's first turns, each shown from its start, in the same budget."""
    turns = turns_of(question)
    ranked = Bm25([t.text for t in turns]).rank(question["question"])[:BASELINE_ITEMS]
    if not ranked:
        return "", set()
    share = BUDGET // len(ranked)
    items = [f"{n}. {turns[i].role}: {turns[i].text}"[: share - 1] for n, i in enumerate(ranked, 1)]
    return "\n".join(items), {turns[i].key for i in ranked}


def negative_for(questions: Sequence[dict[str, Any]], index: int) -> dict[str, Any]:
    """The first question after ``index`` (cyclically) whose haystack holds none of the
    evidence sessions of ``questions[index]``: its database has nothing relevant."""
    evidence = set(questions[index]["answer_session_ids"])
    for step in range(1, len(questions)):
        other = questions[(index + step) % len(questions)]
        if evidence.isdisjoint(other["haystack_session_ids"]):
            return other
    raise SystemExit("no haystack without this question's evidence: give more questions")


# What frames the memories, not a memory's words: the block's markers and header line, an
# item's number with memlane's bracketed provenance (date, session, relevance) or the
# baseline's role. Its digits must not count as a number the answer asks for.
_FRAME = re.compile(
    r"^</?memlane-context>$|^memlane recalled .*$|^\d+\. (?:\[[^\]\n]*\]|user:|assistant:)",
    re.MULTILINE,
)


def memories_text(injected: str) -> str:
    """``injected`` without its frame (``_FRAME``): what the memories themselves say."""
    return _FRAME.sub("", injected)


def score(question: dict[str, Any], injected: str, shown_ids: set[str], noise: bool) -> Asked:
    """``noise``: the question asked on another haystack got anything."""
    wanted = answer_words(question["answer"])
    shown = None if wanted is None else set(wanted) <= words_of(memories_text(injected))
    return Asked(injected, bool(shown_ids & gold_turns(question)), shown, noise)


def report(questions: Sequence[dict[str, Any]], tally: Tally, modes: Sequence[str]) -> None:
    types = ["overall", *sorted({q["question_type"] for q in questions})]
    print(
        "\n| question type | mode | n | evidence injected | answer shown (short answers) "
        "| injected | noise (other haystack) | mean chars |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for qtype in types:
        chosen = [q for q in questions if qtype in ("overall", q["question_type"])]
        for mode in modes:
            rows = [tally.asked[mode][str(q["question_id"])] for q in chosen]
            short = [r.answer_shown for r in rows if r.answer_shown is not None]
            evidence = sum(r.evidence for r in rows)
            answered = f"{sum(short)}/{len(short)}" if short else "–"
            chars = statistics.fmean(len(r.injected) for r in rows) if rows else 0.0
            print(
                f"| {qtype} | {mode} | {len(rows)} | {evidence}/{len(rows)} | {answered} "
                f"| {sum(bool(r.injected) for r in rows)}/{len(rows)} "
                f"| {sum(r.noise for r in rows)}/{len(rows)} | {chars:.0f} |"
            )


def show(questions: Sequence[dict[str, Any]], tally: Tally, mode: str, count: int) -> None:
    """``count`` questions whose answer the baseline shows and ``mode`` does not, then
    the other way round: what is injected."""

    def pick(a: str, b: str) -> list[dict[str, Any]]:
        return [
            q
            for q in questions
            if tally.asked[a][str(q["question_id"])].answer_shown
            and tally.asked[b][str(q["question_id"])].answer_shown is False
        ][:count]

    for title, group in (("bm25 shows, " + mode + " does not", pick("bm25", mode)),
                         (mode + " shows, bm25 does not", pick(mode, "bm25"))):  # fmt: skip
        print(f"\n=== {title}")
        for q in group:
            qid = str(q["question_id"])
            print(f"\n--- {qid} [{q['question_type']}]\nQ: {q['question']}\nA: {q['answer']}")
            for name in ("bm25", mode):
                print(f"[{name}]\n{tally.asked[name][qid].injected or '(nothing)'}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--split", default="dev150", help="dev30 | dev150")
    parser.add_argument("--data", type=Path, help="a LongMemEval_S/_M JSON file instead")
    parser.add_argument("--workdir", type=Path, help="keep the per-question databases here")
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--show", type=int, default=0, help="examples per direction")
    args = parser.parse_args(argv)

    path = args.data or DATA_DIR / DATA_NAME.format(split=args.split)
    questions = load_questions(path)[: args.limit_questions]
    keep = args.workdir is not None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-chat-"))
    workdir.mkdir(parents=True, exist_ok=True)
    sandbox_root = Path(tempfile.mkdtemp(prefix="memlane-chat-hook-"))
    timing = Timing()
    engine = Memlane(workdir, "use", (), timing)
    tally = Tally()
    started = time.perf_counter()
    try:
        sandbox = HookSandbox(sandbox_root)
        for n, question in enumerate(questions):
            other = negative_for(questions, n)
            qid, project = str(question["question_id"]), project_of(question)
            memory = engine.open(question)
            try:
                block, chosen = worker_injection(memory, question, project)
                ids = {i for hit in chosen for i in exposed(hit)}
            finally:
                memory.close()
            negative = engine.open(other)
            try:
                noise, _ = worker_injection(negative, question, project_of(other))
            finally:
                negative.close()
            tally.asked["hybrid"][qid] = score(question, block, ids, bool(noise))

            hooked = sandbox.ask(workdir / f"{qid}.db", project, question["question"])
            ids = sandbox.injected_ids()
            hook_noise = sandbox.ask(
                workdir / f"{other['question_id']}.db", project_of(other), question["question"]
            )
            tally.asked["keyword"][qid] = score(question, hooked, ids, bool(hook_noise))

            base, base_ids = baseline_injection(question)
            # No floor: the baseline injects for every prompt, on any haystack.
            tally.asked["bm25"][qid] = score(question, base, base_ids, noise=True)
            if (n + 1) % 25 == 0:
                print(f"  {n + 1}/{len(questions)} questions", file=sys.stderr)
    finally:
        if engine._embedder is not None:
            engine.embedder.flush()
        shutil.rmtree(sandbox_root, ignore_errors=True)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"LongMemEval {path.name}: {len(questions)} questions,"
        f" {time.perf_counter() - started:.0f} s;"
        f" keyword = the installed prompt hook, hybrid = the worker's handler in process,"
        f" bm25 = plain BM25's first {BASELINE_ITEMS} turns from their start (no floor)"
    )
    report(questions, tally, MODES)
    if args.show:
        show(questions, tally, "hybrid", args.show)
        show(questions, tally, "keyword", args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
