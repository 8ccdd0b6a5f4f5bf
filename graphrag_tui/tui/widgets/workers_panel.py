"""Each worker's batch, attempt and running time, the number in flight over time, and after
a 429 the limit on calls in flight against the maximum and the time spent waiting."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from ..run_state import RunState
from .batch_status import clock_text, fitting

BARS = " ▁▂▃▄▅▆▇█"


def in_flight_chart(history: list[int], limit: int) -> Text:
    """A sparkline of requests in flight, scaled to the concurrency limit (full = at the limit)."""
    scale = max(limit, 1)
    bars = "".join(BARS[round(min(n, scale) / scale * (len(BARS) - 1))] for n in history)
    return Text(bars or "no run yet", style="#4aa8ff" if bars else "dim")


def rate_limit_lines(state: RunState, maximum: int) -> list[Text]:
    """`Limit 16 of 32 · 429 waits 4.2 s` once the server has rate-limited the run, then
    `Limit 16/32 · 429 wait 4.2 s`, `Limit 16/32 · 429 wait 4 s` and `16/32 · 429 wait 4 s`,
    which fit the 28 cells the table has at 80 and at 120 columns (a limit in the hundreds
    and a wait of hours too); none before a 429."""
    if not state.rate_limited and state.concurrency_limit is None:
        return []
    limit = maximum if state.concurrency_limit is None else state.concurrency_limit
    wait = state.rate_wait_total
    return [Text.assemble(("Limit " if word else "", "bold"), limits, (f" · 429 {waits} ", "bold"), wait_text,
                          style="#e0b050")
            for word, limits, waits, wait_text in ((True, f"{limit} of {maximum}", "waits", f"{wait:.1f} s"),
                                                   (True, f"{limit}/{maximum}", "wait", f"{wait:.1f} s"),
                                                   (True, f"{limit}/{maximum}", "wait", clock_text(wait)),
                                                   (False, f"{limit}/{maximum}", "wait", clock_text(wait)))]


#: The cells of the line of a worker whose batch waits after a 429 (`1      12    2       429 wait`).
WAITING_ROW = 29


def workers_rows(state: RunState, now: float, width: int = WAITING_ROW) -> Text:
    """One line per worker: its batch, attempt and running time (idle between batches); one
    whose batch waits after a 429 says `429 wait`, or `429` where that does not fit `width`."""
    waiting = "429 wait" if width >= WAITING_ROW else "429"
    text = Text(no_wrap=True, overflow="crop")
    text.append(f"{'Worker':<7}{'Batch':<6}{'Attempt':<8}Running", "bold")
    for worker in range(1, state.worker_count + 1):
        slot = state.workers.get(worker)
        text.append(f"\n{worker:<7}")
        if slot is None:
            text.append("idle", style="dim")
        elif slot.rate_limited:
            text.append(f"{slot.batch_index:<6}{slot.attempt:<8}")
            text.append(waiting, style="#e0b050")
        else:
            text.append(f"{slot.batch_index:<6}{slot.attempt:<8}{now - slot.started:.1f} s")
    return text


class WorkersTable(Widget):
    """The workers' lines; above them, once the run was rate-limited, the limit and the waits
    in the widest wording that fits, picked when drawn (a wrapped line pushed a worker's row
    out of the panel). A new table is a redraw, never a layout of the screen."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._rate_lines: list[Text] = []
        self._rows = Text()

    def show(self, state: RunState, now: float) -> None:
        self._rate_lines = rate_limit_lines(state, state.plan.options.concurrency if state.plan else 0)
        self._rows = workers_rows(state, now, self.size.width)
        self.refresh()

    def render(self) -> Text:
        if not self._rate_lines:
            return self._rows
        return Text("\n", no_wrap=True, overflow="crop").join([fitting(self._rate_lines, self.size.width), self._rows])


class WorkersPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="workers-summary")
        yield Static(id="in-flight")
        yield WorkersTable(id="workers-table")

    def update_from(self, state: RunState, now: float) -> None:
        limit = state.plan.options.concurrency if state.plan else 0
        summary = self.query_one("#workers-summary", Static)
        in_flight = Text.assemble(("In flight ", "bold"), f"{state.in_flight} / {limit}")
        workers = Text.assemble(in_flight, ("  (workers: ", "dim"), str(state.worker_count), (")", "dim"))
        # (a line wrapped in its one row hid the count of workers at a concurrency of 256)
        summary.update(fitting([workers, in_flight], summary.size.width), layout=False)
        history = state.in_flight_history[-max(self.content_size.width, 1) :]
        self.query_one("#in-flight", Static).update(in_flight_chart(history, limit), layout=False)
        # A fixed-height panel: a new table is a redraw, never a layout of the screen.
        self.query_one("#workers-table", WorkersTable).show(state, now)
