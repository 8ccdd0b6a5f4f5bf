"""Reading ahead in background threads, so that SQLite's work overlaps the caller's.

SQLite releases the GIL while it searches and renders, so while the caller builds the Map
texts of one group of a planning read, the next groups are read on the other core(s), each
reader on a connection of its own.

A caller that leaves early (Ctrl+C, an error, a closed generator) must not wait for a read
still in flight: on a database server that stopped answering it would never end, and the
process could not exit (it joins its threads). Such reads are interrupted (`interrupt`).
"""

from __future__ import annotations

import queue
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
Reader = TypeVar("Reader")


def read_ahead(
    read: Callable[[T, Reader], R], items: Iterable[T], readers: Sequence[Reader], interrupt: Callable[[Reader], None]
) -> Iterator[R]:
    """`read(item, reader)` of every item, in order, computed in one thread per reader (no
    two at once on the same reader), at most one item ahead of the readers. An exception
    in a read is raised in the caller at that item; a caller that stops early (or closes
    this generator) cancels what has not started and `interrupt(reader)`s each read in
    flight (from the caller's thread), then waits for them to end."""
    free: queue.SimpleQueue[Reader] = queue.SimpleQueue()
    for reader in readers:
        free.put(reader)
    in_flight: list[Reader] = []
    leaving = False

    def task(item: T) -> R:
        reader = free.get()
        in_flight.append(reader)
        try:
            if leaving:  # it started as the caller left: `interrupt` may not have seen it
                raise CancelledError
            return read(item, reader)
        finally:
            in_flight.remove(reader)
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
            leaving = True
            for reader in list(in_flight):
                interrupt(reader)
