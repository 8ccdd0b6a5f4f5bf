"""The key reference (`?`)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "run the query (in the query field)"),
    ("Esc", "cancel a running run; close a screen or dialog"),
    ("g", "go to a community by id or number"),
    ("e", "export the run (JSON and Markdown report)"),
    ("s", "in a batch: save a response too long to show whole"),
    ("?", "this list of keys"),
    ("ctrl+p", "command palette"),
    ("ctrl+q", "quit (asks first while a run is going)"),
    ("tab / shift+tab", "move focus between fields and panels"),
    ("arrows / Enter", "move in a panel / open the selected batch or community"),
    ("1 2 3 4", "show the first, second, third or fourth tab of the screen"),
)


def keys_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, meaning in KEYS:
        table.add_row(Text(key), Text(meaning))
    return table


class KeysScreen(ModalScreen[None]):
    """Closed by Esc or `?`. Single-letter keys work whenever no text field has focus."""

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="keys-dialog"):
            yield Static(Text("Keys"), id="keys-title")
            yield Static(keys_table(), id="keys-table")
            yield Static(
                Text("Single-letter keys work whenever no text field has focus.\n"
                     "Esc or ? closes this list."),
                classes="hint",
            )

    def action_close(self) -> None:
        self.dismiss(None)
