"""CommunityStore: read-only opening, errors, leaf selection, descendant walks, claims.

The reading tests take `open_as` (tests/conftest.py): they run on SQLite and on PostgreSQL."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from graphrag_tui.errors import InputError
from graphrag_tui.store import CommunityStore, NamespaceInfo
from graphrag_tui.store.schema import SCHEMA_SQL

# The schema without any index (stores made elsewhere).
BARE_SCHEMA = "\n".join(
    stmt + ";" for stmt in SCHEMA_SQL.split(";") if "CREATE TABLE" in stmt
)


def make_store(path: Path, rows: dict[str, list[tuple]], *, indexes: bool = True,
               wal: bool = False) -> Path:
    """Write a store with plain SQL. `rows` maps table -> tuples in column order."""
    conn = sqlite3.connect(path)
    if wal:
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.executescript(SCHEMA_SQL if indexes else BARE_SCHEMA)
    with conn:
        for table, table_rows in rows.items():
            for row in table_rows:
                marks = ", ".join("?" for _ in row)
                conn.execute(f"INSERT INTO {table} VALUES ({marks})", row)
    conn.close()
    return path


def community(cid, ns, summary="Summary.", level=0, parent=None, name=None, members=None):
    return (cid, ns, name, summary, level, parent, members)


def claim(cid, ns, leaf, subject="e/a", obj=None, desc=None, chunk=None, doc=None):
    return (cid, ns, subject, obj, desc or f"claim {cid}", doc, chunk, leaf)


SMALL = {
    "rag_parents": [("d/1", "ns", "Doc one", "full text")],
    "rag_children": [("k/1", "ns", "d/1", "chunk one"), ("k/2", "ns", "d/1", "chunk two")],
    "rag_entities": [("e/a", "ns", "Alpha", None), ("e/b", "ns", "Beta", None)],
    "rag_community_summaries": [
        community("ns/0", "ns", "Root.", 0, None, "Root", '["Alpha", "Beta"]'),
        community("ns/1", "ns", "Child one.", 1, "ns/0"),
        community("ns/2", "ns", "Child two.", 1, "ns/0"),
    ],
    "rag_claims": [
        claim("c/1", "ns", "ns/1", "e/a", "e/b", chunk="k/1", doc="d/1"),
        claim("c/2", "ns", "ns/2", "e/b", chunk="k/2"),
    ],
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def explore(path: Path) -> None:
    with CommunityStore.open(path) as store:
        assert [ns.name for ns in store.namespaces()] == ["ns"]
        assert [c.id for c in store.select_communities("ns", None)] == ["ns/1", "ns/2"]
        assert [c.id for c in store.select_communities("ns", 0)] == ["ns/0"]
        assert store.community("ns/0").leaf_ids == ["ns/1", "ns/2"]
        assert store.resolve_community("ns", "1") == "ns/1"
        assert store.levels("ns") == {0: 1, 1: 2}
        # While open, nothing appears next to the file either.
        assert sorted(os.listdir(path.parent)) == [path.name]


# -- read-only opening -------------------------------------------------------------------


def test_open_rollback_journal_file_is_untouched(tmp_path):
    path = make_store(tmp_path / "store.db", SMALL)
    before = digest(path)
    explore(path)
    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["store.db"]


def test_open_wal_file_is_untouched_and_creates_no_side_files(tmp_path):
    path = make_store(tmp_path / "store.db", SMALL, wal=True)
    header = path.read_bytes()[:100]
    assert header[18] == 2 and header[19] == 2  # really a WAL-mode file
    assert sorted(os.listdir(tmp_path)) == ["store.db"]  # clean close removed -wal/-shm
    before = digest(path)
    explore(path)
    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["store.db"]


def test_open_wal_file_with_live_writer_reads_committed_wal_frames(tmp_path):
    path = make_store(tmp_path / "store.db", SMALL, wal=True)
    writer = sqlite3.connect(path)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        with writer:
            writer.execute("INSERT INTO rag_community_summaries VALUES "
                           "('ns/3', 'ns', NULL, 'Late.', 1, 'ns/0', NULL)")
        assert (tmp_path / "store.db-wal").exists()
        with CommunityStore.open(path) as store:
            ids = [c.id for c in store.select_communities("ns", None)]
        assert ids == ["ns/1", "ns/2", "ns/3"]
    finally:
        writer.close()


def test_open_cannot_write(tmp_path):
    path = make_store(tmp_path / "store.db", SMALL)
    with CommunityStore.open(path) as store, pytest.raises(InputError, match="read-only"):
        store.insert("rag_parents", [{"id": "d/9", "namespace": "ns"}])


# -- errors --------------------------------------------------------------------------


def test_missing_file_is_an_input_error_and_is_not_created(tmp_path):
    path = tmp_path / "nope.db"
    with pytest.raises(InputError) as info:
        CommunityStore.open(path)
    assert str(info.value) == f"Store not found: {path}"
    assert not path.exists()
    assert os.listdir(tmp_path) == []


def test_text_file_is_not_a_database(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes, long enough to have a header of a hundred bytes " * 3)
    with pytest.raises(InputError) as info:
        CommunityStore.open(path)
    assert str(info.value) == f"Not a community store: {path} is not an SQLite database"


def test_empty_file_is_not_a_database(tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(InputError, match="is not an SQLite database"):
        CommunityStore.open(path)
    assert path.read_bytes() == b""


def test_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as info:
        CommunityStore.open(tmp_path)
    assert str(info.value) == f"Not a community store: {tmp_path} is a directory"


def test_missing_tables_are_named(tmp_path):
    path = tmp_path / "partial.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE rag_parents (id TEXT PRIMARY KEY, namespace TEXT, "
                       "title TEXT, content TEXT); CREATE TABLE rag_entities (id TEXT, "
                       "namespace TEXT, name TEXT, description TEXT); CREATE TABLE other (x);")
    conn.close()
    with pytest.raises(InputError) as info:
        CommunityStore.open(path)
    assert str(info.value) == (
        f"Not a community store: {path} is missing table(s) "
        "rag_children, rag_community_summaries, rag_claims"
    )
    assert "\n" not in str(info.value)


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(BARE_SCHEMA.replace("    members TEXT\n", "    x TEXT\n")
                       .replace("level INTEGER NOT NULL DEFAULT 0,", "level INTEGER,"))
    conn.close()
    with pytest.raises(InputError) as info:
        CommunityStore.open(path)
    assert str(info.value).endswith("missing column(s) rag_community_summaries.members")


def test_extra_tables_and_columns_are_ignored(tmp_path):
    path = make_store(tmp_path / "store.db", SMALL)
    conn = sqlite3.connect(path)
    conn.executescript("ALTER TABLE rag_claims ADD COLUMN weight REAL; "
                       "CREATE TABLE rag_extra (id TEXT);")
    conn.close()
    with CommunityStore.open(path) as store:
        assert len(store.select_communities("ns", 0)[0].claims) == 2


# -- selection ----------------------------------------------------------------------


def test_leaves_sit_at_different_depths(tmp_path, open_as):
    rows = {
        "rag_community_summaries": [
            community("ns/0", "ns", level=0),
            community("ns/1", "ns", level=1, parent="ns/0"),        # leaf at level 1
            community("ns/2", "ns", level=1, parent="ns/0"),
            community("ns/3", "ns", level=2, parent="ns/2"),
            community("ns/4", "ns", level=3, parent="ns/3"),        # leaf at level 3
            community("ns/5", "ns", level=2, parent="ns/2"),        # leaf at level 2
            community("ns/6", "ns", level=0),                       # root that is a leaf
            # A row of another namespace naming ns/6 as parent does not make it a parent.
            community("other/1", "other", level=1, parent="ns/6"),
        ],
    }
    path = make_store(tmp_path / "s.db", rows)
    with open_as(path) as store:
        assert [c.id for c in store.select_communities("ns", None)] == [
            "ns/1", "ns/4", "ns/5", "ns/6"]
        assert [c.id for c in store.select_communities("ns", 2)] == ["ns/3", "ns/5"]
        assert [c.id for c in store.select_communities("other", None)] == ["other/1"]
        assert store.select_communities("ns", 7) == []
        assert store.select_communities("missing", None) == []
        assert store.community("ns/6").is_leaf
        assert not store.community("ns/2").is_leaf


CYCLIC = {
    "rag_entities": [("e/a", "g", "Alpha", None)],
    "rag_community_summaries": [
        # x <-> y form a cycle; z hangs below x and is the only leaf they reach.
        community("g/x", "g", "X.", 0, "g/y"),
        community("g/y", "g", "Y.", 1, "g/x"),
        community("g/z", "g", "Z.", 2, "g/x"),
        # m <-> n: a cycle with no leaf at all; s is its own parent.
        community("g/m", "g", "M.", 0, "g/n"),
        community("g/n", "g", "N.", 1, "g/m"),
        community("g/s", "g", "S.", 0, "g/s"),
        # p's parent does not exist; q is below p.
        community("g/p", "g", "P.", 0, "g/404"),
        community("g/q", "g", "Q.", 1, "g/p"),
    ],
    "rag_claims": [claim("c/z", "g", "g/z"), claim("c/q", "g", "g/q")],
}


@pytest.mark.parametrize("indexes", [True, False])
def test_walk_terminates_on_cycles_and_dangling_parents(tmp_path, indexes, open_as):
    path = make_store(tmp_path / "g.db", CYCLIC, indexes=indexes)
    with open_as(path, indexes=indexes) as store:
        assert [c.id for c in store.select_communities("g", None)] == ["g/q", "g/z"]
        level0 = {c.id: [cl.id for cl in c.claims] for c in store.select_communities("g", 0)}
        assert level0 == {"g/m": [], "g/p": ["c/q"], "g/s": [], "g/x": ["c/z"]}
        level1 = {c.id: [cl.id for cl in c.claims] for c in store.select_communities("g", 1)}
        assert level1 == {"g/n": [], "g/q": ["c/q"], "g/y": ["c/z"]}
        x = store.community("g/x")
        assert (x.leaf_ids, x.children, x.is_leaf) == (["g/z"], ["g/y", "g/z"], False)
        assert [c.id for c in x.claims] == ["c/z"]
        assert store.community("g/y").leaf_ids == ["g/z"]
        assert store.community("g/m").leaf_ids == []
        s = store.community("g/s")
        assert (s.leaf_ids, s.children, s.is_leaf) == ([], ["g/s"], False)
        p = store.community("g/p")
        assert (p.parent_id, p.parent_dangling, p.leaf_ids) == ("g/404", True, ["g/q"])
        q = store.community("g/q")
        assert (q.parent_id, q.parent_dangling, q.leaf_ids, q.is_leaf) == (
            "g/p", False, ["g/q"], True)



def _naive_leaves(rows: list[tuple], roots: list[str]) -> dict[str, list[str]]:
    """Each root's descendant leaves by walking down from it alone (SPEC §3.2)."""
    children: dict[str, list[str]] = {}
    for cid, _, _, _, _, parent, _ in rows:
        if parent is not None:
            children.setdefault(parent, []).append(cid)
    found = {}
    for root in roots:
        seen, todo = {root}, [root]
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        found[root] = sorted(c for c in seen if c not in children)
    return found


