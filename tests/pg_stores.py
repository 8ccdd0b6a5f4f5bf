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
import time
from pathlib import Path
from typing import Any

from graphrag_tui.store.schema import COLUMNS, OPTIONAL
from tests.conftest import PgDatabase, create_graphrag_ts_tables

SAMPLE = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
_NOT_NULL_EMPTY = {("rag_parents", "content"), ("rag_community_summaries", "community_name"),
                   ("rag_children", "parent_id")}


def _members_list(raw: Any) -> list[str] | None:
    """The members as TEXT[] takes them, or None when they are not a JSON array of strings."""
    if raw is None:
        return []
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _adapt(table: str, row: dict[str, Any], *, strict: bool, members_as_text: bool) -> dict[str, Any]:
    for t, column in _NOT_NULL_EMPTY:
        if strict and t == table and row.get(column) is None:
            row[column] = ""
    if table == "rag_community_summaries" and not members_as_text:
        members = _members_list(row.get("members"))
        if members is None:
            raise AssertionError(f"members of {row['id']} are not a JSON array of strings: {row['members']!r}")
        row["members"] = members
    if table == "rag_claims":
        row["description_hash"] = hashlib.sha256((row["description"] or "").encode("utf-8")).hexdigest()
    return row


def _relax(conn: Any, *, members_as_text: bool, indexes: bool, keys: bool = True) -> None:
    """graphrag-ts's tables without their constraints (module doc); without `keys`, without
    their primary keys too."""
    kinds = "('f', 'u')" if keys else "('f', 'u', 'p')"
    for table, name in conn.execute(
            f"SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE contype IN {kinds} "
            "AND connamespace = 'public'::regnamespace ORDER BY contype = 'p'").fetchall():  # (keys last: others name them)
        conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
    dropped = "" if not indexes else "AND i.indisunique"
    for (name,) in conn.execute(
            f"SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
            f"JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            f"WHERE n.nspname = 'public' AND NOT i.indisprimary {dropped}").fetchall():
        conn.execute(f"DROP INDEX {name}")
    for table, column in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
            "AND is_nullable = 'NO' AND column_name <> 'id'").fetchall():
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL")
    if members_as_text:
        conn.execute("ALTER TABLE rag_community_summaries ALTER COLUMN members DROP DEFAULT, "
                     "ALTER COLUMN members TYPE text USING NULL")


def copy_sqlite_to_postgres(sqlite_path: Path, database: PgDatabase, *, strict: bool = True,
                            indexes: bool = True, keys: bool = True) -> dict[str, int]:
    """Every row of every table of `sqlite_path` into `database`, graphrag-ts's tables
    created first (module doc), one COPY per table in one transaction (the foreign keys,
    the communities' own parent link included, are checked at the end of each COPY, so row
    order does not matter), then ANALYZE. Returns rows per table."""
    create_graphrag_ts_tables(database)
    source = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    source.row_factory = sqlite3.Row
    members_as_text = not strict and any(
        _members_list(raw) is None for (raw,) in source.execute("SELECT members FROM rag_community_summaries"))
    if not (strict and indexes and keys):
        with database.admin_connect() as conn:
            _relax(conn, members_as_text=members_as_text, indexes=indexes, keys=keys)
    counts: dict[str, int] = {}
    with database.admin_connect() as conn:
        with conn.transaction(), conn.cursor() as cur:
            for table, columns in COLUMNS.items():
                present = {r[1] for r in source.execute(f"PRAGMA table_info({table})")}
                extras = [c for c in OPTIONAL.get(table, ()) if c in present]  # read where present, as in SQLite
                for column in extras:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
                names = [*columns, *extras] + (["description_hash"] if table == "rag_claims" else [])
                counts[table] = 0
                with cur.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN") as copy:
                    for row in source.execute(f"SELECT {', '.join((*columns, *extras))} FROM {table}"):
                        adapted = _adapt(table, dict(row), strict=strict, members_as_text=members_as_text)
                        copy.write_row([adapted[n] for n in names])
                        counts[table] += 1
        conn.execute("ANALYZE")
    source.close()
    return counts


def settled_writes(database: PgDatabase) -> dict[str, tuple[int, int, int]]:
    """Rows inserted, updated and deleted per rag_ table, once every finished session's
    statistics are in: a canary row is written and closed, then awaited in the statistics."""
    with database.admin_connect() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS stats_canary (n int)")
        conn.execute("INSERT INTO stats_canary VALUES (1)")
        (wanted,) = conn.execute("SELECT count(*) FROM stats_canary").fetchone()
    deadline = time.monotonic() + 15
    while True:
        with database.admin_connect() as conn:
            rows = conn.execute("SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables").fetchall()
        stats = {name: (ins, upd, dele) for name, ins, upd, dele in rows}
        if stats.get("stats_canary", (0, 0, 0))[0] >= wanted:
            return {name: figures for name, figures in stats.items() if name.startswith("rag_")}
        assert time.monotonic() < deadline, "the statistics never showed the canary row"
        time.sleep(0.2)
