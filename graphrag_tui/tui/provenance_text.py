"""How a claim and the passage it rests on are drawn (claim, community and entity views).

Passages are found in the chunk's *cleaned* text (`safe_text.clean`), the text shown, so
their offsets hold on screen. Store text is untrusted: only `Text` built from safe_text.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from ..store.records import ChunkDetail, ClaimDetail
from .passages import ChunkWords, Passage, find_passage
from .safe_text import clean, cut_for_display, one_line

#: The passage a claim quotes, and a best-matching sentence (approximate).
QUOTED_STYLE = "bold underline black on #e9c46a"
APPROXIMATE_STYLE = "underline black on #a8b8d8"


def chunk_passages(chunk: ChunkDetail, claims: Iterable[ClaimDetail]) -> dict[str, Passage]:
    """Claim id -> its passage in the chunk (claims with no passage found are left out)."""
    content = clean(chunk.content)
    words = ChunkWords(content)
    found = {}
    for claim in claims:
        passage = find_passage(content, claim.source_text, claim.description, words)
        if passage is not None:
            found[claim.id] = passage
    return found


def highlighted_chunk(chunk: ChunkDetail, passages: Iterable[Passage], *, heading: bool = True) -> Text:
    """The chunk (after a line with its id and document title) with the passages marked."""
    text = Text()
    if heading:
        title = one_line(chunk.parent_title) or "(untitled document)"
        text.append_text(Text.assemble(("Chunk ", "bold"), (one_line(chunk.id), "bold"),
                                       ("  from ", "dim"), (title, "italic"), "\n"))
    start = len(text)
    text.append(clean(chunk.content))
    for passage in sorted(passages, key=lambda p: not p.approximate):  # quoted last: on top
        style = APPROXIMATE_STYLE if passage.approximate else QUOTED_STYLE
        for begin, end in passage.spans:
            text.stylize(style, start + begin, start + end)
    return cut_for_display(text)


def passage_note(claim: ClaimDetail, passage: Passage | None) -> Text:
    """One line saying what the highlight in the chunk is."""
    if passage is None:
        return Text("No passage of this chunk matches the claim: nothing is highlighted.", style="dim italic")
    if not passage.approximate:
        return Text.assemble(("Highlighted: ", "bold"), ("the passage the claim quotes", QUOTED_STYLE),
                             " (its source text).")
    why = ("the claim's quoted source text is not in this chunk" if claim.source_text
           else "the store has no source text for this claim")
    return Text.assemble(("Highlighted: ", "bold"), ("the sentence that best matches the description", APPROXIMATE_STYLE),
                         (f" — an approximate match ({why}).", "italic"))


def claim_line(subject: str, object_: str | None, description: str, limit: int | None = None) -> Text:
    """A claim on one line, `subject -> object: description` (the description cut at `limit`)."""
    text = Text.assemble((one_line(subject), "bold"))
    if object_:
        text.append_text(Text.assemble(" -> ", (one_line(object_), "bold")))
    text.append(": " + one_line(description, limit))
    return text


def claim_facts(claim: ClaimDetail) -> Text:
    """Type, status and dates, those the store has; empty when it has none."""
    text = Text()
    for label, value in (("Type", claim.type), ("Status", claim.status),
                         ("From", claim.start_date), ("To", claim.end_date)):
        if value:
            if text:
                text.append("   ")
            text.append(f"{label} ", style="dim")
            text.append(one_line(value, 80))
    return text


def sources_legend(passages: Iterable[Passage]) -> Text:
    """Under a chunk of the Sources tab: how many claims' passages are marked in it."""
    found = list(passages)
    approximate = sum(1 for p in found if p.approximate)
    if not found:
        return Text("No claim's passage could be found in this chunk.", style="dim italic")
    text = Text.assemble((f"{len(found)} claim passage{'s' if len(found) != 1 else ''} marked: ", "dim"),
                         (f"{len(found) - approximate} quoted", QUOTED_STYLE))
    if approximate:
        text.append(", ")
        text.append(f"{approximate} approximate (best-matching sentence)", style=APPROXIMATE_STYLE)
    return text
