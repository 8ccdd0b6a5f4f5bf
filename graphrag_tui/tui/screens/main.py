"""The main screen: setup on the left, the live run panels on the right."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static, TabbedContent, TabPane

from ..run_state import CellState, RunState
from ..widgets.answer_panel import AnswerPanel
from ..widgets.batch_grid import BatchGrid
from ..widgets.footer import KeyFooter
from ..widgets.reduce_panel import ReducePanel
from ..widgets.retries_panel import RetriesPanel
from ..widgets.scores_panel import ScoresPanel
from ..widgets.setup_form import SetupForm
from ..widgets.status_line import StatusLine
from ..widgets.workers_panel import WorkersPanel
from .tabbed import TabbedScreen


class MainScreen(TabbedScreen):
    def __init__(self, setup: SetupForm) -> None:
        super().__init__()
        self.setup = setup
        self.state: RunState | None = None

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status-line")
        with Horizontal(id="body"):
            yield self.setup
            with Vertical(id="run-area"):
                with Horizontal(id="top-row"):
                    with Vertical(id="batches-panel", classes="panel") as batches:
                        batches.border_title = "Batches"
                        yield ProgressBar(total=1, show_eta=False, id="progress")
                        yield Static(id="batch-counts")
                        yield BatchGrid(id="batch-grid")
                    workers = WorkersPanel(id="workers-panel", classes="panel")
                    workers.border_title = "Workers"
                    yield workers
                with TabbedContent(id="tabs"):
                    with TabPane("Answer", id="tab-answer"):
                        yield AnswerPanel(id="answer-panel")
                    with TabPane("Reduce", id="tab-reduce"):
                        yield ReducePanel(id="reduce-panel")
                    with TabPane("Scores", id="tab-scores"):
                        yield ScoresPanel(id="scores-panel")
                    with TabPane("Retries", id="tab-retries"):
                        yield RetriesPanel(id="retries-panel")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#query").focus()

    def update_from(self, state: RunState, now: float) -> bool:
        """Repaint from the run state (called at a bounded rate). The tabs out of sight wait
        until they are shown or the run ends: a table of thousands of rows is not free.
        Returns False while a table still has rows to add (the next repaint adds more)."""
        self.state = state
        counts = state.cell_counts()
        done = counts["succeeded"] + counts["failed"]
        self.query_one("#progress", ProgressBar).update(total=max(len(state.cells), 1), progress=done)
        self.query_one("#batch-counts", Static).update(batch_counts(state, counts), layout=False)
        self.query_one("#batch-grid", BatchGrid).set_cells(state.cells)
        self.query_one("#workers-panel", WorkersPanel).update_from(state, now)
        active = self.query_one(TabbedContent).active
        caught_up = True
        for tab, panel in TAB_PANELS.items():
            if tab == active or not state.running:
                caught_up &= self.query_one(panel).update_from(state) is not False  # type: ignore[attr-defined]
        return caught_up

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if self.state is not None and event.pane.id in TAB_PANELS:
            self.query_one(TAB_PANELS[event.pane.id]).update_from(self.state)  # type: ignore[attr-defined]


TAB_PANELS = {
    "tab-answer": "#answer-panel",
    "tab-reduce": "#reduce-panel",
    "tab-scores": "#scores-panel",
    "tab-retries": "#retries-panel",
}


def batch_counts(state: RunState, counts: Counter[CellState]) -> Text:
    text = Text()
    parts = [
        ("queued", "#5f6b7a"),
        ("running", "#4aa8ff"),
        ("retrying", "#ff9f1c"),
        ("succeeded", "#40b95f"),
        ("failed", "#ff4d5e"),
        ("cancelled", "#8a8f98"),
    ]
    for state_name, color in parts:
        count = counts[state_name]  # type: ignore[index]
        if count or state_name in ("queued", "succeeded", "failed"):
            text.append("■ ", style=color)
            text.append(f"{state_name} {count}  ")
    if state.retry_wait is not None:
        text.append(f"waiting {state.retry_wait:g} s (Retry-After)  ", style="bold #ff9f1c")
    if state.usage_total is not None:
        text.append_text(usage_text(state))
    return text


def usage_text(state: RunState) -> Text:
    """The run's tokens so far, real against estimated prompt tokens, and the cost."""
    text = Text()
    usage = state.usage_total
    if usage is None:
        return text
    text.append("tokens ", style="dim")
    text.append(f"{usage.prompt_tokens:,} in")
    text.append(f" (est. {state.estimated_prompt_tokens:,})", style="dim")
    text.append(f" · {usage.completion_tokens:,} out")
    if state.cost is not None:
        text.append(f" · ${state.cost.total:.4f}", style="bold")
    return text
