"""SPEC §3.5-§3.8 and §5: the Map worker pool, retries, Reduce, outcomes, events, result."""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from datetime import datetime, timezone

import pytest

from graphrag_tui.engine import search as search_module
from graphrag_tui.engine.batcher import MapBatch, PartRef
from graphrag_tui.engine.corpus import CommunityContext
from graphrag_tui.engine.events import (
    AttemptFailed,
    BatchFailed,
    BatchStarted,
    BatchSucceeded,
    Finished,
    Planned,
    ReduceCandidateDecided,
    ReduceStarted,
    RetryWaiting,
)
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.plan import SearchPlan, plan_search
from graphrag_tui.engine.ports import ChatRequest, ModelError
from graphrag_tui.engine.prompts import map_skeleton, prompt_text, reduce_skeleton
from graphrag_tui.engine.search import GlobalSearch
from graphrag_tui.engine.tokens import estimate_tokens

QUERY = "What is the trend?"
WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc)


def reply(answer: str, usefulness) -> str:
    return json.dumps({"answer": answer, "usefulness": usefulness})


def make_plan(batches: int, concurrency: int = 4, **options) -> SearchPlan:
    return SearchPlan(
        query=QUERY,
        namespace="ns",
        level="leaf",
        seed=123,
        options=SearchOptions(concurrency=concurrency, **options),
        summary_count=batches,
        batches=tuple(
            MapBatch(
                index=i,
                pieces=(f"[Community ID: c{i} | summary part 1]\nbatch-{i}",),
                community_ids=(f"c{i}",),
                parts=(PartRef(community_id=f"c{i}", part=1),),
            )
            for i in range(batches)
        ),
    )


def batch_index(request: ChatRequest) -> int:
    return int(request.content.rsplit("batch-", 1)[1])


class ScriptedModel:
    """Map batch i answers `map_script[i][n]` on its n-th call (the last entry repeats);
    an entry is a reply string, an exception to raise, or an async function of the request."""

    description = "scripted test model"

    def __init__(self, map_script=None, reduce_script=None) -> None:
        self.map_script = map_script or {}
        self.reduce_script = reduce_script or ['{"answer": "final answer"}']
        self.requests: list[ChatRequest] = []
        self.calls: dict[object, int] = defaultdict(int)
        self.call_times: dict[object, list[float]] = defaultdict(list)

    async def complete(self, request: ChatRequest) -> str:
        self.requests.append(request)
        if request.stage == "map":
            key: object = batch_index(request)
            script = self.map_script.get(key, [reply(f"answer-{key}", 50)])
        else:
            key, script = "reduce", self.reduce_script
        number = self.calls[key]
        self.calls[key] += 1
        self.call_times[key].append(time.monotonic())
        action = script[min(number, len(script) - 1)]
        if isinstance(action, BaseException):
            raise action
        if callable(action):
            return await action(request)
        return action

    async def aclose(self) -> None:
        pass

    def map_requests(self) -> list[ChatRequest]:
        return [r for r in self.requests if r.stage == "map"]

    def reduce_requests(self) -> list[ChatRequest]:
        return [r for r in self.requests if r.stage == "reduce"]


def run_search(plan, model, **kwargs):
    events: list = []
    engine = GlobalSearch(plan, model, on_event=events.append, wall_clock=lambda: WHEN, **kwargs)
    return engine, events


async def until(condition, limit: float = 2.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.001)


# -- the worker pool ---------------------------------------------------------------------------


class GatedModel(ScriptedModel):
    def __init__(self, concurrency: int) -> None:
        super().__init__()
        self.in_flight = 0
        self.max_in_flight = 0
        self.started = 0
        self.gate = asyncio.Event()
        self.full = asyncio.Event()
        self.concurrency = concurrency

    async def complete(self, request: ChatRequest) -> str:
        self.in_flight += 1
        self.started += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.in_flight == self.concurrency:
            self.full.set()
        try:
            await self.gate.wait()
            await asyncio.sleep(0)
            return await super().complete(request)
        finally:
            self.in_flight -= 1


