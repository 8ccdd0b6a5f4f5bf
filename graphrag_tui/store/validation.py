"""The checks a store passes when it is opened, and the error a bad store gives.

`rag_community_summaries` defines what every face lists and plans (namespaces, levels,
ids, the hierarchy), so its key columns are checked at open, before any face starts:
`id` and `namespace` must be UTF-8 text, `level` an integer, `parent_community_id` text or
NULL. These checks are set-based SQL over that one table (a tenth of a second on 100k
communities); the much larger claims table is not scanned. Text elsewhere that is not
valid UTF-8 is read with U+FFFD in place of the bad bytes (see `CommunityStore._query`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graphrag_tui.errors import InputError
from graphrag_tui.safe_text import one_line
from graphrag_tui.sql_tokens import sql_tokens
from graphrag_tui.store.schema import TABLES

_TABLE = "rag_community_summaries"

#: How each SQLite storage class reads in a message.
_KIND = {"null": "NULL", "integer": "an integer", "real": "a real number", "text": "text", "blob": "a BLOB"}

# The first row whose id, namespace, level or parent has the wrong type, or whose id is not
# UTF-8. Text is fetched as BLOB: decoding it is what could fail.
_BAD_ROW_SQL = f"""
SELECT {{rowid}}, CAST(id AS BLOB), typeof(id), typeof(namespace), typeof(level),
       CASE typeof(level) WHEN 'real' THEN level END,
       typeof(parent_community_id), grt_is_utf8(CAST(id AS BLOB))
FROM {_TABLE}
WHERE typeof(id) != 'text' OR typeof(namespace) != 'text' OR typeof(level) != 'integer'
   OR typeof(parent_community_id) NOT IN ('text', 'null') OR NOT grt_is_utf8(CAST(id AS BLOB))
LIMIT 1
"""


class StoreError(InputError):
    """A store that cannot be read: one line naming the file and, for a bad row, the table,
    the column and the row (its id, or its rowid when the id itself is bad)."""


def _collations(sql: str) -> list[str]:
    """The collation names a table's SQL gives after COLLATE, as SQLite reads them: past
    comments (`COLLATE/**/NOCASE` is NOCASE), never inside a string, a quoted name or a
    comment (`DEFAULT 'x COLLATE NOCASE'` names none)."""
    tokens = sql_tokens(sql)
    return [name[1:-1] if name[:1] in "\"'`[" and len(name) > 1 else name
            for word, name in zip(tokens, tokens[1:], strict=False) if word.upper() == "COLLATE"]


def check_text_order(conn: sqlite3.Connection, path: Path) -> None:
    """StoreError for a store that is not UTF-8, or whose tables compare text otherwise than
    by code point (SPEC §2): with a NOCASE parent column, one community's children were
    planned under another of the same letters, and writing a namespace deleted its
    namesakes in other cases."""
    (encoding,) = conn.execute("PRAGMA encoding").fetchone()
    if encoding != "UTF-8":  # (its ids read as bytes, which UTF-16 took for bad UTF-8)
        raise StoreError(f"Not a community store: {path} is encoded in {encoding}: graphrag-tui reads UTF-8 stores "
                         "(sqlite3 can convert it: .dump it into a new file)")
    tables = ", ".join(f"'{table}'" for table in TABLES)
    for table, sql in conn.execute(f"SELECT lower(name), sql FROM sqlite_master WHERE lower(name) IN ({tables})"):
        for name in _collations(sql or ""):
            if name.upper() != "BINARY":
                raise StoreError(f"Not a community store: {path}: {table} compares text with COLLATE "
                                 f"{one_line(name, 40)}; graphrag-tui compares ids and names by code point")


def is_utf8(raw: bytes | None) -> bool:
    if raw is None:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def lenient_text(raw: bytes) -> str:
    """A `text_factory` for stores with bad bytes: U+FFFD for what is not UTF-8."""
    return raw.decode("utf-8", errors="replace")


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    """False for a WITHOUT ROWID table or a view."""
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 0")
    except sqlite3.OperationalError:
        return False
    return True


def _where(rowid: int | None, raw_id: bytes | None, id_is_good: bool) -> str:
    if id_is_good and raw_id is not None:
        return f"row with id '{one_line(raw_id.decode('utf-8'), 80)}'"
    return f"rowid {rowid}" if rowid is not None else "a row without rowid"


def check_communities(conn: sqlite3.Connection, path: Path) -> None:
    """Raise StoreError for the first bad row of `rag_community_summaries` (module doc)."""
    conn.create_function("grt_is_utf8", 1, is_utf8, deterministic=True)
    rowid = "rowid" if _has_rowid(conn, _TABLE) else "NULL"
    row = conn.execute(_BAD_ROW_SQL.format(rowid=rowid)).fetchone()
    if row is not None:
        rowid_value, raw_id, id_type, ns_type, level_type, level, parent_type, id_utf8 = row
        id_is_good = id_type == "text" and bool(id_utf8)
        where = _where(rowid_value, raw_id, id_is_good)
        if id_type != "text":
            problem = f"id is {_KIND[id_type]}, not text"
        elif not id_utf8:
            problem = "id is not valid UTF-8"
        elif ns_type != "text":
            problem = f"namespace is {_KIND[ns_type]}, not text"
        elif level_type != "integer":
            shown = f" ({level!r})" if level_type == "real" else ""
            problem = f"level is {_KIND[level_type]}{shown}, not an integer"
        else:
            problem = f"parent_community_id is {_KIND[parent_type]}, not text"
        raise StoreError(f"Bad community store {path}: {_TABLE}.{problem} ({where})")
    # Few distinct namespaces, read through the (namespace, level) index when it exists.
    for (raw,) in conn.execute(f"SELECT DISTINCT CAST(namespace AS BLOB) FROM {_TABLE}"):
        if not is_utf8(raw):
            rowid_value, raw_id = conn.execute(
                f"SELECT {rowid}, CAST(id AS BLOB) FROM {_TABLE} WHERE CAST(namespace AS BLOB) = ? LIMIT 1",
                (raw,),
            ).fetchone()
            where = _where(rowid_value, raw_id, True)
            raise StoreError(f"Bad community store {path}: {_TABLE}.namespace is not valid UTF-8 ({where})")
