"""The Claude Code plugin's slash commands: well-formed, allowed, and their command lines work.

Claude Code reads ``plugin/commands/NAME.md`` as ``/memlane:NAME``: YAML
frontmatter (description, argument-hint, allowed-tools), then the prompt, in
which ``$ARGUMENTS`` is replaced by what the user typed and each
``!`command``` runs in the session's directory before the model reads the
output. Here each such line runs the same way, through bash, against a real
memlane home.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import MEMLANE_CMD, run_env

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
COMMANDS = PLUGIN / "commands"
BANG = re.compile(r"!`([^`]+)`")
ALLOWED = re.compile(r"Bash\(([^)]*?):\*\)")


def frontmatter(path: Path) -> tuple[dict[str, str], str]:
    """(keys, body) of a command file: ``key: value`` lines between two ``---`` lines."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    head, _, body = text[4:].partition("\n---\n")
    keys: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        assert sep and key.strip() and value.strip(), f"{path.name}: bad line {line!r}"
        keys[key.strip()] = value.strip()
    return keys, body


def command_lines(path: Path, arguments: str) -> list[str]:
    """The ``!`…``` lines of a command, ``$ARGUMENTS`` replaced as Claude Code does."""
    _, body = frontmatter(path)
    return [line.replace("$ARGUMENTS", arguments) for line in BANG.findall(body)]


def test_commands_are_well_formed_and_only_run_what_they_allow() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memlane"  # so the commands are /memlane:recall, /memlane:index
    assert "commands" not in manifest  # found by convention in commands/
    assert sorted(p.stem for p in COMMANDS.glob("*.md")) == ["index", "recall"]
    for path in COMMANDS.glob("*.md"):
        keys, body = frontmatter(path)
        assert set(keys) == {"description", "argument-hint", "allowed-tools"}, path.name
        assert len(keys["description"]) <= 120, path.name
        allowed = ALLOWED.findall(keys["allowed-tools"])
        assert allowed and all(prefix.startswith("memlane ") for prefix in allowed)
        lines = BANG.findall(body)
        assert lines, path.name
        for line in lines:
            assert any(line == p or line.startswith(p + " ") for p in allowed), line
        # Commands the model may run itself are allowed too.
        for mentioned in re.findall(r"`(memlane [a-z]+(?: [a-z]+)?)", body):
            assert any(mentioned.startswith(p) for p in allowed), (path.name, mentioned)
    assert "$ARGUMENTS" in frontmatter(COMMANDS / "recall.md")[1]


@pytest.fixture
def shell_env(home: Path, tmp_path: Path) -> dict[str, str]:
    """What a Claude Code session has: `memlane` on PATH (a wrapper of this checkout)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "memlane"
    command = " ".join(f"'{part}'" for part in MEMLANE_CMD)
    wrapper.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = run_env(home)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["MEMLANE_EMBEDDER"] = "toy"  # the real model is not needed to check the lines
    return env


def run_line(line: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, check=False
    )


def test_recall_and_index_lines_run(shell_env: dict[str, str], project: Path) -> None:
    for text, kind in (
        ("Use Redis streams for the job queue: no Kafka to run", "decision"),
        ("The CI cache key includes the lockfile hash", "lesson"),
    ):
        saved = subprocess.run(
            [*MEMLANE_CMD, "save", text, "--type", kind],
            env=shell_env,
            cwd=project,
            capture_output=True,
            text=True,
        )
        assert saved.returncode == 0, saved.stderr

    [index_embed, index_stats] = command_lines(COMMANDS / "index.md", "")
    embedded = run_line(index_embed, shell_env, project)
    assert embedded.returncode == 0, embedded.stderr
    assert "embedded 2 memories with toy-64" in embedded.stdout + embedded.stderr
    stats = run_line(index_stats, shell_env, project)
    assert stats.returncode == 0 and "embedded   2" in stats.stdout

    # A question with quotes and a leading dash reaches memlane as one query.
    [recall] = command_lines(COMMANDS / "recall.md", "-what's the job queue?")
    found = run_line(recall, shell_env, project)
    assert found.returncode == 0, found.stderr
    assert "Redis streams" in found.stdout
    assert "lockfile" not in found.stdout.split("Redis streams")[0]  # the best match first

    out = project / "index.json"
    exported = run_line(f'memlane index export -o "{out}"', shell_env, project)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(out.read_text())["metadata"]["entry_count"] == 2


def test_recall_with_an_empty_memory_says_so(shell_env: dict[str, str], project: Path) -> None:
    [recall] = command_lines(COMMANDS / "recall.md", "anything at all")
    found = run_line(recall, shell_env, project)
    assert found.returncode == 0, found.stderr
    assert "no memories match" in found.stderr and "Traceback" not in found.stderr
