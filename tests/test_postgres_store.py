"""PostgreSQL stores end to end, against the throwaway cluster (tests/postgres_cluster.py):
the same batches, prompts and results as SQLite, a database that is never written, the
collation, the faults, and the password that is never shown."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from graphrag_tui.store import CommunityStore, StoreError
from graphrag_tui.store.opening import open_store
from tests.chat_server import Received, Reply, ScriptedChatServer, community_of, map_reply, reduce_reply
from tests.cli_runner import run_cli
from tests.conftest import PgDatabase, import_psycopg
from tests.pg_stores import SAMPLE, copy_sqlite_to_postgres, settled_writes
from tests.postgres_cluster import PostgresCluster
from tests.stores import build_store

psycopg = import_psycopg()

QUESTION = "Who pays for the harbour?"
#: Fields of a run's JSON that differ from run to run whatever the store.
VOLATILE = ("run_id", "started_at", "finished_at", "duration_s", "elapsed_s")


def by_community(request: Received) -> Reply:
    """A Map reply that depends only on the batch's first community; one Reduce reply."""
    if request.stage == "reduce":
        return reduce_reply("The port authority pays.")
    community = community_of(request)
    return map_reply(f"Notes on {community}.", sum(map(ord, community)) % 100)


def _stable(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: _stable(v) for k, v in document.items() if k not in VOLATILE and not k.endswith("_ms")}
    if isinstance(document, list):
        return [_stable(v) for v in document]
    return document


def _query(store: str, server: ScriptedChatServer, namespace: str, *flags: str):
    return run_cli("query", store, QUESTION, "--namespace", namespace, "--base-url", server.base_url, "--model", "m1",
                   "--seed", "7", "--json", "--no-history", "--no-config", "--map-budget", "900", *flags, timeout=120)



@pytest.mark.parametrize("namespace", ["harbor-city", "tea-history-zh"])
def test_query_seed_7_gives_the_same_batches_prompts_and_result_on_sqlite_and_postgres(
    sample_pg: PgDatabase, namespace: str
) -> None:
    runs = {}
    for name, store in (("sqlite", str(SAMPLE)), ("postgres", sample_pg.url)):
        with ScriptedChatServer(by_community) as server:
            run = _query(store, server, namespace)
            assert run.code == 0, run.stderr
            prompts = sorted(r.prompt for r in server.requests if r.endpoint.endswith("/chat/completions"))
        runs[name] = (_stable(run.json), prompts, run)
    sqlite_result, sqlite_prompts, _ = runs["sqlite"]
    pg_result, pg_prompts, pg_run = runs["postgres"]
    assert sqlite_result["batch_count"] > 3 and sqlite_result["status"] == "completed"
    assert pg_prompts == sqlite_prompts
    assert pg_result == sqlite_result
    for password in sample_pg.passwords:
        assert password not in pg_run.stdout + pg_run.stderr


def test_plan_info_show_tree_and_search_read_the_database(sample_pg: PgDatabase) -> None:
    ns = ("--namespace", "harbor-city")
    for args in (("plan", "{s}", QUESTION, "--seed", "7", "--json", "--no-config", *ns), ("info", "{s}", "--json"),
                 ("plan", "{s}", QUESTION, "--level", "0", "--seed", "3", "--json", "--namespace", "tea-history-zh",
                  "--no-config"),
                 ("tree", "{s}", "--json", *ns), ("show", "{s}", "1", "--json", *ns)):
        sqlite = run_cli(*(a.format(s=SAMPLE) for a in args))
        pg = run_cli(*(a.format(s=sample_pg.url) for a in args))
        assert (sqlite.code, pg.code) == (0, 0), (args, sqlite.stderr, pg.stderr)
        if args[0] == "info":
            assert pg.json["store"] == sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
            assert pg.json["namespaces"] == sqlite.json["namespaces"]
        else:
            assert pg.json == sqlite.json, args
        for password in sample_pg.passwords:
            assert password not in pg.stdout + pg.stderr
    # The server's text search finds what the SQLite index finds for plain words (ranked its own way).
    for words in ("harbor", "port authority"):
        by_store = [run_cli("search", store, words, "--json", "--limit", "500", *ns) for store in (str(SAMPLE), sample_pg.url)]
        assert [r.code for r in by_store] == [0, 0], [r.stderr for r in by_store]
        sqlite_ids, pg_ids = ({k: sorted(h["id"] for h in hits) for k, hits in r.json["results"].items()} for r in by_store)
        assert sum(map(len, pg_ids.values())) > 3
        assert pg_ids == sqlite_ids, words


def _found(store: str, query: str) -> dict[str, list[str]]:
    """What `search STORE QUERY --limit 500` finds, as its command finds it, in this process
    (the command itself is run above: a process per query took a third of a minute)."""
    from graphrag_tui.session.explore import ExploreSession
    from graphrag_tui.store.location import parse_location

    with open_store(parse_location(store)) as opened:
        search = ExploreSession(opened, "harbor-city").text_search
        if not search.ready():
            search.build()
        results = search.search(query, limit=500)
    return {kind: sorted(hit.id for hit in hits) for kind, hits in results.results.items()}


@pytest.mark.parametrize(("pg_query", "fts5_query"), [
    ("harb*", "harb*"), ("Harb*", "harb*"), ("port auth*", "port auth*"), ("port or harb*", "port OR harb*"),
    ("port -harb*", "port NOT harb*"), ("(harb*) au*", "harb* au*"), ('"harbor" ha*', '"harbor" ha*'),
])
def test_a_prefix_finds_on_postgresql_what_it_finds_in_the_sqlite_index(
    sample_pg: PgDatabase, pg_query: str, fts5_query: str
) -> None:
    by_index, by_server = _found(str(SAMPLE), fts5_query), _found(sample_pg.url, pg_query)
    assert sum(map(len, by_server.values())) > 3
    assert by_server == by_index


def test_a_prefix_with_quotes_backslashes_or_tsquery_operators_is_a_word_on_postgresql(sample_pg: PgDatabase) -> None:
    """Prefixes are put into the server's query as text: none breaks its syntax or means more
    than a word; `*` inside a phrase is punctuation, as in web-search syntax."""
    nothing: dict[str, list[str]] = {"community": [], "entity": [], "claim": [], "chunk": []}
    for query in ("it's*", "a\\b*", "'*", "\\*", "zq:*", "harb&port*", "har'b*", "har\\b*", "*", "'':*"):
        assert _found(sample_pg.url, query) == nothing, query
    assert _found(sample_pg.url, '"harb*"') == _found(sample_pg.url, "harb")
    harbor = _found(sample_pg.url, "harb*")
    for query in ("HARB*", "!harb*", "harb|*", "'harb'*", "harb***", "harb*,"):  # the punctuation around a word is dropped
        assert _found(sample_pg.url, query) == harbor != nothing, query



def test_a_query_the_server_refuses_is_not_a_lost_server(sample_pg: PgDatabase) -> None:
    """A prefix past PostgreSQL's limit of a word (2,047 characters) was said as `Lost the
    database server`: the driver counts that limit among its operational errors (found by a
    probe)."""
    masked = sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
    line = _one_line_error(run_cli("search", sample_pg.url, "a" * 3000 + "*", "--namespace", "harbor-city"),
                           *sample_pg.passwords)
    assert line.startswith(f"graphrag-tui: error: Cannot read store {masked}: word is too long in tsquery: ")

# -- the collation ---------------------------------------------------------------------------

#: Ids whose order by code point ("10" < "9" < "B" < "Z" < "_z" < "a") is not en-US's.
ICU_IDS = ["c/a", "c/B", "c/_z", "c/10", "c/9", "c/Z", "c/é", "c/b"]


