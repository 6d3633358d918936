"""Retrieval quality on LongMemEval (Wu et al., 2024), through memlane's public API.

Reads the official JSON (a list of question records with ``haystack_sessions``,
``haystack_session_ids``, ``haystack_dates``, ``answer_session_ids``; ``.json``
or ``.json.gz``), so it runs unchanged on the full LongMemEval_S / _M files:

1. each question's haystack goes into its own project of one SQLite database
   (``memlane.open``), one memory per turn (user and assistant), imported with
   ``Memory.import_jsonl`` with its session id and the session's date as
   ``created_at``; then every turn is embedded in batches
   (``Memory.embed_backfill``);
2. each question is asked with ``Memory.search(question, project=…,
   scope="project", as_of=question_date)`` in keyword, semantic and hybrid mode;
3. it prints recall@1/5/10, nDCG@10 and MRR at turn level (evidence turns:
   ``has_answer``) and session level (``answer_session_ids``; sessions ranked by
   their best turn), per question type and overall, with p50/p95 query latency and
   ingest/embedding time, and writes the table as markdown (``--markdown``).

``--grid`` also evaluates a coarse grid of fusion settings (reported, so the
chosen default is backed by numbers). ``--workdir`` keeps the database between
runs (ingest and embedding are skipped when it is already complete).

    .venv/bin/python benchmarks/retrieval_longmemeval.py \\
        ../shared/benchmarks/longmemeval/longmemeval_s_dev30.json.gz --markdown out.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import memlane
from memlane.search.engine import Ranking
from memlane.service import Memory

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "benchmarks"
    / "longmemeval"
    / "longmemeval_s_dev30.json.gz"
)
MODES = ("keyword", "semantic", "hybrid")
KS = (1, 5, 10)
DEPTH = 50  # turns retrieved per question (sessions are ranked from them)


def load_questions(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of LongMemEval question records")
    return data


def parse_date(text: str) -> datetime:
    """LongMemEval dates look like ``2023/05/20 (Sat) 02:21``."""
    cleaned = " ".join(part for part in text.split() if not part.startswith("("))
    return datetime.strptime(cleaned, "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def turn_key(session_id: str, index: int) -> str:
    return f"{session_id}#{index}"


def project_of(question: dict[str, Any]) -> str:
    return f"lme-{question['question_id']}"


def write_jsonl(question: dict[str, Any], out: Path) -> int:
    """The question's haystack as memlane JSONL records; returns the record count."""
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for sid, date, turns in zip(
            question["haystack_session_ids"],
            question["haystack_dates"],
            question["haystack_sessions"],
            strict=True,
        ):
            stamp = parse_date(date).isoformat()
            for index, turn in enumerate(turns):
                text = str(turn.get("content") or "").strip()
                if not text:
                    continue
                record = {
                    "id": turn_key(sid, index),
                    "session": sid,
                    "role": turn.get("role", "user"),
                    "text": text,
                    "created_at": stamp,
                    "metadata": {"chunk_index": index},
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    return count


@dataclass
class Ingest:
    memories: int = 0
    import_seconds: float = 0.0
    embed_seconds: float = 0.0
    embedded: int = 0
    reused: bool = False


def ingest(memory: Memory, questions: Sequence[dict[str, Any]], log: Any) -> Ingest:
    report = Ingest()
    have = set(memory.projects())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, question in enumerate(questions):
            project = project_of(question)
            if project in have:
                continue
            path = Path(tmp) / f"{question['question_id']}.jsonl"
            write_jsonl(question, path)
            result = memory.import_jsonl(str(path), project=project)
            report.memories += result.created if hasattr(result, "created") else 0
            if (i + 1) % 5 == 0:
                log(f"  imported {i + 1}/{len(questions)} haystacks")
    report.import_seconds = time.perf_counter() - started
    report.reused = report.import_seconds < 1.0
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 1024 < 64 or done == total:
            log(f"  embedded {done}/{total}")

    embedded = memory.embed_backfill(batch=64, progress=progress)
    report.embed_seconds = time.perf_counter() - started
    report.embedded = embedded.embedded
    return report


def dcg(relevant: Sequence[bool]) -> float:
    return sum(1.0 / math.log2(i + 2) for i, rel in enumerate(relevant) if rel)


def metrics(ranked: Sequence[str], gold: set[str]) -> dict[str, float]:
    """recall@k (share of gold items in the top k), nDCG@10, MRR for one ranking."""
    out: dict[str, float] = {}
    for k in KS:
        out[f"R@{k}"] = len(gold & set(ranked[:k])) / len(gold)
    ideal = dcg([True] * min(len(gold), 10))
    out["nDCG@10"] = dcg([item in gold for item in ranked[:10]]) / ideal
    out["MRR"] = next((1.0 / (i + 1) for i, item in enumerate(ranked) if item in gold), 0.0)
    return out


@dataclass
class Result:
    turn: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))
    session: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))
    latencies: list[float] = field(default_factory=list)


