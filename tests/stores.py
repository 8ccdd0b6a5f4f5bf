"""Small community stores built by the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphrag_tui.store import CommunityStore


def build_store(
    path: Path,
    communities: list[dict[str, Any]],
    *,
    claims: list[dict[str, Any]] = (),  # type: ignore[assignment]
    entities: list[dict[str, Any]] = (),  # type: ignore[assignment]
    chunks: list[dict[str, Any]] = (),  # type: ignore[assignment]
    documents: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> Path:
    """Rows are dicts keyed by column; `namespace` defaults to "ns" and `level` to 0."""

    def rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"namespace": "ns", **item} for item in items]

    with CommunityStore.create(path) as store:
        store.insert("rag_parents", rows(documents))
        store.insert("rag_children", rows(chunks))
        store.insert("rag_entities", rows(entities))
        store.insert("rag_community_summaries", [{"level": 0, **r} for r in rows(communities)])
        store.insert("rag_claims", rows(claims))
    return path


PAD = "Clerks keep a ledger of every ship and every crate that passes the gate. " * 6


def three_leaves(path: Path) -> Path:
    """Three root communities (each its own leaf) about a harbour; community 1 has claims.

    Each community's Map text is about 130-190 tokens, so with --map-budget 330 and
    --map-reserve 0 every community gets a batch of its own."""
    return build_store(
        path,
        [
            {"id": "ns/1", "summary_content": "The harbour bridge is funded by the port authority. " + PAD},
            {"id": "ns/2", "summary_content": "Fishing fleets land their catch at dawn. " + PAD},
            {"id": "ns/3", "summary_content": "The winter festival fills the old market. " + PAD},
        ],
        entities=[
            {"id": "e1", "name": "Port Authority"},
            {"id": "e2", "name": "Harbour Bridge"},
        ],
        documents=[{"id": "d1", "title": "Annual report"}],
        chunks=[{"id": "k1", "parent_id": "d1", "content": "The authority approved the bridge budget."}],
        claims=[
            {"id": "c1", "subject_entity_id": "e1", "object_entity_id": "e2", "description": "pays for the bridge",
             "source_chunk_id": "k1", "community_summary_id": "ns/1"},
            {"id": "c2", "subject_entity_id": "e1", "description": "meets every month",
             "source_chunk_id": "k1", "community_summary_id": "ns/1"},
        ],
    )


def provenance_store(path: Path) -> Path:
    """A harbour store whose claims carry GraphRAG's optional fields (source text, type,
    status, dates) for the claim view; claim c3 has no source text (an approximate match)."""
    return build_store(
        path,
        [
            {"id": "ns/0", "community_name": "Harbour and its money", "summary_content": "The harbour as a whole.",
             "members": '["Port Authority", "Harbour Bridge", "City Council"]'},
            {"id": "ns/1", "community_name": "Bridge funding", "level": 1, "parent_community_id": "ns/0",
             "summary_content": "The harbour bridge is funded by the port authority. " + PAD,
             "members": '["Port Authority", "Harbour Bridge"]'},
            {"id": "ns/2", "community_name": "Fishing fleets", "level": 1, "parent_community_id": "ns/0",
             "summary_content": "Fishing fleets land their catch at dawn. " + PAD, "members": '["City Council"]'},
        ],
        entities=[
            {"id": "e1", "name": "Port Authority"},
            {"id": "e2", "name": "Harbour Bridge"},
            {"id": "e3", "name": "City Council"},
        ],
        documents=[{"id": "d1", "title": "Annual report 1998"}],
        chunks=[{"id": "ns/chunk-1", "parent_id": "d1", "content":
                 "The council met in March. The authority approved the bridge budget of four million. "
                 "Tolls will repay the loan by 2010. Fishing boats pay no toll."}],
        claims=[
            {"id": "c1", "subject_entity_id": "e1", "object_entity_id": "e2",
             "description": "The port authority pays for the harbour bridge.",
             "source_text": "the authority approved the bridge budget", "type": "FUNDING", "status": "TRUE",
             "start_date": "1998-03-01", "source_chunk_id": "ns/chunk-1", "source_parent_id": "d1",
             "community_summary_id": "ns/1"},
            {"id": "c2", "subject_entity_id": "e1", "description": "Tolls repay the bridge loan.",
             "source_text": "Tolls will repay the loan", "source_chunk_id": "ns/chunk-1",
             "community_summary_id": "ns/1"},
            {"id": "c3", "subject_entity_id": "e3", "description": "Fishing boats are exempt from the toll.",
             "source_chunk_id": "ns/chunk-1", "community_summary_id": "ns/2"},
        ],
    )
