"""Full-text search over one namespace of a store: an SQLite FTS5 index in the user cache.

The store stays read-only: the index is a separate file in the cache directory, named
after the store's resolved path and the namespace, and it records the store's identity
(path, size and mtime of the file and of a `-wal` beside it, and the namespace). It is
used only while that identity matches; when the store changes it is built again, and it
is never written while the store is unchanged. A build writes a temporary file and moves
it into place, so an interrupted build leaves no half index.

The index is contentless (`content=''`): it holds the words, not the texts, and stays a
fraction of the store's size. Snippets and the marks on matching words are made from the
store's rows for the page of results shown (`marks.py`).

`TextSearch` is what the faces use; a store on a database server answers the same calls
with its own text search, `ready()` always true and `build` a no-op.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from graphrag_tui.errors import InputError
from graphrag_tui.safe_text import one_line
from graphrag_tui.store.explore import KIND_TABLES, KINDS, Kind, entity_name_sql
from graphrag_tui.store.marks import fts_query, query_terms, snippet, spaced
from graphrag_tui.store.validation import StoreError

if TYPE_CHECKING:
    from graphrag_tui.store.store import CommunityStore

#: Bumped when the index's layout changes: an index of another version is rebuilt.
INDEX_VERSION = 3
#: Rows read from the store per query while building (the store's lock is free in between,
#: so the app's other reads of the store go on).
BUILD_BATCH = 2000
#: A kind's matches are ranked (bm25) among the first this many, in index order: ranking
#: every match of a word that occurs in half a million claims would take seconds.
RANK_WINDOW = 2000
DEFAULT_LIMIT = 20
#: What FTS5 says of a query it cannot parse (any other error is the index's: a damaged
#: one said the query could not be parsed).
_QUERY_ERROR = re.compile(
    r"fts5: (syntax error|parser stack overflow)|no such column|unknown special query|unterminated string"
    r"|expected integer")

#: Per kind: the store's query of (id, title, text) for a namespace, by id, after an id.
_ROWS: dict[Kind, str] = {
    "community": "SELECT id, community_name, summary_content FROM rag_community_summaries",
    "entity": "SELECT id, name, description FROM rag_entities",
    "claim": "SELECT id, NULL, description FROM rag_claims",
    "chunk": "SELECT id, NULL, content FROM rag_children",
}
#: Then the id's type and its value as stored (a text's bytes), which the next page starts after.
_ROWS_SQL: dict[Kind, str] = {
    kind: sql.replace(" FROM", ", typeof(id), CASE typeof(id) WHEN 'text' THEN CAST(id AS BLOB) ELSE id END FROM", 1)
    for kind, sql in _ROWS.items()
}


def _after_clause(after: tuple[str, object] | None) -> str:
    if after is None:
        return ""
    return " AND id > CAST(? AS TEXT)" if after[0] == "text" else " AND id > ?"


#: Per kind: (id, title, text) of the rows whose ids are in a JSON array, for the results
#: shown: a claim is titled by its entities, a chunk by its document.
_SHOWN_SQL: dict[Kind, str] = {
    "community": _ROWS["community"] + " WHERE id IN (SELECT value FROM json_each(?))",
    "entity": _ROWS["entity"] + " WHERE id IN (SELECT value FROM json_each(?))",
    "claim": f"SELECT c.id, coalesce({entity_name_sql('c.subject_entity_id')}, CAST(c.subject_entity_id AS TEXT), '') "
             f"|| coalesce(' -> ' || coalesce({entity_name_sql('c.object_entity_id')}, CAST(c.object_entity_id AS TEXT)), "
             "''), c.description FROM rag_claims AS c WHERE c.id IN (SELECT value FROM json_each(?))",
    "chunk": "SELECT ch.id, p.title, ch.content FROM rag_children AS ch "
             "LEFT JOIN rag_parents AS p ON p.id = ch.parent_id WHERE ch.id IN (SELECT value FROM json_each(?))",
}


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


@dataclass(frozen=True)
class SearchHit:
    id: str
    kind: Kind
    title: str
    snippet: str
    #: (start, end) offsets in `snippet` of the words that match the query.
    marks: tuple[tuple[int, int], ...] = ()

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "kind": self.kind, "title": self.title, "snippet": self.snippet}


@dataclass(frozen=True)
class SearchResults:
    query: str
    namespace: str
    results: dict[Kind, list[SearchHit]]
    #: Kinds with more matches than were ranked (see RANK_WINDOW) or shown.
    more: frozenset[Kind] = frozenset()

    def as_json(self) -> dict[str, object]:
        return {
            "query": self.query,
            "namespace": self.namespace,
            "results": {kind: [hit.as_json() for hit in hits] for kind, hits in self.results.items()},
        }


class TextSearch(Protocol):
    """Full-text search over one namespace of a store."""

    namespace: str

    def ready(self) -> bool: ...

    def build(self, progress: Callable[[int, int], None] | None = None,
              cancelled: Callable[[], bool] | None = None) -> bool: ...

    def search(self, query: str, kinds: tuple[Kind, ...] = KINDS, limit: int = DEFAULT_LIMIT) -> SearchResults: ...


#: The most words (operators included) a query may have: each term reads all its places in
#: the index, so a query repeating a word that a 1 MB text holds 200,000 times took 38 s and
#: 560 MB at 200 words, and ran out of memory at 800.
MAX_QUERY_WORDS = 32


def check_query(query: str) -> str:
    """The trimmed query; InputError when there is nothing to search for, or too much."""
    text = query.strip()
    if not text:
        raise InputError("The search query is empty")
    words = len(text.split())
    if words > MAX_QUERY_WORDS:
        raise InputError(f"The search query has {words} words: search for at most {MAX_QUERY_WORDS}")
    return text


def store_identity(path: Path, namespace: str) -> dict[str, object]:
    """What the index must match: the file's (and its `-wal`'s) size and mtime."""
    resolved = path.resolve()
    stat = resolved.stat()
    wal = resolved.with_name(resolved.name + "-wal")
    wal_stat = wal.stat() if wal.exists() else None
    return {
        "version": INDEX_VERSION,
        "path": str(resolved),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "wal": [wal_stat.st_size, wal_stat.st_mtime_ns] if wal_stat else None,
        "namespace": namespace,
    }


#: The tables an index has: one missing (a damaged or edited file) and it is built again.
_INDEX_TABLES = {"meta", *(f"{table}_{kind}" for kind in KINDS for table in ("fts", "ids"))}


class SqliteTextSearch:
    """The FTS5 index of one namespace of an SQLite store, in `cache_dir`."""

    def __init__(self, store: CommunityStore, namespace: str, cache_dir: Path) -> None:
        self.store = store
        self.namespace = namespace
        name = hashlib.sha256(json.dumps([str(store.path.resolve()), namespace]).encode()).hexdigest()[:32]
        self.path = Path(cache_dir) / "search" / f"{name}.sqlite"
        #: How many times this object wrote the index (tests: never while the store is unchanged).
        self.builds = 0

    # -- the index file -------------------------------------------------------------------

    def _identity(self) -> dict[str, object]:
        try:
            return store_identity(self.store.path, self.namespace)
        except OSError as error:
            raise StoreError(f"Cannot read store {self.store.path}: {error.strerror or error}") from None

    def _open_index(self) -> sqlite3.Connection | None:
        """The index read-only if it exists and matches the store, else None."""
        if not self.path.is_file():
            return None
        try:
            conn = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error:
            return None
        try:
            (recorded,) = conn.execute("SELECT identity FROM meta").fetchone()
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if json.loads(recorded) == self._identity() and tables >= _INDEX_TABLES:  # (else built again)
                return conn
        except (sqlite3.Error, TypeError, ValueError):
            pass
        conn.close()
        return None

    def ready(self) -> bool:
        conn = self._open_index()
        if conn is None:
            return False
        conn.close()
        return True

    def build(self, progress: Callable[[int, int], None] | None = None,
              cancelled: Callable[[], bool] | None = None) -> bool:
        """Build the index unless a current one exists. `progress(done, total)` is called
        as rows are indexed; `cancelled()` true stops the build (nothing is kept) and
        returns False. Raises StoreError when the store cannot be read, InputError when
        the cache cannot be written."""
        if self.ready():
            return True
        identity = self._identity()
        totals = {
            kind: int(self.store._query(f"SELECT count(*) FROM {KIND_TABLES[kind]} WHERE namespace = ?",
                                        (self.namespace,))[0][0])
            for kind in KINDS
        }
        total, done = sum(totals.values()), 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputError(f"Cannot write the search index in {self.path.parent}: {error.strerror or error}") from None
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        conn: sqlite3.Connection | None = None
        try:
            temporary.unlink(missing_ok=True)
            conn = sqlite3.connect(temporary, check_same_thread=False)
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("CREATE TABLE meta (identity TEXT NOT NULL)")
            for kind in KINDS:
                conn.execute(f"CREATE VIRTUAL TABLE fts_{kind} USING fts5(title, body, content='', "
                             "tokenize='unicode61 remove_diacritics 2')")
                conn.execute(f"CREATE TABLE ids_{kind} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL)")
            if progress:
                progress(0, total)
            for kind in KINDS:
                rowid, after = 0, None
                while True:
                    if cancelled and cancelled():
                        return False
                    # From the first id of any type (`id > ''` left out numbers, which sort first), then
                    # after the last id as stored: a text id's bytes (one that is not UTF-8 reads as
                    # U+FFFD, which sorts before it, and the same page came back forever).
                    rows = self.store._query(
                        f"{_ROWS_SQL[kind]} WHERE namespace = ? AND id IS NOT NULL{_after_clause(after)} "
                        f"ORDER BY id LIMIT {BUILD_BATCH}",
                        (self.namespace,) if after is None else (self.namespace, after[1]),
                    )
                    if not rows:
                        break
                    after = rows[-1][3:]
                    numbered = [(rowid + i + 1, _as_text(r[0]), spaced(_as_text(r[1])), spaced(_as_text(r[2])))
                                for i, r in enumerate(rows)]
                    rowid += len(rows)
                    conn.executemany(f"INSERT INTO ids_{kind} VALUES (?, ?)", [(n, i) for n, i, _, _ in numbered])
                    conn.executemany(f"INSERT INTO fts_{kind} (rowid, title, body) VALUES (?, ?, ?)",
                                     [(n, t, b) for n, _, t, b in numbered])
                    done += len(rows)
                    if progress:
                        progress(done, total)
                conn.execute(f"INSERT INTO fts_{kind} (fts_{kind}) VALUES ('optimize')")
            conn.execute("INSERT INTO meta VALUES (?)", (json.dumps(identity),))
            conn.commit()
            conn.close()
            os.replace(temporary, self.path)
            self.builds += 1
            return True
        except (sqlite3.Error, OSError) as error:  # (a folder where the index goes, a cache folder not writable)
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise InputError(f"Cannot write the search index {self.path}: {one_line(reason)}") from None
        finally:
            if conn is not None:
                conn.close()
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)

    # -- searching --------------------------------------------------------------------------

    def search(self, query: str, kinds: tuple[Kind, ...] = KINDS, limit: int = DEFAULT_LIMIT) -> SearchResults:
        """The first `limit` matches of each kind, best first. InputError for an empty
        query or one FTS5 cannot parse; StoreError when there is no current index."""
        text = check_query(query)
        conn = self._open_index()
        if conn is None:
            raise StoreError("The search index is not built for this store (or the store changed)")
        terms = query_terms(text)
        results: dict[Kind, list[SearchHit]] = {}
        more: set[Kind] = set()
        try:
            for kind in kinds:
                rows = conn.execute(
                    f"SELECT i.id FROM (SELECT rowid, bm25(fts_{kind}, 2.0, 1.0) AS score FROM fts_{kind} "
                    f"WHERE fts_{kind} MATCH ? LIMIT {RANK_WINDOW}) AS m JOIN ids_{kind} AS i ON i.rowid = m.rowid "
                    "ORDER BY m.score, m.rowid LIMIT ?",
                    (fts_query(text), limit + 1),
                ).fetchall()
                if len(rows) > limit:
                    more.add(kind)
                ids = [r[0] for r in rows[:limit]]
                if not all(isinstance(i, str) for i in ids):  # a file changed after it was built
                    raise StoreError(f"The search index {self.path} is damaged (an id that is not text): delete it, "
                                     "and the next search builds it again")
                results[kind] = self._hits(kind, ids, terms)
        except sqlite3.Error as error:
            if isinstance(error, sqlite3.OperationalError) and _QUERY_ERROR.match(str(error)):
                raise InputError(f"Cannot parse the search query: {one_line(str(error), 200)}") from None
            raise StoreError(f"Cannot read the search index {self.path}: {one_line(str(error), 200)}: delete it, and "
                             "the next search builds it again") from None
        except MemoryError:  # (SQLite's out of memory)
            raise InputError("The search query needs more memory than there is: search for fewer words") from None
        finally:
            conn.close()
        return SearchResults(text, self.namespace, results, frozenset(more))

    def _hits(self, kind: Kind, ids: list[str], terms: list[str]) -> list[SearchHit]:
        if not ids:
            return []
        by_id = {_as_text(row[0]): row for row in self.store._query(_SHOWN_SQL[kind], (json.dumps(ids),))}
        hits = []
        for row_id in ids:
            row = by_id.get(row_id)
            if row is None:  # gone since the index was built: the identity check says it cannot be
                continue
            title = _as_text(row[1]) or row_id
            body = _as_text(row[2])
            text, marks = snippet(body, terms)
            if not marks and kind in ("community", "entity") and row[1] is not None:  # a match in the title
                text, marks = snippet(f"{title}: {body}", terms)
            hits.append(SearchHit(row_id, kind, title, text, marks))  # (the title exact: the faces clean it)
        return hits
