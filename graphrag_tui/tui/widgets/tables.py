"""A DataTable that only ever holds literal cells (DataTable parses plain strings as markup)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from rich.text import Text
from textual.widgets import DataTable

from ..safe_text import safe_line

T = TypeVar("T")
#: Rows added per repaint, so a run of thousands of batches never stalls the app.
ROWS_PER_PAINT = 200


class LiteralTable(DataTable):
    """Rows are added as already-safe Text; untrusted strings go through `safe_line`."""

    def __init__(self, *columns: str, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self._column_names = columns
        self._source: object = None
        self._shown = 0

    def on_mount(self) -> None:
        for name in self._column_names:
            self.add_column(Text(name), key=name)

    def add_literal_row(self, cells: Iterable[object], key: str | None = None) -> None:
        self.add_row(*(cell if isinstance(cell, Text) else safe_line(str(cell), 160) for cell in cells), key=key)

    def follow(
        self,
        source: object,
        items: Sequence[T],
        row: Callable[[int, T], tuple[list[object], str | None]],
    ) -> tuple[int, bool]:
        """Show `items`, a list that only grows while `source` (a run) lasts: add the rows
        not shown yet, at most ROWS_PER_PAINT a call; a new source starts over.
        Returns (rows added, every item shown)."""
        if source is not self._source:
            self.clear()
            self._source, self._shown = source, 0
        end = min(len(items), self._shown + ROWS_PER_PAINT)
        for index in range(self._shown, end):
            cells, key = row(index, items[index])
            self.add_literal_row(cells, key)
        added, self._shown = end - self._shown, end
        return added, end == len(items)
