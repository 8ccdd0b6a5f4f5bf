"""Writing namespaces into graphrag-ts's PostgreSQL tables in one transaction: what
`import-graphrag` and `copy` do to a PostgreSQL store.

The tables are graphrag-ts's own (`graphrag_ts_schema.sql`), created when the database has
none of them. Each table's rows go through `pg_adapt` (row by row), are streamed with
COPY into a temporary table, and the rules that need the other rows are applied there in
SQL before one INSERT ... SELECT moves them in:

- a row whose id, or whose key graphrag-ts makes unique (an entity's name, a claim's
  subject and description hash), repeats an earlier row's (in the order read: id order
  for `copy`) is skipped: the first is kept,
  as graphrag-ts's own `createMany(skipDuplicates)` does;
- a child chunk whose document is not there, or a claim whose subject entity is not
  there, is skipped (graphrag-ts deletes those with their parent: ON DELETE CASCADE);
- any other reference to a row that is not there becomes NULL (ON DELETE SET NULL).

Every skip and change is recorded in the `Adaptations`; with `strict` the first one
refuses and nothing is written. Nothing is committed before `commit`; leaving the `with`
block without it rolls everything back. Once `interrupted()` turns True before the commit
has begun, the statement the server is running is cancelled (a write waiting for a lock
another session holds would wait until it is released), and the write ends with
WriteInterrupted.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from graphrag_tui.store.location import PostgresLocation
from graphrag_tui.store.namespace_write import WriteInterrupted
from graphrag_tui.store.pg_adapt import Adaptations, Change, adapt_row, pg_columns
from graphrag_tui.store.pg_connection import connect, driver, driver_text, schema_in_path, server_lost
from graphrag_tui.store.pg_safety import (
    foreign_typed_column,
    only_temporary_schema,
    own_operator_class,
    own_overload,
    planner_code,
    unordered_text,
)
from graphrag_tui.store.pg_schema import create_graphrag_ts_schema
from graphrag_tui.store.postgres import column_types, wrong_column_type
from graphrag_tui.store.schema import OPTIONAL, OPTIONAL_COLUMNS, TABLES
from graphrag_tui.store.validation import StoreError

#: Table -> the keys graphrag-ts makes unique within the table (besides the namespace).
UNIQUE_KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "rag_parents": (("id",),),
    "rag_children": (("id",),),
    "rag_entities": (("id",), ("name",)),
    "rag_community_summaries": (("id",),),
    "rag_claims": (("id",), ("subject_entity_id", "description_hash")),
}
#: (table, column) -> the table it references, for references whose row must be there:
#: the row is skipped when it is not.
REQUIRED_REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "rag_children": (("parent_id", "rag_parents"),),
    "rag_claims": (("subject_entity_id", "rag_entities"),),
}
#: References that become NULL when their row is not there.
OPTIONAL_REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "rag_community_summaries": (("parent_community_id", "rag_community_summaries"),),
    "rag_claims": (
        ("object_entity_id", "rag_entities"),
        ("source_parent_id", "rag_parents"),
        ("source_chunk_id", "rag_children"),
        ("community_summary_id", "rag_community_summaries"),
    ),
}
#: The temporary table's column types where not text.
_STAGE_TYPES = {"level": "integer", "members": "text[]", "rank": "real"}
_STAGE = "grt_stage"
#: The tables a write reaches: the store's, those that inherit from them (a DELETE reaches
#: those too) and those whose foreign keys a DELETE cascades into (graphrag-ts's
#: rag_graph_edges).
_WRITTEN = """
WITH RECURSIVE written(oid) AS (
    SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relname = ANY(%s)
    UNION SELECT r.child FROM written w JOIN (
        SELECT inhparent AS parent, inhrelid AS child FROM pg_inherits
        UNION ALL SELECT confrelid, conrelid FROM pg_constraint WHERE contype = 'f' AND confdeltype IN ('c', 'n', 'd')
    ) AS r ON r.parent = w.oid
)
"""
#: Why a write would not simply put or delete the rows: a view or a foreign table (the rows go
#: elsewhere), a trigger or a rule (a BEFORE INSERT trigger that returns NULL, or DO INSTEAD
#: NOTHING, dropped every row after the namespace was deleted), row-level security that
#: applies to the role (a DELETE leaves the rows it hides). Foreign keys and deferred unique
#: checks are triggers of PostgreSQL's own (`tgisinternal`, running its functions); before
#: PostgreSQL 15, a partition's copy of its parent's trigger is marked internal too.
_TRIGGERED = """EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_proc f ON f.oid = t.tgfoid
             WHERE t.tgrelid = c.oid AND NOT (t.tgisinternal AND f.pronamespace = 'pg_catalog'::regnamespace
                                              AND (f.proname LIKE 'RI\\_FKey\\_%%' OR f.proname = 'unique_key_recheck')))"""
_WRITES_ELSEWHERE = _WRITTEN + f"""
SELECT c.relname, CASE
    WHEN c.relkind NOT IN ('r', 'p') THEN 'is not a table'
    WHEN {_TRIGGERED} THEN 'has triggers'
    WHEN EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = c.oid) THEN 'has rules'
    ELSE 'has row-level security'
