"""The worker's runtime file and token, and starting it detached (stdlib only).

The worker records ``{"pid", "host", "port", "started_at", "db"}`` in
``<runtime_dir>/worker.json``; its bearer token lives in ``<data_dir>/token``
(0600, generated once). The CLI reads both to talk to the worker over HTTP.
Hooks never do: they reach the worker only through the uid-checked relay
socket (:mod:`memlane.hooks.relay`), and use this module only to start it.

`memlane dashboard` hands the browser the one-time sign-in URL through a
private page in the runtime directory (:func:`write_signin_page`), never on
a command line, which every local user can read. For the same reason a process
started here gets its database (a ``postgresql://`` URL may carry a password) as
``MEMLANE_DB`` in its environment, never as ``--db`` (:func:`spawn_detached`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from memlane.paths import (
    StatePaths,
    ensure_state_dir,
    open_private_append,
    read_private_text,
    write_private_text,
)


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    pid: int
    host: str
    port: int
    started_at: float
    db: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def runtime_file(paths: StatePaths) -> Path:
    return paths.runtime_dir / "worker.json"


def token_file(paths: StatePaths) -> Path:
    return paths.data_dir / "token"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def runs_memlane(pid: int) -> bool:
    """True unless /proc says ``pid`` is gone, a zombie or some other program (a pid
    reused after the worker died: its record in the state folder outlives a reboot)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid_alive(pid)  # no /proc: trust the pid
    return b"memlane" in cmdline  # a zombie's is empty


