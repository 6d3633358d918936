"""Reading an index file: its shape checked, its vectors planned.

Shared by ``memlane import index`` (:mod:`memlane.interop.index`) and the
JSONL store import, which takes the vectors of an index kept next to the
store's files (:mod:`memlane.interop.jsonl_store`). The format is described in
:mod:`memlane.interop.index`; what happens to the vectors in
:mod:`memlane.interop.index_vectors`.

An index is read a value at a time (:class:`memlane.interop.json_stream.JsonCursor`),
never whole: ``json.load`` of a 208 MB index took 1.87 GB, as Python objects take many
times the bytes of the numbers they are read from. A first reading checks the whole
document and keeps its metadata; a second, which stops early, takes the sample of
vectors the plan needs; the entries are then read once more, one at a time
(:meth:`IndexFile.entries`).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, TypeGuard

import numpy as np

from memlane.errors import InvalidInput
from memlane.interop import decode
from memlane.interop.index_vectors import BACKFILL_HINT, SAMPLE, VectorPlan, plan_vectors
from memlane.interop.json_stream import JsonCursor
from memlane.paths import open_regular_file
from memlane.privacy import excerpt
from memlane.search.model_names import dimensions

INDEX_FORMAT = "memlane-index"
INDEX_VERSION = 1
_MEMBERS = ("metadata", "vectors")


@dataclass(frozen=True, slots=True)
class IndexFile:
    """An index checked on disk: its metadata, how many entries it holds, and what to do
    with its vectors; :meth:`entries` reads the entries."""

    path: Path
    metadata: dict[str, Any]
    count: int  # entries
    dim: int | None  # declared, else the first vector's size
    plan: VectorPlan
    follow_links: bool = True

    def entries(self) -> Generator[Any, None, None]:
        """The entries, read again one at a time (raises InvalidInput if the file no
        longer reads as it did)."""
        try:
            with _open(self.path, self.follow_links) as handle:
                yield from _vector_items(JsonCursor(handle))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{self.path} changed while it was imported ({exc})") from None


def _open(path: Path, follow_links: bool) -> IO[str]:
    """``path`` open as UTF-8 text; with ``follow_links`` false a link there is refused
    (UnsafePath: :func:`memlane.paths.open_regular_file`)."""
    if follow_links:
        return path.open("r", encoding="utf-8")
    handle = open_regular_file(path)
    if handle is None:
        raise FileNotFoundError(f"no such file: {path}")
    return io.TextIOWrapper(handle, encoding="utf-8")


def _vector_items(cursor: JsonCursor) -> Iterator[Any]:
    """The items of the document's ``vectors`` list, one at a time."""
    for key in cursor.members():
        if key == "vectors":
            yield from cursor.items()
            return
        cursor.skip()
    raise json.JSONDecodeError("no list 'vectors' any more", "", 0)


def _numbers(value: Any) -> TypeGuard[list[float]]:
    return isinstance(value, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    )


