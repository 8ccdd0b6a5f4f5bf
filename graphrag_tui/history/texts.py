"""Texts as the history stores them: short ones as they are, long ones compressed."""

from __future__ import annotations

import zlib

#: Shorter texts are stored as they are: zlib allocates some 256 KiB of state per call, which
#: costs more than a short text saves.
COMPRESS_FROM = 2048


def pack_text(text: str) -> str | bytes:
    """`text` as stored: itself (SQLite TEXT) when short, else zlib (a BLOB)."""
    if len(text) < COMPRESS_FROM:
        return text
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


def pack_utf8(pieces: list[bytes]) -> str | bytes:
    """`pack_text` of a text already in UTF-8, in pieces (not joined when compressed)."""
    if sum(map(len, pieces)) < COMPRESS_FROM:
        return b"".join(pieces).decode("utf-8", "surrogatepass")
    compressor = zlib.compressobj(1)
    return b"".join([*map(compressor.compress, pieces), compressor.flush()])


def unpack_text(data: str | bytes) -> str:
    return data if isinstance(data, str) else zlib.decompress(data).decode("utf-8", "surrogatepass")