async def test_pool_reaches_and_never_exceeds_concurrency() -> None:
    model = GatedModel(concurrency=3)
    engine, events = run_search(make_plan(8, concurrency=3), model)
    task = asyncio.create_task(engine.run())
    await asyncio.wait_for(model.full.wait(), 2)
    for _ in range(20):
        await asyncio.sleep(0)
    assert model.in_flight == 3
    assert model.started == 3
    model.gate.set()
    result = await task
    assert model.max_in_flight == 3
    assert model.started == 8 + 1  # and the Reduce call
    assert result.status == "completed"
    assert [b.status for b in result.batches] == ["succeeded"] * 8
    assert events[0] == Planned(t=events[0].t, summary_count=8, batch_count=8, workers=3, seed=123)
    workers = {e.worker for e in events if isinstance(e, BatchStarted)}
    assert workers == {1, 2, 3}
    # every batch claimed exactly once
    assert sorted(e.batch_index for e in events if isinstance(e, BatchStarted)) == list(range(8))


async def test_workers_are_capped_by_batch_count() -> None:
    model = GatedModel(concurrency=2)
    model.gate.set()
    engine, events = run_search(make_plan(2, concurrency=5), model)
    result = await engine.run()
    assert result.status == "completed"
    assert events[0].workers == 2
    assert model.max_in_flight == 2


async def test_results_stored_in_batch_order_regardless_of_completion() -> None:
    release = [asyncio.Event() for _ in range(4)]

    def held(i: int):
        async def answer(request: ChatRequest) -> str:
            await release[i].wait()
            return reply(f"answer-{i}", 10 * (i + 1))

        return [answer]

    model = ScriptedModel({i: held(i) for i in range(4)})
    engine, events = run_search(make_plan(4, concurrency=4), model)
    task = asyncio.create_task(engine.run())
    await until(lambda: len(model.requests) == 4)
    for i in (3, 1, 2, 0):
        release[i].set()
        await until(lambda: any(isinstance(e, BatchSucceeded) and e.batch_index == i for e in events))
    result = await task
    assert [e.batch_index for e in events if isinstance(e, BatchSucceeded)] == [3, 1, 2, 0]
    assert [(b.index, b.answer, b.usefulness) for b in result.batches] == [
        (0, "answer-0", 10),
        (1, "answer-1", 20),
        (2, "answer-2", 30),
        (3, "answer-3", 40),
    ]


# -- attempts and retries ----------------------------------------------------------------------


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
    monkeypatch.setattr(search_module.asyncio, "sleep", fake_sleep)
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
    monkeypatch.setattr(search_module.asyncio, "sleep", fake_sleep)
    result = await engine.run()
    assert result.status == "completed"
    assert result.answer == "done"
    waits = [(e.batch_index, e.seconds) for e in events if isinstance(e, RetryWaiting)]
    assert waits == [(0, 60.0), (None, 60.0)]
    assert [s for s in slept if s] == [60.0, 60.0]
    assert len(result.reduce.attempts) == 2


# -- statuses ------------------------------------------------------------------------------------


async def test_completed() -> None:
    model = ScriptedModel({0: [reply("zero", 20)], 1: [reply("one", 80)]})
    engine, events = run_search(make_plan(2), model)
    result = await engine.run()
    assert (result.status, result.answer, result.error, result.failed_batch_count) == ("completed", "final answer", None, 0)
    assert [(s.answer, s.usefulness, s.community_ids) for s in result.selected_map_answers] == [
        ("one", 80, ("c1",)),
        ("zero", 20, ("c0",)),
    ]
    assert events[-1] == Finished(t=events[-1].t, status="completed", error=None)


