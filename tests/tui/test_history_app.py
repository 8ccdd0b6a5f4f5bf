"""The app records its runs in the run history (issue 11): while a CLI writes the same file,
and when the app quits in the middle of a run."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path

import pytest

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.history import RunHistory
from tests.chat_server import Received, Reply, ScriptedChatServer, community_of, map_reply, reduce_reply
from tests.cli_runner import EXECUTABLE, clean_env
from tests.stores import PAD, build_store

from .conftest import QUESTION, ask, make_app, wait_finished, wait_until

SIZE = (140, 42)
COMMUNITIES = [f"ns/{i}" for i in range(1, 9)]
OPTIONS = SearchOptions(map_budget=330, map_reserve=0, concurrency=1)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    rows = [{"id": c, "summary_content": f"Community {c} keeps the harbour ledger. {PAD}"} for c in COMMUNITIES]
    return build_store(tmp_path / "harbour.db", rows)


def slow(request: Received) -> Reply:
    reply = reduce_reply("The port authority funds it.") if request.stage == "reduce" else \
        map_reply(f"{community_of(request)} says the port authority pays.", 50)
    reply.delay = 0.1
    return reply


async def test_the_app_and_a_cli_write_one_history_at_once(store: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    with ScriptedChatServer(slow) as server:
        app = make_app(store, server.base_url, options=OPTIONS, history=history)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            cli = await asyncio.to_thread(
                subprocess.Popen,
                [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
                 "--map-budget", "330", "--map-reserve", "0", "--concurrency", "1", "--no-config", "--json",
                 "--history", str(history)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
            )
            await wait_finished(pilot)
            out, err = await asyncio.to_thread(cli.communicate, timeout=60)
            assert cli.returncode == 0, err
            app_run = app.run_session.run_id  # type: ignore[union-attr]
            assert app.run_state.result is not None and app.run_state.result.status == "completed"
    assert app_run is not None and "warning" not in err
    runs = {r.run_id: r for r in RunHistory(history).list_runs()}
    assert set(runs) == {app_run, json.loads(out)["run_id"]}
    assert {(r.status, r.batch_count, r.failed_batch_count, r.model) for r in runs.values()} == {("completed", 8, 0, "m1")}
    stored = RunHistory(history).load(app_run)
    assert stored.result == app.run_state.result  # the app's run, as it ended, is in the history



async def test_a_locked_history_does_not_freeze_the_screen(store: Path, tmp_path: Path) -> None:
    """Another process holding the history: the run's first write waited out the busy
    timeout (5 s) on the app's loop, which drew nothing and took no key meanwhile (found by
    a probe). The run goes on, unrecorded, with the warning."""
    import sqlite3
    import time

    history = tmp_path / "history.db"
    with ScriptedChatServer(slow) as server:
        app = make_app(store, server.base_url, options=OPTIONS, history=history)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            lock = sqlite3.connect(history, timeout=0, isolation_level=None)
            lock.execute("BEGIN EXCLUSIVE")
            ticks: list[float] = []
            app.set_interval(0.05, lambda: ticks.append(time.monotonic()))
            try:
                await pilot.pause(0.2)
                await ask(pilot)
                await pilot.pause(1.5)
            finally:
                lock.rollback()
                lock.close()
            assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 1.0
            await wait_finished(pilot)
            assert app.run_state.result is not None and app.run_state.result.status == "completed"

async def test_a_run_the_app_quits_in_the_middle_of_is_recorded_interrupted(store: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    release = threading.Event()

    def held_after_three(request: Received) -> Reply:
        community = community_of(request)
        if community in COMMUNITIES[3:]:
            return Reply(map_reply("late", 5).body, gate=release)
        return map_reply(f"{community} says the port authority pays.", 50)

    with ScriptedChatServer(held_after_three) as server:
        try:
            app = make_app(store, server.base_url, options=OPTIONS, history=history)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: len(server.chat_requests()) == 4, what="the fourth batch in flight")
                run_id = app.run_session.run_id  # type: ignore[union-attr]
                app.exit()  # as the process ending does: the run's worker is cancelled
        finally:
            release.set()
    (summary,) = RunHistory(history).list_runs()
    # Ended by the app's cancel event or by its worker's cancellation, whichever came first:
    # either way resumable, with what finished.
    assert summary.run_id == run_id and summary.status in ("cancelled", "interrupted")
    stored = RunHistory(history).load(run_id)  # type: ignore[arg-type]
    assert [b.status for b in stored.batches] == ["succeeded"] * 3 + ["pending"] * 5
    assert stored.batch_models == ["m1"] * 3 + [None] * 5
