"""Provenance reads: from a claim to the passage it rests on, and from names to communities.

Used through `CommunityStore` (`claim_provenance`, `entity_communities`, `community_refs`,
`find_communities`), which passes its one read function (`Query`: errors become
`StoreError`) and the optional `rag_claims` columns the store has. Like the rest of the
store, nothing here relies on an index beyond the primary keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from graphrag_tui.store.records import (
    ChunkDetail,
    ClaimDetail,
    ClaimProvenance,
    CommunityRef,
    GoToMatch,
)
from graphrag_tui.store.schema import OPTIONAL

Query = Callable[[str, "Mapping[str, Any] | tuple"], list[tuple]]
#: Claims listed as citing the same chunk as the one shown (the count says how many more).
SAME_CHUNK_LIMIT = 200
#: Communities a go-to lists for a name, and entities whose communities it lists.
MATCH_LIMIT = 50
ENTITY_LIMIT = 5
#: How alike a word must be to a typed word to count as a fuzzy match (difflib's ratio).
FUZZY_RATIO = 0.8

# The claim columns every read takes, as text (a BLOB or number in a hostile store too).
_CLAIM_COLUMNS = (
    "CAST(c.id AS TEXT), coalesce(CAST(c.community_summary_id AS TEXT), ''), "
    "coalesce(CAST(c.subject_entity_id AS TEXT), ''), CAST(c.object_entity_id AS TEXT), "
    "coalesce(CAST(c.description AS TEXT), ''), CAST(c.source_chunk_id AS TEXT), "
    "CAST(c.source_parent_id AS TEXT)"
)
_OPTIONAL_NAMES = OPTIONAL["rag_claims"]


def _extras_sql(extras: Sequence[str]) -> str:
    """The optional columns, NULL for those the store lacks (`extras`: those it has)."""
    return ", ".join(f"CAST(c.{name} AS TEXT)" if name in extras else "NULL" for name in _OPTIONAL_NAMES)


def _claim(row: tuple, names: Mapping[str, str]) -> ClaimDetail:
    cid, leaf, subject, obj, description, chunk, parent, *extras = row
    fields = dict(zip(_OPTIONAL_NAMES, (_blank_is_none(e) for e in extras), strict=True))
    return ClaimDetail(
        id=cid or "", leaf_id=leaf, subject=names.get(subject, subject),
        object=None if obj is None else names.get(obj, obj), description=description,
        chunk_id=chunk, source_parent_id=parent, **fields,
    )


def _blank_is_none(value: str | None) -> str | None:
    return None if value is None or not value.strip() else value


def _entity_names(query: Query, ids: Iterable[str | None]) -> dict[str, str]:
    wanted = [i for i in dict.fromkeys(ids) if i is not None]
    return dict(query(
        "SELECT id, min(name COLLATE BINARY) FROM rag_entities WHERE typeof(name) = 'text' "
        "AND id IN (SELECT value FROM json_each(?)) GROUP BY id", (json.dumps(wanted),),
    ))


def claim_extras(query: Query, extras: Sequence[str], leaves_json: str) -> dict[str, dict[str, str | None]]:
    """Claim id -> its optional fields, for the claims of the leaves (a JSON array of ids);
    empty when the store has no optional claim columns."""
    if not extras:
        return {}
    rows = query(
        f"SELECT CAST(c.id AS TEXT), {_extras_sql(extras)} FROM rag_claims AS c "
        "WHERE c.community_summary_id IN (SELECT value FROM json_each(?))", (leaves_json,),
    )
    return {
        row[0]: dict(zip(_OPTIONAL_NAMES, (_blank_is_none(v) for v in row[1:]), strict=True))
        for row in rows if row[0] is not None
    }


def claim_provenance(query: Query, extras: Sequence[str], claim_id: str) -> ClaimProvenance | None:
    """The claim `claim_id` with the chunk it cites and the other claims citing that chunk,
    or None if no such claim."""
    columns = f"{_CLAIM_COLUMNS}, {_extras_sql(extras)}"
    rows = query(f"SELECT {columns}, CAST(c.namespace AS TEXT) FROM rag_claims AS c WHERE c.id = ?", (claim_id,))
    if not rows:
        return None
    row, namespace = rows[0][:-1], rows[0][-1] or ""
    subject_id, object_id, chunk_id, parent_id = row[2], row[3], row[5], row[6]
    chunk = None
    same: list[tuple] = []
    total = 0
    if chunk_id is not None:
        found = query(
            "SELECT CAST(ch.id AS TEXT), coalesce(CAST(ch.content AS TEXT), ''), CAST(ch.parent_id AS TEXT), "
            "CAST(p.title AS TEXT) FROM rag_children AS ch LEFT JOIN rag_parents AS p ON p.id = ch.parent_id "
            "WHERE ch.id = ?", (chunk_id,),
        )
        if found:
            cid, content, parent, title = found[0]
            chunk = ChunkDetail(id=cid, content=content, parent_id=parent, parent_title=title)
        # One pass (a scan of the claims where the store lacks idx_claims_chunk): the first
        # SAME_CHUNK_LIMIT claims, each row carrying how many there are in all.
        rows = query(
            f"SELECT {columns}, count(*) OVER () FROM rag_claims AS c WHERE c.source_chunk_id = ? AND c.id IS NOT ? "
            "ORDER BY c.id COLLATE BINARY LIMIT ?", (chunk_id, claim_id, SAME_CHUNK_LIMIT),
        )
        same = [r[:-1] for r in rows]
        total = rows[0][-1] if rows else 0
    document_title = chunk.parent_title if chunk is not None else None
    if chunk is None and parent_id is not None:
        titles = query("SELECT CAST(title AS TEXT) FROM rag_parents WHERE id = ?", (parent_id,))
        document_title = titles[0][0] if titles else None
    names = _entity_names(query, [subject_id, object_id, *(r[2] for r in same), *(r[3] for r in same)])
    return ClaimProvenance(
        claim=_claim(row, names), namespace=namespace, subject_entity_id=subject_id,
        object_entity_id=object_id, chunk=chunk, chunk_missing=chunk_id is not None and chunk is None,
        document_title=document_title, same_chunk=[_claim(r, names) for r in same], same_chunk_total=total,
    )


# The communities of a namespace whose `members` (a JSON array of entity names) hold a
# name; a `members` that is not valid JSON holds none. The LIKE (cheap, and ASCII letters
# compare without case there too) keeps the JSON parsing to the rows that may hold it.
_MEMBER_OF = """
SELECT s.id, CAST(s.community_name AS TEXT), s.level
FROM rag_community_summaries AS s,
     json_each(CASE WHEN json_valid(CAST(s.members AS TEXT)) THEN CAST(s.members AS TEXT) ELSE '[]' END) AS m
