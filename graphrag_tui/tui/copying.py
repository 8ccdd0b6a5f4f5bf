"""What `c` copies: the focused thing, as text. A widget (or one of its containers) that
defines `copy_text() -> tuple[str, str] | None` (what it is, the text) says it itself; else
the focused widget's kind decides: a text area's selection or whole text, a table's row, a
list's highlighted entry, a field's value, or the text a scrolled pane shows."""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import DataTable, Input, Markdown, OptionList, Static, TextArea


def _plain(value: object) -> str:
    return getattr(value, "plain", None) or str(value)


def _shown_text(widget: Static | Markdown) -> str:
    if isinstance(widget, Markdown):
        return widget.source
    if isinstance(widget.content, RichMarkdown):  # (compare's answers) its source, as Markdown's
        return widget.content.markup
    return _plain(widget.render())


def _by_kind(widget: Widget) -> tuple[str, str] | None:
    if isinstance(widget, TextArea):
        return ("selection", widget.selected_text) if widget.selected_text else ("text", widget.text)
    if isinstance(widget, DataTable):
        if not widget.row_count:
            return None
        cells = widget.get_row_at(widget.cursor_row)
        return "row", "\t".join(_plain(cell) for cell in cells)
    if isinstance(widget, OptionList):
        if widget.highlighted is None:
            return None
        option = widget.get_option_at_index(widget.highlighted)
        return "entry", option.id or _plain(option.prompt)
    if isinstance(widget, Input):
        return "field", widget.value
    if isinstance(widget, ScrollableContainer):
        texts = [_shown_text(child) for child in widget.query("Static, Markdown")
                 if child.display and isinstance(child, (Static, Markdown))]
        return "text", "\n\n".join(t for t in texts if t.strip())
    return None


def copy_text(focused: Widget | None) -> tuple[str, str] | None:
    """(what, text) of the focused widget, or None when it holds nothing to copy."""
    for node in (focused.ancestors_with_self if focused is not None else []):
        own = getattr(node, "copy_text", None)
        found = own() if callable(own) else None
        if found is None and node is focused:
            found = _by_kind(node) if isinstance(node, Widget) else None
        if found is not None and found[1].strip():
            return found
    return None
