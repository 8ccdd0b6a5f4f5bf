"""The community store's tables (SPEC §2), named as in graphrag-ts's PostgreSQL schema."""

from __future__ import annotations

import sqlite3

TABLES = (
    "rag_parents",
    "rag_children",
    "rag_entities",
    "rag_community_summaries",
    "rag_claims",
)

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS rag_parents (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    title TEXT,
    content TEXT
);
CREATE TABLE IF NOT EXISTS rag_children (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    parent_id TEXT REFERENCES rag_parents(id),
    content TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rag_entities (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    UNIQUE (namespace, name)
);
CREATE TABLE IF NOT EXISTS rag_community_summaries (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    community_name TEXT,
    summary_content TEXT NOT NULL,
    level INTEGER NOT NULL DEFAULT 0,
    parent_community_id TEXT NULL REFERENCES rag_community_summaries(id),
    members TEXT
);
CREATE TABLE IF NOT EXISTS rag_claims (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    subject_entity_id TEXT NOT NULL REFERENCES rag_entities(id),
    object_entity_id TEXT NULL REFERENCES rag_entities(id),
    description TEXT NOT NULL,
    source_parent_id TEXT NULL REFERENCES rag_parents(id),
    source_chunk_id TEXT NULL REFERENCES rag_children(id),
    community_summary_id TEXT NULL REFERENCES rag_community_summaries(id)
);
CREATE INDEX IF NOT EXISTS idx_summaries_namespace_level
    ON rag_community_summaries(namespace, level);
CREATE INDEX IF NOT EXISTS idx_summaries_parent
    ON rag_community_summaries(parent_community_id);
CREATE INDEX IF NOT EXISTS idx_claims_community
    ON rag_claims(community_summary_id, id);
CREATE INDEX IF NOT EXISTS idx_children_parent
    ON rag_children(parent_id);
"""


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table and index that is missing; existing rows are left alone."""
    conn.executescript(SCHEMA_SQL)
