"""The worker's runtime file and token, and starting it detached (stdlib only).

The worker records ``{"pid", "host", "port", "started_at", "db"}`` in
``<runtime_dir>/worker.json``; its bearer token lives in ``<data_dir>/token``
(0600, generated once). The CLI reads both to talk to the worker over HTTP.
Hooks never do: they reach the worker only through the uid-checked relay
socket (:mod:`memlane.hooks.relay`), and use this module only to start it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from memlane.paths import (
    StatePaths,
    ensure_private_dir,
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
    ensure_private_dir(paths.runtime_dir)
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
    respawned by every hook). Output goes to ``<log_dir>/worker.log`` (0600).
    """
    import sys
    import time

    if read_runtime(paths) is not None:
        return None
    ensure_private_dir(paths.runtime_dir)
    stamp = paths.runtime_dir / SPAWN_STAMP
    try:
        if min_interval_s > 0 and time.time() - stamp.stat().st_mtime < min_interval_s:
            return None
    except FileNotFoundError:
        pass
    write_private_text(stamp, str(time.time()))
    command = [sys.executable, "-m", "memlane"]
    if db:
        command += ["--db", db]
    command += ["serve", *args]
    cwd = paths.data_dir if paths.data_dir.is_dir() else None
    return spawn_detached(command, paths.log_dir / "worker.log", cwd=cwd, env=env)


def spawn_detached(
    command: list[str],
    log_file: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> int | None:
    """Run ``command`` in the background in its own session; its pid, or None on failure.

    A short-lived sh starts it and exits at once: the command is reparented to
    init, so the caller (a hook) never waits and is never left with a child to
    reap. Its stdout and stderr append to ``log_file`` (0600).
    """
    import subprocess

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
