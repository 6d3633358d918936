"""Hand a hook to the running worker over a local socket: the per-prompt fast path.

The worker has the database open, the models loaded and every module imported.
When it runs, a hook process only relays — stdin to the worker, the worker's
answer to stdout — so a prompt costs little more than starting the interpreter
(``benchmarks/hooks_bench.py``). Anything unusual returns None and the caller
runs the hook in-process as before: no worker, a different configuration, a
slow or refusing worker. The relay can make a hook faster; it never changes
what the hook does, because the worker runs the same dispatcher and handlers.

Wire format, one request per connection, both ends on this machine::

    request = "memlane-hook 3\\n" event "\\n" deadline "\\n" database "\\n" origin "\\n"
              (KEY "=" VALUE "\\n")* "\\n" payload
    reply   = "H" stdout-bytes   handled: print exactly these bytes
            | "F" reason         fall back: run the hook in-process

``deadline`` is the client's ``time.monotonic()`` limit (one clock per
machine): a worker that gets to a request after it does nothing. The client
sends its ``MEMLANE_*`` environment (a ``--db X`` counted as ``MEMLANE_DB=X``,
:func:`as_spawned`) and the identity of the database it would
open (:func:`database_identity`: device and inode of the file), and the worker
handles the hook only when both equal its own, so both paths always see the
same settings and write into the same file — never into a database that was
deleted or replaced under a running worker. ``origin`` is the hook process's
directory (:func:`origin_directory`): the project of a payload that names none is
the client's, never the worker's. Each end checks that the other
runs under the same uid (``SO_PEERCRED``). The address is a socket file in the
private runtime directory (0700), which no other user can bind before the worker
or connect to; on Linux, when that path is too long for a socket, a name in the
abstract namespace, which any local user could bind first (the hook then runs
in its own process: the uid check refuses such a listener).

Besides hooks, an ``event`` starting with ``!`` is a request of memlane's own
tools: ``!flush`` (below), ``!whois`` (the worker describes itself, whatever
the environment: how ``memlane status``/``stop`` find it without its runtime
file) and the CLI's reads (``!search``, :mod:`memlane.cli.warm`).

Import weight: only modules an interpreter started with ``-S`` has loaded
already (``posix``, ``sys``, ``time``) and the C ``_socket`` module. Not :mod:`os`
(its path and mapping modules cost ~0.8 ms) and not :mod:`socket` (its enum
set-up costs milliseconds), and not ``__future__`` (~0.2 ms): the modules a relay
loads (this one, :mod:`memlane.hooks.events`, the package's ``__init__``) write the
annotations that name typing-only classes as strings. The launcher pays only for
what a relay needs.
"""

import posix
import sys
import time

from memlane.hooks.events import MAX_STDIN_BYTES, lookup, split_event_arg

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Mapping

PROTOCOL = b"memlane-hook 3"
# Not a hook: "answer when every hook queued before this one is done".
FLUSH = "!flush"
# Not a hook: "who are you?" (pid, address, database), answered in any environment.
WHOIS = "!whois"
# Not a hook: the CLI's search, run by the worker's warm engine (memlane.worker.queries).
SEARCH = "!search"
HANDLED = b"H"
FALL_BACK = b"F"
ENV_PREFIX = "MEMLANE_"
# Environment variables that only steer this client, not the hook's behaviour.
CLIENT_ONLY_ENV = frozenset({"MEMLANE_RELAY", "MEMLANE_RELAY_TIMEOUT_MS"})
# How long the client waits for the worker before running the hook itself. The
# worker answers a prompt in milliseconds; these only bound a stuck or busy one.
TIMEOUTS_S: dict[str, float] = {
    "user-prompt-submit": 0.25,
    "session-start": 1.0,
    "post-tool-use": 0.5,
    "pre-compact": 2.0,
    # The worker answers once the transcript's units are stored (its ingest runs off
    # the prompts' thread, warm); past this the hook ingests itself, from the offsets
    # the worker committed (a unit is never stored twice). Asynchronous for the agent.
    "stop": 10.0,
    "subagent-stop": 10.0,
    # Claude Code gives SessionEnd hooks 1.5 s together: what is left after a worker busy
    # with a long ingest is enough for the hook's own process (which hands the tail on).
    "session-end": 0.5,
}
RELAYED = frozenset(TIMEOUTS_S)
MAX_REPLY_BYTES = 4 * 1024 * 1024


def event_name(event_arg: str) -> str:
    """The canonical event of ``[agent:]Event`` (``codex:BeforeAgent`` → user-prompt-submit)."""
    found = lookup(event_arg)
    return found[0] if found is not None else event_arg.strip().lower()


