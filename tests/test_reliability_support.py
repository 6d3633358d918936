"""Shared helpers of the reliability tests (issue 10): profiles, synthetic data, DB checks.

Not a test module (it holds no tests); the ``test_concurrency_*``, ``test_crash_*``,
``test_fuzz_*`` and ``test_resource_*`` modules import it.

Profiles: the reliability tests have a *quick* size (CI: ``CI=true``, and the
default on a laptop, so the whole suite stays inside CI's budget) and a *full*
size, the one the issue specifies (8 × 2,000 concurrent writes, 50 kills per
crash test, 10,000 hook payloads, a 100 MB transcript). ``MEMLANE_FULL_RELIABILITY=1``
selects the full size; the full run and its results are documented in BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

FULL_ENV = "MEMLANE_FULL_RELIABILITY"


def full_profile() -> bool:
    """True when the full-size reliability run is asked for."""
    return os.environ.get(FULL_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def pick(quick: int, full: int) -> int:
    """The quick or full value of a size, by profile (an explicit env var wins, see below)."""
    return full if full_profile() else quick


def size_from_env(name: str, quick: int, full: int) -> int:
    """``pick(quick, full)`` unless ``name`` is set to an integer (for one-off runs)."""
    raw = os.environ.get(name)
    if raw:
        return int(raw)
    return pick(quick, full)


# -- database checks -------------------------------------------------------------------


def open_ro(db: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection (no memlane code) for checking a database from outside."""
    conn = sqlite3.connect(str(db), timeout=30)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def check_database(db: Path) -> dict[str, int]:
    """Assert the database opens, passes integrity_check and its FTS index matches the table.

    Returns row counts (``memories``, ``fts``) for further assertions.
    """
    conn = open_ro(db)
    try:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        assert result == ["ok"], f"integrity_check: {result[:5]}"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "memories" not in tables:
            # Killed before the first migration committed: an empty file, which the
            # next open migrates. Nothing half-created may be left behind.
            assert not tables - {"schema_version"}, f"half-migrated schema: {sorted(tables)}"
            return {"memories": 0, "fts": 0}
        # FTS5's own check: the index agrees with the external content table.
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        fts = conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
        # Every row is findable through the index by its rowid, and nothing extra is.
        docsize = conn.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
        missing = conn.execute(
            "SELECT count(*) FROM memories m WHERE NOT EXISTS"
            " (SELECT 1 FROM memories_fts_docsize d WHERE d.id = m.id)"
        ).fetchone()[0]
    finally:
        conn.close()
    assert memories == fts == docsize, f"memories={memories} fts={fts} docsize={docsize}"
    assert missing == 0, f"{missing} rows are missing from the FTS index"
    return {"memories": int(memories), "fts": int(fts)}


def duplicate_source_ids(db: Path) -> int:
    """How many (project, source, source_id) keys occur more than once."""
    conn = open_ro(db)
    try:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'"
        ).fetchone()
        if exists is None:  # killed before the first migration: nothing stored at all
            return 0
        row = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories WHERE source_id IS NOT NULL"
            " GROUP BY project, source, source_id HAVING count(*) > 1)"
        ).fetchone()
    finally:
        conn.close()
    return int(row[0])


# -- synthetic data -------------------------------------------------------------------

_VOCABULARY = (
    "cache index query parser worker session token budget vector chunk hook prompt"
    " migration schema sqlite postgres embed recall rerank fusion latency config"
)
_WORDS = _VOCABULARY.split()


def transcript_line(i: int, session_id: str, cwd: str = "/tmp/proj", pad: int = 0) -> list[str]:
    """Two Claude Code transcript records (a user prompt, an assistant reply) as JSON lines."""
    words = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(12))
    filler = "".join(f" {_WORDS[(i * 5 + k * 3) % len(_WORDS)]}{k % 97}" for k in range(pad))
    user = {
        "type": "user",
        "uuid": f"u-{i}",
        "sessionId": session_id,
        "cwd": cwd,
        "timestamp": "2026-01-05T10:00:00.000Z",
        "message": {"role": "user", "content": f"question {i}: how does the {words} work?"},
    }
    assistant = {
        "type": "assistant",
        "uuid": f"a-{i}",
        "sessionId": session_id,
        "cwd": cwd,
        "timestamp": "2026-01-05T10:00:01.000Z",
        "message": {
            "id": f"msg-{i}",
            "role": "assistant",
            "content": [{"type": "text", "text": f"answer {i}: the {words} works.{filler}"}],
        },
    }
    return [json.dumps(user), json.dumps(assistant)]


def write_transcript(path: Path, *, turns: int | None = None, size_mb: float | None = None,
                     session_id: str = "sess-big", pad: int = 0) -> int:  # fmt: skip
    """Write a synthetic transcript of ``turns`` exchanges or about ``size_mb`` MB; turns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    limit = None if size_mb is None else int(size_mb * 1024 * 1024)
    written = 0
    i = 0
    with path.open("w", encoding="utf-8") as out:
        while True:
            if turns is not None and i >= turns:
                break
            if limit is not None and written >= limit:
                break
            block = "\n".join(transcript_line(i, session_id, pad=pad)) + "\n"
            out.write(block)
            written += len(block)
            i += 1
    return i


def write_jsonl(path: Path, records: int, *, project: str = "bulk") -> None:
    """A JSONL import file (DESIGN §7) of ``records`` distinct records with ids."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(records):
            words = " ".join(_WORDS[(i * 7 + k) % len(_WORDS)] for k in range(10))
            record: dict[str, Any] = {
                "id": f"rec-{i}",
                "text": f"imported fact {i}: {words} marker{i}x",
                "project": project,
                "type": "knowledge",
                "timestamp": "2026-01-01T00:00:00Z",
                "tags": ["bulk"],
            }
            out.write(json.dumps(record) + "\n")


def peak_rss_kib(pid: int) -> int | None:
    """VmHWM (peak resident set) of a live process in KiB, from /proc (None if gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None