async def test_no_results_without_summaries() -> None:
    model = ScriptedModel()
    engine, events = run_search(make_plan(0), model)
    result = await engine.run()
    assert result.status == "no_results"
    assert result.batch_count == 0
    assert model.requests == []
    assert [e.type for e in events] == ["planned", "finished"]


async def test_no_results_when_every_usefulness_is_zero() -> None:
    model = ScriptedModel({0: [reply("", 0)], 1: [reply("nothing relevant", 0)], 2: ["bad", "bad"]})
    engine, _ = run_search(make_plan(3), model)
    result = await engine.run()
    assert result.status == "no_results"
    assert model.reduce_requests() == []
    assert result.answer is None
    assert [(c.batch_index, c.decision) for c in result.reduce.candidates] == [(0, "zero_usefulness"), (1, "zero_usefulness")]
    assert result.reduce.prompt_tokens is None
    assert result.failed_batch_count == 1


async def test_no_results_when_nothing_fits_the_reduce_budget() -> None:
    room = estimate_tokens(reduce_skeleton(QUERY) + "\n") + 5
    model = ScriptedModel({0: [reply("x" * 400, 90)], 1: [reply("y" * 300, 10)]})
    engine, _ = run_search(make_plan(2, reduce_budget=room, reduce_reserve=0), model)
    result = await engine.run()
    assert result.status == "no_results"
    assert model.reduce_requests() == []
    assert [(c.batch_index, c.decision) for c in result.reduce.candidates] == [(0, "over_budget"), (1, "over_budget")]
    assert result.reduce.budget == room
    assert result.selected_map_answers == []


async def test_failed_when_every_map_batch_fails() -> None:
    model = ScriptedModel({0: [ModelError("transport", "refused")], 1: ["garbage"]})
    engine, events = run_search(make_plan(2), model)
    result = await engine.run()
    assert result.status == "failed"
    assert result.failed_batch_count == 2
    assert result.error == "2 of 2 Map batches failed: transport (refused) ×1, invalid JSON ×1; see --json"
    assert model.reduce_requests() == []
    assert model.calls == {0: 2, 1: 2}
    assert events[-1].type == "finished" and events[-1].error == result.error


async def test_failed_when_reduce_fails_twice_keeps_every_map_answer() -> None:
    model = ScriptedModel(
        {0: [reply("zero", 30)], 1: [reply("one", 60)], 2: [reply("two", 0)]},
        reduce_script=['{"answer": ""}', "not json at all", '{"answer": "never"}'],
    )
    engine, events = run_search(make_plan(3), model)
    result = await engine.run()
    assert result.status == "failed"
    assert result.answer is None
    assert "Reduce" in result.error
    assert len(model.reduce_requests()) == 2
    assert [a.error_kind for a in result.reduce.attempts] == ["invalid_fields", "invalid_json"]
    assert [(b.status, b.answer, b.usefulness) for b in result.batches] == [
        ("succeeded", "zero", 30),
        ("succeeded", "one", 60),
        ("succeeded", "two", 0),
    ]
    assert [s.answer for s in result.selected_map_answers] == ["one", "zero"]
    reduce_failures = [e for e in events if isinstance(e, AttemptFailed) and e.batch_index is None]
    assert [(e.attempt, e.will_retry) for e in reduce_failures] == [(1, True), (2, False)]


async def test_cancelled_during_map_keeps_finished_batches() -> None:
    never = asyncio.Event()

    async def hang(request: ChatRequest) -> str:
        await never.wait()
        return reply("never", 1)

    model = ScriptedModel({0: [reply("done", 40)], 1: [hang], 2: [hang], 3: [hang]})
    cancel = asyncio.Event()
    engine, events = run_search(make_plan(4, concurrency=2), model, cancel=cancel)
    task = asyncio.create_task(engine.run())
    await until(lambda: model.calls[1] == 1 and model.calls[2] == 1)
    cancel.set()
    result = await asyncio.wait_for(task, 2)
    assert result.status == "cancelled"
    assert [b.status for b in result.batches] == ["succeeded", "cancelled", "cancelled", "cancelled"]
    assert result.batches[0].answer == "done"
    assert [len(b.attempts) for b in result.batches] == [1, 1, 1, 0]
    assert model.reduce_requests() == []
    assert model.calls[3] == 0
    assert events[-1] == Finished(t=events[-1].t, status="cancelled", error=None)
    assert result.failed_batch_count == 0


