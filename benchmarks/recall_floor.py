"""Where should ``min_relevance_score`` (the per-prompt recall floor) sit, per search mode?

The UserPromptSubmit hook recalls with ``Memory.recall`` — keyword mode in the hook
process, hybrid mode through the worker — and injects at most ``recall_limit`` hits
scoring at least ``min_relevance_score``. This script collects the scores that
recall produces for prompts whose relevant memories are known and for prompts
with nothing relevant, in both modes, and reports:

* the distribution (min/p10/median/p90/max) of the best relevant hit's score and
  of the best hit's score for nothing-relevant prompts;
* for floors 0.15…0.45: recall (share of related prompts that get a relevant memory
  injected), noise (share of nothing-relevant prompts that get anything injected),
  balanced query precision (as if related and unrelated prompts were equally
  common) and item precision (share of injected memories that are relevant).

Every prompt is searched exactly as recall does it (same kinds, the hook's
candidate limit ``min(recall_limit × 3, 20)``, ``keyword_scan=RECALL_KEYWORD_SCAN``,
floor 0 so every score is seen), plus ``as_of`` so that recency is computed
against the data's own "now". Prompts the hook would not recall for (slash
commands, "ok") inject nothing. Two sources, reported separately:

1. **coding**: ``benchmarks/data/recall_floor_coding.json`` — 42 memories of three
   projects (decisions, bugfixes, commands, lessons, turns), 37 related prompts
   (paraphrases, different words, fragments) and 32 unrelated ones (other tasks in
   the same projects, chit-chat); tiered scope from the prompt's project.
2. **lme**: the LongMemEval dev split. Each question's haystack is subsampled (its
   evidence sessions plus ``--distractors`` random other sessions, seeded) to keep
   the embedding time in minutes; the question is asked against its own haystack
   (relevant: turns of its answer sessions) and against ``--negatives`` other
   questions' haystacks that do not contain its answer sessions (nothing relevant);
   project scope.

    .venv/bin/python benchmarks/recall_floor.py --markdown recall_floor.md
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import memlane
from memlane.capture.prompts import is_meaningful_prompt
from memlane.config import Settings, load_settings
from memlane.service import RECALL_KEYWORD_SCAN, Memory
from retrieval_longmemeval import (
    DEFAULT_DATA,
    load_questions,
    parse_date,
    project_of,
    write_jsonl,
)

CODING_DATA = Path(__file__).resolve().parent / "data" / "recall_floor_coding.json"
MODES = ("keyword", "hybrid")
# The kinds Memory.recall searches (service.py); kept in step by hand.
RECALL_KINDS = ("observation", "turn", "knowledge", "summary", "note")
FLOORS = (0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45)

Log = Callable[[str], None]


@dataclass(frozen=True)
class Query:
    """One prompt and what counts as relevant for it (nothing, for unrelated prompts)."""

    source: str
    related: bool
    text: str
    project: str
    scope: str
    as_of: datetime
    relevant: Callable[[memlane.SearchHit], bool]
    label: str = ""


@dataclass
class Outcome:
    query: Query
    meaningful: bool
    hits: list[tuple[float, bool, str]] = field(default_factory=list)  # score, relevant, text

    def best_relevant(self) -> float | None:
        return max((score for score, rel, _ in self.hits if rel), default=None)

    def best(self) -> float:
        return max((score for score, _, _ in self.hits), default=0.0)

    def injected(self, floor: float, limit: int) -> list[bool]:
        """Relevance of what the hook injects at ``floor`` (select_recall: in order, capped)."""
        return [rel for score, rel, _ in self.hits if score >= floor][:limit]


# -- sources ------------------------------------------------------------------


def open_memory(db: Path, workdir: Path) -> Memory:
    """A Memory with default settings (no user config), state kept in ``workdir``."""
    settings, _ = load_settings(environ={"MEMLANE_HOME": str(workdir)})
    settings = replace(settings, embedder="use")
    return memlane.open(str(db), settings=settings)


def embed(memory: Memory, log: Log) -> None:
    started = time.perf_counter()
    report = memory.embed_backfill(batch=64)
    log(f"  embedded {report.embedded} memories in {time.perf_counter() - started:.1f} s")


def coding_source(path: Path, workdir: Path, log: Log) -> tuple[Memory, list[Query]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    memory = open_memory(workdir / "coding.db", workdir)
    jsonl = workdir / "coding.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for record in data["memories"]:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    memory.import_jsonl(str(jsonl))
    embed(memory, log)
    as_of = datetime.fromisoformat(data["as_of"].replace("Z", "+00:00"))
    queries = []
    for related, items in ((True, data["related"]), (False, data["unrelated"])):
        for item in items:
            wanted = frozenset(item.get("relevant", ()))
            queries.append(
                Query(
                    source="coding",
                    related=related,
                    text=item["prompt"],
                    project=item["project"],
                    scope=memory.settings.scope,
                    as_of=as_of,
                    relevant=lambda hit, wanted=wanted: (hit.source_id or "") in wanted,
                    label=item.get("style", ""),
                )
            )
    return memory, queries


def subsample(question: dict[str, Any], distractors: int, seed: int) -> dict[str, Any]:
    """The question with its evidence sessions and ``distractors`` random other sessions."""
    answers = set(question["answer_session_ids"])
    ids = question["haystack_session_ids"]
    others = [i for i, sid in enumerate(ids) if sid not in answers]
    rng = random.Random(f"{seed}:{question['question_id']}")
    keep = {i for i, sid in enumerate(ids) if sid in answers}
    keep |= set(rng.sample(others, min(distractors, len(others))))
    picked = sorted(keep)
    out = dict(question)
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        out[key] = [question[key][i] for i in picked]
    return out


def lme_source(
    path: Path, workdir: Path, distractors: int, negatives: int, seed: int, log: Log
) -> tuple[Memory, list[Query]]:
    questions = [subsample(q, distractors, seed) for q in load_questions(path)]
    memory = open_memory(workdir / "lme.db", workdir)
    have = set(memory.projects())
    for question in questions:
        if project_of(question) in have:
            continue
        jsonl = workdir / "lme.jsonl"
        write_jsonl(question, jsonl)
        memory.import_jsonl(str(jsonl), project=project_of(question))
    turns = sum(len(s) for q in questions for s in q["haystack_sessions"])
    log(f"  LongMemEval: {len(questions)} questions, {turns} turns after subsampling")
    embed(memory, log)
    queries: list[Query] = []
    skipped = 0
    for n, question in enumerate(questions):
        answers = frozenset(question["answer_session_ids"])
        as_of = parse_date(question["question_date"])
        visible = [
            sid
            for sid, date in zip(
                question["haystack_session_ids"], question["haystack_dates"], strict=True
            )
            if sid in answers and parse_date(date) <= as_of
        ]
        if visible:
            queries.append(
                Query(
                    source="lme",
                    related=True,
                    text=question["question"],
                    project=project_of(question),
                    scope="project",
                    as_of=as_of,
                    relevant=lambda hit, a=answers: (hit.session_id or "") in a,
                    label=question["question_type"],
                )
            )
        else:
            skipped += 1  # its evidence is dated after the question: nothing to find
        taken = 0
        for step in range(1, len(questions)):
            other = questions[(n + step) % len(questions)]
            if answers & set(other["haystack_session_ids"]):
                continue
            queries.append(
                Query(
                    source="lme",
                    related=False,
                    text=question["question"],
                    project=project_of(other),
                    scope="project",
                    as_of=parse_date(other["question_date"]),
                    relevant=lambda hit: False,
                    label=question["question_type"],
                )
            )
            taken += 1
            if taken == negatives:
                break
    if skipped:
        log(f"  {skipped} question(s) without evidence visible at question time: no positive")
    return memory, queries


# -- measuring ----------------------------------------------------------------


def hook_limit(settings: Settings) -> int:
    """The candidate count the hook asks recall for (handlers.user_prompt_submit)."""
    return min(max(settings.recall_limit, 1) * 3, 20)


def run(memory: Memory, queries: Sequence[Query], mode: str) -> list[Outcome]:
    limit = hook_limit(memory.settings)
    outcomes = []
    for query in queries:
        clean = memory.scrub(query.text).strip()
        outcome = Outcome(query, is_meaningful_prompt(clean))
        if outcome.meaningful:
            hits = memory.search(
                clean[:2000],
                project=query.project,
                scope=query.scope,
                limit=limit,
                mode=mode,
                as_of=query.as_of,
                kinds=RECALL_KINDS,
                min_score=0.0,
                keyword_scan=RECALL_KEYWORD_SCAN,
            )
            if mode != "keyword" and memory.last_search_notice:
                raise SystemExit(f"{mode} recall fell back: {memory.last_search_notice}")
            outcome.hits = [
                (hit.score, query.relevant(hit), (hit.title or hit.content)[:70]) for hit in hits
            ]
        outcomes.append(outcome)
    return outcomes


def spread(values: Sequence[float]) -> str:
    if not values:
        return "| – | – | – | – | – |"
    ordered = sorted(values)
    if len(ordered) > 1:
        deciles = statistics.quantiles(ordered, n=10, method="inclusive")
        p10, p90 = deciles[0], deciles[8]
    else:
        p10 = p90 = ordered[0]
    cells = (ordered[0], p10, statistics.median(ordered), p90, ordered[-1])
    return "| " + " | ".join(f"{v:.2f}" for v in cells) + " |"


def distribution_rows(
    source: str, mode: str, outcomes: Sequence[Outcome], depth: int
) -> list[str]:
    related = [o for o in outcomes if o.query.related]
    found = [s for o in related if (s := o.best_relevant()) is not None]
    unrelated = [o.best() for o in outcomes if not o.query.related]
    missed = len(related) - len(found)
    return [
        f"| {source} | {mode} | best relevant hit | {len(found)} (+{missed} not in top {depth}) "
        + spread(found),
        f"| {source} | {mode} | best hit, nothing relevant | {len(unrelated)} {spread(unrelated)}",
    ]


@dataclass(frozen=True)
class FloorStats:
    recall: float
    noise: float
    precision: float
    item_precision: float


def at_floor(outcomes: Sequence[Outcome], floor: float, limit: int) -> FloorStats:
    related = [o for o in outcomes if o.query.related]
    unrelated = [o for o in outcomes if not o.query.related]
    hit = sum(1 for o in related if any(o.injected(floor, limit)))
    wrong = sum(1 for o in related if o.injected(floor, limit) and not any(o.injected(floor, limit)))
    noise = sum(1 for o in unrelated if o.injected(floor, limit)) / max(len(unrelated), 1)
    # Balanced: as many unrelated prompts as related ones, at the measured noise rate.
    false = wrong + noise * len(related)
    items = [rel for o in outcomes for rel in o.injected(floor, limit)]
    return FloorStats(
        recall=hit / max(len(related), 1),
        noise=noise,
        precision=hit / (hit + false) if hit + false else 1.0,
        item_precision=sum(items) / len(items) if items else 1.0,
    )


def floor_table(source: str, results: dict[str, list[Outcome]], limit: int) -> list[str]:
    modes = list(results)
    head = " | ".join(f"{m} R | {m} noise | {m} P | {m} P(item)" for m in modes)
    lines = [f"| {source} floor | {head} |", "|---:|" + "---:|" * (4 * len(modes))]
    for floor in FLOORS:
        cells = []
        for mode in modes:
            s = at_floor(results[mode], floor, limit)
            cells += [f"{s.recall:.2f}", f"{s.noise:.2f}", f"{s.precision:.2f}"]
            cells.append(f"{s.item_precision:.2f}")
        mark = " (default)" if abs(floor - 0.35) < 1e-9 else ""
        lines.append(f"| {floor:.2f}{mark} | " + " | ".join(cells) + " |")
    return lines


def extremes(source: str, mode: str, outcomes: Sequence[Outcome], n: int = 4) -> list[str]:
    """The strongest nothing-relevant hits and the weakest related recalls (to inspect labels)."""
    noisy = sorted((o for o in outcomes if not o.query.related), key=lambda o: -o.best())[:n]
    weak = sorted(
        (o for o in outcomes if o.query.related),
        key=lambda o: o.best_relevant() or 0.0,
    )[:n]
    lines = [f"{source}/{mode} strongest nothing-relevant:"]
    lines += [f"  {o.best():.2f} {o.query.text[:60]!r} -> {o.hits[0][2]!r}" for o in noisy if o.hits]
    lines.append(f"{source}/{mode} weakest related (best relevant; best overall):")
    lines += [
        f"  {o.best_relevant() or 0.0:.2f}; {o.best():.2f} {o.query.text[:60]!r}" for o in weak
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coding", type=Path, default=CODING_DATA)
    parser.add_argument("--lme", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sources", default="coding,lme")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--distractors", type=int, default=10, help="LME sessions kept besides evidence")
    parser.add_argument("--negatives", type=int, default=3, help="other haystacks per LME question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, help="keep the databases here between runs")
    parser.add_argument("--markdown", type=Path, help="also write the report here")
    parser.add_argument("--details", action="store_true", help="print extreme cases to stderr")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-floor-"))
    workdir.mkdir(parents=True, exist_ok=True)
    modes = [m for m in args.modes.split(",") if m]
    distribution = [
        "| source | mode | score of | n | min | p10 | median | p90 | max |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    tables: list[str] = []
    notes: list[str] = []
    for source in [s for s in args.sources.split(",") if s]:
        log(f"{source}: loading into {workdir}")
        if source == "coding":
            memory, queries = coding_source(args.coding, workdir, log)
        elif source == "lme":
            memory, queries = lme_source(
                args.lme, workdir, args.distractors, args.negatives, args.seed, log
            )
        else:
            raise SystemExit(f"unknown source {source!r} (coding, lme)")
        results: dict[str, list[Outcome]] = {}
        for mode in modes:
            started = time.perf_counter()
            results[mode] = run(memory, queries, mode)
            log(f"  {mode}: {len(queries)} prompts in {time.perf_counter() - started:.1f} s")
            depth = hook_limit(memory.settings)
            distribution += distribution_rows(source, mode, results[mode], depth)
            if args.details:
                log("\n".join(extremes(source, mode, results[mode])))
        limit = memory.settings.recall_limit
        related = sum(1 for q in queries if q.related)
        skipped = sum(1 for o in next(iter(results.values())) if not o.meaningful)
        notes.append(
            f"{source}: {related} related, {len(queries) - related} nothing-relevant prompts "
            f"({skipped} not recalled for: trivial); top {hook_limit(memory.settings)} searched, "
            f"at most {limit} injected"
        )
        tables += ["", *floor_table(source, results, limit)]
        memory.close()
    text = "\n".join(
        [
            *distribution,
            *tables,
            "",
            "R: related prompts that get a relevant memory injected; noise: nothing-relevant "
            "prompts that get anything injected; P: query precision with related and unrelated "
            "prompts equally common; P(item): injected memories that are relevant.",
            *notes,
        ]
    )
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
