"""Retrieval quality on LongMemEval (Wu et al., 2024), through memlane's public API.

Reads the official JSON (a list of question records with ``haystack_sessions``,
``haystack_session_ids``, ``haystack_dates``, ``answer_session_ids``; ``.json``
or ``.json.gz``), so it runs unchanged on the full LongMemEval_S / _M files.

What it does, per question:

1. **Ingest as a user would.** The haystack becomes the plain JSONL records the
   README documents — ``id``, ``session``, ``role``, ``text``, ``timestamp`` (the
   session's date: one per session, as the data gives it) and nothing else — in
   a file that ``Memory.import_jsonl`` reads (what ``memlane import jsonl``
   runs), into its own database (one project). Turns are embedded with
   ``Memory.embed_backfill``; vectors are cached across runs by model and
   SHA-256 of the text (``benchmarks/results/cache/``, or ``$MEMLANE_BENCH_VECTOR_CACHE``;
   see ``vector_cache.py``).
2. **Ask.** ``Memory.search(question, project=…, limit=--depth,
   as_of=question_date)`` in the default mode as a user gets it (``default``:
   no ``mode``, default settings, i.e. hybrid) and in ``keyword``, ``semantic``
   and ``hybrid`` explicitly. ``hybrid-rrf`` is hybrid with
   ``Memory.search(…, fusion="rrf")`` (config ``search.fusion``). ``as_of`` is the
   moment the question is asked: recency counts back from it and later turns
   are hidden.
3. **Baseline.** ``bm25``: a plain Okapi BM25 (k1=1.2, b=0.75, lower-cased word
   tokens, a short English stop-word list; no memlane code) over the same turns
   of the same haystack that exist at ``question_date`` (2 of the 150 dev
   questions have evidence sessions dated after it, which no row can find).
4. **Score.** Per question type and overall: session R@5 / R@10 (evidence
   sessions ``answer_session_ids``; sessions ranked by their best hit), turn
   R@5 / R@10 and turn nDCG@10 (evidence turns: ``has_answer``). A hit is mapped
   to turns by its ``source_id`` (the record id written); a hit that stands for
   several records counts only the ids it exposes (``source_ids`` when the hit
   model has it).

Splits: ``--split dev30|dev150`` (default dev150, the development set; 30
questions move by ±0.15 per type by chance). ``--subset tune|check`` splits the
questions of the file by sorted question id: every third (index 2, 5, 8, …) is the *check*
set, held out to confirm a choice made on the *tune* set. ``--types`` and
``--limit-questions`` make quick iterations. ``--set KEY=VALUE`` overrides a
field of ``memlane.search.engine.Ranking`` for every memlane row (``group=false``,
``alpha=0.5``, ``weights.recency=0``, ``rerank.coverage=0`` …);
``--variant NAME:KEY=VALUE,…`` adds a row per memlane mode with its own
overrides, so a grid is one pass over the opened databases.

    .venv/bin/python benchmarks/retrieval_longmemeval.py                 # dev150, all rows
    .venv/bin/python benchmarks/retrieval_longmemeval.py --split dev30 --modes bm25,keyword
    .venv/bin/python benchmarks/retrieval_longmemeval.py --subset tune --set group=false \\
        --json --label no-grouping --workdir /tmp/lme-dbs

``--json`` writes the numbers (and per-question top hits) to
``benchmarks/results/``. ``--workdir`` keeps the per-question databases between
runs (import is skipped when the records are unchanged): use a new one after
changing how memlane ingests or indexes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
# run_all.py --workdir points this at its work directory, so clean checkouts reuse it.
CACHE = Path(os.environ.get("MEMLANE_BENCH_VECTOR_CACHE") or RESULTS / "cache")
DATA_NAME = "longmemeval_s_{split}.json.gz"
SPLITS = ("dev30", "dev150")
MEMLANE_MODES = ("default", "keyword", "semantic", "hybrid", "hybrid-rrf")
MODES = ("bm25", *MEMLANE_MODES)
DEFAULT_MODES = ("bm25", "default", "keyword", "semantic", "hybrid", "hybrid-rrf")
DEPTH = 50  # hits asked per question (sessions are ranked from them)
METRICS = ("session R@5", "session R@10", "turn R@5", "turn R@10", "turn nDCG@10")


def _find_data_dir() -> Path:
    """``shared/benchmarks/longmemeval`` beside the repository (or a worktree's parents)."""
    for parent in REPO.parents:
        candidate = parent / "shared" / "benchmarks" / "longmemeval"
        if candidate.is_dir():
            return candidate
    return REPO.parent / "shared" / "benchmarks" / "longmemeval"


DATA_DIR = _find_data_dir()
DEFAULT_DATA = DATA_DIR / DATA_NAME.format(split="dev150")

Log = Callable[[str], None]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- data -------------------------------------------------------------------------------


def load_questions(path: Path) -> list[dict[str, Any]]:
    """The question records of an official LongMemEval file (``.json`` or ``.json.gz``)."""
    if not path.is_file():
        raise SystemExit(
            f"LongMemEval data not found: {path} (give --data PATH to a LongMemEval_S/_M "
            "JSON file; the dev splits live in shared/benchmarks/longmemeval/)"
        )
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: cannot read LongMemEval JSON ({exc})") from None
    if not isinstance(data, list) or not all(
        isinstance(q, dict) and "haystack_sessions" in q for q in data
    ):
        raise SystemExit(f"{path}: expected a JSON list of LongMemEval question records")
    return data


def check_set(questions: Sequence[dict[str, Any]]) -> set[str]:
    """The held-out check set: every third question id in sorted order (2, 5, 8, …)."""
    ids = sorted(str(q["question_id"]) for q in questions)
    return {qid for i, qid in enumerate(ids) if i % 3 == 2}


def select(
    questions: list[dict[str, Any]],
    *,
    subset: str = "all",
    types: Sequence[str] = (),
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Questions of ``subset`` (all, tune, check) and ``types``, at most ``limit``."""
    held = check_set(questions)
    chosen = [
        q
        for q in questions
        if subset == "all" or (str(q["question_id"]) in held) == (subset == "check")
    ]
    if types:
        known = {q["question_type"] for q in questions}
        unknown = set(types) - known
        if unknown:
            raise SystemExit(
                f"unknown question type {sorted(unknown)[0]!r}; the data has "
                + ", ".join(sorted(known))
            )
        chosen = [q for q in chosen if q["question_type"] in types]
    return chosen[:limit] if limit else chosen


def parse_date(text: str) -> datetime:
    """LongMemEval dates look like ``2023/05/20 (Sat) 02:21``."""
    cleaned = " ".join(part for part in text.split() if not part.startswith("("))
    return datetime.strptime(cleaned, "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def turn_key(session_id: str, index: int) -> str:
    return f"{session_id}#{index}"


def project_of(question: dict[str, Any]) -> str:
    return f"lme-{question['question_id']}"


@dataclass(frozen=True, slots=True)
class Turn:
    key: str
    session: str
    role: str
    text: str
    timestamp: str


def turns_of(question: dict[str, Any]) -> list[Turn]:
    """Every non-empty turn of the question's haystack, in haystack order."""
    out: list[Turn] = []
    for sid, date, turns in zip(
        question["haystack_session_ids"],
        question["haystack_dates"],
        question["haystack_sessions"],
        strict=True,
    ):
        stamp = parse_date(date).isoformat()
        for index, turn in enumerate(turns):
            text = str(turn.get("content") or "").strip()
            if text:
                role = str(turn.get("role") or "user")
                out.append(Turn(turn_key(sid, index), sid, role, text, stamp))
    return out


def visible_turns(question: dict[str, Any]) -> list[Turn]:
    """The turns that exist when the question is asked (what ``as_of`` lets memlane see).

    A few haystacks hold sessions dated after their ``question_date``.
    """
    asked = parse_date(question["question_date"]).isoformat()
    return [t for t in turns_of(question) if t.timestamp <= asked]


def record(turn: Turn) -> dict[str, str]:
    """The README's plain JSONL record of one turn, with no benchmark-only field."""
    return {
        "id": turn.key,
        "session": turn.session,
        "role": turn.role,
        "text": turn.text,
        "timestamp": turn.timestamp,
    }


def write_jsonl(question: dict[str, Any], out: Path) -> int:
    """The question's haystack as plain JSONL records; returns the record count."""
    turns = turns_of(question)
    with out.open("w", encoding="utf-8") as handle:
        for turn in turns:
            handle.write(json.dumps(record(turn), ensure_ascii=False) + "\n")
    return len(turns)


def gold_turns(question: dict[str, Any]) -> set[str]:
    return {
        turn_key(sid, i)
        for sid, turns in zip(
            question["haystack_session_ids"], question["haystack_sessions"], strict=True
        )
        for i, turn in enumerate(turns)
        if turn.get("has_answer") and str(turn.get("content") or "").strip()
    }


# -- plain BM25 (the baseline: no memlane code) ---------------------------------------

_BM25_WORD = re.compile(r"\w+")
# fmt: off
BM25_STOPWORDS = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from",
        "had", "has", "have", "how", "i", "in", "is", "it", "me", "my", "of", "on", "or",
        "that", "the", "this", "to", "was", "were", "what", "when", "where", "which", "who",
        "with", "you", "your",
    )
)
# fmt: on


