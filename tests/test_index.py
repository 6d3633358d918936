"""Portable JSON index: export shape, vectors, round trip, foreign indexes, bad entries."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.conftest import MEMLANE_CMD, run_env


def fill(memory: Memory) -> dict[int, np.ndarray]:
    memory.save("Use Decimal for money", project="shop", type="decision", tags=("money",))
    memory.save("ran the test suite", project="shop", type="command")
    memory.save(
        "from claude-mem", project="shop", type="lesson", source="claude-mem", source_id="o:1"
    )
    memory.save("another project", project="blog", type="note")
    rng = np.random.default_rng(3)
    vectors = {m.id: rng.standard_normal(6).astype(np.float32) for m in memory.iter_all(None)}
    memory.store.put_embeddings("toy-6", 6, [(i, v.tobytes()) for i, v in vectors.items()])
    return vectors


def export(memory: Memory, project: str = "shop", **kw: Any) -> dict[str, Any]:
    out = io.StringIO()
    count = memory.export_index(out, project=project, **kw)
    data = json.loads(out.getvalue())
    assert data["metadata"]["entry_count"] == count
    return data


def test_index_shape(memory: Memory) -> None:
    vectors = fill(memory)
    data = export(memory)
    meta = data["metadata"]
    assert meta["project"] == "shop"
    assert meta["entry_count"] == 3
    assert meta["coverage"] == {"memlane": 2, "claude-mem": 1}
    assert meta["embedding_model"] == "toy-6"
    assert meta["dimensions"] == 6
    assert meta["last_updated"]
    entries = {e["text"]: e for e in data["vectors"]}
    decision = entries["Use Decimal for money"]
    assert set(decision) == {"id", "text", "embedding", "source", "relevance", "metadata"}
    assert decision["metadata"]["type"] == "decision"
    assert decision["relevance"] > entries["ran the test suite"]["relevance"]
    by_id = {m.content: m.id for m in memory.iter_all(None)}
    assert np.allclose(decision["embedding"], vectors[by_id["Use Decimal for money"]])
    without = export(memory, with_vectors=False)
    assert all(e["embedding"] is None for e in without["vectors"])
    assert without["metadata"]["embedding_model"] is None


def test_index_round_trip(memory: Memory, settings: Settings, tmp_path: Path) -> None:
    vectors = fill(memory)
    path = tmp_path / "index.json"
    path.write_text(json.dumps(export(memory)))
    other = open_memory(str(tmp_path / "other.db"), settings=settings)
    report = other.import_index(str(path))
    assert (report.created, report.vectors, report.errors) == (3, 3, ())
    copies = {m.content: m for m in other.iter_all(None)}
    assert copies["from claude-mem"].source == "claude-mem"
    assert copies["Use Decimal for money"].tags == ("money",)
    stored = {i: b for batch in other.store.iter_embeddings("toy-6") for i, b in batch}
    by_id = {m.content: m.id for m in memory.iter_all(None)}
    for content, copy in copies.items():
        assert stored[copy.id] == vectors[by_id[content]].tobytes()
    again = other.import_index(str(path))
    assert (again.created, again.skipped) == (0, 3)
    # re-export from the copy names the same entries
    ids = sorted(e["id"] for e in export(other)["vectors"])
    assert ids == sorted(e["id"] for e in export(memory)["vectors"])
    other.close()


def test_foreign_index_and_bad_entries(memory: Memory, tmp_path: Path) -> None:
    document = {
        "metadata": {"project": "kb", "embedding_model": "their-model", "dimensions": 3},
        "vectors": [
            {"id": "a1", "text": "Deploys happen on Tuesdays", "embedding": [0.1, 0.2, 0.3]},
            {"id": "a2", "text": "", "embedding": None},
            {"id": "a3", "text": "wrong size", "embedding": [0.1, 0.2]},
            "not an object",
            {"id": "a5", "text": "no vector", "metadata": {"type": "lesson"}},
        ],
    }
    path = tmp_path / "theirs.json"
    path.write_text(json.dumps(document))
    report = memory.import_index(str(path))
    assert [e.line for e in report.errors] == [2, 3, 4]
    assert "dimensions" in report.errors[1].message
    assert (report.created, report.vectors) == (2, 1)
    rows = {m.content: m for m in memory.list_memories(project="kb")}
    assert rows["no vector"].type == "lesson"
    assert rows["Deploys happen on Tuesdays"].source == "index"
    assert memory.store.embedding_counts() == {"their-model": 1}
    assert memory.import_index(str(path)).created == 0


def test_not_an_index(memory: Memory, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        memory.import_index(str(bad))
    bad.write_text(json.dumps({"entries": []}))
    with pytest.raises(InvalidInput, match="not an index"):
        memory.import_index(str(bad))
    bad.write_text(json.dumps({"metadata": {}, "vectors": []}))
    with pytest.raises(InvalidInput, match="no project"):
        memory.import_index(str(bad))


def test_cli_index(home: Path, tmp_path: Path) -> None:
    env = run_env(home)
    subprocess.run(
        [*MEMLANE_CMD, "save", "index me", "--project", "P", "--type", "decision"],
        env=env,
        check=True,
    )
    out = tmp_path / "p.json"
    done = subprocess.run(
        [*MEMLANE_CMD, "index", "export", "--project", "P", "-o", str(out), "--no-vectors"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert json.loads(out.read_text())["metadata"]["entry_count"] == 1
    back = subprocess.run(
        [*MEMLANE_CMD, "index", "import", str(out), "--project", "Q"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert back.returncode == 0, back.stderr
    assert "imported 1 new" in back.stdout
