"""The "go to community" dialog: an id, `<namespace>/<n>`, or a bare community number.

`resolve` reads the store, so it runs in a thread worker, never on the UI thread: the dialog
says it is looking, and the worker's `Resolved` message dismisses it or shows the error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual import on
from textual.message import Message

from ...errors import InputError
from ..safe_text import one_line
from .input_dialog import InputDialog


class GoToCommunityScreen(InputDialog[str]):
    """Dismisses with the resolved community id, or None on Esc.

    `resolve` turns the typed text into an id (None: no such community); the error is shown
    inline and the dialog stays open. Without `resolve` the trimmed text is returned as is.
    """

    NAME = "goto"
    HEADING = "Go to community"
    ENTER_DOES = "open"

    def __init__(
        self,
        resolve: Callable[[str], str | None] | None = None,
        namespace: str | None = None,
        *,
        initial: str = "",
    ) -> None:
        super().__init__(value=initial, placeholder="community id or number")
        self.resolve = resolve
        self.namespace = namespace
        #: True while the worker looks the typed text up.
        self.looking = False

    def hint(self) -> str:
        where = f" in namespace {one_line(self.namespace)}" if self.namespace else ""
        return f"A community id, or a GraphRAG community number{where}."

    @dataclass
    class Resolved(Message):
        """The worker's answer for `text`: the community id (None: no such community), or
        the store's error."""

        text: str
        community_id: str | None
        error: str | None

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
            self.post_message(self.Resolved(text, self.resolve(text), None))
        except InputError as error:  # a bad row in the store
            self.post_message(self.Resolved(text, None, str(error)))

    @on(Resolved)
    def _resolved(self, message: Resolved) -> None:
        message.stop()
        self.looking = False
        if message.error is not None:
            self.show_error(message.error)
        elif message.community_id is None:
            where = f" in namespace {self.namespace}" if self.namespace else ""
            self.show_error(f"No community {message.text}{where}.")
        else:
            self.dismiss(message.community_id)
