"""The Reduce answer as it is written, end to end: the real `graphrag-tui` command against the
scripted server streaming server-sent events (issue 12: the answer as it is written), and
the requests adapted once to a server that refuses a field (streaming, `max_tokens`)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chat_server import Received, Reply, Scripted, ScriptedChatServer, completion, map_reply, streamed
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config"]
MAPS = {"ns/1": map_reply("The port authority funds it.", 80), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)}
KEY = "sk-test/SECRET+4242"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def split_reply(answer: str, size: int) -> list[str]:
    text = json.dumps({"answer": answer})
    return [text[i : i + size] for i in range(0, len(text), size)]


def query(store: Path, server: ScriptedChatServer, *extra: str, **kw: Any) -> Any:
    return run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH,
                   *extra, **kw)


def test_the_reduce_request_streams_and_the_events_carry_the_answer_in_pieces(store: Path, tmp_path: Path) -> None:
    answer = 'The "port authority" funds it \\ says the report: é 😀\nNext line.'
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(Scripted(MAPS, reduce=streamed(split_reply(answer, 3)))) as server:
        run = query(store, server, "--events", str(events), "--json")
        reduce_request = [r for r in server.chat_requests() if r.stage == "reduce"][0]
        map_request = [r for r in server.chat_requests() if r.stage == "map"][0]
    assert run.code == 0, run.stderr
    assert run.json["answer"] == answer  # --json: only the final object on stdout
    assert (reduce_request.json["stream"], reduce_request.json["stream_options"]) == (True, {"include_usage": True})
    assert reduce_request.headers["accept"] == "text/event-stream"
    assert "stream" not in map_request.json
    deltas = [e for e in events_of(events) if e["type"] == "answer_delta"]
    assert len(deltas) > 10
    assert {e["attempt"] for e in deltas} == {1}
    assert "".join(e["text"] for e in deltas) == answer
    assert run.json["reduce"]["attempts"][0]["raw_response"] == json.dumps({"answer": answer})


def test_text_mode_prints_the_answer_as_it_streams_before_the_run_ends(store: Path) -> None:
    gates = [threading.Event() for _ in range(4)]
    pieces = ['{"answer": "The port', ' authority', ' funds', ' it."}']
    gates[0].set()
    with ScriptedChatServer(Scripted(MAPS, reduce=streamed(pieces, gates=gates))) as server:
        child = subprocess.Popen(
            [EXECUTABLE, "query", "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH, str(store), QUESTION],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), stdin=subprocess.DEVNULL,
        )
        try:
            assert child.stdout is not None
            seen = b""
            for expected in (b"The port", b" authority", b" funds"):
                while not seen.endswith(expected):  # each piece arrives while the next is held back
                    byte = child.stdout.read(1)
                    assert byte, (seen, child.stderr.read() if child.stderr else "")
                    seen += byte
                assert child.poll() is None
                gates[len([g for g in gates if g.is_set()])].set()
            stdout, stderr = child.communicate(timeout=30)
        finally:
            for gate in gates:
                gate.set()
            if child.poll() is None:
                child.kill()
    output = (seen + stdout).decode()
    assert child.returncode == 0, stderr
    lines = output.splitlines()
    # the answer once (as it streamed), then the result as usual
    assert lines[:3] == ["The port authority funds it.", "", "status: completed"]
    assert output.count("The port authority funds it.") == 1


def test_a_streamed_reply_that_fails_validation_is_retried_and_the_text_starts_over(store: Path) -> None:
    calls: list[int] = []
    bad = streamed(['{"answer": "", ', '"oops": 1}'])
    good = streamed(split_reply("Second try.", 4))

    def reduce_reply(request: Received) -> Reply:
        calls.append(1)
        return bad if len(calls) == 1 else good

    script = Scripted(MAPS)
    script.reduce = None  # type: ignore[assignment]

    def route(request: Received) -> Reply:
        return reduce_reply(request) if request.stage == "reduce" else script(request)

    with ScriptedChatServer(route) as server:
        run = query(store, server)
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == ["Second try.", ""]
    assert lines[2] == "status: completed"


def test_a_server_that_refuses_stream_gets_a_plain_request_once_per_run(store: Path, tmp_path: Path) -> None:
    def route(request: Received) -> Reply:
        if request.json.get("stream"):
            return Reply({"error": {"message": "stream is not supported", "param": "stream"}}, status=400)
        if request.stage == "reduce":
            return Reply(completion(json.dumps({"answer": "Plainly funded."})))
        return Scripted(MAPS)(request)

    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(route) as server:
        run = query(store, server, "--events", str(events), "--json", "-v")
        reduce_requests = [r.json.get("stream") for r in server.chat_requests() if r.stage == "reduce"]
    assert run.code == 0, run.stderr
    assert (run.json["status"], run.json["answer"]) == ("completed", "Plainly funded.")
    assert reduce_requests == [True, None]
    # the refusal used no attempt
    assert [a["attempt"] for a in run.json["reduce"]["attempts"]] == [1]
    assert run.json["reduce"]["attempts"][0]["error"] is None
    adapted = [e for e in events_of(events) if e["type"] == "request_adapted"]
    assert [(e["batch_index"], e["change"]) for e in adapted] == [(None, "stream off (the server refused stream: true)")]
    assert "graphrag_tui.engine: request adapted to the server: stream off (the server refused stream: true)" in (
        run.stderr.splitlines()
    )


def test_a_server_that_answers_a_stream_request_with_plain_json_is_read_as_usual(store: Path, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    reduce = Reply(completion(json.dumps({"answer": "Not streamed."})))
    with ScriptedChatServer(Scripted(MAPS, reduce=reduce)) as server:
        run = query(store, server, "--events", str(events), "--json")
        reduce_requests = [r.json.get("stream") for r in server.chat_requests() if r.stage == "reduce"]
    assert run.code == 0, run.stderr
    assert run.json["answer"] == "Not streamed."
    assert reduce_requests == [True]  # the reply was an answer: nothing is asked twice
    adapted = [e["change"] for e in events_of(events) if e["type"] == "request_adapted"]
    assert adapted == ["stream off (the server answered without server-sent events)"]


def test_a_max_tokens_rejection_switches_the_field_once_without_using_an_attempt(store: Path, tmp_path: Path) -> None:
    refusal = {
        "error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                       "Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter",
        }
    }

    def route(request: Received) -> Reply:
        if "max_tokens" in request.json:
            return Reply(refusal, status=400)
        if request.stage == "reduce":
            return streamed(split_reply("The authority.", 5))
        return Scripted(MAPS)(request)

    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(route) as server:
        run = query(store, server, "--map-reserve", "100", "--map-budget", "430", "--concurrency", "1",
                    "--events", str(events), "--json", "-v")
        fields = [sorted(k for k in r.json if "max" in k) for r in server.chat_requests()]
    assert run.code == 0, run.stderr
    result = run.json
    assert result["status"] == "completed"
    assert fields == [["max_tokens"], ["max_completion_tokens"], ["max_completion_tokens"],
                      ["max_completion_tokens"], ["max_completion_tokens"]]
    assert [[a["attempt"] for a in b["attempts"]] for b in result["batches"]] == [[1], [1], [1]]
    assert all(a["error"] is None for b in result["batches"] for a in b["attempts"])
    adapted = [(e["batch_index"], e["change"]) for e in events_of(events) if e["type"] == "request_adapted"]
    assert adapted == [(0, "max_tokens -> max_completion_tokens (the server refused max_tokens)")]
    assert run.stderr.count("request adapted to the server: max_tokens -> max_completion_tokens") == 1


def test_max_tokens_field_given_is_sent_and_never_switched(store: Path) -> None:
    def route(request: Received) -> Reply:
        if "max_completion_tokens" in request.json:
            return Reply({"error": {"message": "Unsupported parameter: 'max_completion_tokens'"}}, status=400)
        return Scripted(MAPS)(request)

    with ScriptedChatServer(route) as server:
        run = query(store, server, "--map-reserve", "100", "--map-budget", "430", "--max-tokens-field",
                    "max_completion_tokens", "--json")
        sent = [sorted(k for k in r.json if "max" in k) for r in server.chat_requests()]
    assert run.code == 1
    assert run.json["status"] == "failed"
    assert sent == [["max_completion_tokens"]] * 6  # two attempts per batch, no switch
    # a 400 naming max_tokens without saying it is unsupported is not a reason to switch
    with ScriptedChatServer(lambda r: Reply({"error": {"message": "max_tokens is too large: 9999"}}, status=400)) as s:
        run = query(store, s, "--map-reserve", "100", "--map-budget", "430", "--json")
        sent = [sorted(k for k in r.json if "max" in k) for r in s.chat_requests()]
    assert sent == [["max_tokens"]] * 6


def test_the_key_is_masked_in_the_streamed_answer_whatever_the_pieces(store: Path, tmp_path: Path) -> None:
    escaped = "".join(f"\\\\u{ord(ch):04x}" for ch in KEY)  # the key as JSON escapes inside the JSON string
    reply_text = json.dumps({"answer": f"key {KEY} again "})[:-2] + escaped + '"}'
    events = tmp_path / "events.jsonl"
    for size in (1, 2, 5, 7):
        with ScriptedChatServer(Scripted(MAPS, reduce=streamed([reply_text[i:i + size] for i in
                                                                  range(0, len(reply_text), size)]))) as server:
            run = query(store, server, "--api-key-env", "GW_KEY", "--events", str(events),
                        env=clean_env(GW_KEY=KEY))
        assert run.code == 0, run.stderr
        assert KEY not in run.stdout and "SECRET" not in run.stdout
        assert "SECRET" not in events.read_text() and "\\u0053\\u0045" not in events.read_text().upper()
        deltas = "".join(e["text"] for e in events_of(events) if e["type"] == "answer_delta")
        assert "***" in deltas and "SECRET" not in deltas


def test_a_stream_past_the_size_cap_fails_the_attempt(store: Path) -> None:
    huge = ['{"answer": "'] + ["x" * 1000] * 50 + ['"}']
    with ScriptedChatServer(Scripted(MAPS, reduce=streamed(huge))) as server:
        run = query(store, server, "--max-response-bytes", "20000", "--json")
    assert run.code == 1
    attempts = run.json["reduce"]["attempts"]
    assert [a["error_kind"] for a in attempts] == ["response_too_large", "response_too_large"]


@pytest.mark.parametrize(
    "events",
    [
        [b"data: {not json}\n\n"],
        [b"data: [1, 2]\n\n"],
        [b'data: {"error": {"message": "overloaded"}}\n\n'],
    ],
)
def test_a_hostile_stream_fails_the_attempt_in_one_line(store: Path, events: list[bytes]) -> None:
    reply = Reply(chunks=lambda: iter(events), content_type="text/event-stream")
    started = time.monotonic()
    with ScriptedChatServer(Scripted(MAPS, reduce=reply)) as server:
        run = query(store, server, "--json")
    assert time.monotonic() - started < 30
    assert run.code == 1, run.stderr
    attempts = run.json["reduce"]["attempts"]
    assert len(attempts) == 2
    assert attempts[0]["error_kind"] in ("invalid_json", "http")
    assert "\n" not in attempts[0]["error"]