async def test_cancelled_during_reduce() -> None:
    never = asyncio.Event()

    async def hang(request: ChatRequest) -> str:
        await never.wait()
        return '{"answer": "never"}'

    model = ScriptedModel({0: [reply("kept", 40)]}, reduce_script=[hang])
    cancel = asyncio.Event()
    engine, _ = run_search(make_plan(1), model, cancel=cancel)
    task = asyncio.create_task(engine.run())
    await until(lambda: model.calls["reduce"] == 1)
    cancel.set()
    result = await asyncio.wait_for(task, 2)
    assert result.status == "cancelled"
    assert result.answer is None
    assert (result.batches[0].status, result.batches[0].answer) == ("succeeded", "kept")
    assert [s.answer for s in result.selected_map_answers] == ["kept"]


# -- events, requests, the result ----------------------------------------------------------------


async def test_event_sequence_of_a_small_run() -> None:
    model = ScriptedModel({0: [reply("useful", 60)], 1: ["oops", reply("", 0)]})
    engine, events = run_search(make_plan(2, concurrency=1), model)
    result = await engine.run()
    assert result.status == "completed"
    assert [e.type for e in events] == [
        "planned",
        "batch_started",
        "batch_succeeded",
        "batch_started",
        "attempt_failed",
        "batch_started",
        "batch_succeeded",
        "reduce_candidate",
        "reduce_candidate",
        "reduce_started",
        "finished",
    ]
    started = [(e.batch_index, e.worker, e.attempt) for e in events if isinstance(e, BatchStarted)]
    assert started == [(0, 1, 1), (1, 1, 1), (1, 1, 2)]
    succeeded = [(e.batch_index, e.attempt, e.usefulness) for e in events if isinstance(e, BatchSucceeded)]
    assert succeeded == [(0, 1, 60), (1, 2, 0)]
    decided = [(e.batch_index, e.decision) for e in events if isinstance(e, ReduceCandidateDecided)]
    assert decided == [(0, "selected"), (1, "zero_usefulness")]
    (reduce_started,) = [e for e in events if isinstance(e, ReduceStarted)]
    assert reduce_started.selected_count == 1
    assert reduce_started.prompt_tokens == result.reduce.prompt_tokens
    assert reduce_started.budget == 8000 - 1024
    times = [e.t for e in events]
    assert times == sorted(times) and times[0] >= 0


@pytest.mark.parametrize(("map_reserve", "reduce_reserve", "map_max", "reduce_max"), [(300, 200, 300, 200), (0, 0, None, None)])
async def test_max_tokens_is_the_reserve(map_reserve, reduce_reserve, map_max, reduce_max) -> None:
    model = ScriptedModel()
    engine, _ = run_search(make_plan(2, map_reserve=map_reserve, reduce_reserve=reduce_reserve), model)
    await engine.run()
    assert [r.max_tokens for r in model.map_requests()] == [map_max, map_max]
    assert [r.max_tokens for r in model.reduce_requests()] == [reduce_max]


