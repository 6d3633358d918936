"""The injection log through real hook processes: in a hook's own process, relayed to a
worker, read back with the real `memlane log` / `stats` / `feedback` commands."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from memlane.service import Memory
from memlane.text import estimate_tokens
from memlane.worker.relay_server import HookRelay
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_hook_relay import handled, launch_hook
from tests.test_hooks import hook, log_lines, rows

RETRY = "Payment retries reuse the idempotency key when the Stripe webhook times out"
BACKOFF = "The Stripe webhook handler backs off exponentially between retries"
ASKED = "why does the stripe webhook retry reuse the idempotency key?"
ENTRY_SQL = (
    "SELECT id, session_id, event, prompt_number, mode, relayed, hook_ms, chars, tokens,"
    " prompt, text, cleared FROM injections ORDER BY id"
)


def prompt(session: str, cwd: Path, text: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": text,
        }
    ).encode()


def start(session: str, cwd: Path) -> bytes:
    return json.dumps(
        {"session_id": session, "cwd": str(cwd), "hook_event_name": "SessionStart"}
    ).encode()


def injected(stdout: bytes) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"])


def ok(done: subprocess.CompletedProcess[bytes]) -> bytes:
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b"", done.stderr.decode()
    return done.stdout


def entries(home: Path) -> list[dict[str, Any]]:
    names = [
        "id",
        "session_id",
        "event",
        "prompt_number",
        "mode",
        "relayed",
        "hook_ms",
        "chars",
        "tokens",
        "prompt",
        "text",
        "cleared",
    ]
    return [dict(zip(names, row, strict=True)) for row in rows(home, ENTRY_SQL)]


def shown(home: Path, entry_id: int) -> list[int]:
    found = rows(
        home,
        "SELECT memory_id FROM injected_memories WHERE injection_id = ? ORDER BY rank",
        (entry_id,),
    )
    return [r[0] for r in found]


def quiet(home: Path) -> dict[str, int]:
    found = rows(home, "SELECT event, sum(count) FROM quiet_hooks GROUP BY event")
    return {r[0]: r[1] for r in found}


def cli(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args],
        env=run_env(home),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def seed(memory: Memory) -> tuple[int, int]:
    a = memory.save(RETRY, project="billing-api", type="decision").id
    b = memory.save(BACKOFF, project="billing-api", type="lesson").id
    return a, b


def test_a_hook_process_logs_what_it_printed(home: Path, project: Path, memory: Memory) -> None:
    seed(memory)
    started = ok(hook(home, "session-start", start("s1", project), cwd=project))
    asked = ok(hook(home, "user-prompt-submit", prompt("s1", project, ASKED), cwd=project))
    assert ok(hook(home, "user-prompt-submit", prompt("s1", project, "ok"), cwd=project)) == b""
    pack, recalled = injected(started), injected(asked)
    first, second = entries(home)
    assert first["event"] == "session-start" and first["mode"] == "context"
    assert first["prompt_number"] is None and first["chars"] == len(pack)
    assert second["event"] == "user-prompt-submit" and second["prompt_number"] == 1
    assert (second["mode"], second["relayed"], second["cleared"]) == ("keyword", 0, 0)
    assert second["chars"] == len(recalled) and second["tokens"] == estimate_tokens(recalled)
    assert second["text"] == recalled.removeprefix(INJECTED_OPEN).removesuffix(
        INJECTED_CLOSE
    ).strip("\n")
    assert second["prompt"] == ASKED
    assert second["hook_ms"] > 0
    ids = shown(home, second["id"])
    assert ids and RETRY in recalled
    assert quiet(home) == {"user-prompt-submit": 1}  # "ok": counted, not logged
    assert rows(home, "SELECT prompt_count FROM sessions WHERE id = 's1'") == [(2,)]

    # The real commands read it back.
    log = cli(home, "log", cwd=project)
    assert log.returncode == 0, log.stderr
    assert "session s1  session start  context pack · hook process" in log.stdout
    assert "session s1  prompt 1  keyword · hook process" in log.stdout
    assert f"prompt  {ASKED}" in log.stdout
    assert f"shown   #{ids[0]} " in log.stdout
    # Each memory's relevance is in the log, not in the prompt (its room is for memories).
    assert re.search(rf"shown   #{ids[0]} [01]\.\d\d", log.stdout), log.stdout
    assert "relevance" not in recalled
    assert "2 injections" in log.stdout
    full = cli(home, "log", "--full", "--last", "1", cwd=project)
    assert "session start" not in full.stdout and RETRY in full.stdout
    data = json.loads(cli(home, "log", "--json", "--session", "s1", cwd=project).stdout)
    assert [e["event"] for e in data["injections"]] == ["session-start", "user-prompt-submit"]
    assert data["injections"][1]["memories"][0]["memory_id"] == ids[0]
    stats = cli(home, "stats", cwd=project)
    assert "injected   1 of 2 prompts (50%), 1 of 1 session starts" in stats.stdout
    assert f"tokens     {first['tokens'] + second['tokens']} injected in 1 session" in stats.stdout

    # Marked noise, the same question injects nothing any more.
    marked = cli(home, "feedback", str(ids[0]), "--noise", cwd=project)
    assert marked.returncode == 0, marked.stderr
    assert f"marked #{ids[0]} noise (injection #{second['id']}" in marked.stdout
    again = ok(hook(home, "user-prompt-submit", prompt("s1", project, ASKED), cwd=project))
    assert RETRY not in again.decode()
    assert all(ids[0] not in shown(home, e["id"]) for e in entries(home)[2:])
    assert f"#{ids[0]} " in cli(home, "log", cwd=project).stdout
    assert "(noise)" in cli(home, "log", cwd=project).stdout


def test_cli_errors_are_one_line(home: Path, project: Path, memory: Memory) -> None:
    a, _ = seed(memory)
    done = cli(home, "feedback", str(a), "--noise", cwd=project)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().startswith("error: memory") and "never recalled" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.returncode == 6  # a conflict: the memory exists, nothing to relate a mark to
    done = cli(home, "feedback", "99999", "--useful", cwd=project)
    assert done.returncode == 3 and "no memory with id 99999" in done.stderr
    done = cli(home, "feedback", str(a), cwd=project)
    assert done.returncode == 2 and "--useful or --noise" in done.stderr
    both = cli(home, "feedback", str(a), "--noise", "--useful", cwd=project)  # the last won
    assert both.returncode == 2 and "--useful and --noise exclude each other" in both.stderr
    empty = cli(home, "log", cwd=project)
    assert empty.returncode == 0 and "nothing injected yet" in empty.stdout


def test_a_failing_log_write_costs_the_agent_nothing(
    home: Path, project: Path, memory: Memory
) -> None:
    seed(memory)
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE injected_memories")
        conn.execute("DROP TABLE injections")
    asked = ok(hook(home, "user-prompt-submit", prompt("s1", project, ASKED), cwd=project))
    assert RETRY in injected(asked)  # printed before the write was tried
    assert len(log_lines(home)) == 1 and "injections" in log_lines(home)[0]
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'prompt'") == [(1,)]


def test_installed_command_without_a_worker_logs_in_process(
    home: Path, project: Path, memory: Memory
) -> None:
    seed(memory)
    done = launch_hook(home, "user-prompt-submit", prompt("s1", project, ASKED), cwd=project)
    assert RETRY in injected(ok(done))
    (entry,) = entries(home)
    assert entry["relayed"] == 0 and entry["prompt_number"] == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sockets")
def test_relayed_hooks_are_logged_by_the_worker_after_answering(
    home: Path, project: Path, memory: Memory, relay_worker: HookRelay
) -> None:
    seed(memory)
    started = ok(launch_hook(home, "session-start", start("s2", project), cwd=project))
    asked = ok(launch_hook(home, "user-prompt-submit", prompt("s2", project, ASKED), cwd=project))
    quiet_prompt = prompt("s2", project, "/compact")
    assert ok(launch_hook(home, "user-prompt-submit", quiet_prompt, cwd=project)) == b""
    assert handled(home, relay_worker) == 3  # the flush waits for the deferred writes too
    first, second = entries(home)
    assert (first["event"], first["relayed"], first["chars"]) == (
        "session-start",
        1,
        len(injected(started)),
    )
    assert (second["relayed"], second["prompt_number"], second["prompt"]) == (1, 1, ASKED)
    assert second["chars"] == len(injected(asked))
    assert second["mode"] in ("keyword", "hybrid")
    assert shown(home, second["id"])
    assert quiet(home) == {"user-prompt-submit": 1}
    log = cli(home, "log", "--session", "s2", cwd=project)
    assert "prompt 1" in log.stdout and "· worker" in log.stdout
