"""Screens whose content sits in tabs: number keys switch tabs from anywhere on the screen."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane, Tabs


class TabbedScreen(Screen):
    BINDINGS = [Binding(str(n), f"show_tab({n})", f"Tab {n}", show=False) for n in range(1, 5)]

    def action_show_tab(self, number: int) -> None:
        tabbed = self.query_one(TabbedContent)
        panes = list(tabbed.query(TabPane))
        if not 1 <= number <= len(panes):
            return
        pane = panes[number - 1]
        tabbed.active = pane.id or ""
        # Focus moves into the tab shown: a focused widget left in a hidden tab would pull
        # the active tab back to itself.
        target = next((w for w in pane.query("*") if w.focusable), None)
        (target or tabbed.query_one(Tabs)).focus()
