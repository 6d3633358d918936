"""Portable JSON index: export shape, vectors, round trip, foreign indexes, bad entries.

The semantic-memory tool's own index (no format, no model named, sources per
JSONL file) is built here the way that tool writes it.
"""

from __future__ import annotations

import io
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.search.embedder import ToyEmbedder
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
    # The other side embeds with the model of the index: its vectors are kept.
    other = open_memory(str(tmp_path / "other.db"), settings=replace(settings, embedder="toy-6"))
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
    assert (report.created, report.vectors) == (2, 0)
    # Another model's vectors mean nothing to memlane's search: left out, said why.
    assert report.notes == (
        "vectors of 'their-model' left out (memlane embeds with 'use-multilingual-v3');"
        " the worker or `memlane embed --backfill` embeds them",
    )
    rows = {m.content: m for m in memory.list_memories(project="kb")}
    assert rows["no vector"].type == "lesson"
    assert rows["Deploys happen on Tuesdays"].source == "index"
    assert memory.store.embedding_counts() == {}
    waiting = {text for _, text in memory.store.missing_embeddings("use-multilingual-v3", 10)}
    assert waiting == {"Deploys happen on Tuesdays", "no vector"}
    assert memory.import_index(str(path)).created == 0


def test_an_embedding_that_is_not_finite_is_a_bad_entry(memory: Memory, tmp_path: Path) -> None:
    # Python's json reads NaN and Infinity; float32 ends at ~3.4e38.
    path = tmp_path / "theirs.json"
    path.write_text(
        '{"metadata": {"project": "kb", "dimensions": 3}, "vectors": ['
        '{"id": "n", "text": "nan", "embedding": [NaN, 0.1, 0.2]},'
        '{"id": "i", "text": "inf", "embedding": [-Infinity, 0.1, 0.2]},'
        '{"id": "f", "text": "past float32", "embedding": [1e39, 0.1, 0.2]},'
        '{"id": "b", "text": "a huge integer", "embedding": [1' + "0" * 400 + ", 0, 0]},"
        '{"id": "ok", "text": "fine", "embedding": [0.1, 0.2, 0.3]}]}'
    )
    report = memory.import_index(str(path))
    assert [e.line for e in report.errors] == [1, 2, 3, 4]
    assert all("finite numbers" in e.message for e in report.errors)
    assert report.created == 1


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


# -- the semantic-memory tool's own index ------------------------------------------------

THEIRS = [
    ("lessons.jsonl", "Pin the Node version in CI", {"timestamp": "2025-01-06T09:00:00Z"}),
    ("lessons.jsonl", "Flaky tests hide real races", {"tags": ["ci"]}),
    ("decisions.jsonl", "Use Redis streams for jobs", {"title": "Queue choice"}),
]


def their_index(vectors: list[list[float]], project: str = "kb") -> dict[str, Any]:
    """An index as the semantic-memory tool writes it: no format, no model, files as sources."""
    entries = [
        {
            "id": f"{source}:{number}",
            "text": text,
            "embedding": vector,
            "source": source,
            "relevance": 0.7 + number / 10,
            "metadata": meta,
        }
        for number, ((source, text, meta), vector) in enumerate(zip(THEIRS, vectors, strict=True))
    ]
    return {
        "metadata": {
            "project": project,
            "last_updated": "2025-01-07T10:00:00Z",
            "entry_count": len(entries),
            "coverage": {"lessons.jsonl": 2, "decisions.jsonl": 1},
        },
        "vectors": entries,
    }


def toy_vectors(dim: int) -> list[list[float]]:
    rows = ToyEmbedder(dim).embed([text for _, text, _ in THEIRS])
    return [[float(x) for x in row] for row in rows]


@pytest.fixture
def toy_memory(settings: Settings, tmp_path: Path) -> Any:
    mem = open_memory(str(tmp_path / "toy.db"), settings=replace(settings, embedder="toy-6"))
    yield mem
    mem.close()


def test_their_index_round_trips_with_its_vectors(toy_memory: Memory, tmp_path: Path) -> None:
    """Made with the model memlane uses (recognised on a sample): vectors kept, per-file
    sources and coverage written back the way the tool wrote them."""
    theirs = their_index(toy_vectors(6))
    path = tmp_path / "memory-index.json"
    path.write_text(json.dumps(theirs))
    report = toy_memory.import_index(str(path))
    assert (report.created, report.vectors, report.errors) == (3, 3, ())
    assert report.notes == (
        "vectors kept as 'toy-6': the index names no model and a sample re-embedded"
        " matches (cosine >= 1.00)",
    )
    rows = {m.content: m for m in toy_memory.list_memories(project="kb")}
    assert rows["Pin the Node version in CI"].type == "lesson"  # from its file
    assert rows["Use Redis streams for jobs"].type == "decision"
    assert rows["Use Redis streams for jobs"].title == "Queue choice"
    assert toy_memory.store.embedding_counts() == {"toy-6": 3}

    back = export(toy_memory, project="kb")
    assert back["metadata"]["coverage"] == theirs["metadata"]["coverage"]
    assert back["metadata"]["embedding_model"] == "toy-6"
    mine = {e["text"]: e for e in back["vectors"]}
    for entry in theirs["vectors"]:
        copy = mine[entry["text"]]
        assert (copy["source"], copy["relevance"]) == (entry["source"], entry["relevance"])
        assert np.allclose(copy["embedding"], entry["embedding"], atol=1e-6)
        assert copy["metadata"]["source"] == "index"  # memlane's own source name
    # memlane's export of it imports losslessly again, to the same ids and sources
    path.write_text(json.dumps(back))
    again = open_memory(str(tmp_path / "again.db"), settings=toy_memory.settings)
    assert again.import_index(str(path)).vectors == 3
    twice = export(again, project="kb")
    assert twice["metadata"]["coverage"] == theirs["metadata"]["coverage"]
    assert sorted(e["id"] for e in twice["vectors"]) == sorted(mine[t]["id"] for t in mine)
    again.close()


