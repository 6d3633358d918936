"""The Claude Code plugin's hooks run memlane's launcher, like `memlane setup` (real shells)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memlane.integrations import hook_argv, launcher_path
from memlane.worker.relay_server import HookRelay
from tests.conftest import run_env
from tests.test_hook_relay import handled
from tests.test_hooks import payload

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX shell")

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
SCRIPT = PLUGIN / "hooks" / "memlane-hook"


def plugin_commands() -> dict[str, str]:
    """Event → the shell command of plugin/hooks/hooks.json, as Claude Code expands it."""
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    return {
        event: groups[0]["hooks"][0]["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))
        for event, groups in hooks.items()
    }


def bin_with(tmp_path: Path, memlane: Path | None) -> str:
    """A PATH with ``memlane`` (a symlink to ``memlane``, or none) and the basic tools."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    if memlane is not None:
        (directory / "memlane").symlink_to(memlane)
    return f"{directory}:/usr/bin:/bin"


def installed_memlane() -> Path:
    script = Path(sys.executable).with_name("memlane")
    if not script.is_file():
        pytest.skip("no memlane console script next to this interpreter")
    return script


def trace(env: dict[str, str], event: str) -> str:
    """What the plugin's script execs for ``event`` (sh -x), with stdin closed."""
    done = subprocess.run(
        ["/bin/sh", "-x", str(SCRIPT), event],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    execs = [line for line in done.stderr.splitlines() if line.startswith("+ exec ")]
    assert execs, done.stderr
    return execs[-1].removeprefix("+ exec ")


def test_every_event_runs_the_script_and_the_script_is_executable() -> None:
    commands = plugin_commands()
    assert set(commands) == {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "SubagentStop",
        "PreCompact",
        "SessionEnd",
    }
    for command in commands.values():
        argv = shlex.split(command)
        assert argv[0] == str(SCRIPT) and len(argv) == 2
    assert os.access(SCRIPT, os.X_OK)


def test_the_script_execs_what_setup_installs(home: Path, tmp_path: Path) -> None:
    env = {**run_env(home), "PATH": bin_with(tmp_path, installed_memlane())}
    for event in ("user-prompt-submit", "session-start", "stop"):
        ran = shlex.split(trace(env, event))
        expected = hook_argv(event)
        assert Path(ran[0]).resolve() == Path(expected[0]).resolve()
        assert ran[1:2] == ["-S"]
        assert Path(ran[2]).resolve() == launcher_path()
        assert ran[3:] == [event]


def test_a_prompt_through_the_plugin_is_relayed_to_the_worker(
    home: Path, tmp_path: Path, project: Path, relay_worker: HookRelay
) -> None:
    env = {
        **run_env(home),
        "PATH": bin_with(tmp_path, installed_memlane()),
        "MEMLANE_RELAY_TIMEOUT_MS": "20000",
    }
    data = payload("post_tool_use_bash", session="plugin", cwd=str(project))
    done = subprocess.run(
        plugin_commands()["PostToolUse"],
        shell=True,
        input=data,
        env=env,
        cwd=project,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert handled(home, relay_worker) == 1


def test_no_memlane_on_path_is_a_silent_exit(home: Path, tmp_path: Path) -> None:
    env = {**run_env(home), "PATH": bin_with(tmp_path, None)}
    done = subprocess.run(
        plugin_commands()["UserPromptSubmit"],
        shell=True,
        input=b"{}",
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_an_unknown_memlane_gets_memlane_hook(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-memlane"
    other.write_text('#!/bin/sh\necho "ran: $*"\n')
    other.chmod(0o755)
    env = {**run_env(home), "PATH": bin_with(tmp_path, other)}
    done = subprocess.run(
        [str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout == "ran: hook stop\n"


def test_a_site_packages_install_is_found(home: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python3"
    python.symlink_to(sys.executable)
    package = venv / "lib" / "python3.11" / "site-packages" / "memlane"
    package.parent.mkdir(parents=True)
    package.symlink_to(launcher_path().parents[1])
    memlane = venv / "bin" / "memlane"
    memlane.write_text(f"#!{python}\nimport sys\nfrom memlane.__main__ import main\n")
    memlane.chmod(0o755)
    env = {**run_env(home), "PATH": bin_with(tmp_path, memlane), "MEMLANE_RELAY": "0"}
    ran = shlex.split(trace(env, "session-end"))
    assert ran == [str(python), "-S", str(package / "hooks" / "launch.py"), "session-end"]
