"""The key footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its keys on every bindings signal, and one focus move
    sends several. Each rebuild mounts a dozen widgets and lays out the screen, which a
    starting run pays for in CPU it needs. This footer checks at most once per refresh,
    and rebuilds only when the keys it would show differ from those shown."""

    _shown: tuple | None = None
    _check_pending = False

    @staticmethod
    def _keys(screen: Screen) -> tuple:
        return tuple((binding, enabled, tooltip) for _, binding, enabled, tooltip in screen.active_bindings.values()
                     if binding.show or binding.key == screen.app.COMMAND_PALETTE_BINDING)

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if not self._check_pending:
            self._check_pending = True
            self.call_later(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._check_pending = False
        if self.is_attached and self._keys(self.screen) != self._shown:  # not attached: its screen closed
            await self.recompose()

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = self._keys(self.screen)
        yield from super().compose()
