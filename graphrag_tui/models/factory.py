"""Which model answers: the built-in extractive one, an OpenAI-compatible endpoint, or the
embedded local LLM. Settings come from flags, then the user's defaults."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..engine import (
    DEFAULT_MAX_RATE_WAIT,
    ChatModel,
    ModelError,
    RateLimits,
    ascii_integer,
    has_surrogates,
    parse_max_rate_wait,
    parse_per_minute,
    shown,
)
from ..errors import InputError
from .azure import classic_deployment
from .extractive import ExtractiveModel
from .openai_http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_EXTRA_BODY_DEPTH,
    MAX_RESPONSE_BYTES,
    MAX_TOKENS_FIELDS,
    OWN_HEADERS,
    RESPONSE_FORMATS,
    MaxTokensField,
    OpenAIChatModel,
    ResponseFormat,
    check_extra_body,
    check_header_name,
    check_headers,
    key_pattern,
    looks_blank,
    mask_key,
    parse_base_url,
    resolve_api_key,
)

DEFAULT_TIMEOUT = 120.0


class ModelSettings(BaseModel):
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    response_format: ResponseFormat = "json_object"
    #: Past this many bytes a response is not read further (`response_too_large`).
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    local_llm: bool = False
    #: Parallel slots of the local LLM's server: the Map concurrency.
    local_slots: int = 1
    #: --rpm, --tpm, --max-rate-wait (issue 12).
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_rate_wait: float = DEFAULT_MAX_RATE_WAIT
    # Request fields of an endpoint (None: not sent, the server's default applies).
    temperature: float | None = None
    top_p: float | None = None
    #: The model's sampling seed (`seed` in the body); --seed is the shuffle's.
    model_seed: int | None = None
    reasoning_effort: str | None = None
    max_tokens_field: MaxTokensField = "auto"
    #: Send the key raw in this header instead of `Authorization: Bearer` (or Azure's api-key).
    api_key_header: str | None = None
    headers: dict[str, str] = {}
    extra_body: dict[str, Any] = {}

    @property
    def kind(self) -> Literal["extractive", "http", "local"]:
        return "local" if self.local_llm else "http" if self.base_url else "extractive"

    @property
    def rate_limits(self) -> RateLimits:
        """The run's rate limits. The caps are the endpoint's: the extractive model and the
        local LLM answer uncapped, even when the config caps the endpoint."""
        capped = self.kind == "http"
        return RateLimits(
            requests_per_minute=self.requests_per_minute if capped else None,
            tokens_per_minute=self.tokens_per_minute if capped else None,
            max_rate_wait=self.max_rate_wait,
        )


def parse_timeout(value: Any, label: str = "--timeout") -> float:
    """Seconds: a number, or a decimal number in ASCII digits; `label` names the setting."""
    seconds = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str) and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", value.strip()):
        seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"{label} must be a positive number of seconds, got {shown(value)}")
    return seconds


def parse_max_response_bytes(value: Any, label: str = "--max-response-bytes") -> int:
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str):
        number = ascii_integer(value)
    if number is None or number <= 0:
        raise InputError(f"{label} must be a positive whole number of bytes, got {shown(value)}")
    if number > MAX_RESPONSE_BYTES:  # (zlib takes at most 2**63 - 1: a larger cap failed every compressed reply)
        raise InputError(f"{label} must be at most {MAX_RESPONSE_BYTES} bytes (1 TiB), got {shown(value)}")
    return number


def _number(value: Any, label: str, low: float, high: float) -> float:
    number = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", value.strip()):
        number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise InputError(f"{label} must be a number from {low:g} to {high:g}, got {shown(value)}")
    return number


def parse_temperature(value: Any, label: str = "--temperature") -> float:
    return _number(value, label, 0.0, 2.0)


def parse_top_p(value: Any, label: str = "--top-p") -> float:
    return _number(value, label, 0.0, 1.0)


def parse_model_seed(value: Any, label: str = "--model-seed") -> int:
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str):
        number = ascii_integer(value)
    if number is None or not -(2**63) <= number < 2**63:
        raise InputError(f"{label} must be a whole number (a 64-bit integer), got {shown(value)}")
    return number


def parse_reasoning_effort(value: Any, label: str = "--reasoning-effort") -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[a-z_]{1,20}", value):
        raise InputError(f"{label} must be a word such as minimal, low, medium or high, got {shown(value)}")
    return value


def parse_max_tokens_field(value: Any, label: str = "--max-tokens-field") -> str:
    if value not in MAX_TOKENS_FIELDS:
        raise InputError(f"{label} must be one of {', '.join(MAX_TOKENS_FIELDS)}, got {shown(value)}")
    return str(value)


def parse_api_key_header(value: Any, label: str = "--api-key-header") -> str:
    name = check_header_name(value, label)
    if name.lower() in OWN_HEADERS:  # `Host` sent the key as the request's host; Content-Length broke every request
        raise InputError(f"{label} cannot be {name}: the client sets it")
    return name


def parse_headers(value: Any, label: str = "--header") -> dict[str, str]:
    """A table of headers; from a flag, `NAME: VALUE` texts; from a variable, a JSON object."""
    if isinstance(value, str):
        value = _json_object(value, label)
    if isinstance(value, Sequence) and not isinstance(value, str):
        table: dict[str, str] = {}
        for item in value:
            name, colon, text = str(item).partition(":")
            if not colon:
                raise InputError(f"{label} must be NAME: VALUE, got {shown(item)}")
            table[name.strip()] = text.strip()
        value = table
    return check_headers(value, label)


def parse_extra_body(value: Any, label: str = "--extra-body") -> dict[str, Any]:
    """Extra body fields: a table, or a JSON object's text."""
    if isinstance(value, str):
        value = _json_object(value, label)
    return check_extra_body(value, label)


