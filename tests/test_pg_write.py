"""Writing into PostgreSQL (issue 14): `copy` between stores and `import-graphrag` into
graphrag-ts's tables, run as the real CLI against the throwaway test cluster."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from graphrag_tui.store.pg_adapt import description_hash, shorten
from graphrag_tui.store.schema import COLUMNS, TABLES
from tests.cli_runner import Run, run_cli
from tests.conftest import PgDatabase
from tests.stores import build_store
from tests.test_postgres_store import AS_OWNER

SAMPLE = Path(__file__).resolve().parents[1] / "sample_db" / "sample.db"
CAROL = next(
    (folder / "shared" / "graphrag-sample-data" / "msgraphrag-v3-christmas-carol"
     for folder in Path(__file__).resolve().parents[1:4]
     if (folder / "shared" / "graphrag-sample-data").is_dir()),
    Path("/nonexistent"),
)


def cli(database: PgDatabase, *args: str) -> Run:
    """The CLI; no password of the cluster is ever in what it prints."""
    run = run_cli(*args, timeout=300)
    for password in database.passwords:
        assert password not in run.stdout + run.stderr
    return run


def sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        result = {}
        for table in TABLES:
            present = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            result[table] = conn.execute(f"SELECT {', '.join(present)} FROM {table} ORDER BY id").fetchall()
        return result
    finally:
        conn.close()


def pg_rows(database: PgDatabase, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with database.admin_connect() as conn:
        return conn.execute(sql, params or None).fetchall()


def pg_counts(database: PgDatabase) -> dict[str, int]:
    return {table: pg_rows(database, f"SELECT count(*) FROM {table}")[0][0] for table in TABLES}


def pg_tables(database: PgDatabase) -> list[str]:
    return [row[0] for row in pg_rows(
        database, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")]


def masked(database: PgDatabase) -> str:
    return f"postgresql://postgres:***@127.0.0.1:{database.cluster.port}/{database.name}"


# --- copy ----------------------------------------------------------------------------------


def test_round_trip_sqlite_postgres_sqlite_gives_identical_rows(pg_database: PgDatabase, tmp_path: Path) -> None:
    source = build_store(
        tmp_path / "extras.db",
        [{"id": "ns/1", "community_name": "Harbour", "summary_content": "Ships.", "members": '["Port", "Pier"]'},
         {"id": "ns/2", "community_name": "Pier", "summary_content": "Boats.", "level": 1, "parent_community_id": "ns/1",
          "members": '["Pier"]'}],
        entities=[{"id": "e1", "name": "Port", "description": "the port"}, {"id": "e2", "name": "Pier"}],
        documents=[{"id": "d1", "title": "Report", "content": "All of it."}],
        chunks=[{"id": "k1", "parent_id": "d1", "content": "Part of it."}],
        claims=[{"id": "c1", "subject_entity_id": "e1", "object_entity_id": "e2", "description": "owns the pier",
                 "source_parent_id": "d1", "source_chunk_id": "k1", "community_summary_id": "ns/2",
                 "source_text": "the port owns the pier", "type": "OWNERSHIP", "status": "TRUE",
                 "start_date": "1900-01-01", "end_date": None}],
    )
    for store in (SAMPLE, source):
        out = cli(pg_database, "copy", str(store), pg_database.admin_url, "--replace", "--json")
        assert out.code == 0, out.stderr
    back = tmp_path / "back.db"
    run = cli(pg_database, "copy", pg_database.url, str(back), "--json")
    assert run.code == 0, run.stderr
    assert run.json["source"] == f"postgresql://graphrag_reader:***@127.0.0.1:{pg_database.cluster.port}/{pg_database.name}"
    assert [ns["name"] for ns in run.json["namespaces"]] == ["harbor-city", "ns", "tea-history-zh"]
    assert run.json["adaptations"]["adapted"] == run.json["adaptations"]["skipped"] == 0
    both = {table: sorted(sqlite_rows(SAMPLE)[table] + [row[:len(COLUMNS[table])] for row in sqlite_rows(source)[table]])
            for table in TABLES if table != "rag_claims"}
    got = sqlite_rows(back)
    for table in both:
        assert got[table] == both[table], table
    extras_claim = sqlite_rows(source)["rag_claims"]
    assert [row for row in got["rag_claims"] if row[0] == "c1"] == extras_claim
    sample_claims = sqlite_rows(SAMPLE)["rag_claims"]
    assert sorted(row[:8] for row in got["rag_claims"] if row[0] != "c1") == sorted(sample_claims)
    assert len(got["rag_claims"]) == len(sample_claims) + 1


def test_copy_text_report_counts_and_json(pg_database: PgDatabase, tmp_path: Path) -> None:
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city")
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"Copied 1 namespace(s) from {SAMPLE} into new store {masked(pg_database)}",
        "  'harbor-city': 7 documents, 61 chunks, 49 entities, 28 communities, 236 claims",
        "Rows written: 381",
        "Adaptations: none",
    ]
    assert pg_counts(pg_database) == {"rag_parents": 7, "rag_children": 61, "rag_entities": 49,
                                      "rag_community_summaries": 28, "rag_claims": 236}
    # the hash graphrag-ts would compute, on every claim
    for description, stored in pg_rows(pg_database, "SELECT description, description_hash FROM rag_claims"):
        assert stored == description_hash(description)
    out = tmp_path / "one.db"
    run = cli(pg_database, "copy", pg_database.url, str(out), "--json")
    assert run.code == 0, run.stderr
    assert run.json["namespaces"] == [{"name": "harbor-city", "replaced_rows": 0, "rows": {
        "documents": 7, "chunks": 61, "entities": 49, "communities": 28, "claims": 236}}]
    assert run.json["new_store"] is True and run.json["rows"] == 381


def test_an_existing_namespace_is_refused_without_replace_and_nothing_is_written(
        pg_database: PgDatabase, tmp_path: Path) -> None:
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    before = pg_counts(pg_database)
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url)  # both namespaces; one exists
    assert run.code == 2 and run.stdout == ""
    assert run.stderr == (f"graphrag-tui: error: copy: {masked(pg_database)} already has namespace(s) 'harbor-city'; "
                          "--replace replaces them; nothing was written\n")
    assert pg_counts(pg_database) == before  # tea-history-zh was not written either
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--replace")
    assert run.code == 0, run.stderr
    assert "  'harbor-city': 7 documents, 61 chunks, 49 entities, 28 communities, 236 claims " \
           "(replaced its previous 381 rows)" in run.stdout.splitlines()
    assert sum(pg_counts(pg_database).values()) == 669
    # into SQLite: the same refusal, and the file is left as it was
    target = tmp_path / "t.db"
    assert cli(pg_database, "copy", str(SAMPLE), str(target), "--namespace", "tea-history-zh").code == 0
    data = target.read_bytes()
    run = cli(pg_database, "copy", pg_database.url, str(target))
    assert run.code == 2
    assert run.stderr == (f"graphrag-tui: error: copy: {target} already has namespace(s) 'tea-history-zh'; "
                          "--replace replaces them; nothing was written\n")
    assert target.read_bytes() == data
    # a new file that a refused copy would have created is not left behind
    run = cli(pg_database, "copy", pg_database.url, str(tmp_path / "new.db"), "--namespace", "nope")
    assert run.code == 2 and "namespace 'nope' is not in" in run.stderr
    assert not (tmp_path / "new.db").exists()


def hostile_store(path: Path) -> Path:
    """Rows SQLite accepts and graphrag-ts's constraints do not."""
    long_name = "Lighthouse keeper " * 15  # 270 characters
    return build_store(
        path,
        [{"id": "ns/1", "community_name": None, "summary_content": "Root.", "members": None},
         {"id": "ns/2", "community_name": "Pier", "summary_content": "Leaf.", "level": 1,
          "parent_community_id": "ns/gone", "members": '["Pier"]'}],
        entities=[{"id": "e1", "name": "Port"}, {"id": "e2", "name": long_name}],
        documents=[{"id": "d1", "title": "Report", "content": None}],
        chunks=[{"id": "k1", "parent_id": "d1", "content": "Part."}, {"id": "k2", "parent_id": "d-gone", "content": "x"}],
        claims=[
            {"id": "c1", "subject_entity_id": "e1", "description": "Owns the pier", "community_summary_id": "ns/2"},
            {"id": "c2", "subject_entity_id": "e1", "description": "  owns the PIER ", "community_summary_id": "ns/2"},
            {"id": "c3", "subject_entity_id": "e-gone", "description": "floats", "community_summary_id": "ns/2"},
            {"id": "c4", "subject_entity_id": "e2", "object_entity_id": "e-gone", "description": "sinks",
             "source_chunk_id": "k2", "community_summary_id": "ns/2"},
        ],
    )


