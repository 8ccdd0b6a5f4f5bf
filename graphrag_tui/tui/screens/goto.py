"""The "go to community" dialog: an id, `<namespace>/<n>`, a bare community number, a
community name (matched fuzzily: `Marley`) or an entity name (its communities: those
whose members include it).

An id that resolves opens at once; otherwise the dialog lists the communities the text
names (`search`), best first, and Enter on one opens it (Down moves from the field to the
list). The lookups read the store, so they run in a thread worker, never on the UI thread:
the dialog says it is looking, and the worker's `Resolved` message dismisses it or shows
the matches or the error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ...session.run_failure import failure_words
from ...store import CommunityRef, GoToMatch
from ..safe_text import one_line
from ..widgets.option_list import RoomyOptionList
from .input_dialog import InputDialog


def community_option(ref: CommunityRef, note: str = "") -> Option:
    """A community in the list of matches: id, name and level."""
    return Option(Text.assemble(
        (one_line(ref.id), "bold"), "  ",
        (one_line(ref.name), "italic") if ref.name else ("(no name)", "dim italic"),
        (f"  level {ref.level}", "dim"), (note, "dim"),
    ), id=ref.id)


class GoToCommunityScreen(InputDialog[str]):
    """Dismisses with the resolved community id, or None on Esc.

    `resolve` turns the typed text into an id (None: no such community); the error is shown
    inline and the dialog stays open. Without `resolve` the trimmed text is returned as is.
    """

    NAME = "goto"
    HEADING = "Go to community"
    ENTER_DOES = "open (or list the communities a name matches; Down: the list)"
    BINDINGS = [Binding("down", "to_matches", "Matches", show=False, id="goto-matches",
                        tooltip="move to the list of matching communities")]

    def __init__(
        self,
        resolve: Callable[[str], str | None] | None = None,
        namespace: str | None = None,
        *,
        initial: str = "",
        search: Callable[[str], list[GoToMatch]] | None = None,
    ) -> None:
        super().__init__(value=initial, placeholder="community id, number, name, or entity name")
        self.resolve = resolve
        self.search = search
        self.namespace = namespace
        #: The communities the last text named (when it was not an id).
        self.matches: list[GoToMatch] = []
        #: True while the worker looks the typed text up.
        self.looking = False

    def hint(self) -> str:
        where = f" in namespace {one_line(self.namespace)}" if self.namespace else ""
        if self.search is None:
            return f"A community id, or a GraphRAG community number{where}."
        return f"A community id or GraphRAG community number, a community name, or an entity name{where}."

    @dataclass
    class Resolved(Message):
        """The worker's answer for `text`: the community id (None: no such community), or
        the store's error."""

        text: str
        community_id: str | None
        error: str | None
        matches: list[GoToMatch] | None = None

    def accept(self, text: str) -> str | None:
        if not text:
            self.show_error("Type a community id or number.")
            return None
        if self.resolve is None:
            return text
        if self.looking:
            return None  # one lookup at a time; its answer is on the way
        self.looking = True
        self.show_error(f"Looking for community {text}…")
        self.run_worker(lambda: self._resolve(text), thread=True, exit_on_error=False, group="goto")
        return None

    def _resolve(self, text: str) -> None:
        assert self.resolve is not None
        try:
            community_id = self.resolve(text)
            matches = self.search(text) if community_id is None and self.search is not None else None
            self.post_message(self.Resolved(text, community_id, None, matches))
        except Exception as error:  # a bad row in the store
            self.post_message(self.Resolved(text, None, failure_words(error)))

    @on(Resolved)
    async def _resolved(self, message: Resolved) -> None:
        message.stop()
        self.matches = message.matches or []
        await self._show_matches()
        self.looking = False
        where = f" in namespace {self.namespace}" if self.namespace else ""
        if message.error is not None:
            self.show_error(message.error)
        elif message.community_id is not None:
            self.dismiss(message.community_id)
        elif self.matches:
            n = len(self.matches)
            self.show_error(f"No community {message.text}; {n} match{'es' if n != 1 else ''} by name{where} "
                            "(Down, then Enter to open):")
        elif self.search is not None:
            self.show_error(f"No community, community name or entity {message.text}{where}.")
        else:
            self.show_error(f"No community {message.text}{where}.")

    async def _show_matches(self) -> None:
        """The matches in a list under the error line (mounted with the first ones)."""
        found = self.query("#goto-matches")
        if found:
            listing = found.first(OptionList)
            listing.clear_options()
        else:
            listing = RoomyOptionList(id="goto-matches")
            await self.query_one("#goto-dialog").mount(listing, after="#goto-error")
        listing.add_options([community_option(m.community, f"  (member {one_line(m.entity)})" if m.entity else "")
                             for m in self.matches])
        listing.display = bool(self.matches)
        if self.matches:
            listing.highlighted = 0

    def action_to_matches(self) -> None:
        listing = self.query("#goto-matches")
        if listing:
            listing.first(OptionList).focus()

    @on(OptionList.OptionSelected, "#goto-matches")
    def _match_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(event.option.id)
