"""The community store's tables (SPEC §2), named as in graphrag-ts's PostgreSQL schema.

This is the one place that lists the tables and their columns: the store's checks and
inserts, and the importer's writes, all derive from `TABLE_COLUMNS`. `OPTIONAL_COLUMNS`
are columns a store may have beyond those (graphrag-ts ignores extra columns): a store
without them opens and works; where they are present the store reads them, and the
importer adds them (`add_column_sql`) when it has values for them. Other extra columns
are ignored.
"""

from __future__ import annotations

import sqlite3

#: Table -> (column, SQL definition), in creation order (a table only references tables
#: before it, so rows are inserted in this order and deleted in the reverse one).
TABLE_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "rag_parents": (
        ("id", "TEXT PRIMARY KEY"),
        ("namespace", "TEXT NOT NULL"),
        ("title", "TEXT"),
        ("content", "TEXT"),
    ),
    "rag_children": (
        ("id", "TEXT PRIMARY KEY"),
        ("namespace", "TEXT NOT NULL"),
        ("parent_id", "TEXT REFERENCES rag_parents(id)"),
        ("content", "TEXT NOT NULL"),
    ),
    "rag_entities": (
        ("id", "TEXT PRIMARY KEY"),
        ("namespace", "TEXT NOT NULL"),
        ("name", "TEXT NOT NULL"),
        ("description", "TEXT"),
    ),
    "rag_community_summaries": (
        ("id", "TEXT PRIMARY KEY"),
        ("namespace", "TEXT NOT NULL"),
        ("community_name", "TEXT"),
        ("summary_content", "TEXT NOT NULL"),
        ("level", "INTEGER NOT NULL DEFAULT 0"),
        ("parent_community_id", "TEXT NULL REFERENCES rag_community_summaries(id)"),
        ("members", "TEXT"),
    ),
    "rag_claims": (
        ("id", "TEXT PRIMARY KEY"),
        ("namespace", "TEXT NOT NULL"),
        ("subject_entity_id", "TEXT NOT NULL REFERENCES rag_entities(id)"),
        ("object_entity_id", "TEXT NULL REFERENCES rag_entities(id)"),
        ("description", "TEXT NOT NULL"),
        ("source_parent_id", "TEXT NULL REFERENCES rag_parents(id)"),
        ("source_chunk_id", "TEXT NULL REFERENCES rag_children(id)"),
        ("community_summary_id", "TEXT NULL REFERENCES rag_community_summaries(id)"),
    ),
}
#: Table -> optional (column, SQL definition): not created with the table, not required at
#: open. `rag_claims` keeps what GraphRAG's covariates say of a claim beyond SPEC §2: the
#: passage it quotes, its type, status and dates; `rag_community_summaries` a report's rank,
#: rating explanation and findings.
OPTIONAL_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "rag_claims": (
        ("source_text", "TEXT"),
        ("type", "TEXT"),
        ("status", "TEXT"),
        ("start_date", "TEXT"),
        ("end_date", "TEXT"),
    ),
    # What a GraphRAG community report says beyond its text (issue 15): its rank (importance,
    # 0..10 by GraphRAG's prompt), why, and its findings as a JSON array of {summary, explanation}.
    "rag_community_summaries": (
        ("rank", "REAL"),
        ("rating_explanation", "TEXT"),
        ("findings", "TEXT"),
    ),
}
#: Table -> its optional column names, in order.
OPTIONAL: dict[str, tuple[str, ...]] = {
    table: tuple(name for name, _ in columns) for table, columns in OPTIONAL_COLUMNS.items()
}
_TABLE_CONSTRAINTS: dict[str, tuple[str, ...]] = {"rag_entities": ("UNIQUE (namespace, name)",)}

TABLES = tuple(TABLE_COLUMNS)
#: Table -> its column names, in order: what the store requires and what an insert fills.
COLUMNS: dict[str, tuple[str, ...]] = {
    table: tuple(name for name, _ in columns) for table, columns in TABLE_COLUMNS.items()
}

_INDEXES_SQL = """
CREATE INDEX IF NOT EXISTS idx_summaries_namespace_level
    ON rag_community_summaries(namespace, level);
CREATE INDEX IF NOT EXISTS idx_summaries_parent
    ON rag_community_summaries(parent_community_id);
CREATE INDEX IF NOT EXISTS idx_claims_community
    ON rag_claims(community_summary_id, id);
CREATE INDEX IF NOT EXISTS idx_children_parent
    ON rag_children(parent_id);
CREATE INDEX IF NOT EXISTS idx_claims_chunk
    ON rag_claims(source_chunk_id);
"""


def _create_table_sql(table: str) -> str:
    # SQLite keeps this text in sqlite_master: its layout is part of a store's bytes.
    lines = [f"{name} {definition}" for name, definition in TABLE_COLUMNS[table]]
    lines += _TABLE_CONSTRAINTS.get(table, ())
    body = ",\n    ".join(lines)
    return f"CREATE TABLE IF NOT EXISTS {table} (\n    {body}\n);"


SCHEMA_SQL = "\n" + "\n".join(map(_create_table_sql, TABLES)) + _INDEXES_SQL


def schema_statements() -> list[str]:
    """SCHEMA_SQL one statement at a time (to run inside a transaction, unlike
    `executescript`)."""
    return [statement.strip() for statement in SCHEMA_SQL.split(";") if statement.strip()]


def insert_sql(table: str, optional: tuple[str, ...] = ()) -> str:
    """The INSERT of one row of `table`, its values in `COLUMNS[table]` order, then the
    `optional` columns (names from `OPTIONAL[table]`) in the order given."""
    unknown = set(optional) - set(OPTIONAL.get(table, ()))
    if unknown:
        raise ValueError(f"unknown optional column(s) for {table}: {', '.join(sorted(unknown))}")
    columns = COLUMNS[table] + tuple(optional)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


def add_column_sql(table: str, column: str) -> str:
    """The ALTER TABLE that adds one optional column to a store that lacks it."""
    definition = dict(OPTIONAL_COLUMNS.get(table, ())).get(column)
    if definition is None:
        raise ValueError(f"unknown optional column {table}.{column}")
    return f"ALTER TABLE {table} ADD COLUMN {column} {definition}"


def delete_namespace_sql(table: str) -> str:
    """The DELETE of every row of one namespace (parameter: the namespace)."""
    if table not in COLUMNS:
        raise ValueError(f"unknown table {table!r}")
    return f"DELETE FROM {table} WHERE namespace = ?"


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table and index that is missing; existing rows are left alone."""
    conn.executescript(SCHEMA_SQL)
