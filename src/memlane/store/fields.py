"""Which columns the stores let callers change, and which feed the vectors (shared by every
backend; no typing import)."""

from __future__ import annotations

# Columns of a memory that ``update_memory`` may change.
UPDATABLE_FIELDS: frozenset[str] = frozenset(
    {
        "project",
        "session_id",
        "kind",
        "type",
        "title",
        "content",
        "files",
        "tags",
        "topic_key",
        "source_id",
        "normalized_hash",
        "revision_count",
        "access_count",
        "last_accessed_at",
        "stale",
        "created_at",
        "updated_at",
        "metadata",
    }
)
# Columns a memory's vectors are computed from, in order (``missing_embeddings`` embeds
# them joined by a line break). Updating one drops the memory's vectors for the worker to
# compute again: the ``embeddings_invalidate`` trigger of both backends' migrations
# (checked against this by tests/test_store_shared.py).
EMBEDDED_FIELDS: tuple[str, ...] = ("title", "content")
SESSION_FIELDS: frozenset[str] = frozenset(
    {
        "project",
        "agent",
        "status",
        "ended_at",
        "last_activity_at",
        "transcript_path",
        "transcript_offset",
        "prompt_count",
        "parent_session_id",
    }
)


def check_fields(changes: dict[str, object], allowed: frozenset[str]) -> None:
    """Raise ValueError naming the keys of ``changes`` that are not ``allowed``."""
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
