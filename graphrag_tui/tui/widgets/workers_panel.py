"""Each worker's batch, attempt and running time, and the number in flight over time."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..run_state import RunState
from .tables import LiteralTable


BARS = " ▁▂▃▄▅▆▇█"


def in_flight_chart(history: list[int], limit: int) -> Text:
    """A sparkline of requests in flight, scaled to the concurrency limit (full = at the limit)."""
    scale = max(limit, 1)
    bars = "".join(BARS[round(min(n, scale) / scale * (len(BARS) - 1))] for n in history)
    return Text(bars or "no run yet", style="#4aa8ff" if bars else "dim")


class WorkersPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="workers-summary")
        yield Static(id="in-flight")
        yield LiteralTable("Worker", "Batch", "Attempt", "Running", id="workers-table")

    def update_from(self, state: RunState, now: float) -> None:
        limit = state.plan.options.concurrency if state.plan else 0
        in_flight = len(state.workers)
        self.query_one("#workers-summary", Static).update(
            Text.assemble(("In flight ", "bold"), f"{in_flight} / {limit}", ("  (workers: ", "dim"),
                          str(state.worker_count), (")", "dim")),
            layout=False,
        )
        history = state.in_flight_history[-max(self.content_size.width, 1) :]
        self.query_one("#in-flight", Static).update(in_flight_chart(history, limit), layout=False)
        table = self.query_one("#workers-table", LiteralTable)
        if table.row_count != state.worker_count:
            table.clear()
            for worker in range(1, state.worker_count + 1):
                table.add_literal_row(["", "", "", ""], key=str(worker))
        for worker in range(1, state.worker_count + 1):
            slot = state.workers.get(worker)
            cells = (worker, "idle", "", "") if slot is None else (
                worker, slot.batch_index, slot.attempt, f"{now - slot.started:.1f} s")
            for column, value in zip(table.columns, cells):
                table.update_cell(str(worker), column, Text(str(value)))
