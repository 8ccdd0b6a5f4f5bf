"""Snapshots of the Explore screen, the entity view and the overview at 80x24 and 120x40.
Update with `pytest tests/tui/test_explore_snapshots.py --snapshot-update` and look at the
SVGs before committing. The search index and hierarchy are read in workers: each snapshot
waits for them."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from graphrag_tui.tui.messages import OpenRecord
from graphrag_tui.tui.screens.overview import OverviewScreen
from graphrag_tui.tui.screens.record import RecordScreen
from tests.explore_stores import guards

from .conftest import make_app, wait_until
from .test_explore import open_explore, search

SIZES = [(80, 24), (120, 40)]
NEVER = 3600.0


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return guards(tmp_path / "carol.db")


def app_for(store: Path, tmp_path: Path):
    return make_app(store, cache_dir=tmp_path / "cache", repaint_interval=NEVER)


async def no_blink(pilot: Pilot) -> None:
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_explore_tree(snap_compare, store: Path, tmp_path: Path, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot) -> None:
        screen = await open_explore(pilot)
        screen.tree.focus()
        await pilot.press("space")  # expand the first root
        await no_blink(pilot)

    assert snap_compare(app_for(store, tmp_path), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_explore_search(snap_compare, store: Path, tmp_path: Path, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot) -> None:
        screen = await open_explore(pilot)
        await search(pilot, screen, "Quill")
        await no_blink(pilot)

    assert snap_compare(app_for(store, tmp_path), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_entity_view(snap_compare, store: Path, tmp_path: Path, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot) -> None:
        await open_explore(pilot)
        pilot.app.post_message(OpenRecord("entity", "carol/89"))
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, RecordScreen) and pilot.app.screen.loaded)
        await pilot.pause()

    assert snap_compare(app_for(store, tmp_path), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_overview(snap_compare, store: Path, tmp_path: Path, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot) -> None:
        await wait_until(pilot, lambda: bool(pilot.app.screen.query("#run")), what="the main screen")
        await pilot.pause()
        pilot.app.action_overview()
        await pilot.pause()
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, OverviewScreen) and pilot.app.screen.loaded)
        await pilot.pause()

    assert snap_compare(app_for(store, tmp_path), terminal_size=size, run_before=run_before)
