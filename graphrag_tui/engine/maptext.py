"""The Map text of one community (SPEC §3.2)."""

from .corpus import CommunityContext


def map_text(community: CommunityContext) -> str:
    """Summary, supporting claims and source excerpts; empty sections are left out."""
    lines = [f"[Community summary]: {community.summary}"]
    if community.claims:
        lines.append("[Supporting claims]:")
        for claim in community.claims:
            subject = f"{claim.subject} (relates to {claim.object})" if claim.object else claim.subject
            lines.append(f"- {subject}: {claim.description}")
    if community.excerpts:
        lines.append("[Source excerpts]:")
        lines.extend(f"- [Chunk {e.chunk_id}] {e.content}" for e in community.excerpts)
    return "\n".join(lines)