END
FROM written w JOIN pg_class c ON c.oid = w.oid
WHERE c.relkind NOT IN ('r', 'p')
   OR {_TRIGGERED}
   OR EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = c.oid)
   OR row_security_active(c.oid)
ORDER BY c.relname
LIMIT 1
"""
#: What would run the database's own code as rows are written: a CHECK constraint, a column
#: default or an index that calls a function or an operator of its own (PostgreSQL records
#: those, not its own ones: `_CALLS` reads the expressions for those; a cast to a domain,
#: whose CHECK runs, is recorded as a reference to its type), a partition key whose
#: expression does (each row is routed by it), and a column of a domain (its CHECK runs as
#: well). (An index or a partition key whose operator class does: `own_operator_class`.)
_RUNS_OWN_CODE = _WRITTEN + """
, parts(relid, classid, objid, what) AS (
    SELECT conrelid, 'pg_constraint'::regclass, oid, 'a CHECK constraint' FROM pg_constraint
    WHERE contype = 'c' AND conrelid IN (SELECT oid FROM written)
    UNION ALL SELECT adrelid, 'pg_attrdef'::regclass, oid, 'a column default' FROM pg_attrdef
    WHERE adrelid IN (SELECT oid FROM written)
    UNION ALL SELECT indrelid, 'pg_class'::regclass, indexrelid, 'an index' FROM pg_index
    WHERE indrelid IN (SELECT oid FROM written)
    UNION ALL SELECT partrelid, 'pg_class'::regclass, partrelid, 'a partition key' FROM pg_partitioned_table
    WHERE partrelid IN (SELECT oid FROM written)
)
SELECT c.relname, p.what FROM parts p
JOIN pg_depend d ON d.classid = p.classid AND d.objid = p.objid
LEFT JOIN pg_operator o ON d.refclassid = 'pg_operator'::regclass AND o.oid = d.refobjid
LEFT JOIN pg_proc f ON f.oid = CASE WHEN d.refclassid = 'pg_proc'::regclass THEN d.refobjid ELSE o.oprcode END
LEFT JOIN pg_type ty ON d.refclassid = 'pg_type'::regclass AND ty.oid = d.refobjid
JOIN pg_class c ON c.oid = p.relid
WHERE f.pronamespace <> 'pg_catalog'::regnamespace OR o.oprnamespace <> 'pg_catalog'::regnamespace
   OR ty.typtype = 'd'
