"""The run history as a user meets it: the real CLI against the scripted chat server,
killed with SIGKILL mid-Map, resumed, re-run on failed batches and on another model, two
processes writing one history at once, unknown ids, and history files it must not touch."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from graphrag_tui.engine import SearchOptions
from graphrag_tui.errors import InputError
from graphrag_tui.history import SCHEMA_VERSION, RunHistory
from graphrag_tui.history.database import connect
from graphrag_tui.history.texts import pack_utf8, unpack_text
from graphrag_tui.models.extractive import ExtractiveModel
from graphrag_tui.session.continuation import prepare_rerun
from graphrag_tui.store import CommunityStore
from tests.chat_server import (
    Received,
    Reply,
    ScriptedChatServer,
    community_of,
    completion,
    map_reply,
    reduce_reply,
    usage,
)
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import PAD, build_store

QUESTION = "Who funds the bridge?"
COMMUNITIES = [f"ns/{i}" for i in range(1, 9)]
#: One community per batch, shuffled with a fixed seed: the resume must plan the same order.
ONE_EACH = ["--map-budget", "330", "--map-reserve", "0", "--seed", "7", "--no-config"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    rows = [{"id": c, "summary_content": f"Community {c} keeps the harbour ledger. {PAD}"} for c in COMMUNITIES]
    return build_store(tmp_path / "harbour.db", rows)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.db"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Server:
    """Map replies by community: `fail` communities get HTTP 500 (both attempts), `hold`
    ones wait for `release`; every other one answers at once. Reduce answers."""

    def __init__(self, fail: set[str] = frozenset(), hold: set[str] = frozenset(), model: str = "m1") -> None:
        self.fail, self.hold, self.release = set(fail), set(hold), threading.Event()
        self.answered: dict[str, float] = {}
        self.model = model

    def __call__(self, request: Received) -> Reply:
        if request.stage == "reduce":
            return reduce_reply("The port authority funds it.")
        community = community_of(request)
        if community in self.fail:
            return Reply({"error": "boom"}, status=500)
        if community in self.hold:
            return Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=self.release)
        self.answered[community] = time.monotonic()
        return map_reply(f"{community} says the port authority pays.", 50)


def maps(server: ScriptedChatServer) -> list[Received]:
    return [r for r in server.chat_requests() if r.stage == "map"]


def bodies(requests: list[Received]) -> dict[str, str]:
    """Each Map request's messages as sent, byte for byte (JSON), by community."""
    return {community_of(r): json.dumps(r.json["messages"], ensure_ascii=False) for r in requests}


