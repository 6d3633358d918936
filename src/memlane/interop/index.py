"""Portable JSON index of one project: entries with their vectors.

The shape is the semantic-memory tool's index, which memlane reads and writes::

    {"metadata": {"project": "api", "last_updated": ISO-8601, "entry_count": 42,
                  "coverage": {"lessons.jsonl": 30, "memlane": 12},  # entries per source
                  # memlane adds:
                  "format": "memlane-index", "version": 1,
                  "embedding_model": "use-multilingual-v3" | null,
                  "dimensions": 512 | null, "exported_at": ISO-8601},
     "vectors": [{"id": "uid:…", "text": "…", "embedding": [float, …] | null,
                  "source": "lessons.jsonl", "relevance": 0.9,
                  "metadata": {"kind", "type", "title", "session", "created_at",
                               "updated_at", "tags", "files", "topic_key", "source", …}}]}

``source`` is where an entry came from, per file when memlane knows the file:
the JSONL store file of a line imported from one (``lessons.jsonl``), the
source another index gave its entry, else memlane's source name (``memlane``,
``claude-mem``); ``coverage`` counts entries per such source. memlane's own
source name travels in the entry's ``metadata.source``.

``id`` is the memory's identity (:mod:`memlane.interop.identity`), so
importing our own index twice adds nothing. ``relevance`` is a static
prior in [0, 1] — knowledge and summaries above observations and raw turns,
stale memories lower — for tools that have no ranking of their own; an entry
imported from another index keeps the relevance it came with.

Reading: entries from other tools (any ``id``) import as memories of source
``index`` (type from their metadata, else from their source file, else note;
dated by the first of :data:`memlane.interop.jsonl_store.TIME_FIELDS` in their
metadata). Such a memory is written back under the entry's own ``id``, its
metadata without memlane's bookkeeping (:data:`_BOOKKEEPING`: the entry's
``source`` and ``relevance``, given on the entry itself), so their index comes
back as they wrote it; memlane reads that entry losslessly again (its
``metadata.source_id`` is its ``id``: :func:`_entry_identity`).
Their vectors are kept only when they come from the model memlane searches
with (:mod:`memlane.interop.index_vectors`: named, or recognised on a
sample); otherwise the memories are embedded again later. Exported vectors
are those of the model holding the most vectors.
"""

from __future__ import annotations

import json
from base64 import b64encode
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from memlane import memories
from memlane.errors import InvalidInput
from memlane.interop.export import memory_record
from memlane.interop.identity import instance_id, source_identity, valid_identity
from memlane.interop.index_file import INDEX_FORMAT, INDEX_VERSION, IndexFile, embedding, read_index
from memlane.interop.jsonl import check_metadata, parse_time
from memlane.interop.jsonl_store import FILE_TYPES, TIME_FIELDS
from memlane.interop.report import InteropReport
from memlane.interop.roundtrip import BATCH, RecordApplier, parse_memory
from memlane.memories import Draft, iter_all
from memlane.models import INDEX_SOURCE, MemoryFilter, utcnow
from memlane.models import Memory as MemoryRecord

if TYPE_CHECKING:
    from memlane.core import Core

SOURCE = INDEX_SOURCE
KIND_RELEVANCE = {
    "knowledge": 1.0,
    "summary": 0.9,
    "checkpoint": 0.9,
    "note": 0.8,
    "observation": 0.6,
    "turn": 0.5,
    "prompt": 0.4,
}
# Record keys that travel in an entry's metadata (the rest are top-level fields).
_META_KEYS = (
    "kind",
    "type",
    "title",
    "session",
    "created_at",
    "updated_at",
    "tags",
    "files",
    "topic_key",
    "source",
    "source_id",
    "revision_count",
    "access_count",
    "last_accessed_at",
    "stale",
    "metadata",
    "project",
)
# Metadata keys naming the file a memory came from, first match wins.
_FILE_KEYS = ("store_file", "index_source")
# What an entry of another index keeps in its memory's metadata for writing it back (its
# source and relevance): on the entry, not in the metadata it is written back with.
_BOOKKEEPING = ("index_source", "relevance")