@pytest.mark.parametrize("seed", range(6))
def test_walk_of_communities_chained_within_a_level_matches_walking_from_each(tmp_path, seed, open_as):
    """Parents at the same level or deeper (chains, cycles, self-parents, dangling links):
    each community's leaves are those a walk from it alone finds, though the walk stops at
    the other communities of the level."""
    import random

    rng = random.Random(seed)
    ids = [f"g/{i:02d}" for i in range(30)]
    rows = []
    for cid in ids:
        parent = rng.choice([None, "g/404", *ids]) if rng.random() < 0.85 else None
        rows.append(community(cid, "g", f"Summary {cid}.", rng.randrange(2), parent))
    claims = [claim(f"c/{cid}", "g", cid) for cid in ids]
    path = make_store(tmp_path / "g.db", {"rag_entities": [("e/a", "g", "Alpha", None)],
                                          "rag_community_summaries": rows, "rag_claims": claims},
                      indexes=seed % 2 == 0)
    with open_as(path, indexes=seed % 2 == 0) as store:
        for level in (0, 1):
            roots = [r[0] for r in rows if r[4] == level]
            expected = {root: [f"c/{leaf}" for leaf in leaves] for root, leaves in _naive_leaves(rows, roots).items()}
            found = {c.id: [cl.id for cl in c.claims] for c in store.select_communities("g", level)}
            assert found == expected
        for root in ids[:5]:
            assert store.community(root).leaf_ids == _naive_leaves(rows, [root])[root]


