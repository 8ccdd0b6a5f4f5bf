"""The Selection tab (issue 15): how the run chose its communities. During dynamic selection's
rating wave it fills live: per level how many communities were rated and kept, then each
community with its rating and reason (the model's text, shown literally); a rollup run lists
the communities it chose. Enter opens the community view."""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ..messages import OpenCommunity
from ..run_state import RatingRow, RunState
from ..safe_text import safe_line
from .tables import LiteralTable

#: How much of a reason a row shows (the whole reason is in the JSON and the export).
REASON_LIMIT = 200


def level_counts(ratings: list[RatingRow]) -> Text:
    """One line per level: rated and kept so far."""
    rated: defaultdict[int, int] = defaultdict(int)
    kept: defaultdict[int, int] = defaultdict(int)
    for rating in ratings:
        rated[rating.level] += 1
        kept[rating.level] += rating.kept
    text = Text()
    for level in sorted(rated):
        text.append(f"level {level}: ", style="bold")
        text.append(f"{rated[level]} rated, ")
        text.append(f"{kept[level]} kept", style="green" if kept[level] else "grey50")
        text.append("\n")
    return text


def summary(state: RunState) -> Text:
    """The mode and, once the run knows it, how many communities it selected."""
    mode = state.selection_mode or "level"
    text = Text(f"Selection: {mode}", style="bold")
    result = state.result
    if result is not None and result.selection is not None:
        text.append(f" · {result.selection.selected_words}")
    elif mode == "dynamic":
        text.append(" · rating…" if state.running else "")
    text.append("\n")
    return text + level_counts(state.ratings)


class SelectionPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(Text("Selection: level"), id="selection-summary")
        yield LiteralTable("Community", "Level", "Rating", "Kept", "Votes", "Reason", id="selection-table")

    def update_from(self, state: RunState) -> bool:
        def row(_: int, rating: RatingRow) -> tuple[list[object], str]:
            kept = Text("kept", style="green") if rating.kept else Text("-", style="grey50")
            votes = ", ".join(str(v) for v in rating.votes)
            cells: list[object] = [safe_line(rating.community_id, 60), rating.level,
                                   Text(str(rating.rating), justify="right"), kept, votes,
                                   safe_line(rating.reason, REASON_LIMIT)]
            return cells, rating.community_id

        def chosen(_: int, community_id: str) -> tuple[list[object], str]:  # (its level is the store's to say)
            return [safe_line(community_id, 60), "", Text("—", justify="right"), Text("kept", style="green"), "",
                    ""], community_id

        self.query_one("#selection-summary", Static).update(summary(state))
        table = self.query_one("#selection-table", LiteralTable)
        report = state.result.selection if state.result is not None else None
        if report is not None and report.mode != "dynamic":  # (rollup rates nothing: its table stayed empty)
            _, caught_up = table.follow(state, report.selected, chosen)
        else:
            _, caught_up = table.follow(state, state.ratings, row)
        return caught_up

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.post_message(OpenCommunity(str(event.row_key.value)))
