"""Transcript ingest benchmark: where the time of a stored ingest goes (printed, not asserted).

Measures, on the 2.7 MB real transcript (../shared/fixtures):

1. parse + units (best of N, warm process), the cutting the stored ingest does;
2. the stored ingest (``Memory.ingest_transcript`` into a fresh SQLite file: privacy
   filter, normalized hash, insert with FTS triggers), cold (first ingest of the
   process, as in a Stop hook) and warm (best of N further sessions);
3. the warm ingest with the insert thread forced off and on (alternating), then as the
   worker runs it (its prepare helper allowed, best and median), then split
   by stage, in CPU time of one thread (parse, the turn's privacy
   filter, units cut and vouched for, observations, prepare and its filter of what is
   not vouched for, hash, dedup checks, insert with the FTS5 trigger);
4. how often ``privacy.needs_scrub`` lets text skip the filter: real transcript turns
   and chunks, and the ordinary-text corpus of the privacy tests;
5. the write layer alone, in CPU time (the path is single-threaded, so this is what an
   idle machine would take): ``--rows`` drafts made of the transcript's chunk texts saved
   through one ``memories.batch`` (privacy rule, hash, dedup probes, insert), then the
   same rows prepared only, inserted only, and inserted with the full-text trigger
   dropped (what FTS5 indexing costs).

Run: ``.venv/bin/python benchmarks/ingest_bench.py [--runs N]``. With ``--digest`` it
only prints a hash of every row the fixture transcripts store: the same on two checkouts
(``PYTHONPATH=<other>/src``) means both store the same rows.

``--against OTHER/src`` compares two checkouts on a shared, noisy machine: two warm
processes, this checkout's and one with ``PYTHONPATH=OTHER/src``, take turns ingesting
the transcript (``--runs`` each, one thread, then as the worker ingests), so both see the
same minutes; it prints best and median wall and CPU of each and their ratios.

``--instructions [OTHER/src]`` counts instead of timing (valgrind's cachegrind, no cache
model; a few minutes): the instructions of one warm ingest, one thread, as the difference
of a process that ingests cold then 3 times warm and one that does so once, halved
(``PYTHONHASHSEED=0``); with ``OTHER/src``, the same for that checkout and the ratio. At
load 4 on 2 shared cores the wall and CPU ratios of ``--against`` spread ±15%; a count
resolves a change of 1%. The whole process's count it also prints includes compiling the
modules whose ``.pyc`` is older than their source when ``PYTHONDONTWRITEBYTECODE`` is set
(``python -m compileall src`` first), which the difference cancels.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared_fixtures import FIXTURE, FIXTURES

if TYPE_CHECKING:
    from memlane.config import Settings

ROOT = Path(__file__).resolve().parents[1]
ORDINARY = ROOT / "tests" / "data" / "privacy" / "ordinary.jsonl"


def best_of(runs: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


@contextlib.contextmanager
def _fresh_home(prefix: str) -> Iterator[Settings]:
    """The settings of a new, empty ``MEMLANE_HOME`` (a temporary folder named ``prefix``…),
    removed afterwards."""
    from memlane.config import load_settings

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        os.environ["MEMLANE_HOME"] = str(tmp)
        yield load_settings()[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stored(runs: int) -> None:
    """Cold and warm stored ingest (wall and CPU), and the warm one split by stage."""
    from memlane import background
    from memlane.service import open as open_memory

    with _fresh_home("memlane-ingest-bench-") as settings:
        with open_memory(settings=settings) as memory:
            started, cpu = time.perf_counter(), time.process_time()
            report = memory.ingest_transcript("cold", str(FIXTURE), project="bench")
            cold, cold_cpu = time.perf_counter() - started, time.process_time() - cpu
            count = report.chunks
            print(
                f"stored ingest, cold process: {count} units in {cold * 1000:.1f} ms"
                f" ({count / cold:,.0f}/s; CPU {cold_cpu * 1000:.1f} ms, {count / cold_cpu:,.0f}/s;"
                f" load {_load()}) (target >= 5,000/s)"
            )
            warm = warm_cpu = float("inf")
            for run in range(runs):
                started, cpu = time.perf_counter(), time.process_time()
                memory.ingest_transcript(f"warm{run}", str(FIXTURE), project=f"bench{run}")
                warm = min(warm, time.perf_counter() - started)
                warm_cpu = min(warm_cpu, time.process_time() - cpu)
            print(
                f"stored ingest, warm (best of {runs}): {warm * 1000:.1f} ms"
                f" ({count / warm:,.0f}/s); CPU {warm_cpu * 1000:.1f} ms"
                f" ({count / warm_cpu:,.0f}/s); load {_load()}"
            )
            _beside_ab(memory, runs, count)
            _as_the_worker(memory, settings, max(2 * runs, 10), count)
            with _stages() as spent:
                background_spare = background.spare_core
                background.spare_core = lambda: False  # one thread, so stages add up
                try:
                    cpu = time.thread_time()
                    memory.ingest_transcript("split", str(FIXTURE), project="split")
                    total = time.thread_time() - cpu
                finally:
                    background.spare_core = background_spare
        print(f"warm ingest by stage, CPU of one thread ({total * 1000:.1f} ms, {count} units):")
        for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
            print(f"  {label:<44}{seconds * 1000:7.1f} ms  {seconds / total:4.0%}")
        rest = total - sum(spent.values())
        label = "rest (batches, sessions, commit)"
        print(f"  {label:<44}{rest * 1000:7.1f} ms  {rest / total:4.0%}")


def _as_the_worker(memory: Any, settings: Any, runs: int, count: int) -> None:
    """Warm ingests as the worker runs them: its prepare helper allowed, the insert thread
    and the helper used when ``background`` finds a core idle now (not forced); best and
    median wall of ``runs``, and in how many the helper took part of the batch. The
    relayed Stop (``hooks_bench.py``) adds the hook process's start to this."""
    import statistics

    from memlane.capture import helper

    helper.allow(settings)
    try:
        for warm_up in range(2):  # the helper starts on the first large batch
            memory.ingest_transcript(f"helper-warm{warm_up}", str(FIXTURE), project="helper")
        process = helper.current()
        asked = process.requests if process is not None else 0
        walls: list[float] = []
        for run in range(runs):
            started = time.perf_counter()
            memory.ingest_transcript(f"helper{run}", str(FIXTURE), project=f"helper{run}")
            walls.append(time.perf_counter() - started)
        used = (process.requests - asked) if process is not None else 0
    finally:
        helper.stop()
    best, median = min(walls), statistics.median(walls)
    print(
        f"  as the worker ingests (its prepare helper; {runs} runs, the helper in {used}):"
        f" best {best * 1000:.1f} ms ({count / best:,.0f}/s), median {median * 1000:.1f} ms"
        f" ({count / median:,.0f}/s); load {_load()}"
    )