def evaluate(
    memory: Memory, questions: Iterable[dict[str, Any]], mode: str, depth: int = DEPTH
) -> Result:
    result = Result()
    for question in questions:
        as_of = parse_date(question["question_date"])
        started = time.perf_counter()
        hits = memory.search(
            question["question"],
            project=project_of(question),
            scope="project",
            limit=depth,
            mode=mode,
            as_of=as_of,
        )
        result.latencies.append(time.perf_counter() - started)
        if memory.last_search_notice and mode != "keyword":
            raise SystemExit(f"{mode} search fell back: {memory.last_search_notice}")
        turns = [hit.source_id or "" for hit in hits]
        sessions = list(dict.fromkeys(hit.session_id or "" for hit in hits))
        qtype = question["question_type"]
        gold_turns = {
            turn_key(sid, i)
            for sid, turns_ in zip(
                question["haystack_session_ids"], question["haystack_sessions"], strict=True
            )
            for i, turn in enumerate(turns_)
            if turn.get("has_answer")
        }
        gold_sessions = set(question["answer_session_ids"])
        if gold_turns:
            m = metrics(turns, gold_turns)
            result.turn[qtype].append(m)
            result.turn["overall"].append(m)
        if gold_sessions:
            m = metrics(sessions, gold_sessions)
            result.session[qtype].append(m)
            result.session["overall"].append(m)
    return result


def mean(rows: Sequence[dict[str, float]], key: str) -> float:
    return statistics.fmean(row[key] for row in rows) if rows else float("nan")


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


METRICS = ("R@1", "R@5", "R@10", "nDCG@10", "MRR")


def table(results: dict[str, Result], level: str) -> list[str]:
    lines = [
        f"| {level} level | mode | n | " + " | ".join(METRICS) + " |",
        "|---|---|---:|" + "---:|" * len(METRICS),
    ]
    types = sorted({t for r in results.values() for t in getattr(r, level)} - {"overall"})
    for qtype in ["overall", *types]:
        for mode, result in results.items():
            rows = getattr(result, level).get(qtype, [])
            if not rows:
                continue
            cells = " | ".join(f"{mean(rows, key):.3f}" for key in METRICS)
            name = f"**{qtype}**" if qtype == "overall" else qtype
            lines.append(f"| {name} | {mode} | {len(rows)} | {cells} |")
    return lines


def summary_line(name: str, result: Result) -> str:
    t, s = result.turn["overall"], result.session["overall"]
    return (
        f"{name:<42} turn R@5 {mean(t, 'R@5'):.3f} nDCG {mean(t, 'nDCG@10'):.3f} "
        f"MRR {mean(t, 'MRR'):.3f} | session R@5 {mean(s, 'R@5'):.3f} "
        f"nDCG {mean(s, 'nDCG@10'):.3f} MRR {mean(s, 'MRR'):.3f} | "
        f"p50 {pct(result.latencies, 0.5):.1f} ms"
    )


