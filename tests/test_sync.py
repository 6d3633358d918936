"""Sync between simulated machines (one MEMLANE_HOME each) through a shared folder."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane.config import load_settings
from memlane.interop.sync import sync_status
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.conftest import MEMLANE_CMD, run_env, run_memlane, without_dac_override

Factory = Callable[[str], Memory]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[Factory]:
    """Open a memory on its own MEMLANE_HOME: one simulated machine per name."""
    opened: list[Memory] = []

    def make(name: str) -> Memory:
        monkeypatch.setenv("MEMLANE_HOME", str(tmp_path / name))
        settings, _warnings = load_settings()
        memory = open_memory(settings=settings)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


def contents(memory: Memory) -> set[str]:
    return {m.content for m in memory.iter_all(None)}


def the(memory: Memory, content: str) -> int:
    [found] = [m.id for m in memory.iter_all(None) if m.content == content]
    return found


def test_two_machines_exchange_both_ways_with_deletions(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b = machine("laptop"), machine("desktop")
    a.session_start("s-a", project="api", now=datetime(2025, 1, 1, tzinfo=UTC))
    a.save("A1 use WAL", project="api", type="decision", session_id="s-a")
    a.save("A2 pin numpy", project="api", type="lesson")
    b.save("B1 cache wheels in CI", project="api", type="decision")
    b.save("B2 blog builds with make", project="blog", type="note")

    assert a.sync_push(str(shared)).memories == 2
    assert b.sync_push(str(shared)).memories == 2
    pulled_a = a.sync_pull(str(shared))
    pulled_b = b.sync_pull(str(shared))
    assert (pulled_a.created, pulled_b.created) == (2, 2)
    assert pulled_b.sessions == 1
    assert (
        contents(a)
        == contents(b)
        == {
            "A1 use WAL",
            "A2 pin numpy",
            "B1 cache wheels in CI",
            "B2 blog builds with make",
        }
    )
    assert b.get_session("s-a").project == "api"

    # nothing echoes back: received memories are not pushed again
    assert a.sync_push(str(shared)).chunks == ()
    assert b.sync_push(str(shared)).chunks == ()
    assert a.sync_pull(str(shared)).created == 0

    # deletions both ways: B deletes its copy of A1; A deletes its own A2 and its copy of B1
    b.delete(id=the(b, "A1 use WAL"))
    a.delete(id=the(a, "A2 pin numpy"))
    a.delete(id=the(a, "B1 cache wheels in CI"))
    a.save("A3 added later", project="api", type="note")
    pushed_a = a.sync_push(str(shared))
    pushed_b = b.sync_push(str(shared))
    assert (pushed_a.tombstones, pushed_a.memories) == (2, 1)
    assert (pushed_b.tombstones, pushed_b.memories) == (1, 0)
    assert a.sync_pull(str(shared)).deleted == 1
    report_b = b.sync_pull(str(shared))
    assert (report_b.deleted, report_b.created) == (2, 1)
    assert contents(a) == contents(b) == {"B2 blog builds with make", "A3 added later"}

    # and it is stable: nothing more to do on either side
    for m in (a, b):
        assert m.sync_push(str(shared)).chunks == ()
        report = m.sync_pull(str(shared))
        assert (report.created, report.updated, report.deleted) == (0, 0, 0)


def test_edits_travel_and_newer_wins(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b = machine("a"), machine("b")
    saved = a.save("retry budget is 3", project="api", type="decision")
    a.sync_push(str(shared))
    b.sync_pull(str(shared))
    copy = the(b, "retry budget is 3")

    b.update(copy, content="retry budget is 5")
    b.sync_push(str(shared))
    assert a.sync_pull(str(shared)).updated == 1
    assert a.get(saved.id).content == "retry budget is 5"
    # the original keeps its id on the machine it was born on
    assert contents(a) == {"retry budget is 5"}
    assert a.sync_push(str(shared)).chunks == ()

    a.update(saved.id, content="retry budget is 7")
    a.sync_push(str(shared))
    b.sync_pull(str(shared))
    assert b.get(copy).content == "retry budget is 7"


def test_deletion_wins_over_a_concurrent_edit(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b = machine("a"), machine("b")
    saved = a.save("flaky test list", project="api", type="note")
    a.sync_push(str(shared))
    b.sync_pull(str(shared))
    a.delete(id=saved.id)
    b.update(the(b, "flaky test list"), content="flaky test list, updated")
    a.sync_push(str(shared))
    b.sync_push(str(shared))
    a.sync_pull(str(shared))
    b.sync_pull(str(shared))
    assert contents(a) == contents(b) == set()
    a.sync_pull(str(shared))
    assert contents(a) == set()


def test_concurrent_pushes_do_not_conflict(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b, c = machine("a"), machine("b"), machine("c")
    for i in range(300):
        a.save(f"a note {i}", project="p", type="note")
        b.save(f"b note {i}", project="p", type="note")
    errors: list[BaseException] = []

    def run(memory: Memory) -> None:
        try:
            memory.sync_push(str(shared))
        except BaseException as exc:  # collected and re-raised by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,)) for m in (a, b, a)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    machines = sorted(p.name for p in (shared / "machines").iterdir())
    assert len(machines) == 2
    for machine_dir in (shared / "machines").iterdir():
        manifest = json.loads((machine_dir / "manifest.json").read_text())
        ids = [entry["id"] for entry in manifest["chunks"]]
        assert len(ids) == len(set(ids)) == 1  # the two pushes of `a` were serialized
        for chunk_id in ids:
            raw = gzip.decompress((machine_dir / "chunks" / f"{chunk_id}.jsonl.gz").read_bytes())
            assert hashlib.sha256(raw).hexdigest() == chunk_id
    report = c.sync_pull(str(shared))
    assert report.created == 600
    assert report.details["chunks"] == 2


def test_layout_is_append_only(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a = machine("a")
    a.save("first", project="p")
    first = a.sync_push(str(shared))
    [chunk] = first.chunks
    chunk_file = shared / "machines" / first.machine / "chunks" / f"{chunk}.jsonl.gz"
    before = chunk_file.read_bytes()
    a.save("second", project="p")
    second = a.sync_push(str(shared))
    assert chunk_file.read_bytes() == before
    files = sorted(str(p.relative_to(shared)) for p in shared.rglob("*") if p.is_file())
    assert files == sorted(
        [
            f"machines/{first.machine}/manifest.json",
            f"machines/{first.machine}/chunks/{chunk}.jsonl.gz",
            f"machines/{first.machine}/chunks/{second.chunks[0]}.jsonl.gz",
        ]
    )
    assert oct(chunk_file.stat().st_mode & 0o777) == "0o600"


def test_damaged_chunk_is_reported_then_retried(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b = machine("a"), machine("b")
    a.save("one", project="p")
    a.save("two", project="p")
    pushed = a.sync_push(str(shared))
    path = shared / "machines" / pushed.machine / "chunks" / f"{pushed.chunks[0]}.jsonl.gz"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    report = b.sync_pull(str(shared))
    assert len(report.errors) == 1
    assert pushed.chunks[0][:12] in report.errors[0].message
    assert contents(b) == set()  # nothing half-applied
    path.write_bytes(good)
    assert b.sync_pull(str(shared)).created == 2
    status = sync_status(b.core, str(shared))
    assert status["machines"][pushed.machine] == {"chunks": 1, "pending": 0}


def test_cli_sync_between_two_homes(tmp_path: Path) -> None:
    shared = tmp_path / "repo"
    shared.mkdir()  # push refuses a missing folder (a typo)
    homes = [tmp_path / "h1", tmp_path / "h2"]
    envs = [run_env(h) for h in homes]

    def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*MEMLANE_CMD, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done

    run(envs[0], "save", "from machine one", "--project", "P")
    run(envs[1], "save", "from machine two", "--project", "P")
    assert "pushed 1 memory" in run(envs[0], "sync", "push", "--dir", str(shared)).stdout
    run(envs[1], "sync", "push", "--dir", str(shared))
    assert "imported 1 new" in run(envs[1], "sync", "pull", "--dir", str(shared)).stdout
    status = run(envs[0], "sync", "status", "--dir", str(shared)).stdout
    assert "1 chunk, 1 to pull" in status
    assert "(this machine): 1 chunk, 0 to pull" in status
    data = json.loads(run(envs[0], "sync", "pull", "--dir", str(shared), "--json").stdout)
    assert data["created"] == 1
    found = run(envs[0], "search", "machine", "--project", "P", "--json").stdout
    assert {h["content"] for h in json.loads(found)} == {"from machine one", "from machine two"}


def test_unusual_line_separators_inside_text_travel(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b = machine("a"), machine("b")
    text = "first\u2028second\x85third\u2029fourth"  # (\x1c-\x1e: C0, not stored)
    a.save(text, project="p", metadata={"k\u2029": "v\x85"})
    a.sync_push(str(shared))
    report = b.sync_pull(str(shared))
    assert report.errors == ()
    assert contents(b) == {text}


OTHER = "bbbbbbbbbbbb"


def plant(shared: Path, raw: bytes, machine: str = OTHER) -> str:
    """A hash-valid chunk of ``raw`` listed in another machine's manifest; its id."""
    folder = shared / "machines" / machine
    (folder / "chunks").mkdir(parents=True, exist_ok=True)
    chunk_id = hashlib.sha256(raw).hexdigest()
    (folder / "chunks" / f"{chunk_id}.jsonl.gz").write_bytes(gzip.compress(raw))
    manifest = {"format": "memlane-sync", "version": 1, "machine": machine}
    (folder / "manifest.json").write_text(json.dumps(manifest | {"chunks": [{"id": chunk_id}]}))
    return chunk_id


