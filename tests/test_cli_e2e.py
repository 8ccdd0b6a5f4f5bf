"""The CLI run as a user would, against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from graphrag_tui.engine.tokens import estimate_tokens
from tests.chat_server import Reply, Scripted, ScriptedChatServer, community_of, completion, map_reply
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import PAD, three_leaves

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def query(store: Path, server: ScriptedChatServer, *extra: str, env: dict[str, str] | None = None):
    return run_cli(
        "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH, "--json", *extra,
        env=env,
    )


def test_completed_run_sends_each_community_and_reduces_the_useful_answers(store: Path, tmp_path: Path) -> None:
    script = Scripted({
        "ns/1": map_reply("The port authority funds the bridge.", 90),
        "ns/2": map_reply("Fleets are unrelated.", 10),
        "ns/3": map_reply("", 0),
    })
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--events", str(events))
    assert run.code == 0, run.stderr
    result = run.json
    assert result["status"] == "completed"
    assert result["answer"] == "The port authority funds it."
    assert (result["summary_count"], result["batch_count"], result["failed_batch_count"]) == (3, 3, 0)
    assert [b["community_ids"] for b in result["batches"]] == [["ns/1"], ["ns/2"], ["ns/3"]]
    assert [b["parts"] for b in result["batches"]][0] == [{"community_id": "ns/1", "part": 1}]
    assert [b["usefulness"] for b in result["batches"]] == [90, 10, 0]
    assert result["reduce"]["candidates"] == [
        {"batch_index": 0, "usefulness": 90, "community_ids": ["ns/1"], "decision": "selected"},
        {"batch_index": 1, "usefulness": 10, "community_ids": ["ns/2"], "decision": "selected"},
        {"batch_index": 2, "usefulness": 0, "community_ids": ["ns/3"], "decision": "zero_usefulness"},
    ]
    assert result["selected_map_answers"] == [
        {"answer": "The port authority funds the bridge.", "usefulness": 90, "community_ids": ["ns/1"]},
        {"answer": "Fleets are unrelated.", "usefulness": 10, "community_ids": ["ns/2"]},
    ]
    assert result["seed"] is None and result["level"] == "leaf" and result["namespace"] == "ns"

    chats = server.chat_requests()
    maps = [r for r in chats if r.stage == "map"]
    reduces = [r for r in chats if r.stage == "reduce"]
    assert sorted(community_of(r) for r in maps) == ["ns/1", "ns/2", "ns/3"]
    first = next(r for r in maps if community_of(r) == "ns/1")
    assert first.json["messages"][1]["content"] == (
        f"User query: {QUESTION}\n\nCommunity summaries:\n"
        "[Community ID: ns/1 | summary part 1]\n"
        f"[Community summary]: The harbour bridge is funded by the port authority. {PAD}\n"
        "[Supporting claims]:\n"
        "- Port Authority (relates to Harbour Bridge): pays for the bridge\n"
        "- Port Authority: meets every month\n"
        "[Source excerpts]:\n"
        "- [Chunk k1] The authority approved the bridge budget."
    )
    assert first.json["model"] == "m1"
    assert "max_tokens" not in first.json  # a zero map reserve sends no limit
    assert first.json["response_format"] == {"type": "json_object"}
    assert len(reduces) == 1
    assert reduces[0].json["max_tokens"] == 1024
    assert reduces[0].json["messages"][1]["content"] == (
        f"User query: {QUESTION}\n\nSelected intermediate answers and source community IDs:\n"
        "[Usefulness: 90; Community IDs: ns/1]\nThe port authority funds the bridge.\n\n"
        "[Usefulness: 10; Community IDs: ns/2]\nFleets are unrelated."
    )
    assert result["reduce"]["prompt_tokens"] == estimate_tokens(reduces[0].prompt)
    assert [b["prompt_tokens"] for b in result["batches"]][0] == estimate_tokens(first.prompt)

    lines = [json.loads(line) for line in events.read_text().splitlines()]
    types = [e["type"] for e in lines]
    assert types[0] == "planned" and lines[0]["batch_count"] == 3 and lines[0]["workers"] == 3
    assert types.count("batch_started") == 3 and types.count("batch_succeeded") == 3
    # the Reduce request asked to stream; this server answered with plain JSON, read as usual
    assert types[-6:] == [
        "reduce_candidate", "reduce_candidate", "reduce_candidate", "reduce_started", "request_adapted", "finished"
    ]
    assert lines[-1]["status"] == "completed"
    assert all(isinstance(e["t"], float) for e in lines)
    assert "m1 @ 127.0.0.1" in run.stderr


def test_a_failed_attempt_is_retried_once_with_the_same_prompt(store: Path) -> None:
    script = Scripted({
        "ns/1": map_reply("Bridge funds.", 90),
        "ns/2": [Reply("overloaded", status=500), map_reply("Fleets.", 20)],
        "ns/3": map_reply("", 0),
    })
    with ScriptedChatServer(script) as server:
        run = query(store, server)
    result = run.json
    assert result["status"] == "completed"
    attempts = result["batches"][1]["attempts"]
    assert [(a["attempt"], a["error_kind"], a["raw_response"]) for a in attempts] == [
        (1, "http", "overloaded"),
        (2, None, json.dumps({"answer": "Fleets.", "usefulness": 20})),
    ]
    assert attempts[0]["error"] == "HTTP 500: overloaded"
    ns2 = [r for r in server.chat_requests() if r.stage == "map" and community_of(r) == "ns/2"]
    assert len(ns2) == 2 and ns2[0].json == ns2[1].json


def test_some_batches_failing_makes_a_partial_run(store: Path) -> None:
    script = Scripted({
        "ns/1": map_reply("Bridge funds.", 90),
        "ns/2": map_reply("Fleets.", 20),
        "ns/3": Reply(completion("not json at all")),
    })
    with ScriptedChatServer(script) as server:
        run = query(store, server)
    assert run.code == 0
    result = run.json
    assert (result["status"], result["failed_batch_count"]) == ("partial", 1)
    failed = result["batches"][2]
    assert failed["status"] == "failed" and failed["usefulness"] is None
    assert [(a["error_kind"], a["raw_response"]) for a in failed["attempts"]] == [
        ("invalid_json", "not json at all"),
        ("invalid_json", "not json at all"),
    ]
    assert result["answer"] == "The port authority funds it."


def test_every_batch_failing_fails_the_run_without_a_reduce_call(store: Path) -> None:
    bad = Reply(completion(json.dumps({"answer": "x", "usefulness": "80"})))
    with ScriptedChatServer(Scripted({"ns/1": bad, "ns/2": bad, "ns/3": bad})) as server:
        run = query(store, server)
    assert run.code == 1
    result = run.json
    assert result["status"] == "failed"
    assert result["error"] == "3 of 3 Map batches failed: invalid fields (`usefulness` must be a number) ×3; see --json"
    assert [a["error"] for b in result["batches"] for a in b["attempts"]] == ['`usefulness` must be a number, got "80"'] * 6
    assert len(server.chat_requests()) == 6
    assert all(r.stage == "map" for r in server.chat_requests())


def test_no_useful_answer_is_no_results_without_a_reduce_call(store: Path) -> None:
    zero = map_reply("", 0)
    with ScriptedChatServer(Scripted({"ns/1": zero, "ns/2": zero, "ns/3": zero})) as server:
        run = query(store, server)
    assert run.code == 0
    result = run.json
    assert (result["status"], result["answer"], result["error"]) == ("no_results", None, None)
    assert len(server.chat_requests()) == 3
    assert result["reduce"]["prompt_tokens"] is None


def test_reduce_skips_an_answer_over_budget_and_keeps_going(store: Path) -> None:
    long_answer = "The bridge budget comes from harbour dues. " * 9 + "x" * 13
    assert len(long_answer) == 400
    script = Scripted({
        "ns/1": map_reply(long_answer, 90),
        "ns/2": map_reply("Fleets land fish.", 50),
        "ns/3": map_reply("Market fees help.", 40),
    })
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--reduce-budget", "200", "--reduce-reserve", "0")
    result = run.json
    assert [c["decision"] for c in result["reduce"]["candidates"]] == ["over_budget", "selected", "selected"]
    assert result["reduce"]["budget"] == 200
    reduce = [r for r in server.chat_requests() if r.stage == "reduce"][0]
    assert reduce.json["messages"][1]["content"].endswith(
        "[Usefulness: 50; Community IDs: ns/2]\nFleets land fish.\n\n[Usefulness: 40; Community IDs: ns/3]\nMarket fees help."
    )
    assert "max_tokens" not in reduce.json
    assert result["reduce"]["prompt_tokens"] == estimate_tokens(reduce.prompt) <= 200


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--map-budget", "100"], "the map prompt budget (100 tokens) cannot fit the Map prompt itself (130 tokens)"),
        (["--map-budget", "135"], "cannot fit even one character of community ns/1"),
        # every Map call was paid for, then the run ended no_results (or, with --general-knowledge,
        # sent Reduce a 186-token prompt over its 123-token budget)
        (["--reduce-budget", "123", "--reduce-reserve", "0"],
         "the reduce prompt budget (123 tokens) cannot fit the Reduce prompt itself (124 tokens): raise "
         "--reduce-budget or lower --reduce-reserve"),
        (["--reduce-budget", "185", "--reduce-reserve", "0", "--general-knowledge"],
         "the reduce prompt budget (185 tokens) cannot fit the Reduce prompt itself (186 tokens)"),
    ],
)
def test_budget_errors_come_before_any_model_call(store: Path, flags: list[str], message: str) -> None:
    with ScriptedChatServer(Scripted({})) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--no-config",
                      "--no-shuffle", "--map-reserve", "0", *flags)
    assert run.code == 2 and run.stdout == ""
    assert message in run.stderr and run.stderr.count("\n") == 1
    assert server.requests == []


def test_a_timeout_is_an_attempt_error(store: Path) -> None:
    slow = Reply(completion("{}"), delay=3)
    with ScriptedChatServer(Scripted({"ns/1": slow, "ns/2": slow, "ns/3": slow})) as server:
        started = time.monotonic()
        run = query(store, server, "--timeout", "0.3")
        elapsed = time.monotonic() - started
    result = run.json
    assert result["status"] == "failed" and run.code == 1
    kinds = [a["error_kind"] for b in result["batches"] for a in b["attempts"]]
    assert kinds == ["timeout"] * 6
    assert result["batches"][0]["attempts"][0]["error"] == "no reply within 0.3 s"
    assert elapsed < 10


def test_the_api_key_goes_in_the_header_and_nowhere_else(store: Path, tmp_path: Path) -> None:
    key = "sk-test-SECRET-4242"
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": Reply("nope", status=500)})
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--api-key-env", "MY_GATEWAY_KEY", "--events", str(events),
                    env=clean_env(MY_GATEWAY_KEY=key))
    assert {r.headers.get("authorization") for r in server.chat_requests()} == {f"Bearer {key}"}
    assert run.json["status"] == "partial"
    for text in (run.stdout, run.stderr, events.read_text()):
        assert key not in text


def test_a_key_in_the_base_url_query_is_sent_but_never_logged(store: Path) -> None:
    """httpx logs each request's whole URL under --verbose: the query string is masked."""
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = query(store, server, "-v", "--no-history", "--base-url", f"{server.base_url}?key=SECRET-4242")
    assert run.code == 0, run.stderr
    assert {r.path for r in server.chat_requests()} == {"/v1/chat/completions?key=SECRET-4242"}
    requests = [line for line in run.stderr.splitlines() if line.startswith("httpx: HTTP Request:")]
    assert requests == [f'httpx: HTTP Request: POST {server.base_url}/chat/completions?*** "HTTP/1.1 200 OK"'] * 4
    assert "SECRET" not in run.stdout + run.stderr


