"""What a PostgreSQL store must not be, checked before it is read or written: a store whose
reads would run SQL of the database's own, or that compares its text otherwise than by
code point.

- A `rag_` relation, or one that inherits from it (a read of the table reads it too), that
  is not a table (a view, a materialized view, a foreign table), or has row-level security
  for the role (a policy may run any SQL, through a domain's CHECK, a view, or
  `query_to_xml`): a view's function set `default_transaction_read_only` and
  `statement_timeout` off for the session, then wrote and slept as it was read (the
  read-only session wrote).
- A column of a domain type (or an array of one): a domain may have operators of its own,
  which the reads' `=` (its parameter's type taken from the column's) finds before
  `pg_catalog`'s; one set the session's read-only and timeout settings off, then wrote and
  slept on every row read.
- A column the app reads of a type that is not PostgreSQL's own: its owner writes its casts
  to text, which the reads call.
- An index or a partition key whose operator class has support functions or operators of
  the database's own that no superuser owns: an index scan, or partition pruning, calls them.
- An index expression or predicate, a CHECK constraint (of a table inheriting from the
  store's too), an extended statistics object or a partition key that calls such a function,
  or names an operator, a type, or a column of a type, that no superuser owns: planning a
  read evaluates their immutable calls with constant arguments, and a type's or an
  operator's commutator's functions estimate their selectivity (a range type's
  `subtype_diff`), as the reader.
- A column with a nondeterministic collation (ICU's case-insensitive ones): `harbor-city`
  and `HARBOR-CITY` were one namespace, and writing one deleted the other.

A read or writing session finds no function or operator but `pg_catalog`'s
(pg_connection.py; a writer's DDL finds `pg_catalog`'s first): a database whose search_path
named a schema of its own before `pg_catalog` made `lower()` or `=` its own. First of all, the store's schema
may hold no function, aggregate or operator of its own (owned by a role that is not a
superuser, an extension's included) named as one of PostgreSQL's for other argument types,
one of them a type graphrag-tui's statements pass: a call finds the one whose argument types
fit best, wherever it is, so `min(varchar)` or `||(varchar, bytea)` of the schema's ran in
place of PostgreSQL's `min(text)` and `||` on every read (made without a superuser, they set
the session's settings off and wrote), and would in a writing session. Until
that is known, the checks' own SQL names `pg_catalog`'s operators. These checks run as a
store is opened, and again before reads that come a while later (postgres.py): what its owner
changes in between is seen then, not in the instant between a check and a read.
"""

from __future__ import annotations

from typing import Any

from graphrag_tui.safe_text import one_line
from graphrag_tui.store.pg_connection import driver
from graphrag_tui.store.schema import COLUMNS, OPTIONAL, TABLES

