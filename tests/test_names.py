"""Search mode and scope names are defined once (models.py) and every interface offers them."""

from __future__ import annotations

import ast
import subprocess
import typing
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import memlane.models as models
from memlane.config import SPECS
from memlane.mcp_server import build_server
from memlane.service import Memory
from memlane.worker.web.params import SearchQuery
from tests.conftest import MEMLANE_CMD, run_env


def _static_literal(name: str) -> tuple[str, ...]:
    """The values of ``name = Literal[...]`` in models.py (what mypy sees)."""
    tree = ast.parse(Path(models.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name
            and isinstance(node.value, ast.Subscript)
        ):
            values = node.value.slice
            assert isinstance(values, ast.Tuple)
            return tuple(ast.literal_eval(element) for element in values.elts)
    raise AssertionError(f"no {name} = Literal[...] in models.py")


def test_type_aliases_and_run_time_names_agree() -> None:
    assert _static_literal("SearchMode") == models.SEARCH_MODES
    assert _static_literal("SearchScope") == models.SCOPES
    assert typing.get_args(models.SearchMode) == models.SEARCH_MODES
    assert typing.get_args(models.SearchScope) == models.SCOPES
    assert SPECS["search_mode"].choices == models.SEARCH_MODES
    assert SPECS["scope"].choices == models.SCOPES


def test_http_cli_and_mcp_offer_exactly_these_names(memory: Memory, home: Path) -> None:
    scope = SearchQuery.model_json_schema()["properties"]["scope"]["anyOf"][0]
    assert tuple(scope["enum"]) == models.SCOPES

    usage = subprocess.run(
        [*MEMLANE_CMD, "search", "--help"],
        capture_output=True,
        text=True,
        env=run_env(home),
        check=True,
    ).stdout
    assert "[" + "|".join(models.SEARCH_MODES) + "]" in usage
    assert "[" + "|".join(models.SCOPES) + "]" in usage

    async def listing() -> dict[str, Any]:
        async with Client(build_server(lambda: memory)) as client:
            tools = (await client.list_tools()).tools
        return next(t.input_schema for t in tools if t.name == "search")

    properties = anyio.run(listing)["properties"]
    assert tuple(properties["mode"]["anyOf"][0]["enum"]) == models.SEARCH_MODES
    assert tuple(properties["scope"]["anyOf"][0]["enum"]) == models.SCOPES
