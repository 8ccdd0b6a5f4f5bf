"""Exploring a namespace without a question: the community hierarchy with its counts, an
entity with the communities and claims that name it, a claim or a chunk by id, and the
namespace's overview figures.

The hierarchy is read once per namespace in two set-based queries (the rows, then the
claims per leaf) and kept in memory: a tree widget then expands any node, or a whole
subtree, without reading the store again. Everything here is a read of the store
(`CommunityStore._query`: one lock, SQLite errors as `StoreError`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from graphrag_tui.engine.tokens import estimate_tokens
from graphrag_tui.store.records import CommunityRef
from graphrag_tui.store.store import _parse_members, _text

if TYPE_CHECKING:
    from graphrag_tui.store.store import CommunityStore

Kind = Literal["community", "entity", "claim", "chunk"]
#: The kinds of row an id can name, in the order `show` tries them.
KINDS: tuple[Kind, ...] = ("community", "entity", "claim", "chunk")
KIND_TABLES: dict[Kind, str] = {
    "community": "rag_community_summaries",
    "entity": "rag_entities",
    "claim": "rag_claims",
    "chunk": "rag_children",
}
SortKey = Literal["id", "name", "size", "rank"]
SORT_KEYS: tuple[SortKey, ...] = ("size", "name", "rank")


# -- the hierarchy ------------------------------------------------------------------------


class TreeNode(NamedTuple):
    """One community as the tree shows it: counts are of its descendant leaves (a leaf is
    its own single descendant) and the claims assigned to them."""

    id: str
    name: str | None
    level: int
    leaf_count: int
    claim_count: int
    child_count: int
    rank: float | None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value else None  # NaN is no rank


@dataclass
class Hierarchy:
    """The communities of one namespace, their children and their counts, in memory."""

    namespace: str
    nodes: dict[str, TreeNode]
    children: dict[str, list[str]]
    roots: list[str]
    has_rank: bool
    #: Communities not reachable from a root (cyclic parent links): not in the tree.
    unreachable: int = 0
    _sorted: dict[tuple[str | None, SortKey], list[str]] = field(default_factory=dict)

    def sort_ids(self, ids: list[str], key: SortKey) -> list[str]:
        nodes = self.nodes
        if key == "id":
            return sorted(ids)
        if key == "name":
            return sorted(ids, key=lambda i: ((nodes[i].name or "").casefold(), i))
        if key == "rank":
            return sorted(ids, key=lambda i: (-(nodes[i].rank if nodes[i].rank is not None else float("-inf")), i))
        return sorted(ids, key=lambda i: (-nodes[i].leaf_count, -nodes[i].claim_count, i))

    def children_of(self, parent: str | None, key: SortKey = "size") -> list[TreeNode]:
        """The children of `parent` (None: the roots), sorted by `key` (memoized)."""
        cached = self._sorted.get((parent, key))
        if cached is None:
            ids = self.roots if parent is None else self.children.get(parent, [])
            cached = self._sorted[(parent, key)] = self.sort_ids(ids, key)
        return [self.nodes[i] for i in cached]

    def at_level(self, level: int, key: SortKey = "size") -> list[TreeNode]:
        cached = self._sorted.get((f"\0level {level}", key))
        if cached is None:
            ids = [i for i, node in self.nodes.items() if node.level == level]
            cached = self._sorted[(f"\0level {level}", key)] = self.sort_ids(ids, key)
        return [self.nodes[i] for i in cached]

    def levels(self) -> list[int]:
        return sorted({node.level for node in self.nodes.values()})

    def path_to(self, community_id: str) -> list[str]:
        """The ids from a root down to `community_id` (empty if it is not in the tree)."""
        if community_id not in self.nodes:
            return []
        parent_of = {child: parent for parent, kids in self.children.items() for child in kids}
        path, seen = [community_id], {community_id}
        while (parent := parent_of.get(path[-1])) is not None and parent not in seen:
            path.append(parent)
            seen.add(parent)
        path.reverse()
        return path if path[0] in set(self.roots) else []

    def subtree(self, community_id: str, depth: int | None = None) -> Iterator[tuple[int, TreeNode]]:
        """(depth below `community_id`, node) in pre-order, down to `depth` levels."""
        stack = [(0, community_id)]
        seen: set[str] = set()
        while stack:
            d, cid = stack.pop()
            if cid in seen:
                continue
            seen.add(cid)
            yield d, self.nodes[cid]
            if depth is None or d < depth:
                stack.extend((d + 1, c) for c in reversed(self.children.get(cid, [])))


def load_hierarchy(store: CommunityStore, namespace: str) -> Hierarchy:
    """The namespace's communities with their counts: two queries, then sums in Python."""
    has_rank = "rank" in store.column_names("rag_community_summaries")
    rank_column = "rank" if has_rank else "NULL"
    rows = store._query(
        f"SELECT id, community_name, level, parent_community_id, {rank_column} "
        "FROM rag_community_summaries WHERE namespace = ? ORDER BY id COLLATE BINARY",
        (namespace,),
    )
    # Claims per community of any namespace (the claims index covers this): fewer
    # B-tree searches than a join on the namespace's rows.
    claims_of = dict(store._query(
        "SELECT community_summary_id, count(*) FROM rag_claims "
        "WHERE community_summary_id IS NOT NULL GROUP BY community_summary_id"
    ))
    # An id that comes twice (a table without its primary key) is its last row, as `info` shows it.
    info = {row[0]: row for row in rows}
    listed: dict[str, list[str]] = {}
    roots: list[str] = []
    for cid, _, _, parent, _ in info.values():
        if parent is None or parent not in info or parent == cid:
            roots.append(cid)
        else:
            listed.setdefault(parent, []).append(cid)
    # Breadth-first from the roots, each community once, under the parent it is reached from
    # (one in a cycle is reached from no root), then sums from the bottom up.
    parent_of: dict[str, str | None] = dict.fromkeys(roots)
    children: dict[str, list[str]] = {}
    order = list(roots)
    for cid in order:
        for child in listed.get(cid, ()):
            if child not in parent_of:
                parent_of[child] = cid
                children.setdefault(cid, []).append(child)
                order.append(child)
    leaves = dict.fromkeys(order, 0)
    claims = dict.fromkeys(order, 0)
    # A leaf as planning has it (SPEC §2): no row names it as parent. One that is its own
    # parent shows as a root, but is no leaf: its claims are in no Map text.
    named = {row[3] for row in rows}
    for cid in reversed(order):
        if cid not in named:
            leaves[cid], claims[cid] = 1, claims_of.get(cid, 0)
        parent = parent_of[cid]
        if parent is not None:
            leaves[parent] += leaves[cid]
            claims[parent] += claims[cid]
    nodes = {
        cid: TreeNode(cid, _text(name), int(level), leaves[cid], claims[cid], len(children.get(cid, ())), _number(rank))
        for cid, name, level, _, rank in info.values() if cid in leaves
    }
    return Hierarchy(namespace, nodes, children, roots, has_rank, unreachable=len(info) - len(nodes))