def test_plan_of_a_level_chained_to_itself_is_not_quadratic(tmp_path):
    """3,000 communities of one level, each the parent of the next, the last a leaf's
    parent: a walk from each took minutes (quadratic); each is planned with that leaf."""
    import time

    ids = [f"g/{i:05d}" for i in range(3000)]
    rows = [community(cid, "g", "S.", 1, ids[i - 1] if i else None) for i, cid in enumerate(ids)]
    rows.append(community("g/leaf", "g", "Leaf.", 2, ids[-1]))
    path = make_store(tmp_path / "g.db", {"rag_entities": [("e/a", "g", "Alpha", None)],
                                          "rag_community_summaries": rows,
                                          "rag_claims": [claim("c/1", "g", "g/leaf")]})
    started = time.perf_counter()
    with CommunityStore.open(path) as store:
        chosen = store.select_communities("g", 1)
    assert time.perf_counter() - started < 5
    assert len(chosen) == 3000
    assert {tuple(cl.id for cl in c.claims) for c in chosen} == {("c/1",)}

ORDERING = {
    "rag_parents": [("d/1", "t", "The log", "...")],
    "rag_children": [
        ("k/1", "t", "d/1", "first chunk"),
        ("k/2", "t", "d/1", "second chunk"),
        ("k/3", "t", None, "third chunk"),
    ],
    "rag_entities": [("e/a", "t", "Alpha", "a"), ("e/b", "t", "Beta", "b")],
    "rag_community_summaries": [
        community("t/1", "t", "Top.", 0),
        community("t/9", "t", "Nine.", 1, "t/1"),
        community("t/10", "t", "Ten.", 1, "t/1"),
    ],
    "rag_claims": [
        claim("c/9", "t", "t/9", "e/a", chunk="k/3"),
        claim("c/10", "t", "t/9", "e/a", "e/b", chunk="k/1"),
        claim("c/2", "t", "t/10", "e/b", chunk="k/2"),
        claim("c/11", "t", "t/10", "e/a", chunk="k/404"),      # dangling chunk
        claim("c/3", "t", "t/10", "e/missing", "e/b", chunk="k/2"),  # missing subject
        claim("c/4", "t", "t/10", "e/a", "e/gone", chunk="k/1"),  # missing object
        claim("c/5", "t", None, "e/a"),                          # unassigned
    ],
}


