"""The hook relay: the installed command hands hooks to a running worker (real sockets).

A HookRelay serves a real Memory on a temp home; the hooks run as real
subprocesses of the command ``memlane setup`` installs (``python -S …/launch.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.hooks import dispatch
from memlane.hooks.relay import (
    PROTOCOL,
    database_identity,
    database_path,
    flush,
    relay,
    relayable,
    runtime_dir,
    socket_address,
)
from memlane.integrations import hook_argv
from memlane.paths import state_paths
from memlane.service import Memory
from memlane.worker.relay_server import HookRelay
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_hooks import context_of, hook, log_lines, payload, rows

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sockets")


def launch_hook(
    home: Path,
    event: str,
    stdin: bytes,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    importtime: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    full_env = run_env(home)
    full_env["MEMLANE_RELAY_TIMEOUT_MS"] = "20000"  # a loaded CI machine must not fall back
    full_env.update(env or {})
    argv = hook_argv(event)
    if importtime:
        argv.insert(1, "-Ximporttime")
    return subprocess.run(
        argv, input=stdin, capture_output=True, env=full_env, cwd=cwd, timeout=60, check=False
    )


def handled(home: Path, relay_worker: HookRelay) -> int:
    """Hooks the worker handled so far (after the ones in flight are done, the ingest
    thread's writes after its answers included)."""
    assert flush(environ=run_env(home))
    assert relay_worker.wait_quiet()
    return relay_worker.handled


def answer(done: subprocess.CompletedProcess[bytes]) -> bytes:
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b"", done.stderr.decode()
    return done.stdout


def test_installed_command_is_python_dash_s_and_the_launcher() -> None:
    argv = hook_argv("user-prompt-submit")
    assert argv[:2] == [sys.executable, "-S"]
    assert argv[2].endswith(os.path.join("memlane", "hooks", "launch.py"))
    assert Path(argv[2]).is_file()
    assert hook_argv("stop", "codex")[-1] == "codex:stop"


def test_the_launcher_script_holds_no_code_of_its_own() -> None:
    """The script is compiled on every hook (a script's code is never cached): it only
    sets the path and calls the launcher module, whose compiled form is."""
    import ast

    script = Path(hook_argv("user-prompt-submit")[2])
    tree = ast.parse(script.read_text(encoding="utf-8"))
    defined = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    assert defined == []
    assert len(script.read_bytes()) < 1200
    assert "from memlane.hooks.launcher import main" in script.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "env",
    [
        {"MEMLANE_HOME": "/srv/mem/home"},
        {"MEMLANE_HOME": "/srv/mem/home/"},
        {"MEMLANE_HOME": "~/mem", "HOME": "/home/u"},
        {"XDG_STATE_HOME": "/var/state", "HOME": "/home/u"},
        {"XDG_STATE_HOME": "relative/ignored", "HOME": "/home/u"},
        {"HOME": "/home/u"},
    ],
)
def test_runtime_dir_matches_state_paths(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", env.get("HOME", "/root"))
    assert runtime_dir(env) == str(state_paths(env).runtime_dir)


@pytest.mark.parametrize(
    "env",
    [
        {"MEMLANE_HOME": "/srv/mem/home/"},
        {"MEMLANE_HOME": "~/mem", "HOME": "/home/u"},
        {"XDG_DATA_HOME": "/var/data", "HOME": "/home/u"},
        {"XDG_DATA_HOME": "relative/ignored", "HOME": "/home/u"},
        {"HOME": "/home/u"},
    ],
)
def test_database_path_matches_state_paths(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", env.get("HOME", "/root"))
    assert database_path(env) == str(state_paths(env).db_path)
    assert database_path({**env, "MEMLANE_DB": "/elsewhere/m.db"}) == "/elsewhere/m.db"


def test_addresses_differ_per_home_and_fit() -> None:
    """A socket file in the private runtime directory (no other user can bind it first);
    on Linux, a name in the abstract namespace when that path is too long."""
    a = socket_address({"MEMLANE_HOME": "/a"})
    b = socket_address({"MEMLANE_HOME": "/b"})
    long = socket_address({"MEMLANE_HOME": "/x" * 200})
    assert a == "/a/run/hook.sock" and b == "/b/run/hook.sock"
    assert long and long.startswith("\0") and len(long.encode()) <= 100


def test_whole_session_relayed_stores_and_injects_like_in_process(
    home: Path, project: Path, transcript: Path, relay_worker: HookRelay
) -> None:
    a = {"session": "sess-a", "cwd": str(project), "transcript": str(transcript)}
    assert (
        answer(launch_hook(home, "session-start", payload("session_start", **a), cwd=project))
        == b""
    )
    prompt_a = payload("user_prompt_submit", **a)
    assert answer(launch_hook(home, "user-prompt-submit", prompt_a, cwd=project)) == b""
    for name in (
        "post_tool_use_edit",
        "post_tool_use_bash",
        "post_tool_use_read",
        "post_tool_use_todo",
    ):
        assert answer(launch_hook(home, "post-tool-use", payload(name, **a), cwd=project)) == b""
    # Stop and SessionEnd are relayed too (the worker's ingest thread, after the writes
    # relayed before them).
    assert answer(launch_hook(home, "stop", payload("stop", **a), cwd=project)) == b""
    assert answer(launch_hook(home, "session-end", payload("session_end", **a), cwd=project)) == b""
    assert handled(home, relay_worker) == 8

    assert [r[0] for r in rows(home, "SELECT metadata FROM memories WHERE kind = 'prompt'")] == [
        json.dumps({"number": 1})
    ]
    types = rows(home, "SELECT type FROM memories WHERE kind = 'observation' ORDER BY id")
    assert [t[0] for t in types] == ["file-write", "command", "file-read"]
    checkpoint = rows(home, "SELECT metadata FROM memories WHERE kind = 'checkpoint'")
    assert (
        "add a test for webhook timeouts"
        in json.loads(checkpoint[0][0])["checkpoint"]["next_steps"]
    )
    assert rows(home, "SELECT status FROM sessions WHERE id = 'sess-a'") == [("ended",)]

    b = {"session": "sess-b", "cwd": str(project), "transcript": str(transcript)}
    start_b = payload("session_start", **b)
    relayed_start = answer(launch_hook(home, "session-start", start_b, cwd=project))
    local_start = answer(
        launch_hook(home, "session-start", start_b, cwd=project, env={"MEMLANE_RELAY": "0"})
    )
    assert relayed_start == local_start
    assert "add a test for webhook timeouts" in relayed_start.decode()

    prompt = {
        "session_id": "sess-b",
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "why does the retry pass an idempotency key to stripe?",
    }
    data = json.dumps(prompt).encode()
    relayed = context_of(
        answer(launch_hook(home, "user-prompt-submit", data, cwd=project)), "UserPromptSubmit"
    )
    local = context_of(
        answer(
            launch_hook(home, "user-prompt-submit", data, cwd=project, env={"MEMLANE_RELAY": "0"})
        ),
        "UserPromptSubmit",
    )
    assert len(relayed) > 3 and relayed == local
    assert handled(home, relay_worker) == 10
    numbers = rows(home, "SELECT prompt_count FROM sessions WHERE id = 'sess-b'")
    assert numbers == [(2,)]  # one prompt relayed, one in-process: both counted once
    used = rows(home, "SELECT count(*) FROM memories WHERE access_count > 0")[0][0]
    assert used == 0  # an injection is not a use (handlers.user_prompt_submit)


def test_relayed_hook_imports_no_database_or_json(
    home: Path, project: Path, relay_worker: HookRelay
) -> None:
    data = json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "fix the retry",
        }
    ).encode()
    done = launch_hook(home, "user-prompt-submit", data, cwd=project, importtime=True)
    assert done.returncode == 0
    imported = set(re.findall(r"\|\s+([\w.]+)\s*$", done.stderr.decode(), re.MULTILINE))
    assert {"memlane.hooks.launcher", "memlane.hooks.relay"} <= imported
    assert not imported & {
        "os",
        "json",
        "re",
        "sqlite3",
        "site",
        "memlane.hooks.dispatch",
        "socket",
        "__future__",  # ~0.2 ms: the modules a relay loads use no future annotations
    }
    assert handled(home, relay_worker) == 1