WHERE s.namespace = :ns AND CAST(s.members AS TEXT) LIKE :pattern ESCAPE '\\'
  AND m.type = 'text' AND (m.value = :name OR lower(m.value) = lower(:name))
GROUP BY s.id
ORDER BY s.level, s.id COLLATE BINARY
"""


#: A LIKE pattern holds at most the first this many characters of its text: SQLite refuses
#: patterns over 50,000 bytes ("LIKE or GLOB pattern too complex": a 10 MB entity name), and
#: every caller checks its rows exactly afterwards, so a prefix only lets more rows through.
LIKE_PREFIX = 5_000


def _like(text: str) -> str:
    """A LIKE pattern for `text` (its first LIKE_PREFIX characters) anywhere, its % _ and \\
    taken literally."""
    text = text[:LIKE_PREFIX]
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def entity_communities(query: Query, namespace: str, entity: str) -> list[CommunityRef]:
    """The communities of the namespace whose members include `entity` (by name; ASCII
    letters compare without case), coarsest level first, then by id."""
    return [_ref(row) for row in query(_MEMBER_OF, {"ns": namespace, "name": entity, "pattern": _like(entity)})]


def _ref(row: tuple) -> CommunityRef:
    cid, name, level = row
    return CommunityRef(id=cid, name=name, level=int(level) if isinstance(level, int) else 0)


def community_refs(query: Query, ids: Sequence[str]) -> dict[str, CommunityRef]:
    """The communities among `ids` that exist, by id, with their names."""
    rows = query(
        "SELECT id, CAST(community_name AS TEXT), level FROM rag_community_summaries "
        "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),),
    )
    return {row[0]: _ref(row) for row in rows}


def name_score(typed: str, name: str, *, fuzzy: bool = True) -> float:
    """How well `name` matches what the user typed, 0 (not at all) to 1 (the same name,
    ignoring case): 0.9 when the typed words appear in the name as whole words, 0.8 as
    any substring, else the share of typed words close to a word of the name (difflib's
    ratio at least FUZZY_RATIO: `Marly` finds `Marley`), scaled under 0.7 (`fuzzy=False`:
    0 instead)."""
    typed_words, name_words = _words(typed), _words(name)
    if not typed_words or not name_words:
        return 0.0
    if typed_words == name_words:
        return 1.0
    joined_typed, joined_name = " ".join(typed_words), " ".join(name_words)
    if f" {joined_typed} " in f" {joined_name} ":
        return 0.9
    if joined_typed in joined_name:
        return 0.8
    if not fuzzy:
        return 0.0
    return 0.7 if all(any(_close(word, other) for other in name_words) for word in typed_words) else 0.0


def _close(word: str, other: str) -> bool:
    """Whether two words are alike (difflib's ratio >= FUZZY_RATIO), its cheap upper
    bounds tried first."""
    matcher = SequenceMatcher(None, word, other)
    return (matcher.real_quick_ratio() >= FUZZY_RATIO and matcher.quick_ratio() >= FUZZY_RATIO
            and matcher.ratio() >= FUZZY_RATIO)


_WORD_RE = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.casefold())


def find_communities(
    query: Query, namespace: str, typed: str, communities_of: Callable[[str, str], list[CommunityRef]] | None = None,
) -> list[GoToMatch]:
    """Communities of the namespace that `typed` names: by community name (best match
    first), then the communities whose members include an entity so named (the best
    ENTITY_LIMIT entities). At most MATCH_LIMIT, each community once.

    The names holding the typed words are found first (SQL's LIKE on the longest typed word
    narrows them down; it ignores case for ASCII letters only). Only when there are none are names matched
    fuzzily: the typed words against the distinct words of all names (far fewer than the
    names), then the names holding a close word for each typed word. `communities_of`: the
    store's own `entity_communities` (default: this module's)."""
    words = _words(typed)
    if not words:
        return []
    narrowest = _like(max(words, key=len))  # the longest typed word: the fewest rows hold it
    names_sql = ("SELECT id, CAST(community_name AS TEXT), level FROM rag_community_summaries "
                 "WHERE namespace = ? AND community_name IS NOT NULL")
    rows = query(names_sql + " AND CAST(community_name AS TEXT) LIKE ? ESCAPE '\\'", (namespace, narrowest))
    scored = [(score, row) for row in rows if (score := name_score(typed, row[1] or "", fuzzy=False)) > 0]
    if not scored:
        scored = _fuzzy_names(query(names_sql, (namespace,)), typed, words)
    scored.sort(key=lambda item: (-item[0], item[1][2], item[1][0]))
    matches = [GoToMatch(community=_ref(row)) for _, row in scored[:MATCH_LIMIT]]
    entities = [
        (score, name) for (name,) in query(
            "SELECT CAST(name AS TEXT) FROM rag_entities WHERE namespace = ? AND name IS NOT NULL "
            "AND CAST(name AS TEXT) LIKE ? ESCAPE '\\'", (namespace, narrowest),
        )
        if (score := name_score(typed, name or "", fuzzy=False)) >= 0.9
    ]
    entities.sort(key=lambda item: (-item[0], item[1]))
    seen = {m.community.id for m in matches}
    for _, entity in entities[:ENTITY_LIMIT]:
        refs = communities_of(namespace, entity) if communities_of else entity_communities(query, namespace, entity)
        for ref in refs:
            if len(matches) >= MATCH_LIMIT:
                return matches
            if ref.id not in seen:
                seen.add(ref.id)
                matches.append(GoToMatch(community=ref, entity=entity))
    return matches


def _fuzzy_names(rows: list[tuple], typed: str, words: list[str]) -> list[tuple[float, tuple]]:
    """(score, row) of the names that match `typed` (any way `name_score` allows), looking
    at no name without a word close to every typed word."""
    named = [(row, _words(row[1] or "")) for row in rows]
    vocabulary = {w for _, name_words in named for w in name_words if not w.isdigit()}
    close = [{v for v in vocabulary if v == word or _close(word, v)} for word in words]
    if not all(close):
        return []
    return [
        (score, row) for row, name_words in named
        if all(c.intersection(name_words) for c in close) and (score := name_score(typed, row[1] or "")) > 0
    ]
