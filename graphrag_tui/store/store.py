"""The community store: read-only exploration of an SQLite file in the SPEC §2 schema.

Every read is set-based (recursive CTEs and joins, a handful of queries per call, never
one per community), so it stays fast on stores with 100k communities, and it does not
rely on the indexes of `schema.py` being present.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from itertools import chain, groupby, repeat
from operator import attrgetter, itemgetter, methodcaller
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from graphrag_tui.arguments import has_surrogates
from graphrag_tui.engine import Claim, CommunityContext, Excerpt, MapTextParts
from graphrag_tui.engine.selection import SelectionNode
from graphrag_tui.errors import InputError
from graphrag_tui.safe_text import one_line
from graphrag_tui.store import map_parts, provenance, table_rows
from graphrag_tui.store.hierarchy import leaves_by_root
from graphrag_tui.store.read_ahead import read_ahead
from graphrag_tui.store.records import ChunkDetail, ClaimDetail, ClaimProvenance, CommunityRef, GoToMatch
from graphrag_tui.store.schema import COLUMNS, OPTIONAL, TABLES, add_column_sql, create_schema, insert_sql
from graphrag_tui.store.validation import StoreError, check_communities, check_text_order, lenient_text
from graphrag_tui.store.wal import holds_commit

_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Descendant leaves expanded per round of queries in `iter_communities` (about ten times as
#: many claims in memory at once): bounded by leaves, not communities, since a root can
#: stand for hundreds of leaves.
_GROUP_LEAVES = 2000
_FIRST = itemgetter(0)
_LEAF_OF_ROW = itemgetter(1)
_SECOND = itemgetter(1)
_CHUNK_OF_CLAIM = attrgetter("chunk_id")
#: Builds a named tuple from a plain one in C, skipping the named tuple's Python-level __new__.
_NEW_TUPLE = tuple.__new__

# Common table expressions over one namespace (:ns). A leaf is a row of the namespace whose
# id no row of the namespace names as parent (`parent_ids`). The caller adds `roots(id)`,
# the communities to expand, and one of the two walks below then yields
# `wanted(root, leaf)`: every descendant leaf of every root (a leaf is its own single
# descendant). Both walks use UNION, not UNION ALL, so they end on cyclic parent links; a
# dangling parent link simply ends a path.
_NAMESPACE_CTES = """
ns(id, parent, level, summary) AS (
    SELECT id, parent_community_id, level, CAST(summary_content AS TEXT)
    FROM rag_community_summaries WHERE namespace = :ns
),
parent_ids(id) AS (SELECT parent FROM ns WHERE parent IS NOT NULL)
"""

# Whether the row `{row}` of the namespace is a leaf, as `id NOT IN (SELECT id FROM
# parent_ids)` tells it, by searching the parent_community_id index for a child: a search
# per row costs less than materializing `ns` to list every parent (so this names no CTE of
# `_NAMESPACE_CTES`; naming one would materialize it). The same test, since ids and parents
# are text or NULL (`check_communities`), also for a NULL id, which only a writable store
# can hold: NOT IN gives NULL for it, unless no row of the namespace names a parent.
_IS_LEAF_BY_INDEX = """(
    NOT EXISTS (SELECT 1 FROM rag_community_summaries AS child
                WHERE child.parent_community_id = {row}.id AND child.namespace = :ns)
    AND ({row}.id IS NOT NULL OR NOT EXISTS (
        SELECT 1 FROM rag_community_summaries WHERE namespace = :ns AND parent_community_id IS NOT NULL))
)"""

# Walk DOWN from the roots through the children, stopping at another root (its leaves are
# its own walk's: hierarchy.py adds them). Fast with an index on parent_community_id;
# without one every step would scan the table.
_WALK_DOWN = f"""
down(root, id, nested) AS (
    SELECT id, id, FALSE FROM roots
    UNION
    SELECT down.root, s.id, EXISTS (SELECT 1 FROM roots WHERE roots.id = s.id)
    FROM down JOIN rag_community_summaries AS s ON s.parent_community_id = down.id AND s.namespace = :ns
    WHERE NOT down.nested
),
wanted(root, leaf, nested) AS (
    SELECT root, id, nested FROM down WHERE nested OR {_IS_LEAF_BY_INDEX.format(row="down")}
)
"""

# The same relation read backwards, for stores without that index: walk UP from every
# leaf of the namespace (looking rows up by primary key only) and keep the paths that
# pass through a root.
_WALK_UP = """
leaf_up(leaf, id, parent) AS (
    SELECT id, id, parent FROM ns WHERE id NOT IN (SELECT id FROM parent_ids)
    UNION
    SELECT leaf_up.leaf, s.id, s.parent_community_id
    FROM leaf_up JOIN rag_community_summaries AS s
        ON s.id = leaf_up.parent AND s.namespace = :ns
),
wanted(root, leaf, nested) AS (
    SELECT DISTINCT id, leaf, 0 FROM leaf_up WHERE id IN (SELECT id FROM roots)
)
"""

# Claims of the leaves whose ids are in a JSON array (:leaves), ordered by leaf id, then
# claim id: id, leaf, subject entity id, description, object entity id, chunk id. Entity
# names are looked up in Python: a dict beats two joins (four B-tree searches) per claim.
# The CASTs (no-ops on text) make a BLOB or a number in a hostile store text too, and a NULL
# subject or description empty.
_CLAIMS_SELECT = """
SELECT CAST(c.id AS TEXT), c.community_summary_id, coalesce(CAST(c.subject_entity_id AS TEXT), ''),
       coalesce(CAST(c.description AS TEXT), ''), CAST(c.object_entity_id AS TEXT),
       CAST(c.source_chunk_id AS TEXT)