def embedding(value: Any, dim: int | None) -> bytes | None:
    """An entry's ``embedding`` as float32 bytes (None when it has none); checks the size."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise InvalidInput("'embedding' must be a list of numbers")
    if not _numbers(value):
        raise InvalidInput("'embedding' must hold numbers only")
    if dim is not None and len(value) != dim:
        raise InvalidInput(f"'embedding' has {len(value)} dimensions, the index says {dim}")
    # JSON as Python reads it spells NaN and Infinity; 1e39 or 10**400 are past float32.
    # One such number would make every similarity with the vector NaN or infinite.
    try:
        with np.errstate(over="ignore"):
            vector = np.asarray(value, dtype=np.float32)
        finite = bool(np.isfinite(vector).all())
    except OverflowError:  # an int past a float
        finite = False
    if not finite:
        raise InvalidInput("'embedding' must hold finite numbers that fit a 32-bit float")
    return vector.tobytes()


def vector_problem(model: str, blob: bytes) -> str | None:
    """Why float32 ``blob`` cannot be a stored vector of ``model``, or None: a model
    memlane knows has its own size (one vector of another made the vector table, and
    every hybrid search, fail), and no number may be NaN or infinite."""
    expected = dimensions(model)
    if expected is not None and len(blob) != 4 * expected:
        return f"has {len(blob) // 4} dimensions, not {expected}"
    if not np.isfinite(np.frombuffer(blob, dtype="<f4")).all():
        return "holds NaN or infinite numbers"
    return None


def read_index(
    path: str | Path, *, embedder: str, with_vectors: bool = True, follow_links: bool = True
) -> IndexFile:
    """Read and check the index at ``path`` and plan its vectors (raises InvalidInput).

    ``embedder`` is the configured one (``Settings.embedder``); ``with_vectors``
    false leaves every vector out; ``follow_links`` false refuses a link at ``path``
    (UnsafePath), for an index found in a folder rather than named by the user.
    """
    file = decode.input_file(path)
    try:
        with _open(file, follow_links) as handle:
            meta, count, first_dim = _scan(file, JsonCursor(handle))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); nothing imported") from None
    if not isinstance(meta, dict):
        raise InvalidInput("the index 'metadata' must be an object")
    fmt = meta.get("format", INDEX_FORMAT)
    if fmt != INDEX_FORMAT or meta.get("version", INDEX_VERSION) != INDEX_VERSION:
        raise InvalidInput(
            f"unsupported index format {excerpt(fmt)} version {excerpt(meta.get('version'))}"
        )
    declared = meta.get("dimensions", meta.get("dimension"))
    dim = declared if isinstance(declared, int) and declared > 0 else first_dim
    index = IndexFile(file, meta, count, dim, VectorPlan(None), follow_links)  # plan below
    if first_dim is None:
        plan = VectorPlan(None)  # no vectors: nothing to keep or to say
    elif not with_vectors:
        plan = VectorPlan(None, f"vectors left out, as asked; {BACKFILL_HINT}")
    else:
        named = meta.get("embedding_model", meta.get("model"))
        plan = plan_vectors(
            embedder,
            named=named if isinstance(named, str) and named else None,
            dim=dim,
            sample=_sample(index),
        )
    return replace(index, plan=plan)


def _scan(path: Path, cursor: JsonCursor) -> tuple[Any, int, int | None]:
    """Check the whole document, a value at a time: its ``metadata`` (``{}`` when it has
    none), how many entries its ``vectors`` list holds, and the first vector's size
    (None when no entry has one)."""
    if cursor.peek() != "{":
        raise InvalidInput(f"{path} is not an index: expected {{'metadata': …, 'vectors': [...]}}")
    meta: Any = None
    count, first_dim, is_list = 0, None, False
    seen: set[str] = set()
    for key in cursor.members():
        if key in _MEMBERS and key in seen:
            raise InvalidInput(f"{path}: {excerpt(key)} is given twice; nothing imported")
        seen.add(key)
        if key == "metadata":
            meta = cursor.value()
        elif key == "vectors" and cursor.peek() == "[":
            is_list = True
            for entry in cursor.items():
                count += 1
                if first_dim is None and isinstance(entry, dict):
                    vector = entry.get("embedding")
                    first_dim = len(vector) if _numbers(vector) else None
        else:
            cursor.skip()
    cursor.end()
    if not is_list:
        raise InvalidInput(f"{path} is not an index: expected {{'metadata': …, 'vectors': [...]}}")
    return meta or {}, count, first_dim


def _sample(index: IndexFile) -> list[tuple[str, list[float]]]:
    """The first :data:`SAMPLE` entries with text and a vector of the index's size: the
    entries after them are not read."""
    sample: list[tuple[str, list[float]]] = []
    with contextlib.closing(index.entries()) as entries:
        for entry in entries:
            text = entry.get("text") if isinstance(entry, dict) else None
            vector = entry.get("embedding") if isinstance(entry, dict) else None
            if not isinstance(text, str) or not text.strip() or not _numbers(vector):
                continue
            if len(vector) == index.dim:
                sample.append((text, vector))
                if len(sample) == SAMPLE:
                    break
    return sample
