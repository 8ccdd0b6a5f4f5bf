"""The words a full-text query matches, found again in a row's text: the snippet shown
for a search result and the marks on its matching words.

Words are compared as FTS5's `unicode61 remove_diacritics 2` tokenizer compares them:
runs of letters and digits, case-folded, accents removed. A query term ending in `*` is a
prefix. Operators (AND, OR, NOT, NEAR) and column filters are not words to mark.
"""

from __future__ import annotations

import re
import unicodedata

from graphrag_tui.safe_text import one_line

#: The length of a snippet (characters), the match placed about a third of the way in.
SNIPPET_LENGTH = 160
#: Han, kana: scripts written without spaces. The tokenizer would take a whole run of them
#: as one word, so each character is indexed (and searched) as a word of its own.
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"([{_CJK_CLASS}])")
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_WORD = re.compile(f"[{_CJK_CLASS}]|(?:(?![{_CJK_CLASS}])[^\\W_])+", re.UNICODE)
_QUERY_WORD = re.compile(f"([{_CJK_CLASS}]|(?:(?![{_CJK_CLASS}])[^\\W_])+)(\\*?)(\\s*:)?", re.UNICODE)
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})


def spaced(text: str) -> str:
    """The text as it is indexed: each Han or kana character a word of its own."""
    return _CJK.sub(r" \1 ", text) if _CJK.search(text) else text


def fts_query(query: str) -> str:
    """The query as FTS5 gets it: a run of Han or kana characters is a phrase of
    one-character words (inside a quoted phrase, just those words)."""
    if not _CJK.search(query):
        return query
    parts = query.split('"')
    for index, part in enumerate(parts):
        if index % 2:  # inside quotes
            parts[index] = spaced(part)
        else:
            parts[index] = _CJK_RUN.sub(lambda m: '"' + " ".join(m.group()) + '"', part)
    return '"'.join(parts)


def fold(word: str) -> str:
    """A word as the tokenizer indexes it."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def query_terms(query: str) -> list[str]:
    """The query's words, folded; a prefix keeps its trailing `*`."""
    terms = []
    for match in _QUERY_WORD.finditer(query):
        word, star, column = match.groups()
        if column or word in _OPERATORS:
            continue
        terms.append(fold(word) + star)
    return list(dict.fromkeys(terms))


def _matches(word: str, terms: list[str]) -> bool:
    folded = fold(word)
    return any(folded.startswith(t[:-1]) if t.endswith("*") else folded == t for t in terms)


def snippet(text: str, terms: list[str], length: int = SNIPPET_LENGTH) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About `length` characters of `text` (on one line, cleaned) around its first matching
    word, and the (start, end) offsets of every matching word in that snippet. Of a long
    text only a stretch around that word is read: cleaning all of a 100 MB text, and listing
    every match in it, took 30 s and 2 GB a result."""
    if len(text) <= WHOLE_TEXT_UP_TO:
        return _snippet(text, terms, length)
    first = _first_match(text, terms)
    low, high = max(0, first - length), min(len(text), first + 2 * length)
    shown, marks = _snippet(text[low:high], terms, length)
    if low and not shown.startswith("…"):
        shown, marks = "…" + shown, tuple((s + 1, e + 1) for s, e in marks)
    if high < len(text) and not shown.endswith("…"):
        shown += "…"
    return shown, marks


#: Texts up to this long are read whole for their snippet.
WHOLE_TEXT_UP_TO = 100_000


def _first_match(text: str, terms: list[str]) -> int:
    """Where the first matching word of a long text starts (0: none found): looked for word by
    word in its first WHOLE_TEXT_UP_TO characters, then past them by its letters alone, in
    one regular expression (word by word, 100 MB took two minutes)."""
    start = next((m.start() for m in _WORD.finditer(text, 0, WHOLE_TEXT_UP_TO) if _matches(m.group(), terms)), None)
    if start is not None:
        return start
    words = [re.escape(t.removesuffix("*")) for t in terms if t.removesuffix("*")]
    found = re.search(r"(?<![^\W_])(?:" + "|".join(words) + ")", text, re.IGNORECASE) if words else None
    return found.start() if found else 0


def _snippet(text: str, terms: list[str], length: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    flat = one_line(text)
    spans = [m.span() for m in _WORD.finditer(flat) if _matches(m.group(), terms)]
    start = 0
    if spans and len(flat) > length:
        start = max(0, min(spans[0][0] - length // 3, len(flat) - length))
        if start:  # begin at a word
            space = flat.find(" ", start)
            start = space + 1 if 0 <= space < spans[0][0] else start
    end = min(len(flat), start + length)
    prefix = "…" if start else ""
    suffix = "…" if end < len(flat) else ""
    shift = len(prefix) - start
    marks = tuple((s + shift, e + shift) for s, e in spans if s >= start and e <= end)
    return prefix + flat[start:end] + suffix, marks
