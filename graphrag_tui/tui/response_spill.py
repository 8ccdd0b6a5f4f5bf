"""Whole raw responses longer than what a result keeps (RAW_RESPONSE_CAP), kept on disk for
the batch view's "save the whole response".

They live in a private temporary folder (mode 0700) that the app creates on the first long
response and removes when it exits; they never stay in memory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

#: (Map batch index, or None for Reduce; attempt number)
AttemptKey = tuple[int | None, int]


class ResponseSpill:
    def __init__(self) -> None:
        self.folder: Path | None = None
        self._files: dict[AttemptKey, Path] = {}

    def add(self, batch_index: int | None, attempt: int, text: str) -> None:
        """Keep `text` whole. A disk error only means it cannot be saved later (the batch
        view says so): it never stops the run."""
        name = ("reduce" if batch_index is None else f"batch-{batch_index}") + f"-attempt-{attempt}.txt"
        try:
            if self.folder is None:
                self.folder = Path(tempfile.mkdtemp(prefix="graphrag-tui-responses-"))  # mode 0700
            path = self.folder / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(text.encode("utf-8", "surrogatepass"))
        except OSError:
            return
        self._files[(batch_index, attempt)] = path

    def of_batch(self, batch_index: int | None) -> dict[int, Path]:
        """Attempt number -> whole response file, for one batch."""
        return {attempt: path for (index, attempt), path in self._files.items() if index == batch_index}

    def clear(self) -> None:
        """Forget (and delete) the last run's responses."""
        for path in self._files.values():
            with contextlib.suppress(OSError):
                path.unlink()
        self._files.clear()

    def close(self) -> None:
        self._files.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
