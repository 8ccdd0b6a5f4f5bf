"""The run history opened while the run is planned.

Opening a history checks its version and its schema (some 0.5 ms, most of it in SQLite),
and a run's row needs this user's key and this process's identity (two small files). A run
gets them on a thread of its own as planning starts, beside the store's reads, so its first
model call waits only for its row. Only a history that is there, and is none of the store's
files, is opened early: a new one is made as the run starts (a run that never starts, on a
bad request, makes none), and one that could not be opened here is opened again there,
which says why."""

from __future__ import annotations

import _thread
import contextlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ..output_paths import input_named
from .database import connect
from .owner import this_process
from .seal import seal_key


class Opened(NamedTuple):
    connection: sqlite3.Connection
    #: This user's key (None: there is none yet; the run makes it).
    key: bytes | None
    #: This process, as a run's owner is recorded.
    owner: str


class EarlyHistory:
    def __init__(self, path: Path, store_files: Sequence[Path]) -> None:
        self._opened = threading.Event()
        self._opened_history: Opened | None = None
        # (threading's start waits until the new thread runs)
        _thread.start_new_thread(self._open, (path, store_files))

    def _open(self, path: Path, store_files: Sequence[Path]) -> None:
        try:
            if input_named(path, store_files) is None:
                connection = connect(path, create=False, check_same_thread=False)
                self._opened_history = Opened(connection, seal_key(create=False), this_process())
        except Exception:  # noqa: BLE001 - opened again as the run starts, which says what is wrong
            pass
        finally:
            self._opened.set()

    def opened(self) -> bool:
        """Whether the history is open (so it is none of the store's files)."""
        self._opened.wait()
        return self._opened_history is not None

    def take(self) -> Opened | None:
        """The history opened, once: None when it was not opened early."""
        self._opened.wait()
        opened, self._opened_history = self._opened_history, None
        return opened

    def close(self) -> None:
        """Closes the connection unless it was taken."""
        opened = self.take()
        if opened is not None:
            with contextlib.suppress(sqlite3.Error):
                opened.connection.close()
