"""A yes/no question ("A run is going. Quit anyway?")."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ..safe_text import clean
from .keys import bound_keys


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses True for Yes (`y`), False for No (`n`, Esc). No has focus at first."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="yes"),
        Binding("n", "answer(False)", "No", id="no"),
        Binding("escape", "answer(False)", "No", show=False, id="dialog-cancel"),
    ]

    def __init__(self, question: str, *, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.yes_label = yes
        self.no_label = no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Static(Text(clean(self.question)), id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(Text(f"{self.yes_label} ({', '.join(bound_keys(self, 'yes'))})"),
                             variant="error", id="confirm-yes")
                yield Button(Text(f"{self.no_label} ({', '.join(bound_keys(self, 'no'))})"),
                             variant="primary", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
