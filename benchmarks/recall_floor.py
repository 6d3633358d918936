"""Where should ``min_relevance_score`` (the per-prompt recall floor) sit, per search mode?

The UserPromptSubmit hook recalls with ``Memory.recall`` — keyword mode in the hook
process, hybrid mode through the worker — and injects at most ``recall_limit`` hits
scoring at least ``min_relevance_score``. This script collects the scores that
recall produces for prompts whose relevant memories are known and for prompts
with nothing relevant, in both modes, and reports:

* the distribution (min/p10/median/p90/max) of the best relevant hit's score and
  of the best hit's score for nothing-relevant prompts;
* for floors 0.15…0.55: recall (share of related prompts that get a relevant memory
  injected), noise (share of nothing-relevant prompts that get anything injected),
  balanced query precision (as if related and unrelated prompts were equally
  common) and item precision (share of injected memories that are relevant).

Every prompt is searched exactly as recall does it (same kinds, the hook's
candidate limit ``min(recall_limit × 3, 20)``, ``keyword_scan=RECALL_KEYWORD_SCAN``,
a floor of 1e-6 so every score is seen), plus ``as_of`` so that recency is computed
against the data's own "now". Prompts the hook would not recall for (slash
commands, "ok") inject nothing. Three sources, reported separately:

1. **coding**: ``benchmarks/data/recall_floor_coding.json`` — 42 memories of three
   projects (decisions, bugfixes, commands, lessons, turns), 37 related prompts
   (paraphrases, different words, fragments) and 32 unrelated ones (other tasks in
   the same projects, chit-chat); tiered scope from the prompt's project.
2. **coding-bg**: the same, plus real Claude Code transcripts of an unrelated project
   (``shared/fixtures/claude-code-transcripts``) ingested into every project, as the
   Stop hook would: real projects are mostly transcript chunks, and the best hit of
   an unrelated prompt rises with their number.
3. **lme**: the LongMemEval dev split. Each question is asked against its own
   haystack (relevant: the turns of its answer sessions) and against ``--negatives``
   other questions' haystacks that do not hold its answer sessions (nothing
   relevant; these are hard negatives: every haystack is personal chat on similar
   topics); project scope. ``--distractors N`` keeps only the evidence sessions and
   N random others per haystack (seeded) for a quicker run; by default the whole
   haystacks are embedded (~15k turns, about 3 minutes on an idle 2-core machine).

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

from retrieval_longmemeval import (
    DATA_DIR,
    load_questions,
    parse_date,
    project_of,
    write_jsonl,
)

import memlane
from memlane.config import Settings, load_settings
from memlane.search.passages import prompt_terms
from memlane.search.queries import RECALL_ALPHA, RECALL_KEYWORD_SCAN
from memlane.search.selection import (
    evidence_needed,
    holds_word,
    shown_terms,
)
from memlane.service import Memory

CODING_DATA = Path(__file__).resolve().parent / "data" / "recall_floor_coding.json"
# Real Claude Code transcripts of an unrelated project (see their SOURCES.md): in the
# coding-bg source they are ingested into every project as background noise, because a
# real project holds far more than the 42 labelled memories and the best hit of an
# unrelated prompt rises with the number of memories.
LME_DATA = DATA_DIR / "longmemeval_s_dev30.json.gz"
TRANSCRIPTS = DATA_DIR.parents[1] / "fixtures" / "claude-code-transcripts"
MODES = ("keyword", "hybrid")
# The kinds Memory.recall searches (service.py); kept in step by hand.
RECALL_KINDS = ("observation", "turn", "knowledge", "summary", "note")
# A positive floor, like the hook's, so that the relaxation cascade (only run for a
# floor of 0) does not reshuffle the tail; low enough to see every score.
SEE_ALL = 1e-6
# Apply the hook's visible-evidence rule (memlane.search.selection); --no-evidence: floor only.
EVIDENCE = True
FLOORS = (0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55)

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
    # Per hit: whether its shown passage holds enough of the prompt's words (selection.py).
    evident: list[bool] = field(default_factory=list)
    # It names only things memory lacks: recall injects nothing (selection.py).
    unknown_names: bool = False

    def best_relevant(self) -> float | None:
        return max((score for score, rel, _ in self.hits if rel), default=None)

    def best(self) -> float:
        return max((score for score, _, _ in self.hits), default=0.0)

    def injected(self, floor: float, limit: int) -> list[bool]:
        """Relevance of what the hook injects at ``floor`` (select_recall: in order, capped;
        with ``EVIDENCE`` on, only hits whose shown passage holds enough prompt words)."""
        checks = self.evident if EVIDENCE else [True] * len(self.hits)
        kept = [rel for (score, rel, _), ok in zip(self.hits, checks, strict=True) if ok]
        scores = [score for (score, _, _), ok in zip(self.hits, checks, strict=True) if ok]
        return [rel for rel, score in zip(kept, scores, strict=True) if score >= floor][:limit]


# -- sources ------------------------------------------------------------------


def source_in(wanted: frozenset[str]) -> Callable[[memlane.SearchHit], bool]:
    """Relevant: a memory imported with one of these ids."""
    return lambda hit: (hit.source_id or "") in wanted


def session_in(wanted: frozenset[str]) -> Callable[[memlane.SearchHit], bool]:
    """Relevant: a memory of one of these sessions."""
    return lambda hit: (hit.session_id or "") in wanted


def open_memory(db: Path, workdir: Path) -> Memory:
    """A Memory with default settings (no user config), state kept in ``workdir``."""
    settings, _ = load_settings(environ={"MEMLANE_HOME": str(workdir)})
    settings = replace(settings, embedder="use")
    return memlane.open(str(db), settings=settings)


def embed(memory: Memory, log: Log) -> None:
    started = time.perf_counter()
    report = memory.embed_backfill(batch=64)
    log(f"  embedded {report.embedded} memories in {time.perf_counter() - started:.1f} s")


def coding_source(
    path: Path, workdir: Path, log: Log, background: Path | None = None
) -> tuple[Memory, list[Query]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    name = "coding-bg" if background else "coding"
    memory = open_memory(workdir / f"{name}.db", workdir)
    jsonl = workdir / f"{name}.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for record in data["memories"]:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    memory.import_jsonl(str(jsonl))
    if background:
        transcripts = sorted(background.rglob("*.jsonl"))
        for project in sorted({m["project"] for m in data["memories"]}):
            for transcript in transcripts:
                memory.ingest_transcript(
                    f"bg-{project}-{transcript.stem}", str(transcript), project=project
                )
        total = memory.store.count_memories(memlane.models.MemoryFilter(kinds=RECALL_KINDS))
        log(f"  {len(transcripts)} background transcripts per project: {total} memories")
    embed(memory, log)
    as_of = datetime.fromisoformat(data["as_of"].replace("Z", "+00:00"))
    queries = []
    for related, items in ((True, data["related"]), (False, data["unrelated"])):
        for item in items:
            wanted = frozenset(item.get("relevant", ()))
            queries.append(
                Query(
                    source=name,
                    related=related,
                    text=item["prompt"],
                    project=item["project"],
                    scope=memory.settings.scope,
                    as_of=as_of,
                    relevant=source_in(wanted),
                    label=item.get("style", ""),
                )
            )
    return memory, queries


def subsample(question: dict[str, Any], distractors: int | None, seed: int) -> dict[str, Any]:
    """The question with its evidence sessions and ``distractors`` random other sessions."""
    if distractors is None:
        return question
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
    path: Path, workdir: Path, distractors: int | None, negatives: int, seed: int, log: Log
) -> tuple[Memory, list[Query]]:
    questions = [subsample(q, distractors, seed) for q in load_questions(path)]
    suffix = "" if distractors is None else f"-{distractors}d{seed}"
    memory = open_memory(workdir / f"lme{suffix}.db", workdir)
    have = set(memory.projects())
    for question in questions:
        if project_of(question) in have:
            continue
        jsonl = workdir / "lme.jsonl"
        write_jsonl(question, jsonl)
        memory.import_jsonl(str(jsonl), project=project_of(question))
    turns = sum(len(s) for q in questions for s in q["haystack_sessions"])
    kept = "all sessions" if distractors is None else f"evidence + {distractors} sessions"
    log(f"  LongMemEval: {len(questions)} questions, {turns} turns ({kept} per haystack)")
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
                    relevant=session_in(answers),
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
                    relevant=session_in(frozenset()),
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


def run(
    memory: Memory, queries: Sequence[Query], mode: str, alpha: float = RECALL_ALPHA
) -> list[Outcome]:
    limit = hook_limit(memory.settings)
    outcomes = []
    for query in queries:
        clean = memory.recall_query(query.text)  # the hook's query: '' when it recalls nothing
        outcome = Outcome(query, bool(clean))
        if outcome.meaningful:
            hits = memory.search(
                clean,
                project=query.project,
                scope=query.scope,
                limit=limit,
                mode=mode,
                as_of=query.as_of,
                kinds=RECALL_KINDS,
                min_score=SEE_ALL,
                keyword_scan=RECALL_KEYWORD_SCAN,
                alpha=alpha,
            )
            if mode != "keyword" and hits.notice:
                raise SystemExit(f"{mode} recall fell back: {hits.notice}")
            outcome.hits = [
                (hit.score, query.relevant(hit), (hit.title or hit.content)[:70]) for hit in hits
            ]
            terms = prompt_terms(clean)
            needed = evidence_needed(
                clean, terms, lambda name: holds_word(memory.store, name, RECALL_KINDS)
            )
            if needed is None:
                outcome.unknown_names = True
                outcome.evident = [False] * len(hits)
            else:
                outcome.evident = [shown_terms(hit, terms) >= needed for hit in hits]
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


def distribution_rows(source: str, mode: str, outcomes: Sequence[Outcome], depth: int) -> list[str]:
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
    wrong = sum(
        1 for o in related if o.injected(floor, limit) and not any(o.injected(floor, limit))
    )
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
        mark = " (default)" if abs(floor - Settings().min_relevance_score) < 1e-9 else ""
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
    lines += [
        f"  {o.best():.2f} {o.query.text[:60]!r} -> {o.hits[0][2]!r}" for o in noisy if o.hits
    ]
    lines.append(f"{source}/{mode} weakest related (best relevant; best overall):")
    lines += [
        f"  {o.best_relevant() or 0.0:.2f}; {o.best():.2f} {o.query.text[:60]!r}" for o in weak
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coding", type=Path, default=CODING_DATA)
    parser.add_argument("--lme", type=Path, default=LME_DATA)
    parser.add_argument("--sources", default="coding,coding-bg,lme")
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--distractors", type=int, help="LME: keep N sessions besides the evidence (default all)"
    )
    parser.add_argument("--negatives", type=int, default=3, help="other haystacks per LME question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recall-alpha",
        type=float,
        default=RECALL_ALPHA,
        help=f"keyword weight of recall's hybrid fusion (memlane's: {RECALL_ALPHA})",
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases here between runs")
    parser.add_argument("--markdown", type=Path, help="also write the report here")
    parser.add_argument("--details", action="store_true", help="print extreme cases to stderr")
    parser.add_argument("--dump", type=Path, help="write every prompt's scored hits as JSON")
    parser.add_argument(
        "--no-evidence", action="store_true", help="the floor alone, without the evidence rule"
    )
    args = parser.parse_args(argv)
    global EVIDENCE
    EVIDENCE = not args.no_evidence

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
    dump: list[dict[str, Any]] = []
    notes: list[str] = []
    for source in [s for s in args.sources.split(",") if s]:
        log(f"{source}: loading into {workdir}")
        if source in ("coding", "coding-bg"):
            background = args.transcripts if source == "coding-bg" else None
            memory, queries = coding_source(args.coding, workdir, log, background)
        elif source == "lme":
            memory, queries = lme_source(
                args.lme, workdir, args.distractors, args.negatives, args.seed, log
            )
        else:
            raise SystemExit(f"unknown source {source!r} (coding, coding-bg, lme)")
        results: dict[str, list[Outcome]] = {}
        for mode in modes:
            started = time.perf_counter()
            results[mode] = run(memory, queries, mode, args.recall_alpha)
            log(f"  {mode}: {len(queries)} prompts in {time.perf_counter() - started:.1f} s")
            depth = hook_limit(memory.settings)
            distribution += distribution_rows(source, mode, results[mode], depth)
            if args.details:
                log("\n".join(extremes(source, mode, results[mode])))
        limit = memory.settings.recall_limit
        dump += [
            {
                "source": source,
                "mode": mode,
                "related": o.query.related,
                "prompt": o.query.text,
                "project": o.query.project,
                "label": o.query.label,
                "hits": [[round(score, 4), rel, text] for score, rel, text in o.hits],
            }
            for mode, outcomes in results.items()
            for o in outcomes
        ]
        related = sum(1 for q in queries if q.related)
        first = next(iter(results.values()))
        skipped = sum(1 for o in first if not o.meaningful)
        unknown = [o.query.related for o in first if o.unknown_names]
        notes.append(
            f"{source}: {related} related, {len(queries) - related} nothing-relevant prompts "
            f"({skipped} not recalled for: trivial; naming only things memory lacks, so nothing"
            f" injected: {sum(unknown)} related, {len(unknown) - sum(unknown)} nothing-relevant);"
            f" top {hook_limit(memory.settings)} searched, at most {limit} injected"
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
    if args.dump:
        args.dump.write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
