"""A read-only table of many rows that draws only the rows in view.

DataTable measures every cell as its row is added and renders again as its columns widen:
the 40,000 rows of two 20,000-batch runs compared took 10 s to add, and held keys up to 2 s
at a time. Here the rows are given at once, their column widths measured once from their
plain text, and a repaint draws the rows that show: any number of rows costs the same."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

#: The widest a column is drawn (a longer cell is cut with …).
MAX_COLUMN_WIDTH = 60
#: Cells are this far apart.
GAP = 2


#: A cell: a plain string (never markup), or a Text with its styles.
Cell = str | Text


class RowTable(Widget, can_focus=True):
    """A header line, then the rows from `top_row`; ↑ ↓ PgUp PgDn Home End move the cursor,
    Enter or a click selects a row (`RowSelected`). Cells are drawn as the text they are; a
    row's Text is made only when it shows (40,000 rows of Text took 0.8 s to make)."""

    DEFAULT_CSS = """
    RowTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        &:focus { background-tint: $foreground 5%; }
        & > .row-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .row-table--even-row { background: $surface-lighten-1 50%; }
        & > .row-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .row-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    COMPONENT_CLASSES = {"row-table--header", "row-table--even-row", "row-table--cursor"}

    cursor_row: reactive[int] = reactive(0)

    @dataclass
    class RowSelected(Message):
        table: RowTable
        key: str

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(self, *columns: str, right: Collection[int] = (), **kwargs: object) -> None:
        """`right`: the columns (by position) whose cells are drawn against their right edge."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.columns: list[Cell] = list(columns)
        self.right = [column in right for column in range(len(columns))]
        self.rows: list[Sequence[Cell]] = []
        self.keys: list[str] = []
        self.widths = [min(cell_len(name), MAX_COLUMN_WIDTH) for name in columns]
        #: The first row shown.
        self.top_row = 0

    def set_rows(self, rows: Sequence[tuple[Sequence[Cell], str]]) -> None:
        """The table's rows (cells, key), in order, replacing any before."""
        self.rows = [cells for cells, _ in rows]
        self.keys = [key for _, key in rows]
        for column in range(len(self.widths)):
            widest = max((_width(cells[column]) for cells in self.rows), default=0)
            self.widths[column] = min(max(self.widths[column], widest), MAX_COLUMN_WIDTH)
        self.cursor_row = min(self.cursor_row, max(len(self.rows) - 1, 0))
        self.top_row = min(self.top_row, self._last_top_row())
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def get_row_at(self, index: int) -> Sequence[Cell]:
        return self.rows[index]

    def copy_text(self) -> tuple[str, str] | None:
        """What `c` copies (tui/copying.py): the cursor's row, its cells apart by tabs."""
        if not self.rows:
            return None
        return "row", "\t".join(cell if isinstance(cell, str) else cell.plain for cell in self.rows[self.cursor_row])

    def _shown_rows(self) -> int:
        return max(self.size.height - 1, 1)

    def _last_top_row(self) -> int:
        return max(0, len(self.rows) - self._shown_rows())

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._line(self.columns, self.get_component_rich_style("row-table--header"), width)
        index = self.top_row + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        if index == self.cursor_row:
            style = self.rich_style + self.get_component_rich_style("row-table--cursor")
        elif index % 2:
            style = self.rich_style + self.get_component_rich_style("row-table--even-row")
        else:
            style = self.rich_style
        return self._line(self.rows[index], style, width)

    def _line(self, cells: Sequence[Cell], style: Style, width: int) -> Strip:
        line = Text(" ", style=style, end="")
        for cell, column_width, right in zip(cells, self.widths, self.right, strict=False):
            shown = Text(cell) if isinstance(cell, str) else cell.copy()
            shown.truncate(column_width, overflow="ellipsis")
            padding = " " * (column_width - shown.cell_len)
            line.append_text(Text(padding) + shown if right else shown + padding)
            line.append(" " * GAP)
        line.truncate(width, pad=True)
        return Strip(line.render(self.app.console), width)

    def watch_cursor_row(self) -> None:
        shown = self._shown_rows()
        if self.cursor_row < self.top_row:
            self.top_row = self.cursor_row
        elif self.cursor_row >= self.top_row + shown:
            self.top_row = self.cursor_row - shown + 1
        self.refresh()

    def on_resize(self) -> None:
        self.top_row = min(self.top_row, self._last_top_row())

    def _move(self, rows: int) -> None:
        if self.rows:
            self.cursor_row = max(0, min(len(self.rows) - 1, self.cursor_row + rows))

    def on_key(self, event: events.Key) -> None:
        steps = {"up": -1, "down": 1, "pageup": -self._shown_rows(), "pagedown": self._shown_rows(),
                 "home": -len(self.rows), "end": len(self.rows)}
        if event.key in steps:
            event.stop()
            event.prevent_default()
            self._move(steps[event.key])
        elif event.key == "enter" and self.rows:
            event.stop()
            event.prevent_default()
            self.post_message(self.RowSelected(self, self.keys[self.cursor_row]))

    def on_click(self, event: events.Click) -> None:
        index = self.top_row + event.y - 1
        if event.y >= 1 and index < len(self.rows):
            event.stop()
            self.cursor_row = index
            self.post_message(self.RowSelected(self, self.keys[index]))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self._scroll(3)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self._scroll(-3)

    def _scroll(self, rows: int) -> None:
        top = max(0, min(self._last_top_row(), self.top_row + rows))
        if top != self.top_row:
            self.top_row = top
            self.refresh()


def _width(cell: Cell) -> int:
    return cell_len(cell) if isinstance(cell, str) else cell.cell_len
