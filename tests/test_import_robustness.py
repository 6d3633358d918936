"""Importers facing crafted input (probe s27): a bad line or file is reported, never the
end of the import; an index is streamed; links in a store folder are not read; a
record's session and metadata are checked."""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from memlane.errors import InvalidInput
from memlane.interop.index_file import read_index
from memlane.interop.jsonl import MAX_METADATA_CHARS
from memlane.service import Memory
from tests.conftest import one_line_error, run_memlane

# Past Python's limit on converting text to int (4,300 digits): json raised ValueError.
BIG = "9" * 5000


def lines(path: Path, *rows: str) -> Path:
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    return root


def report(done: object) -> dict[str, object]:
    stdout = getattr(done, "stdout", "")
    assert "Traceback" not in getattr(done, "stderr", ""), getattr(done, "stderr", "")
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return data


def contents(memory: Memory, project: str) -> set[str]:
    return {m.content for m in memory.list_memories(project=project, limit=50)}


# -- 7. a number past the digit limit, a timestamp that is not a time ------------------


def test_a_long_number_is_a_bad_line_in_import_jsonl(home: Path, tmp_path: Path) -> None:
    file = lines(
        tmp_path / "a.jsonl",
        '{"text": "ok one"}',
        '{"text": "big", "n": ' + BIG + "}",
        '{"text": "ok two"}',
    )
    done = run_memlane(home, "import", "jsonl", str(file), "--project", "p", "--json")
    data = report(done)
    assert data["created"] == 2
    errors = data["errors"]
    assert isinstance(errors, list) and [e["line"] for e in errors] == [2]
    assert "digits" in errors[0]["message"]
    assert "set_int_max_str_digits" not in errors[0]["message"]


def test_a_long_number_is_a_bad_line_in_a_store(memory: Memory, tmp_path: Path) -> None:
    root = store(tmp_path)
    lines(
        root / "lessons.jsonl",
        '{"text": "retry with backoff"}',
        '{"text": "big", "n": ' + BIG + "}",
        '{"text": "cache the wheels"}',
    )
    result = memory.import_jsonl_store(str(root), project="p")
    assert result.created == 2
    assert [e.line for e in result.errors] == [2]
    assert "not valid JSON" in result.errors[0].message


