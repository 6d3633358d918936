"""``memlane config show | path | set KEY VALUE``."""

from __future__ import annotations

from typing import Any

import click

from memlane.cli.context import CliState, echo_json
from memlane.config import RETIRED, SPECS, coerce, env_var, read_config_file, refusal
from memlane.errors import InvalidInput
from memlane.paths import write_private_text
from memlane.privacy import excerpt

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    cli.add_command(config)


@click.group()
@pass_state
def config(state: CliState) -> None:
    """Show or change settings (config.toml)."""
    state.lenient = True  # a bad value is what `config set` is there to fix


@config.command("show")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def show(state: CliState, as_json: bool) -> None:
    """Every setting with its value and meaning."""
    settings = state.settings
    values = settings.as_dict()
    if as_json:
        echo_json({k: list(v) if isinstance(v, tuple) else v for k, v in values.items()})
        return
    for key, spec in SPECS.items():
        value = values[key]
        marker = (
            ""
            if value == (tuple(spec.default) if isinstance(spec.default, list) else spec.default)
            else " *"
        )
        click.echo(f"{key} = {value!r}{marker}    # {spec.doc} (env {env_var(key)})")
    click.echo(f"# database: {settings.database_display}")


@config.command("path")
@pass_state
def path(state: CliState) -> None:
    """Where config.toml lives."""
    click.echo(str(state.config_file))


# A VALUE may start with "-" (``recall_limit -5``): click would take it for an option.
@config.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@pass_state
def set_(state: CliState, key: str, value: str) -> None:
    """Set KEY to VALUE in config.toml (validated)."""
    import tomli_w

    if key in RETIRED:
        raise InvalidInput(f"{key} is no longer used: {RETIRED[key]}")
    if key not in SPECS:
        raise InvalidInput(f"unknown setting {excerpt(key)} (see `memlane config show`)")
    parsed, warning = coerce(key, value)
    if warning:  # a bad value, or one outside the range: refused, nothing written
        raise InvalidInput(refusal(warning, "nothing was changed"))
    file = state.config_file
    current, problems = read_config_file(file)
    if problems:
        raise InvalidInput(problems[0] + " — fix or remove the file first")
    current[key] = list(parsed) if isinstance(parsed, tuple) else parsed
    nested: dict[str, Any] = {}
    for name, item in sorted(current.items()):
        section, _, leaf = name.rpartition(".")
        target = nested.setdefault(section, {}) if section else nested
        target[leaf] = item
    write_private_text(file, tomli_w.dumps(nested))
    click.echo(f"{key} = {parsed!r}  ({file})")
