"""The relayed prompt hook of two memlane trees side by side (printed, not asserted).

Run: ``.venv/bin/python benchmarks/hook_ab.py --other ../base/.venv/bin/python
[--vocabulary 43] [--memories 50000] [--runs 30] [--rounds 3]``

One database is filled (as ``hooks_bench.py`` fills it) and copied; a worker of this
tree serves one copy and a worker of the other tree (``--other``: the interpreter of
its virtualenv) the other. Each round then interleaves a bare ``python -c pass`` and
the installed prompt hook of each tree (the order of the two alternating), so machine
load hits all three alike: the medians, each hook's ratio to the bare interpreter, and
each worker's CPU per prompt (its writes after the answer included; Linux ``/proc``).
Keyword recall, no model, as in ``hooks_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hooks_bench import PROMPT, WORDS, env_for, fill, process_cpu, start_worker, timed


def hook_command(python: str) -> list[str]:
    """The prompt hook command ``memlane setup`` installs for the tree of ``python``."""
    code = (
        "import json; from memlane.integrations import hook_argv"
        "; print(json.dumps(hook_argv('user-prompt-submit')))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, check=True, text=True)
    return list(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", required=True, help="the other tree's virtualenv python")
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--vocabulary", type=int, default=len(WORDS))
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from memlane.hooks.relay import flush

    pythons = {"this": sys.executable, "other": str(Path(args.other).absolute())}
    tmp = Path(tempfile.mkdtemp(prefix="memlane-hook-ab-"))
    workers: list[subprocess.Popen[bytes]] = []
    try:
        first = tmp / "this"
        (first / "billing-api" / ".git").mkdir(parents=True)
        t0 = time.perf_counter()
        fill(first / "home", args.memories, "billing-api", args.vocabulary)
        shutil.copytree(first, tmp / "other")
        print(
            f"{args.memories} memories over a {args.vocabulary}-word vocabulary"
            f" (filled in {time.perf_counter() - t0:.0f} s); this tree: {sys.executable},"
            f" other: {pythons['other']}"
        )
        setups = {}
        for name, python in pythons.items():
            env = env_for(tmp / name / "home")
            env.update(MEMLANE_SEARCH_MODE="keyword", MEMLANE_EMBEDDER="none")
            env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
            cwd = tmp / name / "billing-api"
            payload = {
                "session_id": "bench-session",
                "cwd": str(cwd),
                "hook_event_name": "UserPromptSubmit",
                "prompt": PROMPT,
            }
            workers.append(start_worker(env, cwd, python))
            setups[name] = (hook_command(python), env, cwd, json.dumps(payload).encode())
        bare = [sys.executable, "-c", "pass"]
        for name, (cmd, env, cwd, data) in setups.items():  # warm caches, create the session
            for _ in range(3):
                timed(cmd, env, data, cwd)
        pids = {name: worker.pid for name, worker in zip(setups, workers, strict=True)}
        for round_ in range(1, args.rounds + 1):
            samples: dict[str, list[float]] = {"python -c pass": [], "this": [], "other": []}
            cpu = {name: process_cpu(pid) for name, pid in pids.items()}
            for i in range(args.runs):
                samples["python -c pass"].append(timed(bare, os.environ.copy(), None, tmp))
                for name in ("this", "other") if i % 2 == 0 else ("other", "this"):
                    cmd, env, cwd, data = setups[name]
                    samples[name].append(timed(cmd, env, data, cwd))
            for _name, (_cmd, env, _cwd, _data) in setups.items():
                flush(environ=env)  # the last prompt's writes are done
            floor = statistics.median(samples["python -c pass"])
            print(
                f"\nround {round_}, {args.runs} interleaved samples, load {os.getloadavg()[0]:.1f}:"
            )
            print(f"  python -c pass                 {floor * 1000:6.1f} ms")
            for name in ("this", "other"):
                med = statistics.median(samples[name])
                spent = (process_cpu(pids[name]) - cpu[name]) / args.runs
                print(
                    f"  prompt hook, {name:5s} tree        {med * 1000:6.1f} ms   ratio"
                    f" {med / floor:5.2f}x   worker CPU per prompt {spent * 1000:5.2f} ms"
                )
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