def is_zombie(pid: int) -> bool:
    """True when /proc says ``pid`` has exited and waits for its parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def read_runtime(paths: StatePaths) -> WorkerInfo | None:
    """The running worker's record, or None (a stale record is left for the worker to clean)."""
    try:
        data = json.loads(read_private_text(runtime_file(paths)))
        info = WorkerInfo(
            pid=int(data["pid"]),
            host=str(data["host"]),
            port=int(data["port"]),
            started_at=float(data["started_at"]),
            db=str(data["db"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if pid_alive(info.pid) else None


def write_runtime(paths: StatePaths, info: WorkerInfo) -> None:
    ensure_state_dir(paths.runtime_dir, paths)
    write_private_text(
        runtime_file(paths),
        json.dumps(
            {
                "pid": info.pid,
                "host": info.host,
                "port": info.port,
                "started_at": info.started_at,
                "db": info.db,
            }
        ),
    )


def remove_runtime(paths: StatePaths) -> None:
    runtime_file(paths).unlink(missing_ok=True)


def load_or_create_token(paths: StatePaths) -> str:
    """The worker's bearer token, generated once and stored 0600.

    Raises UnsafePath for a token file that is a link or that another user owns
    or can write: a planted token would be trusted.
    """
    path = token_file(paths)
    try:
        token = read_private_text(path).strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    import secrets  # not at import: it loads random, unneeded on the hook path

    token = secrets.token_urlsafe(32)
    write_private_text(path, token + "\n")
    return token


# The identity check of the worker's HTTP clients (memlane.worker.client).
CHALLENGE_HEADER = "x-memlane-challenge"
PROOF_HEADER = "x-memlane-proof"
# Where the worker's front door leaves an /mcp request's write budget (ASGI scope state):
# a callable that takes one write from the client's bucket and returns the seconds to
# wait (0: allowed). Only the MCP app knows which JSON-RPC message writes.
WRITE_BUDGET_STATE_KEY = "memlane.write_budget"
# Where the worker's activity tracker leaves a callable the front door calls when it
# admits an authenticated request: only those keep the worker from its idle exit.
ADMITTED_STATE_KEY = "memlane.admitted"


def worker_proof(token: str, port: int, nonce: str) -> str:
    """What only a holder of ``token`` can answer to ``nonce`` on ``port``.

    The port is part of it so that a program on another port cannot pass a
    client's challenge on to the real worker and replay its answer.
    """
    import hashlib
    import hmac

    message = f"memlane-worker-proof\n{port}\n{nonce}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def read_token(paths: StatePaths) -> str | None:
    """The token, or None when there is none; UnsafePath as :func:`load_or_create_token`."""
    try:
        return read_private_text(token_file(paths)).strip() or None
    except OSError:
        return None


# How long a dashboard sign-in code lives (the worker's LoginCodes): long enough for a
# browser's cold start, or to copy the printed URL from the terminal.
LOGIN_CODE_TTL_S = 120.0
SIGNIN_PAGE_PREFIX = "dashboard-signin-"
_SIGNIN_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0; url={link}">
<title>memlane dashboard</title>
</head>
<body>
<p>Opening the memlane dashboard&hellip; If nothing happens,
<a href="{link}">follow this link</a> (it works once, for 2 minutes).</p>
</body>
</html>
"""


def write_signin_page(paths: StatePaths, url: str) -> Path:
    """A new 0600 page in the runtime directory that sends a browser on to ``url``.

    ``url`` carries a one-time sign-in code; a browser's command line (and a
    launcher's environment) can be read by every local user in ``/proc``, so
    the browser is given this page's path instead and a meta refresh (no
    script: nothing a CSP or a disabled JavaScript stops) takes it to ``url``.
    The name is random (two `memlane dashboard` at once do not share a page);
    :func:`remove_stale_signin_pages` deletes the page once its code is dead.
    """
    import html
    import secrets

    ensure_state_dir(paths.runtime_dir, paths)
    page = paths.runtime_dir / f"{SIGNIN_PAGE_PREFIX}{secrets.token_hex(8)}.html"
    write_private_text(page, _SIGNIN_PAGE.format(link=html.escape(url, quote=True)))
    return page


def remove_stale_signin_pages(
    paths: StatePaths, max_age_s: float = LOGIN_CODE_TTL_S, now: float | None = None
) -> list[Path]:
    """Delete sign-in pages older than ``max_age_s`` (their code has expired); the deleted.

    A page is not deleted when the browser was sent to it: the browser may
    read it a moment later (a launcher returns before the page loads). It is
    deleted by the next `memlane dashboard` once its code is dead; until then
    only the user can read it (0600, in their private runtime directory).
    """
    import time

    moment = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(paths.runtime_dir))
    except FileNotFoundError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(SIGNIN_PAGE_PREFIX) and entry.name.endswith(".html")):
            continue
        try:
            stale = moment - entry.stat(follow_symlinks=False).st_mtime > max_age_s
            if stale:
                os.unlink(entry.path)  # a link is removed itself, never its target
                removed.append(Path(entry.path))
        except FileNotFoundError:
            continue  # removed by another `memlane dashboard` a moment ago
    return removed


SPAWN_STAMP = "worker.spawn"


def spawn_worker_detached(
    paths: StatePaths,
    *,
    db: str | None = None,
    args: tuple[str, ...] = (),
    min_interval_s: float = 30.0,
    env: dict[str, str] | None = None,
) -> int | None:
    """Start ``memlane serve`` in its own session without waiting for it; its pid or None.

    For the SessionStart hook: returns at once (the worker needs ~1 s to answer).
    Skipped (None) when a worker is already running or another start happened in the
    last ``min_interval_s`` seconds (a worker that fails to start must not be
    respawned by every hook). Output goes to ``<log_dir>/worker.log`` (0600), which
    the worker keeps bounded (``serve --log-file``, :mod:`memlane.worker.logs`).
    """
    import sys
    import time

    running = read_runtime(paths)
    if running is not None and runs_memlane(running.pid):
        return None
    ensure_state_dir(paths.runtime_dir, paths)
    stamp = paths.runtime_dir / SPAWN_STAMP
    try:
        age = time.time() - stamp.stat().st_mtime  # negative: stamped by a clock ahead
        if min_interval_s > 0 and 0 <= age < min_interval_s:
            return None
    except FileNotFoundError:
        pass
    write_private_text(stamp, str(time.time()))
    log_file = paths.log_dir / "worker.log"
    command = [sys.executable, "-m", "memlane", "serve", *args, "--log-file", str(log_file)]
    cwd = paths.data_dir if paths.data_dir.is_dir() else None
    return spawn_detached(command, log_file, cwd=cwd, env=env, db=db)


def spawn_detached(
    command: list[str],
    log_file: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    db: str | None = None,
) -> int | None:
    """Run ``command`` in the background in its own session; its pid, or None on failure.

    A short-lived sh starts it and exits at once: the command is reparented to
    init, so the caller (a hook) never waits and is never left with a child to
    reap. Its stdout and stderr append to ``log_file`` (0600).

    ``db``: the database the command is to open (a ``--db`` or ``MEMLANE_DB``
    target), handed over as ``MEMLANE_DB`` in its environment (``env``, default
    this process's). Never as ``--db``: every local user can read a command line
    (``/proc/PID/cmdline``, ``ps``), and a ``postgresql://`` URL may hold a password;
    an environment only its owner can. A target taken from ``MEMLANE_DB`` leaves the
    environment as it was, so a worker started here describes itself to the hook
    relay as its spawner would (:func:`memlane.hooks.relay.env_fingerprint`).
    """
    import subprocess

    if db:
        if "://" not in db and db != ":memory:":
            # The child may run elsewhere (the worker in the data folder): a relative path
            # is the caller's.
            db = os.path.abspath(db)
        env = {**(os.environ if env is None else env), "MEMLANE_DB": db}
    fd = open_private_append(log_file)
    script = '"$@" </dev/null >&2 & echo $!'
    try:
        process = subprocess.Popen(
            ["/bin/sh", "-c", script, "memlane-spawn", *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=fd,
            start_new_session=True,
            cwd=str(cwd) if cwd is not None else None,
            env=env,
        )
        out, _ = process.communicate(timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        os.close(fd)
    text = out.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None
