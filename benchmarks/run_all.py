"""``make bench``: every memlane benchmark in one command, each figure next to a baseline.

Run: ``.venv/bin/python benchmarks/run_all.py [--quick] [--out FILE]``

Two parts:

1. **Headline figures, measured here**, each next to a baseline measured in the
   same run on the same machine (so a slow or busy machine shows in both):

   * hook latency (the installed hook command for ``user-prompt-submit`` /
     ``post-tool-use`` / ``session-start`` as real processes, no worker: the
     in-process path; ``hooks_bench.py`` below also measures the relay to a
     running worker) as a ratio to a bare interpreter start (``python -c pass``);
   * transcript ingest chunks/s (``memlane recover`` of a 50 MB transcript, as typed)
     next to the raw rate of inserting the same chunk texts into a bare SQLite FTS5 table;
   * keyword and hybrid search p50/p95 at 10k / 100k / 1M memories (the
     databases of ``search_perf.py``) next to a bare FTS5 ``MATCH … ORDER BY
     rank`` on the same file and a bare numpy cosine top-10 over the same vectors;
   * database bytes per memory next to the raw payload (UTF-8 text + float32 vector);
   * worker (``memlane serve``) RSS after a hybrid search at 100k and 1M next to
     a bare interpreter holding the same float32 matrix.

2. **The other benchmark scripts** of ``benchmarks/`` run as subprocesses with
   their own (quick) options, their output printed as they wrote it.

``--quick`` (the CI profile, a few minutes) uses 10k memories only and small
runs; without it the full sizes run (10k, 100k, 1M: most of an hour on 2 cores
and ~6 GB of disk). A sub-benchmark that fails or is missing is printed as such,
never hidden; the exit code is 1 when any did.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from user_command import memlane_command

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
OTHER_SCRIPTS: dict[str, tuple[list[str], list[str]]] = {
    # script: (quick args, full args)
    # The cache of real USE embeddings search_perf.py and pg_vs_sqlite.py use (resumable:
    # the quick profile embeds 3,000 turns, the full one the rest, ~45 min here).
    "real_vectors.py": (["--max", "3000"], []),
    "search_perf.py": (
        ["--sizes", "10000", "--queries", "30"],
        ["--sizes", "10000,100000,1000000", "--queries", "50", "--throughput", "2000"],
    ),
    "hooks_bench.py": (
        ["--memories", "5000", "--runs", "11", "--synthetic-mb", "10"],
        ["--memories", "50000", "--runs", "21", "--synthetic-mb", "100"],
    ),
    # The stored ingest of the real 2.7 MB transcript by stage, and as the worker runs it.
    "ingest_bench.py": (["--runs", "2"], ["--runs", "5"]),
    "mcp_bench.py": (["--runs", "3", "--memories", "2000"], ["--runs", "7", "--memories", "10000"]),
    # memlane import jsonl of plain records before embedding (target: >= 5,000 records/s).
    "import_bench.py": (["--records", "20000"], ["--records", "100000"]),
    # memlane restore -y of a crafted backup: the privacy filter over what it brings in.
    "restore_bench.py": (["--memories", "5000", "--runs", "2"], ["--memories", "50000"]),
    # memlane migrate-store of a crafted database into PostgreSQL, filtered on its way.
    "migrate_bench.py": (["--memories", "5000", "--runs", "2"], ["--memories", "50000"]),
    # Upgrading to schema 7: migration and maintenance backfill against inserting the rows.
    "reindex_bench.py": (["--rows", "20000"], ["--rows", "100000"]),
    # Merge planning on one template of distinct facts: memlane merge and the maintenance pass.
    "merge_bench.py": (["--records", "2000"], ["--records", "10000"]),
    # memlane search with a warm worker (target: median <= 0.3 s, hybrid, 10k memories).
    "cli_bench.py": (
        ["--memories", "2000", "--runs", "5", "--cold-runs", "2"],
        ["--memories", "10000", "--runs", "10"],
    ),
    "worker_bench.py": (
        ["--memories", "5000", "--runs", "100", "--clients", "10", "--duration", "5"],
        ["--memories", "100000", "--runs", "300", "--clients", "50", "--duration", "30"],
    ),
    # Embeds every turn of each question's haystack with USE: ~10 s per question here.
    "retrieval_longmemeval.py": (["--questions", "3"], ["--questions", "30"]),
    # At 1M PostgreSQL alone: the SQLite figures at 1M are search_perf.py's.
    "pg_vs_sqlite.py": (
        ["--size", "10000", "--queries", "30", "--real-vectors"],
        ["--size", "1000000", "--real-vectors", "--postgres-only"],
    ),
}
# Scripts that read the real-vector cache; --vectors DIR points them at DIR.
READS_REAL_VECTORS = ("search_perf.py", "pg_vs_sqlite.py")
RESULTS: list[dict[str, Any]] = []
FAILURES: list[str] = []
DURATIONS: list[tuple[str, float]] = []


# -- helpers ------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def record(
    figure: str, value: float, unit: str, baseline: str, base_value: float, note: str = ""
) -> None:
    """Print one figure next to its baseline and keep it for ``--out``."""
    ratio = value / base_value if base_value else float("nan")
    RESULTS.append(
        {
            "figure": figure,
            "value": value,
            "unit": unit,
            "baseline": baseline,
            "baseline_value": base_value,
            "ratio": ratio,
            "note": note,
        }
    )
    print(
        f"| {figure} | {value:,.2f} {unit} | {baseline}: {base_value:,.2f} {unit} |"
        f" {ratio:,.2f}x | {note} |",
        flush=True,
    )


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MEMLANE_HOME=str(home),
        MEMLANE_WORKER_AUTOSTART="false",
        MEMLANE_MAINTENANCE_ENABLED="false",
        MEMLANE_CAPTURE_HOME_AND_TMP="true",
        **extra,
    )
    env.pop("MEMLANE_DB", None)
    return env


def fresh(home: Path) -> Path:
    """``home`` emptied: what a part measures must not depend on an earlier run's data."""
    shutil.rmtree(home, ignore_errors=True)
    return home


