"""Which model answers: the built-in extractive one, an OpenAI-compatible endpoint, or the
embedded local LLM. Settings come from flags, then the user's defaults."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from ..engine import (
    DEFAULT_MAX_RATE_WAIT,
    ChatModel,
    ModelError,
    RateLimits,
    ascii_integer,
    parse_max_rate_wait,
    parse_per_minute,
    shown,
)
from ..errors import InputError
from .extractive import ExtractiveModel
from .openai_http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    RESPONSE_FORMATS,
    OpenAIChatModel,
    ResponseFormat,
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
    return number


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
    timeout = pick("timeout")
    max_response_bytes = pick("max_response_bytes")
    rpm, tpm, max_rate_wait = pick("requests_per_minute"), pick("tokens_per_minute"), pick("max_rate_wait")
    return ModelSettings(
        base_url=base_url or None,
        model=pick("model") or None,
        api_key_env=pick("api_key_env") or None,
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
    )


async def open_model(settings: ModelSettings, environ: Mapping[str, str]) -> ChatModel:
    """A ready model. For an endpoint without --model, the first model it lists answers."""
    if settings.kind == "extractive":
        return ExtractiveModel()
    if settings.kind == "local":
        from .local_llm import open_local_model

        return await open_local_model(settings)
    assert settings.base_url is not None
    api_key = resolve_api_key(settings.base_url, settings.api_key_env, environ)
    def endpoint(model: str) -> OpenAIChatModel:
        return OpenAIChatModel(
            settings.base_url, model, api_key, settings.timeout, settings.response_format,
            max_response_bytes=settings.max_response_bytes,
        )

    if settings.model:
        return endpoint(settings.model)
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
    return endpoint(names[0])
