"""The worker process: one uvicorn server per memlane home (``memlane serve``).

It hosts the HTTP API, the dashboard and the SSE feed (:mod:`memlane.worker.web`),
keeps the embedder warm and embeds new memories in the background
(:class:`EmbeddingLoop`), and records itself in the runtime file that hooks
read (:mod:`memlane.runtime`).

Lifecycle rules:

* **one worker per home and per database** — an exclusive ``flock`` on
  ``<runtime_dir>/worker.lock`` (and ``<db>.worker.lock`` for a SQLite file)
  is the truth; the runtime file is only a hint. A runtime file whose pid is
  dead, or that no lock backs, is stale and removed at start;
* **port** — the configured port when free; when something else holds the
  default port a free one is picked and recorded (an explicit ``--port`` that is
  taken is an error);
* **shutdown** — SIGTERM/SIGINT end the live streams, let requests finish
  (5 s at most), stop the embedder and remove the runtime file.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memlane.config import Settings
from memlane.errors import Conflict, InvalidInput, MemlaneError
from memlane.hooks.relay import database_identity
from memlane.paths import ensure_private_file, ensure_state_dir, open_own_file
from memlane.runtime import (
    WorkerInfo,
    is_zombie,
    load_or_create_token,
    pid_alive,
    read_runtime,
    read_token,
    remove_runtime,
    runs_memlane,
    runtime_file,
    token_file,
    write_runtime,
)

if TYPE_CHECKING:
    from memlane.service import Memory

log = logging.getLogger("memlane.worker")

EMBED_BATCH = 32
EMBED_IDLE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """How ``memlane serve`` runs; defaults come from Settings."""

    host: str | None = None
    port: int | None = None  # None: the configured port, or a free one if taken
    allow_remote: bool = False
    allow_hosts: tuple[str, ...] = ()
    embedder: str | None = None  # None: settings.embedder; "none" disables embedding
    rate_per_minute: int = 200
    write_rate_per_minute: int = 60
    poll_interval: float = 0.5
    log_file: Path | None = None  # None: log to stderr (:mod:`memlane.worker.logs`)


class EmbeddingLoop:
    """Embeds memories that have no vector yet, in a daemon thread, through the facade.

    It calls :meth:`Memory.embed_backfill` a batch at a time, which uses the memory's
    search engine — so the model it loads is the same warm one hybrid search uses —
    and runs with one BLAS thread (DESIGN §6); small batches let requests interleave.
    """

    def __init__(self, memory: Memory, name: str, *, batch: int = EMBED_BATCH) -> None:
        self.memory = memory
        self.name = name
        self.batch = batch
        self._model: str | None = None
        self._state = "starting"
        self._error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memlane-embedder", daemon=True)
        self.embedded = 0
        # The store's commit marker when a check last found nothing to embed: while it
        # stays the same nothing was written, so the next check skips its counts.
        self._settled: Hashable | None = None

    @property
    def model(self) -> str | None:
        return self._model

    @property
    def state(self) -> str:
        return self._state

    @property
    def last_error(self) -> str | None:
        return self._error

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        from memlane.search.engine import model_name

        self._model = model_name(self.name)
        if self._model is None:
            self._state = "off"
            return
        self._state = "loading"
        self._warm_search()
        while not self._stop.is_set():
            try:
                done = self.run_once()
                if not done:
                    self.persist_vectors()
            except MemlaneError as exc:  # e.g. the model's package is missing: say so, stop
                self._state, self._error = "off", str(exc)
                log.warning("background embedding is off: %s", exc)
                return
            except Exception as exc:  # keep the worker serving; report and retry later
                self._state, self._error = "error", f"{type(exc).__name__}: {exc}"
                log.exception("background embedding failed; retrying in 30 s")
                self._stop.wait(30.0)
                continue
            if not done:
                self._state = "idle"
                self._stop.wait(EMBED_IDLE_SECONDS)

    def _warm_search(self) -> None:
        """Run one hybrid search so whatever the engine loads lazily is loaded now."""
        if self.memory.settings.search_mode == "keyword":
            return
        try:
            self.memory.search("warm up", scope="all", limit=1, mode="hybrid")
        except MemlaneError as exc:
            log.warning("warming hybrid search failed (%s); the first recall will be slower", exc)

    def _serve_vectors(self) -> None:
        """Load the vectors for hybrid recall once there are some: the warm-up search at
        start found none (a new database, a first ``memlane recover``), and a prompt runs
        hybrid only once they are loaded (``SearchEngine.semantic_ready``): until some
        search asked for hybrid, every prompt had stayed keyword."""
        engine = self.memory.search_engine
        if not engine.semantic_ready() and engine.has_vectors():
            self._warm_search()

    def persist_vectors(self) -> bool:
        """Save the vector table when enough changed (and build its ANN graph when due).

        Runs between embedding batches, so the next start maps the table instead
        of reading every vector from the database; one thread, to leave the
        other core to the agent and to requests.
        """
        try:
            return self.memory.search_engine.persist_vectors(threads=1)
        except OSError as exc:
            log.warning("cannot save the vector table (%s); the next start reads the store", exc)
            return False

    def run_once(self) -> int:
        """Embed one batch of memories without a vector; returns how many were embedded.
        Nothing written since a check found nothing missing: nothing to count again (two
        counts of every row, ~0.08 s of CPU every few seconds at 1M memories)."""
        marker = self.memory.commit_marker()
        if marker is not None and marker == self._settled:
            return 0
        own = self.name in (self.memory.settings.embedder, self._model)
        report = self.memory.embed_backfill(
            model=None if own else self.name, batch=self.batch, limit=self.batch
        )
        if report.embedded:
            self._state = "embedding"
            self.embedded += report.embedded
            self._serve_vectors()
        # Read before the counts: a write after it moves the marker, so it is counted.
        self._settled = marker if not report.embedded and not report.remaining else None
        return report.embedded


# -- locks and runtime file ----------------------------------------------------------


@contextlib.contextmanager
def worker_locks(settings: Settings) -> Iterator[None]:
    """Hold the exclusive worker locks of this home and database, or raise Conflict."""
    import fcntl

    paths = settings.paths
    ensure_state_dir(paths.runtime_dir, paths)
    targets = [paths.runtime_dir / "worker.lock"]
    if "://" not in settings.database and settings.database != ":memory:":
        targets.append(Path(settings.database + ".worker.lock"))
    handles: list[IO[str]] = []
    try:
        for target in targets:
            ensure_private_file(target)
            # By descriptor, checked once open: a link swapped in after the check is refused.
            handle = os.fdopen(open_own_file(target, os.O_RDWR), "r+", encoding="utf-8")
            handles.append(handle)
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise already_running(settings) from None
        yield
    finally:
        for held in handles:
            held.close()


def already_running(settings: Settings) -> Conflict:
    """The error for a second worker on ``settings``' home or database (every way one is
    started: ``serve``, ``serve --daemon``): its database, and its pid and url when known."""
    info = read_runtime(settings.paths)
    where = f" (pid {info.pid}, {info.base_url})" if info else ""
    return Conflict(
        f"a memlane worker is already running on {settings.database_display}{where};"
        " use `memlane status` or `memlane stop`"
    )


def running_worker(settings: Settings) -> WorkerInfo | None:
    """The worker already running for ``settings``' home when it serves the database
    asked for (what a second ``serve --daemon`` wanted: nothing to do); None when none
    runs. One serving another database is the :class:`Conflict` (a home has one worker)."""
    info = read_runtime(settings.paths)
    if info is None or not runs_memlane(info.pid):
        return None
    if not _serves(info, settings):
        raise Conflict(
            f"the memlane worker of this home serves another database, {info.db}"
            f" (pid {info.pid}, {info.base_url}), not {settings.database_display};"
            " stop it first with `memlane stop`"
        )
    return info


def _serves(info: WorkerInfo, settings: Settings) -> bool:
    """Whether the worker of ``info`` serves ``settings``' database: the same target as
    shown, or the same file by another name (``--db rel.db``, a link; the worker records
    the absolute path)."""
    if info.db == settings.database_display:
        return True
    if "://" in info.db or "://" in settings.database:
        return False
    asked = database_identity(str(Path(settings.database).expanduser()))
    return asked != "missing" and asked == database_identity(info.db)


def clean_stale_runtime(settings: Settings) -> bool:
    """Remove a runtime file left by a dead worker; call while holding the locks."""
    path = runtime_file(settings.paths)
    if not path.exists():
        return False
    log.warning("removing a stale worker runtime file %s (its worker is gone)", path)
    remove_runtime(settings.paths)
    return True


def bind_socket(host: str, port: int, *, fallback: bool) -> socket.socket:
    """A listening TCP socket on ``host:port``; with ``fallback`` a free port if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE or not fallback:
            sock.close()
            raise Conflict(f"cannot listen on {host}:{port} ({exc.strerror})") from None
        log.warning("port %d is taken by another program; picking a free port", port)
        sock.bind((host, 0))
    sock.listen(512)
    sock.setblocking(False)
    return sock