def test_claims_order_by_leaf_then_claim_id_binary(tmp_path, open_as):
    path = make_store(tmp_path / "t.db", ORDERING)
    with open_as(path) as store:
        (top,) = store.select_communities("t", 0)
        assert [(c.leaf_id, c.id) for c in top.claims] == [
            ("t/10", "c/11"), ("t/10", "c/2"), ("t/10", "c/3"), ("t/10", "c/4"),
            ("t/9", "c/10"), ("t/9", "c/9"),
        ]
        assert [(c.subject, c.object) for c in top.claims] == [
            ("Alpha", None), ("Beta", None), ("e/missing", "Beta"), ("Alpha", "e/gone"),
            ("Alpha", "Beta"), ("Alpha", None),
        ]
        assert top.claims[0].description == "claim c/11"
        leaves = store.select_communities("t", None)
        assert [c.id for c in leaves] == ["t/10", "t/9"]


def test_excerpts_dedup_in_first_claim_order(tmp_path, open_as):
    path = make_store(tmp_path / "t.db", ORDERING)
    with open_as(path) as store:
        (top,) = store.select_communities("t", 0)
        # Claim order cites k/404 (dangling), k/2, k/2, k/1, k/1, k/3.
        assert [(e.chunk_id, e.content) for e in top.excerpts] == [
            ("k/2", "second chunk"), ("k/1", "first chunk"), ("k/3", "third chunk")]
        assert top.claims[0].chunk_id == "k/404"
        nine = {c.id: c for c in store.select_communities("t", None)}["t/9"]
        assert [e.chunk_id for e in nine.excerpts] == ["k/1", "k/3"]