def tree_json(hierarchy: Hierarchy, depth: int | None, key: SortKey = "id") -> dict[str, Any]:
    """`tree --json`: the roots, each with its children down to `depth` levels (1: roots only).
    Made without recursion: a damaged store may chain thousands of levels."""
    roots: list[dict[str, Any]] = []
    stack = [(root, 1, roots) for root in reversed(hierarchy.children_of(None, key))]
    while stack:
        node, level, siblings = stack.pop()
        entry = {
            "id": node.id, "name": node.name, "level": node.level, "leaf_count": node.leaf_count,
            "claim_count": node.claim_count, "child_count": node.child_count, "rank": node.rank, "children": [],
        }
        siblings.append(entry)
        if depth is None or level < depth:
            stack += ((kid, level + 1, entry["children"]) for kid in reversed(hierarchy.children_of(node.id, key)))
    return {"namespace": hierarchy.namespace, "roots": roots}


# -- entities, claims, chunks ---------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ClaimRef(_Frozen):
    """A claim with its entities' ids and names (a missing entity row: the id as its name)."""

    id: str
    namespace: str | None  # None: a row of no namespace
    subject_id: str
    subject: str
    object_id: str | None = None
    object: str | None = None
    description: str
    community_id: str | None = None
    chunk_id: str | None = None
    document_id: str | None = None


class EntityDetail(_Frozen):
    id: str
    namespace: str | None  # None: a row of no namespace
    name: str
    description: str | None = None
    communities: list[CommunityRef] = []
    claims: list[ClaimRef] = []


class ChunkRef(_Frozen):
    id: str
    namespace: str | None  # None: a row of no namespace
    content: str
    document_id: str | None = None
    document_title: str | None = None


class ClaimView(_Frozen):
    """A claim with the chunk it cites and that chunk's document."""

    claim: ClaimRef
    chunk: ChunkRef | None = None


class ChunkView(_Frozen):
    """A chunk with its document and the claims that cite it."""

    chunk: ChunkRef
    claims: list[ClaimRef] = []


