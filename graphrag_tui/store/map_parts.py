"""Planning's read of a store (`CommunityStore.iter_map_parts`): the claims' and excerpts'
lines of the Map text, rendered by SQLite.

A large store has a million claims. Made into Python objects one by one (a record, or even
a row of its fields), they cost more than everything else planning does; rendered and
joined in SQLite, a leaf's claims reach Python as one string. The lines' pieces come from
`engine.maptext` as bound parameters, so both renderings stay one format
(`tests/test_map_parts.py` checks them equal, hostile stores included).

Entity names are joined through a temporary copy of every text id and name (one B-tree
search per name in the connection's memory, never in the file).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

from graphrag_tui.engine import maptext

#: The pieces of the lines, bound into every query below.
LINE_PIECES = {
    "claim_start": maptext.CLAIM_START,
    "relates_start": maptext.RELATES_START,
    "relates_end": maptext.RELATES_END,
    "description_start": maptext.DESCRIPTION_START,
    "excerpt_start": maptext.EXCERPT_START,
    "excerpt_middle": maptext.EXCERPT_MIDDLE,
}

# Rebuilt for each read (a writable store may have changed). As in the store's
# `_entity_names`: a name that is not text counts as missing, an id that is a number
# matches by its text, any other that is not text never matches a claim's (text) id, and of
# repeated ids the least name by code point wins.
NAMES_COPY = (
    "CREATE TEMP TABLE IF NOT EXISTS grt_entity_names(id TEXT PRIMARY KEY, name TEXT NOT NULL) WITHOUT ROWID",
    "DELETE FROM temp.grt_entity_names",
    "INSERT OR REPLACE INTO temp.grt_entity_names SELECT CAST(id AS TEXT), min(name) FROM rag_entities "
    "WHERE typeof(name) = 'text' AND typeof(id) IN ('text', 'integer') GROUP BY id",
)

# A claim's line, as `maptext.claim_lines` renders it from `CommunityStore._leaf_claims`'s
# fields: an entity id with no name stands for itself, a NULL subject or description is
# empty, and the relation is left out when the object is NULL or empty.
_OBJECT = "coalesce(object.name, CAST(c.object_entity_id AS TEXT))"
_CLAIM_LINE = f"""
:claim_start || coalesce(subject.name, CAST(c.subject_entity_id AS TEXT), '')
|| CASE WHEN {_OBJECT} != '' THEN :relates_start || {_OBJECT} || :relates_end ELSE '' END
|| :description_start || coalesce(CAST(c.description AS TEXT), '')
"""
_CLAIMS_OF_LEAVES = """
FROM rag_claims AS c
LEFT JOIN temp.grt_entity_names AS subject ON subject.id = coalesce(CAST(c.subject_entity_id AS TEXT), '')
LEFT JOIN temp.grt_entity_names AS object ON object.id = CAST(c.object_entity_id AS TEXT)
WHERE c.community_summary_id IN (SELECT value FROM json_each(:leaves))
"""

# Per leaf: its claims' lines joined by "\n", and its claims' chunk ids as a JSON array.
# group_concat takes the rows in the order the query visits them: claim id order only
# when a (community_summary_id, id) index drives the GROUP BY, which `grouped_in_claim_order`
# checks against the query plan; otherwise the store reads `LEAF_LINES_ORDERED`.
_GROUPED = (
    f"SELECT c.community_summary_id AS leaf, group_concat({_CLAIM_LINE}, char(10)) AS lines, "
    f"json_group_array(CAST(c.source_chunk_id AS TEXT)) AS chunk_ids {_CLAIMS_OF_LEAVES} GROUP BY c.community_summary_id"
)
# All of it as one JSON object, {leaf: [lines, chunk ids]}: a single row, so SQLite does the
# whole read in one step without the GIL (the sqlite3 module takes the GIL back for every
# row, and waits for it while the caller runs Python).
LEAF_LINES_GROUPED = f"SELECT json_group_object(leaf, json_array(lines, json(chunk_ids))) FROM ({_GROUPED})"
# The same, a row per claim (leaf, line, chunk id) in leaf, then claim id order.
LEAF_LINES_ORDERED = (
    f"SELECT c.community_summary_id, {_CLAIM_LINE}, CAST(c.source_chunk_id AS TEXT) {_CLAIMS_OF_LEAVES}"
    "ORDER BY c.community_summary_id COLLATE BINARY, c.id COLLATE BINARY"
)

# {id: excerpt line} of the chunks whose ids are in a JSON array (:ids), as one JSON object
# (one row, as above); dangling ids are left out.
EXCERPT_LINES = (
    "SELECT json_group_object(id, :excerpt_start || id || :excerpt_middle || coalesce(CAST(content AS TEXT), '')) "
    "FROM rag_children WHERE id IN (SELECT value FROM json_each(:ids))"
)

#: A leaf's claim lines joined by "\n", and its claims' chunk ids (None: no chunk), in order.
LeafLines = Sequence[Any]
_SECOND = itemgetter(1)
_THIRD = itemgetter(2)


def grouped_in_claim_order(plan: Iterable[tuple], claim_indexes: dict[str, list[tuple]]) -> bool:
    """Whether `LEAF_LINES_GROUPED`, with this query plan (`EXPLAIN QUERY PLAN` rows), visits
    each leaf's claims in claim id order: an index on rag_claims whose keys begin with
    community_summary_id, then id ascending by BINARY collation, drives the search, and no
    temporary B-tree regroups the rows. `claim_indexes` maps each index of rag_claims to its
    key columns (`pragma index_xinfo` rows with key = 1: seqno, cid, name, desc, coll, key)."""
    details = [row[-1] for row in plan]
    if any("TEMP B-TREE" in detail for detail in details):
        return False
    for name, keys in claim_indexes.items():
        ordered = (len(keys) >= 2 and keys[0][2] == "community_summary_id" and keys[1][2] == "id"
                   and not keys[1][3] and str(keys[1][4]).upper() == "BINARY")
        if ordered and any(f"INDEX {name} (community_summary_id=?)" in detail for detail in details):
            return True
    return False


def excerpt_lines(rows: list[tuple]) -> dict[str, str]:
    """{chunk id: excerpt line} from the row of `EXCERPT_LINES`."""
    lines: dict[str, str] = json.loads(rows[0][0])
    return lines


def leaf_lines(rows: list[tuple], grouped: bool) -> dict[str, LeafLines]:
    """{leaf id: LeafLines} from the rows of `LEAF_LINES_GROUPED` (`grouped`) or of
    `LEAF_LINES_ORDERED`."""
    if grouped:
        by_leaf: dict[str, LeafLines] = json.loads(rows[0][0])
        return by_leaf
    by_leaf = {}
    for leaf, run in groupby(rows, itemgetter(0)):
        claims = list(run)
        by_leaf[leaf] = ("\n".join(map(_SECOND, claims)), list(map(_THIRD, claims)))
    return by_leaf
