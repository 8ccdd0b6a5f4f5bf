"""A community store in a PostgreSQL database: graphrag-ts's own tables, read-only.

`PostgresStore` answers every call of `CommunityStore` (the faces cannot tell them apart).
It reuses the store's dialect-neutral logic; its reads go through `_query`, which runs
them on PostgreSQL (`pg_dialect.to_postgres` rewrites the few SQLite idioms). The reads
where the time goes have queries of their own here: the selection of communities and
the entity names stream through server-side (named) cursors in groups, and planning's
claim and excerpt lines are rendered by the server, one row per leaf, a group of leaves
at a time, read ahead on a second connection.

graphrag-ts's schema differs from SPEC §2's SQLite one in ways the reads absorb:
`members` is `TEXT[]` (JSON text and json/jsonb are read too), names are VARCHAR, and the
embedding, full-text, fingerprint, hash and timestamp columns and `rag_graph_edges` are
ignored. Ids are ordered `COLLATE "C"` (by code point, as SQLite's BINARY), whatever the
database's collation, so batches are the same as from SQLite. Nothing relies on indexes
beyond the primary keys.

Every session is read-only (`pg_connection.connect`). A connection the server dropped is
opened again once, on the next read; if the server cannot be reached, the read is one
line (`StoreError`) and the caller goes on.

The store's tables are checked (`pg_safety`) as it opens, and again before a read that comes
RECHECK_AFTER_S or more after the last check: its owner may add an index whose predicate
calls his function after the app opened the store, and planning the next read would run it
as the reader. A store found unsafe is not read any more in that process.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from itertools import chain, count
from operator import itemgetter, methodcaller
from typing import Any, TypeVar

from graphrag_tui.engine import MapTextParts
from graphrag_tui.safe_text import one_line
from graphrag_tui.store import map_parts, table_rows
from graphrag_tui.store.location import PostgresLocation
from graphrag_tui.store.pg_connection import (
    LOCK_WAIT_MS,
    STATEMENT_TIMEOUT_S,
    ConnectFailed,
    connect,
    driver,
    query_failure,
)
from graphrag_tui.store.pg_dialect import to_postgres
from graphrag_tui.store.pg_safety import only_temporary_schema, unsafe_relation
from graphrag_tui.store.read_ahead import read_ahead
from graphrag_tui.store.records import CommunityRef
from graphrag_tui.store.schema import COLUMNS, OPTIONAL, TABLES
from graphrag_tui.store.store import (
    CommunityStore,
    NamespaceInfo,
    _group_leaves,
    _groups,
    _parse_members,
    map_text_parts,
)
from graphrag_tui.store.validation import StoreError

#: Rows fetched per round trip from a server-side cursor.
STREAM_ROWS = 5000
#: Seconds after a check of the store's tables past which a read checks them again.
RECHECK_AFTER_S = 1.0
#: Seconds between two tries of a read that found a table locked (pg_connection.LOCK_WAIT_MS).
LOCKED_RETRY_S = 0.05
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_NEW_TUPLE = tuple.__new__
T = TypeVar("T")

#: What a required column's type must be (information_schema's data_type).
#: (Not `character`: char(n) pads its text with spaces, and each namespace was listed twice.)
_TEXT_TYPES = frozenset({"text", "character varying"})
_INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})
_MEMBERS_TYPES = frozenset({"ARRAY", "text", "character varying", "json", "jsonb"})
_INTEGER_COLUMNS = {("rag_community_summaries", "level")}

# A claim's Map line (`maptext.claim_lines`), rendered by the server as map_parts does in
# SQLite: an entity id with no row stands for its name, a NULL subject or description is
# empty, the relation is left out when the object is NULL or empty.
_OBJECT = "coalesce(object.name, c.object_entity_id)"
_CLAIM_LINE = f"""
%(claim_start)s || coalesce(subject.name, c.subject_entity_id, '')
|| CASE WHEN {_OBJECT} <> '' THEN %(relates_start)s || {_OBJECT} || %(relates_end)s ELSE '' END
|| %(description_start)s || coalesce(c.description, '')
"""
_LEAF_LINES = f"""
SELECT c.community_summary_id,
       string_agg({_CLAIM_LINE}, E'\\n' ORDER BY c.id COLLATE "C"),
       array_agg(c.source_chunk_id ORDER BY c.id COLLATE "C")
