"""The "go to community" dialog: an id, `<namespace>/<n>`, or a bare community number."""

from __future__ import annotations

from collections.abc import Callable

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

    def hint(self) -> str:
        where = f" in namespace {one_line(self.namespace)}" if self.namespace else ""
        return f"A community id, or a GraphRAG community number{where}."

    def accept(self, text: str) -> str | None:
        if not text:
            self.show_error("Type a community id or number.")
            return None
        if self.resolve is None:
            return text
        try:
            community_id = self.resolve(text)
        except InputError as error:  # a bad row in the store
            self.show_error(str(error))
            return None
        if community_id is None:
            where = f" in namespace {self.namespace}" if self.namespace else ""
            self.show_error(f"No community {text}{where}.")
        return community_id
