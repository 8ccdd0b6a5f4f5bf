"""Usage, cost and the cost limit, end to end: the real `graphrag-tui` command against the
scripted chat-completions server on 127.0.0.1 (issue 12: usage and cost)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.chat_server import Reply, Scripted, ScriptedChatServer, completion, sse_event, streamed, usage
from tests.cli_runner import run_cli
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle"]
PRICES = '[prices."m1"]\ninput = 2.0\noutput = 8.0\ncached_input = 0.5\n'


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def config(tmp_path: Path, text: str = PRICES) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def map_with_usage(answer: str, usefulness: int, prompt: int, completion_tokens: int, cached: int | None) -> Reply:
    body = json.dumps({"answer": answer, "usefulness": usefulness})
    return Reply(completion(body, usage=usage(prompt, completion_tokens, cached)))


def reduce_streamed(pieces: list[str], prompt: int, completion_tokens: int) -> Reply:
    return streamed(pieces, usage=usage(prompt, completion_tokens))


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_usage_totals_equal_the_servers_sums_and_cost_follows_the_price_table(store: Path, tmp_path: Path) -> None:
    script = Scripted(
        {
            "ns/1": map_with_usage("The port authority funds it.", 80, 1000, 50, 400),
            "ns/2": map_with_usage("Fleets fish at dawn.", 10, 2000, 30, None),
            "ns/3": map_with_usage("", 0, 3000, 7, 0),
        },
        reduce=reduce_streamed(['{"answer": "The port ', 'authority funds it."}'], 500, 20),
    )
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_BATCH_EACH, "--concurrency", "1", "--config", str(config(tmp_path)),
                      "--events", str(events), "--json")
    assert run.code == 0, run.stderr
    result = run.json
    assert result["status"] == "completed"
    assert result["answer"] == "The port authority funds it."
    attempts = [b["attempts"] for b in result["batches"]]
    assert [[a["usage"] for a in batch] for batch in attempts] == [
        [{"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 400, "total_tokens": 1050}],
        [{"prompt_tokens": 2000, "completion_tokens": 30, "cached_tokens": 0, "total_tokens": 2030}],
        [{"prompt_tokens": 3000, "completion_tokens": 7, "cached_tokens": 0, "total_tokens": 3007}],
    ]
    assert [a["usage"] for a in result["reduce"]["attempts"]] == [
        {"prompt_tokens": 500, "completion_tokens": 20, "cached_tokens": 0, "total_tokens": 520}
    ]
    assert result["usage_total"] == {
        "prompt_tokens": 6500, "completion_tokens": 107, "cached_tokens": 400, "total_tokens": 6607
    }
    # the estimate of the same prompts stays beside the real counts
    estimate = sum(b["prompt_tokens"] for b in result["batches"]) + result["reduce"]["prompt_tokens"]
    assert result["estimated_prompt_tokens"] == estimate
    # input: 6100 uncached x $2/M; cached: 400 x $0.5/M; output: 107 x $8/M
    assert result["cost"] == {
        "input": 0.0122, "output": 0.000856, "cached": 0.0002, "total": 0.013256, "currency": "USD"
    }
    usage_events = [e for e in events_of(events) if e["type"] == "usage"]
    assert [(e["batch_index"], e["usage"]["prompt_tokens"]) for e in usage_events] == [
        (0, 1000), (1, 2000), (2, 3000), (None, 500)
    ]
    assert [e["usage_total"]["prompt_tokens"] for e in usage_events] == [1000, 3000, 6000, 6500]
    assert usage_events[-1]["estimated_prompt_tokens_total"] == estimate
    assert usage_events[-1]["cost"]["total"] == 0.013256
    assert [e["estimated_prompt_tokens"] for e in usage_events] == [
        *(b["prompt_tokens"] for b in result["batches"]), result["reduce"]["prompt_tokens"]
    ]


def test_text_mode_prints_tokens_and_cost(store: Path, tmp_path: Path) -> None:
    script = Scripted(
        {"ns/1": map_with_usage("It is funded.", 80, 100, 10, None),
         "ns/2": map_with_usage("", 0, 100, 10, None), "ns/3": map_with_usage("", 0, 100, 10, None)},
        reduce=Reply(completion(json.dumps({"answer": "Funded."}), usage=usage(50, 5))),
    )
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_BATCH_EACH, "--config", str(config(tmp_path)))
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    estimate = lines[-3].split("(")[1].split(" ")[0]
    assert lines[-3] == f"tokens: 350 prompt ({estimate} estimated, 0 cached), 35 completion, 385 total"
    assert lines[-2] == "cost: $0.0010 (input $0.0007, cached $0.0000, output $0.0003)"
    assert re.fullmatch(r"run [0-9a-z]+", lines[-1])  # the run history's id of it comes last


def test_a_server_without_usage_gives_null_usage_and_no_cost(store: Path, tmp_path: Path) -> None:
    body = json.dumps({"answer": "x", "usefulness": 50})
    script = Scripted({c: Reply(completion(body)) for c in ("ns/1", "ns/2", "ns/3")})
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_BATCH_EACH, "--config", str(config(tmp_path)), "--json")
    assert run.code == 0, run.stderr
    result = run.json
    assert (result["usage_total"], result["estimated_prompt_tokens"]) == (None, None)
    # prices apply, but nothing was counted: the cost of what the server reported is 0
    assert result["cost"] == {"input": 0.0, "output": 0.0, "cached": 0.0, "total": 0.0, "currency": "USD"}
    # text mode says neither tokens nor a cost of $0.0000, which read as free (found by a probe),
    # and --max-cost, which nothing reported could reach, says it limited nothing
    with ScriptedChatServer(script) as server:
        text = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                       *ONE_BATCH_EACH, "--config", str(config(tmp_path)), "--max-cost", "0.5")
    assert text.code == 0, text.stderr
    assert "tokens:" not in text.stdout and "cost:" not in text.stdout
    assert text.stderr.splitlines()[-1] == ("warning: the server reported no usage for any call, so "
                                            "--max-cost $0.5 limited nothing (only reported usage is priced)")


@pytest.mark.parametrize(
    "bad",
    [
        {"prompt_tokens": -1, "completion_tokens": 2},
        {"prompt_tokens": "10", "completion_tokens": 2},
        {"prompt_tokens": True, "completion_tokens": 2},
        {"prompt_tokens": 1.5, "completion_tokens": 2},
        {"prompt_tokens": 10**30, "completion_tokens": 2},
        {"prompt_tokens": 2**53, "completion_tokens": 2**53},  # no total given: theirs would be past any call's
        {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": "x"}},
        "lots",
    ],
)
def test_a_hostile_usage_is_dropped_whole_and_the_reply_still_counts(store: Path, bad: Any) -> None:
    body = completion(json.dumps({"answer": "x", "usefulness": 50}))
    body["usage"] = bad
    script = Scripted({c: Reply(body) for c in ("ns/1", "ns/2", "ns/3")})
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_BATCH_EACH, "--no-config", "--json")
    assert run.code == 0, run.stderr
    result = run.json
    assert result["status"] == "completed"
    assert [b["attempts"][0]["usage"] for b in result["batches"]] == [None, None, None]
    assert result["usage_total"] is None


def test_plan_json_shows_the_estimated_cost_of_the_map_prompts(store: Path, tmp_path: Path) -> None:
    run = run_cli("plan", str(store), QUESTION, "--base-url", "http://127.0.0.1:9/v1", "--model", "m1",
                  *ONE_BATCH_EACH, "--config", str(config(tmp_path)), "--json")
    assert run.code == 0, run.stderr
    report = run.json
    tokens = sum(b["prompt_tokens"] for b in report["batches"])
    assert report["estimated_cost"] == {
        "model": "m1", "prompt_tokens": tokens, "input": round(tokens * 2.0 / 1_000_000, 9), "currency": "USD"
    }
    text = run_cli("plan", str(store), QUESTION, "--base-url", "http://127.0.0.1:9/v1", "--model", "m1",
                   *ONE_BATCH_EACH, "--config", str(config(tmp_path)))
    assert text.stdout.splitlines()[1] == (
        f"estimated cost of the Map prompts: ${tokens * 2.0 / 1_000_000:.4f} ({tokens} tokens of m1 input, "
        "estimated; replies and Reduce not included)"
    )
    # no table for the model: null
    other = run_cli("plan", str(store), QUESTION, "--base-url", "http://127.0.0.1:9/v1", "--model", "m2",
                    *ONE_BATCH_EACH, "--config", str(config(tmp_path)), "--json")
    assert other.json["estimated_cost"] is None


def test_max_cost_stops_the_run_sends_nothing_more_and_cancels_what_is_in_flight(store: Path, tmp_path: Path) -> None:
    release = threading.Event()
    expensive = map_with_usage("The port authority funds it.", 80, 1_000_000, 0, None)  # $2.00
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 50}), usage=usage(1, 1)), gate=release)
    script = Scripted({"ns/1": expensive, "ns/2": held, "ns/3": held})
    try:
        with ScriptedChatServer(script) as server:
            run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                          *ONE_BATCH_EACH, "--concurrency", "2", "--max-cost", "1.5",
                          "--config", str(config(tmp_path)), "--json", timeout=30)
            sent = len(server.chat_requests())
    finally:
        release.set()
    assert run.code == 130, run.stderr
    result = run.json
    assert result["status"] == "cancelled"
    assert result["detail"] == "cost limit reached during Map: spent $2.0000 of --max-cost $1.5"
    assert [b["status"] for b in result["batches"]] == ["succeeded", "cancelled", "cancelled"]
    # ns/1 and ns/2 were sent together; once ns/1's usage reached the limit, ns/2 was
    # cancelled in flight and ns/3 was never sent
    assert sent == 2
    assert result["batches"][1]["attempts"][0]["error"] == "cancelled"
    assert result["batches"][2]["attempts"] == []
    assert result["cost"]["total"] == 2.0


@pytest.mark.parametrize("content", [None, [{"type": "text", "text": "x"}]], ids=["null", "parts"])
def test_a_billed_reply_without_text_counts_its_usage_and_reaches_the_cost_limit(
    store: Path, tmp_path: Path, content: Any
) -> None:
    # a refusal, or a reasoning model's finish_reason "length": no text to use, but billed
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}],
            "usage": usage(1_000_000, 10)}  # $2.00008
    with ScriptedChatServer(Scripted({c: Reply(body) for c in ("ns/1", "ns/2", "ns/3")})) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_BATCH_EACH, "--concurrency", "1", "--max-cost", "1.5",
                      "--config", str(config(tmp_path)), "--json", timeout=30)
        sent = len(server.chat_requests())
    assert run.code == 130, run.stderr
    result = run.json
    assert result["detail"] == "cost limit reached during Map: spent $2.0001 of --max-cost $1.5"
    assert sent == 1
    billed = {"prompt_tokens": 1_000_000, "completion_tokens": 10, "cached_tokens": 0, "total_tokens": 1_000_010}
    assert [(a["error"], a["usage"]) for a in result["batches"][0]["attempts"]] == [
        ("unexpected response body", billed)]
    assert result["usage_total"] == billed
    assert result["cost"] == {"input": 2.0, "output": 0.00008, "cached": 0.0, "total": 2.00008, "currency": "USD"}


def test_a_streamed_replys_unreadable_usage_chunk_does_not_undo_the_readable_one(store: Path, tmp_path: Path) -> None:
    def reduce_chunks() -> Any:
        yield sse_event({"choices": [{"index": 0, "delta": {"content": '{"answer": "Funded."}'}}]})
        yield sse_event({"choices": [], "usage": usage(500, 20)})
        yield sse_event({"choices": [], "usage": "junk"})
        yield sse_event("[DONE]")

    script = Scripted({c: map_with_usage("It is funded.", 80, 100, 10, None) for c in ("ns/1", "ns/2", "ns/3")},
                      reduce=Reply(chunks=reduce_chunks, content_type="text/event-stream"))
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                      *ONE_BATCH_EACH, "--config", str(config(tmp_path)), "--json")
    assert run.code == 0, run.stderr
    assert run.json["answer"] == "Funded."
    assert [a["usage"] for a in run.json["reduce"]["attempts"]] == [
        {"prompt_tokens": 500, "completion_tokens": 20, "cached_tokens": 0, "total_tokens": 520}]
    assert run.json["usage_total"]["prompt_tokens"] == 800


def test_resuming_a_run_stopped_at_its_cost_limit_says_it_goes_on_without_one(store: Path, tmp_path: Path) -> None:
    """`resume` sent the rest with no limit and said nothing (the limit is this command's)."""
    history = str(tmp_path / "history.db")
    expensive = map_with_usage("The port authority funds it.", 80, 1_000_000, 0, None)  # $2.00
    with ScriptedChatServer(Scripted({"ns/1": expensive})) as server:
        stopped = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                          *ONE_BATCH_EACH, "--concurrency", "1", "--max-cost", "1.5", "--history", history,
                          "--config", str(config(tmp_path)), "--json", timeout=30)
    assert stopped.code == 130, stopped.stderr
    run_id = stopped.json["run_id"]
    cheap = map_with_usage("The fleet lands at dawn.", 60, 10, 1, None)
    with ScriptedChatServer(Scripted({"ns/2": cheap, "ns/3": cheap})) as server:
        resumed = run_cli("resume", run_id, "--base-url", server.base_url, "--model", "m1", "--history", history,
                          "--config", str(config(tmp_path)), "--json", timeout=30)
        capped = run_cli("resume", run_id, "--max-cost", "9", "--history", history, "--config", str(config(tmp_path)),
                         "--json", timeout=30)
    assert resumed.code == 0, resumed.stderr
    assert resumed.json["status"] == "completed"
    assert resumed.stderr.splitlines()[0] == (
        f"note: run {run_id} stopped at its cost limit (--max-cost); this resume has no cost limit unless "
        "--max-cost gives one")
    assert capped.code == 2 and "cost limit" not in capped.stderr  # completed now: nothing to resume, and no note


