"""The "go to community" dialog: an id, `<namespace>/<n>`, or a bare community number."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ..safe_text import one_line

#: Typed or pasted text may not hold control characters or bidirectional overrides.
NO_CONTROLS = r"[^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*"


class GoToCommunityScreen(ModalScreen[str | None]):
    """Dismisses with the resolved community id, or None on Esc.

    `resolve` turns the typed text into an id (None: no such community); the error is shown
    inline and the dialog stays open. Without `resolve` the trimmed text is returned as is.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        resolve: Callable[[str], str | None] | None = None,
        namespace: str | None = None,
        *,
        initial: str = "",
    ) -> None:
        super().__init__()
        self.resolve = resolve
        self.namespace = namespace
        self.initial = initial

    def compose(self) -> ComposeResult:
        with Vertical(id="goto-dialog"):
            yield Static(Text("Go to community"), id="goto-title")
            where = f" in namespace {one_line(self.namespace)}" if self.namespace else ""
            yield Static(
                Text(f"A community id, or a GraphRAG community number{where}."),
                classes="hint",
            )
            yield Input(value=self.initial, placeholder="community id or number", id="goto-input",
                        restrict=NO_CONTROLS)
            yield Static(Text(""), id="goto-error")
            yield Static(Text("Enter: open   Esc: cancel"), classes="hint")

    def on_mount(self) -> None:
        self.query_one("#goto-input", Input).focus()

    def show_error(self, message: str) -> None:
        self.query_one("#goto-error", Static).update(Text(one_line(message)))

    @on(Input.Submitted, "#goto-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self.show_error("Type a community id or number.")
            return
        if self.resolve is None:
            self.dismiss(text)
            return
        community_id = self.resolve(text)
        if community_id is None:
            where = f" in namespace {self.namespace}" if self.namespace else ""
            self.show_error(f"No community {text}{where}.")
            return
        self.dismiss(community_id)

    @on(Input.Changed, "#goto-input")
    def _changed(self, event: Input.Changed) -> None:
        self.query_one("#goto-error", Static).update(Text(""))

    def action_cancel(self) -> None:
        self.dismiss(None)
