"""Server-sent events (the `text/event-stream` of a streamed chat completion), read
incrementally from bytes: each complete event's `data` field, as text. Comments, `event:`,
`id:` and `retry:` lines are skipped; CR, LF and CRLF all end a line."""

from __future__ import annotations

import codecs
import re

_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEReader:
    def __init__(self) -> None:
        # (utf-8-sig: one byte order mark that starts the stream is not read, as the format says)
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._partial: list[str] = []  # the line that has not ended yet, in pieces
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        """The data of each event `chunk` completes, in order."""
        new = self._decoder.decode(chunk)
        ends_in_cr = bool(self._partial) and self._partial[-1].endswith("\r")
        if "\n" not in new and "\r" not in new and not ends_in_cr:
            if new:  # a long line arriving in many chunks is joined once, when it ends
                self._partial.append(new)
            return []
        text = "".join(self._partial) + new
        lines = _LINE_END.split(text)
        if text.endswith("\r"):  # a CR may be the first half of a CRLF still arriving
            lines[-2:] = [lines[-2] + "\r"] if lines[-1] == "" else lines[-2:]
        self._partial = [lines.pop()]
        events: list[str] = []
        for line in lines:
            if line == "":
                if self._data:
                    events.append("\n".join(self._data))
                    self._data = []
            elif line.startswith("data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(" ") else value)
        return events

    def close(self) -> list[str]:
        """The last event, when the stream ended without its blank line."""
        tail = self.feed(b"\n") if "".join(self._partial) else []
        if self._data:
            tail.append("\n".join(self._data))
            self._data = []
        return tail
