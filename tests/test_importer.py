"""import-graphrag: Microsoft GraphRAG Parquet output -> community store (issue 4)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from graphrag_tui.errors import InputError
from graphrag_tui.importer import ImportReport, format_report, import_graphrag
from graphrag_tui.importer.parquet_tables import COLUMNS
from graphrag_tui.store.schema import TABLES
from tests.cli_runner import EXECUTABLE, Run, clean_env, run_cli
from tests.graphrag_fixtures import (
    CLAIMS,
    EXPECTED_LEAF,
    drop_column,
    index_tables,
    write_index,
    write_large_index,
)

# ../shared beside the checkout (/work/main/tests -> /work/shared), or beside a worktree's parent.
SHARED = next(
    (folder / "shared" / "graphrag-sample-data" / "msgraphrag-v3-christmas-carol"
     for folder in Path(__file__).resolve().parents[1:4]
     if (folder / "shared" / "graphrag-sample-data").is_dir()),
    Path("/nonexistent"),
)


def rows(store: Path, sql: str, *params) -> list[tuple]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def claim_leaves(store: Path, ns: str) -> dict[int, int | None]:
    result = {}
    for cid, leaf in rows(store, "SELECT id, community_summary_id FROM rag_claims WHERE namespace = ?", ns):
        result[int(cid.split("/")[1])] = None if leaf is None else int(leaf.split("/")[1])
    return result


# --- both layouts ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["1.x", "2.x", "3.x"])
def test_imports_each_layout(tmp_path: Path, layout: str) -> None:
    src = write_index(tmp_path / "out", layout)
    store = tmp_path / "store.db"
    report = import_graphrag(src, store, "ns")

    assert report.layout == layout
    assert report.communities_per_level == {0: 2, 1: 2, 2: 2}
    assert report.leaves == 4
    assert (report.claims_assigned, report.claims_unassigned) == (8, 1)
    assert (report.chunks, report.documents, report.entities, report.entities_from_claims) == (4, 2, 8, 2)

    summaries = rows(
        store,
        "SELECT id, community_name, summary_content, level, parent_community_id, members "
        "FROM rag_community_summaries ORDER BY level, id",
    )
    assert summaries == [
        ("ns/0", "Report title 0", "Summary of community 0.", 0, None, '["ALPHA", "BETA", "GAMMA", "DELTA"]'),
        ("ns/1", "Report title 1", "Summary of community 1.", 0, None, '["EPSILON", "ZETA"]'),
        ("ns/2", "Report title 2", "Summary of community 2.", 1, "ns/0", '["ALPHA", "BETA", "GAMMA"]'),
        ("ns/3", "Report title 3", "Summary of community 3.", 1, "ns/0", '["DELTA", "GAMMA"]'),
        ("ns/10", "Report title 10", "Summary of community 10.", 2, "ns/2", '["ALPHA", "BETA", "GAMMA"]'),
        ("ns/9", "Report title 9", "Summary of community 9.", 2, "ns/2", '["BETA", "GAMMA"]'),
    ]
    assert rows(store, "SELECT id, title, content FROM rag_parents ORDER BY id") == [
        ("ns/0", "first.txt", "Document zero."),
        ("ns/1", "second.txt", "Document one."),
    ]
    assert rows(store, "SELECT id, parent_id, content FROM rag_children ORDER BY id") == [
        ("ns/0", "ns/0", "Chunk text 0."),
        ("ns/1", "ns/0", "Chunk text 1."),
        ("ns/2", "ns/1", "Chunk text 2."),
        ("ns/3", "ns/1", "Chunk text 3."),
    ]
    assert rows(store, "SELECT id, name FROM rag_entities ORDER BY id") == [
        ("ns/0", "ALPHA"),
        ("ns/1", "BETA"),
        ("ns/2", "GAMMA"),
        ("ns/3", "DELTA"),
        ("ns/4", "EPSILON"),
        ("ns/5", "ZETA"),
        ("ns/claim-entity-1", "UNLISTED ONE"),
        ("ns/claim-entity-2", "UNLISTED TWO"),
    ]
    assert rows(store, "PRAGMA foreign_key_check") == []


def test_claims_mapping_and_leaf_assignment(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out", "3.x")
    store = tmp_path / "store.db"
    import_graphrag(src, store, "ns")

    assert claim_leaves(store, "ns") == EXPECTED_LEAF
    assert rows(
        store,
        "SELECT id, subject_entity_id, object_entity_id, description, source_parent_id, source_chunk_id "
        "FROM rag_claims ORDER BY CAST(substr(id, 4) AS INTEGER)",
    ) == [
        ("ns/0", "ns/0", None, "Claim 0 description.", "ns/0", "ns/0"),  # object NONE -> none
        ("ns/1", "ns/2", None, "Claim 1 description.", "ns/0", "ns/1"),  # null object -> none
        ("ns/2", "ns/2", "ns/1", "Claim 2 description.", "ns/0", "ns/0"),
        ("ns/3", "ns/2", None, "Claim 3 description.", "ns/1", "ns/3"),
        ("ns/4", "ns/1", None, "Claim 4 description.", "ns/1", "ns/3"),
        ("ns/5", "ns/claim-entity-1", "ns/0", "Claim 5 description.", "ns/1", "ns/2"),
        ("ns/6", "ns/claim-entity-2", "ns/claim-entity-1", "Claim 6 description.", "ns/1", "ns/3"),
        ("ns/7", "ns/3", None, "Claim 7 description.", None, None),  # dangling text unit
        ("ns/8", "ns/4", "ns/5", "Claim 8 description.", "ns/1", "ns/2"),
    ]
    assert len(CLAIMS) == 9


def test_tie_break_prefers_leaf_sharing_the_text_unit_then_lowest_number_numerically(tmp_path: Path) -> None:
    # Community numbers as strings (1.x fixture): "10" < "9" as text, yet 9 must win claim 4.
    src = write_index(tmp_path / "out", "1.x")
    store = tmp_path / "store.db"
    import_graphrag(src, store, "ns")
    leaves = claim_leaves(store, "ns")
    assert leaves[1] == 3  # 3 and 10 share t1 -> lowest of those
    assert leaves[2] == 10  # only 10 shares t0, although 3 is lower
    assert leaves[3] == 3  # nobody shares t3 -> lowest of all
    assert leaves[4] == 9  # 9 < 10 by number
    assert leaves[5] == 1  # unknown subject -> leaf listing the text unit, lowest
    assert leaves[6] is None


def test_tables_in_artifacts_subfolder_and_str_paths(tmp_path: Path) -> None:
    write_index(tmp_path / "out" / "artifacts", "1.x")
    report = import_graphrag(str(tmp_path / "out"), str(tmp_path / "s.db"), "ns")  # type: ignore[arg-type]
    assert (report.layout, report.communities, report.claims) == ("1.x", 6, 9)


def test_summary_or_full_content(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out", "3.x")
    store = tmp_path / "store.db"
    report = import_graphrag(src, store, "ns", text="full_content")
    assert report.text_column == "full_content"
    assert rows(store, "SELECT summary_content FROM rag_community_summaries WHERE id = 'ns/3'") == [
        ("# Report title 3\n\nFull report of community 3.",)
    ]


def test_children_derived_when_missing_and_string_numbers(tmp_path: Path) -> None:
    tables = index_tables("3.x")
    tables["communities"] = drop_column(tables["communities"], "children")
    tables["community_reports"] = drop_column(tables["community_reports"], "children")
    for table in ("communities", "community_reports"):
        for row in tables[table]:
            row["community"] = str(row["community"])
            row["parent"] = str(row["parent"])
            row["level"] = str(row["level"])
    src = write_index(tmp_path / "out", "3.x", tables)
    store = tmp_path / "store.db"
    report = import_graphrag(src, store, "ns")
    assert report.leaves == 4
    assert report.communities_per_level == {0: 2, 1: 2, 2: 2}
    assert rows(store, "SELECT id, parent_community_id FROM rag_community_summaries WHERE level = 2 ORDER BY id") == [
        ("ns/10", "ns/2"),
        ("ns/9", "ns/2"),
    ]
    assert claim_leaves(store, "ns") == EXPECTED_LEAF


def test_children_disagreeing_with_parent_is_noted(tmp_path: Path) -> None:
    tables = index_tables("3.x")
    tables["communities"][0]["children"] = [2]  # parent links say 2 and 3
    report = import_graphrag(write_index(tmp_path / "out", "3.x", tables), tmp_path / "s.db", "ns")
    note = "communities.parquet: 'children' disagrees with 'parent' for 1 communities; the hierarchy follows 'parent'"
    assert note in report.notes
    assert report.leaves == 4


def test_without_covariates_imports_with_a_note(tmp_path: Path) -> None:
    tables = index_tables("1.x")
    del tables["covariates"]
    src = write_index(tmp_path / "out", "1.x", tables)
    store = tmp_path / "store.db"
    report = import_graphrag(src, store, "ns")
    assert report.claims == 0
    assert report.notes == [
        "no create_final_covariates.parquet: this index has no claims (GraphRAG extracts them "
        "only when claim extraction is enabled), so none were imported"
    ]
    assert rows(store, "SELECT count(*) FROM rag_claims") == [(0,)]
    assert rows(store, "SELECT count(*) FROM rag_community_summaries") == [(6,)]


def test_dangling_references_are_skipped_and_counted(tmp_path: Path) -> None:
    tables = index_tables("3.x")
    tables["communities"].append(
        {**tables["communities"][1], "id": "x", "community": 20, "human_readable_id": 20, "parent": 77, "level": 1,
         "entity_ids": ["ent-alpha", "ent-ghost", "ent-ghost2"], "children": []}
    )
    tables["community_reports"].append({**tables["community_reports"][1], "community": 20, "human_readable_id": 20})
    tables["text_units"][3]["document_id"] = "d-missing"
    src = write_index(tmp_path / "out", "3.x", tables)
    store = tmp_path / "store.db"
    report = import_graphrag(src, store, "ns")
    assert report.dangling == {
        "text unit -> document references not found in documents": 1,
        "parent community references not found among the reports": 1,
        "community -> entity references not found in entities": 2,
        "claim -> text unit references not found in text units": 1,
    }
    assert rows(store, "SELECT level, parent_community_id, members FROM rag_community_summaries WHERE id = 'ns/20'") == [
        (1, None, '["ALPHA"]')
    ]
    assert rows(store, "SELECT parent_id FROM rag_children WHERE id = 'ns/3'") == [(None,)]
    assert rows(store, "PRAGMA foreign_key_check") == []


# --- the printed report ---------------------------------------------------------------------


def test_report_text(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out", "3.x")
    store = tmp_path / "store.db"
    text = format_report(import_graphrag(src, store, "ns"))
    assert text == (
        f"Imported GraphRAG 3.x index {src}\n"
        f"  into new store {store}, namespace 'ns' (community text: summary)\n"
        "Communities: 6 (level 0: 2, level 1: 2, level 2: 2)\n"
        "Leaves: 4\n"
        "Entities: 8 (incl. 2 named only by claims)\n"
        "Claims: 9 (assigned to a leaf: 8 [7 by subject entity, 1 by text unit], unassigned: 1)\n"
        "Chunks: 4\n"
        "Documents: 2\n"
        "Skipped dangling references: 1\n"
        "  1 claim -> text unit references not found in text units\n"
        "Notes:\n"
        "  - 1 claims fit no leaf community (neither by subject nor by text unit) and stay unassigned"
    )
    again = format_report(import_graphrag(src, store, "ns"))
    assert again.splitlines()[1] == f"  into store {store}, namespace 'ns' (community text: summary)"
    assert again.splitlines()[2] == "  replaced the namespace's previous 29 rows"


def test_report_without_anything_skipped() -> None:
    report = ImportReport(
        source_dir=Path("/in"), store_path=Path("/s.db"), namespace="n", layout="2.x", text_column="summary",
        communities_per_level={0: 1}, leaves=1, entities=1, chunks=1, documents=1,
    )
    assert format_report(report).splitlines()[-1] == "Skipped dangling references: none"


# --- re-import and namespaces ---------------------------------------------------------------


def test_reimport_replaces_only_that_namespace(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out", "3.x")
    store = tmp_path / "store.db"
    import_graphrag(src, store, "a")
    import_graphrag(src, store, "b")
    b_before = {t: rows(store, f"SELECT * FROM {t} WHERE namespace = 'b' ORDER BY id") for t in TABLES}

    tables = index_tables("3.x")
    tables["community_reports"] = [r for r in tables["community_reports"] if r["community"] != 1]
    tables["community_reports"][0]["summary"] = "Changed."
    src2 = write_index(tmp_path / "out2", "3.x", tables)
    report = import_graphrag(src2, store, "a")

    assert report.replaced_rows == 29  # 2 documents, 4 chunks, 8 entities, 6 communities, 9 claims
    assert report.notes[0] == "1 communities have no report and were not imported"
    assert rows(store, "SELECT id FROM rag_community_summaries WHERE namespace = 'a' ORDER BY id") == [
        ("a/0",), ("a/10",), ("a/2",), ("a/3",), ("a/9",)
    ]
    assert rows(store, "SELECT summary_content FROM rag_community_summaries WHERE id = 'a/0'") == [("Changed.",)]
    assert rows(store, "SELECT count(*) FROM rag_claims WHERE namespace = 'a'") == [(9,)]
    assert {t: rows(store, f"SELECT * FROM {t} WHERE namespace = 'b' ORDER BY id") for t in TABLES} == b_before


def test_existing_store_with_foreign_rows_keeps_them(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE notes (x TEXT)")  # an unrelated table: left alone
    conn.execute("INSERT INTO notes VALUES ('keep')")
    conn.commit()
    conn.close()
    import_graphrag(write_index(tmp_path / "out"), store, "ns")
    assert rows(store, "SELECT x FROM notes") == [("keep",)]
    assert rows(store, "SELECT count(*) FROM rag_community_summaries") == [(6,)]


# --- input errors: one line, nothing written --------------------------------------------------


def _error(src: Path, store: Path, ns: str = "ns", text: str = "summary") -> str:
    with pytest.raises(InputError) as info:
        import_graphrag(src, store, ns, text)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    return message


def test_pre_1x_layout_is_rejected(tmp_path: Path) -> None:
    tables = index_tables("1.x")
    tables["communities"] = drop_column(tables["communities"], "parent")
    src = write_index(tmp_path / "out", "1.x", tables)
    assert _error(src, tmp_path / "s.db") == (
        f"{src / 'create_final_communities.parquet'} has no 'parent' column: this index was built by a "
        "GraphRAG older than 1.0, which has no community hierarchy to import; re-index it with "
        "GraphRAG 1.0 or later"
    )
    assert not (tmp_path / "s.db").exists()


def test_missing_column_names_file_and_column(tmp_path: Path) -> None:
    tables = index_tables("3.x")
    tables["communities"] = drop_column(tables["communities"], "entity_ids")
    src = write_index(tmp_path / "out", "3.x", tables)
    assert _error(src, tmp_path / "s.db") == f"{src / 'communities.parquet'} has no column 'entity_ids'"

    tables = index_tables("3.x")
    tables["text_units"] = drop_column(tables["text_units"], "document_id")
    src = write_index(tmp_path / "out2", "3.x", tables)
    assert _error(src, tmp_path / "s.db") == (
        f"{src / 'text_units.parquet'} has no column 'document_id' or 'document_ids'"
    )

    tables = index_tables("3.x")
    tables["community_reports"] = drop_column(tables["community_reports"], "full_content")
    src = write_index(tmp_path / "out3", "3.x", tables)
    assert _error(src, tmp_path / "s.db", text="full_content") == (
        f"{src / 'community_reports.parquet'} has no column 'full_content'"
    )


def test_missing_table_and_missing_folder(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out", "1.x")
    (src / "create_final_entities.parquet").unlink()
    assert _error(src, tmp_path / "s.db") == f"missing GraphRAG table create_final_entities.parquet in {src}"
    assert _error(tmp_path / "nope", tmp_path / "s.db") == f"GraphRAG output folder not found: {tmp_path / 'nope'}"
    (tmp_path / "empty").mkdir()
    assert _error(tmp_path / "empty", tmp_path / "s.db").startswith(f"no GraphRAG tables in {tmp_path / 'empty'}:")
    assert not (tmp_path / "s.db").exists()


def test_bad_value_names_file_column_and_row(tmp_path: Path) -> None:
    tables = index_tables("1.x")
    tables["communities"][2]["community"] = "two"
    src = write_index(tmp_path / "out", "1.x", tables)
    assert _error(src, tmp_path / "s.db") == (
        f"{src / 'create_final_communities.parquet'}: column 'community' row 2 is not a number: 'two'"
    )


def test_bad_arguments(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out")
    assert _error(src, tmp_path / "s.db", text="title") == "--text must be summary or full_content, not 'title'"
    assert _error(src, tmp_path / "s.db", ns=" ") == "--namespace must not be empty"
    assert "invalid namespace 'a/b'" in _error(src, tmp_path / "s.db", ns="a/b")
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("namespace", ["a\x1b]0;title\x07b", "a\u202eb", "a\tb", "a\udcffb"],
                         ids=["osc", "bidi", "tab", "not-utf8"])
def test_a_namespace_with_control_characters_is_refused(tmp_path: Path, namespace: str) -> None:
    run = import_cli(write_index(tmp_path / "out"), tmp_path / "s.db", namespace)
    shown = repr(namespace)  # every control character written as an escape
    message = (f"invalid namespace {shown}: no control characters, bidirectional controls "
               "or bytes that are not UTF-8")
    if namespace == "a\udcffb":  # the command line refuses text arguments that are not UTF-8 first
        message = "--namespace is not valid UTF-8"
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_unreadable_parquet_leaves_existing_store_unchanged(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    import_graphrag(write_index(tmp_path / "good"), store, "ns")
    before = store.read_bytes()

    src = write_index(tmp_path / "bad")
    (src / "entities.parquet").write_bytes(b"this is not parquet")
    message = _error(src, store)
    assert message.startswith(f"cannot read {src / 'entities.parquet'}: ")
    assert store.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "good", "store.db"]


def test_failure_while_writing_rolls_back_everything(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    src = write_index(tmp_path / "out")
    import_graphrag(src, store, "ns")
    # Another namespace already uses one of the IDs "other/..." will need: the insert fails midway.
    conn = sqlite3.connect(store)
    conn.execute("INSERT INTO rag_claims (id, namespace, subject_entity_id, description) VALUES ('other/8', 'x', 's', 'd')")
    conn.commit()
    conn.close()
    before = store.read_bytes()
    message = _error(src, store, ns="other")
    assert message == (
        f"cannot import into {store}: UNIQUE constraint failed: rag_claims.id "
        "(an ID of namespace 'other' is already used by another namespace, or comes twice in its rows)"
    )
    assert store.read_bytes() == before
    assert rows(store, "SELECT count(*) FROM rag_entities WHERE namespace = 'other'") == [(0,)]


def test_bad_store_paths(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out")
    missing_parent = tmp_path / "no-such-folder" / "s.db"
    assert _error(src, missing_parent) == f"folder of the store does not exist: {missing_parent.parent}"

    not_a_db = tmp_path / "text.db"
    not_a_db.write_text("hello, not sqlite")
    assert _error(src, not_a_db).startswith(f"not a SQLite community store: {not_a_db}")
    assert not_a_db.read_text() == "hello, not sqlite"


def test_sqlite_failure_on_new_file_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphrag_tui.store import namespace_write

    real_insert_sql = namespace_write.insert_sql

    def failing_claims(table: str, optional: tuple[str, ...] = ()) -> str:
        if table == "rag_claims":
            return "INSERT INTO no_such_table VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        return real_insert_sql(table, optional)

    monkeypatch.setattr(namespace_write, "insert_sql", failing_claims)
    store = tmp_path / "new.db"
    message = _error(write_index(tmp_path / "out"), store)
    assert message == f"cannot import into {store}: no such table: no_such_table"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_without_pyarrow_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_index(tmp_path / "out")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert _error(src, tmp_path / "s.db") == "pyarrow is not installed: pip install 'graphrag-tui[graphrag]'"


# --- real GraphRAG 3.x output (shared data; skipped where it is absent) -----------------------


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared GraphRAG sample data not present")
def test_shared_graphrag_v3_sample(tmp_path: Path) -> None:
    store = tmp_path / "cc.db"
    report = import_graphrag(SHARED, store, "cc")
    print(format_report(report))
    assert report.layout == "3.x"
    assert report.communities == 122
    assert report.communities_per_level == {0: 23, 1: 65, 2: 32, 3: 2}
    assert report.claims_assigned + report.claims_unassigned == 406
    assert report.chunks == 42
    assert report.documents == 1
    assert report.dangling == {}
    assert rows(store, "SELECT count(*) FROM rag_community_summaries WHERE namespace = 'cc'") == [(122,)]
    assert rows(store, "SELECT count(*) FROM rag_claims") == [(406,)]
    assert rows(store, "PRAGMA foreign_key_check") == []
    # every parent sits one level up; the bare community number resolves within the namespace
    assert rows(
        store,
        "SELECT count(*) FROM rag_community_summaries c JOIN rag_community_summaries p "
        "ON p.id = c.parent_community_id WHERE p.level + 1 != c.level",
    ) == [(0,)]
    assert rows(store, "SELECT id FROM rag_community_summaries WHERE id = 'cc/' || ?", "0") == [("cc/0",)]
    members = json.loads(rows(store, "SELECT members FROM rag_community_summaries WHERE id = 'cc/0'")[0][0])
    assert len(members) > 0


# --- the real command: unwritable targets, bad hierarchies, Ctrl+C (issue 9) ------------------


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of the folder (not its subfolders) and its sha256."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def import_cli(src: Path, store: Path, ns: str = "ns") -> Run:
    return run_cli("import-graphrag", str(src), str(store), "--namespace", ns)


# Root passes permission checks, so as root (CI) the command runs as `nobody`: the CLI's own
# `main` in a process that drops its privileges once its modules are loaded.
_AS_NOBODY = """
import os, sys
import graphrag_tui.cli, graphrag_tui.importer.api, pyarrow.parquet
os.setgroups([]); os.setgid(65534); os.setuid(65534)
sys.exit(graphrag_tui.cli.main(sys.argv[1:]))
"""


@pytest.fixture
def unprivileged(tmp_path: Path) -> Iterator[tuple[Path, Callable[..., Run]]]:
    """A folder to work in and a runner of the command without root's powers."""
    if os.geteuid() != 0:
        yield tmp_path, lambda *args: run_cli(*args)
        return
    folder = Path(tempfile.mkdtemp(prefix="grt-unprivileged-"))  # /tmp/pytest-of-root is 0700
    folder.chmod(0o755)
    os.chown(folder, 65534, 65534)

    def run(*args: str) -> Run:
        done = subprocess.run([sys.executable, "-c", _AS_NOBODY, *args], capture_output=True, text=True,
                              env=clean_env(), timeout=60, stdin=subprocess.DEVNULL)
        return Run(done.returncode, done.stdout, done.stderr)

    try:
        yield folder, run
    finally:
        shutil.rmtree(folder)


