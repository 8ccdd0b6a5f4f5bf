"""Hostile stores through the real CLI and the app's entry (issue 9, items 5 and 10).

A bad community row is exit 2 with one line naming the table, the column and the row,
before anything starts; text that is not UTF-8 elsewhere is read with U+FFFD; a WAL store
with a `-wal` and no `-shm` is read whole and nothing appears beside it. No case changes
the store's bytes.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from graphrag_tui.store import CommunityStore
from tests import hostile_stores as hostile
from tests.chat_server import Scripted, ScriptedChatServer, community_of, map_reply
from tests.cli_runner import run_cli
from tests.stores import build_store

QUESTION = "Who funds the bridge?"


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of the folder and its sha256."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def faces(store: Path) -> dict[str, list[str]]:
    """Each face's command line: info, plan, query and the app (`graphrag-tui STORE`)."""
    return {
        "info": ["info", str(store)],
        "plan": ["plan", str(store), QUESTION, "--no-config"],
        "query": ["query", str(store), QUESTION, "--no-config"],
        "app": [str(store), "--no-config"],
    }


REFUSED: list[tuple[Callable[[Path], Path], str]] = [
    (hostile.level_null, "rag_community_summaries.level is NULL, not an integer (row with id 'ns/2')"),
    (hostile.level_text, "rag_community_summaries.level is text, not an integer (row with id 'ns/2')"),
    (hostile.level_blob, "rag_community_summaries.level is a BLOB, not an integer (row with id 'ns/2')"),
    (hostile.level_real, "rag_community_summaries.level is a real number (1.5), not an integer (row with id 'ns/2')"),
    (hostile.community_id_null, "rag_community_summaries.id is NULL, not text (rowid 3)"),
    (hostile.community_id_bad_utf8, "rag_community_summaries.id is not valid UTF-8 (rowid 3)"),
    (hostile.namespace_null, "rag_community_summaries.namespace is NULL, not text (row with id 'ns/2')"),
    (hostile.namespace_bad_utf8, "rag_community_summaries.namespace is not valid UTF-8 (row with id 'ns/2')"),
    (hostile.parent_blob, "rag_community_summaries.parent_community_id is a BLOB, not text (row with id 'ns/2')"),
]


_REFUSED_IDS = ["level_null", "level_text", "level_blob", "level_real", "community_id_null", "community_id_bad_utf8",
                "namespace_null", "namespace_bad_utf8", "parent_blob"]


@pytest.mark.parametrize(("build", "problem"), [REFUSED[1], REFUSED[5]], ids=[_REFUSED_IDS[1], _REFUSED_IDS[5]])
def test_a_bad_community_row_is_exit_2_with_one_line_in_every_face(
    tmp_path: Path, build: Callable[[Path], Path], problem: str
) -> None:
    """Every face opens the store one way (`test_a_bad_community_row_is_a_store_error_from_open`
    has each problem's line)."""
    store = build(tmp_path / "store.db")
    before = snapshot(tmp_path)
    expected = f"graphrag-tui: error: Bad community store {store}: {problem}\n"
    for face, args in faces(store).items():
        # The app's entry gets /dev/null as stdin: it must stop before Textual starts.
        run = run_cli(*args, timeout=30)
        assert (face, run.code, run.stdout, run.stderr) == (face, 2, "", expected)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("build", "problem"), REFUSED, ids=_REFUSED_IDS)