def test_adaptations_and_skips_are_reported_and_strict_refuses(pg_database: PgDatabase, tmp_path: Path) -> None:
    store = hostile_store(tmp_path / "hostile.db")
    long_name = "Lighthouse keeper " * 15
    run = cli(pg_database, "copy", str(store), pg_database.admin_url, "--strict")
    assert run.code == 2 and run.stdout == ""
    assert run.stderr == ("graphrag-tui: error: --strict: rag_parents d1: content NULL became ''; nothing was "
                          "written (without --strict the row is adapted or skipped and reported)\n")
    assert pg_tables(pg_database) == []  # even graphrag-ts's tables were rolled back

    run = cli(pg_database, "copy", str(store), pg_database.admin_url)
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"Copied 1 namespace(s) from {store} into new store {masked(pg_database)}",
        "  'ns': 1 documents, 1 chunks, 2 entities, 2 communities, 2 claims",
        "Rows written: 8",
        "Adaptations: 7 value(s) adapted, 3 row(s) skipped",
        "  rag_parents d1: content NULL became ''",
        "  rag_children k2: skipped: its parent_id d-gone is not in rag_parents",
        f"  rag_entities e2: name of 270 characters shortened to 200: {shorten(long_name, 200)!r}",
        "  rag_community_summaries ns/1: community_name NULL became ''",
        "  rag_community_summaries ns/1: members NULL became the empty list",
        "  rag_community_summaries ns/2: parent_community_id ns/gone is not in rag_community_summaries: became NULL",
        "  rag_claims c2: skipped: same (namespace, subject_entity_id, description_hash) as c1, which is kept",
        "  rag_claims c3: skipped: its subject_entity_id e-gone is not in rag_entities",
        "  rag_claims c4: object_entity_id e-gone is not in rag_entities: became NULL",
        "  rag_claims c4: source_chunk_id k2 is not in rag_children: became NULL",
    ]
    assert pg_rows(pg_database, "SELECT id, object_entity_id, source_chunk_id, description FROM rag_claims ORDER BY id") \
        == [("c1", None, None, "Owns the pier"), ("c4", None, None, "sinks")]
    assert pg_rows(pg_database, "SELECT name FROM rag_entities WHERE id = 'e2'") == [(shorten(long_name, 200),)]
    assert pg_rows(pg_database, "SELECT id, parent_community_id, members FROM rag_community_summaries ORDER BY id") \
        == [("ns/1", None, []), ("ns/2", None, ["Pier"])]


def test_bad_destinations_are_one_line(pg_database: PgDatabase, tmp_path: Path) -> None:
    wrong = pg_database.cluster.url(pg_database.name, role="postgres", password="wrong-secret")
    run = run_cli("copy", str(SAMPLE), wrong)
    assert run.code == 2 and "wrong-secret" not in run.stdout + run.stderr
    assert run.stderr.startswith(f"graphrag-tui: error: Cannot open store {masked(pg_database)}: the server refused the login")
    assert len(run.stderr.splitlines()) == 1
    # the reader may not write: refused, nothing written, one line
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.url)
    assert run.code == 2 and len(run.stderr.splitlines()) == 1
    assert "nothing was written" in run.stderr and "permission denied" in run.stderr
    assert pg_tables(pg_database) == []
    run = cli(pg_database, "copy", str(SAMPLE), str(SAMPLE))
    assert run.code == 2
    assert run.stderr == f"graphrag-tui: error: copy: the source and the destination are the same store: {SAMPLE}\n"


# --- import-graphrag into PostgreSQL ------------------------------------------------------------