def relevance(memory: MemoryRecord) -> float:
    """Static prior of an entry: by kind, lower when stale, a little higher when used.

    An entry imported from another index keeps the relevance it came with.
    """
    given = memory.metadata.get("relevance")
    if isinstance(given, int | float) and not isinstance(given, bool) and 0 <= given <= 1:
        return float(given)
    score = KIND_RELEVANCE.get(memory.kind, 0.5)
    if memory.stale:
        score *= 0.5
    score += min(memory.access_count, 10) * 0.01
    return round(min(score, 1.0), 3)


def entry_source(memory: MemoryRecord) -> str:
    """Where an entry came from: its file when memlane knows it, else its source name."""
    for key in _FILE_KEYS:
        value = memory.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return memory.source


def _main_model(core: Core) -> str | None:
    counts = core.store.embedding_counts()
    return max(counts, key=lambda m: (counts[m], m)) if counts else None


def export_index(
    core: Core, out: TextIO, *, project: str | None = None, vectors: bool = True
) -> int:
    """Write ``project``'s index (default: the current one) to ``out``; returns the entry count."""
    project = core.resolve_project(project)
    flt = MemoryFilter(projects=(project,))
    ids = set(core.store.memory_ids(flt))
    model = _main_model(core) if vectors else None
    embeddings: dict[int, list[float]] = {}
    dim: int | None = None
    if model is not None:
        for batch in core.store.iter_embeddings(model):
            for memory_id, blob in batch:
                if memory_id in ids:
                    row = np.frombuffer(blob, dtype=np.float32)
                    dim = int(row.shape[0])
                    embeddings[memory_id] = [float(x) for x in row]
    instance = instance_id(core)
    coverage: dict[str, int] = {}
    entries: list[dict[str, Any]] = []
    newest: datetime | None = None
    for record in iter_all(core, (project,)):
        exported = memory_record(record, instance)
        source = entry_source(record)
        coverage[source] = coverage.get(source, 0) + 1
        newest = record.updated_at if newest is None else max(newest, record.updated_at)
        theirs = record.source == SOURCE and record.source_id is not None
        if theirs:  # another index's entry: written back as it came
            exported["metadata"] = {
                k: v for k, v in record.metadata.items() if k not in _BOOKKEEPING
            }
        entries.append(
            {
                "id": record.source_id if theirs else exported["identity"],
                "text": record.content,
                "embedding": embeddings.get(record.id),
                "source": source,
                "relevance": relevance(record),
                "metadata": {key: exported[key] for key in _META_KEYS},
            }
        )
    document = {
        "metadata": {
            "format": INDEX_FORMAT,
            "version": INDEX_VERSION,
            "project": project,
            "last_updated": None if newest is None else newest.isoformat(),
            "entry_count": len(entries),
            "coverage": coverage,
            "embedding_model": model if embeddings else None,
            "dimensions": dim,
            "exported_at": utcnow().isoformat(),
        },
        "vectors": entries,
    }
    json.dump(document, out, ensure_ascii=False)
    out.write("\n")
    return len(entries)


# -- reading -------------------------------------------------------------------------


def _entry_identity(entry: dict[str, Any], project: str) -> str | None:
    """The identity of an entry memlane wrote: its ``id``, or, for an entry another index
    gave (written back under its own id, :func:`export_index`), the ``src:`` identity of
    the memory it came from; None for another tool's entry."""
    meta = entry.get("metadata")
    ident = entry.get("id")
    if not isinstance(meta, dict) or not isinstance(ident, str):
        return None
    if valid_identity(ident):
        return ident
    if meta.get("source") == SOURCE and meta.get("source_id") == ident:
        origin = meta.get("project")
        return source_identity(origin if isinstance(origin, str) else project, SOURCE, ident)
    return None


