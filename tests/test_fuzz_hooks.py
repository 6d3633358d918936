"""Hook entry points fed random and malformed payloads (issue 10, item 4).

In-process through ``memlane.hooks.dispatch.run_hook`` with stdin replaced (10,000
payloads in the full profile, 500 in the quick one), plus a sample through real
``memlane hook`` subprocesses: every run returns/exits 0, finishes inside its
event's budget, prints either nothing or a well-formed answer under Claude Code's
10,000-character cap, and the database stays consistent.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.hooks.dispatch import MAX_STDIN_BYTES, run_hook
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_reliability_support import check_database, pick, write_transcript

PAYLOADS = pick(500, 10_000)
SUBPROCESS_SAMPLE = pick(12, 60)
OUTPUT_CAP = 10_000

EVENTS = [
    "session-start",
    "user-prompt-submit",
    "post-tool-use",
    "stop",
    "subagent-stop",
    "pre-compact",
    "session-end",
]
AGENT_PREFIXES = ["", "claude-code:", "codex:", "gemini:", "kiro:"]
ODD_EVENTS = ["", "nonsense", "BeforeAgent", "AfterTool", "agentSpawn", "x:stop", "::", "stop\x00"]

TEXT = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
        st.sampled_from(list('<>/"\\{}[]\n\x00日本')),
        st.sampled_from(["<private>", "</private>", "api_key=sk-0123456789abcdefXYZ", " "]),
    ),
    max_size=10,
).map("".join)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), TEXT)
JSON_ANY = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(tmp: Path) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(
            [
                str(tmp / "t.jsonl"),
                str(tmp / "missing.jsonl"),
                str(tmp),
                "/etc/passwd",
                "/dev/null",
                "/dev/zero",
                "",
                "relative/path.jsonl",
            ]
        ),
        TEXT,
        JSON_SCALAR,
    )


def payloads(tmp: Path) -> st.SearchStrategy[bytes]:
    """Mostly plausible Claude Code/Codex/Gemini payloads with hostile field values."""
    fields = st.fixed_dictionaries(
        {},
        optional={
            "session_id": st.one_of(st.sampled_from(["s1", "s2", "s3"]), TEXT, JSON_SCALAR),
            "cwd": st.one_of(st.sampled_from([str(tmp / "proj"), str(tmp)]), TEXT, JSON_ANY),
            "transcript_path": _paths(tmp),
            "agent_transcript_path": _paths(tmp),
            "agent_id": st.one_of(TEXT, JSON_SCALAR),
            "hook_event_name": st.one_of(st.sampled_from(["Stop", "PostToolUse"]), TEXT),
            "prompt": st.one_of(TEXT, JSON_ANY, st.just("please fix the cache bug " * 50)),
            "tool_name": st.one_of(
                st.sampled_from(["Bash", "Read", "Edit", "Write", "Task", "Agent", "shell"]),
                TEXT,
                JSON_SCALAR,
            ),
            "tool_input": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "command": st.one_of(TEXT, st.lists(TEXT, max_size=3)),
                        "file_path": _paths(tmp),
                        "content": TEXT,
                        "old_string": TEXT,
                        "new_string": TEXT,
                    },
                ),
                JSON_ANY,
            ),
            "tool_response": JSON_ANY,
            "source": st.one_of(st.sampled_from(["startup", "resume", "clear"]), TEXT),
            "reason": JSON_SCALAR,
            "last_assistant_message": st.one_of(TEXT, JSON_SCALAR),
            "turn_id": JSON_SCALAR,
            "model": JSON_SCALAR,
        },
    )
    # Well-typed payloads with random text: these get past validation into the handlers.
    wellformed = st.fixed_dictionaries(
        {
            "session_id": st.sampled_from(["s1", "s2", "s3"]),
            "cwd": st.just(str(tmp / "proj")),
        },
        optional={
            "transcript_path": st.sampled_from([str(tmp / "t.jsonl"), "/etc/passwd", "/nope"]),
            "prompt": st.one_of(TEXT, st.just("please fix the cache bug in the parser")),
            "tool_name": st.sampled_from(["Bash", "Read", "Edit", "Write", "Grep", "Task"]),
            "tool_input": st.fixed_dictionaries(
                {},
                optional={
                    "command": TEXT,
                    "file_path": st.one_of(TEXT, st.just(str(tmp / "proj" / "a.py"))),
                    "content": TEXT,
                    "pattern": TEXT,
                    "prompt": TEXT,
                },
            ),
            "tool_response": st.one_of(TEXT, st.dictionaries(st.text(max_size=8), TEXT)),
            "last_assistant_message": TEXT,
            "source": st.sampled_from(["startup", "resume", "clear", "compact"]),
        },
    ).map(lambda d: json.dumps(d).encode())
    as_json = st.one_of(
        fields.map(lambda d: json.dumps(d).encode()),
        fields.map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "replace")),
    )
    return st.one_of(
        wellformed,
        wellformed,
        as_json,
        as_json,
        JSON_ANY.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=200),
        as_json.map(lambda b: b[: len(b) // 2]),  # truncated
        st.just(b"[" * 100_000),  # nesting bomb
        st.just(b'{"prompt": "' + b"\xff" * 50 + b'"}'),  # invalid UTF-8
        st.just(b""),
    )


class Stdin(io.TextIOWrapper):
    """A stdin whose buffer holds ``data`` (what the dispatcher reads)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")


