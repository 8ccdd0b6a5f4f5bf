"""Writing one namespace into a community store, all or nothing."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from graphrag_tui.errors import InputError
from graphrag_tui.importer.mapping import StoreRows
from graphrag_tui.importer.parquet_tables import one_line
from graphrag_tui.store.schema import SCHEMA_SQL

#: Deleting runs in this order (claims first), inserting in the reverse one.
DELETE_ORDER = ("rag_claims", "rag_community_summaries", "rag_entities", "rag_children", "rag_parents")

INSERTS = {
    "rag_parents": ("parents", "INSERT INTO rag_parents (id, namespace, title, content) VALUES (?, ?, ?, ?)"),
    "rag_children": (
        "children",
        "INSERT INTO rag_children (id, namespace, parent_id, content) VALUES (?, ?, ?, ?)",
    ),
    "rag_entities": (
        "entities",
        "INSERT INTO rag_entities (id, namespace, name, description) VALUES (?, ?, ?, ?)",
    ),
    "rag_community_summaries": (
        "summaries",
        "INSERT INTO rag_community_summaries (id, namespace, community_name, summary_content, level, "
        "parent_community_id, members) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    "rag_claims": (
        "claims",
        "INSERT INTO rag_claims (id, namespace, subject_entity_id, object_entity_id, description, "
        "source_parent_id, source_chunk_id, community_summary_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ),
}

BUSY_TIMEOUT_S = 10.0
#: SQLite virtual-machine steps between two polls of `interrupted` while writing.
POLL_STEPS = 10_000


class ImportInterrupted(Exception):
    """The import was interrupted before its commit: nothing was written."""


def _schema_statements() -> list[str]:
    return [s.strip() for s in SCHEMA_SQL.split(";") if s.strip()]


def write_namespace(
    store_path: Path, namespace: str, rows: StoreRows, interrupted: Callable[[], bool] = lambda: False
) -> tuple[int, bool]:
    """Replace ``namespace`` in the store with ``rows`` in one transaction.

    Creates the store (and its schema) when the file does not exist. On any failure the
    transaction is rolled back, a store file this call created is removed, and an InputError
    says what went wrong (ImportInterrupted when `interrupted()` turned True before the
    commit). Returns (rows of the namespace that were replaced, whether the file is new).
    """
    store_path = Path(store_path)
    new_file = check_writable(store_path)

    try:
        conn = sqlite3.connect(store_path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        _remove_new(store_path, new_file)
        raise InputError(f"cannot open store {store_path}: {one_line(exc)}") from None
    try:
        try:
            # A True from the handler aborts the running statement ("interrupted").
            conn.set_progress_handler(interrupted, POLL_STEPS)
            conn.execute("BEGIN IMMEDIATE")
            for statement in _schema_statements():  # inside the transaction: DDL rolls back too
                conn.execute(statement)
            replaced = 0
            for table in DELETE_ORDER:
                replaced += conn.execute(f"DELETE FROM {table} WHERE namespace = ?", (namespace,)).rowcount
            for table in reversed(DELETE_ORDER):
                attribute, sql = INSERTS[table]
                conn.executemany(sql, getattr(rows, attribute))
            if interrupted():
                raise ImportInterrupted
            conn.set_progress_handler(None, 0)  # from here on the import completes
            conn.execute("COMMIT")
        except BaseException as exc:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error) and interrupted():
                raise ImportInterrupted from None
            if isinstance(exc, sqlite3.Error):
                raise InputError(_describe(exc, store_path, namespace)) from None
            raise
    except BaseException:
        conn.close()
        _remove_new(store_path, new_file)
        raise
    conn.close()
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


def _describe(exc: sqlite3.Error, store_path: Path, namespace: str) -> str:
    message = one_line(exc)
    if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in message:
        return (
            f"cannot import into {store_path}: {message} "
            f"(an ID of namespace '{namespace}' is already used by another namespace)"
        )
    if "not a database" in message:
        return f"not a SQLite community store: {store_path} ({message})"
    if "locked" in message or "busy" in message:
        return f"store {store_path} is locked by another process ({message}); nothing was imported"
    return f"cannot import into {store_path}: {message}"


def _remove_new(store_path: Path, new_file: bool) -> None:
    """Leave no empty file behind when the import that would have created it failed."""
    if not new_file:
        return
    for path in (store_path, Path(f"{store_path}-journal")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
