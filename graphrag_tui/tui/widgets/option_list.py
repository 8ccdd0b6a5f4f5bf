"""Textual's OptionList, measured and paged safely in a narrow place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.geometry import Size
from textual.widgets import OptionList


def paged_once_laid_out(move_page: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """An option list's PageUp and PageDown, which do nothing before the list had room to lay
    out its lines (a 20×5 terminal; Textual's command palette at 1×1): Textual's looked the
    highlighted option's line up and raised KeyError, which ended the app."""

    def guarded(self: OptionList, direction: Any) -> None:
        if (self.highlighted or 0) in self._index_to_line:
            move_page(self, direction)

    return guarded


class RoomyOptionList(OptionList):
    """An OptionList that never measures its options at a width with no room for their
    text: Textual's wraps them to width 0 there, and rich's wrap raises (ValueError:
    range() arg 3 must not be zero), which ended the app when a terminal narrowed to 40
    columns laid out the main screen under another screen."""

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        padding = self.get_component_styles("option-list--option").padding.width
        return super().get_content_height(container, viewport, max(width, padding + 1))

    _move_page = paged_once_laid_out(OptionList._move_page)
