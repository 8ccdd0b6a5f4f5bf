"""Issue 12, rate limits, with the real CLI against a scripted server on 127.0.0.1: the caps
space requests, a 429 fails no batch and moves no attempt counter, each header form is
honoured, the wait budget ends a batch, and the settings come from flags, config and the
environment."""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from graphrag_tui.engine.prompts import map_skeleton
from graphrag_tui.engine.tokens import estimate_tokens
from tests.chat_server import (
    EveryNth429,
    RateEnforced,
    Received,
    Reply,
    Scripted,
    ScriptedChatServer,
    map_reply,
    reduce_reply,
    too_many,
)
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import build_store, three_leaves

QUESTION = "Who keeps the harbour ledger?"


def many_batches(path: Path, count: int) -> tuple[Path, list[str]]:
    """A store of `count` communities, and the options that give each a batch of its own."""
    rows = [{"id": f"ns/{i:04d}", "summary_content": f"Community {i} keeps the harbour ledger."} for i in range(count)]
    budget = estimate_tokens(map_skeleton(QUESTION) + "\n") + 32
    return build_store(path, rows), ["--map-budget", str(budget), "--map-reserve", "0", "--no-shuffle", "--no-config"]


def answers(request: Received) -> Reply:
    return reduce_reply("The clerks keep it.") if request.stage == "reduce" else map_reply("A clerk keeps it.", 50)


def query(store: Path, server: ScriptedChatServer, *extra: str, env: dict[str, str] | None = None, timeout: float = 60):
    return run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", "--json", *extra,
                   env=env, timeout=timeout)


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def events_of(path: Path, kind: str) -> list[dict]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["type"] == kind]


def test_rpm_120_never_lets_a_10_second_window_see_more_than_20_requests(tmp_path: Path) -> None:
    store, options = many_batches(tmp_path / "s.db", 23)
    with ScriptedChatServer(answers) as server:
        run = query(store, server, *options, "--concurrency", "8", "--rpm", "120")
    assert run.code == 0, run.stderr
    assert run.json["status"] == "completed"
    times = [r.received_at for r in server.chat_requests()]
    assert len(times) == 24  # 23 Map batches and Reduce
    assert times[-1] - times[0] > 10.0  # long enough for a window to hold 21
    in_window = [sum(start <= t < start + 10.0 for t in times) for start in times]
    assert max(in_window) == 20  # at the cap, never over it
    assert "note: the rate caps" not in run.stderr  # they add 11.6 s: under a minute goes unsaid
    between = gaps(times)
    assert min(between) > 0.4  # evenly spaced (0.505 s): no burst beyond one request


def test_a_429_on_every_third_request_over_200_batches_fails_none_and_moves_no_attempt(tmp_path: Path) -> None:
    store, options = many_batches(tmp_path / "s.db", 200)
    script = EveryNth429(answers, 3, {"retry-after-ms": "5"})
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = query(store, server, *options, "--concurrency", "8", "--events", str(events))
    assert run.code == 0, run.stderr
    result = run.json
    assert (result["status"], result["batch_count"], result["failed_batch_count"]) == ("completed", 200, 0)
    every_attempt = [a for b in result["batches"] for a in b["attempts"]] + result["reduce"]["attempts"]
    assert {a["attempt"] for a in every_attempt} == {1}
    limited = [a for a in every_attempt if a["error_kind"] == "rate_limited"]
    assert len(limited) == script.rejected == len(server.chat_requests()) // 3 > 60
    assert {a["error_kind"] for a in every_attempt} == {"rate_limited", None}
    assert all(b["attempts"][-1]["error_kind"] is None for b in result["batches"])
    # 5 ms as announced; a second 429 in a row of one batch waits at least 10 ms, a third 20 ms...
    waits = {"0.005"} | {f"{0.01 * 2 ** k:g}" for k in range(8)}
    assert all(a["error"] in {f'HTTP 429: {{"error": "slow down"}}; sent again after {w} s (retry-after-ms)' for w in waits}
               for a in limited), limited
    rate_events = events_of(events, "rate_limited")
    assert len(rate_events) == script.rejected
    assert {e["source"] for e in rate_events} == {"retry-after-ms"}
    assert {str(e["wait_s"]) for e in rate_events} <= waits
    assert sum(e["wait_s"] == 0.005 for e in rate_events) > len(rate_events) / 2
    assert events_of(events, "attempt_failed") == []
    changes = events_of(events, "concurrency_changed")
    assert changes[0] | {"t": 0} == {"type": "concurrency_changed", "t": 0, "from": 8, "to": 4, "reason": "rate_limited"}
    assert {c["reason"] for c in changes} <= {"rate_limited", "recovered"}


