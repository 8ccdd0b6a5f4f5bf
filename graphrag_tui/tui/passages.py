"""Finding the passage of a chunk that a claim rests on.

With the claim's quoted `source_text` (GraphRAG's covariates carry it), each quoted piece
(split at `;` and at ellipses) is looked for in the chunk word by word, ignoring case,
punctuation and spacing, so curly quotes or a line break inside the quote still match.
Without it, or when none of it is in the chunk, the chunk's sentence sharing the most
words with the claim's description is taken: an approximate match, and said to be one.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

_WORD_RE = re.compile(r"\w+")
_PIECE_SPLIT_RE = re.compile(r";|\.\.\.|…")
_SENTENCE_RE = re.compile(r"[^\n]*?(?:[.!?。！？]+[\"'”’)\]]*(?=\s)|[.!?。！？]+[\"'”’)\]]*$|(?=\n)|$)", re.S)
#: A quoted piece shorter than this (in words) is only looked for when it is the whole quote:
#: two words such as "C. D." would match anywhere.
MIN_PIECE_WORDS = 3
_STOPWORDS = frozenset(
    "a an and are as at be been but by for from had has have he her his i in is it its of on or "
    "she that the their them they this to was were which who with".split()
)


@dataclass(frozen=True)
class Passage:
    """Where a claim's passage is in a chunk: (start, end) offsets into the content, in order.
    `approximate`: the best-matching sentence, not the claim's quoted text."""

    spans: tuple[tuple[int, int], ...]
    approximate: bool


class ChunkWords:
    """A chunk's words (case-folded) with their offsets, for finding quoted pieces."""

    def __init__(self, content: str) -> None:
        self.content = content
        matches = list(_WORD_RE.finditer(content))
        self.words = [m.group().casefold() for m in matches]
        self.offsets = [(m.start(), m.end()) for m in matches]
        self.joined = " " + " ".join(self.words) + " "
        # Position of each word's first character in `joined`, to map a find back to words.
        self.starts: list[int] = []
        position = 1
        for word in self.words:
            self.starts.append(position)
            position += len(word) + 1

    def find(self, words: Sequence[str]) -> tuple[int, int] | None:
        """The content span of the first run of these (case-folded) words, or None."""
        if not words:
            return None
        at = self.joined.find(" " + " ".join(words) + " ")
        if at < 0:
            return None
        first = bisect_left(self.starts, at + 1)
        return self.offsets[first][0], self.offsets[first + len(words) - 1][1]


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD_RE.findall(text)]


def quoted_spans(chunk: ChunkWords, source_text: str) -> list[tuple[int, int]]:
    """The spans of the quote's pieces found in the chunk (a piece not found whole is
    looked for sentence by sentence), sorted and without overlaps."""
    whole = _words(source_text)
    if not whole:
        return []
    found = chunk.find(whole)
    if found is not None:
        return [found]
    spans: list[tuple[int, int]] = []
    for piece in _PIECE_SPLIT_RE.split(source_text):
        words = _words(piece)
        if len(words) < MIN_PIECE_WORDS:
            continue
        span = chunk.find(words)
        if span is not None:
            spans.append(span)
            continue
        for sentence, _ in _sentences(piece):
            words = _words(sentence)
            if len(words) >= MIN_PIECE_WORDS and (span := chunk.find(words)) is not None:
                spans.append(span)
    return _merge(spans)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _sentences(text: str) -> list[tuple[str, int]]:
    """(sentence, offset) for the non-blank sentences of `text`: cut after . ! ? (and
    closing quotes) before whitespace, and at line breaks."""
    out = []
    for match in _SENTENCE_RE.finditer(text):
        sentence = match.group()
        if sentence.strip():
            lead = len(sentence) - len(sentence.lstrip())
            out.append((sentence.strip(), match.start() + lead))
    return out


def best_sentence(content: str, description: str) -> tuple[int, int] | None:
    """The span of the content's sentence that shares the most words with the description
    (words of three or more letters that are not stopwords, each weighted by how rare it
    is among the chunk's sentences; a longer sentence needs more to win). None when no
    sentence shares a word."""
    wanted = {w for w in _words(description) if len(w) >= 3 and w not in _STOPWORDS}
    if not wanted:
        return None
    sentences = _sentences(content)
    bags = [set(_words(sentence)) for sentence, _ in sentences]
    frequency = {w: sum(1 for bag in bags if w in bag) for w in wanted}
    best, best_score = None, 0.0
    for (sentence, offset), bag in zip(sentences, bags, strict=True):
        shared = wanted & bag
        if not shared:
            continue
        score = sum(math.log(1 + len(bags) / frequency[w]) for w in shared) / math.sqrt(len(bag))
        if score > best_score:
            best, best_score = (offset, offset + len(sentence)), score
    return best


def find_passage(content: str, source_text: str | None, description: str,
                 chunk: ChunkWords | None = None) -> Passage | None:
    """The claim's passage in the chunk: its quoted source text where found, else the
    best-matching sentence (approximate), else None. `chunk`: the content's words, when the
    caller looks up several claims in one chunk."""
    if source_text and source_text.strip():
        spans = quoted_spans(chunk or ChunkWords(content), source_text)
        if spans:
            return Passage(tuple(spans), approximate=False)
    sentence = best_sentence(content, " ".join(filter(None, (description, source_text))))
    return Passage((sentence,), approximate=True) if sentence is not None else None
