"""The export dialog: where to write the run's JSON and Markdown report."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ...export import export_paths
from ..safe_text import one_line

#: Typed or pasted text may not hold control characters or bidirectional overrides.
NO_CONTROLS = r"[^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*"


def default_export_path(seed: int | None, folder: Path | None = None) -> Path:
    """`graphrag-run-<seed>.json` in `folder` (default: the working directory)."""
    name = f"graphrag-run-{seed}.json" if seed is not None else "graphrag-run.json"
    return (folder if folder is not None else Path.cwd()) / name


class ExportScreen(ModalScreen[Path | None]):
    """Dismisses with the typed path (`~` expanded), or None on Esc. The caller writes
    `<stem>.json` and `<stem>.md` (see `graphrag_tui.export.write_export`).

    `default` is the prefilled path, or the run's seed (an int, or None for an unseeded
    run) to prefill `graphrag-run-<seed>.json` in the working directory."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: Path | str | int | None = None) -> None:
        super().__init__()
        if isinstance(default, (Path, str)):
            self.default = Path(default)
        else:
            self.default = default_export_path(default)

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Static(Text("Export the run"), id="export-title")
            yield Static(
                Text("Writes the result as JSON and a Markdown report next to it "
                     "(same name, .json and .md)."),
                classes="hint",
            )
            yield Input(value=str(self.default), id="export-input", restrict=NO_CONTROLS)
            yield Static(Text(""), id="export-error")
            yield Static(Text("Enter: export   Esc: cancel"), classes="hint")

    def on_mount(self) -> None:
        self.query_one("#export-input", Input).focus()

    def show_error(self, message: str) -> None:
        self.query_one("#export-error", Static).update(Text(one_line(message)))

    @on(Input.Submitted, "#export-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self.show_error("Type a file path.")
            return
        path = Path(text).expanduser()
        json_path, _ = export_paths(path)
        if not json_path.parent.is_dir():
            self.show_error(f"Folder {json_path.parent} does not exist.")
            return
        self.dismiss(path)

    @on(Input.Changed, "#export-input")
    def _changed(self, event: Input.Changed) -> None:
        self.query_one("#export-error", Static).update(Text(""))

    def action_cancel(self) -> None:
        self.dismiss(None)
