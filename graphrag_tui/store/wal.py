"""Whether a store's `-wal` file holds a committed transaction, as SQLite reads it.

A `-wal` beside a store without its `-shm` is read with the WAL index in memory
(store.py's `_readonly_connection`). When the file holds no committed transaction (it is
empty, as a writer in exclusive locking mode leaves it, or torn, or not a WAL at all),
SQLite deleted it as that connection closed: a live writer's next commit then went to a
file no longer there, and was lost at its crash. Such a file has nothing SQLite would read,
so the store is read without it, and it is left alone.

The format (https://www.sqlite.org/fileformat.html#the_write_ahead_log): a 32-byte header,
then frames of a 24-byte header and a page; a frame counts when its salts are the header's
and the running checksum matches, and a transaction is committed by a frame that gives the
database's size. The file is read only up to the end of its first committed transaction,
and its checksums only over the first CHECKED_BYTES of it: checking all of a 400 MB one in
Python took 9.6 s, twice for a plan (its second reader). Past them, the frames' salts and
commit marks are read (a seek a frame), and each file's answer is kept for the process."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import BinaryIO

_MAGIC = 0x377F0682  # its last bit: the checksum's words are big-endian
_VERSION = 3007000
_HEADER = 32
_FRAME_HEADER = 24
_MASK = 0xFFFFFFFF
#: The bytes of frames whose checksums are checked (SQLite's own check is C's, a hundred
#: times faster): a torn commit past them is taken for one, and SQLite then reads none.
CHECKED_BYTES = 4 << 20
#: (path, size, mtime, inode) -> the answer, for the process.
_known: dict[tuple[str, int, int, int], bool] = {}


def holds_commit(path: Path) -> bool:
    """Whether the WAL file at `path` holds at least one committed transaction. An
    unreadable file counts as holding one (SQLite is then left to read it as before)."""
    try:
        with path.open("rb") as wal:
            stat = os.fstat(wal.fileno())
            key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
            if key not in _known:
                _known[key] = _first_commit_found(wal)
            return _known[key]
    except OSError:
        return True


def _first_commit_found(wal: BinaryIO) -> bool:
    header = wal.read(_HEADER)
    if len(header) < _HEADER:
        return False
    magic, version, page_size, _, salt1, salt2, sum1, sum2 = struct.unpack(">8I", header)
    if magic & ~1 != _MAGIC or version != _VERSION or page_size & (page_size - 1) or not 512 <= page_size <= 65536:
        return False
    order = ">" if magic & 1 else "<"
    checksum = _checksum(order, header[:24], (0, 0))
    if checksum != (sum1, sum2):
        return False
    size = os.fstat(wal.fileno()).st_size
    for start in range(_HEADER, size - _FRAME_HEADER - page_size + 1, _FRAME_HEADER + page_size):
        checked = start < CHECKED_BYTES
        if not checked:
            wal.seek(start)
        frame = wal.read(_FRAME_HEADER + page_size if checked else _FRAME_HEADER)
        page, size_after, frame_salt1, frame_salt2, frame_sum1, frame_sum2 = struct.unpack(">6I", frame[:_FRAME_HEADER])
        if page == 0 or (frame_salt1, frame_salt2) != (salt1, salt2):
            return False
        if checked:
            checksum = _checksum(order, frame[_FRAME_HEADER:], _checksum(order, frame[:8], checksum))
            if checksum != (frame_sum1, frame_sum2):
                return False
        if size_after:
            return True
    return False


def _checksum(order: str, data: bytes, start: tuple[int, int]) -> tuple[int, int]:
    """SQLite's WAL checksum (walChecksumBytes) of `data`, from `start`."""
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    first, second = start
    for index in range(0, len(words), 2):
        first = (first + words[index] + second) & _MASK
        second = (second + words[index + 1] + first) & _MASK
    return first, second