def test_max_cost_without_prices_for_the_model_is_an_input_error_before_any_chat_request(
    store: Path, tmp_path: Path
) -> None:
    with ScriptedChatServer(Scripted({})) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "other",
                      *ONE_BATCH_EACH, "--max-cost", "1", "--config", str(config(tmp_path)))
        assert server.chat_requests() == []
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (
        "graphrag-tui: error: --max-cost needs the prices of model 'other': add a [prices.\"other\"] table "
        "(input and output, dollars per million tokens) to the config file\n"
    )


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_a_bad_max_cost_is_exit_2(store: Path, value: str) -> None:
    run = run_cli("query", str(store), QUESTION, "--max-cost", value, "--no-config")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: --max-cost must be a positive number of dollars, got {value!r}\n"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[prices."m1"]\ninput = -1\noutput = 1\n',
         '[prices."m1"] input must be a number of dollars per million tokens, from 0 to 1,000,000, got -1'),
        # a run's cost was infinite, and its JSON printed Infinity
        ('[prices."m1"]\ninput = 1\noutput = 1e300\n',
         '[prices."m1"] output must be a number of dollars per million tokens, from 0 to 1,000,000, got 1e+300'),
        ('[prices."m1"]\ninput = "cheap"\noutput = 1\n',
         '[prices."m1"] input must be a number of dollars per million tokens, from 0 to 1,000,000, got \'cheap\''),
        ('[prices."m1"]\ninput = 1\n', '[prices."m1"] needs output (dollars per million tokens)'),
        ('[prices."m1"]\ninput = 1\noutput = 1\nbatch = 2\n',
         'unknown key \'batch\' in [prices."m1"] (known: input, output, cached_input)'),
    ],
)
def test_a_bad_price_table_is_one_line_naming_it(store: Path, tmp_path: Path, table: str, message: str) -> None:
    path = config(tmp_path, table)
    run = run_cli("plan", str(store), QUESTION, "--config", str(path))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: config file {path}: {message}\n"
