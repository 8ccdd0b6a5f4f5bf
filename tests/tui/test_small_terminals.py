"""Every panel usable from 80×24 up: the setup form collapses to its question line (by itself
on a narrow terminal, or with its key), the batch grid keeps at least 20 cells a row, and a
short terminal gives the tabs the height (tui/screens/main.py, app.tcss)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, TabbedContent

from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from tests.chat_server import ScriptedChatServer, map_reply
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, screen_text, wait_community, wait_finished, wait_until


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def answered() -> Scripted:
    return Scripted({"ns/1": map_reply("Bridge funds.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})


@pytest.mark.parametrize(("size", "collapsed", "grid_columns", "top_height", "tabs_height"), [
    ((80, 24), True, 21, 9, 12),
    ((120, 40), False, 22, 14, 24),
    ((200, 50), False, 52, 14, 34),
])
async def test_each_size_gives_every_panel_room(store: Path, size: tuple[int, int], collapsed: bool,
                                               grid_columns: int, top_height: int, tabs_height: int) -> None:
    with ScriptedChatServer(answered()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            screen = app.screen
            assert screen.has_class("-setup-collapsed") is collapsed
            assert ("Map budget" in screen_text(app)) is not collapsed
            assert screen.query_one("#setup").outer_size.height == (1 if collapsed else size[1] - 2)
            await ask(pilot)
            await wait_finished(pilot)
            grid = screen.query_one(BatchGrid)
            assert grid.columns == grid_columns >= 20
            assert screen.query_one("#top-row").outer_size.height == top_height
            assert screen.query_one(TabbedContent).outer_size.height == tabs_height
            assert app.run_state.result.answer in screen_text(app)


async def test_the_setup_form_collapses_and_expands_with_its_key(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert lines[1].startswith(" Question What are the main themes?")  # the form is one line
        assert "Map budget" not in screen_text(app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert not app.screen.has_class("-setup-collapsed")
        assert "Map budget      330" in screen_text(app)
        assert "Batches" not in screen_text(app)  # open on a narrow terminal, the form takes the width
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.screen.has_class("-setup-collapsed") and "Map budget" not in screen_text(app)
        await pilot.resize_terminal(140, 42)  # the user's choice stays when the terminal grows
        await pilot.pause()
        assert app.screen.has_class("-setup-collapsed")

    app = make_app(store)
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()
        assert not app.screen.has_class("-setup-collapsed")
        await pilot.resize_terminal(100, 30)  # no choice made: the width decides
        await pilot.pause()
        assert app.screen.has_class("-setup-collapsed")


async def test_running_from_the_open_form_on_a_narrow_terminal_shows_the_run(store: Path) -> None:
    with ScriptedChatServer(answered()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert app.screen.has_class("-setup-full")
            await ask(pilot)
            await wait_finished(pilot)
            assert app.screen.has_class("-setup-collapsed") and not app.screen.has_class("-setup-full")
            assert "Batches" in screen_text(app) and "The port authority funds it." in screen_text(app)


async def test_an_option_to_fix_expands_the_collapsed_form(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.query_one("#opt-concurrency", Input).value = "0"
        await ask(pilot)
        # (under load, the form is laid out and scrolled a few frames later)
        await wait_until(pilot, lambda: " Concurrency     0  " in screen_text(app), what="the option in sight")
        assert not app.screen.has_class("-setup-collapsed")
        assert app.focused is app.screen.query_one("#opt-concurrency")
        assert " must be a positive integer, got '0'" in screen_text(app)
        assert app.run_state.phase == "idle"


@pytest.mark.parametrize("key", ["h", "x"])
async def test_narrowing_the_terminal_under_another_screen_keeps_the_app(store: Path, tmp_path: Path, key: str) -> None:
    """The Runs (or Explore) screen open over a finished run that lists the communities its
    answer rests on, the terminal narrowed to 40 columns: laying out the main screen under it
    measured that list at no width, and Textual's wrap raised (ValueError: range() arg 3
    must not be zero), which ended the app."""
    with ScriptedChatServer(answered()) as server:
        app = make_app(store, server.base_url, history=tmp_path / "history.db")
        async with app.run_test(size=(120, 40)) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert app.screen.query_one("#citations").display
            app.screen.query_one(BatchGrid).focus()
            await pilot.press(key)
            await pilot.pause()
            for size in ((40, 24), (20, 5), (120, 40)):
                await pilot.resize_terminal(*size)
                await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert app.is_running and app.return_code is None and isinstance(app.screen, MainScreen)


async def test_paging_an_empty_table_keeps_the_app(store: Path) -> None:
    """PageDown on the Retries table of a run without failed attempts: an empty table moves
    its cursor to row -1, and a highlight of no row was read as one, which ended the app
    (found by a probe)."""
    with ScriptedChatServer(answered()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=(120, 40)) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("4")
            app.screen.query_one("#retries-table").focus()
            await pilot.press("pagedown", "pageup", "enter")
            await pilot.pause()
            assert app.is_running and app.return_code is None and isinstance(app.screen, MainScreen)


async def test_paging_a_community_s_hierarchy_with_no_room_keeps_the_app(tmp_path: Path) -> None:
    """In a community's hierarchy on a 20×5 terminal the list had no room to lay out its
    lines, and PageDown looked one up and raised KeyError, which ended the app (found by a
    probe)."""
    import shutil

    from graphrag_tui.models.factory import ModelSettings
    from tests.pg_stores import SAMPLE

    store = Path(shutil.copy(SAMPLE, tmp_path / "sample.db"))
    app = make_app(store, None, model_settings=ModelSettings())
    async with app.run_test(size=(20, 5)) as pilot:
        await pilot.pause()
        app.screen.query_one(BatchGrid).focus()
        await pilot.press("g", *"harbor-city/1", "enter")
        await wait_community(pilot)
        await pilot.press("down", "pagedown", "pageup")
        await pilot.pause()
        assert app.is_running and app.return_code is None


async def test_paging_the_command_palette_on_a_one_cell_terminal_keeps_the_app(store: Path) -> None:
    """Textual's own palette pages its list as an option list does, and at 1×1 raised
    KeyError, which ended the app (found by a probe; a bare Textual app does the same)."""
    app = make_app(store, None)
    async with app.run_test(size=(1, 1)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause()
        await pilot.press("down", "pageup", "pagedown")
        await pilot.pause()
        assert app.is_running and app.return_code is None
