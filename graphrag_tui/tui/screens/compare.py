"""Two recorded runs side by side: both answers; each batch's status and usefulness with the
differences marked; the communities each answer rests on, and which are in one only. This is
how an analyst sees what a seed, a level or a model changes.

Batches are paired by index (session/compare.py). When the two runs planned different
batches (another seed, level or store), a row says its content differs: then the
communities tell more."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static, TabbedContent, TabPane

from ...collector import collector_paused
from ...engine.replies import js_number
from ...history import RunHistory, StoredRun
from ...session.compare import RunComparison, compare_runs
from ...session.run_failure import failure_words
from ...store import CommunityStore
from ..model_markdown import ModelMarkdown
from ..safe_text import clean, markdown_cut, one_line
from ..stored_runs import scope_text, started_text
from ..widgets.footer import KeyFooter
from ..widgets.row_table import Cell, RowTable
from .community import CommunityScreen
from .run_view import StoreAtHand, close_store, open_run_store
from .tabbed import TabbedScreen

DIFFERS = "bold yellow"


@dataclass(frozen=True)
class BatchDiff:
    index: int
    a_status: str | None
    a_usefulness: str
    b_status: str | None
    b_usefulness: str
    #: What differs: `content` (another batch), `status`, `usefulness`; empty when the same.
    differences: tuple[str, ...]


@dataclass(frozen=True)
class CommunityRow:
    community_id: str
    in_a: bool
    in_b: bool


def _usefulness(value: int | float | None) -> str:
    return "—" if value is None else js_number(value)


def batch_diffs(comparison: RunComparison) -> list[BatchDiff]:
    """Each batch pair in words, with what differs."""
    rows = []
    for pair in comparison.batches:
        one, two = pair.left, pair.right
        differences = []
        if not pair.same_content:
            differences.append("content")
        if (one and one.status) != (two and two.status):
            differences.append("status")
        if (one and one.usefulness) != (two and two.usefulness):
            differences.append("usefulness")
        rows.append(BatchDiff(
            pair.index, one.status if one else None, _usefulness(one.usefulness if one else None),
            two.status if two else None, _usefulness(two.usefulness if two else None), tuple(differences),
        ))
    return rows


def community_rows(comparison: RunComparison) -> list[CommunityRow]:
    """The communities either answer rests on: A's in order, then those only B's rests on."""
    only_a, only_b = set(comparison.cited_by_left_only), set(comparison.cited_by_right_only)
    ordered = (*comparison.left_rests_on, *comparison.cited_by_right_only)
    return [CommunityRow(c, c not in only_b, c not in only_a) for c in ordered]


def _batch_row(row: BatchDiff) -> tuple[list[Cell], str]:
    """Plain strings for a row that does not differ (most rows of two large runs: cheap)."""
    a_status, b_status = row.a_status or "—", row.b_status or "—"
    if not row.differences:
        return ["", str(row.index), a_status, row.a_usefulness, b_status, row.b_usefulness, ""], str(row.index)
    status = DIFFERS if "status" in row.differences else ""
    usefulness = DIFFERS if "usefulness" in row.differences else ""
    return [
        Text("≠", style=DIFFERS), str(row.index), Text(a_status, style=status), Text(row.a_usefulness, style=usefulness),
        Text(b_status, style=status), Text(row.b_usefulness, style=usefulness),
        Text(", ".join(row.differences), style=DIFFERS),
    ], str(row.index)


def _community_row(row: CommunityRow) -> tuple[list[Cell], str]:
    where = "both" if row.in_a and row.in_b else ("only A" if row.in_a else "only B")
    if where == "both":
        return ["", one_line(row.community_id), "✓", "✓", where], row.community_id
    return [Text("≠", style=DIFFERS), one_line(row.community_id), "✓" if row.in_a else "", "✓" if row.in_b else "",
            Text(where, style=DIFFERS)], row.community_id


def batches_summary(rows: list[BatchDiff]) -> Text:
    differing = [r for r in rows if r.differences]
    text = Text(f"{len(rows)} batches: ")
    if not differing:
        text.append("no difference", style="bold green")
        return text
    text.append(f"{len(differing)} differ", style=DIFFERS)
    kinds = [(k, sum(k in r.differences for r in rows)) for k in ("status", "usefulness", "content")]
    text.append(" (" + ", ".join(f"{k} {n}" for k, n in kinds if n) + ")")
    return text


def communities_summary(comparison: RunComparison, rows: list[CommunityRow]) -> Text:
    both = sum(r.in_a and r.in_b for r in rows)
    only_a = sum(r.in_a and not r.in_b for r in rows)
    only_b = sum(r.in_b and not r.in_a for r in rows)
    return Text(
        f"A rests on {len(comparison.left_rests_on)} communities, B on {len(comparison.right_rests_on)}: "
        f"{both} in both, {only_a} only in A, {only_b} only in B"
    )


def run_line(label: str, stored: StoredRun) -> Text:
    s = stored.summary
    text = Text.assemble((f" {label} ", "bold reverse"), " ", (s.run_id, "bold"), "  ", (s.status, "bold"))
    text.append("\n")
    text.append(one_line(f"{s.model or '—'} · {scope_text(s)} · seed {'—' if stored.seed is None else stored.seed}"
                         f" · {started_text(s.started_at)[:16]}"))
    text.append("\n")
    text.append(one_line(s.question), style="italic")
    return text


@dataclass(frozen=True)
class Tables:
    """The comparison's tables and their summaries, made in the thread that read the runs
    (two 20,000-batch runs make 40,000 rows: a second of the screen's loop otherwise)."""

    batches_summary: Text
    batches: list[tuple[list[Cell], str]]
    communities_summary: Text
    communities: list[tuple[list[Cell], str]]


def compared_tables(a: StoredRun, b: StoredRun) -> Tables:
    comparison = compare_runs(a, b)
    diffs, rows = batch_diffs(comparison), community_rows(comparison)
    return Tables(batches_summary(diffs), [_batch_row(row) for row in diffs],
                  communities_summary(comparison, rows), [_community_row(row) for row in rows])


class CompareScreen(TabbedScreen):
    BINDINGS = [Binding("escape", "close", "Back", id="back", tooltip="back to the screen before")]

    @dataclass
    class Loaded(Message):
        runs: tuple[StoredRun, StoredRun] | None
        at_hand: StoreAtHand | None
        error: str | None
        tables: Tables | None = None

    def __init__(self, history: Path, run_a: str, run_b: str, app_store: CommunityStore | None) -> None:
        super().__init__()
        self.history, self.run_ids, self.app_store = history, (run_a, run_b), app_store
        self.runs: tuple[StoredRun, StoredRun] | None = None
        self.at_hand: StoreAtHand | None = None
        self.error: str | None = None
        self.loaded = False

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False, group="compare")

    def _read(self) -> None:
        try:
            history = RunHistory(self.history)
            runs = (history.load(self.run_ids[0]), history.load(self.run_ids[1]))
            with collector_paused():  # (with two large runs in memory, each collection walked them: 1.3 s, not 0.2)
                tables = compared_tables(*runs)
        except Exception as error:  # (a bug making the tables is said too: the screen never stays "Reading…")
            self.post_message(self.Loaded(None, None, failure_words(error)))
            return
        self.post_message(self.Loaded(runs, open_run_store(runs[0], self.app_store), None, tables))

    @on(Loaded)
    async def _loaded(self, message: Loaded) -> None:
        message.stop()
        if not self.is_attached:
            close_store(message.at_hand)
            return
        self.runs, self.at_hand, self.error = message.runs, message.at_hand, message.error
        await self.recompose()
        if message.tables is not None:
            self._fill_tables(message.tables)
        self.loaded = True

    def on_unmount(self) -> None:
        close_store(self.at_hand)

    def compose(self) -> ComposeResult:
        if self.runs is None:
            if self.error is None:
                yield Static(Text("Reading the two runs…", style="dim"), id="compare-loading")
            else:
                yield Static(Text(one_line(self.error), style="bold red"), id="compare-missing")
            yield KeyFooter()
            return
        a, b = self.runs
        with Horizontal(id="compare-header"):
            yield Static(run_line("A", a), id="compare-a")
            yield Static(run_line("B", b), id="compare-b")
        with TabbedContent(id="compare-tabs"):
            with TabPane("Answers", id="tab-answers"), Horizontal():
                for label, stored in (("a", a), ("b", b)):
                    with VerticalScroll(id=f"answer-{label}", classes="compare-answer"):
                        result = stored.result
                        yield Static(Text(result.status.replace("_", " ").upper(), style="bold"))
                        # One widget, drawn by Rich: a long answer (an extractive run's list of
                        # hundreds of items) made Textual's Markdown mount a widget per block,
                        # which held the screen 1.2 s per answer and every layout after.
                        yield Static(ModelMarkdown(markdown_cut(clean(result.answer or "(no answer)"))))
            with TabPane("Batches", id="tab-batches"), Vertical():
                yield Static(id="batches-summary")
                yield RowTable("", "Batch", "A status", "A usefulness", "B status", "B usefulness", "Differs in",
                               right={1, 3, 5}, id="compare-batches")
            with TabPane("Communities", id="tab-communities"), Vertical():
                yield Static(id="communities-summary")
                yield RowTable("", "Community", "A", "B", "In", id="compare-communities")
        yield KeyFooter()

    def _fill_tables(self, tables: Tables) -> None:
        self.query_one("#batches-summary", Static).update(tables.batches_summary)
        self.query_one("#compare-batches", RowTable).set_rows(tables.batches)
        self.query_one("#communities-summary", Static).update(tables.communities_summary)
        self.query_one("#compare-communities", RowTable).set_rows(tables.communities)

    @on(RowTable.RowSelected, "#compare-communities")
    def _open_community(self, event: RowTable.RowSelected) -> None:
        event.stop()
        store = self.at_hand.store if self.at_hand is not None else None
        if store is None:
            note = self.at_hand.note if self.at_hand is not None else None
            self.app.notify(one_line(note or "The run's store is not at hand."), title="No store",
                            severity="warning", markup=False)
            return
        self.app.push_screen(CommunityScreen(store, event.key))

    def action_close(self) -> None:
        self.dismiss()