def test_a_database_with_an_icu_collation_gives_the_same_batches(tmp_path: Path, icu_database: PgDatabase) -> None:
    pad = " Ships come and go from the harbour every day of the year." * 8
    path = build_store(
        tmp_path / "icu.db",
        [{"id": "c/root", "community_name": "Root", "summary_content": "All of it." + pad},
         *({"id": cid, "community_name": cid, "summary_content": f"Community {cid}." + pad, "level": 1,
            "parent_community_id": "c/root"} for cid in ICU_IDS)],
        entities=[{"id": "e/1", "name": "Harbour"}],
        claims=[{"id": f"k/{i}{suffix}", "subject_entity_id": "e/1", "description": f"claim {i}{suffix}",
                 "community_summary_id": cid} for i, cid in enumerate(ICU_IDS) for suffix in ("A", "b", "_", "1")],
    )
    copy_sqlite_to_postgres(path, icu_database, strict=True)
    with psycopg.connect(icu_database.url) as conn:  # the database does sort by en-US: the test can fail
        natural = [r[0] for r in conn.execute("SELECT id FROM rag_community_summaries WHERE level = 1 ORDER BY id")]
    assert natural != sorted(ICU_IDS)
    with CommunityStore.open(path) as sqlite, open_store(icu_database.url) as pg:
        for level in (None, 0, 1):
            assert list(pg.iter_map_parts("ns", level)) == list(sqlite.iter_map_parts("ns", level))
            assert pg.select_communities("ns", level) == sqlite.select_communities("ns", level)
        assert [c.id for c in pg.select_communities("ns", None)] == sorted(ICU_IDS)
        assert pg.community("c/root") == sqlite.community("c/root")
    for order in (("--no-shuffle",), ("--seed", "11")):
        plans = [run_cli("plan", store, QUESTION, "--map-budget", "400", "--map-reserve", "0", "--json", "--no-config",
                         *order) for store in (str(path), icu_database.url)]
        assert [p.code for p in plans] == [0, 0], [p.stderr for p in plans]
        assert len(plans[0].json["batches"]) > 2
        assert plans[1].json == plans[0].json


# -- read-only --------------------------------------------------------------------------------



def test_a_null_community_id_is_one_line(graphrag_ts_database: PgDatabase) -> None:
    """It crashed `tree` and planning (internal error), and `copy` wrote it into a file no
    command would open."""
    with graphrag_ts_database.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_community_summaries DROP CONSTRAINT rag_community_summaries_pkey CASCADE")
        conn.execute("ALTER TABLE rag_community_summaries ALTER COLUMN id DROP NOT NULL")
        conn.execute("INSERT INTO rag_community_summaries (id, namespace, community_name, summary_content, level) "
                     "VALUES ('ns/1', 'ns', 'One', 'Fine.', 0), (NULL, 'ns', 'Two', 'Bad.', 1)")
    masked = graphrag_ts_database.url.replace(graphrag_ts_database.cluster.reader_password, "***")
    for command in (("info",), ("tree",)):
        line = _one_line_error(run_cli(*command, graphrag_ts_database.url), *graphrag_ts_database.passwords)
        assert line == f"graphrag-tui: error: Bad community store {masked}: rag_community_summaries.id is NULL, not text"


_EVIL = "CREATE FUNCTION evil() RETURNS boolean LANGUAGE sql AS 'SELECT true'"
#: What follows is made by a role that owns what it makes in the store's schema and is no
#: superuser (a superuser's own functions are trusted: he could do anything anyway).
AS_OWNER = ("DO $$ BEGIN CREATE ROLE store_owner; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
            "GRANT CREATE ON SCHEMA public TO store_owner", "SET ROLE store_owner")
#: An owner's function that stops a statement the reader runs (and lets the others through).
_TRIPWIRE = ("CREATE FUNCTION tripwire(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN "
             "IF current_user = 'graphrag_reader' THEN RAISE EXCEPTION 'the owner''s code ran'; END IF; "
             "RETURN true; END $$")
