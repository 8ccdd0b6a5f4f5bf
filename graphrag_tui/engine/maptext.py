"""The Map text of one community (SPEC §3.2).

Two inputs give the same text: a `CommunityContext` (claims and excerpts as records) and
`MapTextParts` (the same lines already rendered, as the store's planning read gives them:
a large store has a million claims, and a record per claim costs more than its line). The
lines' pieces are named here, so that a store rendering them itself (in SQL) uses the same.
"""

from collections.abc import Iterable

from .corpus import CommunityContext, MapTextParts

#: A claim line is CLAIM_START + subject + [RELATES_START + object + RELATES_END] +
#: DESCRIPTION_START + description, the relation only when the object is not empty.
CLAIM_START, RELATES_START, RELATES_END, DESCRIPTION_START = "- ", " (relates to ", ")", ": "
#: An excerpt line is EXCERPT_START + chunk id + EXCERPT_MIDDLE + content.
EXCERPT_START, EXCERPT_MIDDLE = "- [Chunk ", "] "


def claim_lines(subjects: Iterable[str], objects: Iterable[str | None], descriptions: Iterable[str]) -> list[str]:
    """One line per claim (the three iterables run in step)."""
    return [
        f"{CLAIM_START}{s}{RELATES_START}{o}{RELATES_END}{DESCRIPTION_START}{d}" if o
        else f"{CLAIM_START}{s}{DESCRIPTION_START}{d}"
        for s, o, d in zip(subjects, objects, descriptions, strict=False)
    ]


def excerpt_line(chunk_id: str, content: str) -> str:
    return f"{EXCERPT_START}{chunk_id}{EXCERPT_MIDDLE}{content}"


def map_text(community: CommunityContext | MapTextParts) -> str:
    """Summary, supporting claims and source excerpts; empty sections are left out."""
    if isinstance(community, CommunityContext):
        claims = community.claims
        community = MapTextParts(
            id=community.id, summary=community.summary,
            claim_lines=tuple(claim_lines([c.subject for c in claims], [c.object for c in claims],
                                          [c.description for c in claims])),
            excerpt_lines=tuple(excerpt_line(chunk_id, content) for chunk_id, content in community.excerpts),
        )
    lines = [f"[Community summary]: {community.summary}"]
    if community.claim_lines:
        lines.append("[Supporting claims]:")
        lines += community.claim_lines
    if community.excerpt_lines:
        lines.append("[Source excerpts]:")
        lines += community.excerpt_lines
    return "\n".join(lines)
