"""Every failed attempt: batch, attempt number, kind and message. Enter opens the batch.

The table cuts long messages; the line under it shows the focused row's cells in full."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ..messages import OpenBatch
from ..run_state import FailedAttempt, RunState
from ..safe_text import clean
from .setup_form import in_form_terms
from .tables import LiteralTable


def failure_text(failure: FailedAttempt) -> Text:
    """One failed attempt in full: where, which attempt, its kind, what followed, the message."""
    where = "Reduce" if failure.batch_index is None else f"Batch {failure.batch_index}"
    then = "retried" if failure.will_retry else "gave up"
    return Text.assemble((f"{where}, attempt {failure.attempt}: ", "bold"), (failure.kind, "bold red"),
                         f" ({then})\n", clean(failure.message))


class RetriesPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("No failed attempts.", id="retries-summary")
        yield LiteralTable("Batch", "Attempt", "Kind", "Then", "Message", id="retries-table")
        yield Static(id="retries-detail")

    def update_from(self, state: RunState) -> bool:
        def row(number: int, failure: FailedAttempt) -> tuple[list[object], str]:
            batch = "reduce" if failure.batch_index is None else failure.batch_index
            then = "retry" if failure.will_retry else "gave up"
            return [batch, failure.attempt, failure.kind, then, in_form_terms(failure.message)], str(number)

        _, caught_up = self.query_one("#retries-table", LiteralTable).follow(state, state.failures, row)
        retried = sum(1 for f in state.failures if f.will_retry)
        summary = f"{len(state.failures)} failed attempts, {retried} retried." if state.failures else "No failed attempts."
        self.query_one("#retries-summary", Static).update(summary, layout=False)
        self._failures = state.failures
        return caught_up

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key is None:  # (a key that moves the cursor of an empty table: row -1)
            return
        index = int(event.row_key.value or 0)
        if 0 <= index < len(self._failures):
            self.query_one("#retries-detail", Static).update(failure_text(self._failures[index]))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is None:
            return
        failure = self._failures[int(event.row_key.value or 0)]
        if failure.batch_index is not None:
            self.post_message(OpenBatch(failure.batch_index))
