"""Shuffle, split and pack community texts into Map batches (SPEC §3.4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from ..errors import InputError
from .tokens import NEWLINE, TextSize

T = TypeVar("T")

#: The header is sized for a 7-digit part number when searching for the longest segment.
SIZING_PART_NUMBER = 9_999_999


class PartRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    community_id: str
    part: int


class MapBatch(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    content: str
    community_ids: tuple[str, ...]
    parts: tuple[PartRef, ...]
    #: Estimated tokens of each part (header included), in the order of `parts`.
    part_tokens: tuple[int, ...] = ()


class CommunityText(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    text: str


def fisher_yates(items: Sequence[T], random: Callable[[], float]) -> list[T]:
    """graphrag-ts's shuffle: from the last index down, swap with floor(random() * (i + 1))."""
    result = list(items)
    for index in range(len(result) - 1, 0, -1):
        swap = int(random() * (index + 1))
        result[index], result[swap] = result[swap], result[index]
    return result


def part_header(community_id: str, part: int) -> str:
    return f"[Community ID: {community_id} | summary part {part}]\n"


def split_community(
    community: CommunityText, skeleton: TextSize, budget: int
) -> list[tuple[PartRef, str]]:
    """Cut the text into the longest code-point segments that fit an otherwise empty batch."""
    text = community.text
    # skeleton + "\n" + header + segment must stay within the budget.
    fixed = skeleton + NEWLINE + TextSize.of(part_header(community.id, SIZING_PART_NUMBER))
    if (fixed + TextSize.of(text)).tokens <= budget:
        return [(PartRef(community_id=community.id, part=1), text)] if text else []
    # Prefix counts of ASCII code points make each probe O(1).
    ascii_prefix = [0] * (len(text) + 1)
    running = 0
    for position, char in enumerate(text, 1):
        running += char < "\x80"
        ascii_prefix[position] = running

    def fits(start: int, length: int) -> bool:
        ascii_count = ascii_prefix[start + length] - ascii_prefix[start]
        return (fixed + (ascii_count, length - ascii_count)).tokens <= budget

    parts: list[tuple[PartRef, str]] = []
    offset = 0
    while offset < len(text):
        low, high, best = 1, len(text) - offset, 0
        while low <= high:
            length = (low + high) // 2
            if fits(offset, length):
                best, low = length, length + 1
            else:
                high = length - 1
        if best == 0:
            raise InputError(
                f"the map prompt budget ({budget} tokens) cannot fit even one character of "
                f"community {community.id}: raise --map-budget or lower --map-reserve"
            )
        parts.append((PartRef(community_id=community.id, part=len(parts) + 1), text[offset : offset + best]))
        offset += best
    return parts


def build_batches(
    communities: Sequence[CommunityText],
    skeleton: str,
    budget: int,
    random: Callable[[], float] | None,
) -> list[MapBatch]:
    """Shuffle (unless `random` is None), split, then pack greedily in that order."""
    skeleton_size = TextSize.of(skeleton)
    if (skeleton_size + NEWLINE).tokens > budget:
        raise InputError(
            f"the map prompt budget ({budget} tokens) cannot fit the Map prompt itself "
            f"({(skeleton_size + NEWLINE).tokens} tokens): raise --map-budget or lower --map-reserve"
        )
    ordered = fisher_yates(communities, random) if random is not None else list(communities)
    batches: list[MapBatch] = []
    texts: list[str] = []
    refs: list[PartRef] = []
    tokens: list[int] = []
    size = TextSize(0, 0)

    def flush() -> None:
        nonlocal texts, refs, tokens, size
        if texts:
            batches.append(
                MapBatch(
                    index=len(batches),
                    content="\n".join(texts),
                    community_ids=tuple(dict.fromkeys(r.community_id for r in refs)),
                    parts=tuple(refs),
                    part_tokens=tuple(tokens),
                )
            )
        texts, refs, tokens, size = [], [], [], TextSize(0, 0)

    for community in ordered:
        for ref, segment in split_community(community, skeleton_size, budget):
            formatted = part_header(ref.community_id, ref.part) + segment
            part_size = TextSize.of(formatted)
            joined = size + NEWLINE + part_size if texts else part_size
            if (skeleton_size + NEWLINE + joined).tokens > budget:
                flush()
                joined = part_size
            texts.append(formatted)
            refs.append(ref)
            tokens.append(part_size.tokens)
            size = joined
    flush()
    return batches
