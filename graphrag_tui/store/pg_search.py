"""Full-text search of a PostgreSQL store: the server's own text search, no index file.

Each kind's rows of the namespace are matched with `to_tsvector('simple', title || text)
@@ websearch_to_tsquery('simple', query)` and ranked by `ts_rank` (best first, then id by
code point). The `simple` configuration lower-cases words and does not stem them, as the
SQLite index's tokenizer does; unlike it, it keeps accents. The query is the web-search
syntax of PostgreSQL: words (all must match), "a phrase", `or`, `-word` to exclude, and,
as in the SQLite index, `prefix*` outside a phrase for the words that start so (lower-cased
by Python). A prefix is put in after the server parsed the rest: each is parsed as a word of
its own (a placeholder), and in the query's text the placeholder becomes the prefix lexeme.
Nothing is built: `ready()` is always true and `build` does nothing. graphrag-ts's
`fts_tokens` column is not used (it covers chunks only and its configuration is
graphrag-ts's choice).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

from graphrag_tui.store.explore import KINDS, Kind
from graphrag_tui.store.marks import query_terms
from graphrag_tui.store.postgres import PostgresStore
from graphrag_tui.store.search_index import (
    DEFAULT_LIMIT,
    RANK_WINDOW,
    SearchResults,
    SqliteTextSearch,
    check_query,
)

#: Per kind: the table and its (title, text) columns.
_COLUMNS: dict[Kind, tuple[str, str, str]] = {
    "community": ("rag_community_summaries", "community_name", "summary_content"),
    "entity": ("rag_entities", "name", "description"),
    "claim": ("rag_claims", "''", "description"),
    "chunk": ("rag_children", "''", "content"),
}


class PostgresTextSearch:
    """TextSearch over one namespace of a PostgreSQL store."""

    def __init__(self, store: PostgresStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.builds = 0

    def ready(self) -> bool:
        return True

    def build(self, progress: Callable[[int, int], None] | None = None,
              cancelled: Callable[[], bool] | None = None) -> bool:
        return True

    def search(self, query: str, kinds: tuple[Kind, ...] = KINDS, limit: int = DEFAULT_LIMIT) -> SearchResults:
        text = check_query(query)
        terms = query_terms(text)
        tsquery = self._tsquery(text)
        results = {}
        more: set[Kind] = set()
        for kind in kinds:
            table, title, body = _COLUMNS[kind]
            document = f"to_tsvector('simple', coalesce({title}, '') || ' ' || coalesce({body}, ''))"
            rows = self.store._pg_query(
                f"SELECT id FROM (SELECT id, ts_rank({document}, q) AS score FROM {table}, "
                "CAST(%(tsquery)s AS tsquery) AS q "
                f"WHERE namespace = %(ns)s AND {document} @@ q LIMIT {RANK_WINDOW}) AS m "
                'ORDER BY score DESC, id COLLATE "C" LIMIT %(limit)s',
                {"tsquery": tsquery, "ns": self.namespace, "limit": limit + 1},
            )
            if len(rows) > limit:
                more.add(kind)
            results[kind] = self._hits(kind, [r[0] for r in rows[:limit]], terms)
        return SearchResults(text, self.namespace, results, frozenset(more))

    def _tsquery(self, text: str) -> str:
        """The query as the server parses web-search syntax, in tsquery's text form, with
        each prefix in place of its placeholder."""
        marker = f"p{secrets.token_hex(8)}n"
        prefixes: list[str] = []

        def placeholder(found: re.Match[str]) -> str:
            if found.group(1) is not None:  # a phrase: as it is (its `*` is punctuation there)
                return found.group(0)
            prefix = _EDGE_PUNCTUATION.sub("", found.group(3)).lower()
            if not prefix:  # punctuation only, which the parser drops
                return " "
            prefixes.append(prefix)
            return f"{found.group(2)}{marker}{len(prefixes) - 1}x"

        parsed = _PREFIX_OR_PHRASE.sub(placeholder, text)
        (tsquery,) = self.store._pg_query("SELECT websearch_to_tsquery('simple', %(q)s)::text", {"q": parsed})[0]
        for number, prefix in enumerate(prefixes):
            tsquery = tsquery.replace(f"'{marker}{number}x'", _lexeme(prefix) + ":*")
        return str(tsquery)

    # The hits are made from the store's rows as for the SQLite index (the reads are portable).
    _hits = SqliteTextSearch._hits


#: A phrase (to its closing quote, or the end), or a word outside one that ends in `*`, with
#: the `-` before it: the word is what comes before its `*`s (then no letter or digit).
_PREFIX_OR_PHRASE = re.compile(r'("[^"]*"?)|(?<![^\s(])(-?)([^\s"*]+)\*+(?!\w)')

#: What a prefix starts or ends with that is not part of a word (the parser drops it).
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")


def _lexeme(word: str) -> str:
    """A lexeme in tsquery's text form: quoted, its backslashes and quotes doubled."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
