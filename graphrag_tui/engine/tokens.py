"""The token estimate of graphrag-ts, to the letter (SPEC §3.3)."""

from __future__ import annotations

import math
from typing import NamedTuple


class TextSize(NamedTuple):
    """Code points of a text, split into ASCII and the rest. Sizes add like concatenation,
    so a batch can be measured part by part without building the joined string."""

    ascii: int
    other: int

    @classmethod
    def of(cls, text: str) -> TextSize:
        if text.isascii():  # O(1): CPython marks pure-ASCII strings
            return cls(len(text), 0)
        ascii_count = len(text.encode("ascii", "ignore"))
        return cls(ascii_count, len(text) - ascii_count)

    def __add__(self, other: tuple[int, ...]) -> TextSize:  # type: ignore[override]
        return TextSize(self.ascii + other[0], self.other + other[1])

    @property
    def tokens(self) -> int:
        return tokens_of(self.ascii, self.other)


def tokens_of(ascii_count: int, other_count: int) -> int:
    """ceil(non_ascii / 1.8 + ascii / 4), as that float expression; empty text is 0."""
    return math.ceil(other_count / 1.8 + ascii_count / 4)


NEWLINE = TextSize(1, 0)
BLANK_LINE = TextSize(2, 0)


def estimate_tokens(text: str) -> int:
    return TextSize.of(text).tokens
