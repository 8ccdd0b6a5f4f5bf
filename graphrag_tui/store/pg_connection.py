"""Connecting to a PostgreSQL store (psycopg 3), and its errors as one line.

`connect(location)` opens a session that cannot write: `default_transaction_read_only=on`
and a statement timeout are set as it opens, after the options libpq gave it (the URL's, a
service's or PGOPTIONS: passing ours as its startup options replaced a service's, whose
search_path then named another schema), so they win. Its search_path is then `pg_catalog`
alone, and every statement it sends names the store's tables with their schema (the
session's current schema as it opened, which `current_schema()` in its SQL still means):
no function, operator or type of the store's schema is ever found by its SQL, even one its
owner adds while the session stays open. (In a path that names it, a schema's `min(varchar)`
or `||(varchar, bytea)` is found in place of PostgreSQL's `min(text)` and `||`: a call takes
the overload whose argument types fit best, wherever it is.) `connect(location,
read_only=False)` is for the commands that write (import, copy): the same, but for the
DDL that makes graphrag-ts's tables (`schema_in_path`); a writer's checks, run with its
schema in the path, found the owner's `||(oid[], oid[])` and `=(sql_identifier,
sql_identifier)`, which PostgreSQL has only as polymorphic or domain operators. Every failure
becomes a `StoreError` naming the store by its masked URL; the driver's own text is masked
too (`mask_urls`) before it is shown.

The driver is optional (`pip install 'graphrag-tui[postgres]'`): without it a URL store is
one line with the install hint.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from graphrag_tui.errors import InputError
from graphrag_tui.safe_text import one_line
from graphrag_tui.store.location import PostgresLocation, mask_urls
from graphrag_tui.store.schema import TABLES
from graphrag_tui.store.validation import StoreError
from graphrag_tui.url_mask import mask_url_secrets

if TYPE_CHECKING:
    import psycopg

#: Seconds a statement of a read-only session may run before the server cancels it.
STATEMENT_TIMEOUT_S = 60
#: Milliseconds a read-only session's statement waits for a lock on a table before it fails
#: (and is made again after the tables are checked again, postgres.py): a read stalled behind
#: its owner's lock planned with the index he made meanwhile, as the reader.
LOCK_WAIT_MS = 1
#: Seconds to wait for the server to answer a connection (unless the URL says otherwise).
CONNECT_TIMEOUT_S = 10
#: How a session finds out that its server's host is gone (a dropped VPN, a host that
#: froze), unless the URL sets any of these: TCP keepalives while it waits for an answer,
#: and a limit on how long what it sent may go unacknowledged. A read then fails within
#: about a minute instead of waiting for hours (the system's defaults).
DEAD_SERVER = {"keepalives": 1, "keepalives_idle": 20, "keepalives_interval": 10, "keepalives_count": 3,
               "tcp_user_timeout": 60_000}
INSTALL_HINT = "PostgreSQL stores need the psycopg driver: pip install 'graphrag-tui[postgres]'"

# The driver's own warnings (a Ctrl+C whose cancel request the server did not answer) would
# reach stderr through logging's last resort, a second line after the command's one; -v
# shows them with the rest of the log.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


def driver() -> Any:
    """The psycopg module, or InputError with the install hint."""
    try:
        import psycopg
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return psycopg


def driver_text(error: BaseException) -> str:
    """The driver's message in one line, masked: libpq puts the reason on the first line
    and hints on the next ones."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(error).__name__
    if first.startswith("connection failed: ") and len(first) < 30 and len(lines) > 1:
        first = lines[1]
    return mask_urls(one_line(first, 300))


