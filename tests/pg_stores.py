"""Test helper: an SQLite store's rows copied into graphrag-ts's PostgreSQL tables.

Only for the tests (the product's writer is `copy`/`import-graphrag`). The rows must fit
graphrag-ts's constraints as they are; the values graphrag-ts requires and SPEC §2 does not
have are filled as graphrag-ts fills them (`description_hash`: SHA-256 hex of the
description) or left to their defaults (timestamps). A NULL where graphrag-ts says NOT NULL
becomes the empty value. A row that still does not fit fails the test.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from graphrag_tui.store.schema import COLUMNS
from tests.conftest import PgDatabase, create_graphrag_ts_tables

_NOT_NULL_EMPTY = {("rag_parents", "content"), ("rag_community_summaries", "community_name"),
                   ("rag_children", "parent_id")}


def _adapt(table: str, row: dict[str, Any]) -> dict[str, Any]:
    for t, column in _NOT_NULL_EMPTY:
        if t == table and row.get(column) is None:
            row[column] = ""
    if table == "rag_community_summaries":
        members = json.loads(row["members"]) if row.get("members") else []
        row["members"] = [str(m) for m in members]
    if table == "rag_claims":
        row["description_hash"] = hashlib.sha256((row["description"] or "").encode("utf-8")).hexdigest()
    return row


def copy_sqlite_to_postgres(sqlite_path: Path, database: PgDatabase, *, create: bool = True) -> dict[str, int]:
    """Every row of every table of `sqlite_path` into `database` (graphrag-ts's tables are
    created first when `create`). Parents of communities are set after all rows are in, so
    the self-reference holds whatever the row order. Returns rows per table."""
    if create:
        create_graphrag_ts_tables(database)
    source = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    source.row_factory = sqlite3.Row
    counts: dict[str, int] = {}
    parents: list[tuple[str, str]] = []
    with database.admin_connect() as conn, conn.transaction(), conn.cursor() as cur:
        for table, columns in COLUMNS.items():
            rows = [_adapt(table, dict(row)) for row in source.execute(f"SELECT {', '.join(columns)} FROM {table}")]
            if table == "rag_community_summaries":
                parents = [(r["parent_community_id"], r["id"]) for r in rows if r["parent_community_id"] is not None]
                for row in rows:
                    row["parent_community_id"] = None
            if table == "rag_children":  # graphrag-ts: every chunk has a document
                missing = {r["parent_id"] for r in rows} - {p[0] for p in cur.execute("SELECT id FROM rag_parents")}
                if missing:
                    raise AssertionError(f"chunks of documents that are not in the store: {sorted(missing)[:3]}")
            if not rows:
                counts[table] = 0
                continue
            names = list(rows[0])
            cur.executemany(
                f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})",
                [[row[n] for n in names] for row in rows],
            )
            counts[table] = len(rows)
        cur.executemany("UPDATE rag_community_summaries SET parent_community_id = %s WHERE id = %s", parents)
    source.close()
    return counts
