"""The built-in extractive model: the offline default (SPEC §4).

No network, deterministic, and *not* an LLM. Map scores the sentences of a batch against
the query with BM25 and answers with the best ones, citing their communities; Reduce
merges the selected intermediate answers. Replies are JSON text, parsed and validated by
the engine exactly like a remote model's reply.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..engine import ChatRequest

K1 = 1.2
B = 0.75
#: Sentences in a Map answer.
MAP_TOP_SENTENCES = 3
#: Longest sentence quoted in a Map answer (code points); longer ones are cut with "…".
MAX_SENTENCE_CHARS = 300

STOPWORDS: frozenset[str] = frozenset(
    """
    a an and are as at be been being but by can could did do does for from had has have
    how i if in into is it its me my no not of on or our so than that the their them
    then there these they this those to was we were what when where which who whom why
    will with would you your about over any all also just more most other some such
    tell give describe explain list
    的 了 是 吗 呢 吧 啊 什么 什 么 哪些 怎么 如何 为什么 和 与 及 在 这 那 个 些 有
    """.split()
)

_HEADER_RE = re.compile(r"^\[Community ID: (.*) \| summary part ([0-9]{1,9})\]\s*$")
_SECTION_RE = re.compile(r"^\s*\[(?:Community summary|Supporting claims|Source excerpts)\]:\s*")
_BULLET_RE = re.compile(r"^\s*-\s+")
_CHUNK_RE = re.compile(r"^\[Chunk [^\]]*\]\s*")
# Split after . ! ? when followed by whitespace; always after full-width 。！？；.
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
_USEFULNESS_HEADER_RE = re.compile(r"^\[Usefulness: ([^;\]]*); Community IDs: (.*)\]\s*$")
_CITATION_TAIL_RE = re.compile(r"(?:\s*\[Community [^\[\]]*\])+\s*$")
_CITATION_RE = re.compile(r"\[Community [^\[\]]*\]")


_CJK = (
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul Compatibility Jamo
    "\u31f0-\u31ff"  # Katakana Phonetic Extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul Syllables
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\U00020000-\U0003134f"  # CJK Extensions B-H
    "]"
)
#: A run of CJK characters, or a run of other word characters.
_TOKEN_RE = re.compile(rf"({_CJK}+)|((?:(?!{_CJK})\w)+)")
_CJK_PAIR_RE = re.compile(rf"{_CJK}{{2}}")


def tokenize(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Lowercase Unicode word tokens (after NFKC). A run of CJK characters (Han, Hiragana,
    Katakana, Hangul) gives each character and each adjacent pair (bigram), so Chinese
    queries match without a word segmenter."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run = match.group(1)
        if run is None:
            out.append(match.group(2))
        else:
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    if drop_stopwords:
        out = [t for t in out if t not in STOPWORDS]
    return out


def query_terms(query: str) -> list[str]:
    """Distinct query tokens in first-occurrence order; stopwords (and CJK bigrams with a
    stopword character) dropped unless that leaves nothing (a query of only stopwords
    still matches on them)."""
    terms = [
        t
        for t in dict.fromkeys(tokenize(query))
        # a CJK bigram straddling a stopword character ("算是", "是什") is noise
        if not (_CJK_PAIR_RE.fullmatch(t) and (t[0] in STOPWORDS or t[1] in STOPWORDS))
    ]
    if not terms:
        terms = list(dict.fromkeys(tokenize(query, drop_stopwords=False)))
    return terms


def _clean(text: str) -> str:
    """Control and format characters become spaces; whitespace collapses."""
    chars = [" " if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") else c for c in text]
    return " ".join("".join(chars).split())


@dataclass
class _Sentence:
    text: str
    community_id: str | None
    position: int
    tokens: list[str]


@dataclass
class _Part:
    """A community's text in the batch: one part, or consecutive parts joined again.
    `cut_before`/`cut_after`: the text may start/end in the middle of a word, because the
    batcher splits a long community text at any code point (SPEC §3.4)."""

    community_id: str | None
    first: int
    last: int
    lines: list[str]
    cut_before: bool = False
    cut_after: bool = False


def _parts(content: str, spans: Sequence[tuple[str, int, int, int]] = ()) -> list[_Part]:
    """The parts of the batch: at `spans` (ChatRequest.parts), or after the headers found in
    the content (text before any header has no id). Consecutive parts of one community are
    joined where they were cut (the last line of one and the first of the next make one line
    again), so a sentence split over two parts is whole."""
    sections = ((cid, number, content[start:end].splitlines()) for cid, number, start, end in spans) if spans \
        else _sections(content)
    parts: list[_Part] = []
    for community_id, number, lines in sections:
        last = parts[-1] if parts else None
        if last is not None and community_id is not None and last.community_id == community_id \
                and number == last.last + 1:
            last.last = number
            if last.lines and lines:
                last.lines[-1] += lines[0]
                lines = lines[1:]
            last.lines += lines
        else:
            parts.append(_Part(community_id, number, number, list(lines)))
    for part in parts:
        part.cut_before = part.first > 1
    if len(parts) == 1:  # a part cut at its end fills a batch of its own
        parts[0].cut_after = True
    return parts


def _sections(content: str) -> Iterator[tuple[str | None, int, list[str]]]:
    """(community id, part, lines) after each header found in the content; the text before
    the first header (None, 1, lines)."""
    community_id: str | None = None
    number, lines, started = 1, [], False
    for line in content.splitlines():
        header = _HEADER_RE.match(line)
        if header is None:
            lines.append(line)
            continue
        if started or lines:
            yield community_id, number, lines
        community_id, number, lines, started = header.group(1), int(header.group(2)), [], True
    if started or lines:
        yield community_id, number, lines


#: A word character that is not CJK: a word that can be cut in two.
_LATIN_WORD_RE = re.compile(rf"(?:(?!{_CJK})\w)")
_CUT_CHUNK_RE = re.compile(r"^\s*-\s+\[Chunk [^\]]*$")


def _drop_cut_words(part: _Part) -> list[str]:
    """The part's lines without a word cut in two at its start or end; "…" marks the cut."""
    lines = list(part.lines)
    if part.cut_before and lines and _LATIN_WORD_RE.match(lines[0][:1]):
        rest = lines[0].split(None, 1)
        lines[0] = "…" + rest[1] if len(rest) == 2 else ""
    if part.cut_after and lines:
        last = lines[-1]
        if _CUT_CHUNK_RE.match(last):  # a chunk header cut before its "]"
            lines[-1] = ""
        elif last[-1:] and _LATIN_WORD_RE.match(last[-1]) and len(last.split()) > 1:
            lines[-1] = last.rsplit(None, 1)[0] + "…"
    return lines


