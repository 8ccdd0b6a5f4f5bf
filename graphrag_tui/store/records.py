"""What the store's drill-down reads return: claims, chunks and community references."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ClaimDetail(BaseModel):
    """One claim. The last five fields come from the optional `rag_claims` columns
    (`schema.OPTIONAL`): None when the store lacks them or the row has none."""

    model_config = ConfigDict(frozen=True)

    id: str
    leaf_id: str
    subject: str
    object: str | None = None
    description: str
    chunk_id: str | None = None
    source_parent_id: str | None = None
    source_text: str | None = None
    type: str | None = None
    status: str | None = None
    start_date: str | None = None
    end_date: str | None = None


class ChunkDetail(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    content: str
    parent_id: str | None = None
    parent_title: str | None = None


class CommunityRef(BaseModel):
    """A community by id, with its name and level (for lists of communities)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str | None = None
    level: int = 0


class ClaimProvenance(BaseModel):
    """One claim and what it rests on: its entities' ids, the chunk it cites (None when it
    cites none, or the id names no row: `chunk_missing`), the chunk's document, and the
    other claims citing the same chunk (the first `SAME_CHUNK_LIMIT`, of `same_chunk_total`)."""

    model_config = ConfigDict(frozen=True)

    claim: ClaimDetail
    namespace: str
    subject_entity_id: str
    object_entity_id: str | None = None
    chunk: ChunkDetail | None = None
    chunk_missing: bool = False
    document_title: str | None = None
    same_chunk: list[ClaimDetail] = []
    same_chunk_total: int = 0


class GoToMatch(BaseModel):
    """A community that what the user typed names: by its name, or as a community whose
    members include the entity `entity`."""

    model_config = ConfigDict(frozen=True)

    community: CommunityRef
    entity: str | None = None
