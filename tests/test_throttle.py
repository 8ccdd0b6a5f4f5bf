"""Issue 12, the engine's side of rate limits: the run's gate (engine/throttle.py) and how the
one retry loop (engine/retry.py) treats a 429: re-queued without using an attempt, within
the call's wait budget."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from graphrag_tui.engine.events import AttemptFailed, ConcurrencyChanged, EventReporter, RateLimited
from graphrag_tui.engine.ports import ChatRequest, ModelError
from graphrag_tui.engine.prompts import prompt_text, reduce_messages
from graphrag_tui.engine.rate_limits import RateLimits
from graphrag_tui.engine.replies import parse_reduce_reply
from graphrag_tui.engine.result import Attempt
from graphrag_tui.engine.retry import ModelCaller, call_with_retry, pause_for_all, rate_wait, request_tokens
from graphrag_tui.engine.throttle import PROBE_PAUSE, SPACING_MARGIN, LimitChange, Throttle, least_spacing
from graphrag_tui.engine.tokens import estimate_tokens
from tests.scripted_model import QUERY, WHEN, ScriptedModel, make_plan, reply, run_search
from tests.test_retry import Replies

REQUEST = ChatRequest(stage="reduce", messages=reduce_messages(QUERY, "x"), query=QUERY, content="x", max_tokens=100)


def too_many(wait: float | None = 0.02, source: str | None = "retry-after-ms") -> ModelError:
    return ModelError("rate_limited", "HTTP 429: slow down", status=429, retry_after=wait, wait_source=source)


# -- the gate ----------------------------------------------------------------------------------


async def send_times(throttle: Throttle, count: int, tokens: int = 0) -> list[float]:
    times = []
    for _ in range(count):
        async with throttle.slot(tokens):
            times.append(time.monotonic())
    return times


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


async def test_requests_per_minute_space_sends_evenly_from_the_first() -> None:
    times = await send_times(Throttle(RateLimits(requests_per_minute=600), 4), 5)
    spacing = 0.1 * SPACING_MARGIN
    assert all(spacing - 0.002 <= gap < spacing + 0.03 for gap in gaps(times)), gaps(times)


async def test_tokens_per_minute_hold_the_next_send_back_by_the_tokens_sent() -> None:
    throttle = Throttle(RateLimits(tokens_per_minute=60_000), 4)  # 1,000 tokens a second
    first = time.monotonic()
    async with throttle.slot(150):
        pass
    async with throttle.slot(10):
        second = time.monotonic()
    async with throttle.slot(10):
        third = time.monotonic()
    assert 0.15 * SPACING_MARGIN - 0.002 <= second - first < 0.15 * SPACING_MARGIN + 0.03
    assert 0.01 * SPACING_MARGIN - 0.002 <= third - second < 0.01 * SPACING_MARGIN + 0.03


async def test_least_spacing_is_what_the_gate_holds_requests_back() -> None:
    """Both caps at once: each request holds the next back by the wider spacing (rpm 600: 0.1 s;
    tpm 60,000: 1 ms a token), so 150, 30 and 120 tokens hold back 0.15 + 0.1 + 0.12 s."""
    limits = RateLimits(requests_per_minute=600, tokens_per_minute=60_000)
    assert least_spacing(limits, [150, 30, 120]) == pytest.approx(0.37 * SPACING_MARGIN, abs=1e-12)
    throttle = Throttle(limits, 4)
    first = time.monotonic()
    for tokens in (150, 30, 120):
        async with throttle.slot(tokens):
            pass
    async with throttle.slot(0):  # the next call (Reduce) goes once the three have held it back
        after = time.monotonic()
    assert 0.37 * SPACING_MARGIN - 0.002 <= after - first < 0.37 * SPACING_MARGIN + 0.05
    assert least_spacing(RateLimits(), [10**9]) == 0.0
    assert least_spacing(RateLimits(tokens_per_minute=1), [100, 200]) == pytest.approx(300 * 60 * SPACING_MARGIN)


async def test_without_caps_nothing_waits() -> None:
    started = time.monotonic()
    await send_times(Throttle(RateLimits(), 4), 200)
    assert time.monotonic() - started < 0.2


def test_a_request_counts_its_estimated_prompt_and_its_reserve_against_tokens_per_minute() -> None:
    assert request_tokens(REQUEST) == estimate_tokens(prompt_text(REQUEST.messages)) + 100


async def test_calls_in_flight_never_pass_the_limit() -> None:
    throttle = Throttle(RateLimits(), 3)
    peak = 0

    async def call() -> None:
        nonlocal peak
        async with throttle.slot():
            peak = max(peak, throttle.in_flight)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(call() for _ in range(12)))
    assert (peak, throttle.in_flight) == (3, 0)


async def test_a_429_halves_the_limit_once_per_round_and_pauses_every_send() -> None:
    throttle = Throttle(RateLimits(), 8)
    async with throttle.slot() as first_round:
        pass
    assert throttle.rate_limited(0.15, first_round) == LimitChange(8, 4)
    assert throttle.rate_limited(0.15, first_round) is None  # sent before the halving: no second halving
    assert throttle.limit == 4
    began = time.monotonic()
    async with throttle.slot() as second_round:
        paused = time.monotonic() - began
    assert 0.14 <= paused < 0.3
    assert second_round == first_round + 1
    assert throttle.rate_limited(0.0, second_round) == LimitChange(4, 2)
    assert throttle.rate_limited(0.0, second_round + 1) == LimitChange(2, 1)
    assert throttle.rate_limited(0.0, second_round + 2) is None  # never below one
    assert throttle.limit == 1


@pytest.mark.parametrize(("wait", "sure", "paused"), [(1.0, 0.0, PROBE_PAUSE), (1.0, 0.2, 0.2), (0.02, 0.0, 0.02)])
async def test_when_the_wait_is_not_sure_the_others_pause_what_is_sure_and_probe_no_faster(wait, sure, paused) -> None:
    throttle = Throttle(RateLimits(), 4)
    throttle.rate_limited(wait, 0, sure=sure)
    began = time.monotonic()
    async with throttle.slot():
        waited = time.monotonic() - began
    assert paused - 0.005 <= waited < paused + 0.05


async def test_the_limit_grows_by_one_after_as_many_successes_as_it_allows_up_to_the_maximum() -> None:
    throttle = Throttle(RateLimits(), 5)
    throttle.rate_limited(0.0, 0)
    throttle.rate_limited(0.0, 1)
    assert throttle.limit == 1
    changes = [throttle.succeeded() for _ in range(1 + 2 + 3 + 4 + 10)]
    grown = [(n, c) for n, c in enumerate(changes, 1) if c is not None]
    assert grown == [(1, LimitChange(1, 2)), (3, LimitChange(2, 3)), (6, LimitChange(3, 4)), (10, LimitChange(4, 5))]
    assert throttle.limit == 5
    throttle.rate_limited(0.0, 2)
    assert throttle.limit == 2
    throttle.succeeded()
    throttle.rate_limited(0.0, 2)  # a 429 starts the count again (this one halves no more: an old round)
    assert [throttle.succeeded(), throttle.succeeded()] == [None, LimitChange(2, 3)]


async def test_the_gate_serves_waiters_first_come_first_served() -> None:
    throttle = Throttle(RateLimits(), 1)
    order: list[int] = []
    hold = asyncio.Event()

    async def call(number: int) -> None:
        async with throttle.slot():
            order.append(number)
            if number == 0:
                await hold.wait()

    tasks = [asyncio.create_task(call(0))]
    await asyncio.sleep(0.01)
    tasks += [asyncio.create_task(call(n)) for n in (1, 2, 3)]
    await asyncio.sleep(0.01)
    hold.set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3]


async def test_cancelling_a_waiting_call_frees_nothing_it_did_not_hold() -> None:
    throttle = Throttle(RateLimits(), 1)
    async with throttle.slot():
        waiter = asyncio.create_task(send_times(throttle, 1))
        await asyncio.sleep(0.01)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert throttle.in_flight == 1
    assert throttle.in_flight == 0
    assert len(await send_times(throttle, 2)) == 2


# -- the wait after a 429 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "in_a_row", "expected"),
    [
        (too_many(2.5, "retry-after"), 1, (2.5, "retry-after")),
        (too_many(0.02, "x-ratelimit-reset-tokens"), 1, (0.02, "x-ratelimit-reset-tokens")),
        (too_many(0.0, "retry-after-ms"), 1, (0.0, "retry-after-ms")),  # "retry now", once
        (too_many(0.0, "retry-after-ms"), 2, (0.01, "retry-after-ms")),  # then a floor
        (too_many(0.005, "retry-after-ms"), 4, (0.04, "retry-after-ms")),  # doubling with each in a row
        (too_many(0.5, "retry-after-ms"), 4, (0.5, "retry-after-ms")),
        (too_many(3.0, None), 1, (3.0, "retry-after")),  # a model that did not name its header
        (too_many(None, None), 1, (1.0, "backoff")),
        (too_many(None, None), 3, (4.0, "backoff")),
        (too_many(None, None), 12, (60.0, "backoff")),
        (too_many(None, None), 5000, (60.0, "backoff")),
        (None, 1, (1.0, "backoff")),
    ],
)
def test_the_wait_is_the_announced_one_within_a_floor_else_a_doubling_backoff(error, in_a_row, expected) -> None:
    assert rate_wait(error, in_a_row) == expected


@pytest.mark.parametrize(
    ("wait", "source", "others"),
    [(3.0, "retry-after", 2.0), (0.6, "retry-after", 0.0), (3.0, "retry-after-ms", 3.0),
     (3.0, "x-ratelimit-reset-requests", 3.0), (3.0, "x-ratelimit-reset-tokens", 3.0), (4.0, "backoff", 4.0)],
)
def test_the_others_pause_a_second_less_only_after_a_whole_second_retry_after(wait, source, others) -> None:
    assert pause_for_all(wait, source) == others


async def test_after_a_whole_second_retry_after_the_call_waits_it_all_and_the_others_a_second_less() -> None:
    events: list = []
    throttle = Throttle(RateLimits(), 4)
    model = Replies(too_many(1.3, "retry-after"), '{"answer": "late"}')
    caller = ModelCaller(model, EventReporter(events.append, lambda: 0.0), 5.0, lambda: 0.0, lambda: WHEN,
                         throttle=throttle)
    began = time.monotonic()
    limited = asyncio.create_task(call_with_retry(caller, REQUEST, parse_reduce_reply, record=[], batch_index=0,
                                                  worker=1))
    while not events:
        await asyncio.sleep(0.001)
    async with throttle.slot():
        other = time.monotonic() - began
    assert await limited == "late"
    assert 0.25 <= other < 0.6  # paused 0.3 s
    assert time.monotonic() - began >= 1.3


# -- call_with_retry -----------------------------------------------------------------------------


async def call(model, limits: RateLimits | None = None, concurrency: int = 4):
    limits = limits or RateLimits()
    events: list = []
    record: list[Attempt] = []
    throttle = Throttle(limits, concurrency)
    caller = ModelCaller(model, EventReporter(events.append, lambda: 0.0), 5.0, lambda: 0.0, lambda: WHEN,
                         throttle=throttle)
    starts: list[int] = []
    answer = await call_with_retry(caller, REQUEST, parse_reduce_reply, record=record, batch_index=7, worker=1,
                                   on_start=starts.append)
    return answer, record, events, starts, throttle


def summary(record: list[Attempt]) -> list[tuple]:
    return [(a.attempt, a.error_kind, a.error) for a in record]


async def test_a_429_is_recorded_with_the_number_of_the_send_that_follows_and_uses_no_attempt() -> None:
    model = Replies(too_many(0.02), "not json", too_many(0.03, "retry-after"), '{"answer": "done"}')
    answer, record, events, starts, throttle = await call(model)
    assert answer == "done"
    assert starts == [1, 1, 2, 2]
    assert summary(record) == [
        (1, "rate_limited", "HTTP 429: slow down; sent again after 0.02 s (retry-after-ms)"),
        (1, "invalid_json", "reply is not valid JSON: 'not json'"),
        (2, "rate_limited", "HTTP 429: slow down; sent again after 0.03 s (retry-after)"),
        (2, None, None),
    ]
    assert events == [
        ConcurrencyChanged.model_validate({"t": 0.0, "from": 4, "to": 2, "reason": "rate_limited"}),
        RateLimited(t=0.0, batch_index=7, wait_s=0.02, source="retry-after-ms", concurrency=2),
        AttemptFailed(t=0.0, batch_index=7, worker=1, attempt=1, error_kind="invalid_json",
                      error="reply is not valid JSON: 'not json'", will_retry=True),
        ConcurrencyChanged.model_validate({"t": 0.0, "from": 2, "to": 1, "reason": "rate_limited"}),
        RateLimited(t=0.0, batch_index=7, wait_s=0.03, source="retry-after", concurrency=1),
        ConcurrencyChanged.model_validate({"t": 0.0, "from": 1, "to": 2, "reason": "recovered"}),  # one answer at 1
    ]
    assert throttle.in_flight == 0


async def test_a_429_from_a_model_that_calls_it_http_is_rate_limited_all_the_same() -> None:
    model = Replies(ModelError("http", "HTTP 429", status=429, retry_after=0.01), '{"answer": "done"}')
    answer, record, events, starts, _ = await call(model)
    assert (answer, starts) == ("done", [1, 1])
    assert summary(record)[0] == (1, "rate_limited", "HTTP 429; sent again after 0.01 s (retry-after)")


async def test_a_wait_past_what_is_left_of_the_budget_fails_the_call_at_once() -> None:
    model = Replies(too_many(0.4), too_many(0.4), too_many(0.4), '{"answer": "never asked"}')
    began = time.monotonic()
    answer, record, events, starts, _ = await call(model, RateLimits(max_rate_wait=1.0))
    assert answer is None
    assert 0.75 <= time.monotonic() - began < 1.5  # two waits, not a third
    assert (model.calls, starts) == (3, [1, 1, 1])
    number, kind, error = summary(record)[-1]
    said = re.fullmatch(r"HTTP 429: slow down; the server asked to wait 0\.4 s, more than the (0\.[0-9]+) s left of "
                        r"this call's 1 s for rate limits \(--max-rate-wait, from its first 429\)", error)
    assert (number, kind) == (1, "rate_limited") and said is not None, error
    assert 0.1 < float(said.group(1)) <= 0.2  # 1 s less its two waits and the sends since its first 429
    assert [a.error_kind for a in record] == ["rate_limited"] * 3
    assert events[-1] == AttemptFailed(t=0.0, batch_index=7, worker=1, attempt=1, error_kind="rate_limited",
                                       error=record[-1].error, will_retry=False)
    assert [e.wait_s for e in events if isinstance(e, RateLimited)] == [0.4, 0.4]


async def test_one_announced_wait_longer_than_the_whole_budget_fails_without_waiting() -> None:
    began = time.monotonic()
    answer, record, events, starts, throttle = await call(Replies(too_many(360.0, "x-ratelimit-reset-tokens")))
    assert answer is None and time.monotonic() - began < 0.5
    assert summary(record) == [(1, "rate_limited", "HTTP 429: slow down; the server asked to wait 360 s, more than "
                                "the 300 s left of this call's 300 s for rate limits (--max-rate-wait, from its first 429)")]
    assert [type(e) for e in events] == [AttemptFailed]
    assert throttle.limit == 4  # a call that gives up neither pauses the others nor lowers the limit


# -- through a run: Map and Reduce share the gate ----------------------------------------------


async def test_map_and_reduce_share_one_gate_and_a_429_fails_no_batch() -> None:
    model = ScriptedModel(
        {i: [too_many(0.01), reply(f"answer-{i}", 50)] for i in range(0, 6, 2)},
        reduce_script=[too_many(0.01, "retry-after"), '{"answer": "final"}'],
    )
    engine, events = run_search(make_plan(6, concurrency=4), model, rate_limits=RateLimits())
    result = await engine.run()
    assert result.status == "completed" and result.answer == "final"
    assert result.failed_batch_count == 0
    for batch in result.batches:
        assert {a.attempt for a in batch.attempts} == {1}
        assert [a.error_kind for a in batch.attempts] == (["rate_limited", None] if batch.index % 2 == 0 else [None])
    assert [(a.attempt, a.error_kind) for a in result.reduce.attempts] == [(1, "rate_limited"), (1, None)]
    limited = [e for e in events if isinstance(e, RateLimited)]
    assert sorted(e.batch_index for e in limited if e.batch_index is not None) == [0, 2, 4]
    assert limited[-1].batch_index is None and limited[-1].source == "retry-after"
    assert engine.throttle.in_flight == 0
    changes = [e for e in events if isinstance(e, ConcurrencyChanged)]
    assert changes[0].model_dump(mode="json") == {"t": changes[0].t, "type": "concurrency_changed", "from": 4, "to": 2,
                                                   "reason": "rate_limited"}


async def test_a_run_under_a_requests_per_minute_cap_spaces_every_call() -> None:
    model = ScriptedModel()
    engine, _ = run_search(make_plan(4, concurrency=4), model, rate_limits=RateLimits(requests_per_minute=1200))
    result = await engine.run()
    assert result.status == "completed"
    times = sorted(t for key in model.call_times for t in model.call_times[key])
    assert len(times) == 5  # four Map batches and Reduce
    assert min(gaps(times)) >= 0.05 * SPACING_MARGIN - 0.002
