"""The row table draws only the rows in sight: its header stays, the cursor stays in sight,
the wheel scrolls, Enter or a click selects a row, and cells (strings or Text) are drawn as
the text they are, a right-aligned column against its right edge."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.events import MouseScrollDown

from graphrag_tui.tui.widgets.row_table import MAX_COLUMN_WIDTH, RowTable

from .test_batch_grid import wheel


class TableHost(App[None]):
    CSS = "RowTable { width: 40; height: 5; }"  # the header and 4 rows in sight

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []

    def compose(self) -> ComposeResult:
        yield RowTable("No", "Name", right={0})

    def on_row_table_row_selected(self, message: RowTable.RowSelected) -> None:
        self.selected.append(message.key)


def lines(table: RowTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


async def test_a_thousand_rows_scroll_under_their_header_and_select_by_key_and_click() -> None:
    app = TableHost()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(RowTable)
        table.set_rows([([str(i), f"row {i}"], f"key-{i}") for i in range(1000)])
        table.focus()
        await pilot.pause()
        assert lines(table) == ["  No  Name", "   0  row 0", "   1  row 1", "   2  row 2", "   3  row 3"]

        await pilot.press("end")
        assert (table.cursor_row, table.top_row) == (999, 996)
        assert lines(table)[1:] == [" 996  row 996", " 997  row 997", " 998  row 998", " 999  row 999"]
        await pilot.press("pageup")
        assert (table.cursor_row, table.top_row) == (995, 995)
        await pilot.press("up", "enter")
        assert (table.cursor_row, table.top_row, app.selected) == (994, 994, ["key-994"])
        await pilot.press("home")
        assert (table.cursor_row, table.top_row) == (0, 0)

        await wheel(pilot, MouseScrollDown, RowTable)  # three rows a turn; the cursor stays
        assert (table.cursor_row, table.top_row) == (0, 3)
        await pilot.click(RowTable, offset=(3, 2))  # the second row in sight
        await pilot.pause()
        assert (table.cursor_row, app.selected[-1]) == (4, "key-4")
        await pilot.click(RowTable, offset=(3, 0))  # the header selects nothing
        await pilot.pause()
        assert app.selected == ["key-994", "key-4"]

        table.set_rows([([Text("1"), Text("one")], "one")])  # fewer rows: back in range
        assert (table.cursor_row, table.top_row) == (0, 0)


async def test_cells_are_drawn_as_the_text_they_are_and_a_long_one_is_cut() -> None:
    app = TableHost()
    async with app.run_test(size=(200, 10)) as pilot:
        table = app.query_one(RowTable)
        table.styles.width = 120
        long = "x" * (MAX_COLUMN_WIDTH + 10)
        table.set_rows([(["[bold]1[/]", Text("[@click=app.quit]q", style="bold")], "a"), (["2", long], "b")])
        await pilot.pause()
        assert lines(table) == [
            "         No  Name",
            " [bold]1[/]  [@click=app.quit]q",
            f"          2  {'x' * (MAX_COLUMN_WIDTH - 1)}…",
            "", "",
        ]
        await pilot.click(RowTable, offset=(20, 1))
        await pilot.pause()
        assert app.is_running and app.selected == ["a"]