def _json_object(text: str, label: str) -> Any:
    try:
        value = json.loads(text)
    except RecursionError:  # (an object all the same: "must be a JSON object" was wrong)
        raise InputError(f"{label} is nested deeper than {MAX_EXTRA_BODY_DEPTH} levels") from None
    except json.JSONDecodeError:
        raise InputError(f"{label} must be a JSON object") from None
    except ValueError:  # (past Python's limit of digits for an integer)
        raise InputError(f"{label} holds a number of more than {sys.get_int_max_str_digits():,} digits") from None
    if not isinstance(value, dict):
        raise InputError(f"{label} must be a JSON object, got {shown(value)}")
    return value


#: The endpoint's request settings: each parser checks a flag's text or a config value.
REQUEST_SETTINGS = {
    "temperature": parse_temperature,
    "top_p": parse_top_p,
    "model_seed": parse_model_seed,
    "reasoning_effort": parse_reasoning_effort,
    "max_tokens_field": parse_max_tokens_field,
    "api_key_header": parse_api_key_header,
}
#: Tables merged from the config (or variable) and then the flags, name by name.
REQUEST_TABLES = {"headers": parse_headers, "extra_body": parse_extra_body}


#: What --api-key-env may name: a variable as shells write them (a key typed there instead
#: was shown back in "names the environment variable sk-…, which is not set").
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


def resolve_model_settings(flags: Mapping[str, Any], defaults: Mapping[str, Any]) -> ModelSettings:
    """Each setting from the flags, else the user's defaults; checked."""

    def pick(name: str) -> Any:
        value = flags.get(name)
        return defaults.get(name) if value is None else value

    local_llm = bool(flags.get("local_llm"))
    base_url = flags.get("base_url")
    if local_llm and base_url:
        raise InputError("--local-llm and --base-url cannot be used together: choose one model")
    if not local_llm and base_url is None:
        base_url = defaults.get("base_url")
    response_format = pick("response_format") or "json_object"
    if response_format not in RESPONSE_FORMATS:
        raise InputError(f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}, got {response_format!r}")
    key_variable = pick("api_key_env") or None
    if key_variable is not None and not (isinstance(key_variable, str) and VARIABLE_NAME.fullmatch(key_variable)):
        where = "--api-key-env" if flags.get("api_key_env") is not None else "api_key_env (config or environment)"
        raise InputError(f"{where} must be the name of an environment variable (letters, digits and _, not starting "
                         "with a digit); it is not shown, as it may be the key itself")
    timeout = pick("timeout")
    max_response_bytes = pick("max_response_bytes")
    rpm, tpm, max_rate_wait = pick("requests_per_minute"), pick("tokens_per_minute"), pick("max_rate_wait")
    request: dict[str, Any] = {}
    for name, parse in REQUEST_SETTINGS.items():
        value = pick(name)
        if value is not None:
            request[name] = parse(value) if flags.get(name) is not None else value  # config values are checked
    for name, parse_table in REQUEST_TABLES.items():
        table = dict(defaults.get(name) or {})
        if flags.get(name) is not None:
            table.update(parse_table(flags[name]))
        request[name] = table
    return ModelSettings(
        base_url=base_url or None,
        model=pick("model") or None,
        api_key_env=key_variable,
        timeout=DEFAULT_TIMEOUT if timeout is None else parse_timeout(timeout),
        response_format=response_format,
        max_response_bytes=(
            DEFAULT_MAX_RESPONSE_BYTES if max_response_bytes is None else parse_max_response_bytes(max_response_bytes)
        ),
        local_llm=local_llm,
        requests_per_minute=None if rpm is None else parse_per_minute(rpm, "--rpm"),
        tokens_per_minute=None if tpm is None else parse_per_minute(tpm, "--tpm"),
        max_rate_wait=(
            DEFAULT_MAX_RATE_WAIT if max_rate_wait is None else parse_max_rate_wait(max_rate_wait, "--max-rate-wait")
        ),
        **request,
    )


