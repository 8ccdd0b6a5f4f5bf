"""Texts as the history stores them: short ones as they are, long ones compressed.

A compressed text is RAW_DEFLATE, then a raw deflate stream at zlib's fastest level: no
zlib header and no Adler-32 (SQLite checks nothing either way, and the checksum costs a
seventh of compressing). Versions before 5 wrote zlib streams, which never start with it."""

from __future__ import annotations

import zlib

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


def unpack_text(data: str | bytes) -> str:
    """A stored text; ValueError for one that would unpack past its limit."""
    if isinstance(data, str):
        return data
    limit = max(EXPANSION_FLOOR, MAX_EXPANSION * len(data))
    if data[:1] == RAW_DEFLATE:
        decompressor, packed = zlib.decompressobj(-zlib.MAX_WBITS), memoryview(data)[1:]
    else:  # a zlib stream (versions before 5)
        decompressor, packed = zlib.decompressobj(), memoryview(data)
    unpacked = decompressor.decompress(packed, limit)
    if decompressor.unconsumed_tail or (len(unpacked) == limit and decompressor.decompress(b"", 1)):
        raise ValueError(f"a recorded text of {len(data)} bytes unpacks to more than {limit} "
                         f"(over {MAX_EXPANSION} times its size): graphrag-tui never writes one")
    return unpacked.decode("utf-8", "surrogatepass")