# -- serving -------------------------------------------------------------------------


def check_bind_host(host: str, allow_remote: bool) -> None:
    from memlane.worker.web.security import is_loopback

    if is_loopback(host):
        return
    if not allow_remote:
        raise InvalidInput(
            f"refusing to listen on {host}: memlane serves private data on loopback only;"
            " add --allow-remote if you really want other machines to reach it"
        )
    print(
        f"warning: listening on {host}: anyone who can reach this address and has the token"
        " can read and change your memories",
        file=sys.stderr,
    )


def serve(settings: Settings, options: ServeOptions | None = None) -> int:
    """Run the worker in the foreground until SIGTERM/SIGINT; returns the exit code."""
    options = options or ServeOptions()
    host = options.host or settings.worker__host
    check_bind_host(host, options.allow_remote)
    from memlane.worker.logs import configure

    repeats = configure(settings.log_level, options.log_file)
    try:
        _check_database(settings)
        with worker_locks(settings):
            clean_stale_runtime(settings)
            return _serve_locked(settings, options, host)
    finally:
        for line in repeats.flush():
            log.warning(line)


def _check_database(settings: Settings) -> None:
    """Refuse a database that is not memlane's before creating its lock file next to it."""
    from memlane.store import open_configured

    open_configured(settings).close()


