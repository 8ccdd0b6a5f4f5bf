"""PostgreSQL stores end to end, against the throwaway cluster (tests/postgres_cluster.py):
the same batches, prompts and results as SQLite, a database that is never written, the
collation, the faults, and the password that is never shown."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from graphrag_tui.errors import InputError
from graphrag_tui.store import CommunityStore, StoreError
from graphrag_tui.store.opening import open_store
from tests.chat_server import Received, Reply, ScriptedChatServer, community_of, completion, map_reply, reduce_reply
from tests.cli_runner import run_cli
from tests.conftest import PgDatabase
from tests.pg_stores import copy_sqlite_to_postgres
from tests.postgres_cluster import PostgresCluster
from tests.stores import build_store

SAMPLE = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
QUESTION = "Who pays for the harbour?"
#: Fields of a run's JSON that differ from run to run whatever the store.
VOLATILE = ("run_id", "started_at", "finished_at", "duration_s", "elapsed_s")


def by_community(request: Received) -> Reply:
    """A Map reply that depends only on the batch's first community; one Reduce reply."""
    if request.stage == "reduce":
        return reduce_reply("The port authority pays.")
    community = community_of(request)
    return map_reply(f"Notes on {community}.", sum(map(ord, community)) % 100)


@pytest.fixture
def sample_pg(pg_database: PgDatabase) -> PgDatabase:
    """The bundled sample store copied into graphrag-ts's tables (with all their constraints)."""
    copy_sqlite_to_postgres(SAMPLE, pg_database, strict=True)
    return pg_database


def _stable(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: _stable(v) for k, v in document.items() if k not in VOLATILE and not k.endswith("_ms")}
    if isinstance(document, list):
        return [_stable(v) for v in document]
    return document


def _query(store: str, server: ScriptedChatServer, namespace: str):
    return run_cli("query", store, QUESTION, "--namespace", namespace, "--base-url", server.base_url, "--model", "m1", "--seed", "7",
                   "--json", "--no-history", "--no-config", "--map-budget", "900", timeout=120)


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
                 ("plan", "{s}", QUESTION, "--level", "0", "--seed", "3", "--json", "--namespace", "tea-history-zh", "--no-config"),
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
