"""Rows of the store made fit for graphrag-ts's PostgreSQL tables, and the record of what
that changed (pure: no database).

graphrag-ts's schema is stricter than SQLite's (its migrations, `graphrag_ts_schema.sql`):
text that is NOT NULL there, names limited to VARCHAR(n) characters, `members` a `TEXT[]`,
and `rag_claims.description_hash`, the SHA-256 of the normalised description that makes a
claim unique per subject. The rules here are the row-by-row ones:

- NULL where graphrag-ts says NOT NULL (text) becomes the empty string;
- a name longer than its VARCHAR is shortened to fit, with a short hash suffix of the
  whole name, so that two long names that share a beginning stay different;
- `members` JSON text becomes a list of names (as the store reads it: NULL is the empty
  list, unparsable text too, and that is reported);
- a row PostgreSQL cannot hold at all (a NULL id or key, a NUL character in its text) is
  skipped.

What needs the other rows (two claims clashing on their unique key, a reference to a row
that is not there) is decided by the writer in SQL, and recorded in the same
`Adaptations`. With `strict`, the first adaptation or skip raises `StrictRefusal`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graphrag_tui.errors import InputError
from graphrag_tui.store.schema import COLUMNS

#: (table, column) -> graphrag-ts's VARCHAR length, in characters.
VARCHAR_LIMITS: dict[tuple[str, str], int] = {
    ("rag_parents", "title"): 255,
    ("rag_entities", "name"): 200,
    ("rag_community_summaries", "community_name"): 100,
}
#: Text columns graphrag-ts declares NOT NULL where SQLite's schema allows NULL, or where an
#: empty value keeps the row usable: NULL becomes ''.
NOT_NULL_TEXT: frozenset[tuple[str, str]] = frozenset({
    ("rag_parents", "content"),
    ("rag_children", "content"),
    ("rag_entities", "name"),
    ("rag_community_summaries", "community_name"),
    ("rag_community_summaries", "summary_content"),
    ("rag_claims", "description"),
})
#: Columns without which a row has no place in graphrag-ts's tables: NULL skips the row.
REQUIRED: dict[str, tuple[str, ...]] = {
    "rag_parents": ("id",),
    "rag_children": ("id", "parent_id"),
    "rag_entities": ("id",),
    "rag_community_summaries": ("id",),
    "rag_claims": ("id", "subject_entity_id"),
}
#: Length of the hash suffix of a shortened name (hex digits) and its separator.
SUFFIX_HEX = 8
SUFFIX_SEPARATOR = " ~"
#: Every change is listed up to this many per table and kind; beyond, it is counted.
MAX_LISTED = 1000

#: ECMAScript's WhiteSpace and LineTerminator: what JavaScript's String.prototype.trim removes.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def description_hash(description: str) -> str:
    """`rag_claims.description_hash` as graphrag-ts computes it (`buildClaims.ts`):
    SHA-256, hex, of the description trimmed (JavaScript's `trim`) and lower-cased, in
    UTF-8. A lone surrogate is encoded as JavaScript's TextEncoder does, as U+FFFD."""
    normalised = description.strip(_JS_WHITESPACE).lower()
    try:
        data = normalised.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: pairs join, the others become U+FFFD
        data = normalised.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def shorten(value: str, limit: int) -> str:
    """`value` if it fits in `limit` characters; else its beginning, then ' ~' and the
    first 8 hex digits of the SHA-256 of the whole value, `limit` characters in all."""
    if len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:SUFFIX_HEX]
    keep = limit - len(SUFFIX_SEPARATOR) - SUFFIX_HEX
    return value[:keep] + SUFFIX_SEPARATOR + digest


def members_list(raw: Any) -> tuple[list[str], str | None]:
    """The `members` JSON text as a list of names, and what was lost on the way (None when
    nothing was). Items that are not strings are kept as their JSON text, as the store
    reads them."""
    if raw is None:
        return [], "NULL became the empty list"
    if isinstance(raw, list):  # already an array (from PostgreSQL)
        items = raw
    else:
        try:
            items = json.loads(raw)
        except (TypeError, ValueError, RecursionError):
            return [], "not JSON: became the empty list"
        if not isinstance(items, list):
            return [], "not a JSON array: became the empty list"
    names = [item if isinstance(item, str) else json.dumps(item, ensure_ascii=False) for item in items]
    lost = None if all(isinstance(item, str) for item in items) else "items that are not text kept as their JSON"
    return names, lost


