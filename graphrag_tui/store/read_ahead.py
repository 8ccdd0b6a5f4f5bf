"""Reading ahead in a background thread, so that SQLite's work overlaps the caller's.

SQLite releases the GIL while it searches and renders, so on a second core the next group
of a planning read is fetched while the caller builds the Map texts of the previous one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


def read_ahead(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """The items of `items`, produced in a background thread at most `depth` items ahead of
    the caller. An exception in the producer is raised in the caller, at the item where it
    happened; a caller that stops early (or closes this generator) stops the producer."""
    ready: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the caller, who raises it
            put(_Failed(exc))
            return
        put(_DONE)

    worker = threading.Thread(target=produce, name="store-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error
