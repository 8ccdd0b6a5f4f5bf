"""The communities whose members include one entity (from a claim's subject or object).

Read in a thread worker; Enter on a community opens it."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...errors import InputError
from ...store import CommunityRef, CommunityStore
from ..messages import OpenCommunity
from ..safe_text import one_line
from ..widgets.footer import KeyFooter


def community_option(ref: CommunityRef, note: str = "") -> Option:
    """A community in a list: id, name and level."""
    return Option(Text.assemble(
        (one_line(ref.id), "bold"), "  ",
        (one_line(ref.name), "italic") if ref.name else ("(no name)", "dim italic"),
        (f"  level {ref.level}", "dim"), (note, "dim"),
    ), id=ref.id)


class EntityCommunitiesScreen(Screen):
    BINDINGS = [Binding("escape", "close", "Back", id="back", tooltip="back to the screen before")]

    def __init__(self, store: CommunityStore, namespace: str, entity: str) -> None:
        super().__init__()
        self.store, self.namespace, self.entity = store, namespace, entity
        self.communities: list[CommunityRef] | None = None
        self.error: str | None = None
        self.loaded = False

    @dataclass
    class Loaded(Message):
        communities: list[CommunityRef]
        error: str | None

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="entity-title")
        yield OptionList(id="entity-communities")
        yield KeyFooter()

    def _title(self) -> Text:
        text = Text.assemble(("Entity ", "bold"), (one_line(self.entity), "bold"),
                             ("   namespace ", "dim"), one_line(self.namespace), "\n")
        if self.error is not None:
            text.append(f"Cannot read the store: {one_line(self.error)}", style="bold red")
        elif self.communities is None:
            text.append("Looking for the communities whose members include it…", style="dim")
        elif not self.communities:
            text.append("No community lists this entity among its members.", style="dim italic")
        else:
            n = len(self.communities)
            text.append(f"{n} communit{'y' if n == 1 else 'ies'} list it among their members "
                        "(coarsest level first; Enter opens one):")
        return text

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False, group="entity")

    def _read(self) -> None:
        try:
            self.post_message(self.Loaded(self.store.entity_communities(self.namespace, self.entity), None))
        except InputError as error:
            self.post_message(self.Loaded([], str(error)))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        message.stop()
        self.communities, self.error = message.communities, message.error
        self.query_one("#entity-title", Static).update(self._title())
        options = self.query_one("#entity-communities", OptionList)
        options.add_options([community_option(ref) for ref in message.communities])
        if message.communities:
            options.highlighted = 0
        options.focus()
        self.loaded = True

    @on(OptionList.OptionSelected, "#entity-communities")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenCommunity(event.option.id))

    def action_close(self) -> None:
        self.dismiss()
