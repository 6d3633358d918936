"""The layers of memlane, walked with ast: imports point inward, and nothing goes round.

Every module under ``src/memlane`` belongs to one layer; a module imports only
from its own layer or the ones below it (every import counts: module level,
inside functions, under ``TYPE_CHECKING``)::

    adapters   cli, hooks, worker, mcp_server, mcp_stdio, integrations, schemas, __main__
    facade     service (and the package face, memlane/__init__)
    features   capture, search, maintenance, interop, activity
    records    memories (the one write path), sessions, injections (the injection log)
    core       core (store, settings, scrub, resolve_project, clock)
    store      store
    base       models, errors, config, paths, privacy, project, text, ...

So nothing below the facade imports ``memlane.service`` or an adapter, and the
core knows no interface library (STYLE #2).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "memlane"

LAYERS: dict[str, tuple[str, ...]] = {
    "adapters": (
        "cli",
        "hooks",
        "worker",
        "mcp_server",
        "mcp_stdio",
        "integrations",
        "schemas",
        "__main__",
    ),
    "facade": ("__init__", "service"),
    "features": ("capture", "search", "maintenance", "interop", "activity"),
    "records": ("memories", "sessions", "injections"),
    "core": ("core",),
    "store": ("store",),
    "base": (
        "models",
        "errors",
        "config",
        "paths",
        "privacy",
        "secret_forms",
        "secret_gates",
        "secret_rules",
        "secret_values",
        "secret_words",
        "project",
        "text",
        "filestate",
        "timeparse",
        "runtime",
        "feedback",
        "background",
        "demo",
        "outcomes",
        "jsonlines",
        "utf8",
        "digest",
        "logfile",
        "arguments",
    ),
}
RANK = {part: rank for rank, parts in enumerate(LAYERS.values()) for part in parts}
ADAPTERS = frozenset(LAYERS["adapters"])
ABOVE_THE_CORE = ADAPTERS | {"service"}

# Imports that run against the layers on purpose, each with its reason (none today).
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

INTERFACE_LIBRARIES = ("click", "rich", "starlette", "fastapi", "uvicorn", "mcp", "pydantic")
# Modules the hook path imports must not pull heavy libraries at import time.
LEAN = [
    "__init__.py",
    "models.py",
    "config.py",
    "paths.py",
    "logfile.py",
    "project.py",
    "text.py",
    "jsonlines.py",
    "utf8.py",
    "digest.py",
    "privacy.py",
    "secret_forms.py",
    "secret_gates.py",
    "secret_rules.py",
    "secret_values.py",
    "secret_words.py",
    "runtime.py",
    "feedback.py",
    "core.py",
    "arguments.py",
    "memories.py",
    "sessions.py",
    "injections.py",
    "service.py",
    "store/__init__.py",
    "store/base.py",
    "store/sqlite.py",
    "store/common.py",
    "store/dialect.py",
    "store/injection_log.py",
    "search/feedback.py",
    "search/fts.py",
    "search/engine.py",
    "search/queries.py",
    "search/context.py",
    "search/scoring.py",
    "capture/classify.py",
    "capture/dialects.py",
    "capture/pipeline.py",
    "capture/replies.py",
    "capture/task_output.py",
    "maintenance",
    "hooks",
]
HEAVY = ("numpy", "pydantic", "click", "rich", "mcp", "starlette", "uvicorn", "regex")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def part_of(module: str) -> str:
    """The top-level part of a memlane module: ``capture`` for memlane.capture.pipeline."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported_modules(path: Path) -> set[str]:
    """Every memlane module ``path`` imports, wherever the import stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in MODULES else node.module)
    return {name for name in found if name == "memlane" or name.startswith("memlane.")}


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


def upward_imports(modules: dict[str, Path]) -> list[str]:
    """``a -> b`` for every import of a module from a layer above its own."""
    found = []
    for name, path in modules.items():
        for target in sorted(imported_modules(path)):
            if RANK[part_of(target)] < RANK[part_of(name)]:
                found.append(f"{name} -> {target}")
    return found


def circles(modules: dict[str, Path]) -> list[list[str]]:
    """Groups of modules that import each other in a loop (Tarjan's strongly connected parts)."""
    graph = {name: sorted(imported_modules(p) & modules.keys()) for name, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph[node]:
                found.append(sorted(group))

    for name in graph:
        if name not in index:
            visit(name)
    return found


def test_every_module_has_a_layer() -> None:
    assert sorted({part_of(m) for m in MODULES} - RANK.keys()) == []
    assert "memlane.memories" in MODULES and "memlane.core" in MODULES  # the walk works


def test_imports_point_inward() -> None:
    allowed = {f"{a} -> {b}" for a, b in ALLOWED_UPWARD}
    assert [edge for edge in upward_imports(MODULES) if edge not in allowed] == []


def test_the_allowed_exceptions_still_exist() -> None:
    edges = set(upward_imports(MODULES))
    assert [f"{a} -> {b}" for a, b in ALLOWED_UPWARD if f"{a} -> {b}" not in edges] == []


def test_nothing_below_the_facade_imports_it_or_an_adapter() -> None:
    offenders = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if part_of(name) not in ABOVE_THE_CORE | {"__init__"}
        for target in sorted(imported_modules(path))
        if part_of(target) in ABOVE_THE_CORE
    ]
    assert offenders == []


def test_no_import_circle() -> None:
    assert circles(MODULES) == []


def test_core_imports_no_interface_library() -> None:
    offenders = [
        f"{name} imports {imported}"
        for name, path in MODULES.items()
        if part_of(name) not in ADAPTERS
        for imported in all_imports(path)
        if imported.split(".")[0] in INTERFACE_LIBRARIES
    ]
    assert offenders == []


def test_adapters_do_not_reach_through_the_facade() -> None:
    """``memory.store`` / ``memory.core`` in an interface means a facade method is missing."""
    offenders = []
    for name, path in MODULES.items():
        if part_of(name) not in ADAPTERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or node.attr not in ("store", "core"):
                continue
            holder = node.value
            held = holder.id if isinstance(holder, ast.Name) else getattr(holder, "attr", "")
            if held in ("memory", "mem", "_memory"):
                offenders.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert offenders == []


CLI_FLAG = re.compile(r"(?<![\w-])--[a-z]")
# A whole command (`memlane embed --backfill`) is a next step anyone can run.
COMMAND = re.compile(r"memlane [a-z][^`)\n]*")


def raised_texts(path: Path) -> list[tuple[int, str]]:
    """(line, literal text) of every string in the arguments of a ``raise``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args:
                for sub in ast.walk(arg):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        found.append((node.lineno, sub.value))
    return found


def test_core_errors_name_no_cli_flag() -> None:
    """MCP and HTTP users read core errors too: "give --project NAME" means nothing there."""
    offenders = [
        f"{name}:{line} {text!r}"
        for name, path in MODULES.items()
        if part_of(name) not in ADAPTERS
        for line, text in raised_texts(path)
        if CLI_FLAG.search(COMMAND.sub("", text))
    ]
    assert offenders == []


def notice_texts(path: Path) -> list[tuple[int, str]]:
    """(line, literal text) of every string a notice is made of: the value of a name with
    "notice" in it (``NOTICE_NO_VECTORS = …``, ``notice = …``) or of a ``notice=`` argument."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        value: ast.expr | None = None
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = [getattr(t, "id", getattr(t, "attr", "")) for t in targets]
            value = node.value if any("notice" in n.lower() for n in named) else None
        elif isinstance(node, ast.keyword) and node.arg == "notice":
            value = node.value
        for sub in ast.walk(value) if value is not None else ():
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.append((node.lineno, sub.value))
    return found


def test_core_notices_name_no_cli_command() -> None:
    """A save's or a search's notice reaches HTTP and MCP users too: the core says what
    happened, the CLI adds the command to run (``cli.memory_cmds.echo_notice``)."""
    offenders = [
        f"{name}:{line} {text!r}"
        for name, path in MODULES.items()
        if part_of(name) not in ADAPTERS
        for line, text in notice_texts(path)
        if COMMAND.search(text)
    ]
    assert offenders == []


def test_hook_path_modules_are_lean_at_import() -> None:
    offenders = []
    for entry in LEAN:
        for path in module_files(entry):
            for name in top_level_imports(path):
                if name.split(".")[0] in HEAVY:
                    offenders.append(f"{path.relative_to(SRC)} imports {name} at module level")
    assert offenders == []


def test_listed_modules_exist() -> None:
    assert [entry for entry in LEAN if not module_files(entry)] == []


# -- the checks themselves ------------------------------------------------------------


def test_checker_sees_a_heavy_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom click import echo\n", encoding="utf-8")
    assert top_level_imports(bad) == ["numpy", "click"]


def test_checker_sees_a_flag_in_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        'raise ValueError(f"give --project {name}")\n'
        'raise ValueError("run `memlane embed --backfill`")\n',
        encoding="utf-8",
    )
    texts = [t for _, t in raised_texts(bad) if CLI_FLAG.search(COMMAND.sub("", t))]
    assert texts == ["give --project "]


def test_checker_sees_a_command_in_a_notice(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        'NOTICE_X = "no vectors (run `memlane embed`)"\n'
        'notice = f"#{n} kept (`memlane edit {n}`)"\n'
        'r = Result(notice="fine", other="`memlane log`")\n',
        encoding="utf-8",
    )
    texts = [t for _, t in notice_texts(bad) if COMMAND.search(t)]
    assert texts == ["no vectors (run `memlane embed`)", " kept (`memlane edit "]


def test_checker_sees_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "memlane"
    package.mkdir()
    (package / "memories.py").write_text(
        "def f():\n    from memlane.service import Memory\n", encoding="utf-8"
    )
    (package / "service.py").write_text("from memlane import memories\n", encoding="utf-8")
    fake = {"memlane.memories": package / "memories.py", "memlane.service": package / "service.py"}
    assert upward_imports(fake) == ["memlane.memories -> memlane.service"]
    assert circles(fake) == [["memlane.memories", "memlane.service"]]