def timed_runs(
    cmd: list[str],
    runs: int,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    cwd: Path | None = None,
) -> list[float]:
    """Wall milliseconds of ``runs`` runs of ``cmd`` (after one warm-up)."""
    out = []
    for i in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(cmd, input=stdin, env=env, cwd=cwd, capture_output=True, check=True)
        if i:
            out.append((time.perf_counter() - started) * 1000)
    return out


def machine() -> dict[str, str]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        ram = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    load = ""
    with contextlib.suppress(OSError):
        load = Path("/proc/loadavg").read_text().split(" ")[0]
    import sqlite3 as sq

    return {
        "nproc": str(os.cpu_count()),
        "ram": ram,
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sq.sqlite_version,
        "os": platform.platform(),
        "load_1min_at_start": load,
    }


# -- 1. hook latency vs a bare interpreter --------------------------------------------------


def seed_memories(home: Path, count: int) -> None:
    """``count`` notes in ``home``'s database through the store (fast path)."""
    code = r"""
import random, sys
import memlane
from memlane.models import NewMemory, utcnow
words = ("cache index query parser worker session token budget vector chunk hook prompt "
         "migration schema sqlite postgres embed recall rerank fusion latency config").split()
rng = random.Random(5)
m = memlane.open()
n = int(sys.argv[1])
with m.store.transaction():
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(60)) + f" item{i}"
        m.store.insert_memory(NewMemory(project="bench", kind="observation", type="command",
            content=text, normalized_hash=f"h{i}", created_at=utcnow()))
m.close()
"""
    subprocess.run([PY, "-c", code, str(count)], env=env_for(home), check=True)


