"""The OpenAPI 3.1 document of the HTTP API, built from the route table.

The routes and this document come from the same :class:`Operation` list, so
they cannot drift apart. Schemas are the pydantic models themselves
(``model_json_schema``), collected under ``components/schemas``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import Response

from memlane import __version__
from memlane.schemas import ErrorOut

REF = "#/components/schemas/{model}"
_PATH_PARAM = re.compile(r"{(\w+)(?::(\w+))?}")

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Operation:
    """One API route: how it is called, what it takes and what it returns."""

    method: str
    path: str  # Starlette syntax: /api/observations/{id:int}
    endpoint: Handler
    summary: str
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    statuses: tuple[int, ...] = (200,)
    media_type: str = "application/json"
    tag: str = "memory"
    public: bool = False  # served without the token (details may still need it)
    errors: tuple[int, ...] = ()  # error statuses beyond the common ones

    @property
    def openapi_path(self) -> str:
        return _PATH_PARAM.sub(r"{\1}", self.path)

    @property
    def operation_id(self) -> str:
        return self.endpoint.__name__.strip("_")


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=REF)
    required = set(schema.get("required", ()))
    params: list[dict[str, Any]] = []
    for name, prop in schema.get("properties", {}).items():
        prop = dict(prop)
        prop.pop("title", None)
        description = prop.pop("description", None)
        options = prop.get("anyOf")
        if options:
            # A query string cannot carry JSON null: an absent parameter means None.
            concrete = [o for o in options if o.get("type") != "null"]
            if len(concrete) == 1:
                prop.pop("anyOf")
                prop.update(concrete[0])
        if prop.get("default") is None:
            prop.pop("default", None)
        param: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": prop,
        }
        if description:
            param["description"] = description
        params.append(param)
    return params


def _path_parameters(path: str) -> list[dict[str, Any]]:
    params = []
    for name, convertor in _PATH_PARAM.findall(path):
        schema: dict[str, Any] = (
            {"type": "integer", "minimum": 0}
            if convertor == "int"
            else {"type": "string", "pattern": r"\S"}
        )
        params.append({"name": name, "in": "path", "required": True, "schema": schema})
    return params


def _json(ref_model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": REF.format(model=ref_model.__name__)}}}


def build_openapi(operations: Sequence[Operation]) -> dict[str, Any]:
    """The OpenAPI 3.1 document describing ``operations``."""
    models: list[tuple[type[BaseModel], Any]] = [(ErrorOut, "serialization")]
    for op in operations:
        if op.body is not None:
            models.append((op.body, "validation"))
        if op.response is not None:
            models.append((op.response, "serialization"))
    unique = list(dict.fromkeys(models))
    _keys, defs = models_json_schema(unique, ref_template=REF)
    error = {"description": "error", "content": _json(ErrorOut)}
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        responses: dict[str, Any] = {}
        for status in op.statuses:
            entry: dict[str, Any] = {"description": "success"}
            if op.response is not None:
                entry["content"] = _json(op.response)
            elif op.media_type != "application/json":
                entry["content"] = {op.media_type: {"schema": {"type": "string"}}}
            responses[str(status)] = entry
        for code in ("403", "429") if op.public else ("401", "403", "429"):
            responses[code] = error
        if op.query is not None or op.body is not None or "{" in op.path:
            responses["422"] = error
        if not op.public:
            responses["404"] = error  # a memory, session or id named in the input
        if op.body is not None:
            responses["413"] = error
        for extra in op.errors:
            responses[str(extra)] = error
        operation: dict[str, Any] = {
            "operationId": op.operation_id,
            "summary": op.summary,
            "tags": [op.tag],
            "parameters": _path_parameters(op.path)
            + (_query_parameters(op.query) if op.query else []),
            "responses": responses,
        }
        if op.public:
            operation["security"] = []
        if op.body is not None:
            operation["requestBody"] = {
                "required": True,
                "description": "JSON, at most 1 MiB (larger bodies get 413)",
                "content": _json(op.body),
            }
        paths.setdefault(op.openapi_path, {})[op.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memlane worker API",
            "version": __version__,
            "description": "Local memory for AI coding agents. Every /api route needs"
            " 'Authorization: Bearer <token>' (see `memlane status`) or a dashboard tab's"
            " sign-in: its cookie and, with it, its session key in X-Memlane-Session.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "memlane_session",
                    "description": "the dashboard's sign-in (`memlane dashboard`; each sign-in"
                    " names its cookie memlane_session_<its id>): counts only with the tab's"
                    " session key in the X-Memlane-Session header",
                },
            },
        },
        "security": [{"bearer": []}, {"cookie": []}],
    }