def _run_in_process(event: str, data: bytes) -> tuple[int, str, float]:
    stdin, stdout = sys.stdin, sys.stdout
    captured = io.StringIO()
    sys.stdin = Stdin(data)
    sys.stdout = captured
    start = time.monotonic()
    try:
        code = run_hook(event)
    finally:
        elapsed = time.monotonic() - start
        sys.stdin, sys.stdout = stdin, stdout
    return code, captured.getvalue(), elapsed


def _check_output(out: str) -> None:
    assert len(out) <= OUTPUT_CAP, len(out)
    if out.lstrip().startswith("{"):
        answer = json.loads(out)
        assert isinstance(answer, dict)


# What a bad payload may legitimately produce in the hook log; anything else (a
# TypeError, KeyError, a timeout…) is a bug in a handler even though the hook exited 0.
EXPECTED_FAILURES = {
    "InvalidPayload",
    "JSONDecodeError",
    "UnicodeDecodeError",
    "HookInputError",
    "InvalidInput",
    "NotFound",
    # The watchdog ending a hook at its budget is the contract working (a loaded 2-core
    # CI machine can push SessionEnd past its 1.2 s); the run still exits 0 in time.
    "HookTimeout",
}


def unexpected_failures(home: Path) -> list[str]:
    """Hook log lines whose exception class is not an expected input error (a note such
    as ``hook stop: transcript … not read: …`` names no class)."""
    bad: list[str] = []
    for log in sorted((home / "logs").glob("hooks.log*")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            # "<time> pid=N hook <event>: <ExceptionClass>: message"
            _, _, rest = line.partition(" hook ")
            _, _, tail = rest.partition(": ")
            name = tail.split(":", 1)[0].strip()
            is_class = name.isidentifier() and name[:1].isupper()
            if is_class and name not in EXPECTED_FAILURES:
                bad.append(line[:300])
    return bad


@pytest.fixture
def fuzz_home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Payload cwds live under tmp_path (in /tmp): capture them instead of opting out.
    monkeypatch.setenv("MEMLANE_CAPTURE_HOME_AND_TMP", "true")
    (tmp_path / "proj").mkdir()
    write_transcript(tmp_path / "t.jsonl", turns=30, session_id="s1")
    return home


# SessionEnd hands a pending transcript to a detached process that outlives the hook
# (a real hook process exits without teardown, so Python never warns there).
@pytest.mark.filterwarnings("ignore:subprocess .* is still running:ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_random_payloads_in_process(fuzz_home: Path, tmp_path: Path) -> None:
    seen = {"runs": 0, "answers": 0, "slowest": 0.0}
    canonical = st.tuples(st.sampled_from(AGENT_PREFIXES), st.sampled_from(EVENTS)).map("".join)
    # Mostly real event names (so payloads reach the handlers), sometimes odd ones.
    event_strategy = st.one_of(canonical, canonical, canonical, st.sampled_from(ODD_EVENTS))

    @settings(
        max_examples=PAYLOADS,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(event=event_strategy, data=payloads(tmp_path))
    def one(event: str, data: bytes) -> None:
        code, out, elapsed = _run_in_process(event, data)
        assert code == 0
        _check_output(out)
        seen["runs"] += 1
        seen["answers"] += bool(out)
        seen["slowest"] = max(seen["slowest"], elapsed)

    one()
    print(f"hook fuzz: {seen}")
    assert seen["runs"] >= PAYLOADS * 0.9
    counts = check_database(fuzz_home / "memlane.db")
    assert unexpected_failures(fuzz_home) == []
    # After the barrage the hooks still capture: a normal prompt and tool event are stored.
    cwd = str(tmp_path / "proj")
    for event, payload in (
        ("user-prompt-submit", {"prompt": "after the fuzz: fix the cache parser"}),
        ("post-tool-use", {"tool_name": "Bash", "tool_input": {"command": "pytest -q after"},
                           "tool_response": {"stdout": "1 passed", "exit_code": 0}}),
    ):  # fmt: skip
        data = json.dumps({"session_id": "after", "cwd": cwd, **payload}).encode()
        assert _run_in_process(event, data)[0] == 0
    after = check_database(fuzz_home / "memlane.db")
    assert after["memories"] >= counts["memories"] + 2, (counts, after, seen)


def test_oversized_and_hostile_stdin(fuzz_home: Path, tmp_path: Path) -> None:
    cases = [
        (
            "user-prompt-submit",
            b'{"session_id": "s1", "prompt": "' + b"a" * MAX_STDIN_BYTES + b'"}',
        ),
        ("post-tool-use", b"\x00" * 1000),
        ("stop", b'{"session_id": "s1", "transcript_path": "/dev/zero"}'),
        ("stop", json.dumps({"session_id": "s1", "transcript_path": str(tmp_path)}).encode()),
        ("session-start", b'{"session_id": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
        ("kiro:user-prompt-submit", b""),
    ]
    for event, data in cases:
        code, out, _ = _run_in_process(event, data)
        assert code == 0
        _check_output(out)
    check_database(fuzz_home / "memlane.db")
    assert unexpected_failures(fuzz_home) == []


def test_random_payloads_through_real_processes(fuzz_home: Path, tmp_path: Path) -> None:
    rng = random.Random(10)
    strategy = payloads(tmp_path)
    env = run_env(fuzz_home)
    env["MEMLANE_CAPTURE_HOME_AND_TMP"] = "true"
    samples: list[bytes] = []

    @settings(max_examples=SUBPROCESS_SAMPLE, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(data=strategy)
    def collect(data: bytes) -> None:
        samples.append(data)

    collect()
    for data in samples:
        event = rng.choice(AGENT_PREFIXES) + rng.choice(EVENTS)
        proc = subprocess.run(
            [*MEMLANE_CMD, "hook", event],
            input=data,
            env=env,
            capture_output=True,
            timeout=60,
            cwd=tmp_path / "proj",
        )
        assert proc.returncode == 0, (event, proc.stderr[-500:])
        assert proc.stderr == b"", (event, proc.stderr[-500:])
        _check_output(proc.stdout.decode("utf-8"))
    check_database(fuzz_home / "memlane.db")
    assert unexpected_failures(fuzz_home) == []