FROM rag_claims AS c
WHERE c.community_summary_id IN (SELECT value FROM json_each(:leaves))
ORDER BY c.community_summary_id COLLATE BINARY, c.id COLLATE BINARY
"""

# Every entity's name: a claim may name an entity of another namespace (odd, but allowed),
# and reading them all beats finding out which. A name that is not text counts as missing;
# an id that is a number matches a claim's by its text (as the claims read it), any other
# id that is not text never matches, and a NULL id must not name a NULL object. Of repeated
# ids (a store without keys), the least name by code point.
_ENTITY_NAMES_SELECT = (
    "SELECT CAST(id AS TEXT), min(name) FROM rag_entities WHERE typeof(name) = 'text' "
    "AND typeof(id) IN ('text', 'integer') GROUP BY id")

# Chunks whose ids are in a JSON array parameter; dangling ids simply give no row.
_CHUNKS_SELECT = (  # (an id of another type, a number, is read as the claims cite it: as text)
    "SELECT CAST(id AS TEXT), coalesce(CAST(content AS TEXT), '') FROM rag_children "
    "WHERE id IN (SELECT value FROM json_each(?))"
)


#: A group of selected (id, summary) rows, its leaves' claim lines, its cited chunks' excerpt lines.
_GroupRead = tuple[list[tuple], Mapping[str, map_parts.LeafLines], dict[str, str]]


class NamespaceInfo(BaseModel):
    """Counts for one namespace (`info`, the namespace picker)."""

    model_config = ConfigDict(frozen=True)

    name: str
    community_count: int = 0
    leaf_count: int = 0
    levels: dict[int, int] = {}
    claim_count: int = 0
    chunk_count: int = 0
    document_count: int = 0
    entity_count: int = 0


class Finding(BaseModel):
    """One finding of a GraphRAG community report."""

    model_config = ConfigDict(frozen=True)

    summary: str
    explanation: str


class CommunityDetail(BaseModel):
    """Everything the drill-down shows about one community.

    `claims` are those of its descendant leaves (ordered by leaf id, then claim id);
    `chunks` are the child chunks they cite, deduplicated, in first-claim order. A chunk id
    that names no row is left out of `chunks` (the claim still carries it).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    namespace: str
    name: str | None = None
    level: int
    parent_id: str | None = None
    parent_dangling: bool = False
    children: list[str] = []
    leaf_ids: list[str] = []
    is_leaf: bool
    summary: str
    members: list[str] = []
    claims: list[ClaimDetail] = []
    chunks: list[ChunkDetail] = []
    #: What a GraphRAG report says beyond its text (None, []: the store does not say).
    rank: float | None = None
    rating_explanation: str | None = None
    findings: list[Finding] = []


def _rank(value: Any) -> float | None:
    """A rank as a finite float; anything else (text, NaN, infinities) is no rank."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < float("inf"):
        return float(value)
    return None


def _findings(raw: Any) -> list[Finding]:
    """The `findings` JSON array; items that are not objects are left out, fields that are
    not text are written out."""
    try:
        value = json.loads(raw) if isinstance(raw, (str, bytes)) else None
    except (ValueError, RecursionError):
        return []
    if not isinstance(value, list):
        return []

    def field(item: dict[str, Any], key: str) -> str:
        got = item.get(key)
        return got if isinstance(got, str) else ("" if got is None else json.dumps(got, ensure_ascii=False))

    return [Finding(summary=field(i, "summary"), explanation=field(i, "explanation"))
            for i in value if isinstance(i, dict)]


def _group_leaves(group: list[tuple], leaves_of: Mapping[str, list[str]]) -> str:
    """The descendant leaves of a group's communities, as a JSON array without repeats."""
    return json.dumps(list({leaf: None for cid, _ in group for leaf in leaves_of.get(cid, ())}))


def _groups(selected: list[tuple], leaves_of: Mapping[str, list[str]]) -> Iterator[list[tuple]]:
    """The selected (id, summary) rows in consecutive runs of about `_GROUP_LEAVES`
    descendant leaves (a community without leaves counts as one)."""
    group: list[tuple] = []
    leaf_count = 0
    for row in selected:
        group.append(row)
        leaf_count += max(1, len(leaves_of.get(row[0], ())))
        if leaf_count >= _GROUP_LEAVES:
            yield group
            group, leaf_count = [], 0
    if group:
        yield group


