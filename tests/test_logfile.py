"""One rule moves a log aside (:class:`memlane.logfile.LogFile`), the hooks' and the
worker's alike: a write that would take the file past its bound first moves it to
``<name>.1``, so neither file passes the bound and no line is split or lost between them."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memlane.hooks import log as hooks_log
from memlane.logfile import LogFile
from memlane.paths import UnsafePath
from memlane.worker.logs import BoundedLogFile

BOUND = 4096


def _with_log_file(path: Path, lines: list[str]) -> None:
    with LogFile(path, BOUND) as log:
        for line in lines:
            log.write(f"{line}\n".encode())


def _with_hooks_log(path: Path, lines: list[str]) -> None:
    for line in lines:
        hooks_log.log_line(path.parent, line)


def _with_worker_log(path: Path, lines: list[str]) -> None:
    handler = BoundedLogFile(path, max_bytes=BOUND, own_stdio=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    try:
        for line in lines:
            handler.handle(logging.LogRecord("t", logging.WARNING, __file__, 1, line, None, None))
    finally:
        handler.close()


@pytest.mark.parametrize("writer", [_with_log_file, _with_hooks_log, _with_worker_log])
def test_every_log_moves_aside_before_it_passes_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: Callable[[Path, list[str]], None]
) -> None:
    monkeypatch.setattr(hooks_log, "MAX_BYTES", BOUND)
    path = tmp_path / "logs" / hooks_log.LOG_NAME
    writer(path, [f"line {i} {'x' * 40}" for i in range(500)])
    backup = path.with_name(path.name + ".1")
    live, old = path.read_text().splitlines(), backup.read_text().splitlines()
    assert 0 < path.stat().st_size <= BOUND and 0 < backup.stat().st_size <= BOUND
    assert live[-1].endswith(f"line 499 {'x' * 40}")

    def number(line: str) -> int:
        return int(line.split("line ")[1].split()[0])

    assert number(old[-1]) + 1 == number(live[0])  # nothing lost at the move
    assert all(b == a + 1 for a, b in zip(map(number, old), map(number, old[1:]), strict=False))
    assert path.stat().st_mode & 0o777 == 0o600 and backup.stat().st_mode & 0o777 == 0o600


def test_a_file_past_its_bound_moves_aside_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "worker.log"
    path.write_bytes(b"x" * (BOUND + 1))
    log = LogFile(path, BOUND)
    log.open()
    log.close()
    assert log.backup.stat().st_size == BOUND + 1 and path.stat().st_size == 0
    # At its bound exactly, it is full only for the next write.
    path.write_bytes(b"y" * BOUND)
    with LogFile(path, BOUND) as full:
        full.open()
        assert full.backup.read_bytes() == b"x" * (BOUND + 1)
        full.write(b"z\n")
    assert log.backup.read_bytes() == b"y" * BOUND and path.read_bytes() == b"z\n"


def test_a_line_longer_than_the_bound_keeps_the_backup(tmp_path: Path) -> None:
    path = tmp_path / "hooks.log"
    with LogFile(path, 10) as log:
        log.write(b"first\n")
        log.write(b"a line past the bound\n")  # moves "first" aside
        log.write(b"another long line\n")  # moves the long one aside
    assert log.backup.read_bytes() == b"a line past the bound\n"
    path.unlink()
    path.touch()
    with LogFile(path, 10) as log:
        log.write(b"a line past the bound\n")  # an empty file is not moved over the backup
    assert log.backup.read_bytes() == b"a line past the bound\n"


def test_each_new_file_is_handed_over_before_the_old_one_closes(tmp_path: Path) -> None:
    opened: list[int] = []
    path = tmp_path / "worker.log"
    with LogFile(path, 8, on_open=opened.append) as log:
        log.write(b"12345\n")
        log.write(b"67890\n")
    assert len(opened) == 2
    assert path.read_bytes() == b"67890\n" and log.backup.read_bytes() == b"12345\n"


def test_a_link_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    path = tmp_path / "logs" / "hooks.log"
    path.parent.mkdir(mode=0o700)
    path.symlink_to(victim)
    with pytest.raises(UnsafePath, match="symbolic link"), LogFile(path, BOUND) as log:
        log.write(b"line\n")
    assert victim.read_text() == "mine\n" and path.is_symlink()


def _others_can_write(path: Path) -> None:
    path.write_text("theirs\n")
    path.chmod(0o666)


def _another_users(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    path.write_text("theirs\n")
    os.chown(path, 65534, 65534)


def _hard_link(path: Path) -> None:
    elsewhere = path.parent.parent / "elsewhere"
    elsewhere.write_text("theirs\n")
    elsewhere.chmod(0o600)
    os.link(elsewhere, path)


@pytest.mark.parametrize(
    ("plant", "refusal"),
    [
        (_others_can_write, "can be written by other users"),
        (_another_users, "belongs to"),
        (_hard_link, "hard links"),
    ],
)
def test_a_log_planted_by_someone_else_is_never_appended_to(
    tmp_path: Path, plant: Callable[[Path], None], refusal: str
) -> None:
    """`serve --log-file /tmp/x.log`, where another user made x.log 0666 (or made it a
    hard link to a file of theirs): the worker's output went into a file they read and
    write. A log is appended to only when it is the user's alone, as every state file."""
    path = tmp_path / "logs" / "w.log"
    path.parent.mkdir(mode=0o700)
    plant(path)
    with pytest.raises(UnsafePath, match=refusal), LogFile(path, BOUND) as log:
        log.write(b"the owner's line\n")
    assert path.read_text() == "theirs\n"


def test_two_writers_at_the_bound_move_the_full_file_aside_once(tmp_path: Path) -> None:
    # Two hooks with the same full log open: the second must not move the first one's
    # fresh file over the backup (the backup would then hold a line, the history lost).
    path = tmp_path / "hooks.log"
    path.write_bytes(b"h" * (BOUND - 10))
    first, second = LogFile(path, BOUND), LogFile(path, BOUND)
    try:
        first.open()
        second.open()
        first.write(b"a" * 20 + b"\n")  # moves the full file aside, starts a new one
        second.write(b"b" * 20 + b"\n")  # its file was moved: it only reopens
    finally:
        first.close()
        second.close()
    assert first.backup.read_bytes() == b"h" * (BOUND - 10)
    assert path.read_bytes() == b"a" * 20 + b"\n" + b"b" * 20 + b"\n"