def test_import_into_a_read_only_folder_or_file_is_exit_2(unprivileged: tuple[Path, Callable[..., Run]]) -> None:
    base, run_import = unprivileged
    src = write_index(base / "out")
    folder = base / "ro"
    folder.mkdir()
    existing = folder / "old.db"
    assert import_cli(src, existing, "old").code == 0
    for path in (base, src, folder, existing, *src.iterdir()):
        os.chown(path, os.stat(base).st_uid, os.stat(base).st_gid)
    before = snapshot(folder)
    folder.chmod(0o555)
    try:
        for store in (folder / "new.db", existing):
            run = run_import("import-graphrag", str(src), str(store), "--namespace", "ns")
            assert (run.code, run.stdout, run.stderr) == (2, "", (
                f"graphrag-tui: error: cannot import into {store}: folder {folder} is not writable "
                "(the store and its journal are written there)\n"))
        assert snapshot(folder) == before
    finally:
        folder.chmod(0o755)
    existing.chmod(0o444)
    run = run_import("import-graphrag", str(src), str(existing), "--namespace", "ns")
    assert (run.code, run.stdout, run.stderr) == (
        2, "", f"graphrag-tui: error: cannot import into {existing}: the file is not writable\n")
    assert snapshot(folder) == before


def test_import_into_a_path_under_a_file_or_a_missing_folder_is_exit_2(tmp_path: Path) -> None:
    src = write_index(tmp_path / "out")
    regular = tmp_path / "regular"
    regular.write_text("not a folder")
    run = import_cli(src, regular / "s.db")
    assert (run.code, run.stdout, run.stderr) == (
        2, "", f"graphrag-tui: error: folder of the store is not a folder: {regular}\n")
    run = import_cli(src, tmp_path / "missing" / "s.db")
    assert (run.code, run.stdout, run.stderr) == (
        2, "", f"graphrag-tui: error: folder of the store does not exist: {tmp_path / 'missing'}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "regular"]
    assert regular.read_text() == "not a folder"


def _set_parents(tables: dict, parents: dict[int, int]) -> dict:
    for name in ("communities", "community_reports"):
        for row in tables[name]:
            n = row["community"]
            if n in parents:
                row["parent"] = parents[n]
            row.pop("children", None)
    return tables


def test_a_fully_cyclic_hierarchy_is_refused(tmp_path: Path) -> None:
    # 0 -> 1 -> 0 and 2 -> 3 -> 9 -> 10 -> 2: every community is some community's parent.
    tables = _set_parents(index_tables(), {0: 1, 1: 0, 2: 3, 3: 9, 9: 10, 10: 2})
    src = write_index(tmp_path / "out", tables=tables)
    store = tmp_path / "s.db"
    run = import_cli(src, store)
    assert (run.code, run.stdout, run.stderr) == (2, "", (
        f"graphrag-tui: error: {src / 'communities.parquet'}: every community is some community's parent "
        "(the 'parent' links form cycles), so there is no leaf community to search or to hold claims\n"))
    assert not store.exists()


def test_a_partly_cyclic_hierarchy_is_noted(tmp_path: Path) -> None:
    # 2 -> 9 -> 2 is a cycle; 10 stays a leaf under 2, and 1 and 3 are leaves too.
    tables = _set_parents(index_tables(), {2: 9, 9: 2})
    report = import_graphrag(write_index(tmp_path / "out", tables=tables), tmp_path / "s.db", "ns")
    assert report.leaves == 3
    assert [note for note in report.notes if "cycles" in note] == [
        "2 communities form cycles of 'parent' links (community 2 among them): they are imported "
        "as they are, and the search reaches them only by level"
    ]


def test_zero_communities_is_refused_and_keeps_the_namespace(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert import_cli(write_index(tmp_path / "full"), store).code == 0
    before = snapshot(tmp_path)
    src = write_index(tmp_path / "empty")
    reports = src / "community_reports.parquet"
    pq.write_table(pq.read_table(reports).slice(0, 0), reports)  # the same columns, no rows
    run = import_cli(src, store)
    assert (run.code, run.stdout, run.stderr) == (2, "", (
        f"graphrag-tui: error: {src / 'community_reports.parquet'}: no community has a report, so there is "
        "nothing to import (the namespace would be empty)\n"))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("table", ["communities", "community_reports"])
def test_a_negative_level_is_refused(tmp_path: Path, table: str) -> None:
    tables = index_tables()
    tables[table][3]["level"] = -1
    if table == "community_reports":  # the report's own level is read only without a communities row
        tables["communities"] = [row for row in tables["communities"] if row["community"] != 3]
    src = write_index(tmp_path / "out", tables=tables)
    run = import_cli(src, tmp_path / "s.db")
    assert (run.code, run.stdout, run.stderr) == (2, "", (
        f"graphrag-tui: error: {src / (table + '.parquet')}: column 'level' row 3 is not a level (0 or more): -1\n"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _refused(src: Path, store: Path) -> str:
    """The import's one line; nothing written."""
    run = import_cli(src, store)
    assert (run.code, run.stdout) == (2, ""), run.stderr
    assert run.stderr.startswith("graphrag-tui: error: ") and run.stderr.count("\n") == 1, run.stderr
    assert not store.exists()
    return run.stderr.removeprefix("graphrag-tui: error: ").rstrip("\n")


def test_a_community_number_that_is_bytes_but_not_utf8_is_refused(tmp_path: Path) -> None:
    """It was `internal error: UnicodeDecodeError`, exit 1."""
    tables = index_tables()
    for row in tables["communities"]:
        row["community"] = str(row["community"]).encode()
    tables["communities"][0]["community"] = b"\xff0"
    src = write_index(tmp_path / "out", tables=tables)
    assert _refused(src, tmp_path / "s.db") == (
        f"{src / 'communities.parquet'}: column 'community' row 0 is not a number in ASCII digits: b'\\xff0'")


def test_a_level_in_digits_other_than_ascii_is_refused(tmp_path: Path) -> None:
    """Python reads "١" (Arabic-Indic) as 1: it was imported as level 1."""
    tables = index_tables()
    for row in tables["communities"]:
        row["level"] = str(row["level"])
    tables["communities"][2]["level"] = "\u0661"
    src = write_index(tmp_path / "out", tables=tables)
    assert _refused(src, tmp_path / "s.db") == (
        f"{src / 'communities.parquet'}: column 'level' row 2 is not a number in ASCII digits: '\u0661'")


def test_a_table_with_two_columns_of_one_name_is_refused(tmp_path: Path) -> None:
    """Its rows read the last one, silently."""
    import pyarrow as pa

    src = write_index(tmp_path / "out")
    table = pq.read_table(src / "communities.parquet")
    pq.write_table(table.append_column(pa.field("community", table.schema.field("community").type),
                                       table.column("community")), src / "communities.parquet")
    assert _refused(src, tmp_path / "s.db") == (
        f"{src / 'communities.parquet'} has 2 columns named 'community': which to read is not known")


@pytest.mark.parametrize("target", ["nowhere.parquet", "covariates.parquet"], ids=["dangling", "loop"])
def test_an_optional_table_that_is_a_link_to_nothing_is_refused(tmp_path: Path, target: str) -> None:
    """It was read as no table: an import with no claims, exit 0."""
    src = write_index(tmp_path / "out")
    (src / "covariates.parquet").unlink(missing_ok=True)
    (src / "covariates.parquet").symlink_to(src / target)
    assert _refused(src, tmp_path / "s.db") == (
        f"GraphRAG table {src / 'covariates.parquet'} is a symbolic link to nothing")


def test_a_list_as_json_nested_too_deep_is_refused(tmp_path: Path) -> None:
    """Valid JSON 100,000 lists deep: it was `internal error: RecursionError`, exit 1."""
    tables = index_tables()
    for row in tables["communities"]:
        row["entity_ids"] = json.dumps(row["entity_ids"])
    tables["communities"][0]["entity_ids"] = "[" * 100_000 + "]" * 100_000
    src = write_index(tmp_path / "out", tables=tables)
    assert _refused(src, tmp_path / "s.db") == (
        f"{src / 'communities.parquet'}: column 'entity_ids' row 0 is not a list: '" + "[" * 56 + "...")


@pytest.mark.parametrize("level", [1e300, 2.0**64])
def test_a_level_no_database_integer_holds_is_refused(tmp_path: Path, level: float) -> None:
    """It reached SQLite: `internal error: OverflowError`, exit 1."""
    tables = index_tables()
    for row in tables["communities"]:
        row["level"] = float(row["level"])
    tables["communities"][3]["level"] = level
    src = write_index(tmp_path / "out", tables=tables)
    assert _refused(src, tmp_path / "s.db") == (
        f"{src / 'communities.parquet'}: column 'level' row 3 is not a whole number between -2^63 and 2^63: "
        f"{level!r}")


def test_a_small_table_that_unpacks_to_gigabytes_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Five million rows of one repeated entity in a file of some 30 KB took 2-2.7 GB and
    half a minute to read."""
    import pyarrow as pa

    src = write_index(tmp_path / "out")
    rows = 5_000_000
    bomb = pa.table({name: pa.repeat(value, rows).dictionary_encode() for name, value in
                     (("id", "e"), ("title", "T"), ("description", "d"))} | {"human_readable_id": pa.repeat(1, rows)})
    pq.write_table(bomb, src / "entities.parquet")
    size = (src / "entities.parquet").stat().st_size
    started = time.monotonic()
    message = _refused(src, tmp_path / "s.db")
    assert time.monotonic() - started < 20
    assert message == (f"{src / 'entities.parquet'}: its {size:,} bytes would take some "
                       f"{(rows * 4 * 64 + _unpacked(src / 'entities.parquet')) >> 20:,} MiB once read, over 100 "
                       "times their size: refused (GraphRAG's own tables take 2 to 6 times theirs)")


def test_a_list_of_millions_of_repeated_values_in_one_row_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """The footer's count of rows said one cell: a 72 KB file whose one row lists a name four
    million times took 1 GB. Each element counts now, before anything is read (fewer, with
    longer names, are refused once read: the next test)."""
    import pyarrow as pa

    src = write_index(tmp_path / "out")
    table = pq.read_table(src / "communities.parquet")
    ids = table.column("entity_ids").to_pylist()
    ids[0] = ["x"] * 5_000_000
    column = table.schema.get_field_index("entity_ids")
    pq.write_table(table.set_column(column, "entity_ids", pa.array(ids, pa.list_(pa.string()))),
                   src / "communities.parquet")
    path = src / "communities.parquet"
    metadata = pq.ParquetFile(path).metadata
    present = set(table.column_names)
    read = {next(n for n in c.names if n in present) for c in COLUMNS["communities"] if present & set(c.names)}
    chunks = [metadata.row_group(g).column(c) for g in range(metadata.num_row_groups) for c in range(metadata.num_columns)
              if metadata.row_group(g).column(c).path_in_schema.split(".")[0] in read]
    estimate = sum(c.total_uncompressed_size for c in chunks) + sum(c.num_values for c in chunks) * 64
    assert _refused(src, tmp_path / "s.db") == (
        f"{path}: its {path.stat().st_size:,} bytes would take some {estimate >> 20:,} MiB once read, over 100 times "
        "their size: refused (GraphRAG's own tables take 2 to 6 times theirs)")


def test_a_text_stored_once_for_thousands_of_rows_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    """A dictionary holds a value once for every row that names it: the footer's sizes count
    it once, and 3,000 rows of one 100 KB description took 300 MB once read."""
    import pyarrow as pa

    src = write_index(tmp_path / "out")
    rows, text = 3_000, "d" * 100_000
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(rows)], "title": [f"T{i}" for i in range(rows)],
                             "description": pa.repeat(text, rows).dictionary_encode(),
                             "human_readable_id": list(range(rows))}), src / "entities.parquet",
                   use_dictionary=["description"])
    path = src / "entities.parquet"
    assert path.stat().st_size < 200_000
    started = time.monotonic()
    message = _refused(src, tmp_path / "s.db")
    assert time.monotonic() - started < 20
    said = re.fullmatch(rf"{re.escape(str(path))}: its {path.stat().st_size:,} bytes would take some ([0-9,]+) MiB "
                        r"once read, over 100 times their size: refused \(GraphRAG's own tables take 2 to 6 times "
                        r"theirs\)", message)
    assert said is not None, message
    assert int(said[1].replace(",", "")) == (rows * (len(text) + 64 * 4) + _plain_bytes(path)) >> 20


def _plain_bytes(path: Path) -> int:
    """The bytes of the entities' columns besides their description, as Arrow holds them."""
    table = pq.read_table(path, columns=["human_readable_id", "id", "title"])
    return sum(chunk.nbytes for column in table.columns for chunk in column.chunks)


def test_tables_that_unpack_to_gigabytes_together_are_refused_before_any_is_read(tmp_path: Path) -> None:
    """Each table under its own limit, six of them took 1.2 GB and more."""
    import pyarrow as pa

    src = write_index(tmp_path / "out")
    for name in ("entities", "text_units"):  # each some 200 MiB once read, from a few kilobytes
        table = pq.read_table(src / f"{name}.parquet")
        columns = {column: pa.repeat(table.column(column)[0], 700_000) for column in table.column_names}
        pq.write_table(pa.table({column: values.dictionary_encode() if pa.types.is_string(values.type) else values
                                 for column, values in columns.items()}), src / f"{name}.parquet")
    assert _refused(src, tmp_path / "s.db") == (
        f"{src}: its tables would take over 100 times their size once read (over 256 MiB for a small index): refused "
        "(GraphRAG's own take 2 to 6 times theirs)")


def _unpacked(path: Path) -> int:
    metadata = pq.ParquetFile(path).metadata
    return sum(metadata.row_group(g).column(c).total_uncompressed_size
               for g in range(metadata.num_row_groups) for c in range(metadata.num_columns))


@pytest.mark.parametrize("table", ["covariates", "entities"])
def test_a_table_that_is_not_a_regular_file_is_refused(tmp_path: Path, table: str) -> None:
    """A FIFO as covariates.parquet read as no claims at all (exit 0); as a required table,
    as missing."""
    src = write_index(tmp_path / "out")
    (src / f"{table}.parquet").unlink()
    os.mkfifo(src / f"{table}.parquet")
    assert _refused(src, tmp_path / "s.db") == (
        f"GraphRAG table {src / (table + '.parquet')} is not a regular file (one Parquet file per table is read)")


# Ctrl+C at different moments of a real import of a synthetic index big enough to take seconds.

BIG_COMMUNITIES, BIG_CLAIMS_PER_LEAF = 10_000, 10


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_large_index(tmp_path_factory.mktemp("big") / "out", BIG_COMMUNITIES, BIG_CLAIMS_PER_LEAF)


def _wait_for(condition: Callable[[], bool], child: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert child.poll() is None, f"the import ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


def _start_import(src: Path, store: Path, stdout: int | None = subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [EXECUTABLE, "import-graphrag", str(src), str(store), "--namespace", "big"],
        stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=clean_env(), text=True,
    )


def _reading_parquet(child: subprocess.Popen) -> bool:
    """pyarrow is loaded only once the import has begun (the CLI's Ctrl+C handling is on)."""
    try:
        return "libarrow" in Path(f"/proc/{child.pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
@pytest.mark.parametrize("moment", ["reading", "writing"])
@pytest.mark.parametrize("existing", [True, False], ids=["existing-store", "new-store"])
def test_ctrl_c_before_the_commit_writes_nothing(tmp_path: Path, big_index: Path, moment: str, existing: bool) -> None:
    store = tmp_path / "s.db"
    if existing:
        assert import_cli(write_index(tmp_path / "small"), store, "other").code == 0
    before = snapshot(tmp_path)
    journal = tmp_path / "s.db-journal"
    child = _start_import(big_index, store)
    try:
        if moment == "reading":
            _wait_for(lambda: _reading_parquet(child), child, "the import to start")
        else:  # SQLite's rollback journal exists from the first write to the commit
            _wait_for(journal.exists, child, "the import to write")
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert (child.returncode, stdout, stderr) == (130, "", "graphrag-tui: interrupted: nothing was written\n")
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_ctrl_c_after_the_commit_says_the_import_is_complete(tmp_path: Path, big_index: Path) -> None:
    store = tmp_path / "s.db"
    journal = tmp_path / "s.db-journal"
    # The child's stdout is a pipe that is already full: it blocks printing its report (after
    # the commit) until the test reads, so the interrupt surely comes after the commit.
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    filler = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            filler += os.write(write_end, b"x" * 4096)
    os.set_blocking(write_end, True)
    child = _start_import(big_index, store, stdout=write_end)
    os.close(write_end)
    try:
        _wait_for(journal.exists, child, "the import to write")
        _wait_for(lambda: not journal.exists(), child, "the commit")
        child.send_signal(signal.SIGINT)
        with os.fdopen(read_end, "rb") as pipe:
            output = pipe.read()
        stderr = child.stderr.read()
        child.wait(timeout=60)
    finally:
        child.kill()
    assert output[:filler] == b"x" * filler
    leaves = BIG_COMMUNITIES - BIG_COMMUNITIES // 10
    claims = leaves * BIG_CLAIMS_PER_LEAF
    assert output[filler:].decode() == (
        f"Imported GraphRAG 3.x index {big_index}\n"
        f"  into new store {store}, namespace 'big' (community text: summary)\n"
        f"Communities: {BIG_COMMUNITIES} (level 0: {BIG_COMMUNITIES // 10}, level 1: {leaves})\n"
        f"Leaves: {leaves}\n"
        f"Entities: {leaves}\n"
        f"Claims: {claims} (assigned to a leaf: {claims} [{claims} by subject entity, 0 by text unit], unassigned: 0)\n"
        f"Chunks: {leaves}\n"
        "Documents: 1\n"
        "Skipped dangling references: none\n"
    )
    assert (child.returncode, stderr) == (0, (
        "note: the interrupt came after the import was committed: namespace 'big' was imported in full\n"))
    assert rows(store, "SELECT count(*) FROM rag_claims WHERE namespace = 'big'") == [(claims,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_a_list_column_written_as_a_map_is_read_not_refused_by_its_size_estimate(tmp_path: Path) -> None:
    """Arrow cannot flatten a map: the estimate of the memory a table takes refused a file
    whose `entity_ids` is a map with pyarrow's own error (found by a probe). Its entries are
    not entity ids, and are skipped as such."""
    import pyarrow as pa

    src = write_index(tmp_path / "out")
    table = pq.read_table(src / "communities.parquet")
    entries = [[(entity, "x") for entity in ids] for ids in table["entity_ids"].to_pylist()]
    column = table.schema.get_field_index("entity_ids")
    mapped = table.set_column(column, "entity_ids", pa.array(entries, pa.map_(pa.string(), pa.string())))
    pq.write_table(mapped, src / "communities.parquet")
    report = import_graphrag(src, tmp_path / "store.db", "ns")
    assert report.communities_per_level == {0: 2, 1: 2, 2: 2}
    assert report.dangling == {"community -> entity references not found in entities": sum(map(len, entries)),
                               "claim -> text unit references not found in text units": 1}  # (as the fixture has)