#: Stores whose reads would run SQL of the database's own, or compare text otherwise than by
#: code point: (the changes, the refusal after the store's name).
_UNSAFE = {
    "view": ((_EVIL, "ALTER TABLE rag_community_summaries RENAME TO summaries_elsewhere",
              "CREATE VIEW rag_community_summaries AS SELECT * FROM summaries_elsewhere WHERE evil()"),
             "Not a community store: {url}: rag_community_summaries is a view, whose SQL would run on every read"),
    "materialized-view": (("ALTER TABLE rag_entities RENAME TO entities_elsewhere",
                           "CREATE MATERIALIZED VIEW rag_entities AS SELECT * FROM entities_elsewhere",
                           "GRANT SELECT ON rag_entities TO PUBLIC"),
                          "Not a community store: {url}: rag_entities is a materialized view, whose SQL would run on "
                          "every read"),
    "row-security": ((_EVIL, "ALTER TABLE rag_claims ENABLE ROW LEVEL SECURITY", "CREATE POLICY p ON rag_claims USING (evil())"),
                     "Not a community store: {url}: rag_claims has row-level security for this role, whose SQL would "
                     "run on every read"),
    # (a policy of PostgreSQL's own functions runs any SQL too)
    "row-security-builtin": (("ALTER TABLE rag_entities ENABLE ROW LEVEL SECURITY",
                              "CREATE POLICY p ON rag_entities USING (query_to_xml('SELECT 1', true, true, '') IS NOT NULL)"),
                             "Not a community store: {url}: rag_entities has row-level security for this role, whose SQL "
                             "would run on every read"),
    # a read of a table reads the tables that inherit from it
    "inherited": (("CREATE TABLE claims_archive () INHERITS (rag_claims)", "GRANT SELECT ON claims_archive TO PUBLIC",
                   "ALTER TABLE claims_archive ENABLE ROW LEVEL SECURITY", "CREATE POLICY p ON claims_archive USING (true)"),
                  "Not a community store: {url}: claims_archive has row-level security for this role, whose SQL would "
                  "run on every read"),
    # a domain's own `=` ran as the reads compared the column (no superuser needed to make one;
    # made in the store's schema, the overloads' check below refuses it first)
    "domain": (("CREATE DOMAIN nsd AS text", "ALTER TABLE rag_community_summaries ALTER COLUMN namespace TYPE nsd"),
               "Not a community store: {url}: rag_community_summaries.namespace is of a domain type, whose own "
               "operators would run on every read"),
    "domain-array": (("CREATE DOMAIN member AS text",
                      "ALTER TABLE rag_community_summaries ALTER COLUMN members TYPE member[] USING members::member[]"),
                     "Not a community store: {url}: rag_community_summaries.members is of a domain type, whose own "
                     "operators would run on every read"),
    # an index scan calls its operator class's support function (a superuser made it once)
    "operator-class": ((_EVIL, *AS_OWNER, "CREATE FUNCTION evil_cmp(text, text) RETURNS int LANGUAGE sql IMMUTABLE AS "
                        "'SELECT CASE WHEN evil() THEN bttextcmp($1, $2) END'", "RESET ROLE",
                        "CREATE OPERATOR CLASS evil_ops FOR TYPE text USING btree AS OPERATOR 1 pg_catalog.<, "
                        "OPERATOR 2 pg_catalog.<=, OPERATOR 3 pg_catalog.=, OPERATOR 4 pg_catalog.>=, "
                        "OPERATOR 5 pg_catalog.>, FUNCTION 1 evil_cmp(text, text)",
                        "CREATE INDEX evil_index ON rag_claims (namespace evil_ops)"),
                       "Not a community store: {url}: rag_claims has an index or a partition key whose operator "
                       "class runs the database's own code"),
    # a call finds the overload whose argument types fit best, wherever it is: `name || ' '` (varchar)
    # and `min(name)` ran the schema's own, made by the database's owner (found by a re-probe)
    "overload-operator": ((_EVIL, *AS_OWNER, "CREATE FUNCTION cat(varchar, varchar) RETURNS text LANGUAGE sql "
                           "AS 'SELECT CASE WHEN evil() THEN $1::text END'",
                           "CREATE OPERATOR || (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = cat)"),
                          "Not a community store: {url}: its schema has a function or an operator of its own named "
                          "'||', as one of PostgreSQL's, which the reads would run in its place"),
    "overload-aggregate": ((*AS_OWNER, "CREATE FUNCTION least_of(varchar, varchar) RETURNS varchar LANGUAGE sql "
                            "AS 'SELECT least($1, $2)'",
                            "CREATE AGGREGATE min(varchar) (SFUNC = least_of, STYPE = varchar)"),
                           "Not a community store: {url}: its schema has a function or an operator of its own named "
                           "'min', as one of PostgreSQL's, which the reads would run in its place"),
    # a literal fits any type: `||(varchar, bytea)` beat PostgreSQL's `||(text, text)` on graphrag-ts's
    # varchar columns, in every search (found by a re-probe)
    "overload-other-type": ((_EVIL, *AS_OWNER, "CREATE FUNCTION cat(varchar, bytea) RETURNS text LANGUAGE sql "
                             "AS 'SELECT CASE WHEN evil() THEN $1::text END'",
                             "CREATE OPERATOR || (LEFTARG = varchar, RIGHTARG = bytea, FUNCTION = cat)"),
                            "Not a community store: {url}: its schema has a function or an operator of its own named "
                            "'||', as one of PostgreSQL's, which the reads would run in its place"),
    # an extension's owner, the database's, may add his own function to it (found by a re-probe)
    "overload-in-an-extension": (("CREATE EXTENSION citext", *AS_OWNER,
                                  "CREATE FUNCTION least_of(varchar, varchar) RETURNS varchar LANGUAGE sql "
                                  "AS 'SELECT least($1, $2)'",
                                  "CREATE AGGREGATE min(varchar) (SFUNC = least_of, STYPE = varchar)", "RESET ROLE",
                                  "ALTER EXTENSION citext ADD AGGREGATE min(varchar)"),
                                 "Not a community store: {url}: its schema has a function or an operator of its own "
                                 "named 'min', as one of PostgreSQL's, which the reads would run in its place"),
    # an optional column is read as CAST(... AS TEXT): a type's owner makes its casts
    "foreign-type": ((_EVIL, "CREATE TYPE ranked AS (v real)",
                      "CREATE FUNCTION ranked_text(ranked) RETURNS text LANGUAGE sql AS 'SELECT CASE WHEN evil() THEN "
                      "pg_catalog.textin(pg_catalog.record_out($1)) END'",
                      "CREATE CAST (ranked AS text) WITH FUNCTION ranked_text(ranked)",
                      "ALTER TABLE rag_community_summaries ADD COLUMN rank ranked"),
                     "Not a community store: {url}: rag_community_summaries.rank is of a type of the database's own, "
                     "whose casts would run on every read"),
    # planning a read evaluates immutable calls with constant arguments, as the reader: in an
    # index's predicate or expressions, a child table's CHECK, a statistics expression (found by
    # a probe: the owner's function turned the session's read-only setting off)
    **{kind: ((*AS_OWNER, _TRIPWIRE, "RESET ROLE", *made),
              "Not a community store: {url}: " + table + " has an index, a CHECK constraint, statistics or a partition "
              "key that calls the database's own code, which planning a read runs")
       for kind, table, made in (
           ("index-predicate", "rag_claims", ("CREATE INDEX evil_partial ON rag_claims (id) WHERE tripwire(1)",)),
           ("index-expression", "rag_claims", ("CREATE INDEX evil_expression ON rag_claims ((id || tripwire(2)::text))",)),
           ("child-check", "rag_claims_more", ("CREATE TABLE rag_claims_more (CHECK (tripwire(3))) INHERITS (rag_claims)",)),
           ("statistics", "rag_children",
            ("CREATE STATISTICS evil_stats ON (length(id) + tripwire(4)::int) FROM rag_children",)),
       )},
    # a range type's subtype_diff estimates the selectivity of a partial index's predicate as the
    # planner weighs the index (found by a re-probe)
    "range-selectivity": ((*AS_OWNER, "CREATE FUNCTION diff(float8, float8) RETURNS float8 LANGUAGE plpgsql IMMUTABLE "
                           "AS $$ BEGIN IF current_user = 'graphrag_reader' THEN RAISE EXCEPTION 'the owner''s code ran'; "
                           "END IF; RETURN $1 - $2; END $$",
                           "CREATE TYPE frange AS RANGE (subtype = float8, subtype_diff = diff)", "RESET ROLE",
                           "ALTER TABLE rag_claims ADD COLUMN rng frange",
                           "UPDATE rag_claims SET rng = frange(length(id) % 7, length(id) % 7 + 3)", "ANALYZE rag_claims",
                           "CREATE INDEX claims_ranged ON rag_claims (description) "
                           "WHERE (namespace IS NOT NULL OR rng && '[1,5)'::frange)"),
                          "Not a community store: {url}: rag_claims has an index, a CHECK constraint, statistics or a "
                          "partition key that calls the database's own code, which planning a read runs"),
    # the planner estimates `'x' <<< namespace` through `<<<`'s commutator, whose function is the
    # owner's though `<<<` runs PostgreSQL's texteq (found by a re-probe)
    "commutator": ((*AS_OWNER, "CREATE FUNCTION flipped(text, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS "
                    "$$ BEGIN IF current_user = 'graphrag_reader' THEN RAISE EXCEPTION 'the owner''s code ran'; END IF; "
                    "RETURN $1 = $2; END $$",
                    "CREATE OPERATOR >>> (LEFTARG = text, RIGHTARG = text, FUNCTION = flipped, RESTRICT = eqsel)",
                    "CREATE OPERATOR <<< (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_catalog.texteq, "
                    "RESTRICT = scalarltsel, COMMUTATOR = >>>)", "RESET ROLE",
                    "CREATE INDEX entities_flipped ON rag_entities (id) WHERE namespace IS NOT NULL OR 'x' <<< namespace",
                    "ANALYZE rag_entities"),
                   "Not a community store: {url}: rag_entities has an index, a CHECK constraint, statistics or a "
                   "partition key that calls the database's own code, which planning a read runs"),
    # planning a read of a partition builds its condition from its parents' partition keys: a
    # store table made a partition of the owner's table ran his function (found by a re-probe)
    "partition-of-owner-table": ((*AS_OWNER, _TRIPWIRE, "RESET ROLE",
                                  "CREATE TABLE owner_parents (LIKE rag_parents) "
                                  "PARTITION BY LIST ((length(namespace) + tripwire(0)::int))",
                                  "ALTER TABLE rag_parents RENAME TO rag_parents_old",
                                  "CREATE TABLE rag_parents (LIKE rag_parents_old INCLUDING ALL) PARTITION BY RANGE (id)",
                                  "CREATE TABLE rag_parents_all PARTITION OF rag_parents DEFAULT",
                                  "INSERT INTO rag_parents SELECT * FROM rag_parents_old",
                                  "ALTER TABLE owner_parents ATTACH PARTITION rag_parents FOR VALUES IN (12, 15)"),
                                 "Not a community store: {url}: owner_parents has an index, a CHECK constraint, "
                                 "statistics or a partition key that calls the database's own code, which planning a "
                                 "read runs"),
    "temporary-schema": (("SELECT 1",),  # (the search_path is set below)
                         "Not a community store: {url}: its search_path names no schema to read but the session's "
                         "temporary one (pg_temp)"),
    "collation": (("CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
                   "ALTER TABLE rag_entities ALTER COLUMN namespace TYPE text COLLATE ci"),
                  "Not a community store: {url}: rag_entities.namespace compares text with a nondeterministic "
                  "collation; graphrag-tui compares ids and names by code point"),
    "char": (("ALTER TABLE rag_parents ALTER COLUMN namespace TYPE char(40)",),
             "Bad community store {url}: rag_parents.namespace is character, not text"),
}


@pytest.mark.parametrize("kind", list(_UNSAFE))
def test_a_store_whose_reads_would_run_its_own_sql_or_compare_text_otherwise_is_refused(
        sample_pg: PgDatabase, kind: str) -> None:
    """A view's function turned the read-only session's defaults off and then wrote and
    slept as it was read; a case-insensitive collation made `harbor-city` and `HARBOR-CITY`
    one namespace; char(n) padded each namespace, listed twice (found by a probe)."""
    changes, refusal = _UNSAFE[kind]
    with sample_pg.admin_connect() as conn:
        for change in changes:
            conn.execute(change)
        if kind == "temporary-schema":  # (a read found no table: it looked in pg_temp_N)
            conn.execute(f"ALTER DATABASE {sample_pg.name} SET search_path = pg_temp, public")
    masked = sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
    line = _one_line_error(run_cli("info", sample_pg.url), *sample_pg.passwords)
    assert line == "graphrag-tui: error: " + refusal.format(url=masked)


