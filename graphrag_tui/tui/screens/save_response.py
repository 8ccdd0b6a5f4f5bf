"""The "save the whole response" dialog: where to write one attempt's raw response."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...errors import InputError
from ...user_files import user_path
from .input_dialog import InputDialog


class SaveResponseScreen(InputDialog[Path]):
    """Dismisses with the typed path (`~` expanded), or None on Esc. `check` raises
    InputError for a path that cannot be written (shown here; the dialog stays open)."""

    NAME = "save-response"
    HEADING = "Save the whole response"
    ENTER_DOES = "save"

    def __init__(self, default: Path, *, size: str, check: Callable[[Path], None]) -> None:
        self.response_size = size
        self.check = check
        super().__init__(value=str(default))

    def hint(self) -> str:
        return f"Writes the raw response ({self.response_size}) as the model sent it to this file."

    def accept(self, text: str) -> Path | None:
        if not text:
            self.show_error("Type a file path.")
            return None
        try:
            path = user_path(text, "the file's name")
            self.check(path)
        except InputError as error:
            self.show_error(str(error))
            return None
        return path
