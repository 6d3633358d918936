"""Cold start of ``memlane mcp`` to the first tool result (printed, not asserted).

Run: ``.venv/bin/python benchmarks/mcp_bench.py [--runs 7] [--memories 10000]``

Editors start the MCP server when they launch, so its start-up is on the user's
path. Measured, each as a median over ``--runs`` fresh processes started the way
editors start them (the command ``memlane setup`` writes):

1. spawn -> initialized (handshake done), -> tools listed, -> first ``search``
   result (keyword mode, N memories in the database);
2. the bare interpreter (``python -c pass``) and ``import memlane.mcp_server``
   alone, to show where the time goes;
3. warm ``search`` latency over the open session (median and p95 of 50 calls);
4. whether numpy was imported by the time the first keyword search answered
   (it must not be: the embedder loads only for hybrid/semantic search).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memlane.integrations.editors import server_command

WORD_TEXT = (
    "payment retry idempotency key invoice webhook stripe timeout queue worker cache redis"
    " migration schema index postgres sqlite vector embedding search ranking fusion chunk"
    " transcript session summary checkpoint hook latency budget watchdog privacy secret"
)
WORDS = WORD_TEXT.split()


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(MEMLANE_HOME=str(home), MEMLANE_WORKER_AUTOSTART="false")
    env.pop("MEMLANE_DB", None)
    return env


def fill(home: Path, count: int) -> None:
    """Create ``count`` memories in project ``bench`` (through the facade, in one process)."""
    code = (
        "import random, sys\n"
        "from memlane.service import open as o\n"
        f"words = {WORDS!r}\n"
        "rng = random.Random(7)\n"
        "with o() as m, m.store.transaction():\n"
        f"    for i in range({count}):\n"
        "        m.save(' '.join(rng.choices(words, k=24)) + f' #{i}', project='bench',"
        " type='discovery')\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env_for(home), check=True)


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


async def one_start(home: Path, warm_calls: int) -> dict[str, Any]:
    command, args = server_command()
    params = StdioServerParameters(command=command, args=args, env=env_for(home), cwd=home)
    marks: dict[str, Any] = {}
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=60, mode="legacy") as client:
        marks["initialized"] = time.perf_counter() - start
        await client.list_tools()
        marks["listed"] = time.perf_counter() - start
        result = await client.call_tool(
            "search", {"query": "idempotency webhook", "project": "bench", "mode": "keyword"}
        )
        marks["first_result"] = time.perf_counter() - start
        assert not result.is_error, result.content
        latencies = []
        for i in range(warm_calls):
            query = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]}"
            t0 = time.perf_counter()
            await client.call_tool("search", {"query": query, "project": "bench"})
            latencies.append(time.perf_counter() - t0)
        marks["warm"] = latencies
    return marks


def numpy_after_first_search(home: Path) -> bool:
    code = (
        "import sys, anyio\n"
        "from memlane.mcp_server import build_server\n"
        "from memlane.service import open as o\n"
        "from mcp import Client\n"
        "async def main():\n"
        "    async with Client(build_server(o)) as c:\n"
        "        await c.call_tool('search', {'query': 'retry', 'project': 'bench'})\n"
        "anyio.run(main)\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env_for(home), capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-mcp-bench-") as tmp:
        home = Path(tmp)
        t0 = time.perf_counter()
        fill(home, options.memories)
        print(f"filled {options.memories} memories in {time.perf_counter() - t0:.1f} s")
        env = env_for(home)
        bare, imports, starts = [], [], []
        for run in range(options.runs):
            bare.append(timed([sys.executable, "-c", "pass"], env))
            imports.append(timed([sys.executable, "-c", "import memlane.mcp_server"], env))
            starts.append(anyio.run(one_start, home, 50 if run == 0 else 0))
        warm = sorted(starts[0]["warm"])
        report = {
            "memories": options.memories,
            "runs": options.runs,
            "python_bare_s": round(statistics.median(bare), 3),
            "import_mcp_server_s": round(statistics.median(imports), 3),
            "spawn_to_initialized_s": round(statistics.median(s["initialized"] for s in starts), 3),
            "spawn_to_tools_listed_s": round(statistics.median(s["listed"] for s in starts), 3),
            "spawn_to_first_search_result_s": round(
                statistics.median(s["first_result"] for s in starts), 3
            ),
            "warm_search_median_ms": round(statistics.median(warm) * 1000, 2),
            "warm_search_p95_ms": round(warm[int(len(warm) * 0.95) - 1] * 1000, 2),
            "numpy_loaded_by_keyword_search": numpy_after_first_search(home),
        }
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
