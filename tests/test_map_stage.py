"""SPEC §3.5: the Map worker pool (engine/map_stage.py)."""

from __future__ import annotations

import asyncio

from graphrag_tui.engine.events import BatchStarted, BatchSucceeded, Planned
from graphrag_tui.engine.ports import ChatRequest
from tests.scripted_model import ScriptedModel, make_plan, reply, run_search, until


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
        await until(lambda i=i: any(isinstance(e, BatchSucceeded) and e.batch_index == i for e in events))
    result = await task
    assert [e.batch_index for e in events if isinstance(e, BatchSucceeded)] == [3, 1, 2, 0]
    assert [(b.index, b.answer, b.usefulness) for b in result.batches] == [
        (0, "answer-0", 10),
        (1, "answer-1", 20),
        (2, "answer-2", 30),
        (3, "answer-3", 40),
    ]