def test_community_detail(tmp_path, open_as):
    rows = dict(ORDERING)
    rows["rag_community_summaries"] = ORDERING["rag_community_summaries"] + [
        community("t/20", "t", "Bad members.", 1, "t/1", members="not json"),
        community("t/21", "t", "Object members.", 1, "t/1", members='{"a": 1}'),
        community("t/22", "t", "Mixed.", 1, "t/1", name="Mixed", members='["A", 3]'),
    ]
    path = make_store(tmp_path / "t.db", rows)
    with open_as(path) as store:
        assert store.community("t/missing") is None
        top = store.community("t/1")
        assert top.namespace == "t" and top.level == 0 and top.parent_id is None
        assert not top.parent_dangling
        assert top.children == ["t/10", "t/20", "t/21", "t/22", "t/9"]
        assert top.leaf_ids == top.children
        assert [c.id for c in top.claims] == ["c/11", "c/2", "c/3", "c/4", "c/10", "c/9"]
        assert top.claims[1].source_parent_id is None
        assert [(k.id, k.parent_id, k.parent_title) for k in top.chunks] == [
            ("k/2", "d/1", "The log"), ("k/1", "d/1", "The log"), ("k/3", None, None)]
        assert store.community("t/20").members == []
        assert store.community("t/21").members == []
        mixed = store.community("t/22")
        assert (mixed.name, mixed.members, mixed.summary) == ("Mixed", ["A", "3"], "Mixed.")
        assert store.community("t/9").claims[0].object == "Beta"


def test_blank_summaries_are_left_out(tmp_path, open_as):
    rows = {"rag_community_summaries": [
        community("b/0", "b", "Root.", 0),
        community("b/1", "b", "", 1, "b/0"),
        community("b/2", "b", "  \n\t ", 1, "b/0"),
        community("b/3", "b", "\u3000", 1, "b/0"),
        community("b/4", "b", "  kept  ", 1, "b/0"),
        community("b/5", "b", " ", 0),
    ]}
    path = make_store(tmp_path / "b.db", rows)
    with open_as(path) as store:
        leaves = store.select_communities("b", None)
        assert [(c.id, c.summary) for c in leaves] == [("b/4", "  kept  ")]
        assert [c.id for c in store.select_communities("b", 0)] == ["b/0"]


def test_store_without_indexes_gives_the_same_answers(tmp_path, open_as):
    with_idx = make_store(tmp_path / "a.db", ORDERING)
    without = make_store(tmp_path / "b.db", ORDERING, indexes=False)
    conn = sqlite3.connect(without)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type='index' "
                        "AND name NOT LIKE 'sqlite_autoindex%'").fetchone() == (0,)
    conn.close()
    with open_as(with_idx) as a, open_as(without, indexes=False) as b:
        assert a.namespaces() == b.namespaces()
        for level in (None, 0, 1):
            assert a.select_communities("t", level) == b.select_communities("t", level)
        for cid in ("t/1", "t/9", "t/10"):
            assert a.community(cid) == b.community(cid)
        assert a.resolve_community("t", "10") == b.resolve_community("t", "10") == "t/10"


