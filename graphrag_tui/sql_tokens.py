"""SQL as SQLite reads it, for the checks that refuse a file's schema (the store's, the run
history's): its tokens, past its comments. Light on purpose: the history may not import the
store."""

from __future__ import annotations

import re

#: SQL's tokens as SQLite reads them: a comment, a string, a quoted name, a word, a sign.
_TOKEN = re.compile(r"""--[^\n]*|/\*.*?(?:\*/|\Z)|'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?"""
                    r"|[\w$\x80-\U0010ffff]+|\S", re.DOTALL)


def sql_tokens(sql: str) -> list[str]:
    """The tokens of `sql` without its comments (SQLite reads a comment as a space:
    `COLLATE/**/NOCASE` is NOCASE, `AS/**/(...)` a generated column); a string or a quoted
    name is one token, quotes included."""
    return [token for token in _TOKEN.findall(sql) if not token.startswith(("--", "/*"))]
