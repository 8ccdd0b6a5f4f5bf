"""The OpenAI-compatible HTTP client against the scripted loopback server."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import gzip
import itertools
import json
import socket
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from graphrag_tui.engine.ports import ChatMessage, ChatRequest, ModelError
from graphrag_tui.engine.reply_schemas import MAP_REPLY_SCHEMA, REDUCE_REPLY_SCHEMA
from graphrag_tui.errors import InputError
from graphrag_tui.models.content_encoding import CappedDecoder
from graphrag_tui.models.openai_http import OpenAIChatModel, key_pattern, mask_key, parse_retry_after, resolve_api_key
from tests.chat_server import Reply, ScriptedChatServer, completion

KEY = "sk-test-SECRET-0123456789"


def request(stage: str = "map", max_tokens: int | None = 512, schema=None) -> ChatRequest:
    return ChatRequest(
        stage=stage,
        messages=(
            ChatMessage(role="system", content="You answer in JSON."),
            ChatMessage(role="user", content="Question: q\n[Community ID: 1 | summary part 1]\nx"),
        ),
        query="q",
        content="[Community ID: 1 | summary part 1]\nx",
        max_tokens=max_tokens,
        json_schema=schema,
    )


def ok(received) -> Reply:
    return Reply(completion('{"answer": "a", "usefulness": 50}'))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_payload_json_object_with_max_tokens_and_key() -> None:
    with ScriptedChatServer(ok) as server:
        model = OpenAIChatModel(server.base_url + "/", "m1", KEY)
        try:
            text = (await model.complete(request(max_tokens=512))).text
        finally:
            await model.aclose()
        assert text == '{"answer": "a", "usefulness": 50}'
        (received,) = server.chat_requests()
        assert received.method == "POST"
        assert received.path == "/v1/chat/completions"
        assert received.headers["authorization"] == f"Bearer {KEY}"
        assert received.json == {
            "model": "m1",
            "messages": [
                {"role": "system", "content": "You answer in JSON."},
                {"role": "user", "content": "Question: q\n[Community ID: 1 | summary part 1]\nx"},
            ],
            "max_tokens": 512,
            "response_format": {"type": "json_object"},
        }


async def test_payload_json_schema_without_max_tokens_or_key() -> None:
    with ScriptedChatServer(ok) as server:
        model = OpenAIChatModel(server.base_url, "m2", None, response_format="json_schema")
        try:
            await model.complete(request("map", max_tokens=None, schema=MAP_REPLY_SCHEMA))
            await model.complete(request("reduce", max_tokens=0, schema=REDUCE_REPLY_SCHEMA))
        finally:
            await model.aclose()
        first, second = server.chat_requests()
        for r in (first, second):
            assert "authorization" not in r.headers
            assert "max_tokens" not in r.json
        assert first.json["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "map_reply", "schema": MAP_REPLY_SCHEMA, "strict": True},
        }
        assert second.json["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "reduce_reply", "schema": REDUCE_REPLY_SCHEMA, "strict": True},
        }


async def test_payload_text_omits_response_format_and_sends_sampling_options() -> None:
    with ScriptedChatServer(ok) as server:
        model = OpenAIChatModel(
            server.base_url, "m3", None, response_format="text", temperature=0.0, seed=7
        )
        try:
            await model.complete(request(max_tokens=None))
        finally:
            await model.aclose()
        (received,) = server.chat_requests()
        assert "response_format" not in received.json
        assert received.json["temperature"] == 0.0
        assert received.json["seed"] == 7


def test_reply_schemas() -> None:
    assert MAP_REPLY_SCHEMA["required"] == ["answer", "usefulness"]
    assert MAP_REPLY_SCHEMA["properties"]["answer"] == {"type": "string", "maxLength": 2000}
    assert MAP_REPLY_SCHEMA["properties"]["usefulness"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 100,
    }
    assert MAP_REPLY_SCHEMA["additionalProperties"] is False
    assert REDUCE_REPLY_SCHEMA["required"] == ["answer"]
    assert REDUCE_REPLY_SCHEMA["properties"] == {"answer": {"type": "string", "maxLength": 4000}}
    assert REDUCE_REPLY_SCHEMA["additionalProperties"] is False


async def test_http_500_is_http_error_with_status_and_body() -> None:
    body = '{"error": {"message": "model crashed"}}'
    with ScriptedChatServer(lambda r: Reply(body, status=500, headers={"Retry-After": "3"})) as server:
        model = OpenAIChatModel(server.base_url, "m", KEY)
        try:
            with pytest.raises(ModelError) as info:
                await model.complete(request())
        finally:
            await model.aclose()
    err = info.value
    assert err.kind == "http"
    assert err.status == 500
    assert err.raw_response == body
    assert err.message == f"HTTP 500: {body}"
    assert err.retry_after is None  # only for 429 / 503


async def test_429_retry_after_seconds() -> None:
    with ScriptedChatServer(
        lambda r: Reply('{"error": "slow down"}', status=429, headers={"Retry-After": "3"})
    ) as server:
        model = OpenAIChatModel(server.base_url, "m", None)
        try:
            with pytest.raises(ModelError) as info:
                await model.complete(request())
        finally:
            await model.aclose()
    assert info.value.kind == "rate_limited"
    assert info.value.status == 429
    assert (info.value.retry_after, info.value.wait_source) == (3.0, "retry-after")
    assert info.value.message.startswith("HTTP 429: ")


async def test_503_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    with ScriptedChatServer(
        lambda r: Reply("busy", status=503, headers={"Retry-After": when})
    ) as server:
        model = OpenAIChatModel(server.base_url, "m", None)
        try:
            with pytest.raises(ModelError) as info:
                await model.complete(request())
        finally:
            await model.aclose()
    assert info.value.status == 503
    assert 25 <= info.value.retry_after <= 31


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-1") is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=0.0) == 1445412480.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


async def test_2xx_without_completion_is_http_error() -> None:
    info = await failure(lambda r: Reply('{"choices": []}'))
    assert info.value.kind == "http"
    assert info.value.status == 200
    assert info.value.message == "unexpected response body"
    assert info.value.raw_response == '{"choices": []}'


@pytest.mark.parametrize("body", ["[1, 2, 3]", '"hello"', "null", "42"])
async def test_2xx_json_that_is_no_object_is_http_error(body: str) -> None:
    """It was an internal error (AttributeError: 'list' object has no attribute 'get')."""
    info = await failure(lambda r: Reply(body))
    assert (info.value.kind, info.value.status, info.value.message, info.value.raw_response) == (
        "http", 200, "unexpected response body", body)


async def test_slow_reply_times_out() -> None:
    with ScriptedChatServer(lambda r: Reply(completion("late"), delay=1.0)) as server:
        model = OpenAIChatModel(server.base_url, "m", None, timeout=0.2)
        try:
            started = time.monotonic()
            with pytest.raises(ModelError) as info:
                await model.complete(request())
            elapsed = time.monotonic() - started
        finally:
            await model.aclose()
    assert info.value.kind == "timeout"
    assert elapsed < 0.9


async def test_closed_port_is_transport_error() -> None:
    model = OpenAIChatModel(f"http://127.0.0.1:{free_port()}/v1", "m", KEY, timeout=5)
    try:
        with pytest.raises(ModelError) as info:
            await model.complete(request())
    finally:
        await model.aclose()
    assert info.value.kind == "transport"
    assert info.value.status is None
    assert KEY not in str(info.value)


async def test_key_never_in_messages_repr_or_description() -> None:
    # A server that echoes the Authorization header back in its error body.
    def echo(received) -> Reply:
        return Reply(json.dumps({"error": received.headers.get("authorization")}), status=401)

    with ScriptedChatServer(echo) as server:
        model = OpenAIChatModel(server.base_url, "m", KEY)
        try:
            with pytest.raises(ModelError) as info:
                await model.complete(request())
        finally:
            await model.aclose()
        assert server.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    err = info.value
    assert err.kind == "http" and err.status == 401
    for text in (str(err), err.message, err.raw_response, repr(err), repr(model), model.description):
        assert KEY not in text
    assert "***" in err.raw_response
    assert model.description == f"m @ 127.0.0.1:{server.base_url.split(':')[2].split('/')[0]}"
    assert KEY not in repr(vars(model))


def test_description_host_and_port() -> None:
    model = OpenAIChatModel("https://user:pw@api.openai.com/v1/", "gpt-4o", KEY)
    assert model.description == "gpt-4o @ api.openai.com"
    assert model.base_url == "https://api.openai.com/v1"
    assert "pw" not in repr(model)
    asyncio.run(model.aclose())


def test_bad_base_url_is_input_error() -> None:
    with pytest.raises(InputError):
        OpenAIChatModel("ftp://example.com/v1", "m", None)
    with pytest.raises(InputError):
        OpenAIChatModel("not a url", "m", None)


async def test_list_models() -> None:
    with ScriptedChatServer(ok, models=["llama3", "qwen2"]) as server:
        model = OpenAIChatModel(server.base_url, "m", KEY)
        try:
            assert await model.list_models() == ["llama3", "qwen2"]
        finally:
            await model.aclose()
        (received,) = server.requests
        assert received.method == "GET" and received.path == "/v1/models"
        assert received.headers["authorization"] == f"Bearer {KEY}"


async def test_list_models_failure() -> None:
    model = OpenAIChatModel(f"http://127.0.0.1:{free_port()}/v1", "m", None, timeout=5)
    try:
        with pytest.raises(ModelError) as info:
            await model.list_models()
    finally:
        await model.aclose()
    assert info.value.kind == "transport"


async def test_concurrent_requests_are_not_throttled() -> None:
    server = ScriptedChatServer(lambda r: Reply(completion("x"), delay=0.3))
    with server:
        model = OpenAIChatModel(server.base_url, "m", None)
        try:
            started = time.monotonic()
            results = await asyncio.gather(*(model.complete(request()) for _ in range(24)))
            elapsed = time.monotonic() - started
        finally:
            await model.aclose()
        assert [r.text for r in results] == ["x"] * 24
        assert server.max_in_flight == 24
        assert elapsed < 1.5


def test_resolve_api_key() -> None:
    env = {"OPENAI_API_KEY": "sk-openai", "MY_KEY": "sk-mine"}
    assert resolve_api_key("https://api.openai.com/v1", None, env) == "sk-openai"
    assert resolve_api_key("https://API.OpenAI.com/v1", None, env) == "sk-openai"
    assert resolve_api_key("http://localhost:11434/v1", None, env) is None
    assert resolve_api_key("https://api.openai.com.evil.example/v1", None, env) is None
    assert resolve_api_key("https://proxy.example/api.openai.com/v1", None, env) is None
    assert resolve_api_key("http://localhost:11434/v1", "MY_KEY", env) == "sk-mine"
    assert resolve_api_key("https://api.openai.com/v1", "MY_KEY", env) == "sk-mine"
    assert resolve_api_key("https://api.openai.com/v1", None, {}) is None


def test_resolve_api_key_unset_named_variable() -> None:
    with pytest.raises(InputError) as info:
        resolve_api_key("http://localhost/v1", "MISSING_KEY_VAR", {"OPENAI_API_KEY": "sk-openai"})
    assert "MISSING_KEY_VAR" in str(info.value)
    assert "sk-openai" not in str(info.value)


def test_key_pattern_matches_plain_json_escaped_and_percent_encoded_forms_in_any_mix() -> None:
    key = 'sk-a/b"c\\d'
    pattern = key_pattern(key)
    for form in (
        key,
        "\\u0073\\u006B-a\\/b\\\"c\\\\d",  # JSON: \u with upper-case hex, \/, \" and \\
        "\\u0073k-\\u0061\\u002fb\\u0022c\\u005cd",  # lower-case hex
        "%73%6b%2D%61%2f%62%22%63%5C%64",  # every byte percent-encoded, mixed case
        "%2573k-a%252Fb\"c\\d",  # encoded twice
        "\\\\u0073k-a/b\"c\\d",  # the backslash itself escaped (a JSON string inside JSON)
        "\\x73\\X6B-a\\x2fb\"c\\d",  # \x escapes, as Python's repr of bytes (h11's bad header line)
        "\\163\\153\\055a/b\"c\\d",  # octal escapes, and \U with eight digits
        "\\U00000073k-a\\U0000002Fb\"c\\d",
        "sk&#x2d;a&#47;b&quot;c&bsol;d",  # HTML character references: hexadecimal, decimal, named
        "&#X0073;&#00107;-a&sol;b&QUOT;c\\d",
    ):
        assert pattern.sub("***", f"<{form}>") == "<***>", form
    for near_miss in ("sk-a/b\"c", "SK-a/b\"c\\d", "sk-a/b\"c\\e"):
        assert pattern.search(near_miss) is None
    quotes = "sk-Q\"uo'te"  # Python's repr escapes ' once both quotes are in the text (httpx's bad status line)
    assert repr(quotes.encode()) == "b'sk-Q\"uo\\'te'"
    assert key_pattern(quotes).sub("***", repr(quotes.encode())) == "b'***'"


def test_the_key_in_hex_base64_or_markdown_escapes_is_masked_wherever_it_starts_and_in_a_stream() -> None:
    """A server that echoed the key encoded (a credential `u:key` in base64, its bytes in
    hex) showed it to anyone who decodes it."""
    from graphrag_tui.models.openai_http import _StreamMasker, secret_chars

    pattern = key_pattern(KEY)
    hex_key = KEY.encode().hex()
    for echoed, masked in (
        (base64.b64encode(KEY.encode() + b'"}').decode(), "***OSJ9"),
        (base64.b64encode(b"u:" + KEY.encode()).decode(), "dTpz***"),
        (base64.urlsafe_b64encode(b"x" + KEY.encode() + b"?>").decode(), "eHNr***ODk_Pg=="),
        (f"[{hex_key}] [{hex_key.upper()}]", "[***] [***]"),
        # Markdown's escapes of punctuation, which a report renders as the key (found by a probe)
        (KEY.replace("-", "\\-") + " " + KEY.replace("-", "\\\\\\-"), "*** ***"),
    ):
        assert mask_key(echoed, pattern) == masked, echoed
        masker = _StreamMasker(secret_chars([KEY]), pattern)
        pieces = [echoed[i:i + 5] for i in range(0, len(echoed), 5)]
        assert "".join(map(masker.feed, pieces)) + masker.flush() == masked
    short = "sk-1234"  # (shorter than 8: its encoded forms would match ordinary words)
    assert key_pattern(short).sub("***", base64.b64encode(short.encode()).decode()) == "c2stMTIzNA=="


#: Every character a terminal shows as nothing or safe_text.clean removes, by block.
INVISIBLE = ("\u00ad", "\u034f", "\u061c", "\u115f", "\u1160", "\u17b4", "\u17b5", *map(chr, range(0x180B, 0x1810)),
             *map(chr, range(0x200B, 0x2010)), *map(chr, range(0x2028, 0x202F)), *map(chr, range(0x2060, 0x2070)),
             "\u3164", *map(chr, range(0xFE00, 0xFE10)), "\ufeff", "\uffa0", *map(chr, range(0xFFF0, 0xFFFC)),
             *map(chr, range(0x1BCA0, 0x1BCA4)), *map(chr, range(0x1D173, 0x1D17B)),
             "\U000e0001", "\U000e0041", "\U000e0100", "\U000e0fff")


def json_escaped(ch: str) -> str:
    return json.dumps(ch, ensure_ascii=True)[1:-1]


def percent_encoded(ch: str) -> str:
    return "".join(f"%{b:02x}" for b in ch.encode())


def bytes_escaped(ch: str) -> str:
    return repr(ch.encode())[2:-1]


def html_referenced(ch: str) -> str:
    return f"&#x{ord(ch):x};"


def octal_escaped(ch: str) -> str:
    return "".join(f"\\{b:03o}" for b in ch.encode())


@pytest.mark.parametrize("hide", [lambda ch: ch, json_escaped, percent_encoded, bytes_escaped, html_referenced,
                                  lambda ch: f"&#{ord(ch)};", octal_escaped, lambda ch: f"\\U{ord(ch):08x}"],
                         ids=["raw", "json", "percent", "bytes", "html", "html-dec", "octal", "U"])
def test_the_key_with_invisible_characters_between_its_characters_is_masked(hide) -> None:
    """Shown on a terminal (or once safe_text.clean removed the bidi controls) it would read as the key."""
    pattern = key_pattern(KEY)
    for ch in INVISIBLE:
        hidden = KEY[:8] + hide(ch) + KEY[8:]
        assert mask_key(f"<{hidden}> and <{hide(ch).join(KEY)}>", pattern) == "<***> and <***>", repr(ch)
    assert mask_key("sk-" + "\u202e" * 3 + "\u200b" + KEY[3:] + " " + KEY, pattern) == "*** ***"


def test_the_key_echoed_in_a_bad_header_line_with_invisible_characters_is_masked() -> None:
    """h11 quotes a bad header line as Python's repr of its bytes: U+200B between the key's
    characters became \\xe2\\x80\\x8b, which read as the key on the screen."""
    pattern = key_pattern(KEY)
    line = repr(bytearray(("X-Echo Bearer " + "\u200b".join(KEY)).encode()))
    assert mask_key(f"illegal header line: {line}", pattern) == "illegal header line: bytearray(b'X-Echo Bearer ***')"
    assert mask_key("&ZeroWidthSpace;".join(KEY) + " " + "&shy;".join(KEY), pattern) == "*** ***"
    for near_miss in (KEY[:8] + "&#x41;" + KEY[8:], KEY[:8] + "\\x41" + KEY[8:], KEY[:8] + "&amp;" + KEY[8:],
                      KEY[:8] + "\\101" + KEY[8:], KEY[:8] + "\\U00000041" + KEY[8:]):
        assert mask_key(near_miss, pattern) == near_miss  # a visible character inside: not the key


def test_the_key_in_fullwidth_letters_is_masked_whole_streamed_or_in_part() -> None:
    """`ｓｋ－ＳＥＣＲＥＴ…` reads as the key, and NFKC (copy and paste, search) makes it the
    key (found by a probe)."""
    from graphrag_tui.models.openai_http import _StreamMasker, secret_chars

    pattern = key_pattern(KEY)
    fullwidth = "".join(chr(ord(ch) + 0xFEE0) for ch in KEY)
    mixed = "".join(chr(ord(ch) + 0xFEE0) if i % 2 else ch for i, ch in enumerate(KEY))
    for echoed in (fullwidth, mixed, "\u200b".join(fullwidth)):
        assert mask_key(f"key: {echoed}.", pattern) == "key: ***.", echoed
        masker = _StreamMasker(secret_chars([KEY]), pattern)
        assert "".join(masker.feed(echoed[i:i + 3]) for i in range(0, len(echoed), 3)) + masker.flush() == "***"
    assert mask_key("ｓｋ－ａｎｏｔｈｅｒ", pattern) == "ｓｋ－ａｎｏｔｈｅｒ"


def test_a_visible_character_inside_the_key_is_not_the_key() -> None:
    pattern = key_pattern(KEY)
    for near_miss in (KEY[:8] + "\u00e9" + KEY[9:], KEY[:8] + "é" + KEY[8:], KEY[:8] + " " + KEY[8:], KEY[:-1]):
        assert mask_key(near_miss, pattern) == near_miss


def test_a_key_with_a_percent_sign_and_a_backslash_is_masked_with_or_without_invisible_characters() -> None:
    key = "ab%e2x\\u0"
    pattern = key_pattern(key)
    assert mask_key(f"<{key}> <{key[:3]}\u200b{key[3:]}>", pattern) == "<***> <***>"


@pytest.mark.parametrize("filler", ["\x1b(B", "\x1b7", "\x1bM", "\x1bPq#0\x1b\\", "&#x0;", "&#0;", "&#x00;", "\ufffd",
                                    "\x00", "\x1b[0m", "\x1b]0;t\x07"])
def test_a_key_with_escape_sequences_nuls_or_replacement_characters_between_its_characters_is_masked(
        filler: str) -> None:
    """Two-character and DCS escape sequences (`tput sgr0` writes ESC ( B), HTML's `&#x0;`
    and U+FFFD (an undecodable byte) between the key's characters left it readable (found
    by a re-probe)."""
    assert mask_key(f"key: {filler.join(KEY)}.", key_pattern(KEY)) == "key: ***."


def test_a_key_split_by_invisible_characters_as_the_terminal_cleaning_shows_them_is_masked() -> None:
    from graphrag_tui.safe_text import clean

    shown = clean(KEY[:4] + "\u200b" + KEY[4:9] + "\U000E0041" + KEY[9:12] + "\U0001BCA1" + KEY[12:13] + "\ufff9"
                  + KEY[13:])
    assert all(f"⟨U+{code}⟩" in shown for code in ("200B", "E0041", "1BCA1", "FFF9"))
    assert mask_key(f"key: {shown}.", key_pattern(KEY)) == "key: ***."


@pytest.mark.parametrize("key", ["sk-abc\r", "sk-a\nb", " sk-abc", "sk-abc ", "sk-a b", "sk-é", "sk-\x00", "sk-\x85"])
def test_a_key_that_cannot_go_in_a_header_is_an_input_error_naming_the_variable(key: str) -> None:
    for base_url, variable in (("http://localhost/v1", "MY_KEY"), ("https://api.openai.com/v1", None)):
        with pytest.raises(InputError) as info:
            resolve_api_key(base_url, variable, {"MY_KEY": key, "OPENAI_API_KEY": key})
        name = variable or "OPENAI_API_KEY"
        assert str(info.value) == (
            f"the environment variable {name} holds an API key with a space, a control character "
            "(such as a trailing newline) or a non-ASCII character: remove it"
        )
    with pytest.raises(InputError):
        OpenAIChatModel("http://localhost/v1", "m", key)


def test_a_key_past_4096_characters_is_refused_and_a_long_one_is_masked_after_one_compile() -> None:
    """A 30 KB key held every model command for half a minute: the pattern that masks it was
    compiled twice, at some 0.3 ms a character each (found by a probe)."""
    with pytest.raises(InputError) as info:
        resolve_api_key("http://localhost/v1", "MY_KEY", {"MY_KEY": "sk-" + "a" * 4094})
    assert str(info.value) == ("the environment variable MY_KEY holds an API key of 4,097 characters: graphrag-tui "
                               "takes keys of up to 4,096")
    token = "eyJ" + "Tok3n_" * 682  # (4,095 characters, as long as an Entra ID token gets)
    model = OpenAIChatModel("http://localhost/v1", "m", token)
    assert model._key_pattern is key_pattern(token)  # one compile: the same pattern, from re's cache
    assert mask_key(f"refused {token}.", model._key_pattern) == "refused ***."


async def test_a_200_reply_echoing_the_key_is_masked_in_content_and_raw_response() -> None:
    escaped_key = "".join(f"\\\\u{ord(ch):04x}" for ch in KEY)  # escaped inside the content's JSON

    def echo(received) -> Reply:
        if received.json["messages"][-1]["content"] == "bad":
            return Reply('{"oops": "' + "".join(f"\\u{ord(ch):04X}" for ch in KEY) + '"}')
        percent_key = "".join(f"%{b:02X}" for b in KEY.encode())
        return Reply('{"choices": [{"message": {"content": "{\\"answer\\": \\"' + escaped_key + " " + percent_key + '\\"}"}}]}')

    with ScriptedChatServer(echo) as server:
        model = OpenAIChatModel(server.base_url, "m", KEY)
        try:
            content = (await model.complete(request())).text
            bad = request().model_copy(update={"messages": (ChatMessage(role="user", content="bad"),)})
            with pytest.raises(ModelError) as info:
                await model.complete(bad)
        finally:
            await model.aclose()
    assert content == '{"answer": "*** ***"}'
    assert (info.value.kind, info.value.message, info.value.raw_response) == (
        "http", "unexpected response body", '{"oops": "***"}'
    )


async def test_model_names_are_masked() -> None:
    def models(received) -> Reply:
        return Reply({"data": [{"id": received.headers["authorization"]}, {"id": "qwen2"}]})

    with ScriptedChatServer(ok, models_script=models) as server:
        model = OpenAIChatModel(server.base_url, "m", KEY)
        try:
            assert await model.list_models() == ["Bearer ***", "qwen2"]
        finally:
            await model.aclose()


async def test_a_never_ending_body_fails_at_the_cap() -> None:
    def endless() -> Iterator[bytes]:
        return itertools.repeat(b"x" * 1024)

    with ScriptedChatServer(lambda r: Reply(chunks=endless)) as server:
        model = OpenAIChatModel(server.base_url, "m", None, timeout=10, max_response_bytes=4096)
        try:
            started = time.monotonic()
            with pytest.raises(ModelError) as info:
                await model.complete(request())
            elapsed = time.monotonic() - started
        finally:
            await model.aclose()
    assert (info.value.kind, info.value.status, info.value.raw_response) == ("response_too_large", 200, None)
    assert info.value.message == (
        "the response to POST /chat/completions passed the 4096-byte cap (--max-response-bytes); stopped reading it"
    )
    assert elapsed < 5  # well before the 10 s timeout


async def failure(script, **settings: Any) -> pytest.ExceptionInfo[ModelError]:
    """The ModelError of one completion from a server that answers with `script` (`settings`: the model's)."""
    with ScriptedChatServer(script) as server:
        model = OpenAIChatModel(server.base_url, "m", None, **settings)
        try:
            with pytest.raises(ModelError) as info:
                await model.complete(request())
        finally:
            await model.aclose()
    return info


def gzip_bomb(inflated: int) -> bytes:
    """A completion whose content is `inflated` bytes of "a", gzipped (some 1/1000 of it)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts = [packer.compress(b'{"choices": [{"message": {"content": "')]
    block = b"a" * (1 << 20)
    parts += [packer.compress(block) for _ in range(inflated >> 20)]
    parts += [packer.compress(b'"}}]}'), packer.flush()]
    return b"".join(parts)


async def test_a_compressed_body_inflating_past_the_cap_stops_at_the_cap_with_bounded_memory() -> None:
    bomb = gzip_bomb(200 << 20)
    with ScriptedChatServer(lambda r: Reply(raw=bomb, headers={"Content-Encoding": "gzip"})) as server:
        model = OpenAIChatModel(server.base_url, "m", None, max_response_bytes=4096)
        tracemalloc.start()
        try:
            with pytest.raises(ModelError) as info:
                await model.complete(request())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            await model.aclose()
    assert (info.value.kind, info.value.message) == (
        "response_too_large",
        "the response to POST /chat/completions passed the 4096-byte cap (--max-response-bytes); stopped reading it",
    )
    assert peak < 4 << 20, peak  # httpx alone inflated one 64 KiB read to 67 MB
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


async def test_a_compressed_body_larger_than_the_cap_as_sent_stops_at_the_cap() -> None:
    """Empty gzip members inflate to nothing: the body as sent counts against the cap too
    (it was read until the call's timeout, a new inflater per member)."""
    body = gzip.compress(json.dumps(completion("x")).encode()) + gzip.compress(b"") * 20_000
    info = await failure(lambda r: Reply(raw=body, headers={"Content-Encoding": "gzip"}), max_response_bytes=100_000)
    assert (info.value.kind, info.value.message) == (
        "response_too_large",
        "the response to POST /chat/completions passed the 100000-byte cap (--max-response-bytes); stopped reading it",
    )


@pytest.mark.parametrize("after", [b"", b"\x00" * 512, b"trailing bytes", b"\x1f"])
def test_gzip_members_read_in_any_pieces_and_what_follows_the_last_is_ignored(after: bytes) -> None:
    """Read a byte at a time (a member's magic split between two reads); zero padding or
    bytes after the last member are ignored, as gzip(1) ignores them (they had failed the
    reply as damaged once members were read)."""
    body = b"".join(gzip.compress(part) for part in (b"first, ", b"", b"second"))
    decoder = CappedDecoder("gzip", cap=1000)
    sent = body + after
    assert b"".join(decoder.feed(sent[i:i + 1]) for i in range(len(sent))) + decoder.flush() == b"first, second"


@pytest.mark.parametrize("coding", ["gzip", "deflate-zlib", "deflate-raw", "gzip-twice", "gzip-members"])
async def test_a_gzip_or_deflate_body_within_the_cap_reads_as_sent(coding: str) -> None:
    body = json.dumps(completion('{"answer": "a", "usefulness": 50}')).encode()
    packed = {
        "gzip": lambda: gzip.compress(body), "gzip-twice": lambda: gzip.compress(gzip.compress(body)),
        # members one after another (as `cat a.gz b.gz`): it was cut at the end of the first
        "gzip-members": lambda: b"".join(gzip.compress(body[i:i + 40]) for i in range(0, len(body), 40)),
        "deflate-zlib": lambda: zlib.compress(body),
        "deflate-raw": lambda: zlib.compress(body)[2:-4],  # as some servers send deflate
    }[coding]()
    header = {"gzip": "gzip", "gzip-twice": "gzip, gzip", "gzip-members": "gzip"}.get(coding, "deflate")
    with ScriptedChatServer(lambda r: Reply(raw=packed, headers={"Content-Encoding": header})) as server:
        # (the body as sent counts against the cap too: members add their headers to it)
        model = OpenAIChatModel(server.base_url, "m", None, max_response_bytes=max(len(body), len(packed)))
        try:
            assert (await model.complete(request())).text == '{"answer": "a", "usefulness": 50}'
        finally:
            await model.aclose()


async def test_a_damaged_gzip_body_is_a_transport_error() -> None:
    packed = gzip.compress(json.dumps(completion("x")).encode())
    damaged = packed[:10] + b"\xff\xff\xff" + packed[13:]  # an invalid deflate block type
    info = await failure(lambda r: Reply(raw=damaged, headers={"Content-Encoding": "gzip"}))
    assert info.value.kind == "transport"
    assert info.value.message.startswith("DecodingError: the response's gzip coding is damaged (POST ")


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_a_compressed_body_cut_short_is_a_transport_error(coding: str) -> None:
    packed = {"gzip": gzip.compress, "deflate": zlib.compress}[coding](json.dumps(completion("x")).encode())
    info = await failure(lambda r: Reply(raw=packed[:-12], headers={"Content-Encoding": coding}))
    assert info.value.kind == "transport"  # before: invalid_json, as if the server had sent that
    assert info.value.message.startswith(f"DecodingError: the response's {coding} coding is cut short (POST ")


async def test_an_empty_body_with_a_coding_header_is_an_empty_body() -> None:
    assert (await failure(lambda r: Reply(raw=b"", headers={"Content-Encoding": "gzip"}))).value.kind == "invalid_json"


async def test_the_base_url_query_string_follows_every_endpoint_path() -> None:
    with ScriptedChatServer(ok) as server:
        model = OpenAIChatModel(server.base_url + "/?api-version=2024-01-01#frag", "m", None)
        try:
            await model.list_models()
            await model.complete(request())
        finally:
            await model.aclose()
        assert [r.path for r in server.requests] == [
            "/v1/models?api-version=2024-01-01", "/v1/chat/completions?api-version=2024-01-01"
        ]
    assert model.url_for("/models") == server.base_url + "/models?api-version=2024-01-01"


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://127.0.0.1:0/v1", "http://exa mple.com/v1", 5])
def test_a_malformed_base_url_is_an_input_error(url) -> None:
    with pytest.raises(InputError):
        OpenAIChatModel(url, "m", None)


def test_masking_a_hostile_run_of_backslashes_or_percent_25_takes_linear_time() -> None:
    pattern = key_pattern(KEY)
    for text in ("\\" * 2_000_000, "%" + "25" * 1_000_000, ("s" + "\\" * 1000) * 2000, ("s" + "\u200b" * 1000) * 2000,
                 ("sk-test-SEC" + "\\u202e" * 300) * 2000, "&#" * 1_000_000, "&#x" + "0" * 2_000_000,
                 ("sk-test-SEC" + "&#8203;" * 300) * 2000, ("sk-test-SEC" + "\\x80" * 300) * 2000):
        started = time.monotonic()
        assert mask_key(text, pattern) == text
        assert time.monotonic() - started < 10  # quadratic would take hours
