"""Snapshots of the Runs screen and the compare view at 120×40 and 80×24. Update with
`pytest tests/tui/test_runs_snapshots.py --snapshot-update` and look at the SVGs first.

Besides what tests/tui/test_snapshots.py fixes (theme, clocks, no animation, no timed
repaints), run ids come from a counter, the history file is named relative to the test's
working directory, and the recorded store path is set to a fixed one after recording (the
real one is a temporary directory)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

import graphrag_tui.history.recorder as recorder
from graphrag_tui.tui.app import GraphRAGApp
from graphrag_tui.tui.screens.compare import CompareScreen
from graphrag_tui.tui.screens.run_view import RunViewScreen
from graphrag_tui.tui.screens.runs import RunsScreen
from tests.chat_server import ScriptedChatServer, map_reply, reduce_reply
from tests.stores import three_leaves

from .conftest import QUESTION, ask, make_app, record_question, wait_finished, wait_until
from .test_runs_screen import partial_script
from .test_snapshots import NEVER, settle

SHOWN_STORE = "/srv/graphrag/harbour.db"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    numbers = iter(range(1, 100))
    monkeypatch.setattr(recorder, "new_run_id", lambda: f"mh00run{next(numbers):05d}")
    yield three_leaves(tmp_path / "harbour.db")


def snapshot_app(store: Path, base_url: str) -> GraphRAGApp:
    return make_app(store, base_url, repaint_interval=NEVER, history=Path("history.db"))


async def two_runs(pilot: Pilot, script: object) -> None:
    """A partial run, then the same question answered in full with other usefulness."""
    app: GraphRAGApp = pilot.app  # type: ignore[assignment]
    await wait_until(pilot, lambda: bool(app.screen.query("#citations")), what="the main screen")
    for number in (1, 2):
        await ask(pilot, QUESTION if number == 1 else "Who pays for the [b]bridge[/b]?\x1b[2J")
        await wait_until(pilot, lambda: app.run_state.phase == "finished", what="the run")
        await wait_finished(pilot)
        script.maps.update({  # type: ignore[attr-defined]
            "ns/1": map_reply("The city funds the bridge.", 40),
            "ns/3": map_reply("The festival pays for itself.", 60),
        })
        script.reduce = reduce_reply("The city funds it, **says** [link](http://x.example).")  # type: ignore[attr-defined]
    db = sqlite3.connect("history.db")
    with db:
        db.execute("UPDATE runs SET store_path = ?", (SHOWN_STORE,))
    db.close()
    record_question("history.db", "Who pays for the [b]bridge[/b]?\x1b[2J", was="Who pays for the [b]bridge[/b]?[2J")


async def runs_screen(pilot: Pilot) -> RunsScreen:
    pilot.app.screen.query_one("#batch-grid").focus()
    await pilot.press("h")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, RunsScreen) and pilot.app.screen.listings > 0,
                     what="the Runs screen")
    return pilot.app.screen  # type: ignore[return-value]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_runs_screen(snap_compare, store: Path, size: tuple[int, int]) -> None:
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await two_runs(pilot, script)
            screen = await runs_screen(pilot)
            await pilot.press("down", "space", "up")  # the first run marked to compare
            await pilot.pause()
            assert screen.marked == ["mh00run00001"]
            await settle(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
@pytest.mark.parametrize("tab", ["1", "2", "3"], ids=["answers", "batches", "communities"])
def test_compare_view(snap_compare, store: Path, size: tuple[int, int], tab: str) -> None:
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await two_runs(pilot, script)
            await runs_screen(pilot)
            await pilot.press("down", "space", "up", "c")
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            await pilot.press(tab)
            await pilot.pause()
            await settle(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_recorded_run_view(snap_compare, store: Path, size: tuple[int, int]) -> None:
    """A recorded run opened read-only: the live run's clock and counts lines over its grid."""
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = snapshot_app(store, server.base_url)

        async def run_before(pilot: Pilot) -> None:
            await two_runs(pilot, script)
            await runs_screen(pilot)
            await pilot.press("down", "enter")  # the first, partial run
            await wait_until(pilot, lambda: isinstance(app.screen, RunViewScreen) and app.screen.loaded,
                             what="the recorded run")
            await settle(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)