async def test_requests_carry_the_exact_prompts() -> None:
    communities = [CommunityContext(id=f"c{i}", summary=f"Trend {i} is rising.") for i in range(5)]
    plan = plan_search(QUERY, "ns", "leaf", communities, SearchOptions(map_budget=200, map_reserve=0), seed=1)
    assert len(plan.batches) >= 2

    class Catchall(ScriptedModel):
        async def complete(self, request: ChatRequest) -> str:
            self.requests.append(request)
            if request.stage == "map":
                return reply(f"answer {len(self.requests)}", 50)
            return '{"answer": "final"}'

    model = Catchall()
    engine, _ = run_search(plan, model)
    result = await engine.run()
    assert result.status == "completed"
    maps = model.map_requests()
    assert sorted(r.content for r in maps) == sorted(b.content for b in plan.batches)
    for request in maps:
        assert prompt_text(request.messages) == map_skeleton(QUERY) + request.content
        assert QUERY in prompt_text(request.messages)
        assert request.query == QUERY
        assert request.stage == "map"
    for batch, batch_result in zip(plan.batches, result.batches):
        assert batch_result.prompt_tokens == estimate_tokens(map_skeleton(QUERY) + batch.content)
        assert batch_result.parts == batch.parts
        assert batch_result.community_ids == batch.community_ids
    (reduce_request,) = model.reduce_requests()
    assert prompt_text(reduce_request.messages) == reduce_skeleton(QUERY) + reduce_request.content
    assert reduce_request.content == "\n\n".join(
        f"[Usefulness: 50; Community IDs: {', '.join(s.community_ids)}]\n{s.answer}" for s in result.selected_map_answers
    )
    assert result.reduce.prompt_tokens == estimate_tokens(prompt_text(reduce_request.messages))
    assert result.seed == 1


async def test_result_json_has_the_spec_fields() -> None:
    model = ScriptedModel({0: [ModelError("http", "HTTP 500", status=500)], 1: [reply("one", 33.5)], 2: [reply("", 0)]})
    engine, _ = run_search(make_plan(3), model)
    result = await engine.run()
    data = result.model_dump(mode="json")
    json.dumps(data)
    assert set(data) == {
        "query",
        "namespace",
        "level",
        "seed",
        "status",
        "answer",
        "error",
        "detail",
        "summary_count",
        "batch_count",
        "failed_batch_count",
        "batches",
        "reduce",
        "selected_map_answers",
    }
    assert (data["query"], data["namespace"], data["level"], data["seed"], data["status"]) == (QUERY, "ns", "leaf", 123, "partial")
    assert (data["error"], data["summary_count"], data["batch_count"], data["failed_batch_count"]) == (None, 3, 3, 1)
    for batch in data["batches"]:
        assert set(batch) == {"index", "community_ids", "parts", "prompt_tokens", "attempts", "usefulness", "answer", "status"}
        for part in batch["parts"]:
            assert set(part) == {"community_id", "part"}
        for attempt in batch["attempts"]:
            assert set(attempt) == {"attempt", "started_at", "duration_s", "error_kind", "error", "raw_response", "raw_response_bytes"}
    assert data["batches"][0]["parts"] == [{"community_id": "c0", "part": 1}]
    assert data["batches"][0]["community_ids"] == ["c0"]
    assert [b["status"] for b in data["batches"]] == ["failed", "succeeded", "succeeded"]
    assert data["batches"][0]["usefulness"] is None and data["batches"][0]["answer"] is None
    assert data["batches"][0]["attempts"][0]["error_kind"] == "http"
    # `attempts` of the Reduce call is recorded too, beyond the SPEC §5 list
    assert set(data["reduce"]) == {"candidates", "prompt_tokens", "budget", "attempts"}
    assert data["reduce"]["budget"] == 8000 - 1024
    assert isinstance(data["reduce"]["prompt_tokens"], int)
    assert data["reduce"]["candidates"] == [
        {"batch_index": 1, "usefulness": 33.5, "community_ids": ["c1"], "decision": "selected"},
        {"batch_index": 2, "usefulness": 0, "community_ids": ["c2"], "decision": "zero_usefulness"},
    ]
    assert data["selected_map_answers"] == [{"answer": "one", "usefulness": 33.5, "community_ids": ["c1"]}]