def test_openai_api_key_is_never_sent_to_another_host(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = query(store, server, env=clean_env(OPENAI_API_KEY="sk-should-stay-home"))
    assert run.code == 0
    assert all("authorization" not in r.headers for r in server.requests)


def test_without_model_the_first_listed_model_answers(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script, models=["first-model", "second-model"]) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, *ONE_BATCH_EACH, "--json")
    assert run.code == 0
    assert {r.json["model"] for r in server.chat_requests()} == {"first-model"}
    assert server.requests[0].method == "GET" and server.requests[0].path == "/v1/models"


def test_a_model_list_that_fails_is_an_input_error(store: Path) -> None:
    with ScriptedChatServer(Scripted({})) as server:
        url = server.base_url
    run = run_cli("query", str(store), QUESTION, "--base-url", url, "--no-config", "--json")
    assert run.code == 2 and run.stdout == ""
    assert "--model was not given and GET" in run.stderr and run.stderr.count("\n") == 1


@pytest.mark.parametrize(("listed", "shown"), [
    ("\ud800x", "'\\ud800x'"), ("m" * 300, "'" + "m" * 38 + "…"), ("", "''"), ("  ", "' '"),
    ("\u200b", "'\\u200b'"), ("\ufeff \u2060", "'\\ufeff \\u2060'"),
], ids=["lone-surrogate", "too-long", "empty", "blank", "zero-width", "bom"])
def test_a_first_listed_model_that_is_no_usable_name_is_an_input_error(store: Path, listed: str, shown: str) -> None:
    """It was an internal error (UnicodeEncodeError recording the run), or every batch failed;
    a blank name was sent as `model: ""`. (One with control characters is used, and shown
    inert: test_cli_hostile.)"""
    with ScriptedChatServer(Scripted({}), models=[listed, "fine"]) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, *ONE_BATCH_EACH, "--json")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: --model was not given and the first model {server.base_url}/models "
                          f"lists is no usable name ({shown}): name one with --model\n")
    assert server.chat_requests() == []


