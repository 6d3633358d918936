"""Worker benchmarks: warm /api/recall latency and a bounded loopback load test.

Run: ``.venv/bin/python benchmarks/worker_bench.py [--memories 100000] [--clients 50]
[--duration 30] [--mode keyword]``

A real ``memlane serve`` process is started on a temporary home filled with
``--memories`` varied memories (inserted through the store: set-up only).

1. **Recall p50/p95** — ``POST /api/recall`` through a stdlib client with a new
   connection per call (what a short-lived client pays), warm, on a worker without
   rate limits. Target p50 <= 25 ms. (Hooks reach the worker through the relay
   socket instead: ``benchmarks/hooks_bench.py``.)
2. **Load** — ``--clients`` threads hammer the worker for ``--duration`` seconds
   with a mix of recall (POST) and search (GET), against the default rate limits
   (200/min). Expected: nothing but 200s and 429s. Reported: counts per status,
   errors, p50/p99 latency of each status. A second round without limits shows
   raw throughput.

Numbers are printed (and written to benchmarks/results/worker.json), not asserted.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Topic words plus a Zipf-distributed synthetic vocabulary, so that a query matches a
# realistic fraction of memories (with 50 words every memory would match every query).
TOPICS = [
    "payment",
    "retry",
    "idempotency",
    "invoice",
    "webhook",
    "stripe",
    "timeout",
    "queue",
    "worker",
    "cache",
    "redis",
    "migration",
    "schema",
    "index",
    "postgres",
    "sqlite",
    "vector",
    "embedding",
    "search",
    "ranking",
    "fusion",
    "chunk",
    "transcript",
    "session",
    "summary",
    "checkpoint",
    "hook",
    "latency",
    "budget",
    "watchdog",
    "privacy",
    "secret",
    "refactor",
    "parser",
    "tokenizer",
    "unicode",
    "bigram",
    "dashboard",
    "cookie",
    "header",
    "origin",
    "deploy",
    "docker",
    "kubernetes",
    "helm",
    "terraform",
    "region",
    "bucket",
    "lambda",
    "cron",
    "backup",
    "restore",
]
VOCAB = TOPICS + [f"w{n}x" for n in range(20_000)]
CUM_WEIGHTS = list(itertools.accumulate(1.0 / (rank + 10) for rank in range(len(VOCAB))))
PROJECT = "bench-api"


def env_for(home: Path, mode: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MEMLANE_HOME=str(home),
        MEMLANE_WORKER_AUTOSTART="false",
        MEMLANE_MAINTENANCE_ENABLED="false",
        MEMLANE_EMBEDDER="none" if mode == "keyword" else "use",
        MEMLANE_SEARCH_MODE=mode,
    )
    env.pop("MEMLANE_DB", None)
    return env


def fill(home: Path, count: int) -> float:
    """Insert ``count`` varied memories; returns the seconds it took."""
    os.environ["MEMLANE_HOME"] = str(home)
    from memlane import privacy
    from memlane.models import NewMemory, utcnow
    from memlane.service import open as open_memory

    rng = random.Random(7)
    kinds = [("observation", "command"), ("turn", "turn"), ("knowledge", "decision")]
    started = time.perf_counter()
    with open_memory() as memory:
        now = utcnow()
        with memory.store.transaction():
            for i in range(count):
                text = " ".join(rng.choices(VOCAB, cum_weights=CUM_WEIGHTS, k=40)) + f" item{i}"
                kind, type_ = kinds[i % 3]
                memory.store.insert_memory(
                    NewMemory(
                        project=PROJECT if i % 4 else "other-project",
                        kind=kind,
                        type=type_,
                        content=text,
                        normalized_hash=privacy.normalized_hash(text),
                        created_at=now,
                        title=text[:60],
                        session_id=f"bench-{i // 50}",
                    )
                )
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Worker:
    """A real `memlane serve` subprocess."""

    def __init__(self, home: Path, mode: str, rate: int, write_rate: int) -> None:
        from memlane.paths import StatePaths

        self.paths = StatePaths(home, home, home / "logs", home / "run")
        self.log = (home / "serve.out").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlane", "serve", "--port", str(free_port()),
             "--rate-limit", str(rate), "--write-rate-limit", str(write_rate)],
            env=env_for(home, mode), stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        from memlane.runtime import read_runtime, read_token

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            info = read_runtime(self.paths)
            if info is not None and info.pid == self.proc.pid:
                self.port = info.port
                self.token = read_token(self.paths) or ""
                return
            if self.proc.poll() is not None:
                raise SystemExit(f"worker exited: {(home / 'serve.out').read_text()}")
            time.sleep(0.05)
        raise SystemExit("worker did not start")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self.log.close()
        text = Path(self.log.name).read_text(encoding="utf-8", errors="replace")
        if "Traceback" in text:
            print("worker log:\n" + text[-4000:], file=sys.stderr)


def prompts(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        "how did we handle "
        + " ".join(rng.choices(VOCAB, cum_weights=CUM_WEIGHTS, k=rng.randint(2, 5)))
        for _ in range(n)
    ]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def health_latency(worker: Worker, runs: int) -> float:
    """p50 of GET /health on a new connection each time: the HTTP floor under recall."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=5)
        conn.request("GET", "/health", headers={"Host": f"127.0.0.1:{worker.port}"})
        conn.getresponse().read()
        conn.close()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def embed_all(home: Path) -> float:
    """Embed every memory with the default model before the worker starts (hybrid runs)."""
    os.environ["MEMLANE_HOME"] = str(home)
    from memlane.service import open as open_memory

    started = time.perf_counter()
    with open_memory() as memory:
        memory.embed_backfill(model="use", batch=128)
    return time.perf_counter() - started


