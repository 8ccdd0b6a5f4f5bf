"""A DataTable that only ever holds literal cells (DataTable parses plain strings as markup)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import DataTable

from ..safe_text import safe_line


class LiteralTable(DataTable):
    """Rows are added as already-safe Text; untrusted strings go through `safe_line`."""

    DEFAULT_CSS = "LiteralTable { height: 1fr; }"

    def __init__(self, *columns: str, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self._column_names = columns

    def on_mount(self) -> None:
        for name in self._column_names:
            self.add_column(Text(name), key=name)

    def add_literal_row(self, cells: Iterable[object], key: str | None = None) -> None:
        self.add_row(*(cell if isinstance(cell, Text) else safe_line(str(cell), 160) for cell in cells), key=key)