async def test_numeric_level_serializes_as_integer() -> None:
    plan = make_plan(1).model_copy(update={"level": 2})
    engine, _ = run_search(plan, ScriptedModel())
    data = (await engine.run()).model_dump(mode="json")
    assert data["level"] == 2


# -- trust: no reply and no exception aborts a run (issue 9) -------------------------------------


async def test_an_exception_in_one_batch_fails_that_batch_not_the_run() -> None:
    async def returns_none(request: ChatRequest) -> None:
        return None

    group = ExceptionGroup("two went wrong", [ValueError("a"), KeyError("b")])
    model = ScriptedModel({1: [RuntimeError("model broke")], 2: [group, reply("two, second time", 40)], 3: [returns_none]})
    engine, events = run_search(make_plan(5, concurrency=1), model)
    result = await engine.run()
    assert (result.status, result.failed_batch_count, result.answer) == ("partial", 2, "final answer")
    assert [(b.status, b.answer) for b in result.batches] == [
        ("succeeded", "answer-0"),
        ("failed", None),
        ("succeeded", "two, second time"),
        ("failed", None),
        ("succeeded", "answer-4"),
    ]
    assert [[(a.error_kind, a.error) for a in b.attempts] for b in result.batches[1:4]] == [
        [("internal", "RuntimeError: model broke")] * 2,
        [("internal", "ExceptionGroup: two went wrong (2 sub-exceptions)"), (None, None)],
        [("internal", "TypeError: the model returned NoneType, not text")] * 2,
    ]
    assert [(e.batch_index, e.attempt, e.error_kind, e.will_retry) for e in events if isinstance(e, AttemptFailed)] == [
        (1, 1, "internal", True),
        (1, 2, "internal", False),
        (2, 1, "internal", True),
        (3, 1, "internal", True),
        (3, 2, "internal", False),
    ]
    assert [e.batch_index for e in events if isinstance(e, BatchFailed)] == [1, 3]


async def test_an_exception_while_recording_a_batch_fails_that_batch_not_the_run() -> None:
    events: list = []

    def listener(event) -> None:
        if isinstance(event, BatchSucceeded) and event.batch_index == 0:
            raise RuntimeError("listener broke")
        events.append(event)

    engine = GlobalSearch(make_plan(3, concurrency=1), ScriptedModel(), on_event=listener, wall_clock=lambda: WHEN)
    result = await engine.run()
    assert (result.status, result.failed_batch_count) == ("partial", 1)
    b0 = result.batches[0]
    assert (b0.status, b0.answer, b0.usefulness) == ("failed", None, None)
    assert [(a.attempt, a.error_kind, a.error) for a in b0.attempts] == [(1, "internal", "RuntimeError: listener broke")]
    assert [s.community_ids for s in result.selected_map_answers] == [("c1",), ("c2",)]
    failures = [(type(e).__name__, e.batch_index, e.error) for e in events if isinstance(e, (AttemptFailed, BatchFailed))]
    assert failures == [
        ("AttemptFailed", 0, "RuntimeError: listener broke"),
        ("BatchFailed", 0, "RuntimeError: listener broke"),
    ]


async def test_a_model_raising_in_reduce_fails_the_run_and_keeps_the_map_answers() -> None:
    model = ScriptedModel(reduce_script=[RuntimeError("reduce broke"), ExceptionGroup("again", [OSError("x")])])
    engine, _ = run_search(make_plan(2), model)
    result = await engine.run()
    assert (result.status, result.answer) == ("failed", None)
    assert result.error == "Reduce failed twice: ExceptionGroup: again (1 sub-exception)"
    assert [(a.error_kind, a.error) for a in result.reduce.attempts] == [
        ("internal", "RuntimeError: reduce broke"),
        ("internal", "ExceptionGroup: again (1 sub-exception)"),
    ]
    assert [(b.status, b.answer) for b in result.batches] == [("succeeded", "answer-0"), ("succeeded", "answer-1")]
    assert [s.answer for s in result.selected_map_answers] == ["answer-0", "answer-1"]


