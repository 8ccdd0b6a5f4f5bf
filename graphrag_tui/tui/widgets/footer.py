"""The key bar: the keys that work now, drawn as one line of text."""

from __future__ import annotations

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.events import MouseDown
from textual.screen import Screen
from textual.widget import Widget

DISABLED = Style(dim=True)


def entry_width(entry: tuple[str, str, str, bool]) -> int:
    _, display, description, _ = entry
    return cell_len(f" {display} {description} ")


class KeyFooter(Widget):
    """Textual's Footer mounts a widget per key and rebuilds them all on every bindings
    signal (one focus move sends several), laying out the whole screen each time, which a
    starting run pays for in CPU it needs. This footer shows the same keys as one line of
    text: a change of keys is a redraw. Pressing the mouse on a key presses that key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-footer--key", "key-footer--description"}

    def __init__(self) -> None:
        super().__init__()
        #: (first cell, end cell, key) of each key drawn, for the mouse.
        self._spans: list[tuple[int, int, str]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        self.refresh()

    def _keys(self) -> tuple[list[tuple[str, str, str, bool]], tuple[str, str, str, bool] | None]:
        """(key, display, description, enabled) of the keys to show, one per action, and the
        command palette's key (shown on the right). When they do not all fit, the last ones
        give way, but never the key of the keys screen (which lists them all)."""
        app, shown, seen = self.app, [], set()
        palette = None
        kept: set[int] = set()
        for _, binding, enabled, _ in self.screen.active_bindings.values():
            entry = (binding.key, app.get_key_display(binding), binding.description, enabled)
            if binding.action in ("command_palette", "app.command_palette") and app.ENABLE_COMMAND_PALETTE:
                palette = entry
            elif binding.show and binding.action not in seen:
                seen.add(binding.action)
                if binding.id == "keys":
                    kept.add(len(shown))
                shown.append(entry)
        width = self.size.width - (entry_width(palette) + 1 if palette else 0)
        while shown and sum(map(entry_width, shown)) > width:
            dropped = next((i for i in reversed(range(len(shown))) if i not in kept), None)
            if dropped is None:
                break
            del shown[dropped]
            kept = {i - (i > dropped) for i in kept}
        return shown, palette

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-footer--key")
        description_style = self.get_component_rich_style("key-footer--description")
        shown, palette = self._keys()
        text, spans = Text(no_wrap=True, overflow="crop"), []

        def add(key: str, display: str, description: str, enabled: bool) -> None:
            start = text.cell_len
            text.append(f" {display} ", key_style if enabled else key_style + DISABLED)
            text.append(f"{description} ", description_style)
            spans.append((start, text.cell_len, key))

        for entry in shown:
            add(*entry)
        if palette is not None:
            key, display, description, enabled = palette
            width = cell_len(f" {display} {description} ")
            text.append(" " * max(1, self.size.width - text.cell_len - width))
            add(key, display, description, enabled)
        self._spans = spans
        return text

    def on_mouse_down(self, event: MouseDown) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
