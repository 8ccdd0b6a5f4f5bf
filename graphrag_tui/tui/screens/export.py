"""The export dialog: where to write the run's JSON and Markdown report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...errors import InputError
from ...export import export_paths
from ...user_files import user_path
from .input_dialog import InputDialog


def default_export_path(seed: int | None, folder: Path | None = None) -> Path:
    """`graphrag-run-<seed>.json` in `folder` (default: the working directory)."""
    name = f"graphrag-run-{seed}.json" if seed is not None else "graphrag-run.json"
    return (folder if folder is not None else Path.cwd()) / name


class ExportScreen(InputDialog[Path]):
    """Dismisses with the typed path (`~` expanded), or None on Esc. The caller writes
    `<stem>.json` and `<stem>.md` (see `graphrag_tui.export.write_export`).

    `default` is the prefilled path, or the run's seed (an int, or None for an unseeded
    run) to prefill `graphrag-run-<seed>.json` in the working directory. `check` raises
    InputError for a path that cannot be written (shown in the dialog, which stays open)."""

    NAME = "export"
    HEADING = "Export the run"
    ENTER_DOES = "export"

    def __init__(
        self, default: Path | str | int | None = None, *, check: Callable[[Path], None] | None = None
    ) -> None:
        if isinstance(default, (Path, str)):
            self.default = Path(default)
        else:
            self.default = default_export_path(default)
        self.check = check
        super().__init__(value=str(self.default))

    def hint(self) -> str:
        return "Writes the result as JSON and a Markdown report next to it (same name, .json and .md)."

    def accept(self, text: str) -> Path | None:
        if not text:
            self.show_error("Type a file path.")
            return None
        try:
            path = user_path(text, "the export's name")
            json_path, _ = export_paths(text)  # (as typed: `out/` names a folder)
        except InputError as error:  # ~name of no user, a NUL, a folder ("." or "/")
            self.show_error(str(error))
            return None
        try:
            folder_exists = json_path.parent.is_dir()
        except OSError as error:  # e.g. a folder name too long
            self.show_error(f"Cannot use {json_path.parent}: {error.strerror or error}")
            return None
        if not folder_exists:
            self.show_error(f"Folder {json_path.parent} does not exist.")
            return None
        if self.check is not None:
            try:
                self.check(path)
            except InputError as error:
                self.show_error(str(error))
                return None
        return path