async def test_an_exception_around_the_reduce_call_fails_the_run_and_keeps_the_map_answers() -> None:
    def listener(event) -> None:
        if isinstance(event, ReduceStarted):
            raise RuntimeError("listener broke")

    engine = GlobalSearch(make_plan(2), ScriptedModel(), on_event=listener, wall_clock=lambda: WHEN)
    result = await engine.run()
    assert (result.status, result.answer) == ("failed", None)
    assert result.error == "Reduce failed: internal error: RuntimeError: listener broke"
    assert [(b.status, b.answer) for b in result.batches] == [("succeeded", "answer-0"), ("succeeded", "answer-1")]
    assert [s.answer for s in result.selected_map_answers] == ["answer-0", "answer-1"]


async def test_deeply_nested_replies_are_invalid_json_attempts() -> None:
    deep_array = "[" * 3000 + "]" * 3000
    deep_object = '{"a":' * 3000 + "1" + "}" * 3000
    model = ScriptedModel(
        {0: [deep_array], 1: [deep_object, reply("fine", 30)], 2: [f"Here: {deep_array} done"]},
        reduce_script=[deep_object, '{"answer": "merged"}'],
    )
    engine, _ = run_search(make_plan(3), model)
    result = await engine.run()
    assert (result.status, result.answer) == ("partial", "merged")
    assert [[a.error_kind for a in b.attempts] for b in result.batches] == [
        ["invalid_json", "invalid_json"],
        ["invalid_json", None],
        ["invalid_json", "invalid_json"],
    ]
    assert [a.error_kind for a in result.reduce.attempts] == ["invalid_json", None]
    assert result.batches[0].attempts[0].error == f"reply is not valid JSON: {deep_array[:200] + '…'!r}"


async def test_lone_surrogates_from_the_model_are_repaired() -> None:
    model = ScriptedModel(
        {0: ['{"answer": "bad \\ud800 text", "usefulness": 60}'], 1: [ModelError("http", "HTTP 500: \ud800", raw_response="x\udfff")]},
        reduce_script=['{"answer": "sum \\udc00 up"}'],
    )
    engine, _ = run_search(make_plan(3), model)
    result = await engine.run()
    assert (result.status, result.answer) == ("partial", "sum \ufffd up")
    assert result.batches[0].answer == "bad \ufffd text"
    assert result.batches[0].attempts[0].raw_response == '{"answer": "bad \\ud800 text", "usefulness": 60}'
    assert [(a.error, a.raw_response) for a in result.batches[1].attempts] == [("HTTP 500: \ufffd", "x\ufffd")] * 2
    (reduce_request,) = model.reduce_requests()
    assert "[Usefulness: 60; Community IDs: c0]\nbad \ufffd text" in reduce_request.content
    reduce_request.content.encode("utf-8")
    result.model_dump_json().encode("utf-8")

    literal = ScriptedModel({0: ['{"answer": "raw \ud800 char", "usefulness": 60}']})
    result = await run_search(make_plan(1), literal)[0].run()
    assert result.batches[0].answer == "raw \ufffd char"
    assert result.batches[0].attempts[0].raw_response == '{"answer": "raw \ufffd char", "usefulness": 60}'