def members_json(members: Sequence[str | None] | None) -> str:
    """A `TEXT[]` read from PostgreSQL as the JSON text SQLite keeps (as the importer writes
    it). NULL is the empty array."""
    return json.dumps(list(members or ()), ensure_ascii=False)


@dataclass(frozen=True)
class Change:
    """One adaptation or skip of one row."""

    table: str
    row_id: str
    kind: str  # "emptied", "shortened", "members", "skipped", "unlinked"
    detail: str

    def line(self) -> str:
        return f"{self.table} {self.row_id}: {self.detail}"


class StrictRefusal(InputError):
    """--strict: a row needed adapting or skipping, so nothing is written."""


@dataclass
class Adaptations:
    """Every change made to fit the destination, listed (up to `MAX_LISTED` per table and
    kind) and counted."""

    strict: bool = False
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    listed: list[Change] = field(default_factory=list)

    def add(self, change: Change) -> None:
        if self.strict:
            raise StrictRefusal(
                f"--strict: {change.line()}; nothing was written "
                "(without --strict the row is adapted or skipped and reported)"
            )
        key = (change.table, change.kind)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] <= MAX_LISTED:
            self.listed.append(change)

    def count(self, kind: str, table: str | None = None) -> int:
        return sum(n for (t, k), n in self.counts.items() if k == kind and table in (None, t))

    @property
    def skipped(self) -> int:
        return self.count("skipped")

    @property
    def adapted(self) -> int:
        return sum(self.counts.values()) - self.skipped

    def lines(self) -> list[str]:
        """The report: a summary line, then every change listed, then what was only counted."""
        if not self.counts:
            return ["Adaptations: none"]
        lines = [f"Adaptations: {self.adapted} value(s) adapted, {self.skipped} row(s) skipped"]
        lines += [f"  {change.line()}" for change in self.listed]
        for (table, kind), n in sorted(self.counts.items()):
            if n > MAX_LISTED:
                lines.append(f"  ... and {n - MAX_LISTED} more of {table} ({kind})")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "adapted": self.adapted,
            "skipped": self.skipped,
            "counts": [{"table": t, "kind": k, "rows": n} for (t, k), n in sorted(self.counts.items())],
            "changes": [
                {"table": c.table, "id": c.row_id, "kind": c.kind, "detail": c.detail} for c in self.listed
            ],
        }


def pg_columns(table: str, extras: Sequence[str] = ()) -> tuple[str, ...]:
    """The destination columns of `adapt_row`'s tuples: the store's, the optional ones,
    and for claims `description_hash`."""
    hashed = ("description_hash",) if table == "rag_claims" else ()
    return COLUMNS[table] + tuple(extras) + hashed


def adapt_row(table: str, row: Sequence[Any], report: Adaptations, extras: Sequence[str] = ()) -> tuple[Any, ...] | None:
    """One row of `table` (values in `COLUMNS[table]` order, then `extras`) fit for
    graphrag-ts's table (`pg_columns` order), or None when it is skipped. Every change is
    added to `report`."""
    columns = COLUMNS[table] + tuple(extras)
    values = dict(zip(columns, row, strict=True))
    row_id = values["id"] if isinstance(values["id"], str) else repr(values["id"])
    for column in REQUIRED[table]:
        if values[column] is None:
            report.add(Change(table, row_id, "skipped", f"skipped: {column} is NULL"))
            return None
    for column, value in values.items():
        if isinstance(value, str) and "\x00" in value:
            report.add(Change(table, row_id, "skipped",
                              f"skipped: {column} holds a NUL character, which PostgreSQL text cannot"))
            return None
    for column in columns:
        if values[column] is None and (table, column) in NOT_NULL_TEXT:
            values[column] = ""
            report.add(Change(table, row_id, "emptied", f"{column} NULL became ''"))
        limit = VARCHAR_LIMITS.get((table, column))
        value = values[column]
        if limit is not None and isinstance(value, str) and len(value) > limit:
            values[column] = shorten(value, limit)
            report.add(Change(table, row_id, "shortened",
                              f"{column} of {len(value)} characters shortened to {limit}: {values[column]!r}"))
    if table == "rag_community_summaries":
        values["members"], lost = members_list(values["members"])
        if lost is not None:
            report.add(Change(table, row_id, "members", f"members {lost}"))
    if table == "rag_claims":
        values["description_hash"] = description_hash(values["description"])
    return tuple(values[column] for column in pg_columns(table, extras))