#: Overloads of PostgreSQL's names for graphrag-ts's varchar columns, made by the owner of the
#: store's schema (no superuser), each of which stops the statement that runs it.
_OWNER_OVERLOADS = (
    *AS_OWNER,
    "CREATE FUNCTION stop_varchar(varchar, varchar) RETURNS varchar LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'the owner''s code ran'; END $$",
    "CREATE FUNCTION stop_bytea(varchar, bytea) RETURNS text LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'the owner''s code ran'; END $$",
    "CREATE AGGREGATE min(varchar) (SFUNC = stop_varchar, STYPE = varchar)",
    "CREATE OPERATOR || (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = stop_varchar)",
    "CREATE OPERATOR || (LEFTARG = varchar, RIGHTARG = bytea, FUNCTION = stop_bytea)",
)


def test_an_overload_its_owner_adds_while_a_session_is_open_never_runs(
        sample_pg: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store is checked as it opens; `min(varchar)` and `||(varchar, bytea)` its owner
    made afterwards ran on the same session's next plan and search, in place of PostgreSQL's
    (a known gap, now closed): a read session's search_path is `pg_catalog` alone, and its
    statements name the store's tables with their schema. (Without the checks made again
    later, which would refuse the store: the reads that come before them.)"""
    monkeypatch.setattr("graphrag_tui.store.postgres.RECHECK_AFTER_S", math.inf)
    from graphrag_tui.engine import SearchOptions
    from graphrag_tui.planning import prepare_plan
    from graphrag_tui.session.explore import ExploreSession
    from graphrag_tui.store.location import parse_location

    def reads(store: Any) -> tuple[Any, ...]:
        plan = prepare_plan(store, QUESTION, namespace="harbor-city", level="leaf", options=SearchOptions(), seed=7,
                            shuffle=True)
        found = ExploreSession(store, "harbor-city").text_search.search("harbor port", limit=500)
        return (plan.model_dump_json(), {kind: [hit.id for hit in hits] for kind, hits in found.results.items()},
                store.namespaces(), store.community("harbor-city/0"))

    with open_store(parse_location(sample_pg.url)) as store:
        before = reads(store)
        with sample_pg.admin_connect() as conn:
            for change in _OWNER_OVERLOADS:
                conn.execute(change)
            conn.execute("RESET ROLE")
            # (as the reads call them: the owner's overloads are what the store's schema finds)
            conn.execute("SET search_path = public")
            with pytest.raises(psycopg.errors.RaiseException, match="the owner's code ran"):
                conn.execute("SELECT min(community_name) FROM rag_community_summaries")
        assert reads(store) == before
    assert sum(map(len, before[1].values())) > 3 and before[3]


def test_a_change_its_owner_makes_after_the_store_opened_is_refused_at_the_next_read(sample_pg: PgDatabase) -> None:
    """An index whose predicate calls the owner's function, made after the store opened, ran
    as the reader on the open store's next plan (a known gap, now closed): a read that comes
    a second or more after the last check checks the tables again, as does each of `copy`'s
    table reads, and the store is not read any more."""
    from graphrag_tui.engine import SearchOptions
    from graphrag_tui.planning import prepare_plan
    from graphrag_tui.store.location import parse_location
    from graphrag_tui.store.postgres import RECHECK_AFTER_S

    masked = sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
    refusal = (f"Not a community store any more: {masked}: rag_claims has an index, a CHECK constraint, statistics "
               "or a partition key that calls the database's own code, which planning a read runs")
    with open_store(parse_location(sample_pg.url)) as store:
        assert [n.name for n in store.namespaces()] == ["harbor-city", "tea-history-zh"]
        with sample_pg.admin_connect() as conn:
            for change in (*AS_OWNER, _TRIPWIRE, "RESET ROLE", "CREATE INDEX evil_partial ON rag_claims (id) WHERE tripwire(1)"):
                conn.execute(change)
        with pytest.raises(StoreError) as copied:  # (each of copy's reads checks first, whenever it comes)
            list(store.iter_table_rows("rag_claims", "harbor-city"))
        assert str(copied.value) == refusal
        time.sleep(RECHECK_AFTER_S)
        reads = (lambda: prepare_plan(store, QUESTION, namespace="harbor-city", level="leaf", options=SearchOptions(),
                                      seed=7, shuffle=True), store.namespaces, lambda: store.community("harbor-city/0"))
        for read in reads:
            with pytest.raises(StoreError) as refused:
                read()
            assert str(refused.value) == refusal


def test_a_read_its_owner_stalls_with_a_lock_is_checked_again_before_it_is_made(
        sample_pg: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read waited for the owner's lock on a table, after the tables were checked; he made
    an index whose predicate called his function meanwhile, and the read, planned once he let
    go, ran it as the reader (found by a probe). A read waits a millisecond at most for a
    lock, and is made again after the tables are checked again."""
    from graphrag_tui.store.location import parse_location

    masked = sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
    with open_store(parse_location(sample_pg.url)) as store, \
            psycopg.connect(sample_pg.cluster.admin_conninfo(sample_pg.name)) as owner:  # (one transaction)
        owner.execute("LOCK TABLE rag_children IN ACCESS EXCLUSIVE MODE")
        for change in (*AS_OWNER, _TRIPWIRE, "RESET ROLE", "CREATE INDEX evil_partial ON rag_children (id) WHERE tripwire(1)"):
            owner.execute(change)
        committed: list[bool] = []
        sleep = time.sleep

        def owner_commits_then_sleep(seconds: float) -> None:  # (the read found the table locked)
            if not committed:
                owner.commit()
                committed.append(True)
            sleep(seconds)

        monkeypatch.setattr(time, "sleep", owner_commits_then_sleep)
        with pytest.raises(StoreError) as refused:
            store.namespaces()
    assert (committed, str(refused.value)) == (
        [True], f"Not a community store any more: {masked}: rag_children has an index, a CHECK constraint, statistics "
                "or a partition key that calls the database's own code, which planning a read runs")


@pytest.mark.parametrize("held", ["LOCK TABLE rag_community_summaries IN ACCESS EXCLUSIVE MODE",
                                  "REINDEX INDEX rag_children_pkey",
                                  "LOCK TABLE pg_catalog.pg_statistic_ext IN ACCESS EXCLUSIVE MODE"])
def test_a_store_opens_and_copy_reads_once_a_brief_lock_is_gone(sample_pg: PgDatabase, held: str) -> None:
    """A read waits a millisecond for a lock, then checks and tries again: opening the store
    and copy's reads failed at once while a REINDEX or a migration held a table or an index
    for a moment (found by a probe)."""
    import threading

    from graphrag_tui.store.location import parse_location

    with open_store(parse_location(sample_pg.url)) as store:
        expected = sorted(store.iter_table_rows("rag_children", "harbor-city"))
    with psycopg.connect(sample_pg.cluster.admin_conninfo(sample_pg.name)) as other:  # (one transaction)
        other.execute(held)
        threading.Timer(0.5, other.rollback).start()
        with open_store(parse_location(sample_pg.url)) as store:
            read = sorted(store.iter_table_rows("rag_children", "harbor-city"))
            names = [n.name for n in store.namespaces()]
    assert (read, names) == (expected, ["harbor-city", "tea-history-zh"]) and len(expected) > 3


def test_two_reads_of_tables_at_once_each_have_their_cursor(sample_pg: PgDatabase, monkeypatch: Any) -> None:
    """Two `iter_table_rows` read at once, a few rows a FETCH, each read its own table whole
    (they shared one cursor's name, and the second failed: found by a probe)."""
    from itertools import zip_longest

    from graphrag_tui.store import postgres
    from graphrag_tui.store.location import parse_location

    with open_store(parse_location(sample_pg.url)) as store:
        expected = [list(store.iter_table_rows(t, "harbor-city")) for t in ("rag_children", "rag_claims")]
    monkeypatch.setattr(postgres, "STREAM_ROWS", 7)
    with open_store(parse_location(sample_pg.url)) as store:
        pairs = list(zip_longest(*(store.iter_table_rows(t, "harbor-city") for t in ("rag_children", "rag_claims"))))
        after = list(store.iter_table_rows("rag_children", "harbor-city"))
    read = [[row for row in column if row is not None] for column in zip(*pairs, strict=True)]
    assert (read, after) == (expected, expected[0]) and [len(rows) for rows in expected] == [61, 236]