FROM rag_claims AS c
{{entities}}
WHERE c.community_summary_id = ANY(%(leaves)s)
GROUP BY c.community_summary_id
"""
#: The claims' entities, by whether the store's entity ids are unique (graphrag-ts's key):
#: of an id repeated, the least name by code point (a join repeated the id's claims), which
#: costs planning a lookup per claim, so only a store without that key pays for it.
_ENTITY_JOINS = {
    True: "LEFT JOIN rag_entities AS subject ON subject.id = c.subject_entity_id\n"
          "LEFT JOIN rag_entities AS object ON object.id = c.object_entity_id",
    False: "\n".join(f'LEFT JOIN LATERAL (SELECT min(name COLLATE "C") AS name FROM rag_entities '
                     f"WHERE id = c.{role}_entity_id) AS {role} ON true" for role in ("subject", "object")),
}
#: Whether a unique index (a primary key's too) on the entities' id alone holds for every row.
_ENTITY_IDS_UNIQUE = """
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_index AS i
    JOIN pg_catalog.pg_class AS t ON t.oid = i.indrelid
    JOIN pg_catalog.pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
    WHERE t.relname = 'rag_entities' AND t.relnamespace = CAST(pg_catalog.quote_ident(current_schema()) AS regnamespace)
      AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = 'id'
)
"""
_EXCERPT_LINES = (
    "SELECT id, %(excerpt_start)s || id || %(excerpt_middle)s || coalesce(content, '') "
    "FROM rag_children WHERE id = ANY(%(ids)s)"
)
# The rows of a namespace as `_NAMESPACE_CTES` names them, for the selection.
_NAMESPACE = """
WITH ns AS (
    SELECT id, parent_community_id AS parent, level, summary_content AS summary
    FROM rag_community_summaries WHERE namespace = %(ns)s
), parent_ids AS (SELECT DISTINCT parent AS id FROM ns WHERE parent IS NOT NULL)
"""
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _text_array(ids: Any) -> list[str]:
    return [i for i in ids if isinstance(i, str)]


def retry_while_locked(attempt: Callable[[], T], give_up: Callable[[], bool], *,
                       before_again: Callable[[], None] | None = None, wait: float = LOCKED_RETRY_S) -> T:
    """`attempt()`, made again `wait` seconds after each time it meets a lock it may not wait
    for (LockNotAvailable; `before_again` first), until the statement timeout or `give_up()`:
    then the lock's error is raised."""
    deadline = time.monotonic() + STATEMENT_TIMEOUT_S
    while True:
        try:
            return attempt()
        except driver().errors.LockNotAvailable:
            if time.monotonic() >= deadline or give_up():
                raise
            if before_again is not None:
                before_again()
            time.sleep(wait)


def _never() -> bool:
    return False


