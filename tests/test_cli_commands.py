"""The command table: every command is found, and a command loads only its own module."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys

import click
from click.testing import CliRunner

from memlane.cli import COMMAND_MODULES, COMMANDS, cli


def test_every_registered_command_is_in_the_table() -> None:
    registered: dict[str, set[str]] = {}
    for name in COMMAND_MODULES:
        group = click.Group()
        importlib.import_module(name).register(group)
        for command in group.commands:
            registered.setdefault(command, set()).add(name)
    assert set(registered) == set(COMMANDS)
    for command, modules in registered.items():
        assert modules <= set(COMMANDS[command]), command


def test_groups_have_every_subcommand_when_loaded_alone() -> None:
    """A group that several modules extend (import) is complete in a fresh process."""
    for name in COMMAND_MODULES:
        importlib.import_module(name)
    code = (
        "import json, sys, click\n"
        "from memlane.cli import cli\n"
        "command = cli.get_command(click.Context(cli), sys.argv[1])\n"
        "print(json.dumps(sorted(command.commands)))\n"
    )
    for name in ("import", "config", "index", "sync"):
        group = cli.get_command(click.Context(cli), name)
        assert isinstance(group, click.Group)
        done = subprocess.run(
            [sys.executable, "-c", code, name],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert json.loads(done.stdout) == sorted(group.commands), name


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    for name in COMMANDS:
        assert f"  {name} " in result.output


def test_a_command_imports_only_its_module() -> None:
    code = (
        "import sys\n"
        "from memlane.cli import main\n"
        "try:\n"
        "    main(['status', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('memlane')), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    modules = set(ast.literal_eval(done.stderr.strip().splitlines()[-1]))
    assert "memlane.cli.worker_cmds" in modules
    assert not {"memlane.cli.memory_cmds", "memlane.cli.interop_cmds", "memlane.service"} & modules