@pytest.mark.skipif(not CAROL.is_dir(), reason="shared GraphRAG sample data not present")
def test_import_the_christmas_carol_into_postgres(graphrag_ts_database: PgDatabase) -> None:
    """The real output has 5 entity names longer than VARCHAR(200) (quotes taken as claim
    subjects) and one pair of claims about one subject with the same (empty) description:
    the names are shortened, the second claim of the pair skipped."""
    database = graphrag_ts_database
    run = cli(database, "import-graphrag", str(CAROL), database.admin_url, "--namespace", "carol")
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[1] == f"  into store {masked(database)}, namespace 'carol' (community text: summary)"
    start = lines.index("Adaptations: 5 value(s) adapted, 1 row(s) skipped")
    changes = lines[start + 1:]
    assert len(changes) == 6
    shortened = [re.fullmatch(r"  rag_entities (carol/claim-entity-\d+): name of (\d+) characters shortened to 200: .*"
                              r" ~[0-9a-f]{8}['\"]", line) for line in changes[:5]]
    assert all(shortened)
    assert sorted(int(m.group(2)) for m in shortened if m) == [225, 227, 233, 234, 243]
    assert changes[5] == ("  rag_claims carol/70: skipped: same (namespace, subject_entity_id, description_hash) "
                          "as carol/66, which is kept")
    assert pg_counts(database) == {"rag_parents": 1, "rag_children": 42, "rag_entities": 599,
                                   "rag_community_summaries": 122, "rag_claims": 405}
    assert pg_rows(database, "SELECT max(length(name)), count(*) FILTER (WHERE name ~ ' ~[0-9a-f]{8}$') "
                             "FROM rag_entities") == [(200, 5)]
    assert pg_rows(database, "SELECT description, subject_entity_id FROM rag_claims WHERE id = 'carol/66'") \
        == [("", "carol/claim-entity-7")]
    # again: the namespace is replaced, as on SQLite
    run = cli(database, "import-graphrag", str(CAROL), database.admin_url, "--namespace", "carol")
    assert run.code == 0, run.stderr
    assert "  replaced the namespace's previous 1169 rows" in run.stdout.splitlines()
    assert sum(pg_counts(database).values()) == 1169
    # --strict: refused, the namespace left as it was
    run = cli(database, "import-graphrag", str(CAROL), database.admin_url, "--namespace", "carol2", "--strict")
    assert run.code == 2
    assert re.fullmatch(r"graphrag-tui: error: --strict: rag_entities carol2/claim-entity-\d+: name of \d+ characters "
                        r"shortened to 200: .*; nothing was written \(without --strict the row is adapted or "
                        r"skipped and reported\)\n", run.stderr)
    assert sum(pg_counts(database).values()) == 1169


def test_postgres_to_postgres_and_sqlite_to_sqlite(postgres_cluster: Any, pg_database: PgDatabase,
                                                    tmp_path: Path) -> None:
    from tests.conftest import _fresh_database

    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url).code == 0
    other = _fresh_database(postgres_cluster)
    try:
        run = cli(other, "copy", pg_database.url, other.admin_url, "--namespace", "tea-history-zh", "--json")
        assert run.code == 0, run.stderr
        assert run.json["rows"] == 288 and run.json["adaptations"]["adapted"] == 0
        columns = "id, namespace, subject_entity_id, object_entity_id, description, description_hash, " \
                  "source_parent_id, source_chunk_id, community_summary_id"
        query = f"SELECT {columns} FROM rag_claims WHERE namespace = 'tea-history-zh' ORDER BY id"
        assert pg_rows(other, query) == pg_rows(pg_database, query)
        query = "SELECT id, namespace, community_name, summary_content, level, parent_community_id, members " \
                "FROM rag_community_summaries WHERE namespace = 'tea-history-zh' ORDER BY id"
        assert pg_rows(other, query) == pg_rows(pg_database, query)
    finally:
        postgres_cluster.drop_database(other.name)
    copied = tmp_path / "copy.db"
    run = run_cli("copy", str(SAMPLE), str(copied))
    assert run.code == 0, run.stderr
    assert sqlite_rows(copied) == sqlite_rows(SAMPLE)


def test_a_database_with_part_of_graphrag_ts_tables_is_refused(pg_database: PgDatabase) -> None:
    with pg_database.admin_connect() as conn:
        conn.execute("CREATE TABLE rag_parents (id TEXT PRIMARY KEY, namespace TEXT NOT NULL, title TEXT, content TEXT)")
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url)
    assert run.code == 2
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: it has some of graphrag-ts's "
                          "tables but not rag_children, rag_entities, rag_community_summaries, rag_claims; "
                          "nothing was written\n")
    with pg_database.admin_connect() as conn:
        conn.execute("DROP TABLE rag_parents")
        for statement in ("CREATE TABLE rag_parents (id TEXT PRIMARY KEY, namespace TEXT, title TEXT, content TEXT)",
                          "CREATE TABLE rag_children (id TEXT PRIMARY KEY, namespace TEXT, parent_id TEXT, content TEXT)",
                          "CREATE TABLE rag_entities (id TEXT PRIMARY KEY, namespace TEXT, name TEXT, description TEXT)",
                          "CREATE TABLE rag_community_summaries (id TEXT PRIMARY KEY, namespace TEXT, "
                          "community_name TEXT, summary_content TEXT)",
                          "CREATE TABLE rag_claims (id TEXT PRIMARY KEY, namespace TEXT, subject_entity_id TEXT, "
                          "object_entity_id TEXT, description TEXT, description_hash TEXT, source_parent_id TEXT, "
                          "source_chunk_id TEXT, community_summary_id TEXT)"):
            conn.execute(statement)
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url)
    assert run.code == 2
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: table rag_community_summaries "
                          "has no column(s) level, parent_community_id, members (graphrag-ts's migrations are not all "
                          "applied); nothing was written\n")