class PostgresStore(CommunityStore):
    """An open PostgreSQL store (read-only). Use `open`."""

    def __init__(self, conn: Any, location: PostgresLocation, columns: Mapping[str, Mapping[str, str]]) -> None:
        self._conn = conn
        #: The schema checked as the store opened: every later session reads its tables.
        self._schema: str | None = conn.store_schema
        #: When this session's last check of the tables began (`_recheck`), and what a check
        #: found unsafe (then no read is made any more).
        self._checked_at = -math.inf
        self._unsafe: str | None = None
        #: `copy`'s session, once it reads (`_snapshot_session`), the lock wait its transaction
        #: has (ms), and the number of its next cursor (each table read has its own).
        self._snapshot: Any | None = None
        self._snapshot_lock_wait = LOCK_WAIT_MS
        self._cursors = count()
        self._lock = threading.Lock()
        #: Set by `interrupt` (another thread): the read in flight ends, and is not tried again.
        self._interrupted = False
        self._ahead: PostgresStore | None = None
        self.path = location  # type: ignore[assignment]  # what the faces show: the masked URL
        self.location = location
        self.writable = False
        self._columns = columns
        self._has_parent_index = True  # PostgreSQL walks either way fast enough: always down
        self.claim_extras = tuple(c for c in OPTIONAL["rag_claims"] if c in columns.get("rag_claims", {}))
        summaries = columns.get("rag_community_summaries", {})
        self.summary_extras = tuple(c for c in OPTIONAL["rag_community_summaries"] if c in summaries)
        self._members_array = columns["rag_community_summaries"].get("members") == "ARRAY"

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, location: PostgresLocation, *,  # type: ignore[override]
             stop_when: Callable[[], bool] | None = None) -> PostgresStore:
        """Connect read-only and check the tables and column types. Raises StoreError (one
        line, the URL masked) for an unreachable server, a refused login, a database
        without the tables, or a column of the wrong type."""
        conn = connect(location)

        def checked() -> tuple[float, dict[str, dict[str, str]]]:
            checked_at = time.monotonic()
            _check_safe(conn, location)  # (first: information_schema lists no materialized view)
            columns = _check_schema(conn, location)
            _check_communities(conn, location)
            return checked_at, columns

        try:
            try:  # the checks again after a table found locked (`_checked_read`)
                checked_at, columns = retry_while_locked(checked, stop_when or _never)
            except driver().errors.LockNotAvailable as error:
                raise query_failure(location, error) from None
            store = cls(conn, location, columns)
            if stop_when is not None:
                store.stop_when = stop_when
            store._checked_at = checked_at
            return store
        except BaseException:
            conn.close()
            raise

    def interrupt(self) -> None:
        """As in SQLite (`CommunityStore.interrupt`): the connection's socket is shut down, so
        a read fails at once even on a server that stopped answering (a cancel request would
        wait for that server). The next read connects again."""
        self._interrupted = True
        for conn in (self._conn, self._snapshot):  # (copy's reads wait on the snapshot's session)
            if conn is not None:
                with suppress(OSError, driver().Error):
                    with socket.socket(fileno=os.dup(conn.fileno())) as sock:  # closing it closes the copy
                        sock.shutdown(socket.SHUT_RDWR)
        if (ahead := self._ahead) is not None:
            ahead.interrupt()

    def column_names(self, table: str) -> set[str]:
        return set(self._columns.get(table, {}))

    # -- reading -------------------------------------------------------------------------

    def _run(self, work: Any) -> Any:
        """`work(conn)` under the lock; a connection the server dropped is opened again
        once. Driver errors become StoreError (one line, masked)."""
        psycopg = driver()
        with self._lock:
            self._interrupted = False
            for attempt in (1, 2):
                try:
                    return self._checked_read(work)
                except psycopg.OperationalError as error:
                    if self._interrupted:
                        raise StoreError(f"Reading store {self.location} was interrupted") from None
                    if attempt == 2 or not (self._conn.broken or self._conn.closed):
                        raise query_failure(self.location, error) from None
                    self._conn.close()
                    try:
                        self._conn = connect(self.location, schema=self._schema)
                        self._checked_at = -math.inf
                    except ConnectFailed as again:
                        raise StoreError(f"{query_failure(self.location, error)}; connecting again: {again.reason}") from None
                except psycopg.Error as error:
                    raise query_failure(self.location, error) from None
                except (UnicodeError, RecursionError) as error:
                    raise self._undecodable(error) from None
        raise AssertionError("unreachable")

    def _checked_read(self, work: Any) -> Any:
        """`work(conn)` after `_recheck`; a statement that found a table another session
        locked (it waits LOCK_WAIT_MS at most) is made again after a check, until the statement
        timeout: while it waited, the table's owner could change what planning it runs."""
        def read() -> Any:
            self._recheck()  # (its catalogs may be locked too: a REINDEX of pg_class)
            return work(self._conn)

        return retry_while_locked(read, lambda: self._interrupted or self.stop_when(), before_again=self._forget_check)

    def _forget_check(self) -> None:
        self._checked_at = -math.inf

    def _recheck(self) -> None:
        """The tables checked again when the last check began RECHECK_AFTER_S ago or more
        (module doc); StoreError once they are unsafe."""
        if self._unsafe is None and time.monotonic() - self._checked_at < RECHECK_AFTER_S:
            return
        if self._unsafe is None:
            checked_at = time.monotonic()
            problem = unsafe_relation(self._conn)
            if problem is None:
                self._checked_at = checked_at
                return
            self._unsafe = f"Not a community store any more: {self.location}: {problem}"
        raise StoreError(self._unsafe)

    def _undecodable(self, error: UnicodeError | RecursionError) -> StoreError:
        """A value the driver could not decode as it fetched it (it decodes json and jsonb then)."""
        if isinstance(error, RecursionError):
            return StoreError(f"Cannot read store {self.location}: a JSON value in it is nested too deeply")
        return StoreError(f"Cannot read store {self.location}: {one_line(str(error), 200)}")

    def _query(self, sql: str, params: Mapping[str, Any] | tuple = ()) -> list[tuple]:
        """A read written in SQLite's dialect (`pg_dialect`), every row."""
        return self._pg_query(to_postgres(sql), params)

    def _pg_query(self, sql: str, params: Mapping[str, Any] | tuple = ()) -> list[tuple]:
        def work(conn: Any) -> list[tuple]:
            with conn.cursor() as cur:
                cur.execute(sql, params or None)
                return cur.fetchall() if cur.description is not None else []

        return self._run(work)  # type: ignore[no-any-return]

    def _stream(self, sql: str, params: Mapping[str, Any] | tuple = ()) -> list[tuple]:
        """Every row of a large read, through a server-side cursor, STREAM_ROWS at a time
        (the driver never holds the whole result besides the rows kept)."""

        def work(conn: Any) -> list[tuple]:
            rows: list[tuple] = []
            with conn.transaction(), conn.cursor(name="graphrag_tui_read") as cur:
                cur.itersize = STREAM_ROWS
                cur.execute(sql, params or None)
                while batch := cur.fetchmany(STREAM_ROWS):
                    rows += batch
            return rows

        return self._run(work)  # type: ignore[no-any-return]

    def namespaces(self) -> list[NamespaceInfo]:
        counts: dict[str, dict[str, Any]] = defaultdict(lambda: {"levels": {}})
        simple = {
            "community_count": "rag_community_summaries", "claim_count": "rag_claims",
            "chunk_count": "rag_children", "document_count": "rag_parents", "entity_count": "rag_entities",
        }
        for field, table in simple.items():
            for ns, n in self._pg_query(f"SELECT namespace, count(*) FROM {table} WHERE namespace IS NOT NULL GROUP BY 1"):
                counts[ns][field] = n
        for ns, level, n in self._pg_query(
            "SELECT namespace, level, count(*) FROM rag_community_summaries GROUP BY 1, 2"
        ):
            counts[ns]["levels"][int(level)] = n
        for ns, n in self._pg_query("""
            SELECT s.namespace, count(*) FROM rag_community_summaries AS s
            WHERE NOT EXISTS (SELECT 1 FROM rag_community_summaries AS p
                              WHERE p.parent_community_id = s.id AND p.namespace = s.namespace)
            GROUP BY s.namespace
        """):
            counts[ns]["leaf_count"] = n
        for figures in counts.values():
            figures["levels"] = dict(sorted(figures["levels"].items()))
        return [NamespaceInfo(name=ns, **counts[ns]) for ns in sorted(counts)]

    def _entity_names(self) -> dict[str, str]:
        return dict(self._stream('SELECT id, min(name COLLATE "C") FROM rag_entities WHERE name IS NOT NULL GROUP BY id'))

    def _selection(
        self, namespace: str, level: int | None, ids: list[str] | None = None
    ) -> tuple[list[tuple], Mapping[str, list[str]]]:
        params: dict[str, Any] = {"ns": namespace, "level": level, "ids": ids or []}
        condition = "id NOT IN (SELECT id FROM parent_ids)" if level is None else "level = %(level)s"
        if ids is not None:  # exactly these (a selection mode chose them)
            condition = "id = ANY(CAST(%(ids)s AS text[]))"
        rows = self._stream(f'{_NAMESPACE} SELECT id, summary FROM ns WHERE {condition} ORDER BY id COLLATE "C"', params)
        # Blank is empty after Python's strip(), as in SQLite (PostgreSQL's trim knows fewer spaces).
        selected = [row for row in rows if row[1] is not None and row[1].strip()]
        if not selected or (level is None and ids is None):
            return selected, {cid: [cid] for cid, _ in selected}
        roots = "roots(id) AS (SELECT unnest(CAST(:roots AS text[])))"
        return selected, self._descendant_leaves(roots, {**params, "roots": list(map(_FIRST, selected))})

    def iter_map_parts(
        self, namespace: str, level: int | None, ids: list[str] | None = None
    ) -> Iterator[MapTextParts]:
        selected, leaves_of = self._selection(namespace, level, ids)
        if not selected:
            return
        leaf_lines = _LEAF_LINES.format(entities=_ENTITY_JOINS[self._pg_query(_ENTITY_IDS_UNIQUE)[0][0]])

        def read(group: list[tuple], store: PostgresStore) -> tuple[list[tuple], dict[str, Any], dict[str, str]]:
            leaves = json.loads(_group_leaves(group, leaves_of))
            rows = store._pg_query(leaf_lines, {**map_parts.LINE_PIECES, "leaves": leaves})
            by_leaf = {leaf: (lines, chunks) for leaf, lines, chunks in rows}
            cited = _text_array(dict.fromkeys(chain.from_iterable(map(_SECOND, by_leaf.values()))))
            excerpts = dict(store._pg_query(_EXCERPT_LINES, {**map_parts.LINE_PIECES, "ids": cited})) if cited else {}
            return group, by_leaf, excerpts

        with self._second_reader() as second:
            readers = [self] if second is None else [self, second]
            reads = read_ahead(read, _groups(selected, leaves_of), readers, methodcaller("interrupt"))
            yield from map_text_parts(reads, leaves_of)

    @contextmanager
    def _second_reader(self) -> Iterator[PostgresStore | None]:  # type: ignore[override]
        """A second read-only session, for reading ahead (None when it cannot connect)."""
        try:
            conn = connect(self.location, schema=self._schema)
        except StoreError:
            yield None
            return
        second = PostgresStore(conn, self.location, self._columns)
        second._checked_at = self._checked_at  # (what a check sees is the database's, whichever its session)
        self._ahead = second
        try:
            yield second
        finally:
            self._ahead = None
            second.close()

    def iter_table_rows(self, table: str, namespace: str, extras: tuple[str, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """A namespace's rows of one table (`CommunityStore.iter_table_rows`), streamed
        through a server-side cursor: `copy`'s read. Every table is read in one snapshot
        (`_snapshot_session`), after the tables are checked again on the store's own session
        (`_recheck`: the snapshot's sees the catalog as it began, its planner as it is)."""
        sql = to_postgres(table_rows.select_sql(table, extras))
        convert = table_rows.row_converter(table, extras)
        psycopg = driver()
        cursor = f"graphrag_tui_copy_{next(self._cursors)}"  # (two reads at once had one cursor)
        try:
            snapshot = self._snapshot_session()
            self._declare_checked(snapshot, cursor, sql, namespace)
            try:
                while True:
                    # A FETCH plans nothing: it may wait (for a TOAST table a VACUUM truncates), as a statement may.
                    self._set_snapshot_lock_wait(snapshot, 0)
                    if not (batch := snapshot.execute(f"FETCH {STREAM_ROWS} FROM {cursor}").fetchall()):
                        break
                    yield from map(convert, batch)
            finally:
                with suppress(psycopg.Error):
                    snapshot.execute(f"CLOSE {cursor}")
        except psycopg.Error as error:
            self._end_snapshot()
            raise query_failure(self.location, error) from None
        except (UnicodeError, RecursionError) as error:
            self._end_snapshot()
            raise self._undecodable(error) from None

    def _declare_checked(self, snapshot: Any, cursor: str, sql: str, namespace: str) -> None:
        """The copy's cursor over one table, declared once the tables are checked again on the
        store's own session (the snapshot's sees the catalog as it began, its planner as it is).
        A table, index or child found locked (LOCK_WAIT_MS) ends only a savepoint, and the cursor
        is declared again after another check, until the statement timeout: an index being
        rebuilt failed the copy at once."""
        def declare() -> None:
            self._forget_check()
            self._run(lambda conn: None)
            with snapshot.transaction():  # (a savepoint: the snapshot goes on)
                snapshot.execute(f"DECLARE {cursor} NO SCROLL CURSOR FOR {sql}", (namespace,))

        self._set_snapshot_lock_wait(snapshot, LOCK_WAIT_MS)
        retry_while_locked(declare, self.stop_when)

    def _set_snapshot_lock_wait(self, snapshot: Any, ms: int) -> None:
        """The snapshot's lock wait for what it sends next (set outside any savepoint, whose
        rollback would undo it): LOCK_WAIT_MS for a cursor's DECLARE, which plans, none for a FETCH."""
        if self._snapshot_lock_wait != ms:
            snapshot.execute(f"SET LOCAL lock_timeout = {ms}")
            self._snapshot_lock_wait = ms

    def _snapshot_session(self) -> Any:
        """A read-only session of its own whose one REPEATABLE READ transaction every table
        `copy` reads is read in, so the tables agree: read each in its own, a document
        graphrag-ts added between two tables' reads had its chunks copied without it."""
        if self._snapshot is None:
            conn = connect(self.location, schema=self._schema)
            # (between two tables it waits for the copy's writes: a database's timeout ended it)
            conn.execute("SET idle_in_transaction_session_timeout = 0")
            conn.autocommit = False
            conn.isolation_level = driver().IsolationLevel.REPEATABLE_READ
            self._snapshot = conn
            # Its tables' locks at once (ONLY: a table inheriting from one may not be the reader's to
            # lock), before each read's check: a read that waited for one after the tables were
            # checked planned with what their owner did meanwhile. Waited for a second at a time,
            # as long as a statement may, or until the caller stops.
            def lock() -> None:
                with conn.transaction():  # (a savepoint: the snapshot is not taken yet)
                    conn.execute(f"LOCK TABLE {', '.join('ONLY ' + t for t in TABLES)} IN ACCESS SHARE MODE")

            conn.execute("SET LOCAL lock_timeout = 1000")
            retry_while_locked(lock, self.stop_when, wait=0)
            conn.execute(f"SET LOCAL lock_timeout = {LOCK_WAIT_MS}")
            self._snapshot_lock_wait = LOCK_WAIT_MS
        return self._snapshot

    def _end_snapshot(self) -> None:
        conn, self._snapshot = self._snapshot, None
        if conn is not None:
            with suppress(Exception):  # (closing rolls the read-only transaction back)
                conn.close()

    def close(self) -> None:
        self._end_snapshot()
        super().close()

    def entity_communities(self, namespace: str, entity: str) -> list[CommunityRef]:
        """As in SQLite (`provenance.entity_communities`): the communities of the namespace
        whose members include `entity`, ASCII letters compared without case."""
        members = "array_to_string(members, ' ')" if self._members_array else "CAST(members AS text)"
        pattern = "%" + entity.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._pg_query(
            "SELECT id, community_name, level, members FROM rag_community_summaries "
            f"WHERE namespace = %s AND {members} ILIKE %s ESCAPE '\\' ORDER BY level, id COLLATE \"C\"",
            (namespace, pattern),
        )
        wanted = entity.translate(_ASCII_LOWER)
        return [
            CommunityRef(id=cid, name=name, level=int(level))
            for cid, name, level, raw in rows
            if any(m == entity or m.translate(_ASCII_LOWER) == wanted for m in _parse_members(raw))
        ]


def _check_schema(conn: Any, location: PostgresLocation) -> dict[str, dict[str, str]]:
    """Table -> {column: data type} of the store's tables in the session's search path;
    StoreError when a table or required column is missing or has the wrong type."""
    psycopg = driver()
    try:
        columns, udt = column_types(conn)
    except psycopg.errors.LockNotAvailable:
        raise
    except psycopg.Error as error:
        raise query_failure(location, error) from None
    missing = [table for table in TABLES if table not in columns]
    absent = [f"{t}.{c}" for t, cols in COLUMNS.items() if t in columns for c in cols if c not in columns[t]]
    if missing or absent:
        _check_readable(conn, location, missing, absent)
    if missing:
        try:
            temporary = only_temporary_schema(conn)
        except psycopg.Error as error:
            raise query_failure(location, error) from None
        if temporary:
            raise StoreError(f"Not a community store: {location}: its search_path names no schema to read but the "
                             "session's temporary one (pg_temp)")
        raise StoreError(f"Not a community store: {location} has no table(s) {', '.join(missing)} "
                         "(graphrag-ts's schema; import-graphrag or copy can create it)")
    if absent:
        raise StoreError(f"Not a community store: {location} is missing column(s) {', '.join(absent)}")
    problem = wrong_column_type(columns, udt)
    if problem is not None:
        raise StoreError(f"Bad community store {location}: {problem}")
    return {table: dict(cols) for table, cols in columns.items()}


def column_types(conn: Any) -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], str]]:
    """The store's tables in the session's search path: table -> {column: data type}, and
    (table, column) -> its type's name."""
    rows = conn.execute(
        "SELECT c.table_name, c.column_name, c.data_type, c.udt_name FROM information_schema.columns AS c "
        "WHERE c.table_schema = current_schema() AND c.table_name = ANY(%s)", (list(TABLES),),
    ).fetchall()
    columns: dict[str, dict[str, str]] = defaultdict(dict)
    udt: dict[tuple[str, str], str] = {}
    for table, column, data_type, udt_name in rows:
        columns[table][column] = data_type
        udt[(table, column)] = udt_name
    return columns, udt


