"""The Runs screen (`h`): past runs from the run history, newest first, narrowed by a text
filter. Enter opens a run read-only in the usual panels; keys re-run its failed batches,
resume it, export or delete it; Space marks a run and `c` compares two.

The history is read in a thread worker (SQLite blocks), never on the UI thread. Every
text of a run (question, namespace, model, store) is shown through safe_text."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from ...durations import duration_text
from ...history import RESUMABLE, RunHistory, RunSummary
from ...session.run_failure import failure_words
from ..safe_text import one_line
from ..stored_runs import duration_s, scope_text, started_text, tokens_text
from ..widgets.clean_input import CleanInput
from ..widgets.footer import KeyFooter

#: Seconds of no typing in the filter before the list follows it.
FILTER_PAUSE = 0.15
#: The table shows at most this many runs (newest first); the filter reaches the others.
SHOWN_RUNS = 200
STATUS_STYLES = {
    "completed": "green", "partial": "yellow", "no_results": "grey70", "failed": "red", "cancelled": "magenta",
    "interrupted": "bold magenta", "running": "cyan",
}
#: The question comes early: on a narrow terminal the columns on the right scroll out of sight
#: (the line under the table says everything of the highlighted run).
COLUMNS = ("", "Started (UTC)", "Status", "OK", "Failed", "Question", "Model", "Scope", "Tokens", "Duration", "Run")
#: Keys that act on a run: they type into the filter while it has focus.
RUN_ACTIONS = ("open_run", "mark", "compare", "rerun_failed", "resume_run", "export", "delete_run", "filter")


def may_rerun(summary: RunSummary) -> bool:
    """Whether a run has batches to send again: failed ones, or some never finished."""
    return summary.failed_batch_count > 0 or summary.status in ("cancelled", "interrupted", "failed")


class RunsScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "close", "Back", id="back", tooltip="back to the screen before"),
        Binding("slash", "filter", "Filter", id="runs-filter", tooltip="type to narrow the list of runs"),
        Binding("space", "mark", "Mark", id="mark-run", tooltip="mark a run to compare (two at most)"),
        Binding("c", "compare", "Compare", id="compare-runs",
                tooltip="compare the marked run with the highlighted one (or the two marked)"),
        Binding("f", "rerun_failed", "Re-run failed", id="rerun-failed",
                tooltip="re-run the failed and cancelled batches of a run (choose the model)"),
        Binding("u", "resume_run", "Resume", id="resume-run", tooltip="resume an interrupted or cancelled run"),
        Binding("e", "export", "Export", id="export", tooltip="export the run (JSON and Markdown report)"),
        Binding("d", "delete_run", "Delete", id="delete-run", tooltip="delete the run from the history"),
    ]
    AUTO_FOCUS = "#runs-table"

    @dataclass
    class Listed(Message):
        runs: list[RunSummary]
        succeeded: dict[str, int]
        error: str | None
        #: Which request it answers: an answer to an older filter is dropped.
        request: int = 0
        #: Why each run left out could not be read (its row is damaged).
        damaged: tuple[str, ...] = ()

    def __init__(self, history: Path | None) -> None:
        super().__init__()
        self.history = history
        self.runs: dict[str, RunSummary] = {}
        #: Why the runs left out of the list could not be read.
        self.damaged: tuple[str, ...] = ()
        self.succeeded: dict[str, int] = {}
        #: Marked for comparison, in the order marked.
        self.marked: list[str] = []
        #: How many times a listing arrived (tests wait for it).
        self.listings = 0
        self.more = False
        self.error: str | None = None
        self._requests = 0
        #: The filter of the latest listing asked for, and of the one shown.
        self._asked_filter: str | None = None
        self._shown_filter: str | None = None
        self._pending_filter: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="runs-title")
        yield CleanInput(placeholder="Filter: part of a question, namespace, model, status or run id",
                    id="runs-filter-input")
        table: DataTable[object] = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        for label in COLUMNS:
            table.add_column(Text(label), key=label or "mark", width=1 if not label else None)
        yield table
        yield Static(id="runs-detail")
        yield KeyFooter()

    def _title(self) -> Text:
        text = Text.assemble(("Run history", "bold"))
        if self.history is not None:
            text.append("  ")
            text.append(one_line(str(self.history)), style="dim")
        return text

    # -- listing (off the UI thread) ---------------------------------------------------------

    def on_mount(self) -> None:
        self.reload()

    def reload(self) -> None:
        text = self.query_one("#runs-filter-input", Input).value.strip()
        self._requests += 1
        request, self._asked_filter = self._requests, text
        self.run_worker(lambda: self._list(text, request), thread=True, group="runs-list", exit_on_error=False)

    def _list(self, text: str, request: int) -> None:
        if self.history is None:
            self.post_message(self.Listed([], {}, "Runs are not recorded in this session (no run history).", request))
            return
        damaged: list[str] = []
        try:
            history = RunHistory(self.history)
            runs = history.list_runs(limit=SHOWN_RUNS + 1, text=text or None, on_damaged=damaged.append)
            succeeded = history.succeeded_batches([r.run_id for r in runs[:SHOWN_RUNS]])
        except Exception as error:
            self.post_message(self.Listed([], {}, failure_words(error), request))
            return
        self.post_message(self.Listed(runs, succeeded, None, request, tuple(damaged)))

    @on(Listed)
    def _listed(self, message: Listed) -> None:
        message.stop()
        if message.request != self._requests:  # the filter changed since: its own answer comes
            return
        self.more = len(message.runs) > SHOWN_RUNS
        self.runs = {}
        for summary in message.runs[:SHOWN_RUNS]:  # a run id twice (a history without its key): its first row
            self.runs.setdefault(summary.run_id, summary)
        self.succeeded = message.succeeded
        self.error = message.error
        newly_damaged = message.damaged and message.damaged != self.damaged  # said once, not at every relisting
        self.damaged = message.damaged
        if self._asked_filter == self._shown_filter:  # a relisting (a run deleted): marks of runs gone go
            self.marked = [m for m in self.marked if m in self.runs]  # (another filter keeps them: mark, filter, c)
        table = self.query_one("#runs-table", DataTable)
        current, row = self.highlighted_id, table.cursor_row
        table.clear()
        for summary in self.runs.values():
            table.add_row(*self._cells(summary), key=summary.run_id)
        if current in self.runs:
            table.move_cursor(row=table.get_row_index(current))
        elif self._asked_filter == self._shown_filter and self.runs:  # deleted: its neighbour, not the top
            table.move_cursor(row=min(row, len(self.runs) - 1))
        self._shown_filter = self._asked_filter
        self._show_detail()
        if newly_damaged:
            count = len(message.damaged)
            self.notify(f"{count} run{'s' * (count != 1)} of the history cannot be read and {'are' if count != 1 else 'is'} "
                        f"not listed: {one_line(message.damaged[0], 300)}", severity="warning", timeout=10)
        self.listings += 1

    def _cells(self, r: RunSummary) -> list[Text]:
        mark = str(self.marked.index(r.run_id) + 1) if r.run_id in self.marked else ""
        ok = self.succeeded.get(r.run_id, 0)
        return [
            Text(mark, style="bold reverse" if mark else ""),
            Text(started_text(r.started_at)[:16]),
            Text(r.status, style=STATUS_STYLES.get(r.status, "")),
            Text(f"{ok}/{r.batch_count}", justify="right"),
            Text(str(r.failed_batch_count), style="red" if r.failed_batch_count else "", justify="right"),
            Text(one_line(r.question, 40)),
            Text(one_line(r.model or "—", 24)),
            Text(one_line(scope_text(r), 24)),
            Text(tokens_text(r.usage_total), justify="right"),
            Text(duration_text(duration_s(r.started_at, r.finished_at)), justify="right"),
            Text(r.run_id),
        ]

    # -- what is highlighted -----------------------------------------------------------------

    @property
    def highlighted_id(self) -> str | None:
        table = self.query_one("#runs-table", DataTable)
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    @property
    def highlighted(self) -> RunSummary | None:
        run_id = self.highlighted_id
        return self.runs.get(run_id) if run_id is not None else None

    @on(DataTable.RowHighlighted, "#runs-table")
    def _moved(self) -> None:
        self._show_detail()
        self.refresh_bindings()

    def _show_detail(self) -> None:
        detail = self.query_one("#runs-detail", Static)
        if self.error is not None:
            detail.update(Text(one_line(self.error), style="bold red"))
            return
        r = self.highlighted
        if r is None and self.damaged:  # (a toast says it too)
            detail.update(Text(one_line(self.damaged[0]), style="bold red"))
            return
        if r is None:
            filtered = self.query_one("#runs-filter-input", Input).value.strip()
            detail.update(Text("No run matches the filter." if filtered else "No run is recorded yet.", style="dim"))
            return
        text = Text.assemble(("Run ", "dim"), (r.run_id, "bold"))
        if r.parent_run_id:
            text.append("  re-run of ", style="dim")
            text.append(r.parent_run_id)
        text.append("  store ", style="dim")
        text.append(one_line(r.store))
        text.append("\n")
        text.append(one_line(r.question), style="bold")
        if self.more:
            text.append(f"\nThe {SHOWN_RUNS} newest matching runs are listed: type in the filter to narrow.",
                        style="dim")
        if self.marked:
            text.append("\nMarked to compare: ", style="dim")
            text.append(", ".join(self.marked))
        detail.update(text)

    # -- keys --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in RUN_ACTIONS and isinstance(self.focused, Input):
            return False  # letters type into the filter
        r = self.highlighted if action in RUN_ACTIONS else None
        if action in ("mark", "compare", "rerun_failed", "resume_run", "export", "delete_run") and r is None:
            return False  # no run listed: only the keys that still apply are shown
        if action == "resume_run" and r is not None and r.status not in RESUMABLE:
            return False
        if action == "rerun_failed" and r is not None and not may_rerun(r):
            return False
        return True  # (`c` with nothing marked says how to mark: the app's `c` would copy the row)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_filter(self) -> None:
        self.query_one("#runs-filter-input", Input).focus()

    @on(Input.Changed, "#runs-filter-input")
    def _filter_changed(self) -> None:
        """The list follows the filter once typing pauses (each listing refills the table)."""
        if self._pending_filter is not None:
            self._pending_filter.stop()
        self._pending_filter = self.set_timer(FILTER_PAUSE, self.reload)

    @on(Input.Submitted, "#runs-filter-input")
    def _filter_done(self) -> None:
        self.query_one("#runs-table", DataTable).focus()

    def on_key(self, event: events.Key) -> None:
        if event.key == "down" and isinstance(self.focused, Input):
            self.query_one("#runs-table", DataTable).focus()

    @on(DataTable.RowSelected, "#runs-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_run()

    def action_open_run(self) -> None:
        r = self.highlighted
        if r is not None:
            self.app.open_stored_run(r.run_id)  # type: ignore[attr-defined]

    def action_mark(self) -> None:
        r = self.highlighted
        if r is None:
            return
        if r.run_id in self.marked:
            self.marked.remove(r.run_id)
        else:
            self.marked = [*self.marked, r.run_id][-2:]
        self._repaint_marks()

    def _repaint_marks(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        for run_id in self.runs:
            mark = str(self.marked.index(run_id) + 1) if run_id in self.marked else ""
            table.update_cell(run_id, "mark", Text(mark, style="bold reverse" if mark else ""))
        self._show_detail()
        self.refresh_bindings()

    def action_compare(self) -> None:
        r = self.highlighted
        pair = list(self.marked)
        if len(pair) == 1 and r is not None and r.run_id != pair[0]:
            pair.append(r.run_id)
        if len(pair) != 2:
            self.app.notify("Mark a run with Space, then press c on another run (or mark two).", severity="warning")
            return
        self.app.compare_runs(pair[0], pair[1])  # type: ignore[attr-defined]

    def action_rerun_failed(self) -> None:
        if (r := self.highlighted) is not None:
            self.app.rerun_stored_run(r.run_id)  # type: ignore[attr-defined]

    def action_resume_run(self) -> None:
        if (r := self.highlighted) is not None:
            self.app.resume_stored_run(r.run_id)  # type: ignore[attr-defined]

    def action_export(self) -> None:
        if (r := self.highlighted) is not None:
            self.app.export_stored_run(r.run_id)  # type: ignore[attr-defined]

    def action_delete_run(self) -> None:
        if (r := self.highlighted) is not None:
            self.app.delete_stored_run(r)  # type: ignore[attr-defined]
