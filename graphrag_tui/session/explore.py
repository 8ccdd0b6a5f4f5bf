"""Exploring one namespace of a store without a question, for both faces: the hierarchy
(read once, kept), full-text search, an id to a view (`show`), and the overview with the
Map batches a run would make at the current budgets.

Every call reads the store: the app calls them from thread workers, never its UI thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..engine import Level, SearchOptions, choose_namespace, plan_search
from ..errors import InputError
from ..store import CommunityStore
from ..store.explore import (
    KINDS,
    ChunkView,
    ClaimView,
    EntityDetail,
    Hierarchy,
    Kind,
    Overview,
    chunk_view,
    claim_view,
    entity_detail,
    kinds_with_id,
    load_hierarchy,
    overview,
    qualified_id,
)
from ..store.postgres import PostgresStore
from ..store.search_index import SqliteTextSearch, TextSearch
from ..store.store import CommunityDetail

APP_NAME = "graphrag-tui"

View = CommunityDetail | EntityDetail | ClaimView | ChunkView


def text_search_of(store: CommunityStore, namespace: str, cache_dir: Path) -> TextSearch:
    """A database store searches with the server's text search; a file with its FTS5 index."""
    if isinstance(store, PostgresStore):
        from ..store.pg_search import PostgresTextSearch

        return PostgresTextSearch(store, namespace)
    return SqliteTextSearch(store, namespace, cache_dir)


def default_cache_dir() -> Path:
    """The user cache directory (platformdirs; XDG_CACHE_HOME on Linux)."""
    return Path(platformdirs.user_cache_dir(APP_NAME))


@dataclass(frozen=True)
class Found:
    """What `show` found: the kind and id it took, and the other kinds that have the id."""

    kind: Kind
    id: str
    others: tuple[Kind, ...] = ()


def parse_kind_prefix(text: str) -> tuple[Kind | None, str]:
    """`claim:carol/89` -> ("claim", "carol/89"); text without a kind prefix is returned as is."""
    head, sep, rest = text.partition(":")
    if sep and head in KINDS:
        return head, rest  # type: ignore[return-value]
    return None, text


def find_in_store(store: CommunityStore, namespace: str | None, text: str, kind: Kind | None = None) -> Found:
    """`ExploreSession.find` where the namespace is needed only for a bare number: an
    exact id of any namespace is found without one."""
    prefixed, rest = parse_kind_prefix(text.strip())
    if namespace is None and len(store.community_levels()) > 1:
        kinds = kinds_with_id(store, rest.strip())
        wanted = [k for k in kinds if k == (kind or prefixed)] if (kind or prefixed) else kinds
        if wanted:
            return Found(wanted[0], rest.strip(), tuple(k for k in kinds if k != wanted[0]) if not (kind or prefixed) else ())
        if not rest.strip().isdigit():
            raise InputError(f"No {kind or prefixed or 'community, entity, claim or chunk'} {rest.strip()!r} in this store")
    return ExploreSession(store, namespace).find(text, kind)


def view_of(store: CommunityStore, found: Found) -> View | None:
    """The view of what `find` found (None: the row is gone)."""
    if found.kind == "community":
        return store.community(found.id)
    if found.kind == "entity":
        return entity_detail(store, found.id)
    if found.kind == "claim":
        return claim_view(store, found.id)
    return chunk_view(store, found.id)


class ExploreSession:
    """One namespace of an open store, explored."""

    def __init__(self, store: CommunityStore, namespace: str | None, cache_dir: Path | None = None,
                 *, levels: dict[str, dict[int, int]] | None = None) -> None:
        """`levels` (namespace -> level -> communities) saves reading them when known."""
        self.store = store
        levels = store.community_levels() if levels is None else levels
        self.namespace = choose_namespace(namespace, list(levels))
        self.levels = levels[self.namespace]
        self.cache_dir = cache_dir or default_cache_dir()
        self._hierarchy: Hierarchy | None = None
        self._lock = threading.Lock()
        self.text_search: TextSearch = text_search_of(store, self.namespace, self.cache_dir)

    def hierarchy(self) -> Hierarchy:
        """The namespace's hierarchy, read on the first call."""
        with self._lock:
            if self._hierarchy is None:
                self._hierarchy = load_hierarchy(self.store, self.namespace)
            return self._hierarchy

    # -- ids ---------------------------------------------------------------------------------

    def find(self, text: str, kind: Kind | None = None) -> Found:
        """The row `text` names (`kind:ID` or `kind` given: that kind only). Without a kind,
        the first of community, entity, claim and chunk that has the exact id; a bare
        number (or an id suffix) is a community of the namespace, as in go-to. InputError
        (one line) when nothing matches."""
        prefixed, rest = parse_kind_prefix(text.strip())
        if prefixed is not None and kind is not None and prefixed != kind:
            raise InputError(f"--kind {kind} and the prefix {prefixed}: disagree")
        kind = prefixed or kind
        rest = rest.strip()
        if not rest:
            raise InputError("No id given")
        if kind is not None:
            found = qualified_id(self.store, kind, self.namespace, rest)
            if found is None:
                raise InputError(f"No {kind} {rest!r} in this store (namespace {self.namespace})")
            return Found(kind, found)
        kinds = kinds_with_id(self.store, rest)
        if kinds:
            return Found(kinds[0], rest, tuple(kinds[1:]))
        community = self.store.resolve_community(self.namespace, rest)
        if community is not None:
            return Found("community", community)
        raise InputError(f"No community, entity, claim or chunk {rest!r} in this store (namespace {self.namespace})")

    def view(self, found: Found) -> View | None:
        return view_of(self.store, found)

    def entity(self, entity_id: str) -> EntityDetail | None:
        return entity_detail(self.store, entity_id)

    # -- the overview ------------------------------------------------------------------------

    def overview(self) -> Overview:
        return overview(self.store, self.hierarchy())

    def map_batches(self, level: Level, options: SearchOptions) -> tuple[int, int]:
        """(summaries, Map batches) of a run at `level` with these budgets, planned without
        a question (an empty one in the prompt) and unshuffled: a run's batch count is the
        same give or take the packing of its shuffle."""
        communities = self.store.iter_communities(self.namespace, None if level == "leaf" else level)
        plan = plan_search("", self.namespace, level, communities, options, shuffle=False)
        return plan.summary_count, len(plan.batches)
