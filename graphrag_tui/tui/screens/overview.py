"""The overview of a namespace: per level communities, leaves and claims; documents,
chunks and entities; the largest communities; claims assigned to no community; a histogram
of summary sizes in tokens; and the Map batches a run would make per level at the current
budgets (planned without a question).

The figures are read in a thread worker, then the batch counts level by level (planning a
large level takes seconds): each arrives as a message and fills its line.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from ...engine import Level, SearchOptions
from ...session.explore import ExploreSession
from ...session.run_failure import failure_words
from ...store.explore import Overview
from ..safe_text import one_line
from ..widgets.footer import KeyFooter

BAR_WIDTH = 30
#: Levels the overview lists and plans: GraphRAG makes a handful; a damaged store with
#: thousands (one community per level) froze the screen for minutes, a line per level.
MAX_LEVELS = 100


def overview_text(overview: Overview) -> Text:
    text = Text.assemble(("Namespace ", "bold"), (one_line(overview.namespace), "bold"), "\n\n")
    text.append(f"{overview.communities} communities, {overview.leaves} leaves, {overview.claims} claims "
                f"({overview.unassigned_claims} assigned to no community)\n")
    text.append(f"{overview.documents} documents, {overview.chunks} chunks, {overview.entities} entities\n\n")
    text.append("Per level\n", style="bold")
    text.append(f"  {'level':>5}  {'communities':>11}  {'leaves':>7}  {'claims below':>12}\n", style="dim")
    for figures in overview.levels[:MAX_LEVELS]:
        text.append(f"  {figures.level:>5}  {figures.communities:>11}  {figures.leaves:>7}  {figures.claims:>12}\n")
    if len(overview.levels) > MAX_LEVELS:
        text.append(f"  … and {len(overview.levels) - MAX_LEVELS:,} more levels\n", style="dim italic")
    text.append("\nLargest communities (by leaves below)\n", style="bold")
    for community, leaves in zip(overview.largest, overview.largest_leaf_counts, strict=True):
        text.append(f"  {leaves:>6} {'leaf  ' if leaves == 1 else 'leaves'}  ", style="dim")
        text.append(f"L{community.level} {one_line(community.name or community.id, 50)}")
        text.append(f"  {one_line(community.id)}\n", style="dim")
    text.append("\nSummary sizes (tokens)\n", style="bold")
    peak = max((b.count for b in overview.token_histogram), default=0)
    for bin_ in overview.token_histogram:
        span = f"{bin_.low}" if bin_.low == bin_.high else f"{bin_.low}-{bin_.high}"
        bar = "█" * (round(BAR_WIDTH * bin_.count / peak) if peak else 0)
        text.append(f"  {span:>11}  {bin_.count:>7}  ")
        text.append(bar + "\n", style="cyan")
    return text


class OverviewScreen(Screen):
    BINDINGS = [Binding("escape", "close", "Back", id="overview-back", tooltip="back to the screen before")]

    def __init__(self, explore: ExploreSession, options: SearchOptions) -> None:
        super().__init__()
        self.explore = explore
        self.options = options
        self.overview: Overview | None = None
        #: Level -> (summaries, batches), or an error, as they arrive.
        self.batches: dict[Level, tuple[int, int] | str] = {}
        self.levels: list[Level] = ["leaf", *sorted(explore.levels)[:MAX_LEVELS]]
        self.unplanned_levels = max(0, len(explore.levels) - MAX_LEVELS)
        self.loaded = False

    @dataclass
    class Read(Message):
        overview: Overview | None
        error: str | None

    @dataclass
    class Planned(Message):
        level: Level
        counts: tuple[int, int] | None
        error: str | None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="overview-scroll"):
            yield Static(Text("Reading the namespace…", style="dim"), id="overview-text")
            yield Static(self._batches_text(), id="overview-batches")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False, group="overview")

    def _read(self) -> None:
        try:
            self.post_message(self.Read(self.explore.overview(), None))
        except Exception as error:
            self.post_message(self.Read(None, failure_words(error)))
            return
        for level in self.levels:
            if not self.is_attached:
                return
            try:
                self.post_message(self.Planned(level, self.explore.map_batches(level, self.options), None))
            except Exception as error:
                self.post_message(self.Planned(level, None, failure_words(error)))

    @on(Read)
    def _read_done(self, message: Read) -> None:
        message.stop()
        self.overview = message.overview
        self.query_one("#overview-text", Static).update(
            overview_text(message.overview) if message.overview is not None
            else Text(f"Cannot read the namespace: {one_line(message.error)}", style="bold red"))
        self.loaded = message.overview is None

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        message.stop()
        self.batches[message.level] = message.counts if message.counts is not None else one_line(message.error)
        self.query_one("#overview-batches", Static).update(self._batches_text())
        self.loaded = len(self.batches) == len(self.levels)

    def _batches_text(self) -> Text:
        options = self.options
        text = Text("\nMap batches at the current budgets", style="bold")
        text.append(f" (map budget {options.map_budget}, reserve {options.map_reserve}; no question)\n", style="dim")
        for level in self.levels:
            counts = self.batches.get(level)
            label = "leaves" if level == "leaf" else f"level {level}"
            if counts is None:
                text.append(f"  {label:>8}  planning…\n", style="dim")
            elif isinstance(counts, str):
                text.append(f"  {label:>8}  {counts}\n", style="red")
            else:
                text.append(f"  {label:>8}  {counts[1]:>7} batches  ({counts[0]} summaries)\n")
        if self.unplanned_levels:
            text.append(f"  … and {self.unplanned_levels:,} more levels, not planned here\n", style="dim italic")
        return text

    def action_close(self) -> None:
        self.dismiss()
