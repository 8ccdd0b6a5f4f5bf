"""One cell per Map batch, coloured by its state; Enter or a click opens the batch view."""

from __future__ import annotations

from rich.style import Style
from rich.segment import Segment
from textual.binding import Binding
from textual.events import Click
from textual.containers import ScrollableContainer
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from ..messages import OpenBatch
from ..run_state import BatchCell

CELL = "■ "
CURSOR = Style(reverse=True)
STYLES = {
    "queued": Style(color="#5f6b7a"),
    "running": Style(color="#4aa8ff", bold=True),
    "retrying": Style(color="#ff9f1c", bold=True),
    "failed": Style(color="#ff4d5e", bold=True),
    "cancelled": Style(color="#3a3f47"),
}
# Succeeded cells go from a dull to a bright green with usefulness 0..100.
GREENS = [Style(color=c) for c in ("#3d5a45", "#3f7a4f", "#3f9a58", "#40b95f", "#4fdc6c")]


def cell_style(cell: BatchCell) -> Style:
    if cell.state != "succeeded":
        return STYLES[cell.state]
    return GREENS[min(int((cell.usefulness or 0) / 100 * len(GREENS)), len(GREENS) - 1)]


class BatchGrid(Widget, can_focus=True):
    BINDINGS = [
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right", "move(1)", "Next", show=False),
        Binding("up", "move_row(-1)", show=False),
        Binding("down", "move_row(1)", show=False),
        Binding("enter", "open", "Open batch"),
    ]

    cursor: reactive[int] = reactive(0)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.cells: list[BatchCell] = []

    def set_cells(self, cells: list[BatchCell]) -> None:
        resized = len(cells) != len(self.cells)
        self.cells = cells
        self.cursor = min(self.cursor, max(len(cells) - 1, 0))
        self.refresh(layout=resized)

    @property
    def columns(self) -> int:
        return max(1, self.size.width // len(CELL))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        columns = max(1, width // len(CELL))
        return max(1, -(-len(self.cells) // columns))

    def render_line(self, y: int) -> Strip:
        """One row of cells, as a few segments (runs of one style), so a grid of thousands of
        batches costs only its visible rows."""
        if not self.cells:
            return Strip([Segment("No batches yet: type a question and press Enter.", Style(dim=True))]) if y == 0 else Strip.blank(0)
        columns = self.columns
        start = y * columns
        segments: list[Segment] = []
        run_style: Style | None = None
        run_length = 0
        for index in range(start, min(start + columns, len(self.cells))):
            style = cell_style(self.cells[index])
            if index == self.cursor and self.has_focus:
                style += CURSOR
            if style == run_style:
                run_length += 1
                continue
            if run_length:
                segments.append(Segment(CELL * run_length, run_style))
            run_style, run_length = style, 1
        if run_length:
            segments.append(Segment(CELL * run_length, run_style))
        return Strip(segments)

    def action_move(self, step: int) -> None:
        if self.cells:
            self.cursor = max(0, min(len(self.cells) - 1, self.cursor + step))

    def action_move_row(self, step: int) -> None:
        self.action_move(step * self.columns)

    def action_open(self) -> None:
        if self.cells:
            self.post_message(OpenBatch(self.cursor))

    def on_click(self, event: Click) -> None:
        index = event.y * self.columns + event.x // len(CELL)
        if 0 <= index < len(self.cells) and event.x < self.columns * len(CELL):
            self.cursor = index
            self.post_message(OpenBatch(index))

    def watch_cursor(self) -> None:
        self.refresh()
        if isinstance(self.parent, ScrollableContainer) and self.cells:
            row = self.cursor // self.columns
            self.parent.scroll_to_region(Region(0, self.virtual_region.y + row, 1, 1), animate=False)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
