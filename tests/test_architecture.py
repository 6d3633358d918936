"""STYLE #2: imports point inward; the core knows no interface (walked with ast)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "memlane"
CORE = [
    "service.py",
    "saving.py",
    "sessions.py",
    "session_records.py",
    "session_titles.py",
    "timeline.py",
    "activity.py",
    "deletion.py",
    "models.py",
    "errors.py",
    "config.py",
    "privacy.py",
    "secret_gates.py",
    "secret_rules.py",
    "secret_values.py",
    "text.py",
    "capture",
    "search",
    "store",
    "maintenance",
    "project.py",
    "paths.py",
]
FORBIDDEN_IN_CORE = (
    "click",
    "rich",
    "starlette",
    "fastapi",
    "uvicorn",
    "mcp",
    "memlane.cli",
    "memlane.worker",
    "memlane.mcp_server",
    "memlane.hooks",
    "memlane.integrations",
    "memlane.schemas",
)
# Modules the hook path imports must not pull heavy libraries at import time.
LEAN = [
    "models.py",
    "config.py",
    "paths.py",
    "project.py",
    "text.py",
    "privacy.py",
    "secret_gates.py",
    "secret_rules.py",
    "secret_values.py",
    "runtime.py",
    "store/base.py",
    "store/sqlite.py",
    "service.py",
    "saving.py",
    "sessions.py",
    "session_records.py",
    "timeline.py",
    "activity.py",
    "deletion.py",
    "search/fts.py",
    "search/engine.py",
    "search/context.py",
    "search/scoring.py",
    "capture/classify.py",
    "maintenance",
    "hooks",
]
HEAVY = ("numpy", "pydantic", "click", "rich", "mcp", "starlette", "uvicorn")


def module_files(entry: str) -> list[Path]:
    path = SRC / entry
    if path.is_dir():
        return sorted(path.rglob("*.py"))
    return [path] if path.exists() else []


def top_level_imports(path: Path) -> list[str]:
    """Imports executed at module import time (not inside functions or TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if not isinstance(node, ast.FunctionDef | ast.ClassDef) else []:
            if isinstance(sub, ast.Import):
                names.extend(alias.name for alias in sub.names)
            elif isinstance(sub, ast.ImportFrom) and sub.module:
                names.append(sub.module)
    return names


def all_imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_listed_modules_exist() -> None:
    assert [entry for entry in CORE + LEAN if not module_files(entry)] == []


def test_core_imports_no_interface() -> None:
    offenders = []
    for entry in CORE:
        for path in module_files(entry):
            for name in all_imports(path):
                if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN_IN_CORE):
                    offenders.append(f"{path.relative_to(SRC)} imports {name}")
    assert offenders == []


def test_hook_path_modules_are_lean_at_import() -> None:
    offenders = []
    for entry in LEAN:
        for path in module_files(entry):
            for name in top_level_imports(path):
                if name.split(".")[0] in HEAVY:
                    offenders.append(f"{path.relative_to(SRC)} imports {name} at module level")
    assert offenders == []


def test_checker_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom click import echo\n", encoding="utf-8")
    assert top_level_imports(bad) == ["numpy", "click"]
