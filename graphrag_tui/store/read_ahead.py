"""Reading ahead in background threads, so that SQLite's work overlaps the caller's.

SQLite releases the GIL while it searches and renders, so while the caller builds the Map
texts of one group of a planning read, the next groups are read on the other core(s), each
reader on a connection of its own.
"""

from __future__ import annotations

import queue
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
Reader = TypeVar("Reader")


def read_ahead(read: Callable[[T, Reader], R], items: Iterable[T], readers: Sequence[Reader]) -> Iterator[R]:
    """`read(item, reader)` of every item, in order, computed in one thread per reader (no
    two at once on the same reader), at most one item ahead of the readers. An exception
    in a read is raised in the caller at that item; a caller that stops early (or closes
    this generator) cancels what has not started and waits for what has."""
    free: queue.SimpleQueue[Reader] = queue.SimpleQueue()
    for reader in readers:
        free.put(reader)

    def task(item: T) -> R:
        reader = free.get()
        try:
            return read(item, reader)
        finally:
            free.put(reader)

    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(max_workers=len(readers), thread_name_prefix="store-read-ahead") as pool:
        try:
            for item in items:
                pending.append(pool.submit(task, item))
                if len(pending) > len(readers):
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