def bm25_tokens(text: str) -> list[str]:
    return [w for w in _BM25_WORD.findall(text.lower()) if w not in BM25_STOPWORDS]


class Bm25:
    """Okapi BM25 over a list of documents (Lucene's non-negative idf)."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(bm25_tokens(d)) for d in documents]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.avg = statistics.fmean(self.lengths) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def rank(self, query: str) -> list[int]:
        """Document indexes with a positive score, best first (ties: document order)."""
        terms = [t for t in dict.fromkeys(bm25_tokens(query)) if t in self.idf]
        scores: list[tuple[float, int]] = []
        for i, (doc, length) in enumerate(zip(self.docs, self.lengths, strict=True)):
            norm = self.k1 * (1 - self.b + self.b * length / self.avg) if self.avg else self.k1
            score = sum(
                self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in terms if t in doc
            )
            if score > 0:
                scores.append((-score, i))
        return [i for _, i in sorted(scores)]


# -- metrics ----------------------------------------------------------------------------


def recall(ranked: Sequence[Sequence[str]], gold: set[str], k: int) -> float:
    """Share of ``gold`` among the ids exposed by the first ``k`` ranked items."""
    found = {item for ids in ranked[:k] for item in ids}
    return len(gold & found) / len(gold)


def ndcg(ranked: Sequence[Sequence[str]], gold: set[str], k: int = 10) -> float:
    """nDCG@k with one gain per evidence id a ranked item exposes (capped at 1)."""
    dcg = sum(len(gold & set(ids)) / math.log2(i + 2) for i, ids in enumerate(ranked[:k]))
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return min(1.0, dcg / ideal)


def score_question(
    question: dict[str, Any], hits: Sequence[tuple[Sequence[str], str]]
) -> dict[str, float]:
    """The metrics of one ranking: ``hits`` are (turn ids exposed, session id), best first."""
    turns = [ids for ids, _ in hits]
    sessions = [[s] for s in dict.fromkeys(session for _, session in hits)]
    gold_s = set(question["answer_session_ids"])
    gold_t = gold_turns(question)
    return {
        "session R@5": recall(sessions, gold_s, 5),
        "session R@10": recall(sessions, gold_s, 10),
        "turn R@5": recall(turns, gold_t, 5),
        "turn R@10": recall(turns, gold_t, 10),
        "turn nDCG@10": ndcg(turns, gold_t, 10),
    }


# -- memlane ----------------------------------------------------------------------------


def parse_value(text: str, current: Any) -> Any:
    if isinstance(current, bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise SystemExit(f"--set: expected true/false, got {text!r}")
    if current is None or isinstance(current, int | float):
        if text.lower() == "none":
            return None
        try:
            return type(current)(text) if current is not None else float(text)
        except ValueError:
            raise SystemExit(f"--set: expected a number, got {text!r}") from None
    return text


def override(obj: Any, key: str, text: str) -> Any:
    """``obj`` (a frozen dataclass) with the dotted field ``key`` set from ``text``."""
    head, _, rest = key.partition(".")
    names = {f.name for f in fields(obj)}
    if head not in names:
        raise SystemExit(
            f"--set: {type(obj).__name__} has no field {head!r} "
            f"(fields: {', '.join(sorted(names))})"
        )
    current = getattr(obj, head)
    if rest:
        if not is_dataclass(current):
            raise SystemExit(f"--set: {head!r} has no sub-fields")
        return replace(obj, **{head: override(current, rest, text)})
    return replace(obj, **{head: parse_value(text, current)})


@dataclass
class Timing:
    imported: int = 0
    import_seconds: float = 0.0
    embed_seconds: float = 0.0
    reused: int = 0
    deduplicated: int = 0


@dataclass
class Run:
    """Everything one invocation measured."""

    scores: dict[str, dict[str, dict[str, float]]] = field(
        default_factory=lambda: defaultdict(dict)
    )  # mode -> question id -> metric -> value
    top: dict[str, dict[str, list[list[str]]]] = field(default_factory=lambda: defaultdict(dict))
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    timing: Timing = field(default_factory=Timing)


class Memlane:
    """Opens one database per question and asks it in every memlane mode."""

    def __init__(
        self,
        workdir: Path,
        embedder_name: str,
        overrides: Sequence[tuple[str, str]],
        timing: Timing,
        depth: int = DEPTH,
        *,
        embed: bool = True,
        ann_threshold: int | None = None,
    ) -> None:
        from memlane.config import load_settings

        self.workdir = workdir
        self.home = workdir / "home"
        # Default settings, isolated from the caller's config.toml and MEMLANE_* env.
        self.settings, _ = load_settings(
            environ={"MEMLANE_HOME": str(self.home)}, overrides={"embedder": embedder_name}
        )
        self.overrides = overrides
        self.timing = timing
        self.depth = depth
        self.embed = embed
        self.ann_threshold = ann_threshold
        self._embedder: Any = None

    @property
    def embedder(self) -> Any:
        """The configured embedder behind a vector cache, loaded once for every question."""
        if self._embedder is None:
            from vector_cache import CachedEmbedder

            from memlane.search.embedder import get_embedder

            self._embedder = CachedEmbedder(get_embedder(self.settings.embedder), CACHE)
            log(f"vector cache: {len(self._embedder)} vectors of {self._embedder.name}")
        return self._embedder

    def open(self, question: dict[str, Any]) -> Any:
        """The question's database, imported (or reused) and embedded."""
        import memlane
        from memlane.search.engine import SearchEngine

        qid = str(question["question_id"])
        db = self.workdir / f"{qid}.db"
        jsonl = self.workdir / f"{qid}.{os.getpid()}.jsonl"  # runs may share a workdir
        count = write_jsonl(question, jsonl)
        digest = hashlib.sha256(jsonl.read_bytes()).hexdigest()
        marker = self.workdir / f"{qid}.imported"
        reuse = db.exists() and marker.exists() and marker.read_text() == digest
        if not reuse:
            for stale in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), marker):
                stale.unlink(missing_ok=True)
        memory = memlane.open(str(db), settings=self.settings)
        # One model (and its vector cache) for all questions, given to each
        # database's engine instead of loading the model once per question.
        if self.embed:
            engine = SearchEngine(
                memory.store,
                embedder=self.embedder,
                cache_dir=self.home / "vectors",
                ann_threshold=self.ann_threshold,
            )
            memory._engine = engine  # one warm embedder shared by every database
        if reuse:
            self.timing.reused += 1
        else:
            started = time.perf_counter()
            try:
                report = memory.import_jsonl(str(jsonl), project=project_of(question))
            finally:
                jsonl.unlink()
            self.timing.import_seconds += time.perf_counter() - started
            if report.errors or report.total != count:
                raise SystemExit(
                    f"{qid}: imported {report.total} of {count} records ({report.errors[:1]})"
                )
            self.timing.imported += report.created
            self.timing.deduplicated += report.total - report.created
            marker.write_text(digest)
        jsonl.unlink(missing_ok=True)
        if self.embed:
            started = time.perf_counter()
            memory.embed_backfill(batch=64)
            self.timing.embed_seconds += time.perf_counter() - started
            if self.ann_threshold is not None:
                engine.vector_table()
                engine.persist_vectors(force=True)  # builds the graph from the threshold
        return memory

    def ask(
        self,
        memory: Any,
        question: dict[str, Any],
        mode: str,
        variant: Sequence[tuple[str, str]] = (),
    ) -> list[Any]:
        """Hits for ``question`` in ``mode`` (see the module docstring for ``default``).

        ``--set`` overrides, then ``variant``'s, apply to the ranking of this search only.
        """
        base = memory.search_engine.ranking
        ranking = base
        for key, value in (*self.overrides, *variant):
            ranking = override(ranking, key, value)
        memory.search_engine.ranking = ranking
        try:
            hits = memory.search(
                question["question"],
                project=project_of(question),
                limit=self.depth,
                mode=None if mode == "default" else mode.removesuffix("-rrf"),
                as_of=parse_date(question["question_date"]),
                fusion="rrf" if mode == "hybrid-rrf" else None,
            )
        finally:
            memory.search_engine.ranking = base
        notice = hits.notice
        if notice and mode != "keyword":
            raise SystemExit(f"{mode} search fell back to keyword mode: {notice}")
        return list(hits)