def test_resolve_community(tmp_path, open_as):
    rows = {"rag_community_summaries": [
        community("h/3", "h"), community("h/13", "h"),
        community("imp/run1/42", "imp"), community("imp/run1/5", "imp"),
        community("imp/run2/5", "imp"), community("x/42", "x"),
        community("中文/7", "中文"),
    ]}
    path = make_store(tmp_path / "r.db", rows)
    with open_as(path) as store:
        assert store.resolve_community("h", "3") == "h/3"
        assert store.resolve_community("h", " 13 ") == "h/13"
        assert store.resolve_community("h", "h/13") == "h/13"
        assert store.resolve_community("h", "x/42") == "x/42"    # exact id, any namespace
        assert store.resolve_community("imp", "42") == "imp/run1/42"  # unique suffix
        assert store.resolve_community("imp", "run1/42") == "imp/run1/42"
        assert store.resolve_community("imp", "5") is None       # ambiguous
        assert store.resolve_community("h", "42") is None        # other namespace only
        assert store.resolve_community("h", "1") is None
        assert store.resolve_community("h", "") is None
        assert store.resolve_community("中文", "7") == "中文/7"


def test_namespaces_counts(tmp_path, open_as):
    rows = {
        "rag_parents": [("d/1", "a", "t", "c"), ("d/2", "a", "t", "c"), ("d/3", "z", "t", "c")],
        "rag_children": [("k/1", "a", "d/1", "x")],
        "rag_entities": [("e/1", "a", "A", None), ("e/2", "a", "B", None),
                         ("e/3", "a", "C", None)],
        "rag_community_summaries": [
            community("a/0", "a", level=0), community("a/1", "a", level=1, parent="a/0"),
            community("a/2", "a", level=1, parent="a/0"),
            community("a/3", "a", level=2, parent="a/2"),
            community("m/0", "m", level=0),
        ],
        "rag_claims": [claim("c/1", "a", "a/1", "e/1"), claim("c/2", "a", "a/3", "e/2")],
    }
    path = make_store(tmp_path / "n.db", rows)
    with open_as(path) as store:
        assert store.namespaces() == [
            NamespaceInfo(name="a", community_count=4, leaf_count=2,
                          levels={0: 1, 1: 2, 2: 1}, claim_count=2, chunk_count=1,
                          document_count=2, entity_count=3),
            NamespaceInfo(name="m", community_count=1, leaf_count=1, levels={0: 1}),
            NamespaceInfo(name="z", document_count=1),
        ]
        assert list(store.namespaces()[0].levels) == [0, 1, 2]
        assert store.levels("a") == {0: 1, 1: 2, 2: 1}
        assert store.levels("nope") == {}


def test_create_and_insert_round_trip(tmp_path):
    path = tmp_path / "new.db"
    with CommunityStore.create(path) as store:
        store.insert("rag_community_summaries", [
            {"id": "n/1", "namespace": "n", "summary_content": "One.", "level": 0}])
        with pytest.raises(ValueError, match="unknown column"):
            store.insert("rag_claims", [{"bogus": 1}])
    assert path.read_bytes()[18:20] == b"\x01\x01"  # rollback journal, not WAL
    with CommunityStore.open(path) as store:
        (only,) = store.select_communities("n", None)
        assert (only.id, only.summary, only.claims, only.excerpts) == ("n/1", "One.", (), ())