def bench_hooks(work: Path, quick: bool) -> None:
    from memlane.integrations import hook_argv

    runs = 9 if quick else 31
    home = fresh(work / "hooks-home")
    project = work / "bench"
    project.mkdir(parents=True, exist_ok=True)
    seed_memories(home, 5_000 if quick else 50_000)
    env = env_for(home)
    bare = timed_runs([PY, "-c", "pass"], runs)
    base = statistics.median(bare)
    print(
        f"\nbare interpreter start (`python -c pass`): p50 {base:.1f} ms, "
        f"p95 {pct(bare, 0.95):.1f} ms ({runs} runs)"
    )
    payloads: dict[str, dict[str, Any]] = {
        "user-prompt-submit": {"prompt": "how does the cache parser handle the token budget"},
        "post-tool-use": {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest tests/test_cache.py -q"},
            "tool_response": {"stdout": "3 passed", "stderr": "", "exit_code": 0},
        },
        "session-start": {"source": "startup"},
    }
    print("| figure | value | baseline | ratio | note |\n|---|---:|---:|---:|---|")
    for event, extra in payloads.items():
        payload: dict[str, Any] = {"session_id": "bench-s", "cwd": str(project), **extra}
        samples: list[float] = []
        for i in range(runs):
            # A distinct command each run: a repeated one would be deduplicated.
            if event == "post-tool-use":
                payload["tool_input"] = {"command": f"pytest tests/test_cache.py -q -k t{i}"}
            samples += timed_runs(
                hook_argv(event),  # the command `memlane setup` installs (no worker here)
                1,
                env=env,
                stdin=json.dumps(payload).encode(),
                cwd=project,
            )
        record(
            f"hook {event} p50",
            statistics.median(samples),
            "ms",
            "python -c pass p50",
            base,
            f"p95 {pct(samples, 0.95):.0f} ms",
        )


# -- 2. ingest chunks/s vs bare FTS5 inserts ------------------------------------------------


def bench_ingest(work: Path, quick: bool) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.test_reliability_support import write_transcript

    # A Claude Code projects folder holding the transcript, read by `memlane recover`
    # as typed (the bulk ingest a user runs; the live Stop hook is hooks_bench.py's).
    claude_dir = work / "ingest-claude"
    shutil.rmtree(claude_dir, ignore_errors=True)
    transcript = claude_dir / "proj" / "ingest-s.jsonl"
    size_mb = 5 if quick else 50
    write_transcript(transcript, size_mb=size_mb, session_id="ingest-s", pad=150)
    home = fresh(work / "ingest-home")
    started = time.perf_counter()
    proc = subprocess.run(
        [*memlane_command(), "recover", "--claude-dir", str(claude_dir), "--json"],
        env=env_for(home),
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    units = int(json.loads(proc.stdout)["units"])
    rate = units / seconds
    # Baseline: the same chunk texts into a bare FTS5 table, one transaction.
    db = home / "memlane.db"
    src = sqlite3.connect(str(db))
    texts = [row[0] for row in src.execute("SELECT content FROM memories WHERE kind = 'turn'")]
    src.close()
    bare_path = work / "bare-fts.db"
    bare_path.unlink(missing_ok=True)
    conn = sqlite3.connect(str(bare_path))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, tokenize='unicode61 remove_diacritics 2')"
    )
    started = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO t(content) VALUES (?)", ((t,) for t in texts))
    bare_rate = len(texts) / (time.perf_counter() - started)
    conn.close()
    record(
        f"transcript ingest ({size_mb} MB, {units:,} chunks)",
        rate,
        "chunks/s",
        "bare FTS5 insert of the same texts",
        bare_rate,
        "`memlane recover` as typed, wall: parse + chunk + privacy scrub + hash + store"
        " + FTS + observations + summary; a helper process prepares part of each batch"
        " when a core is idle",
    )


# -- 3./4./5. search at scale (databases and table of search_perf.py) -----------------------


def bare_fts_baseline(db: Path, queries: list[str], project: str) -> dict[str, float]:
    """Bare FTS5 ``MATCH … ORDER BY rank LIMIT 10`` p50/p95 on ``db``."""
    sys.path.insert(0, str(ROOT / "src"))
    from memlane.search.fts import ranking_query
    from memlane.store.sqlite import fts5_match

    conn = sqlite3.connect(str(db))
    fts = []
    for q in queries:
        built = ranking_query(q)
        assert built is not None
        started = time.perf_counter()
        conn.execute(
            "SELECT m.id FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid"
            " WHERE memories_fts MATCH ? AND m.project = ? ORDER BY rank LIMIT 10",
            (fts5_match(built), project),
        ).fetchall()
        fts.append((time.perf_counter() - started) * 1000)
    avg_text = float(
        conn.execute("SELECT avg(length(CAST(content AS BLOB))) FROM memories").fetchone()[0]
    )
    conn.close()
    return {"fts_p50": pct(fts, 0.5), "fts_p95": pct(fts, 0.95), "avg_text": avg_text}


