"""Keys and habits: a key back to the question, the keys screen of the screen in force, `c`
copies the focused thing, Enter on a Reduce or Scores row opens its batch."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, OptionList, TabbedContent, TextArea

from graphrag_tui.tui.screens.batch import BatchScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.keys import KeysScreen
from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.widgets.answer_panel import AnswerPanel
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, screen_text, wait_community, wait_finished, wait_until

SIZE = (140, 42)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def partial() -> Scripted:
    return Scripted({
        "ns/1": map_reply("The port authority funds the bridge.", 90),
        "ns/2": map_reply("Fleets land at dawn.", 20),
        "ns/3": Reply(completion("sorry, I cannot do JSON")),
    })


async def finished(pilot, store: Path) -> None:
    await ask(pilot)
    await wait_finished(pilot)


@pytest.mark.parametrize("key", ["slash", "ctrl+l"])
async def test_a_key_goes_back_to_the_question_and_the_footer_shows_it(store: Path, key: str) -> None:
    with ScriptedChatServer(partial()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await finished(pilot, store)
            app.screen.query_one("#retries-table", DataTable).focus()
            await pilot.pause()
            assert " / Question " in screen_text(app).splitlines()[-1]
            await pilot.press(key)
            await pilot.pause()
            assert app.focused is app.screen.query_one("#query", Input)
            await pilot.press("slash", "x")  # the question is selected: typing asks anew, / is a character
            assert app.screen.query_one("#query", Input).value == "/x"


async def test_the_keys_screen_lists_the_keys_in_force_where_it_opens(store: Path) -> None:
    with ScriptedChatServer(partial()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await finished(pilot, store)
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("question_mark")
            await pilot.pause()
            rows = app.screen.rows
            assert isinstance(app.screen, KeysScreen)
            assert ("/ ctrl+l", "back to the question", True) in rows
            assert ("ctrl+o", "collapse the setup form to its question line, or expand it", True) in rows
            assert ("1 2 3 4", "show the tab of that number", True) in rows
            assert ("c", "copy the focused answer, prompt, reply, row or entry", True) in rows
            await pilot.press("escape")
            app.open_community("ns/1")
            await wait_community(pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            keys = [k for k, _, _ in app.screen.rows]
            assert "1 2 3" in keys and "1 2 3 4" not in keys  # the community view has three tabs
            assert "/ ctrl+l" not in keys  # the question is on the main screen


async def test_c_copies_the_focused_thing_and_says_so(store: Path) -> None:
    with ScriptedChatServer(partial()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await finished(pilot, store)
            app.screen.query_one(AnswerPanel).focus()
            await pilot.press("c")
            await pilot.pause()
            assert app.clipboard == "The port authority funds it."
            await wait_until(pilot, lambda: "Copied the answer (28 characters)." in screen_text(app), what="the toast")

            app.screen.query_one("#citations", OptionList).focus()
            await pilot.press("c")
            assert app.clipboard == "ns/1"

            app.screen.query_one(TabbedContent).active = "tab-reduce"
            await pilot.pause()
            app.screen.query_one("#reduce-table", DataTable).focus()
            await pilot.press("c")
            assert app.clipboard == "1\t0\t90\tselected\tns/1"

            app.screen.query_one(BatchGrid).focus()
            await pilot.press("enter")  # batch 0
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen)
            await pilot.press("3")  # the prompt
            await pilot.pause()
            prompt = app.screen.query_one("#prompt", TextArea)
            prompt.focus()
            await pilot.press("c")
            assert app.clipboard == prompt.text and "Who funds the bridge?" in app.clipboard

            await pilot.press("escape")
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("c")
            await pilot.pause()
            assert app.clipboard == prompt.text  # nothing copied from the grid
            await wait_until(pilot, lambda: "Nothing to copy here" in screen_text(app), what="the toast")

            app.screen.query_one("#query", Input).focus()
            await pilot.press("end", "c")  # in a text field, c is a character
            assert app.screen.query_one("#query", Input).value == "Who funds the bridge?c"


@pytest.mark.parametrize(("tab", "table", "row", "batch"), [
    ("tab-reduce", "#reduce-table", 1, 1),   # rank 2: batch 1
    ("tab-scores", "#scores-table", 0, 0),   # the highest score: batch 0
])
async def test_enter_on_a_reduce_or_scores_row_opens_its_batch(store: Path, tab: str, table: str, row: int,
                                                               batch: int) -> None:
    with ScriptedChatServer(partial()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await finished(pilot, store)
            app.screen.query_one(TabbedContent).active = tab
            await pilot.pause()
            widget = app.screen.query_one(table, DataTable)
            widget.focus()
            widget.move_cursor(row=row)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen)
            assert app.screen.batch.index == batch
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen) and not isinstance(app.screen, CommunityScreen)