#: The store's tables, those that inherit from them (`store`: a read of a table reads those
#: too), those they inherit from or are partitions of (`above`: planning a read of a
#: partition builds its condition from its parents' partition keys; one of the owner's, above
#: a store's table, ran his function as the reader), and both (`reached`).
_STORE = """
WITH RECURSIVE store(oid) AS (
    SELECT c.oid FROM pg_catalog.pg_class AS c
    WHERE c.relnamespace = CAST(pg_catalog.quote_ident(pg_catalog.current_schema()) AS regnamespace) AND c.relname = ANY(%s)
    UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits AS i JOIN store AS s ON i.inhparent = s.oid
), above(oid) AS (
    SELECT i.inhparent FROM pg_catalog.pg_inherits AS i JOIN store AS s ON i.inhrelid = s.oid
    UNION SELECT i.inhparent FROM pg_catalog.pg_inherits AS i JOIN above AS a ON i.inhrelid = a.oid
), reached(oid) AS (SELECT oid FROM store UNION SELECT oid FROM above)
"""
#: The first of the store's tables, or of the tables that inherit from them (a read of the
#: table reads those too), that runs the database's own SQL as it is read, and how.
_RUNS_SQL = _STORE + """
SELECT c.relname, CASE
    WHEN c.relkind = 'v' THEN 'is a view' WHEN c.relkind = 'm' THEN 'is a materialized view'
    WHEN c.relkind = 'f' THEN 'is a foreign table' WHEN c.relkind NOT IN ('r', 'p') THEN 'is not a table'
    ELSE 'has row-level security for this role' END
FROM store AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.oid
WHERE c.relkind NOT IN ('r', 'p') OR pg_catalog.row_security_active(c.oid)
ORDER BY c.relname LIMIT 1
"""
#: The first column whose type is a domain, or an array of one.
_DOMAIN = _STORE + """
SELECT c.relname || '.' || a.attname FROM store AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.oid
JOIN pg_catalog.pg_attribute AS a ON a.attrelid = s.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_type AS e ON e.oid = t.typelem
WHERE t.typtype = 'd' OR e.typtype = 'd'
ORDER BY 1 LIMIT 1
"""
#: The types a statement of graphrag-tui's may pass a function or an operator: its columns',
#: its parameters' and literals', and the polymorphic ones that take any of them.
_PASSED_TYPES = [f"pg_catalog.{t}" for t in (
    "text", "varchar", "bpchar", "name", '"char"', "int2", "int4", "int8", "float4", "float8", "numeric", "bool",
    "json", "jsonb", "oid", "regclass", "regnamespace", "unknown", "record", "text[]", "varchar[]", "name[]",
    "int2[]", "int4[]", "int8[]", "float4[]", "float8[]", "anyelement", "anyarray", "anynonarray", "anyenum",
    "anyrange", "anymultirange", "anycompatible", "anycompatiblearray", "anycompatiblenonarray",
    "anycompatiblerange", "anycompatiblemultirange", '"any"')]
