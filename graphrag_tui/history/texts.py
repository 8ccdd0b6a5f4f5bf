"""Texts as the history stores them: short ones as they are, long ones compressed.

A compressed text is RAW_DEFLATE, then a raw deflate stream at zlib's fastest level: no
zlib header and no Adler-32 (SQLite checks nothing either way, and the checksum costs a
seventh of compressing). Versions before 5 wrote zlib streams, which never start with it."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from contextvars import ContextVar

#: Shorter texts are stored as they are: zlib allocates some 256 KiB of state per call, which
#: costs more than a short text saves.
COMPRESS_FROM = 2048
RAW_DEFLATE = b"\x00"


def pack_text(text: str) -> str | bytes:
    """`text` as stored: itself (SQLite TEXT) when short, else compressed (a BLOB)."""
    if len(text) < COMPRESS_FROM:
        return text
    return pack_utf8(text.encode("utf-8", "surrogatepass"))


def pack_utf8(data: bytes) -> str | bytes:
    """`pack_text` of a text already in UTF-8."""
    if len(data) < COMPRESS_FROM:
        return data.decode("utf-8", "surrogatepass")
    compressor = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    return b"".join((RAW_DEFLATE, compressor.compress(data), compressor.flush()))


#: A compressed text unpacks to at most this many times its size, or EXPANSION_FLOOR: texts
#: compress some 3 to 10 times, and deflate reaches 1,000 (a 1 MB cell of a hostile file
#: unpacked to 1 GiB and took 2 GB of memory). As import-graphrag bounds a Parquet table.
MAX_EXPANSION = 100
EXPANSION_FLOOR = 256 << 20


#: What one run's compressed texts (its plan, contents, groups of records and result) may
#: unpack to in all: each within its own limit, five 200 MiB groups of a 1.2 MB file took
#: 6 GB to read and wrote a 1.7 GB export.
RUN_UNPACK_LIMIT = 512 << 20
#: The bytes left to the run being read (`run_unpack_limit`), on this thread, and its limit.
_left: ContextVar[list[int] | None] = ContextVar("unpack_left", default=None)


@contextlib.contextmanager
def run_unpack_limit() -> Iterator[None]:
    """Within it, the texts unpacked (on this thread) add up to at most RUN_UNPACK_LIMIT bytes."""
    token = _left.set([RUN_UNPACK_LIMIT, RUN_UNPACK_LIMIT])
    try:
        yield
    finally:
        _left.reset(token)


def unpack_text(data: str | bytes) -> str:
    """A stored text; ValueError for one that would unpack past its limit, or past what is
    left of the run's (`run_unpack_limit`)."""
    if isinstance(data, str):
        return data
    left = _left.get()
    limit = max(EXPANSION_FLOOR, MAX_EXPANSION * len(data))
    if left is not None and left[0] < limit:
        limit = left[0]
        if left[0] == 0 and data:  # nothing left; decompress(…, 0) would mean no limit at all
            raise _past_run_limit(left)
    if data[:1] == RAW_DEFLATE:
        decompressor, packed = zlib.decompressobj(-zlib.MAX_WBITS), memoryview(data)[1:]
    else:  # a zlib stream (versions before 5)
        decompressor, packed = zlib.decompressobj(), memoryview(data)
    unpacked = decompressor.decompress(packed, limit)
    if decompressor.unconsumed_tail or (len(unpacked) == limit and decompressor.decompress(b"", 1)):
        if left is not None and limit == left[0]:
            raise _past_run_limit(left)
        raise ValueError(f"a recorded text of {len(data)} bytes unpacks to more than {limit} "
                         f"(over {MAX_EXPANSION} times its size): graphrag-tui never writes one")
    if left is not None:
        left[0] -= len(unpacked)
    return unpacked.decode("utf-8", "surrogatepass")


def _past_run_limit(left: list[int]) -> ValueError:
    return ValueError(f"a run's recorded texts unpack to more than {left[1]:,} bytes in all: graphrag-tui never "
                      "writes such a run")
