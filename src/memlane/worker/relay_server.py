"""The worker's end of the hook relay (protocol in :mod:`memlane.hooks.relay`).

A daemon thread accepts connections on the relay address; a receiver thread per
connection in flight (kept idle for the next one: starting a thread took up to ~2 ms
on a loaded machine) reads and checks the request, and one runner thread executes the
queued hooks in arrival order through :func:`memlane.hooks.dispatch.handle` — the
very code a hook process runs — with the worker's open Memory. The answer goes
back first; the hook's writes (prompt, observation, session start, checkpoint)
run after it, before the next hook, so the agent waits only for the reading part
and every hook sees the writes of the ones before it. Writes are skipped when the
answer could not be delivered: the client then runs the hook itself. A ``FLUSH``
request is answered once everything queued before it on that thread is done: a
Stop or SessionEnd the worker did not take sends one before running in its own
process.

Stop, SubagentStop and SessionEnd ingest transcripts (SessionEnd the tail after its
answer): a first ingest of a long session takes a tenth of a second or more, which
no prompt should wait behind. When the runner
reaches one (so it sees every write relayed before it), it hands it to the ingest
thread, which runs it with a Memory of its own (its own connection: a prompt's
reads never wait for the ingest's write transaction) and answers once the units
are stored; the summary and checkpoint follow the answer. A client that gave up
meanwhile ingests itself from the offsets this one committed, so no unit is stored
twice (:func:`memlane.capture.pipeline.ingest_transcript`).

The worker refuses (``F``) instead of handling when the client's ``MEMLANE_*``
environment differs from its own, when the client would open another database
than the file the worker holds (another ``--db``, or a file deleted or
replaced since the worker opened it), when the config file changed since the
worker started (its settings would be stale), when the client's deadline has
passed, or when too many hooks are in flight. A failing handler is logged to
the hook log and answered with no output, exactly like a failing hook process.

Captures that hook processes spooled (:mod:`memlane.hooks.spool`: they gave up on a
busy database) are stored by the runner: when it starts, when it has been idle for
SPOOL_IDLE_S, and before the writes of a capturing hook (after its answer: no prompt
waits for a replay), so they keep the order they came in. A pass reads at most
REPLAY_PER_PASS files, so no hook waits behind a long backlog: the next pass follows as
soon as no hook is queued, and a capture that arrives meanwhile goes to the spool after
the captures still waiting.

``!whois`` is answered at once in any environment (``memlane status`` and
``stop`` find the worker by it); the CLI's reads (:mod:`memlane.worker.queries`)
queue with the hooks, so a search sees every write relayed before it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memlane.background import short_switches
from memlane.config import Settings
from memlane.hooks.dispatch import (
    handle,
    keep_and_log,
    log_failure,
    replay_before,
    spool_waiting,
)
from memlane.hooks.events import SPOOL_KINDS
from memlane.hooks.relay import (
    FALL_BACK,
    FLUSH,
    HANDLED,
    PROTOCOL,
    WHOIS,
    as_spawned,
    database_identity,
    env_fingerprint,
    event_name,
    peer_uid,
    relayable,
    socket_address,
)
from memlane.paths import ensure_private_dir
from memlane.runtime import WorkerInfo
from memlane.service import Memory
from memlane.store import open_configured
from memlane.worker.queries import QUERIES, run_query

if TYPE_CHECKING:
    from memlane.hooks.handlers import HookContext

log = logging.getLogger("memlane.worker")
Deferred = list[Callable[[], object]]
Pending = list["HookContext"]


class Job(NamedTuple):
    """One relayed hook, queued: the client's connection, event and deadline
    (``time.monotonic()``), the client's directory (``relay.origin_directory``), its
    stdin, and the ``time.perf_counter()`` the request was read at."""

    conn: socket.socket
    event: str
    deadline: float
    origin: str
    payload: bytes
    received: float


MAX_IN_FLIGHT = 16
# Events the ingest thread runs, not the runner: they read whole transcripts.
INGESTING = frozenset({"stop", "subagent-stop", "session-end"})
MAX_REQUEST_BYTES = 8 * 1024 * 1024 + 64 * 1024
READ_TIMEOUT_S = 2.0
# How long the runner waits for a hook before it looks at the spool again; after a replay
# that failed (a read-only database, a full disk, an unsafe folder) twice as long each
# time, up to SPOOL_BACKOFF_MAX_S, and a failure is logged again only when it changes.
SPOOL_IDLE_S = 5.0
SPOOL_BACKOFF_MAX_S = 600.0
# Files one replay pass reads at most: the next pass follows as soon as no hook waits,
# and a hook's capture meanwhile goes to the spool after what waits (its session's order).
REPLAY_PER_PASS = 50
# A worker whose address is still held (by a worker of a deleted home, about to exit)
# retries binding this long.
BIND_RETRY_S = 60.0


def _config_stamp(settings: Settings) -> tuple[int, int] | None:
    try:
        info = os.stat(settings.paths.config_path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


def _answers(path: str) -> bool:
    """Whether a process listens on the socket file ``path`` (a stale file does not)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


