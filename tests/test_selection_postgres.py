"""Community selection on a PostgreSQL store (issue 15) chooses, plans and rates exactly as
on the same store in SQLite, against the throwaway cluster and the scripted server."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.chat_server import ScriptedChatServer
from tests.cli_runner import run_cli
from tests.conftest import PgDatabase
from tests.graphrag_fixtures import write_index
from tests.pg_stores import SAMPLE
from tests.test_postgres_store import _stable
from tests.test_selection import RatingServer

QUESTION = "Who pays for the harbour?"
NS = ("--namespace", "harbor-city", "--no-config", "--seed", "7", "--json")


def test_rollup_plans_the_same_communities_on_postgres(sample_pg: PgDatabase) -> None:
    for level in ("0", "1"):
        sqlite, pg = (run_cli("plan", store, QUESTION, "--select", "rollup", "--level", level, *NS)
                      for store in (str(SAMPLE), sample_pg.url))
        assert (sqlite.code, pg.code) == (0, 0), (sqlite.stderr, pg.stderr)
        assert sqlite.json["selection"]["selected"], level  # the sample's communities list members
        assert pg.json == sqlite.json
        for password in sample_pg.passwords:
            assert password not in pg.stdout + pg.stderr


def test_dynamic_selection_rates_and_maps_the_same_on_postgres(sample_pg: PgDatabase) -> None:
    results = []
    for store in (str(SAMPLE), sample_pg.url):
        with ScriptedChatServer(RatingServer()) as server:
            run = run_cli("query", store, QUESTION, "--select", "dynamic", "--base-url", server.base_url,
                          "--model", "m", "--no-history", "--concurrency", "1", *NS, timeout=120)
        assert run.code == 0, run.stderr
        results.append(_stable(run.json))
    sqlite, pg = results
    assert sqlite["selection"]["ratings"]
    assert pg == sqlite


def test_report_columns_travel_through_import_and_copy(pg_database: PgDatabase, tmp_path: Path) -> None:
    """A report's rank, reason and findings reach a PostgreSQL store by import-graphrag and
    by copy, and come back to SQLite by copy; --min-rank then selects the same there."""
    index = write_index(tmp_path / "out")
    local = tmp_path / "local.db"
    assert run_cli("import-graphrag", str(index), str(local), "--namespace", "ns").code == 0
    imported = run_cli("import-graphrag", str(index), pg_database.admin_url, "--namespace", "ns", timeout=300)
    assert imported.code == 0, imported.stderr
    shown = [run_cli("show", store, "ns/2", "--json") for store in (str(local), pg_database.url)]
    assert [s.code for s in shown] == [0, 0], [s.stderr for s in shown]
    assert [(s.json["rank"], s.json["rating_explanation"], s.json["findings"]) for s in shown] == [
        (5.0, "made up", [{"summary": "a finding", "explanation": "because"}])] * 2
    back = tmp_path / "back.db"
    copied = run_cli("copy", pg_database.url, str(back), timeout=300)
    assert copied.code == 0, copied.stderr
    with sqlite3.connect(back) as conn:
        rows = conn.execute("SELECT id, rank, typeof(rank), rating_explanation, findings "
                            "FROM rag_community_summaries ORDER BY id").fetchall()
    assert rows[0] == ("ns/0", 5.0, "real", "made up", '[{"summary": "a finding", "explanation": "because"}]')
    plans = [run_cli("plan", store, QUESTION, "--min-rank", "5", "--level", "1", "--no-config", "--json")
             for store in (str(local), pg_database.url, str(back))]
    assert [p.code for p in plans] == [0, 0, 0], [p.stderr for p in plans]
    assert [p.json["selection"]["selected"] for p in plans] == [["ns/2", "ns/3"]] * 3
    for run in (imported, copied, *shown, *plans):
        for password in pg_database.passwords:
            assert password not in run.stdout + run.stderr
