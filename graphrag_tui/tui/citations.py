"""Citations inside an answer's text: community ids (`[Community harbor-city/3]`, the
extractive model's form, or an id anywhere) and GraphRAG's `[Data: Reports (2, 7, +more)]`,
whose numbers are community numbers of the run's namespace (the importer's ids are
`<namespace>/<number>`).

`cited_ids` lists them in order of first appearance; `link_citations` makes each one a
Markdown link `community-<nonce>:<id>` that the answer panel opens (the Markdown widget
never opens links itself). The nonce is this process's: a link the model wrote,
`[ns/1](community:ns/2)`, showed one community and opened another; no model can write one
the panel opens."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from itertools import accumulate
from urllib.parse import quote

from .model_markdown import literal_html_parser

#: `Reports (1, 2, 3, +more)` inside a `[Data: ...]` citation (GraphRAG's prompts' form).
_REPORTS_RE = re.compile(r"(Reports\s*\()([^()\]]*)(\))", re.IGNORECASE)
_NUMBER_RE = re.compile(r"[0-9]+")
SCHEME = f"community-{secrets.token_hex(8)}:"


def _id_pattern(ids: Iterable[str]) -> re.Pattern[str] | None:
    """Any of the ids, not inside a longer id (`ns/1` is not in `ns/12`)."""
    alternatives = sorted({i for i in ids if i}, key=len, reverse=True)
    if not alternatives:
        return None
    return re.compile(r"(?<![\w/-])(" + "|".join(map(re.escape, alternatives)) + r")(?![\w/-])")


def _report_ids(text: str, namespace: str) -> list[tuple[int, int, str]]:
    """(start, end, community id) of each number inside `Reports (...)`."""
    found = []
    for match in _REPORTS_RE.finditer(text):
        base = match.start(2)
        for number in _NUMBER_RE.finditer(match.group(2)):
            # (its digits as written, less leading zeros: int() of 4,301 digits raises, and crashed the app)
            found.append((base + number.start(), base + number.end(), f"{namespace}/{number.group().lstrip('0') or '0'}"))
    return found


def _citations(text: str, namespace: str, ids: Iterable[str]) -> list[tuple[int, int, str]]:
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
    return list(dict.fromkeys(cid for _, _, cid in _citations(text, namespace, ids)))


#: Where a link would change what the Markdown shows: a code span, a link (its text and its
#: address), an autolink, a bare address.
_INLINE_KEPT = re.compile(r"(`+)[\s\S]*?(?<!`)\1(?!`)|\[[^\]\n]*\]\([^)\n]*\)|<[a-z][a-z0-9+.-]*:[^>\s]*>"
                          r"|https?://\S+", re.IGNORECASE)


def _kept_as_written(text: str) -> list[tuple[int, int]]:
    """(start, end) of the parts of `text` a citation link is not made in: code blocks
    (fenced or indented, as the Markdown reader finds them) and _INLINE_KEPT."""
    starts = [0, *accumulate(map(len, text.splitlines(keepends=True)))]
    spans = [(starts[token.map[0]], starts[min(token.map[1], len(starts) - 1)])
             for token in literal_html_parser().parse(text)
             if token.type in ("fence", "code_block") and token.map]
    return spans + [m.span() for m in _INLINE_KEPT.finditer(text)]


def link_citations(text: str, namespace: str, ids: Iterable[str]) -> str:
    """The Markdown text with each citation (of `ids`, or a `Reports (...)` number whose id
    is in `ids`) made a `community:` link, but in code and in links, which it would change."""
    known = set(ids)
    kept = _kept_as_written(text)
    out, position = [], 0
    for start, end, cid in _citations(text, namespace, known):
        if cid not in known or any(a <= start < b for a, b in kept):
            continue
        out.append(text[position:start])
        out.append(f"[{text[start:end]}]({SCHEME}{quote(cid, safe='')})")
        position = end
    out.append(text[position:])
    return "".join(out)