#: The first of the schema's functions, aggregates and operators named as one of
#: `pg_catalog`'s, for other argument types, one of them a type graphrag-tui's statements
#: pass (one for the same types is never found: `pg_catalog` comes first; a literal or a
#: parameter fits any type, so `||(varchar, bytea)` beat `pg_catalog`'s `||(text, text)` on
#: a varchar column), unless a superuser owns it (a trusted extension's, pg_trgm's or
#: citext's, belong to the bootstrap superuser even when the database's owner created it;
#: a function that owner adds to his extension stays his).
_OVERLOADS = """
WITH passed(types) AS (SELECT CAST(CAST(%s AS text[]) AS regtype[]))
SELECT p.proname FROM pg_catalog.pg_proc AS p, passed
WHERE p.pronamespace OPERATOR(pg_catalog.=) CAST(pg_catalog.quote_ident(pg_catalog.current_schema()) AS regnamespace)
  AND p.pronargs OPERATOR(pg_catalog.>) CAST(0 AS int2)
  AND EXISTS (SELECT FROM pg_catalog.unnest(CAST(p.proargtypes AS oid[])) AS a (type)
              WHERE a.type OPERATOR(pg_catalog.=) ANY (CAST(passed.types AS oid[])))
  AND EXISTS (SELECT FROM pg_catalog.pg_proc AS b
              WHERE b.pronamespace OPERATOR(pg_catalog.=) CAST('pg_catalog' AS regnamespace)
                AND b.proname OPERATOR(pg_catalog.=) p.proname)
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc AS b
                  WHERE b.pronamespace OPERATOR(pg_catalog.=) CAST('pg_catalog' AS regnamespace)
                    AND b.proname OPERATOR(pg_catalog.=) p.proname
                    AND b.proargtypes OPERATOR(pg_catalog.=) p.proargtypes)
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS r
                  WHERE r.oid OPERATOR(pg_catalog.=) p.proowner AND r.rolsuper)
UNION ALL
SELECT o.oprname FROM pg_catalog.pg_operator AS o, passed
WHERE o.oprnamespace OPERATOR(pg_catalog.=) CAST(pg_catalog.quote_ident(pg_catalog.current_schema()) AS regnamespace)
  AND (o.oprleft OPERATOR(pg_catalog.=) ANY (CAST(passed.types AS oid[]))
       OR o.oprright OPERATOR(pg_catalog.=) ANY (CAST(passed.types AS oid[])))
  AND EXISTS (SELECT FROM pg_catalog.pg_operator AS b
              WHERE b.oprnamespace OPERATOR(pg_catalog.=) CAST('pg_catalog' AS regnamespace)
                AND b.oprname OPERATOR(pg_catalog.=) o.oprname)
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_operator AS b
                  WHERE b.oprnamespace OPERATOR(pg_catalog.=) CAST('pg_catalog' AS regnamespace)
                    AND b.oprname OPERATOR(pg_catalog.=) o.oprname AND b.oprleft OPERATOR(pg_catalog.=) o.oprleft
                    AND b.oprright OPERATOR(pg_catalog.=) o.oprright)
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc AS f JOIN pg_catalog.pg_roles AS r
                    ON r.oid OPERATOR(pg_catalog.=) f.proowner
                  WHERE f.oid OPERATOR(pg_catalog.=) o.oprcode AND r.rolsuper)
LIMIT 1
"""
#: The first column, among those named (the ones graphrag-tui reads or writes), whose type,
#: or its elements', is not PostgreSQL's own: its casts to and from text, which reading and
#: writing it call, may be the database's own functions (a type's owner may make them).
_FOREIGN_TYPE = _STORE + """
SELECT c.relname || '.' || a.attname FROM store AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.oid
JOIN pg_catalog.pg_attribute AS a ON a.attrelid = s.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_type AS e ON e.oid = t.typelem
WHERE a.attname = ANY (%s) AND (t.typnamespace <> CAST('pg_catalog' AS regnamespace)
                                OR e.typnamespace <> CAST('pg_catalog' AS regnamespace))
ORDER BY 1 LIMIT 1
"""
#: The first of the tables with an index or a partition key whose operator class has support
#: functions, or operators, that no superuser owns (an extension's, pgvector's HNSW index's,
#: are a superuser's; one that only a superuser may make, but whose support function a
#: table's owner wrote, runs his code).
_OWN_OPERATOR_CLASS = _STORE + """
SELECT c.relname FROM reached AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.oid
JOIN (SELECT indrelid, CAST(indclass AS oid[]) FROM pg_catalog.pg_index
      UNION ALL SELECT partrelid, CAST(partclass AS oid[]) FROM pg_catalog.pg_partitioned_table) AS k (relid, classes)
  ON k.relid = s.oid
JOIN pg_catalog.pg_opclass AS oc ON oc.oid = ANY (k.classes)
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_amproc AS p JOIN pg_catalog.pg_proc AS f ON f.oid = p.amproc
              JOIN pg_catalog.pg_roles AS r ON r.oid = f.proowner
              WHERE p.amprocfamily = oc.opcfamily AND f.pronamespace <> CAST('pg_catalog' AS regnamespace)
                AND NOT r.rolsuper)
   OR EXISTS (SELECT 1 FROM pg_catalog.pg_amop AS a JOIN pg_catalog.pg_operator AS o ON o.oid = a.amopopr
              JOIN pg_catalog.pg_proc AS f ON f.oid = o.oprcode
              JOIN pg_catalog.pg_roles AS r ON r.oid = f.proowner OR r.oid = o.oprowner
              WHERE a.amopfamily = oc.opcfamily AND o.oprnamespace <> CAST('pg_catalog' AS regnamespace)
                AND NOT r.rolsuper)
ORDER BY 1 LIMIT 1
"""
#: The first of the tables whose indexes (their expressions and predicates), CHECK constraints,
#: extended statistics or partition key call a function, or name an operator, a type, or a
#: column of a type, that no superuser owns: planning a read evaluates such an
#: expression's immutable calls with constant arguments as the reader (an index's predicate,
#: a child table's CHECK, a statistics expression ran the owner's code, which turned the
#: session's read-only setting off and read what only the reader may), a domain's CHECK runs
#: on a cast to it, and a type's own functions estimate a predicate's selectivity (a range
#: type's `subtype_diff`, for a partial index the planner weighed), as may an operator's
#: commutator's or negator's (an operator running PostgreSQL's `texteq` whose commutator ran
#: the owner's function did). Only a superuser's operators link to a superuser's. PostgreSQL
#: records these references, not those to its own objects.
_PLANNER_CODE = _STORE + """
, parts(relid, classid, objid) AS (
    SELECT s.oid, CAST('pg_catalog.pg_class' AS regclass), s.oid FROM reached AS s
    UNION ALL SELECT i.indrelid, CAST('pg_catalog.pg_class' AS regclass), i.indexrelid
    FROM pg_catalog.pg_index AS i JOIN reached AS s ON i.indrelid = s.oid
    UNION ALL SELECT k.conrelid, CAST('pg_catalog.pg_constraint' AS regclass), k.oid
    FROM pg_catalog.pg_constraint AS k JOIN reached AS s ON k.conrelid = s.oid WHERE k.contype = 'c'
    UNION ALL SELECT x.stxrelid, CAST('pg_catalog.pg_statistic_ext' AS regclass), x.oid
    FROM pg_catalog.pg_statistic_ext AS x JOIN reached AS s ON x.stxrelid = s.oid
)
SELECT c.relname FROM parts AS p
JOIN pg_catalog.pg_depend AS d ON d.classid = p.classid AND d.objid = p.objid
LEFT JOIN pg_catalog.pg_operator AS o
  ON d.refclassid = CAST('pg_catalog.pg_operator' AS regclass) AND o.oid = d.refobjid
LEFT JOIN pg_catalog.pg_proc AS f ON d.refclassid = CAST('pg_catalog.pg_proc' AS regclass) AND f.oid = d.refobjid
LEFT JOIN pg_catalog.pg_type AS t ON d.refclassid = CAST('pg_catalog.pg_type' AS regclass) AND t.oid = d.refobjid
LEFT JOIN pg_catalog.pg_attribute AS a
  ON d.refclassid = CAST('pg_catalog.pg_class' AS regclass) AND a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
LEFT JOIN pg_catalog.pg_type AS at ON at.oid = a.atttypid AND d.refobjsubid > 0
JOIN pg_catalog.pg_roles AS r ON r.oid = coalesce(f.proowner, o.oprowner, t.typowner, at.typowner)
JOIN pg_catalog.pg_class AS c ON c.oid = p.relid
WHERE NOT r.rolsuper
ORDER BY 1 LIMIT 1
"""
#: The first column whose collation is nondeterministic (PostgreSQL 12 and later have them).
_UNORDERED = _STORE + """
SELECT c.relname || '.' || a.attname FROM store AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.oid
JOIN pg_catalog.pg_attribute AS a ON a.attrelid = s.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_catalog.pg_collation AS co ON co.oid = a.attcollation
WHERE NOT co.collisdeterministic
ORDER BY 1 LIMIT 1
"""


