"""Hook latency and transcript ingest benchmarks (printed, not asserted).

Run: ``.venv/bin/python benchmarks/hooks_bench.py [--memories 50000] [--runs 21]``

1. Wall time of the hooks (user-prompt-submit with keyword recall, session-start,
   post-tool-use) with N memories in the database, each divided by the wall time of
   a bare ``python -c pass`` measured in the same run (medians, interleaved so
   machine load hits all alike). Target <= 1.5x. Measured twice: with no worker
   (the hook runs in its own process; the command ``memlane setup`` installs, the
   Claude Code plugin's command (``plugin/hooks/memlane-hook``, which runs the same
   launcher) and the ``memlane hook`` console script) and with the worker running (the
   installed command relays the hook to it: the normal case once SessionStart has
   started the worker).
2. Ingest of the real 2.7 MB Claude Code transcript (../shared fixtures): parse +
   units + derived observations, then what one Stop does with the whole transcript
   (ingest, summary, checkpoint; target <= 2 s); then the Stop hook itself through the
   command ``memlane setup`` installs, each run a new session (the whole transcript):
   relayed to a warm worker (the normal case) and, alternating with it in the same
   minutes, run in its own process (``MEMLANE_RELAY=0``: what it costs without a
   worker). The hook ends when the units are stored (target >= 5,000 units/s).
3. Peak RSS of ingesting a 100 MB synthetic transcript (target < 150 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared_fixtures import FIXTURE

ROOT = Path(__file__).resolve().parents[1]
# The Claude Code plugin's hook command (plugin/hooks/hooks.json runs it).
PLUGIN_HOOK = ROOT / "plugin" / "hooks" / "memlane-hook"
WORD_TEXT = (
    "payment retry idempotency key invoice webhook stripe timeout queue worker cache redis"
    " migration schema index postgres sqlite vector embedding search ranking fusion chunk"
    " transcript session summary checkpoint hook latency budget watchdog privacy secret"
    " refactor parser tokenizer unicode bigram dashboard token cookie header origin"
)
# The prompt every prompt-hook benchmark asks (its words are among WORDS).
PROMPT = "why does the payment retry use an idempotency key with the webhook?"
WORDS = WORD_TEXT.split()


def vocabulary(size: int) -> tuple[list[str], list[float]]:
    """``size`` words with Zipf weights (1/rank), the benchmark's words first.

    ``size`` = len(WORDS) gives the worst case for full-text search: every query
    word is in about half of all memories, so BM25 statistics read long posting
    lists. A few thousand words gives document frequencies closer to a real store.
    """
    import random

    rng = random.Random(11)
    words = list(WORDS)
    while len(words) < size:
        words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)))
    if size <= len(WORDS):
        return words[:size], [1.0] * size
    rng.shuffle(words)  # the benchmark's words get ordinary ranks, not the top ones
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MEMLANE_HOME=str(home), MEMLANE_WORKER_AUTOSTART="false", MEMLANE_MAINTENANCE_ENABLED="0"
    )
    env.pop("MEMLANE_DB", None)
    return env


def fill(home: Path, count: int, project: str, vocab_size: int = len(WORDS)) -> None:
    """Insert ``count`` varied memories through the store (fast path for set-up only)."""
    import random

    os.environ["MEMLANE_HOME"] = str(home)
    import itertools

    from memlane import privacy
    from memlane.models import NewMemory, utcnow
    from memlane.service import open as open_memory

    words, weights = vocabulary(vocab_size)
    cumulative = list(itertools.accumulate(weights))
    rng = random.Random(7)
    kinds = [("observation", "command"), ("turn", "turn"), ("knowledge", "decision")]
    with open_memory() as memory:
        now = utcnow()
        with memory.store.transaction():
            for i in range(count):
                text = " ".join(rng.choices(words, cum_weights=cumulative, k=40)) + f" item{i}"
                kind, type_ = kinds[i % 3]
                memory.store.insert_memory(
                    NewMemory(
                        project=project if i % 4 else "other-project",
                        kind=kind,
                        type=type_,
                        content=text,
                        normalized_hash=privacy.normalized_hash(text),
                        created_at=now,
                        title=text[:60],
                        session_id=f"bench-{i // 50}",
                    )
                )


def timed(cmd: list[str], env: dict[str, str], stdin: bytes | None, cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr.decode()[:500]}")
    return elapsed


def start_worker(
    env: dict[str, str], cwd: Path, python: str = sys.executable
) -> subprocess.Popen[bytes]:
    """`memlane serve` of ``python``'s venv in the background; returns once it answers."""
    from memlane.hooks.relay import relay

    exe = str(Path(python).parent / "memlane")
    proc = subprocess.Popen(
        [exe, "serve"], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    probe = json.dumps({"session_id": "probe", "cwd": str(cwd), "prompt": "/x"}).encode()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if relay("user-prompt-submit", probe, environ=env, timeout_s=1.0) is not None:
            return proc
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the worker of {python} did not start")


def warm_up(env: dict[str, str], prompt: dict[str, str]) -> None:
    """Relay prompts until the worker answers fast (its model and vectors are loaded)."""
    from memlane.hooks.relay import relay

    data = json.dumps(prompt).encode()
    deadline = time.monotonic() + 120
    fast = 0
    while fast < 3 and time.monotonic() < deadline:
        t0 = time.perf_counter()
        relay("user-prompt-submit", data, environ=env, timeout_s=30)
        fast = fast + 1 if time.perf_counter() - t0 < 0.1 else 0
        time.sleep(0.2)


def latency(memories: int, runs: int, vocab_size: int, hybrid: bool = False) -> None:
    from memlane.integrations import hook_argv

    tmp = Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    worker: subprocess.Popen[bytes] | None = None
    try:
        home, project_dir = tmp / "home", tmp / "billing-api"
        project_dir.mkdir()
        (project_dir / ".git").mkdir()
        env = env_for(home)
        # The plugin's command finds memlane on PATH, as after `pipx install memlane`.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        # Keyword mode: no model in the worker, no background embedding competing for CPU.
        env.update(MEMLANE_SEARCH_MODE="keyword", MEMLANE_EMBEDDER="none")
        t0 = time.perf_counter()
        fill(home, memories, "billing-api", vocab_size)
        print(
            f"\n== {memories} memories over a {vocab_size}-word vocabulary"
            f" (filled in {time.perf_counter() - t0:.1f}s)"
        )
        exe = str(Path(sys.executable).parent / "memlane")
        base = {"session_id": "bench-session", "cwd": str(project_dir)}
        payloads = {
            "post-tool-use": {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "pytest -q"},
                "tool_response": {"stdout": "3 passed", "stderr": ""},
            },
            "prompt, no recall (/cmd)": {
                **base,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "/compact",
            },
            "user-prompt-submit": {
                **base,
                "hook_event_name": "UserPromptSubmit",
                "prompt": PROMPT,
            },
            "session-start": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        }

        def event_of(name: str) -> str:
            return "user-prompt-submit" if name.startswith("prompt") else name

        def cases(console: bool) -> dict[str, tuple[list[str], bytes | None]]:
            out: dict[str, tuple[list[str], bytes | None]] = {
                "python -c pass": ([sys.executable, "-c", "pass"], None)
            }
            for name, payload in payloads.items():
                data = json.dumps(payload).encode()
                out[f"{name} (installed command)"] = (hook_argv(event_of(name)), data)
                out[f"{name} (plugin's command)"] = ([str(PLUGIN_HOOK), event_of(name)], data)
                if console:
                    out[f"{name} (memlane hook)"] = ([exe, "hook", event_of(name)], data)
            return out

        def measure(title: str, table: dict[str, tuple[list[str], bytes | None]]) -> None:
            for cmd, stdin in table.values():  # warm caches, create the session
                timed(cmd, env, stdin, project_dir)
            samples: dict[str, list[float]] = {name: [] for name in table}
            for _ in range(runs):
                for name, (cmd, stdin) in table.items():
                    samples[name].append(timed(cmd, env, stdin, project_dir))
            floor = statistics.median(samples["python -c pass"])
            print(f"\n{title} — median of {runs} runs, {memories} memories in the database:")
            for name, values in samples.items():
                med = statistics.median(values)
                print(f"  {name:44s} {med * 1000:7.1f} ms   ratio {med / floor:5.2f}x")

        measure("no worker: hooks run in-process", cases(console=True))
        worker = start_worker(env, project_dir)
        measure("worker running: hooks relayed to it (the normal case)", cases(console=True))
        if hybrid:
            worker.terminate()
            worker.wait(10)
            worker = None
            hybrid_env = {**env, "MEMLANE_SEARCH_MODE": "hybrid", "MEMLANE_EMBEDDER": "use"}
            t0 = time.perf_counter()
            backfill = subprocess.run(
                [exe, "embed", "--backfill"], env=hybrid_env, capture_output=True, check=False
            )
            if backfill.returncode != 0:
                raise SystemExit(f"embed --backfill failed: {backfill.stderr.decode()[:300]}")
            print(f"\n(embedded {memories} memories in {time.perf_counter() - t0:.0f}s)")
            env = hybrid_env
            worker = start_worker(env, project_dir)
            warm_up(env, payloads["user-prompt-submit"])
            table = cases(console=False)
            measure(
                "worker running, hybrid recall (USE model warm, vectors in memory)",
                {k: v for k, v in table.items() if "user-prompt" in k or "pass" in k},
            )
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def ingest_rate() -> None:
    if not FIXTURE.exists():
        print("\n(real transcript fixture absent: ingest benchmark skipped)")
        return
    from memlane.capture.observations import derived_observations
    from memlane.capture.transcript import iter_turns
    from memlane.capture.units import iter_units

    best = float("inf")
    count = 0
    for _ in range(3):
        t0 = time.perf_counter()
        turns = list(iter_turns(str(FIXTURE)))
        units = list(iter_units(turns))
        derived_observations(turns)
        best = min(best, time.perf_counter() - t0)
        count = len(units)
    size = FIXTURE.stat().st_size / 1e6
    print(f"\nparse + units + observations of the {size:.1f} MB transcript: {count} units")
    print(f"  in {best * 1000:.0f} ms: {count / best:,.0f} units/s, {size / best:.0f} MB/s")
    tmp = Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    try:
        os.environ["MEMLANE_HOME"] = str(tmp)
        from memlane.config import load_settings
        from memlane.service import open as open_memory

        settings, _ = load_settings()
        with open_memory(settings=settings) as memory:
            t0, c0 = time.perf_counter(), time.process_time()
            report = memory.ingest_transcript("bench", str(FIXTURE), project="bench")
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            t1 = time.perf_counter()
            memory.refresh_summary("bench")
            memory.refresh_checkpoint("bench", "done")
            wrap_up = time.perf_counter() - t1
            # The same file as another session, in the same process: the warm rate.
            t2, c2 = time.perf_counter(), time.process_time()
            again = memory.ingest_transcript("bench-warm", str(FIXTURE), project="bench")
            warm, warm_cpu = time.perf_counter() - t2, time.process_time() - c2
        print(
            f"Stop on the whole transcript (privacy filter, units, observations, FTS):"
            f" {report.chunks} units in {elapsed * 1000:.0f} ms (target <= 2,000 ms),"
            f" {report.chunks / elapsed:,.0f} units/s ({report.chunks / cpu:,.0f}/s of CPU),"
            f" then summary and checkpoint in {wrap_up * 1000:.0f} ms;"
            f" warm, as another session: {again.chunks / warm:,.0f} units/s"
            f" ({again.chunks / warm_cpu:,.0f}/s of CPU); load {os.getloadavg()[0]:.1f}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stop_hook_rate(runs: int, stop_only: bool = False) -> None:
    """The installed Stop command on the real transcript: relayed to a warm worker, and in
    its own process, alternating (wall time of the hook process; each run a new session).
    Then a relayed prompt (keyword recall) alone and while a relayed Stop ingests: the
    ingest runs on a thread of its own in the worker, so the prompt shares the GIL with it
    but does not wait for it (not with ``stop_only``)."""
    if not FIXTURE.exists():
        return
    import sqlite3

    from memlane.integrations import hook_argv

    tmp = Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    worker: subprocess.Popen[bytes] | None = None
    try:
        home, project_dir = tmp / "home", tmp / "billing-api"
        (project_dir / ".git").mkdir(parents=True)
        transcript = tmp / "session.jsonl"
        shutil.copyfile(FIXTURE, transcript)
        # As the latency benchmark: no model, so no background embedding of the last
        # run's units competes with the next run (real Stops come minutes apart).
        env = {**env_for(home), "MEMLANE_SEARCH_MODE": "keyword", "MEMLANE_EMBEDDER": "none"}
        local_env = {**env, "MEMLANE_RELAY": "0"}

        def stop_data(session: str) -> bytes:
            data = {
                "session_id": session,
                "transcript_path": str(transcript),
                "cwd": str(project_dir),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "done",
            }
            return json.dumps(data).encode()

        # CPU seconds: the hook processes, the worker, the worker's children (its helper)
        spent = {"hooks": 0.0, "worker": 0.0, "helper": 0.0}

        def stop(session: str, environ: dict[str, str]) -> float:
            hooks, work = children_cpu(), process_cpu(worker.pid) if worker else 0.0
            helping = descendants_cpu(worker.pid) if worker else 0.0
            seconds = timed(hook_argv("stop"), environ, stop_data(session), project_dir)
            spent["hooks"] += children_cpu() - hooks
            spent["worker"] += (process_cpu(worker.pid) if worker else 0.0) - work
            spent["helper"] += (descendants_cpu(worker.pid) if worker else 0.0) - helping
            return seconds

        prompt = {
            "session_id": "prompts",
            "cwd": str(project_dir),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why does the hook relay fall back when the worker does not answer?",
        }

        def ask() -> float:
            data = json.dumps(prompt).encode()
            return timed(hook_argv("user-prompt-submit"), env, data, project_dir)

        def ask_during_stop(session: str) -> float:
            ingesting = subprocess.Popen(
                hook_argv("stop"),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                env=env,
                cwd=project_dir,
            )
            assert ingesting.stdin is not None
            ingesting.stdin.write(stop_data(session))
            ingesting.stdin.close()
            time.sleep(0.04)  # the Stop's process has started and handed it over
            seconds = ask()
            ingesting.wait(60)
            return seconds

        worker = start_worker(env, project_dir)
        # The worker's first ingests: its patterns compiled, its prepare helper started.
        stop("warm-up", env)
        stop("warm-up-2", env)
        passes: list[float] = []
        relayed: list[float] = []
        local: list[float] = []
        loads: list[float] = []
        # [hook processes, worker, its helper]
        cpu = {"relayed": [0.0, 0.0, 0.0], "local": [0.0, 0.0, 0.0]}
        for run in range(runs):
            passes.append(timed([sys.executable, "-c", "pass"], env, None, project_dir))
            for side, environ, times in (("relayed", env, relayed), ("local", local_env, local)):
                before = dict(spent)
                times.append(stop(f"{side}-{run}", environ))
                cpu[side][0] += spent["hooks"] - before["hooks"]
                cpu[side][1] += spent["worker"] - before["worker"]
                cpu[side][2] += spent["helper"] - before["helper"]
            loads.append(os.getloadavg()[0])
        asked: list[float] = []
        asked_busy: list[float] = []
        for run in range(0 if stop_only else runs):
            asked.append(ask())
            asked_busy.append(ask_during_stop(f"busy-{run}"))
        with sqlite3.connect(home / "memlane.db") as db:
            counts = dict(
                db.execute(
                    "SELECT session_id, count(*) FROM memories WHERE kind = 'turn'"
                    " GROUP BY session_id"
                )
            )
        units = counts[f"relayed-{runs - 1}"]
        stored = [counts[f"{side}-{run}"] for side in ("relayed", "local") for run in range(runs)]
        if set(stored) != {units}:
            raise SystemExit(f"the runs stored different unit counts: {sorted(set(stored))}")
        print(
            f"\nStop hook through the installed command, real transcript ({units} units),"
            f" {runs} runs alternating, load {min(loads):.1f}-{max(loads):.1f}:"
        )
        for label, values in (
            ("python -c pass", passes),
            ("relayed to the warm worker (the normal case)", relayed),
            ("in its own process (MEMLANE_RELAY=0)", local),
        ):
            best, med = min(values), statistics.median(values)
            rate = (
                "" if values is passes else f"  {units / best:6,.0f} / {units / med:6,.0f} units/s"
            )
            print(f"  {label:46s} best {best * 1000:6.1f} ms, median {med * 1000:6.1f} ms{rate}")
        print("  (units/s: best / median; target >= 5,000/s stored)")
        for side, label in (("relayed", "relayed"), ("local", "in its own process")):
            hooks, work, helping = (total / runs for total in cpu[side])
            total = hooks + work + helping
            print(
                f"  CPU per Stop, {label}: {total * 1000:.0f} ms"
                f" (hook process {hooks * 1000:.0f} ms, worker {work * 1000:.0f} ms,"
                f" its helper {helping * 1000:.0f} ms): {units / total:,.0f} units per CPU second"
            )
        if stop_only:
            return
        print(
            f"relayed prompt (installed command, keyword recall), median of {runs}:"
            f" {statistics.median(asked) * 1000:.1f} ms alone,"
            f" {statistics.median(asked_busy) * 1000:.1f} ms while a relayed Stop ingests;"
            f" load {os.getloadavg()[0]:.1f}"
        )
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds process ``pid`` used so far (Linux ``/proc``, clock-tick resolution:
    summed over many runs); 0 where there is no ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants_cpu(pid: int) -> float:
    """CPU seconds the live children of process ``pid`` used so far (Linux ``/proc``)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def synthetic_rss(megabytes: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    try:
        path = tmp / "big.jsonl"
        write_synthetic(path, megabytes * 1_000_000)
        code = (
            "import os,resource,sys,time;"
            "from memlane.service import open as o;"
            "m=o();t=time.perf_counter();c=time.process_time();"
            "r=m.ingest_transcript('big',sys.argv[1],project='bench');"
            "print(r.chunks, round(time.perf_counter()-t,1),"
            " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss//1024,"
            " round(time.process_time()-c,1))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            env=env_for(tmp / "home"),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        chunks, wall, cpu = int(out[0]), float(out[1]), float(out[3])
        print(
            f"\n{megabytes} MB synthetic transcript: {chunks} chunks in {wall} s"
            f" ({chunks / wall:,.0f}/s; CPU {cpu} s, {chunks / cpu:,.0f}/s of CPU;"
            f" load {os.getloadavg()[0]:.1f}), peak RSS {out[2]} MB (target < 150 MB)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_synthetic(path: Path, size: int) -> None:
    """A Claude Code-shaped transcript: prompts, tool calls, tool results, answers."""
    written = 0
    i = 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            i += 1
            records = [
                {
                    "type": "user",
                    "sessionId": "big",
                    "uuid": f"u{i}",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "message": {"role": "user", "content": f"step {i}: fix the retry bug"},
                },
                {
                    "type": "assistant",
                    "sessionId": "big",
                    "uuid": f"a{i}",
                    "timestamp": "2026-01-01T00:00:01Z",
                    "message": {
                        "id": f"m{i}",
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Looking at the code. " * 20},
                            {
                                "type": "tool_use",
                                "id": f"t{i}",
                                "name": "Bash",
                                "input": {"command": f"pytest tests/test_{i}.py"},
                            },
                        ],
                    },
                },
                {
                    "type": "user",
                    "sessionId": "big",
                    "uuid": f"r{i}",
                    "timestamp": "2026-01-01T00:00:02Z",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"t{i}",
                                "content": "\n".join(f"line {n} ok" for n in range(60)),
                            }
                        ],
                    },
                },
            ]
            for record in records:
                line = json.dumps(record) + "\n"
                out.write(line)
                written += len(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--synthetic-mb", type=int, default=100)
    parser.add_argument("--stop-runs", type=int, default=11, help="Stop hooks timed each way")
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also measure relayed prompts with hybrid recall (embeds every memory first)",
    )
    parser.add_argument(
        "--vocabulary",
        type=int,
        action="append",
        help=f"words in the filled memories (repeatable; default {len(WORDS)} = worst case, 5000)",
    )
    parser.add_argument("--skip", choices=("latency", "ingest", "rss"), action="append", default=[])
    parser.add_argument(
        "--stop-only", action="store_true", help="only the installed Stop command's rounds"
    )
    args = parser.parse_args()
    if args.stop_only:
        stop_hook_rate(args.stop_runs, stop_only=True)
        return
    if "latency" not in args.skip:
        for vocab_size in args.vocabulary or [len(WORDS), 5000]:
            latency(args.memories, args.runs, vocab_size, args.hybrid)
    if "ingest" not in args.skip:
        ingest_rate()
        stop_hook_rate(args.stop_runs)
    if "rss" not in args.skip:
        synthetic_rss(args.synthetic_mb)
    print(f"\n(self RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)")


if __name__ == "__main__":
    main()