def test_their_index_from_another_model_is_embedded_again(
    toy_memory: Memory, tmp_path: Path
) -> None:
    rng = np.random.default_rng(7)
    same_size = [[float(x) for x in rng.standard_normal(6)] for _ in THEIRS]
    path = tmp_path / "index.json"
    path.write_text(json.dumps(their_index(same_size)))
    report = toy_memory.import_index(str(path))
    assert (report.created, report.vectors, report.details) == (3, 0, {"vectors left out": 3})
    [note] = report.notes
    assert note.startswith("vectors left out: the index names no model and they do not match")
    assert toy_memory.store.embedding_counts() == {}
    assert len(toy_memory.store.missing_embeddings("toy-6", 10)) == 3  # for the worker

    path.write_text(json.dumps(their_index(toy_vectors(4), project="other")))
    smaller = toy_memory.import_index(str(path))
    assert smaller.notes == (
        "vectors left out: the index names no model, and 'toy-6' has 6 dimensions, not 4;"
        " the worker or `memlane embed --backfill` embeds them",
    )
    assert toy_memory.store.embedding_counts() == {}


def test_cli_their_index_then_backfill(home: Path, tmp_path: Path) -> None:
    env = {**run_env(home), "MEMLANE_EMBEDDER": "toy"}  # the toy model: 64 dimensions
    path = tmp_path / "memory-index.json"
    path.write_text(json.dumps(their_index(toy_vectors(64))))

    def memlane(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMLANE_CMD, *args], env=env, capture_output=True, text=True, check=False
        )

    kept = memlane("import", "index", str(path))
    assert kept.returncode == 0, kept.stderr
    assert "imported 3 new" in kept.stdout and "3 vectors" in kept.stdout
    assert "note: vectors kept as 'toy-64'" in kept.stdout
    rng = np.random.default_rng(1)
    path.write_text(
        json.dumps(their_index([[float(x) for x in rng.standard_normal(64)] for _ in THEIRS], "b"))
    )
    left = memlane("index", "import", str(path), "--json")
    data = json.loads(left.stdout)
    assert (data["created"], data["vectors"], data["details"]) == (3, 0, {"vectors left out": 3})
    assert "do not match 'toy-64'" in data["notes"][0]
    filled = memlane("embed", "--backfill", "--json")
    assert filled.returncode == 0, filled.stderr
    assert json.loads(filled.stdout)["embedded"] == 3
    out = tmp_path / "back.json"
    assert memlane("index", "export", "--project", "b", "-o", str(out)).returncode == 0
    back = json.loads(out.read_text())
    assert back["metadata"]["coverage"] == {"lessons.jsonl": 2, "decisions.jsonl": 1}
    assert all(len(e["embedding"]) == 64 for e in back["vectors"])  # memlane's own now
    # Round trip through the command line: another database takes the export, vectors and all.
    other = str(tmp_path / "other.db")
    taken = json.loads(memlane("--db", other, "import", "index", str(out), "--json").stdout)
    assert (taken["created"], taken["vectors"], taken["errors"]) == (3, 3, [])
    again = tmp_path / "again.json"
    assert (
        memlane("--db", other, "index", "export", "--project", "b", "-o", str(again)).returncode
        == 0
    )
    copy = json.loads(again.read_text())
    assert copy["metadata"]["coverage"] == back["metadata"]["coverage"]
    assert sorted((e["text"], e["source"], e["embedding"]) for e in copy["vectors"]) == sorted(
        (e["text"], e["source"], e["embedding"]) for e in back["vectors"]
    )


def test_their_entry_keeps_its_id_date_and_metadata(memory: Memory, tmp_path: Path) -> None:
    """Index → memlane → index gives their entry back under its own id, with its own
    metadata (memlane's bookkeeping keys left out) and dated by its ``date``."""
    entry = {
        "id": "e-42",
        "text": "retry with backoff",
        "embedding": None,
        "source": "lessons.jsonl",
        "relevance": 0.7,
        "metadata": {"date": "2025-03-04", "author": "kim"},
    }
    path = tmp_path / "theirs.json"
    path.write_text(json.dumps({"metadata": {"project": "ix"}, "vectors": [entry]}))
    assert memory.import_index(str(path)).created == 1
    (stored,) = memory.list_memories(project="ix")
    assert stored.created_at.isoformat() == "2025-03-04T00:00:00+00:00"
    (back,) = export(memory, project="ix")["vectors"]
    assert (back["id"], back["source"], back["relevance"]) == ("e-42", "lessons.jsonl", 0.7)
    assert back["metadata"]["metadata"] == entry["metadata"]
    path.write_text(json.dumps(export(memory, project="ix")))
    again = memory.import_index(str(path))
    assert (again.created, again.updated, again.skipped) == (0, 0, 1)
    other = open_memory(str(tmp_path / "other.db"), settings=memory.settings)
    assert other.import_index(str(path)).created == 1
    (copied,) = export(other, project="ix")["vectors"]
    other.close()
    assert {k: copied[k] for k in ("id", "source", "relevance")} == {
        k: back[k] for k in ("id", "source", "relevance")
    }
    assert copied["metadata"]["metadata"] == entry["metadata"]