def _is_blank(raw: bytes | None) -> bool:
    """Whether a summary (passed as BLOB, so that bytes that are not UTF-8 cannot fail the
    call) is empty after trimming."""
    return raw is None or not raw.decode("utf-8", errors="replace").strip()


def _text(value: Any) -> str | None:
    """A column value as text for display: a BLOB is decoded (U+FFFD for bad bytes), a
    number written out, NULL kept as None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _claim_detail(claim: Claim, source_parent_id: Any, extras: Mapping[str, str | None]) -> ClaimDetail:
    """The drill-down's claim; a NULL where a claim needs text (id, subject, description)
    shows as empty. `extras`: its optional fields (source text, type, status, dates)."""
    return ClaimDetail(
        id=_text(claim.id) or "", leaf_id=claim.leaf_id, subject=_text(claim.subject) or "",
        object=_text(claim.object), description=_text(claim.description) or "",
        chunk_id=_text(claim.chunk_id), source_parent_id=_text(source_parent_id), **extras,
    )


def _parse_members(raw: Any) -> list[str]:
    """The `members` JSON array as strings; anything unparsable or not a list gives [].
    A list (PostgreSQL's TEXT[] or json) is taken as the parsed array."""
    if raw is None:
        return []
    if isinstance(raw, list):
        return [item if isinstance(item, str) else json.dumps(item, ensure_ascii=False) for item in raw]
    try:
        value = json.loads(raw)
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested too deep
        return []
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            for item in value]


def _member_names(raw: Any) -> list[str]:
    """`members` as names: a JSON array (SQLite), or an array as PostgreSQL gives `TEXT[]`."""
    if isinstance(raw, (list, tuple)):
        return [item if isinstance(item, str) else json.dumps(item, ensure_ascii=False) for item in raw]
    return _parse_members(raw)


def _readonly_connection(path: Path, header: bytes) -> sqlite3.Connection:
    """A read-only connection that creates no side files.

    Header bytes 18/19 are 2 for a WAL-mode file. Even a `mode=ro` connection to such a
    file creates `-shm` (and may create `-wal`). Without a `-wal` file nobody is writing,
    so `immutable=1` reads the file as it is, with no locking or side files; so too with a
    `-wal` that holds no committed transaction (wal.py: SQLite deleted such a file). A
    `-wal` without a `-shm` is left over, or a writer's in exclusive locking mode: its
    frames must be read, so the connection keeps its WAL index in its own memory
    (exclusive locking mode, which SQLite only allows read-only without file locks). With
    both files, a writer may be active: plain `mode=ro` shares its `-shm` and sees its
    commits.
    """
    uri = path.resolve().as_uri()
    is_wal = header[18] == 2 or header[19] == 2
    wal_file = path.with_name(path.name + "-wal")
    shm_file = path.with_name(path.name + "-shm")
    if is_wal and (not wal_file.exists() or not shm_file.exists() and not holds_commit(wal_file)):
        return sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, check_same_thread=False)
    if is_wal and not shm_file.exists():
        conn = sqlite3.connect(uri + "?mode=ro&vfs=unix-none", uri=True, check_same_thread=False)
        try:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        except sqlite3.Error:
            conn.close()
            raise
        return conn
    return sqlite3.connect(uri + "?mode=ro", uri=True, check_same_thread=False)


def _check_file(path: Path) -> bytes:
    try:
        if not path.exists():
            raise InputError(f"Store not found: {path}")
        if path.is_dir():
            raise InputError(f"Not a community store: {path} is a directory")
        if not path.is_file():  # a FIFO would block the open for ever
            raise InputError(f"Not a community store: {path} is not a regular file")
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise InputError(f"Cannot read store {path}: {exc.strerror or exc}") from None
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise InputError(f"Not a community store: {path} is not an SQLite database")
    return header


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    check_text_order(conn, path)
    kinds = {
        name.lower(): kind
        for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')")
    }
    missing = [table for table in TABLES if table not in kinds]
    if missing:
        raise InputError(
            f"Not a community store: {path} is missing table(s) {', '.join(missing)}"
        )
    # A view's SQL runs on every read (a recursive one that never ends hung every command),
    # and so does a virtual generated column's (hex(zeroblob(...)): gigabytes per row).
    views = [table for table in TABLES if kinds[table] == "view"]
    if views:
        raise InputError(f"Not a community store: {path} has {', '.join(views)} as views, not tables (a view's SQL "
                         "would run on every read)")
    missing_columns, computed = [], []
    for table, columns in COLUMNS.items():  # extra columns are ignored
        present = {row[1].lower(): row[6] for row in conn.execute(f"PRAGMA table_xinfo({table})")}
        missing_columns += [f"{table}.{col}" for col in columns if col not in present]
        computed += [f"{table}.{col}" for col in (*columns, *OPTIONAL.get(table, ())) if present.get(col) == 2]
    if missing_columns:
        raise InputError(
            f"Not a community store: {path} is missing column(s) {', '.join(missing_columns)}"
        )
    if computed:
        raise InputError(f"Not a community store: {path} computes column(s) {', '.join(computed)} as they are read "
                         "(virtual generated columns)")