def grid(memory: Memory, questions: Sequence[dict[str, Any]], log: Any) -> list[str]:
    """Coarse grid over fusion settings; every row is one full hybrid evaluation."""
    base = memory.search_engine.ranking
    configs: list[tuple[str, Ranking]] = []
    for method in ("calibrated", "convex"):
        for alpha in (0.2, 0.3, 0.5, 0.7):
            configs.append((f"{method} alpha={alpha}", replace(base, fusion=method, alpha=alpha)))
    for alpha in (0.3, 0.5):
        configs.append((f"dbsf alpha={alpha}", replace(base, fusion="dbsf", alpha=alpha)))
    for k in (10, 60):
        for sem in (1.0, 2.0, 3.0):
            configs.append(
                (
                    f"rrf k={k} semantic_weight={sem}",
                    replace(base, fusion="rrf", rrf_k=k, semantic_weight=sem),
                )
            )
    for share in (0.0, 0.25, 0.75):
        configs.append((f"evidence_share={share}", replace(base, evidence_share=share)))
    off = replace(base.rerank, coverage=0.0, phrase=0.0, proximity=0.0, density=0.0)
    configs.append(("no lexical rerank", replace(base, rerank=off)))
    lines = []
    for name, ranking in configs:
        memory.search_engine.ranking = ranking
        line = summary_line(name, evaluate(memory, questions, "hybrid"))
        log(line)
        lines.append(line)
    memory.search_engine.ranking = base
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workdir", type=Path, help="keep the database here between runs")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--questions", type=int, help="only the first N questions")
    parser.add_argument("--markdown", type=Path, help="write the result table here")
    parser.add_argument("--grid", action="store_true", help="also evaluate a fusion grid")
    parser.add_argument("--embedder", default="use", help="embedder (use, e5, toy)")
    parser.add_argument(
        "--ann-threshold",
        type=int,
        help="vector rows from which search walks an ANN graph (0: always; default: memlane's)",
    )
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    questions = load_questions(args.data)
    if args.questions:
        questions = questions[: args.questions]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-lme-"))
    workdir.mkdir(parents=True, exist_ok=True)
    from memlane.config import load_settings
    from memlane.paths import state_paths

    settings, _ = load_settings()
    # State (the vector cache) stays in the workdir, not in the user's own data dir.
    paths = state_paths({"MEMLANE_HOME": str(workdir)})
    settings = replace(settings, embedder=args.embedder, scope="project", paths=paths)
    memory = memlane.open(str(workdir / "longmemeval.db"), settings=settings)
    log(f"{len(questions)} questions from {args.data}; database in {workdir}")
    report = ingest(memory, questions, log)
    total = memory.store.count_memories(memlane.models.MemoryFilter())
    log(
        f"ingest: {total} memories, import {report.import_seconds:.1f} s, embedding "
        f"{report.embedded} in {report.embed_seconds:.1f} s"
    )
    if args.ann_threshold is not None:
        engine = memory.search_engine
        engine.ann_threshold = args.ann_threshold
        engine.vector_table()
        engine.persist_vectors(force=True)  # builds the graph when the table is that large
        log(f"ANN threshold {args.ann_threshold}: graph {engine.vector_table().has_ann}")
    modes = [m for m in args.modes.split(",") if m]
    results: dict[str, Result] = {}
    memory.search(questions[0]["question"], project=project_of(questions[0]), mode="hybrid")
    for mode in modes:
        results[mode] = evaluate(memory, questions, mode)
        log(summary_line(mode, results[mode]))
    r = memory.search_engine.ranking
    lines = [
        f"LongMemEval ({args.data.name}, {len(questions)} questions, {total} turns; "
        f"embedder {memory.search_engine.model}; fusion {r.fusion} "
        + (
            f"alpha={r.alpha} (keyword share); "
            if r.fusion != "rrf"
            else f"k={r.rrf_k} weights {r.keyword_weight}/{r.semantic_weight}; "
        )
        + f"evidence share {r.evidence_share}; grouping {'on' if r.group else 'off'})",
        "",
        *table(results, "session"),
        "",
        *table(results, "turn"),
        "",
        "| mode | p50 ms | p95 ms |",
        "|---|---:|---:|",
        *(
            f"| {mode} | {pct(res.latencies, 0.5):.1f} | {pct(res.latencies, 0.95):.1f} |"
            for mode, res in results.items()
        ),
        "",
        f"Ingest: {total} turns imported in {report.import_seconds:.1f} s"
        + (" (reused database)" if report.reused else "")
        + f"; {report.embedded} embedded in {report.embed_seconds:.1f} s.",
    ]
    if args.grid:
        lines += ["", "Fusion grid (hybrid, overall):", "```", *grid(memory, questions, log), "```"]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
