"""A small store for the explore tests: ids repeat across tables (`carol/89` is a
community, an entity and a claim, as in an imported store), one claim is unassigned."""

from __future__ import annotations

from pathlib import Path

from tests.stores import build_store


def ghosts(path: Path) -> Path:
    return build_store(
        path,
        [
            {"id": "carol/0", "namespace": "carol", "community_name": "Ghosts", "level": 0,
             "summary_content": "The ghosts who visit Scrooge on Christmas Eve.",
             "members": '["JACOB MARLEY", "EBENEZER SCROOGE"]'},
            {"id": "carol/1", "namespace": "carol", "community_name": "Marley's visit", "level": 1,
             "parent_community_id": "carol/0", "summary_content": "Jacob Marley comes back in chains.",
             "members": '["JACOB MARLEY"]'},
            {"id": "carol/2", "namespace": "carol", "community_name": "The counting house", "level": 1,
             "parent_community_id": "carol/0", "summary_content": "Scrooge and his clerk in the cold office.",
             "members": '["EBENEZER SCROOGE", "BOB CRATCHIT"]'},
            {"id": "carol/89", "namespace": "carol", "community_name": "Christmas dinner", "level": 0,
             "summary_content": "The Cratchit family shares a small goose.", "members": '["BOB CRATCHIT"]'},
        ],
        entities=[
            {"id": "carol/89", "namespace": "carol", "name": "JACOB MARLEY",
             "description": "Scrooge's late partner, dead seven years"},
            {"id": "carol/e2", "namespace": "carol", "name": "EBENEZER SCROOGE", "description": "A miser"},
            {"id": "carol/e3", "namespace": "carol", "name": "BOB CRATCHIT", "description": "Scrooge's clerk"},
        ],
        documents=[{"id": "carol/d1", "namespace": "carol", "title": "A Christmas Carol"}],
        chunks=[
            {"id": "carol/k1", "namespace": "carol", "parent_id": "carol/d1", "content": "Marley was dead, to begin with."},
            {"id": "carol/k2", "namespace": "carol", "parent_id": "carol/d1", "content": "The goose was carved at last."},
        ],
        claims=[
            {"id": "carol/89", "namespace": "carol", "subject_entity_id": "carol/89", "object_entity_id": "carol/e2",
             "description": "Marley warns Scrooge of three spirits", "source_chunk_id": "carol/k1",
             "source_parent_id": "carol/d1", "community_summary_id": "carol/1"},
            {"id": "carol/c2", "namespace": "carol", "subject_entity_id": "carol/e2",
             "description": "Scrooge keeps the office cold", "source_chunk_id": "carol/k1",
             "community_summary_id": "carol/2"},
            {"id": "carol/c3", "namespace": "carol", "subject_entity_id": "carol/e3",
             "description": "Cratchit carves the goose", "source_chunk_id": "carol/k2",
             "community_summary_id": "carol/89"},
            {"id": "carol/c4", "namespace": "carol", "subject_entity_id": "carol/e3",
             "description": "Cratchit works late on Christmas Eve"},
        ],
    )
