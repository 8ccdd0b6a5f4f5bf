"""The key reference (`?`), built from the bindings in force on the screen under it: those of
its focused widget (and the widget's containers), its own, and the app's, with the keys
the `[keymap]` config gave them. Like Textual's key panel (widgets/_key_panel.py)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

#: How the keys screen writes keys that Textual draws as symbols or abbreviations.
KEY_NAMES = {
    "escape": "Esc", "enter": "Enter", "tab": "Tab", "space": "Space", "backspace": "Backspace",
    "delete": "Delete", "insert": "Insert", "home": "Home", "end": "End", "pageup": "PgUp", "pagedown": "PgDn",
}


def key_label(binding: Binding) -> str:
    """The key as the keys screen writes it: `ctrl+q`, `Esc`, `?`, `←`."""
    if binding.key_display:
        return binding.key_display
    modifiers, _, key = binding.key.rpartition("+")
    name = KEY_NAMES.get(key) or format_key(key)
    return f"{modifiers}+{name}" if modifiers else name


def meaning(binding: Binding) -> str:
    """What the key does: the tooltip our bindings carry, else the binding's description."""
    return binding.tooltip or binding.description.lower()


def key_rows(screen: Screen) -> list[tuple[str, str, bool]]:
    """(keys, meaning, enabled) of each binding in force on `screen`, in the order Textual
    looks keys up (focused widget, its containers, the screen, the app). Keys that do the
    same in the same place share a row."""
    rows: dict[tuple[int, str], tuple[list[str], bool]] = {}
    for namespace, binding, enabled, _ in screen.active_bindings.values():
        if binding.system:
            continue
        keys, _ = rows.setdefault((id(namespace), meaning(binding)), ([], enabled))
        label = key_label(binding)
        if label not in keys:
            keys.append(label)
    return [(" ".join(keys), what, enabled) for (_, what), (keys, enabled) in rows.items()]


def bound_keys(screen: Screen, binding_id: str) -> list[str]:
    """The keys that do what binding `binding_id` does on `screen` (remapped or not)."""
    return [key_label(b) for _, b, _, _ in screen.active_bindings.values() if b.id == binding_id]


def keys_table(rows: list[tuple[str, str, bool]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for keys, what, enabled in rows:
        table.add_row(Text(keys), Text(what), style=None if enabled else "dim")
    return table


class KeysScreen(ModalScreen[None]):
    """The keys of `screen` (read when this screen is made). Closed by Esc or the keys key."""

    DEFAULT_CSS = """
    KeysScreen #keys-scroll {
        height: auto;
        max-height: 30;
    }
    """
    BINDINGS = [
        Binding("escape", "close", "Close", id="back"),
        Binding("question_mark", "close", "Close", show=False, id="keys"),
    ]

    def __init__(self, screen: Screen) -> None:
        super().__init__()
        self.rows = key_rows(screen)

    def compose(self) -> ComposeResult:
        with Vertical(id="keys-dialog"):
            yield Static(Text("Keys"), id="keys-title")
            with VerticalScroll(id="keys-scroll"):
                yield Static(keys_table(self.rows), id="keys-table")
            yield Static(
                Text("Single-letter keys work whenever no text field has focus.\n"
                     f"{' or '.join(bound_keys(self, 'back') + bound_keys(self, 'keys'))} closes this list."),
                classes="hint",
            )

    def action_close(self) -> None:
        self.dismiss(None)