def _entry_record(entry: dict[str, Any], project: str) -> dict[str, Any] | None:
    """The lossless export record of an entry that came from memlane, else None."""
    meta = entry.get("metadata")
    ident = _entry_identity(entry, project)
    if not isinstance(meta, dict) or ident is None:
        return None
    if "kind" not in meta or "created_at" not in meta:
        return None
    record = {key: meta.get(key) for key in _META_KEYS}
    own = record.get("metadata")
    if ident != entry.get("id") and isinstance(own, dict):
        # Another index's entry: its source and relevance travel on the entry.
        bookkeeping = {"index_source": entry.get("source"), "relevance": entry.get("relevance")}
        record["metadata"] = {**own, **bookkeeping}
    record.update(
        record="memory",
        identity=ident,
        text=entry.get("text"),
        # Indexes written before memlane named files kept its source name on top.
        source=meta.get("source") or entry.get("source") or "memlane",
        project=meta.get("project") or project,
    )
    return record


def _foreign_type(meta: dict[str, Any], source: Any) -> str:
    given = meta.get("type")
    if isinstance(given, str) and given.strip():
        return given
    if isinstance(source, str):
        return FILE_TYPES.get(Path(source).name, "note")
    return "note"


class IndexApplier(RecordApplier):
    """Applies index entries: memlane's own losslessly, other tools' as plain memories."""

    def __init__(self, core: Core, *, project: str, index: IndexFile) -> None:
        super().__init__(core, project=project)
        self.model = index.plan.model
        self.dim = index.dim

    def apply_entry(self, number: int, entry: Any) -> None:
        try:
            self._apply_entry(entry)
        except InvalidInput as exc:
            self.tally.error(number, str(exc))

    def _apply_entry(self, entry: Any) -> None:
        if not isinstance(entry, dict):
            raise InvalidInput("an entry must be a JSON object")
        text = entry.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("entry without 'text'")
        ident = entry.get("id")
        if not isinstance(ident, str | int) or isinstance(ident, bool) or str(ident) == "":
            raise InvalidInput("entry without an 'id'")
        vector = embedding(entry.get("embedding"), self.dim)
        if vector is not None and self.model is None:
            self.tally.bump("vectors left out")
            vector = None
        record = _entry_record(entry, self.project or "")
        if record is not None:
            if vector is not None and self.model is not None:
                record["vectors"] = {self.model: b64encode(vector).decode("ascii")}
            self.apply_memory(parse_memory(record))
            return
        meta = entry.get("metadata") or {}
        if not isinstance(meta, dict):
            raise InvalidInput("'metadata' must be an object")
        check_metadata(meta)
        when = next((name for name in TIME_FIELDS if meta.get(name) is not None), None)
        draft = Draft(
            text,
            project=self.project,
            type=_foreign_type(meta, entry.get("source")),
            title=meta.get("title") if isinstance(meta.get("title"), str) else None,
            source=SOURCE,
            source_id=str(ident),
            created_at=None if when is None else parse_time(meta[when], when),
            metadata={
                **meta,
                "index_source": entry.get("source"),
                "relevance": entry.get("relevance"),
            },
        )
        result = memories.save(self.core, draft)
        self.tally.count(result.status)
        if vector is not None and self.model is not None:
            self.store.put_embeddings(self.model, len(vector) // 4, [(result.id, vector)])
            self.tally.vectors += 1


def import_index(
    core: Core, path: str, *, project: str | None = None, with_vectors: bool = True
) -> InteropReport:
    """Read the index at ``path`` back (entries, and their vectors when they fit)."""
    index = read_index(path, embedder=core.settings.embedder, with_vectors=with_vectors)
    target = project or index.metadata.get("project")
    if not isinstance(target, str) or not target.strip():
        raise InvalidInput("the index names no project: name the project to import it into")
    applier = IndexApplier(core, project=core.resolve_project(target), index=index)
    if index.plan.note:
        applier.tally.note(index.plan.note)
    # Read a batch, then write it in one transaction: the index is never held whole.
    entries = enumerate(index.entries(), start=1)
    while batch := list(islice(entries, BATCH)):
        with core.store.transaction():
            for number, entry in batch:
                applier.apply_entry(number, entry)
    return applier.report(str(index.path))
