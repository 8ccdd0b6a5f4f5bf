"""A run through the session: request -> plan -> run with events -> result, on a small real
store, answered by the real extractive model and by a real scripted HTTP server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.errors import InputError
from graphrag_tui.models.extractive import ExtractiveModel
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.session import ModelSession, RunSession, SearchRequest
from graphrag_tui.store import CommunityStore
from tests.chat_server import Scripted, ScriptedChatServer, map_reply
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
#: One community per batch.
OPTIONS = SearchOptions(map_budget=330, map_reserve=0, concurrency=1)


def request(**changes) -> SearchRequest:  # type: ignore[no-untyped-def]
    fields = {"query": QUESTION, "namespace": None, "level": "leaf", "options": OPTIONS, "seed": None, "shuffle": False}
    return SearchRequest(**{**fields, **changes})


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    with CommunityStore.open(three_leaves(tmp_path / "harbour.db")) as opened:
        yield opened


async def test_a_run_goes_from_request_to_plan_to_events_to_result(store: CommunityStore) -> None:
    events: list[str] = []
    run = RunSession(store, on_event=lambda event: events.append(type(event).__name__))
    plan = run.prepare(request())
    assert (plan.namespace, plan.level, plan.summary_count, len(plan.batches)) == ("ns", "leaf", 3, 3)
    assert [b.community_ids for b in plan.batches] == [("ns/1",), ("ns/2",), ("ns/3",)]
    with ScriptedChatServer(Scripted({f"ns/{i}": map_reply(f"Answer {i}.", 10 * i) for i in (1, 2, 3)})) as server:
        models = ModelSession({})
        model = await models.open(ModelSettings(base_url=server.base_url, model="m1", timeout=10))
        result = await run.run(model, timeout=10)
        await models.close()
    assert run.result is result and result.status == "completed"
    assert result.answer == "The port authority funds it."
    assert [b.answer for b in result.batches] == ["Answer 1.", "Answer 2.", "Answer 3."]
    assert [r.stage for r in server.chat_requests()] == ["map", "map", "map", "reduce"]
    assert events[0] == "Planned" and events[-1] == "Finished"
    assert events.count("BatchSucceeded") == 3 and events.count("ReduceStarted") == 1
    assert run.batch(1) == result.batches[1]


async def test_the_extractive_model_answers_a_run_offline(store: CommunityStore) -> None:
    run = RunSession(store)
    run.prepare(request(seed=7, shuffle=True))
    result = await run.run(ExtractiveModel(), timeout=10)
    assert result.status == "completed" and result.seed == 7 and result.batch_count == 3


def test_a_bad_request_is_an_input_error_before_any_model_call(store: CommunityStore) -> None:
    run = RunSession(store)
    with pytest.raises(InputError) as error:
        run.prepare(request(namespace="nope"))
    assert str(error.value) == "unknown namespace 'nope'; the store has: ns"
    with pytest.raises(InputError) as error:
        run.prepare(request(level=4))
    assert str(error.value) == "namespace 'ns' has no communities at level 4; levels present: 0"
    assert run.plan is None


async def test_a_cancelled_run_ends_cancelled(store: CommunityStore) -> None:
    run = RunSession(store)
    run.prepare(request())
    run.cancel()
    result = await run.run(ExtractiveModel(), timeout=10)
    assert result.status == "cancelled" and run.cancel_event.is_set()


async def test_a_run_that_breaks_ends_failed_and_keeps_its_finished_batches(store: CommunityStore) -> None:
    run = RunSession(store)
    run.prepare(request())
    gate = asyncio.Event()

    class HalfModel(ExtractiveModel):
        calls = 0

        async def complete(self, chat_request):  # type: ignore[no-untyped-def]
            HalfModel.calls += 1
            if HalfModel.calls > 1:
                gate.set()
                await asyncio.Event().wait()  # hangs until the run is torn down
            return await super().complete(chat_request)

    task = asyncio.create_task(run.run(HalfModel(), timeout=10))
    await asyncio.wait_for(gate.wait(), 5)
    result = run.failed(RuntimeError("the face broke"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert result.status == "failed" and result.error == "internal error: RuntimeError: the face broke; the run stopped there"
    assert result.batches[0].status == "succeeded"
    assert run.result is result


def test_a_run_that_broke_before_its_plan_ends_failed_with_the_request(store: CommunityStore) -> None:
    run = RunSession(store)
    result = run.failed(OSError(24, "Too many open files"), request(namespace="ns"))
    assert (result.status, result.namespace, result.batch_count) == ("failed", "ns", 0)
    assert result.error == "internal error: OSError: [Errno 24] Too many open files; the run stopped there"


def test_a_run_cancelled_while_its_first_history_write_waits_off_the_loop_is_interrupted(tmp_path: Path) -> None:
    """The app quitting while the history was held: the write went on off the loop after the
    run was cancelled, and the run stayed `running`, its recorder open (found by a probe)."""
    import sqlite3
    import threading

    from graphrag_tui.history.database import connect

    history = tmp_path / "history.db"
    connect(history).close()
    with CommunityStore.open(three_leaves(tmp_path / "s.db")) as store:
        run = RunSession(store, history=history, history_off_loop=True)
        run.prepare(SearchRequest("Who?", None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))
        holder = sqlite3.connect(history, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")

        async def quit_while_held() -> None:
            task = asyncio.create_task(run.run(ExtractiveModel(), timeout=10))
            await asyncio.sleep(0.3)  # the first write waits for the held history
            threading.Timer(0.3, holder.rollback).start()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(quit_while_held())
        holder.close()
    db = sqlite3.connect(history)
    assert db.execute("SELECT run_id, status, owner FROM runs").fetchall() == [(run.run_id, "interrupted", None)]