def test_bad_sqlite_sources_and_destinations_are_one_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a store")
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    cases = [
        # (opening a FIFO to read its header waited for a writer forever: found by a probe)
        (("copy", str(SAMPLE), str(fifo)), f"copy: the destination is not a regular file: {fifo}"),
        (("copy", str(tmp_path / "missing.db"), str(tmp_path / "out.db")),
         f"Store not found: {tmp_path / 'missing.db'}"),
        (("copy", str(SAMPLE), str(tmp_path / "no" / "out.db")),
         f"copy: the destination's folder does not exist: {tmp_path / 'no'}"),
        (("copy", str(SAMPLE), str(tmp_path)), f"copy: the destination is a folder: {tmp_path}"),
        (("copy", str(SAMPLE), str(text)), f"copy: the destination is not a SQLite store: {text}"),
        (("copy", str(SAMPLE), str(tmp_path / "out.db"), "--namespace", "nope"),
         f"copy: namespace 'nope' is not in {SAMPLE} (it has: 'harbor-city', 'tea-history-zh')"),
    ]
    for args, message in cases:
        run = run_cli(*args)
        assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "pipe.db"]
    assert text.read_text() == "not a store"


def test_an_id_that_comes_twice_in_a_source_without_keys_is_not_blamed_on_another_namespace(
        sample_pg: PgDatabase, tmp_path: Path) -> None:
    with sample_pg.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_claims DROP CONSTRAINT rag_claims_pkey")
        conn.execute("DROP INDEX rag_claims_namespace_subject_entity_id_description_hash_key")
        conn.execute("INSERT INTO rag_claims SELECT * FROM rag_claims WHERE id = (SELECT min(id) FROM rag_claims)")
    out = tmp_path / "copy.db"
    run = cli(sample_pg, "copy", sample_pg.url, str(out), "--namespace", "harbor-city")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot import into {out}: UNIQUE constraint failed: rag_claims.id "
                          "(an ID of namespace 'harbor-city' is already used by another namespace, or comes twice in "
                          "its rows)\n")
    assert not out.exists()


#: Destinations whose rows a write would not simply put or delete: (setup SQL, the refusal).
_QUIET = "CREATE FUNCTION quiet() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END'"
_WRITES_ELSEWHERE = {
    "trigger": ((_QUIET, "CREATE TRIGGER quiet BEFORE INSERT ON rag_claims FOR EACH ROW EXECUTE FUNCTION quiet()"),
                "rag_claims has triggers"),
    "rule": (("CREATE RULE quiet AS ON INSERT TO rag_entities DO INSTEAD NOTHING",), "rag_entities has rules"),
    "view": (("ALTER TABLE rag_parents RENAME TO parents_elsewhere",
              "CREATE VIEW rag_parents AS SELECT * FROM parents_elsewhere"), "rag_parents is not a table"),
    "inherited": (("CREATE TABLE claims_archive () INHERITS (rag_claims)", _QUIET,
                   "CREATE TRIGGER quiet BEFORE DELETE ON claims_archive FOR EACH ROW EXECUTE FUNCTION quiet()"),
                  "claims_archive has triggers"),
    # (a partition's copy of its parent's trigger; before PostgreSQL 15 marked internal, as foreign keys' are)
    "partition": ((_QUIET, "CREATE TABLE claims_by_namespace (LIKE rag_claims) PARTITION BY LIST (namespace)",
                   "CREATE TRIGGER quiet BEFORE INSERT ON claims_by_namespace FOR EACH ROW EXECUTE FUNCTION quiet()",
                   "ALTER TABLE claims_by_namespace ATTACH PARTITION rag_claims DEFAULT"), "rag_claims has triggers"),
    "row_security": (("ALTER TABLE rag_children ENABLE ROW LEVEL SECURITY",
                      "CREATE POLICY others ON rag_children USING (namespace <> 'harbor-city') WITH CHECK (true)"),
                     "rag_children has row-level security"),
}


def test_the_triggers_of_postgresql_s_own_constraints_are_not_refused(pg_database: PgDatabase) -> None:
    """A foreign key's triggers (graphrag-ts's tables have them) and a deferred unique
    check's are PostgreSQL's own, internal, running its own functions."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    with pg_database.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_entities ADD CONSTRAINT entities_once UNIQUE (id, namespace) DEFERRABLE "
                     "INITIALLY DEFERRED")
        (internal,) = conn.execute("SELECT count(*) FROM pg_trigger t JOIN pg_proc f ON f.oid = t.tgfoid "
                                   "WHERE t.tgrelid = 'rag_entities'::regclass AND f.proname = 'unique_key_recheck'"
                                   ).fetchone()
    before = pg_counts(pg_database)
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city", "--replace")
    assert (internal, run.code, pg_counts(pg_database)) == (1, 0, before), run.stderr


def _copy_replacing_as(pg_database: PgDatabase, name: str, password: str, grants: list[str]) -> tuple[Any, str]:
    """`copy` of the sample's harbor-city, replacing it, as a role of its own made with
    `grants` (`{role}` in each), then dropped; the run and the destination as it is said."""
    role = f"{name}_{pg_database.name}"
    with pg_database.admin_connect() as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        for grant in grants:
            conn.execute(grant.format(role=role))
    url = pg_database.cluster.url(pg_database.name, role=role, password=password)
    try:
        run = cli(pg_database, "copy", str(SAMPLE), url, "--namespace", "harbor-city", "--replace")
    finally:
        with pg_database.admin_connect() as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
    return run, f"postgresql://{role}:***@127.0.0.1:{pg_database.cluster.port}/{pg_database.name}"


@pytest.mark.parametrize("kind", list(_WRITES_ELSEWHERE))
def test_a_destination_that_would_change_what_is_written_is_refused_untouched(
        pg_database: PgDatabase, kind: str) -> None:
    """A trigger that returned NULL, or a DO INSTEAD NOTHING rule, dropped every row after
    `--replace` had deleted the namespace; a view wrote elsewhere; row-level security left
    the rows it hid beside the new ones."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    setup, problem = _WRITES_ELSEWHERE[kind]
    with pg_database.admin_connect() as conn:
        for statement in setup:
            conn.execute(statement)
    before = pg_counts(pg_database)
    # (superusers pass by row-level security: it applies to a role of its own)
    run, location = _copy_replacing_as(pg_database, "writer", "w-secret-1",
                                       ["GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}"])
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {location}: {problem}, which would change what is "
                          "written or deleted (write into another database); nothing was written\n")
    assert "w-secret-1" not in run.stderr
    assert pg_counts(pg_database) == before


