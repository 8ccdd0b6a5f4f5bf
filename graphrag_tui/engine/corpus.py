"""What the engine reads: communities with their claims and source excerpts.

The store produces these; the engine never touches SQL.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Claim(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    leaf_id: str
    subject: str
    object: str | None = None
    description: str
    chunk_id: str | None = None


class Excerpt(BaseModel):
    model_config = ConfigDict(frozen=True)

    chunk_id: str
    content: str


class CommunityContext(BaseModel):
    """One selected community, expanded to its descendant leaves' claims and excerpts.

    `claims` are ordered by leaf id, then claim id; `excerpts` in the order their first
    claim appears, deduplicated by chunk id.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    summary: str
    claims: tuple[Claim, ...] = ()
    excerpts: tuple[Excerpt, ...] = ()