def test_a_read_checked_again_while_a_catalog_is_locked_goes_on_once_it_is_free(sample_pg: PgDatabase) -> None:
    """The checks that met the lock were sent in one pipeline; those the driver had just
    prepared were gone from the server when they were sent again, and the read failed with
    `prepared statement "_pg3_1" does not exist` (found by a probe)."""
    import threading

    from graphrag_tui.store.location import parse_location

    with open_store(parse_location(sample_pg.url)) as store:
        store._conn.prepare_threshold = 0  # (every statement prepared as it is first sent)
        expected = [n.name for n in store.namespaces()]
        with psycopg.connect(sample_pg.cluster.admin_conninfo(sample_pg.name)) as other:  # (one transaction)
            other.execute("LOCK TABLE pg_catalog.pg_statistic_ext IN ACCESS EXCLUSIVE MODE")
            threading.Timer(0.5, other.rollback).start()
            store._checked_at = -math.inf
            assert [n.name for n in store.namespaces()] == expected == ["harbor-city", "tea-history-zh"]


def _toasted_children(sample_pg: PgDatabase) -> str:
    """Three chunks made long enough to be kept in rag_children's TOAST table, whose name is returned."""
    with sample_pg.admin_connect() as conn:
        conn.execute("UPDATE rag_children SET content = content || (SELECT string_agg(md5(i::text), '') "
                     "FROM generate_series(1, 400) AS i) WHERE id IN (SELECT id FROM rag_children ORDER BY id LIMIT 3)")
        (toast,) = conn.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'rag_children'"
                                ).fetchone()
    return str(toast)


def test_an_interrupt_ends_a_copy_read_waiting_for_a_toast_table(sample_pg: PgDatabase) -> None:
    """A FETCH waits for a TOAST table's lock as long as a statement may, on the copy's own
    session, which an interrupt did not reach: Ctrl+C ended the copy only once the lock was
    gone (found by a probe)."""
    import threading

    from graphrag_tui.store.location import parse_location

    toast = _toasted_children(sample_pg)
    with open_store(parse_location(sample_pg.url)) as store:
        with psycopg.connect(sample_pg.cluster.admin_conninfo(sample_pg.name)) as other:  # (one transaction)
            other.execute(f"REINDEX TABLE {toast}")
            release = threading.Timer(10, other.rollback)
            release.start()
            threading.Timer(0.5, store.interrupt).start()
            started = time.monotonic()
            try:
                with pytest.raises(StoreError):
                    list(store.iter_table_rows("rag_children", "harbor-city"))
                waited = time.monotonic() - started
            finally:
                release.cancel()
                other.rollback()
    assert waited < 3


def test_copy_reads_a_toasted_value_once_its_toast_table_is_free(sample_pg: PgDatabase) -> None:
    """A FETCH met the lock a REINDEX (or a VACUUM's truncation) held on a TOAST table, which
    nothing locks before, and the copy failed at once (found by a probe). A FETCH plans
    nothing: it waits."""
    import threading

    from graphrag_tui.store.location import parse_location

    toast = _toasted_children(sample_pg)
    with open_store(parse_location(sample_pg.url)) as store:
        expected = sorted(store.iter_table_rows("rag_children", "harbor-city"))
        with psycopg.connect(sample_pg.cluster.admin_conninfo(sample_pg.name)) as other:  # (one transaction)
            other.execute(f"REINDEX TABLE {toast}")
            threading.Timer(0.5, other.rollback).start()
            read = sorted(store.iter_table_rows("rag_children", "harbor-city"))
    assert read == expected and max(len(v) for row in read for v in row if isinstance(v, str)) > 12_000


def test_copy_reads_every_table_of_a_store_in_one_snapshot(sample_pg: PgDatabase) -> None:
    """Each table `copy` read was read in a session of its own: a document and its chunk
    that graphrag-ts added between two tables' reads had the chunk copied without the
    document. Every table is read in one REPEATABLE READ transaction, closed with the store."""
    from graphrag_tui.store.location import parse_location

    def ids(store: Any, table: str) -> list[str]:
        return sorted(row[0] for row in store.iter_table_rows(table, "harbor-city"))

    with sample_pg.admin_connect() as conn:  # (the transaction waits between reads, for the copy's writes)
        conn.execute(f"ALTER DATABASE {sample_pg.name} SET idle_in_transaction_session_timeout = '100ms'")
    with open_store(parse_location(sample_pg.url)) as store:
        documents = ids(store, "rag_parents")
        time.sleep(0.3)
        with sample_pg.admin_connect() as conn:
            conn.execute("INSERT INTO rag_parents (id, namespace, content) VALUES ('late-doc', 'harbor-city', 'Late.')")
            conn.execute("INSERT INTO rag_children (id, namespace, content, parent_id) "
                         "VALUES ('late-chunk', 'harbor-city', 'Late.', 'late-doc')")
        chunks = ids(store, "rag_children")
        assert (ids(store, "rag_parents"), "late-chunk" in chunks) == (documents, False)
    with open_store(parse_location(sample_pg.url)) as store:
        assert (ids(store, "rag_parents"), ids(store, "rag_children")) == (sorted([*documents, "late-doc"]),
                                                                          sorted([*chunks, "late-chunk"]))
    with sample_pg.admin_connect() as conn:
        for _ in range(50):  # (a backend ends a moment after its client has closed)
            (sessions,) = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'graphrag-tui'"
                                       ).fetchone()
            if sessions == 0:
                break
            time.sleep(0.1)
    assert sessions == 0