def _usable_listed_name(name: str) -> bool:
    """A name the server listed that can be sent and recorded: not blank, nor only invisible
    characters (it was sent as `model: ""`), not too long, UTF-8 (what a terminal would act
    on is shown inert)."""
    return len(name) <= MAX_LISTED_NAME and not has_surrogates(name) and not looks_blank(name)


def model_name(settings: ModelSettings) -> str | None:
    """The model that answers, when the settings name it: --model, else the deployment of a
    classic Azure URL; None when only the endpoint's list can say (or it is not an endpoint)."""
    if settings.kind != "http":
        return None
    if settings.model:
        return settings.model
    assert settings.base_url is not None
    return classic_deployment(parse_base_url(settings.base_url))


#: The longest model name taken from a server's list: ids are tens of characters; one of
#: megabytes would be sent with every request and shown on every line that names the model.
MAX_LISTED_NAME = 256


#: Shorter keys (test placeholders) are not looked for in names: "v1" is in every base URL.
KEY_CHECKED_FROM = 8


def _key_finder(api_key: str | None) -> Callable[[str], bool]:
    """Whether a text holds the key, in any form the masking knows (openai_http.key_pattern).
    A model name or base URL that does would put it on the screen and in the run history
    (a settings.yaml's `model: ${OPENAI_API_KEY}`)."""
    if api_key is None or len(api_key) < KEY_CHECKED_FROM:
        return lambda text: False
    pattern = key_pattern(api_key)
    return lambda text: mask_key(text, pattern) != text


async def open_model(settings: ModelSettings, environ: Mapping[str, str]) -> ChatModel:
    """A ready model. For an endpoint without --model, the first model it lists answers."""
    if settings.kind == "extractive":
        return ExtractiveModel()
    if settings.kind == "local":
        from .local_llm import open_local_model

        return await open_local_model(settings)
    assert settings.base_url is not None
    api_key = resolve_api_key(settings.base_url, settings.api_key_env, environ)
    holds_key = _key_finder(api_key)
    if holds_key(settings.base_url):
        raise InputError("the base URL holds the API key, and a base URL is shown and recorded: give the key "
                         "only as the variable --api-key-env names")

    def endpoint(model: str) -> OpenAIChatModel:
        return OpenAIChatModel(
            settings.base_url, model, api_key, settings.timeout, settings.response_format,
            temperature=settings.temperature,
            seed=settings.model_seed,
            max_response_bytes=settings.max_response_bytes,
            top_p=settings.top_p,
            reasoning_effort=settings.reasoning_effort,
            headers=settings.headers,
            extra_body=settings.extra_body,
            max_tokens_field=settings.max_tokens_field,
            api_key_header=settings.api_key_header,
            environ=environ,
        )

    name = model_name(settings)
    if name:
        if holds_key(name):
            raise InputError("the model name holds the API key, and a model name is shown and recorded: "
                             "give the model's own name")
        return endpoint(name)
    probe = endpoint("?")
    try:
        names = await probe.list_models()
    except ModelError as error:
        raise InputError(
            f"--model was not given and GET {probe.base_url}/models failed ({error.message}): name a model with --model"
        ) from None
    finally:
        await probe.aclose()
    if not names:
        raise InputError(f"--model was not given and {probe.base_url}/models lists no model: name one with --model")
    if not _usable_listed_name(names[0]):
        raise InputError(f"--model was not given and the first model {probe.base_url}/models lists is no usable name "
                         f"({shown(names[0])}): name one with --model")
    return endpoint(names[0])
