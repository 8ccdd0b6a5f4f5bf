"""The batch grid scrolls its own rows: the cursor stays in sight, the wheel scrolls, a click
opens the batch under it."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.events import MouseScrollDown, MouseScrollUp
from textual.pilot import Pilot
from textual.widget import Widget

from graphrag_tui.tui.messages import OpenBatch
from graphrag_tui.tui.run_state import BatchCell
from graphrag_tui.tui.widgets.batch_grid import BatchGrid


class GridHost(App[None]):
    CSS = "BatchGrid { width: 20; height: 3; }"  # 10 cells a row, 3 rows in sight

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[int] = []

    def compose(self) -> ComposeResult:
        yield BatchGrid()

    def on_open_batch(self, message: OpenBatch) -> None:
        self.opened.append(message.batch_index)


async def wheel(pilot: Pilot, event: type[MouseScrollDown | MouseScrollUp], over: type[Widget] = BatchGrid) -> None:
    """A wheel turn over the grid (or another widget), delivered as the terminal driver delivers it."""
    region = pilot.app.query_one(over).region
    x, y = region.x + 1, region.y + 1
    pilot.app.post_message(event(None, x, y, 0, 1, 0, False, False, False, screen_x=x, screen_y=y))
    await pilot.pause()


async def test_the_grid_scrolls_to_the_cursor_and_with_the_wheel() -> None:
    app = GridHost()
    async with app.run_test(size=(40, 10)) as pilot:
        grid = app.query_one(BatchGrid)
        grid.set_cells([BatchCell() for _ in range(95)])  # 10 rows
        grid.focus()
        await pilot.pause()
        assert (grid.columns, grid.top_row) == (10, 0)

        await pilot.press("down", "down", "down")  # row 3: the rows in sight become 1-3
        assert (grid.cursor, grid.top_row) == (30, 1)
        await pilot.press("up", "up", "up")
        assert (grid.cursor, grid.top_row) == (0, 0)

        for _ in range(20):  # the wheel stops at the last rows
            await wheel(pilot, MouseScrollDown)
        assert grid.top_row == 7
        await wheel(pilot, MouseScrollUp)
        assert grid.top_row == 6

        await pilot.click(BatchGrid, offset=(4, 1))  # third cell of row 6 + 1
        await pilot.pause()
        assert app.opened == [72] and grid.cursor == 72 and grid.top_row == 6
        await pilot.double_click(BatchGrid, offset=(6, 1))  # opens once (it opened the batch view twice)
        await pilot.pause()
        assert app.opened == [72, 73]

        grid.set_cells([BatchCell() for _ in range(25)])  # a smaller run: back in range
        assert grid.top_row == 0
