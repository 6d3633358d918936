"""`memlane salvage`: what is still readable in a damaged database, as an importable JSONL
file (probe s31 D13). Real SQLite files damaged on disk, the real command in a process."""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
import stat
from pathlib import Path

import pytest

from memlane.config import load_settings
from memlane.service import open as open_memory
from memlane.store.dialect import MEMORY_COLUMNS
from tests.conftest import one_line_error, run_memlane

MEMORIES = 300
SUMMARY = re.compile(
    r"^salvaged (\d+) memor(?:y|ies) and (\d+) sessions? to .* \((\d+) memor(?:y|ies) unreadable"
)


def build(home: Path) -> Path:
    """A database of MEMORIES long memories (many pages) in 3 sessions, at ``home``."""
    settings, _ = load_settings()  # the `home` fixture set MEMLANE_HOME
    memory = open_memory(settings=settings)
    rnd = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    for i in range(MEMORIES):
        body = " ".join(rnd.choice(words) for _ in range(250))
        memory.save(
            f"note {i} zebra{i} {body}", project="api", type="decision", session_id=f"s{i % 3}"
        )
    memory.close()
    path = Path(settings.database)
    assert path.parent == home
    with sqlite3.connect(path) as conn:  # one self-contained file, as a copied one would be
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def salvage(home: Path, out: Path) -> tuple[int, int, int]:
    """Run `memlane salvage`: (memories, sessions, memories lost) from its one line."""
    done = run_memlane(home, "salvage", str(out))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    found = SUMMARY.match(lines[0])
    assert found, lines[0]
    assert "import jsonl" in lines[0]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    return int(found[1]), int(found[2]), int(found[3])


def imported(tmp_path: Path, out: Path) -> Path:
    """A fresh home with ``out`` imported by `memlane import jsonl`."""
    fresh = tmp_path / "fresh-home"
    done = run_memlane(fresh, "import", "jsonl", str(out))
    assert done.returncode == 0, done.stderr
    return fresh


def count(home: Path) -> int:
    with sqlite3.connect(home / "memlane.db") as conn:
        total = int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    conn.close()
    return total


def recovered_numbers(out: Path) -> list[int]:
    numbers = []
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["record"] == "memory":
            numbers.append(int(record["text"].split()[1]))
    return numbers


def searchable(home: Path, number: int) -> bool:
    done = run_memlane(home, "search", f"zebra{number}", "--json")
    assert done.returncode == 0, done.stderr
    return any(hit["content"].startswith(f"note {number} ") for hit in json.loads(done.stdout))


def test_a_healthy_database_salvages_every_row(home: Path, tmp_path: Path) -> None:
    db = build(home)
    before = digest(db)
    out = tmp_path / "all.jsonl"
    assert salvage(home, out) == (MEMORIES, 3, 0)
    assert digest(db) == before
    fresh = imported(tmp_path, out)
    assert count(fresh) == MEMORIES
    assert searchable(fresh, 123)
    again = run_memlane(fresh, "import", "jsonl", str(out))  # the same identities: no copies
    assert again.returncode == 0 and count(fresh) == MEMORIES


def test_a_truncated_database_gives_back_what_is_readable(home: Path, tmp_path: Path) -> None:
    db = build(home)
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)
    before = digest(db)
    refused = one_line_error(run_memlane(home, "search", "zebra1"), 4)
    assert "is damaged" in refused and "memlane salvage" in refused
    out = tmp_path / "cut.jsonl"
    recovered, _sessions, lost = salvage(home, out)
    assert 0 < recovered < MEMORIES
    assert recovered + lost == MEMORIES  # nothing was deleted: every missing id is a loss
    assert digest(db) == before
    fresh = imported(tmp_path, out)
    assert count(fresh) == recovered
    numbers = recovered_numbers(out)
    assert len(numbers) == recovered
    assert searchable(fresh, numbers[0]) and searchable(fresh, numbers[-1])


