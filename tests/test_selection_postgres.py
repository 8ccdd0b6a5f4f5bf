"""Community selection on a PostgreSQL store (issue 15) chooses, plans and rates exactly as
on the same store in SQLite, against the throwaway cluster and the scripted server."""

from __future__ import annotations

from tests.chat_server import ScriptedChatServer
from tests.cli_runner import run_cli
from tests.conftest import PgDatabase
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