def entity_name_sql(entity_id: str) -> str:
    """An entity's name by its id, as planning names it: of repeated ids (a store without
    keys; a join repeated every claim of theirs), the least name by code point; a name that
    is not text counts as none."""
    return (f"(SELECT min(name COLLATE BINARY) FROM rag_entities WHERE id = {entity_id} "
            "AND typeof(name) = 'text')")


_CLAIM_SELECT = f"""
SELECT coalesce(CAST(c.id AS TEXT), ''), CAST(c.namespace AS TEXT), coalesce(CAST(c.subject_entity_id AS TEXT), ''),
       coalesce({entity_name_sql("c.subject_entity_id")}, CAST(c.subject_entity_id AS TEXT), ''),
       CAST(c.object_entity_id AS TEXT), coalesce({entity_name_sql("c.object_entity_id")}, CAST(c.object_entity_id AS TEXT)),
       coalesce(CAST(c.description AS TEXT), ''), CAST(c.community_summary_id AS TEXT),
       CAST(c.source_chunk_id AS TEXT), CAST(c.source_parent_id AS TEXT)
FROM rag_claims AS c
"""
_CLAIM_FIELDS = ("id", "namespace", "subject_id", "subject", "object_id", "object", "description",
                 "community_id", "chunk_id", "document_id")


def _claims(store: CommunityStore, where: str, params: tuple) -> list[ClaimRef]:
    rows = store._query(f"{_CLAIM_SELECT} WHERE {where} ORDER BY c.id COLLATE BINARY", params)
    return [ClaimRef(**dict(zip(_CLAIM_FIELDS, row, strict=True))) for row in rows]


def entity_detail(store: CommunityStore, entity_id: str) -> EntityDetail | None:
    """The entity, the communities of its namespace whose `members` name it (as go-to's
    entity matches find them: by level, then id), and the claims in which it is subject or
    object (by id)."""
    rows = store._query(
        "SELECT CAST(id AS TEXT), CAST(namespace AS TEXT), coalesce(CAST(name AS TEXT), ''), description "
        "FROM rag_entities WHERE id = ? ORDER BY NOT (typeof(name) = 'text'), CAST(name AS TEXT) COLLATE BINARY "
        "LIMIT 1", (entity_id,),
    )
    if not rows:
        return None
    eid, namespace, name, description = rows[0]
    communities = store.entity_communities(namespace, name)
    claims = _claims(store, "c.subject_entity_id = ? OR c.object_entity_id = ?", (eid, eid))
    return EntityDetail(id=eid, namespace=namespace, name=name, description=_text(description),
                        communities=communities, claims=claims)


def _chunk(store: CommunityStore, chunk_id: str) -> ChunkRef | None:
    rows = store._query(
        "SELECT CAST(ch.id AS TEXT), CAST(ch.namespace AS TEXT), coalesce(CAST(ch.content AS TEXT), ''), "
        "CAST(ch.parent_id AS TEXT), CAST(p.title AS TEXT) "
        "FROM rag_children AS ch LEFT JOIN rag_parents AS p ON p.id = ch.parent_id WHERE ch.id = ?",
        (chunk_id,),
    )
    if not rows:
        return None
    cid, namespace, content, document_id, title = rows[0]
    return ChunkRef(id=cid, namespace=namespace, content=content, document_id=document_id, document_title=title)


def claim_view(store: CommunityStore, claim_id: str) -> ClaimView | None:
    claims = _claims(store, "c.id = ?", (claim_id,))
    if not claims:
        return None
    claim = claims[0]
    return ClaimView(claim=claim, chunk=_chunk(store, claim.chunk_id) if claim.chunk_id else None)


def chunk_view(store: CommunityStore, chunk_id: str) -> ChunkView | None:
    chunk = _chunk(store, chunk_id)
    if chunk is None:
        return None
    return ChunkView(chunk=chunk, claims=_claims(store, "c.source_chunk_id = ?", (chunk_id,)))


class MemberRef(_Frozen):
    """A name in a community's `members`, with the id of the entity of that name in the
    community's namespace (None: no such entity)."""

    name: str
    entity_id: str | None = None


class MembersView(_Frozen):
    community: CommunityRef
    members: list[MemberRef] = []


def members_view(store: CommunityStore, community_id: str) -> MembersView | None:
    """A community's members, each with its entity when the namespace has one of that name."""
    rows = store._query(
        "SELECT id, namespace, community_name, level, members FROM rag_community_summaries WHERE id = ?",
        (community_id,),
    )
    if not rows:
        return None
    cid, namespace, name, level, members = rows[0]
    names = _parse_members(members)
    ids = dict(store._query(
        "SELECT name, id FROM rag_entities WHERE namespace = ? AND name IN (SELECT value FROM json_each(?))",
        (namespace, json.dumps(names)),
    ))
    return MembersView(community=CommunityRef(id=cid, name=_text(name), level=int(level)),
                       members=[MemberRef(name=n, entity_id=_text(ids.get(n))) for n in names])