def test_a_chunk_of_many_bad_records_is_one_bad_chunk(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    a, b = machine("a"), machine("b")
    a.save("one", project="p")
    a.sync_push(str(shared))
    chunk_id = plant(shared, b"{}\n" * 150)
    for _ in range(2):  # not marked as applied: refused again, still as one problem
        report = b.sync_pull(str(shared))
        assert report.error_count == 1
        assert f"{OTHER}/{chunk_id[:12]}: more than 100 bad records" in report.errors[0].message
    assert contents(b) == {"one"}
    b.save("two", project="p")
    assert b.sync_push(str(shared)).memories == 1


def test_a_future_chunk_waits_whole(machine: Factory, tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    b = machine("b")
    header = {"record": "header", "format": "memlane-export", "version": 999}
    plant(shared, (json.dumps(header) + "\n" + json.dumps({"text": "new"}) + "\n").encode())
    report = b.sync_pull(str(shared))
    assert len(report.errors) == 1
    assert "export version 999 is not supported" in report.errors[0].message
    assert contents(b) == set()


def test_push_survives_records_and_entries_that_are_not_objects(
    machine: Factory, tmp_path: Path
) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    b = machine("b")
    b.save("one", project="p")
    first = b.sync_push(str(shared))
    plant(shared, b'[1]\n"str"\nnull\n')
    assert len(b.sync_pull(str(shared)).errors) == 3
    own = shared / "machines" / first.machine / "manifest.json"
    manifest = json.loads(own.read_text())
    manifest["chunks"].append(5)
    own.write_text(json.dumps(manifest))
    b.save("two", project="p")
    pushed = b.sync_push(str(shared))
    assert pushed.memories == 1
    ids = [e["id"] for e in json.loads(own.read_text())["chunks"] if isinstance(e, dict)]
    assert ids == [first.chunks[0], pushed.chunks[0]]


def test_an_unreadable_machine_folder_is_reported_and_the_rest_used(tmp_path: Path) -> None:
    shared = tmp_path / "sync"
    shared.mkdir()  # push refuses a missing folder (a typo)
    envs = [run_env(tmp_path / "h1"), run_env(tmp_path / "h2")]
    prefix = [*without_dac_override(), *MEMLANE_CMD]

    def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, *args], env=env, capture_output=True, text=True)

    run(envs[0], "save", "from one", "--project", "P")
    assert run(envs[0], "sync", "push", "--dir", str(shared)).returncode == 0
    locked = shared / "machines" / "cccccccccccc"
    locked.mkdir()
    (locked / "manifest.json").write_text("{}")
    locked.chmod(0)
    try:
        pulled = run(envs[1], "sync", "pull", "--dir", str(shared))
        assert pulled.returncode == 2, pulled.stderr
        assert "imported 1 new" in pulled.stdout
        assert "cccccccccccc: [Errno 13] Permission denied" in pulled.stderr
        status = run(envs[1], "sync", "status", "--dir", str(shared))
        assert status.returncode == 0, status.stderr
        assert "skipped cccccccccccc" in status.stderr
        run(envs[1], "save", "from two", "--project", "P")
        pushed = run(envs[1], "sync", "push", "--dir", str(shared))
        assert pushed.returncode == 0, pushed.stderr
        assert "pushed 1 memory" in pushed.stdout
    finally:
        locked.chmod(0o700)


