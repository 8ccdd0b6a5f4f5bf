"""The text of a reply's `answer` field while the reply is still arriving (the Reduce reply
streams, SPEC §3.6): an incremental reader of the first JSON object's top-level `"answer"`
string. It never fails: on anything it does not follow it stops giving text, and the whole
reply is parsed and validated as usual once it is complete (`replies.py`).

Linear in the reply's size: runs of text are found and decoded with one regex each, and
what was read is dropped from the buffer before the next piece joins it."""

from __future__ import annotations

import json
import re

from .replies import repair_text

_STRUCTURE = re.compile(r'[{}\[\]",:]')
_STRING_STOP = re.compile(r'["\\]')
_ANSWER_STOP = re.compile(r'["\\]')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
#: A run of a JSON string's body that decodes on its own: plain characters and whole escapes.
_STRING_BODY = re.compile(r'(?:[^"\\]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
_HIGH_SURROGATE_TAIL = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}$")
#: A key longer than this (its JSON text) is not `answer`, however it is escaped.
_MAX_KEY_TEXT = 6 * len("answer") + 2


class AnswerStream:
    """Feed the reply's text piece by piece; each `feed` returns the answer text it revealed."""

    def __init__(self) -> None:
        self._buffer = ""
        self._pos = 0
        self._state = "seek"  # seek, structure, string, value, answer, done
        self._depth = 0
        self._expect_key = False
        self._key_start: int | None = None
        self._key: str | None = None

    @property
    def done(self) -> bool:
        return self._state == "done"

    def feed(self, piece: str) -> str:
        if self._state == "done" or not piece:
            return ""
        if self._pos:  # drop what was read: the buffer holds only what is still needed
            start = self._pos if self._key_start is None else min(self._pos, self._key_start)
            if self._key_start is not None:
                self._key_start -= start
            self._buffer, self._pos = self._buffer[start:], self._pos - start
        self._buffer += piece
        out: list[str] = []
        while self._step(out):
            pass
        return "".join(out)

    # -- states: each step reads what it can and says whether to go on --------------------

    def _step(self, out: list[str]) -> bool:
        buffer, pos = self._buffer, self._pos
        if pos >= len(buffer):
            return False
        state = self._state
        if state == "seek":
            start = buffer.find("{", pos)
            if start < 0:
                self._pos = len(buffer)
                return False
            self._pos, self._state, self._depth, self._expect_key = start + 1, "structure", 1, True
            return True
        if state == "structure":
            return self._structure()
        if state == "string":
            return self._skip_string()
        if state == "value":
            rest = buffer[pos:].lstrip()
            self._pos = len(buffer) - len(rest)
            if not rest:
                return False
            if rest[0] != '"':  # the answer is not a string: nothing to show early
                self._state = "done"
                return False
            self._pos += 1
            self._state = "answer"
            return True
        if state == "answer":
            return self._answer(out)
        return False

    def _structure(self) -> bool:
        match = _STRUCTURE.search(self._buffer, self._pos)
        if match is None:
            self._pos = len(self._buffer)
            return False
        ch = match.group()
        self._pos = match.end()
        if ch in "{[":
            self._depth += 1
        elif ch in "}]":
            self._depth -= 1
            if self._depth <= 0:  # the object ended without a string answer
                self._state = "done"
                return False
        elif ch == ",":
            self._expect_key = self._depth == 1
        elif ch == ":":
            if self._depth == 1 and self._key == "answer":
                self._state = "value"
            self._key = None
        else:  # a string: a key of the top object, or a value to skip
            self._key_start = match.start() if self._depth == 1 and self._expect_key else None
            self._expect_key = False
            self._state = "string"
        return True

    def _skip_string(self) -> bool:
        buffer = self._buffer
        while True:
            match = _STRING_STOP.search(buffer, self._pos)
            if match is None:
                self._pos = len(buffer)
                return False
            if match.group() == "\\":
                if match.end() >= len(buffer):  # the escaped character has not arrived
                    self._pos = match.start()
                    return False
                self._pos = match.end() + 1
                continue
            self._pos = match.end()
            break
        if self._key_start is not None:
            text = buffer[self._key_start : self._pos]
            self._key = _decoded_key(text) if len(text) <= _MAX_KEY_TEXT else None
            self._key_start = None
        self._state = "structure"
        return True

    def _answer(self, out: list[str]) -> bool:
        buffer = self._buffer
        if self._decode_run(out):
            return True
        match = _ANSWER_STOP.search(buffer, self._pos)
        if match is None:
            out.append(buffer[self._pos :])
            self._pos = len(buffer)
            return False
        out.append(buffer[self._pos : match.start()])
        self._pos = match.start()
        if match.group() == '"':
            self._state = "done"
            return False
        decoded, used = _escape(buffer, self._pos)
        if used == 0:  # the escape is not complete yet
            return False
        if decoded is None:  # not a JSON escape: the reply will fail validation anyway
            self._state = "done"
            return False
        out.append(decoded)
        self._pos += used
        return True


    def _decode_run(self, out: list[str]) -> bool:
        """Decode, in one go, the longest run from here that decodes on its own (plain text
        and whole escapes), short of a high surrogate whose pair may still be arriving.
        False when there is none: an escape that is split, invalid, or the string's end."""
        buffer, pos = self._buffer, self._pos
        end = _STRING_BODY.match(buffer, pos).end()  # type: ignore[union-attr]  # matches the empty string
        tail = _HIGH_SURROGATE_TAIL.search(buffer, pos, end)
        if tail is not None and _may_continue_as_escape(buffer[end : end + 6]):
            end = tail.start()
        if end == pos:
            return False
        out.append(repair_text(json.loads('"' + buffer[pos:end] + '"', strict=False)))
        self._pos = end
        return True


def _may_continue_as_escape(follow: str) -> bool:
    """Whether text that has arrived so far could still become a \\uXXXX escape."""
    return len(follow) < 6 and "\\u".startswith(follow[:2]) and _could_be_hex(follow[2:])


def _decoded_key(text: str) -> str | None:
    try:
        key = json.loads(text)
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def _escape(buffer: str, pos: int) -> tuple[str | None, int]:
    """The escape at `buffer[pos]` (a backslash): its text and length, (text, 0) when it has
    not fully arrived, (None, n) when it is invalid. A surrogate pair is one escape; a lone
    surrogate is U+FFFD, as `replies.py` repairs it."""
    if pos + 1 >= len(buffer):
        return "", 0
    kind = buffer[pos + 1]
    if kind in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[kind], 2
    if kind != "u":
        return None, 2
    if pos + 6 > len(buffer):
        return "", 0
    if not _HEX4.fullmatch(buffer, pos + 2, pos + 6):
        return None, 6
    code = int(buffer[pos + 2 : pos + 6], 16)
    if 0xDC00 <= code <= 0xDFFF:
        return "\ufffd", 6
    if not 0xD800 <= code <= 0xDBFF:
        return chr(code), 6
    # A high surrogate: a low one must follow as \uXXXX, else it stands alone.
    follow = buffer[pos + 6 : pos + 12]
    if _may_continue_as_escape(follow):
        return "", 0  # the low surrogate may still be arriving
    if len(follow) == 6 and follow[:2] == "\\u" and _HEX4.fullmatch(follow, 2):
        low = int(follow[2:], 16)
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
    return "\ufffd", 6


def _could_be_hex(text: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in text)