def test_different_settings_fall_back_to_in_process(
    home: Path, project: Path, relay_worker: HookRelay, memory: Memory
) -> None:
    memory.save(
        "the retry uses an idempotency key for stripe", project="billing-api", type="decision"
    )
    memory.save(
        "the retry backs off exponentially on stripe errors", project="billing-api", type="decision"
    )
    data = json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "how does the stripe retry work?",
        }
    ).encode()
    lines = context_of(
        answer(
            launch_hook(
                home,
                "user-prompt-submit",
                data,
                cwd=project,
                env={"MEMLANE_RECALL_LIMIT": "1", "MEMLANE_MIN_RELEVANCE_SCORE": "0.01"},
            )
        ),
        "UserPromptSubmit",
    )
    assert handled(home, relay_worker) == 0  # another environment: refused, the hook ran itself
    assert flush(environ={**run_env(home), "MEMLANE_RECALL_LIMIT": "1"}) is False
    assert len([line for line in lines if re.match(r"\d\. ", line)]) == 1


def test_config_change_after_start_falls_back(
    home: Path, project: Path, relay_worker: HookRelay, settings: Settings
) -> None:
    data = json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "make"},
            "tool_response": {"stdout": "ok"},
        }
    ).encode()
    assert relay("post-tool-use", data, environ=run_env(home)) == b""
    assert handled(home, relay_worker) == 1
    settings.paths.config_path.write_text("recall_limit = 2\n")
    assert relay("post-tool-use", data, environ=run_env(home)) is None
    assert flush(environ=run_env(home)) is False
    assert relay_worker.handled == 1