def test_push_refuses_a_missing_folder_unless_told_to_create_it(tmp_path: Path) -> None:
    env = run_env(tmp_path / "home")

    def push(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMLANE_CMD, "sync", "push", *args], env=env, capture_output=True, text=True
        )

    subprocess.run([*MEMLANE_CMD, "save", "a note to share"], env=env, check=True)
    typo = tmp_path / "memlane-snyc"
    refused = push("--dir", str(typo))
    assert refused.returncode == 2  # it made the folder and pushed into it
    assert refused.stderr == (
        f"error: no sync folder at {typo}: check the path, or add --create to make it\n"
    )
    assert not typo.exists()
    deeper = tmp_path / "no-such-parent" / "sync"
    too_far = push("--dir", str(deeper), "--create")
    assert too_far.returncode == 2 and "does not exist either" in too_far.stderr
    assert not deeper.parent.exists()
    made = push("--dir", str(typo), "--create")
    assert made.returncode == 0, made.stderr
    assert typo.stat().st_mode & 0o777 == 0o700  # chunks hold the memories' text
    assert push("--dir", str(typo)).returncode == 0  # there now: no flag needed


def test_status_and_pull_of_a_missing_folder_say_so(machine: Factory, tmp_path: Path) -> None:
    # A mistyped path showed "nothing pending" (exit 0) in status, as if all were applied.
    from memlane.errors import InvalidInput

    a = machine("a")
    typo = str(tmp_path / "memlane-snyc")
    for look in (lambda: sync_status(a.core, typo), lambda: a.sync_pull(typo)):
        with pytest.raises(InvalidInput, match=r"no sync folder at .*memlane-snyc"):
            look()