def test_a_long_number_in_an_index_is_one_error_line(home: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx.json"
    index.write_text(
        '{"metadata": {}, "vectors": [{"id": "a", "text": "t", "embedding": [' + BIG + "]}]}"
    )
    done = run_memlane(home, "--project", "p", "import", "index", str(index))
    assert "is not valid JSON" in one_line_error(done, 2)


def test_a_bad_index_beside_a_store_is_skipped_with_a_note(memory: Memory, tmp_path: Path) -> None:
    """README: an index that is invalid is skipped with a note and the lines imported."""
    root = store(tmp_path)
    lines(root / "lessons.jsonl", '{"text": "a lesson"}')
    (root / "memory-index.json").write_text(
        '{"metadata": {}, "vectors": [{"id": "a", "text": "t", "embedding": [' + BIG + "]}]}"
    )
    result = memory.import_jsonl_store(str(root), project="p")
    assert result.created == 1
    assert len(result.notes) == 1
    assert result.notes[0].startswith("memory-index.json skipped:")
    assert "not valid JSON" in result.notes[0]


def test_a_long_number_in_a_json_export_is_one_error_line(home: Path, tmp_path: Path) -> None:
    """The streamed reader of JSON documents follows the same rule."""
    export = tmp_path / "export.json"
    export.write_text('{"format": "memlane-export", "memories": [{"n": ' + BIG + "}]}")
    done = run_memlane(home, "import", "memlane", str(export))
    assert "not valid JSON" in one_line_error(done, 2)


@pytest.mark.parametrize("stamp", ["NaN", "Infinity", "1e999", "-1e300", "1e300", "-5"])
def test_a_timestamp_that_is_no_time_is_a_bad_line(
    memory: Memory, tmp_path: Path, stamp: str
) -> None:
    file = lines(
        tmp_path / "b.jsonl",
        '{"text": "bad stamp", "timestamp": ' + stamp + "}",
        '{"text": "good one", "timestamp": 1735900000}',
    )
    plain = memory.import_jsonl(str(file), project="plain")
    assert plain.created == 1
    assert [e.line for e in plain.errors] == [1]
    assert "out of range (1970 to 9000)" in plain.errors[0].message

    root = store(tmp_path)
    lines(
        root / "lessons.jsonl",
        '{"text": "store stamp", "ts": ' + stamp + "}",
        '{"text": "store good"}',
    )
    result = memory.import_jsonl_store(str(root), project="p")
    assert result.created == 1
    assert [e.line for e in result.errors] == [1]
    assert "ts " in result.errors[0].message and "out of range" in result.errors[0].message


def test_an_iso_date_before_1970_is_a_bad_line(memory: Memory, tmp_path: Path) -> None:
    file = lines(
        tmp_path / "c.jsonl",
        '{"text": "too old", "timestamp": "0001-01-01"}',
        '{"text": "fine", "timestamp": "2025-01-01T10:00:00Z"}',
    )
    plain = memory.import_jsonl(str(file), project="plain")
    assert plain.created == 1
    assert [e.line for e in plain.errors] == [1]


def test_a_nan_timestamp_through_the_cli(home: Path, tmp_path: Path) -> None:
    root = store(tmp_path)
    lines(root / "lessons.jsonl", '{"text": "nan ts", "timestamp": NaN}', '{"text": "ok"}')
    done = run_memlane(home, "import", "jsonl-store", str(root), "--project", "p", "--json")
    data = report(done)
    assert data["created"] == 1
    errors = data["errors"]
    assert isinstance(errors, list) and [e["line"] for e in errors] == [1]


# -- 8. an index is streamed ----------------------------------------------------------


def _write_index(path: Path, entries: int, *, metadata_last: bool = False) -> None:
    meta = '"metadata": {"project": "p", "embedding_model": "other-model"}'
    with path.open("w", encoding="utf-8") as out:
        out.write("{" + ("" if metadata_last else meta + ", ") + '"vectors": [')
        for n in range(entries):
            entry = {"id": f"e{n}", "text": f"entry {n}", "embedding": [0.1] * 256}
            out.write(("," if n else "") + json.dumps(entry))
        out.write("]" + (", " + meta if metadata_last else "") + "}")


def test_an_index_is_never_held_whole(tmp_path: Path) -> None:
    """json.load held the file's text and every number as a Python float: memory grew
    with the file (a 208 MB index took 1.87 GB). Streamed, it holds about one entry."""
    path = tmp_path / "big-index.json"
    _write_index(path, 6000)
    size = path.stat().st_size
    assert size > 7_000_000
    tracemalloc.start()
    try:
        index = read_index(path, embedder="none")
        count = sum(1 for _ in index.entries())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (index.count, count, index.dim) == (6000, 6000, 256)
    assert peak < size // 4, (peak, size)


def test_an_index_with_its_metadata_last_imports(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "late-meta.json"
    _write_index(path, 3, metadata_last=True)
    result = memory.import_index(str(path))
    assert result.created == 3
    assert contents(memory, "p") == {"entry 0", "entry 1", "entry 2"}


def test_an_index_with_a_member_given_twice_is_refused(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    path.write_text('{"metadata": {"project": "p"}, "vectors": [], "vectors": []}')
    with pytest.raises(InvalidInput, match="given twice"):
        memory.import_index(str(path))
    path.write_text('{"metadata": {"project": "p"}, "vectors": {}}')
    with pytest.raises(InvalidInput, match="is not an index"):
        memory.import_index(str(path))


# -- 9. links in a store folder --------------------------------------------------------


def test_a_store_file_that_is_a_link_is_not_read(memory: Memory, tmp_path: Path) -> None:
    private = tmp_path / "claude" / "-secret-proj" / "abc.jsonl"
    private.parent.mkdir(parents=True)
    lines(private, '{"text": "PRIVATE: the acquisition closes on friday"}')
    root = store(tmp_path)
    (root / "lessons.jsonl").symlink_to(private)
    (root / "env.jsonl").symlink_to("/proc/self/environ")
    (root / "loop-a.jsonl").symlink_to("loop-b.jsonl")
    (root / "loop-b.jsonl").symlink_to("loop-a.jsonl")
    lines(root / "agent-notes.jsonl", '{"text": "a note of the store itself"}')
    result = memory.import_jsonl_store(str(root), project="repo")
    assert result.created == 1
    assert result.errors == ()
    assert contents(memory, "repo") == {"a note of the store itself"}
    skipped = sorted(note.split(" ")[0] for note in result.notes)
    assert skipped == ["env.jsonl", "lessons.jsonl", "loop-a.jsonl", "loop-b.jsonl"]
    assert all("is a link" in note for note in result.notes)


def test_a_store_of_links_only_names_them(memory: Memory, tmp_path: Path) -> None:
    other = lines(tmp_path / "other.jsonl", '{"text": "elsewhere"}')
    root = store(tmp_path)
    (root / "lessons.jsonl").symlink_to(other)
    with pytest.raises(InvalidInput, match=r"lessons\.jsonl: links, not read"):
        memory.import_jsonl_store(str(root), project="repo")


def test_an_index_that_is_a_link_is_not_read(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"metadata": {}, "vectors": []}')
    root = store(tmp_path)
    lines(root / "lessons.jsonl", '{"text": "a lesson"}')
    (root / "memory-index.json").symlink_to(elsewhere)
    (root / "env-index.json").symlink_to("/proc/self/environ")
    done = run_memlane(home, "import", "jsonl-store", str(root), "--project", "p", "--json")
    data = report(done)
    assert data["created"] == 1
    assert data["notes"] == [
        "env-index.json skipped: it is a link (a link to a file is not read)",
        "memory-index.json skipped: it is a link (a link to a file is not read)",
    ]


def test_import_index_of_a_named_link_still_reads_it(memory: Memory, tmp_path: Path) -> None:
    """A path the user names is theirs to choose: only files found in a folder are held
    to the link rule."""
    real = tmp_path / "real.json"
    _write_index(real, 2)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert memory.import_index(str(link)).created == 2


# -- 10. a session that is not text, metadata without bound -----------------------------


def test_a_session_that_is_not_text_is_a_bad_line(memory: Memory, tmp_path: Path) -> None:
    root = store(tmp_path)
    lines(
        root / "lessons.jsonl",
        '{"text": "s1", "session": true}',
        '{"text": "s2", "session": ["a"]}',
        '{"text": "s3", "session": {"x": 1}}',
        '{"text": "s4", "session": 42}',
        '{"text": "s5", "session": "abc"}',
    )
    result = memory.import_jsonl_store(str(root), project="p")
    assert [e.line for e in result.errors] == [1, 2, 3]
    assert all("'session' must be a string" in e.message for e in result.errors)
    sessions = {m.content: m.session_id for m in memory.list_memories(project="p")}
    assert sessions == {"s4": "42", "s5": "abc"}  # as `import jsonl` takes them


def test_metadata_past_its_bound_is_a_bad_line(memory: Memory, tmp_path: Path) -> None:
    keys = MAX_METADATA_CHARS // 10
    many = json.dumps({"text": "many keys", **{f"k{i}": i for i in range(keys)}})
    root = store(tmp_path)
    lines(root / "lessons.jsonl", many, '{"text": "a small one", "k": 1}')
    result = memory.import_jsonl_store(str(root), project="p")
    assert result.created == 1
    assert [e.line for e in result.errors] == [1]
    assert "metadata is" in result.errors[0].message

    plain = lines(
        tmp_path / "records.jsonl",
        json.dumps({"text": "many keys", "metadata": {f"k{i}": i for i in range(keys)}}),
        '{"text": "plain small", "metadata": {"k": 1}}',
    )
    imported = memory.import_jsonl(str(plain), project="plain")
    assert imported.created == 1
    assert [e.line for e in imported.errors] == [1]
    assert contents(memory, "plain") == {"plain small"}


def test_a_record_with_more_tags_or_files_than_a_memory_keeps_is_a_bad_line(
    home: Path, tmp_path: Path
) -> None:
    # 400,000 tags on one line were each scrubbed: 16 s for one record.
    file = lines(
        tmp_path / "tags.jsonl",
        json.dumps({"text": "many tags", "tags": ["t"] * 400_000}),
        json.dumps({"text": "many files", "files": [f"f{i}.py" for i in range(201)]}),
        json.dumps({"text": "enough", "tags": ["t"] * 100, "files": ["a.py"] * 200}),
    )
    done = run_memlane(home, "import", "jsonl", str(file), "--project", "p", "--json")
    data = report(done)
    assert data["created"] == 1
    errors = data["errors"]
    assert isinstance(errors, list)
    assert [(e["line"], e["message"]) for e in errors] == [
        (1, "400,000 tags (a memory keeps 100 at most)"),
        (2, "201 files (a memory keeps 200 at most)"),
    ]


def test_an_edit_with_more_tags_than_a_memory_keeps_is_refused(memory: Memory) -> None:
    saved = memory.save("pin the wheel versions", project="p")
    with pytest.raises(InvalidInput, match="101 tags"):
        memory.update(saved.id, tags=[f"t{i}" for i in range(101)])


def test_a_byte_order_mark_is_read_and_bytes_not_utf8_are_a_bad_line(
    memory: Memory, tmp_path: Path
) -> None:
    # A BOM (Windows editors, PowerShell's Out-File) made line 1 "not valid JSON"; bytes
    # that are not UTF-8 were replaced and stored as "ok �� bad" without a word (probe D9).
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b'\xef\xbb\xbf{"text": "bom line"}\n{"text": "second"}\n')
    read = memory.import_jsonl(str(bom), project="p")
    assert (read.created, read.errors) == (2, ())
    header = tmp_path / "header.jsonl"
    header.write_bytes(
        b'\xef\xbb\xbf{"record": "header", "format": "memlane-export", "version": 99}\n'
    )
    with pytest.raises(InvalidInput, match="version"):  # the header is still checked
        memory.import_export(str(header))
    bad = tmp_path / "bad8.jsonl"
    bad.write_bytes(b'{"text": "ok \xff\xfe bad"}\n{"text": "fine"}\n')
    done = memory.import_jsonl(str(bad), project="q")
    assert done.created == 1 and [e.line for e in done.errors] == [1]
    assert "not valid UTF-8 (byte 0xff at byte 14" in done.errors[0].message
    assert [m.content for m in memory.iter_all(None) if m.project == "q"] == ["fine"]
    folder = store(tmp_path)
    (folder / "notes.jsonl").write_bytes(b'\xef\xbb\xbf{"text": "a note"}\n{"text": "x\x80"}\n')
    kept = memory.import_jsonl_store(str(folder), project="s")
    assert kept.created == 1 and [e.line for e in kept.errors] == [2]
    assert "notes.jsonl: not valid UTF-8" in kept.errors[0].message


def test_a_fifo_or_a_folder_in_a_store_is_named_not_skipped_silently(
    home: Path, tmp_path: Path
) -> None:
    # postmortems.jsonl as a FIFO and notes.jsonl as a folder were passed over without the
    # note a link gets (probe D11).
    import os

    root = store(tmp_path)
    lines(root / "lessons.jsonl", '{"text": "a lesson"}')
    os.mkfifo(root / "postmortems.jsonl")
    (root / "notes.jsonl").mkdir()
    data = report(run_memlane(home, "import", "jsonl-store", str(root), "--project", "p", "--json"))
    assert data["created"] == 1
    assert data["notes"] == [
        "postmortems.jsonl skipped: it is not a regular file (a FIFO or a device); not read",
        "notes.jsonl skipped: it is a folder; not read",
    ]
    (root / "lessons.jsonl").unlink()
    only = run_memlane(home, "import", "jsonl-store", str(root), "--project", "p")
    assert "postmortems.jsonl, notes.jsonl: not regular files, not read" in one_line_error(only, 2)
    fifo = tmp_path / "projects-fifo"
    os.mkfifo(fifo)
    for flag in ("--claude-dir", "--codex-dir"):
        refused = run_memlane(home, "recover", flag, str(fifo), "--dry-run")
        assert "is not a folder" in one_line_error(refused, 2)


@pytest.mark.parametrize("command", [("import", "memlane"), ("import", "jsonl")])
def test_an_imported_session_is_reported_and_its_transcript_path_dropped(
    home: Path, tmp_path: Path, command: tuple[str, str]
) -> None:
    """A file with one session (transcript_path /etc/shadow) and only bad memory records
    printed "nothing was imported", yet the session was stored with that path, which a
    later hook of the session naming no transcript would read (probe s33)."""
    crafted = lines(
        tmp_path / "crafted.jsonl",
        json.dumps({"record": "header", "format": "memlane-export", "version": 2}),
        json.dumps(
            {
                "record": "session",
                "id": "s-crafted",
                "project": "p",
                "started_at": "2026-01-01T00:00:00Z",
                "transcript_path": "/etc/shadow",
                "transcript_offset": 12,
            }
        ),
        json.dumps({"record": "memory", "identity": "bad"}),
        json.dumps({"record": "memory"}),
    )
    db = tmp_path / "imp.db"
    done = run_memlane(home, "--db", str(db), "--create", *command, str(crafted))
    assert done.returncode == 2, done.stderr
    assert "1 session" in done.stdout
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: 2 bad ") and "nothing" not in last, last
    noun = "line" if "jsonl" in command else "record"
    assert last.endswith(f"the 1 good {noun} was imported (or already present)"), last
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT id, transcript_path, transcript_offset FROM sessions")
        assert rows.fetchall() == [("s-crafted", None, 12)]
    finally:
        conn.close()
