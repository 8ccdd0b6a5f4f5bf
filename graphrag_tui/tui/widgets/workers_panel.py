"""Each worker's batch, attempt and running time, the number in flight over time, and after
a 429 the limit on calls in flight against the maximum and the time spent waiting."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..run_state import RunState

BARS = " ▁▂▃▄▅▆▇█"


def in_flight_chart(history: list[int], limit: int) -> Text:
    """A sparkline of requests in flight, scaled to the concurrency limit (full = at the limit)."""
    scale = max(limit, 1)
    bars = "".join(BARS[round(min(n, scale) / scale * (len(BARS) - 1))] for n in history)
    return Text(bars or "no run yet", style="#4aa8ff" if bars else "dim")


def rate_limit_line(state: RunState, maximum: int) -> Text | None:
    """`Limit 16 of 32 · 429 waits 4.2 s` once the server has rate-limited the run, else None."""
    if not state.rate_limited and state.concurrency_limit is None:
        return None
    limit = maximum if state.concurrency_limit is None else state.concurrency_limit
    return Text.assemble(("Limit ", "bold"), f"{limit} of {maximum}", (" · 429 waits ", "bold"),
                         f"{state.rate_wait_total:.1f} s", style="#e0b050")


def workers_table(state: RunState, now: float) -> Text:
    """One line per worker: its batch, attempt and running time (idle between batches); above
    them, once the run was rate-limited, the limit and the waits."""
    text = Text(no_wrap=True, overflow="crop")
    rate_line = rate_limit_line(state, state.plan.options.concurrency if state.plan else 0)
    if rate_line is not None:
        text.append_text(rate_line)
        text.append("\n")
    text.append(f"{'Worker':<7}{'Batch':<6}{'Attempt':<8}Running", "bold")
    for worker in range(1, state.worker_count + 1):
        slot = state.workers.get(worker)
        text.append(f"\n{worker:<7}")
        if slot is None:
            text.append("idle", style="dim")
        elif slot.rate_limited:
            text.append(f"{slot.batch_index:<6}{slot.attempt:<8}")
            text.append("429 wait", style="#e0b050")
        else:
            text.append(f"{slot.batch_index:<6}{slot.attempt:<8}{now - slot.started:.1f} s")
    return text


class WorkersPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="workers-summary")
        yield Static(id="in-flight")
        yield Static(id="workers-table")

    def update_from(self, state: RunState, now: float) -> None:
        limit = state.plan.options.concurrency if state.plan else 0
        in_flight = state.in_flight
        self.query_one("#workers-summary", Static).update(
            Text.assemble(("In flight ", "bold"), f"{in_flight} / {limit}", ("  (workers: ", "dim"),
                          str(state.worker_count), (")", "dim")),
            layout=False,
        )
        history = state.in_flight_history[-max(self.content_size.width, 1) :]
        self.query_one("#in-flight", Static).update(in_flight_chart(history, limit), layout=False)
        # A fixed-height panel: a new table is a redraw, never a layout of the screen.
        self.query_one("#workers-table", Static).update(workers_table(state, now), layout=False)
