"""Every Reduce candidate in rank order with its decision, and the prompt against its budget."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ...engine.replies import js_number
from ..messages import OpenBatch
from ..run_state import Candidate, RunState
from .tables import LiteralTable

DECISIONS = {
    "selected": ("selected", "bold green"),
    "over_budget": ("over budget", "bold yellow"),
    "zero_usefulness": ("zero", "grey50"),
}


class ReducePanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("Reduce has not started.", id="reduce-summary")
        yield LiteralTable("Rank", "Batch", "Usefulness", "Decision", "Communities", id="reduce-table")

    def update_from(self, state: RunState) -> bool:
        def row(rank: int, candidate: Candidate) -> tuple[list[object], str]:
            word, style = DECISIONS[candidate.decision]
            cells = [rank + 1, candidate.batch_index, js_number(candidate.usefulness), Text(word, style=style),
                     ", ".join(candidate.community_ids)]
            return cells, str(candidate.batch_index)

        _, caught_up = self.query_one("#reduce-table", LiteralTable).follow(state, state.candidates, row)
        self.query_one("#reduce-summary", Static).update(self._summary(state), layout=False)
        return caught_up

    @staticmethod
    def _summary(state: RunState) -> Text:
        if not state.candidates:
            return Text("Reduce has not started.", style="dim")
        selected = sum(c.decision == "selected" for c in state.candidates)
        text = Text.assemble(("Selected ", "bold"), f"{selected} of {len(state.candidates)} candidates")
        if state.reduce_budget is not None:
            tokens = "—" if state.reduce_tokens is None else str(state.reduce_tokens)
            text.append(f"   reduce prompt {tokens} / {state.reduce_budget} tokens")
        return text

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None:  # (an empty table's cursor is row -1)
            self.post_message(OpenBatch(int(event.row_key.value or 0)))
