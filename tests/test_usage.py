"""Usage, cost and the cost limit in the engine (engine/usage.py, retry.py, search.py), with
the scripted model behind the port returning replies with usage."""

from __future__ import annotations

import asyncio

from graphrag_tui.engine import ChatReply, Cost, Prices, Usage, UsageMeter, UsageReported, cost_of
from graphrag_tui.engine.ports import ChatRequest
from tests.scripted_model import ScriptedModel, make_plan, reply, run_search

PRICES = Prices(input=2.0, output=8.0, cached_input=0.5)


def with_usage(text: str, prompt: int, completion: int, cached: int = 0) -> ChatReply:
    return ChatReply(text=text, usage=Usage(prompt_tokens=prompt, completion_tokens=completion,
                                            cached_tokens=cached, total_tokens=prompt + completion))


def test_cost_prices_cached_tokens_apart_and_never_twice() -> None:
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=400_000, total_tokens=1_500_000)
    assert cost_of(usage, PRICES) == Cost(input=1.2, output=4.0, cached=0.2, total=5.4)
    # without a cached price, cached tokens cost the input price
    assert cost_of(usage, Prices(input=2.0, output=8.0)).total == 6.0
    # a server that says more tokens were cached than sent: at most the prompt is cached
    odd = Usage(prompt_tokens=10, completion_tokens=0, cached_tokens=50, total_tokens=10)
    assert cost_of(odd, PRICES) == Cost(input=0.0, output=0.0, cached=0.000005, total=0.000005)


def test_the_meter_calls_its_limit_once() -> None:
    reached: list[int] = []
    meter = UsageMeter(PRICES, 1.0, on_limit=lambda: reached.append(1))
    meter.add(Usage(prompt_tokens=400_000, total_tokens=400_000), 100)
    assert (meter.limit_reached, reached) == (False, [])
    meter.add(Usage(prompt_tokens=100_000, completion_tokens=1, total_tokens=100_001), 50)
    assert (meter.limit_reached, reached) == (True, [1])
    meter.add(Usage(prompt_tokens=1, total_tokens=1), None)
    assert reached == [1]
    assert meter.total == Usage(prompt_tokens=500_001, completion_tokens=1, total_tokens=500_002)
    assert meter.estimated_prompt_tokens == 150


async def test_usage_on_attempts_totals_and_events_with_a_retry() -> None:
    model = ScriptedModel(
        {0: [with_usage("not json", 100, 5), with_usage(reply("a", 50), 100, 7)], 1: [with_usage(reply("b", 40), 200, 3)]},
        [with_usage('{"answer": "final"}', 300, 11, cached=100)],
    )
    engine, events = run_search(make_plan(2, concurrency=1), model, prices=PRICES)
    result = await engine.run()
    assert result.status == "completed"
    assert [[a.usage.prompt_tokens for a in b.attempts if a.usage] for b in result.batches] == [[100, 100], [200]]
    assert result.reduce.attempts[0].usage == Usage(prompt_tokens=300, completion_tokens=11, cached_tokens=100,
                                                    total_tokens=311)
    assert result.usage_total == Usage(prompt_tokens=700, completion_tokens=26, cached_tokens=100, total_tokens=726)
    estimates = [result.batches[0].prompt_tokens] * 2 + [result.batches[1].prompt_tokens, result.reduce.prompt_tokens]
    assert result.estimated_prompt_tokens == sum(e or 0 for e in estimates)
    assert result.cost == cost_of(result.usage_total, PRICES)
    reported = [e for e in events if isinstance(e, UsageReported)]
    assert [(e.batch_index, e.attempt, e.usage_total.prompt_tokens) for e in reported] == [
        (0, 1, 100), (0, 2, 200), (1, 1, 400), (None, 1, 700)
    ]


async def test_the_cost_limit_cancels_in_flight_calls_and_sends_no_more() -> None:
    release = asyncio.Event()

    async def held(request: ChatRequest) -> str:
        await release.wait()
        return reply("late", 50)

    async def expensive(request: ChatRequest) -> ChatReply:
        await asyncio.sleep(0.05)  # batch 1 is sent meanwhile
        return with_usage(reply("a", 50), 1_000_000, 0)

    model = ScriptedModel({0: [expensive], 1: [held], 2: [held], 3: [held]})
    engine, _ = run_search(make_plan(4, concurrency=2), model, prices=PRICES, max_cost=1.0)
    result = await asyncio.wait_for(engine.run(), 5)
    assert result.status == "cancelled"
    assert result.detail == "cost limit reached during Map: spent $2.0000 of --max-cost $1"
    assert [b.status for b in result.batches] == ["succeeded", "cancelled", "cancelled", "cancelled"]
    assert len(model.map_requests()) == 2  # batch 1 was in flight; batches 2 and 3 never went out
    assert [a.error for a in result.batches[1].attempts] == ["cancelled"]
    assert result.batches[2].attempts == [] and result.batches[3].attempts == []
    assert model.reduce_requests() == []


async def test_a_reduce_that_crosses_the_limit_keeps_its_answer() -> None:
    model = ScriptedModel({}, [with_usage('{"answer": "paid for"}', 1_000_000, 0)])
    engine, _ = run_search(make_plan(2), model, prices=PRICES, max_cost=1.0)
    result = await engine.run()
    assert (result.status, result.answer) == ("completed", "paid for")
    assert result.cost is not None and result.cost.total == 2.0