def test_a_destination_that_compares_namespaces_without_case_is_refused_untouched(pg_database: PgDatabase) -> None:
    """With a case-insensitive (nondeterministic) collation, copying `harbor-city` without
    --replace deleted `HARBOR-CITY`, someone else's namespace (found by a probe)."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "tea-history-zh").code == 0
    with pg_database.admin_connect() as conn:
        conn.execute("CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
        for table in TABLES:
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN namespace TYPE text COLLATE ci")
            conn.execute(f"UPDATE {table} SET namespace = 'HARBOR-CITY'")
    before = pg_counts(pg_database)
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: rag_children.namespace "
                          "compares text with a nondeterministic collation; graphrag-tui compares ids and names by "
                          "code point; nothing was written\n")
    assert pg_counts(pg_database) == before
    assert pg_rows(pg_database, "SELECT DISTINCT namespace FROM rag_claims") == [("HARBOR-CITY",)]


def test_a_destination_whose_columns_would_not_read_back_is_refused_untouched(pg_database: PgDatabase) -> None:
    """char(n) pads what is written with spaces (a store then refused on read, where each
    namespace was listed twice): a column the store would not read is refused before
    anything is deleted."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    with pg_database.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_parents ALTER COLUMN namespace TYPE char(40)")
    before = pg_counts(pg_database)
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city", "--replace")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: rag_parents.namespace is "
                          "character, not text; nothing was written\n")
    assert pg_counts(pg_database) == before


_LOG = ("CREATE TABLE evil_log (n int)",
        "CREATE FUNCTION logit() RETURNS boolean LANGUAGE plpgsql AS 'BEGIN INSERT INTO evil_log VALUES (1); "
        "RETURN true; END'",
        "CREATE FUNCTION logtext(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN $1; END'")
#: Destinations whose writes would run the database's own code: (setup SQL, the refusal).
_RUNS_OWN_CODE = {
    "check": (("ALTER TABLE rag_claims ADD CONSTRAINT c CHECK (logit())",),
              "rag_claims has a CHECK constraint that runs the database's own code as rows are written"),
    "check-builtin": (("ALTER TABLE rag_entities ADD CONSTRAINT c CHECK (query_to_xml('SELECT 1', true, true, '') "
                       "IS NOT NULL)",),
                      "rag_entities has a CHECK constraint that runs the database's own code as rows are written"),
    "default": (("ALTER TABLE rag_parents ADD COLUMN audit boolean DEFAULT logit()",),
                "rag_parents has a column default that runs the database's own code as rows are written"),
    "index": (("CREATE INDEX logged ON rag_children (logtext(content))",),
              "rag_children has an index that runs the database's own code as rows are written"),
    "domain": (("CREATE DOMAIN logged AS text CHECK (logtext(VALUE) IS NOT NULL)",
                "ALTER TABLE rag_community_summaries ALTER COLUMN community_name TYPE logged"),
               "rag_community_summaries has a column of a domain type that runs the database's own code as rows are "
               "written"),
    # an index scan or insert calls its operator class's support function (a superuser made it once)
    "operator-class": ((*AS_OWNER, "CREATE FUNCTION logcmp(text, text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS "
                        "'BEGIN RETURN bttextcmp($1, $2); END'", "RESET ROLE",
                        "CREATE OPERATOR CLASS logged_ops FOR TYPE text USING btree AS OPERATOR 1 pg_catalog.<, "
                        "OPERATOR 2 pg_catalog.<=, OPERATOR 3 pg_catalog.=, OPERATOR 4 pg_catalog.>=, "
                        "OPERATOR 5 pg_catalog.>, FUNCTION 1 logcmp(text, text)",
                        "CREATE INDEX logged ON rag_claims (namespace logged_ops)"),
                       "rag_claims has an index or a partition key that runs the database's own code as rows are "
                       "written"),
    # each row is routed by the key's expression (an IMMUTABLE function may call any; found by a re-probe)
    "partition-key": (("CREATE FUNCTION part_key(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS "
                       "'BEGIN RETURN logtext($1); END'",
                       "ALTER TABLE rag_claims RENAME TO old_claims", "ALTER TABLE old_claims DROP CONSTRAINT rag_claims_pkey",
                       "CREATE TABLE rag_claims (LIKE old_claims INCLUDING DEFAULTS) PARTITION BY LIST (part_key(namespace))",
                       "CREATE TABLE rag_claims_all PARTITION OF rag_claims DEFAULT",
                       "INSERT INTO rag_claims SELECT * FROM old_claims", "DROP TABLE old_claims"),
                      "rag_claims has a partition key that runs the database's own code as rows are written"),
    # planning a statement evaluates a statistics expression's immutable calls with constant
    # arguments (found by a probe, reading)
    "statistics": ((*AS_OWNER, "CREATE FUNCTION logint(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS "
                    "'BEGIN PERFORM logit(); RETURN $1; END'", "RESET ROLE",
                    "CREATE STATISTICS logged ON (length(id) + logint(1)) FROM rag_children"),
                   "rag_children has an index, a CHECK constraint, statistics or a partition key that runs the "
                   "database's own code as rows are written"),
    # a cast to a domain runs its CHECK, and prints as no call (found by a re-probe)
    "default-domain-cast": (("CREATE DOMAIN noted AS text CHECK (logtext(VALUE) IS NOT NULL)",
                             "ALTER TABLE rag_entities ADD COLUMN note text DEFAULT CAST('x' AS noted)"),
                            "rag_entities has a column default that runs the database's own code as rows are written"),
    # a column written from text is cast to its type: a type's owner makes its casts
    "foreign-type": (("CREATE TYPE claim_status AS (v text)",
                      "CREATE FUNCTION status_of(text) RETURNS claim_status LANGUAGE plpgsql AS "
                      "'BEGIN PERFORM logit(); RETURN ROW($1); END'",
                      "CREATE CAST (text AS claim_status) WITH FUNCTION status_of(text) AS ASSIGNMENT",
                      "ALTER TABLE rag_claims ADD COLUMN status claim_status"),
                     "rag_claims.status is of a type of the database's own, whose casts would run as rows are written"),
    # each DELETE checks a key into the tables, whatever its ON DELETE: a cast of the referencing
    # column ran (found by a re-probe)
    "foreign-key": (("CREATE TYPE entity_ref AS (v text)",
                     "CREATE FUNCTION ref_text(entity_ref) RETURNS text LANGUAGE plpgsql AS "
                     "'BEGIN PERFORM logit(); RETURN ($1).v; END'",
                     "CREATE CAST (entity_ref AS text) WITH FUNCTION ref_text(entity_ref) AS IMPLICIT",
                     "CREATE TABLE watcher (ref entity_ref REFERENCES rag_community_summaries (id))"),
                    "watcher has a foreign key into the store's tables whose check runs the database's own code as "
                    "rows are deleted"),
    "cascade": (("CREATE TABLE notes (entity_id text REFERENCES rag_entities (id) ON DELETE CASCADE)",
                 "CREATE FUNCTION quiet() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN INSERT INTO evil_log VALUES (2); "
                 "RETURN OLD; END'",
                 "CREATE TRIGGER quiet BEFORE DELETE ON notes FOR EACH ROW EXECUTE FUNCTION quiet()"),
                "notes has triggers, which would change what is written or deleted"),
}


