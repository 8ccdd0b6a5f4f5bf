"""Issue 12 in the app: the Workers panel shows the limit on calls in flight against the
maximum and the time spent waiting for 429s, as redraws only; the caps of the settings
apply to the endpoint's runs and to no other model's."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from graphrag_tui.engine import RateLimits
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.tui.run_state import RunState
from graphrag_tui.tui.widgets.batch_status import fitting
from tests.chat_server import Reply, Scripted, ScriptedChatServer, map_reply, too_many
from tests.stores import three_leaves

from .conftest import ask, make_app, screen_text, text_of, wait_finished, wait_until

SIZE = (140, 42)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def regions(app) -> dict[str, tuple[int, int, int, int]]:
    return {f"#{w.id}": tuple(w.region) for w in app.screen.query("#workers-panel, #workers-panel *") if w.id}


async def test_the_workers_panel_shows_the_limit_and_the_waits_while_the_run_goes(store: Path) -> None:
    gate = threading.Event()
    held = Reply(map_reply("Fleets.", 40).body, gate=gate)
    script = Scripted({"ns/1": [too_many(0.4, "retry-after-ms"), map_reply("Bridge.", 90)], "ns/2": held,
                       "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        try:
            app = make_app(store, server.base_url, options=SearchOptions(map_budget=330, map_reserve=0, concurrency=2))
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: app.run_state.rate_limited == 1, what="the 429")
                app.repaint()
                await pilot.pause()
                before = regions(app)
                table = text_of(pilot, "#workers-table").splitlines()
                assert table[0] == "Limit 1/2 · 429 wait 0.4 s"  # the table is 28 cells wide here too
                assert table[1].split() == ["Worker", "Batch", "Attempt", "Running"]
                assert text_of(pilot, "#workers-summary").startswith("In flight 1 / 2")  # the other waits
                assert [line.split() for line in table[2:]] == [["1", "0", "1", "429"], ["2", "1", "1", "0.0", "s"]]
                gate.set()
                await wait_finished(pilot)
                assert app.run_state.result.status == "completed"
                assert [a.error_kind for a in app.run_state.result.batches[0].attempts] == ["rate_limited", None]
                # ns/2's answer at a limit of one added one back; the waits stay as they were
                assert text_of(pilot, "#workers-table").splitlines()[0] == "Limit 2/2 · 429 wait 0.4 s"
                assert regions(app) == before  # redraws only: no widget moved or changed size
        finally:
            gate.set()


def drawn(app, selector: str) -> list[str]:
    """The lines a widget draws on the screen, as wrapped to its width."""
    region = app.screen.query_one(selector).content_region
    lines = screen_text(app).splitlines()
    return [lines[y][region.x:region.right].rstrip() for y in range(region.y, region.bottom)]


async def test_the_limit_line_fits_the_workers_panel_at_120x40(store: Path) -> None:
    """The table is 28 cells wide at 120x40 (and at 80x24): `Limit 2 of 2 · 429 waits 1.0 s`
    wrapped its `s` onto the next line, over a worker's row (a QA probe)."""
    gate = threading.Event()
    script = Scripted({"ns/1": [too_many(0.4, "retry-after-ms"), map_reply("Bridge.", 90)],
                       "ns/2": Reply(map_reply("Fleets.", 40).body, gate=gate), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        try:
            app = make_app(store, server.base_url, options=SearchOptions(map_budget=330, map_reserve=0, concurrency=2))
            async with app.run_test(size=(120, 40)) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: app.run_state.rate_limited == 1, what="the 429")
                app.repaint()
                await pilot.pause()
                assert app.screen.query_one("#workers-table").content_region.width == 28
                # the waiting worker's `429 wait` needs 29 cells: `429 wa…` was shown
                assert drawn(app, "#workers-table")[:3] == [
                    "Limit 1/2 · 429 wait 0.4 s", "Worker Batch Attempt Running", "1      0     1       429"]
                assert drawn(app, "#workers-summary") == ["In flight 1 / 2  (workers: 2)"]
        finally:
            gate.set()


def test_the_limit_line_shortens_to_fit_without_losing_a_figure() -> None:
    from graphrag_tui.tui.widgets.workers_panel import rate_limit_lines

    state = RunState(rate_limited=3, concurrency_limit=16, rate_wait_total=42.6)
    lines = rate_limit_lines(state, 32)
    assert [fitting(lines, width).plain for width in (33, 32, 28)] == [
        "Limit 16 of 32 · 429 waits 42.6 s", "Limit 16/32 · 429 wait 42.6 s", "Limit 16/32 · 429 wait 43 s",
    ]
    state.rate_wait_total = 75.0  # past a minute, as the clock line writes it
    assert fitting(rate_limit_lines(state, 32), 28).plain == "Limit 16/32 · 429 wait 1:15"
    # a limit in the hundreds and a wait of hours: `Limit 128/256 · 429 wait 4:0…` was cut inside the number
    hours = RunState(rate_limited=3, concurrency_limit=128, rate_wait_total=4 * 3600 + 2)
    assert fitting(rate_limit_lines(hours, 256), 28).plain == "128/256 · 429 wait 4:00:02"
    assert rate_limit_lines(RunState(), 32) == []  # no 429 yet


def test_a_waiting_worker_says_429_wait_where_it_fits() -> None:
    from graphrag_tui.tui.run_state import WorkerSlot
    from graphrag_tui.tui.widgets.workers_panel import workers_rows

    state = RunState(worker_count=2, workers={1: WorkerSlot(12, 2, 0.0, rate_limited=True)})
    assert [workers_rows(state, 1.0, width).plain.splitlines()[1] for width in (29, 28)] == [
        "1      12    2       429 wait", "1      12    2       429"]


async def test_the_workers_summary_keeps_to_its_line_at_a_concurrency_of_256(store: Path) -> None:
    """`In flight 0 / 256  (workers: 256)` wrapped in its one line, and the count never showed."""
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, options=SearchOptions(map_budget=330, map_reserve=0, concurrency=256))
        async with app.run_test(size=(120, 40)) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert drawn(app, "#workers-summary") == ["In flight 0 / 256"]


async def test_a_run_without_429s_shows_no_limit_line(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert text_of(pilot, "#workers-table").splitlines()[0].split() == ["Worker", "Batch", "Attempt", "Running"]


async def test_the_requests_per_minute_cap_of_the_settings_spaces_the_apps_requests(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        settings = ModelSettings(base_url=server.base_url, model="m1", timeout=20, requests_per_minute=120)
        app = make_app(store, model_settings=settings)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
        times = [r.received_at for r in server.chat_requests()]
    assert len(times) == 4
    # Sent 0.505 s apart; the first send can leave late while the app draws the run's first
    # frame on the same event loop (about 0.1 s measured), which shortens the first gap.
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) > 0.3
    assert times[-1] - times[0] > 1.3


def test_the_caps_are_the_endpoints_only() -> None:
    capped = {"requests_per_minute": 60, "tokens_per_minute": 1000, "max_rate_wait": 12.0}
    assert ModelSettings(base_url="http://h/v1", **capped).rate_limits == RateLimits(
        requests_per_minute=60, tokens_per_minute=1000, max_rate_wait=12.0)
    assert ModelSettings(**capped).rate_limits == RateLimits(max_rate_wait=12.0)  # extractive
    assert ModelSettings(local_llm=True, **capped).rate_limits == RateLimits(max_rate_wait=12.0)
