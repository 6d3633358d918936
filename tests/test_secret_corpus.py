"""The generated secret corpus through every entry point, then a grep of the raw bytes.

Hundreds of secrets (every key form × quoting × separator of ``tests/secret_cases``,
values from the full printable set, a fixed seed) are saved through:

* the CLI: ``memlane save -`` (content, title, tag) and ``memlane import jsonl``;
* the hooks, as real ``memlane hook`` processes: prompts (UserPromptSubmit),
  PostToolUse of ``Read`` on ``.env``, of Bash ``cat .env``, of Bash with a
  ``--password=`` option, of ``Write`` and ``Edit`` on config files, and Stop,
  which ingests a transcript holding the same (a Read of ``.env``, ``cat .env``);
* HTTP: a real ``memlane serve`` on 127.0.0.1, with its token;
* MCP: a real ``memlane mcp`` process and a client session over stdio.

Every field gets a case's whole text (content, title, tags, files, metadata
values), never a bare value: a random string with nothing around it is not
recognisable as a secret, by principle. Then the database, its WAL and
shared-memory files and every log must hold none of the secrets: as written,
lower-cased (FTS keeps terms so), JSON-escaped, nor the 8-character middle slice
of any of them.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memlane.paths import state_paths
from memlane.runtime import read_runtime, read_token
from memlane.schemas import MAX_TAG_CHARS
from tests.conftest import MEMLANE_CMD, run_env
from tests.secret_cases import FORMS, Case, excluded, seeded_cases
from tests.test_web_support import free_port

# 12 seeded cases of each form; the few a form's documented exclusions take are
# dropped (they are not secrets), at least 300 remain.
CASES = [case for case in seeded_cases(12 * len(FORMS), seed=31337) if not excluded(case)]
SECRETS = [case.secret for case in CASES]
SLICE = 8


def _batches(items: list[Case], size: int) -> Iterator[list[Case]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _env_text(cases: list[Case]) -> str:
    """A dotenv file whose values are the secrets (quoted when they hold a blank)."""
    lines = ["# generated for the secret corpus", "APP_ENV=production"]
    for n, case in enumerate(cases):
        value = case.secret
        if any(c.isspace() for c in value):
            quote = next((q for q in "\"'" if q not in value), "")
            value = f"{quote}{value}{quote}"
        lines.append(f"SETTING_{n}={value}")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------- entry points


def _run(home: Path, args: list[str], stdin: str = "", cwd: Path | None = None) -> str:
    out = subprocess.run(
        [*MEMLANE_CMD, *args], input=stdin, env=run_env(home), cwd=cwd,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout


def _cli(home: Path, work: Path) -> int:
    calls = 0
    for batch in _batches(CASES, 30):
        text = "\n\n".join(case.text for case in batch)
        title = " ".join(batch[0].text.split())[:150]
        _run(home, ["save", "-", "--project", "corpus-cli", "--title", title,
                    "--tag", batch[-1].text], text, work)  # fmt: skip
        calls += 1
    path = work / "corpus.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for n, case in enumerate(CASES):
            record: dict[str, Any] = {
                "text": case.text, "id": f"corpus-{n}", "session": f"import-{n % 7}",
                "project": "corpus-jsonl", "title": case.text[:120], "tags": [case.text],
                "metadata": {"raw": case.text, "nested": [{"output": case.text}]},
            }  # fmt: skip
            handle.write(json.dumps(record) + "\n")
    _run(home, ["import", "jsonl", str(path)], cwd=work)
    return calls + 1


def _hook(home: Path, work: Path, event: str, payload: dict[str, Any]) -> None:
    payload = {"session_id": "corpus-hooks", "cwd": str(work), **payload}
    out = subprocess.run(
        [*MEMLANE_CMD, "hook", event], input=json.dumps(payload), env=run_env(home),
        cwd=work, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert event != "post-tool-use" or out.stdout == "", out.stdout


def _transcript(path: Path, work: Path) -> None:
    """A Claude Code transcript: prompts holding every case, a Read of ``.env`` and
    a ``cat .env.local`` whose results hold every secret."""
    records: list[dict[str, Any]] = []

    def add(role: str, content: list[dict[str, Any]]) -> None:
        n = len(records)
        message: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            message["id"] = f"msg-{n}"
        records.append({"type": role, "uuid": f"u{n}", "sessionId": "corpus-hooks",
                        "cwd": str(work), "message": message})  # fmt: skip

    for batch in _batches(CASES, 40):
        add("user", [{"type": "text", "text": "\n\n".join(case.text for case in batch)}])
        add("assistant", [{"type": "text", "text": "Noted: " + " / ".join(
            case.text.replace("\n", " ") for case in batch[:10])}])  # fmt: skip
    for n, batch in enumerate(_batches(CASES, 60)):
        env = _env_text(batch)
        numbered = "\n".join(f"{i:>6}→{line}" for i, line in enumerate(env.splitlines(), 1))
        add("assistant", [{"type": "tool_use", "id": f"r{n}", "name": "Read",
                           "input": {"file_path": str(work / ".env")}}])  # fmt: skip
        add("user", [{"type": "tool_result", "tool_use_id": f"r{n}", "content": numbered}])
        add("assistant", [{"type": "tool_use", "id": f"c{n}", "name": "Bash",
                           "input": {"command": "cat .env.local"}}])  # fmt: skip
        add("user", [{"type": "tool_result", "tool_use_id": f"c{n}", "content": env}])
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _hooks(home: Path, work: Path) -> int:
    """Every case in prompts and in the transcript the Stop hook ingests; slices of
    the corpus through each kind of PostToolUse event (their stored text is capped,
    so each event carries only what it keeps)."""
    events = 0

    def hook(event: str, payload: dict[str, Any]) -> None:
        nonlocal events
        _hook(home, work, event, payload)
        events += 1

    for batch in _batches(CASES, 60):
        prompt = "Please keep these settings in mind:\n\n" + "\n\n".join(c.text for c in batch)
        hook("user-prompt-submit", {"hook_event_name": "UserPromptSubmit", "prompt": prompt})
    tool = {"hook_event_name": "PostToolUse"}
    env_file = str(work / ".env")
    for batch in list(_batches(CASES, 12))[:10]:  # `cat .env` keeps 12 lines of output
        response = {"stdout": _env_text(batch), "stderr": "", "exit_code": 0}
        hook("post-tool-use", {**tool, "tool_name": "Bash",
             "tool_input": {"command": "cat .env"}, "tool_response": response})  # fmt: skip
    for batch in list(_batches(CASES, 60))[:2]:
        file = {"filePath": env_file, "content": _env_text(batch)}
        hook("post-tool-use", {**tool, "tool_name": "Read", "tool_input": {"file_path": env_file},
             "tool_response": {"type": "text", "file": file}})  # fmt: skip
    bare = [c for c in CASES if not any(ch.isspace() for ch in c.secret)]
    for first, second, third in list(zip(bare[0::3], bare[1::3], bare[2::3], strict=False))[:20]:
        command = f"deploy --region eu --password={first.secret} --yes"
        response = {"stdout": "", "stderr": third.text, "exit_code": 1}
        hook("post-tool-use", {**tool, "tool_name": "Bash", "tool_response": response,
             "tool_input": {"command": command, "description": second.text}})  # fmt: skip
    for n, batch in enumerate(list(_batches(CASES, 4))[:12]):  # Write/Edit keep 500 characters
        content = "\n".join(case.text for case in batch)
        if n % 2:
            edit = {"old_string": batch[0].text, "new_string": content}
            payload = {
                "tool_name": "Edit",
                "tool_input": {"file_path": str(work / "config" / "settings.py"), **edit},
            }
        else:
            payload = {"tool_name": "Write",
                       "tool_input": {"file_path": str(work / "config" / "app.yaml"),
                                      "content": content}}  # fmt: skip
        hook("post-tool-use", {**tool, **payload, "tool_response": {}})
    transcript = work / "transcript.jsonl"
    _transcript(transcript, work)
    hook("stop", {"hook_event_name": "Stop", "transcript_path": str(transcript),
                  "last_assistant_message": CASES[0].text})  # fmt: skip
    return events


class Worker:
    """A real ``memlane serve`` on 127.0.0.1 (rate limits off, toy embedder)."""

    def __init__(self, home: Path) -> None:
        env = run_env(home)
        env["MEMLANE_EMBEDDER"] = "toy"
        self.log = home / "serve.out"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*MEMLANE_CMD, "serve", "--port", str(free_port()), "--rate-limit", "0",
                 "--write-rate-limit", "0"],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        paths = state_paths({"MEMLANE_HOME": str(home)})
        deadline = time.monotonic() + 60
        self.base = ""
        while time.monotonic() < deadline and not self.base:
            info = read_runtime(paths)
            if info is not None:
                try:
                    if httpx.get(f"{info.base_url}/health", timeout=1).status_code == 200:
                        self.base = info.base_url
                except httpx.HTTPError:
                    pass
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited: {self.log.read_text()}")
            time.sleep(0.1)
        assert self.base, "the worker did not come up"
        token = read_token(paths)
        assert token
        self.headers = {"Authorization": f"Bearer {token}"}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def _http(worker: Worker) -> int:
    """Four cases per request: content holds them all, title, tags, files and
    metadata one whole case each."""
    calls = 0
    with httpx.Client(base_url=worker.base, headers=worker.headers, timeout=30) as client:
        for batch in _batches(CASES, 4):
            tag = batch[1 % len(batch)].text  # whole or none, as over MCP below
            body = {
                "content": "\n\n".join(case.text for case in batch), "project": "corpus-http",
                "type": "discovery" if calls % 2 else "note", "title": batch[0].text[:200],
                "tags": [tag] if len(tag) <= MAX_TAG_CHARS else [],
                "files": [batch[-1].text[:500]],
                "metadata": {"raw": batch[2 % len(batch)].text,
                             "nested": {"output": batch[-1].text}},
            }  # fmt: skip
            response = client.post("/api/observations", json=body)
            assert response.status_code in (200, 201), response.text
            calls += 1
    return calls


def _mcp(home: Path, work: Path) -> int:
    params = StdioServerParameters(
        command=MEMLANE_CMD[0], args=[*MEMLANE_CMD[1:], "--project", "corpus-mcp", "mcp"],
        env=run_env(home), cwd=work,
    )  # fmt: skip

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            for n, case in enumerate(CASES):
                tool = "save_knowledge" if n % 2 else "save_observation"
                # Tags hold at most 100 characters: the whole text or none (a cut
                # text would be a secret out of its context, not a test of masking).
                tags = [case.text] if len(case.text) <= MAX_TAG_CHARS else []
                args: dict[str, Any] = {"content": case.text, "tags": tags}
                if tool == "save_knowledge":
                    args["type"] = "lesson"
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content

    anyio.run(main)
    return len(CASES)


# -------------------------------------------------------------------- checks


def _middle(secret: str) -> str:
    half = len(secret) // 2
    return secret[max(half - SLICE // 2, 0) : max(half - SLICE // 2, 0) + SLICE]


def leaked(files: list[Path], cases: list[Case]) -> dict[str, list[str]]:
    """{file name: secrets found in its bytes}: whole (as written, JSON-escaped, lower
    case) or their middle slice, unless the text around the secrets holds it anyway."""
    around = "\0".join(case.text.replace(case.secret, "\0") for case in cases).lower()
    needles: list[tuple[str, bytes]] = []
    for case in cases:
        secret = case.secret
        escaped = json.dumps(secret)[1:-1]
        for form in dict.fromkeys((secret, escaped, _middle(secret), _middle(escaped))):
            if len(form) >= SLICE and form.lower() not in around:
                needles.append((secret, form.lower().encode("utf-8")))
    found: dict[str, list[str]] = {}
    for path in files:
        data = path.read_bytes().lower()
        hits = sorted({secret for secret, needle in needles if needle in data})
        if hits:
            found[path.name] = hits
    return found


def _stored_files(home: Path) -> list[Path]:
    db = home / "memlane.db"
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    files += [p for p in home.rglob("*") if p.is_file() and p.suffix in (".log", ".out")]
    return [p for p in files if p.exists()]


@pytest.mark.slow
def test_no_generated_secret_reaches_the_disk_through_any_entry_point(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(CASES) >= 300 and len(set(SECRETS)) == len(SECRETS)
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "config").mkdir()
    started = time.monotonic()
    counts: dict[str, str] = {}

    def timed(name: str, run: Any, *args: Any) -> None:
        begun = time.monotonic()
        counts[name] = f"{run(*args)} calls, {time.monotonic() - begun:.0f} s"

    timed("cli", _cli, home, work)
    timed("hooks", _hooks, home, work)
    worker = Worker(home)
    try:
        timed("http", _http, worker)
        timed("mcp", _mcp, home, work)
    finally:
        worker.stop()
    import sqlite3

    with sqlite3.connect(home / "memlane.db") as conn:
        rows = dict(conn.execute("SELECT project, count(*) FROM memories GROUP BY project"))
        sources = {row[0] for row in conn.execute("SELECT DISTINCT source FROM memories")}
    # Every entry point stored something: the grep reads a populated file.
    assert {"corpus-cli", "corpus-jsonl", "work", "corpus-http", "corpus-mcp"} <= set(rows)
    assert {"hook", "transcript", "mcp"} <= sources, sources
    files = _stored_files(home)
    found = leaked(files, CASES)
    seconds = time.monotonic() - started
    names = [p.name for p in files]
    with capsys.disabled():
        print(
            f"\nsecret corpus: {len(CASES)} secrets through {counts} in {seconds:.0f} s,"
            f" {sum(rows.values())} memories; {sum(map(len, found.values()))} found in {names}"
        )
    assert found == {}


def test_the_grep_finds_a_planted_secret_and_its_middle(tmp_path: Path) -> None:
    case = CASES[5]
    whole = tmp_path / "whole.db"
    whole.write_bytes(b"xx" + case.secret.upper().encode() + b"yy")
    middle = tmp_path / "middle.log"
    middle.write_bytes(b"xx" + _middle(case.secret).encode() + b"yy")
    clean = tmp_path / "clean.db"
    clean.write_bytes(b"nothing here [REDACTED:assignment]")
    assert leaked([whole, middle, clean], [case]) == {
        "whole.db": [case.secret],
        "middle.log": [case.secret],
    }