@pytest.mark.parametrize("kind", list(_RUNS_OWN_CODE))
def test_a_destination_whose_writes_would_run_its_own_code_is_refused_untouched(
        pg_database: PgDatabase, kind: str) -> None:
    """A CHECK, a default, an index expression, a domain's CHECK, or a trigger on a table a
    DELETE cascades into, ran the database's own code as the writing role (found by a
    re-probe)."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    setup, problem = _RUNS_OWN_CODE[kind]
    with pg_database.admin_connect() as conn:
        for statement in (*_LOG, *setup):
            conn.execute(statement)
    before, logged = pg_counts(pg_database), pg_rows(pg_database, "SELECT count(*) FROM evil_log")
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city", "--replace")
    # (read first: counting the rows plans reads, which a statistics expression's call logs)
    assert pg_rows(pg_database, "SELECT count(*) FROM evil_log") == logged  # (the setup's own checks ran it)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: {problem} (write into "
                          "another database); nothing was written\n")
    assert pg_counts(pg_database) == before


@pytest.mark.parametrize("search_path", ["pg_temp, public", "pg_temp"])
def test_a_destination_whose_search_path_writes_into_the_temporary_schema_is_refused(
        pg_database: PgDatabase, search_path: str) -> None:
    """With `pg_temp` first in the search_path, `copy` made graphrag-ts's tables temporary,
    reported the rows written, and the session's end dropped them all (found by a probe)."""
    with pg_database.admin_connect() as conn:
        conn.execute(f"ALTER DATABASE {pg_database.name} SET search_path = {search_path}")
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: its search_path names no "
                          "schema to write in but the session's temporary one (pg_temp), which is dropped when the copy "
                          "ends; nothing was written\n")
    assert pg_rows(pg_database, "SELECT count(*) FROM pg_class WHERE relname LIKE 'rag%%'") == [(0,)]


def test_a_destination_whose_schema_overloads_a_function_of_postgresql_is_refused_untouched(
        pg_database: PgDatabase) -> None:
    """A call finds the overload whose argument types fit best, wherever it is: the schema's
    `||(varchar, varchar)` ran in place of PostgreSQL's, as the writing role (found by a
    re-probe)."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    with pg_database.admin_connect() as conn:
        for statement in (*_LOG, *AS_OWNER, "CREATE FUNCTION cat(varchar, varchar) RETURNS text LANGUAGE sql "
                                  "AS 'SELECT CASE WHEN logit() THEN $1::text END'",
                          "CREATE OPERATOR || (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = cat)"):
            conn.execute(statement)
    before = pg_counts(pg_database)
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city", "--replace")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {masked(pg_database)}: its schema has a function or "
                          "an operator of its own named '||', as one of PostgreSQL's, which the writes would run in its "
                          "place (write into another database); nothing was written\n")
    assert pg_counts(pg_database) == before
    assert pg_rows(pg_database, "SELECT count(*) FROM evil_log") == [(0,)]


def test_an_overload_made_in_the_schema_while_a_copy_writes_never_runs(pg_database: PgDatabase) -> None:
    """The checks refuse a schema with overloads of PostgreSQL's names before anything is
    written; one its owner made afterwards, while the write went on, was what the writing
    session's `first_value(id)` found (its search_path was the schema; an exact match beats
    PostgreSQL's `first_value(anyelement)`). Once the checks pass, the session finds only
    `pg_catalog`'s, and names the tables with their schema."""
    from graphrag_tui.store import CommunityStore
    from graphrag_tui.store.location import parse_location
    from graphrag_tui.store.pg_adapt import Adaptations
    from graphrag_tui.store.pg_write import PgWriter

    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    before = pg_counts(pg_database)
    with pg_database.admin_connect() as conn:
        conn.execute(_LOG[0])
        conn.execute(_LOG[1])
    location = parse_location(pg_database.admin_url)
    with CommunityStore.open(SAMPLE) as source, PgWriter.begin(location, Adaptations()) as writer:  # type: ignore[arg-type]
        with pg_database.admin_connect() as conn:
            for statement in (*AS_OWNER, "CREATE FUNCTION pick(text, text) RETURNS text LANGUAGE sql "
                              "AS 'SELECT CASE WHEN logit() THEN coalesce($1, $2) END'",
                              "CREATE AGGREGATE first_value(text) (SFUNC = pick, STYPE = text)"):
                conn.execute(statement)
        assert writer.namespaces() == {"harbor-city"}
        assert writer.delete_namespace("harbor-city") == sum(before.values())
        for table in TABLES:
            writer.write_table(table, "harbor-city", source.iter_table_rows(table, "harbor-city"))
        writer.commit()
    assert pg_counts(pg_database) == before
    assert pg_rows(pg_database, "SELECT count(*) FROM evil_log") == [(0,)]


