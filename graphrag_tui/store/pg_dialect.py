"""The store's reads, written once in SQLite's SQL, as PostgreSQL runs them.

The drill-down, provenance and exploring reads are portable SQL but for a few SQLite
idioms. `to_postgres` rewrites exactly those, and refuses any other SQLite-only construct
(a PRAGMA, a BLOB cast, SQLite's JSON aggregates), so that a read added later in SQLite's
dialect fails loudly in the PostgreSQL tests instead of reading something else:

| SQLite | PostgreSQL |
|---|---|
| `SELECT value FROM json_each(X)` (ids passed as a JSON array) | `SELECT json_array_elements_text(CAST(X AS json))` |
| `COLLATE BINARY` (code point order) | `COLLATE "C"` |
| `typeof(col) = 'text'` | `col IS NOT NULL` (a column's type is fixed, and checked at open) |
| `a IS NOT ?` | `a IS DISTINCT FROM ?` |
| `substr(x, -length(y))` | `right(x, length(y))` |
| `LIKE` (ASCII letters without case) | `ILIKE` (the matches are scored again in Python) |
| `?`, `:name` | `%s`, `%(name)s` |

The planning read (`map_parts`) and the selection of communities have PostgreSQL queries of
their own (`postgres.py`): they are where the time goes.
"""

from __future__ import annotations

import re
from functools import cache

_REFUSED = re.compile(r"(?i)\bPRAGMA\b|AS BLOB|json_group_|group_concat|\btypeof\(|json_valid|\btemp\.")
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"SELECT value FROM json_each\((\?|:\w+)\)"), r"SELECT json_array_elements_text(CAST(\1 AS json))"),
    (re.compile(r"COLLATE BINARY"), 'COLLATE "C"'),
    (re.compile(r"typeof\(([\w.]+)\) = 'text'"), r"\1 IS NOT NULL"),
    (re.compile(r"\bIS NOT \?"), "IS DISTINCT FROM ?"),
    (re.compile(r"substr\(([\w.]+), -length\(([^()]*)\)\)"), r"right(\1, length(\2))"),
    (re.compile(r"\bLIKE\b"), "ILIKE"),
)
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class UnportableSQL(ValueError):
    """A read in SQLite's dialect that `to_postgres` does not know how to rewrite."""


@cache
def to_postgres(sql: str) -> str:
    """`sql` (SQLite's dialect, `?` or `:name` parameters) as psycopg runs it on PostgreSQL."""
    for pattern, replacement in _RULES:
        sql = pattern.sub(replacement, sql)
    refused = _REFUSED.search(sql)
    if refused:
        raise UnportableSQL(f"SQLite-only SQL in a PostgreSQL read: {refused.group(0)!r}")
    sql = sql.replace("%", "%%").replace("?", "%s")
    return _NAMED.sub(r"%(\1)s", sql)