def kinds_with_id(store: CommunityStore, row_id: str) -> list[Kind]:
    """The kinds of row that have this exact id, in `KINDS` order."""
    union = " UNION ALL ".join(
        f"SELECT {index} FROM {KIND_TABLES[kind]} WHERE id = :id" for index, kind in enumerate(KINDS)
    )
    found = {row[0] for row in store._query(union, {"id": row_id})}
    return [kind for index, kind in enumerate(KINDS) if index in found]


def qualified_id(store: CommunityStore, kind: Kind, namespace: str | None, text: str) -> str | None:
    """What the user typed as an id of this kind: the exact id, else `<namespace>/<text>`
    (a community also by the id suffix, as the go-to dialog does)."""
    if kind == "community" and namespace is not None:
        return store.resolve_community(namespace, text)
    table = KIND_TABLES[kind]
    for candidate in (text, f"{namespace}/{text}" if namespace is not None else None):
        if candidate is not None and store._query(f"SELECT 1 FROM {table} WHERE id = ?", (candidate,)):
            return candidate
    return None


# -- the overview -----------------------------------------------------------------------------


class LevelFigures(_Frozen):
    level: int
    communities: int
    leaves: int
    claims: int


class HistogramBin(_Frozen):
    """Communities whose summary is `low` to `high` tokens (both included)."""

    low: int
    high: int
    count: int


class Overview(_Frozen):
    namespace: str
    levels: list[LevelFigures]
    documents: int
    chunks: int
    entities: int
    communities: int
    leaves: int
    claims: int
    unassigned_claims: int
    largest: list[CommunityRef]
    largest_leaf_counts: list[int]
    token_histogram: list[HistogramBin]


def _histogram(sizes: list[int]) -> list[HistogramBin]:
    """Powers of two (0, 1, 2-3, 4-7, ...) from the smallest size's bin to the largest's."""
    if not sizes:
        return []
    counts: dict[int, int] = {}
    for size in sizes:
        counts[size.bit_length()] = counts.get(size.bit_length(), 0) + 1
    return [
        HistogramBin(low=0 if b == 0 else 1 << (b - 1), high=0 if b == 0 else (1 << b) - 1, count=counts.get(b, 0))
        for b in range(min(counts), max(counts) + 1)
    ]


def overview(store: CommunityStore, hierarchy: Hierarchy, largest: int = 10) -> Overview:
    """The namespace in figures. Per level, `claims` counts the claims below that level's
    communities (each claim once per level)."""
    ns = hierarchy.namespace

    def count(table: str) -> int:
        return int(store._query(f"SELECT count(*) FROM {table} WHERE namespace = ?", (ns,))[0][0])

    levels: dict[int, list[int]] = {}
    for node in hierarchy.nodes.values():
        figures = levels.setdefault(node.level, [0, 0, 0])
        figures[0] += 1
        figures[1] += node.child_count == 0
        figures[2] += node.claim_count
    unassigned = int(store._query(
        "SELECT count(*) FROM rag_claims AS c WHERE c.namespace = ? AND (c.community_summary_id IS NULL "
        "OR NOT EXISTS (SELECT 1 FROM rag_community_summaries AS s WHERE s.id = c.community_summary_id))",
        (ns,),
    )[0][0])
    sizes = [estimate_tokens(_text(text) or "") for (text,) in store._query(
        "SELECT summary_content FROM rag_community_summaries WHERE namespace = ?", (ns,))]
    top = sorted(hierarchy.nodes.values(), key=lambda n: (-n.leaf_count, -n.claim_count, n.id))[:largest]
    return Overview(
        namespace=ns,
        levels=[LevelFigures(level=lv, communities=f[0], leaves=f[1], claims=f[2]) for lv, f in sorted(levels.items())],
        documents=count("rag_parents"), chunks=count("rag_children"), entities=count("rag_entities"),
        communities=count("rag_community_summaries"),
        leaves=sum(1 for n in hierarchy.nodes.values() if n.child_count == 0),
        claims=count("rag_claims"), unassigned_claims=unassigned,
        largest=[CommunityRef(id=n.id, name=n.name, level=n.level) for n in top],
        largest_leaf_counts=[n.leaf_count for n in top],
        token_histogram=_histogram(sizes),
    )
