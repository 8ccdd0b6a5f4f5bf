"""Snapshots of the real app (pytest-textual-snapshot). Update with
`pytest tests/tui/test_snapshots.py --snapshot-update` and look at the SVGs before committing.

Everything that could vary is fixed: the header's store and model labels, no shuffling, a
clock that always reads 0 and a fixed wall clock (attempt times and durations), the theme,
no animations, no cursor blink, and no timed repaints (the panels repaint when the run
changes phase, or when a test calls `app.repaint()`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, TextArea

from graphrag_tui.tui.app import GraphRAGApp
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, wait_community, wait_finished, wait_until

SIZE = (140, 42)
#: The sizes the main screen is pinned at, from the smallest it must serve (issue 13).
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)], ids=["80x24", "120x40", "200x50"])
SAMPLE_STORE = Path(__file__).resolve().parents[2] / "sample_db" / "sample.db"
NEVER = 3600.0  # no timed repaints: what a snapshot shows must not depend on timing


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def snapshot_app(store: Path, base_url: str = "http://127.0.0.1:9/v1") -> GraphRAGApp:
    return make_app(store, base_url, repaint_interval=NEVER)


async def ready(pilot: Pilot) -> None:
    """`run_before` can be called before the main screen has composed its widgets."""
    await wait_until(pilot, lambda: bool(pilot.app.screen.query("#citations")), what="the main screen")
    pilot.app.repaint()  # what the first timed repaint would show
    await pilot.pause()


async def settle(pilot: Pilot) -> None:
    """No blinking cursor anywhere on the screen, then let everything settle."""
    for widget in pilot.app.screen.query("Input, TextArea"):
        if isinstance(widget, (Input, TextArea)):
            widget.cursor_blink = False
    await pilot.pause()


def partial_script() -> Scripted:
    return Scripted({
        "ns/1": map_reply("The port authority funds the bridge.", 90),
        "ns/2": [Reply("overloaded", status=500), map_reply("Fleets land at dawn.", 20)],
        "ns/3": Reply(completion("sorry, I cannot do JSON")),
    })


async def finished_run(pilot: Pilot) -> None:
    await ready(pilot)
    await ask(pilot)
    await wait_finished(pilot)


def test_idle_main_screen_on_the_sample_store(snap_compare) -> None:
    app = make_app(SAMPLE_STORE, repaint_interval=NEVER, display_path="sample.db")

    async def run_before(pilot: Pilot) -> None:
        await ready(pilot)
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@SIZES
def test_run_paused_mid_map(snap_compare, store: Path, size: tuple[int, int]) -> None:
    gate = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=gate)
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 90), "ns/2": held, "ns/3": held})
    with ScriptedChatServer(script) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await ready(pilot)
            await ask(pilot)
            await wait_until(pilot, lambda: len(server.chat_requests()) == 3
                             and app.run_state.cells[0].state == "succeeded", what="two held requests")
            app.repaint()
            await settle(pilot)

        try:
            assert snap_compare(app, terminal_size=size, run_before=run_before)
        finally:
            gate.set()


@SIZES
def test_finished_partial_run(snap_compare, store: Path, size: tuple[int, int]) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await finished_run(pilot)
            await settle(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)
        assert app.run_state.result is not None and app.run_state.result.status == "partial"


def test_community_view(snap_compare, store: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await finished_run(pilot)
            app.screen.query_one("#citations", OptionList).focus()
            await pilot.press("enter")  # the first cited community: ns/1
            await pilot.pause()
            await wait_community(pilot)
            await pilot.click("#--content-tab-tab-claims")
            await settle(pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_batch_view_of_a_failed_batch(snap_compare, store: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await finished_run(pilot)
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("right", "right", "enter")  # batch 2: ns/3, both attempts invalid
            await pilot.pause()
            await settle(pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_budget_too_small_error(snap_compare, store: Path) -> None:
    with ScriptedChatServer(Scripted({})) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await ready(pilot)
            app.screen.query_one("#opt-map_budget", Input).value = "100"
            await ask(pilot)
            await wait_until(pilot, lambda: app.setup_form.query_one("#form-error").display, what="the form error")
            await settle(pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
        assert server.requests == []