def _sentences(content: str, spans: Sequence[tuple[str, int, int, int]] = ()) -> list[_Sentence]:
    out: list[_Sentence] = []
    for part in _parts(content, spans):
        community_id = part.community_id
        for line in _drop_cut_words(part):
            line = _SECTION_RE.sub("", line)
            if _BULLET_RE.match(line):
                line = _BULLET_RE.sub("", line, count=1)
                line = _CHUNK_RE.sub("", line, count=1)
            for piece in _SENTENCE_SPLIT_RE.split(line):
                text = _clean(piece)
                if not text:
                    continue
                tokens = tokenize(text, drop_stopwords=False)
                if not tokens:
                    continue  # punctuation only
                out.append(_Sentence(text, community_id, len(out), tokens))
    return out


def _shorten(text: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class MapScore:
    usefulness: int
    answer: str
    coverage: float
    strength: float


def score_batch(query: str, content: str, spans: Sequence[tuple[str, int, int, int]] = ()) -> MapScore:
    """Score one Map batch.

    Sentences of the batch are the documents; `N` sentences, average length `avgdl`
    (tokens), `n(t)` sentences containing term `t`. With the query's distinct terms `Q`:

        idf(t)   = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))            (BM25, always > 0)
        score(s) = sum over t in Q of idf(t) * f(t,s) * (k1 + 1)
                   / (f(t,s) + k1 * (1 - b + b * |s| / avgdl))         k1 = 1.2, b = 0.75
        w(t)     = ln(1 + (N - m + 0.5) / (m + 0.5)) with m = max(n(t), 1)
                   (the idf, a term absent from the batch weighing like one in 1 sentence)
        coverage = sum of w(t) over t in Q with n(t) > 0  /  sum of w(t) over Q
        strength = min(1, max score(s) / sum of w(t) over Q)
        usefulness = 0 if no term of Q occurs in the batch, else
                     clamp(floor(100 * (coverage + strength) / 2 + 0.5), 1, 100)

    `strength` is 1 for a sentence of average length holding every query term once.
    Sums run in query-term order, so the result is the same on every run.
    The answer is the top 3 sentences with score > 0 (best first, ties by position), each
    followed by ` [Community <id>]`, one per line; empty when usefulness is 0.
    """
    terms = query_terms(query)
    sentences = _sentences(content, spans)
    if not terms or not sentences:
        return MapScore(0, "", 0.0, 0.0)
    n_docs = len(sentences)
    avgdl = sum(len(s.tokens) for s in sentences) / n_docs
    tfs: list[dict[str, int]] = []
    df: dict[str, int] = {t: 0 for t in terms}
    for s in sentences:
        tf: dict[str, int] = {}
        for tok in s.tokens:
            if tok in df:
                tf[tok] = tf.get(tok, 0) + 1
        tfs.append(tf)
        for tok in tf:
            df[tok] += 1
    idf = {t: _idf(n_docs, df[t]) for t in terms}
    # A term missing from the batch weighs as much as one found in a single sentence.
    weight = {t: _idf(n_docs, max(df[t], 1)) for t in terms}
    total_idf = sum(weight[t] for t in terms)
    covered_idf = sum(weight[t] for t in terms if df[t] > 0)
    if covered_idf <= 0:
        return MapScore(0, "", 0.0, 0.0)

    scores: list[float] = []
    for s, tf in zip(sentences, tfs, strict=True):
        norm = K1 * (1 - B + B * len(s.tokens) / avgdl)
        score = 0.0
        for t in terms:
            f = tf.get(t, 0)
            if f:
                score += idf[t] * f * (K1 + 1) / (f + norm)
        scores.append(score)

    coverage = covered_idf / total_idf
    top = max(scores)
    strength = min(1.0, top / total_idf)
    usefulness = max(1, min(100, math.floor(100 * (coverage + strength) / 2 + 0.5)))

    ranked = sorted(
        (i for i in range(n_docs) if scores[i] > 0), key=lambda i: (-scores[i], i)
    )
    lines: list[str] = []
    seen: set[str] = set()
    for i in ranked:
        s = sentences[i]
        key = s.text.casefold()
        if key in seen:
            continue  # the same sentence twice in a batch: quote it once
        seen.add(key)
        cite = f" [Community {s.community_id}]" if s.community_id is not None else ""
        lines.append(_shorten(s.text) + cite)
        if len(lines) == MAP_TOP_SENTENCES:
            break
    return MapScore(usefulness, "\n".join(lines), coverage, strength)


def _reduce_blocks(content: str) -> list[tuple[list[str], list[str]]]:
    """(community ids, answer lines) per block, in the given order."""
    blocks: list[tuple[list[str], list[str]]] = []
    current: tuple[list[str], list[str]] | None = None
    for raw in content.splitlines():
        header = _USEFULNESS_HEADER_RE.match(raw)
        if header:
            ids = [i.strip() for i in header.group(2).split(",") if i.strip()]
            current = (ids, [])
            blocks.append(current)
            continue
        line = _clean(raw)
        if not line:
            continue
        if current is None:
            current = ([], [])
            blocks.append(current)
        current[1].append(line)
    return blocks


def merge_answers(content: str) -> str:
    """Reduce: the ranked answers' lines in order, duplicates dropped (their citations
    merged into the kept line), all of them after a lead line (the app scrolls)."""
    blocks = _reduce_blocks(content)
    n = len(blocks)
    lead = f"From {n} intermediate answer{'s' if n != 1 else ''} (extractive, not an LLM):"
    kept: list[list[str]] = []  # [sentence text, citation, citation, ...]
    index: dict[str, int] = {}
    for ids, lines in blocks:
        for line in lines:
            tail = _CITATION_TAIL_RE.search(line)
            if tail:
                text = line[: tail.start()].rstrip()
                cites = _CITATION_RE.findall(tail.group())
            else:
                text = line
                cites = [f"[Community {i}]" for i in ids]
            if not text:
                continue
            key = " ".join(text.casefold().split())
            if key in index:
                entry = kept[index[key]]
                entry.extend(c for c in cites if c not in entry[1:])
                continue
            index[key] = len(kept)
            kept.append([text, *dict.fromkeys(cites)])
    if not kept:
        if n == 0:
            return ""
        return lead + "\n\n(the intermediate answers had no text)"
    # A Markdown list, so the app renders one sentence per line.
    return lead + "\n\n" + "\n".join("- " + " ".join(entry) for entry in kept)


def _to_json(obj: dict[str, object]) -> str:
    """JSON text of the reply. Backticks are written as \\u0060, so quoted text holding a
    Markdown fence cannot make the engine's parser take a "fenced block" out of the reply;
    text that is not valid UTF-8 (lone surrogates) falls back to ASCII escapes."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj)
    return text.replace("`", "\\u0060")


class ExtractiveModel:
    """BM25 sentence extraction; see `score_batch` and `merge_answers`."""

    description = "extractive, offline: not an LLM"
    #: Map requests say where each part's text is (ChatRequest.parts).
    reads_parts = True

    def __repr__(self) -> str:
        return "ExtractiveModel()"

    def reply(self, request: ChatRequest) -> str:
        if request.stage == "map":
            result = score_batch(request.query, request.content, request.parts)
            return _to_json({"answer": result.answer, "usefulness": result.usefulness})
        if request.stage == "rate":  # dynamic selection: the text's Map usefulness on 0..5
            usefulness = score_batch(request.query, request.content).usefulness
            rating = (usefulness * 5 + 99) // 100  # 0 stays 0; any match is at least 1
            return _to_json({"reason": f"extractive: BM25 usefulness {usefulness} of 100", "rating": rating})
        answer = merge_answers(request.content)
        if not answer:
            answer = "No intermediate answers to merge (extractive, not an LLM)."
        return _to_json({"answer": answer})

    async def complete(self, request: ChatRequest) -> str:
        return self.reply(request)

    async def aclose(self) -> None:
        return None
