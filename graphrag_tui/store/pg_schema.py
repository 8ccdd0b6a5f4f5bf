"""graphrag-ts's PostgreSQL schema, from `graphrag_ts_schema.sql` (package data).

The file has a `core` block (the tables, indexes and foreign keys) and a `vector` block
(pgvector's columns and index). `create_graphrag_ts_schema` runs the core block, then the
vector block only where `CREATE EXTENSION vector` succeeds, inside a savepoint, so that a
server without pgvector still gets every table the app reads.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

_BLOCK_MARK = "-- block:"


@cache
def schema_blocks() -> dict[str, tuple[str, ...]]:
    """Block name -> its statements, in file order (without their final semicolons)."""
    text = resources.files("graphrag_tui.store").joinpath("graphrag_ts_schema.sql").read_text(encoding="utf-8")
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(_BLOCK_MARK):
            current = blocks.setdefault(stripped[len(_BLOCK_MARK):].strip(), [])
            continue
        if current is None or not stripped or (stripped.startswith("--") and not pending):
            continue
        pending.append(line)
        if stripped.endswith(";"):
            current.append("\n".join(pending).strip().rstrip(";"))
            pending = []
    return {name: tuple(statements) for name, statements in blocks.items()}


def create_graphrag_ts_schema(conn: Any) -> bool:
    """Create graphrag-ts's tables on a psycopg connection (in its current transaction).
    Returns whether the pgvector columns were created too."""
    blocks = schema_blocks()
    with conn.cursor() as cur:
        for statement in blocks["core"]:
            cur.execute(statement)
    try:
        with conn.transaction():  # a savepoint: a server without pgvector keeps the core tables
            with conn.cursor() as cur:
                for statement in blocks["vector"]:
                    cur.execute(statement)
    except Exception as error:  # noqa: BLE001 - any failure here means "no pgvector"
        if type(error).__module__.split(".")[0] != "psycopg":
            raise
        return False
    return True
