"""Schemathesis against the worker's OpenAPI (issue 10, item 4): no 5xx, whatever the input.

A real ``memlane serve`` (uvicorn on 127.0.0.1, rate limits off, the toy embedder)
is fuzzed from its own ``/api/openapi.json`` with the bearer token. Every generated
request must get an answer below 500, and the worker's log must hold no traceback.
The quick profile runs the fuzzing and stateful phases with few examples; the full
one adds the coverage phase (boundary and negative values) and more examples.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import MEMLANE_CMD, run_env
from tests.test_reliability_support import full_profile
from tests.test_web_support import serve_process

EXAMPLES = 60 if full_profile() else 8
PHASES = "examples,coverage,fuzzing,stateful" if full_profile() else "fuzzing,stateful"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
# POST /api/feedback marks a memory an injection showed, and no API call makes an
# injection: random ids are refused (404, 409, 422) by design, so schemathesis would warn
# that every case is. It is still fuzzed for server errors like every other route.
FEEDBACK_CONFIG = """
[[operations]]
include-path = "/api/feedback"
warnings = ["missing_auth", "base_url_mismatch", "missing_deserializer", "rate_limited"]
"""


@pytest.fixture
def worker(home: Path) -> Iterator[tuple[str, str, Path]]:
    """(base URL, token, log file) of a running worker with a little data in it."""
    env = run_env(home)
    env["MEMLANE_EMBEDDER"] = "toy"
    env["MEMLANE_CAPTURE_HOME_AND_TMP"] = "true"
    for text in ("the cache parser bug was in the tokenizer", "deploy with make release"):
        subprocess.run([*MEMLANE_CMD, "save", text], env=env, check=True, capture_output=True)
    with serve_process(home, env) as running:
        yield running


def test_no_server_error_on_any_generated_request(
    worker: tuple[str, str, Path], tmp_path: Path
) -> None:
    assert SCHEMATHESIS.exists(), "schemathesis is missing: pip install -e '.[dev]'"
    base, token, log = worker
    auth = {"Authorization": f"Bearer {token}"}
    before = httpx.get(f"{base}/api/stats", headers=auth, timeout=10).json()
    report = tmp_path / "report.json"
    (tmp_path / "schemathesis.toml").write_text(FEEDBACK_CONFIG, encoding="utf-8")
    proc = subprocess.run(
        [
            str(SCHEMATHESIS), "run", f"{base}/api/openapi.json",
            "-H", f"Authorization: Bearer {token}",
            "--checks", "not_a_server_error",
            "--max-examples", str(EXAMPLES),
            "--phases", PHASES,
            # The live feed never ends by design; it has its own tests.
            "--exclude-path", "/api/events",
            "--request-timeout", "30",
            "--seed", "10",
            "--workers", "1",
            "--no-color",
            "--report", "json", "--report-json-path", str(report),
        ],
        capture_output=True, text=True, timeout=1800, cwd=tmp_path,
    )  # fmt: skip
    summary = proc.stdout[-4000:]
    assert proc.returncode == 0, summary
    assert "No issues found" in proc.stdout, summary
    # The token was accepted: generated writes really reached the database.
    after = httpx.get(f"{base}/api/stats", headers=auth, timeout=10).json()
    assert json.dumps(after) != json.dumps(before), (before, after)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text, text[-3000:]
    shutil.rmtree(tmp_path / "schemathesis-report", ignore_errors=True)