def _beside_ab(memory: Any, runs: int, count: int) -> None:
    """Warm ingests with the insert thread forced off and on, alternating (wall and CPU of
    the process, best of ``runs`` each): what inserting runs beside gains here, now."""
    from memlane import background

    spare_core = background.spare_core
    best: dict[bool, list[float]] = {False: [], True: []}
    try:
        for run in range(runs):
            for beside in (False, True):
                background.spare_core = lambda beside=beside: beside  # type: ignore[misc]
                started, cpu = time.perf_counter(), time.process_time()
                memory.ingest_transcript(f"ab{beside}{run}", str(FIXTURE), project=f"ab{run}")
                best[beside].append(time.perf_counter() - started)
                best[beside].append(time.process_time() - cpu)
    finally:
        background.spare_core = spare_core
    for beside, label in ((False, "off"), (True, "on ")):
        wall, cpu = min(best[beside][0::2]), min(best[beside][1::2])
        print(
            f"  insert thread {label} (best of {runs}): {wall * 1000:.1f} ms"
            f" ({count / wall:,.0f}/s); CPU {cpu * 1000:.1f} ms ({count / cpu:,.0f}/s);"
            f" load {_load()}"
        )


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


@contextlib.contextmanager
def _stages() -> Iterator[dict[str, float]]:
    """CPU time (this thread) spent in each stage of an ingest, each counted once: a stage
    called inside another is taken out of the outer one."""
    from memlane import memories, privacy
    from memlane.capture import pipeline, sources, units
    from memlane.store import sqlite as sqlite_store

    spent: dict[str, float] = collections.defaultdict(float)
    inside: list[str] = []
    patched: list[tuple[Any, str, Any]] = []

    def timed(owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name, None) if owner is not None else None
        if inner is None:  # an older checkout (``PYTHONPATH``) without this stage
            return

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            where = f"privacy filter, {inside[-1]}" if label == "privacy" and inside else label
            inside.append(where)
            started = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                seconds = time.thread_time() - started
                inside.pop()
                spent[where] += seconds
                if inside:
                    spent[inside[-1]] -= seconds

        patched.append((owner, name, inner))
        setattr(owner, name, wrapper)

    def timed_iter(owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            iterator = inner(*args, **kwargs)
            while True:
                started = time.thread_time()
                try:
                    item = next(iterator)
                except StopIteration:
                    spent[label] += time.thread_time() - started
                    return
                spent[label] += time.thread_time() - started
                yield item

        patched.append((owner, name, inner))
        setattr(owner, name, wrapper)

    timed_iter(sources, "iter_session_turns", "parse (JSON lines to turns)")
    for owner, name, label in (
        (pipeline, "_scrubbed", "turn scrub (whole turn)"),
        (privacy, "scrub", "privacy"),
        (units, "turn_units", "units: cut"),
        (getattr(privacy, "CleanSource", None), "vouch", "units: vouch"),
        (pipeline, "_prepared_observations", "observations: classify"),
        (memories, "prepare", "prepare (clip, title, metadata)"),
        (privacy, "hash_scrubbed", "hash"),
        (memories.Writer, "save", "save: dedup checks"),
        (sqlite_store.SQLiteStore, "insert_memory", "insert (row + FTS5 trigger)"),
        (sqlite_store.SQLiteStore, "insert_batch", "insert (row + FTS5 trigger)"),
        (sqlite_store.SQLiteStore, "present_keys", "key probes"),
    ):
        timed(owner, name, label)
    try:
        yield spent
    finally:
        for owner, name, inner in reversed(patched):
            setattr(owner, name, inner)


def prefilter() -> None:
    """Share of texts for which needs_scrub is False (scrub skipped entirely)."""
    from memlane.capture.chunker import chunk_turns
    from memlane.capture.transcript import iter_turns
    from memlane.privacy import needs_scrub

    turns = [t for path in sorted(FIXTURES.rglob("*.jsonl")) for t in iter_turns(str(path))]
    with ORDINARY.open(encoding="utf-8") as handle:
        ordinary = [json.loads(line)["text"] for line in handle if line.strip()]
    print("needs_scrub False (the whole privacy filter skipped):")
    for label, texts in (
        ("real transcript turns", [t.text for t in turns]),
        ("  of which user prompts", [t.text for t in turns if t.role == "user"]),
        ("real transcript chunks", [c.text for c in chunk_turns(turns)]),
        ("ordinary-text corpus", ordinary),
    ):
        skipped = sum(not needs_scrub(text) for text in texts)

        def check_all(texts: list[str] = texts) -> None:
            for text in texts:
                needs_scrub(text)

        seconds = best_of(5, check_all)
        size = sum(map(len, texts)) / 1000
        print(
            f"  {label:<26}{skipped:>4}/{len(texts):<4} ({skipped / len(texts):.0%}),"
            f" {seconds * 1e6 / size:.0f} µs per 1,000 chars"
        )


def write_layer(rows: int) -> None:
    """Rows per CPU second through the write layer, and what each part costs."""
    from memlane import memories
    from memlane.capture.chunker import chunk_turns
    from memlane.capture.transcript import iter_turns
    from memlane.service import open as open_memory

    texts = [chunk.text for chunk in chunk_turns(iter_turns(str(FIXTURE)))]

    def drafts(tag: str) -> list[memories.Draft]:
        return [
            memories.Draft(
                f"{texts[i % len(texts)]} {tag} {i}",
                project="bench",
                type="turn",
                kind="turn",
                derive_title=True,
                session_id=f"session-{tag}",
                source="transcript",
                source_id=f"{tag}:{i}",
            )
            for i in range(rows)
        ]

    def per_second(fn: Callable[[], Any]) -> float:
        began = time.process_time()
        fn()
        return rows / (time.process_time() - began)

    with _fresh_home("memlane-write-bench-") as settings:
        with open_memory(settings=settings) as memory:
            core, store = memory.core, memory.core.store

            def save_all(batch: list[memories.Draft]) -> None:
                with memories.batch(core) as writer:
                    for draft in batch:
                        writer.save(draft)

            def insert_all(prepared: list[Any]) -> None:
                with store.transaction():
                    for row in prepared:
                        store.insert_memory(row)

            save_all(drafts("warm"))
            batch = drafts("saved")
            saved = per_second(lambda: save_all(batch))
            batch = drafts("prepared")
            prepared: list[Any] = []
            prepare = per_second(lambda: prepared.extend(memories.prepare(core, d) for d in batch))
            inserted = per_second(lambda: insert_all(prepared))
            store.execute_script("DROP TRIGGER memories_fts_insert;")
            plain = [memories.prepare(core, d) for d in drafts("plain")]
            no_fts = per_second(lambda: insert_all(plain))
        chars = sum(map(len, texts)) / len(texts)
        print(f"write layer, CPU time ({rows} rows of ~{chars:,.0f} chars, one transaction):")
        print(f"  memories.batch save      {saved:8,.0f} rows/s (target >= 5,000)")
        print(f"  prepare only             {prepare:8,.0f} rows/s (privacy rule, hash)")
        print(f"  store insert only        {inserted:8,.0f} rows/s")
        print(f"  insert without FTS5      {no_fts:8,.0f} rows/s")
        print(f"  FTS5 share of an insert  {1 - inserted / no_fts:8.0%}")


def digest(helper: bool = False) -> None:
    """One hash of every row the fixture transcripts store (ingested twice each, the second
    time as another session of the same project), and full-text hit counts: run it with
    ``PYTHONPATH`` on another checkout's ``src`` to compare what two versions store.

    ``helper``: with the worker's prepare helper, as if a core were idle (large batches
    are split between the two processes)."""
    import sqlite3

    from memlane.service import open as open_memory

    paths = sorted(FIXTURES.rglob("*.jsonl"))
    with _fresh_home("memlane-digest-") as settings:
        if helper:
            from memlane import background
            from memlane.capture import helper as prepare_helper

            background.spare_core = lambda: True  # type: ignore[assignment]
            background.idle_core = lambda: True  # type: ignore[assignment]
            prepare_helper.allow(settings)
            prepare_helper.current()  # started: the ingests below find it
            started = prepare_helper.current()
        with open_memory(settings=settings) as memory:
            counts = [
                memory.ingest_transcript(f"{session}{n}", str(path), project="digest").chunks
                for n, path in enumerate(paths)
                for session in ("first", "again")
            ]
        rows = hashlib.sha256()
        with contextlib.closing(sqlite3.connect(settings.paths.db_path)) as connection:
            columns = (
                "id, project, kind, type, title, content, normalized_hash, session_id,"
                " topic_key, source, source_id, files, tags, metadata"
            )
            total = 0
            for row in connection.execute(f"SELECT {columns} FROM memories ORDER BY id"):
                rows.update(json.dumps(row).encode())
                total += 1
            hits = [
                connection.execute(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (word,)
                ).fetchone()[0]
                for word in ("test", "error", "redacted", "session", "retry")
            ]
        print(f"rows of {len(paths)} fixture transcripts, each ingested twice: {total} rows,")
        print(f"  units per ingest {counts}, FTS hits {hits}")
        print(f"  sha256 {rows.hexdigest()}")
        if helper:
            used = started is not None and prepare_helper.current() is started
            print(f"  prepare helper: {'used' if used else 'FAILED or absent'}")
            prepare_helper.stop()


def _child(mode: str) -> None:
    """A warm process for ``--against``: one ingest per ``go`` line read, its wall and CPU
    seconds and the chunks it stored printed. ``mode``: ``off`` (one thread) or
    ``worker`` (as the worker ingests)."""
    from memlane import background
    from memlane.capture import helper
    from memlane.service import open as open_memory

    with _fresh_home("memlane-ingest-ab-") as settings, contextlib.suppress(EOFError):
        if mode == "off":
            background.spare_core = lambda: False  # type: ignore[assignment]
        else:
            helper.allow(settings)
        try:
            with open_memory(settings=settings) as memory:
                for run in range(3):  # warm, and the helper started
                    memory.ingest_transcript(f"warm{run}", str(FIXTURE), project=f"warm{run}")
                print("ready", flush=True)
                for run, line in enumerate(iter(input, "")):
                    if line != "go":
                        break
                    started, cpu = time.perf_counter(), time.process_time()
                    report = memory.ingest_transcript(f"ab{run}", str(FIXTURE), project=f"ab{run}")
                    wall, spent = time.perf_counter() - started, time.process_time() - cpu
                    print(wall, spent, report.chunks, flush=True)
        finally:
            if mode != "off":
                helper.stop()


def _loop(warm: int) -> None:
    """A process for ``--instructions``: one cold ingest, then ``warm`` warm ones, one
    thread (no insert thread, no helper), in a fresh home."""
    from memlane import background
    from memlane.service import open as open_memory

    background.spare_core = lambda: False  # type: ignore[assignment]
    background.idle_core = lambda: False  # type: ignore[assignment]
    with (
        _fresh_home("memlane-ingest-count-") as settings,
        open_memory(settings=settings) as memory,
    ):
        memory.ingest_transcript("cold", str(FIXTURE), project="cold")
        for run in range(warm):
            memory.ingest_transcript(f"warm{run}", str(FIXTURE), project=f"warm{run}")


def _counted(src: str, warm: int) -> int:
    """Instructions of a :func:`_loop` process (``warm`` warm ingests) of checkout ``src``."""
    import re
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": src, "PYTHONHASHSEED": "0"}
    env["MEMLANE_WORKER_AUTOSTART"] = "false"
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
    command += ["--cachegrind-out-file=/dev/null", sys.executable, __file__, "--loop", str(warm)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"cachegrind failed on {src}: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def instructions(other: Path | None) -> None:
    """Instructions per warm ingest, one thread, of this checkout (and of ``other``)."""
    if shutil.which("valgrind") is None:
        print("(valgrind absent: nothing counted; apt-get install valgrind)")
        return
    counts = {}
    for label, src in (("this", str(ROOT / "src")), ("other", str(other) if other else "")):
        if src:
            once, thrice = _counted(src, 1), _counted(src, 3)
            counts[label] = (thrice - once) / 2
            print(
                f"  {label:<6} {counts[label] / 1e9:.4f} billion instructions per warm ingest"
                f" (process, cold + 1 warm: {once / 1e9:.4f} billion)"
            )
    if len(counts) == 2:
        print(f"  this / other: {counts['this'] / counts['other']:.4f}")


def against(other: Path, runs: int) -> None:
    """Warm ingests of this checkout and of ``other`` (a ``src`` folder) in turn, ``runs``
    each, in each mode: best and median wall and CPU, and this one's over the other's."""
    import statistics
    import subprocess
    import sys

    here = str(ROOT / "src")
    for mode in ("off", "worker"):
        children = {}
        for label, src in (("this", here), ("other", str(other))):
            env = {**os.environ, "PYTHONPATH": src}
            child = subprocess.Popen(
                [sys.executable, __file__, "--child", mode],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":
                raise SystemExit(f"the {label} checkout's process did not start ({src})")
            children[label] = child
        spent: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
        chunks: dict[str, int] = {}
        load = _load()
        for run in range(runs):
            for label in ("this", "other") if run % 2 == 0 else ("other", "this"):
                child = children[label]
                assert child.stdin is not None
                assert child.stdout is not None
                child.stdin.write("go\n")
                child.stdin.flush()
                wall, cpu, stored = child.stdout.readline().split()
                spent[label].append((float(wall), float(cpu)))
                chunks[label] = int(stored)
        for child in children.values():
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
        label = "one thread" if mode == "off" else "as the worker ingests"
        print(f"{label}, {runs} ingests each in turn (load {load} to {_load()}):")
        figures = {}
        for name, pairs in spent.items():
            walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
            figures[name] = (
                min(walls),
                statistics.median(walls),
                min(cpus),
                statistics.median(cpus),
            )
            best, median, cpu_best, cpu_median = figures[name]
            print(
                f"  {name:<6} wall best {best * 1000:6.1f} ms ({chunks[name] / best:,.0f}/s),"
                f" median {median * 1000:6.1f} ms ({chunks[name] / median:,.0f}/s);"
                f" CPU best {cpu_best * 1000:6.1f}, median {cpu_median * 1000:6.1f} ms"
            )
        ratios = ", ".join(
            f"{a / b:.2f}" for a, b in zip(figures["this"], figures["other"], strict=True)
        )
        print(f"  this / other: wall best, median; CPU best, median: {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2000, help="rows for the write-layer figure")
    parser.add_argument(
        "--digest", action="store_true", help="only print the hash of the rows the fixtures store"
    )
    parser.add_argument(
        "--helper", action="store_true", help="with --digest: split batches with the helper"
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="SRC",
        help="compare with another checkout's src folder, ingests taking turns (--runs each)",
    )
    parser.add_argument(
        "--instructions",
        type=Path,
        nargs="?",
        const=Path(),
        metavar="SRC",
        help="count the instructions of a warm ingest (valgrind), and of another checkout's",
    )
    parser.add_argument("--child", choices=("off", "worker"), help=argparse.SUPPRESS)
    parser.add_argument("--loop", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    if args.loop is not None:
        _loop(args.loop)
        return
    if not FIXTURE.exists():
        print("(real transcript fixture absent: nothing to measure)")
        return
    if args.digest:
        digest(args.helper)
        return
    if args.against:
        against(args.against, args.runs)
        return
    if args.instructions is not None:
        instructions(args.instructions if args.instructions != Path() else None)
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    stored(args.runs)  # first: its cold ingest must be the process's first
    from memlane.capture.transcript import iter_turns
    from memlane.capture.units import iter_units

    def parse_and_cut() -> list[object]:
        return list(iter_units(list(iter_turns(str(FIXTURE)))))

    count = len(parse_and_cut())
    seconds = best_of(args.runs, parse_and_cut)
    print(f"parse + units (best of {args.runs}): {count} units in {seconds * 1000:.1f} ms")
    print(f"  {count / seconds:,.0f} units/s (what the stored ingest cuts; target >= 5,000 stored)")
    prefilter()
    write_layer(args.rows)


if __name__ == "__main__":
    main()
