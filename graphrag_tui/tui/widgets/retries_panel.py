"""Every failed attempt: batch, attempt number, kind and message. Enter opens the batch."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ..messages import OpenBatch
from ..run_state import RunState
from .tables import LiteralTable


class RetriesPanel(Vertical):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown = 0

    def compose(self) -> ComposeResult:
        yield Static("No failed attempts.", id="retries-summary")
        yield LiteralTable("Batch", "Attempt", "Kind", "Then", "Message", id="retries-table")

    def update_from(self, state: RunState) -> None:
        table = self.query_one("#retries-table", LiteralTable)
        if len(state.failures) < self._shown:
            table.clear()
            self._shown = 0
        for number, failure in enumerate(state.failures[self._shown :], self._shown):
            batch = "reduce" if failure.batch_index is None else failure.batch_index
            then = "retry" if failure.will_retry else "gave up"
            table.add_literal_row([batch, failure.attempt, failure.kind, then, failure.message], key=str(number))
        self._shown = len(state.failures)
        retried = sum(1 for f in state.failures if f.will_retry)
        summary = f"{len(state.failures)} failed attempts, {retried} retried." if state.failures else "No failed attempts."
        self.query_one("#retries-summary", Static).update(summary)
        self._failures = state.failures

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        failure = self._failures[int(event.row_key.value or 0)]
        if failure.batch_index is not None:
            self.post_message(OpenBatch(failure.batch_index))
