"""The Map text of one community (SPEC §3.2)."""

from .corpus import CommunityContext


def map_text(community: CommunityContext) -> str:
    """Summary, supporting claims and source excerpts; empty sections are left out."""
    lines = [f"[Community summary]: {community.summary}"]
    if community.claims:
        lines.append("[Supporting claims]:")
        lines += [
            f"- {c.subject} (relates to {c.object}): {c.description}" if c.object else f"- {c.subject}: {c.description}"
            for c in community.claims
        ]
    if community.excerpts:
        lines.append("[Source excerpts]:")
        lines += [f"- [Chunk {chunk_id}] {content}" for chunk_id, content in community.excerpts]
    return "\n".join(lines)