def map_text_parts(reads: Iterable[tuple[list[tuple], Mapping[str, Any], Mapping[str, str]]],
                   leaves_of: Mapping[str, list[str]]) -> Iterator[MapTextParts]:
    """Each community of the groups read (its leaves' claim lines and the cited chunks'
    excerpts, by leaf and by chunk id) as its Map text's parts, in the groups' order: what
    the SQLite and the PostgreSQL stores' planning reads share."""
    for group, by_leaf, excerpts in reads:
        for cid, summary in group:
            found = [by_leaf[leaf] for leaf in leaves_of.get(cid, ()) if leaf in by_leaf]
            chunk_ids = dict.fromkeys(chain.from_iterable(map(_SECOND, found)))
            excerpt_lines = tuple(filter(None, map(excerpts.get, chunk_ids)))
            yield _NEW_TUPLE(MapTextParts, (cid, summary, tuple(map(_FIRST, found)), excerpt_lines))


def _never() -> bool:
    return False


class CommunityStore:
    """An open community store. Use `open` (read-only) or `create` (writable)."""

    #: The caller's "stop" (copy's Ctrl+C): a read waiting for another session's lock (a
    #: PostgreSQL store's) gives up once it is true.
    stop_when: Callable[[], bool] = staticmethod(_never)

    def __init__(self, conn: sqlite3.Connection, path: Path, *, writable: bool) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self.path = path
        self.writable = writable
        #: The second reader of a planning read going on (`_second_reader`), for `interrupt`.
        self._ahead: CommunityStore | None = None
        conn.create_function("grt_is_blank", 1, _is_blank, deterministic=True)
        # Sorts and temporary indexes stay in memory: no temp files next to anything.
        conn.execute("PRAGMA temp_store = MEMORY")
        # An index the walk down can search: not partial, led by the parent column in BINARY
        # order (a partial or NOCASE one made it scan the table per step: minutes).
        self._has_parent_index = any(
            conn.execute("SELECT lower(name), coll FROM pragma_index_xinfo(?) WHERE key ORDER BY seqno LIMIT 1",
                         (name,)).fetchone() == ("parent_community_id", "BINARY")
            for (name,) in conn.execute(
                "SELECT name FROM pragma_index_list('rag_community_summaries') WHERE NOT partial"
            )
        )
        claim_columns = {row[1].lower() for row in conn.execute("PRAGMA table_info(rag_claims)")}
        #: The optional `rag_claims` columns this store has (`schema.OPTIONAL`), read where present.
        self.claim_extras = tuple(c for c in OPTIONAL["rag_claims"] if c in claim_columns)
        summary_columns = {row[1].lower() for row in conn.execute("PRAGMA table_info(rag_community_summaries)")}
        #: The optional `rag_community_summaries` columns this store has (rank, rating
        #: explanation, findings), read where present.
        self.summary_extras = tuple(c for c in OPTIONAL["rag_community_summaries"] if c in summary_columns)

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path) -> CommunityStore:
        """Open an existing store read-only; the file is never changed and no side files
        are created. Raises `InputError` (one line naming the path) for a missing file, a
        directory, a non-SQLite file, or a database missing required tables or columns,
        and `StoreError` for a bad community row (`validation.check_communities`) or any
        SQLite error."""
        path = Path(path)
        header = _check_file(path)
        conn = None
        try:
            conn = _readonly_connection(path, header)
            _check_schema(conn, path)
            check_communities(conn, path)
            return cls(conn, path, writable=False)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_ROLLBACK":
                raise StoreError(
                    f"Cannot open store {path}: it holds an unfinished transaction "
                    f"({path.name}-journal) that only a writer can roll back; "
                    "open it once with sqlite3 to recover it"
                ) from None
            raise StoreError(f"Cannot open store {path}: {one_line(str(exc))}") from None
        except InputError:
            if conn is not None:
                conn.close()
            raise

    @classmethod
    def create(cls, path: str | Path) -> CommunityStore:
        """Open (creating if needed) a writable store and create any missing schema.

        The file keeps SQLite's default rollback journal (no WAL)."""
        path = Path(path)
        if path.is_dir():
            raise InputError(f"Cannot create store: {path} is a directory")
        if not path.parent.exists():
            raise InputError(f"Cannot create store {path}: folder {path.parent} does not exist")
        try:
            conn = sqlite3.connect(path, check_same_thread=False)
            create_schema(conn)
            conn.commit()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"Cannot create store {path}: {exc}") from None
        return cls(conn, path, writable=True)

    def close(self) -> None:
        """Closes the store; a read going on in another thread (a screen's, a plan's on
        either reader) is interrupted first, so closing never waits for it."""
        if self._lock.locked() or self._ahead is not None:
            self.interrupt()
        with self._lock:
            self._conn.close()

    def interrupt(self) -> None:
        """Ends the reads in flight on this store from another thread (its planning read's
        second reader's too): they fail with StoreError; later reads go on as usual."""
        self._conn.interrupt()
        if (ahead := self._ahead) is not None:
            ahead.interrupt()

    def column_names(self, table: str) -> set[str]:
        """The (lower-case) column names of one of the store's tables."""
        return {row[1].lower() for row in self._query(f"PRAGMA table_info({table})")}

    def __enter__(self) -> CommunityStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing (sample builder, importer, tests) ----------------------------------------

    def insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert rows (dicts keyed by column name) into one table in one transaction.

        Missing keys become NULL. Optional columns (`schema.OPTIONAL`) that the rows use are
        added to the table first when it lacks them. Returns the number of rows inserted."""
        if not self.writable:
            raise InputError(f"Store {self.path} is open read-only")
        if table not in COLUMNS:
            raise ValueError(f"unknown table {table!r}")
        rows = list(rows)
        used = {key for row in rows for key in row}
        optional = tuple(c for c in OPTIONAL.get(table, ()) if c in used)
        columns = COLUMNS[table] + optional
        unknown = used - set(columns)
        if unknown:
            raise ValueError(f"unknown column(s) for {table}: {', '.join(sorted(unknown))}")
        with self._lock, self._conn:
            present = {row[1].lower() for row in self._conn.execute(f"PRAGMA table_info({table})")}
            for column in optional:
                if column not in present:
                    self._conn.execute(add_column_sql(table, column))
            self._conn.executemany(insert_sql(table, optional), ([row.get(col) for col in columns] for row in rows))
        if table == "rag_claims" and optional:
            self.claim_extras = tuple(dict.fromkeys((*self.claim_extras, *optional)))
        if table == "rag_community_summaries" and optional:
            self.summary_extras = tuple(dict.fromkeys((*self.summary_extras, *optional)))
        return len(rows)

    # -- reading -------------------------------------------------------------------------

    def _query(self, sql: str, params: Mapping[str, Any] | tuple = ()) -> list[tuple]:
        """Every read goes through here: a SQLite error becomes a StoreError, and text that
        is not valid UTF-8 is read again with U+FFFD for the bad bytes (and from then on,
        on this connection; the default decoder is faster, so it stays until needed)."""
        with self._lock:
            try:
                try:
                    return self._conn.execute(sql, params).fetchall()
                except sqlite3.OperationalError as exc:
                    if not str(exc).startswith("Could not decode to UTF-8"):
                        raise
                    self._conn.text_factory = lenient_text
                    return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"Cannot read store {self.path}: {one_line(str(exc), 200)}") from None

    def iter_table_rows(self, table: str, namespace: str, extras: tuple[str, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """A namespace's rows of one table as stored (`COLUMNS[table]` order, then the
        optional `extras`), in id order, a page at a time (`table_rows`): what `copy` reads."""
        return table_rows.iter_table_rows(self._query, table, namespace, extras)

    def namespaces(self) -> list[NamespaceInfo]:
        """Every namespace found in any table, sorted by name, with its counts."""
        counts: dict[str, dict[str, Any]] = defaultdict(lambda: {"levels": {}})
        simple = {
            "community_count": "rag_community_summaries",
            "claim_count": "rag_claims",
            "chunk_count": "rag_children",
            "document_count": "rag_parents",
            "entity_count": "rag_entities",
        }
        for field, table in simple.items():
            for ns, n in self._query(
                f"SELECT namespace, count(*) FROM {table} "
                "WHERE typeof(namespace) = 'text' GROUP BY namespace"
            ):
                counts[ns][field] = n
        for ns, level, n in self._query(
            "SELECT namespace, level, count(*) FROM rag_community_summaries "
            "GROUP BY namespace, level ORDER BY namespace, level"
        ):
            counts[ns]["levels"][int(level)] = n
        leaf_sql = """
            SELECT s.namespace, count(*)
            FROM rag_community_summaries AS s
            LEFT JOIN (
                SELECT DISTINCT namespace, parent_community_id AS id
                FROM rag_community_summaries WHERE parent_community_id IS NOT NULL
            ) AS p ON p.namespace = s.namespace AND p.id = s.id
            WHERE p.id IS NULL
            GROUP BY s.namespace
        """
        for ns, n in self._query(leaf_sql):
            counts[ns]["leaf_count"] = n
        return [NamespaceInfo(name=ns, **counts[ns]) for ns in sorted(counts)]

    def community_levels(self) -> dict[str, dict[int, int]]:
        """Namespace -> {level: communities}, for the namespaces that have communities (what
        a search needs to check its request; cheaper than `namespaces()`)."""
        result: dict[str, dict[int, int]] = {}
        for namespace, level, count in self._query(
            "SELECT namespace, level, count(*) FROM rag_community_summaries "
            "GROUP BY namespace, level ORDER BY namespace COLLATE BINARY, level"
        ):
            result.setdefault(namespace, {})[int(level)] = count
        return result

    def levels(self, namespace: str) -> dict[int, int]:
        """Level -> number of communities of the namespace at that level, sorted by level."""
        rows = self._query(
            "SELECT level, count(*) FROM rag_community_summaries WHERE namespace = ? "
            "GROUP BY level ORDER BY level",
            (namespace,),
        )
        return {int(level): n for level, n in rows}

    def select_communities(self, namespace: str, level: int | None) -> list[CommunityContext]:
        """Every community `iter_communities` yields, as a list."""
        return list(self.iter_communities(namespace, level))

    def iter_communities(self, namespace: str, level: int | None) -> Iterator[CommunityContext]:
        """The communities global search maps over (SPEC §3.2), ordered by id.

        `level=None` selects every leaf of the namespace, an int every row at that level;
        either way rows whose summary is blank (empty after trimming) are left out. Each
        selected community carries the claims of its descendant leaves (ordered by leaf
        id, then claim id, by code point) and the chunks those claims cite (deduplicated,
        in the order their first claim appears).

        Tolerated damage: a claim whose subject (or object) entity row is missing uses the
        raw `subject_entity_id` (`object_entity_id`) as the name; a claim citing a chunk
        id with no row keeps its `chunk_id` but adds no excerpt; cyclic and dangling
        parent links end the walk (a community in a cycle with no leaf below it gets
        no claims).
        """
        selected, leaves_of = self._selection(namespace, level)
        if not selected:
            return
        names = self._entity_names()
        # A group of communities at a time: a few set-based queries per group, and only that
        # group's claims and cited chunks in memory (a large store has millions of claims and
        # hundreds of thousands of chunks, the largest texts of a store).
        for group in _groups(selected, leaves_of):
            claims_by_leaf = self._leaf_claims(_group_leaves(group, leaves_of), names)
            chunks = self._cited_chunks(claims_by_leaf.values())
            for cid, summary in group:
                leaves = leaves_of.get(cid, ())
                claims = (claims_by_leaf.get(leaves[0], ()) if len(leaves) == 1 else
                          tuple(chain.from_iterable(map(claims_by_leaf.get, leaves, repeat(())))))
                cited = dict.fromkeys(map(_CHUNK_OF_CLAIM, claims))
                excerpts = tuple(filter(None, map(chunks.get, cited)))  # None: no chunk id, or no such chunk
                yield CommunityContext(id=cid, summary=summary, claims=claims, excerpts=excerpts)

    def iter_map_parts(
        self, namespace: str, level: int | None, ids: list[str] | None = None
    ) -> Iterator[MapTextParts]:
        """What planning reads: the communities of `iter_communities`, in the same order and
        with the same selection and tolerated damage, as their Map text's lines (`map_text`
        of either gives the same text), rendered by SQLite (`map_parts`): one string per
        leaf's claims and one per cited chunk, no record per claim. Groups are read ahead on
        two connections (`read_ahead`) while the caller builds Map texts. `ids`: exactly
        these communities of the namespace (a selection mode chose them), not a level."""
        selected, leaves_of = self._selection(namespace, level, ids)
        if not selected:
            return
        grouped = self._claims_grouped_in_order()
        claims_sql = map_parts.LEAF_LINES_GROUPED if grouped else map_parts.LEAF_LINES_ORDERED

        def read(group: list[tuple], store: CommunityStore) -> _GroupRead:
            rows = store._query(claims_sql, {**map_parts.LINE_PIECES, "leaves": _group_leaves(group, leaves_of)})
            by_leaf = map_parts.leaf_lines(rows, grouped)
            cited = [c for c in dict.fromkeys(chain.from_iterable(map(_SECOND, by_leaf.values()))) if c is not None]
            excerpts = map_parts.excerpt_lines(
                store._query(map_parts.EXCERPT_LINES, {**map_parts.LINE_PIECES, "ids": json.dumps(cited)}))
            return group, by_leaf, excerpts

        with self._second_reader() as second:
            readers = [self] if second is None else [self, second]
            for reader in readers:
                reader._write(map_parts.NAMES_COPY)
            reads = read_ahead(read, _groups(selected, leaves_of), readers, methodcaller("interrupt"))
            yield from map_text_parts(reads, leaves_of)

    @contextmanager
    def _second_reader(self) -> Iterator[CommunityStore | None]:
        """Another read-only connection to the same file, for a read on the second core; None
        for a writable store (its connection may hold changes no other connection sees)."""
        if self.writable:
            yield None
            return
        try:
            second = CommunityStore(_readonly_connection(self.path, _check_file(self.path)), self.path, writable=False)
        except (sqlite3.Error, InputError):
            yield None  # planning goes on with one reader
            return
        self._ahead = second
        try:
            yield second
        finally:
            self._ahead = None
            second.close()

    def _write(self, statements: Iterable[str]) -> None:
        """Run statements that change only this connection's temporary schema, in one
        locked step (no concurrent read sees them half done), and commit: the implicit
        transaction of a write would otherwise keep a read snapshot open and hide a live
        writer's commits."""
        with self._lock:
            try:
                for statement in statements:
                    self._conn.execute(statement)
                self._conn.commit()
            except sqlite3.Error as exc:
                self._conn.rollback()
                raise StoreError(f"Cannot read store {self.path}: {one_line(str(exc), 200)}") from None

    def _claims_grouped_in_order(self) -> bool:
        """Whether `map_parts.LEAF_LINES_GROUPED` gives each leaf's claims in claim id order
        on this store (`map_parts.grouped_in_claim_order`)."""
        self._write(map_parts.NAMES_COPY[:1])  # the query names the table
        indexes = {name: [row for row in self._query("SELECT * FROM pragma_index_xinfo(?)", (name,)) if row[5]]
                   for (name,) in self._query("SELECT name FROM pragma_index_list('rag_claims')")}
        plan = self._query("EXPLAIN QUERY PLAN " + map_parts.LEAF_LINES_GROUPED,
                           {**map_parts.LINE_PIECES, "leaves": "[]"})
        return map_parts.grouped_in_claim_order(plan, indexes)

    def _selection(
        self, namespace: str, level: int | None, ids: list[str] | None = None
    ) -> tuple[list[tuple], Mapping[str, list[str]]]:
        """The selected (id, summary) rows of `iter_communities` (or those of `ids`), ordered
        by id, and each one's descendant leaves, ordered by id."""
        params: dict[str, Any] = {"ns": namespace, "level": level, "ids": json.dumps(ids or [])}
        if ids is not None:  # exactly these (a selection mode chose them)
            condition = "id IN (SELECT value FROM json_each(:ids))"
        elif level is not None:
            condition = "level = :level"
        elif self._has_parent_index:
            condition = _IS_LEAF_BY_INDEX.format(row="ns")
        else:
            condition = "id NOT IN (SELECT id FROM parent_ids)"
        selected = self._query(
            f"WITH {_NAMESPACE_CTES} SELECT id, summary FROM ns "
            f"WHERE {condition} AND NOT grt_is_blank(CAST(summary AS BLOB)) ORDER BY id COLLATE BINARY",
            params,
        )
        if not selected:
            return selected, {}
        if level is None and ids is None:  # a leaf is its own single descendant: no walk needed
            return selected, {cid: [cid] for cid, _ in selected}
        roots = (f"roots(id) AS (SELECT id FROM ns "
                 f"WHERE {condition} AND NOT grt_is_blank(CAST(summary AS BLOB)))")
        return selected, self._descendant_leaves(roots, params)

    def _cited_chunks(self, claims: Iterable[tuple[Claim, ...]]) -> dict[str, Excerpt]:
        """The chunks (of any namespace) these claims cite, by id; ids with no row are left out."""
        cited = [c for c in dict.fromkeys(map(_CHUNK_OF_CLAIM, chain.from_iterable(claims))) if isinstance(c, str)]
        rows = self._query(_CHUNKS_SELECT, (json.dumps(cited),))
        return dict(zip(map(_FIRST, rows), map(_NEW_TUPLE, repeat(Excerpt), rows), strict=False))

    def _descendant_leaves(self, roots_cte: str, params: Mapping[str, Any]) -> defaultdict[str, list[str]]:
        """Each root's descendant leaves, ordered by id, for the roots that `roots_cte` (a
        `roots(id) AS (...)` CTE) names."""
        walk = _WALK_DOWN if self._has_parent_index else _WALK_UP
        return leaves_by_root(self._query(
            f"WITH RECURSIVE {_NAMESPACE_CTES}, {roots_cte}, {walk} "
            "SELECT root, leaf, nested FROM wanted ORDER BY root COLLATE BINARY, leaf COLLATE BINARY",
            params,
        ))

    def _leaf_claims(self, leaf_ids: str, names: dict[str, str]) -> dict[str, tuple[Claim, ...]]:
        """Claims of the leaves (a JSON array of ids) as {leaf id: (Claim, ...)}, in leaf,
        then claim id order. `names` maps entity ids to names (`_entity_names`); an id that
        names no entity stands for its own name (and a NULL object stays None)."""
        name, new = names.get, _NEW_TUPLE
        return {
            leaf: tuple([new(Claim, (cid, leaf, name(s, s), d, name(o, o), ch)) for cid, _, s, d, o, ch in group])
            for leaf, group in groupby(self._query(_CLAIMS_SELECT, {"leaves": leaf_ids}), _LEAF_OF_ROW)
        }

    def _entity_names(self) -> dict[str, str]:
        """Entity id -> name, for every entity of the store."""
        return dict(self._query(_ENTITY_NAMES_SELECT))

    def selection_nodes(self, namespace: str) -> list[SelectionNode]:
        """Every community of the namespace as selection reads it (engine.selection): level,
        parent, its own text (U+FFFD for bad bytes), members and rank (None without the
        column, or when not a finite number), ordered by id."""
        rank = "rank" if "rank" in self.summary_extras else "NULL"
        rows = self._query(
            f"SELECT id, level, parent_community_id, summary_content, members, {rank} FROM rag_community_summaries "
            "WHERE namespace = ? ORDER BY id COLLATE BINARY",
            (namespace,),
        )
        return [
            SelectionNode(str(cid), int(level), None if parent is None else str(parent), _text(text) or "",
                          tuple(_member_names(members)), _rank(value))
            for cid, level, parent, text, members, value in rows
        ]

    def community(self, community_id: str) -> CommunityDetail | None:
        """The drill-down view of one community (any namespace), or None if no such id.

        Missing entity rows and dangling chunk ids are tolerated as in
        `select_communities`."""
        if has_surrogates(community_id):  # (from a damaged run history: no store text holds one, or can be asked for it)
            return None
        rows = self._query(
            "SELECT id, namespace, community_name, level, parent_community_id, "
            "summary_content, members FROM rag_community_summaries WHERE id = ?",
            (community_id,),
        )
        if not rows:
            return None
        cid, namespace, name, level, parent, summary, members = rows[0]
        report: dict[str, Any] = {}
        if self.summary_extras:
            values = self._query(
                f"SELECT {', '.join(self.summary_extras)} FROM rag_community_summaries WHERE id = ?", (cid,))[0]
            given = dict(zip(self.summary_extras, values, strict=True))
            report = {"rank": _rank(given.get("rank")), "rating_explanation": _text(given.get("rating_explanation")),
                      "findings": _findings(given.get("findings"))}
        params = {"ns": namespace, "id": cid, "parent": parent}
        parent_dangling = parent is not None and not self._query(
            "SELECT 1 FROM rag_community_summaries WHERE id = :parent AND namespace = :ns",
            params,
        )
        children = [row[0] for row in self._query(
            "SELECT id FROM rag_community_summaries "
            "WHERE namespace = :ns AND parent_community_id = :id ORDER BY id COLLATE BINARY",
            params,
        )]
        leaf_ids = self._descendant_leaves("roots(id) AS (SELECT :id)", params)[cid]
        leaves = json.dumps(leaf_ids)
        claims_by_leaf = self._leaf_claims(leaves, self._entity_names())
        claims = [claim for leaf in leaf_ids for claim in claims_by_leaf.get(leaf, ())]
        documents = dict(self._query(
            "SELECT id, source_parent_id FROM rag_claims "
            "WHERE community_summary_id IN (SELECT value FROM json_each(?))", (leaves,)
        ))
        extras = provenance.claim_extras(self._query, self.claim_extras, leaves)
        cited = dict.fromkeys(claim.chunk_id for claim in claims if claim.chunk_id is not None)
        found = {
            row[0]: ChunkDetail(id=row[0], content=_text(row[1]), parent_id=_text(row[2]),
                                parent_title=_text(row[3]))
            for row in self._query(
                "SELECT CAST(ch.id AS TEXT), coalesce(ch.content, ''), ch.parent_id, p.title "
                "FROM rag_children AS ch LEFT JOIN rag_parents AS p ON p.id = ch.parent_id "
                "WHERE ch.id IN (SELECT value FROM json_each(?))",
                (json.dumps([c for c in cited if isinstance(c, str)]),),
            )
        }
        return CommunityDetail(
            id=cid, namespace=namespace, name=_text(name), level=level, parent_id=parent,
            parent_dangling=parent_dangling, children=children, leaf_ids=leaf_ids,
            is_leaf=not children, summary=_text(summary) or "", members=_parse_members(members),
            claims=[_claim_detail(claim, documents.get(claim.id), extras.get(claim.id, {})) for claim in claims],
            chunks=[found[c] for c in cited if c in found],
            **report,
        )

    def resolve_community(self, namespace: str, text: str) -> str | None:
        """Turn what the user typed into a community id, or None.

        Accepted, in this order: an exact id (any namespace); `<namespace>/<text>`; the one
        id of the namespace ending in `/<text>` (a bare GraphRAG community number or id
        suffix). An ambiguous suffix gives None.
        """
        text = text.strip()
        if not text:
            return None
        if self._query("SELECT 1 FROM rag_community_summaries WHERE id = ?", (text,)):
            return text
        qualified = f"{namespace}/{text}"
        if self._query(
            "SELECT 1 FROM rag_community_summaries WHERE id = ? AND namespace = ?",
            (qualified, namespace),
        ):
            return qualified
        suffix = "/" + text
        rows = self._query(
            "SELECT id FROM rag_community_summaries WHERE namespace = :ns "
            "AND length(id) > length(:suffix) AND substr(id, -length(:suffix)) = :suffix "
            "LIMIT 2",
            {"ns": namespace, "suffix": suffix},
        )
        return rows[0][0] if len(rows) == 1 else None

    # -- provenance (store/provenance.py) -------------------------------------------------

    def claim_provenance(self, claim_id: str) -> ClaimProvenance | None:
        """One claim with the chunk it cites and the other claims citing it (None: no such claim)."""
        return provenance.claim_provenance(self._query, self.claim_extras, claim_id)

    def entity_communities(self, namespace: str, entity: str) -> list[CommunityRef]:
        """The communities of the namespace whose members include the entity named `entity`."""
        return provenance.entity_communities(self._query, namespace, entity)

    def community_refs(self, ids: list[str]) -> dict[str, CommunityRef]:
        """The communities among `ids` that exist, with their names."""
        return provenance.community_refs(self._query, ids)

    def find_communities(self, namespace: str, text: str) -> list[GoToMatch]:
        """Communities of the namespace named by `text`: fuzzily by community name, or
        through an entity of that name among their members."""
        return provenance.find_communities(self._query, namespace, text.strip(), self.entity_communities)
