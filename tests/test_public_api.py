"""The public Python API and wire models are pinned."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import memlane
from memlane import models, schemas


def test_all_is_pinned() -> None:
    assert sorted(memlane.__all__) == sorted(
        [
            "Checkpoint",
            "ImportReport",
            "Memory",
            "MemoryRecord",
            "SaveResult",
            "SearchHit",
            "Session",
            "Stats",
            "Summary",
            "__version__",
            "open",
        ]
    )
    for name in memlane.__all__:
        assert getattr(memlane, name) is not None


def test_open_creates_database(tmp_path: Path) -> None:
    with memlane.open(str(tmp_path / "api.db")) as mem:
        result = mem.save("hello from the API", project="p")
        assert result.status == "created"
        assert mem.search("hello", project="p")[0].id == result.id
    assert (tmp_path / "api.db").exists()


def test_wire_models_never_carry_the_hash() -> None:
    for name in dir(schemas):
        obj = getattr(schemas, name)
        if isinstance(obj, type) and issubclass(obj, schemas.BaseModel):
            assert "normalized_hash" not in obj.model_fields, name


def test_summary_requires_auto_generated_flag() -> None:
    field = {f.name: f for f in dataclasses.fields(models.Summary)}["is_auto_generated"]
    assert field.default is dataclasses.MISSING


def test_import_memlane_is_lazy() -> None:
    import subprocess
    import sys

    code = "import sys, memlane; print('memlane.service' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    importlib.import_module("memlane.service")
