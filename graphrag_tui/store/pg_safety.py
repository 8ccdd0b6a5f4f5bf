"""What a PostgreSQL store must not be, checked before it is read or written: a store whose
reads would run SQL of the database's own, or that compares its text otherwise than by
code point.

- A `rag_` relation that is not a table (a view, a materialized view, a foreign table), or
  row-level security for the role whose policies call functions of the database's own: a
  view's function set `default_transaction_read_only` and `statement_timeout` off for the
  session, then wrote and slept as it was read (the read-only session wrote).
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
WITH store AS (SELECT c.oid, c.relname, c.relkind FROM pg_catalog.pg_class AS c
               WHERE c.relnamespace = CAST(pg_catalog.current_schema() AS regnamespace) AND c.relname = ANY(%s))
"""
#: The first relation that runs the database's own SQL as it is read, and how.
_RUNS_SQL = _STORE + """
SELECT relname, CASE relkind WHEN 'v' THEN 'is a view' WHEN 'm' THEN 'is a materialized view'
                            WHEN 'f' THEN 'is a foreign table' ELSE 'is not a table' END
FROM store WHERE relkind NOT IN ('r', 'p')
UNION ALL
SELECT s.relname, 'has row-level security whose policies call functions of the database''s own'
FROM store AS s
WHERE pg_catalog.row_security_active(s.oid) AND EXISTS (
    SELECT 1 FROM pg_catalog.pg_policy AS p
    JOIN pg_catalog.pg_depend AS d ON d.classid = 'pg_catalog.pg_policy'::regclass AND d.objid = p.oid
    LEFT JOIN pg_catalog.pg_proc AS f ON d.refclassid = 'pg_catalog.pg_proc'::regclass AND f.oid = d.refobjid
    LEFT JOIN pg_catalog.pg_operator AS o ON d.refclassid = 'pg_catalog.pg_operator'::regclass AND o.oid = d.refobjid
    WHERE p.polrelid = s.oid
      AND coalesce(f.pronamespace, o.oprnamespace) <> 'pg_catalog'::regnamespace)
LIMIT 1
"""
#: The first column whose collation is nondeterministic (PostgreSQL 12 and later have them).
_UNORDERED = _STORE + """
SELECT s.relname || '.' || a.attname FROM store AS s
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
    """What makes the store's tables unsafe to read or write, as words that follow the
    store's name (None: nothing)."""
    row = conn.execute(_RUNS_SQL, (list(TABLES),)).fetchone()
    if row is not None:
        return f"{row[0]} {row[1]}, whose SQL would run on every read"
    if conn.info.server_version >= 120000:
        row = conn.execute(_UNORDERED, (list(TABLES),)).fetchone()
        if row is not None:
            return (f"{row[0]} compares text with a nondeterministic collation; graphrag-tui compares ids and names "
                    "by code point")
    return None
