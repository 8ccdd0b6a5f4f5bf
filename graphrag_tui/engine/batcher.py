"""Shuffle, split and pack community texts into Map batches (SPEC §3.4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict

from ..errors import InputError
from .tokens import NEWLINE, TextSize, tokens_of

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


class CommunityText(NamedTuple):
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
        return [(PartRef.model_construct(community_id=community.id, part=1), text)] if text else []
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
        parts.append((PartRef.model_construct(community_id=community.id, part=len(parts) + 1), text[offset : offset + best]))
        offset += best
    return parts


def build_batches(
    communities: list[CommunityText | None],
    skeleton: str,
    budget: int,
    random: Callable[[], float] | None,
) -> list[MapBatch]:
    """Shuffle (unless `random` is None), split, then pack greedily in that order.

    The list is consumed: each entry is dropped once packed, so planning a large store
    never holds its texts twice (once alone, once in the batches).
    """
    skeleton_size = TextSize.of(skeleton)
    if (skeleton_size + NEWLINE).tokens > budget:
        raise InputError(
            f"the map prompt budget ({budget} tokens) cannot fit the Map prompt itself "
            f"({(skeleton_size + NEWLINE).tokens} tokens): raise --map-budget or lower --map-reserve"
        )
    order = list(range(len(communities)))
    if random is not None:
        order = fisher_yates(order, random)
    batches: list[MapBatch] = []
    texts: list[str] = []
    refs: list[PartRef] = []
    tokens: list[int] = []
    # The batch so far, in code points (ASCII, other); the fixed part is skeleton + "\n".
    fixed_ascii, fixed_other = skeleton_size.ascii + 1, skeleton_size.other
    size_ascii = size_other = 0

    def flush() -> None:
        nonlocal texts, refs, tokens
        if texts:  # built here, not validated: every field comes from this function
            batches.append(
                MapBatch.model_construct(
                    index=len(batches),
                    content="\n".join(texts),
                    community_ids=tuple(dict.fromkeys(r.community_id for r in refs)),
                    parts=tuple(refs),
                    part_tokens=tuple(tokens),
                )
            )
        texts, refs, tokens = [], [], []

    for position in order:
        community, communities[position] = communities[position], None
        assert community is not None
        for ref, segment in split_community(community, skeleton_size, budget):
            formatted = part_header(ref.community_id, ref.part) + segment
            part_ascii, part_other = TextSize.of(formatted)
            if texts:  # joined to the batch by a newline
                size_ascii, size_other = size_ascii + 1 + part_ascii, size_other + part_other
                if tokens_of(fixed_ascii + size_ascii, fixed_other + size_other) > budget:
                    flush()
                    size_ascii, size_other = part_ascii, part_other
            else:
                size_ascii, size_other = part_ascii, part_other
            texts.append(formatted)
            refs.append(ref)
            tokens.append(tokens_of(part_ascii, part_other))
    flush()
    return batches