def test_a_chunk_damaged_inside_its_gzip_data_is_one_error_and_sync_goes_on(
    machine: Factory, tmp_path: Path
) -> None:
    # Header intact, data flipped: zlib's error escaped, and every pull and push of the
    # machine ended in a traceback (anyone who can write the shared folder could do it).
    shared = tmp_path / "sync"
    shared.mkdir()
    a, b = machine("a"), machine("b")
    a.save("one", project="p")
    pushed = a.sync_push(str(shared))
    path = shared / "machines" / pushed.machine / "chunks" / f"{pushed.chunks[0]}.jsonl.gz"
    good = path.read_bytes()
    path.write_bytes(good[:10] + bytes(x ^ 0xFF for x in good[10:-8]) + good[-8:])
    report = b.sync_pull(str(shared))
    assert len(report.errors) == 1 and "damaged" in report.errors[0].message
    assert contents(b) == set()
    b.save("two", project="p")
    assert b.sync_push(str(shared)).chunks  # push reads the folder too, and goes on
    path.write_bytes(good)
    assert b.sync_pull(str(shared)).created == 1


@pytest.mark.parametrize("linked", ["machines", "machine", "chunks"])
def test_push_refuses_a_link_planted_in_the_shared_folder(
    machine: Factory, tmp_path: Path, linked: str
) -> None:
    # A symlinked machines/<id>/chunks (git stores links: anyone who can commit to the sync
    # repository) made push write every memory's chunk where it pointed (probe D5).
    from memlane.errors import InvalidInput
    from memlane.interop.identity import instance_id

    shared = tmp_path / "sync"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    a = machine("a")
    a.save("a private decision", project="p")
    own = shared / "machines" / instance_id(a.core)
    link = {"machines": shared / "machines", "machine": own, "chunks": own / "chunks"}[linked]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InvalidInput, match="is a link or not a directory; nothing pushed"):
        a.sync_push(str(shared))
    assert list(elsewhere.rglob("*")) == []
    link.unlink()
    pushed = a.sync_push(str(shared))  # the link removed: pushed, and every level is plain
    assert pushed.memories == 1 and (own / "chunks").is_dir() and not own.is_symlink()