def parse_search_perf(text: str) -> dict[int, dict[str, float]]:
    """Rows of search_perf.py's markdown table by size, keyed by column header."""
    out: dict[int, dict[str, float]] = {}
    header: list[str] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "memories":
            header = cells
            continue
        if not header or len(cells) != len(header) or not cells[0].replace(",", "").isdigit():
            continue
        row: dict[str, float] = {}
        for name, cell in zip(header[1:], cells[1:], strict=True):
            try:
                row[name] = float(cell.split()[0].replace(",", ""))
            except (ValueError, IndexError):
                row[name] = float("nan")
        out[int(cells[0].replace(",", ""))] = row
    return out


def matrix_rss(count: int, dim: int) -> float:
    """RSS MB of a bare interpreter holding a ``count`` x ``dim`` float32 matrix."""
    code = (
        "import numpy as np, sys; n, d = int(sys.argv[1]), int(sys.argv[2]);"
        " a = np.ones((n, d), dtype=np.float32);"
        " print(open('/proc/self/status').read())"
    )
    out = subprocess.run(
        [PY, "-c", code, str(count), str(dim)], capture_output=True, text=True, check=True
    ).stdout
    for line in out.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench_search(work: Path, perf_out: str, quick: bool) -> None:
    sys.path.insert(0, str(HERE))
    try:
        from search_perf import QUERIES
    except ImportError as exc:
        FAILURES.append(f"search baselines: cannot import search_perf ({exc})")
        return
    rows = parse_search_perf(perf_out)
    if not rows:
        FAILURES.append("search: search_perf.py printed no result rows")
        return
    print("| figure | value | baseline | ratio | note |\n|---|---:|---:|---:|---|")
    queries = [QUERIES[i % len(QUERIES)] for i in range(30 if quick else 50)]
    bare = timed_runs([PY, "-c", "pass"], 5)
    for size, row in sorted(rows.items()):
        db = work / "perf" / f"perf-{size}.db"
        base = bare_fts_baseline(db, queries, "project-3")
        label = f"{size // 1000}k" if size < 1_000_000 else f"{size // 1_000_000}M"
        record(
            f"hybrid search p50 @{label}",
            row["hybrid p50 ms"],
            "ms",
            "same search, exact vector scan (graph off), same run",
            row["exact-scan hybrid p50 ms"],
            f"p95 {row['hybrid p95 ms']:.1f} ms, min {row['hybrid min ms']:.1f} ms;"
            f" all projects p50 {row['hybrid all-projects p50 ms']:.1f} ms",
        )
        record(
            f"hybrid search CPU p50 @{label}",
            row["hybrid CPU p50 ms"],
            "ms",
            "same search, exact vector scan, CPU p50",
            row["exact-scan CPU p50 ms"],
            "CPU time per search (single-threaded path): the idle-machine latency",
        )
        record(
            f"ANN recall@10 @{label}",
            row["ANN recall@10"],
            "",
            "exact top 10",
            1.0,
            f"one project: {row['ANN recall@10 one project']:.3f};"
            " 150 real LongMemEval question embeddings",
        )
        record(
            f"worker start to first hybrid answer @{label}",
            row["start → first hybrid s"],
            "s",
            "the worker's own CPU seconds by then",
            row["worker CPU s by then"],
            f"python -c pass: {statistics.median(bare) / 1000:.2f} s",
        )
        vector_mb = size * 512 * 4 / 2**20
        record(
            f"worker RSS @{label}",
            row["worker RSS MB"],
            "MB",
            f"float32 vectors it serves ({size:,} x 512)",
            vector_mb,
            f"a bare interpreter holding that matrix: {matrix_rss(size, 512):,.0f} MB",
        )
        record(
            f"keyword recall p50 @{label}",
            row["keyword recall p50 ms"],
            "ms",
            "bare FTS5 MATCH top-10 p50",
            base["fts_p50"],
            f"bare p95 {base['fts_p95']:.1f} ms",
        )
        record(
            f"database bytes per memory @{label}",
            row["DB bytes / 1000"] * 1e6 / 1000,
            "B",
            "raw payload (UTF-8 text + float32 vector)",
            base["avg_text"] + 4 * 512,
            "file + WAL after checkpoint, FTS index and vector included",
        )


