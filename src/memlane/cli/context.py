"""Shared state and helpers of CLI commands."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from memlane.config import Settings, load_settings, read_config_file
from memlane.errors import InvalidInput
from memlane.service import Memory
from memlane.service import open as open_memory


@dataclass
class CliState:
    db: str | None = None
    project: str | None = None
    all_projects: bool = False
    config: str | None = None
    _memory: Memory | None = field(default=None, repr=False)
    _settings: Settings | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            settings, warnings = load_settings(db_target=self.db, config_path=self.config)
            for warning in warnings:
                click.echo(f"warning: {warning}", err=True)
            self._settings = settings
        return self._settings

    def memory(self) -> Memory:
        if self._memory is None:
            self._memory = open_memory(settings=self.settings)
            click.get_current_context().call_on_close(self._memory.close)
        return self._memory

    def project_for(self, project: str | None) -> str | None:
        return project or self.project

    def all_for(self, all_projects: bool) -> bool:
        return all_projects or self.all_projects


def config_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check the ``--config`` file; name it for the processes this command starts too."""
    if value is None:
        return None
    path = Path(value).expanduser().absolute()
    if not path.is_file():
        raise InvalidInput(f"--config: no config file at {path} (check the path)")
    _values, problems = read_config_file(path)
    if problems:
        raise InvalidInput(f"--config: {problems[0]}; fix the file or leave --config out")
    # A worker or hook this command spawns must read the same file.
    os.environ["MEMLANE_CONFIG"] = str(path)
    return str(path)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def wire_json(model: Any) -> Any:
    """A pydantic wire model (or list of them) as plain JSON-able data."""
    if isinstance(model, list):
        return [item.model_dump(mode="json") for item in model]
    return model.model_dump(mode="json")