def test_entity_of_another_namespace_still_gives_its_name(tmp_path, open_as):
    rows = {
        "rag_entities": [("e/here", "t", "Here", None), ("e/there", "o", "There", None)],
        "rag_community_summaries": [community("t/1", "t")],
        "rag_claims": [claim("c/1", "t", "t/1", "e/there", "e/here"),
                       claim("c/2", "t", "t/1", "e/here", "e/there"),
                       claim("c/3", "t", "t/1", "e/nowhere", "e/there")],
    }
    path = make_store(tmp_path / "x.db", rows)
    with open_as(path) as store:
        (only,) = store.select_communities("t", None)
        assert [(c.subject, c.object) for c in only.claims] == [
            ("There", "Here"), ("Here", "There"), ("e/nowhere", "There")]
        assert [(c.subject, c.object) for c in store.community("t/1").claims] == [
            ("There", "Here"), ("Here", "There"), ("e/nowhere", "There")]


def test_synthetic_benchmark_store_is_consistent(tmp_path):
    from tests.benchmarks.synthetic_store import NAMESPACE, build_synthetic_store

    path = build_synthetic_store(tmp_path / "syn.db", 500, claims_per_community=4)
    with CommunityStore.open(path) as store:
        (info,) = store.namespaces()
        assert (info.name, info.community_count, info.claim_count) == (NAMESPACE, 500, 2000)
        assert list(info.levels) == [0, 1, 2]
        assert info.leaf_count > 400
        leaves = store.select_communities(NAMESPACE, None)
        assert len(leaves) == info.leaf_count
        assert sum(len(c.claims) for c in leaves) == 2000
        for level in info.levels:  # every claim sits below exactly one community per level
            covered = sum(len(c.claims) for c in store.select_communities(NAMESPACE, level))
            leaves_above = sum(len(c.claims) for c in leaves
                               if store.community(c.id).level < level)
            assert covered + leaves_above == 2000
    assert build_synthetic_store(tmp_path / "again.db", 500, 4).read_bytes() == path.read_bytes()


@pytest.mark.parametrize(("rows", "expected"), [
    # A node is a leaf when no row of the namespace names it as parent (the walk searches the
    # parent index per node): n/1 is not, n/2 and n/3 are; a NULL id (only a writable store
    # can hold one) is a leaf only while no row of the namespace names a parent, as with
    # `id NOT IN (parents)`.
    ([(None, 0, None), ("n/1", 0, None), ("n/2", 1, "n/1"), ("n/3", 0, None), ("m/1", 1, "n/3")],
     [("n/1", "n/2"), ("n/3", "n/3")]),
    ([(None, 0, None), ("n/1", 0, None), ("m/1", 1, "n/1")], [(None, None), ("n/1", "n/1")]),
])
def test_descendant_leaves_walk_down_tells_leaves_by_their_children(tmp_path, rows, expected):
    with CommunityStore.create(tmp_path / "walk.db") as store:
        store.insert("rag_community_summaries", [
            {"id": cid, "namespace": "m" if cid and cid.startswith("m/") else "n", "summary_content": "Text.",
             "level": level, "parent_community_id": parent} for cid, level, parent in rows])
        assert store._has_parent_index
        pairs = store._descendant_leaves("roots(id) AS (SELECT id FROM ns WHERE level = 0)", {"ns": "n"})
    assert [(root, leaf) for root, leaves in pairs.items() for leaf in leaves] == expected


@pytest.mark.parametrize(("rows", "expected"), [
    ([(None, 0, None), ("n/1", 0, None), ("n/2", 1, "n/1"), ("n/3", 0, None), ("m/1", 1, "n/3")], ["n/2", "n/3"]),
    ([(None, 0, None), ("n/1", 0, None), ("m/1", 1, "n/1")], [None, "n/1"]),
])
def test_leaf_selection_tells_leaves_by_their_children(tmp_path, rows, expected):
    # The same leaves as the walk's (above), selected at the leaf level.
    with CommunityStore.create(tmp_path / "leaves.db") as store:
        store.insert("rag_community_summaries", [
            {"id": cid, "namespace": "m" if cid and cid.startswith("m/") else "n", "summary_content": "Text.",
             "level": level, "parent_community_id": parent} for cid, level, parent in rows])
        selected, _ = store._selection("n", None)
    assert [cid for cid, _ in selected] == expected
