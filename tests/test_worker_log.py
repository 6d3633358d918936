"""The worker's log stays small: a flood of malformed requests, which anyone on the machine
may send without a token, is one line a minute with a count; the file moves aside before
it passes its bound (:mod:`memlane.worker.logs`)."""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

from memlane.worker.logs import BoundedLogFile, RepeatFilter
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import free_port

INVALID = "Invalid HTTP request received."


def _memlane(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = run_env(home)
    env["MEMLANE_EMBEDDER"] = "none"
    return subprocess.run(
        [*MEMLANE_CMD, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _malformed(port: int, count: int) -> None:
    """``count`` connections, each sending bytes that are not HTTP and reading the answer."""
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"\x16\x03\x01garbage not http\r\n\r\n")
            while sock.recv(4096):
                pass


def _accounted(text: str) -> int:
    """Malformed requests the log tells of: lines written plus the counts left out."""
    total = 0
    for line in text.splitlines():
        if INVALID not in line:
            continue
        left_out = re.search(r"\[([\d,]+) more like this", line)
        total += int(left_out.group(1).replace(",", "")) if left_out else 0
        if f"'{INVALID}'" not in line:  # not the shutdown report: a request of its own
            total += 1
    return total


def test_a_flood_of_malformed_requests_leaves_a_short_log_that_says_so(home: Path) -> None:
    port, threads, each = free_port(), 4, 750
    started = _memlane(home, "serve", "--daemon", "--port", str(port))
    try:
        assert started.returncode == 0, started.stderr
        senders = [threading.Thread(target=_malformed, args=(port, each)) for _ in range(threads)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(timeout=300)
        assert not any(sender.is_alive() for sender in senders)
    finally:
        stopped = _memlane(home, "stop")
    assert stopped.returncode == 0, stopped.stderr
    log = home / "logs" / "worker.log"
    text = log.read_text()
    # One line per request was ~60 bytes each: 180 KB for these 3,000.
    assert log.stat().st_size < 16 * 1024, text[-2000:]
    assert text.count(INVALID) <= 5, text[-2000:]
    assert _accounted(text) == threads * each, text
    assert log.stat().st_mode & 0o777 == 0o600


def test_the_log_file_moves_aside_before_it_passes_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "worker.log"
    handler = BoundedLogFile(path, max_bytes=4096, own_stdio=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    try:
        for i in range(2000):
            record = logging.LogRecord("t", logging.WARNING, __file__, 1, "line %d", (i,), None)
            handler.handle(record)
    finally:
        handler.close()
    backup = path.with_name("worker.log.1")
    assert 0 < path.stat().st_size <= 4096
    assert 0 < backup.stat().st_size <= 4096
    assert path.read_text().splitlines()[-1] == "line 1999"
    # No line lost between the two files: the backup ends just before the live one begins.
    first_live = int(path.read_text().splitlines()[0].split()[1])
    assert backup.read_text().splitlines()[-1] == f"line {first_live - 1}"
    assert path.stat().st_mode & 0o777 == 0o600 and backup.stat().st_mode & 0o777 == 0o600
    # A file over the bound at start (left by an earlier worker) moves aside at once.
    path.write_text("x" * 5000)
    BoundedLogFile(path, max_bytes=4096, own_stdio=False).close()
    assert backup.stat().st_size == 5000 and path.stat().st_size == 0


def test_what_is_printed_rather_than_logged_counts_too(tmp_path: Path) -> None:
    """The log file is the process's stdout and stderr: a print or a traceback lands in
    the current file, and the next record moves it aside when it is full."""
    path = tmp_path / "logs" / "worker.log"
    script = (
        "import logging, pathlib, sys\n"
        "from memlane.worker.logs import BoundedLogFile\n"
        f"logging.getLogger().addHandler(BoundedLogFile(pathlib.Path({str(path)!r}), 4096))\n"
        "for i in range(300):\n"
        "    print('printed', i, 'x' * 40, flush=True)\n"
        "    print('to stderr', i, file=sys.stderr, flush=True)\n"
        "    logging.getLogger('t').warning('logged %d', i)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")  # all of it went to the file
    text = path.read_text()
    assert path.stat().st_size <= 4096 + 100  # the prints after the last record
    assert "logged 299" in text and "printed 299" in text and "to stderr 299" in text
    assert path.with_name("worker.log.1").stat().st_size <= 4096 + 100


def _record(msg: str = INVALID, *args: object) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, msg, args, None)


def test_a_repeated_line_is_written_once_per_interval_with_a_count() -> None:
    now = [0.0]
    repeats = RepeatFilter(60, clock=lambda: now[0])
    assert repeats.filter(_record())
    assert not any(repeats.filter(_record()) for _ in range(99))
    assert repeats.filter(_record("Unsupported upgrade request."))  # another line
    assert repeats.filter(_record("peer %s gone", "a"))
    assert not repeats.filter(_record("peer %s gone", "b"))  # one template
    now[0] = 61.0
    later = _record()
    assert repeats.filter(later)
    assert later.getMessage() == f"{INVALID} [99 more like this in the last 61 s, not logged]"
    assert not repeats.filter(_record())
    assert repeats.flush() == [
        f"uvicorn.error: '{INVALID}' [1 more like this in the last 0 s, not logged]",
        "uvicorn.error: 'peer %s gone' [1 more like this in the last 61 s, not logged]",
    ]
    assert repeats.flush() == []
