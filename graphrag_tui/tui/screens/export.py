"""The export dialog: where to write the run's JSON and Markdown report."""

from __future__ import annotations

from pathlib import Path

from ...export import export_paths
from .input_dialog import InputDialog


def default_export_path(seed: int | None, folder: Path | None = None) -> Path:
    """`graphrag-run-<seed>.json` in `folder` (default: the working directory)."""
    name = f"graphrag-run-{seed}.json" if seed is not None else "graphrag-run.json"
    return (folder if folder is not None else Path.cwd()) / name


class ExportScreen(InputDialog[Path]):
    """Dismisses with the typed path (`~` expanded), or None on Esc. The caller writes
    `<stem>.json` and `<stem>.md` (see `graphrag_tui.export.write_export`).

    `default` is the prefilled path, or the run's seed (an int, or None for an unseeded
    run) to prefill `graphrag-run-<seed>.json` in the working directory."""

    NAME = "export"
    HEADING = "Export the run"
    ENTER_DOES = "export"

    def __init__(self, default: Path | str | int | None = None) -> None:
        if isinstance(default, (Path, str)):
            self.default = Path(default)
        else:
            self.default = default_export_path(default)
        super().__init__(value=str(self.default))

    def hint(self) -> str:
        return "Writes the result as JSON and a Markdown report next to it (same name, .json and .md)."

    def accept(self, text: str) -> Path | None:
        if not text:
            self.show_error("Type a file path.")
            return None
        path = Path(text).expanduser()
        json_path, _ = export_paths(path)
        if not json_path.parent.is_dir():
            self.show_error(f"Folder {json_path.parent} does not exist.")
            return None
        return path