class ConnectFailed(StoreError):
    """No session could be opened; `reason` is the driver's masked one-line text."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _failure(location: PostgresLocation, error: BaseException) -> ConnectFailed:
    text = mask_url_secrets(driver_text(error), location.url)
    lowered = str(error).lower()
    if "password authentication failed" in lowered or "authentication failed" in lowered \
            or "no password supplied" in lowered or "no pg_hba.conf entry" in lowered:
        return ConnectFailed(f"Cannot open store {location}: the server refused the login ({text})", text)
    if "does not exist" in lowered and "database" in lowered:
        return ConnectFailed(f"Cannot open store {location}: {text}", text)
    return ConnectFailed(f"Cannot reach the database server of store {location}: {text}", text)


#: The store's tables where a statement names them, and `current_schema()`: a read session
#: sends them as `"schema".table` and as the schema it opened with (`_session_class`), in one
#: pass (a second one rewrote a schema named `current_schema()` it had just put in).
_NAMES = re.compile(r"(?<![\w.'\"$])(" + "|".join(TABLES) + r")(?![\w$'\"])"
                    r"|(?<![\w.])(?:pg_catalog\.)?current_schema\(\)")
#: Where a read session keeps its store's schema, for `current_schema()` in its SQL.
_SCHEMA_SETTING = "graphrag_tui.store_schema"


@cache
def _session_class(psycopg: Any) -> Any:
    """psycopg's Connection whose statements name the store's tables with its schema, once
    `store_schema` is set (the driver is imported only when a PostgreSQL store is opened)."""

    class _Statements:
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().execute(self.connection.qualified(query, params), params, **kwargs)  # type: ignore[misc]

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            return super().executemany(self.connection.qualified(query, ()), params_seq, **kwargs)  # type: ignore[misc]

        def stream(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().stream(self.connection.qualified(query, params), params, **kwargs)  # type: ignore[misc]

        def copy(self, statement: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().copy(self.connection.qualified(statement, params), params, **kwargs)  # type: ignore[misc]

    class Cursor(_Statements, psycopg.Cursor):  # type: ignore[misc]
        pass

    class ServerCursor(_Statements, psycopg.ServerCursor):  # type: ignore[misc]
        pass

    class StoreSession(psycopg.Connection):  # type: ignore[misc]
        #: The schema of the store's tables; None: statements are sent as they are written.
        store_schema: str | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.cursor_factory, self.server_cursor_factory = Cursor, ServerCursor

        def qualified(self, query: Any, params: Any) -> Any:
            if self.store_schema is None or not isinstance(query, str):
                return query
            schema = '"' + self.store_schema.replace('"', '""') + '"'
            if params is not None:  # (the driver reads % there as a placeholder's)
                schema = schema.replace("%", "%%")
            current = f"pg_catalog.current_setting('{_SCHEMA_SETTING}')"
            return _NAMES.sub(lambda name: current if name.group(1) is None else f"{schema}.{name.group(1)}", query)

    return StoreSession


def _pin_catalog(conn: Any, *, schema: str | None) -> None:
    """The session's search path is `pg_catalog` alone (`find_only_catalog`), and its
    statements name the store's tables in `schema` (the one a store's first session checked
    as it opened), else in its current one. (Every name here is qualified: the path is not
    yet set.)"""
    if schema is None:
        (schema,) = conn.execute("SELECT pg_catalog.current_schema()").fetchone()
    if schema is not None:  # (None: no schema to read or write in, said by the checks)
        find_only_catalog(conn, schema)


def find_only_catalog(conn: Any, schema: str) -> None:
    """From now on the session's statements find no function, operator or type but
    `pg_catalog`'s (its search path), and name the store's tables in `schema`."""
    conn.execute("SELECT pg_catalog.set_config('search_path', 'pg_catalog', false), "
                 f"pg_catalog.set_config('{_SCHEMA_SETTING}', CAST(%s AS pg_catalog.text), false)", (schema,))
    conn.store_schema = schema


@contextmanager
def schema_in_path(conn: Any) -> Iterator[None]:
    """Within it, the session's search path is its store's schema alone (`pg_catalog` is then
    searched first) and its statements are sent as written: for a writer's DDL, graphrag-ts's
    script, which names its tables and pgvector's type unqualified (and `CREATE EXTENSION`
    installs into the path's first schema). Not restored after an error: the write is
    abandoned."""
    schema = conn.store_schema
    conn.execute("SELECT pg_catalog.set_config('search_path', pg_catalog.quote_ident(CAST(%s AS pg_catalog.text)), "
                 "false)", (schema,))
    conn.store_schema = None
    yield
    find_only_catalog(conn, schema)


def connect(location: PostgresLocation, *, read_only: bool = True, schema: str | None = None) -> psycopg.Connection[Any]:
    """An autocommit connection; read-only sessions also get the statement timeout. `schema`:
    the store's, for a read session of a store already open (its `store_schema`): a session
    that worked it out again read the tables of a schema created since, ahead in its path."""
    psycopg = driver()
    try:
        given = psycopg.conninfo.conninfo_to_dict(location.url)
    except psycopg.ProgrammingError as error:
        raise StoreError(f"Not a PostgreSQL URL: {location} ({mask_url_secrets(driver_text(error), location.url)})") \
            from None
    extra: dict[str, Any] = {"application_name": "graphrag-tui", "autocommit": True}
    if "connect_timeout" not in given and not os.environ.get("PGCONNECT_TIMEOUT"):
        extra["connect_timeout"] = CONNECT_TIMEOUT_S
    if not any(name in given for name in DEAD_SERVER):
        extra.update(DEAD_SERVER)
        if psycopg.pq.version() < 120000:  # a libpq before 12 refuses the option
            del extra["tcp_user_timeout"]
    # Text as text whatever the URL or PGCLIENTENCODING ask, and even from a SQL_ASCII database:
    # psycopg gives SQL_ASCII text as bytes, and the tables' names did not match ("has no
    # table(s)"); bytes that are not UTF-8 are then the server's one-line error.
    extra["client_encoding"] = "UTF8"
    try:
        conn = _session_class(psycopg).connect(location.url, **extra)
    except psycopg.Error as error:
        raise _failure(location, error) from None
    except UnicodeError as error:
        raise StoreError(f"Cannot open store {location}: {one_line(str(error), 200)}") from None
    try:
        # (SET, a command: no function of the database's own can stand for it.) A database's own
        # settings may not change how graphrag-tui's SQL reads: `standard_conforming_strings`
        # off broke its `'\'` literals, `quote_all_identifiers` on its check of the column types,
        # `extra_float_digits` below 1 rounded each rank read as text (7.25 became 7).
        # `constraint_exclusion` on made the planner evaluate a plain partition's condition, its
        # parents' partition keys, for a statement that names it.
        conn.execute("SET standard_conforming_strings = on; SET quote_all_identifiers = off; SET extra_float_digits = 1; "
                     "SET constraint_exclusion = partition")
        if read_only:
            conn.execute(f"SET default_transaction_read_only = on; SET statement_timeout = {STATEMENT_TIMEOUT_S * 1000}; "
                         f"SET lock_timeout = {LOCK_WAIT_MS}")
        _pin_catalog(conn, schema=schema)
    except psycopg.Error as error:
        conn.close()
        raise query_failure(location, error) from None
    return conn  # type: ignore[no-any-return]


def server_lost(error: BaseException) -> bool:
    """Whether a failed statement lost its session: the driver's OperationalError without a
    server's code, or one of a lost connection or of a server shutting down (the driver counts
    a limit the server met, `word is too long in tsquery`, as operational too)."""
    psycopg = driver()
    code = getattr(error, "sqlstate", None)
    return isinstance(error, psycopg.OperationalError) and (not code or code.startswith(("08", "57P")))


def query_failure(location: PostgresLocation, error: BaseException) -> StoreError:
    """A failed read as one line: a lost server, the statement timeout, or the error."""
    psycopg = driver()
    if isinstance(error, psycopg.errors.QueryCanceled):
        return StoreError(f"Cannot read store {location}: a query ran longer than the "
                          f"statement timeout ({STATEMENT_TIMEOUT_S} s)")
    if server_lost(error):
        return StoreError(f"Lost the database server of store {location}: {driver_text(error)}")
    return StoreError(f"Cannot read store {location}: {driver_text(error)}")