def test_a_bad_community_row_is_a_store_error_from_open(tmp_path: Path, build: Callable[[Path], Path], problem: str) -> None:
    from graphrag_tui.errors import InputError
    from graphrag_tui.store import StoreError

    store = build(tmp_path / "store.db")
    before = snapshot(tmp_path)
    with pytest.raises(StoreError) as caught:
        CommunityStore.open(store)
    assert isinstance(caught.value, InputError)
    assert str(caught.value) == f"Bad community store {store}: {problem}"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("build", "community", "shown"),
    [
        (hostile.summary_bad_utf8, "ns/2", "[Community summary]: A\ufffd\ufffd\n"),
        (hostile.claim_bad_utf8, "ns/2", "- Port Authority: A\ufffd\ufffd"),  # subject: description
        (hostile.summary_blob, "ns/2", "[Community summary]: \ufffdA\n"),
        (hostile.claim_description_blob, "ns/2", "- Port Authority: \ufffdA"),
        (hostile.chunk_content_blob, "ns/1", "- [Chunk k/1] \ufffdA"),
    ],
    ids=["summary", "claim", "summary-blob", "claim-blob", "chunk-blob"],
)
def test_text_that_is_not_utf8_is_read_with_replacement_characters(
    tmp_path: Path, build: Callable[[Path], Path], community: str, shown: str
) -> None:
    store = build(tmp_path / "store.db")
    before = snapshot(tmp_path)
    info = run_cli("info", str(store))
    assert (info.code, info.stderr) == (0, "")
    assert info.stdout == (
        f"{store}: 1 namespace\n"
        "  ns: 3 communities (2 leaves; level 0: 1, level 1: 2), 2 claims, 1 chunk, 1 document, 1 entity\n"
    )
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 80)})
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--no-config",
                      "--no-shuffle", "--json", timeout=60)
    assert run.code == 0, run.stderr
    assert run.json["status"] == "completed"
    maps = [r for r in server.chat_requests() if r.stage == "map"]
    assert [community_of(r) for r in maps] == ["ns/1"]  # one batch: ns/1, then ns/2
    section = maps[0].prompt.split(f"[Community ID: {community} |", 1)[1]
    assert shown in section
    with CommunityStore.open(store) as opened:
        detail = opened.community(community)
    assert detail is not None
    text = shown.rsplit(" ", 1)[1].rstrip("\n")
    if build in (hostile.summary_bad_utf8, hostile.summary_blob):
        assert detail.summary == text
    elif build is hostile.chunk_content_blob:
        assert [c.content for c in detail.chunks] == [text]
    else:
        assert [c.description for c in detail.claims] == [text]
    assert snapshot(tmp_path) == before


def test_a_claim_without_namespace_belongs_to_no_namespace(tmp_path: Path) -> None:
    store = hostile.claim_namespace_null(tmp_path / "store.db")
    info = run_cli("info", str(store))
    assert (info.code, info.stderr) == (0, "")
    assert info.stdout == (
        f"{store}: 1 namespace\n"
        "  ns: 3 communities (2 leaves; level 0: 1, level 1: 2), 1 claim, 1 chunk, 1 document, 1 entity\n"
    )
    with CommunityStore.open(store) as opened:  # still found through its community
        assert [c.id for c in opened.community("ns/2").claims] == ["c/2"]


def test_show_reads_a_claim_without_id_and_rows_without_namespace(tmp_path: Path) -> None:
    """A NULL id of a claim (legal in a TEXT PRIMARY KEY) reads as "", a NULL namespace as
    none: `show` of its chunk, entity and claim is exit 0 with them, never an internal error."""
    store = hostile.base_store(tmp_path / "store.db")
    conn = sqlite3.connect(store)
    with conn:
        conn.execute("INSERT INTO rag_claims VALUES (NULL, 'ns', 'e/1', NULL, 'no id', 'd/1', 'k/1', 'ns/1')")
        conn.execute("UPDATE rag_claims SET namespace = NULL WHERE id = 'c/1'")
        conn.execute("UPDATE rag_entities SET namespace = NULL")
        conn.execute("UPDATE rag_children SET namespace = NULL")
    conn.close()
    before = snapshot(tmp_path)
    chunk = run_cli("show", str(store), "chunk:k/1", "--json")
    assert (chunk.code, chunk.stderr) == (0, ""), chunk.stderr
    assert (chunk.json["kind"], chunk.json["namespace"]) == ("chunk", None)
    assert [(c["id"], c["namespace"], c["description"]) for c in chunk.json["claims"]] == [
        ("", "ns", "no id"), ("c/1", None, "pays for the bridge")]
    entity = run_cli("show", str(store), "entity:e/1", "--json")
    assert (entity.code, entity.json["namespace"]) == (0, None)
    assert sorted(c["id"] for c in entity.json["claims"]) == ["", "c/1", "c/2"]
    for args in (("claim:c/1", "--json"), ("chunk:k/1",), ("entity:e/1",)):
        shown = run_cli("show", str(store), *args)
        assert (shown.code, shown.stderr) == (0, ""), (args, shown.stderr)
    assert snapshot(tmp_path) == before


