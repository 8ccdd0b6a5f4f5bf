"""Hostile community stores: one small SQLite file per kind of damage, written with plain SQL.

Each builder writes the same valid store (`base_store`: namespace "ns", a root with two
leaves, claims on both leaves) and then damages one row. The tables are created without
their NOT NULL constraints, as a store made elsewhere may be.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from graphrag_tui.store.schema import SCHEMA_SQL

LAX_SCHEMA = SCHEMA_SQL.replace(" NOT NULL", "")

# Bytes that are not UTF-8 (a lone continuation byte and an invalid lead byte), stored as TEXT.
BAD_UTF8 = "CAST(x'41ff80' AS TEXT)"


def base_store(path: Path, *, wal: bool = False) -> Path:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(LAX_SCHEMA)
    with conn:
        conn.executescript(
            """
            INSERT INTO rag_parents VALUES ('d/1', 'ns', 'Harbour report', 'full text');
            INSERT INTO rag_children VALUES ('k/1', 'ns', 'd/1', 'The bridge budget was approved.');
            INSERT INTO rag_entities VALUES ('e/1', 'ns', 'Port Authority', NULL);
            INSERT INTO rag_community_summaries VALUES
                ('ns/0', 'ns', 'Harbour', 'The harbour and its trade.', 0, NULL, NULL),
                ('ns/1', 'ns', 'Bridge', 'The bridge is funded by the port authority.', 1, 'ns/0', NULL),
                ('ns/2', 'ns', 'Fleet', 'Fishing fleets land their catch at dawn.', 1, 'ns/0', NULL);
            INSERT INTO rag_claims VALUES
                ('c/1', 'ns', 'e/1', NULL, 'pays for the bridge', 'd/1', 'k/1', 'ns/1'),
                ('c/2', 'ns', 'e/1', NULL, 'meets every month', NULL, NULL, 'ns/2');
            """
        )
    conn.close()
    return path


def _damaged(sql: str) -> Callable[[Path], Path]:
    def build(path: Path) -> Path:
        base_store(path)
        conn = sqlite3.connect(path)
        with conn:
            conn.execute(sql)
        conn.close()
        return path

    return build


level_null = _damaged("UPDATE rag_community_summaries SET level = NULL WHERE id = 'ns/2'")
level_text = _damaged("UPDATE rag_community_summaries SET level = 'one' WHERE id = 'ns/2'")
level_blob = _damaged("UPDATE rag_community_summaries SET level = x'01' WHERE id = 'ns/2'")
level_real = _damaged("UPDATE rag_community_summaries SET level = 1.5 WHERE id = 'ns/2'")
community_id_null = _damaged("UPDATE rag_community_summaries SET id = NULL WHERE id = 'ns/2'")
community_id_bad_utf8 = _damaged(f"UPDATE rag_community_summaries SET id = {BAD_UTF8} WHERE id = 'ns/2'")
namespace_null = _damaged("UPDATE rag_community_summaries SET namespace = NULL WHERE id = 'ns/2'")
namespace_bad_utf8 = _damaged(f"UPDATE rag_community_summaries SET namespace = {BAD_UTF8} WHERE id = 'ns/2'")
parent_blob = _damaged("UPDATE rag_community_summaries SET parent_community_id = x'6e732f30' WHERE id = 'ns/2'")
summary_bad_utf8 = _damaged(f"UPDATE rag_community_summaries SET summary_content = {BAD_UTF8} WHERE id = 'ns/2'")
claim_bad_utf8 = _damaged(f"UPDATE rag_claims SET description = {BAD_UTF8} WHERE id = 'c/2'")
claim_namespace_null = _damaged("UPDATE rag_claims SET namespace = NULL WHERE id = 'c/2'")


def wal_without_shm(path: Path) -> Path:
    """A WAL-mode store whose `-wal` holds committed rows not yet in the main file, and no
    `-shm`: what a writer killed mid-session (or a copy of its files) leaves."""
    base_store(path, wal=True)
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    with writer:
        writer.execute(
            "INSERT INTO rag_community_summaries VALUES "
            "('ns/3', 'ns', 'Market', 'The winter festival fills the old market.', 1, 'ns/0', NULL)"
        )
    # Keep the files as they are while the writer is still connected, as a crash would.
    files = {suffix: path.with_name(path.name + suffix).read_bytes() for suffix in ("", "-wal")}
    writer.close()
    for suffix, data in files.items():
        path.with_name(path.name + suffix).write_bytes(data)
    path.with_name(path.name + "-shm").unlink(missing_ok=True)
    return path

# Values of the wrong type where text is shown (x'ff41' is a BLOB that is not UTF-8).
chunk_content_blob = _damaged("UPDATE rag_children SET content = x'ff41' WHERE id = 'k/1'")
entity_name_null = _damaged("UPDATE rag_entities SET name = NULL WHERE id = 'e/1'")
community_name_blob = _damaged("UPDATE rag_community_summaries SET community_name = x'ff41' WHERE id = 'ns/2'")
summary_blob = _damaged("UPDATE rag_community_summaries SET summary_content = x'ff41' WHERE id = 'ns/2'")
claim_description_blob = _damaged("UPDATE rag_claims SET description = x'ff41' WHERE id = 'c/2'")
claim_description_null = _damaged("UPDATE rag_claims SET description = NULL WHERE id = 'c/2'")
claim_chunk_blob = _damaged("UPDATE rag_claims SET source_chunk_id = x'ff41' WHERE id = 'c/2'")
members_deep = _damaged("UPDATE rag_community_summaries SET members = replace(hex(zeroblob(50000)), '00', '[') "
                        "WHERE id = 'ns/2'")  # 50,000 nested arrays


def hot_journal(path: Path) -> Path:
    """A store with a hot rollback journal: a writer died mid-transaction after some of its
    changed pages reached the file (a copy of both files taken at that moment)."""
    source = base_store(path.with_name("writer-" + path.name))
    writer = sqlite3.connect(source)
    writer.execute("PRAGMA cache_size = 1")  # changed pages spill into the file at once
    writer.execute("BEGIN")
    writer.execute("UPDATE rag_community_summaries SET summary_content = 'changed ' || hex(randomblob(3000))")
    for suffix in ("", "-journal"):
        path.with_name(path.name + suffix).write_bytes(source.with_name(source.name + suffix).read_bytes())
    writer.rollback()
    writer.close()
    source.unlink()
    return path
