"""Tiny Microsoft GraphRAG output folders, written with pyarrow, for the importer tests.

The hierarchy (community numbers; leaves marked *):

    0 (level 0) -> 2 (level 1) -> 9* (level 2), 10* (level 2)
                -> 3* (level 1)
    1* (level 0)

Entities ALPHA..ZETA; GAMMA sits in the leaves 3, 9 and 10 and BETA in 9 and 10, so claims about
them exercise the tie-breaks. Text units t0..t3 (t0, t1 in document d0; t2, t3 in d1); no leaf
lists t3.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ENTITIES = ["ALPHA", "BETA", "GAMMA", "DELTA", "EPSILON", "ZETA"]


def ent(title: str) -> str:
    return f"ent-{title.lower()}"


# number: (level, parent, entity titles, text units)
COMMUNITIES: dict[int, tuple[int, int, list[str], list[str]]] = {
    0: (0, -1, ["ALPHA", "BETA", "GAMMA", "DELTA"], ["t0", "t1", "t2"]),
    1: (0, -1, ["EPSILON", "ZETA"], ["t2"]),
    2: (1, 0, ["ALPHA", "BETA", "GAMMA"], ["t0", "t1", "t2"]),
    3: (1, 0, ["DELTA", "GAMMA"], ["t1"]),
    9: (2, 2, ["BETA", "GAMMA"], ["t2"]),
    10: (2, 2, ["ALPHA", "BETA", "GAMMA"], ["t0", "t1"]),
}

# (human_readable_id, subject, object, text unit) -> the leaf each claim must land in
CLAIMS: list[tuple[int, str | None, str | None, str | None]] = [
    (0, "ALPHA", "NONE", "t0"),  # only leaf 10 holds ALPHA                         -> 10
    (1, "GAMMA", None, "t1"),  # 3, 9, 10 hold GAMMA; 3 and 10 list t1: lowest     -> 3
    (2, "GAMMA", "BETA", "t0"),  # only 10 of them lists t0: beats the lower 3     -> 10
    (3, "GAMMA", None, "t3"),  # none lists t3: lowest of all                      -> 3
    (4, "BETA", None, "t3"),  # 9 and 10, none lists t3: lowest by number not text -> 9
    (5, "UNLISTED ONE", "ALPHA", "t2"),  # new entity; leaves listing t2: 1 and 9   -> 1
    (6, "UNLISTED TWO", "UNLISTED ONE", "t3"),  # new entity; no leaf lists t3     -> unassigned
    (7, "DELTA", "NONE", "t-missing"),  # dangling text unit; DELTA is in leaf 3   -> 3
    (8, "EPSILON", "ZETA", "t2"),  #                                               -> 1
]
EXPECTED_LEAF = {0: 10, 1: 3, 2: 10, 3: 3, 4: 9, 5: 1, 6: None, 7: 3, 8: 1}


def index_tables(layout: str = "3.x") -> dict[str, list[dict[str, Any]]]:
    """Rows of each table for a GraphRAG ``layout`` ("1.x", "2.x" or "3.x")."""
    if layout not in ("1.x", "2.x", "3.x"):
        raise ValueError(layout)
    legacy = layout == "1.x"

    def number(n: int) -> Any:  # 1.x fixtures carry community numbers as strings
        return str(n) if legacy else n

    children: dict[int, list[int]] = {n: [] for n in COMMUNITIES}
    for n, (_, parent, _, _) in COMMUNITIES.items():
        if parent >= 0:
            children[parent].append(n)

    communities = []
    reports = []
    for n, (level, parent, titles, units) in COMMUNITIES.items():
        row = {
            "id": f"community-uuid-{n}",
            "human_readable_id": number(n),
            "community": number(n),
            "level": level,
            "parent": number(parent),
            "title": f"Community {n}",
            "entity_ids": [ent(t) for t in titles],
            "relationship_ids": [],
            "text_unit_ids": list(units),
            "period": "2024-01-01",
            "size": len(titles),
        }
        if not legacy:
            row["children"] = children[n]
        communities.append(row)
        reports.append(
            {
                "id": f"report-uuid-{n}",
                "human_readable_id": number(n),
                "community": number(n),
                "parent": number(parent),
                "level": level,
                "title": f"Report title {n}",
                "summary": f"Summary of community {n}.",
                "full_content": f"# Report title {n}\n\nFull report of community {n}.",
                "rank": 5.0,
                ("rank_explanation" if legacy else "rating_explanation"): "made up",
                "findings": [{"summary": "a finding", "explanation": "because"}],
                "full_content_json": "{}",
                "period": "2024-01-01",
                "size": len(titles),
            }
        )
        if not legacy:
            reports[-1]["children"] = children[n]

    entities = [
        {
            "id": ent(t),
            "human_readable_id": i,
            "title": t,
            "type": "THING",
            "description": f"Entity {t.lower()}.",
            "text_unit_ids": ["t0"],
        }
        for i, t in enumerate(ENTITIES)
    ]
    documents = [
        {"id": "d0", "human_readable_id": 0, "title": "first.txt", "text": "Document zero.", "text_unit_ids": ["t0", "t1"]},
        {"id": "d1", "human_readable_id": 1, "title": "second.txt", "text": "Document one.", "text_unit_ids": ["t2", "t3"]},
    ]
    if layout == "2.x":
        for d in documents:
            d["metadata"] = None
    elif layout == "3.x":
        for d in documents:
            d["raw_data"] = None
    unit_doc = {"t0": "d0", "t1": "d0", "t2": "d1", "t3": "d1"}
    text_units = []
    for i, (unit, doc) in enumerate(unit_doc.items()):
        row: dict[str, Any] = {"id": unit, "human_readable_id": i, "text": f"Chunk text {i}.", "n_tokens": 3}
        if layout == "3.x":
            row["document_id"] = doc
        else:
            row["document_ids"] = [doc]
        row["entity_ids"] = []
        text_units.append(row)
    covariates = [
        {
            "id": f"claim-uuid-{hrid}",
            "human_readable_id": hrid,
            "covariate_type": "claim",
            "type": "FACT",
            "description": f"Claim {hrid} description.",
            "subject_id": subject,
            "object_id": obj,
            "status": "TRUE",
            "start_date": "NONE",
            "end_date": "NONE",
            "source_text": "quoted",
            "text_unit_id": unit,
        }
        for hrid, subject, obj, unit in CLAIMS
    ]
    return {
        "communities": communities,
        "community_reports": reports,
        "entities": entities,
        "documents": documents,
        "text_units": text_units,
        "covariates": covariates,
    }


def file_name(table: str, layout: str) -> str:
    return f"create_final_{table}.parquet" if layout == "1.x" else f"{table}.parquet"


def write_index(
    folder: Path, layout: str = "3.x", tables: dict[str, list[dict[str, Any]]] | None = None
) -> Path:
    """Write ``tables`` (default: :func:`index_tables`) as Parquet files into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = copy.deepcopy(tables if tables is not None else index_tables(layout))
    for name, rows in tables.items():
        pq.write_table(pa.Table.from_pylist(rows), folder / file_name(name, layout))
    return folder