def test_late_request_is_refused_not_run(home: Path, relay_worker: HookRelay) -> None:
    import socket

    env = run_env(home)
    lines = sorted(
        f"{k}={v}" for k, v in env.items() if k.startswith("MEMLANE_") and k != "MEMLANE_RELAY"
    )
    database = database_identity(database_path(env))
    late = repr(time.monotonic() - 1)
    header = "\n".join(["user-prompt-submit", late, database, str(Path.cwd()), *lines])
    header += "\n\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(socket_address(env) or "")
        sock.sendall(PROTOCOL + b"\n" + header.encode() + b"{}")
        sock.shutdown(socket.SHUT_WR)
        reply = sock.recv(1000)
    assert reply.startswith(b"F") and b"deadline" in reply
    assert handled(home, relay_worker) == 0


def test_malformed_requests_are_refused(home: Path, relay_worker: HookRelay) -> None:
    import socket

    for request in (b"", b"GET / HTTP/1.1\r\n\r\n", PROTOCOL + b"\nx\nnot-a-number\n\n{}"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(socket_address(run_env(home)) or "")
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(1000).startswith(b"F")
    assert flush(environ=run_env(home)) is True


def test_failing_hook_in_worker_logs_and_answers_nothing(
    home: Path, project: Path, relay_worker: HookRelay
) -> None:
    for bad in (b"[1, 2]", b"{not json", b'{"session_id": 5, "prompt": []}'):
        done = launch_hook(home, "user-prompt-submit", bad, cwd=project)
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert handled(home, relay_worker) == 3
    assert len([line for line in log_lines(home) if "(worker)" in line]) == 3
    assert rows(home, "SELECT count(*) FROM memories") == [(0,)]


def test_codex_session_start_always_answers(
    home: Path, project: Path, relay_worker: HookRelay
) -> None:
    data = json.dumps(
        {
            "session_id": "c1",
            "cwd": str(project),
            "hook_event_name": "SessionStart",
            "turn_id": "t",
            "model": "gpt",
            "source": "startup",
            "transcript_path": None,
        }
    ).encode()
    out = json.loads(answer(launch_hook(home, "codex:session-start", data, cwd=project)))
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert handled(home, relay_worker) == 1


def test_without_worker_the_launcher_runs_the_hook_itself(home: Path, project: Path) -> None:
    data = json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "fix the stripe retry",
        }
    ).encode()
    assert answer(launch_hook(home, "user-prompt-submit", data, cwd=project)) == b""
    assert rows(home, "SELECT kind FROM memories") == [("prompt",)]
    assert relay("user-prompt-submit", data, environ=run_env(home)) is None
    assert flush(environ=run_env(home)) is False