@pytest.mark.parametrize("into", ["existing-store", "new-store"])
def test_operators_postgresql_has_only_as_polymorphic_or_domain_ones_never_run_as_the_writer(
        pg_database: PgDatabase, into: str) -> None:
    """A writer's checks ran in its schema's search path, where the owner's `||(oid[], oid[])`
    and `=(sql_identifier, sql_identifier)` fit better than PostgreSQL's polymorphic `||` and
    its `=` for the domain's base type: they ran as the writing role, read what only it could
    and wrote it into the owner's table, and the copy reported nothing (found by a probe;
    `||` on every write into an existing store, `=` before the tables were made too). A
    writing session finds only `pg_catalog`'s, but for the DDL that makes the tables."""
    if into == "existing-store":
        assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    with pg_database.admin_connect() as conn:
        for statement in (*_LOG[:2], *AS_OWNER, "CREATE TABLE owner_notes (n int)",
                          "CREATE FUNCTION oidcat(oid[], oid[]) RETURNS oid[] LANGUAGE sql "
                          "AS 'SELECT CASE WHEN logit() THEN pg_catalog.array_cat($1, $2) END'",
                          "CREATE OPERATOR || (LEFTARG = oid[], RIGHTARG = oid[], FUNCTION = oidcat)",
                          "CREATE FUNCTION ideq(information_schema.sql_identifier, information_schema.sql_identifier) "
                          "RETURNS boolean LANGUAGE sql AS 'SELECT logit() AND CAST($1 AS text) = CAST($2 AS text)'",
                          "CREATE OPERATOR = (LEFTARG = information_schema.sql_identifier, "
                          "RIGHTARG = information_schema.sql_identifier, FUNCTION = ideq)"):
            conn.execute(statement)
    before = pg_counts(pg_database) if into == "existing-store" else None
    run = cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city", "--replace")
    assert run.code == 0, run.stderr
    assert pg_rows(pg_database, "SELECT count(*) FROM evil_log") == [(0,)]
    if before is not None:
        assert pg_counts(pg_database) == before
    assert pg_counts(pg_database)["rag_community_summaries"] > 3


