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
    #: The batch text in pieces (part headers, segments, the newlines between parts), so
    #: that planning a large store does not copy every text once more to join it.
    pieces: tuple[str, ...]
    community_ids: tuple[str, ...]
    parts: tuple[PartRef, ...]
    #: Estimated tokens of each part (header included), in the order of `parts`.
    part_tokens: tuple[int, ...] = ()

    @property
    def content(self) -> str:
        """The batch text: what the Map prompt carries."""
        return "".join(self.pieces)

    @property
    def size(self) -> TextSize:
        """The size of `content`, without joining it."""
        return sum(map(TextSize.of, self.pieces), TextSize(0, 0))


class CommunityText(NamedTuple):
    id: str
    text: str


class Part(NamedTuple):
    """One segment of a community's text, with its size (header not included)."""

    ref: PartRef
    text: str
    size: TextSize


def fisher_yates(items: Sequence[T], random: Callable[[], float]) -> list[T]:
    """graphrag-ts's shuffle: from the last index down, swap with floor(random() * (i + 1))."""
    result = list(items)
    for index in range(len(result) - 1, 0, -1):
        swap = int(random() * (index + 1))
        result[index], result[swap] = result[swap], result[index]
    return result


def part_header(community_id: str, part: int) -> str:
    return f"[Community ID: {community_id} | summary part {part}]\n"


def split_community(community: CommunityText, skeleton: TextSize, budget: int) -> list[Part]:
    """Cut the text into the longest code-point segments that fit an otherwise empty batch."""
    text = community.text
    # skeleton + "\n" + header + segment must stay within the budget.
    fixed = skeleton + NEWLINE + TextSize.of(part_header(community.id, SIZING_PART_NUMBER))
    size = TextSize.of(text)
    if (fixed + size).tokens <= budget:
        return [Part(PartRef(community_id=community.id, part=1), text, size)] if text else []
    # Prefix counts of ASCII code points make each probe O(1).
    ascii_prefix = [0] * (len(text) + 1)
    running = 0
    for position, char in enumerate(text, 1):
        running += char < "\x80"
        ascii_prefix[position] = running

    def fits(start: int, length: int) -> bool:
        ascii_count = ascii_prefix[start + length] - ascii_prefix[start]
        return (fixed + (ascii_count, length - ascii_count)).tokens <= budget

    parts: list[Part] = []
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
        ascii_count = ascii_prefix[offset + best] - ascii_prefix[offset]
        ref = PartRef(community_id=community.id, part=len(parts) + 1)
        parts.append(Part(ref, text[offset : offset + best], TextSize(ascii_count, best - ascii_count)))
        offset += best
    return parts


def build_batches(
    communities: list[CommunityText | None],
    skeleton: str,
    budget: int,
    random: Callable[[], float] | None,
) -> list[MapBatch]:
    """Shuffle (unless `random` is None), split, then pack greedily in that order.

    The list is consumed: each entry is dropped once packed, and the batches keep the
    segments themselves, so planning a large store never holds its texts twice.
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
    pieces: list[str] = []
    refs: list[PartRef] = []
    tokens: list[int] = []
    # The batch so far, in code points (ASCII, other); the fixed part is skeleton + "\n".
    fixed_ascii, fixed_other = skeleton_size.ascii + 1, skeleton_size.other
    size_ascii = size_other = 0

    def flush() -> None:
        nonlocal pieces, refs, tokens
        if pieces:  # built here, not validated: every field comes from this function
            batches.append(
                MapBatch.model_construct(
                    index=len(batches),
                    pieces=tuple(pieces),
                    community_ids=tuple(dict.fromkeys(r.community_id for r in refs)),
                    parts=tuple(refs),
                    part_tokens=tuple(tokens),
                )
            )
        pieces, refs, tokens = [], [], []

    for position in order:
        community, communities[position] = communities[position], None
        assert community is not None
        for ref, segment, segment_size in split_community(community, skeleton_size, budget):
            header = part_header(ref.community_id, ref.part)
            header_ascii, header_other = TextSize.of(header)
            part_ascii, part_other = header_ascii + segment_size[0], header_other + segment_size[1]
            if pieces:  # joined to the batch by a newline
                size_ascii, size_other = size_ascii + 1 + part_ascii, size_other + part_other
                if tokens_of(fixed_ascii + size_ascii, fixed_other + size_other) > budget:
                    flush()
                    size_ascii, size_other = part_ascii, part_other
                else:
                    pieces.append("\n")
            else:
                size_ascii, size_other = part_ascii, part_other
            pieces += (header, segment)
            refs.append(ref)
            tokens.append(tokens_of(part_ascii, part_other))
    flush()
    return batches