def wrong_column_type(columns: dict[str, dict[str, str]], udt: dict[tuple[str, str], str]) -> str | None:
    """The first column the store needs whose type it does not read (`column_types`), said
    as `table.column is X, not Y`; None when they all are (or are missing)."""
    for table, cols in COLUMNS.items():
        for column in cols:
            kind = columns.get(table, {}).get(column)
            if kind is None:
                continue
            if (table, column) in _INTEGER_COLUMNS:
                ok, wanted = kind in _INTEGER_TYPES, "an integer"
            elif (table, column) == ("rag_community_summaries", "members"):
                ok = kind in _MEMBERS_TYPES and (kind != "ARRAY" or udt[(table, column)] in ("_text", "_varchar"))
                wanted = "TEXT[] (or JSON text)"
            else:
                ok, wanted = kind in _TEXT_TYPES, "text"
            if not ok:
                shown = udt[(table, column)] if kind in ("ARRAY", "USER-DEFINED") else kind
                return f"{table}.{column} is {shown}, not {wanted}"
    return None


def _check_readable(conn: Any, location: PostgresLocation, missing: list[str], absent: list[str]) -> None:
    """information_schema lists only what the role may read: tables and columns missing
    there but present in the catalog are a matter of rights (StoreError saying so)."""
    psycopg = driver()
    try:
        present = {f"{table}.{column}" for table, column in conn.execute(
            "SELECT c.relname, a.attname FROM pg_catalog.pg_attribute AS a "
            "JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid "
            "WHERE c.relnamespace = CAST(pg_catalog.quote_ident(current_schema()) AS regnamespace) AND c.relname = ANY(%s) "
            "AND a.attnum > 0 AND NOT a.attisdropped", (missing + [name.split(".")[0] for name in absent],))}
        (role,) = conn.execute("SELECT current_user").fetchone()
    except psycopg.Error as error:
        raise query_failure(location, error) from None
    tables = [table for table in missing if any(name.startswith(table + ".") for name in present)]
    unreadable = tables + [name for name in absent if name in present]
    if unreadable:
        raise StoreError(f"Cannot read store {location}: role {one_line(role, 80)!r} may not read "
                         f"{', '.join(unreadable)} (GRANT SELECT on graphrag-ts's tables to it)")


