"""A response body's Content-Encoding undone under the size cap.

httpx inflates each network read whole: one 64 KiB read of a gzip bomb became 67 MB before
any cap could look at it. Here a read is inflated to at most the cap, and past it
`CapPassed` is raised, so a body that inflates past the cap never takes more memory than
the cap. gzip and deflate (what the client accepts) are undone; any other coding passes as
it came, as httpx passes one it does not know."""

from __future__ import annotations

import zlib

import httpx

#: What the client accepts: the codings undone here.
ACCEPT_ENCODING = "gzip, deflate"


#: The first bytes of a gzip member.
GZIP_MAGIC = b"\x1f\x8b"


class CapPassed(Exception):
    """The body inflates to more than the cap."""


class _Stage:
    """One coding: gzip, or deflate as a zlib stream or (as some servers send it) raw."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if name in ("gzip", "x-gzip") else zlib.MAX_WBITS)
        self._started = False
        #: Whether any coded byte came (an empty body with the header is no coding to undo).
        self._fed = False
        #: After a gzip member: the first byte of what may be the next one, or True once what
        #: follows is not one (zero padding, trailing bytes: ignored, as gzip(1) ignores them).
        self._after: bytes | bool = b""

    def feed(self, data: bytes, cap: int) -> bytes:
        self._fed = self._fed or bool(data)
        out = b""
        while True:
            if data and self.name != "deflate" and self._inflater.eof:  # gzip's next member (as `cat a.gz b.gz`)
                if self._after is True:
                    return out
                data, self._after = self._after + data, b""
                if len(data) < len(GZIP_MAGIC):
                    self._after = data if GZIP_MAGIC.startswith(data) else True
                    return out
                if not data.startswith(GZIP_MAGIC):
                    self._after = True
                    return out
                self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
            try:
                out += self._inflater.decompress(data, cap + 1 - len(out))
            except zlib.error:
                if self.name != "deflate" or self._started:
                    raise httpx.DecodingError(f"the response's {self.name} coding is damaged") from None
                self._inflater, self._started = zlib.decompressobj(-zlib.MAX_WBITS), True
                return self.feed(data, cap)
            self._started = True
            if len(out) > cap:
                raise CapPassed
            data = self._inflater.unused_data
            if not data or self.name == "deflate":
                return out

    def flush(self) -> bytes:
        try:
            rest = self._inflater.flush()
        except zlib.error:
            raise httpx.DecodingError(f"the response's {self.name} coding is damaged") from None
        if self._fed and not self._inflater.eof:  # zlib says nothing of a stream cut short
            raise httpx.DecodingError(f"the response's {self.name} coding is cut short")
        return rest


class CappedDecoder:
    """Undoes `content_encoding` (the header's value) read by read; raises CapPassed as soon
    as one read inflates past `cap` bytes (the caller counts the reads' sum)."""

    def __init__(self, content_encoding: str, cap: int) -> None:
        names = [name.strip().lower() for name in content_encoding.split(",")]
        # applied in the order listed, so undone in reverse
        self._stages = [_Stage(name) for name in reversed(names) if name in ("gzip", "x-gzip", "deflate")]
        self._cap = cap

    def feed(self, data: bytes) -> bytes:
        for stage in self._stages:
            data = stage.feed(data, self._cap)
        return data

    def flush(self) -> bytes:
        data = b""
        for stage in self._stages:
            data = stage.feed(data, self._cap) + stage.flush()
        return data
