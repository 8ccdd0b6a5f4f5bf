"""The views of an entity, a chunk and a community's members: what the row says, then a
list of what it leads to (communities, entities, claims), each opened with Enter (a claim
opens the claim view, `screens/claim.py`).

The store is read in a thread worker; the screen shows a loading line until its `Loaded`
message arrives. Text from the store is shown as `Text` built by `safe_text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...session.explore import ExploreSession, Found
from ...session.run_failure import failure_words
from ...store.explore import ChunkView, ClaimRef, EntityDetail, Kind, MembersView, members_view
from ..messages import OpenCommunity, OpenRecord
from ..provenance_text import claim_line
from ..safe_text import clean, one_line
from ..widgets.footer import KeyFooter
from ..widgets.option_list import RoomyOptionList

RecordKind = Literal["entity", "chunk", "members"]
#: Links listed at most (an entity named in thousands of claims): the heading says so.
MAX_LINKS = 2000


def claim_ref_line(claim: ClaimRef) -> Text:
    return claim_line(claim.subject, claim.object, claim.description, 200)


class RecordScreen(Screen):
    """An entity, a chunk or a community's members, by id."""

    BINDINGS = [Binding("escape", "close", "Back", id="record-back", tooltip="back to the screen before")]
    AUTO_FOCUS = "#record-links"

    def __init__(self, explore: ExploreSession, kind: RecordKind, record_id: str) -> None:
        """`kind` "members": the members of the community `record_id`, each opening its entity."""
        super().__init__()
        self.explore = explore
        self.kind = kind
        self.record_id = record_id
        self.view: EntityDetail | ChunkView | MembersView | None = None
        self.error: str | None = None
        self.loaded = False
        #: Option index -> (kind, id) it opens.
        self._targets: dict[int, tuple[Kind, str]] = {}

    @dataclass
    class Loaded(Message):
        view: EntityDetail | ChunkView | MembersView | None
        error: str | None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="record-text-scroll"):
            yield Static(Text(f"Reading {self.kind} {one_line(self.record_id)}…", style="dim"), id="record-text")
        yield RoomyOptionList(id="record-links")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#record-links").display = False
        self.run_worker(self._read, thread=True, exit_on_error=False, group="record")

    def _read(self) -> None:
        try:
            view = (members_view(self.explore.store, self.record_id) if self.kind == "members"
                    else self.explore.view(Found(self.kind, self.record_id)))
            self.post_message(self.Loaded(view, None))  # type: ignore[arg-type]
        except Exception as error:
            self.post_message(self.Loaded(None, failure_words(error)))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        message.stop()
        self.view, self.error = message.view, message.error
        text = self.query_one("#record-text", Static)
        if self.view is None:
            what = (f"Cannot read {self.kind} {one_line(self.record_id)}: {one_line(self.error)}" if self.error
                    else f"No {self.kind} {one_line(self.record_id)} in this store.")
            text.update(Text.assemble((what, "bold red"), ("\n\nPress Esc to go back.", "dim")))
        else:
            body, links = self._compose_view(self.view)
            text.update(body)
            options = self.query_one("#record-links", OptionList)
            options.add_options(links)
            options.display = True
            options.focus()
        self.loaded = True

    def _link(self, links: list[Option | None], label: Text, kind: Kind, target: str) -> None:
        self._targets[len(links)] = (kind, target)
        links.append(Option(label))

    @staticmethod
    def _heading(links: list[Option | None], label: str, total: int) -> None:
        shown = str(total) if total <= MAX_LINKS else f"first {MAX_LINKS} of {total}"
        links.append(Option(Text(f"{label} ({shown})", style="bold"), disabled=True))
        if not total:
            links.append(Option(Text("none", style="dim italic"), disabled=True))

    def _compose_view(
        self, view: EntityDetail | ChunkView | MembersView
    ) -> tuple[Text, list[Option | None]]:
        links: list[Option | None] = []
        if isinstance(view, MembersView):
            community = view.community
            body = Text.assemble(("Members of ", "bold"), (one_line(community.name or community.id), "bold"),
                                 ("  ", ""), (one_line(community.id), "dim"), (f"  L{community.level}", "dim"))
            self._heading(links, "Members", len(view.members))
            for member in view.members[:MAX_LINKS]:
                if member.entity_id is None:
                    links.append(Option(Text.assemble(one_line(member.name), ("  (no entity of this name)", "dim")),
                                        disabled=True))
                else:
                    self._link(links, Text.assemble(one_line(member.name), (f"  {one_line(member.entity_id)}", "dim")),
                               "entity", member.entity_id)
            return body, links
        if isinstance(view, EntityDetail):
            body = Text.assemble(("Entity ", "bold"), (one_line(view.name), "bold"), "\n",
                                 ("Id ", "dim"), one_line(view.id), ("   Namespace ", "dim"), one_line(view.namespace),
                                 "\n\n", clean(view.description) if view.description else ("(no description)", "dim"))
            self._heading(links, "Communities whose members include it", len(view.communities))
            for community in view.communities[:MAX_LINKS]:
                label = Text.assemble((f"L{community.level} ", "dim"), one_line(community.name or community.id),
                                      (f"  {one_line(community.id)}", "dim"))
                self._link(links, label, "community", community.id)
            self._heading(links, "Claims with it as subject or object", len(view.claims))
            for claim in view.claims[:MAX_LINKS]:
                self._link(links, claim_ref_line(claim), "claim", claim.id)
            return body, links
        chunk = view.chunk
        body = Text.assemble(("Chunk ", "bold"), (one_line(chunk.id), "bold"), ("  from ", "dim"),
                             (one_line(chunk.document_title) or "(untitled document)", "italic"), "\n\n",
                             clean(chunk.content))
        self._heading(links, "Claims citing it", len(view.claims))
        for claim in view.claims[:MAX_LINKS]:
            self._link(links, claim_ref_line(claim), "claim", claim.id)
        return body, links

    @on(OptionList.OptionSelected, "#record-links")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        target = self._targets.get(event.option_index)
        if target is None:
            return
        kind, target_id = target
        self.post_message(OpenCommunity(target_id) if kind == "community" else OpenRecord(kind, target_id))

    def action_close(self) -> None:
        self.dismiss()
