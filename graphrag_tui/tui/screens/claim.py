"""One claim and the words it rests on: its subject and object (each opening its entity's
view: the communities whose members include it, and its claims), the full description,
its type, status and dates when the store has them, then the source chunk with the cited
passage highlighted, its document title, and the other claims that cite the same chunk.
Every claim the app opens (`OpenRecord("claim", id)`) is shown here.

The store is read in a thread worker (as the community view does); store text is
untrusted and drawn only as `Text` from safe_text.
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
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...session.run_failure import failure_words
from ...store import ClaimDetail, ClaimProvenance, CommunityStore
from ..messages import OpenRecord
from ..passages import Passage
from ..provenance_text import chunk_passages, claim_facts, claim_line, highlighted_chunk, passage_note
from ..safe_text import clean, one_line, safe
from ..widgets.find_bar import Findable, FindBar, MarkableStatic, scroll_to_line
from ..widgets.footer import KeyFooter
from ..widgets.option_list import RoomyOptionList

#: What Enter on the subject or the object opens (explore's entity view, `screens/record.py`).
ENTITY_HINT = "   Enter: its communities and claims"


class ClaimScreen(Findable, Screen):
    BINDINGS = [
        Binding("escape", "close", "Back", id="back", tooltip="back to the screen before"),
        Findable.FIND_BINDING,
    ]
    AUTO_FOCUS = "#claim-entities"

    def __init__(self, store: CommunityStore, claim_id: str) -> None:
        super().__init__()
        self.store = store
        self.claim_id = claim_id
        self._arrived = False
        self.loaded = False
        self.error: str | None = None
        self.provenance: ClaimProvenance | None = None
        self.passage: Passage | None = None

    @dataclass
    class Loaded(Message):
        provenance: ClaimProvenance | None
        passage: Passage | None
        error: str | None

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False, group="claim")

    def _read(self) -> None:
        try:
            provenance = self.store.claim_provenance(self.claim_id)
        except Exception as error:  # StoreError: an unreadable store or row
            self.post_message(self.Loaded(None, None, failure_words(error)))
            return
        passage = None
        if provenance is not None and provenance.chunk is not None:
            passage = chunk_passages(provenance.chunk, [provenance.claim]).get(provenance.claim.id)
        self.post_message(self.Loaded(provenance, passage, None))

    @on(Loaded)
    async def _loaded(self, message: Loaded) -> None:
        message.stop()
        self.provenance, self.passage, self.error = message.provenance, message.passage, message.error
        self._arrived = True
        await self.recompose()
        if self.provenance is not None:
            self.query_one("#claim-entities", OptionList).focus()
            self.call_after_refresh(self._show_passage)
        self.loaded = True

    def _show_passage(self) -> None:
        """Scroll the chunk so that the highlighted passage is in view."""
        if self.passage is None or not self.passage.spans:
            return
        chunk = self.query_one("#claim-chunk", MarkableStatic)
        scroll_to_line(chunk, chunk.line_of(self.passage.spans[0][0]))

    def compose(self) -> ComposeResult:
        if not self._arrived:
            yield Static(Text.assemble(("Reading claim ", "dim"), one_line(self.claim_id), ("…", "dim")),
                         id="claim-loading")
        elif self.provenance is None:
            yield Static(self._missing_text(), id="claim-missing")
        else:
            yield from self._compose_claim(self.provenance)
        yield FindBar(id="find-bar")
        yield KeyFooter()

    def _compose_claim(self, provenance: ClaimProvenance) -> ComposeResult:
        claim = provenance.claim
        header = Text.assemble(("Claim ", "bold"), (one_line(claim.id), "bold"),
                               ("   leaf community ", "dim"), one_line(claim.leaf_id) or "none",
                               ("   namespace ", "dim"), one_line(provenance.namespace))
        facts = claim_facts(claim)
        if facts:
            header.append("\n")
            header.append_text(facts)
        yield Static(header, id="claim-header")
        entities = [Option(Text.assemble(("Subject  ", "dim"), (one_line(claim.subject), "bold"),
                                         (ENTITY_HINT, "dim")), id="subject")]
        if claim.object is not None:
            entities.append(Option(Text.assemble(("Object   ", "dim"), (one_line(claim.object), "bold"),
                                                 (ENTITY_HINT, "dim")), id="object"))
        yield RoomyOptionList(*entities, id="claim-entities")
        with VerticalScroll(id="claim-description-scroll"):
            description = safe(claim.description) if claim.description.strip() \
                else Text("(no description)", style="dim italic")
            yield MarkableStatic(description, id="claim-description")
        yield Static(self._source_title(provenance), id="claim-source-title")
        with VerticalScroll(id="claim-source"):
            if provenance.chunk is not None:
                passages = [self.passage] if self.passage is not None else []
                yield MarkableStatic(highlighted_chunk(provenance.chunk, passages, heading=False), id="claim-chunk")
        total = provenance.same_chunk_total
        shown = len(provenance.same_chunk)
        count = f"{total}" if shown == total else f"first {shown} of {total}"
        yield Static(Text(f"Other claims citing this chunk ({count}; Enter opens one)", style="bold")
                     if total else Text("No other claim cites this chunk.", style="dim italic"),
                     id="claim-siblings-title")
        if provenance.same_chunk:
            listed: dict[str, ClaimDetail] = {}
            for other in provenance.same_chunk:  # a claim id twice (a store without its key): its first row
                listed.setdefault(other.id, other)
            yield RoomyOptionList(*[
                Option(claim_line(other.subject, other.object, other.description), id=other.id)
                for other in listed.values()
            ], id="claim-siblings")

    def _source_title(self, provenance: ClaimProvenance) -> Text:
        claim = provenance.claim
        title = one_line(provenance.document_title) or "(untitled document)"
        if claim.chunk_id is None:
            text = Text("Source: this claim cites no chunk", style="bold")
            if claim.source_parent_id is not None:
                text.append_text(Text.assemble(("  document ", "dim"), (title, "italic")))
            return text
        text = Text.assemble(("Source: chunk ", "bold"), (one_line(claim.chunk_id), "bold"),
                             ("  from ", "dim"), (title, "italic"), "\n")
        if provenance.chunk is None:
            text.append("This chunk is not in the store (dangling reference).", style="red")
        else:
            text.append_text(passage_note(claim, self.passage))
        return text

    def _missing_text(self) -> Text:
        if self.error is not None:
            text = Text.assemble(("Cannot read claim ", "bold red"), (one_line(self.claim_id), "bold"),
                                 ": ", clean(one_line(self.error)))
        else:
            text = Text.assemble(("No claim ", "bold red"), (one_line(self.claim_id), "bold"),
                                 (" in this store.", "bold red"))
        text.append("\n\nPress Esc to go back.", style="dim")
        return text

    def find_targets(self) -> list[Widget]:
        return [w for w in self.query("#claim-description, #claim-chunk")]

    @on(OptionList.OptionSelected, "#claim-entities")
    def _open_entity(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        provenance = self.provenance
        if provenance is None:
            return
        entity_id = provenance.subject_entity_id if event.option.id == "subject" else provenance.object_entity_id
        if entity_id is not None:
            self.post_message(OpenRecord("entity", entity_id))

    @on(OptionList.OptionSelected, "#claim-siblings")
    def _open_sibling(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenRecord("claim", event.option.id))

    def action_close(self) -> None:
        self.dismiss()