def _serve_locked(settings: Settings, options: ServeOptions, host: str) -> int:
    from memlane.service import open as open_memory

    memory = open_memory(settings=settings)
    embedder_name = options.embedder or settings.embedder
    embeddings = EmbeddingLoop(memory, embedder_name) if embedder_name != "none" else None
    try:
        if embeddings is not None:
            # First: the model loads (~1.4 s of CPU) while the web stack is imported
            # and set up, so the first hybrid answer comes that much sooner.
            embeddings.start()
        return _serve_memory(settings, options, host, memory, embeddings)
    finally:
        if embeddings is not None:
            embeddings.stop()
        memory.close()


def _serve_memory(
    settings: Settings,
    options: ServeOptions,
    host: str,
    memory: Memory,
    embeddings: EmbeddingLoop | None,
) -> int:
    import uvicorn

    from memlane.worker.lifecycle import Activity, Watchdog, track_requests
    from memlane.worker.web.app import create_app
    from memlane.worker.web.events import ChangeFeed
    from memlane.worker.web.security import SecurityPolicy, default_allowed_hosts, is_loopback

    paths = settings.paths
    token = load_or_create_token(paths)
    identity = database_identity(settings.database)  # of the file just opened
    activity = Activity()
    sock = bind_socket(host, options.port or settings.worker__port, fallback=options.port is None)
    port = int(sock.getsockname()[1])
    policy = SecurityPolicy(
        token=token,
        port=port,
        allowed_hosts=default_allowed_hosts(host, options.allow_hosts),
        rate_per_minute=options.rate_per_minute,
        write_rate_per_minute=options.write_rate_per_minute,
        # Named to a caller without the token: on loopback that is the user (a path on
        # their own machine); a worker open to the network leaves it to `memlane status`.
        token_file=str(token_file(paths)) if is_loopback(host) else "",
    )
    feed = ChangeFeed(memory, poll_interval=options.poll_interval)
    app = track_requests(create_app(memory, policy, embeddings=embeddings, feed=feed), activity)
    config = uvicorn.Config(
        app,
        log_config=None,  # its records go to our handlers: bounded, repeats collapsed
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        server_header=False,
        proxy_headers=False,
        ws="none",  # no websockets: SSE only (and no import of the websockets package)
        **connection_options(),
    )
    server = _Server(config, feed)
    # uvicorn re-raises the caught signal after a graceful stop; with the default
    # SIGTERM handler that would kill us before the cleanup below.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    url_host = f"[{host}]" if ":" in host else host
    record = WorkerInfo(os.getpid(), host, port, time.time(), settings.database_display)
    from memlane.worker.relay_server import HookRelay

    relay = HookRelay(memory, settings, identity=identity, on_request=activity.touch)
    relay.info = record
    watchdog = Watchdog(
        settings,
        identity,
        activity,
        lambda _reason: server.handle_exit(signal.SIGTERM, None),
        busy=lambda: embeddings is not None and embeddings.state == "embedding",
    )
    try:
        write_runtime(paths, record)
        relay.start()
        watchdog.start()
        print(f"memlane worker on http://{url_host}:{port} (pid {os.getpid()})", flush=True)
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        watchdog.stop()
        relay.stop()
        current = read_runtime(paths)
        if current is None or current.pid == os.getpid():
            remove_runtime(paths)
        sock.close()
    return 0