def cli(history: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
    return run_cli(*args, "--history", str(history), env=env, timeout=timeout)


def rows(history: Path, sql: str, *args: Any) -> list[Any]:
    """What the history file holds now, read as any SQLite client would ([] before its tables exist)."""
    db = sqlite3.connect(f"file:{history}?mode=ro", uri=True)
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def batch_rows(history: Path, run_id: str) -> dict[int, str]:
    """The batches whose end is committed: index -> status."""
    from graphrag_tui.history.formats import read_records

    groups = [g for (g,) in rows(history, "SELECT records FROM batch_records WHERE run_id = ? ORDER BY seq", run_id)]
    return {i: r.status for i, r in sorted(read_records(groups).items()) if r.status != "pending"}


def start_cli(history: Path, *args: str) -> subprocess.Popen[str]:
    """The CLI started on `history`, left running (to be stopped by a signal)."""
    return subprocess.Popen(
        [EXECUTABLE, *args, "--history", str(history)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), stdin=subprocess.DEVNULL,
    )


def start_query(store: Path, history: Path, base_url: str, *extra: str) -> subprocess.Popen[str]:
    return start_cli(history, "query", str(store), QUESTION, "--base-url", base_url, "--model", "m1", *ONE_EACH,
                     "--json", "--concurrency", "1", *extra)


def wait_for(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("timed out")


def only_run(history: Path) -> str | None:
    found = [r for (r,) in rows(history, "SELECT run_id FROM runs")] if history.exists() else []
    assert len(found) <= 1
    return found[0] if found else None


def uninterrupted(store: Path) -> tuple[dict[str, str], list[str]]:
    """The query run whole, unrecorded: every Map prompt it sends (by community), and its
    batches' communities in order."""
    with ScriptedChatServer(Server()) as server:
        reference = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                            *ONE_EACH, "--json", "--no-history")
    assert reference.code == 0, reference.stderr
    return bodies(maps(server)), [b["community_ids"][0] for b in reference.json["batches"]]


@contextlib.contextmanager
def killed_with_9(process: subprocess.Popen[str], script: Server) -> Iterator[None]:
    """SIGKILL to the query once the block ends; its held calls are released whatever happens."""
    try:
        yield
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        script.release.set()
        if process.poll() is None:
            process.kill()


def test_kill_9_during_map_then_resume_sends_exactly_the_unfinished_batches(store: Path, history: Path) -> None:
    before = sha256(store)
    every_prompt, order = uninterrupted(store)
    held = order[4]  # the fifth batch never answers: the process is killed while it is in flight

    script = Server(hold={held})
    with ScriptedChatServer(script) as server:
        with killed_with_9(start_query(store, history, server.base_url), script):
            run_id = wait_for(lambda: only_run(history))
            wait_for(lambda: len(maps(server)) == 5)  # batches 0-3 answered, batch 4 in flight
            answered_at = script.answered[order[3]]
            wait_for(lambda: sum(s == "succeeded" for s in batch_rows(history, run_id).values()) == 4, timeout=5)
            committed_within = time.monotonic() - answered_at
        first_run = bodies(maps(server))
    assert committed_within < 1.0, committed_within  # a finished batch is on disk within a second
    # A batch has a row once it finished; the others are in the run's plan.
    assert batch_rows(history, run_id) == {0: "succeeded", 1: "succeeded", 2: "succeeded", 3: "succeeded"}
    interrupted = cli(history, "runs", "show", run_id, "--json").json
    assert (interrupted["status"], interrupted["finished_at"], interrupted["answer"]) == ("interrupted", None, None)
    assert [b["status"] for b in interrupted["batches"]] == ["succeeded"] * 4 + ["cancelled"] * 4
    assert [b["community_ids"] for b in interrupted["batches"]] == [[c] for c in order]
    assert interrupted["batch_models"] == ["m1"] * 4 + [None] * 4
    listed = cli(history, "runs", "list", "--json")
    assert listed.code == 0, listed.stderr
    (summary,) = listed.json["runs"]
    assert (summary["run_id"], summary["status"], summary["batch_count"], summary["failed_batch_count"]) == (
        run_id, "interrupted", 8, 0)
    assert summary["model"] == "m1" and summary["store"] == str(store) and summary["parent_run_id"] is None
    assert f"{run_id}  {summary['started_at'][:19]}  interrupted  4/8 ok  m1  " in cli(history, "runs").stdout

    with ScriptedChatServer(Server()) as server:
        resumed = cli(history, "resume", run_id, "--json", "--base-url", server.base_url)  # the model stays m1
    assert resumed.code == 0, resumed.stderr
    sent = bodies(maps(server))
    assert sorted(sent) == sorted(order[4:])  # exactly the unfinished batches
    assert sent == {c: every_prompt[c] for c in order[4:]}  # byte for byte the prompts of the plan
    assert sent[held] == first_run[held]  # and the one in flight at the kill, as it was sent then
    result = resumed.json
    assert (result["run_id"], result["status"], result["parent_run_id"]) == (run_id, "completed", None)
    assert result["batch_models"] == ["m1"] * 8
    assert [b["status"] for b in result["batches"]] == ["succeeded"] * 8
    assert [b["answer"] for b in result["batches"]] == [f"{c} says the port authority pays." for c in order]
    assert result["started_at"] == summary["started_at"]
    shown = cli(history, "runs", "show", run_id, "--json")
    assert shown.json == result  # the same values, timestamps included
    assert f"{run_id}  {summary['started_at'][:19]}  completed    8/8 ok  m1  " in cli(history, "runs").stdout
    assert sha256(store) == before


def test_kill_9_at_the_first_map_call_keeps_the_plan_and_resume_sends_every_batch(store: Path, history: Path) -> None:
    """The plan is in the run's row from its start: a run killed before anything else was
    committed (well within its first flush interval) resumes with every prompt as planned."""
    every_prompt, order = uninterrupted(store)
    script = Server(hold={order[0]})
    with ScriptedChatServer(script) as server:
        with killed_with_9(start_query(store, history, server.base_url), script):
            wait_for(lambda: maps(server))
    run_id = only_run(history)
    assert run_id is not None
    interrupted = cli(history, "runs", "show", run_id, "--json").json
    assert (interrupted["status"], interrupted["batch_count"]) == ("interrupted", 8)
    assert [b["status"] for b in interrupted["batches"]] == ["cancelled"] * 8
    assert [b["community_ids"] for b in interrupted["batches"]] == [[c] for c in order]

    with ScriptedChatServer(Server()) as server:
        resumed = cli(history, "resume", run_id, "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert bodies(maps(server)) == every_prompt  # every batch, byte for byte as planned
    assert (resumed.json["run_id"], resumed.json["status"]) == (run_id, "completed")
    assert [b["answer"] for b in resumed.json["batches"]] == [f"{c} says the port authority pays." for c in order]



def test_a_rerun_whose_every_call_failed_does_not_say_the_model_answered(store: Path, history: Path) -> None:
    """It said `note: m1 @ ... answered`, counting the batches it kept from its parent (found
    by a probe); a re-run that got an answer says so."""
    with ScriptedChatServer(Server(fail={"ns/2"})) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
        assert parent.code == 0, parent.stderr
        server.script = lambda request: Reply({"error": "boom"}, status=500)  # Map and Reduce
        failed = cli(history, "rerun", parent.json["run_id"], "--failed", "--json")
        server.script = Server()
        answered = cli(history, "rerun", parent.json["run_id"], "--failed", "--json")
        where = server.base_url.split("//")[1].split("/")[0]
    index = next(i for i, batch in enumerate(parent.json["batches"]) if batch["status"] == "failed")
    assert (failed.json["status"], failed.json["batches"][index]["status"]) == ("failed", "failed")
    assert "note:" not in failed.stderr, failed.stderr
    assert f"note: m1 @ {where} answered" in answered.stderr.splitlines(), answered.stderr

def test_rerun_failed_sends_exactly_the_failed_batches_again_and_keeps_the_rest(store: Path, history: Path) -> None:
    before = sha256(store)
    failing = {"ns/2", "ns/5"}
    with ScriptedChatServer(Server(fail=failing)) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
        failed_prompts = bodies([r for r in maps(server) if community_of(r) in failing])
        assert parent.code == 0, parent.stderr
        assert (parent.json["status"], parent.json["failed_batch_count"]) == ("partial", 2)
        parent_id = parent.json["run_id"]
        assert cli(history, "runs", "show", parent_id, "--json").json == parent.json

        server.script = Server()  # the endpoint works now; the re-run finds it from the record
        sent_before = len(server.chat_requests())
        child = cli(history, "rerun", parent_id, "--failed", "--json")
        again = [r for r in server.chat_requests()[sent_before:] if r.stage == "map"]
    assert child.code == 0, child.stderr
    assert bodies(again) == failed_prompts  # the same prompts, only those
    assert len(again) == 2
    result = child.json
    assert result["parent_run_id"] == parent_id and result["run_id"] not in (None, parent_id)
    assert (result["status"], result["failed_batch_count"]) == ("completed", 0)
    kept = [i for i, b in enumerate(parent.json["batches"]) if b["status"] == "succeeded"]
    assert len(kept) == 6
    for index in kept:  # the succeeded batches are kept as they were, attempts and all
        assert result["batches"][index] == parent.json["batches"][index]
    assert len(result["reduce"]["candidates"]) == 8  # Reduce ranks them all together
    assert cli(history, "runs", "show", result["run_id"], "--json").json == result
    assert sha256(store) == before

    listed = cli(history, "runs", "--json").json["runs"]
    assert [(r["run_id"], r["parent_run_id"], r["status"]) for r in listed] == [
        (result["run_id"], parent_id, "completed"), (parent_id, None, "partial")]
    nothing = cli(history, "rerun", result["run_id"])  # every batch succeeded: no call is paid for
    assert (nothing.code, nothing.stdout) == (2, "")
    assert nothing.stderr == (f"graphrag-tui: error: run {result['run_id']} has no failed or cancelled batch: "
                              "nothing to send again (--all sends every batch)\n")


def test_a_run_with_no_batch_is_not_run_again(tmp_path: Path, history: Path) -> None:
    """Its rerun made a new, identical no_results run each time."""
    blank = build_store(tmp_path / "blank.db", [{"id": "ns/1", "summary_content": ""}])
    with ScriptedChatServer(Server()) as server:
        first = cli(history, "query", str(blank), QUESTION, "--base-url", server.base_url, "--model", "m1", "--json")
        assert (first.code, first.json["status"], first.json["batch_count"]) == (0, "no_results", 0)
        for mode in ("--failed", "--all"):
            again = cli(history, "rerun", first.json["run_id"], mode)
            assert (again.code, again.stdout) == (2, "")
            assert again.stderr == (f"graphrag-tui: error: run {first.json['run_id']} has no Map batch (its communities "
                                    "have no text to map): nothing to send again; --replan plans again from the store "
                                    "as it is now\n")
    assert len(cli(history, "runs", "--json").json["runs"]) == 1


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_stopped_rerun_keeps_what_it_kept_and_its_resume_counts_only_its_own_calls(
        store: Path, history: Path, stop: signal.Signals) -> None:
    """The kept batches were committed only with the next batch to finish: a rerun killed
    -9 while its one call was in flight had lost them, and its resume paid for all 8 again.
    A resume of a rerun (killed or cancelled) also counted the kept batches' usage (paid by
    the parent) as its own, toward --max-cost too; and a resumed run kept listing the usage
    of its first end."""
    with ScriptedChatServer(UsageServer(fail={"ns/3"})) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
    assert (parent.json["status"], parent.json["usage_total"]["prompt_tokens"]) == ("partial", 7 * 100 + 50)
    held = UsageServer(hold={"ns/3"})
    with ScriptedChatServer(held) as server:
        rerun = start_cli(history, "rerun", parent.json["run_id"], "--json", "--base-url", server.base_url)
        try:
            wait_for(lambda: len(maps(server)) == 1)  # ns/3, in flight
            rerun.send_signal(stop)
            rerun.communicate(timeout=20)
        finally:
            held.release.set()
            if rerun.poll() is None:
                rerun.kill()
    (child_id,) = [r for (r,) in rows(history, "SELECT run_id FROM runs WHERE parent_run_id IS NOT NULL")]
    shown = cli(history, "runs", "show", child_id, "--json").json
    failed = [i for i, b in enumerate(parent.json["batches"]) if b["status"] == "failed"]
    assert [b["status"] for b in shown["batches"]] == [
        "cancelled" if i in failed else b["status"] for i, b in enumerate(parent.json["batches"])]
    assert [b for i, b in enumerate(shown["batches"]) if i not in failed] == [
        b for i, b in enumerate(parent.json["batches"]) if i not in failed]
    assert (shown["status"], shown["usage_total"]) == (  # it paid for nothing that ended
        "interrupted" if stop == signal.SIGKILL else "cancelled", None)
    config = history.parent / "prices.toml"
    config.write_text('[prices."m1"]\ninput = 1000.0\noutput = 0.0\n', encoding="utf-8")
    with ScriptedChatServer(UsageServer()) as server:  # 0.1 $ its Map call, 0.05 $ its Reduce
        resumed = cli(history, "resume", child_id, "--json", "--base-url", server.base_url, "--config", str(config),
                      "--max-cost", "0.3")
        assert [community_of(r) for r in maps(server)] == ["ns/3"]
    assert (resumed.code, resumed.json["status"]) == (0, "completed"), resumed.stderr
    assert resumed.json["usage_total"]["prompt_tokens"] == 100 + 50
    listed = {r["run_id"]: r["usage_total"] for r in cli(history, "runs", "--json").json["runs"]}
    assert listed[child_id] == resumed.json["usage_total"]


def test_rerun_on_another_model_records_which_model_answered_each_batch(store: Path, history: Path) -> None:
    """The key comes from the recorded variable's name, read again; no key is ever stored."""
    failing = {"ns/3"}
    with ScriptedChatServer(Server(fail=failing)) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--api-key-env", "GATEWAY_KEY", "--json", env=clean_env(GATEWAY_KEY="sk-parent-secret"))
        base_url = server.base_url
    assert parent.code == 0, parent.stderr
    failed_index = next(i for i, b in enumerate(parent.json["batches"]) if b["status"] == "failed")
    with ScriptedChatServer(Server()) as other:
        # user:password in a base URL is never sent (the key is), nor recorded
        with_password = other.base_url.replace("http://", "http://gateway:url-secret@")
        child = cli(history, "rerun", parent.json["run_id"], "--base-url", with_password, "--model", "m2", "--json",
                    env=clean_env(GATEWAY_KEY="sk-child-secret"))
    assert child.code == 0, child.stderr
    assert {r.json["model"] for r in other.chat_requests()} == {"m2"}
    assert {r.headers["authorization"] for r in other.chat_requests()} == {"Bearer sk-child-secret"}
    expected = ["m1"] * 8
    expected[failed_index] = "m2"
    assert child.json["batch_models"] == expected
    assert cli(history, "runs", "show", child.json["run_id"], "--json").json["batch_models"] == expected
    settings = {run_id: json.loads(text) for run_id, text in rows(history, "SELECT run_id, model_settings FROM runs")}
    assert settings[parent.json["run_id"]] == {
        "kind": "http", "base_url": base_url, "model": "m1", "api_key_env": "GATEWAY_KEY", "timeout": 120.0,
        "response_format": "json_object", "max_response_bytes": 8388608, "local_llm": False,
        "requests_per_minute": None, "tokens_per_minute": None, "max_rate_wait": 300.0, "temperature": None,
        "top_p": None, "model_seed": None, "reasoning_effort": None, "max_tokens_field": "auto", "api_key_header": None}
    assert (settings[child.json["run_id"]]["model"], settings[child.json["run_id"]]["base_url"]) == ("m2", other.base_url)
    assert settings[child.json["run_id"]]["api_key_env"] == "GATEWAY_KEY"
    for file in history.parent.iterdir():  # the history, its WAL and its index
        assert b"secret" not in file.read_bytes()


def test_a_run_from_another_users_history_sends_nothing_to_its_recorded_endpoint(
        store: Path, history: Path, tmp_path: Path) -> None:
    """A history from elsewhere names any endpoint and any variable: `rerun` without model
    flags would send the user's secret there. Its seal (another user's key, or an edited
    row) does not match: one line, exit 2, nothing sent; with the model's flags it re-runs
    there, with the user's key."""
    with ScriptedChatServer(Server(fail={"ns/3"})) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
        run_id, sent = parent.json["run_id"], len(server.chat_requests())
        edited = tmp_path / "edited" / "history.db"
        edited.parent.mkdir()
        sqlite3.connect(history).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()
        shutil.copy(history, edited)
        db = sqlite3.connect(edited)
        db.execute("UPDATE runs SET model_settings = json_set(model_settings, '$.api_key_env', 'AWS_SECRET_ACCESS_KEY')")
        db.commit()
        db.close()
        elsewhere = tmp_path / "another-user"  # another user's data folder: another key
        for file, env in ((edited, clean_env(AWS_SECRET_ACCESS_KEY="aws-secret")),
                          (history, clean_env(XDG_DATA_HOME=str(elsewhere), OPENAI_API_KEY="sk-secret"))):
            refused = run_cli("rerun", run_id, "--history", str(file), env=env)
            assert (refused.code, refused.stdout) == (2, "")
            assert refused.stderr == (
                f"graphrag-tui: error: run {run_id} was not recorded by this user's graphrag-tui (a history from "
                "elsewhere, an edited row, or a run recorded before version 8): its endpoint and key variable are "
                "not used; give the model (--base-url, --model, --api-key-env, or --local-llm)\n")
        assert len(server.chat_requests()) == sent  # the run's own only
        with ScriptedChatServer(Server()) as mine:
            given = run_cli("rerun", run_id, "--history", str(edited), "--base-url", mine.base_url, "--model", "m2",
                            "--api-key-env", "MY_KEY", "--json", env=clean_env(MY_KEY="sk-mine", AWS_SECRET_ACCESS_KEY="x"))
            assert given.code == 0, given.stderr
            assert {r.headers["authorization"] for r in mine.chat_requests()} == {"Bearer sk-mine"}
        assert len(server.chat_requests()) == sent


def recorded_with_store(store: Path, history: Path, recorded_store: str) -> Any:
    """A run recorded, then its store edited in the history file: what `query --json` printed."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    db = sqlite3.connect(history)
    db.execute("UPDATE runs SET store_path = ?", (recorded_store,))
    db.commit()
    db.close()
    return run


def test_a_database_url_this_user_did_not_record_is_not_opened(store: Path, history: Path, tmp_path: Path) -> None:
    """libpq sends PGPASSWORD to whatever host a URL names: a recorded database is opened
    (a re-run, an export) only when this user's graphrag-tui recorded it."""
    run = recorded_with_store(store, history, "postgresql://bob@collector.example:5432/rag")
    line = (f"graphrag-tui: error: run {run.json['run_id']} was not recorded by this user's graphrag-tui (a history "
            "from elsewhere, an edited row, or a run recorded before version 8): its database "
            "postgresql://bob@collector.example:5432/rag is not opened\n")
    for args in (("runs", "export", run.json["run_id"], str(tmp_path / "out")),
                 ("rerun", run.json["run_id"], "--all", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")):
        refused = cli(history, *args, env=clean_env(PGPASSWORD="pg-secret", PGCONNECT_TIMEOUT="1"))
        assert (refused.code, refused.stdout, refused.stderr) == (2, "", line)


def test_rerun_all_and_a_changed_store_is_refused_unless_replanned(store: Path, history: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(Server()) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
        again = cli(history, "rerun", parent.json["run_id"], "--all", "--json")
        assert again.code == 0, again.stderr
        assert len(maps(server)) == 16  # every batch, twice
        rows = [{"id": c, "summary_content": f"Community {c} keeps the harbour ledger. {PAD}"} for c in COMMUNITIES]
        rows[0]["summary_content"] = "Changed. " + PAD
        store.unlink()
        build_store(store, rows)
        refused = cli(history, "rerun", parent.json["run_id"], "--all", "--json")
        assert (refused.code, refused.stdout) == (2, "")
        assert refused.stderr.count("\n") == 1
        assert f"the store {store} changed since run {parent.json['run_id']}: the content of batch" in refused.stderr
        assert "--replan" in refused.stderr
        replanned = cli(history, "rerun", parent.json["run_id"], "--replan", "--json")
        assert replanned.code == 0, replanned.stderr
        assert len(maps(server)) == 17  # --failed with --replan: only the batch whose content changed
        assert replanned.json["parent_run_id"] == parent.json["run_id"]
        # A community more: every batch moves in the shuffle, and only the new one is sent; the
        # others are kept at their new places (all were sent again: their index had changed).
        store.unlink()
        build_store(store, [*rows, {"id": "ns/9", "summary_content": f"Community ns/9 is new. {PAD}"}])
        grown = cli(history, "rerun", replanned.json["run_id"], "--replan", "--json")
        assert grown.code == 0, grown.stderr
        assert [community_of(r) for r in maps(server)[17:]] == ["ns/9"]
        before = {b["community_ids"][0]: b for b in replanned.json["batches"]}
        moved = 0
        for batch in grown.json["batches"]:
            if batch["community_ids"] != ["ns/9"]:
                assert batch == {**before[batch["community_ids"][0]], "index": batch["index"]}
                moved += before[batch["community_ids"][0]]["index"] != batch["index"]
        assert moved > 0 and grown.json["status"] == "completed"


def cancelled_run(store: Path, history: Path) -> str:
    """A run cancelled (Ctrl+C) at its first batch: resumable, and re-runnable."""
    script = Server(hold=set(COMMUNITIES))
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        try:
            wait_for(lambda: len(maps(server)) == 1)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
        finally:
            script.release.set()
    assert process.returncode == 130, err
    cancelled = json.loads(out)
    assert cancelled["status"] == "cancelled" and cancelled["run_id"]
    return str(cancelled["run_id"])


def test_a_cancelled_run_is_resumed_under_its_id(store: Path, history: Path) -> None:
    run_id = cancelled_run(store, history)
    assert cli(history, "runs", "--status", "cancelled", "--json").json["runs"][0]["run_id"] == run_id
    with ScriptedChatServer(Server()) as server:
        # a unique prefix is enough
        resumed = cli(history, "resume", run_id[:9], "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert len(maps(server)) == 8
    assert (resumed.json["run_id"], resumed.json["status"]) == (run_id, "completed")
    done = cli(history, "resume", run_id)
    assert (done.code, done.stdout) == (2, "")
    assert done.stderr == (f"graphrag-tui: error: run {run_id} is completed: only an interrupted or "
                           "cancelled run can be resumed (`rerun` starts a new run from it)\n")


def test_a_run_being_re_run_is_not_resumed_at_the_same_time(store: Path, history: Path) -> None:
    """Both sent its unfinished batches, and each was paid for."""
    run_id = cancelled_run(store, history)
    script = Server(hold=set(COMMUNITIES))
    with ScriptedChatServer(script) as server:
        rerun = start_cli(history, "rerun", run_id, "--base-url", server.base_url, "--json")
        try:
            ((child,),) = wait_for(lambda: rows(
                history, "SELECT run_id FROM runs WHERE parent_run_id = ? AND status = 'running'", run_id))
            wait_for(lambda: maps(server))
            refused = cli(history, "resume", run_id, "--base-url", server.base_url)
            assert (refused.code, refused.stdout) == (2, "")
            assert refused.stderr == (f"graphrag-tui: error: run {run_id} is being re-run by run {child} in another "
                                      "process: resume it once that has ended\n")
        finally:
            script.release.set()
            out, err = rerun.communicate(timeout=30)
    assert rerun.returncode == 0, err
    sent = [community_of(r) for r in maps(server)]  # the re-run's 8 unfinished batches, each once
    assert len(sent) == len(set(sent)) == 8 and json.loads(out)["parent_run_id"] == run_id
    assert cli(history, "runs", "show", run_id, "--json").json["status"] == "cancelled"


def test_a_re_run_is_not_resumed_while_the_run_it_re_runs_is(store: Path, history: Path) -> None:
    """Both sent the same batches (the parent resumed, then its stopped re-run resumed)."""
    parent = cancelled_run(store, history)
    script = Server(hold=set(COMMUNITIES))
    with ScriptedChatServer(script) as server:
        rerun = start_cli(history, "rerun", parent, "--base-url", server.base_url, "--json")
        try:
            wait_for(lambda: maps(server))
            rerun.send_signal(signal.SIGINT)
            out, err = rerun.communicate(timeout=20)
        finally:
            script.release.set()
    child = json.loads(out)["run_id"]
    assert (rerun.returncode, json.loads(out)["status"]) == (130, "cancelled"), err
    script = Server(hold=set(COMMUNITIES))
    with ScriptedChatServer(script) as server:
        resume = start_cli(history, "resume", parent, "--base-url", server.base_url, "--json")
        try:
            wait_for(lambda: maps(server))
            refused = cli(history, "resume", child, "--base-url", server.base_url)
            again = cli(history, "rerun", child, "--base-url", server.base_url)
        finally:
            script.release.set()
            resume.communicate(timeout=30)
    assert (refused.code, refused.stderr) == (2, f"graphrag-tui: error: run {child} re-runs run {parent}, which is "
                                                 "running in another process: resume it once that has ended\n")
    assert (again.code, again.stderr) == (2, f"graphrag-tui: error: run {child} re-runs run {parent}, which is "
                                             "running in another process: re-run it once that has ended\n")
    assert resume.returncode == 0


def test_a_resume_that_cannot_claim_its_run_sends_nothing(store: Path, history: Path) -> None:
    """The history locked past its busy timeout: the resume went on unrecorded, paid for
    every batch, and left the run interrupted for the next resume to pay again."""
    run_id = cancelled_run(store, history)
    locker = sqlite3.connect(history, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        with ScriptedChatServer(Server()) as server:
            refused = cli(history, "resume", run_id, "--base-url", server.base_url)
        assert (refused.code, refused.stdout, server.chat_requests()) == (2, "", [])
        assert refused.stderr == (f"graphrag-tui: error: run history {history} is locked by another process: run "
                                  f"{run_id} is not resumed (unrecorded, its batches would be sent again by its next "
                                  "resume)\n")
    finally:
        locker.close()
    assert cli(history, "runs", "show", run_id, "--json").json["status"] == "cancelled"


def test_a_re_run_read_before_its_parent_was_resumed_does_not_start(store: Path, history: Path) -> None:
    """The re-run checked its parent's status as it read it; a resume that claimed the parent
    after that went on too, and both sent its unfinished batches."""
    run_id = cancelled_run(store, history)
    with CommunityStore.open(store) as opened:
        rerun = prepare_rerun(RunHistory(history).load(run_id), opened, history=history)
    script = Server(hold=set(COMMUNITIES))
    with ScriptedChatServer(script) as server:
        resume = start_cli(history, "resume", run_id, "--base-url", server.base_url, "--json")
        try:
            wait_for(lambda: maps(server))  # the resume has claimed the run
            with pytest.raises(InputError) as info:
                asyncio.run(rerun.run(ExtractiveModel(), timeout=5))
            assert str(info.value) == f"run {run_id} is running in another process: re-run it once it has ended"
        finally:
            script.release.set()
            out, err = resume.communicate(timeout=30)
    assert resume.returncode == 0, err
    assert [r["run_id"] for r in cli(history, "runs", "--json").json["runs"]] == [run_id]


def test_two_processes_write_one_history_at_once(store: Path, history: Path) -> None:
    """Two runs of eight batches each, committing while the other does (WAL, busy timeout)."""

    def slow(request: Received) -> Reply:
        reply = Server()(request)
        reply.delay = 0.05
        return reply

    with ScriptedChatServer(slow) as server:
        processes = [start_query(store, history, server.base_url) for _ in range(2)]
        outputs = [p.communicate(timeout=60) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert "warning" not in err
    ids = sorted(json.loads(out)["run_id"] for out, _ in outputs)
    listed = cli(history, "runs", "--json").json["runs"]
    assert sorted(r["run_id"] for r in listed) == ids
    assert {r["status"] for r in listed} == {"completed"}
    for run_id in ids:
        assert batch_rows(history, run_id) == dict.fromkeys(range(8), "succeeded")


@pytest.mark.parametrize("command", [
    ["runs", "show", "zzzz"], ["runs", "export", "zzzz", "out"], ["runs", "delete", "zzzz"],
    ["rerun", "zzzz"], ["resume", "zzzz"], ["runs", "show", "not-an-id!"],
])
def test_an_unknown_run_id_is_one_line_and_exit_2(store: Path, history: Path, command: list[str]) -> None:
    with ScriptedChatServer(Server()) as server:
        cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH)
    run = cli(history, *command)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: no run {command[-2] if 'export' in command else command[-1]!r} " \
                         f"in the run history {history}\n"



def test_runs_export_of_a_run_whose_store_is_gone_names_its_communities(store: Path, history: Path,
                                                                        tmp_path: Path) -> None:
    """It was exit 2, `Store not found`, and nothing written, though the whole run is in the
    history (found by a probe)."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    store.rename(tmp_path / "moved.db")
    exported = cli(history, "runs", "export", run.json["run_id"], str(tmp_path / "report"))
    assert exported.code == 0, exported.stderr
    assert exported.stdout == f"wrote {tmp_path / 'report.json'} and {tmp_path / 'report.md'}\n"
    assert exported.stderr.startswith("note: ") and exported.stderr.count("\n") == 1
    assert exported.stderr.endswith(": the report names the communities without their text\n")
    cited = list(dict.fromkeys(c for answer in run.json["selected_map_answers"] for c in answer["community_ids"]))
    assert cited
    report = (tmp_path / "report.md").read_text()
    assert report.endswith("## Communities\n\n_The run's store was not at hand when this report was written: its "
                           "communities' summaries, claims and sources are not shown._\n\n"
                           + "".join(f"- {c}\n" for c in cited))


def test_a_run_whose_id_no_run_can_have_can_be_deleted(store: Path, history: Path) -> None:
    """An edited file's run with an id like `../../x y` was listed as unreadable, and `runs
    delete` refused it as unknown: only sqlite3 could remove it (found by a probe)."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    odd = "../../x y\x1b[2J"
    for table in ("runs", "run_plans", "batch_records"):
        db = sqlite3.connect(history)
        db.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (odd, run.json["run_id"]))
        db.commit()
        db.close()
    listed = cli(history, "runs")
    assert (listed.code, listed.stdout) == (0, "no recorded runs\n") and listed.stderr.startswith("warning: 1 run ")
    deleted = cli(history, "runs", "delete", odd)
    assert (deleted.code, deleted.stdout, deleted.stderr) == (0, "deleted run ../../x y␛[2J\n", "")
    assert rows(history, "SELECT count(*) FROM runs") == [(0,)]
    assert cli(history, "runs", "delete", "../other").stderr == (
        f"graphrag-tui: error: no run '../other' in the run history {history}\n")

def test_runs_export_writes_the_apps_files_and_delete_removes_the_run(store: Path, history: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    run_id = run.json["run_id"]
    (tmp_path / "out").mkdir()
    # no file name: one line (it was an internal error); "" is an empty path; `out/` and `~`
    # wrote out.json beside the folder, and /root.json
    for folder in (".", "/", f"{tmp_path}/out/", str(tmp_path / "out"), "~"):
        refused = cli(history, "runs", "export", run_id, folder)
        assert (refused.code, refused.stdout) == (2, "")
        assert refused.stderr == f"graphrag-tui: error: Cannot export: {folder!r} names a folder, not a file\n"
    assert list(tmp_path.glob("*.json")) == [] and list((tmp_path / "out").iterdir()) == []
    exported = cli(history, "runs", "export", run_id, str(tmp_path / "report"))
    assert exported.code == 0, exported.stderr
    assert exported.stdout == f"wrote {tmp_path / 'report.json'} and {tmp_path / 'report.md'}\n"
    # the run's JSON, as `query --json` gave it (its run id, parent, times and models were left out)
    assert json.loads((tmp_path / "report.json").read_text()) == run.json
    # the run's lines as the app's export of a live run has them (they were only its status)
    started, finished = (datetime.fromisoformat(run.json[k]) for k in ("started_at", "finished_at"))
    options = SearchOptions(map_budget=330, map_reserve=0)
    assert (tmp_path / "report.md").read_text().startswith(
        f"# {QUESTION}\n\n## Run\n\n- Time: {started:%Y-%m-%d %H:%M:%S} UTC\n"
        f"- Duration: {(finished - started).total_seconds():.1f} s\n- Status: completed\n- Model: m1\n- Store: {store}\n"
        f"- Namespace: ns\n- Level: leaf\n- Seed: 7\n- Budgets: Map 330 tokens (reserve 0), Reduce "
        f"{options.reduce_budget} tokens (reserve {options.reduce_reserve}); concurrency {options.concurrency}\n"
        "- Summaries: 8\n- Map batches: 8 (0 failed)\n")
    (tmp_path / "report.md").write_text("edited by the analyst\n")
    again = cli(history, "runs", "export", run_id, str(tmp_path / "report"))
    assert (again.code, again.stdout) == (2, "")
    assert again.stderr == (f"graphrag-tui: error: runs export: {tmp_path / 'report.json'} and {tmp_path / 'report.md'} "
                            "exist; nothing is written (--overwrite replaces them)\n")
    assert (tmp_path / "report.md").read_text() == "edited by the analyst\n"
    replaced = cli(history, "runs", "export", run_id, str(tmp_path / "report"), "--overwrite")
    assert (replaced.code, replaced.stdout) == (0, exported.stdout)
    assert (tmp_path / "report.md").read_text().startswith(f"# {QUESTION}\n")
    deleted = cli(history, "runs", "delete", run_id)
    assert (deleted.code, deleted.stdout) == (0, f"deleted run {run_id}\n")
    assert cli(history, "runs", "--json").json == {"runs": []}
    assert cli(history, "runs", "show", run_id).code == 2


def test_query_json_and_text_name_the_run(store: Path, history: Path) -> None:
    with ScriptedChatServer(Server()) as server:
        text = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH)
    assert text.code == 0, text.stderr
    run_id = text.stdout.splitlines()[-1].removeprefix("run ")
    (listed,) = cli(history, "runs", "--json").json["runs"]
    assert listed["run_id"] == run_id and len(run_id) == 12
    assert stat.S_IMODE(history.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", ["device", "fifo", "dangling link", "root", "under a file"])
def test_a_history_that_is_not_a_regular_file_is_a_warning_and_nothing_is_made_beside_it(
        store: Path, tmp_path: Path, kind: str) -> None:
    """/dev/null as the history made /dev/null-journal (as root); a link to nothing had
    SQLite make its target, readable by all; `/` was an internal error (it has no name to
    name its WAL after), and a path under a file said `File exists`."""
    if kind == "device":
        history, reason = Path("/dev/null"), "is not a regular file"
    elif kind == "root":
        history, reason = Path("/"), "is not a regular file"
    elif kind == "under a file":
        (tmp_path / "notes.txt").write_text("")
        history, reason = tmp_path / "notes.txt" / "h.db", f"cannot be made: {tmp_path / 'notes.txt'} is not a folder"
    elif kind == "fifo":
        history, reason = tmp_path / "pipe.db", "is not a regular file"
        os.mkfifo(history)
    else:
        history, reason = tmp_path / "link.db", "is a symbolic link to nothing"
        history.symlink_to(tmp_path / "target.db")
    watched = tmp_path if kind == "under a file" else history.parent
    before = sorted(os.listdir(watched)) if kind not in ("device", "root") else None
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    assert run.code == 0 and run.json["run_id"] is None and run.json["status"] == "completed"
    assert run.stderr.splitlines()[0] == f"warning: run history {history} {reason}; this run is not recorded"
    if before is not None:
        assert sorted(os.listdir(watched)) == before
    else:
        assert not Path(f"{history}-journal").exists()


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, "newer", "schema-byte"])
def test_a_corrupt_or_newer_history_is_a_warning_and_left_untouched(
    store: Path, history: Path, content: bytes | str
) -> None:
    history.parent.mkdir(parents=True)
    if content == "schema-byte":  # one byte of a name in the schema damaged: Python could not decode SQLite's message
        connect(history).close()
        with contextlib.closing(sqlite3.connect(history)) as db:
            db.execute("PRAGMA journal_mode = DELETE")
        name = b"sqlite_autoindex_run_plans_1"
        history.write_bytes(history.read_bytes().replace(name, name.replace(b"n", b"\xf7", 1)))
        reason = "is not a run history or is damaged (its schema cannot be read)"
    elif content == "newer":
        with sqlite3.connect(history) as db:
            db.execute("CREATE TABLE runs (x)")
            db.execute("PRAGMA user_version = 99")
        db.close()
        reason = f"was written by a newer graphrag-tui (version 99; this one reads up to {SCHEMA_VERSION}): it is left as it is"
    else:
        history.write_bytes(content)  # type: ignore[arg-type]
        reason = "is not a run history or is damaged (file is not a database)"
    before = history.read_bytes()
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    assert run.code == 0
    assert run.json["status"] == "completed" and run.json["run_id"] is None
    assert run.stderr.splitlines() == [  # the warning as recording starts; the note once the model answered
        f"warning: run history {history} {reason}; this run is not recorded",
        "note: m1 @ " + server.base_url.split("//")[1].split("/")[0] + " answered",
    ]
    assert history.read_bytes() == before
    assert sorted(p.name for p in history.parent.iterdir()) == ["history.db"]
    listed = cli(history, "runs")
    assert (listed.code, listed.stdout) == (2, "")
    assert listed.stderr == f"graphrag-tui: error: run history {history} {reason}\n"


def damaged_result() -> str:
    """A result summary whose Reduce candidates are a list, not columns."""
    return json.dumps({"reduce_candidates": ["batch_index"]})


@pytest.mark.parametrize(("damage", "commands"), [
    pytest.param("UPDATE runs SET usage_total = '" + "[" * 100_000 + "'", [("runs",), ("runs", "show", "{id}")],
                 id="deep-usage"),
    pytest.param("UPDATE runs SET question = X'41'", [("runs",), ("runs", "--json"), ("runs", "show", "{id}")],
                 id="bytes-question"),
    pytest.param("UPDATE runs SET status = X'00'", [("runs",)], id="bytes-status"),
    pytest.param("UPDATE runs SET batch_count = 'x', failed_batch_count = 'y'", [("runs",)], id="text-counts"),
    pytest.param("UPDATE runs SET result = '" + damaged_result() + "'",
                 [("runs", "show", "{id}"), ("rerun", "{id}", "--all")], id="candidates-list"),
    pytest.param("UPDATE runs SET model_settings = '[1, 2]'", [("runs", "show", "{id}"), ("rerun", "{id}", "--all")],
                 id="settings-list"),
    pytest.param("UPDATE runs SET model_settings = '{\"kind\": \"http\", \"base_url\": 5}'", [("rerun", "{id}", "--all")],
                 id="settings-bad-url"),
    pytest.param("UPDATE runs SET seed = 'abc'", [("runs", "show", "{id}"), ("rerun", "{id}", "--all")], id="text-seed"),
    # (`runs export` writes its report without the store: test_runs_export_of_a_run_whose_store_is_gone...)
    pytest.param("UPDATE runs SET store_path = '/tmp/' || printf('%.300c', 'a')", [("rerun", "{id}", "--all")],
                 id="long-store-path"),
    pytest.param("PRAGMA user_version = -1", [("runs",), ("runs", "show", "{id}"), ("rerun", "{id}", "--all")],
                 id="negative-version"),
    # ids and statuses no run can have (the app keyed its rows by them, and drew them raw)
    pytest.param("UPDATE runs SET run_id = 'ab' || char(27) || '[2J'", [("runs",), ("runs", "--json")],
                 id="escape-in-id"),
    pytest.param("UPDATE runs SET parent_run_id = char(27) || ']52;c;eA=='", [("runs",), ("runs", "show", "{id}")],
                 id="escape-in-parent"),
    pytest.param("UPDATE runs SET status = 'done' || char(8238)", [("runs",), ("runs", "show", "{id}")],
                 id="unknown-status"),
    pytest.param("UPDATE runs SET batch_count = -5", [("runs",), ("runs", "--json")], id="negative-count"),
    # a count past the plan's was shown as the run's (0 of 1,000,000,000,000,000,000 batches failed)
    pytest.param("UPDATE runs SET batch_count = 1000000000000000000", [("runs", "show", "{id}"), ("resume", "{id}"),
                                                                       ("rerun", "{id}", "--all")], id="count-past-plan"),
    pytest.param("UPDATE runs SET failed_batch_count = -1", [("runs",), ("runs", "--json")], id="negative-failed"),
    # options no run can have: concurrency 0 sent nothing and ended a resumed run `no_results`
    pytest.param("UPDATE runs SET options = json_set(options, '$.concurrency', 0), status = 'interrupted'",
                 [("rerun", "{id}", "--all"), ("resume", "{id}")], id="concurrency-0"),
    pytest.param("UPDATE runs SET options = json_set(options, '$.map_reserve', 99999)",
                 [("rerun", "{id}", "--all")], id="reserve-over-budget"),
    # `runs list --json` printed NaN and Infinity, which JSON does not have
    pytest.param("UPDATE runs SET usage_total = '{\"prompt_tokens\": NaN, \"cost\": Infinity}'",
                 [("runs", "--json"), ("runs", "show", "{id}", "--json")], id="nan-usage"),
    # one past a float printed Infinity; a text, a negative or a boolean count was listed as it was
    *(pytest.param(f"UPDATE runs SET usage_total = '{{\"prompt_tokens\": {count}}}'",
                   [("runs", "--json"), ("runs", "show", "{id}", "--json")], id=f"usage-{name}")
      for name, count in (("1e400", "1e400"), ("text", '\"abc\"'), ("negative", "-5"), ("boolean", "true"))),
    # an object without the counts was listed as zeros
    *(pytest.param(f"UPDATE runs SET usage_total = '{usage}'", [("runs", "--json")], id=f"usage-{name}")
      for name, usage in (("empty", "{}"), ("extra", '{"prompt_tokens": 5, "completion_tokens": 0, "cached_tokens": 0, '
                                                      '"total_tokens": 5, "bogus": 1}'))),
    # what an unfinished run cost so far: a resume adds to it, `runs show` shows it
    *(pytest.param(f"UPDATE runs SET status = 'interrupted', owner = NULL, cost_total = {cost}",
                   [("runs", "show", "{id}", "--json"), ("resume", "{id}")], id=f"cost-{name}")
      for name, cost in (("negative", "'{\"input\": 0, \"output\": 0, \"cached\": 0, \"total\": -1}'"),
                         ("nan", "'{\"input\": NaN, \"output\": 0, \"cached\": 0, \"total\": 0}'"),
                         ("past-any-run", "'{\"input\": 0, \"output\": 0, \"cached\": 0, \"total\": 1e31}'"),
                         ("text", "'{\"input\": \"1\", \"output\": 0, \"cached\": 0, \"total\": 1}'"),
                         ("empty", "'{}'"), ("list", "'[1]'"), ("bytes", "X'00'"))),
    # SQL of the file's own that runs as it is read or written: 2.2 GB to list the runs
    pytest.param("ALTER TABLE runs ADD COLUMN big TEXT AS (hex(zeroblob(1000)))", [("runs",), ("runs", "delete", "{id}")],
                 id="generated-column"),
    pytest.param("CREATE INDEX evil ON runs (run_id) WHERE length(hex(zeroblob(1000))) > 1",
                 [("runs",), ("runs", "delete", "{id}")], id="partial-index"),
    pytest.param("ALTER TABLE runs ADD COLUMN checked TEXT CHECK (length(hex(zeroblob(1000))) > 1)",
                 [("runs",), ("rerun", "{id}", "--all")], id="check-constraint"),
    # SQLite reads a comment as a space: `AS/**/(` hid the generated column from the check
    pytest.param("ALTER TABLE runs ADD COLUMN big TEXT AS/**/(hex(zeroblob(1000)))",
                 [("runs",), ("runs", "delete", "{id}")], id="generated-column-comment"),
    pytest.param("ALTER TABLE runs ADD COLUMN big TEXT AS--\n(hex(zeroblob(1000)))", [("runs",)],
                 id="generated-column-line-comment"),
])
def test_a_damaged_history_row_is_one_line_for_every_command(
    store: Path, history: Path, tmp_path: Path, damage: str, commands: list[tuple[str, ...]]
) -> None:
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
        assert run.code == 0, run.stderr
        db = sqlite3.connect(history)
        db.execute(damage)
        db.commit()
        db.close()
        for command in commands:
            args = [a.format(id=run.json["run_id"], tmp=tmp_path) for a in command]
            done = cli(history, *args, "--no-config")
            if command in (("runs",), ("runs", "--json")) and damage.startswith("UPDATE"):  # a row, not the file
                # the list goes on without the run (one damaged row hid every other), and says so
                assert (done.code, done.stdout) == (0, "no recorded runs\n" if len(command) == 1 else '{"runs": []}\n')
                assert done.stderr.startswith("warning: 1 run of the history cannot be read and is not listed (the "
                                              f"first: run history {history}: a run cannot be read: "), done.stderr
                assert done.stderr.count("\n") == 1 and "internal error" not in done.stderr
                continue
            assert (done.code, done.stdout) == (2, ""), (command, done.stderr)
            assert done.stderr.startswith("graphrag-tui: error: ") and done.stderr.count("\n") == 1, done.stderr
            assert "internal error" not in done.stderr
        assert len(server.chat_requests()) == 9  # the run's own: nothing was sent again


def test_a_password_written_into_a_recorded_store_url_is_never_shown(store: Path, history: Path) -> None:
    """The history records a database's URL masked; a file written otherwise (edited, or
    by another program) is masked as it is read, in every form."""
    run = recorded_with_store(store, history, "postgresql://bob:SECRETDB6@127.0.0.1:1/rag")
    masked = "postgresql://bob:***@127.0.0.1:1/rag"
    assert cli(history, "runs", "--json").json["runs"][0]["store"] == masked
    for args in (("runs",), ("runs", "show", run.json["run_id"]), ("runs", "--json")):
        shown = cli(history, *args)
        assert shown.code == 0 and "SECRETDB6" not in shown.stdout + shown.stderr


def test_a_compressed_cell_that_would_unpack_past_100_times_its_size_is_refused(store: Path, history: Path) -> None:
    """A 1 MB cell of deflated spaces unpacks to 1 GiB: `runs show` took 2 GB of memory and
    more than 7 s before its one line. It stops at the limit now (256 MiB, the floor for a
    cell this small)."""
    import zlib

    from graphrag_tui.history.texts import RAW_DEFLATE

    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    bomb = RAW_DEFLATE + b"".join(compressor.compress(b" " * (1 << 26)) for _ in range(16)) + compressor.flush()
    db = sqlite3.connect(history)
    db.execute("UPDATE runs SET result = ?", (bomb,))
    db.commit()
    db.close()
    # the command's own peak, from a process whose one child it is (this one's RUSAGE_CHILDREN
    # counts every child reaped so far, another test's server's too)
    measured = subprocess.run(
        [sys.executable, "-c", "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], "
         "stdin=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
         "sys.exit(done.returncode)", EXECUTABLE, "runs", "show", run.json["run_id"], "--history", str(history)],
        capture_output=True, text=True, env=clean_env(), timeout=60)
    *shown, peak = measured.stdout.splitlines()
    assert (measured.returncode, shown) == (2, [])
    assert measured.stderr == (f"graphrag-tui: error: run history {history}: run {run.json['run_id']} cannot be read: a "
                               f"recorded text of {len(bomb)} bytes unpacks to more than {256 << 20} (over 100 times "
                               "its size): graphrag-tui never writes one\n")
    assert int(peak) < 600 * 1024, peak  # KiB


ENDLESS = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c)"


@pytest.mark.parametrize("schema", [
    f"CREATE TRIGGER endless BEFORE INSERT ON runs BEGIN SELECT {ENDLESS}; END",
    f"ALTER TABLE runs RENAME TO runs_real; CREATE VIEW runs AS SELECT * FROM runs_real WHERE {ENDLESS} > 0",
], ids=["trigger", "view"])
def test_a_history_with_views_or_triggers_is_refused_before_its_sql_runs(store: Path, history: Path, schema: str) -> None:
    """Their SQL would run as the history is read or written: here, forever (the commands hung)."""
    with ScriptedChatServer(Server()) as server:
        first = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH)
        assert first.code == 0, first.stderr
        db = sqlite3.connect(history)
        db.executescript(schema)
        db.close()
        refusal = f"run history {history} holds views or triggers, which graphrag-tui never makes: it is left as it is"
        listed = cli(history, "runs", timeout=30)
        assert (listed.code, listed.stdout, listed.stderr) == (2, "", f"graphrag-tui: error: {refusal}\n")
        again = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                    "--json", timeout=30)
    assert again.code == 0 and again.json["run_id"] is None and again.json["status"] == "completed"
    assert again.stderr.splitlines()[0] == f"warning: {refusal}; this run is not recorded"


def test_columns_a_file_added_to_run_plans_do_not_hide_the_runs_own(store: Path, history: Path) -> None:
    """A `status` column added to run_plans made `status` ambiguous where runs are read with
    their plans: `runs show` and `resume` of every run were an error."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    db = sqlite3.connect(history)
    db.executescript("ALTER TABLE run_plans ADD COLUMN status TEXT; ALTER TABLE run_plans ADD COLUMN question TEXT; "
                     "UPDATE run_plans SET status = 'failed', question = 'planted'")
    db.close()
    shown = cli(history, "runs", "show", run.json["run_id"], "--json")
    assert shown.code == 0, shown.stderr
    assert shown.json == run.json


@pytest.mark.parametrize("kept", [True, 1, "yes", None])
def test_a_kept_mark_on_a_run_that_kept_nothing_is_one_line(store: Path, history: Path, kept: Any) -> None:
    """Batches marked kept (from a re-run's parent) are not counted as the run's spending: on
    a run with no parent, the mark would hide what it paid, from --max-cost too."""
    with ScriptedChatServer(UsageServer()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    db = sqlite3.connect(history)
    for seq, records in db.execute("SELECT seq, records FROM batch_records").fetchall():
        group = json.loads(unpack_text(records))
        db.execute("UPDATE batch_records SET records = ? WHERE seq = ?",
                   (pack_utf8(json.dumps({"kept": kept, **group}).encode()), seq))
    db.commit()
    db.close()
    shown = cli(history, "runs", "show", run.json["run_id"], "--json")
    assert (shown.code, shown.stdout) == (2, "")
    why = (f"run {run.json['run_id']} has batches kept from a parent run, and no parent run" if kept is True else
           f"a group of batch records says it was kept with {str(kept)!r}, not true or false")
    assert shown.stderr == (f"graphrag-tui: error: run history {history}: run {run.json['run_id']} cannot be read: "
                            f"{why}\n")


def test_a_kept_mark_on_a_reruns_own_group_is_one_line(store: Path, history: Path) -> None:
    """A re-run's kept batches are its first group, written as it starts; a later group is
    what it paid for, and a kept mark there would hide that from a resume's --max-cost."""
    with ScriptedChatServer(Server(fail={"ns/2", "ns/5"})) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
        server.script = Server()
        child = cli(history, "rerun", parent.json["run_id"], "--failed", "--json")
    assert child.code == 0, child.stderr
    child_id = child.json["run_id"]
    groups = rows(history, "SELECT seq, records FROM batch_records WHERE run_id = ? ORDER BY seq", child_id)
    assert [json.loads(unpack_text(records)).get("kept") for _, records in groups] == [True, None]
    db = sqlite3.connect(history)
    seq, records = groups[1]
    db.execute("UPDATE batch_records SET records = ? WHERE run_id = ? AND seq = ?",
               (pack_utf8(json.dumps({"kept": True, **json.loads(unpack_text(records))}).encode()), child_id, seq))
    db.commit()
    db.close()
    for command in (["runs", "show", child_id, "--json"], ["resume", child_id, "--json"]):
        refused = cli(history, *command)
        assert (refused.code, refused.stdout) == (2, ""), refused.stderr
        assert refused.stderr == (
            f"graphrag-tui: error: run history {history}: run {child_id} cannot be read: a group of batch records after "
            "the run's first says it was kept from a parent run: only the first, written as the run started, can be\n")


def test_a_history_of_a_negative_version_is_a_warning_and_the_run_goes_on(store: Path, history: Path) -> None:
    history.parent.mkdir(parents=True)
    with sqlite3.connect(history) as db:
        db.execute("PRAGMA user_version = -1")
    db.close()
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    assert run.code == 0 and run.json["status"] == "completed" and run.json["run_id"] is None
    assert run.stderr.splitlines()[0] == (
        f"warning: run history {history} is not a run history or is damaged (version -1); this run is not recorded")


def test_a_running_run_whose_owner_has_an_impossible_pid_is_interrupted(store: Path, history: Path) -> None:
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    for pid in ("1e30", "Infinity", "-1", "0", "4294967296"):
        owner = f'{{"host": {json.dumps(socket.gethostname())}, "boot": null, "pid": {pid}, "start": null}}'
        with sqlite3.connect(history) as db:
            db.execute("UPDATE runs SET status = 'running', owner = ?", (owner,))
        db.close()
        listed = cli(history, "runs", "--json", "--no-config")
        assert listed.code == 0, listed.stderr
        assert [r["status"] for r in listed.json["runs"]] == ["interrupted"], pid
    assert run.json["run_id"] == listed.json["runs"][0]["run_id"]


def test_a_locked_history_is_a_warning_and_the_run_goes_on(store: Path, history: Path) -> None:
    with ScriptedChatServer(Server()) as server:
        cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH)
        holder = sqlite3.connect(history, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_EACH, "--json")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    assert run.code == 0 and run.json["run_id"] is None and run.json["status"] == "completed"
    assert run.stderr.splitlines()[-2:] == [
        f"warning: run history {history} is locked by another process; this run is not recorded",
        "note: m1 @ " + server.base_url.split("//")[1].split("/")[0] + " answered",
    ]


def test_where_runs_are_recorded(store: Path, tmp_path: Path) -> None:
    both = run_cli("query", str(store), QUESTION, "--history", str(tmp_path / "h.db"), "--no-history")
    assert (both.code, both.stderr) == (2, "graphrag-tui: error: --history and --no-history cannot be used together\n")
    env_history = tmp_path / "env" / "runs.db"
    env = clean_env(GRAPHRAG_TUI_HISTORY=str(env_history))
    recorded = run_cli("query", str(store), QUESTION, "--map-budget", "330", "--map-reserve", "0", "--json", env=env)
    assert recorded.code == 0, recorded.stderr
    assert run_cli("runs", "--json", env=env).json["runs"][0]["run_id"] == recorded.json["run_id"]
    assert stat.S_IMODE(env_history.stat().st_mode) == 0o600
    config = tmp_path / "config.toml"
    off = tmp_path / "off.db"
    config.write_text(f'[history]\npath = "{off}"\nenabled = false\n')
    unrecorded = run_cli("query", str(store), QUESTION, "--config", str(config), "--json")
    assert unrecorded.code == 0 and unrecorded.json["run_id"] is None and not off.exists()
    flagged = run_cli("query", str(store), QUESTION, "--config", str(config), "--history", str(off), "--json")
    assert flagged.json["run_id"] is not None and off.exists()
    assert run_cli("runs", "--config", str(config), "--json").json["runs"][0]["run_id"] == flagged.json["run_id"]
    default = run_cli("query", str(store), QUESTION, "--no-config", "--json")
    data_home = Path(clean_env()["XDG_DATA_HOME"])
    assert (data_home / "graphrag-tui" / "history.db").exists()
    assert default.json["run_id"] in run_cli("runs", "--limit", "0").stdout


def test_two_runs_compared_batch_by_batch_and_by_the_communities_their_answers_rest_on(
    store: Path, history: Path
) -> None:
    from graphrag_tui.history import RunHistory
    from graphrag_tui.session.compare import compare_runs

    with ScriptedChatServer(Server(fail={"ns/4"})) as server:
        first = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                    "--json").json
        server.script = Server()
        second = cli(history, "rerun", first["run_id"], "--json").json
    compared = compare_runs(RunHistory(history).load(first["run_id"]), RunHistory(history).load(second["run_id"]))
    failed_index = next(i for i, b in enumerate(first["batches"]) if b["status"] == "failed")
    assert [p.index for p in compared.batches if p.differs] == [failed_index]
    assert all(p.same_content for p in compared.batches)
    pair = compared.batches[failed_index]
    assert (pair.left.status, pair.right.status, pair.right.usefulness) == ("failed", "succeeded", 50)  # type: ignore[union-attr]
    assert compared.cited_by_right_only == ("ns/4",)
    assert compared.cited_by_left_only == ()
    assert sorted(compared.cited_by_both) == sorted(c for c in COMMUNITIES if c != "ns/4")


class UsageServer(Server):
    """As Server, every reply with the `usage` a server reports: 100 prompt and 10
    completion tokens per Map answer, 50 and 5 for Reduce."""

    def __call__(self, request: Received) -> Reply:
        if request.stage == "reduce":
            return Reply(completion(json.dumps({"answer": "The port authority funds it."}), usage=usage(50, 5)))
        reply = super().__call__(request)
        if reply.status != 200:
            return reply
        body = json.dumps({"answer": f"{community_of(request)} says the port authority pays.", "usefulness": 50})
        return Reply(completion(body, usage=usage(100, 10)), gate=reply.gate)


class FirstReplyUnusable(UsageServer):
    """As UsageServer; the first Map reply for each of `retried` is not JSON (its usage is
    still reported), so that batch is paid for twice."""

    def __init__(self, retried: set[str], **script: Any) -> None:
        super().__init__(**script)
        self.retried = set(retried)

    def __call__(self, request: Received) -> Reply:
        if request.stage == "map" and community_of(request) in self.retried:
            self.retried.discard(community_of(request))
            return Reply(completion("not json", usage=usage(100, 10)))
        return super().__call__(request)


def tokens(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": 0,
            "total_tokens": prompt + completion}


def test_a_run_lists_what_it_paid_for_while_it_goes_after_a_kill_and_across_resumes(store: Path, history: Path) -> None:
    """The list showed a run's usage only once it ended: an interrupted run, and a resume
    until it ended, listed none. Each commit now adds what its attempts reported (a retried
    batch's first attempt once), a resume starts from what was paid before, and the run's end
    lists the result's usage."""
    _, order = uninterrupted(store)

    def listed(run_id: str) -> tuple[str, Any]:
        return {r["run_id"]: (r["status"], r["usage_total"]) for r in cli(history, "runs", "--json").json["runs"]}[run_id]

    def killed_after(process: subprocess.Popen[str], script: Server, committed: int, calls: int) -> str:
        """The run's id, killed -9 once `committed` batches are, `calls` Map calls paid for."""
        with killed_with_9(process, script):
            run_id = wait_for(lambda: only_run(history))
            wait_for(lambda: len(batch_rows(history, run_id)) == committed)
            assert listed(run_id) == ("running", tokens(100 * calls, 10 * calls))
        return run_id

    first = FirstReplyUnusable({order[0]}, hold={order[3]})
    with ScriptedChatServer(first) as server:
        run_id = killed_after(start_query(store, history, server.base_url), first, 3, 4)
    assert listed(run_id) == ("interrupted", tokens(400, 40))
    assert cli(history, "runs", "show", run_id, "--json").json["usage_total"] == tokens(400, 40)

    second = FirstReplyUnusable({order[5]}, hold={order[6]})
    with ScriptedChatServer(second) as server:
        resume = start_cli(history, "resume", run_id, "--json", "--base-url", server.base_url)  # (one at a time)
        assert killed_after(resume, second, 6, 4 + 4) == run_id  # four calls before it, four its own
    assert listed(run_id) == ("interrupted", tokens(800, 80))
    assert cli(history, "runs", "show", run_id, "--json").json["usage_total"] == tokens(800, 80)

    with ScriptedChatServer(UsageServer()) as server:
        resumed = cli(history, "resume", run_id, "--json", "--base-url", server.base_url)
    assert (resumed.code, resumed.json["usage_total"]) == (0, tokens(800 + 200 + 50, 80 + 20 + 5)), resumed.stderr
    assert listed(run_id) == ("completed", resumed.json["usage_total"])


def test_a_run_resumed_on_another_model_is_priced_at_each_models_prices(
    store: Path, history: Path, tmp_path: Path
) -> None:
    """A resume priced the whole run at its own model's prices, the calls before it too, and
    judged --max-cost by that: a run that had spent $0.36 on m1, resumed on a model a hundred
    times cheaper, said it had cost $0.0102 and went past a limit of $0.30. `runs show` of the
    interrupted run gave no cost at all."""
    config = tmp_path / "config.toml"
    config.write_text('[prices."m1"]\ninput = 1000.0\noutput = 2000.0\n[prices."m2"]\ninput = 10.0\noutput = 20.0\n',
                      encoding="utf-8")
    priced = [a for a in ONE_EACH if a != "--no-config"] + ["--config", str(config)]
    _, order = uninterrupted(store)
    first = UsageServer(hold={order[3]})
    with ScriptedChatServer(first) as server:
        query = start_cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                          *priced, "--concurrency", "1", "--json")
        with killed_with_9(query, first):
            run_id = wait_for(lambda: only_run(history))
            wait_for(lambda: len(batch_rows(history, run_id)) == 3)
    # three Map calls on m1, each 100 prompt tokens at $1000/M and 10 completion tokens at $2000/M
    shown = cli(history, "runs", "show", run_id, "--json")
    assert (shown.json["usage_total"], shown.json["cost"]) == (
        tokens(300, 30), {"input": 0.3, "output": 0.06, "cached": 0.0, "total": 0.36, "currency": "USD"})
    text = cli(history, "runs", "show", run_id).stdout.splitlines()
    assert text[0] == "status: interrupted"  # (it said `cancelled`, the result's, and `interrupted` at the end)
    assert "cost: $0.3600 (input $0.3000, cached $0.0000, output $0.0600)" in text
    assert text[-1].startswith(f"run {run_id}: interrupted, started ")
    with ScriptedChatServer(UsageServer()) as server:
        capped = cli(history, "resume", run_id, "--base-url", server.base_url, "--model", "m2", "--max-cost", "0.3",
                     "--config", str(config), "--json")
        assert (capped.code, capped.json["status"], capped.json["cost"]["total"]) == (130, "cancelled", 0.36)
        assert maps(server) == []  # what was spent before reached the limit: nothing more is sent
        resumed = cli(history, "resume", run_id, "--base-url", server.base_url, "--model", "m2",
                      "--config", str(config), "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json["batch_models"].count("m1") == 3 and resumed.json["batch_models"].count("m2") == 5
    # and m2's own: five Map calls (100 and 10 tokens) and Reduce (50 and 5) at $10/M and $20/M
    assert resumed.json["usage_total"] == tokens(300 + 500 + 50, 30 + 50 + 5)
    assert resumed.json["cost"] == {"input": 0.3055, "output": 0.0611, "cached": 0.0, "total": 0.3666, "currency": "USD"}
    assert cli(history, "runs", "show", run_id, "--json").json == resumed.json


def test_the_history_lists_the_runs_usage_and_a_rerun_takes_rate_limits_and_prices_as_query_does(
    store: Path, history: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[prices."m1"]\ninput = 2.0\noutput = 8.0\n', encoding="utf-8")
    args = ["--map-budget", "330", "--map-reserve", "0", "--seed", "7", "--config", str(config)]
    with ScriptedChatServer(UsageServer(fail={"ns/3"})) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *args,
                     "--json")
    assert parent.code == 0, parent.stderr
    assert parent.json["status"] == "partial"
    # seven Map answers and the Reduce one; the failed batch's 500s report no usage
    parent_usage = {"prompt_tokens": 750, "completion_tokens": 75, "cached_tokens": 0, "total_tokens": 825}
    assert parent.json["usage_total"] == parent_usage
    listed = cli(history, "runs", "list", "--json", "--config", str(config))
    assert [(r["run_id"], r["usage_total"]) for r in listed.json["runs"]] == [(parent.json["run_id"], parent_usage)]
    with ScriptedChatServer(UsageServer()) as other:
        child = cli(history, "rerun", parent.json["run_id"], "--base-url", other.base_url, "--rpm", "600",
                    "--max-cost", "1", "--config", str(config), "--json")
    assert child.code == 0, child.stderr
    assert child.json["status"] == "completed"
    assert len(maps(other)) == 1
    # the re-run's own calls: the one batch sent again, and Reduce; priced by the config's table
    child_usage = {"prompt_tokens": 150, "completion_tokens": 15, "cached_tokens": 0, "total_tokens": 165}
    assert child.json["usage_total"] == child_usage
    assert child.json["cost"] == {"input": 0.0003, "output": 0.00012, "cached": 0.0, "total": 0.00042, "currency": "USD"}
    settings = dict(rows(history, "SELECT run_id, model_settings FROM runs"))
    assert json.loads(settings[child.json["run_id"]])["requests_per_minute"] == 600
    listed = cli(history, "runs", "list", "--json", "--config", str(config))
    assert [r["usage_total"] for r in listed.json["runs"]] == [child_usage, parent_usage]


class FirstAnswersServer(UsageServer):
    """As UsageServer, but only the first Map request is answered; the others wait for
    `release`."""

    def __call__(self, request: Received) -> Reply:
        reply = super().__call__(request)
        if request.stage == "map" and self.answered_first:
            return Reply(reply.body, gate=self.release)
        self.answered_first = self.answered_first or request.stage == "map"
        return reply

    answered_first = False


def test_a_resumed_run_counts_the_usage_paid_before_it_stopped(store: Path, history: Path) -> None:
    script = FirstAnswersServer()
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        try:
            wait_for(lambda: len(maps(server)) == 2)  # the first answered, the second held
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
        finally:
            script.release.set()
    assert process.returncode == 130, err
    cancelled = json.loads(out)
    assert cancelled["usage_total"] == {"prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 0,
                                        "total_tokens": 110}
    with ScriptedChatServer(UsageServer()) as server:
        resumed = cli(history, "resume", cancelled["run_id"], "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert len(maps(server)) == 7
    # the batch answered before the interruption, the seven answered now, and Reduce
    whole = {"prompt_tokens": 850, "completion_tokens": 85, "cached_tokens": 0, "total_tokens": 935}
    assert resumed.json["usage_total"] == whole
    assert cli(history, "runs", "--json").json["runs"][0]["usage_total"] == whole


@pytest.mark.parametrize("target", ["", "-wal"])
def test_events_written_over_the_run_history_or_its_wal_is_refused(store: Path, history: Path, target: str) -> None:
    """`--events HISTORY` replaced the recorded runs with its event lines, and `--events
    HISTORY-wal` (a file that exists only while a connection is open) made the history
    "malformed": both lost every run. The history's files are inputs, as the store's are."""
    with ScriptedChatServer(Server()) as server:
        first = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                    "--json")
        events = Path(f"{history}{target}")
        again = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                    "--json", "--events", str(events))
    assert (again.code, again.stdout) == (2, "")
    assert again.stderr == (f"graphrag-tui: error: --events: {events} is the input file {events}; choose another "
                            "file\n")
    assert [r["run_id"] for r in cli(history, "runs", "--json").json["runs"]] == [first.json["run_id"]]


@pytest.mark.parametrize("companion", ["", "-journal", "-wal"])
def test_a_history_that_is_the_store_or_one_of_its_sqlite_files_records_nothing(
        store: Path, companion: str) -> None:
    """A history at the store's `-journal` made SQLite take the recorded runs for the
    store's unfinished transaction: the store could no longer be opened, and recovering it
    deleted the history. Such a run happens, unrecorded, and leaves nothing beside the store."""
    history = Path(f"{store}{companion}")
    before, files = sha256(store), sorted(os.listdir(store.parent))
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    assert run.code == 0 and run.json["run_id"] is None and run.json["status"] == "completed"
    assert run.stderr.splitlines()[0] == (f"warning: run history {history} is the store's file {history}; this run "
                                          "is not recorded")
    assert (sha256(store), sorted(os.listdir(store.parent))) == (before, files)
    assert run_cli("info", str(store), "--json").code == 0


class ReduceFails(Server):
    """Map answers; Reduce gets HTTP 500 (both attempts)."""

    def __call__(self, request: Received) -> Reply:
        if request.stage == "reduce":
            return Reply({"error": "reduce is down"}, status=500)
        return super().__call__(request)


def test_a_run_whose_reduce_failed_is_reduced_again_by_rerun_without_paying_for_map_again(
        store: Path, history: Path) -> None:
    """Every batch answered and Reduce failed: `rerun` said "no failed or cancelled batch"
    and `resume` refused a failed run, so the answer cost all eight Map calls again."""
    with ScriptedChatServer(ReduceFails()) as server:
        parent = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                     "--json")
        assert (parent.code, parent.json["status"], parent.json["failed_batch_count"]) == (1, "failed", 0)
        server.script = Server()
        sent_before = len(server.chat_requests())
        child = cli(history, "rerun", parent.json["run_id"], "--json")
        sent = [r.stage for r in server.chat_requests()[sent_before:]]
    assert child.code == 0, child.stderr
    assert sent == ["reduce"]
    assert (child.json["status"], child.json["answer"]) == ("completed", "The port authority funds it.")
    assert child.json["batches"] == parent.json["batches"] and child.json["parent_run_id"] == parent.json["run_id"]


def test_rerun_of_a_run_still_running_in_another_process_is_refused(store: Path, history: Path) -> None:
    """Its batches in flight and those it had yet to send were paid for twice (`resume`
    refused it already)."""
    script = Server(hold=set(COMMUNITIES))  # with --concurrency 1: one call in flight, held
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        try:
            running = wait_for(lambda: history.exists() and rows(history, "SELECT run_id FROM runs WHERE status = 'running'"))
            wait_for(lambda: maps(server))
            sent = len(server.chat_requests())
            rerun = cli(history, "rerun", running[0][0], "--all")
            assert (rerun.code, rerun.stdout) == (2, "")
            assert rerun.stderr == (f"graphrag-tui: error: run {running[0][0]} is running in another process: "
                                    "re-run it once it has ended\n")
            # (it advised `rerun`, which refuses it as well)
            resume = cli(history, "resume", running[0][0])
            assert (resume.code, resume.stdout) == (2, "")
            assert resume.stderr == (f"graphrag-tui: error: run {running[0][0]} is running in another process: it "
                                     "cannot be resumed now\n")
            assert len(server.chat_requests()) == sent
        finally:
            script.release.set()
            process.communicate(timeout=30)
    assert process.returncode == 0


class FirstAttemptUnusable(UsageServer):
    """As UsageServer, but the first Map call gets a reply that is not JSON (its usage
    reported: 1,500 prompt tokens), and its second attempt waits for `release`."""

    def __call__(self, request: Received) -> Reply:
        if request.stage == "map" and len(self.sent) < 2:
            self.sent.append(community_of(request))
            if len(self.sent) == 1:
                return Reply(completion("not JSON at all", usage=usage(1500, 60)))
            return Reply(super().__call__(request).body, gate=self.release)
        return super().__call__(request)

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []


@pytest.mark.parametrize("stop", ["SIGINT", "SIGKILL"])
def test_a_resume_keeps_the_paid_attempts_of_a_batch_that_was_retrying_when_the_run_stopped(
        store: Path, history: Path, stop: str) -> None:
    """A batch's first attempt was paid for and unusable, its second in flight when the run
    stopped: the resume sent the batch again and dropped that attempt, its usage with it
    (the run's total went down, and --max-cost undercounted)."""
    script = FirstAttemptUnusable()
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        try:
            wait_for(lambda: len(script.sent) == 2)  # the retry is in flight
            run_id = wait_for(lambda: history.exists() and rows(history, "SELECT run_id FROM runs"))[0][0]
            wait_for(lambda: rows(history, "SELECT count(*) FROM batch_records")[0][0])  # the failed attempt
            process.send_signal(getattr(signal, stop))
            process.communicate(timeout=20)
        finally:
            script.release.set()
    retried = script.sent[0]
    with ScriptedChatServer(UsageServer()) as server:
        resumed = cli(history, "resume", run_id, "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert len(maps(server)) == 8  # every batch: none had finished
    batch = next(b for b in resumed.json["batches"] if b["community_ids"] == [retried])
    # numbered on from the attempts before (the cancelled one in flight at Ctrl+C is its attempt 2)
    again = [(2, None, "cancelled"), (3, None, None)] if stop == "SIGINT" else [(2, None, None)]
    assert [(a["attempt"], a["error_kind"], a["error"]) for a in batch["attempts"]] == [
        (1, "invalid_json", "reply is not valid JSON: 'not JSON at all'"), *again]
    assert batch["attempts"][0]["usage"]["prompt_tokens"] == 1500 and batch["status"] == "succeeded"
    whole = {"prompt_tokens": 1500 + 8 * 100 + 50, "completion_tokens": 60 + 8 * 10 + 5, "cached_tokens": 0,
             "total_tokens": 1560 + 8 * 110 + 55}
    assert resumed.json["usage_total"] == whole
    assert cli(history, "runs", "show", run_id, "--json").json["usage_total"] == whole


def test_a_store_or_history_given_through_a_link_has_its_sqlite_files_named_after_the_target(
        store: Path, tmp_path: Path) -> None:
    """SQLite names a file's journal after the file a link leads to: a history at the real
    store's `-journal`, the store given as a link, was recorded into (and the store could no
    longer be opened); `--events` at the real history's `-wal`, the history given as a link,
    was written while SQLite used it as the WAL, then deleted."""
    link = tmp_path / "link.db"
    link.symlink_to(store)
    journal = Path(f"{store}-journal")
    with ScriptedChatServer(Server()) as server:
        run = cli(journal, "query", str(link), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
        assert (run.code, run.json["run_id"]) == (0, None)
        assert run.stderr.splitlines()[0] == (f"warning: run history {journal} is the store's file {journal}; this run "
                                              "is not recorded")
        assert not journal.exists() and run_cli("info", str(store), "--json").code == 0
        history = tmp_path / "data" / "history.db"
        history_link = tmp_path / "history-link.db"
        history_link.symlink_to(history)
        wal = Path(f"{history}-wal")
        events = cli(history_link, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                     *ONE_EACH, "--json", "--events", str(wal))
    assert (events.code, events.stdout) == (2, "")
    assert events.stderr == f"graphrag-tui: error: --events: {wal} is the input file {wal}; choose another file\n"


class ReduceFirstAttemptUnusable(UsageServer):
    """As UsageServer, but Reduce's first attempt gets a reply that is not JSON (its usage
    reported: 5,000 prompt tokens), and its second waits for `release`."""

    def __call__(self, request: Received) -> Reply:
        if request.stage == "reduce":
            self.reduces += 1
            if self.reduces == 1:
                return Reply(completion("not JSON at all", usage=usage(5000, 20)))
            return Reply(super().__call__(request).body, gate=self.release)
        return super().__call__(request)

    reduces = 0


def test_a_resume_keeps_the_paid_reduce_attempts_of_a_run_cancelled_while_it_reduced(
        store: Path, history: Path) -> None:
    script = ReduceFirstAttemptUnusable()
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        try:
            wait_for(lambda: script.reduces == 2)  # the second Reduce attempt is in flight
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
        finally:
            script.release.set()
    cancelled = json.loads(out)
    assert (process.returncode, cancelled["status"], cancelled["usage_total"]["prompt_tokens"]) == (130, "cancelled",
                                                                                                    5800), err
    with ScriptedChatServer(UsageServer()) as server:
        resumed = cli(history, "resume", cancelled["run_id"], "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert [r.stage for r in server.chat_requests()] == ["reduce"]
    assert [a["error_kind"] for a in resumed.json["reduce"]["attempts"]][0] == "invalid_json"
    assert resumed.json["usage_total"]["prompt_tokens"] == 5000 + 8 * 100 + 50
    assert cli(history, "runs", "show", cancelled["run_id"], "--json").json["usage_total"] == resumed.json["usage_total"]


class ReduceHeld(UsageServer):
    """As UsageServer, but Reduce's answer waits for `release`."""

    def __call__(self, request: Received) -> Reply:
        if request.stage == "reduce":
            self.reduces += 1
            return Reply(super().__call__(request).body, gate=self.release)
        return super().__call__(request)

    reduces = 0


def test_a_resume_killed_before_its_reduce_failed_keeps_the_attempts_from_before_it(
        store: Path, history: Path) -> None:
    """A run cancelled while Reduce retried has those attempts in its result, which a run
    that goes on does not read: a resume killed -9 before its own Reduce attempt failed
    read as a run with no Reduce attempt, and the 5,000 paid tokens were gone from it and
    from every later resume."""
    script = ReduceFirstAttemptUnusable()
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        try:
            wait_for(lambda: script.reduces == 2)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
        finally:
            script.release.set()
    run_id = json.loads(out)["run_id"]
    held = ReduceHeld()
    with ScriptedChatServer(held) as server:
        resume = start_cli(history, "resume", run_id, "--json", "--base-url", server.base_url)
        with killed_with_9(resume, held):
            wait_for(lambda: held.reduces == 1)  # the resume's Reduce call is in flight
    before = [("invalid_json", "reply is not valid JSON: 'not JSON at all'"), (None, "cancelled")]
    shown = cli(history, "runs", "show", run_id, "--json")
    assert (shown.json["status"], [(a["error_kind"], a["error"]) for a in shown.json["reduce"]["attempts"]]) == (
        "interrupted", before)
    # an unfinished run's usage so far: what its recorded attempts reported
    assert (shown.json["usage_total"], shown.json["estimated_prompt_tokens"]) == (
        {"prompt_tokens": 5000 + 8 * 100, "completion_tokens": 20 + 8 * 10, "cached_tokens": 0,
         "total_tokens": 5020 + 8 * 110}, sum(b["prompt_tokens"] for b in shown.json["batches"]))
    with ScriptedChatServer(UsageServer()) as server:
        resumed = cli(history, "resume", run_id, "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert [(a["error_kind"], a["error"]) for a in resumed.json["reduce"]["attempts"]] == [*before, (None, None)]
    assert resumed.json["usage_total"]["prompt_tokens"] == 5000 + 8 * 100 + 50
    # the estimate of the same prompts: each batch's once, the Reduce prompt for its two paid attempts
    assert resumed.json["estimated_prompt_tokens"] == (
        sum(b["prompt_tokens"] for b in resumed.json["batches"]) + 2 * resumed.json["reduce"]["prompt_tokens"])


def test_a_resume_keeps_the_paid_reduce_attempts_of_a_run_killed_while_it_reduced(store: Path, history: Path) -> None:
    """Reduce's first attempt was paid for and unusable, its second in flight at a kill -9:
    the failed attempt was recorded only at the run's end, so the resume dropped it, its usage
    with it. A failed attempt that will be retried is committed as a batch's is."""
    script = ReduceFirstAttemptUnusable()
    with ScriptedChatServer(script) as server:
        process = start_query(store, history, server.base_url)
        with killed_with_9(process, script):
            wait_for(lambda: script.reduces == 2)  # the second Reduce attempt is in flight
            run_id = wait_for(lambda: only_run(history))
            wait_for(lambda: rows(history, "SELECT reduce_attempts FROM runs WHERE reduce_attempts IS NOT NULL"))
    shown = cli(history, "runs", "show", run_id, "--json")
    assert (shown.json["status"], [a["error_kind"] for a in shown.json["reduce"]["attempts"]]) == (
        "interrupted", ["invalid_json"])
    with ScriptedChatServer(UsageServer()) as server:
        resumed = cli(history, "resume", run_id, "--json", "--base-url", server.base_url)
    assert resumed.code == 0, resumed.stderr
    assert [r.stage for r in server.chat_requests()] == ["reduce"]
    assert [a["error_kind"] for a in resumed.json["reduce"]["attempts"]] == ["invalid_json", None]
    assert resumed.json["usage_total"]["prompt_tokens"] == 5000 + 8 * 100 + 50
    assert resumed.json["estimated_prompt_tokens"] == (
        sum(b["prompt_tokens"] for b in resumed.json["batches"]) + 2 * resumed.json["reduce"]["prompt_tokens"])
    assert cli(history, "runs", "show", run_id, "--json").json["usage_total"] == resumed.json["usage_total"]


def test_a_store_at_a_path_that_is_not_utf8_runs_unrecorded_with_a_warning(tmp_path: Path) -> None:
    """The history cannot hold such a path: the run was an internal error, and `runs list
    --store` blamed the history (found by a probe)."""
    store = tmp_path / os.fsdecode(b"harbor\xff.db")
    shutil.copyfile(Path(__file__).resolve().parent.parent / "sample_db" / "sample.db", store)
    history = tmp_path / "history.db"
    run = run_cli("query", str(store), "bridge", "--namespace", "harbor-city", "--json", "--history", str(history))
    assert (run.code, run.json["status"], run.json["run_id"]) == (0, "completed", None)
    assert run.stderr.splitlines()[-1] == ("warning: the store's path is not valid UTF-8, which the run history cannot "
                                           "hold; this run is not recorded")
    listed = run_cli("runs", "list", "--store", str(store), "--history", str(history))
    assert (listed.code, listed.stdout, listed.stderr) == (
        2, "", "graphrag-tui: error: --store is not valid UTF-8: no run of a store at such a path is recorded\n")


def test_an_unusable_history_key_is_said_when_a_run_is_recorded_and_when_it_is_rerun(tmp_path: Path) -> None:
    """An empty history.key recorded runs unsealed without a word, and their re-run was
    refused as "a history from elsewhere" (found by a probe)."""
    sample = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
    env = clean_env(XDG_DATA_HOME=str(tmp_path / "data"))
    key = tmp_path / "data" / "graphrag-tui" / "history.key"
    key.parent.mkdir(parents=True)
    key.write_bytes(b"")
    run = run_cli("query", str(sample), "bridge", "--namespace", "harbor-city", "--json", env=env)
    run_id = run.json["run_id"]
    assert (run.code, run.stderr.splitlines()[-1]) == (0, (
        f"warning: the run history's key {key} is not a key of 32 bytes (it has 0): run {run_id} is recorded unsealed, "
        "and is re-run or resumed only on a model given on the command line"))
    rerun = run_cli("rerun", run_id, "--all", env=env)
    assert (rerun.code, rerun.stdout, rerun.stderr) == (2, "", (
        f"graphrag-tui: error: whether run {run_id} was recorded by this user's graphrag-tui cannot be checked: the "
        f"run history's key {key} is not a key of 32 bytes (it has 0): its endpoint and key variable are not used; "
        "give the model (--base-url, --model, --api-key-env, or --local-llm)\n"))


def test_a_rerun_of_a_run_that_selected_no_community_says_so(tmp_path: Path) -> None:
    """It said the communities had no text to map, and offered --replan, which failed the
    same way (found by a probe)."""
    sample = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
    history = tmp_path / "history.db"
    run = run_cli("query", str(sample), "zzzz qqqq", "--namespace", "harbor-city", "--select", "dynamic", "--json",
                  "--history", str(history))
    assert (run.code, run.json["status"], run.json["selection"]["selected"]) == (0, "no_results", [])
    for flags in ((), ("--replan",)):
        rerun = run_cli("rerun", run.json["run_id"], *flags, "--history", str(history))
        assert (rerun.code, rerun.stdout, rerun.stderr) == (2, "", (
            f"graphrag-tui: error: run {run.json['run_id']} selected no community (dynamic selection): nothing to "
            "send again; a new query selects them again\n"))


def test_runs_export_of_a_run_started_at_the_calendars_end_or_citing_an_id_no_text_holds(
        store: Path, history: Path, tmp_path: Path) -> None:
    """A start time that cannot be moved to UTC, and a community id with a lone surrogate
    (which no store text holds, nor can be asked for), were internal errors (found by a
    probe)."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    db = sqlite3.connect(history)
    db.execute("UPDATE runs SET started_at = '9999-12-31T23:59:59-23:59'")
    db.commit()
    db.close()
    exported = cli(history, "runs", "export", run.json["run_id"], str(tmp_path / "report"))
    assert (exported.code, exported.stderr) == (0, "")
    assert (tmp_path / "report.md").read_text().startswith(f"# {QUESTION}\n\n## Run\n\n- Status: completed\n- Namespace")
    with CommunityStore.open(store) as opened:
        assert opened.community("ns/1\ud800") is None


def test_runs_export_of_a_run_whose_store_changed_since_says_so(store: Path, history: Path, tmp_path: Path) -> None:
    """It showed the store's text of today as the run's sources without a word, which the
    app's view of the run says (found by a probe)."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    status = store.stat()
    os.utime(store, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    exported = cli(history, "runs", "export", run.json["run_id"], str(tmp_path / "report"))
    assert (exported.code, exported.stderr) == (0, (
        f"note: the store {store} changed since run {run.json['run_id']}: the report shows its communities as the "
        "store has them now\n"))
    assert "## Communities\n\n_The store changed since this run: its communities are shown as the store has them " \
           "now._\n\n### Community " in (tmp_path / "report.md").read_text()


def test_runs_export_of_a_run_whose_recorded_store_path_holds_a_nul_writes_its_report(
        store: Path, history: Path, tmp_path: Path) -> None:
    """No file can have such a name: comparing it with the export's files was an internal
    error (found reading this session's change)."""
    with ScriptedChatServer(Server()) as server:
        run = cli(history, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_EACH,
                  "--json")
    db = sqlite3.connect(history)
    db.execute("UPDATE runs SET store_path = ?", (f"{tmp_path}/x\x00y.db",))
    db.commit()
    db.close()
    exported = cli(history, "runs", "export", run.json["run_id"], str(tmp_path / "report"))
    assert (exported.code, exported.stdout, exported.stderr) == (0, (
        f"wrote {tmp_path / 'report.json'} and {tmp_path / 'report.md'}\n"), (
        f"note: Store not found: {tmp_path}/x␀y.db: the report names the communities without their text\n"))