class HookRelay:
    """Serve relayed hooks for ``memory`` until :meth:`stop`."""

    def __init__(
        self,
        memory: Memory,
        settings: Settings,
        *,
        environ: Mapping[str, str] | None = None,
        identity: str | None = None,
        on_request: Callable[[], object] | None = None,
    ) -> None:
        """``identity``: of the database ``memory`` holds (default: its file now);
        ``on_request``: called for each hook or read handled (the idle clock)."""
        # Described as the processes it starts see it (``--db X`` as ``MEMLANE_DB=X``): an
        # autostarted worker and one run with ``--db`` take the same hooks and reads.
        env = as_spawned(os.environ if environ is None else environ, settings.db_target)
        self.memory = memory
        self.settings = settings
        self.address = socket_address(env)
        self.identity = identity or database_identity(settings.database)
        self.info: WorkerInfo | None = None  # what !whois tells, set by the server
        self._on_request = on_request
        self._environ = env
        self._fingerprint = env_fingerprint(env)
        self._config = _config_stamp(settings)
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._spool_lock = threading.Lock()  # the runner and the ingest thread replay
        self._spool_wait = SPOOL_IDLE_S  # between idle replays
        self._spool_next = 0.0  # time.monotonic() before which no idle replay is tried
        self._spool_failure = ""  # the last failure logged
        self._spool_more = False  # the last pass stopped at REPLAY_PER_PASS: go on soon
        self._sock: socket.socket | None = None
        self._bound_inode: int | None = None  # of the socket file this relay created
        self._thread: threading.Thread | None = None
        self._executor: threading.Thread | None = None
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._ingests: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._ingester: threading.Thread | None = None
        self._ingest_memory: Memory | None = None
        self._in_flight = 0
        self._quiet = threading.Condition()
        # Connections for the receivers waiting idle (None: end), and how many wait.
        self._incoming: queue.SimpleQueue[socket.socket | None] = queue.SimpleQueue()
        self._idle_receivers = 0
        self._idle_lock = threading.Lock()
        self._closing = threading.Event()
        self.handled = 0

    def start(self) -> bool:
        """Listen on the relay address; False (and hooks run in-process) when it cannot.

        An address still held by another worker (one whose home was deleted exits
        within its check interval) is retried in the background for BIND_RETRY_S.
        """
        if self.address is None or self._fingerprint is None:
            return False
        bound = self._bind()
        if bound == errno.EADDRINUSE:
            log.info("hook relay address in use; retrying for %.0f s", BIND_RETRY_S)
            threading.Thread(
                target=self._bind_later, name="memlane-relay-bind", daemon=True
            ).start()
            return False
        if bound is not None:
            return False
        self._serve()
        return True

    def _bind(self) -> int | None:
        """Bind and listen; None when done, else the errno."""
        assert self.address is not None
        in_file = not self.address.startswith("\0")
        if in_file and _answers(self.address):
            return errno.EADDRINUSE  # another worker still listens there
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if in_file:
                ensure_private_dir(Path(self.address).parent)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.address)  # left by a worker that ended without stop()
            sock.bind(self.address)
            if in_file:
                os.chmod(self.address, 0o600)
                self._bound_inode = os.stat(self.address).st_ino
            sock.listen(64)
        except OSError as exc:
            sock.close()
            if exc.errno != errno.EADDRINUSE:
                log.warning("hook relay not started (%s): hooks run in their own processes", exc)
            return exc.errno or -1
        self._sock = sock
        return None

    def _bind_later(self) -> None:
        deadline = time.monotonic() + BIND_RETRY_S
        while not self._closing.wait(1.0):
            if self._bind() is None:
                self._serve()
                log.info("hook relay listening")
                return
            if time.monotonic() > deadline:
                log.warning("hook relay address still in use: hooks run in their own processes")
                return

    def _serve(self) -> None:
        _preload()
        self._thread = threading.Thread(target=self._accept, name="memlane-hook-relay", daemon=True)
        self._thread.start()
        self._executor = threading.Thread(
            target=self._execute, name="memlane-hook-runner", daemon=True
        )
        self._executor.start()
        self._ingester = threading.Thread(
            target=self._ingest, name="memlane-hook-ingest", daemon=True
        )
        self._ingester.start()

    def stop(self) -> None:
        self._closing.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            if self.address and self._bound_inode is not None:
                # Only this relay's own file: a newer worker may have bound the path.
                with contextlib.suppress(OSError):
                    if os.stat(self.address).st_ino == self._bound_inode:
                        os.unlink(self.address)
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._executor is not None:
            self._jobs.put(None)
            self._executor.join(timeout=5)
        if self._ingester is not None:
            self._ingests.put(None)
            self._ingester.join(timeout=5)
        if self._ingest_memory is not None and not (
            self._ingester is not None and self._ingester.is_alive()
        ):
            self._ingest_memory.close()
            self._ingest_memory = None
        if self._ingester is not None and not self._ingester.is_alive():
            from memlane.capture import helper

            helper.stop()
        with self._idle_lock:
            for _ in range(self._idle_receivers):
                self._incoming.put(None)
            self._idle_receivers = 0

    @property
    def pending(self) -> int:
        """Requests queued or running (the ingest thread's included)."""
        return self._in_flight

    def wait_quiet(self, timeout: float = 30.0) -> bool:
        """Wait until no request is queued or running (the ingest thread's included);
        False when ``timeout`` passed first."""
        with self._quiet:
            return self._quiet.wait_for(lambda: self._in_flight == 0, timeout)

    # -- serving ----------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                if self._closing.is_set():
                    return
                time.sleep(0.05)
                continue
            if not self._slots.acquire(blocking=False):
                self._refuse(conn, "busy")
                continue
            self._hand_over(conn)

    def _hand_over(self, conn: socket.socket) -> None:
        """Give ``conn`` to an idle receiver thread, or to a new one when none is idle: about
        as many receivers as connections were ever in flight together (MAX_IN_FLIGHT)."""
        with self._idle_lock:
            if self._idle_receivers:
                self._idle_receivers -= 1
                self._incoming.put(conn)
                return
        threading.Thread(
            target=self._receiver, args=(conn,), name="memlane-relay-receiver", daemon=True
        ).start()

    def _receiver(self, conn: socket.socket | None) -> None:
        while conn is not None:
            self._receive(conn)
            with self._idle_lock:
                if self._closing.is_set():  # stop() ends only the receivers idle by then
                    return
                self._idle_receivers += 1
            conn = self._incoming.get()

    def _refuse(self, conn: socket.socket, reason: str) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(FALL_BACK + reason.encode())
        conn.close()

    def _receive(self, conn: socket.socket) -> None:
        """Read and check one request, then queue it (one thread per connection)."""
        queued = False
        try:
            if peer_uid(conn) != os.getuid():
                conn.close()  # another user's process: no answer at all
                return
            conn.settimeout(READ_TIMEOUT_S)
            request = _read_all(conn)
            parsed = _parse(request) if request is not None else None
            if parsed is None:
                self._refuse(conn, "bad request")
                return
            event_arg, deadline, identity, origin, env_lines, payload = parsed
            if event_arg == WHOIS:
                with conn:
                    conn.sendall(HANDLED + self._whois())
                return
            reason = self._refusal(event_arg, identity, env_lines)
            if reason is not None:
                self._refuse(conn, reason)
                return
            with self._quiet:
                self._in_flight += 1
            self._jobs.put(Job(conn, event_arg, deadline, origin, payload, time.perf_counter()))
            queued = True
        except Exception as exc:  # one broken client must not stop the relay
            log.warning("hook relay request failed: %s", exc)
            conn.close()
        finally:
            if not queued:
                self._slots.release()

    def _execute(self) -> None:
        """Run queued hooks one at a time, in arrival order, writes included.

        One after another, so a hook sees every write of the hooks before it (a
        prompt's number, the observations a checkpoint is built from).
        """
        self._replay_spool()
        while True:
            try:
                job = self._jobs.get(timeout=0.0 if self._spool_more else SPOOL_IDLE_S)
            except queue.Empty:
                self._replay_spool(idle=True)
                continue
            if job is None:
                return
            if event_name(job.event) in INGESTING:
                self._ingests.put(job)  # every write queued before it is done
                continue
            self._run_queued(job, self._run_job)

    def _ingest(self) -> None:
        """Run the transcript-ingesting hooks the runner handed over, in arrival order.

        First it opens its connection and compiles the privacy rules (~15 ms, once), so
        the first Stop after the worker started is as fast as the later ones, and lets
        a large one start the prepare helper (:mod:`memlane.capture.helper`).
        """
        from memlane.capture import helper
        from memlane.secret_rules import compile_all

        self._ingesting_memory()
        compile_all()
        helper.allow(self.settings)
        while True:
            job = self._ingests.get()
            if job is None:
                return
            self._run_queued(job, self._run_ingest)

    def _run_queued(self, job: Job, run: Callable[[Job], None]) -> None:
        """Run one queued hook with ``run``, then close its connection and free its slot."""
        try:
            with job.conn:
                run(job)
        except Exception as exc:  # keep serving
            log.warning("hook relay request failed: %s", exc)
        finally:
            self._done()

    def _count_handled(self) -> None:
        with self._quiet:  # two threads count
            self.handled += 1

    def _done(self) -> None:
        self._slots.release()
        with self._quiet:
            self._in_flight -= 1
            self._quiet.notify_all()

    def _run_ingest(self, job: Job) -> None:
        memory = self._ingesting_memory()
        if memory is None:
            self._refuse(job.conn, "the worker cannot open its database for ingesting")
            return
        with short_switches():  # a prompt answered meanwhile waits less for the GIL
            self._run_job(job, memory=memory)

    def _ingesting_memory(self) -> Memory | None:
        """The ingest thread's own Memory (opened on first use, kept); None, logged, when
        the database cannot be opened or is no longer the file the worker holds."""
        if self._ingest_memory is None:
            try:
                memory = Memory(open_configured(self.settings), self.settings)
            except Exception as exc:
                log.warning("hook relay cannot open the database for ingesting: %s", exc)
                return None
            if database_identity(self.settings.database) != self.identity:
                memory.close()
                return None
            self._ingest_memory = memory
        return self._ingest_memory

    def _run_job(self, job: Job, *, memory: Memory | None = None) -> None:
        """Run one hook (with ``memory``: the ingest thread's) and answer it; its deferred
        writes after the answer. A client that gave up runs the hook itself instead."""
        conn, event_arg, payload = job.conn, job.event, job.payload
        if time.monotonic() >= job.deadline:
            self._refuse(conn, "deadline passed")
            return
        if self._on_request is not None:
            self._on_request()
        if event_arg in QUERIES:
            answer = run_query(self.memory, event_arg, payload)
            with contextlib.suppress(OSError):
                conn.sendall(FALL_BACK if answer is None else HANDLED + answer)
            return
        deferred: Deferred = []
        pending: Pending = []
        output = b"" if event_arg == FLUSH else self._handle(job, deferred, pending, memory=memory)
        try:
            conn.sendall(HANDLED + output)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            # The client gave up and runs the hook itself (an ingest from the offsets
            # stored here): do not write twice.
            return
        if event_arg != FLUSH:
            self._count_handled()
        if deferred:
            # Earlier captures first; when a bounded pass leaves some, this one after them.
            if event_name(event_arg) in SPOOL_KINDS:
                self._replay_spool(memory, behind=pending)
            self._run_deferred(event_arg, deferred, pending)

    def _replay_spool(
        self, memory: Memory | None = None, *, idle: bool = False, behind: Pending | None = None
    ) -> bool:
        """Store the captures hook processes spooled, at most REPLAY_PER_PASS files (with
        ``memory``: the ingest thread's), before the captures of ``behind``, which go after
        them when files may wait (:func:`memlane.hooks.dispatch.replay_before`); whether
        they may. A failure is logged when it differs from the last one, never raised.
        ``idle``: a replay the runner tries while it waits, skipped until the back-off
        after a failure has passed (a replay before a hook's capture is always tried)."""
        if not spool_waiting(self.settings):
            self._spool_more = False
            return False
        if idle and time.monotonic() < self._spool_next:
            return False
        with self._spool_lock:
            try:
                stored, more = replay_before(
                    memory or self.memory, self.settings, REPLAY_PER_PASS, behind or []
                )
            except Exception as exc:
                failure = f"{type(exc).__name__}: {exc}"
                if failure != self._spool_failure:
                    self._log("spool", exc)
                    self._spool_failure = failure
                self._spool_next = time.monotonic() + self._spool_wait
                self._spool_wait = min(self._spool_wait * 2, SPOOL_BACKOFF_MAX_S)
                self._spool_more = False
                return False
            self._spool_failure, self._spool_wait, self._spool_next = "", SPOOL_IDLE_S, 0.0
            self._spool_more = more is True  # None: a hook replays them; the idle wait
        if stored:
            log.info("stored %d capture(s) hooks had spooled", stored)
        return more is not False

    def _refusal(self, event_arg: str, identity: str, env_lines: list[str]) -> str | None:
        if env_lines != self._fingerprint:
            return "environment differs"
        if identity != self.identity:
            return "another database (or this one was deleted or replaced)"
        if _config_stamp(self.settings) != self._config:
            return "config changed since the worker started"
        if event_arg not in (FLUSH, *QUERIES) and not relayable(event_arg, {}):
            return "event not relayed"
        return None

    def _whois(self) -> bytes:
        import json

        info = self.info
        record = {
            "pid": os.getpid(),
            "database": self.identity,
            "host": info.host if info else None,
            "port": info.port if info else None,
            "started_at": info.started_at if info else None,
            "db": info.db if info else self.settings.database_display,
        }
        return json.dumps(record).encode()

    def _handle(
        self, job: Job, deferred: Deferred, pending: Pending, *, memory: Memory | None = None
    ) -> bytes:
        settings, memory = self.settings, memory or self.memory
        try:
            # The client's deadline: past it, it runs the hook itself from the offsets
            # stored here, so an ingest going on would only read the same batches twice.
            text = handle(
                job.event,
                job.payload,
                settings,
                memory=memory,
                deferred=deferred,
                started=job.received,
                deadline=job.deadline,
                origin=job.origin,
                pending=pending,
            )
        except Exception as exc:  # the hook contract: log, answer nothing
            deferred.clear()
            self._log(job.event, exc, pending)  # the database stayed busy: kept for later
            return b""
        return text.encode("utf-8", "replace")

    def _run_deferred(self, event_arg: str, deferred: Deferred, pending: Pending) -> None:
        """Run a hook's writes; a capture they could not store (the database stayed busy)
        goes to the spool, as a hook process's would."""
        try:
            for action in deferred:
                action()
        except Exception as exc:
            self._log(event_arg, exc, pending)

    def _log(self, event_arg: str, exc: BaseException, pending: Pending | None = None) -> None:
        """The hook's one log line; with ``pending``, after its capture went to the spool
        when ``exc`` is worth it (:func:`memlane.hooks.dispatch.gave_up`)."""
        label, log_dir = f"{event_arg} (worker)", self.settings.paths.log_dir
        if pending is None:
            log_failure(label, exc, log_dir)
        else:
            keep_and_log(label, exc, pending, log_dir)


def _preload() -> None:
    """Import what the handlers import lazily, so the first relayed hook is not slower."""
    import memlane.capture.observations
    import memlane.capture.pipeline
    import memlane.capture.prompts
    import memlane.capture.sources
    import memlane.capture.transcript
    import memlane.capture.units
    import memlane.hooks.agents
    import memlane.hooks.dispatch
    import memlane.hooks.handlers
    import memlane.hooks.render
    import memlane.injections
    import memlane.project
    import memlane.search.context
    import memlane.search.engine
    import memlane.search.feedback  # noqa: F401


def _read_all(conn: socket.socket) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            chunk = conn.recv(262144)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_REQUEST_BYTES:
                return None
            chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks)


def _parse(request: bytes) -> tuple[str, float, str, str, list[str], bytes] | None:
    """(event, deadline, database identity, client's directory, env lines, payload);
    None when malformed."""
    head, sep, payload = request.partition(b"\n\n")
    if not sep:
        return None
    lines = head.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 5 or lines[0] != PROTOCOL.decode():
        return None
    try:
        deadline = float(lines[2])
    except ValueError:
        return None
    return lines[1], deadline, lines[3], lines[4], lines[5:], payload
