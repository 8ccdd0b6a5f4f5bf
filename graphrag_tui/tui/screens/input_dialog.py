"""A one-field modal dialog: a heading, a hint, the field, an inline error and its keys."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ..safe_text import one_line
from ..widgets.clean_input import CleanInput

T = TypeVar("T")


class InputDialog(ModalScreen[T | None]):
    """Dismisses with what `accept` makes of the trimmed text, or None on Esc.

    Subclasses name the dialog (`NAME`: its widgets are `#<NAME>-dialog`, `-title`,
    `-input` and `-error`), say what it is for, and implement `accept`, which returns the
    result, or shows an error with `show_error` and returns None to keep the dialog open."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog-cancel")]
    NAME: ClassVar[str]
    HEADING: ClassVar[str]
    #: What Enter does, for the keys line.
    ENTER_DOES: ClassVar[str]

    def __init__(self, *, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self._value, self._placeholder = value, placeholder

    def hint(self) -> str:
        raise NotImplementedError

    def accept(self, text: str) -> T | None:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.NAME}-dialog", classes="dialog"):
            yield Static(Text(self.HEADING), id=f"{self.NAME}-title", classes="dialog-title")
            yield Static(Text(self.hint()), classes="hint")
            yield CleanInput(value=self._value, placeholder=self._placeholder, id=f"{self.NAME}-input")
            yield Static(Text(""), id=f"{self.NAME}-error", classes="dialog-error")
            yield Static(Text(f"Enter: {self.ENTER_DOES}   Esc: cancel"), classes="hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def show_error(self, message: str) -> None:
        self.query_one(f"#{self.NAME}-error", Static).update(Text(one_line(message)))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        result = self.accept(event.value.strip())
        if result is not None:
            self.dismiss(result)

    @on(Input.Changed)
    def _changed(self) -> None:
        self.show_error("")

    def action_cancel(self) -> None:
        self.dismiss(None)