def test_a_hierarchy_thousands_of_levels_deep_prints_and_its_json_asks_for_depth(tmp_path: Path) -> None:
    chain = [{"id": f"ns/{i}", "summary_content": f"level {i}", "level": i,
              "parent_community_id": f"ns/{i - 1}" if i else None} for i in range(3000)]
    store = build_store(tmp_path / "deep.db", chain)
    text = run_cli("tree", str(store))
    assert (text.code, text.stderr) == (0, "")
    lines = text.stdout.splitlines()
    assert lines[0] == "namespace ns: 1 root" and len(lines) == 3001
    assert lines[-1] == "  " * 64 + "ns/2999  (no name)  (level 2999, 1 leaf, 0 claims)"  # 64 levels indent at most
    whole = run_cli("tree", str(store), "--json")
    assert (whole.code, whole.stdout) == (2, "")
    assert whole.stderr == ("graphrag-tui: error: the hierarchy of namespace ns is too deep to write as nested JSON: "
                            "give --depth (say --depth 100)\n")
    cut = run_cli("tree", str(store), "--json", "--depth", "100")
    assert cut.code == 0 and cut.json["roots"][0]["children"][0]["id"] == "ns/1"


def test_a_fifo_as_the_store_is_one_line_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "store.db"
    os.mkfifo(fifo)
    for face, args in faces(fifo).items():
        run = run_cli(*args, timeout=30)
        assert (face, run.code, run.stdout, run.stderr) == (
            face, 2, "", f"graphrag-tui: error: Not a community store: {fifo} is not a regular file\n")



def _with_schema_change(path: Path, *statements: str) -> Path:
    hostile.base_store(path)
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()
    return path


def test_a_required_table_that_is_an_endless_view_is_one_line_not_a_hang(tmp_path: Path) -> None:
    """A view's SQL runs on every read: a recursive one that never ends hung every command."""
    store = _with_schema_change(
        tmp_path / "store.db", "ALTER TABLE rag_community_summaries RENAME TO stored_summaries",
        "CREATE VIEW rag_community_summaries AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
        "SELECT s.* FROM stored_summaries AS s, n")
    before = snapshot(tmp_path)
    for face, args in faces(store).items():
        run = run_cli(*args, timeout=30)
        assert (face, run.code, run.stdout, run.stderr) == (
            face, 2, "", f"graphrag-tui: error: Not a community store: {store} has rag_community_summaries as views, "
                         "not tables (a view's SQL would run on every read)\n")
    assert snapshot(tmp_path) == before


def test_a_column_computed_as_it_is_read_is_one_line(tmp_path: Path) -> None:
    """A virtual generated column runs its SQL on every read (here 800 MB a row)."""
    store = _with_schema_change(
        tmp_path / "store.db", "ALTER TABLE rag_claims RENAME TO stored_claims",
        "CREATE TABLE rag_claims (id TEXT, namespace TEXT, subject_entity_id TEXT, object_entity_id TEXT, "
        "description TEXT AS (hex(zeroblob(400000000))) VIRTUAL, source_parent_id TEXT, source_chunk_id TEXT, "
        "community_summary_id TEXT, type TEXT AS ('x') VIRTUAL)",
        "INSERT INTO rag_claims (id, namespace, subject_entity_id, community_summary_id) "
        "SELECT id, namespace, subject_entity_id, community_summary_id FROM stored_claims")
    for face, args in faces(store).items():
        run = run_cli(*args, timeout=30)
        assert (face, run.code, run.stdout, run.stderr) == (
            face, 2, "", f"graphrag-tui: error: Not a community store: {store} computes column(s) "
                         "rag_claims.description, rag_claims.type as they are read (virtual generated columns)\n")