def test_pages_overwritten_in_the_middle_lose_only_their_rows(home: Path, tmp_path: Path) -> None:
    db = build(home)
    with sqlite3.connect(db) as conn:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        leaves = [
            int(row[0])
            for row in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf'"
                " ORDER BY pageno"
            )
        ]
    conn.close()
    middle = leaves[len(leaves) // 2 : len(leaves) // 2 + 3]
    with db.open("r+b") as handle:
        for page in middle:
            handle.seek((page - 1) * size + 100)
            handle.write(b"\xa5" * (size - 200))
    before = digest(db)
    out = tmp_path / "mid.jsonl"
    recovered, sessions, lost = salvage(home, out)
    assert lost > 0 and recovered + lost == MEMORIES
    assert sessions == 3
    assert digest(db) == before
    numbers = recovered_numbers(out)
    assert 0 in numbers and MEMORIES - 1 in numbers  # both ends of the table survive
    fresh = imported(tmp_path, out)
    assert count(fresh) == recovered
    missing = sorted(set(range(MEMORIES)) - set(numbers))
    assert not searchable(fresh, missing[0])
    assert searchable(fresh, numbers[len(numbers) // 2])


def test_an_existing_output_is_kept_unless_forced(home: Path, tmp_path: Path) -> None:
    build(home)
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n", encoding="utf-8")
    line = one_line_error(run_memlane(home, "salvage", str(out)), 2)
    assert "already exists" in line and "--force" in line
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert run_memlane(home, "salvage", str(out), "--force").returncode == 0
    assert out.read_text(encoding="utf-8").startswith('{"record": "header"')
    line = one_line_error(run_memlane(home, "salvage", str(tmp_path / "no" / "x.jsonl")), 2)
    assert "does not exist" in line
    line = one_line_error(run_memlane(home, "salvage", str(home / "memlane.db"), "--force"), 2)
    assert "being salvaged" in line


@pytest.mark.parametrize("kind", ["missing", "folder", "text", "empty", "foreign"])
def test_what_is_no_memlane_database_is_one_line(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target.db"
    if kind == "folder":
        target.mkdir()
    elif kind == "text":
        target.write_text("not a database at all\n" * 100, encoding="utf-8")
    elif kind == "empty":
        target.touch()
    elif kind == "foreign":
        with sqlite3.connect(target) as conn:
            conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.close()
    out = tmp_path / "out.jsonl"
    done = run_memlane(tmp_path / "home", "--db", str(target), "salvage", str(out))
    line = one_line_error(done, 4 if kind == "text" else 2)
    says = {
        "missing": "there is no database at",
        "folder": "is not a regular file",
        "text": "nothing can be salvaged from",
        "empty": "is not a memlane database",
        "foreign": "is not a memlane database",
    }
    assert says[kind] in line
    assert not out.exists()


def test_the_next_steps_name_the_database_salvaged(home: Path, tmp_path: Path) -> None:
    """`--db W/dmg.db salvage` hinted a bare `memlane restore`: pasted, it replaced the
    default database (the user's real memory) instead of the damaged one."""
    default = run_memlane(home, "save", "the default database's own memory")
    assert default.returncode == 0, default.stderr
    before = digest(home / "memlane.db")
    work = tmp_path / "w"
    work.mkdir()
    saved = run_memlane(home, "--db", "dmg.db", "save", "salvaged zebra note", cwd=work)
    assert saved.returncode == 0, saved.stderr
    done = run_memlane(home, "--db", "dmg.db", "salvage", "out.jsonl", cwd=work)
    assert done.returncode == 0, done.stderr
    hints = re.findall(r"`memlane ([^`]*)`", done.stdout)
    assert hints == ["--db out.db import jsonl out.jsonl", "--db dmg.db restore out.db"], hints
    for hint in hints:  # as the user would paste them
        confirmed = ["--yes"] if " restore " in hint else []
        ran = run_memlane(home, *hint.split(), *confirmed, cwd=work)
        assert ran.returncode == 0, ran.stderr
    assert digest(home / "memlane.db") == before
    found = run_memlane(home, "--db", "dmg.db", "search", "zebra", "--json", cwd=work)
    assert [hit["content"] for hit in json.loads(found.stdout)] == ["salvaged zebra note"]


def test_the_default_database_needs_no_db_in_the_hint(home: Path, tmp_path: Path) -> None:
    assert run_memlane(home, "save", "one memory").returncode == 0
    done = run_memlane(home, "salvage", str(tmp_path / "out.jsonl"))
    assert done.returncode == 0, done.stderr
    assert f"then `memlane restore {tmp_path / 'out.db'}`" in done.stdout


# One memory each (ids 1 to 8; 9 and 10 stay good): what memlane never writes there.
CRAFTED_MEMORIES = (
    "files = '\"abc\"'",  # read as the files a, b and c
    "tags = '{\"a\": 1}'",  # read as the tag a
    "stale = 'no'",  # read as stale
    "kind = 'bogus'",  # the import refuses it
    "revision_count = -4",
    "created_at = 4e10",  # the year 3237: ahead of the clock
    "content = ''",
    "metadata = '[1]'",
)
CRAFTED_SESSIONS = (
    "'s1', 'p', 'a', 'ended', 1.7e9, NULL, 1.7e9, x'00ff', 0, 0, NULL",  # bytes: no JSON
    "'s2', 'p', 'a', 'ended', 1.7e9, NULL, 1.7e9, NULL, 0, 0, x'01'",
    "'s3', 'p', 'a', 'weird', 1.7e9, NULL, 1.7e9, NULL, 0, 0, NULL",
    "'s4', 'p', 'a', 'ended', 1.7e9, NULL, 1.7e9, NULL, 2.5, 'many', NULL",
    "'s5', 'p', 'a', 'ended', 1.7e9, NULL, 1.7e9, NULL, 0, 1, NULL",  # the good one
)


def test_values_memlane_never_writes_are_left_out(home: Path, tmp_path: Path) -> None:
    """A crafted (or damaged) file's values of another type, or that no memory or session
    can hold, were salvaged (`"abc"` as three file names, `stale = 'no'` as stale), left
    to the import to refuse, or ended the salvage in a traceback (bytes)."""
    for number in range(10):
        assert run_memlane(home, "save", f"note {number} zebra{number}").returncode == 0
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        for memory_id, change in enumerate(CRAFTED_MEMORIES, start=1):
            conn.execute(f"UPDATE memories SET {change} WHERE id = ?", (memory_id,))
        for values in CRAFTED_SESSIONS:
            conn.execute(f"INSERT INTO sessions VALUES ({values})")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    out = tmp_path / "crafted.jsonl"
    assert salvage(home, out) == (2, 1, len(CRAFTED_MEMORIES))
    assert "4 sessions unreadable" in run_memlane(home, "salvage", str(out), "--force").stdout
    assert sorted(recovered_numbers(out)) == [8, 9]
    done = run_memlane(tmp_path / "fresh-home", "import", "jsonl", str(out))
    assert done.returncode == 0, done.stderr
    assert "0 bad lines" in done.stdout


def test_a_crafted_table_of_other_types_is_no_traceback(tmp_path: Path) -> None:
    """Untyped columns keep a number where memlane writes text: the source id 5 ended the
    salvage in a traceback (`'int' object has no attribute 'startswith'`)."""
    db = tmp_path / "crafted.db"
    columns = MEMORY_COLUMNS.replace("id,", "id INTEGER PRIMARY KEY,", 1)  # no other types
    row = "'p', NULL, 'note', 'note', '', ?, '[]', '[]', NULL, 'memlane', ?, 'h', 0, 0, NULL, 0"
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE memories ({columns})")
        for content, source_id in (("kept", "k1"), ("numbered", 5), ("bytes", b"\x00")):
            conn.execute(
                f"INSERT INTO memories VALUES (NULL, {row}, 1.7e9, 1.7e9, '{{}}')",
                (content, source_id),
            )
    conn.close()
    out = tmp_path / "out.jsonl"
    done = run_memlane(tmp_path / "home", "--db", str(db), "salvage", str(out))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "salvaged 1 memory and 0 sessions" in done.stdout
    assert "(2 memories unreadable)" in done.stdout


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_as_output_is_refused_even_forced(
    home: Path, tmp_path: Path, dangling: bool
) -> None:
    """The refusal of a link said "add --force", which refused it all the same."""
    saved = run_memlane(home, "save", "one memory")
    assert saved.returncode == 0, saved.stderr
    target = tmp_path / "elsewhere.txt"
    if not dangling:
        target.write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    for extra in ((), ("--force",)):
        line = one_line_error(run_memlane(home, "salvage", str(link), *extra), 2)
        assert "is a symbolic link" in line and "--force" not in line, line
        assert f"rm {link}" in line
    assert link.is_symlink()
    if dangling:
        assert not target.exists()
    else:
        assert target.read_text(encoding="utf-8") == "keep me\n"


def test_row_ids_far_apart_are_read_without_walking_the_gap(home: Path, tmp_path: Path) -> None:
    """A crafted file claiming 9e18 memories (in sqlite_sequence, and one row's id) was
    read range by range up to there: 1.8e16 reads, never ending."""
    for number in range(2):
        assert run_memlane(home, "save", f"note {number} zebra{number}").returncode == 0
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO memories (id, project, kind, type, content, normalized_hash, created_at,"
            " updated_at) SELECT 4611686018427387904, project, kind, type, 'note 7 far away',"
            " 'far', created_at, updated_at FROM memories WHERE id = 1"
        )
        conn.execute("UPDATE sqlite_sequence SET seq = 9000000000000000000 WHERE name = 'memories'")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    out = tmp_path / "far.jsonl"
    assert salvage(home, out) == (3, 0, 0)
    assert sorted(recovered_numbers(out)) == [0, 1, 7]
