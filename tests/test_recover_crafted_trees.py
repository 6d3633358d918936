"""`memlane recover` over trees it did not make (the s26 probe).

Its error lines printed a crafted file name's escape sequences raw.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import MEMLANE_CMD, run_env, without_dac_override


def record(session: str, cwd: Path, text: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": session,
            "cwd": str(cwd),
            "uuid": f"u-{session}",
            "timestamp": "2026-11-01T00:00:00Z",
            "message": {"role": "user", "content": text},
        }
    )


def transcript(path: Path, session: str, cwd: Path, text: str, *, age: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record(session, cwd, text) + "\n", encoding="utf-8")
    if age:
        os.utime(path, (1_700_000_000 - age, 1_700_000_000 - age))
    return path


def recover(
    home: Path, claude: Path, *, json_out: bool = True, unprivileged: bool = False
) -> subprocess.CompletedProcess[str]:
    """The real `memlane recover` over ``claude`` (``unprivileged``: a root run's DAC
    override dropped, so what mode 000 forbids is forbidden)."""
    codex = claude.parent / "no-codex"
    codex.mkdir(exist_ok=True)
    command = [*(without_dac_override() if unprivileged else []), *MEMLANE_CMD, "recover"]
    command += ["--claude-dir", str(claude), "--codex-dir", str(codex)]
    command += ["--json"] if json_out else []
    env = run_env(home) | {"HOME": str(home)}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def found(home: Path, word: str) -> int:
    done = subprocess.run(
        [*MEMLANE_CMD, "search", word, "--all-projects", "--mode", "keyword", "--json"],
        env=run_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    return len(hits["hits"] if isinstance(hits, dict) else hits)


def test_error_lines_show_a_file_names_escape_sequences(home: Path, tmp_path: Path) -> None:
    claude, work = tmp_path / "claude", tmp_path / "work"
    work.mkdir()
    folder = claude / "p\x1b]0;PWNED\x07"
    # A session id the privacy filter refuses: the error names the file.
    transcript(folder / "evil\nname\x1b[2J.jsonl", "api password=hunter2hunter2", work, "x")
    transcript(folder / "ok.jsonl", "ok", work, "the guava session")
    done = recover(home, claude, json_out=False)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {claude}/p\\x1b]0;PWNED\\x07/evil\\nname\\x1b[2J.jsonl: ")
    assert found(home, "guava") > 0