def connection_options() -> dict[str, Any]:
    """uvicorn options bounding what one client can hold (:mod:`memlane.worker.connections`)."""
    from memlane.worker.connections import (
        ACCEPT_BACKLOG,
        ConnectionGuard,
        ConnectionLimits,
        http_protocol,
    )

    guard = ConnectionGuard(ConnectionLimits.for_this_process(), own_uid=os.getuid())
    return {"http": http_protocol(guard), "timeout_keep_alive": 5, "backlog": ACCEPT_BACKLOG}


class _Server:
    """uvicorn.Server that also ends the live streams when asked to exit."""

    def __new__(cls, config: Any, feed: Any) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                feed.close()
                super().handle_exit(sig, frame)

        return Server(config)


# -- control from the CLI ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    running: bool
    info: WorkerInfo | None
    healthy: bool
    detail: str


def health_check(
    info: WorkerInfo, token: str | None, timeout: float = 2.0
) -> dict[str, Any] | None:
    """GET /health with the token from a worker that proved it holds it; the JSON body, or
    None when nothing answers. Raises NotOurWorker for a listener without the proof."""
    from memlane.worker.client import WorkerUnreachable, call

    if token is None:
        return None
    try:
        reply = call(info, token, "GET", "/health", timeout=timeout)
        data = reply.json() if reply.status == 200 else None
    except (WorkerUnreachable, ValueError):
        return None
    return data if isinstance(data, dict) else None


def worker_by_socket(timeout: float = 2.0) -> WorkerInfo | None:
    """The worker listening on this home's relay address, found without its runtime file.

    Its runtime file may be gone (the home was deleted or cleaned) while it still
    runs; the relay address is derived from the environment alone, and the peer's
    uid and pid come from the kernel (``SO_PEERCRED``), not from what it says.
    """
    import json

    from memlane.hooks.relay import WHOIS, environment, exchange

    answer = exchange(WHOIS, b"", environment(), timeout)
    if answer is None:
        return None
    peer_pid, body = answer
    try:
        data = json.loads(body)
        return WorkerInfo(
            pid=peer_pid or int(data["pid"]),
            host=str(data.get("host") or "127.0.0.1"),
            port=int(data.get("port") or 0),
            started_at=float(data.get("started_at") or 0.0),
            db=str(data.get("db") or ""),
        )
    except (ValueError, KeyError, TypeError):
        return None


def worker_status(settings: Settings) -> WorkerStatus:
    """Is a worker running for this home, and does it answer?"""
    paths = settings.paths
    info = read_runtime(paths)
    if info is None:
        found = worker_by_socket()
        if found is not None:
            detail = "running (found by its hook socket: its runtime file is missing)"
            return WorkerStatus(True, found, True, detail)
        if runtime_file(paths).exists():
            return WorkerStatus(False, None, False, "not running (stale runtime file)")
        return WorkerStatus(False, None, False, "not running")
    if not runs_memlane(info.pid):
        return WorkerStatus(False, info, False, f"not running (pid {info.pid} is another program)")
    from memlane.worker.client import NotOurWorker

    try:
        health = health_check(info, read_token(paths))
    except NotOurWorker:
        where = f"{info.host}:{info.port}"
        return WorkerStatus(True, info, False, f"pid {info.pid} alive; {where} is another program")
    if health is None or health.get("pid") != info.pid:
        return WorkerStatus(True, info, False, f"pid {info.pid} alive but not answering")
    return WorkerStatus(True, info, True, "running")


def stop_worker(settings: Settings, timeout: float = 10.0) -> str:
    """SIGTERM the worker and wait for it; returns what happened, in words."""
    paths = settings.paths
    info = read_runtime(paths)
    how = ""
    if info is None or not runs_memlane(info.pid):
        info = worker_by_socket()
        how = ", found by its hook socket"
    if info is None:
        if runtime_file(paths).exists():
            remove_runtime(paths)
            return "no worker was running (removed a stale runtime file)"
        return "no worker is running"
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(info.pid) or is_zombie(info.pid):
            break
        time.sleep(0.05)
    else:
        raise Conflict(
            f"the worker (pid {info.pid}) did not stop within {timeout:.0f} s;"
            f" kill it with `kill -9 {info.pid}`"
        )
    if runtime_file(paths).exists() and read_runtime(paths) is None:
        remove_runtime(paths)
    return f"stopped the worker (pid {info.pid}{how})"


def wait_until_ready(settings: Settings, timeout: float = 20.0) -> WorkerStatus:
    """Poll until the worker answers /health (after a detached start)."""
    deadline = time.monotonic() + timeout
    status = worker_status(settings)
    while not status.healthy and time.monotonic() < deadline:
        time.sleep(0.1)
        status = worker_status(settings)
    return status
