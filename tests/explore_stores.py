"""A small store for the explore tests: ids repeat across tables (`carol/89` is a
community, an entity and a claim, as in an imported store), one claim is unassigned."""

from __future__ import annotations

from pathlib import Path

from tests.stores import build_store


def guards(path: Path) -> Path:
    return build_store(
        path,
        [
            {"id": "carol/0", "namespace": "carol", "community_name": "Guards", "level": 0,
             "summary_content": "The guards who visit Quill on market day.",
             "members": '["JONAS HARROW", "ELIAS QUILL"]'},
            {"id": "carol/1", "namespace": "carol", "community_name": "Harrow's visit", "level": 1,
             "parent_community_id": "carol/0", "summary_content": "Jonas Harrow comes back from sea.",
             "members": '["JONAS HARROW"]'},
            {"id": "carol/2", "namespace": "carol", "community_name": "The counting house", "level": 1,
             "parent_community_id": "carol/0", "summary_content": "Quill and his clerk in the cold office.",
             "members": '["ELIAS QUILL", "TOM PENROSE"]'},
            {"id": "carol/89", "namespace": "carol", "community_name": "Crew dinner", "level": 0,
             "summary_content": "The Penrose family shares a small pie.", "members": '["TOM PENROSE"]'},
        ],
        entities=[
            {"id": "carol/89", "namespace": "carol", "name": "JONAS HARROW",
             "description": "Quill's old partner, away seven years"},
            {"id": "carol/e2", "namespace": "carol", "name": "ELIAS QUILL", "description": "A miser"},
            {"id": "carol/e3", "namespace": "carol", "name": "TOM PENROSE", "description": "Quill's clerk"},
        ],
        documents=[{"id": "carol/d1", "namespace": "carol", "title": "A Harbour Ledger"}],
        chunks=[
            {"id": "carol/k1", "namespace": "carol", "parent_id": "carol/d1", "content": "Harrow was away, to begin with."},
            {"id": "carol/k2", "namespace": "carol", "parent_id": "carol/d1", "content": "The pie was carved at last."},
        ],
        claims=[
            {"id": "carol/89", "namespace": "carol", "subject_entity_id": "carol/89", "object_entity_id": "carol/e2",
             "description": "Harrow warns Quill of three inspectors", "source_chunk_id": "carol/k1",
             "source_parent_id": "carol/d1", "community_summary_id": "carol/1"},
            {"id": "carol/c2", "namespace": "carol", "subject_entity_id": "carol/e2",
             "description": "Quill keeps the office cold", "source_chunk_id": "carol/k1",
             "community_summary_id": "carol/2"},
            {"id": "carol/c3", "namespace": "carol", "subject_entity_id": "carol/e3",
             "description": "Penrose carves the pie", "source_chunk_id": "carol/k2",
             "community_summary_id": "carol/89"},
            {"id": "carol/c4", "namespace": "carol", "subject_entity_id": "carol/e3",
             "description": "Penrose works late on market day"},
        ],
    )
