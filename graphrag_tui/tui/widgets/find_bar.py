"""Find in the long tables and texts of a screen: claims, sources, a chunk, the prompt,
raw replies.

`ctrl+f` (a `Findable` screen's binding) opens the bar at the bottom of the screen; typing
finds, ignoring case, in the widgets the screen names (`Findable.find_targets`: those of
the tab shown). Enter or Down goes to the next match, Up to the one before; Esc closes the
bar and gives focus back. A table match moves the table's cursor to the row; a text match
is selected (text areas) or marked (`MarkableStatic`) and scrolled into view.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static, TextArea
from textual.widgets.text_area import Selection

from .clean_input import CleanInput

#: How a text match is marked: all of them, and the current one.
MATCH_STYLE = "black on #b58900"
CURRENT_STYLE = "black on #ff9f1c bold"
#: The matches marked before and after the current one: marking each of 40,000 (a 200,000-
#: character text of one word) took Textual 2 s a key to draw.
MARKED_AROUND = 200


class MarkableStatic(Static):
    """A Static of literal Text whose find matches can be marked (the text is kept whole)."""

    def __init__(self, text: Text, **kwargs: object) -> None:
        super().__init__(text, **kwargs)  # type: ignore[arg-type]
        self.base = text
        #: What is drawn: `base`, with the find matches marked while the find bar is open.
        self.shown = text

    def show(self, text: Text) -> None:
        self.base = self.shown = text
        self.update(text)

    def plain(self) -> str:
        return self.base.plain

    def mark(self, spans: Sequence[tuple[int, int]], current: tuple[int, int] | None) -> None:
        text = self.base.copy()
        for start, end in spans:
            text.stylize(CURRENT_STYLE if (start, end) == current else MATCH_STYLE, start, end)
        self.shown = text
        self.update(text)

    def unmark(self) -> None:
        if self.shown is not self.base:
            self.shown = self.base
            self.update(self.base)

    def line_of(self, offset: int) -> int:
        """The line (as wrapped to the widget's width) that shows character `offset`."""
        width = max(1, self.content_region.width or self.size.width)
        return max(0, len(self.base[:offset].wrap(self.app.console, width)) - 1) if offset else 0


@dataclass(frozen=True)
class Match:
    widget: Widget
    #: A table row, or a character span of a text.
    row: int = -1
    start: int = 0
    end: int = 0


def find_matches(targets: Sequence[Widget], needle: str) -> list[Match]:
    """Every match of `needle` (ignoring case) in the targets, in order."""
    folded = needle.casefold()
    if not folded:
        return []
    matches: list[Match] = []
    for widget in targets:
        if isinstance(widget, DataTable):
            for row in range(widget.row_count):
                cells = " ".join(getattr(cell, "plain", str(cell)) for cell in widget.get_row_at(row))
                if folded in cells.casefold():
                    matches.append(Match(widget, row=row))
        elif isinstance(widget, (TextArea, MarkableStatic)):
            text = widget.text if isinstance(widget, TextArea) else widget.plain()
            matches += [Match(widget, start=s, end=e) for s, e in _spans(text, folded)]
    return matches


def _spans(text: str, folded: str) -> list[tuple[int, int]]:
    # casefold can change lengths (ß -> ss): search the folded text only when it keeps them.
    haystack = text.casefold() if len(text.casefold()) == len(text) else text.lower()
    spans, at = [], haystack.find(folded)
    while at >= 0:
        spans.append((at, at + len(folded)))
        at = haystack.find(folded, at + max(1, len(folded)))
    return spans


class FindBar(Horizontal):
    """The find bar of one screen; `targets` gives the widgets to look in when it opens."""

    BINDINGS = [
        Binding("escape", "close_find", "Close find", id="find-close", tooltip="close the find bar"),
        Binding("down", "next_match", "Next", id="find-next", tooltip="the next match"),
        Binding("up", "previous_match", "Previous", id="find-previous", tooltip="the match before"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.targets: list[Widget] = []
        self.matches: list[Match] = []
        self.current = -1
        self._return_focus: Widget | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Find:"), id="find-label")
        yield CleanInput(placeholder="text to find (Enter/Down: next, Up: previous, Esc: close)",
                         id="find-input")
        yield Static(Text(""), id="find-count")

    def open(self, targets: Sequence[Widget]) -> None:
        if not self.display:  # pressed again while open: keep where focus goes back to
            self._return_focus = self.screen.focused
        self.targets = list(targets)
        self.display = True
        field = self.query_one("#find-input", Input)
        field.focus()
        self._search(field.value)

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._search(event.value)

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_next_match()

    def _search(self, needle: str) -> None:
        self._unmark()
        self.matches = find_matches(self.targets, needle)
        self.current = -1
        if self.matches:
            self.action_next_match()
        else:
            self._count(Text("no match", style="bold red") if needle else Text(""))

    def action_next_match(self) -> None:
        self._go(1)

    def action_previous_match(self) -> None:
        self._go(-1)

    def _go(self, step: int) -> None:
        if not self.matches:
            return
        self.current = (self.current + step) % len(self.matches)
        match = self.matches[self.current]
        self._count(Text(f"{self.current + 1} of {len(self.matches)}"))
        if isinstance(match.widget, DataTable):
            match.widget.move_cursor(row=match.row, animate=False)
        elif isinstance(match.widget, TextArea):
            area = match.widget
            document = area.document
            area.selection = Selection(document.get_location_from_index(match.start),
                                       document.get_location_from_index(match.end))
            shown = area.show_cursor
            area.show_cursor = True  # a read-only area without a cursor does not scroll to one
            area.scroll_cursor_visible(center=True)
            area.show_cursor = shown
            area.scroll_visible(animate=False)
        elif isinstance(match.widget, MarkableStatic):
            self._mark(match.widget, (match.start, match.end))

    def _mark(self, widget: MarkableStatic, current: tuple[int, int]) -> None:
        self._unmark()
        spans = [(m.start, m.end) for m in self.matches if m.widget is widget]
        at = bisect.bisect_left(spans, current)
        widget.mark(spans[max(0, at - MARKED_AROUND):at + MARKED_AROUND + 1], current)
        scroll_to_line(widget, widget.line_of(current[0]))

    def _unmark(self) -> None:
        for widget in self.targets:
            if isinstance(widget, MarkableStatic):
                widget.unmark()

    def _count(self, text: Text) -> None:
        self.query_one("#find-count", Static).update(text)

    def action_close_find(self) -> None:
        self._unmark()
        self.display = False
        target = self._return_focus
        if target is not None and target.is_attached and target.focusable:
            target.focus()
        else:
            self.screen.focus_next()


def scroll_to_line(widget: Widget, line: int) -> None:
    """Scroll the nearest scrolling ancestor so that `line` of the widget is in view, centred."""
    top, node = line, widget
    while isinstance(node, Widget) and isinstance(node.parent, Widget):
        top += node.virtual_region.y  # relative to its parent
        node = node.parent
        if node.is_scrollable and node.allow_vertical_scroll:
            node.scroll_to_region(Region(0, top, 1, 1), animate=False, center=True)
            return


class Findable:
    """A screen with a find bar (mixed into a Screen; compose must yield `FindBar(id="find-bar")`)."""

    FIND_BINDING = Binding("ctrl+f", "find", "Find", id="find", priority=True,
                           tooltip="find text in the tables and texts shown")

    def find_targets(self) -> list[Widget]:
        raise NotImplementedError

    def action_find(self) -> None:
        bar = self.query_one("#find-bar", FindBar)  # type: ignore[attr-defined]
        bar.open(self.find_targets())
