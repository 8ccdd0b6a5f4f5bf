"""Issue 9 (items 3, 9, 10, 11) through the real CLI against the scripted server on 127.0.0.1:
hostile model replies cost one attempt, never the run."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.chat_server import Reply, Scripted, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config"]
DEEP_ARRAY = "[" * 3000 + "]" * 3000
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def query(store: Path, base_url: str, *extra: str):
    return run_cli("query", str(store), QUESTION, "--base-url", base_url, "--model", "m1", *ONE_BATCH_EACH, "--json", *extra)


def attempts_of(result: dict) -> list[list[tuple[str | None, str | None]]]:
    return [[(a["error_kind"], a["error"]) for a in b["attempts"]] for b in result["batches"]]


def test_deeply_nested_replies_are_invalid_attempts_and_the_run_goes_on(store: Path) -> None:
    script = Scripted(
        {
            "ns/1": Reply(completion(DEEP_ARRAY)),
            "ns/2": [Reply(completion(f"Here it is: {DEEP_OBJECT}")), map_reply("Fleets.", 20)],
            "ns/3": map_reply("Bridge funds.", 90),
        },
        reduce=Reply(completion(DEEP_OBJECT)),
    )
    with ScriptedChatServer(script) as server:
        run = query(store, server.base_url)
    assert run.code == 1, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    result = run.json
    deep_array_error = f"reply is not valid JSON: {DEEP_ARRAY[:200] + '…'!r}"
    deep_object_error = f"reply is not valid JSON: {('Here it is: ' + DEEP_OBJECT)[:200] + '…'!r}"
    assert attempts_of(result) == [
        [("invalid_json", deep_array_error)] * 2,
        [("invalid_json", deep_object_error), (None, None)],
        [(None, None)],
    ]
    assert [b["status"] for b in result["batches"]] == ["failed", "succeeded", "succeeded"]
    # Reduce got the same nested reply twice: the run fails, the Map answers stay.
    assert result["status"] == "failed"
    assert result["error"] == f"Reduce failed twice: reply is not valid JSON: {DEEP_OBJECT[:200] + '…'!r}"
    assert [a["error_kind"] for a in result["reduce"]["attempts"]] == ["invalid_json", "invalid_json"]
    assert [s["answer"] for s in result["selected_map_answers"]] == ["Bridge funds.", "Fleets."]
    assert [r.stage for r in server.chat_requests()].count("reduce") == 2
    assert len(server.chat_requests()) == 7


def test_a_lone_surrogate_in_a_map_answer_is_repaired_and_the_run_completes(store: Path) -> None:
    escaped = '{"answer": "Bridge \\ud800 funds.", "usefulness": 90}'  # valid JSON, a lone surrogate
    script = Scripted({
        "ns/1": Reply(completion(escaped)),
        "ns/2": Reply(completion('{"answer": "Fleets \udfff land.", "usefulness": 20}')),  # in the reply's text itself
        "ns/3": map_reply("", 0),
    })
    with ScriptedChatServer(script) as server:
        done = subprocess.run(
            [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
             *ONE_BATCH_EACH, "--json"],
            capture_output=True, env=clean_env(), timeout=60, stdin=subprocess.DEVNULL, check=False,
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.decode("utf-8"))  # strict: the output is valid UTF-8
    assert result["status"] == "completed"
    assert [b["answer"] for b in result["batches"]] == ["Bridge \ufffd funds.", "Fleets \ufffd land.", ""]
    assert result["batches"][0]["attempts"][0]["raw_response"] == escaped
    assert result["batches"][1]["attempts"][0]["raw_response"] == '{"answer": "Fleets \ufffd land.", "usefulness": 20}'
    (reduce,) = [r for r in server.chat_requests() if r.stage == "reduce"]
    assert reduce.json["messages"][1]["content"].endswith(
        "[Usefulness: 90; Community IDs: ns/1]\nBridge \ufffd funds.\n\n"
        "[Usefulness: 20; Community IDs: ns/2]\nFleets \ufffd land."
    )
    assert result["answer"] == "The port authority funds it."


def test_a_long_reply_is_kept_capped_with_its_full_size(store: Path, tmp_path: Path) -> None:
    head = '{"answer": "Bridge funds.", "usefulness": 90, "padding": "'
    long_content = head + "é" * ((200_000 - len(head) - 2) // 2) + '"}'
    assert len(long_content.encode()) == 200_000
    script = Scripted({"ns/1": Reply(completion(long_content)), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = query(store, server.base_url, "--events", str(events))
    assert run.code == 0, run.stderr
    result = run.json
    (attempt,) = result["batches"][0]["attempts"]
    assert attempt["raw_response"] == long_content.encode()[:65536].decode()
    assert (len(attempt["raw_response"].encode()), attempt["raw_response_bytes"]) == (65536, 200_000)
    assert result["batches"][0]["answer"] == "Bridge funds."
    assert result["batches"][1]["attempts"][0]["raw_response_bytes"] == len(json.dumps({"answer": "", "usefulness": 0}))
    assert result["reduce"]["attempts"][0]["raw_response_bytes"] == len(json.dumps({"answer": "The port authority funds it."}))
    assert len(run.stdout.encode()) < 80_000
    assert "é" * 100 not in events.read_text()  # no event carries the reply


def test_every_batch_failing_is_summarised_by_kind(store: Path) -> None:
    script = Scripted({
        "ns/1": Reply("upstream exploded " * 50, status=500),
        "ns/2": Reply("upstream exploded again", status=500),
        "ns/3": Reply(completion("no JSON here")),
    })
    with ScriptedChatServer(script) as server:
        run = query(store, server.base_url)
    assert run.code == 1, run.stderr
    result = run.json
    assert result["status"] == "failed"
    assert result["error"] == "3 of 3 Map batches failed: HTTP 500 ×2, invalid JSON ×1; see --json"
    kinds = [[a["error_kind"] for a in b["attempts"]] for b in result["batches"]]
    assert kinds == [["http"] * 2, ["http"] * 2, ["invalid_json"] * 2]
    assert result["batches"][1]["attempts"][0]["error"] == "HTTP 500: upstream exploded again"
    assert all(r.stage == "map" for r in server.chat_requests()) and len(server.chat_requests()) == 6


def test_an_unreachable_server_is_one_group_in_the_summary(store: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = query(store, f"http://127.0.0.1:{port}/v1")
    assert run.code == 1, run.stderr
    result = run.json
    assert result["error"] == "3 of 3 Map batches failed: ConnectError (all connection attempts failed) ×3; see --json"
    assert {a["error"] for b in result["batches"] for a in b["attempts"]} == {
        f"ConnectError: All connection attempts failed (POST http://127.0.0.1:{port}/v1/chat/completions)"
    }


def test_a_reduce_answer_copying_the_prompts_placeholder_fails_the_run(store: Path) -> None:
    script = Scripted(
        {"ns/1": map_reply("Bridge funds.", 90), "ns/2": map_reply("string", 40), "ns/3": map_reply("", 0)},
        reduce=reduce_reply("final answer text"),
    )
    with ScriptedChatServer(script) as server:
        run = query(store, server.base_url)
    assert run.code == 1, run.stderr
    result = run.json
    placeholder = "Map reply's `answer` is the prompt's placeholder 'string', not an answer"
    assert attempts_of(result)[1] == [("invalid_fields", placeholder)] * 2
    assert result["status"] == "failed" and result["answer"] is None
    assert result["error"] == (
        "Reduce failed twice: Reduce reply's `answer` is the prompt's placeholder 'final answer text', not an answer"
    )
    (reduce, _) = [r for r in server.chat_requests() if r.stage == "reduce"]
    system = reduce.json["messages"][0]["content"]
    assert system.endswith('Return only a JSON object with one field: "answer" (a string).')
    assert "final answer text" not in system
