"""A namespace's rows of one table as they are stored, in id order, a page at a time: what
`copy` reads from a SQLite store.

Pages are read by key (`id > last id`, `LIMIT`), so memory stays bounded and the store's
lock is held for one page only. Text columns are read as text (`CAST(... AS TEXT)`: a
number or a BLOB written where text belongs becomes its text; bytes that are not UTF-8
become U+FFFD, as every read of the store); `level` is read as stored (checked an integer
at open); `members` is JSON text (`members_text`). Rows whose id is NULL come first.

A PostgreSQL store streams the same columns through one server-side cursor
(`PostgresStore.iter_table_rows`, with `select_sql`): its rows already satisfy graphrag-ts's
constraints, so their order does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from graphrag_tui.store.pg_adapt import members_json
from graphrag_tui.store.schema import COLUMNS, OPTIONAL

#: Rows per page.
PAGE_ROWS = 5000
_AS_STORED = frozenset({"level", "members"})


def members_text(raw: Any) -> Any:
    """`members` as SQLite keeps it, JSON text: an array (PostgreSQL's TEXT[]) as the
    importer writes it, a BLOB decoded, anything else as it is."""
    if isinstance(raw, list):
        return members_json(raw)
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    if raw is None or isinstance(raw, str):
        return raw
    return str(raw)


def select_sql(table: str, extras: Sequence[str]) -> str:
    """The SELECT of a namespace's rows (parameter: the namespace), the id first, then the
    columns in `COLUMNS[table]` order and `extras`."""
    unknown = set(extras) - set(OPTIONAL.get(table, ()))
    if unknown:
        raise ValueError(f"unknown optional column(s) for {table}: {', '.join(sorted(unknown))}")
    columns = [c if c in _AS_STORED else f"CAST({c} AS TEXT)" for c in (*COLUMNS[table], *extras)]
    return f"SELECT id, {', '.join(columns)} FROM {table} WHERE namespace = ?"


def iter_table_rows(
    query: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]],
    table: str,
    namespace: str,
    extras: Sequence[str] = (),
    page_rows: int = PAGE_ROWS,
) -> Iterator[tuple[Any, ...]]:
    """Rows of `table` in `namespace` (values in `COLUMNS[table]` order, then `extras`),
    read through `query` (the store's one way to read)."""
    select = select_sql(table, extras)
    convert = row_converter(table, extras)
    yield from map(convert, query(f"{select} AND id IS NULL", (namespace,)))
    page = query(f"{select} AND id IS NOT NULL ORDER BY id LIMIT ?", (namespace, page_rows))
    while page:
        yield from map(convert, page)
        if len(page) < page_rows:
            return
        page = query(f"{select} AND id > ? ORDER BY id LIMIT ?", (namespace, page[-1][0], page_rows))


def row_converter(table: str, extras: Sequence[str]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """What turns a row of `select_sql` into the row `iter_table_rows` yields."""
    if table != "rag_community_summaries":
        return lambda row: row[1:]
    at = COLUMNS[table].index("members") + 1

    def convert(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*row[1:at], members_text(row[at]), *row[at + 1:])

    return convert
