"""Writing one namespace into a community store, all or nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from graphrag_tui.errors import InputError
from graphrag_tui.importer.mapping import StoreRows
from graphrag_tui.store.location import PostgresLocation
from graphrag_tui.store.namespace_write import WriteInterrupted, replace_namespace
from graphrag_tui.store.pg_adapt import Adaptations
from graphrag_tui.store.schema import COLUMNS, TABLES

#: Where each table's rows are in StoreRows.
ROWS_OF_TABLE = {
    "rag_parents": "parents",
    "rag_children": "children",
    "rag_entities": "entities",
    "rag_community_summaries": "summaries",
    "rag_claims": "claims",
}


class ImportInterrupted(Exception):
    """The import was interrupted before its commit: nothing was written."""


def write_namespace(
    store_path: Path, namespace: str, rows: StoreRows, interrupted: Callable[[], bool] = lambda: False
) -> tuple[int, bool]:
    """Replace ``namespace`` in the store with ``rows`` in one transaction, through the store
    (`replace_namespace`).

    Creates the store (and its schema) when the file does not exist. On any failure the
    transaction is rolled back, a store file this call created is removed, and an InputError
    says what went wrong (ImportInterrupted when `interrupted()` turned True before the
    commit). Returns (rows of the namespace that were replaced, whether the file is new).
    """
    store_path = Path(store_path)
    new_file = check_writable(store_path)
    by_table = {table: getattr(rows, attribute) for table, attribute in ROWS_OF_TABLE.items()}
    try:
        replaced = replace_namespace(
            store_path, namespace, by_table, new_file=new_file, interrupted=interrupted,
            optional={"rag_claims": rows.claim_extras, "rag_community_summaries": rows.summary_extras},
        )
    except WriteInterrupted:
        raise ImportInterrupted from None
    return replaced, new_file


def check_writable(store_path: Path) -> bool:
    """Refuse a store path the import could not write, before touching it; return whether
    the file is new. SQLite writes its journal beside the store, so the folder must be
    writable even when the file exists. (Root passes the permission checks.)"""
    folder = store_path.parent
    try:
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise InputError(f"folder of the store {what}: {folder}")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(
                f"cannot import into {store_path}: folder {folder} is not writable "
                "(the store and its journal are written there)"
            )
        exists = store_path.exists()
        if exists and not store_path.is_file():
            raise InputError(f"store path is not a file: {store_path}")
        if exists and not os.access(store_path, os.W_OK):
            raise InputError(f"cannot import into {store_path}: the file is not writable")
    except OSError as exc:  # e.g. a folder on the way that cannot be searched
        raise InputError(f"cannot import into {store_path}: {exc.strerror or exc}") from None
    return not exists


def write_namespace_postgres(
    location: PostgresLocation, namespace: str, rows: StoreRows, adaptations: Adaptations,
    interrupted: Callable[[], bool] = lambda: False,
) -> tuple[int, bool]:
    """Replace ``namespace`` in a PostgreSQL store with ``rows`` in one transaction, as on
    SQLite: graphrag-ts's tables created when the database has none, every row adapted to
    their constraints (`pg_adapt`; each change and skip recorded in ``adaptations``, which
    refuses them when strict). Returns (rows of the namespace that were replaced, whether
    the tables were created)."""
    from graphrag_tui.store.pg_write import PgWriter  # psycopg only when a URL is given

    by_table = {table: getattr(rows, attribute) for table, attribute in ROWS_OF_TABLE.items()}
    extras = tuple(rows.claim_extras)
    if rows.summary_extras:  # a report's rank, reason and findings are kept in SQLite stores only
        width = len(COLUMNS["rag_community_summaries"])
        by_table["rag_community_summaries"] = [row[:width] for row in by_table["rag_community_summaries"]]
    try:
        with PgWriter.begin(location, adaptations, interrupted=interrupted) as writer:
            if extras:
                writer.add_optional({"rag_claims": extras})
            replaced = writer.delete_namespace(namespace)
            for table in TABLES:
                writer.write_table(table, namespace, by_table[table], extras if table == "rag_claims" else ())
            writer.commit()
    except WriteInterrupted:
        raise ImportInterrupted from None
    return replaced, writer.created_schema
