"""Provenance in the store: the optional claim columns the importer fills from GraphRAG's
covariates, a claim with its chunk and the claims beside it, an entity's communities,
communities by name; and finding a claim's passage in its chunk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from graphrag_tui.importer import import_graphrag
from graphrag_tui.store import CommunityStore
from graphrag_tui.store.explore import entity_detail
from graphrag_tui.store.provenance import name_score
from graphrag_tui.store.records import ChunkDetail, ClaimDetail, CommunityRef, GoToMatch
from graphrag_tui.tui.passages import Passage, best_sentence, find_passage
from tests.conftest import OpenAs
from tests.graphrag_fixtures import index_tables, write_index

EXTRAS = ("source_text", "type", "status", "start_date", "end_date")
CAROL = Path("/work/shared/graphrag-sample-data/msgraphrag-v3-christmas-carol")


def claim_columns(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute("PRAGMA table_info(rag_claims)")]
    finally:
        conn.close()


def extras_of(path: Path, claim_id: str) -> tuple:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT {', '.join(EXTRAS)} FROM rag_claims WHERE id = ?", (claim_id,)).fetchone()
    finally:
        conn.close()


def tables_with_extras() -> dict:
    tables = index_tables()
    first = tables["covariates"][0]
    first.update(source_text="Chunk text 0", type="OWNERSHIP", status="SUSPECTED",
                 start_date="2024-01-01T00:00:00", end_date="NONE")
    tables["covariates"][1].update(source_text="  ", type=None)
    return tables


def tables_without_extras() -> dict:
    tables = index_tables()
    tables["covariates"] = [{k: v for k, v in row.items() if k not in EXTRAS} for row in tables["covariates"]]
    return tables


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    import_graphrag(write_index(tmp_path / "out", tables=tables_with_extras()), path, "ns")
    return path


def test_the_importer_keeps_the_covariates_source_text_type_status_and_dates(store_path: Path) -> None:
    assert claim_columns(store_path)[-5:] == list(EXTRAS)
    # GraphRAG's "NONE" and blank text are stored as NULL.
    assert extras_of(store_path, "ns/0") == ("Chunk text 0", "OWNERSHIP", "SUSPECTED", "2024-01-01T00:00:00", None)
    assert extras_of(store_path, "ns/1") == (None, None, "TRUE", None, None)
    assert extras_of(store_path, "ns/2") == ("quoted", "FACT", "TRUE", None, None)


def test_covariates_without_those_fields_add_no_columns_and_the_store_works(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    import_graphrag(write_index(tmp_path / "out", tables=tables_without_extras()), path, "ns")
    assert claim_columns(path) == [
        "id", "namespace", "subject_entity_id", "object_entity_id", "description",
        "source_parent_id", "source_chunk_id", "community_summary_id",
    ]
    with CommunityStore.open(path) as store:
        assert store.claim_extras == ()
        provenance = store.claim_provenance("ns/0")
        assert provenance is not None
        assert provenance.claim == ClaimDetail(
            id="ns/0", leaf_id="ns/10", subject="ALPHA", description="Claim 0 description.",
            chunk_id="ns/0", source_parent_id="ns/0",
        )
        detail = store.community("ns/10")
        assert detail is not None and [c.source_text for c in detail.claims] == [None, None]


def test_a_later_import_adds_the_columns_to_a_store_without_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    import_graphrag(write_index(tmp_path / "plain", tables=tables_without_extras()), path, "old")
    import_graphrag(write_index(tmp_path / "rich", tables=tables_with_extras()), path, "new")
    assert claim_columns(path)[-5:] == list(EXTRAS)
    assert extras_of(path, "old/0") == (None, None, None, None, None)
    assert extras_of(path, "new/0")[0] == "Chunk text 0"


def test_a_claim_with_its_chunk_document_and_the_claims_citing_the_same_chunk(store_path: Path, open_as: OpenAs) -> None:
    with open_as(store_path) as store:
        assert store.claim_extras == EXTRAS
        provenance = store.claim_provenance("ns/2")
        assert store.claim_provenance("ns/nope") is None
        detail = store.community("ns/10")
    assert provenance is not None
    assert provenance.claim == ClaimDetail(
        id="ns/2", leaf_id="ns/10", subject="GAMMA", object="BETA", description="Claim 2 description.",
        chunk_id="ns/0", source_parent_id="ns/0", source_text="quoted", type="FACT", status="TRUE",
    )
    assert (provenance.namespace, provenance.subject_entity_id, provenance.object_entity_id) == ("ns", "ns/2", "ns/1")
    assert provenance.chunk == ChunkDetail(id="ns/0", content="Chunk text 0.", parent_id="ns/0",
                                           parent_title="first.txt")
    assert (provenance.document_title, provenance.chunk_missing) == ("first.txt", False)
    assert [c.id for c in provenance.same_chunk] == ["ns/0"]
    assert provenance.same_chunk[0].source_text == "Chunk text 0"
    assert provenance.same_chunk_total == 1
    assert detail is not None
    assert [(c.id, c.source_text, c.type) for c in detail.claims] == [
        ("ns/0", "Chunk text 0", "OWNERSHIP"), ("ns/2", "quoted", "FACT"),
    ]


def test_a_claim_citing_a_missing_chunk_says_so(store_path: Path, open_as: OpenAs) -> None:
    with open_as(store_path) as store:
        provenance = store.claim_provenance("ns/7")  # its text unit is not in the index
    assert provenance is not None
    assert (provenance.chunk, provenance.chunk_missing, provenance.same_chunk) == (None, False, [])


def test_an_entitys_communities_are_those_whose_members_include_it(store_path: Path, open_as: OpenAs) -> None:
    with open_as(store_path) as store:
        gamma = [
            CommunityRef(id="ns/0", name="Report title 0", level=0),
            CommunityRef(id="ns/2", name="Report title 2", level=1),
            CommunityRef(id="ns/3", name="Report title 3", level=1),
            CommunityRef(id="ns/10", name="Report title 10", level=2),
            CommunityRef(id="ns/9", name="Report title 9", level=2),
        ]
        assert store.entity_communities("ns", "GAMMA") == gamma
        # The entity view (which a claim's subject and object open) lists the same ones.
        entity = entity_detail(store, "ns/2")
        assert entity is not None and (entity.name, entity.communities) == ("GAMMA", gamma)
        assert store.entity_communities("ns", "epsilon") == [
            CommunityRef(id="ns/1", name="Report title 1", level=0),
        ]
        assert store.entity_communities("other", "GAMMA") == []
        assert store.community_refs(["ns/9", "ns/none", "ns/1"]) == {
            "ns/9": CommunityRef(id="ns/9", name="Report title 9", level=2),
            "ns/1": CommunityRef(id="ns/1", name="Report title 1", level=0),
        }


def test_go_to_finds_communities_by_name_and_by_member_entity(store_path: Path, open_as: OpenAs) -> None:
    with open_as(store_path) as store:
        assert store.find_communities("ns", "title 9") == [
            GoToMatch(community=CommunityRef(id="ns/9", name="Report title 9", level=2)),
        ]
        assert [(m.community.id, m.entity) for m in store.find_communities("ns", "zeta")] == [("ns/1", "ZETA")]
        assert store.find_communities("ns", "nothing like it") == []


def test_name_scores() -> None:
    assert name_score("harrow", "Harrow") == 1.0
    assert name_score("Harrow", "Jonas Harrow's Guard") == 0.9
    assert name_score("arro", "Harrow") == 0.8
    assert name_score("Harow", "Jonas Harrow") == pytest.approx(0.7)
    assert name_score("Harow guard", "Jonas Harrow") == 0.0
    assert name_score("", "Harrow") == 0.0


def test_the_quoted_source_text_is_found_ignoring_case_punctuation_and_spacing() -> None:
    content = "He said: “Hello,\nworld.” Then he left. The flood came."
    assert find_passage(content, '"hello world"', "anything") == Passage(((10, 22),), approximate=False)
    # Pieces split at ";" and ellipses are found one by one; a short piece is skipped.
    assert find_passage(content, "then he left; the flood came... x y", "d") == Passage(
        ((25, 37), (39, 53)), approximate=False)


def test_without_a_quote_in_the_chunk_the_best_sentence_is_an_approximate_match() -> None:
    content = "The flood came in 1998. Harbor Mutual paid most claims. Boats sank."
    expected = Passage(((24, 55),), approximate=True)
    assert find_passage(content, None, "Harbor Mutual Insurance paid the claims") == expected
    assert find_passage(content, "not in this chunk at all", "Harbor Mutual paid") == expected
    assert find_passage(content, None, "nothing shared") is None
    assert best_sentence(content, "the of and") is None


@pytest.mark.skipif(not CAROL.is_dir(), reason="the shared Christmas Carol GraphRAG output is absent")
def test_the_christmas_carol_claims_mostly_quote_their_chunks(tmp_path: Path) -> None:
    path = tmp_path / "carol.db"
    import_graphrag(CAROL, path, "carol")
    counts = {"quoted": 0, "approximate": 0, "none": 0}
    with CommunityStore.open(path) as store:
        for number in range(406):
            provenance = store.claim_provenance(f"carol/{number}")
            assert provenance is not None and provenance.chunk is not None
            passage = find_passage(provenance.chunk.content, provenance.claim.source_text,
                                   provenance.claim.description)
            counts["none" if passage is None else "approximate" if passage.approximate else "quoted"] += 1
    assert counts == {"quoted": 379, "approximate": 1, "none": 26}


def test_the_schema_names_the_optional_claim_columns_and_their_sql() -> None:
    from graphrag_tui.store.schema import OPTIONAL, add_column_sql, insert_sql

    assert OPTIONAL == {"rag_claims": EXTRAS, "rag_community_summaries": ("rank", "rating_explanation", "findings")}
    assert insert_sql("rag_claims", ("source_text", "type")) == (
        "INSERT INTO rag_claims (id, namespace, subject_entity_id, object_entity_id, description, "
        "source_parent_id, source_chunk_id, community_summary_id, source_text, type) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    assert add_column_sql("rag_claims", "end_date") == "ALTER TABLE rag_claims ADD COLUMN end_date TEXT"
    with pytest.raises(ValueError, match="unknown optional column\\(s\\) for rag_parents: source_text"):
        insert_sql("rag_parents", ("source_text",))
    with pytest.raises(ValueError, match="unknown optional column rag_claims.title"):
        add_column_sql("rag_claims", "title")


def test_hostile_optional_values_are_read_as_text(tmp_path: Path) -> None:
    from tests.stores import build_store

    path = build_store(
        tmp_path / "h.db", [{"id": "ns/1", "summary_content": "S."}],
        entities=[{"id": "e1", "name": "E"}],
        claims=[{"id": "c1", "subject_entity_id": "e1", "description": "d", "community_summary_id": "ns/1",
                 "source_text": b"quote \xff bytes", "type": 7, "status": "   ", "start_date": 2.5}],
    )
    with CommunityStore.open(path) as store:
        provenance = store.claim_provenance("c1")
        detail = store.community("ns/1")
    assert provenance is not None and detail is not None
    claim = provenance.claim
    assert (claim.source_text, claim.type, claim.status, claim.start_date, claim.end_date) == (
        "quote \ufffd bytes", "7", None, "2.5", None)
    assert detail.claims[0] == claim


def test_an_entity_id_repeated_in_a_store_without_keys_names_each_claim_once(
    tmp_path: Path, open_as: OpenAs
) -> None:
    """Two rows of one entity id (a store without keys): every view lists each claim of it
    once, named by the least of the two names (by code point), as planning names it."""
    from graphrag_tui.session.explore import text_search_of
    from graphrag_tui.store.explore import chunk_view
    from tests.hostile_stores import base_store

    path = base_store(tmp_path / "store.db")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE keyless (id TEXT, namespace TEXT, name TEXT, description TEXT)")
        conn.execute("INSERT INTO keyless SELECT * FROM rag_entities")
        conn.execute("DROP TABLE rag_entities")
        conn.execute("ALTER TABLE keyless RENAME TO rag_entities")
        conn.execute("INSERT INTO rag_entities VALUES ('e/1', 'ns', 'Harbour Board', NULL)")
        conn.execute("INSERT INTO rag_entities VALUES ('e/2', 'ns', 'Mayor', NULL)")
        conn.execute("INSERT INTO rag_entities VALUES ('e/2', 'ns', 'City Hall', NULL)")
        conn.execute("UPDATE rag_claims SET object_entity_id = 'e/2' WHERE id = 'c/1'")
    conn.close()
    with open_as(path, indexes=False, keys=False) as store:
        planned = {c.id: [(cl.id, cl.subject, cl.object) for cl in c.claims] for c in store.select_communities("ns", 1)}
        detail = store.community("ns/0")
        entity = entity_detail(store, "e/1")
        chunk = chunk_view(store, "k/1")
        provenance = store.claim_provenance("c/1")
        search = text_search_of(store, "ns", tmp_path / "cache")
        if not search.ready():
            search.build()
        found = search.search("bridge", ("claim",))
    named = ("c/1", "Harbour Board", "City Hall")
    assert planned == {"ns/1": [named], "ns/2": [("c/2", "Harbour Board", None)]}
    assert detail is not None and [(c.id, c.subject, c.object) for c in detail.claims] == [named, planned["ns/2"][0]]
    assert entity is not None and entity.name == "Harbour Board"
    assert [(c.id, c.subject, c.object) for c in entity.claims] == [
        named, ("c/2", "Harbour Board", None)]
    assert chunk is not None and [(c.id, c.subject, c.object) for c in chunk.claims] == [named]
    assert provenance is not None and (provenance.claim.subject, provenance.claim.object) == named[1:]
    assert [(hit.id, hit.title) for hit in found.results["claim"]] == [("c/1", "Harbour Board -> City Hall")]



def test_a_name_that_is_not_text_names_no_entity_in_any_view(tmp_path: Path) -> None:
    """An entity id repeated with the names 7 (a number, in a column of no type) and 'Zed':
    planning named it Zed, `show` and search 7."""
    from graphrag_tui.store.explore import claim_view
    from tests.hostile_stores import base_store

    path = base_store(tmp_path / "store.db")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE rag_entities")
        conn.execute("CREATE TABLE rag_entities (id TEXT, namespace TEXT, name, description TEXT)")
        conn.executemany("INSERT INTO rag_entities VALUES ('e/1', 'ns', ?, NULL)", [(7,), ("Zed",)])
    conn.close()
    with CommunityStore.open(path) as store:
        (planned,) = [c for c in store.select_communities("ns", None) if c.id == "ns/1"]
        shown = claim_view(store, "c/1")
        entity = entity_detail(store, "e/1")
    assert [claim.subject for claim in planned.claims] == ["Zed"]
    assert shown is not None and shown.claim.subject == "Zed"
    assert entity is not None and entity.name == "Zed"