def test_a_wal_store_without_shm_is_read_whole_and_nothing_appears_beside_it(tmp_path: Path) -> None:
    store = hostile.wal_without_shm(tmp_path / "store.db")
    before = snapshot(tmp_path)
    assert sorted(before) == ["store.db", "store.db-wal"]
    assert os.path.getsize(tmp_path / "store.db-wal") > 0

    info = run_cli("info", str(store))
    assert (info.code, info.stderr) == (0, "")
    # ns/3 lives only in the -wal file: reading it proves the frames were applied.
    assert info.stdout == (
        f"{store}: 1 namespace\n"
        "  ns: 4 communities (3 leaves; level 0: 1, level 1: 3), 2 claims, 1 chunk, 1 document, 1 entity\n"
    )
    assert snapshot(tmp_path) == before
    plan = run_cli("plan", str(store), QUESTION, "--no-config", "--no-shuffle", "--json")
    assert plan.code == 0, plan.stderr
    assert [b["community_ids"] for b in plan.json["batches"]] == [["ns/1", "ns/2", "ns/3"]]
    assert snapshot(tmp_path) == before
    query = run_cli("query", str(store), QUESTION, "--no-config", "--no-shuffle", "--json")
    assert query.code == 0, query.stderr
    assert query.json["summary_count"] == 3
    assert snapshot(tmp_path) == before


DISPLAYED: list[tuple[Callable[[Path], Path], Callable[[CommunityStore], object], object]] = [
    (hostile.chunk_content_blob, lambda s: s.community("ns/1").chunks[0].content, "\ufffdA"),
    (hostile.entity_name_null, lambda s: s.community("ns/1").claims[0].subject, "e/1"),  # the id stands in
    (hostile.community_name_blob, lambda s: s.community("ns/2").name, "\ufffdA"),
    (hostile.summary_blob, lambda s: s.community("ns/2").summary, "\ufffdA"),
    (hostile.claim_description_null, lambda s: s.community("ns/2").claims[0].description, ""),
    (hostile.claim_chunk_blob, lambda s: (s.community("ns/2").claims[0].chunk_id, s.community("ns/2").chunks),
     ("\ufffdA", [])),
    (hostile.members_deep, lambda s: s.community("ns/2").members, []),
]


@pytest.mark.parametrize(("build", "shown", "expected"), DISPLAYED, ids=[
    "chunk_content_blob", "entity_name_null", "community_name_blob", "summary_blob", "claim_description_null",
    "claim_chunk_blob", "members_deep"])
def test_a_value_of_the_wrong_type_where_text_is_shown_is_read_as_text(
    tmp_path: Path, build: Callable[[Path], Path], shown: Callable[[CommunityStore], object], expected: object
) -> None:
    store = build(tmp_path / "store.db")
    before = snapshot(tmp_path)
    with CommunityStore.open(store) as opened:  # the drill-down
        assert shown(opened) == expected
    run = run_cli("query", str(store), QUESTION, "--no-config", "--json")
    assert (run.code, run.json["status"], run.json["summary_count"]) == (0, "completed", 2), run.stderr
    assert snapshot(tmp_path) == before


def test_a_hot_journal_is_one_line_and_left_alone(tmp_path: Path) -> None:
    store = hostile.hot_journal(tmp_path / "store.db")
    before = snapshot(tmp_path)
    assert sorted(before) == ["store.db", "store.db-journal"]
    expected = (f"graphrag-tui: error: Cannot open store {store}: it holds an unfinished transaction "
                "(store.db-journal) that only a writer can roll back; open it once with sqlite3 to recover it\n")
    for face, args in faces(store).items():
        run = run_cli(*args, timeout=30)
        assert (face, run.code, run.stdout, run.stderr) == (face, 2, "", expected)
    assert snapshot(tmp_path) == before


