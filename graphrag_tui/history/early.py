"""The run history opened while the run is planned.

Opening a history checks its version and its schema (some 0.5 ms, most of it in SQLite). A
run opens it on a thread of its own as planning starts, beside the store's reads, so its
first model call waits only for its row. Only a history that is there, and is none of the
store's files, is opened early: a new one is made as the run starts (a run that never
starts, on a bad request, makes none), and one that could not be opened here is opened
again there, which says why."""

from __future__ import annotations

import _thread
import contextlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from ..output_paths import input_named
from .database import connect


class EarlyHistory:
    def __init__(self, path: Path, store_files: Sequence[Path]) -> None:
        self._opened = threading.Event()
        self._connection: sqlite3.Connection | None = None
        # (threading's start waits until the new thread runs)
        _thread.start_new_thread(self._open, (path, store_files))

    def _open(self, path: Path, store_files: Sequence[Path]) -> None:
        try:
            if input_named(path, store_files) is None:
                self._connection = connect(path, create=False, check_same_thread=False)
        except Exception:  # noqa: BLE001 - opened again as the run starts, which says what is wrong
            pass
        finally:
            self._opened.set()

    def opened(self) -> bool:
        """Whether the history is open (so it is none of the store's files)."""
        self._opened.wait()
        return self._connection is not None

    def take(self) -> sqlite3.Connection | None:
        """The history's connection, once: None when it was not opened early."""
        self._opened.wait()
        connection, self._connection = self._connection, None
        return connection

    def close(self) -> None:
        """Closes the connection unless it was taken."""
        connection = self.take()
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