def relayable(event_arg: str, environ: "Mapping[str, str] | None" = None) -> bool:
    """True when ``event_arg`` may go to the worker (Kiro reads its prompt from env: no)."""
    env = environment() if environ is None else environ
    if env.get("MEMLANE_RELAY", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    found = lookup(event_arg)
    prefix = split_event_arg(event_arg)[0]
    kiro = (prefix or "").strip().lower() == "kiro" or (found is not None and found[1] == "kiro")
    return found is not None and not kiro and found[0] in RELAYED


def environment() -> dict[str, str]:
    """This process's environment as text (``os.environ`` without importing os)."""
    return {
        key.decode("utf-8", "surrogateescape"): value.decode("utf-8", "surrogateescape")
        for key, value in posix.environ.items()
    }


def origin_directory(environ: "Mapping[str, str]") -> str:
    """The directory a hook runs for when its payload names none: Claude Code's
    ``CLAUDE_PROJECT_DIR``, else the hook process's working directory (Windsurf runs
    its hooks in the workspace root). The relay sends it, so the worker files such a
    hook under the client's project, not under its own working directory."""
    return environ.get("CLAUDE_PROJECT_DIR") or posix.getcwd()


def _expand_home(path: str, environ: "Mapping[str, str]") -> str:
    if path == "~" or path.startswith("~/"):
        home = environ.get("HOME")
        if home:
            return (home.rstrip("/") + path[1:]) or "/"
    if path.startswith("~"):  # ~user: rare enough to pay for os.path
        import os.path

        return os.path.expanduser(path)
    return path


def runtime_dir(environ: "Mapping[str, str]") -> str:
    """The worker's runtime directory as the hook's environment names it.

    The rule of ``paths.state_paths().runtime_dir``, restated without pathlib (a
    test keeps the two equal): deriving it from ``memlane.paths`` made a relayed
    prompt hook 2.5x slower (``benchmarks/hooks_bench.py``: 9.7 -> 24 ms; importing
    pathlib and dataclasses under ``-S`` costs ~14 ms). It only has to agree with
    itself, since the worker computes its address with this same function from an
    environment the relay requires to be identical.
    """
    return _in_home(environ, "run", "XDG_STATE_HOME", "/.local/state")


def _in_home(environ: "Mapping[str, str]", name: str, xdg_var: str, xdg_default: str) -> str:
    """``name`` in MEMLANE_HOME, else in memlane's folder of the XDG base directory
    ``xdg_var`` (``~`` + ``xdg_default`` when unset or relative)."""
    home = environ.get("MEMLANE_HOME")
    if home:
        return _expand_home(home, environ).rstrip("/") + "/" + name
    base = environ.get(xdg_var) or ""
    if not base.startswith("/"):
        base = _expand_home("~", environ) + xdg_default
    return base.rstrip("/") + "/memlane/" + name


def socket_address(environ: "Mapping[str, str]") -> str | None:
    """Where the worker of this home listens for hooks; None when no address fits."""
    run = runtime_dir(environ)
    path = run + "/hook.sock"
    if len(path.encode("utf-8", "surrogateescape")) < 100:
        return path
    if sys.platform.startswith("linux"):
        from memlane.digest import sha256_hex

        digest = sha256_hex(run.encode("utf-8", "surrogateescape"))[:40]
        return f"\0memlane-hook-{posix.getuid()}#{digest}"
    return None


def database_path(environ: "Mapping[str, str]") -> str:
    """The database a process with this environment opens (without ``--db``).

    The rule of ``Settings.database`` restated without pathlib, like
    :func:`runtime_dir` (a test keeps the two equal).
    """
    target = environ.get("MEMLANE_DB")
    if target:
        return target
    return _in_home(environ, "memlane.db", "XDG_DATA_HOME", "/.local/share")


def database_identity(target: str) -> str:
    """What names the database ``target`` for both ends of the relay.

    A file's device and inode (a deleted or replaced file no longer matches the one a
    worker holds open); "missing" when there is no file; a URL is its own identity.
    """
    if "://" in target:
        return target
    try:
        info = posix.stat(target)
    except (OSError, ValueError):
        return "missing"
    return f"{info.st_dev}:{info.st_ino}"


def as_spawned(environ: "Mapping[str, str]", database_target: str | None) -> dict[str, str]:
    """``environ`` of a process that opens ``database_target`` (its ``--db``, if any) as the
    processes it starts inherit it: with ``MEMLANE_DB`` set to that target, which is how
    they receive it (:func:`memlane.runtime.spawn_detached`). A worker and a client
    describe themselves so: ``--db X`` and ``MEMLANE_DB=X`` are the same environment."""
    env = dict(environ)
    if database_target:
        env["MEMLANE_DB"] = database_target
    return env


def env_fingerprint(environ: "Mapping[str, str]") -> list[str] | None:
    """The ``KEY=VALUE`` lines of the settings-bearing environment (None: not sendable)."""
    lines = []
    for key in sorted(environ):
        if key.startswith(ENV_PREFIX) and key not in CLIENT_ONLY_ENV:
            line = f"{key}={environ[key]}"
            if "\n" in line or "\0" in line:
                return None
            lines.append(line)
    return lines


def peer_uid(sock: object) -> int | None:
    """The uid of the process at the other end of a connected Unix socket."""
    credentials = peer_credentials(sock)
    return None if credentials is None else credentials[1]


def peer_credentials(sock: object) -> tuple[int | None, int] | None:
    """(pid, uid) of the process at the other end (pid None where the system hides it)."""
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:  # pragma: no cover - not Linux: the socket file's 0700 dir guards it
        return None, posix.getuid()
    try:
        raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # type: ignore[attr-defined]
    except OSError:
        return None
    # struct ucred {pid, uid, gid}
    return int.from_bytes(raw[0:4], sys.byteorder), int.from_bytes(raw[4:8], sys.byteorder)


def relay(
    event_arg: str,
    payload: bytes,
    *,
    environ: "Mapping[str, str] | None" = None,
    timeout_s: float | None = None,
) -> bytes | None:
    """The worker's stdout for this hook, or None to run it in-process."""
    env = environment() if environ is None else environ
    if not relayable(event_arg, env) or "\n" in event_arg or len(payload) > MAX_STDIN_BYTES:
        return None
    timeout = timeout_s if timeout_s is not None else _timeout(event_arg, env)
    return _exchange(event_arg, payload, env, timeout)


def _timeout(event_arg: str, env: "Mapping[str, str]") -> float:
    """``MEMLANE_RELAY_TIMEOUT_MS`` when set (a slow machine), else the event's default."""
    try:
        return max(int(env.get("MEMLANE_RELAY_TIMEOUT_MS", "")), 1) / 1000
    except ValueError:
        return TIMEOUTS_S[event_name(event_arg)]


def _exchange(
    event_arg: str,
    payload: bytes,
    env: "Mapping[str, str]",
    timeout: float,
    *,
    max_reply: int = MAX_REPLY_BYTES,
) -> bytes | None:
    answer = exchange(event_arg, payload, env, timeout, max_reply=max_reply)
    return None if answer is None else answer[1]


def exchange(
    event_arg: str,
    payload: bytes,
    env: "Mapping[str, str]",
    timeout: float,
    *,
    max_reply: int = MAX_REPLY_BYTES,
    database_target: str | None = None,
) -> tuple[int | None, bytes] | None:
    """(the worker's pid, its answer) to one request; None when no worker handled it.

    ``database_target``: the database the caller uses (default: the one ``env`` names).
    """
    address = socket_address(env)
    lines = env_fingerprint(env)
    database = database_identity(database_target or database_path(env))
    try:
        origin = origin_directory(env)
    except OSError:  # the working directory was removed: the hook process says why
        return None
    if address is None or lines is None or "\n" in database + origin:
        return None
    deadline = time.monotonic() + timeout
    header = "\n".join([event_arg, repr(deadline), database, origin, *lines]) + "\n\n"
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(address)
        credentials = peer_credentials(sock)
        if credentials is None or credentials[1] != posix.getuid():
            return None
        sock.sendall(PROTOCOL + b"\n" + header.encode("utf-8", "surrogateescape") + payload)
        sock.shutdown(_socket.SHUT_WR)
        chunks: list[bytes] = []
        size = 0
        while True:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_reply:
                return None
            chunks.append(chunk)
    except OSError:  # no worker, refused, timed out, reset: run in-process
        return None
    finally:
        sock.close()
    reply = b"".join(chunks)
    return (credentials[0], reply[1:]) if reply[:1] == HANDLED else None


def flush(*, environ: "Mapping[str, str] | None" = None, timeout_s: float = 2.0) -> bool:
    """Wait until the worker has finished the hooks (and their writes) queued so far.

    Hooks that run in their own process call this first, so they see what the
    relayed hooks before them wrote. False when no worker answered.
    """
    env = environment() if environ is None else environ
    return _exchange(FLUSH, b"", env, timeout_s) is not None
