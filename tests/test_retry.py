"""SPEC §3.5: at most two attempts per call, the second after Retry-After (capped), each
attempt recorded (engine/retry.py): `call_with_retry` on its own, then through runs."""

from __future__ import annotations

import asyncio
import time

import pytest

from graphrag_tui.engine import retry as retry_module
from graphrag_tui.engine.events import AttemptFailed, BatchFailed, RetryWaiting
from graphrag_tui.engine.ports import ChatRequest, ModelError
from tests.scripted_model import ScriptedModel, batch_index, make_plan, reply, run_search

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
            0: [ModelError("http", "HTTP 429", status=429), reply("a", 10)],
            1: [ModelError("http", "HTTP 500", status=500, retry_after=5), reply("b", 10)],
        }
    )
    engine, events = run_search(make_plan(2), model)
    monkeypatch.setattr(retry_module.asyncio, "sleep", fake_sleep)
    result = await engine.run()
    assert result.status == "completed"
    assert not [e for e in events if isinstance(e, RetryWaiting)]
    assert [s for s in slept if s] == []


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_makes_the_second_attempt_wait(status: int) -> None:
    model = ScriptedModel({0: [ModelError("http", f"HTTP {status}", status=status, retry_after=0.05), reply("a", 10)]})
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
        {0: [ModelError("http", "HTTP 429", status=429, retry_after=3600), reply("a", 10)]},
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
