"""memlane: local long-term memory for AI coding agents.

``memlane.open(target=None) -> Memory`` is the entry point of the Python API.
Attributes load lazily so that ``import memlane`` stays cheap on the hook path.
"""

TYPE_CHECKING = False  # not imported from typing: keeps `import memlane` cheap

__version__ = "0.1.0"

__all__ = [
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

if TYPE_CHECKING:
    from typing import Any

    from memlane.models import (
        Checkpoint,
        ImportReport,
        SaveResult,
        SearchHit,
        Session,
        Stats,
        Summary,
    )
    from memlane.models import Memory as MemoryRecord
    from memlane.service import Memory, open

_LAZY = {
    "Memory": ("memlane.service", "Memory"),
    "open": ("memlane.service", "open"),
    "MemoryRecord": ("memlane.models", "Memory"),
    "Checkpoint": ("memlane.models", "Checkpoint"),
    "ImportReport": ("memlane.models", "ImportReport"),
    "SaveResult": ("memlane.models", "SaveResult"),
    "SearchHit": ("memlane.models", "SearchHit"),
    "Session": ("memlane.models", "Session"),
    "Stats": ("memlane.models", "Stats"),
    "Summary": ("memlane.models", "Summary"),
}


def __getattr__(name: str) -> "Any":
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        value = getattr(importlib.import_module(module_name), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memlane' has no attribute {name!r}")
