"""SQLite migrations. Append only: never edit a migration that has shipped."""

from __future__ import annotations

# Created before the first migration; records which migrations ran.
SCHEMA_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
)

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT 'unknown',
    status TEXT NOT NULL DEFAULT 'active',
    started_at REAL NOT NULL,
    ended_at REAL,
    last_activity_at REAL NOT NULL,
    transcript_path TEXT,
    transcript_offset INTEGER NOT NULL DEFAULT 0,
    prompt_count INTEGER NOT NULL DEFAULT 0,
    parent_session_id TEXT
);
CREATE INDEX sessions_project_activity ON sessions(project, last_activity_at);

CREATE TABLE memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    session_id TEXT,
    kind TEXT NOT NULL,
    type TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    files TEXT NOT NULL DEFAULT '[]',
    tags TEXT NOT NULL DEFAULT '[]',
    cjk_terms TEXT NOT NULL DEFAULT '',
    topic_key TEXT,
    source TEXT NOT NULL DEFAULT 'memlane',
    source_id TEXT,
    normalized_hash TEXT NOT NULL,
    revision_count INTEGER NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at REAL,
    stale INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX memories_project_created ON memories(project, created_at);
CREATE INDEX memories_created ON memories(created_at);
CREATE INDEX memories_session ON memories(session_id, created_at);
CREATE INDEX memories_hash ON memories(project, normalized_hash);
CREATE UNIQUE INDEX memories_topic ON memories(project, topic_key) WHERE topic_key IS NOT NULL;
CREATE UNIQUE INDEX memories_source ON memories(project, source, source_id)
    WHERE source_id IS NOT NULL;

CREATE VIRTUAL TABLE memories_fts USING fts5(
    title, content, files, tags, cjk_terms,
    content='memories', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, title, content, files, tags, cjk_terms)
    VALUES (new.id, new.title, new.content, new.files, new.tags, new.cjk_terms);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, title, content, files, tags, cjk_terms)
    VALUES ('delete', old.id, old.title, old.content, old.files, old.tags, old.cjk_terms);
END;
CREATE TRIGGER memories_fts_update
AFTER UPDATE OF title, content, files, tags, cjk_terms ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, title, content, files, tags, cjk_terms)
    VALUES ('delete', old.id, old.title, old.content, old.files, old.tags, old.cjk_terms);
    INSERT INTO memories_fts(rowid, title, content, files, tags, cjk_terms)
    VALUES (new.id, new.title, new.content, new.files, new.tags, new.cjk_terms);
END;

CREATE TABLE embeddings (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (memory_id, model)
) WITHOUT ROWID;
CREATE INDEX embeddings_model ON embeddings(model, memory_id);
-- A changed text invalidates its vectors; the worker re-embeds.
CREATE TRIGGER embeddings_invalidate AFTER UPDATE OF title, content ON memories BEGIN
    DELETE FROM embeddings WHERE memory_id = new.id;
END;

CREATE TABLE seen_keys (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;

CREATE TABLE maintenance_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
""",
    ),
    (
        2,
        "index memories by project, kind and time",
        """
CREATE INDEX IF NOT EXISTS memories_project_kind_created
    ON memories(project, kind, created_at);
""",
    ),
    (
        3,
        "embeddings as a rowid table (vectors stored inline, not on overflow pages)",
        # A WITHOUT ROWID row keeps at most ~1 KB on its leaf page (4 KB pages), so a
        # 2 KB vector spilled onto an overflow page of its own: 4.7 KB per vector.
        # In a rowid table the whole row stays on the leaf: ~2.1 KB per vector.
        """
DROP TRIGGER IF EXISTS embeddings_invalidate;
CREATE TABLE embeddings_v3 (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (memory_id, model)
);
INSERT INTO embeddings_v3 (memory_id, model, dim, vector, created_at)
    SELECT memory_id, model, dim, vector, created_at FROM embeddings;
DROP TABLE embeddings;
ALTER TABLE embeddings_v3 RENAME TO embeddings;
CREATE INDEX embeddings_model ON embeddings(model, memory_id);
CREATE TRIGGER embeddings_invalidate AFTER UPDATE OF title, content ON memories BEGIN
    DELETE FROM embeddings WHERE memory_id = new.id;
END;
""",
    ),
    (
        4,
        "search at scale: vector change log, filter keys index",
        # Every write of a vector (insert, replace, delete, cascade from a deleted
        # memory) and every change of a vectored memory's filter keys appends the
        # memory id here. An index saved at sequence S is brought up to date by
        # re-reading the current vector of each id logged after S: deletions and
        # re-embeddings included, without a scan of the embeddings table.
        """
CREATE TABLE vector_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id INTEGER NOT NULL,
    model TEXT NOT NULL
);
CREATE TRIGGER vector_changes_insert AFTER INSERT ON embeddings BEGIN
    INSERT INTO vector_changes (memory_id, model) VALUES (new.memory_id, new.model);
