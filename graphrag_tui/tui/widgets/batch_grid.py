"""One cell per Map batch: a glyph per state (readable without colour, and under NO_COLOR),
coloured too; succeeded cells are shaded by usefulness. Enter or a click opens the batch view."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click, MouseScrollDown, MouseScrollUp
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from ..messages import OpenBatch
from ..run_state import BatchCell

#: Each cell is its glyph and a space.
CELL_WIDTH = 2
#: The glyph of each state; a batch that answered with usefulness 0 (no help) gets its own.
GLYPHS = {
    "queued": "·",
    "running": "▸",
    "retrying": "↻",
    "succeeded": "■",
    "failed": "✗",
    "cancelled": "⊘",
}
USELESS_GLYPH = "□"
CURSOR = Style(reverse=True)
STYLES = {
    "queued": Style(color="#5f6b7a"),
    "running": Style(color="#4aa8ff", bold=True),
    "retrying": Style(color="#ff9f1c", bold=True),
    "failed": Style(color="#ff4d5e", bold=True),
    "cancelled": Style(color="#8a8f98"),
}
# Succeeded cells go from a dull to a bright green with usefulness 0..100.
GREENS = [Style(color=c) for c in ("#3d5a45", "#3f7a4f", "#3f9a58", "#40b95f", "#4fdc6c")]


def cell_glyph(cell: BatchCell) -> str:
    if cell.state == "succeeded" and not cell.usefulness:
        return USELESS_GLYPH
    return GLYPHS[cell.state]


def cell_style(cell: BatchCell) -> Style:
    if cell.state != "succeeded":
        return STYLES[cell.state]
    return GREENS[min(int((cell.usefulness or 0) / 100 * len(GREENS)), len(GREENS) - 1)]


class BatchGrid(Widget, can_focus=True):
    """Fills its place and scrolls its rows itself: a grid that grows to thousands of cells
    only redraws, it never makes the screen lay itself out again."""

    BINDINGS = [
        Binding("left", "move(-1)", "Previous", show=False, id="grid-previous", tooltip="previous batch"),
        Binding("right", "move(1)", "Next", show=False, id="grid-next", tooltip="next batch"),
        Binding("up", "move_row(-1)", "Up", show=False, id="grid-up", tooltip="batch above"),
        Binding("down", "move_row(1)", "Down", show=False, id="grid-down", tooltip="batch below"),
        Binding("enter", "open", "Open batch", id="open-batch", tooltip="open the selected batch"),
    ]

    cursor: reactive[int] = reactive(0)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.cells: list[BatchCell] = []
        #: The first row shown.
        self.top_row = 0

    def set_cells(self, cells: list[BatchCell]) -> None:
        self.cells = cells
        self.cursor = min(self.cursor, max(len(cells) - 1, 0))
        self.top_row = min(self.top_row, self._last_top_row())
        self.refresh()

    @property
    def columns(self) -> int:
        return max(1, self.size.width // CELL_WIDTH)

    def _rows(self) -> int:
        return -(-len(self.cells) // self.columns)

    def _last_top_row(self) -> int:
        return max(0, self._rows() - self.size.height)

    def render_line(self, y: int) -> Strip:
        """One row of cells, as a few segments (runs of one glyph and style), so a grid of
        thousands of batches costs only its visible rows. Every segment has a style: a filter
        such as NO_COLOR's cannot take a segment without one."""
        if not self.cells:
            if y != 0:
                return Strip.blank(self.size.width, self.rich_style)
            return Strip([Segment("No batches yet: ask a question.", Style(dim=True))])
        columns = self.columns
        start = (y + self.top_row) * columns
        segments: list[Segment] = []
        run_key: tuple[str, Style] | None = None
        run_length = 0
        for index in range(start, min(start + columns, len(self.cells))):
            cell = self.cells[index]
            style = cell_style(cell)
            if index == self.cursor and self.has_focus:
                style += CURSOR
            key = (cell_glyph(cell), style)
            if key == run_key:
                run_length += 1
                continue
            if run_key is not None:
                segments.append(Segment(f"{run_key[0]} " * run_length, run_key[1]))
            run_key, run_length = key, 1
        if run_key is not None:
            segments.append(Segment(f"{run_key[0]} " * run_length, run_key[1]))
        return Strip(segments)

    def scroll_rows(self, rows: int) -> None:
        top = max(0, min(self._last_top_row(), self.top_row + rows))
        if top != self.top_row:
            self.top_row = top
            self.refresh()

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        event.stop()
        self.scroll_rows(1)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        event.stop()
        self.scroll_rows(-1)

    def action_move(self, step: int) -> None:
        if self.cells:
            self.cursor = max(0, min(len(self.cells) - 1, self.cursor + step))

    def action_move_row(self, step: int) -> None:
        self.action_move(step * self.columns)

    def action_open(self) -> None:
        if self.cells:
            self.post_message(OpenBatch(self.cursor))

    def on_click(self, event: Click) -> None:
        if event.chain > 1:  # a double click's second click: its first opened the batch
            return
        index = (event.y + self.top_row) * self.columns + event.x // CELL_WIDTH
        if 0 <= index < len(self.cells) and event.x < self.columns * CELL_WIDTH:
            self.cursor = index
            self.post_message(OpenBatch(index))

    def watch_cursor(self) -> None:
        """Keep the cursor's row in sight."""
        row = self.cursor // self.columns
        if row < self.top_row:
            self.top_row = row
        elif row >= self.top_row + self.size.height:
            self.top_row = row - self.size.height + 1
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self.top_row = min(self.top_row, self._last_top_row())
