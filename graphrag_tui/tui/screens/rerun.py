"""Before a re-run sends anything: how many batches go again, and on which model (the run's
own, or one of the model picker's). Every model call costs: nothing is sent before Enter."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..safe_text import clean
from ..widgets.option_list import RoomyOptionList

#: The choice that means "the model the run used" (its recorded endpoint settings).
RECORDED = "recorded"


class RerunScreen(ModalScreen[str | None]):
    """Dismisses with the chosen model (RECORDED, or a picker kind), or None on Esc."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog-cancel")]

    def __init__(self, question: str, choices: list[tuple[Text, str]]) -> None:
        super().__init__()
        self.question = question
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="rerun-dialog"):
            yield Static(Text(clean(self.question)), id="rerun-question")
            yield Static(Text("Send them to (Enter sends, Esc cancels):", style="dim"))
            yield RoomyOptionList(*(Option(label, id=value) for label, value in self.choices), id="rerun-models")

    def on_mount(self) -> None:
        models = self.query_one("#rerun-models", OptionList)
        models.highlighted = 0
        models.focus()

    @on(OptionList.OptionSelected, "#rerun-models")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
