"""Planning's read of a store (store/map_parts.py, `CommunityStore.iter_map_parts`): the
lines SQLite renders give, community for community, the Map text of the records
`iter_communities` reads (the reference), on damaged stores too, with the claims index
that lets SQLite join a leaf's claims in order and without it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from graphrag_tui.engine import map_text
from graphrag_tui.store import CommunityStore, StoreError
from graphrag_tui.store import store as store_module
from graphrag_tui.store.read_ahead import read_ahead
from tests import hostile_stores as hostile
from tests.benchmarks.synthetic_store import build_tree_store

BAD_UTF8 = hostile.BAD_UTF8


def damaged_store(path: Path) -> Path:
    """Two namespaces, three levels, and every kind of odd claim, entity and chunk row the
    store tolerates, in tables without NOT NULL constraints (as a store made elsewhere)."""
    conn = sqlite3.connect(path)
    conn.executescript(hostile.LAX_SCHEMA)
    with conn:
        conn.executescript(f"""
            INSERT INTO rag_parents VALUES ('d/1', 'ns', 'Report', NULL);
            INSERT INTO rag_children VALUES
                ('k/1', 'ns', 'd/1', 'The bridge budget was approved.'),
                ('k/2', 'ns', 'd/1', NULL),
                ('k/3', 'ns', 'd/1', {BAD_UTF8}),
                ('k/4', 'other', 'd/1', '港の記録'),
                (x'6b2f35', 'ns', 'd/1', 'a chunk whose id is a BLOB');
            INSERT INTO rag_entities VALUES
                ('e/1', 'ns', 'Port Authority', NULL),
                ('e/2', 'ns', NULL, NULL),
                ('e/3', 'ns', '', NULL),
                ('e/4', 'ns', x'426c6f62', NULL),
                ('e/5', 'ns', {BAD_UTF8}, NULL),
                (NULL, 'ns', 'Named after nothing', NULL),
                (7, 'ns', 'Seven', NULL),
                ('e/6', 'ns', 'Six', NULL),
                ('', 'ns', 'The empty id', NULL),
                ('e/8', 'other', '東京湾', NULL);
            INSERT INTO rag_community_summaries VALUES
                ('ns/0', 'ns', 'Root', 'The harbour.', 0, NULL, NULL),
                ('ns/1', 'ns', 'Mid', 'Bridges.', 1, 'ns/0', NULL),
                ('ns/2', 'ns', 'Mid', '   ', 1, 'ns/0', NULL),
                ('ns/3', 'ns', 'Leaf', 'Tolls.', 2, 'ns/1', NULL),
                ('ns/4', 'ns', 'Leaf', 'Ferries.', 2, 'ns/1', NULL),
                ('ns/5', 'ns', 'Leaf', 'Blank parent below.', 2, 'ns/2', NULL),
                ('ns/6', 'ns', 'Leaf', {BAD_UTF8}, 2, 'ns/2', NULL),
                ('ns/7', 'ns', 'Lonely', 'A leaf at level 0.', 0, NULL, NULL),
                ('ns/8', 'ns', 'Dangling', 'Parent is missing.', 1, 'ns/404', NULL),
                ('other/1', 'other', 'Other', 'Another namespace.', 0, NULL, NULL);
            INSERT INTO rag_claims VALUES
                ('c/10', 'ns', 'e/1', 'e/2', 'sorted by code point: c/10 before c/9', 'd/1', 'k/1', 'ns/3'),
                ('c/9', 'ns', 'e/1', NULL, 'no object', NULL, 'k/2', 'ns/3'),
                ('c/é', 'ns', 'e/3', 'e/3', 'an empty name', NULL, 'k/1', 'ns/3'),
                ('c/1', 'ns', NULL, '', NULL, NULL, NULL, 'ns/4'),
                ('c/2', 'ns', 'e/404', 'e/405', 'ids with no entity', NULL, 'k/404', 'ns/4'),
                ('c/3', 'ns', 'e/4', 'e/5', {BAD_UTF8}, NULL, 'k/3', 'ns/4'),
                ('c/4', 'ns', '7', 'e/6', 'an integer id', NULL, x'6b2f35', 'ns/4'),
                ('c/5', 'ns', 'e/8', '', 'an entity of another namespace', NULL, 'k/4', 'ns/5'),
                ('c/6', 'ns', x'652f31', 12, 'a BLOB subject, an integer object', NULL, 34, 'ns/6'),
                ('c/7', 'ns', '', NULL, 'the empty id names an empty subject', NULL, 'k/1', 'ns/7'),
                ('c/8', 'ns', 'e/1', NULL, 'on a community that is not a leaf', NULL, 'k/1', 'ns/1'),
                ('c/0', 'ns', 'e/1', NULL, 'on no community', NULL, 'k/1', NULL),
                ('o/1', 'other', 'e/8', 'e/1', 'across namespaces', NULL, 'k/4', 'other/1');
        """)
    conn.close()
    return path


def without_claims_index(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX idx_claims_community")
    conn.close()
    return path


def with_nocase_claims_index(path: Path) -> Path:
    """The claims index ordered by another collation: group_concat would join out of order."""
    conn = sqlite3.connect(path)
    conn.executescript("DROP INDEX idx_claims_community;"
                       "CREATE INDEX idx_claims_nocase ON rag_claims(community_summary_id, id COLLATE NOCASE);")
    conn.close()
    return path


def texts(store: CommunityStore, namespace: str, level: int | None, *, parts: bool) -> list[tuple[str, str]]:
    read = store.iter_map_parts if parts else store.iter_communities
    return [(c.id, map_text(c)) for c in read(namespace, level)]


def assert_same_texts(path: Path) -> None:
    with CommunityStore.open(path) as store:
        for namespace, levels in store.community_levels().items():
            for level in [None, *levels]:
                assert texts(store, namespace, level, parts=True) == texts(store, namespace, level, parts=False)


@pytest.mark.parametrize("variant", ["schema indexes", "no claims index", "NOCASE claims index"])
def test_the_rendered_lines_give_the_reference_texts_on_a_damaged_store(tmp_path: Path, variant: str) -> None:
    path = damaged_store(tmp_path / "damaged.db")
    if variant == "no claims index":
        without_claims_index(path)
    elif variant == "NOCASE claims index":
        with_nocase_claims_index(path)
    with CommunityStore.open(path) as store:
        assert store._claims_grouped_in_order() is (variant == "schema indexes")
        (tolls,) = [p for p in store.iter_map_parts("ns", None) if p.id == "ns/3"]
    # c/10 sorts before c/9; a nameless entity stands for its id; an empty name drops the relation.
    assert tolls.claim_lines == ("- Port Authority (relates to e/2): sorted by code point: c/10 before c/9\n"
                                 "- Port Authority: no object\n"
                                 "- : an empty name",)
    assert tolls.excerpt_lines == ("- [Chunk k/1] The bridge budget was approved.", "- [Chunk k/2] ")
    assert_same_texts(path)


@pytest.mark.parametrize("build", [hostile.base_store, hostile.summary_bad_utf8, hostile.claim_bad_utf8,
                                   hostile.claim_namespace_null])
def test_the_rendered_lines_give_the_reference_texts_on_hostile_stores(tmp_path: Path, build) -> None:
    assert_same_texts(build(tmp_path / "store.db"))


@pytest.mark.parametrize("group_leaves", [7, 2000])
def test_the_rendered_lines_give_the_reference_texts_on_a_tree(tmp_path: Path, group_leaves: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "_GROUP_LEAVES", group_leaves)
    assert_same_texts(build_tree_store(tmp_path / "tree.db", 6, 3, 4))


def test_planning_leaves_no_transaction_open(tmp_path: Path) -> None:
    # The temporary copy of the names is a write on the connection; left uncommitted, it
    # would pin a read snapshot and hide a live writer's later commits.
    path = damaged_store(tmp_path / "damaged.db")
    with CommunityStore.create(path) as store:
        list(store.iter_map_parts("ns", None))
        assert not store._conn.in_transaction
        store.insert("rag_community_summaries", [{"id": "ns/9", "namespace": "ns", "summary_content": "New.",
                                                   "level": 0}])
        assert "ns/9" in [p.id for p in store.iter_map_parts("ns", None)]


def _never_interrupted(reader: str) -> None:
    raise AssertionError(f"reader {reader} interrupted")


def test_read_ahead_reads_every_item_in_order_each_reader_one_at_a_time() -> None:
    busy: set[str] = set()
    lock = threading.Lock()

    def read(item: int, reader: str) -> tuple[int, str]:
        with lock:
            assert reader not in busy
            busy.add(reader)
        time.sleep(0.001 * (item % 3))  # reads finish out of order
        with lock:
            busy.discard(reader)
        return item * 2, reader

    results = list(read_ahead(read, range(60), ["a", "b"], _never_interrupted))
    assert [doubled for doubled, _ in results] == list(range(0, 120, 2))
    assert {reader for _, reader in results} == {"a", "b"}
    assert list(read_ahead(read, [], ["a"], _never_interrupted)) == []


def test_read_ahead_raises_the_readers_error_where_it_happened() -> None:
    def read(item: int, reader: str) -> int:
        if item == 2:
            raise StoreError("Cannot read store x: disk I/O error")
        return item

    seen: list[int] = []
    with pytest.raises(StoreError, match="disk I/O error"):
        for item in read_ahead(read, range(10), ["a", "b"], _never_interrupted):
            seen.append(item)
    assert seen == [0, 1]


def test_read_ahead_stops_reading_when_the_caller_stops() -> None:
    started: list[int] = []

    def read(item: int, reader: str) -> int:
        started.append(item)
        return item

    reader = read_ahead(read, range(1_000_000), ["a", "b"], lambda reader: None)
    assert next(reader) == 0
    reader.close()
    count = len(started)
    time.sleep(0.1)
    assert len(started) == count <= 4  # what was submitted: the readers plus one ahead
    assert not [t for t in threading.enumerate() if t.name.startswith("store-read-ahead")]


def test_a_caller_that_leaves_interrupts_the_reads_in_flight_instead_of_waiting_for_them() -> None:
    """A read that would never end by itself (a server that stopped answering) ends when
    the caller leaves: it is interrupted, and leaving does not wait for it."""
    stuck = {"a": threading.Event(), "b": threading.Event()}  # set: that reader's read is interrupted
    interrupted: list[str] = []

    def read(item: int, reader: str) -> int:
        if item >= 1:
            stuck[reader].wait()
            raise StoreError(f"Reading store x was interrupted ({reader})")
        return item

    def interrupt(reader: str) -> None:
        interrupted.append(reader)
        stuck[reader].set()

    reads = read_ahead(read, range(10), ["a", "b"], interrupt)
    assert next(reads) == 0
    time.sleep(0.05)  # items 1 and 2 are being read, each stuck
    started = time.monotonic()
    reads.close()
    assert time.monotonic() - started < 1
    assert sorted(interrupted) == ["a", "b"]
    assert not [t for t in threading.enumerate() if t.name.startswith("store-read-ahead")]


@pytest.mark.parametrize("reading", ["the store", "its second reader"])
def test_closing_a_store_interrupts_its_planning_read_in_another_thread(tmp_path: Path, reading: str) -> None:
    """SQLite: a planning read that never ends (here a query that counts forever), on the
    store's connection or its second reader's, ends with StoreError when another thread
    closes the store (the app quitting); closing does not wait for it."""
    path = build_tree_store(tmp_path / "tree.db", 6, 3, 4)
    store = CommunityStore.open(path)
    failures: list[str] = []
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"

    def plan() -> None:
        with store._second_reader() as second:
            assert second is not None and store._ahead is second
            try:
                (store if reading == "the store" else second)._query(endless)
            except StoreError as error:
                failures.append(str(error))

    planner = threading.Thread(target=plan, daemon=True)
    planner.start()
    time.sleep(0.2)
    closer = threading.Thread(target=store.close, daemon=True)  # (a closing that waits must not hang the tests)
    started = time.monotonic()
    closer.start()
    closer.join(timeout=5)
    planner.join(timeout=5)
    assert not closer.is_alive() and not planner.is_alive() and time.monotonic() - started < 1
    assert failures == [f"Cannot read store {path}: interrupted"]
    assert store._ahead is None


def test_a_read_only_store_plans_on_two_connections_a_writable_one_on_its_own(tmp_path: Path) -> None:
    path = build_tree_store(tmp_path / "tree.db", 6, 3, 4)
    with CommunityStore.open(path) as store, store._second_reader() as second:
        assert second is not None and second._conn is not store._conn
    with CommunityStore.create(path) as store, store._second_reader() as second:
        assert second is None