def test_retry_after_is_waited_for_and_reported(store: Path, tmp_path: Path) -> None:
    script = Scripted({
        "ns/1": [Reply("busy", status=503, headers={"Retry-After": "1"}), map_reply("Bridge.", 90)],
        "ns/2": map_reply("", 0),
        "ns/3": map_reply("", 0),
    })
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--events", str(events))
    attempts = run.json["batches"][0]["attempts"]
    first, second = (datetime.fromisoformat(a["started_at"]) for a in attempts)
    assert (second - first).total_seconds() >= 1.0
    waits = [json.loads(line) for line in events.read_text().splitlines() if '"retry_waiting"' in line]
    assert [(w["batch_index"], w["seconds"]) for w in waits] == [(0, 1.0)]


def test_ctrl_c_cancels_and_still_prints_the_result(store: Path) -> None:
    gate = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=gate)
    with ScriptedChatServer(Scripted({"ns/1": held, "ns/2": held, "ns/3": held})) as server:
        process = subprocess.Popen(
            [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
             *ONE_BATCH_EACH, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_env(),
        )
        deadline = time.monotonic() + 20
        while len(server.chat_requests()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
        gate.set()
    assert process.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["status"] == "cancelled"
    assert [b["status"] for b in result["batches"]] == ["cancelled"] * 3
    assert [a["error"] for b in result["batches"] for a in b["attempts"]] == ["cancelled"] * 3
    assert "Traceback" not in stderr


def test_plan_makes_no_request_and_matches_the_query_batches(store: Path) -> None:
    with ScriptedChatServer(Scripted({})) as server:
        plan = run_cli("plan", str(store), QUESTION, "--base-url", server.base_url, "--no-config",
                       "--map-budget", "700", "--map-reserve", "0", "--seed", "5", "--json")
    assert plan.code == 0, plan.stderr
    assert server.requests == []
    report = plan.json
    query_run = run_cli("query", str(store), QUESTION, "--no-config", "--map-budget", "700", "--map-reserve", "0",
                        "--seed", "5", "--json")
    result = query_run.json
    assert result["seed"] == report["seed"] == 5
    assert [b["community_ids"] for b in report["batches"]] == [b["community_ids"] for b in result["batches"]]
    assert [b["prompt_tokens"] for b in report["batches"]] == [b["prompt_tokens"] for b in result["batches"]]
    assert report["map_prompt_budget"] == 700 and report["reduce_prompt_budget"] == 6976
    assert "extractive, not an LLM" in query_run.stderr


def test_info_lists_namespaces_levels_and_counts(store: Path) -> None:
    run = run_cli("info", str(store), "--json")
    assert run.json == {
        "store": str(store),
        "namespaces": [{
            "name": "ns", "community_count": 3, "leaf_count": 3, "levels": {"0": 3}, "claim_count": 2,
            "chunk_count": 1, "document_count": 1, "entity_count": 2,
        }],
    }


def test_config_file_then_environment_then_flags(store: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[retrieval]\nmap_budget = 900\nmap_reserve = 5\nconcurrency = 2\n")
    env = clean_env(GRAPHRAG_TUI_MAP_RESERVE="0")
    run = run_cli("plan", str(store), QUESTION, "--config", str(config), "--concurrency", "1", "--json", env=env)
    assert run.json["options"] == {
        "map_budget": 900, "reduce_budget": 8000, "map_reserve": 0, "reduce_reserve": 1024, "concurrency": 1,
    }
    ignored = run_cli("plan", str(store), QUESTION, "--config", str(config), "--no-config", "--json", env=env)
    assert ignored.json["options"]["map_budget"] == 8000 and ignored.json["options"]["map_reserve"] == 512


def _bad_store(tmp_path: Path, kind: str) -> Path:
    import sqlite3

    path = tmp_path / f"{kind}.db"
    if kind == "text":
        path.write_text("just some notes\n")
    elif kind == "tables":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE rag_parents (id TEXT PRIMARY KEY, namespace TEXT)")
        conn.close()
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["   "], "the question is empty"),
        ([QUESTION, "--namespace", "nope"], "unknown namespace 'nope'; the store has: ns"),
        ([QUESTION, "--map-budget", "0"], "--map-budget must be a positive integer, got '0'"),
        ([QUESTION, "--concurrency", "abc"], "--concurrency must be a positive integer, got 'abc'"),
        ([QUESTION, "--map-reserve", "-1"], "--map-reserve must be a non-negative integer, got '-1'"),
        ([QUESTION, "--map-budget", "500", "--map-reserve", "500"], "--map-budget (500) must exceed --map-reserve (500)"),
        ([QUESTION, "--seed", "1", "--no-shuffle"], "--seed and --no-shuffle cannot be used together"),
        ([QUESTION, "--local-llm", "--base-url", "http://127.0.0.1:9/v1"], "--local-llm and --base-url cannot be used together"),
        ([QUESTION, "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "UNSET_VAR_FOR_TEST"], "UNSET_VAR_FOR_TEST"),
        ([QUESTION, "--level", "7"], "no communities at level 7; levels present: 0"),
        ([QUESTION, "--level", "top"], "--level must be 'leaf' or a non-negative integer"),
        ([QUESTION, "--timeout", "0"], "--timeout must be a positive number of seconds"),
        ([QUESTION, "--events", "/nonexistent-dir/events.jsonl"], "--events: cannot write /nonexistent-dir/events.jsonl"),
        ([QUESTION, "--frobnicate"], "unrecognized arguments: --frobnicate"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(store: Path, args: list[str], message: str) -> None:
    run = run_cli("query", str(store), *args, "--no-config", "--json")
    assert (run.code, run.stdout) == (2, "")
    assert message in run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("graphrag-tui: error: ")


@pytest.mark.parametrize("url", ["postgresql://h/db?user=me&password=ab'cd\"PW-SECRET-1",
                                 "postgresql://h/db?password=ab cd PW-SECRET-1&a=1",
                                 "postgresql://me:pa ss'PW-SECRET-1@h/db"])
def test_a_password_in_an_argument_an_error_echoes_is_masked_whole(url: str) -> None:
    """The mask of a `password=` value stopped at a quote, and showed what followed."""
    run = run_cli("runs", "list", "--no-history", url)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr.startswith("graphrag-tui: error: unrecognized arguments: --no-history postgresql://")
    assert "SECRET" not in run.stderr and "cd" not in run.stderr.split("postgresql://")[1], run.stderr


@pytest.mark.parametrize("kind", ["missing", "text", "tables", "directory"])
def test_bad_store_files_are_input_errors(tmp_path: Path, kind: str) -> None:
    path = tmp_path if kind == "directory" else _bad_store(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    run = run_cli("query", str(path), QUESTION, "--no-config")
    assert (run.code, run.stdout) == (2, "")
    assert str(path) in run.stderr and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created
    if kind == "tables":
        assert "rag_community_summaries" in run.stderr