END;
CREATE TRIGGER vector_changes_delete AFTER DELETE ON embeddings BEGIN
    INSERT INTO vector_changes (memory_id, model) VALUES (old.memory_id, old.model);
END;
CREATE TRIGGER vector_changes_keys
AFTER UPDATE OF project, kind, type, created_at ON memories BEGIN
    INSERT INTO vector_changes (memory_id, model)
        SELECT new.id, model FROM embeddings WHERE memory_id = new.id;
END;
-- The columns search filters on (store/sqlite.py filter_sql), by id: a full-text
-- match is checked against the filter here instead of in its memory's row.
CREATE INDEX memories_keys ON memories(id, project, kind, type, created_at);
""",
    ),
    (
        5,
        "injection log: what the hooks injected, quiet hooks counted, feedback marks",
        # A memory's deletion clears the text of every injection that showed it (the
        # text quotes it) and drops its marks; a session's deletion drops its log.
        """
CREATE TABLE injections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    event TEXT NOT NULL,
    prompt_number INTEGER,
    created_at REAL NOT NULL,
    mode TEXT NOT NULL,
    relayed INTEGER NOT NULL,
    hook_ms REAL NOT NULL,
    chars INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    prompt TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    cleared INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX injections_session ON injections(session_id, id);
CREATE INDEX injections_project_created ON injections(project, created_at);
CREATE INDEX injections_created ON injections(created_at);

CREATE TABLE injected_memories (
    injection_id INTEGER NOT NULL REFERENCES injections(id) ON DELETE CASCADE,
    rank INTEGER NOT NULL,
    memory_id INTEGER NOT NULL,
    score REAL,
    PRIMARY KEY (injection_id, rank)
) WITHOUT ROWID;
CREATE INDEX injected_memories_memory ON injected_memories(memory_id);

CREATE TABLE quiet_hooks (
    session_id TEXT NOT NULL,
    day TEXT NOT NULL,
    event TEXT NOT NULL,
    project TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, day, event)
) WITHOUT ROWID;
CREATE INDEX quiet_hooks_project ON quiet_hooks(project, day);

CREATE TABLE feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    injection_id INTEGER REFERENCES injections(id) ON DELETE SET NULL,
    mark TEXT NOT NULL,
    prompt TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX feedback_memory ON feedback(memory_id);
CREATE INDEX feedback_injection ON feedback(injection_id, memory_id);

CREATE TRIGGER memories_clear_injections AFTER DELETE ON memories BEGIN
    UPDATE injections SET text = '', cleared = 1
        WHERE id IN (SELECT injection_id FROM injected_memories WHERE memory_id = old.id);
    DELETE FROM injected_memories WHERE memory_id = old.id;
END;
CREATE TRIGGER sessions_drop_injections AFTER DELETE ON sessions BEGIN
    DELETE FROM injections WHERE session_id = old.id;
    DELETE FROM quiet_hooks WHERE session_id = old.id;
END;
""",
    ),
    (
        6,
        "index memories by project, kind, type and time",
        # The SessionStart pack reads the newest observations of a few types; without
        # this it walks every observation of the project (its types are rare there).
        """
CREATE INDEX memories_project_kind_type_created ON memories(project, kind, type, created_at);
""",
    ),
    (
        7,
        "index the words of camelCase identifiers",
        # The column of extra index terms (named for its first use, CJK bigrams) holds the
        # parts of camelCase identifiers too (memlane.text.index_terms). Rows written before
        # are re-indexed by maintenance in batches (Store.backfill_index), not here: a
        # migration runs when a hook opens the database, inside the hook's budget.
        """
CREATE TABLE index_backfill (from_id INTEGER NOT NULL, to_id INTEGER NOT NULL);
INSERT INTO index_backfill SELECT MIN(id), MAX(id) FROM memories HAVING COUNT(*) > 0;
""",
    ),
]
