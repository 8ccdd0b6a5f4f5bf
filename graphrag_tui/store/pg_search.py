"""Full-text search of a PostgreSQL store: the server's own text search, no index file.

Each kind's rows of the namespace are matched with `to_tsvector('simple', title || text)
@@ websearch_to_tsquery('simple', query)` and ranked by `ts_rank` (best first, then id by
code point). The `simple` configuration lower-cases words and does not stem them, as the
SQLite index's tokenizer does; unlike it, it keeps accents. The query is the web-search
syntax of PostgreSQL: words (all must match), "a phrase", `or`, `-word` to exclude; a
`prefix*` is not supported (the `*` is ignored). Nothing is built: `ready()` is always true
and `build` does nothing. graphrag-ts's `fts_tokens` column is not used (it covers chunks
only and its configuration is graphrag-ts's choice).
"""

from __future__ import annotations

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
        results = {}
        more: set[Kind] = set()
        for kind in kinds:
            table, title, body = _COLUMNS[kind]
            document = f"to_tsvector('simple', coalesce({title}, '') || ' ' || coalesce({body}, ''))"
            rows = self.store._pg_query(
                f"SELECT id FROM (SELECT id, ts_rank({document}, q) AS score FROM {table}, "
                "websearch_to_tsquery('simple', %(query)s) AS q "
                f"WHERE namespace = %(ns)s AND {document} @@ q LIMIT {RANK_WINDOW}) AS m "
                'ORDER BY score DESC, id COLLATE "C" LIMIT %(limit)s',
                {"query": text.replace("*", " "), "ns": self.namespace, "limit": limit + 1},
            )
            if len(rows) > limit:
                more.add(kind)
            results[kind] = self._hits(kind, [r[0] for r in rows[:limit]], terms)
        return SearchResults(text, self.namespace, results, frozenset(more))

    # The hits are made from the store's rows as for the SQLite index (the reads are portable).
    _hits = SqliteTextSearch._hits