UNION ALL
SELECT c.relname, 'a column of a domain type' FROM written w JOIN pg_class c ON c.oid = w.oid
JOIN pg_attribute a ON a.attrelid = w.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
WHERE t.typtype = 'd'
LIMIT 1
"""
#: A foreign key into the tables written whose check (each DELETE runs it, whatever the key's
#: ON DELETE) would run the database's own code: a referencing column of a type not
#: PostgreSQL's own (its casts are its owner's), or an equality operator of the database's.
_FOREIGN_KEY_CASTS = _WRITTEN + """
SELECT c.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
WHERE k.contype = 'f' AND k.confrelid IN (SELECT oid FROM written)
  AND (EXISTS (SELECT FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
               WHERE a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
                 AND (t.typnamespace <> 'pg_catalog'::regnamespace OR t.typtype = 'd'))
       OR EXISTS (SELECT FROM pg_operator o
                  WHERE o.oid = ANY (k.conpfeqop || k.conppeqop || k.conffeqop)
                    AND o.oprnamespace <> 'pg_catalog'::regnamespace))
ORDER BY 1 LIMIT 1
"""
#: The CHECK constraints and column defaults of the tables written, as PostgreSQL prints them.
_EXPRESSIONS = _WRITTEN + """
SELECT c.relname, 'a CHECK constraint', pg_get_constraintdef(k.oid) FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid WHERE k.contype = 'c' AND k.conrelid IN (SELECT oid FROM written)
UNION ALL
SELECT c.relname, 'a column default', pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
JOIN pg_class c ON c.oid = d.adrelid WHERE d.adrelid IN (SELECT oid FROM written)
"""
#: A function called in such an expression (one of PostgreSQL's may run any SQL: `query_to_xml`).
_CALL = re.compile(r"\b(\w+)\s*\(")
#: The calls a default may make: the clocks, a sequence's next value, a random id.
_DEFAULT_CALLS = frozenset({"now", "clock_timestamp", "statement_timestamp", "transaction_timestamp", "nextval",
                            "gen_random_uuid"})
#: Seconds between two looks at `interrupted` while the write goes on.
INTERRUPT_POLL_S = 0.1
#: Seconds a write waits for the locks on the tables it writes (another session's write holds
#: them a moment) before it is refused.
WRITE_LOCK_WAIT_S = 10
#: Seconds a cancel request may take to reach the server.
CANCEL_TIMEOUT_S = 5.0


class PgWriter:
    """One write transaction on a PostgreSQL store (see the module's docstring)."""

    def __init__(self, conn: Any, location: PostgresLocation, report: Adaptations,
                 interrupted: Callable[[], bool]) -> None:
        self._conn = conn
        self.location = location
        self.report = report
        self._interrupted = interrupted
        self._namespace = ""
        self.created_schema = False
        self.committed = False
        #: Set once the commit has begun: an interrupt no longer cancels anything.
        self._committing = False

    @classmethod
    def begin(cls, location: PostgresLocation, report: Adaptations, *,
              interrupted: Callable[[], bool] = lambda: False) -> PgWriter:
        conn = connect(location, read_only=False)
        conn.autocommit = False  # one transaction, begun by the first statement
        writer = cls(conn, location, report, interrupted)
        threading.Thread(target=writer._cancel_when_interrupted, name="pg-write-interrupt", daemon=True).start()
        with writer._errors():
            writer._ensure_schema()
        return writer

    def _cancel_when_interrupted(self) -> None:
        """Beside the write, until it ends: cancels the server's statement once interrupted
        (`commit` looks at `interrupted` after it marks the commit begun, so a commit is
        never both cancelled and reported)."""
        while (conn := self._conn) is not None and not self._committing:
            if self._interrupted():
                with contextlib.suppress(Exception):  # a server that does not answer: the write's own timeout ends it
                    conn.cancel_safe(timeout=CANCEL_TIMEOUT_S)
                return
            time.sleep(INTERRUPT_POLL_S)

    @property
    def new_store(self) -> bool:
        """Whether this write creates graphrag-ts's tables."""
        return self.created_schema

    def __enter__(self) -> PgWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.committed:
            self._abandon()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = driver()
        try:
            yield
        except psycopg.Error as error:
            self._abandon()
            if self._interrupted():  # (the statement was cancelled)
                raise WriteInterrupted from None
            raise StoreError(self._describe(error)) from None
        except BaseException:
            self._abandon()
            raise

    def _describe(self, error: Any) -> str:
        psycopg = driver()
        text = driver_text(error)
        if isinstance(error, psycopg.errors.UniqueViolation):
            return (f"cannot write into {self.location}: {text} (an ID of namespace "
                    f"'{self._namespace}' is already used by another namespace, or comes twice in its rows); "
                    "nothing was written")
        if isinstance(error, psycopg.errors.LockNotAvailable):
            return (f"cannot write into {self.location}: another session holds a lock on its tables (a VACUUM, an "
                    f"ANALYZE, an index being built or a change of a table; waited {WRITE_LOCK_WAIT_S} s): try again "
                    "later; nothing was written")
        if isinstance(error, psycopg.errors.InsufficientPrivilege):
            return f"cannot write into {self.location}: {text} (the role needs to write these tables); nothing was written"
        if server_lost(error):
            return f"Lost the database server of store {self.location}: {text}; nothing was written"
        return f"cannot write into {self.location}: {text}; nothing was written"

    def _abandon(self) -> None:
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        with contextlib.suppress(Exception):
            conn.rollback()
        with contextlib.suppress(Exception):
            conn.close()

    # -- the schema ----------------------------------------------------------------------

    def _ensure_schema(self) -> None:
        """graphrag-ts's tables when the database has none of them; a database with some
        of them only, or without a column the store needs, is refused."""
        overload = own_overload(self._conn)  # (first: the other checks' SQL would call it)
        if overload is not None:
            raise StoreError(f"cannot write into {self.location}: its schema has a function or an operator of its own "
                             f"named {overload!r}, as one of PostgreSQL's, which the writes would run in its place "
                             "(write into another database); nothing was written")
        if only_temporary_schema(self._conn):  # (the tables were made there, and dropped: a copy reported rows it lost)
            raise StoreError(f"cannot write into {self.location}: its search_path names no schema to write in but "
                             "the session's temporary one (pg_temp), which is dropped when the copy ends; nothing was "
                             "written")
        present = {
            name for (name,) in self._conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = ANY(%s)", (list(TABLES),))
        }
        if not present:
            with schema_in_path(self._conn):
                create_graphrag_ts_schema(self._conn)
            self.created_schema = True
            return
        missing = [table for table in TABLES if table not in present]
        if missing:
            raise StoreError(f"cannot write into {self.location}: it has some of graphrag-ts's tables but not "
                             f"{', '.join(missing)}; nothing was written")
        self._lock_tables()
        for table in TABLES:
            columns = self._columns(table)
            lacking = [c for c in pg_columns(table) if c not in columns]
            if lacking:
                raise StoreError(f"cannot write into {self.location}: table {table} has no column(s) "
                                 f"{', '.join(lacking)} (graphrag-ts's migrations are not all applied); "
                                 "nothing was written")
        wrong = wrong_column_type(*column_types(self._conn))  # (what it wrote would not read back)
        if wrong is not None:
            raise StoreError(f"cannot write into {self.location}: {wrong}; nothing was written")
        for table, problem in self._conn.execute(_WRITES_ELSEWHERE, (list(TABLES),)):
            raise StoreError(f"cannot write into {self.location}: {table} {problem}, which would change what is "
                             "written or deleted (write into another database); nothing was written")
        found = list(self._conn.execute(_RUNS_OWN_CODE, (list(TABLES),)))
        found += [(table, part) for table, part, expression in self._conn.execute(_EXPRESSIONS, (list(TABLES),))
                  if set(_CALL.findall(expression)) - (_DEFAULT_CALLS if part == "a column default" else set())]
        indexed = own_operator_class(self._conn)  # (its support function compares each key inserted)
        found += [] if indexed is None else [(indexed, "an index or a partition key")]
        planned = planner_code(self._conn)  # (statistics too: each statement is planned)
        found += [] if planned is None else [(planned, "an index, a CHECK constraint, statistics or a partition key")]
        for table, part in found[:1]:
            raise StoreError(f"cannot write into {self.location}: {table} has {part} that runs the database's own "
                             "code as rows are written (write into another database); nothing was written")
        keyed = self._conn.execute(_FOREIGN_KEY_CASTS, (list(TABLES),)).fetchone()
        if keyed is not None:
            raise StoreError(f"cannot write into {self.location}: {keyed[0]} has a foreign key into the store's tables "
                             "whose check runs the database's own code as rows are deleted (write into another "
                             "database); nothing was written")
        written = sorted({c for table in TABLES for c in (*pg_columns(table), *OPTIONAL.get(table, ()))})
        foreign = foreign_typed_column(self._conn, written)  # (its casts from text may be the database's own)
        if foreign is not None:
            raise StoreError(f"cannot write into {self.location}: {foreign} is of a type of the database's own, whose "
                             "casts would run as rows are written (write into another database); nothing was written")
        unordered = unordered_text(self._conn)  # (a nondeterministic collation deleted another namespace)
        if unordered is not None:
            raise StoreError(f"cannot write into {self.location}: {unordered}; nothing was written")

    def _lock_tables(self) -> None:
        """The store's tables (and those inheriting from them) locked until the write ends,
        before they are checked, so that what the checks passed stays: SHARE UPDATE EXCLUSIVE
        lets no index, trigger, rule, policy, constraint, statistics, child table or partition be
        added (their rows stay writable by others). The owner's trigger, made while a write
        waited for his lock after the checks, ran as the writer. A role that may not take it
        (no UPDATE, DELETE or TRUNCATE on a table: it could not replace a namespace either) is
        refused: ROW EXCLUSIVE, which it may take, let the owner add statistics whose
        expression then ran as the writer."""
        self._conn.execute(f"SET LOCAL lock_timeout = {WRITE_LOCK_WAIT_S * 1000}")
        try:
            self._conn.execute(f"LOCK TABLE {', '.join(TABLES)} IN SHARE UPDATE EXCLUSIVE MODE")
        except driver().errors.InsufficientPrivilege:
            raise StoreError(f"cannot write into {self.location}: the role may not lock its tables against changes "
                             "while it writes (it needs DELETE on graphrag-ts's tables); nothing was written") from None
        self._conn.execute("SET LOCAL lock_timeout TO DEFAULT")

    def _columns(self, table: str) -> set[str]:
        return {name for (name,) in self._conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s", (table,))}

    def add_optional(self, optional: dict[str, Sequence[str]]) -> None:
        """Add the store's optional columns (`schema.OPTIONAL`: nullable TEXT, a report's
        rank REAL; graphrag-ts ignores them) that the rows have values for and the table lacks."""
        with self._errors():
            for table, columns in optional.items():
                present = self._columns(table)
                for column in columns:
                    if column not in OPTIONAL.get(table, ()):
                        raise ValueError(f"unknown optional column {table}.{column}")
                    if column not in present:
                        kind = "REAL" if dict(OPTIONAL_COLUMNS[table])[column] == "REAL" else "TEXT"
                        self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    # -- namespaces ----------------------------------------------------------------------

    def namespaces(self) -> set[str]:
        """Every namespace that has rows in any of the store's tables."""
        with self._errors():
            union = " UNION ".join(f"SELECT DISTINCT namespace FROM {table}" for table in TABLES)
            return {row[0] for row in self._conn.execute(union)}

    def delete_namespace(self, namespace: str) -> int:
        """Delete every row of `namespace` from the store's tables (claims first; graphrag-ts's
        own foreign keys then remove its `rag_graph_edges`); returns how many rows."""
        self._namespace = namespace
        with self._errors():
            return sum(self._conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (namespace,)).rowcount
                       for table in reversed(TABLES))

    def write_table(self, table: str, namespace: str, rows: Iterable[Sequence[Any]],
                    extras: tuple[str, ...] = ()) -> int:
        """Adapt and write `rows` (`COLUMNS[table]` order, then `extras`) into `table`;
        returns how many rows were written. Tables are written in `schema.TABLES` order,
        so that what a row references is already there."""
        self._namespace = namespace
        columns = pg_columns(table, extras)
        with self._errors():
            self._stage(table, columns, rows, extras)
            for key in UNIQUE_KEYS[table]:
                self._skip_repeats(table, key)
            for column, target in REQUIRED_REFERENCES.get(table, ()):
                self._skip_dangling(table, column, target)
            for column, target in OPTIONAL_REFERENCES.get(table, ()):
                self._unlink_dangling(table, column, target)
            names = ", ".join(columns)
            # the order no longer matters: the rows that repeat a key are already gone
            written = self._conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {_STAGE}").rowcount
            self._conn.execute(f"DROP TABLE {_STAGE}")
            if self._interrupted():
                raise WriteInterrupted
            return int(written)

    def _stage(self, table: str, columns: tuple[str, ...], rows: Iterable[Sequence[Any]],
               extras: tuple[str, ...]) -> None:
        definitions = ", ".join(f"{c} {_STAGE_TYPES.get(c, 'text')}" for c in columns)
        self._conn.execute(f"CREATE TEMP TABLE {_STAGE} (seq bigint, {definitions}) ON COMMIT DROP")
        with self._conn.cursor() as cur, cur.copy(f"COPY {_STAGE} (seq, {', '.join(columns)}) FROM STDIN") as copy:
            for seq, row in enumerate(rows):
                adapted = adapt_row(table, row, self.report, extras)
                if adapted is not None:
                    copy.write_row((seq, *adapted))
                if seq % 10_000 == 0 and self._interrupted():
                    raise WriteInterrupted

    def _skip_repeats(self, table: str, key: tuple[str, ...]) -> None:
        partition = ", ".join(key)
        skipped = self._conn.execute(
            f"WITH ranked AS (SELECT seq, first_value(id) OVER w AS first_id, row_number() OVER w AS n "
            f"FROM {_STAGE} WINDOW w AS (PARTITION BY {partition} ORDER BY seq)) "
            f"DELETE FROM {_STAGE} s USING ranked r WHERE s.seq = r.seq AND r.n > 1 "
            "RETURNING s.seq, s.id, r.first_id").fetchall()
        what = "id" if key == ("id",) else f"(namespace, {partition})"
        for _, row_id, first_id in sorted(skipped):
            self.report.add(Change(table, row_id, "skipped",
                                   f"skipped: same {what} as {first_id}, which is kept"))

    def _skip_dangling(self, table: str, column: str, target: str) -> None:
        skipped = self._conn.execute(
            f"DELETE FROM {_STAGE} s WHERE NOT EXISTS (SELECT 1 FROM {target} t WHERE t.id = s.{column}) "
            f"RETURNING s.seq, s.id, s.{column}").fetchall()
        for _, row_id, missing in sorted(skipped):
            self.report.add(Change(table, row_id, "skipped",
                                   f"skipped: its {column} {missing} is not in {target}"))

    def _unlink_dangling(self, table: str, column: str, target: str) -> None:
        within = f" AND NOT EXISTS (SELECT 1 FROM {_STAGE} w WHERE w.id = s.{column})" if target == table else ""
        unlinked = self._conn.execute(
            f"WITH gone AS (SELECT seq, {column} AS missing FROM {_STAGE} s WHERE s.{column} IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM {target} t WHERE t.id = s.{column}){within}) "
            f"UPDATE {_STAGE} s SET {column} = NULL FROM gone WHERE s.seq = gone.seq "
            "RETURNING s.seq, s.id, gone.missing").fetchall()
        for _, row_id, missing in sorted(unlinked):
            self.report.add(Change(table, row_id, "unlinked",
                                   f"{column} {missing} is not in {target}: became NULL"))

    def commit(self) -> None:
        self._committing = True
        with self._errors():
            if self._interrupted():
                raise WriteInterrupted
            self._conn.commit()
        self.committed = True
        self._conn.close()
        self._conn = None