def test_the_checks_say_the_same_one_by_one_where_libpq_has_no_pipeline(
        sample_pg: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks go in one pipeline (libpq 14 and later); an older libpq gets them one by one."""
    from graphrag_tui.store.location import parse_location
    from graphrag_tui.store.pg_connection import connect
    from graphrag_tui.store.pg_safety import unsafe_relation

    def found() -> list[str | None]:
        conn = connect(parse_location(sample_pg.url))  # type: ignore[arg-type]
        try:
            return [unsafe_relation(conn), unsafe_relation(conn)]
        finally:
            conn.close()

    rls = (_EVIL, "ALTER TABLE rag_claims ENABLE ROW LEVEL SECURITY", "CREATE POLICY p ON rag_claims USING (evil())")
    piped = [found()]
    with sample_pg.admin_connect() as conn:
        for change in rls:
            conn.execute(change)
    piped.append(found())
    monkeypatch.setattr(psycopg.Pipeline, "is_supported", classmethod(lambda cls: False))
    one_by_one = [found()]
    with sample_pg.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_claims DISABLE ROW LEVEL SECURITY")
    one_by_one.insert(0, found())
    refusal = "rag_claims has row-level security for this role, whose SQL would run on every read"
    assert piped == one_by_one == [[None, None], [refusal, refusal]]


@pytest.mark.parametrize("schema", ['Graph RAG', 'a"b%s', "current_schema()"])
def test_a_store_in_a_schema_whose_name_needs_quotes_reads_as_in_public(sample_pg: PgDatabase, schema: str) -> None:
    """The reads name the tables with their schema, and the checks find it by name."""
    before = run_cli("info", sample_pg.url, "--json")
    plan_args = ("plan", QUESTION, "--namespace", "harbor-city", "--seed", "7", "--json", "--no-config")
    planned = run_cli(plan_args[0], sample_pg.url, *plan_args[1:])
    assert (before.code, planned.code) == (0, 0), before.stderr + planned.stderr
    quoted = '"' + schema.replace('"', '""') + '"'
    with sample_pg.admin_connect() as conn:
        conn.execute(f"CREATE SCHEMA {quoted}")
        conn.execute(f"GRANT USAGE ON SCHEMA {quoted} TO graphrag_reader")
        for (table,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall():
            conn.execute(f"ALTER TABLE public.{table} SET SCHEMA {quoted}")
        conn.execute(f"ALTER ROLE graphrag_reader IN DATABASE {sample_pg.name} SET search_path = {quoted}")
    try:
        after = run_cli("info", sample_pg.url, "--json")
        assert (after.code, after.stdout) == (0, before.stdout), after.stderr
        replanned = run_cli(plan_args[0], sample_pg.url, *plan_args[1:])
        assert (replanned.code, replanned.stdout) == (0, planned.stdout), replanned.stderr
    finally:
        with sample_pg.admin_connect() as conn:
            conn.execute(f"ALTER ROLE graphrag_reader IN DATABASE {sample_pg.name} RESET search_path")


def test_a_store_s_later_sessions_read_the_schema_checked_as_it_opened(sample_pg: PgDatabase) -> None:
    """A schema made after the store opened, ahead of its own in the reader's search_path
    (`"$user"` comes first), was where the read-ahead of planning and `copy`'s sessions read
    the tables: unchecked relations, other rows (found by a probe)."""
    from graphrag_tui.engine import SearchOptions
    from graphrag_tui.planning import prepare_plan
    from graphrag_tui.store.location import parse_location

    def reads(store: Any) -> tuple[Any, ...]:
        plan = prepare_plan(store, QUESTION, namespace="harbor-city", level="leaf", options=SearchOptions(), seed=7,
                            shuffle=True)
        return plan.model_dump_json(), list(store.iter_table_rows("rag_community_summaries", "harbor-city"))

    with open_store(parse_location(sample_pg.url)) as store:
        before = reads(store)
        with sample_pg.admin_connect() as conn:
            conn.execute("CREATE SCHEMA graphrag_reader")
            conn.execute("GRANT USAGE ON SCHEMA graphrag_reader TO graphrag_reader")
            for (table,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall():
                conn.execute(f"CREATE TABLE graphrag_reader.{table} (LIKE public.{table})")
                conn.execute(f"GRANT SELECT ON graphrag_reader.{table} TO graphrag_reader")
        after = reads(store)
    assert after == before and len(before[1]) > 3


def test_common_extensions_in_the_store_s_schema_are_not_refused(sample_pg: PgDatabase) -> None:
    """pg_trgm's `<->(text, text)`, citext's `regexp_match(citext, text)`, hstore's `->` and
    an index with pg_trgm's operator class: a superuser's (a trusted extension's objects are
    the bootstrap superuser's), so not the database owner's code (they were refused, read
    and write; found by probes)."""
    before = run_cli("info", sample_pg.url, "--json")
    assert before.code == 0, before.stderr
    with sample_pg.admin_connect() as conn:
        for extension in ("pg_trgm", "citext", "hstore"):
            conn.execute(f"CREATE EXTENSION {extension}")
        # (an extension's operator class, as pgvector's HNSW index on graphrag-ts's embeddings)
        conn.execute("CREATE INDEX children_trigrams ON rag_children USING gin (content gin_trgm_ops)")
    after = run_cli("info", sample_pg.url, "--json")
    assert (after.code, after.stdout) == (0, before.stdout), after.stderr


def test_an_operator_of_the_database_s_own_does_not_shadow_the_built_in_one(sample_pg: PgDatabase) -> None:
    """A search_path that names the tables' schema before pg_catalog made its `=` on text
    ours: every namespace's rows matched every other's."""
    before = run_cli("info", sample_pg.url, "--json")
    assert before.code == 0, before.stderr
    with sample_pg.admin_connect() as conn:
        conn.execute("CREATE FUNCTION public.always(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true'")
        conn.execute("CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.always)")
        conn.execute(f"ALTER DATABASE {sample_pg.name} SET search_path = public, pg_catalog")
    after = run_cli("info", sample_pg.url, "--json")
    assert (after.code, after.stdout) == (0, before.stdout), after.stderr

def test_a_database_s_settings_do_not_change_how_its_store_reads(sample_pg: PgDatabase) -> None:
    """`standard_conforming_strings` off broke graphrag-tui's `'\\'` literals (every entity's
    drill-down was a syntax error), `quote_all_identifiers` on its check of the column types
    (`rag_parents.id is "text", not text`) (found by a re-probe)."""
    before = [run_cli("info", sample_pg.url, "--json"), run_cli("show", sample_pg.url, "harbor-city/entity/8")]
    assert [r.code for r in before] == [0, 0], [r.stderr for r in before]
    with sample_pg.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_community_summaries ADD COLUMN rank real")
        conn.execute("UPDATE rag_community_summaries SET rank = 7.25")
        conn.execute(f"ALTER DATABASE {sample_pg.name} SET standard_conforming_strings = off")
        conn.execute(f"ALTER DATABASE {sample_pg.name} SET quote_all_identifiers = on")
        conn.execute(f"ALTER DATABASE {sample_pg.name} SET extra_float_digits = -15")  # (7.25 was read as 7)
    after = [run_cli("info", sample_pg.url, "--json"), run_cli("show", sample_pg.url, "harbor-city/entity/8")]
    assert [(r.code, r.stdout) for r in after] == [(0, r.stdout) for r in before], [r.stderr for r in after]
    tree = run_cli("tree", sample_pg.url, "--namespace", "harbor-city", "--depth", "1", "--json")
    assert tree.code == 0, tree.stderr
    assert {root["rank"] for root in json.loads(tree.stdout)["roots"]} == {7.25}
    # on, the planner evaluates the partition condition (its parents' partition keys) of a
    # partition a statement names (found by a re-probe)
    with sample_pg.admin_connect() as conn:
        conn.execute(f"ALTER DATABASE {sample_pg.name} SET constraint_exclusion = on")
    with open_store(sample_pg.url) as store:
        assert store._pg_query("SHOW constraint_exclusion") == [("partition",)]


def test_a_session_cannot_write_even_as_superuser_and_has_a_statement_timeout(sample_pg: PgDatabase) -> None:
    with open_store(sample_pg.admin_url) as store:
        with pytest.raises(StoreError, match="read-only transaction") as refused:
            store._pg_query("CREATE TABLE intruder (a int)")
        assert sample_pg.cluster.admin_password not in str(refused.value)
        assert "***" in str(refused.value)
        assert store._pg_query("SHOW statement_timeout") == [("1min",)]
        assert store._pg_query("SHOW default_transaction_read_only") == [("on",)]


def test_cli_commands_write_nothing(sample_pg: PgDatabase, tmp_path: Path) -> None:
    before = settled_writes(sample_pg)
    assert before["rag_claims"] == (401, 0, 0)  # the copy's rows: the statistics see writes
    ns = ("--namespace", "harbor-city")
    with ScriptedChatServer(by_community) as server:
        run = _query(sample_pg.url, server, "harbor-city")
        assert run.code == 0, run.stderr
        recorded = run_cli("query", sample_pg.url, QUESTION, *ns, "--base-url", server.base_url, "--model", "m1",
                           "--history", str(tmp_path / "runs.db"), "--json", "--no-config")
        assert recorded.code == 0, recorded.stderr
    for args in (("plan", sample_pg.url, QUESTION, *ns), ("info", sample_pg.url), ("tree", sample_pg.url, *ns),
                 ("show", sample_pg.url, "1", *ns), ("search", sample_pg.url, "harbor", *ns)):
        assert run_cli(*args).code == 0, args
    runs = run_cli("runs", "list", "--history", str(tmp_path / "runs.db"), "--json", "--store", sample_pg.url)
    assert [r["store"] for r in runs.json["runs"]] == [sample_pg.url.replace(sample_pg.cluster.reader_password, "***")]
    assert sample_pg.cluster.reader_password not in (tmp_path / "runs.db").read_bytes().decode("latin-1")
    assert settled_writes(sample_pg) == before


# -- faults: one line, exit 2, the password masked ---------------------------------------------


def _one_line_error(run: Any, *secrets: str) -> str:
    assert run.code == 2, (run.code, run.stdout, run.stderr)
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    for secret in secrets:
        assert secret not in run.stdout + run.stderr
    return lines[0]


def test_an_unreachable_server(postgres_cluster: PostgresCluster) -> None:
    from tests.postgres_cluster import _free_port

    port = _free_port()
    url = f"postgresql://alice:unreach-s3cret@127.0.0.1:{port}/graph"
    for command in (("info", url), ("plan", url, QUESTION), ("tree", url)):
        line = _one_line_error(run_cli(*command), "unreach-s3cret")
        assert line.startswith(
            f"graphrag-tui: error: Cannot reach the database server of store postgresql://alice:***@127.0.0.1:{port}/graph: "
        ), line
        assert "refused" in line


def test_failed_authentication(sample_pg: PgDatabase) -> None:
    url = sample_pg.cluster.url(sample_pg.name, password="wrong-pass-42")
    line = _one_line_error(run_cli("info", url), "wrong-pass-42", *sample_pg.passwords)
    assert line == (f"graphrag-tui: error: Cannot open store postgresql://graphrag_reader:***@127.0.0.1:"
                    f"{sample_pg.cluster.port}/{sample_pg.name}: the server refused the login (connection failed: "
                    f"connection to server at \"127.0.0.1\", port {sample_pg.cluster.port} failed: FATAL: password "
                    f"authentication failed for user \"graphrag_reader\")")


def test_a_database_without_the_tables(pg_database: PgDatabase) -> None:
    line = _one_line_error(run_cli("info", pg_database.url), *pg_database.passwords)
    assert line == (f"graphrag-tui: error: Not a community store: postgresql://graphrag_reader:***@127.0.0.1:"
                    f"{pg_database.cluster.port}/{pg_database.name} has no table(s) rag_parents, rag_children, "
                    "rag_entities, rag_community_summaries, rag_claims (graphrag-ts's schema; import-graphrag or copy "
                    "can create it)")


@pytest.mark.parametrize(("grants", "unreadable"), [
    ("REVOKE SELECT ON rag_claims, rag_entities FROM graphrag_reader", "rag_entities, rag_claims"),
    ("REVOKE SELECT ON rag_claims FROM graphrag_reader; GRANT SELECT (id, namespace) ON rag_claims TO graphrag_reader",
     "rag_claims.subject_entity_id, rag_claims.object_entity_id, rag_claims.description, "
     "rag_claims.source_parent_id, rag_claims.source_chunk_id, rag_claims.community_summary_id"),
], ids=["tables", "columns"])
def test_tables_the_role_may_not_read_are_said_so_not_missing(sample_pg: PgDatabase, grants: str, unreadable: str) -> None:
    """information_schema hides what the role may not read: that used to read as "has no
    table(s)", as if the database were not a store."""
    with sample_pg.admin_connect() as conn:
        for statement in grants.split("; "):
            conn.execute(statement)
    line = _one_line_error(run_cli("info", sample_pg.url), *sample_pg.passwords)
    assert line == (f"graphrag-tui: error: Cannot read store postgresql://graphrag_reader:***@127.0.0.1:"
                    f"{sample_pg.cluster.port}/{sample_pg.name}: role 'graphrag_reader' may not read {unreadable} "
                    "(GRANT SELECT on graphrag-ts's tables to it)")


@pytest.mark.parametrize(("change", "problem"), [
    ("ALTER TABLE rag_community_summaries ALTER COLUMN level TYPE text", "rag_community_summaries.level is text, not an integer"),
    ("ALTER TABLE rag_claims DROP CONSTRAINT rag_claims_community_summary_id_fkey, "
     "ALTER COLUMN community_summary_id TYPE integer USING NULL",
     "rag_claims.community_summary_id is integer, not text"),
    ("ALTER TABLE rag_community_summaries ALTER COLUMN members DROP DEFAULT, "
     "ALTER COLUMN members TYPE integer[] USING NULL", "rag_community_summaries.members is _int4, not TEXT[] (or JSON text)"),
])
def test_a_column_of_the_wrong_type(graphrag_ts_database: PgDatabase, change: str, problem: str) -> None:
    with graphrag_ts_database.admin_connect() as conn:
        conn.execute(change)
    line = _one_line_error(run_cli("info", graphrag_ts_database.url), *graphrag_ts_database.passwords)
    masked = graphrag_ts_database.url.replace(graphrag_ts_database.cluster.reader_password, "***")
    assert line == f"graphrag-tui: error: Bad community store {masked}: {problem}"


@pytest.mark.parametrize(("column", "problem"), [("level", "level is NULL, not an integer"),
                                               ("namespace", "namespace is NULL, not text")])
def test_a_null_where_a_community_needs_a_value(graphrag_ts_database: PgDatabase, column: str, problem: str) -> None:
    with graphrag_ts_database.admin_connect() as conn:
        conn.execute(f"ALTER TABLE rag_community_summaries ALTER COLUMN {column} DROP NOT NULL")
        conn.execute("INSERT INTO rag_community_summaries (id, namespace, community_name, summary_content, level) "
                     "VALUES ('ns/1', 'ns', 'One', 'Fine.', 0), ('ns/2', 'ns', 'Two', 'Bad.', 1)")
        conn.execute(f"UPDATE rag_community_summaries SET {column} = NULL WHERE id = 'ns/2'")
    line = _one_line_error(run_cli("info", graphrag_ts_database.url), *graphrag_ts_database.passwords)
    masked = graphrag_ts_database.url.replace(graphrag_ts_database.cluster.reader_password, "***")
    assert line == f"graphrag-tui: error: Bad community store {masked}: rag_community_summaries.{problem} (row with id 'ns/2')"


def test_a_malformed_url_is_masked_in_the_argument_error() -> None:
    line = _one_line_error(run_cli("info", "postgresql://bob:p4ss-w0rd@db.example:notaport/graph"), "p4ss-w0rd")
    assert line == ("graphrag-tui: error: argument store: Not a PostgreSQL URL: postgresql://bob:***@db.example:notaport/graph "
                    "(see graphrag-tui info --help)")


@pytest.mark.parametrize("url", [
    "postgresql://reader:Hunter2/xyz@127.0.0.1:5432/base",
    "postgresql://reader:Hun@ter2xyz@127.0.0.1:5432/base",
    "postgresql://hashy:Hunter2#xyz@127.0.0.1:5432/base",  # libpq connected with it; the history kept half
    "postgresql://reader:Hunter2?xyz@127.0.0.1:5432/base",
])
def test_a_password_with_an_unencoded_separator_is_refused_and_never_shown(url: str) -> None:
    """A URL parser and libpq split such a URL in different places: the password was shown
    as a host, a port or a path."""
    for command in (("info", url), (url,)):
        line = _one_line_error(run_cli(*command), "Hunter2", "xyz", "ter2")
        assert line == ("graphrag-tui: error: argument store: Not a PostgreSQL URL this tool can read safely: its "
                        "user or password seems to hold an unencoded '/', '?', '#' or '@'; percent-encode them (%2F, "
                        "%3F, %23, %40) or give the password in PGPASSWORD or ~/.pgpass" + (
                            " (see graphrag-tui info --help)" if command[0] == "info" else " (see graphrag-tui --help)"))


@pytest.mark.parametrize("url", ["postgresql://reader@127.0.0.1:5432/rag?password=Hunter2&xyz9",
                                 "postgresql://reader@127.0.0.1:5432/rag?sslmode=disable&PASSWORD=Hunter2&xyz9&port=1"])
def test_a_password_parameter_with_an_unencoded_ampersand_is_refused_and_never_shown(url: str) -> None:
    """libpq refused the bare piece after the `&`, and its message and the masked URL showed
    that part of the intended password twice (found by a probe)."""
    line = _one_line_error(run_cli("info", url), "Hunter2", "xyz9")
    assert line == ("graphrag-tui: error: argument store: Not a PostgreSQL URL this tool can read safely: its password "
                    "(or sslpassword) parameter seems to hold an unencoded '&'; percent-encode it (%26) or give the "
                    "password in PGPASSWORD or ~/.pgpass (see graphrag-tui info --help)")


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:S3cr%zzet@127.0.0.1:5432/db",
     'Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:5432/db (invalid percent-encoded token: "***")'),
    ("postgresql://u:x@127.0.0.1:5432/db?password=S3cr%zzet",
     'Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:5432/db?password=*** (invalid percent-encoded token: "***")'),
    ("postgresql://u:x@127.0.0.1:5432/db?sslpassword=S3%zzcr",
     "Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:5432/db?sslpassword=*** (invalid percent-encoded token: "
     '"***")'),
    ("postgresql://u:S3cret two@127.0.0.1:5432/db",
     'Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:5432/db (unexpected spaces found in "***", use '
     "percent-encoded spaces (%20) instead)"),
    ("postgresql://u:S3cret two@127.0.0.1:notaport/db",
     "argument store: Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:notaport/db (see graphrag-tui info --help)"),
    ("postgresql://u:S3cret\ttab@127.0.0.1:99999/db",
     "argument store: Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:99999/db (see graphrag-tui info --help)"),
    ("postgresql://u@127.0.0.1:5432/db?password=Ab cd\"S3cretTail",
     'Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:5432/db?password=*** (unexpected spaces found in "***", use '
     "percent-encoded spaces (%20) instead)"),
    ("postgresql://u:Ab\"S3cret Tail@127.0.0.1:5432/db",
     'Not a PostgreSQL URL: postgresql://u:***@127.0.0.1:5432/db (unexpected spaces found in "***", use '
     "percent-encoded spaces (%20) instead)"),
], ids=["percent-userinfo", "percent-parameter", "percent-sslpassword", "space", "space-bad-port", "tab-bad-port",
        "quote-and-space-parameter", "quote-and-space-userinfo"])