def _check_safe(conn: Any, location: PostgresLocation) -> None:
    """StoreError when the store is unsafe to read (pg_safety); a lock met is raised as it is
    (`_check_communities`: a catalog locked for a moment failed the store's opening)."""
    psycopg = driver()
    try:
        problem = unsafe_relation(conn)
    except psycopg.errors.LockNotAvailable:
        raise
    except psycopg.Error as error:
        raise query_failure(location, error) from None
    if problem is not None:
        raise StoreError(f"Not a community store: {location}: {problem}")


def _check_communities(conn: Any, location: PostgresLocation) -> None:
    """What the types cannot say: a NULL id, namespace or level (graphrag-ts forbids them; a
    table copied in by hand may not), as the SQLite store's checks at open say it. A lock met
    is raised as it is (the caller checks again, then tries again; a store opened while a
    REINDEX held it failed at once)."""
    psycopg = driver()
    try:
        row = conn.execute(
            "SELECT id, namespace IS NULL FROM rag_community_summaries WHERE id IS NULL OR namespace IS NULL "
            'OR level IS NULL ORDER BY id COLLATE "C" NULLS FIRST LIMIT 1'
        ).fetchone()
    except psycopg.errors.LockNotAvailable:
        raise
    except psycopg.Error as error:
        raise query_failure(location, error) from None
    if row is not None and row[0] is None:  # (it crashed the tree and planning)
        raise StoreError(f"Bad community store {location}: rag_community_summaries.id is NULL, not text")
    if row is not None:
        problem = "namespace is NULL, not text" if row[1] else "level is NULL, not an integer"
        raise StoreError(f"Bad community store {location}: rag_community_summaries.{problem} "
                         f"(row with id '{one_line(str(row[0]), 80)}')")