def engine_latency(home: Path, runs: int, mode: str) -> float:
    """p50 of Memory.recall in-process (no HTTP): the search engine's share."""
    os.environ["MEMLANE_HOME"] = str(home)
    os.environ["MEMLANE_EMBEDDER"] = "none" if mode == "keyword" else "use"
    from memlane.service import open as open_memory

    with open_memory() as memory:
        texts = prompts(runs)
        for text in texts[:10]:
            memory.recall(text, project=PROJECT, mode=mode)
        times = []
        for text in texts:
            start = time.perf_counter()
            memory.recall(text, project=PROJECT, mode=mode)
            times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def recall_once(worker: Worker, prompt: str, timeout: float = 5.0) -> list[Any] | None:
    """POST /api/recall on a new connection; the hits, or None when it failed."""
    conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=timeout)
    try:
        conn.request(
            "POST",
            "/api/recall",
            body=json.dumps({"prompt": prompt, "project": PROJECT}),
            headers={
                "Authorization": f"Bearer {worker.token}",
                "Host": f"127.0.0.1:{worker.port}",
                "Content-Type": "application/json",
            },
        )
        response = conn.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    if response.status != 200:
        return None
    hits = json.loads(body).get("hits")
    return hits if isinstance(hits, list) else None


def recall_latency(worker: Worker, runs: int) -> dict[str, Any]:
    for text in prompts(20, seed=3):  # warm-up: caches, first-use imports
        recall_once(worker, text)
    times: list[float] = []
    empty = failures = 0
    for text in prompts(runs):
        start = time.perf_counter()
        hits = recall_once(worker, text)
        times.append((time.perf_counter() - start) * 1000)
        if hits is None:
            failures += 1
        elif not hits:
            empty += 1
    return {
        "runs": runs,
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(pct(times, 0.95), 2),
        "max_ms": round(max(times), 2),
        "failures": failures,
        "empty": empty,
    }


def load(worker: Worker, clients: int, duration: float) -> dict[str, Any]:
    """``clients`` threads, each with its own keep-alive connection, for ``duration`` s."""
    results: list[tuple[int, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + duration
    texts = prompts(500, seed=5)
    headers = {
        "Authorization": f"Bearer {worker.token}",
        "Host": f"127.0.0.1:{worker.port}",
        "Content-Type": "application/json",
    }

    def client(idx: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=30)
        mine: list[tuple[int, float]] = []
        i = idx
        while time.monotonic() < stop_at:
            i += clients
            text = texts[i % len(texts)]
            start = time.perf_counter()
            try:
                if i % 2:
                    body = json.dumps({"prompt": text, "project": PROJECT})
                    conn.request("POST", "/api/recall", body=body, headers=headers)
                else:
                    path = "/api/search?limit=5&q=" + text.split()[-1]
                    conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                mine.append((response.status, (time.perf_counter() - start) * 1000))
            except (OSError, http.client.HTTPException) as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=30)
        conn.close()
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    by_status: dict[str, list[float]] = {}
    for status, ms in results:
        by_status.setdefault(str(status), []).append(ms)
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": len(results),
        "per_second": round(len(results) / elapsed, 1),
        "errors": len(errors),
        "error_samples": errors[:5],
        "statuses": {
            status: {
                "count": len(ms),
                "p50_ms": round(statistics.median(ms), 2),
                "p99_ms": round(pct(ms, 0.99), 2),
            }
            for status, ms in sorted(by_status.items())
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--mode", choices=("keyword", "hybrid"), default="keyword")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memlane-worker-bench-"))
    report: dict[str, Any] = {"memories": args.memories, "mode": args.mode}
    try:
        home = tmp / "home"
        report["fill_seconds"] = round(fill(home, args.memories), 1)
        print(f"filled {args.memories} memories in {report['fill_seconds']} s", flush=True)

        if args.mode == "hybrid":
            report["embed_seconds"] = round(embed_all(home), 1)
            print(f"embedded every memory in {report['embed_seconds']} s", flush=True)
        report["engine_recall_p50_ms"] = engine_latency(home, 100, args.mode)
        print(f"Memory.recall in-process p50: {report['engine_recall_p50_ms']} ms", flush=True)
        worker = Worker(home, args.mode, rate=0, write_rate=0)
        try:
            report["recall"] = recall_latency(worker, args.runs)
            report["recall"]["health_p50_ms"] = health_latency(worker, 100)
            print("recall (hook client, new connection per call):", report["recall"], flush=True)
            report["load_unlimited"] = load(worker, args.clients, min(args.duration, 10.0))
            print("load, no rate limit:", json.dumps(report["load_unlimited"]), flush=True)
        finally:
            worker.stop()

        worker = Worker(home, args.mode, rate=200, write_rate=60)
        try:
            report["load_default_limits"] = load(worker, args.clients, args.duration)
            print("load, default limits:", json.dumps(report["load_default_limits"]), flush=True)
        finally:
            worker.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "worker.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
