"""Screens whose content sits in tabs: number keys switch tabs from anywhere on the screen."""

from __future__ import annotations

from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane, Tabs

MAX_TABS = 5  # the run's tabs: Answer, Reduce, Scores, Retries and (for a selection) Selection


class TabbedScreen(Screen):
    BINDINGS = [
        Binding(str(n), f"show_tab({n})", f"Tab {n}", show=False, id=f"tab-{n}", tooltip="show the tab of that number")
        for n in range(1, MAX_TABS + 1)
    ]

    def _panes(self) -> list[TabPane]:
        """The panes whose tabs show, in order (a hidden tab has no number)."""
        try:
            tabbed = self.query_one(TabbedContent)
        except NoMatches:  # e.g. a community that is not in the store: no tabs
            return []
        return [pane for pane in tabbed.query(TabPane) if not _tab_hidden(tabbed, pane)]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A number key is bound only while the screen has a tab of that number (so the
        keys screen and the footer list only those)."""
        if action == "show_tab":
            number = parameters[0]
            return isinstance(number, int) and 1 <= number <= len(self._panes())
        return True

    def action_show_tab(self, number: int) -> None:
        panes = self._panes()
        if not 1 <= number <= len(panes):
            return
        pane = panes[number - 1]
        tabbed = self.query_one(TabbedContent)
        tabbed.active = pane.id or ""
        # Focus moves into the tab shown: a focused widget left in a hidden tab would pull
        # the active tab back to itself.
        target = next((w for w in pane.query("*") if w.focusable), None)
        (target or tabbed.query_one(Tabs)).focus()


def _tab_hidden(tabbed: TabbedContent, pane: TabPane) -> bool:
    try:
        tab = tabbed.get_tab(pane.id or "")
    except (NoMatches, ValueError):
        return False
    return not tab.display
