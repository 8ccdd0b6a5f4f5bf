"""The tabs of a run (Answer, Reduce, Scores, Retries): the same on the live main screen and
on a recorded run's read-only view."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import TabbedContent, TabPane

from ..run_state import RunState
from .answer_panel import AnswerPanel
from .reduce_panel import ReducePanel
from .retries_panel import RetriesPanel
from .scores_panel import ScoresPanel
from .selection_panel import SelectionPanel

SELECTION_TAB = "tab-selection"


def run_tabs() -> ComposeResult:
    """Compose the run's tabs (`yield from run_tabs()` inside a screen's `compose`)."""
    with TabbedContent(id="tabs"):
        with TabPane("Answer", id="tab-answer"):
            yield AnswerPanel(id="answer-panel")
        with TabPane("Reduce", id="tab-reduce"):
            yield ReducePanel(id="reduce-panel")
        with TabPane("Scores", id="tab-scores"):
            yield ScoresPanel(id="scores-panel")
        with TabPane("Retries", id="tab-retries"):
            yield RetriesPanel(id="retries-panel")
        with TabPane("Selection", id=SELECTION_TAB):
            yield SelectionPanel(id="selection-panel")


def show_selection_tab(tabs: TabbedContent, state: RunState | None) -> None:
    """The Selection tab is there only for a run that chose its communities otherwise than
    by level (rollup, dynamic, or a rank filter): hidden, the tabs read as before."""
    shown = state is not None and (state.selection_mode not in (None, "level") or bool(state.ratings)
                                   or (state.result is not None and state.result.selection is not None))
    tab = tabs.get_tab(SELECTION_TAB)
    if tab.display != shown:
        if shown:
            tabs.show_tab(SELECTION_TAB)
        else:
            tabs.hide_tab(SELECTION_TAB)