def _wal_of_one_transaction(store: Path, rows: int) -> bytes:
    """The `-wal` of a WAL store's one committed transaction of `rows` chunks (over many
    pages), as its writer left it before closing."""
    hostile.base_store(store, wal=True)
    writer = sqlite3.connect(store, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("BEGIN")
    writer.executemany("INSERT INTO rag_children VALUES (?, 'ns', 'd/1', ?)",
                       [(f"k/x{i}", "text " * 200) for i in range(rows)])
    writer.execute("COMMIT")
    wal = store.with_name(store.name + "-wal").read_bytes()
    writer.close()
    return wal


@pytest.mark.parametrize("kind", ["empty", "not_a_wal", "torn_before_its_commit", "committed"])
def test_a_wal_without_shm_is_left_as_it_is_whatever_it_holds(tmp_path: Path, kind: str) -> None:
    """SQLite deleted a `-wal` with no committed transaction as a read-only connection
    closed: a writer in exclusive locking mode (whose `-wal` starts empty) then lost its
    next commit. Such a file is now not read, and left byte-identical."""
    from graphrag_tui.store.wal import holds_commit

    committed = _wal_of_one_transaction(tmp_path / "source.db", 300)  # pages of 4 KiB: some 70 frames
    (tmp_path / "source.db").unlink()
    store = hostile.base_store(tmp_path / "store.db", wal=True)
    contents = {"empty": b"", "not_a_wal": b"\x37\x7f\x06\x82" + bytes(range(256)) * 20,
                "torn_before_its_commit": committed[:-5000], "committed": committed}[kind]
    store.with_name("store.db-wal").write_bytes(contents)
    assert holds_commit(store.with_name("store.db-wal")) == (kind == "committed")
    before = snapshot(tmp_path)
    run = run_cli("info", str(store), "--json")
    assert run.code == 0, run.stderr
    chunks = run.json["namespaces"][0]["chunk_count"]
    assert chunks == (301 if kind == "committed" else 1)
    assert snapshot(tmp_path) == before


def test_a_utf16_store_is_one_line(tmp_path: Path) -> None:
    """Its ids were read as bytes that are not UTF-8 (every command said so, wrongly), and
    its blank summaries were planned."""
    store = tmp_path / "store.db"
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA encoding = 'UTF-16le'")  # (before the first table)
    conn.executescript(hostile.LAX_SCHEMA)
    conn.execute("INSERT INTO rag_community_summaries VALUES ('ns/1', 'ns', 'Bridge', 'Funded.', 0, NULL, NULL)")
    conn.commit()
    conn.close()
    for face, args in faces(store).items():
        run = run_cli(*args, timeout=30)
        assert (face, run.code, run.stdout, run.stderr) == (
            face, 2, "", f"graphrag-tui: error: Not a community store: {store} is encoded in UTF-16le: graphrag-tui "
                         "reads UTF-8 stores (sqlite3 can convert it: .dump it into a new file)\n")


@pytest.mark.parametrize(("collation", "name"), [
    ("COLLATE NOCASE", "NOCASE"), ('COLLATE "rtrim"', "rtrim"), ("COLLATE/**/NOCASE", "NOCASE"),
    ("COLLATE -- a comment\n NoCase", "NoCase")])
def test_a_table_that_compares_text_otherwise_than_by_code_point_is_one_line(
    tmp_path: Path, collation: str, name: str
) -> None:
    """With parent_community_id NOCASE, ns/0's children were planned under NS/0 too; a
    comment between COLLATE and its name hid it."""
    store = _with_schema_change(
        tmp_path / "store.db", "ALTER TABLE rag_community_summaries RENAME TO stored_summaries",
        f"CREATE TABLE rag_community_summaries (id TEXT PRIMARY KEY, namespace TEXT, community_name TEXT, "
        f"summary_content TEXT, level INTEGER, parent_community_id TEXT {collation}, members TEXT)",
        "INSERT INTO rag_community_summaries SELECT * FROM stored_summaries")
    run = run_cli("info", str(store), timeout=30)
    assert (run.code, run.stdout, run.stderr) == (
        2, "", f"graphrag-tui: error: Not a community store: {store}: rag_community_summaries compares text with "
               f"COLLATE {name}; graphrag-tui compares ids and names by code point\n")


def test_the_word_collate_in_a_string_a_comment_or_a_quoted_name_is_no_collation(tmp_path: Path) -> None:
    """Each of these stores compares by code point: they were refused."""
    store = _with_schema_change(
        tmp_path / "store.db", "ALTER TABLE rag_community_summaries RENAME TO stored_summaries",
        "CREATE TABLE rag_community_summaries (id TEXT PRIMARY KEY, namespace TEXT DEFAULT 'x COLLATE NOCASE', "
        "community_name TEXT, -- was COLLATE NOCASE\n summary_content TEXT COLLATE BINARY, level INTEGER, "
        "parent_community_id TEXT /* COLLATE RTRIM */, members TEXT CHECK (members != 'COLLATE RTRIM'), "
        "\"collate nocase\" TEXT)",
        "INSERT INTO rag_community_summaries SELECT *, NULL FROM stored_summaries")
    run = run_cli("info", str(store), timeout=30)
    assert run.code == 0, run.stderr


@pytest.mark.parametrize(("index", "searched"), [
    ("CREATE INDEX parents ON rag_community_summaries (parent_community_id)", True),
    ("CREATE INDEX parents ON rag_community_summaries (parent_community_id) WHERE 0", False),
    ("CREATE INDEX parents ON rag_community_summaries (parent_community_id COLLATE NOCASE)", False),
    ("CREATE INDEX parents ON rag_community_summaries (namespace, parent_community_id)", False),
])
def test_the_walk_down_needs_an_index_it_can_search(tmp_path: Path, index: str, searched: bool) -> None:
    """A partial or NOCASE index on the parent column was taken for one the walk down can
    search: each step then scanned the table (20,000 communities took 28 s to plan, 40,000
    97 s); the walk up by primary key is taken instead."""
    from tests.test_store import BARE_SCHEMA

    store = tmp_path / "store.db"
    conn = sqlite3.connect(store)
    conn.executescript(BARE_SCHEMA)
    conn.execute(index)
    conn.close()
    with CommunityStore.open(store) as opened:
        assert opened._has_parent_index is searched


@pytest.mark.parametrize("hostile_part", ["nocase_namespace", "trigger"])
def test_a_destination_that_would_change_what_is_written_is_refused_untouched(tmp_path: Path, hostile_part: str) -> None:
    """Copying namespace `ns` into a store whose namespace column is NOCASE deleted its
    namespace `NS` (someone's work); a trigger that dropped every claim left the copy
    saying it wrote them."""
    from graphrag_tui.store.schema import SCHEMA_SQL

    source = hostile.base_store(tmp_path / "source.db")
    target = tmp_path / "target.db"
    conn = sqlite3.connect(target)
    if hostile_part == "nocase_namespace":
        conn.executescript(SCHEMA_SQL.replace("namespace TEXT NOT NULL", "namespace TEXT NOT NULL COLLATE NOCASE"))
        problem = "Not a community store: {target}: rag_parents compares text with COLLATE NOCASE; graphrag-tui " \
                  "compares ids and names by code point"
    else:
        conn.executescript(SCHEMA_SQL + "CREATE TRIGGER quiet BEFORE INSERT ON rag_claims BEGIN SELECT RAISE(IGNORE); END;")
        problem = "cannot write store {target}: it has triggers on rag_claims, which would change what is written " \
                  "(drop them, or write into another store)"
    conn.execute("INSERT INTO rag_community_summaries (id, namespace, summary_content, level) "
                 "VALUES ('NS/keep', 'NS', 'Work already done.', 0)")
    conn.commit()
    conn.close()
    before = snapshot(tmp_path)
    run = run_cli("copy", str(source), str(target))
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {problem.format(target=target)}\n")
    assert snapshot(tmp_path) == before


def test_ids_that_are_numbers_are_read_as_the_claims_cite_them(tmp_path: Path) -> None:
    """Chunks, claims and entities with INTEGER PRIMARY KEY ids: `show` was an internal
    error, search found none of them, and planning's two reads disagreed on the excerpts."""
    from graphrag_tui.store.schema import SCHEMA_SQL

    schema = SCHEMA_SQL
    for table in ("rag_claims", "rag_children", "rag_entities"):
        schema = schema.replace(f"{table} (\n    id TEXT PRIMARY KEY", f"{table} (\n    id INTEGER PRIMARY KEY")
    assert schema.count("id INTEGER PRIMARY KEY") == 3
    store = tmp_path / "store.db"
    conn = sqlite3.connect(store)
    conn.executescript(schema + """
        INSERT INTO rag_parents VALUES ('ns/d1', 'ns', 'Harbour report', 'full text');
        INSERT INTO rag_children VALUES (1, 'ns', 'ns/d1', 'The harbor grew.');
        INSERT INTO rag_entities VALUES (1, 'ns', 'Port Authority', 'runs the harbor');
        INSERT INTO rag_community_summaries VALUES ('ns/0', 'ns', 'Root', 'The harbor and its trade.', 0, NULL, NULL);
        INSERT INTO rag_claims VALUES (1, 'ns', 1, NULL, 'pays for the harbor', 'ns/d1', 1, 'ns/0');
    """)
    conn.close()
    with CommunityStore.open(store) as opened:
        (planned,) = opened.select_communities("ns", None)
        (parts,) = opened.iter_map_parts("ns", None)
    assert [(c.id, c.subject, c.chunk_id) for c in planned.claims] == [("1", "Port Authority", "1")]
    assert [(e.chunk_id, e.content) for e in planned.excerpts] == [("1", "The harbor grew.")]
    assert (parts.claim_lines, parts.excerpt_lines) == (
        ("- Port Authority: pays for the harbor",), ("- [Chunk 1] The harbor grew.",))
    shown = run_cli("show", str(store), "ns/0", "--json")
    assert shown.code == 0, shown.stderr
    assert [(c["id"], c["subject"]) for c in shown.json["claims"]] == [("1", "Port Authority")]
    assert [(c["id"], c["content"]) for c in shown.json["chunks"]] == [("1", "The harbor grew.")]
    found = run_cli("search", str(store), "harbor", "--json", env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")})
    assert found.code == 0, found.stderr
    assert {kind: [hit["id"] for hit in hits] for kind, hits in found.json["results"].items()} == {
        "community": ["ns/0"], "entity": ["1"], "claim": ["1"], "chunk": ["1"]}


def test_an_id_that_is_not_utf8_does_not_keep_the_search_index_build_going(tmp_path: Path) -> None:
    """An id read back as U+FFFD sorts before its own bytes: the index build paged after it,
    got the same row again, forever, and filled the cache folder (found by a probe). Such a
    row cannot be looked up by its id to be shown: the others are."""
    from graphrag_tui.store.schema import SCHEMA_SQL

    store = tmp_path / "store.db"
    conn = sqlite3.connect(store)
    conn.executescript(SCHEMA_SQL + """
        INSERT INTO rag_parents VALUES ('ns/d1', 'ns', 'Harbour report', 'full text');
        INSERT INTO rag_children VALUES ('ns/c1', 'ns', 'ns/d1', 'The harbor grew.');
        INSERT INTO rag_children VALUES (CAST(x'ff31' AS TEXT), 'ns', 'ns/d1', 'The harbor shrank.');
        INSERT INTO rag_entities VALUES (CAST(x'ff32' AS TEXT), 'ns', 'Port Authority', 'runs the harbor');
        INSERT INTO rag_community_summaries VALUES ('ns/0', 'ns', 'Root', 'The harbor and its trade.', 0, NULL, NULL);
        INSERT INTO rag_claims VALUES ('ns/k1', 'ns', 'ns/e1', NULL, 'pays for the harbor', 'ns/d1', 'ns/c1', 'ns/0');
        INSERT INTO rag_claims VALUES (CAST(x'ff33' AS TEXT), 'ns', 'ns/e1', NULL, 'taxes the harbor', 'ns/d1', 'ns/c1',
                                       'ns/0');
    """)
    conn.close()
    found = run_cli("search", str(store), "harbor", "--json", env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")},
                    timeout=30)
    assert found.code == 0, found.stderr
    assert {kind: [hit["id"] for hit in hits] for kind, hits in found.json["results"].items()} == {
        "community": ["ns/0"], "entity": [], "claim": ["ns/k1"], "chunk": ["ns/c1"]}
