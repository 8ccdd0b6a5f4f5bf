"""SPEC §3.6-§3.8 and §5: a whole run (engine/search.py): Reduce, outcomes, events, the
result, and runs no reply or exception can abort. The pool is tested in test_map_stage.py,
attempts and retries in test_retry.py, planning in test_plan.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from graphrag_tui.engine import DEFAULT_TEMPLATES
from graphrag_tui.engine.corpus import CommunityContext
from graphrag_tui.engine.events import (
    AttemptFailed,
    BatchFailed,
    BatchStarted,
    BatchSucceeded,
    Finished,
    ReduceCandidateDecided,
    ReduceStarted,
)
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.plan import plan_search
from graphrag_tui.engine.ports import ChatRequest, ModelError
from graphrag_tui.engine.prompts import Prompts, map_skeleton, prompt_text, reduce_messages, reduce_skeleton
from graphrag_tui.engine.search import GlobalSearch
from graphrag_tui.engine.tokens import estimate_tokens
from tests.scripted_model import QUERY, WHEN, ScriptedModel, batch_index, make_plan, reply, run_search, until

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


async def test_with_general_knowledge_every_usefulness_zero_still_asks_reduce_and_a_failed_batch_makes_it_partial(
) -> None:
    """GraphRAG's allow_general_knowledge: Reduce gets the prompt with no intermediate answer."""
    model = ScriptedModel({0: [reply("", 0)], 1: [reply("nothing relevant", 0)], 2: ["bad", "bad"]})
    plan = make_plan(3).model_copy(update={"prompts": Prompts(general_knowledge=True)})
    engine, _ = run_search(plan, model)
    result = await engine.run()
    assert (result.status, result.answer, result.detail) == (
        "partial", "final answer",
        "no Map answer was useful: the answer is the model's own knowledge (--general-knowledge)")
    (request,) = model.reduce_requests()
    assert request.content == "" and request.messages == reduce_messages(QUERY, "", plan.prompts)
    assert result.selected_map_answers == [] and result.failed_batch_count == 1


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
    for batch, batch_result in zip(plan.batches, result.batches, strict=True):
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
        "usage_total",
        "estimated_prompt_tokens",
        "cost",
        "prompts",
        "selection",  # issue 15: None for --select level
    }
    # the prompts the run was sent: the built-in templates, no answer form given
    assert data["prompts"] == {
        "map": DEFAULT_TEMPLATES["map"], "reduce": DEFAULT_TEMPLATES["reduce"], "rate": DEFAULT_TEMPLATES["rate"],
        "response_type": None, "general_knowledge": False, "answer_language": None, "directory": None,
    }
    assert data["selection"] is None
    # a model that reports no usage: none is made up
    assert (data["usage_total"], data["estimated_prompt_tokens"], data["cost"]) == (None, None, None)
    heading = (data["query"], data["namespace"], data["level"], data["seed"], data["status"])
    assert heading == (QUERY, "ns", "leaf", 123, "partial")
    assert (data["error"], data["summary_count"], data["batch_count"], data["failed_batch_count"]) == (None, 3, 3, 1)
    for batch in data["batches"]:
        assert set(batch) == {"index", "community_ids", "parts", "prompt_tokens", "attempts", "usefulness", "answer", "status"}
        for part in batch["parts"]:
            assert set(part) == {"community_id", "part"}
        for attempt in batch["attempts"]:
            assert set(attempt) == {
                "attempt", "started_at", "duration_s", "error_kind", "error", "raw_response", "raw_response_bytes",
                "usage",
            }
            assert attempt["usage"] is None
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
        {
            0: ['{"answer": "bad \\ud800 text", "usefulness": 60}'],
            1: [ModelError("http", "HTTP 500: \ud800", raw_response="x\udfff")],
        },
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
        {
            0: [long_reply],
            1: [ModelError("http", "HTTP 500: " + long_error, status=500, raw_response=long_error), reply("ok", 10)],
        },
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
    assert result.error == (
        "Reduce failed twice: Reduce reply's `answer` is the prompt's placeholder 'Final Answer Text', not an answer"
    )
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


# -- prior batches (a re-run, a resume) ------------------------------------------------------


async def test_prior_batches_are_kept_and_only_the_others_are_sent() -> None:
    first, _ = run_search(make_plan(4), ScriptedModel({2: [reply("old two", 70)]}))
    earlier = await first.run()
    prior = {0: earlier.batches[0], 2: earlier.batches[2]}
    model = ScriptedModel({1: [reply("new one", 90)], 3: [reply("new three", 10)]})
    engine, events = run_search(make_plan(4, concurrency=4), model, prior=prior)
    result = await engine.run()
    assert sorted(batch_index(r) for r in model.map_requests()) == [1, 3]
    assert result.batches[0] == earlier.batches[0] and result.batches[2] == earlier.batches[2]
    assert result.batches[0] is not earlier.batches[0]  # a copy: the given results are not changed
    assert [b.answer for b in result.batches] == ["answer-0", "new one", "old two", "new three"]
    assert [c.batch_index for c in result.reduce.candidates] == [1, 2, 0, 3]  # ranked all together
    assert events[0].workers == 2  # no more workers than batches to send
    assert result.status == "completed" and result.batch_count == 4


async def test_with_every_batch_prior_only_reduce_is_asked() -> None:
    first, _ = run_search(make_plan(2), ScriptedModel())
    earlier = await first.run()
    model = ScriptedModel()
    engine, _ = run_search(make_plan(2), model, prior=dict(enumerate(earlier.batches)))
    result = await engine.run()
    assert (model.map_requests(), len(model.reduce_requests()), result.status) == ([], 1, "completed")
