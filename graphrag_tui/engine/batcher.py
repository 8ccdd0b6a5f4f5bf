"""Shuffle, split and pack community texts into Map batches (SPEC §3.4)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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


_NEW_OBJECT, _SET_FIELD = object.__new__, object.__setattr__


def part_ref(community_id: str, part: int) -> PartRef:
    """`PartRef.model_construct(community_id=..., part=...)`, the same object in a third of
    the time: it sets what `model_construct` sets for a model without defaults, aliases,
    extra fields or private attributes (`tests/test_batcher.py` checks them equal). Planning a
    large store makes one per part, 90,000 at the leaves of the benchmark's tree store."""
    ref = _NEW_OBJECT(PartRef)
    _SET_FIELD(ref, "__dict__", {"community_id": community_id, "part": part})
    _SET_FIELD(ref, "__pydantic_fields_set__", {"community_id", "part"})
    _SET_FIELD(ref, "__pydantic_extra__", None)
    _SET_FIELD(ref, "__pydantic_private__", None)
    return ref


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


_HEADER_START, _HEADER_MIDDLE, _HEADER_END = "[Community ID: ", " | summary part ", "]\n"
_HEADER_FIXED = len(_HEADER_START + _HEADER_MIDDLE + _HEADER_END)


def part_header(community_id: str, part: int) -> str:
    return f"{_HEADER_START}{community_id}{_HEADER_MIDDLE}{part}{_HEADER_END}"


def header_size(id_size: TextSize, part: int) -> TextSize:
    """The size of `part_header(id, part)` from the id's size: the rest is ASCII (this runs
    for every part of a large store, and building the header to measure it costs more)."""
    return TextSize(id_size.ascii + _HEADER_FIXED + len(str(part)), id_size.other)


def split_community(community: CommunityText, skeleton: TextSize, budget: int) -> list[Part]:
    """Cut the text into the longest code-point segments that fit an otherwise empty batch.

    Whether a segment fits only grows worse with its length (one more code point never
    lowers the estimate), so each cut is the largest length that fits, found without a
    Python step per character: ASCII is the cheapest code point, so no segment longer than
    `longest` (all ASCII) fits, and one of `shortest` (no ASCII) always does. A candidate
    that is ASCII throughout (CPython knows in O(1)) is cut right away; otherwise a binary
    search between the two, counting ASCII with `AsciiCounter`.
    """
    text = community.text
    # skeleton + "\n" + header + segment must stay within the budget (sizes added as ints:
    # this runs once per community, 100k times on a large store, and most texts fit whole).
    header_ascii, header_other = header_size(TextSize.of(community.id), SIZING_PART_NUMBER)
    fixed_ascii, fixed_other = skeleton.ascii + NEWLINE.ascii + header_ascii, skeleton.other + header_other
    size = TextSize.of(text)
    if tokens_of(fixed_ascii + size.ascii, fixed_other + size.other) <= budget:
        return [Part(part_ref(community.id, 1), text, size)] if text else []

    def fits(ascii_count: int, other_count: int) -> bool:
        return tokens_of(fixed_ascii + ascii_count, fixed_other + other_count) <= budget

    longest = _longest_run(lambda n: fits(n, 0))
    shortest = _longest_run(lambda n: fits(0, n))
    counter: AsciiCounter | None = None  # made for the first candidate that is not all ASCII
    parts: list[Part] = []
    offset = 0
    while offset < len(text):
        length = min(len(text) - offset, longest)
        if not text[offset : offset + length].isascii():
            counter = counter or AsciiCounter(text)
            length = _longest_segment(counter, offset, shortest, length, fits)
        if length == 0:
            raise InputError(
                f"the map prompt budget ({budget} tokens) cannot fit even one character of "
                f"community {community.id}: raise --map-budget or lower --map-reserve"
            )
        segment = text[offset : offset + length]
        ref = part_ref(community.id, len(parts) + 1)
        parts.append(Part(ref, segment, TextSize.of(segment)))
        offset += length
    return parts


def _longest_segment(
    counter: AsciiCounter, offset: int, shortest: int, longest: int, fits: Callable[[int, int], bool]
) -> int:
    """The largest n <= `longest` for which text[offset:offset + n] fits (by its ASCII and
    other code points); n = `shortest` is known to fit."""
    ascii_start = counter.before(offset)

    def fits_length(n: int) -> bool:
        ascii_count = counter.before(offset + n) - ascii_start
        return fits(ascii_count, n - ascii_count)

    if fits_length(longest):
        return longest
    best, low, high = shortest, shortest + 1, longest - 1
    while low <= high:
        middle = (low + high) // 2
        if fits_length(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


class AsciiCounter:
    """ASCII code points in any prefix of a text, in O(BLOCK): counts per block of BLOCK
    code points are taken once (each by encoding the block in C), the rest of a block is
    counted when asked. Large blocks keep the Python steps few; counting in C is cheap."""

    BLOCK = 4096

    def __init__(self, text: str) -> None:
        self.text = text
        self.blocks = [0]
        total = 0
        for start in range(0, len(text), self.BLOCK):
            total += TextSize.of(text[start : start + self.BLOCK]).ascii
            self.blocks.append(total)

    def before(self, position: int) -> int:
        """ASCII code points in text[:position]."""
        block, rest = divmod(position, self.BLOCK)
        if not rest:
            return self.blocks[block]
        start = block * self.BLOCK
        return self.blocks[block] + TextSize.of(self.text[start:position]).ascii


def _longest_run(fits: Callable[[int], bool]) -> int:
    """The largest n >= 0 with fits(n), for a `fits` that holds up to some n and never after."""
    low, high = 0, 1
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:  # fits(low), not fits(high)
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


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

    # A text that fits an otherwise empty batch whole (most do) is its own single part: the
    # test of `split_community`, made here without a call, a closure or a header built twice.
    sizing_header = _HEADER_FIXED + len(str(SIZING_PART_NUMBER))
    whole_ascii = fixed_ascii + sizing_header
    for position in order:
        community, communities[position] = communities[position], None
        assert community is not None
        community_id, text = community
        id_ascii, id_other = id_size = TextSize.of(community_id)
        text_size = TextSize.of(text)
        if tokens_of(whole_ascii + id_ascii + text_size[0], fixed_other + id_other + text_size[1]) <= budget:
            if not text:
                continue
            parts: Iterable[Part] = (Part(part_ref(community_id, 1), text, text_size),)
        else:
            parts = split_community(community, skeleton_size, budget)
        for ref, segment, segment_size in parts:
            part = ref.part
            header = part_header(community_id, part)
            header_ascii, header_other = header_size(id_size, part)
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
