"""Drill-down into one community: hierarchy, summary, members, claims and source chunks.

Every string shown here comes from the store and is untrusted: it is rendered only as
`rich.text.Text` built from `safe_text` (never parsed as markup).

The store is read in a thread worker, never on the UI thread: the screen shows a loading
line, the worker posts `CommunityScreen.Loaded`, and its handler composes the view.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from ...errors import InputError
from ...session.run_failure import failure_words
from ...store.explore import MemberRef, members_view
from ...store.store import ChunkDetail, ClaimDetail, CommunityDetail, CommunityStore
from ..messages import OpenCommunity, OpenRecord, ShowInTree
from ..passages import Passage
from ..provenance_text import (
    APPROXIMATE_STYLE,
    QUOTED_STYLE,
    chunk_passages,
    highlighted_chunk,
    passage_note,
    sources_legend,
)
from ..safe_text import one_line, safe_cut, safe_line
from ..widgets.find_bar import Findable, FindBar, MarkableStatic, scroll_to_line
from ..widgets.footer import KeyFooter
from ..widgets.option_list import RoomyOptionList
from .tabbed import TabbedScreen

#: The Sources tab shows at most this many chunks (one widget each); every chunk stays
#: reachable from its claim in the Claims tab.
MAX_SOURCE_WIDGETS = 200
#: Long lists (descendant leaves, claims of a root community) are cut here: building
#: tens of thousands of rows would stall the screen. The counts say so.
MAX_ROWS = 2000


def _count(total: int) -> str:
    return str(total) if total <= MAX_ROWS else f"first {MAX_ROWS} of {total}"


def chunk_text(chunk: ChunkDetail, passages: dict[str, Passage] | None = None, *, legend: bool = True) -> Text:
    """A source chunk: its id and document title on one line, then its content with the
    passages of the claims citing it marked, then (`legend`) a line saying how many."""
    text = highlighted_chunk(chunk, (passages or {}).values())
    if legend:
        text.append("\n")
        text.append_text(sources_legend((passages or {}).values()))
    return text


def read_passages(detail: CommunityDetail) -> dict[str, dict[str, Passage]]:
    """Chunk id -> {claim id: its passage in that chunk}, for the claims of the community."""
    by_chunk: dict[str, list[ClaimDetail]] = {}
    for claim in detail.claims:
        if claim.chunk_id is not None:
            by_chunk.setdefault(claim.chunk_id, []).append(claim)
    return {chunk.id: chunk_passages(chunk, by_chunk.get(chunk.id, [])) for chunk in detail.chunks}


def claim_text(claim: ClaimDetail) -> Text:
    """A claim on one line: subject (-> object): description."""
    text = Text.assemble((one_line(claim.subject), "bold"))
    if claim.object is not None:
        text.append(" -> ")
        text.append(one_line(claim.object), "bold")
    text.append(": ")
    text.append(one_line(claim.description))
    return text


def report_text(detail: CommunityDetail) -> Text | None:
    """What a GraphRAG report says beyond its text: its rank and why, then its findings
    (issue 15); None when the store keeps none of them. Store text, shown literally."""
    if detail.rank is None and not detail.rating_explanation and not detail.findings:
        return None
    text = Text()
    text.append("Rank ", style="dim")
    text.append(f"{detail.rank:g}" if detail.rank is not None else "—", style="bold")
    if detail.rating_explanation:
        text.append("\n")
        text.append_text(safe_cut(detail.rating_explanation))
    if detail.findings:
        text.append(f"\n\nFindings ({len(detail.findings)})", style="dim")
    for finding in detail.findings:
        text.append("\n• ")
        text.append_text(safe_line(finding.summary, style="bold"))
        if finding.explanation:
            text.append("\n  ")
            text.append_text(safe_cut(finding.explanation))
    return text


class CommunityScreen(Findable, TabbedScreen):
    """One community of the store. Selecting a community id posts `OpenCommunity`; Enter on
    a claim posts `OpenRecord("claim", id)`."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="back", tooltip="back to the screen before"),
        Binding("t", "show_in_tree", "Show in tree", id="show-in-tree",
                tooltip="show this community in the Explore screen's tree"),
        Binding("m", "members", "Members", id="members", tooltip="the members, each opening its entity"),
        Findable.FIND_BINDING,
    ]
    AUTO_FOCUS = "#hierarchy"

    def __init__(
        self,
        store: CommunityStore,
        community_id: str,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.store = store
        self.community_id = community_id
        #: Whether the worker's reading of the store has arrived, and been shown.
        self._arrived = False
        self.loaded = False
        self.error: str | None = None
        self.detail: CommunityDetail | None = None
        #: Option index in the hierarchy list -> the community id it opens.
        self._targets: dict[int, str] = {}
        #: Option index in the hierarchy list -> the entity (a member) it opens.
        self._entities: dict[int, str] = {}
        #: The members with their entities (None: not read, or unreadable).
        self.members: list[MemberRef] | None = None
        self._chunk_index: dict[str, int] = {}
        #: Chunk id -> {claim id: the claim's passage in the chunk}.
        self.passages: dict[str, dict[str, Passage]] = {}

    @dataclass
    class Loaded(Message):
        """What the worker read: the community (None if no such id) with its claims'
        passages, or the store's error."""

        detail: CommunityDetail | None
        error: str | None
        passages: dict[str, dict[str, Passage]] | None = None
        members: list[MemberRef] | None = None

    # -- reading the store (off the UI thread) -------------------------------------------

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False, group="community")

    def _read_members(self, detail: CommunityDetail | None) -> list[MemberRef] | None:
        """The members with the entity of each name (None: the store cannot say; the view
        then lists the names only, as text)."""
        if detail is None or not detail.members:
            return []
        try:
            view = members_view(self.store, detail.id)
        except InputError:
            return None
        return None if view is None else view.members

    def _read(self) -> None:
        try:
            detail = self.store.community(self.community_id)
            passages = read_passages(detail) if detail is not None else {}
            self.post_message(self.Loaded(detail, None, passages, self._read_members(detail)))
        except Exception as error:  # StoreError: an unreadable store or row
            self.post_message(self.Loaded(None, failure_words(error)))

    @on(Loaded)
    async def _loaded(self, message: Loaded) -> None:
        message.stop()
        self.detail, self.error, self._arrived = message.detail, message.error, True
        self.passages = message.passages or {}
        self.members = message.members
        if self.detail is not None:
            self._chunk_index = {chunk.id: index for index, chunk in enumerate(self.detail.chunks)}
        await self.recompose()
        self._fill_claims()
        if self.detail is not None:
            self.query_one("#hierarchy", OptionList).focus()
        self.refresh_bindings()
        self.loaded = True

    # -- composing -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        if not self._arrived:
            yield Static(Text.assemble(("Reading community ", "dim"), one_line(self.community_id), ("…", "dim")),
                         id="community-loading")
            yield KeyFooter()
            return
        detail = self.detail
        if detail is None:
            yield Static(self._missing_text(), id="community-missing")
            yield FindBar(id="find-bar")
            yield KeyFooter()
            return
        yield Static(self._header_text(detail), id="community-header")
        with TabbedContent(id="community-tabs"):
            with TabPane("Overview", id="tab-overview"):
                with Horizontal():
                    yield RoomyOptionList(*self._hierarchy_options(detail), id="hierarchy")
                    with VerticalScroll(id="overview-text"):
                        yield Static(Text("Summary"), classes="section-title")
                        yield MarkableStatic(
                            safe_cut(detail.summary) if detail.summary.strip()
                            else Text("(empty summary)", style="dim italic"),
                            id="summary",
                        )
                        yield Static(Text(f"Members ({len(detail.members)})"),
                                     classes="section-title")
                        yield MarkableStatic(self._members_text(detail), id="members")
                        report = report_text(detail)
                        if report is not None:  # GraphRAG's rank, its reason and the findings
                            yield Static(Text("Report"), classes="section-title")
                            yield MarkableStatic(report, id="report")
            with TabPane(f"Claims ({_count(len(detail.claims))})", id="tab-claims"):
                with Vertical():
                    yield DataTable(id="claims", cursor_type="row", zebra_stripes=True)
                    with VerticalScroll(id="claim-detail-scroll"):
                        yield MarkableStatic(self._claim_detail(0), id="claim-detail")
            with TabPane(f"Sources ({len(detail.chunks)})", id="tab-sources"):
                with VerticalScroll(id="sources"):
                    if not detail.chunks:
                        yield Static(Text("No source chunks: the claims cite none.",
                                          style="dim italic"))
                    for index, chunk in enumerate(detail.chunks[:MAX_SOURCE_WIDGETS]):
                        yield MarkableStatic(chunk_text(chunk, self.passages.get(chunk.id)),
                                             classes="chunk", id=f"chunk-{index}")
                    if len(detail.chunks) > MAX_SOURCE_WIDGETS:
                        more = len(detail.chunks) - MAX_SOURCE_WIDGETS
                        yield Static(Text(
                            f"… and {more} more chunks: select a claim in the Claims tab "
                            "to read the chunk it cites.", style="dim italic"))
        yield FindBar(id="find-bar")
        yield KeyFooter()

    def _fill_claims(self) -> None:
        if self.detail is None:
            return
        table = self.query_one("#claims", DataTable)
        # Chunk ids are shown whole (up to 40 columns), the description takes the rest of the
        # width (at least 40); the detail below the table has every cell in full.
        longest = max((len(one_line(c.chunk_id)) for c in self.detail.claims[:MAX_ROWS]), default=5)
        chunk_width = min(40, max(5, longest))
        description_width = max(40, self.app.size.width - 2 * 22 - chunk_width - 10)
        table.add_column(Text("Subject"), width=22, key="subject")
        table.add_column(Text("Object"), width=22, key="object")
        table.add_column(Text("Description"), width=description_width, key="description")
        table.add_column(Text("Chunk"), width=chunk_width, key="chunk")
        for index, claim in enumerate(self.detail.claims[:MAX_ROWS]):
            table.add_row(
                safe_line(claim.subject),
                safe_line(claim.object) if claim.object is not None else Text("—", style="dim"),
                safe_line(claim.description),
                safe_line(claim.chunk_id) if claim.chunk_id is not None
                else Text("—", style="dim"),
                key=str(index),
            )

    def _missing_text(self) -> Text:
        if self.error is not None:
            text = Text.assemble(
                ("Cannot read community ", "bold red"), (one_line(self.community_id), "bold"),
                ": ", one_line(self.error),
            )
        else:
            text = Text.assemble(
                ("No community ", "bold red"), (one_line(self.community_id), "bold"),
                (" in this store.", "bold red"),
            )
        text.append("\n\nPress Esc to go back.", style="dim")
        return text

    @staticmethod
    def _header_text(detail: CommunityDetail) -> Text:
        text = Text.assemble(
            ("Community ", "bold"), (one_line(detail.id), "bold"), "  ",
            (one_line(detail.name), "italic") if detail.name else ("(no name)", "dim italic"),
            "\n",
            ("Namespace ", "dim"), one_line(detail.namespace),
            ("   Level ", "dim"), str(detail.level),
            ("   Leaf ", "dim"), "yes" if detail.is_leaf else "no",
            ("   Parent ", "dim"),
        )
        if detail.parent_id is None:
            text.append("none (root)")
        else:
            text.append(one_line(detail.parent_id))
            if detail.parent_dangling:
                text.append(" (dangling: no such community)", style="bold red")
        text.append("   Claims ", style="dim")
        text.append(str(len(detail.claims)))
        text.append("   Chunks ", style="dim")
        text.append(str(len(detail.chunks)))
        return text

    def _hierarchy_options(self, detail: CommunityDetail) -> list[Option | None]:
        options: list[Option | None] = []

        def heading(label: str) -> None:
            options.append(Option(Text(label, style="bold"), disabled=True))

        def note(label: str) -> None:
            options.append(Option(Text(label, style="dim italic"), disabled=True))

        separators = 0

        def separator() -> None:
            nonlocal separators
            separators += 1
            options.append(None)

        def target(community_id: str) -> None:
            # Separators (None) are not options: index among the real options only.
            self._targets[len(options) - separators] = community_id
            options.append(Option(safe_line(community_id)))

        heading("Parent")
        if detail.parent_id is None:
            note("none: a root community")
        elif detail.parent_dangling:
            options.append(Option(
                Text.assemble(one_line(detail.parent_id), (" (dangling)", "bold red")),
                disabled=True,
            ))
        else:
            target(detail.parent_id)
        separator()
        heading(f"Children ({_count(len(detail.children))})")
        if not detail.children:
            note("none")
        for child in detail.children[:MAX_ROWS]:
            target(child)
        separator()
        if detail.is_leaf:
            heading("Descendant leaves")
            note("this community is a leaf")
        else:
            heading(f"Descendant leaves ({_count(len(detail.leaf_ids))})")
            if not detail.leaf_ids:
                note("none (cyclic links?)")
            for leaf in detail.leaf_ids[:MAX_ROWS]:
                target(leaf)
        if self.members:
            separator()
            heading(f"Members ({_count(len(self.members))})")
            for member in self.members[:MAX_ROWS]:
                if member.entity_id is None:
                    options.append(Option(Text.assemble(one_line(member.name), ("  (no entity)", "dim")),
                                          disabled=True))
                else:
                    self._entities[len(options) - separators] = member.entity_id
                    options.append(Option(Text.assemble(one_line(member.name),
                                                        (f"  {one_line(member.entity_id)}", "dim"))))
        return options

    @staticmethod
    def _members_text(detail: CommunityDetail) -> Text:
        if not detail.members:
            return Text("(none listed)", style="dim italic")
        shown = Text(", ").join(safe_line(member, 200) for member in detail.members[:MAX_ROWS])
        if len(detail.members) > MAX_ROWS:
            shown.append(f" … and {len(detail.members) - MAX_ROWS:,} more", style="dim italic")
        return shown

    def _claim_detail(self, index: int) -> Text:
        """The claim at `index` of the claims table, in full, with the chunk it cites."""
        detail = self.detail
        if detail is None or not detail.claims:
            return Text("No claims: none is assigned to this community's leaves.",
                        style="dim italic")
        claim = detail.claims[max(0, min(index, len(detail.claims) - 1))]
        text = Text.assemble(
            ("Claim ", "dim"), one_line(claim.id), ("  of leaf ", "dim"), one_line(claim.leaf_id),
            ("   Enter: the claim view", "dim"), "\n", claim_text(claim), "\n\n",
        )
        if claim.chunk_id is None:
            text.append("This claim cites no source chunk.", style="dim italic")
        elif claim.chunk_id not in self._chunk_index:
            text.append_text(Text.assemble(
                ("Chunk ", "bold"), (one_line(claim.chunk_id), "bold"),
                (" is not in the store (dangling reference).", "red"),
            ))
        else:
            passage = self.passages.get(claim.chunk_id, {}).get(claim.id)
            text.append_text(chunk_text(detail.chunks[self._chunk_index[claim.chunk_id]],
                                        {claim.id: passage} if passage else {}, legend=False))
            text.append("\n")
            text.append_text(passage_note(claim, passage))
        return text

    # -- events --------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#hierarchy")
    def _open_from_hierarchy(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        community_id = self._targets.get(event.option_index)
        if community_id is not None:
            self.post_message(OpenCommunity(community_id))
        entity_id = self._entities.get(event.option_index)
        if entity_id is not None:
            self.post_message(OpenRecord("entity", entity_id))

    @on(DataTable.RowHighlighted, "#claims")
    def _claim_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Show the claim in full, with its chunk, below the table; mark the chunk in the
        Sources tab."""
        event.stop()
        self.select_claim(event.cursor_row)

    @on(DataTable.RowSelected, "#claims")
    def _claim_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a claim opens the claim view."""
        event.stop()
        if self.detail is not None and 0 <= event.cursor_row < len(self.detail.claims):
            self.post_message(OpenRecord("claim", self.detail.claims[event.cursor_row].id))

    def find_targets(self) -> list[Widget]:
        """What the find bar looks in: the tab shown's table, texts or chunks."""
        active = self.query_one("#community-tabs", TabbedContent).active if self.detail is not None else ""
        if active == "tab-claims":
            return [self.query_one("#claims", DataTable)]
        if active == "tab-sources":
            return list(self.query(".chunk"))
        return [w for w in self.query("#summary, #members") if isinstance(w, MarkableStatic)]

    def select_claim(self, index: int) -> None:
        if self.detail is None or not self.detail.claims:
            return
        shown = self.query_one("#claim-detail", MarkableStatic)
        shown.show(self._claim_detail(index))
        self.query_one("#claim-detail-scroll", VerticalScroll).scroll_home(animate=False)
        # A passage deep in a long chunk is scrolled into view.
        start = next((span.start for span in shown.base.spans
                      if str(span.style) in (QUOTED_STYLE, APPROXIMATE_STYLE)), None)
        if start is not None:
            self.call_after_refresh(lambda: scroll_to_line(shown, shown.line_of(start)))
        for chunk in self.query(".chunk"):
            chunk.remove_class("-selected")
        claim = self.detail.claims[index]
        position = self._chunk_index.get(claim.chunk_id or "")
        if position is not None and position < MAX_SOURCE_WIDGETS:
            self.query_one(f"#chunk-{position}", Static).add_class("-selected")

    def action_members(self) -> None:
        self.post_message(OpenRecord("members", self.community_id if self.detail is None else self.detail.id))

    def action_show_in_tree(self) -> None:
        self.post_message(ShowInTree(self.community_id if self.detail is None else self.detail.id))

    def action_close(self) -> None:
        self.dismiss()
