"""Mapping GraphRAG tables onto the community store's rows (SPEC section 2).

IDs: communities are ``<namespace>/<community number>``, so a bare GraphRAG community number (the
``n`` of ``[Data: Reports (n)]``) resolves within the namespace. Entities, documents, chunks and
claims are ``<namespace>/<human_readable_id>`` (the number GraphRAG answers cite as
``Entities (n)``, ``Sources (n)``, ``Claims (n)``); a table whose ``human_readable_id`` is missing,
null or not unique uses its ``id`` column instead. Entities that only claims name get
``<namespace>/claim-entity-<k>``.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from graphrag_tui.errors import InputError
from graphrag_tui.importer.parquet_tables import GraphRagIndex, Table, as_int, as_list, as_text
from graphrag_tui.importer.report import ImportReport
from graphrag_tui.store.schema import OPTIONAL

#: The object GraphRAG writes for a claim without one (and the value it writes for a
#: claim's missing source text, type, status or date).
NO_OBJECT = "NONE"


@dataclass
class StoreRows:
    """Rows for the five store tables, as tuples in the column order of ``store.schema.COLUMNS``;
    a claim's tuple goes on with the optional columns named in ``claim_extras``."""

    parents: list[tuple[Any, ...]] = field(default_factory=list)
    children: list[tuple[Any, ...]] = field(default_factory=list)
    entities: list[tuple[Any, ...]] = field(default_factory=list)
    summaries: list[tuple[Any, ...]] = field(default_factory=list)
    claims: list[tuple[Any, ...]] = field(default_factory=list)
    #: The optional ``rag_claims`` columns (``store.schema.OPTIONAL``) the covariates fill.
    claim_extras: tuple[str, ...] = ()
    #: The optional ``rag_community_summaries`` columns the reports fill (rank, rating
    #: explanation, findings); a summary's tuple goes on with them.
    summary_extras: tuple[str, ...] = ()


@dataclass
class _Community:
    number: int
    level: int
    parent: int | None
    entity_ids: list[str]
    text_unit_ids: set[str]
    children: list[int] | None


def _report_extras(table: Table, index: int, row: dict, columns: tuple[str, ...]) -> list[Any]:
    """A report's rank (a finite number, else NULL), rating explanation and findings (a JSON
    array of {summary, explanation}), for those of `columns` the reports have."""
    values: list[Any] = []
    for column in columns:
        value = row.get(column)
        if column == "rank":
            values.append(_rank(value))
        elif column == "findings":
            items = as_list(table, column, index, value)
            values.append(json.dumps(
                [{"summary": as_text(i.get("summary")) or "", "explanation": as_text(i.get("explanation")) or ""}
                 for i in items if isinstance(i, dict)],
                ensure_ascii=False,
            ) if value is not None else None)
        else:
            values.append(as_text(value))
    return values