class RefusingRelay:
    """A stand-in worker at the relay address: counts the hooks offered, takes none."""

    def __init__(self, address: str) -> None:
        import socket
        import threading

        self.offers = 0
        if not address.startswith("\0"):  # a socket file in the runtime directory
            Path(address).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(address)
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(10)
                while conn.recv(65536):
                    pass
                self.offers += 1
                conn.sendall(b"Fnot this one")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


@pytest.mark.parametrize("command", ["installed", "memlane hook"])
def test_a_hook_offers_itself_to_the_worker_exactly_once(
    home: Path, project: Path, memory: Memory, command: str
) -> None:
    memory.save("the stripe retry uses an idempotency key", project="billing-api", type="decision")
    data = json.dumps(
        {"session_id": "s", "cwd": str(project), "prompt": "how does the stripe retry work?"}
    ).encode()
    refusing = RefusingRelay(socket_address(run_env(home)) or "")
    try:
        if command == "installed":
            done = launch_hook(home, "user-prompt-submit", data, cwd=project)
        else:
            done = hook(home, "user-prompt-submit", data, cwd=project)
        lines = context_of(answer(done), "UserPromptSubmit")
    finally:
        refusing.close()
    assert refusing.offers == 1  # refused once, then run in-process: no second offer
    assert any("idempotency key" in line for line in lines)


def test_the_prompt_hook_sends_nothing_to_the_port_of_the_runtime_file(
    home: Path, project: Path, memory: Memory, settings: Settings
) -> None:
    """After a worker crash and pid reuse, whoever listens on that port gets nothing:
    no bearer token, no prompt (the relay socket checks the peer's uid; HTTP could not)."""
    import socket

    from memlane.paths import write_private_text
    from memlane.runtime import WorkerInfo, token_file, write_runtime

    memory.save("the stripe retry uses an idempotency key", project="billing-api", type="decision")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    alive = os.getpid()  # the runtime file names a live pid, as after pid reuse
    write_runtime(settings.paths, WorkerInfo(alive, "127.0.0.1", port, time.time(), "x"))
    write_private_text(token_file(settings.paths), "the-bearer-token\n")
    data = json.dumps(
        {"session_id": "s", "cwd": str(project), "prompt": "how does the stripe retry work?"}
    ).encode()
    try:
        for done in (
            launch_hook(home, "user-prompt-submit", data, cwd=project),
            hook(home, "user-prompt-submit", data, cwd=project),
        ):
            lines = context_of(answer(done), "UserPromptSubmit")
            assert any("idempotency key" in line for line in lines)  # recalled in-process
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    finally:
        listener.close()


def test_kiro_and_unknown_events_are_never_relayed(home: Path, relay_worker: HookRelay) -> None:
    env = run_env(home)
    assert relay("kiro:user-prompt-submit", b"{}", environ=env) is None
    assert relay("promptSubmit", b"{}", environ=env) is None  # Kiro's own spelling
    assert relay("nonsense", b"{}", environ=env) is None
    assert relay("user-prompt-submit", b"{}", environ={**env, "MEMLANE_RELAY": "0"}) is None
    assert handled(home, relay_worker) == 0


def test_worker_with_another_database_does_not_relay(
    home: Path, tmp_path: Path, settings: Settings, memory: Memory
) -> None:
    from memlane.config import load_settings
    from memlane.service import open as open_memory

    other, _ = load_settings(db_target=str(tmp_path / "other.db"))
    with open_memory(settings=other) as mem:
        server = HookRelay(mem, other, environ=run_env(home))
        assert server.start()
        try:
            assert relay("post-tool-use", b"{}", environ=run_env(home)) is None
            assert server.handled == 0
            # the worker's --db is MEMLANE_DB to the processes it starts (the database is
            # handed on so, never on a command line): a hook naming it so is relayed
            same = {**run_env(home), "MEMLANE_DB": str(tmp_path / "other.db")}
            assert relay("post-tool-use", b"{}", environ=same) == b""
            assert server.wait_quiet()
            assert server.handled == 1
        finally:
            server.stop()


