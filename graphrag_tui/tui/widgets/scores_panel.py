"""Usefulness of each answered batch: a sorted table and a histogram. Enter opens the batch."""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from ...engine.replies import js_number
from ..messages import OpenBatch
from ..run_state import RunState
from .tables import LiteralTable

BUCKETS = 10
BAR_WIDTH = 24


def histogram(scores: list[int | float]) -> Text:
    """Counts per 10-point bucket (0 on its own line: no help at all)."""
    counts = [0] * (BUCKETS + 1)
    for score in scores:
        if math.isfinite(score):  # (a score is 0 to 100; a damaged record's is counted at its end)
            counts[0 if score <= 0 else min(max(int((score - 1e-9) // 10), 0) + 1, BUCKETS)] += 1
    labels = ["     0"] + [f"{10 * i + 1 if i else 1:>2}-{10 * (i + 1):<3}" for i in range(BUCKETS)]
    top = max(counts) or 1
    text = Text()
    for label, count in reversed(list(zip(labels, counts, strict=True))):
        bar = "█" * round(count / top * BAR_WIDTH)
        text.append(f"{label} ", style="dim")
        text.append(bar or "·", style="green" if label.strip() != "0" else "grey50")
        text.append(f" {count}\n")
    return text


class ScoresPanel(Horizontal):
    def compose(self) -> ComposeResult:
        yield LiteralTable("Batch", "Usefulness", "Communities", id="scores-table")
        yield Static(histogram([]), id="scores-histogram")

    def update_from(self, state: RunState) -> bool:
        plan = state.plan

        def row(_: int, score: tuple[int, int | float]) -> tuple[list[object], str]:
            index, usefulness = score
            ids = ", ".join(plan.batches[index].community_ids) if plan else ""
            return [index, Text(js_number(usefulness), justify="right"), ids], str(index)

        table = self.query_one("#scores-table", LiteralTable)
        added, caught_up = table.follow(state, state.scores, row)
        if added:
            table.sort("Usefulness", key=lambda cell: float(cell.plain), reverse=True)
            self.query_one("#scores-histogram", Static).update(histogram([s for _, s in state.scores]))
        return caught_up

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None:  # (an empty table's cursor is row -1)
            self.post_message(OpenBatch(int(event.row_key.value or 0)))