def test_a_url_libpq_cannot_read_never_shows_its_password(url: str, shown: str) -> None:
    """libpq quotes the piece of a URL it cannot read, here the password; and a password
    with a space escaped the masking of a URL no parser accepts."""
    line = _one_line_error(run_cli("info", url), "S3cr", "zzet", "two", "tab", "S3%", "Tail")
    assert line == f"graphrag-tui: error: {shown}"


def test_json_nested_too_deep_in_a_jsonb_column_is_one_line(graphrag_ts_database: PgDatabase, tmp_path: Path) -> None:
    """The driver decodes jsonb as it fetches, before the store's own guard: it was
    `internal error: RecursionError` (and the app's community view stayed on "Reading..."),
    and in `copy`'s streamed read too."""
    with graphrag_ts_database.admin_connect() as conn:
        conn.execute("ALTER TABLE rag_community_summaries ALTER COLUMN members DROP DEFAULT, "
                     "ALTER COLUMN members TYPE jsonb USING to_jsonb(members)")
        conn.execute("INSERT INTO rag_community_summaries (id, namespace, community_name, summary_content, level, "
                     "members) VALUES ('ns/1', 'ns', 'One', 'Fine.', 0, %s::jsonb)", ("[" * 5000 + "]" * 5000,))
    masked = graphrag_ts_database.url.replace(graphrag_ts_database.cluster.reader_password, "***")
    for command in (("show", graphrag_ts_database.url, "ns/1"),
                    ("copy", graphrag_ts_database.url, str(tmp_path / "copied.db"), "--namespace", "ns")):
        line = _one_line_error(run_cli(*command), *graphrag_ts_database.passwords)
        assert line == f"graphrag-tui: error: Cannot read store {masked}: a JSON value in it is nested too deeply"
    assert not (tmp_path / "copied.db").exists()


