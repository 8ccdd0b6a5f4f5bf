"""Replacing one namespace of a store in one transaction: the store's bulk write (the
importer's only way in). All SQL comes from `schema`."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from graphrag_tui.store.schema import (
    TABLES,
    add_column_sql,
    delete_namespace_sql,
    insert_sql,
    schema_statements,
)
from graphrag_tui.store.validation import StoreError

BUSY_TIMEOUT_S = 10.0
#: SQLite virtual-machine steps between two polls of `interrupted` while writing.
POLL_STEPS = 10_000


class WriteInterrupted(Exception):
    """The write was interrupted before its commit: nothing was written."""


def replace_namespace(
    store_path: Path,
    namespace: str,
    rows: Mapping[str, Iterable[Sequence[Any]]],
    *,
    new_file: bool,
    interrupted: Callable[[], bool] = lambda: False,
    optional: Mapping[str, tuple[str, ...]] | None = None,
) -> int:
    """Replace `namespace` in the store with `rows` (table -> tuples in `schema.COLUMNS`
    order, then the table's `optional` columns, `schema.OPTIONAL` names), creating any
    missing schema and adding those optional columns where the store lacks them, all in
    one transaction. Returns how many rows of
    the namespace were deleted.

    On any failure the transaction is rolled back, the store file is removed when
    `new_file` says this write creates it, and a StoreError says what went wrong
    (WriteInterrupted when `interrupted()` turned True before the commit)."""
    try:
        conn = sqlite3.connect(store_path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        _remove_new(store_path, new_file)
        raise StoreError(f"cannot open store {store_path}: {_flat(exc)}") from None
    try:
        try:
            # A True from the handler aborts the running statement ("interrupted").
            conn.set_progress_handler(interrupted, POLL_STEPS)
            conn.execute("BEGIN IMMEDIATE")
            for statement in schema_statements():  # inside the transaction: DDL rolls back too
                conn.execute(statement)
            optional = dict(optional or {})
            for table, columns in optional.items():
                if table not in TABLES:
                    raise ValueError(f"unknown table {table!r}")
                present = {row[1].lower() for row in conn.execute(f"PRAGMA table_info({table})")}
                for column in columns:
                    if column not in present:
                        conn.execute(add_column_sql(table, column))
            replaced = 0
            for table in reversed(TABLES):  # claims first: they reference the others
                replaced += conn.execute(delete_namespace_sql(table), (namespace,)).rowcount
            for table in TABLES:
                conn.executemany(insert_sql(table, optional.get(table, ())), rows.get(table, ()))
            if interrupted():
                raise WriteInterrupted
            conn.set_progress_handler(None, 0)  # from here on the write completes
            conn.execute("COMMIT")
        except BaseException as exc:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error) and interrupted():
                raise WriteInterrupted from None
            if isinstance(exc, sqlite3.Error):
                raise StoreError(_describe(exc, store_path, namespace)) from None
            raise
    except BaseException:
        conn.close()
        _remove_new(store_path, new_file)
        raise
    conn.close()
    return replaced


def _describe(exc: sqlite3.Error, store_path: Path, namespace: str) -> str:
    message = _flat(exc)
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


def _flat(exc: sqlite3.Error) -> str:
    return " ".join(str(exc).split()) or "unknown error"


def _remove_new(store_path: Path, new_file: bool) -> None:
    """Leave no empty file behind when the write that would have created it failed."""
    if not new_file:
        return
    for path in (store_path, Path(f"{store_path}-journal")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
