"""The main screen: setup on the left (or one question line on top), the live run panels on the right."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, ProgressBar, TabbedContent

from ..run_state import RunState
from ..widgets.batch_grid import BatchGrid
from ..widgets.batch_status import BatchCounts, RunClock, usage_texts
from ..widgets.footer import KeyFooter
from ..widgets.run_tabs import run_tabs, show_selection_tab
from ..widgets.setup_form import SetupForm
from ..widgets.status_line import StatusLine
from ..widgets.workers_panel import WorkersPanel
from .tabbed import TabbedScreen

#: Narrower than this, the setup form starts collapsed to its question line.
NARROW = 110


class MainScreen(TabbedScreen):
    """At any size from 80×24 up: the setup form collapses to one line (by itself on a
    narrow terminal, or by its key), and a short terminal gives the tabs the height."""

    BINDINGS = [
        Binding("slash,ctrl+l", "focus_question", "Question", id="question", tooltip="back to the question"),
        Binding("ctrl+o", "toggle_setup", "Setup", id="toggle-setup",
                tooltip="collapse the setup form to its question line, or expand it"),
    ]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]

    def __init__(self, setup: SetupForm) -> None:
        super().__init__()
        self.setup = setup
        self.state: RunState | None = None
        #: The user's choice of the form's shape (its key); None: by the terminal's width.
        self.setup_collapsed: bool | None = None

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status-line")
        with Horizontal(id="body"):
            yield self.setup
            with Vertical(id="run-area"):
                with Horizontal(id="top-row"):
                    with Vertical(id="batches-panel", classes="panel") as batches:
                        batches.border_title = "Batches"
                        yield ProgressBar(total=1, show_eta=False, id="progress")
                        yield RunClock(id="run-clock")
                        yield BatchCounts(id="batch-counts")
                        yield BatchGrid(id="batch-grid")
                    workers = WorkersPanel(id="workers-panel", classes="panel")
                    workers.border_title = "Workers"
                    yield workers
                yield from run_tabs()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#query").focus()
        show_selection_tab(self.query_one(TabbedContent), None)
        self._shape_setup()

    def on_resize(self) -> None:
        self._shape_setup()

    def _shape_setup(self) -> None:
        collapsed = self.setup_collapsed
        if collapsed is None:
            collapsed = self.size.width < NARROW
        self.set_class(collapsed, "-setup-collapsed")
        # Open on a narrow terminal, the form takes the width: beside it, the panels would
        # be a few columns wide. Running collapses it again (see below).
        self.set_class(not collapsed and self.size.width < NARROW, "-setup-full")
        self.setup.collapse(collapsed)

    @property
    def is_setup_collapsed(self) -> bool:
        return self.has_class("-setup-collapsed")

    def action_toggle_setup(self) -> None:
        self.setup_collapsed = not self.is_setup_collapsed
        self._shape_setup()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_question" and isinstance(self.focused, Input):  # `/` types there
            return False
        return super().check_action(action, parameters)

    def on_setup_form_submitted(self) -> None:
        """A run from the form that hides the panels: show them (the message goes on to
        the App, which starts the run)."""
        if self.has_class("-setup-full"):
            self.setup_collapsed = True
            self._shape_setup()

    def on_setup_form_expand_requested(self, message: SetupForm.ExpandRequested) -> None:
        self.setup_collapsed = False
        self._shape_setup()
        self.call_after_refresh(message.field.focus)

    def action_focus_question(self) -> None:
        self.query_one("#query").focus()

    def update_from(self, state: RunState, now: float) -> bool:
        """Repaint from the run state (called at a bounded rate). The tabs out of sight wait
        until they are shown or the run ends: a table of thousands of rows is not free.
        Returns False while a table still has rows to add (the next repaint adds more)."""
        self.state = state
        counts = state.cell_counts()
        done = counts["succeeded"] + counts["failed"]
        self.query_one("#progress", ProgressBar).update(total=max(len(state.cells), 1), progress=done)
        self.query_one("#run-clock", RunClock).show(state, now, counts)
        self.query_one("#batch-counts", BatchCounts).show(counts, usage_texts(state))
        self.query_one("#batch-grid", BatchGrid).set_cells(state.cells)
        self.query_one("#workers-panel", WorkersPanel).update_from(state, now)
        show_selection_tab(self.query_one(TabbedContent), state)
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
    "tab-selection": "#selection-panel",
}
