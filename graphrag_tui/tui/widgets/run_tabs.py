"""The tabs of a run (Answer, Reduce, Scores, Retries): the same on the live main screen and
on a recorded run's read-only view."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import TabbedContent, TabPane

from .answer_panel import AnswerPanel
from .reduce_panel import ReducePanel
from .retries_panel import RetriesPanel
from .scores_panel import ScoresPanel


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
