"""SPEC §3.5: at most two attempts per call, the second after Retry-After (capped), each
attempt recorded (engine/retry.py): `call_with_retry` on its own, then through runs."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from graphrag_tui.engine import retry as retry_module
from graphrag_tui.engine.events import AttemptFailed, BatchFailed, EventReporter, RetryWaiting
from graphrag_tui.engine.ports import ChatRequest, ModelError
from graphrag_tui.engine.prompts import reduce_messages
from graphrag_tui.engine.replies import parse_reduce_reply
from graphrag_tui.engine.result import Attempt
from graphrag_tui.engine.retry import ModelCaller, call_with_retry, retry_wait
from tests.scripted_model import QUERY, WHEN, ScriptedModel, batch_index, make_plan, reply, run_search

REQUEST = ChatRequest(stage="reduce", messages=reduce_messages(QUERY, "x"), query=QUERY, content="x")


class Replies:
    """Answers each call with the next action: a reply, an exception to raise, or an async
    function of the request."""

    description = "scripted replies"

    def __init__(self, *actions) -> None:
        self.actions = list(actions)
        self.calls = 0

    async def complete(self, request: ChatRequest) -> str:
        action = self.actions[self.calls]
        self.calls += 1
        if isinstance(action, BaseException):
            raise action
        if callable(action):
            return await action(request)
        return action

    async def aclose(self) -> None:
        pass


def caller(model, events: list, timeout: float = 5.0) -> ModelCaller:
    """Every event at t=0 (a frozen clock), every attempt started at WHEN."""
    return ModelCaller(model, EventReporter(events.append, lambda: 0.0), timeout, lambda: 0.0, lambda: WHEN)


async def call(model, events: list, record: list[Attempt], starts: list[int] | None = None, **kwargs):
    on_start = starts.append if starts is not None else None
    return await call_with_retry(
        caller(model, events, **kwargs), REQUEST, parse_reduce_reply, record=record, batch_index=3, worker=2, on_start=on_start
    )


# -- call_with_retry ---------------------------------------------------------------------------


async def test_a_good_first_reply_takes_one_attempt() -> None:
    events, record, starts = [], [], []
    model = Replies('{"answer": "first"}', '{"answer": "never asked"}')
    assert await call(model, events, record, starts) == "first"
    assert (model.calls, starts, events) == (1, [1], [])
    assert record == [
        Attempt(attempt=1, started_at=WHEN.isoformat(), duration_s=0.0, raw_response='{"answer": "first"}', raw_response_bytes=19)
    ]


async def test_two_attempts_at_most_each_failure_reported() -> None:
    events, record, starts = [], [], []
    model = Replies("bad", ModelError("transport", "connection reset"), '{"answer": "never asked"}')
    assert await call(model, events, record, starts) is None
    assert (model.calls, starts) == (2, [1, 2])
    assert [(a.attempt, a.error_kind, a.error, a.raw_response) for a in record] == [
        (1, "invalid_json", "reply is not valid JSON: 'bad'", "bad"),
        (2, "transport", "connection reset", None),
    ]
    assert events == [
        AttemptFailed(t=0.0, batch_index=3, worker=2, attempt=1, error_kind="invalid_json",
                      error="reply is not valid JSON: 'bad'", will_retry=True),
        AttemptFailed(t=0.0, batch_index=3, worker=2, attempt=2, error_kind="transport", error="connection reset",
                      will_retry=False),
    ]


async def test_the_retry_sends_the_same_request_after_a_timeout() -> None:
    seen: list[ChatRequest] = []

    async def slow(request: ChatRequest) -> str:
        seen.append(request)
        await asyncio.sleep(5)
        return "too late"

    async def quick(request: ChatRequest) -> str:
        seen.append(request)
        return json.dumps({"answer": "in time"})

    events, record = [], []
    began = time.monotonic()
    assert await call(Replies(slow, quick), events, record, timeout=0.05) == "in time"
    assert time.monotonic() - began < 2.0
    assert seen == [REQUEST, REQUEST]
    assert [(a.error_kind, a.error) for a in record] == [("timeout", "no reply within 0.05 s"), (None, None)]


@pytest.mark.parametrize(("asked", "waited"), [(3600, 60.0), (61.5, 60.0), (60, 60.0), (12.5, 12.5), (-5, 0.0)])
def test_retry_wait_is_what_the_server_asked_within_0_to_60_seconds(asked: float, waited: float) -> None:
    assert retry_wait(asked) == waited


async def test_a_retry_after_wait_is_capped_at_60_seconds_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds, *args, **kwargs):
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(retry_module.asyncio, "sleep", fake_sleep)
    events, record = [], []
    model = Replies(ModelError("http", "HTTP 503", status=503, retry_after=3600), '{"answer": "after the wait"}')
    assert await call(model, events, record) == "after the wait"
    assert [s for s in slept if s] == [60.0]
    assert events == [
        AttemptFailed(t=0.0, batch_index=3, worker=2, attempt=1, error_kind="http", error="HTTP 503", will_retry=True),
        RetryWaiting(t=0.0, batch_index=3, seconds=60.0),
    ]


async def test_cancelling_during_an_attempt_records_it_and_stops() -> None:
    entered, never = asyncio.Event(), asyncio.Event()

    async def hang(request: ChatRequest) -> str:
        entered.set()
        await never.wait()
        return "never"

    events, record = [], []
    model = Replies(hang, '{"answer": "never asked"}')
    task = asyncio.create_task(call(model, events, record))
    await asyncio.wait_for(entered.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert model.calls == 1
    assert [(a.attempt, a.error_kind, a.error) for a in record] == [(1, None, "cancelled")]
    assert events == []


async def test_cancelling_during_the_retry_after_wait_makes_no_second_attempt() -> None:
    events, record = [], []
    model = Replies(ModelError("http", "HTTP 503", status=503, retry_after=30), '{"answer": "never asked"}')
    task = asyncio.create_task(call(model, events, record))
    deadline = time.monotonic() + 2
    while not any(isinstance(e, RetryWaiting) for e in events):
        assert time.monotonic() < deadline, "the wait never started"
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert model.calls == 1
    assert [(a.attempt, a.error_kind) for a in record] == [(1, "http")]
    assert [type(e).__name__ for e in events] == ["AttemptFailed", "RetryWaiting"]
    assert events[-1] == RetryWaiting(t=0.0, batch_index=3, seconds=30.0)


# -- through runs ---------------------------------------------------------------------------


async def test_retry_counts() -> None:
    model = ScriptedModel(
        {
            0: [ModelError("transport", "connection reset"), reply("second time", 40)],
            1: ["nope", "still nope", reply("never asked", 99)],
        }
    )
    engine, events = run_search(make_plan(3, concurrency=1), model)
    result = await engine.run()
    b0, b1, b2 = result.batches
    assert (b0.status, len(b0.attempts), b0.answer, b0.usefulness) == ("succeeded", 2, "second time", 40)
    assert [a.attempt for a in b0.attempts] == [1, 2]
    assert (b1.status, len(b1.attempts), b1.answer, b1.usefulness) == ("failed", 2, None, None)
    assert (b2.status, len(b2.attempts)) == ("succeeded", 1)
    assert model.calls == {0: 2, 1: 2, 2: 1, "reduce": 1}
    # the retry sends the same prompt again
    r1 = [r for r in model.map_requests() if batch_index(r) == 1]
    assert r1[0] == r1[1]
    assert result.status == "partial"
    assert result.failed_batch_count == 1
    assert result.answer == "final answer"
    failed_events = [e for e in events if isinstance(e, AttemptFailed)]
    assert [(e.batch_index, e.attempt, e.will_retry, e.error_kind) for e in failed_events] == [
        (0, 1, True, "transport"),
        (1, 1, True, "invalid_json"),
        (1, 2, False, "invalid_json"),
    ]
    assert [e.batch_index for e in events if isinstance(e, BatchFailed)] == [1]


async def test_error_kinds_and_raw_responses_are_recorded() -> None:
    async def slow(request: ChatRequest) -> str:
        await asyncio.sleep(5)
        return reply("too late", 10)

    model = ScriptedModel(
        {
            0: [
                ModelError("http", "HTTP 500: boom", status=500, raw_response='{"error": "boom"}'),
                ModelError("transport", "connection refused"),
            ],
            1: [slow],
            2: ["this is not JSON", '{"answer": "a", "usefulness": "80"}'],
            3: [reply("ok", 70)],
        }
    )
    engine, _ = run_search(make_plan(4, concurrency=4), model, timeout=0.05)
    began = time.monotonic()
    result = await engine.run()
    assert time.monotonic() - began < 1.0
    kinds = [[(a.error_kind, a.raw_response) for a in b.attempts] for b in result.batches]
    assert kinds == [
        [("http", '{"error": "boom"}'), ("transport", None)],
        [("timeout", None), ("timeout", None)],
        [("invalid_json", "this is not JSON"), ("invalid_fields", '{"answer": "a", "usefulness": "80"}')],
        [(None, reply("ok", 70))],
    ]
    b0, b1, b2, b3 = result.batches
    assert [a.error for a in b0.attempts] == ["HTTP 500: boom", "connection refused"]
    sizes = [[a.raw_response_bytes for a in b.attempts] for b in result.batches]
    assert sizes == [[17, None], [None, None], [16, 35], [len(reply("ok", 70))]]
    assert all(a.error for a in b1.attempts + b2.attempts)
    assert b3.attempts[0].error is None
    for attempt in b1.attempts:
        assert 0.04 <= attempt.duration_s < 1.0
    assert {a.started_at for b in result.batches for a in b.attempts} == {"2024-05-06T07:08:09+00:00"}
    assert result.status == "partial"
    assert result.failed_batch_count == 3


async def test_no_retry_after_wait_without_the_header_or_for_other_statuses(monkeypatch) -> None:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds, *args, **kwargs):
        slept.append(seconds)
        await real_sleep(0)

    model = ScriptedModel(
        {
            0: [ModelError("http", "HTTP 503", status=503), reply("a", 10)],
            1: [ModelError("http", "HTTP 500", status=500, retry_after=5), reply("b", 10)],
        }
    )
    engine, events = run_search(make_plan(2), model)
    monkeypatch.setattr(retry_module.asyncio, "sleep", fake_sleep)
    result = await engine.run()
    assert result.status == "completed"
    assert not [e for e in events if isinstance(e, RetryWaiting)]
    assert [s for s in slept if s] == []


async def test_retry_after_makes_the_second_attempt_wait() -> None:
    model = ScriptedModel({0: [ModelError("http", "HTTP 503", status=503, retry_after=0.05), reply("a", 10)]})
    engine, events = run_search(make_plan(1), model)
    result = await engine.run()
    assert result.status == "completed"
    first, second = model.call_times[0]
    assert second - first >= 0.045
    types = [e.type for e in events if e.type != "reduce_candidate"]
    assert types[:6] == ["planned", "batch_started", "attempt_failed", "retry_waiting", "batch_started", "batch_succeeded"]
    (waiting,) = [e for e in events if isinstance(e, RetryWaiting)]
    assert (waiting.batch_index, waiting.seconds) == (0, 0.05)


async def test_retry_after_is_capped_at_60_seconds(monkeypatch) -> None:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds, *args, **kwargs):
        slept.append(seconds)
        await real_sleep(0)

    model = ScriptedModel(
        {0: [ModelError("http", "HTTP 503", status=503, retry_after=3600), reply("a", 10)]},
        reduce_script=[ModelError("http", "HTTP 503", status=503, retry_after=61.5), '{"answer": "done"}'],
    )
    engine, events = run_search(make_plan(1), model)
    monkeypatch.setattr(retry_module.asyncio, "sleep", fake_sleep)
    result = await engine.run()
    assert result.status == "completed"
    assert result.answer == "done"
    waits = [(e.batch_index, e.seconds) for e in events if isinstance(e, RetryWaiting)]
    assert waits == [(0, 60.0), (None, 60.0)]
    assert [s for s in slept if s] == [60.0, 60.0]
    assert len(result.reduce.attempts) == 2
