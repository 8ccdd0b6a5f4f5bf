"""A scripted model for the engine's tests (an injected object behind the engine's model
port, as the app and the CLI inject real ones), and small plans to run it on."""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from datetime import UTC, datetime

from graphrag_tui.engine import GlobalSearch, MapBatch, PartRef, SearchOptions, SearchPlan
from graphrag_tui.engine.ports import ChatRequest

QUERY = "What is the trend?"
WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


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