# -- 6. the other scripts -----------------------------------------------------------------------


def run_script(name: str, args: list[str], timeout: float) -> str:
    path = HERE / name
    print(f"\n### {name} {' '.join(args)}\n", flush=True)
    if not path.exists():
        FAILURES.append(f"{name}: missing")
        print(f"MISSING: {path} does not exist")
        return ""
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [PY, str(path), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        FAILURES.append(f"{name}: timed out after {timeout:.0f} s")
        print(f"TIMED OUT after {timeout:.0f} s")
        return ""
    print(proc.stdout.rstrip())
    if proc.returncode != 0:
        FAILURES.append(f"{name}: exit {proc.returncode}")
        print(f"FAILED (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    seconds = time.perf_counter() - started
    DURATIONS.append((f"{name} {' '.join(args)}", seconds))
    print(f"({seconds:.0f} s)", flush=True)
    return proc.stdout


def search_figures(work: Path, perf_out: str, quick: bool) -> None:
    """Search latency, recall, worker start and RSS, bytes per memory from search_perf."""
    section(
        "Search at scale, worker start and RSS vs baselines",
        lambda: bench_search(work, perf_out, quick),
    )


def section(title: str, fn: Callable[[], None]) -> None:
    print(f"\n## {title}\n", flush=True)
    started = time.perf_counter()
    try:
        fn()
    except Exception as exc:  # one broken benchmark must not hide the others' numbers
        FAILURES.append(f"{title}: {type(exc).__name__}: {exc}")
        print(f"FAILED: {type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    DURATIONS.append((title, seconds))
    print(f"({seconds:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the CI profile (a few minutes)")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep databases here and reuse the ones built with the same parameters"
        " (default: a temp dir)",
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        default=os.environ.get("MEMLANE_BENCH_VECTORS") or None,
        help="an existing real_vectors.py cache (turns.npy, questions.npy): real_vectors.py"
        " is not run and the cache is only read (default: $MEMLANE_BENCH_VECTORS)",
    )
    parser.add_argument("--out", type=Path, help="write the headline figures as JSON here")
    parser.add_argument(
        "--only", help="comma-separated parts to run: hooks, ingest, script names (default: all)"
    )
    parser.add_argument("--search-sizes", help="search_perf.py sizes instead of the profile's")
    parser.add_argument("--pg-size", type=int, help="pg_vs_sqlite.py size instead of the profile's")
    parser.add_argument(
        "--markdown",
        type=Path,
        help="write this report into FILE between its `make bench` markers (BENCHMARKS.md)",
    )
    args = parser.parse_args(argv)
    report = Tee(sys.stdout)
    sys.stdout = report
    try:
        code = run(args)
    finally:
        sys.stdout = report.stream
    if args.markdown:
        write_markdown(args.markdown, report.getvalue())
    return code


class Tee(io.StringIO):
    """Prints through to ``stream`` and keeps a copy (for ``--markdown``)."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)

    def flush(self) -> None:
        self.stream.flush()


BEGIN = "<!-- make bench: begin (generated by benchmarks/run_all.py --markdown) -->"
END = "<!-- make bench: end -->"


def write_markdown(path: Path, text: str) -> None:
    """Replace the text between the markers of ``path`` (or append them) with ``text``."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    # The report's headings go two levels down: it sits inside a section of ``path``.
    lines = ["##" + line if line.startswith("#") else line for line in text.strip().splitlines()]
    body = BEGIN + "\n\n" + "\n".join(lines) + "\n\n" + END
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + body + rest.split(END, 1)[1]
    else:
        new = old.rstrip() + "\n\n" + body + "\n"
    path.write_text(new, encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    """Every part ``args`` asks for; the exit code (1 when any failed or is missing)."""
    quick = args.quick
    # One BLAS thread, as memlane's embedder and vector search use (DESIGN §6), so the
    # numpy baselines are measured the way memlane runs.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    info = machine()
    print(f"# memlane benchmarks ({'quick' if quick else 'full'} profile)\n")
    print(f"command: {' '.join([Path(PY).name, *sys.argv])}")
    for key, value in info.items():
        print(f"- {key}: {value}")
    print(f"- workdir: {work}")
    if args.vectors:
        print(f"- real vectors: {args.vectors} (read only; real_vectors.py not run)")
    wanted = set(args.only.split(",")) if args.only else None
    if args.workdir:
        # The LongMemEval run embeds every haystack turn (~10 s per question): keep its
        # vectors (by model and SHA-256 of the text) with the other reusable inputs.
        os.environ.setdefault("MEMLANE_BENCH_VECTOR_CACHE", str(work / "vector-cache"))
    started = time.perf_counter()

    if wanted is None or "hooks" in wanted:
        section("Hook latency vs a bare interpreter start", lambda: bench_hooks(work, quick))
    if wanted is None or "ingest" in wanted:
        section("Transcript ingest vs bare FTS5 inserts", lambda: bench_ingest(work, quick))

    def save() -> None:
        if args.out:
            payload = {"machine": info, "quick": quick, "results": RESULTS, "failures": FAILURES}
            args.out.write_text(json.dumps(payload, indent=2))

    perf_out = ""
    scripts_timeout = 1800 if quick else 4 * 3600
    for name, (quick_args, full_args) in OTHER_SCRIPTS.items():
        if wanted is not None and name not in wanted:
            continue
        extra = list(quick_args if quick else full_args)
        if args.vectors and name == "real_vectors.py":
            if not (args.vectors / "turns.npy").is_file():
                FAILURES.append(f"--vectors {args.vectors}: no turns.npy there")
                print(f"\n### {name}\n\nFAILED: {args.vectors} holds no turns.npy")
            else:
                print(f"\n### {name}\n\nNOT RUN: the cache {args.vectors} is used as it is")
            continue
        if args.vectors and name in READS_REAL_VECTORS:
            if "--real-vectors" in extra:
                extra.remove("--real-vectors")
            extra += ["--real-vectors", str(args.vectors)]
        if name == "search_perf.py" and args.search_sizes:
            extra[extra.index("--sizes") + 1] = args.search_sizes
        if name == "pg_vs_sqlite.py" and args.pg_size:
            extra[extra.index("--size") + 1] = str(args.pg_size)
        if name == "search_perf.py":
            extra += ["--workdir", str(work / "perf")]
        if name == "pg_vs_sqlite.py":
            extra += ["--workdir", str(work / "pg")]
        if name in ("pg_vs_sqlite.py", "migrate_bench.py") and not os.environ.get(
            "MEMLANE_TEST_PG_DSN"
        ):
            print(
                f"\n### {name}\n\nNOT RUN: no PostgreSQL (set MEMLANE_TEST_PG_DSN, e.g. via"
                " `scripts/pg_server.py start`)"
            )
            continue
        out = run_script(name, extra, scripts_timeout)
        if name == "search_perf.py" and out:
            perf_out = out
            search_figures(work, perf_out, quick)
        save()
    if not perf_out and (wanted is None or "search_perf.py" in wanted):
        FAILURES.append("search_perf.py gave no numbers: no search, bytes or worker RSS figures")

    save()
    print("\n## Summary\n")
    print("| figure | value | baseline | ratio | note |\n|---|---:|---:|---:|---|")
    for r in RESULTS:
        print(
            f"| {r['figure']} | {r['value']:,.2f} {r['unit']} | {r['baseline']}:"
            f" {r['baseline_value']:,.2f} {r['unit']} | {r['ratio']:,.2f}x | {r['note']} |"
        )
    print("\n## Durations\n\n| part | s |\n|---|---:|")
    for part, seconds in DURATIONS:
        print(f"| {part} | {seconds:,.0f} |")
    print(f"| **total** | {time.perf_counter() - started:,.0f} |")
    if FAILURES:
        print("\nFAILED OR MISSING:\n" + "\n".join(f"- {f}" for f in FAILURES))
        return 1
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    random.seed(0)
    sys.exit(main())