def test_pull_problems_give_the_line_in_the_chunk_not_a_count(
    home: Path, machine: Factory, tmp_path: Path
) -> None:
    # "line 0: eeee…: manifest …" and "line 1: aaaa…/de99… line 3: …" counted problems; a
    # chunk with one non-JSON record said "Expecting value: line 1 column 1" (probe D12).
    shared = tmp_path / "sync"
    shared.mkdir()
    b = machine("b")
    header = json.dumps({"record": "header", "format": "memlane-export", "version": 2})
    typed = plant(shared, (header + '\n{"text": "ok"}\n{"text": 5}\n').encode())
    broken_manifest = shared / "machines" / ("e" * 12)
    broken_manifest.mkdir()
    (broken_manifest / "manifest.json").write_text("not json")
    garbled = plant(shared, (header + '\n{"text": "fine"}\nnot json\n').encode(), "c" * 12)
    report = b.sync_pull(str(shared))
    by_line = sorted((e.line, e.message) for e in report.errors)
    assert [line for line, _m in by_line] == [0, 0, 3], by_line
    chunk, manifest, record = (m for _l, m in by_line)
    assert manifest.startswith(f"manifest of {'e' * 12}: ")
    assert chunk.startswith(f"chunk {'c' * 12}/{garbled[:12]}: line 3: not valid JSON")
    assert record.startswith(f"chunk {OTHER}/{typed[:12]}: ")
    shown = run_memlane(home, "sync", "pull", "--dir", str(shared))
    assert f"  line 3: chunk {OTHER}/{typed[:12]}: " in shown.stderr
    assert f"  manifest of {'e' * 12}: " in shown.stderr and "line 0" not in shown.stderr


def test_a_pull_from_hundreds_of_machines_keeps_few_folders_open(
    home: Path, tmp_path: Path
) -> None:
    """Pull (and status) held two descriptors per machine folder for the whole walk: under
    ``ulimit -n 128``, 100 machines ran out, and the manifests past that point were
    reported unreadable ("Too many open files"), their memories not pulled."""
    shared = tmp_path / "sync"
    shared.mkdir()
    machines = [f"{n:012x}" for n in range(1, 101)]
    header = {"format": "memlane-export", "record": "header", "version": 2}
    for machine in machines:
        record = {
            "record": "memory", "identity": f"uid:{machine}:1", "id": f"memlane:{machine}:1",
            "memlane_id": 1, "kind": "note", "type": "note", "project": "P",
            "text": f"a note from {machine}", "title": "", "files": [], "tags": [],
            "metadata": {}, "source": "memlane", "source_id": None, "topic_key": None,
            "session": None, "stale": False, "access_count": 0, "revision_count": 0,
            "last_accessed_at": None, "created_at": "2026-01-02T03:04:05+00:00",
            "updated_at": "2026-01-02T03:04:05+00:00",
        }  # fmt: skip
        plant(shared, f"{json.dumps(header)}\n{json.dumps(record)}\n".encode(), machine)
    limited = ["sh", "-c", 'ulimit -n 128 && exec "$@"', "sh", *MEMLANE_CMD]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*limited, *args, "--dir", str(shared)]
        return subprocess.run(command, env=run_env(home), capture_output=True, text=True)

    status = run("sync", "status")
    assert status.returncode == 0 and "Too many open files" not in status.stderr, status.stderr
    pulled = run("sync", "pull")
    assert pulled.returncode == 0, pulled.stderr
    assert "imported 100 new" in pulled.stdout, pulled.stdout