@pytest.mark.parametrize(
    ("headers", "wait_s", "source"),
    [
        ({"retry-after-ms": "300"}, 0.3, "retry-after-ms"),
        ({"Retry-After": "1"}, 1.0, "retry-after"),
        ({"x-ratelimit-reset-requests": "20ms"}, 0.02, "x-ratelimit-reset-requests"),
        ({"x-ratelimit-reset-tokens": "0m0.4s"}, 0.4, "x-ratelimit-reset-tokens"),
        ({"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "250ms"}, 0.25, "x-ratelimit-reset-tokens"),
        ({"retry-after-ms": "50", "Retry-After": "2", "x-ratelimit-reset-tokens": "3s"}, 0.05, "retry-after-ms"),
        ({}, 1.0, "backoff"),
    ],
)
def test_each_header_form_is_honoured(tmp_path: Path, headers: dict[str, str], wait_s: float, source: str) -> None:
    store = three_leaves(tmp_path / "s.db")
    events = tmp_path / "events.jsonl"
    script = Scripted({"ns/1": [Reply("slow down", status=429, headers=headers), map_reply("Bridge.", 90)],
                       "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config",
                    "--events", str(events))
    assert run.code == 0, run.stderr
    (event,) = events_of(events, "rate_limited")
    assert (event["batch_index"], event["wait_s"], event["source"], event["concurrency"]) == (0, wait_s, source, 2)
    first, second = run.json["batches"][0]["attempts"]
    assert (first["attempt"], first["error_kind"], second["attempt"], second["error_kind"]) == (1, "rate_limited", 1, None)
    sends = [r.received_at for r in server.chat_requests() if r.stage == "map" and "ns/1 |" in r.prompt]
    assert sends[1] - sends[0] >= wait_s - 0.005


def test_a_wait_past_the_budget_fails_the_batch_at_once_as_rate_limited(tmp_path: Path) -> None:
    store = three_leaves(tmp_path / "s.db")
    script = Scripted({"ns/1": too_many(360, "x-ratelimit-reset-tokens"), "ns/2": map_reply("Fleets.", 40),
                       "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config",
                    timeout=20)
    assert run.code == 0, run.stderr
    result = run.json
    assert (result["status"], result["failed_batch_count"]) == ("partial", 1)
    (attempt,) = result["batches"][0]["attempts"]
    assert (attempt["attempt"], attempt["error_kind"]) == (1, "rate_limited")
    assert attempt["error"].endswith("; the server asked to wait 360 s, more than the 300 s left of this call's "
                                     "300 s for rate limits (--max-rate-wait, from its first 429)")
    assert len([r for r in server.chat_requests() if "ns/1 |" in r.prompt]) == 1


def test_max_rate_wait_bounds_the_total_of_one_batchs_waits(tmp_path: Path) -> None:
    store = three_leaves(tmp_path / "s.db")
    script = Scripted({"ns/1": too_many(0.4, "retry-after-ms"), "ns/2": map_reply("Fleets.", 40),
                       "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config",
                    "--max-rate-wait", "1")
    assert run.code == 0, run.stderr
    attempts = run.json["batches"][0]["attempts"]
    assert [(a["attempt"], a["error_kind"]) for a in attempts] == [(1, "rate_limited")] * 3
    left = re.search(r"more than the (0\.[0-9]+) s left of this call's 1 s", attempts[-1]["error"])
    assert left is not None and 0.05 < float(left.group(1)) <= 0.2, attempts[-1]["error"]


def test_the_reduce_call_follows_the_same_429_rules(tmp_path: Path) -> None:
    store = three_leaves(tmp_path / "s.db")
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
                      reduce=too_many(0.1, "retry-after-ms"))
    calls = {"reduce": 0}

    def reduce_once_limited(request: Received) -> Reply:
        if request.stage == "reduce":
            calls["reduce"] += 1
            if calls["reduce"] > 1:
                return reduce_reply("After the wait.")
        return script(request)

    with ScriptedChatServer(reduce_once_limited) as server:
        run = query(store, server, "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config")
    assert run.code == 0, run.stderr
    assert run.json["answer"] == "After the wait."
    assert [(a["attempt"], a["error_kind"]) for a in run.json["reduce"]["attempts"]] == [(1, "rate_limited"), (1, None)]


def test_a_reduce_call_rate_limited_past_its_budget_says_so(tmp_path: Path) -> None:
    """It said `Reduce failed twice`, of a call that was sent as its attempt 1 only."""
    store = three_leaves(tmp_path / "s.db")
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
                      reduce=too_many(360, "x-ratelimit-reset-tokens"))
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config")
    assert run.code == 1, run.stderr
    (attempt,) = run.json["reduce"]["attempts"]
    assert run.json["error"] == f"Reduce was rate limited past its wait: {attempt['error']}"
    assert attempt["error"].endswith("the server asked to wait 360 s, more than the 300 s left of this call's 300 s "
                                     "for rate limits (--max-rate-wait, from its first 429)")


def test_a_server_enforcing_its_rate_fails_no_batch(tmp_path: Path) -> None:
    store, options = many_batches(tmp_path / "s.db", 40)
    script = RateEnforced(answers, limit=10, window=0.5, form="x-ratelimit-reset-requests")
    with ScriptedChatServer(script) as server:
        run = query(store, server, *options, "--concurrency", "16")
    assert run.code == 0, run.stderr
    assert (run.json["status"], run.json["failed_batch_count"]) == ("completed", 0)
    assert script.rejected > 0
    assert len(script.accepted) == 41


def test_the_caps_come_from_the_config_file_and_the_environment(tmp_path: Path) -> None:
    store, options = many_batches(tmp_path / "s.db", 5)
    options = [o for o in options if o != "--no-config"]
    config = tmp_path / "config.toml"
    config.write_text("[model]\nrequests_per_minute = 600\n")
    with ScriptedChatServer(answers) as server:
        from_config = query(store, server, *options, "--config", str(config))
        first = [r.received_at for r in server.chat_requests()]
    with ScriptedChatServer(answers) as server:
        env = clean_env(GRAPHRAG_TUI_REQUESTS_PER_MINUTE="300", GRAPHRAG_TUI_MAX_RATE_WAIT="10")
        from_env = query(store, server, *options, "--config", str(config), env=env)
        second = [r.received_at for r in server.chat_requests()]
    assert from_config.code == from_env.code == 0
    # 0.101 s apart (600 a minute), 0.202 s (300): within the jitter of arrival times.
    assert 0.08 < min(gaps(first)) and max(gaps(first)) < 0.17
    assert 0.18 < min(gaps(second))  # the variable over the file


@pytest.mark.parametrize(
    ("args", "config", "env", "message"),
    [
        (["--rpm", "0"], None, {}, "--rpm must be a positive integer (per minute), got '0'"),
        (["--tpm", "lots"], None, {}, "--tpm must be a positive integer (per minute), got 'lots'"),
        (["--max-rate-wait", "-1"], None, {}, "--max-rate-wait must be a non-negative number of seconds, got '-1'"),
        ([], '[model]\nrequests_per_minute = "fast"\n', {},
         "[model] requests_per_minute must be a positive integer (per minute), got 'fast'"),
        ([], None, {"GRAPHRAG_TUI_TOKENS_PER_MINUTE": "1.5"},
         "GRAPHRAG_TUI_TOKENS_PER_MINUTE must be a positive integer (per minute), got '1.5'"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path: Path, args, config, env, message) -> None:
    store = three_leaves(tmp_path / "s.db")
    (tmp_path / "c.toml").write_text(config or "")
    where = ["--config", str(tmp_path / "c.toml")]
    run = run_cli("query", str(store), QUESTION, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *where, *args,
                  env=clean_env(**env))
    assert (run.code, run.stdout) == (2, "")
    assert message in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_caps_that_hold_the_run_back_for_long_are_said_before_the_first_call(tmp_path: Path) -> None:
    """`--tpm 1` with 3 Map calls of ~100 tokens: the first call goes, the next waits hours.
    It looked like a hang; the least time the caps add is said as the run starts."""
    store, options = many_batches(tmp_path / "s.db", 3)
    plan = run_cli("plan", str(store), QUESTION, *options, "--json")
    tokens = [batch["prompt_tokens"] for batch in plan.json["batches"]]
    least = sum(tokens) * 60 * 1.01  # seconds: each call holds the next (the last, Reduce) back
    hours, minutes = divmod(round(least) // 60, 60)
    with ScriptedChatServer(answers) as server:
        process = subprocess.Popen(
            [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *options,
             "--tpm", "1", "--rpm", "600", "--no-history", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_env(),
        )
        assert process.stderr is not None
        said, _, _ = select.select([process.stderr], [], [], 20)  # without the note: nothing, for hours
        note = process.stderr.readline() if said else ""
        deadline = time.monotonic() + 20
        while len(server.chat_requests()) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    assert note == (f"note: the rate caps (at most 600 requests and 1 token a minute) space this run's 3 Map calls "
                    f"over at least {hours} h {minutes:02d} min\n")
    assert len(server.chat_requests()) == 1  # the second waits for the cap
    assert process.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "cancelled"



def test_a_429_storm_ends_each_batch_within_its_wait_budget(tmp_path: Path) -> None:
    """Every request answered 429 "retry now": each call's own waits grow slowly (10 ms,
    doubling), while the others' 429s hold it in the gate; counting only its own waits, the
    run went round every batch in turn: 28 s here for --max-rate-wait 2 (46 batches at 20 s
    had finished none after 261 s). The time other calls' 429s held a call counts too."""
    store, options = many_batches(tmp_path / "s.db", 20)
    storm = Reply({"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after-ms": "0"})
    began = time.monotonic()
    with ScriptedChatServer(lambda request: storm) as server:
        run = query(store, server, *options, "--concurrency", "8", "--max-rate-wait", "2", timeout=120)
    took = time.monotonic() - began
    assert run.code == 1, run.stderr
    assert run.json["status"] == "failed"
    batches = run.json["batches"]
    assert [b["status"] for b in batches] == ["failed"] * 20
    assert {b["attempts"][-1]["error_kind"] for b in batches} == {"rate_limited"}
    assert all(b["attempts"][-1]["error"].endswith("s for rate limits (--max-rate-wait, from its first 429)")
               for b in batches)
    assert took < 20, took  # 8 s here (2 s from each batch's first 429, and the storm's requests); 28 s before
