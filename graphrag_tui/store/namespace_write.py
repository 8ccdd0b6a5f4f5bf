"""Writing namespaces into a SQLite store in one transaction: the store's bulk write (the
importer's and `copy`'s only way in). All SQL comes from `schema`."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from graphrag_tui.safe_text import one_line
from graphrag_tui.store.schema import (
    TABLES,
    add_column_sql,
    delete_namespace_sql,
    insert_sql,
    schema_statements,
)
from graphrag_tui.store.validation import StoreError, check_communities, check_text_order

BUSY_TIMEOUT_S = 10.0
#: SQLite virtual-machine steps between two polls of `interrupted` while writing.
POLL_STEPS = 10_000


def _check_no_triggers(conn: sqlite3.Connection, store_path: Path) -> None:
    """A trigger on the tables written could change or drop the rows (RAISE(IGNORE)
    dropped every one, and the import said it wrote them)."""
    tables = ", ".join(f"'{table}'" for table in TABLES)
    found = sorted({table for (table,) in conn.execute(
        f"SELECT lower(tbl_name) FROM sqlite_master WHERE type = 'trigger' AND lower(tbl_name) IN ({tables})")})
    if found:
        raise StoreError(f"cannot write store {store_path}: it has triggers on {', '.join(found)}, which would change "
                         "what is written (drop them, or write into another store)")


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
    with SqliteWriter.begin(store_path, new_file=new_file, interrupted=interrupted) as writer:
        writer.add_optional(optional or {})
        replaced = writer.delete_namespace(namespace)
        for table in TABLES:
            writer.write_table(table, namespace, rows.get(table, ()), tuple((optional or {}).get(table, ())))
        writer.commit()
    return replaced


class SqliteWriter:
    """One write transaction on a SQLite store: the schema created where missing, then
    namespaces deleted and written, then `commit`. Leaving the `with` block without a
    commit rolls everything back (and removes a file the write created). Every SQLite
    error is a StoreError naming the file."""

    def __init__(self, conn: sqlite3.Connection, store_path: Path, new_file: bool,
                 interrupted: Callable[[], bool]) -> None:
        self._conn = conn
        self.store_path = store_path
        self.new_file = new_file
        self._interrupted = interrupted
        self._namespace = ""
        self.committed = False

    @classmethod
    def begin(cls, store_path: Path, *, new_file: bool,
              interrupted: Callable[[], bool] = lambda: False) -> SqliteWriter:
        try:
            conn = sqlite3.connect(store_path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            _remove_new(store_path, new_file)
            raise StoreError(f"cannot open store {store_path}: {_flat(exc)}") from None
        writer = cls(conn, store_path, new_file, interrupted)
        with writer._errors():
            # A True from the handler aborts the running statement ("interrupted").
            conn.set_progress_handler(interrupted, POLL_STEPS)
            conn.execute("BEGIN IMMEDIATE")
            for statement in schema_statements():  # inside the transaction: DDL rolls back too
                conn.execute(statement)
            check_text_order(conn, store_path)
            _check_no_triggers(conn, store_path)
        return writer

    @property
    def new_store(self) -> bool:
        """Whether this write creates the store."""
        return self.new_file

    def __enter__(self) -> SqliteWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.committed:
            self._abandon()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except BaseException as exc:
            self._abandon()
            if isinstance(exc, sqlite3.Error) and self._interrupted():
                raise WriteInterrupted from None
            if isinstance(exc, sqlite3.Error):
                raise StoreError(_describe(exc, self.store_path, self._namespace)) from None
            raise

    def _abandon(self) -> None:
        if self._conn is None:
            return
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        conn.set_progress_handler(None, 0)
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        conn.close()
        _remove_new(self.store_path, self.new_file)

    def namespaces(self) -> set[str]:
        """Every namespace that has rows in any of the store's tables."""
        with self._errors():
            union = " UNION ".join(f"SELECT DISTINCT namespace FROM {table}" for table in TABLES)
            return {row[0] for row in self._conn.execute(union) if isinstance(row[0], str)}

    def add_optional(self, optional: Mapping[str, Sequence[str]]) -> None:
        """Add the optional columns (`schema.OPTIONAL` names) the store lacks."""
        with self._errors():
            for table, columns in optional.items():
                if table not in TABLES:
                    raise ValueError(f"unknown table {table!r}")
                present = {row[1].lower() for row in self._conn.execute(f"PRAGMA table_info({table})")}
                for column in columns:
                    if column not in present:
                        self._conn.execute(add_column_sql(table, column))

    def delete_namespace(self, namespace: str) -> int:
        """Delete every row of `namespace`; returns how many there were."""
        self._namespace = namespace
        with self._errors():
            return sum(self._conn.execute(delete_namespace_sql(table), (namespace,)).rowcount
                       for table in reversed(TABLES))  # claims first: they reference the others

    def write_table(self, table: str, namespace: str, rows: Iterable[Sequence[Any]],
                    extras: tuple[str, ...] = ()) -> int:
        """Insert `rows` (tuples in `COLUMNS[table]` order, then `extras`) into `table`;
        returns how many. Tables are written in `schema.TABLES` order."""
        self._namespace = namespace
        with self._errors():
            cursor = self._conn.executemany(insert_sql(table, extras), rows)
            return cursor.rowcount

    def commit(self) -> None:
        """Commit the transaction; once past the last poll of `interrupted`, the write
        completes."""
        with self._errors():
            if self._interrupted():
                raise WriteInterrupted
            try:  # what was written, as the store reads it (a destination's `level TEXT` made text of every level)
                check_communities(self._conn, self.store_path)
            except StoreError as error:
                raise StoreError(f"cannot write into {self.store_path}: what it would hold does not read back "
                                 f"({str(error).removeprefix(f'Bad community store {self.store_path}: ')}); "
                                 "nothing was written") from None
            self._conn.set_progress_handler(None, 0)  # from here on the write completes
            self._conn.execute("COMMIT")
        self.committed = True
        self._conn.close()


def _describe(exc: sqlite3.Error, store_path: Path, namespace: str) -> str:
    message = _flat(exc)
    if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in message:
        return (
            f"cannot import into {store_path}: {message} "
            f"(an ID of namespace '{namespace}' is already used by another namespace, or comes twice in its rows)"
        )
    if isinstance(exc, sqlite3.IntegrityError) and message.startswith("NOT NULL constraint failed: "):
        # (a source whose own schema lets it hold NULL there, which it reads as empty text)
        column = message.removeprefix("NOT NULL constraint failed: ")
        return (f"cannot import into {store_path}: a row of namespace '{one_line(namespace)}' has no value (NULL) for "
                f"{column}, which the store needs; nothing was written")
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