def test_a_sql_ascii_database_is_read_as_text(postgres_cluster: PostgresCluster, tmp_path: Path) -> None:
    """psycopg gives a SQL_ASCII database's text as bytes: its tables' names never matched,
    and the store "had no table(s)" that were there."""

    name = f"ascii{os.getpid()}"
    postgres_cluster.create_database(name, sql_ascii=True)
    try:
        copied = run_cli("copy", str(SAMPLE), postgres_cluster.admin_url(name))
        assert copied.code == 0, copied.stderr
        from_postgres = run_cli("info", postgres_cluster.url(name))
        from_sqlite = run_cli("info", str(SAMPLE))
    finally:
        postgres_cluster.drop_database(name)
    assert (from_postgres.code, from_postgres.stderr) == (0, "")
    assert from_postgres.stdout.splitlines()[1:] == from_sqlite.stdout.splitlines()[1:]


def test_a_client_encoding_asked_for_by_the_url_or_the_environment_still_reads_text(sample_pg: PgDatabase) -> None:
    """A URL's `?client_encoding=SQL_ASCII` made psycopg give text as bytes: the store "had
    no table(s)". The session's encoding is UTF-8 whatever is asked."""
    from tests.cli_runner import clean_env

    expected = run_cli("info", str(SAMPLE)).stdout.splitlines()[1:]
    for url, env in ((f"{sample_pg.url}?client_encoding=SQL_ASCII", None),
                     (sample_pg.url, clean_env(PGCLIENTENCODING="LATIN1"))):
        run = run_cli("info", url, env=env)
        assert (run.code, run.stderr) == (0, "")
        assert run.stdout.splitlines()[1:] == expected


def test_without_the_driver_a_url_is_the_install_hint(tmp_path: Path) -> None:
    # A psycopg that cannot be imported, first on the path: as if the extra were not installed.
    (tmp_path / "psycopg").mkdir()
    (tmp_path / "psycopg" / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    from tests.cli_runner import clean_env

    env = clean_env(PYTHONPATH=f"{tmp_path}:{Path(__file__).resolve().parent.parent}")
    line = _one_line_error(run_cli("info", "postgresql://bob:hint-s3cret@127.0.0.1:1/graph", env=env), "hint-s3cret")
    assert line == "graphrag-tui: error: PostgreSQL stores need the psycopg driver: pip install 'graphrag-tui[postgres]'"
    assert run_cli("info", str(SAMPLE), env=env).code == 0  # SQLite stores need no driver


def test_libpq_environment_supplies_what_the_url_leaves_out(sample_pg: PgDatabase) -> None:
    from tests.cli_runner import clean_env

    cluster = sample_pg.cluster
    env = clean_env(PGHOST="127.0.0.1", PGPORT=str(cluster.port), PGUSER="graphrag_reader",
                    PGPASSWORD=cluster.reader_password, PGSSLMODE="disable")
    run = run_cli("info", f"postgresql:///{sample_pg.name}", "--json", env=env)
    assert run.code == 0, run.stderr
    assert run.json["store"] == f"postgresql:///{sample_pg.name}"
    assert [n["name"] for n in run.json["namespaces"]] == ["harbor-city", "tea-history-zh"]
    assert cluster.reader_password not in run.stdout + run.stderr


@pytest.mark.parametrize("form", ["userinfo", "parameter"])
def test_a_recorded_run_on_a_database_reruns_with_the_password_from_libpq(
    sample_pg: PgDatabase, tmp_path: Path, form: str
) -> None:
    """(A password given as `?password=` was recorded as `password=***`, which a re-run sent
    as the password, over PGPASSWORD.)"""
    from urllib.parse import quote

    from tests.cli_runner import clean_env

    history = str(tmp_path / "runs.db")
    cluster = sample_pg.cluster
    if form == "userinfo":
        url, masked = sample_pg.url, sample_pg.url.replace(cluster.reader_password, "***")
    else:
        at = f"graphrag_reader@127.0.0.1:{cluster.port}/{sample_pg.name}"
        url = f"postgresql://{at}?password={quote(cluster.reader_password, safe='')}"
        masked = f"postgresql://{at.replace('@', ':***@', 1)}?password=***"
    with ScriptedChatServer(by_community) as server:
        first = run_cli("query", url, QUESTION, "--namespace", "harbor-city", "--base-url", server.base_url,
                        "--model", "m1", "--seed", "7", "--history", history, "--json", "--no-config")
        assert first.code == 0, first.stderr
        run_id = first.json["run_id"]
        # The history keeps the URL masked: the password comes from libpq's environment (or ~/.pgpass).
        refused = run_cli("rerun", run_id, "--all", "--history", history, "--json", "--no-config")
        line = _one_line_error(refused, *sample_pg.passwords)
        assert line.startswith(f"graphrag-tui: error: Cannot open store {masked}: the server refused the login ("), line
        env = clean_env(PGPASSWORD=sample_pg.cluster.reader_password)
        again = run_cli("rerun", run_id, "--all", "--history", history, "--json", "--no-config", env=env)
        assert again.code == 0, again.stderr
    assert again.json["parent_run_id"] == run_id
    assert _stable(again.json)["batches"] == _stable(first.json)["batches"]
    # The export reads the communities the answer rests on from the database.
    exported = run_cli("runs", "export", run_id, str(tmp_path / "report"), "--history", history, "--no-config", env=env)
    assert exported.code == 0, exported.stderr
    report = (tmp_path / "report.md").read_text()
    cited = first.json["batches"][0]["community_ids"][0]
    with open_store(sample_pg.url) as store:
        detail = store.community(cited)
    assert detail is not None and detail.summary.splitlines()[0] in report
    for password in sample_pg.passwords:
        assert password not in again.stdout + again.stderr + exported.stdout + exported.stderr + report
        assert password not in (tmp_path / "report.json").read_text()


def test_a_query_over_the_statement_timeout_is_one_line(sample_pg: PgDatabase) -> None:
    with open_store(sample_pg.url) as store:
        store._pg_query("SET statement_timeout = 100")  # the session's own 60 s, shortened for the test
        with pytest.raises(StoreError) as error:
            store._pg_query("SELECT pg_sleep(5)")
        masked = sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
        assert str(error.value) == f"Cannot read store {masked}: a query ran longer than the statement timeout (60 s)"
        assert store.levels("harbor-city")  # the session goes on