def exposed(hit: Any) -> list[str]:
    """The record ids a hit stands for (all members of a group, when the model says)."""
    many = getattr(hit, "source_ids", None)
    if many:
        return [str(s) for s in many]
    return [str(hit.source_id)] if hit.source_id else []


@dataclass(frozen=True)
class Row:
    """One line of the table: a mode, optionally under a named ``--variant``."""

    mode: str
    variant: str = ""
    overrides: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return f"{self.mode} [{self.variant}]" if self.variant else self.mode


def evaluate(
    questions: Sequence[dict[str, Any]],
    rows: Sequence[Row],
    engine: Memlane | None,
    run: Run,
    depth: int = DEPTH,
) -> None:
    for n, question in enumerate(questions, 1):
        qid = str(question["question_id"])
        if any(row.mode == "bm25" for row in rows):
            turns = visible_turns(question)
            started = time.perf_counter()
            order = Bm25([t.text for t in turns]).rank(question["question"])
            run.latency["bm25"].append(time.perf_counter() - started)
            ranked = [([turns[i].key], turns[i].session) for i in order[:depth]]
            run.scores["bm25"][qid] = score_question(question, ranked)
            run.top["bm25"][qid] = [ids for ids, _ in ranked[:10]]
        if engine is not None:
            memory = engine.open(question)
            try:
                # Untimed: loads the vector table, so the first mode's latency is comparable.
                engine.ask(memory, question, "keyword" if not engine.embed else "hybrid")
                for row in rows:
                    if row.mode == "bm25":
                        continue
                    started = time.perf_counter()
                    hits = engine.ask(memory, question, row.mode, row.overrides)
                    run.latency[row.label].append(time.perf_counter() - started)
                    ranked = [(exposed(h), str(h.session_id or "")) for h in hits]
                    run.scores[row.label][qid] = score_question(question, ranked)
                    run.top[row.label][qid] = [ids for ids, _ in ranked[:10]]
            finally:
                memory.close()
        if n % 10 == 0 or n == len(questions):
            line = " | ".join(
                f"{label} {statistics.fmean(s['turn R@5'] for s in run.scores[label].values()):.3f}"
                for label in dict.fromkeys(row.label for row in rows)
            )
            log(f"  {n}/{len(questions)} questions; turn R@5 so far: {line}")


