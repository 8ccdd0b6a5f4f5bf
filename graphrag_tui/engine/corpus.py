"""What the engine reads: communities with their claims and source excerpts.

The store produces these; the engine never touches SQL. Claims and excerpts are named
tuples, not pydantic models: a large store yields a million claims, and validating them
would cost more than the rest of planning (the values come from the store's typed columns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Claim(NamedTuple):
    id: str
    leaf_id: str
    subject: str
    description: str
    object: str | None = None
    chunk_id: str | None = None


class Excerpt(NamedTuple):
    chunk_id: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CommunityContext:
    """One selected community, expanded to its descendant leaves' claims and excerpts.

    `claims` are ordered by leaf id, then claim id; `excerpts` in the order their first
    claim appears, deduplicated by chunk id.
    """

    id: str
    summary: str
    claims: tuple[Claim, ...] = ()
    excerpts: tuple[Excerpt, ...] = ()


class MapTextParts(NamedTuple):
    """A community's Map text in rendered lines: what planning reads from a store.

    `claim_lines` are rendered by `maptext.claim_lines`, in the order of `CommunityContext.claims`;
    an entry may hold several lines joined by "\n" (the store gives one entry per leaf).
    `excerpt_lines` are rendered by `maptext.excerpt_line`, in the order of
    `CommunityContext.excerpts`. A named tuple, as `Claim`: planning makes one per community.
    """

    id: str
    summary: str
    claim_lines: tuple[str, ...] = ()
    excerpt_lines: tuple[str, ...] = ()