def unsafe_relation(conn: Any) -> str | None:
    """What makes the store's tables unsafe to read, as words that follow the store's name
    (None: nothing). Its checks are sent at once (one round trip), which only a session that
    finds no operator of the store's schema may do: every session but a writer's DDL
    (pg_connection.py)."""
    tables = list(TABLES)
    columns = sorted({c for table in TABLES for c in (*COLUMNS[table], *OPTIONAL.get(table, ()))})
    checks = [(_OVERLOADS, (_PASSED_TYPES,)), (_RUNS_SQL, (tables,)), (_DOMAIN, (tables,)),
              (_FOREIGN_TYPE, (tables, columns)), (_OWN_OPERATOR_CLASS, (tables,)), (_PLANNER_CODE, (tables,))]
    overload, runs_sql, domain, column, operator_class, code = _first_rows(conn, checks)
    if overload is not None:
        return (f"its schema has a function or an operator of its own named {one_line(overload[0], 60)!r}, as one "
                "of PostgreSQL's, which the reads would run in its place")
    if runs_sql is not None:
        return f"{runs_sql[0]} {runs_sql[1]}, whose SQL would run on every read"
    if domain is not None:
        return f"{domain[0]} is of a domain type, whose own operators would run on every read"
    if column is not None:
        return f"{column[0]} is of a type of the database's own, whose casts would run on every read"
    if operator_class is not None:
        return f"{operator_class[0]} has an index or a partition key whose operator class runs the database's own code"
    if code is not None:
        return (f"{code[0]} has an index, a CHECK constraint, statistics or a partition key that calls the database's "
                "own code, which planning a read runs")
    return unordered_text(conn)