def _rank(value: object) -> float | None:
    """A finite number (a decimal too), or one written as text ("7.5": a rank column of
    strings lost every rank), else None."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float, Decimal)) or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def store_id(namespace: str, key: object) -> str:
    return f"{namespace}/{key}"


def _keyed_rows(table: Table, namespace: str, report: ImportReport) -> Iterator[tuple[int, dict, str, str]]:
    """(row index, row, source id, store id) for each row with a usable, first-seen ``id``."""
    hrids: list[str | None] | None = None
    if table.has("human_readable_id"):
        hrids = [as_text(row["human_readable_id"]) for row in table.rows]
        if any(h is None or h.strip() == "" for h in hrids) or len(set(hrids)) != len(hrids):
            report.notes.append(
                f"{table.path.name}: human_readable_id is missing or repeated, "
                "so IDs use its 'id' column"
            )
            hrids = None
    seen: set[str] = set()
    missing = repeated = 0
    for index, row in enumerate(table.rows):
        source = as_text(row["id"])
        if source is None or source.strip() == "":
            missing += 1
            continue
        if source in seen:
            repeated += 1
            continue
        seen.add(source)
        key = hrids[index] if hrids is not None else source
        yield index, row, source, store_id(namespace, key)
    if missing:
        report.notes.append(f"{table.path.name}: skipped {missing} rows without an id")
    if repeated:
        report.notes.append(f"{table.path.name}: skipped {repeated} rows repeating an earlier id")


def build_rows(index: GraphRagIndex, namespace: str, text_column: str, report: ImportReport) -> StoreRows:
    rows = StoreRows()
    ns = namespace
    tables = index.tables

    # -- documents -> rag_parents ------------------------------------------------------------
    documents: dict[str, str] = {}  # source id -> store id
    for _, row, source, sid in _keyed_rows(tables["documents"], ns, report):
        documents[source] = sid
        rows.parents.append((sid, ns, as_text(row.get("title")), as_text(row.get("text"))))
    report.documents = len(rows.parents)

    # -- text units -> rag_children ----------------------------------------------------------
    units_table = tables["text_units"]
    units: dict[str, tuple[str, str | None]] = {}  # source id -> (chunk store id, document store id)
    several_documents = 0
    for i, row, source, sid in _keyed_rows(units_table, ns, report):
        raw = row["document_id"]
        if units_table.column_label("document_id") == "document_ids" or isinstance(raw, (list, tuple)):
            refs = [as_text(r) for r in as_list(units_table, "document_id", i, raw)]
        else:
            refs = [as_text(raw)]
        refs = [r for r in refs if r is not None]
        parent = next((documents[r] for r in refs if r in documents), None)
        if refs and parent is None:
            report.skip("text unit -> document references not found in documents")
        if len(set(refs)) > 1:
            several_documents += 1
        units[source] = (sid, parent)
        rows.children.append((sid, ns, parent, as_text(row["text"]) or ""))
    if several_documents:
        report.notes.append(
            f"{several_documents} text units name several documents; each chunk is filed "
            "under the first one that exists"
        )
    report.chunks = len(rows.children)

    # -- entities -> rag_entities ------------------------------------------------------------
    entity_by_source: dict[str, str] = {}
    entity_by_title: dict[str, str] = {}
    entity_names: dict[str, str] = {}  # store id -> name
    untitled = repeated_titles = 0
    for _, row, source, sid in _keyed_rows(tables["entities"], ns, report):
        title = as_text(row["title"])
        if title is None or title.strip() == "":
            untitled += 1
            continue
        if title in entity_by_title:  # the store keeps names unique per namespace
            repeated_titles += 1
            entity_by_source[source] = entity_by_title[title]
            continue
        entity_by_source[source] = sid
        entity_by_title[title] = sid
        entity_names[sid] = title
        rows.entities.append((sid, ns, title, as_text(row.get("description"))))
    if untitled:
        report.notes.append(f"skipped {untitled} entities without a title")
    if repeated_titles:
        report.notes.append(f"merged {repeated_titles} entities repeating an earlier title")

    # -- communities + reports -> rag_community_summaries -------------------------------------
    communities = _read_communities(tables["communities"], report)
    reports_table = tables["community_reports"]
    reports: dict[int, dict] = {}
    repeated_reports = 0
    for i, row in enumerate(reports_table.rows):
        number = as_int(reports_table, "community", i, row["community"])
        if number in reports:
            repeated_reports += 1
            continue
        reports[number] = {"index": i, "row": row}
    if repeated_reports:
        report.notes.append(f"skipped {repeated_reports} reports repeating an earlier community")

    # Structure (level, parent) comes from communities; a report without a communities row
    # falls back to the report's own columns.
    structure: dict[int, tuple[int, int | None]] = {}
    for number in sorted(reports):
        community = communities.get(number)
        if community is not None:
            structure[number] = (community.level, community.parent)
            continue
        report.skip("reports whose community is not in communities (imported without members)")
        i, row = reports[number]["index"], reports[number]["row"]
        level = as_int(reports_table, "level", i, row.get("level"), allow_null=True) if reports_table.has("level") else None
        if level is None:
            raise InputError(
                f"{reports_table.path}: community {number} has a report but no row in "
                f"{tables['communities'].path.name} and no level"
            )
        parent = as_int(reports_table, "parent", i, row.get("parent"), allow_null=True) if reports_table.has("parent") else None
        structure[number] = (_level(reports_table, i, level), parent if parent is not None and parent >= 0 else None)

    unreported = sorted(set(communities) - set(reports))
    if unreported:
        report.notes.append(
            f"{len(unreported)} communities have no report and were not imported"
        )

    parent_of: dict[int, int | None] = {}
    for number, (_, parent) in structure.items():
        if parent is not None and parent not in structure:
            report.skip("parent community references not found among the reports")
            parent = None
        parent_of[number] = parent
    if not structure:
        raise InputError(
            f"{reports_table.path}: no community has a report, so there is nothing to import "
            "(the namespace would be empty)"
        )
    has_children = {p for p in parent_of.values() if p is not None}
    leaves = sorted(n for n in structure if n not in has_children)
    cyclic = _in_cycles(parent_of)
    if not leaves:
        raise InputError(
            f"{tables['communities'].path}: every community is some community's parent (the "
            f"'parent' links form cycles), so there is no leaf community to search or to hold claims"
        )
    if cyclic:
        report.notes.append(
            f"{len(cyclic)} communities form cycles of 'parent' links (community {min(cyclic)} among "
            "them): they are imported as they are, and the search reaches them only by level"
        )

    members: dict[int, list[str]] = {}  # number -> entity store ids
    empty_text = 0
    rows.summary_extras = tuple(c for c in OPTIONAL["rag_community_summaries"] if reports_table.has(c))
    for number in sorted(structure):
        level, _ = structure[number]
        parent = parent_of[number]
        community = communities.get(number)
        ids: list[str] = []
        for source in community.entity_ids if community else []:
            sid = entity_by_source.get(source)
            if sid is None:
                report.skip("community -> entity references not found in entities")
            elif sid not in ids:
                ids.append(sid)
        members[number] = ids
        row = reports[number]["row"]
        text = as_text(row.get(text_column)) or ""
        if text.strip() == "":
            empty_text += 1
        rows.summaries.append(
            (
                store_id(ns, number),
                ns,
                as_text(row.get("title")),
                text,
                level,
                None if parent is None else store_id(ns, parent),
                json.dumps([entity_names[sid] for sid in ids], ensure_ascii=False),
                *_report_extras(reports_table, reports[number]["index"], row, rows.summary_extras),
            )
        )
        report.communities_per_level[level] = report.communities_per_level.get(level, 0) + 1
    report.communities_per_level = dict(sorted(report.communities_per_level.items()))
    report.leaves = len(leaves)
    if empty_text:
        report.notes.append(f"{empty_text} reports have an empty '{text_column}' (global search skips them)")
    _check_children(tables["communities"], communities, report)

    # -- covariates -> rag_claims ------------------------------------------------------------
    claims_table = tables.get("covariates")
    added_entities = 0

    def entity_for(title: str) -> str:
        nonlocal added_entities
        sid = entity_by_title.get(title) or entity_by_title.get(title.strip())
        if sid is not None:
            return sid
        name = title.strip()
        k = added_entities + 1
        while store_id(ns, f"claim-entity-{k}") in entity_names:
            k += 1
        sid = store_id(ns, f"claim-entity-{k}")
        added_entities += 1
        entity_by_title[name] = sid
        entity_names[sid] = name
        rows.entities.append((sid, ns, name, None))
        return sid

    if claims_table is None:
        report.notes.append(
            f"no {index.file_name('covariates')}: this index has no claims "
            "(GraphRAG extracts them only when claim extraction is enabled), so none were imported"
        )
    else:
        entity_leaves: dict[str, list[int]] = defaultdict(list)
        unit_leaves: dict[str, list[int]] = defaultdict(list)
        for number in leaves:  # ascending, so each list is sorted
            for sid in members[number]:
                entity_leaves[sid].append(number)
            community = communities.get(number)
            for unit in sorted(community.text_unit_ids) if community else []:
                unit_leaves[unit].append(number)
        if not tables["communities"].has("text_unit_ids"):
            report.notes.append(
                f"{tables['communities'].path.name} has no text_unit_ids: claims are assigned "
                "by subject entity only"
            )

        no_description = 0
        rows.claim_extras = tuple(c for c in OPTIONAL["rag_claims"] if claims_table.has(c))
        for _, row, _source, sid in _keyed_rows(claims_table, ns, report):
            subject = as_text(row["subject_id"])
            if subject is None or subject.strip() == "":
                report.skip("claims without a subject")
                continue
            subject_id = entity_for(subject)
            obj = as_text(row.get("object_id"))
            object_id = None if obj is None or obj.strip() in ("", NO_OBJECT) else entity_for(obj)
            description = as_text(row.get("description")) or ""
            if description.strip() == "":
                no_description += 1
            unit = as_text(row["text_unit_id"])
            chunk_id = parent_id = None
            if unit is not None:
                if unit in units:
                    chunk_id, parent_id = units[unit]
                else:
                    report.skip("claim -> text unit references not found in text units")
            leaf = assign_leaf(subject_id, unit, entity_leaves, unit_leaves, communities)
            if leaf is None:
                report.claims_unassigned += 1
            else:
                report.claims_assigned += 1
                if subject_id not in entity_leaves:
                    report.claims_assigned_by_text_unit += 1
            rows.claims.append(
                (
                    sid,
                    ns,
                    subject_id,
                    object_id,
                    description,
                    parent_id,
                    chunk_id,
                    None if leaf is None else store_id(ns, leaf),
                    *(_claim_extra(row.get(column)) for column in rows.claim_extras),
                )
            )
        if no_description:
            report.notes.append(f"{no_description} claims have no description (stored empty)")
        if report.claims_unassigned:
            report.notes.append(
                f"{report.claims_unassigned} claims fit no leaf community (neither by subject "
                "nor by text unit) and stay unassigned"
            )

    report.entities = len(rows.entities)
    report.entities_from_claims = added_entities
    return rows


def _claim_extra(value: object) -> str | None:
    """A claim's source text, type, status or date as text; GraphRAG's "NONE" and blank
    text mean there is none."""
    text = as_text(value)
    return None if text is None or text.strip() in ("", NO_OBJECT) else text


def assign_leaf(
    subject_id: str,
    unit: str | None,
    entity_leaves: dict[str, list[int]],
    unit_leaves: dict[str, list[int]],
    communities: dict[int, _Community],
) -> int | None:
    """The leaf community a claim belongs to, or None.

    1. the leaves whose entities contain the subject; among several, those that also list the
       claim's text unit are preferred, then the lowest community number wins;
    2. otherwise the lowest-numbered leaf that lists the claim's text unit.
    """
    candidates = entity_leaves.get(subject_id, [])
    if candidates:
        if len(candidates) > 1 and unit is not None:
            sharing = [n for n in candidates if n in communities and unit in communities[n].text_unit_ids]
            if sharing:
                return min(sharing)
        return min(candidates)
    if unit is not None and unit_leaves.get(unit):
        return min(unit_leaves[unit])
    return None


def _read_communities(table: Table, report: ImportReport) -> dict[int, _Community]:
    communities: dict[int, _Community] = {}
    repeated = 0
    for i, row in enumerate(table.rows):
        number = as_int(table, "community", i, row["community"])
        if number in communities:
            repeated += 1
            continue
        parent = as_int(table, "parent", i, row["parent"], allow_null=True)
        entity_ids = [as_text(e) for e in as_list(table, "entity_ids", i, row["entity_ids"])]
        units = (
            {as_text(u) for u in as_list(table, "text_unit_ids", i, row["text_unit_ids"])}
            if table.has("text_unit_ids")
            else set()
        )
        children = (
            [as_int(table, "children", i, c) for c in as_list(table, "children", i, row["children"])]
            if table.has("children")
            else None
        )
        communities[number] = _Community(
            number=number,
            level=_level(table, i, as_int(table, "level", i, row["level"])),
            parent=parent if parent is not None and parent >= 0 else None,
            entity_ids=[e for e in entity_ids if e is not None],
            text_unit_ids={u for u in units if u is not None},
            children=children,
        )
    if repeated:
        report.notes.append(f"{table.path.name}: skipped {repeated} rows repeating an earlier community")
    return communities


def _level(table: Table, row_index: int, level: int | None) -> int | None:
    """GraphRAG levels count down from 0 (the roots); a negative one is damage."""
    if level is not None and level < 0:
        raise InputError(
            f"{table.path}: column '{table.column_label('level')}' row {row_index} "
            f"is not a level (0 or more): {level}"
        )
    return level


def _in_cycles(parent_of: dict[int, int | None]) -> set[int]:
    """The communities that are their own ancestor."""
    cyclic: set[int] = set()
    done: set[int] = set()
    for start in parent_of:
        path: dict[int, None] = {}
        node: int | None = start
        while node is not None and node not in done and node not in path:
            path[node] = None
            node = parent_of.get(node)
        if node is not None and node in path:  # the walk came back to itself: a new cycle
            on_cycle = list(path)[list(path).index(node):]
            cyclic.update(on_cycle)
        done.update(path)
    return cyclic


def _check_children(table: Table, communities: dict[int, _Community], report: ImportReport) -> None:
    """The hierarchy follows `parent` (children are derived from it); flag a disagreeing `children`."""
    if not table.has("children"):
        return
    derived: dict[int, set[int]] = defaultdict(set)
    for community in communities.values():
        if community.parent is not None:
            derived[community.parent].add(community.number)
    disagree = sum(
        1 for c in communities.values() if c.children is not None and set(c.children) != derived.get(c.number, set())
    )
    if disagree:
        report.notes.append(
            f"{table.path.name}: 'children' disagrees with 'parent' for {disagree} communities; "
            "the hierarchy follows 'parent'"
        )