def test_worker_of_a_deleted_or_replaced_database_takes_no_hook(
    home: Path, project: Path, settings: Settings, memory: Memory, relay_worker: HookRelay
) -> None:
    env = run_env(home)
    data = payload("post_tool_use_bash", session="s1", cwd=str(project))
    assert relay("post-tool-use", data, environ=env) == b""
    assert handled(home, relay_worker) == 1
    db = Path(settings.database)
    moved = db.with_name("old.db")
    db.rename(moved)
    assert relay("post-tool-use", data, environ=env) is None  # the file is gone: refused
    moved.rename(db)
    assert relay("post-tool-use", data, environ=env) == b""  # the same file back: taken
    assert handled(home, relay_worker) == 2
    db.rename(moved)
    db.write_bytes(moved.read_bytes())  # another file at the same path (a restore)
    assert relay("post-tool-use", data, environ=env) is None
    assert flush(environ=env) is False  # refused too: nothing of this home runs there
    assert relay_worker.handled == 2


def test_semantic_ready_only_after_model_and_vectors_are_loaded(home: Path) -> None:
    from memlane.config import load_settings
    from memlane.service import open as open_memory

    toy, _ = load_settings(overrides={"embedder": "toy"})
    with open_memory(settings=toy) as mem:
        mem.save("jittered backoff for webhook retries", project="p", type="decision")
        mem.embed_backfill()
        fresh = open_memory(settings=toy)
        try:
            assert fresh.search_engine.semantic_ready() is False  # a prompt would wait: keyword
            fresh.search("backoff", project="p", mode="hybrid")
            assert fresh.search_engine.semantic_ready() is True
        finally:
            fresh.close()


@contextlib.contextmanager
def worker_started_by_a_prompt(
    home: Path, project: Path, extra: dict[str, str] | None = None
) -> Iterator[tuple[dict[str, str], bytes]]:
    """A prompt hook run with no worker and autostart on (``extra``: more environment):
    yields the environment and the prompt's payload once the worker it started answers;
    the worker is stopped after."""
    from memlane.runtime import read_runtime
    from tests.test_web_support import free_port

    extra = {
        "MEMLANE_WORKER_AUTOSTART": "true",
        "MEMLANE_WORKER_PORT": str(free_port()),
        "MEMLANE_EMBEDDER": "none",
        **(extra or {}),
    }
    env = {**run_env(home), **extra}
    data = json.dumps(
        {"session_id": "s", "cwd": str(project), "prompt": "add jitter to the webhook retry"}
    ).encode()
    assert answer(launch_hook(home, "user-prompt-submit", data, cwd=project, env=extra)) == b""
    paths = state_paths(env)
    try:
        deadline = time.monotonic() + 60  # a worker's start on a loaded machine
        while time.monotonic() < deadline and not flush(environ=env):
            time.sleep(0.1)
        assert flush(environ=env), (paths.log_dir / "worker.log").read_text()
        yield env, data
    finally:
        info = read_runtime(paths)
        if info is not None:
            os.kill(info.pid, 15)
            deadline = time.monotonic() + 15
            while read_runtime(paths) is not None and time.monotonic() < deadline:
                time.sleep(0.05)


def test_a_prompt_without_worker_starts_one_and_later_prompts_are_relayed(
    home: Path, project: Path
) -> None:
    with worker_started_by_a_prompt(home, project) as (env, data):
        assert relay("user-prompt-submit", data, environ=env, timeout_s=20) is not None
        assert flush(environ=env)  # the relayed prompt's write is done
        numbers = rows(home, "SELECT prompt_count FROM sessions WHERE id = 's'")
        assert numbers == [(2,)]