# -- report -----------------------------------------------------------------------------


def summarize(
    run: Run, questions: Sequence[dict[str, Any]], labels: Sequence[str]
) -> dict[str, dict[str, dict[str, float]]]:
    """row label -> question type (and "overall") -> metric -> mean, plus ``n``."""
    types = sorted({q["question_type"] for q in questions})
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label in labels:
        out[label] = {}
        for qtype in ["overall", *types]:
            scored = [
                run.scores[label][str(q["question_id"])]
                for q in questions
                if qtype in ("overall", q["question_type"])
            ]
            cell = {m: statistics.fmean(r[m] for r in scored) for m in METRICS}
            cell["n"] = len(scored)
            out[label][qtype] = cell
    return out


def markdown(summary: dict[str, dict[str, dict[str, float]]], run: Run) -> list[str]:
    """The result table (overall first, then each type) and the latency table."""
    labels = list(summary)
    types = list(next(iter(summary.values())))
    lines = [
        "| question type | mode | n | " + " | ".join(METRICS) + " |",
        "|---|---|---:|" + "---:|" * len(METRICS),
    ]
    for qtype in types:
        for label in labels:
            cell = summary[label][qtype]
            name = f"**{qtype}**" if qtype == "overall" else qtype
            values = " | ".join(f"{cell[m]:.3f}" for m in METRICS)
            lines.append(f"| {name} | {label} | {int(cell['n'])} | {values} |")
    lines += ["", "| mode | p50 ms | p95 ms |", "|---|---:|---:|"]
    for label in labels:
        lat = sorted(run.latency[label])
        p50 = lat[len(lat) // 2] * 1000
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1000
        lines.append(f"| {label} | {p50:.1f} | {p95:.1f} |")
    return lines


def parse_pairs(items: Sequence[str], what: str) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` strings as pairs, checked against :class:`Ranking` now."""
    from memlane.search.engine import Ranking

    pairs: list[tuple[str, str]] = []
    ranking = Ranking()
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"{what} {item!r}: expected KEY=VALUE")
        pairs.append((key.strip(), value.strip()))
        ranking = override(ranking, key.strip(), value.strip())  # fails fast on a bad key
    return tuple(pairs)


def build_rows(modes: Sequence[str], variants: Sequence[str]) -> list[Row]:
    """Each mode as asked, then each memlane mode under each ``NAME:KEY=VALUE,…`` variant."""
    rows = [Row(mode) for mode in modes]
    for spec in variants:
        name, sep, body = spec.partition(":")
        if not sep or not name.strip():
            raise SystemExit(f"--variant {spec!r}: expected NAME:KEY=VALUE[,KEY=VALUE…]")
        pairs = parse_pairs([p for p in body.split(",") if p.strip()], "--variant")
        rows += [Row(m, name.strip(), pairs) for m in modes if m != "bm25"]
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join((__doc__ or "").split("\n\n")[1:]),
    )
    parser.add_argument("data_arg", nargs="?", type=Path, metavar="DATA", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help="a LongMemEval JSON file (default: --split)")
    parser.add_argument("--split", choices=SPLITS, default="dev150")
    parser.add_argument("--subset", choices=("all", "tune", "check"), default="all")
    parser.add_argument("--types", default="", help="comma-separated question types")
    parser.add_argument("--limit-questions", "--questions", type=int, dest="limit")
    parser.add_argument(
        "--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated: {', '.join(MODES)}"
    )
    parser.add_argument("--depth", type=int, default=DEPTH, help="hits asked per question")
    parser.add_argument("--embedder", default="use", help="embedder (use, e5, toy)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a Ranking field for every memlane row (repeatable)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE,…",
        help="also run every memlane mode with these Ranking overrides (repeatable)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the per-question databases here")
    parser.add_argument(
        "--ann-threshold",
        type=int,
        help="vector rows from which search walks an ANN graph (0: always; default: memlane's)",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="",
        metavar="FILE",
        help="write the numbers as JSON (default file: benchmarks/results/lme-….json)",
    )
    parser.add_argument("--label", default="", help="a name for this run in the JSON output")
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in args.modes if m not in MODES]
    if unknown or not args.modes:
        parser.error(f"unknown mode {unknown[0] if unknown else ''!r}; choose from {MODES}")
    if args.depth < 10:
        parser.error("--depth must be at least 10 (R@10 needs ten hits)")
    return args


def write_json(args: argparse.Namespace, path: Path, summary: Any, run: Run) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    default = RESULTS / f"lme-{args.split}-{args.subset}-{args.label or 'run'}-{stamp}.json"
    out = Path(args.json) if args.json else default
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "label": args.label,
        "data": str(path),
        "subset": args.subset,
        "modes": args.modes,
        "set": args.set,
        "variants": args.variant,
        "depth": args.depth,
        "summary": summary,
        "questions": {
            label: {
                qid: {"metrics": run.scores[label][qid], "top10": run.top[label][qid]}
                for qid in run.scores[label]
            }
            for label in summary
        },
        "latency_ms": {m: [round(x * 1000, 2) for x in v] for m, v in run.latency.items()},
    }
    out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    overrides = parse_pairs(args.set, "--set")
    rows = build_rows(args.modes, args.variant)
    path = args.data or args.data_arg or DATA_DIR / DATA_NAME.format(split=args.split)
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    questions = select(load_questions(path), subset=args.subset, types=types, limit=args.limit)
    if not questions:
        raise SystemExit("no question matches --subset/--types/--limit-questions")

    run = Run()
    keep = args.workdir is not None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-lme-"))
    workdir.mkdir(parents=True, exist_ok=True)
    memlane_modes = {row.mode for row in rows} - {"bm25"}
    engine = None
    if memlane_modes:
        embed = memlane_modes != {"keyword"}  # keyword mode needs no vectors
        engine = Memlane(
            workdir,
            args.embedder,
            overrides,
            run.timing,
            args.depth,
            embed=embed,
            ann_threshold=args.ann_threshold,
        )
    n_turns = sum(len(turns_of(q)) for q in questions)
    log(
        f"{len(questions)} questions ({args.subset}) from {path}, {n_turns} turns; "
        f"{len(rows)} rows; databases in {workdir}"
    )
    started = time.perf_counter()
    try:
        evaluate(questions, rows, engine, run, args.depth)
    finally:
        if engine is not None and engine._embedder is not None:
            engine.embedder.flush()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    total = time.perf_counter() - started

    summary = summarize(run, questions, list(dict.fromkeys(row.label for row in rows)))
    title = (
        f"LongMemEval {path.name}, {len(questions)} questions ({args.subset}), {n_turns} turns, "
        f"depth {args.depth}"
    )
    notes = []
    if engine is not None:
        from memlane.search.engine import Ranking

        r = Ranking()
        for key, value in overrides:
            r = override(r, key, value)
        title += (
            f"; embedder {engine.settings.embedder}; fusion {r.fusion} alpha={r.alpha}; "
            f"grouping {'on' if r.group else 'off'}"
            + (f"; --set {' '.join(f'{k}={v}' for k, v in overrides)}" if overrides else "")
            + (f"; ANN threshold {args.ann_threshold}" if args.ann_threshold is not None else "")
        )
        t = run.timing
        note = (
            f"Ingest: {t.imported} turns imported ({t.deduplicated} not created: duplicates) "
            f"in {t.import_seconds:.1f} s ({t.reused} databases reused)"
        )
        if engine.embed:
            cached = engine.embedder
            note += (
                f"; embedding {t.embed_seconds:.1f} s ({cached.misses} vectors computed, "
                f"{cached.hits} from the cache)"
            )
        notes.append(f"{note}. Whole run {total:.0f} s.")
    variants = [f"{v}" for v in args.variant]
    if variants:
        notes.append("Variants: " + "; ".join(variants))
    print("\n".join([title, "", *markdown(summary, run), "", *notes]))
    if args.json is not None:
        log(f"wrote {write_json(args, path, summary, run)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
