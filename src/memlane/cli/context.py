"""Shared state and helpers of CLI commands."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memlane.config import Settings, load_settings
from memlane.errors import InvalidInput
from memlane.paths import MissingFolder, ensure_private_dir, output_folder
from memlane.text import counted

if TYPE_CHECKING:
    from memlane.models import LineError
    from memlane.service import Memory


@dataclass
class CliState:
    db: str | None = None
    create: bool = False  # --create: make a missing directory of --db / MEMLANE_DB
    project: str | None = None
    all_projects: bool = False
    config: str | None = None
    # A bad setting (config.toml, MEMLANE_*) refuses the command, but for the commands that
    # run unattended (the worker, the MCP server) and `config`, which must stay usable to
    # fix it: they use the key's default and warn. An unreadable config file or a bad
    # secret pattern refuses them too (memlane.config.GUARDS).
    lenient: bool = False
    _memory: Memory | None = field(default=None, repr=False)
    _settings: Settings | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            settings, warnings = load_settings(
                db_target=self.db, config_path=self.config, strict=not self.lenient
            )
            for warning in warnings:
                click.echo(f"warning: {warning}", err=True)
            if settings.db_target is not None:
                from memlane.store import check_target

                try:  # an empty or blank one too (`config show` printed "# database: ")
                    check_target(settings.db_target)  # never a folder named after a password
                except InvalidInput as exc:
                    named = "--db" if self.db is not None else "MEMLANE_DB"
                    raise InvalidInput(f"{named}: {exc} (or leave it out)") from None
            if self.create and settings.db_target and "://" not in settings.db_target:
                ensure_private_dir(Path(settings.db_target).expanduser().absolute().parent)
            self._settings = settings
        return self._settings

    @property
    def config_file(self) -> Path:
        """The config file this command reads, found without reading it (`config set`
        must reach a file whose content refuses every other command)."""
        from memlane.config import config_paths

        return config_paths(dict(os.environ), self.config).config_path

    def memory(self) -> Memory:
        if self._memory is None:
            from memlane.service import open as open_memory  # not for commands that never open it
            from memlane.store.sqlite_file import MissingDirectory

            try:
                self._memory = open_memory(settings=self.settings)
            except MissingDirectory as exc:
                hint = "or add --create (memlane --db PATH --create …)"
                raise InvalidInput(f"{exc}, {hint}") from None
            click.get_current_context().call_on_close(self._memory.close)
        return self._memory

    def project_for(self, project: str | None) -> str | None:
        """A command's ``--project``, else the global one. An empty one is passed on, for
        the facade to refuse (:func:`memlane.core.given_project`): `or` read it as absent."""
        return project if project is not None else self.project

    def all_for(self, all_projects: bool) -> bool:
        return all_projects or self.all_projects


def config_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Name the ``--config`` file for the processes this command starts too. It is checked
    where it is read (:func:`memlane.config.load_settings`): `config set` creates it."""
    if value is None:
        return None
    path = Path(value).expanduser().absolute()
    # A worker or hook this command spawns must read the same file.
    os.environ["MEMLANE_CONFIG"] = str(path)
    return str(path)


def existing_folder(path: Path, what: str) -> Path:
    """``path`` (a file a command writes) when its folder exists; else InvalidInput. A typo
    must not put the file in a new folder nobody looks in (:func:`memlane.paths.output_folder`,
    the rule `backup` follows too; it and `sync push` offer --create)."""
    try:
        output_folder(path, what)
    except MissingFolder as exc:
        raise InvalidInput(f"{exc}; create it first") from None
    return path


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def wire_json(model: Any) -> Any:
    """A pydantic wire model (or list of them) as plain JSON-able data."""
    if isinstance(model, list):
        return [item.model_dump(mode="json") for item in model]
    return model.model_dump(mode="json")


# Bad lines shown by an import; the rest are counted, and its --json output lists those
# the import kept (memlane.interop.report.KEPT_ERRORS).
SHOWN_ERRORS = 50


def echo_line_errors(errors: Sequence[LineError], omitted: int = 0) -> None:
    """The first SHOWN_ERRORS bad lines on stderr, and how many more there are.

    ``omitted``: bad lines the import only counted (not in ``errors``).
    """
    for error in errors[:SHOWN_ERRORS]:
        where = f"line {error.line}: " if error.line else ""  # 0: a whole file or chunk
        click.echo(f"  {where}{error.message}", err=True)
    more = len(errors) + omitted - SHOWN_ERRORS
    if more > 0:
        listed = "the first " + str(len(errors)) if omitted else "every one"
        click.echo(f"  … and {more} more (--json lists {listed})", err=True)


def confirm(question: str, *, default: bool = False) -> bool:
    """Ask ``question`` (y/n); the end of input (``</dev/null``, a closed pipe) is a no.

    A command declined that way says what it did not do ("nothing restored"), as for
    an answered no, not a bare "aborted"; Ctrl-C still stops it (exit 130).
    """
    try:
        return click.confirm(question, default=default)
    except click.exceptions.Abort as exc:
        if not isinstance(exc.__context__, EOFError):
            raise
        click.echo()  # end the line of the question
        return False


def exit_if_bad_records(bad: int, kept: int, *, noun: str, dry_run: bool = False) -> None:
    """Exit 2 after an import that refused ``bad`` records, saying the ``kept`` were not.

    A partial import is not a success (a script must notice the left-out records), but
    the good records are in: the last line says so, so exit code 2 does not read as
    "nothing happened". ``noun``: what a record is called ("line", "record").
    """
    if not bad:
        return
    one = kept == 1 or not kept
    verb = "would be" if dry_run else "was" if one else "were"
    if kept:
        outcome = f"the {counted(kept, 'good ' + noun)} {verb} imported (or already present)"
    else:
        outcome = f"nothing {verb} imported"
    click.echo(f"error: {counted(bad, 'bad ' + noun)} left out; {outcome}", err=True)
    raise SystemExit(2)
