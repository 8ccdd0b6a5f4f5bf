"""The store owns the schema: `store/schema.py` is the one list of tables and columns, and
the store's checks, its inserts and the importer's writes all follow it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from graphrag_tui.errors import InputError
from graphrag_tui.importer import import_graphrag
from graphrag_tui.importer.writer import ROWS_OF_TABLE
from graphrag_tui.store import CommunityStore, namespace_write
from graphrag_tui.store.schema import COLUMNS, OPTIONAL, SCHEMA_SQL, TABLES, insert_sql
from tests.graphrag_fixtures import write_index

EXPECTED_COLUMNS = {
    "rag_parents": ("id", "namespace", "title", "content"),
    "rag_children": ("id", "namespace", "parent_id", "content"),
    "rag_entities": ("id", "namespace", "name", "description"),
    "rag_community_summaries": (
        "id", "namespace", "community_name", "summary_content", "level", "parent_community_id", "members",
    ),
    "rag_claims": (
        "id", "namespace", "subject_entity_id", "object_entity_id", "description",
        "source_parent_id", "source_chunk_id", "community_summary_id",
    ),
}

EXPECTED_OPTIONAL = ("source_text", "type", "status", "start_date", "end_date")


def table_columns(path: Path) -> dict[str, tuple[str, ...]]:
    conn = sqlite3.connect(path)
    try:
        return {
            table: tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
            for table in TABLES
        }
    finally:
        conn.close()


def test_the_schema_lists_every_table_and_column_once_and_creates_them(tmp_path: Path) -> None:
    assert COLUMNS == EXPECTED_COLUMNS
    assert TABLES == tuple(EXPECTED_COLUMNS)
    path = tmp_path / "s.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_SQL)
    conn.close()
    assert table_columns(path) == EXPECTED_COLUMNS
    assert insert_sql("rag_parents") == "INSERT INTO rag_parents (id, namespace, title, content) VALUES (?, ?, ?, ?)"


def test_opening_requires_exactly_the_schema_columns(tmp_path: Path) -> None:
    """The open check follows COLUMNS: a store missing the last column of each table names
    all five."""
    path = tmp_path / "s.db"
    conn = sqlite3.connect(path)
    for table, columns in COLUMNS.items():
        conn.execute(f"CREATE TABLE {table} ({', '.join(columns[:-1])})")
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as raised:
        CommunityStore.open(path)
    assert str(raised.value) == (
        f"Not a community store: {path} is missing column(s) rag_parents.content, rag_children.content, "
        "rag_entities.description, rag_community_summaries.members, rag_claims.community_summary_id"
    )


def test_the_store_insert_fills_the_schema_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with CommunityStore.create(path) as store:
        assert store.insert("rag_parents", [{"id": "d1", "namespace": "ns", "title": "T"}]) == 1
        with pytest.raises(ValueError, match="unknown column\\(s\\) for rag_parents: body"):
            store.insert("rag_parents", [{"id": "d2", "namespace": "ns", "body": "x"}])
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT * FROM rag_parents").fetchall() == [("d1", "ns", "T", None)]
    conn.close()


def test_the_importer_writes_every_table_through_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of the importer's inserts is the store's `insert_sql`, table by table in the
    schema's order, with rows as long as the schema's column list (claims: and the optional
    columns the covariates fill, which the import adds to the table)."""
    assert set(ROWS_OF_TABLE) == set(TABLES)
    written: list[tuple[str, tuple[str, ...]]] = []

    def recording(table: str, optional: tuple[str, ...] = ()) -> str:
        written.append((table, optional))
        return insert_sql(table, optional)

    monkeypatch.setattr(namespace_write, "insert_sql", recording)
    store = tmp_path / "s.db"
    report = import_graphrag(write_index(tmp_path / "out"), store, "ns")
    assert written == [(table, OPTIONAL.get(table, ())) for table in TABLES]  # the fixture's reports rank
    assert report.communities > 0
    assert table_columns(store) == {**EXPECTED_COLUMNS,
                                    "rag_claims": EXPECTED_COLUMNS["rag_claims"] + EXPECTED_OPTIONAL,
                                    "rag_community_summaries": EXPECTED_COLUMNS["rag_community_summaries"]
                                    + ("rank", "rating_explanation", "findings")}
    with CommunityStore.open(store) as opened:
        assert [info.name for info in opened.namespaces()] == ["ns"]
