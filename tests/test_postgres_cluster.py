"""The throwaway cluster itself: graphrag-ts's schema, roles and collations."""

from __future__ import annotations

import pytest

from graphrag_tui.store.pg_schema import schema_blocks
from tests.conftest import PgDatabase, import_psycopg

psycopg = import_psycopg()


def _columns(conn: psycopg.Connection, table: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s", (table,)
    ).fetchall()
    return dict(rows)


def test_graphrag_ts_schema_has_the_tables_as_its_migrations_leave_them(graphrag_ts_database: PgDatabase) -> None:
    with graphrag_ts_database.admin_connect() as conn:
        tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert tables == {"rag_parents", "rag_children", "rag_entities", "rag_community_summaries",
                          "rag_graph_edges", "rag_claims"}
        summaries = _columns(conn, "rag_community_summaries")
        assert summaries["members"] == "ARRAY"
        assert summaries["level"] == "integer"
        assert summaries["community_name"] == "character varying"
        assert summaries["content_fingerprint"] == "character"
        assert _columns(conn, "rag_claims")["description_hash"] == "character"
        assert _columns(conn, "rag_children")["fts_tokens"] == "tsvector"
        # No pgvector on this machine's server: the vector block is skipped, the rest stands.
        has_vector = conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        assert ("embedding" in _columns(conn, "rag_children")) == bool(has_vector and has_vector[0])
        keys = {row[0] for row in conn.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid::regclass::text LIKE 'rag_%'")}
        assert len(keys) == 11
        assert "rag_community_summaries_parent_community_id_fkey" in keys


def test_schema_file_blocks() -> None:
    blocks = schema_blocks()
    assert set(blocks) == {"core", "vector"}
    assert sum(statement.startswith("CREATE TABLE") for statement in blocks["core"]) == 6
    assert blocks["vector"][0] == "CREATE EXTENSION IF NOT EXISTS vector"


def test_reader_role_reads_and_cannot_write(graphrag_ts_database: PgDatabase) -> None:
    with psycopg.connect(graphrag_ts_database.url) as conn:
        assert conn.execute("SELECT count(*) FROM rag_community_summaries").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO rag_parents (id, namespace, content) VALUES ('p', 'ns', '')")


def test_icu_database_sorts_differently_unless_collate_c(icu_database: PgDatabase) -> None:
    with psycopg.connect(icu_database.url) as conn:
        values = "(VALUES ('b'), ('A'), ('a'), ('B'), ('10'), ('9'), ('_x'))"
        natural = [r[0] for r in conn.execute(f"SELECT v FROM {values} AS t(v) ORDER BY v")]
        code_point = [r[0] for r in conn.execute(f'SELECT v FROM {values} AS t(v) ORDER BY v COLLATE "C"')]
    assert code_point == ["10", "9", "A", "B", "_x", "a", "b"]
    assert natural != code_point