async def test_raw_responses_are_capped_and_a_long_one_goes_whole_to_the_hook() -> None:
    head = '{"answer": "long é", "usefulness": 50, "pad": "'
    long_reply = head + "x" * (200_000 - len(head.encode()) - 2) + '"}'
    assert len(long_reply.encode()) == 200_000
    long_error = "e" * 70_000
    model = ScriptedModel(
        {0: [long_reply], 1: [ModelError("http", "HTTP 500: " + long_error, status=500, raw_response=long_error), reply("ok", 10)]},
        reduce_script=['{"answer": "' + "r" * 70_000 + '"}'],
    )
    seen: list[tuple[int | None, int, str]] = []
    events: list = []
    engine = GlobalSearch(
        make_plan(2), model, on_event=events.append, wall_clock=lambda: WHEN,
        on_long_response=lambda index, attempt, text: seen.append((index, attempt, text)),
    )
    result = await engine.run()
    assert result.status == "completed" and result.batches[0].answer == "long é"
    first = result.batches[0].attempts[0]
    assert first.raw_response == long_reply.encode()[:65536].decode()
    assert (len(first.raw_response.encode()), first.raw_response_bytes) == (65536, 200_000)
    failed, retried = result.batches[1].attempts
    assert (failed.raw_response, failed.raw_response_bytes) == ("e" * 65536, 70_000)
    assert failed.error == ("HTTP 500: " + long_error)[:65536]
    assert retried.raw_response_bytes == len(reply("ok", 10))
    (reduce_attempt,) = result.reduce.attempts
    assert reduce_attempt.raw_response_bytes == 70_000 + 14
    assert sorted(seen, key=lambda s: (s[0] is None, s[0] or 0)) == [
        (0, 1, long_reply),
        (1, 1, long_error),
        (None, 1, '{"answer": "' + "r" * 70_000 + '"}'),
    ]
    assert max(len(json.dumps(e.model_dump())) for e in events) < 66_000


async def test_a_failing_long_response_hook_costs_nothing() -> None:
    def hook(index, attempt, text) -> None:
        raise RuntimeError("hook broke")

    long_reply = reply("kept", 50)[:-1] + ', "pad": "' + "x" * 70_000 + '"}'
    engine = GlobalSearch(make_plan(1), ScriptedModel({0: [long_reply]}), wall_clock=lambda: WHEN, on_long_response=hook)
    result = await engine.run()
    assert (result.status, result.batches[0].answer) == ("completed", "kept")


async def test_a_reduce_answer_copying_the_prompt_placeholder_is_invalid() -> None:
    model = ScriptedModel(
        {0: ['{"answer": " String ", "usefulness": 80}', reply("real", 80)]},
        reduce_script=['{"answer": "final answer text"}', '{"answer": "Final Answer Text "}'],
    )
    engine, _ = run_search(make_plan(1), model)
    result = await engine.run()
    assert [(a.error_kind, a.error) for a in result.batches[0].attempts] == [
        ("invalid_fields", "Map reply's `answer` is the prompt's placeholder 'String', not an answer"),
        (None, None),
    ]
    assert result.status == "failed"
    assert result.error == "Reduce failed twice: Reduce reply's `answer` is the prompt's placeholder 'Final Answer Text', not an answer"
    assert [a.error_kind for a in result.reduce.attempts] == ["invalid_fields", "invalid_fields"]


async def test_the_every_batch_failed_summary_ranks_groups_and_stops_after_five() -> None:
    def failing(i: int):
        if i < 1100:
            return ModelError("transport", f"ConnectError: [Errno 111] Connection refused (POST http://h{i}/v1/chat/completions)")
        if i < 1150:
            return ModelError("http", f"HTTP 502: gateway {i}", status=502)
        if i < 1180:
            return reply("x", f"{i}")  # invalid fields, each with another value
        kinds = ["no JSON", ModelError("timeout", "no reply"), RuntimeError("bug"),
                 ModelError("response_too_large", "over 8 MB"), ModelError("http", "unexpected response body", status=200)]
        return kinds[(i - 1180) % 5]

    plan = make_plan(1205, concurrency=8)
    model = ScriptedModel({i: [failing(i)] for i in range(1205)})
    result = await run_search(plan, model)[0].run()
    assert result.error == (
        "1,205 of 1,205 Map batches failed: ConnectError (connection refused) ×1,100, HTTP 502 ×50, "
        "invalid fields (`usefulness` must be a number) ×30, invalid JSON ×5, timeout ×5, …; see --json"
    )
    assert result.batches[1182].attempts[-1].error == "RuntimeError: bug"
