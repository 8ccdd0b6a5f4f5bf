"""The incremental reader of a streamed reply's `answer` (engine/answer_stream.py), the SSE
reader (models/sse.py) and the key masking of streamed text, against hostile input: every
split of escapes and surrogate pairs, keys masked however the pieces fall, large bodies in
linear time."""

from __future__ import annotations

import json
import time

import pytest

from graphrag_tui.engine.answer_stream import AnswerStream
from graphrag_tui.models.openai_http import _StreamMasker, key_pattern
from graphrag_tui.models.sse import SSEReader

ANSWERS = [
    "plain",
    'quotes " and \\ backslashes / slashes',
    "controls \n\t\r\b\f and \u0001",
    "accents é ü and CJK 中文",
    "astral 😀 and 𝄞",
    "",
]


def fed(text: str, size: int) -> str:
    stream = AnswerStream()
    return "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size))


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_every_split_gives_the_answer_exactly(answer: str, ensure_ascii: bool) -> None:
    reply = json.dumps({"usefulness": 3, "answer": answer, "after": "x"}, ensure_ascii=ensure_ascii)
    for size in range(1, 14):
        assert fed(reply, size) == answer
    for cut in range(len(reply)):  # every place one split can fall
        stream = AnswerStream()
        assert stream.feed(reply[:cut]) + stream.feed(reply[cut:]) == answer


def test_lone_surrogates_become_replacement_characters_as_the_parser_repairs_them() -> None:
    reply = '{"answer": "a\\ud83d b \\ude00 c \\ud83d\\u0041 \\ud83d"}'
    for size in (1, 2, 3, 6, 100):
        assert fed(reply, size) == "a\ufffd b \ufffd c \ufffdA \ufffd"


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ('```json\n{"answer": "fenced"}\n```', "fenced"),
        ('Sure! {"answer": "after prose"}', "after prose"),
        ('{"\\u0061nswer": "escaped key"}', "escaped key"),
        ('{"meta": {"answer": "nested"}, "list": ["answer", {"answer": "x"}], "answer": "top"}', "top"),
        ('{"answer": 42}', ""),
        ('{"answer": null, "x": "y"}', ""),
        ('{"other": "no answer"}', ""),
        ("no json at all", ""),
        ('{"answer": "bad \\q escape"}', "bad "),
        ('{"answer": "cut \\u12', "cut "),
        ('{"answer": "unterminated', "unterminated"),
    ],
)
def test_what_streams_from_odd_replies(reply: str, answer: str) -> None:
    for size in (1, 4, 1000):
        assert fed(reply, size) == answer


def test_a_large_reply_is_read_in_linear_time() -> None:
    body = json.dumps({"skip": "y" * 2_000_000, "answer": "é\\" * 500_000})
    started = time.perf_counter()
    assert fed(body, 4096) == "é\\" * 500_000
    assert time.perf_counter() - started < 5


def test_sse_events_across_every_split() -> None:
    data = b'data: {"a":1}\r\n\r\n: comment\nevent: x\nid: 3\ndata: x\ndata: y\n\ndata:[DONE]\n\ndata: z\r\rdata: \xc3\xa9\r'
    for size in range(1, 9):
        reader, events = SSEReader(), []
        for i in range(0, len(data), size):
            events += reader.feed(data[i : i + size])
        events += reader.close()
        assert events == ['{"a":1}', "x\ny", "[DONE]", "z", "é"]


def test_one_leading_byte_order_mark_is_ignored_as_the_sse_format_says() -> None:
    """It made the first line `\\ufeffdata: ...`, an unknown field: the first event was lost."""
    data = b'\xef\xbb\xbfdata: {"a":1}\n\ndata: \xef\xbb\xbfx\n\n'
    for size in range(1, 5):
        reader, events = SSEReader(), []
        for i in range(0, len(data), size):
            events += reader.feed(data[i : i + size])
        assert events + reader.close() == ['{"a":1}', "\ufeffx"]


def test_a_long_sse_line_in_many_chunks_is_joined_once() -> None:
    reader = SSEReader()
    started = time.perf_counter()
    reader.feed(b"data: ")
    for _ in range(4000):
        assert reader.feed(b"x" * 2048) == []
    assert reader.feed(b"\n\n") == ["x" * 2048 * 4000]
    assert time.perf_counter() - started < 2


KEY = "sk-test/SECRET+4242"


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(ch):04x}" for ch in text)


@pytest.mark.parametrize("form", [KEY, escaped(KEY), "%73%6b" + KEY[2:], KEY.replace("/", "\\/"),
                                  "&#x73;&#107;" + KEY[2:], KEY.replace("/", "&sol;"), "\\x73\\x6B" + KEY[2:]])
def test_the_key_is_masked_in_streamed_text_however_the_pieces_fall(form: str) -> None:
    """(An HTML reference cut after `&#x` was released as it stood: `&`, `#` and `;` were not
    held back.)"""
    text = f"before {form} middle {form}. after"
    for size in range(1, 12):
        masker = _StreamMasker(frozenset(KEY), key_pattern(KEY))
        out = "".join(masker.feed(text[i : i + size]) for i in range(0, len(text), size)) + masker.flush()
        assert out == "before *** middle ***. after"


def test_without_a_key_the_text_passes_as_it_comes() -> None:
    masker = _StreamMasker(frozenset(), None)
    assert [masker.feed("ab"), masker.feed("cd"), masker.flush()] == ["ab", "cd", ""]
