"""The header line: store, namespace, level, which model answers, and the run phase.

It fits its width when drawn: the store path is shortened from the left first (its file name
is what tells stores apart), then the labels go, then the model's name is cut, then the store
goes, and last the namespace is cut; the namespace, level, model and phase are always there."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget

from ..safe_text import one_line

TITLE = " graphrag-tui "
#: The fewest cells the store path and the model's name are cut to.
MIN_STORE = 12
MIN_MODEL = 8


def cut_left(text: str, width: int) -> str:
    """`text` in at most `width` cells, cut from the left behind an ellipsis."""
    if cell_len(text) <= width:
        return text
    kept = ""
    for char in reversed(text):
        if cell_len(kept) + cell_len(char) > width - 1:
            break
        kept = char + kept
    return "…" + kept


def cut_right(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    kept = ""
    for char in text:
        if cell_len(kept) + cell_len(char) > width - 1:
            break
        kept += char
    return kept + "…"


@dataclass(frozen=True)
class Header:
    store: str
    namespace: str
    level: str
    model: str
    phase: str

    def text(self, width: int) -> Text:
        """The widest wording that fits `width` cells."""
        for labels in (True, False):
            fixed = self._render(labels, "", self.model).cell_len
            room = width - fixed
            if room >= min(MIN_STORE, cell_len(self.store)):
                return self._render(labels, cut_left(self.store, room), self.model)
        for store in (cut_left(self.store, MIN_STORE), None):  # then the store goes
            room = width - self._render(False, store, "").cell_len
            if room >= min(MIN_MODEL, cell_len(self.model)):
                return self._render(False, store, cut_right(self.model, room))
        # and last the namespace is cut (a long one at 80 columns left no room for the phase)
        model = cut_right(self.model, MIN_MODEL)
        room = width - self._render(False, None, model, namespace="").cell_len
        return self._render(False, None, model, namespace=cut_right(self.namespace, max(room, 2)))

    def _render(self, labels: bool, store: str | None, model: str, namespace: str | None = None) -> Text:
        """`store` None: left out."""
        text = Text(no_wrap=True, overflow="crop")
        text.append(TITLE if labels else TITLE.rstrip(), style="bold reverse")
        namespace = self.namespace if namespace is None else namespace
        values = (("store", store), ("namespace", namespace), ("level", self.level), ("model", model))
        for label, value in values:
            if value is None:
                continue
            if labels:
                text.append(f"  {label} ", style="dim")
            else:
                text.append(" " if label == "store" or (label == "namespace" and store is None) else " · ", style="dim")
            text.append(value, style="bold")
        text.append(f"  · {self.phase}" if labels else f" · {self.phase}", style="italic")
        return text


class StatusLine(Widget):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.header: Header | None = None

    def show(self, *, store: str, namespace: str | None, level: str, model: str, phase: str) -> None:
        header = Header(one_line(store), one_line(namespace or "—"), one_line(level), one_line(model), phase)
        if header != self.header:  # the app calls this on every repaint
            self.header = header
            self.refresh()

    def render(self) -> Text:
        if self.header is None:
            return Text(TITLE, style="bold reverse")
        return self.header.text(self.size.width)
