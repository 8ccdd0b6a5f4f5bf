"""Citations inside an answer's text (`session.citations` finds them) as links:
`link_citations` makes each one a Markdown link `community-<nonce>:<id>` that the answer
panel opens (the Markdown widget never opens links itself). The nonce is this process's: a link the model wrote,
`[ns/1](community:ns/2)`, showed one community and opened another; no model can write one
the panel opens."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from itertools import accumulate
from urllib.parse import quote

from ..session.citations import citation_spans
from .model_markdown import literal_html_parser

SCHEME = f"community-{secrets.token_hex(8)}:"

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
    for start, end, cid in citation_spans(text, namespace, known):
        if cid not in known or any(a <= start < b for a, b in kept):
            continue
        out.append(text[position:start])
        out.append(f"[{text[start:end]}]({SCHEME}{quote(cid, safe='')})")
        position = end
    out.append(text[position:])
    return "".join(out)