def test_the_tables_a_write_reaches_are_locked_against_changes_before_they_are_checked(
        pg_database: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks passed, then the write waited for its owner's lock while he added a trigger,
    which ran as the writer; and while it wrote he made a table inheriting from a store table,
    whose index's predicate ran as the writer (found by a probe). The write locks the tables
    first (SHARE UPDATE EXCLUSIVE), waiting WRITE_LOCK_WAIT_S at most."""
    from graphrag_tui.store import CommunityStore, pg_write
    from graphrag_tui.store.location import parse_location
    from graphrag_tui.store.pg_adapt import Adaptations
    from graphrag_tui.store.pg_write import PgWriter
    from graphrag_tui.store.validation import StoreError
    from tests.conftest import import_psycopg

    psycopg = import_psycopg()
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    before = pg_counts(pg_database)
    location = parse_location(pg_database.admin_url)
    monkeypatch.setattr(pg_write, "WRITE_LOCK_WAIT_S", 1)
    with psycopg.connect(pg_database.cluster.admin_conninfo(pg_database.name)) as owner:  # (one transaction)
        owner.execute("LOCK TABLE rag_claims IN SHARE MODE")
        with pytest.raises(StoreError) as refused:
            PgWriter.begin(location, Adaptations())  # type: ignore[arg-type]
    assert str(refused.value) == (f"cannot write into {masked(pg_database)}: another session holds a lock on its "
                                  "tables (a VACUUM, an ANALYZE, an index being built or a change of a table; waited "
                                  "1 s): try again later; nothing was written")
    with CommunityStore.open(SAMPLE) as source, PgWriter.begin(location, Adaptations()) as writer:  # type: ignore[arg-type]
        with pg_database.admin_connect() as conn:
            conn.execute("SET lock_timeout = '200ms'")
            for change in (_QUIET, "CREATE TRIGGER quiet BEFORE INSERT ON rag_parents FOR EACH ROW EXECUTE FUNCTION quiet()",
                           "CREATE TABLE parents_more () INHERITS (rag_parents)",
                           "CREATE INDEX claims_partial ON rag_claims (id) WHERE id <> ''",
                           "CREATE STATISTICS entities_stats ON namespace, name FROM rag_entities"):
                if change == _QUIET:
                    conn.execute(change)
                    continue
                with pytest.raises(psycopg.errors.LockNotAvailable):
                    conn.execute(change)
        writer.delete_namespace("harbor-city")
        for table in TABLES:
            writer.write_table(table, "harbor-city", source.iter_table_rows(table, "harbor-city"))
        writer.commit()
    assert pg_counts(pg_database) == before


def test_a_role_that_may_not_lock_the_tables_against_changes_is_refused_untouched(pg_database: PgDatabase) -> None:
    """A role without DELETE on a table could lock it in ROW EXCLUSIVE mode alone, which let
    the owner add statistics whose expression then ran as the writer (found by a probe)."""
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    before = pg_counts(pg_database)
    run, location = _copy_replacing_as(pg_database, "inserter", "i-secret-1", [
        "GRANT SELECT, INSERT, DELETE ON ALL TABLES IN SCHEMA public TO {role}", "REVOKE DELETE ON rag_parents FROM {role}"])
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: cannot write into {location}: the role may not lock its tables "
                          "against changes while it writes (it needs DELETE on graphrag-ts's tables); nothing was "
                          "written\n")
    assert pg_counts(pg_database) == before


@pytest.mark.parametrize("locked", ["rag_claims", "rag_community_summaries"])  # (the second: as the store opens)
def test_ctrl_c_ends_a_copy_whose_read_waits_for_a_lock(pg_database: PgDatabase, tmp_path: Path, locked: str) -> None:
    """A copy from PostgreSQL whose read, or whose store's opening, waited for another
    session's lock went on for a minute after Ctrl+C (found by two probes)."""
    import signal
    import subprocess
    import time

    from tests.cli_runner import EXECUTABLE, clean_env
    from tests.conftest import import_psycopg

    psycopg = import_psycopg()
    assert cli(pg_database, "copy", str(SAMPLE), pg_database.admin_url, "--namespace", "harbor-city").code == 0
    out = tmp_path / "out.db"
    with psycopg.connect(pg_database.cluster.admin_conninfo(pg_database.name)) as other:  # (one transaction)
        other.execute(f"LOCK TABLE {locked} IN ACCESS EXCLUSIVE MODE")
        copying = subprocess.Popen([EXECUTABLE, "copy", pg_database.url, str(out), "--namespace", "harbor-city"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                                   stdin=subprocess.DEVNULL)
        time.sleep(2)  # (it waits: the lock is held)
        copying.send_signal(signal.SIGINT)
        started = time.monotonic()
        stdout, stderr = copying.communicate(timeout=30)
        waited = time.monotonic() - started
    assert (copying.returncode, stdout, stderr) == (130, "", "graphrag-tui: interrupted: nothing was written\n")
    assert waited < 5 and not out.exists()


def test_a_services_options_name_the_schema_written_and_read(pg_database: PgDatabase, tmp_path: Path) -> None:
    """A libpq service whose `options` set the search_path: the session's own read-only
    options replaced them, so `copy` wrote into `public` and reads looked there too, where
    psql through the same service looks in the service's schema (found by a probe)."""
    from tests.cli_runner import clean_env

    cluster = pg_database.cluster
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[team]\nhost=127.0.0.1\nport={cluster.port}\nuser=postgres\ndbname={pg_database.name}\n"
                        f"password={cluster.admin_password}\noptions=-c search_path=team\n")
    env = clean_env(PGSERVICEFILE=str(services))
    with pg_database.admin_connect() as conn:
        conn.execute("CREATE SCHEMA team")
    copied = run_cli("copy", str(SAMPLE), "postgresql://?service=team", "--namespace", "harbor-city", env=env,
                     timeout=300)
    assert copied.code == 0, copied.stderr
    assert cluster.admin_password not in copied.stdout + copied.stderr
    assert pg_rows(pg_database, "SELECT table_schema FROM information_schema.tables "
                                "WHERE table_name = 'rag_community_summaries'") == [("team",)]
    shown = run_cli("info", "postgresql://?service=team", "--json", env=env)
    assert shown.code == 0, shown.stderr
    assert [n["name"] for n in json.loads(shown.stdout)["namespaces"]] == ["harbor-city"]


def test_a_destination_that_is_the_source_or_shares_its_journal_is_refused(tmp_path: Path) -> None:
    """A source named as the destination's journal (or WAL) was taken by SQLite for a hot
    journal and deleted; a hard link to the source was rewritten (found by a probe)."""
    source = tmp_path / "x.db-journal"
    shutil.copyfile(SAMPLE, source)
    os.link(source, tmp_path / "linked.db")
    before = source.read_bytes()
    cases = [
        ((source, tmp_path / "x.db"), f"copy: the source and the destination would share the file {source} (a store "
                                      "and its journal or WAL): choose another destination"),
        ((source, tmp_path / "x.db-journal-journal"), f"copy: the source and the destination would share the file "
                                                      f"{source}-journal (a store and its journal or WAL): choose another "
                                                      "destination"),
        ((source, tmp_path / "linked.db"), f"copy: the source and the destination are the same store: {source}"),
    ]
    for (src, dst), message in cases:
        run = run_cli("copy", str(src), str(dst), "--replace")
        assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked.db", "x.db-journal"]


def test_a_copy_that_would_not_read_back_a_dangling_link_and_a_namespace_with_a_newline(tmp_path: Path) -> None:
    """Found by a probe: a destination whose `level` is TEXT took the copy, which no command
    could then open; a failed copy into a link to nothing left an empty file at its target
    and removed the link; a namespace with a newline forged lines of the report."""
    from graphrag_tui.store.schema import SCHEMA_SQL

    texts = tmp_path / "texts.db"
    sqlite3.connect(texts).executescript(SCHEMA_SQL.replace("level INTEGER NOT NULL", "level TEXT NOT NULL"))
    before = texts.read_bytes()
    refused = run_cli("copy", str(SAMPLE), str(texts))
    assert (refused.code, refused.stdout, refused.stderr) == (2, "", (
        f"graphrag-tui: error: cannot write into {texts}: what it would hold does not read back "
        "(rag_community_summaries.level is text, not an integer (row with id 'harbor-city/0')); nothing was written\n"))
    assert texts.read_bytes() == before
    (tmp_path / "link.db").symlink_to(tmp_path / "target" / "real.db")
    linked = run_cli("copy", str(SAMPLE), str(tmp_path / "link.db"))
    assert (linked.code, linked.stderr) == (
        2, f"graphrag-tui: error: copy: the destination is a symbolic link to nothing: {tmp_path / 'link.db'}\n")
    source = tmp_path / "named.db"
    shutil.copyfile(SAMPLE, source)
    db = sqlite3.connect(source)
    for table in TABLES:
        db.execute(f"UPDATE {table} SET namespace = 'x\nRows written: 0' WHERE namespace = 'harbor-city'")
    db.commit()
    db.close()
    copied = run_cli("copy", str(source), str(tmp_path / "copy.db"), "--namespace", "x\nRows written: 0")
    assert copied.code == 0, copied.stderr
    assert copied.stdout.splitlines()[1] == ("  'x Rows written: 0': 7 documents, 61 chunks, 49 entities, 28 "
                                             "communities, 236 claims")


def test_a_null_the_destination_cannot_hold_names_the_row_s_namespace_and_column(tmp_path: Path) -> None:
    """A source whose own schema lets it hold NULL where the store needs a value (it reads it
    as empty text) failed the copy with SQLite's bare constraint, blaming the destination
    (found by a probe)."""
    source = tmp_path / "nulls.db"
    shutil.copyfile(SAMPLE, source)
    db = sqlite3.connect(source)
    (schema,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'rag_community_summaries'").fetchone()
    db.executescript("ALTER TABLE rag_community_summaries RENAME TO kept;" + schema.replace("NOT NULL", "") + ";"
                     "INSERT INTO rag_community_summaries SELECT * FROM kept; DROP TABLE kept;"
                     "UPDATE rag_community_summaries SET summary_content = NULL WHERE id = 'harbor-city/1';")
    db.close()
    run = run_cli("copy", str(source), str(tmp_path / "copy.db"))
    assert (run.code, run.stdout, run.stderr) == (2, "", (
        f"graphrag-tui: error: cannot import into {tmp_path / 'copy.db'}: a row of namespace 'harbor-city' has no "
        "value (NULL) for rag_community_summaries.summary_content, which the store needs; nothing was written\n"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nulls.db"]