def test_a_relayed_hook_with_stdout_closed_exits_0(home: Path, project: Path) -> None:
    """The relayed answer was written to sys.stdout, None when the agent started the hook
    with stdout closed: an AttributeError, exit 1."""
    import shlex

    with worker_started_by_a_prompt(home, project) as (env, data):
        saved = subprocess.run(
            [*MEMLANE_CMD, "save", "The webhook retry adds jitter of up to 30 s", "--type",
             "decision"],
            env=env, cwd=project, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        assert saved.returncode == 0, saved.stderr
        assert relay("user-prompt-submit", data, environ=env, timeout_s=20)  # it injects
        start = data
        command = " ".join(shlex.quote(part) for part in hook_argv("user-prompt-submit"))
        env = {**env, "MEMLANE_RELAY_TIMEOUT_MS": "20000"}
        done = subprocess.run(
            ["sh", "-c", f"{command} >&-"],
            input=start,
            capture_output=True,
            env=env,
            cwd=project,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, b"")
        assert not log_lines(home), log_lines(home)  # relayed, nothing went wrong


def test_launcher_gives_up_on_stdin_that_never_closes(home: Path, project: Path) -> None:
    with subprocess.Popen(
        hook_argv("user-prompt-submit"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=run_env(home),
        cwd=project,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(b'{"session_id": "s", "prompt": "never ')  # and never closed
        proc.stdin.flush()
        # It gives up at its budget (the log line below); the timeout only catches a hang.
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b"" and proc.stderr.read() == b""
    assert any("stdin not closed" in line for line in log_lines(home)), log_lines(home)


def test_concurrent_relayed_hooks_all_land_once(
    home: Path, project: Path, relay_worker: HookRelay
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def fire(i: int) -> bytes:
        event = "user-prompt-submit" if i % 2 else "post-tool-use"
        data = {
            "session_id": f"s{i % 3}",
            "cwd": str(project),
            "prompt": f"explain the retry budget number {i}",
            "tool_name": "Bash",
            "tool_input": {"command": f"make test-{i}"},
            "tool_response": {"stdout": "ok"},
        }
        return answer(launch_hook(home, event, json.dumps(data).encode(), cwd=project))

    with ThreadPoolExecutor(max_workers=8) as pool:
        outputs = list(pool.map(fire, range(24)))
    assert handled(home, relay_worker) == 24
    assert all(out == b"" or out.startswith(b'{"hookSpecificOutput"') for out in outputs)
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'prompt'") == [(12,)]
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'observation'") == [(12,)]
    counts = rows(home, "SELECT sum(prompt_count) FROM sessions")
    assert counts == [(12,)]
    numbers = rows(
        home,
        "SELECT session_id, json_extract(metadata, '$.number') FROM memories"
        " WHERE kind = 'prompt' ORDER BY session_id, 2",
    )
    for session in ("s0", "s1", "s2"):
        mine = [n for s, n in numbers if s == session]
        assert mine == list(range(1, len(mine) + 1))  # numbered 1..n, no gap, no repeat
    assert [line for line in log_lines(home) if "(worker)" in line] == []


def test_every_spelling_of_an_event_gets_its_budget_and_relay_rule() -> None:
    assert dispatch._budget_for("UserPromptSubmit") == dispatch.BUDGETS["user-prompt-submit"]
    assert dispatch._budget_for("gemini:AfterAgent") == dispatch.BUDGETS["stop"]
    assert dispatch._budget_for("nonsense") == dispatch.DEFAULT_BUDGET
    env = {"MEMLANE_HOME": "/x"}
    assert relayable("codex:UserPromptSubmit", env) and relayable("BeforeAgent", env)
    assert relayable("SessionEnd", env) and relayable("SubagentStop", env)
    assert not relayable("agentSpawn", env)
    assert dispatch._is_kiro("agentSpawn") and dispatch._is_kiro("kiro:stop")
    assert not dispatch._is_kiro("stop")


def test_an_older_memlane_first_on_the_path_still_runs_the_hook_or_stays_silent(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """PYTHONPATH may put another memlane ahead of the launcher's own (one without
    ``memlane.hooks.launcher``): the hook then runs as that memlane's, and when even
    that fails, the process exits 0 printing nothing."""
    older = tmp_path / "older"
    (older / "memlane" / "hooks").mkdir(parents=True)
    (older / "memlane" / "__init__.py").write_text("")
    (older / "memlane" / "hooks" / "__init__.py").write_text("")
    data = json.dumps({"session_id": "s", "cwd": str(project), "prompt": "hi"}).encode()
    env = {**run_env(home), "PYTHONPATH": str(older)}
    argv = hook_argv("user-prompt-submit")
    silent = subprocess.run(argv, input=data, env=env, cwd=project, capture_output=True)
    assert (silent.returncode, silent.stdout, silent.stderr) == (0, b"", b"")
    (older / "memlane" / "hooks" / "dispatch.py").write_text(
        "import sys\n"
        "def run_hook(event, *, exit_when_done, relay):\n"
        "    sys.stdout.write('older ' + event + ' ' + sys.stdin.read())\n"
        "    sys.stdout.flush()\n"
    )
    ran = subprocess.run(argv, input=data, env=env, cwd=project, capture_output=True)
    assert ran.returncode == 0
    assert ran.stdout.decode() == "older user-prompt-submit " + data.decode()


def test_receiver_threads_are_kept_for_the_next_hooks_and_end_with_the_relay(
    home: Path, memory: Memory, settings: Settings, project: Path
) -> None:
    """A hook after another is read by a receiver thread kept idle (starting a thread
    costs milliseconds on a loaded machine); connections open together get one each;
    stop() ends them all."""
    import socket as socket_module
    import threading

    def receivers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "memlane-relay-receiver"}

    server = HookRelay(memory, settings, environ=run_env(home))
    assert server.start()
    env = run_env(home)
    data = json.dumps({"session_id": "s", "cwd": str(project), "prompt": "/compact"}).encode()
    try:
        assert relay("user-prompt-submit", data, environ=env, timeout_s=20) == b""
        first = receivers()
        assert len(first) == 1
        for _ in range(20):
            assert relay("user-prompt-submit", data, environ=env, timeout_s=20) == b""
        # the same thread read them (a thread finishing a request may still be on its way
        # back to idle when the next one comes: then a second one helps)
        assert first <= receivers() and len(receivers()) <= 3
        address = socket_address(env)
        assert address is not None
        held = []
        for _ in range(6):  # requests that stay incomplete: each holds a receiver
            conn = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
            conn.connect(address)
            conn.sendall(PROTOCOL + b"\n")
            held.append(conn)
        assert relay("user-prompt-submit", data, environ=env, timeout_s=20) == b""
        assert len(receivers()) >= 7
        for conn in held:
            conn.close()
        assert handled(home, server) == 22
    finally:
        server.stop()
    deadline = time.monotonic() + 20
    while receivers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert receivers() == set()


SQUATTER = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    sock.bind(bytes.fromhex(sys.argv[1]).decode())
    sock.listen(1)
    print("bound", flush=True)
except OSError as exc:
    print("refused", exc.errno, flush=True)
sys.stdin.read()
"""


def test_another_user_cannot_take_the_relay_address_first(
    home: Path, memory: Memory, settings: Settings, other_user: object
) -> None:
    """The address was a name in Linux's abstract namespace, which any local user can bind:
    another user who took it first left every hook of this one in its own process (keyword
    recall only). Now it is a socket file in the private runtime directory."""
    from tests.other_user import spawn_as

    env = run_env(home)
    address = socket_address(env) or ""
    squatter = spawn_as(other_user, SQUATTER, address.encode().hex())  # type: ignore[arg-type]
    try:
        assert squatter.stdout is not None
        line = squatter.stdout.readline()
        if address.startswith("\0"):
            # The runtime path is too long for a socket file (a deep temporary folder):
            # the abstract name any user can bind; the uid check refuses that listener.
            assert line.startswith(b"bound")
            assert flush(environ=env) is False
            return
        assert line.startswith(b"refused")
        server = HookRelay(memory, settings, environ=env)
        try:
            assert server.start()
            assert flush(environ=env) is True
        finally:
            server.stop()
    finally:
        squatter.communicate(timeout=60)
