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
- An index whose operator class has support functions or operators of the database's own:
  an index scan calls them (one, made by a superuser once, can be used by any table owner).
- A column with a nondeterministic collation (ICU's case-insensitive ones): `harbor-city`
  and `HARBOR-CITY` were one namespace, and writing one deleted the other.

The built-in functions and operators are found first in the session (`pin_catalog`): a
database whose search_path names a schema of its own before `pg_catalog` made `lower()` or
`=` its own.
"""

from __future__ import annotations

from typing import Any

from graphrag_tui.store.schema import TABLES

_STORE = """
WITH RECURSIVE store(oid) AS (
    SELECT c.oid FROM pg_catalog.pg_class AS c
    WHERE c.relnamespace = CAST(pg_catalog.current_schema() AS regnamespace) AND c.relname = ANY(%s)
    UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits AS i JOIN store AS s ON i.inhparent = s.oid
)
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
#: The first of the tables with an index whose operator class runs functions of the database's own.
_OWN_OPERATOR_CLASS = _STORE + """
SELECT c.relname FROM store AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.oid
JOIN pg_catalog.pg_index AS i ON i.indrelid = s.oid
JOIN pg_catalog.pg_opclass AS oc ON oc.oid = ANY (CAST(i.indclass AS oid[]))
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_amproc AS p JOIN pg_catalog.pg_proc AS f ON f.oid = p.amproc
              WHERE p.amprocfamily = oc.opcfamily AND f.pronamespace <> CAST('pg_catalog' AS regnamespace))
   OR EXISTS (SELECT 1 FROM pg_catalog.pg_amop AS a JOIN pg_catalog.pg_operator AS o ON o.oid = a.amopopr
              JOIN pg_catalog.pg_proc AS f ON f.oid = o.oprcode
              WHERE a.amopfamily = oc.opcfamily AND f.pronamespace <> CAST('pg_catalog' AS regnamespace))
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


def pin_catalog(conn: Any) -> None:
    """The session's search path: its current schema (where the store's tables are looked
    for) alone, so that `pg_catalog`, which a path that does not name it searches first,
    holds the functions and operators every name finds."""
    conn.execute("SELECT pg_catalog.set_config('search_path', pg_catalog.quote_ident(s), false) "
                 "FROM pg_catalog.current_schema() AS s WHERE s IS NOT NULL")


def unsafe_relation(conn: Any) -> str | None:
    """What makes the store's tables unsafe to read, as words that follow the store's name
    (None: nothing)."""
    row = conn.execute(_RUNS_SQL, (list(TABLES),)).fetchone()
    if row is not None:
        return f"{row[0]} {row[1]}, whose SQL would run on every read"
    row = conn.execute(_DOMAIN, (list(TABLES),)).fetchone()
    if row is not None:
        return f"{row[0]} is of a domain type, whose own operators would run on every read"
    table = own_operator_class(conn)
    if table is not None:
        return f"{table} has an index whose operator class runs the database's own code on every read"
    return unordered_text(conn)


def own_operator_class(conn: Any) -> str | None:
    """The first of the store's tables (or of those inheriting from them) with an index whose
    operator class has support functions or operators of the database's own (None: none).
    (Writing checks this too: each key inserted is compared with them.)"""
    row = conn.execute(_OWN_OPERATOR_CLASS, (list(TABLES),)).fetchone()
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