def _first_rows(conn: Any, checks: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    """Each check's first row (None: none), sent in one pipeline where libpq has them. Never
    as prepared statements: a pipeline a lock ended lost those it prepared, which the driver
    took for prepared, and the checks sent again failed (`prepared statement "_pg3_1" does
    not exist`)."""
    if not driver().Pipeline.is_supported():
        return [conn.execute(sql, params, prepare=False).fetchone() for sql, params in checks]
    with conn.pipeline():
        cursors = [conn.execute(sql, params, prepare=False) for sql, params in checks]
    return [cursor.fetchone() for cursor in cursors]


def own_overload(conn: Any) -> str | None:
    """The name of the first function, aggregate or operator of the store's schema that a
    statement's call could find in place of PostgreSQL's (None: none); checked before any
    other SQL of the checks. (Writing checks this too: its statements call the same.)"""
    row = conn.execute(_OVERLOADS, (_PASSED_TYPES,)).fetchone()
    return None if row is None else one_line(row[0], 60)


def foreign_typed_column(conn: Any, names: list[str]) -> str | None:
    """The first of the named columns of the store's tables whose type is not PostgreSQL's own,
    as `table.column` (None: none). (Writing checks the columns it writes.)"""
    row = conn.execute(_FOREIGN_TYPE, (list(TABLES), names)).fetchone()
    return None if row is None else row[0]


def own_operator_class(conn: Any) -> str | None:
    """The first of the store's tables (or of those inheriting from them) with an index or a
    partition key whose operator class has support functions or operators of the database's
    own (None: none). (Writing checks this too: each key inserted is compared with them.)"""
    row = conn.execute(_OWN_OPERATOR_CLASS, (list(TABLES),)).fetchone()
    return None if row is None else row[0]


def planner_code(conn: Any) -> str | None:
    """The first of the store's tables (or of those inheriting from them) whose indexes, CHECK
    constraints, statistics or partition key call code of the database's own (None: none).
    (Writing checks this too: its statements are planned as well.)"""
    row = conn.execute(_PLANNER_CODE, (list(TABLES),)).fetchone()
    return None if row is None else row[0]


def unordered_text(conn: Any) -> str | None:
    """A column of the store's tables that compares text otherwise than by code point, in
    words (None: none). (Writing checks this alone: its own checks cover the rest.)"""
    if conn.info.server_version >= 120000:
        row = conn.execute(_UNORDERED, (list(TABLES),)).fetchone()
        if row is not None:
            return (f"{row[0]} compares text with a nondeterministic collation; graphrag-tui compares ids and names "
                    "by code point")
    return None


def only_temporary_schema(conn: Any) -> bool:
    """Whether the session's search_path names no schema but its temporary one (`pg_temp`
    first, from the database's or the role's settings, `options` or PGOPTIONS): tables made
    there are dropped with the session, and none are read there."""
    (temporary,) = conn.execute(
        "SELECT s IS NULL OR CAST(pg_catalog.quote_ident(s) AS regnamespace) OPERATOR(pg_catalog.=) "
        "pg_catalog.pg_my_temp_schema() "
        "FROM pg_catalog.current_schema() AS s").fetchone()
    return bool(temporary)
