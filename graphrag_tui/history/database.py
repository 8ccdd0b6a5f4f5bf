"""Opening the run history: one SQLite file, created with mode 0600, in WAL mode with a busy
timeout, so the app and a CLI can write it at once. Its version is checked first: a file
that is not a history, or comes from a newer version, is refused and left untouched; an
older one is migrated. Every SQLite error leaves here as a HistoryError (one line)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError
from ..sql_tokens import sql_tokens
from .schema import MIGRATIONS, OWN_SCHEMA_SHA256, SCHEMA_V1, SCHEMA_VERSION

#: How long a write waits for another writer (the app and a CLI at once) before giving up.
BUSY_TIMEOUT_S = 5.0


class HistoryError(InputError):
    """The history cannot be used: corrupt, locked, newer, unreadable. Exit 2 for the
    commands that read it; a warning, and the run unrecorded, for a run."""


def history_error(path: Path, error: BaseException) -> HistoryError:
    if isinstance(error, UnicodeDecodeError):  # SQLite's message quoting a damaged schema's bytes, which Python cannot decode
        return HistoryError(f"run history {path} is not a run history or is damaged (its schema cannot be read)")
    if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
        return HistoryError(f"run history {path} is locked by another process")
    if isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError):
        return HistoryError(f"run history {path} is not a run history or is damaged ({error})")
    if isinstance(error, OSError):
        return HistoryError(f"run history {path} cannot be opened: {error.strerror or error}")
    return HistoryError(f"run history {path}: {error}")


@contextlib.contextmanager
def errors_named(path: Path) -> Iterator[None]:
    try:
        yield
    except HistoryError:
        raise
    except (sqlite3.Error, OSError, OverflowError, UnicodeError) as error:  # OverflowError: an integer SQLite cannot hold
        raise history_error(path, error) from None


def _create_file(path: Path) -> None:
    """A new, empty file readable by its owner only (runs hold questions and answers)."""
    folder = next((f for f in (path.parent, *path.parent.parents) if f.exists() or f.is_symlink()), None)
    if folder is not None and not folder.is_dir():  # (mkdir said "File exists")
        raise HistoryError(f"run history {path} cannot be made: {folder} is not a folder")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def connect(path: Path, *, create: bool = True, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection to a checked, current history (created if `create` and missing)."""
    with errors_named(path):
        if not path.exists():
            if not create:
                raise HistoryError(f"run history {path} does not exist (no run was recorded there)")
            if path.is_symlink():  # SQLite would make its target, readable by all
                raise HistoryError(f"run history {path} is a symbolic link to nothing")
            _create_file(path)
        elif not stat.S_ISREG(path.stat().st_mode):  # /dev/null took a journal beside it, in /dev
            raise HistoryError(f"run history {path} is not a regular file")
        connection = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=check_same_thread
        )
        try:
            _prepare(connection, path)
        except BaseException:
            connection.close()
            raise
        return connection


def _prepare(connection: sqlite3.Connection, path: Path) -> None:
    # One read of the version and the schema: another process creating a new history could
    # commit between two, and its tables were taken for a file that is not a history.
    connection.execute("BEGIN")
    try:
        version = _checked_version(connection, path)
    finally:
        roll_back(connection)
    connection.execute("PRAGMA foreign_keys = ON")
    if version < SCHEMA_VERSION:
        _migrate(connection, version)
    if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        connection.execute("PRAGMA journal_mode = WAL")
    # FULL: a commit is on disk when it returns, so a power cut loses only what was not yet
    # committed (WAL with NORMAL may roll committed groups back after one).
    connection.execute("PRAGMA synchronous = FULL")


def _checked_version(connection: sqlite3.Connection, path: Path) -> int:
    """The history's version, once its schema is known to be one graphrag-tui writes."""
    version: int = connection.execute("PRAGMA user_version").fetchone()[0]
    schema = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    # a view's or trigger's SQL would run as the history is read or written: a query that never ends
    if any(kind in ("view", "trigger") for kind, _, _ in schema):
        raise HistoryError(f"run history {path} holds views or triggers, which graphrag-tui never makes: it is left "
                           "as it is")
    if version > SCHEMA_VERSION:
        raise HistoryError(
            f"run history {path} was written by a newer graphrag-tui (version {version}; this one reads up to "
            f"{SCHEMA_VERSION}): it is left as it is"
        )
    if version < 0:
        raise HistoryError(f"run history {path} is not a run history or is damaged (version {version})")
    if version == 0 and any(kind == "table" for kind, _, _ in schema):
        raise HistoryError(f"run history {path} is an SQLite file but not a run history: it is left as it is")
    if schema_digest(schema) != OWN_SCHEMA_SHA256:  # (reading each table's SQL cost a run 0.15 ms)
        _check_no_sql_of_its_own(schema, path)
    return version


def schema_digest(schema: list[tuple[str, str, str | None]]) -> str:
    """The SHA-256 of a file's schema: sqlite_master's type, name and SQL, in its order."""
    return hashlib.sha256(repr(schema).encode()).hexdigest()


def _runs_sql(table_sql: str) -> bool:
    """Whether a table's SQL holds what runs as rows are read or written: a CHECK, a
    DEFAULT expression, a generated column (`AS (...)`), read as SQLite reads it (a comment
    between AS and its expression hid one). The history's own tables have none."""
    tokens = [token.upper() for token in sql_tokens(table_sql)]
    return any(token in ("CHECK", "GENERATED") or token in ("DEFAULT", "AS") and following == "("
               for token, following in zip(tokens, [*tokens[1:], ""], strict=True))


#: The history's one index of its own (the others are its keys').
_INDEXES = {"runs_store": "CREATE INDEX runs_store ON runs (store_path)"}


def _check_no_sql_of_its_own(schema: list[tuple[str, str, str | None]], path: Path) -> None:
    """A file whose schema holds SQL graphrag-tui never writes is refused untouched: a
    generated column of `hex(zeroblob(450000000))` took 2.2 GB to list the runs, and an
    index's WHERE (or a CHECK) ran as much on every write."""
    for kind, name, sql in schema:
        if sql is None:  # (a key's own index)
            continue
        own = kind == "table" and not _runs_sql(sql)
        if not (own or kind == "index" and _INDEXES.get(name) == " ".join(sql.split())):
            raise HistoryError(f"run history {path} holds SQL graphrag-tui never writes (a generated column, a CHECK, "
                               "a DEFAULT expression or an index of its own), which would run as it is read or "
                               "written: it is left as it is")


def _migrate(connection: sqlite3.Connection, version: int) -> None:
    """From `version` (0: a new file) to SCHEMA_VERSION, in one transaction."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have migrated while this one waited for the lock.
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            for statement in _statements(SCHEMA_V1):
                connection.execute(statement)
            version = 1
        while version < SCHEMA_VERSION:
            for statement in _statements(MIGRATIONS[version]):
                connection.execute(statement)
            version += 1
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        roll_back(connection)
        raise


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        roll_back(connection)
        raise
    connection.execute("COMMIT")


def roll_back(connection: sqlite3.Connection) -> None:
    """Rolls back what a failed transaction wrote, if SQLite has not (it does itself on a full
    disk, and a ROLLBACK then raised an error of its own, which said nothing of the disk)."""
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
