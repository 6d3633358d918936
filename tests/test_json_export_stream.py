"""A JSON export is read one record at a time: a long list is never held whole.

``memlane import`` of a JSON document (memlane's JSON export, or a bare list of
records) used ``json.load``: every record built at once, some 40 times the file's
bytes in Python objects (a 60 MB list, 2.3 GB). It is now read twice with
:class:`memlane.interop.json_stream.JsonCursor` — checked whole first (nothing is
imported from a document that is not valid JSON), then applied record by record.
"""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.interop import json_stream
from memlane.interop.json_stream import JsonCursor
from memlane.interop.roundtrip import read_json_export
from memlane.service import Memory
from memlane.service import open as open_memory

from .test_export_roundtrip import comparable, export_text, populate


def _read(doc: str) -> Any:
    """``doc`` (an array or an object of arrays and values) through a cursor."""
    cursor = JsonCursor(io.StringIO(doc))
    if cursor.peek() == "[":
        out: Any = list(cursor.items())
    elif cursor.peek() != "{":
        out = cursor.value()
    else:
        out = {}
        for key in cursor.members():
            out[key] = list(cursor.items()) if cursor.peek() == "[" else cursor.value()
    cursor.end()
    return out


def _outcome(read: Any, doc: str) -> Any:
    try:
        return read(doc)
    except json.JSONDecodeError as exc:
        return ("error", exc.msg, exc.lineno, exc.colno, exc.pos)


def test_the_cursor_reads_what_json_reads_wherever_the_buffer_is_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Values cut by a 7-character buffer are read again whole; a broken document fails
    where ``json`` says it does (line, column, character), not where the buffer ended."""
    monkeypatch.setattr(json_stream, "READ_CHARS", 7)
    rng = random.Random(7)
    values: list[Any] = [1, -2.5e3, 12345678901234567890, None, True, "é\n\\ \ud7ff", [1, [2, {}]]]
    broken = 0
    for _ in range(1500):
        doc = json.dumps(
            [{"k" * rng.randint(1, 40): rng.choice(values)} for _ in range(rng.randint(0, 6))],
            indent=rng.choice([None, 1]),
        )
        if rng.random() < 0.5:
            at = rng.randrange(len(doc))
            doc = doc[:at] + rng.choice(["", ",", "]", "x", '"', "\n", "tru"]) + doc[at + 1 :]
        expected = _outcome(json.loads, doc)
        assert _outcome(_read, doc) == expected, doc
        broken += isinstance(expected, tuple)
    assert 300 < broken < 1200  # both kinds were tried


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    assert _read('[{"t": "cut \\ud83d"}]') == [{"t": "cut \ufffd"}]


def _export_file(memory: Memory, tmp_path: Path, shape: str) -> Path:
    """``memory``'s JSON export, its members in another order or repeated (``shape``)."""
    data = json.loads(export_text(memory, "json"))
    if shape == "lists first, header last":
        data = {
            "memories": data["memories"],
            "sessions": data["sessions"],
            **{k: v for k, v in data.items() if k not in ("sessions", "memories")},
        }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", ["as exported", "lists first, header last"])
def test_an_export_in_any_member_order_imports_the_same(
    memory: Memory, settings: Settings, tmp_path: Path, shape: str
) -> None:
    populate(memory)
    path = _export_file(memory, tmp_path, shape)
    with open_memory(str(tmp_path / "other.db"), settings=settings) as other:
        report = other.import_export(str(path))
        assert report.errors == ()
        assert comparable(export_text(other, "json"), "json") == comparable(
            export_text(memory, "json"), "json"
        )


def test_a_record_list_given_twice_is_refused_whole(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    """``json`` kept the last of two ``memories`` lists and dropped the first unseen."""
    first = {"text": "from the first list", "project": "p"}
    second = {"text": "from the second list", "project": "p"}
    path = tmp_path / "twice.json"
    header = '"format": "memlane-export", "version": 2'
    lists = f'"memories": [{json.dumps(first)}], "memories": [{json.dumps(second)}]'
    path.write_text("{" + header + ", " + lists + "}")
    with pytest.raises(InvalidInput, match="given twice; nothing imported"):
        memory.import_export(str(path))
    assert memory.stats().memories == 0


def test_a_broken_record_at_the_end_of_a_long_list_imports_nothing(
    memory: Memory, tmp_path: Path
) -> None:
    records = [json.dumps({"text": f"note number {i}", "project": "p"}) for i in range(3000)]
    path = tmp_path / "broken.json"
    path.write_text("[\n" + ",\n".join(records) + ',\n{"text": "last", }\n]\n')
    with pytest.raises(InvalidInput, match=r"not valid JSON \(Expecting property name.*line 3002"):
        memory.import_export(str(path))
    assert memory.stats().memories == 0


def test_a_record_longer_than_the_buffer_arrives_whole(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_stream, "READ_CHARS", 1024)
    text = "a long note " + " ".join(f"w{i}" for i in range(4000))  # ~23 KB
    path = tmp_path / "long.json"
    path.write_text(json.dumps([{"text": "short", "project": "p"}, {"text": text, "project": "p"}]))
    report = memory.import_export(str(path))
    assert report.created == 2
    stored = {m.content for m in memory.iter_all(("p",))}
    assert text in stored


def test_a_long_list_is_not_held_whole(memory: Memory, tmp_path: Path) -> None:
    """Reading the document (both passes) holds one record at a time: its peak of Python
    allocations is a small part of what decoding it whole costs (``json.loads`` of the
    same text, measured in the same test); then the import applies every record."""
    records = [{"text": f"remember item {i}", "project": "p", "tags": ["x"]} for i in range(20_000)]
    doc = json.dumps(records)
    path = tmp_path / "many.json"
    path.write_text(doc)

    tracemalloc.start()
    try:
        json.loads(doc)
        _, whole = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        export = read_json_export(path)
        read = sum(1 for _ in export)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert export.records == read == 20_000
    assert peak - base < whole / 10, (peak - base, whole)
    assert memory.import_export(str(path)).created == 20_000
