"""What an answer rests on, as both faces' views show it: the communities its text cites
(community ids, `[Community harbor-city/3]` the extractive model's form or an id anywhere,
and GraphRAG's `[Data: Reports (2, 7, +more)]`, whose numbers are community numbers of the
run's namespace: the importer's ids are `<namespace>/<number>`), then the rest of its
selected Map answers' communities. The run view's list and Compare's tab read it here, so
that they agree."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..engine import SearchResult

#: GraphRAG's citation, `[Data: Reports (2, 7, +more); Entities (5)]` (its prompts' form), and
#: the `Reports (...)` in it, whose items that are numbers are reports.
_DATA_RE = re.compile(r"\[Data:[^\[\]]*\]", re.IGNORECASE)
_REPORTS_RE = re.compile(r"(Reports\s*\()([^()\]]*)(\))", re.IGNORECASE)
#: The most communities an answer is listed as citing: a hostile answer cited 20,049 (in a
#: namespace of 28), and every key took 3 s.
MAX_CITED = 500


def _id_pattern(ids: Iterable[str]) -> re.Pattern[str] | None:
    """Any of the ids, not inside a longer id (`ns/1` is not in `ns/12`)."""
    alternatives = sorted({i for i in ids if i}, key=len, reverse=True)
    if not alternatives:
        return None
    return re.compile(r"(?<![\w/-])(" + "|".join(map(re.escape, alternatives)) + r")(?![\w/-])")


def _report_ids(text: str, namespace: str) -> list[tuple[int, int, str]]:
    """(start, end, community id) of each number of a `Reports (...)` in a `[Data: ...]`."""
    found = []
    for data in _DATA_RE.finditer(text):
        for match in _REPORTS_RE.finditer(text, data.start(), data.end()):
            start = match.start(2)
            for item in match.group(2).split(","):
                digits = item.strip()
                if digits.isascii() and digits.isdigit():
                    first = start + len(item) - len(item.lstrip())
                    # (as written, less leading zeros: int() of 4,301 digits raises, and crashed the app)
                    found.append((first, first + len(digits), f"{namespace}/{digits.lstrip('0') or '0'}"))
                start += len(item) + 1
    return found


def citation_spans(text: str, namespace: str, ids: Iterable[str]) -> list[tuple[int, int, str]]:
    """(start, end, id) of every citation, in text order, without overlaps."""
    spans = _report_ids(text, namespace)
    pattern = _id_pattern(ids)
    if pattern is not None:
        spans += [(m.start(), m.end(), m.group(1)) for m in pattern.finditer(text)]
    spans.sort()
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def cited_ids(text: str, namespace: str, ids: Iterable[str]) -> list[str]:
    """The communities the text cites (`ids` found in it, and the numbers of `Reports (...)`
    as ids of `namespace`), each once, in order of first appearance."""
    return list(dict.fromkeys(cid for _, _, cid in citation_spans(text, namespace, ids)))


def rests_on(result: SearchResult) -> tuple[list[str], list[str]]:
    """(the communities the final answer's text cites, the rest of the selected answers'
    communities), each in order of first appearance."""
    selected = result.cited_community_ids
    in_answer = cited_ids(result.answer or "", result.namespace, selected)[:MAX_CITED]
    cited = set(in_answer)
    return in_answer, [c for c in selected if c not in cited]