def drop_column(rows: list[dict[str, Any]], column: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != column} for row in rows]


def write_large_index(folder: Path, communities: int, claims_per_leaf: int) -> Path:
    """Write :func:`large_index_tables` as Parquet files into ``folder`` (no copy on the way)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in large_index_tables(communities, claims_per_leaf).items():
        pq.write_table(pa.Table.from_pylist(rows), folder / file_name(name, "3.x"))
    return folder


def large_index_tables(communities: int, claims_per_leaf: int) -> dict[str, list[dict[str, Any]]]:
    """A GraphRAG 3.x index big enough for an import to take a while: a tenth of the
    communities are roots (level 0), the rest their children (level 1, the leaves); each
    leaf has its own entity, text unit and ``claims_per_leaf`` claims; one document."""
    roots = max(1, communities // 10)
    rows: dict[str, list[dict[str, Any]]] = {
        "communities": [], "community_reports": [], "entities": [], "text_units": [], "covariates": [],
        "documents": [{"id": "d0", "human_readable_id": 0, "title": "big.txt", "text": "Big.", "raw_data": None}],
    }
    for n in range(communities):
        leaf = n >= roots
        parent = n % roots if leaf else -1
        rows["communities"].append({
            "id": f"community-uuid-{n}", "human_readable_id": n, "community": n, "level": int(leaf),
            "parent": parent, "children": [] if leaf else list(range(roots + n, communities, roots)),
            "entity_ids": [f"ent-{n}"] if leaf else [], "text_unit_ids": [f"t{n}"] if leaf else [],
        })
        rows["community_reports"].append({
            "id": f"report-uuid-{n}", "human_readable_id": n, "community": n, "level": int(leaf), "parent": parent,
            "title": f"Report {n}", "summary": f"Summary of community {n}, " + "with some words " * 8,
            "full_content": f"# Report {n}",
        })
        if not leaf:
            continue
        rows["entities"].append({"id": f"ent-{n}", "human_readable_id": n, "title": f"ENTITY {n}",
                                 "description": f"Entity {n}."})
        rows["text_units"].append({"id": f"t{n}", "human_readable_id": n, "text": f"Chunk {n}. " * 10,
                                   "document_id": "d0"})
        for k in range(claims_per_leaf):
            hrid = n * claims_per_leaf + k
            rows["covariates"].append({
                "id": f"claim-uuid-{hrid}", "human_readable_id": hrid, "description": f"Claim {hrid} " * 6,
                "subject_id": f"ENTITY {n}", "object_id": "NONE", "text_unit_id": f"t{n}",
            })
    return rows
