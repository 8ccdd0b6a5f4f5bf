"""An async OpenAI-compatible chat-completions client on httpx (SPEC §4).

One attempt per `complete()` call: the engine owns retries. Failures become
`ModelError` with kind `timeout`, `transport` or `http`. The API key travels only in the
`Authorization` header; it never appears in a message, a repr or the description (it is
also masked in any error text or raw body a server might echo it back in).
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import math
import time
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from ..errors import InputError
from .base import ChatRequest, ModelError

ResponseFormat = Literal["json_object", "json_schema", "text"]
RESPONSE_FORMATS: tuple[str, ...] = ("json_object", "json_schema", "text")

#: Host for which OPENAI_API_KEY is used without --api-key-env.
OPENAI_HOST = "api.openai.com"

_EXCERPT_CHARS = 200
_MASK = "***"


class _Secret:
    """Holds the API key; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


def _host_port(url: httpx.URL) -> str:
    host = url.host
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{host}:{url.port}" if url.port is not None else host


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP-date; None when absent or bad."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is not None:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class OpenAIChatModel:
    """Chat completions against `{base_url}/chat/completions` (base URL includes `/v1`)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout: float = 120.0,
        response_format: ResponseFormat = "json_object",
        temperature: float | None = None,
        seed: int | None = None,
    ) -> None:
        try:
            url = httpx.URL(base_url.strip())
        except Exception:  # httpx.InvalidURL and friends
            raise InputError("--base-url is not a valid URL") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise InputError("--base-url must be an http:// or https:// URL with a host")
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise InputError("--timeout must be a positive number of seconds")
        if response_format not in RESPONSE_FORMATS:
            raise InputError(
                f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}"
            )
        # Never keep user:password from the URL: it would end up in messages.
        url = url.copy_with(username=None, password=None)
        self._base = str(url).rstrip("/")
        self.model = model
        self.timeout = float(timeout)
        self.response_format: ResponseFormat = response_format
        self.temperature = temperature
        self.seed = seed
        self._key = _Secret(api_key) if api_key is not None else None
        self.description = f"{model} @ {_host_port(url)}"
        headers = {"Accept": "application/json"}
        if api_key is not None:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout),
            limits=httpx.Limits(
                max_connections=None, max_keepalive_connections=None, keepalive_expiry=30.0
            ),
            # Proxy variables must not route loopback traffic (local servers) elsewhere.
            trust_env=not _is_loopback(url.host),
        )

    # -- identity -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self._base

    def __repr__(self) -> str:
        key = "set" if self._key is not None else "none"
        return (
            f"OpenAIChatModel(model={self.model!r}, base_url={self._base!r}, "
            f"response_format={self.response_format!r}, api_key=<{key}>)"
        )

    # -- requests -------------------------------------------------------------------

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        mt = request.max_tokens
        if isinstance(mt, int) and not isinstance(mt, bool) and mt > 0:
            body["max_tokens"] = mt
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        if self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": f"{request.stage}_reply",
                    "schema": request.json_schema if request.json_schema is not None else {},
                    "strict": True,
                },
            }
        return body

    async def complete(self, request: ChatRequest) -> str:
        return (await self._chat(request))[0]

    async def _chat(self, request: ChatRequest) -> tuple[str, dict[str, Any]]:
        """The reply's text and the whole completion body."""
        response = await self._send("POST", "/chat/completions", json_body=self.payload(request))
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise ModelError(
                "http",
                "unexpected response body",
                status=response.status_code,
                raw_response=self._mask(response.text),
            )
        return content, data

    async def list_models(self) -> list[str]:
        """Model ids from `GET {base}/models` (`data[].id`), in the server's order."""
        response = await self._send("GET", "/models")
        try:
            data = response.json()["data"]
            ids = [item["id"] for item in data]
        except (ValueError, KeyError, IndexError, TypeError):
            ids = None
        if ids is None or not all(isinstance(i, str) for i in ids):
            raise ModelError(
                "http",
                "unexpected response body",
                status=response.status_code,
                raw_response=self._mask(response.text),
            )
        return ids

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> "OpenAIChatModel":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------

    def _mask(self, text: str) -> str:
        if self._key is not None:
            key = self._key.reveal()
            if key:
                text = text.replace(key, _MASK)
        return text

    async def _send(
        self, method: str, path: str, json_body: dict[str, Any] | None = None
    ) -> httpx.Response:
        url = self._base + path
        content = None
        headers = None
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            headers = {"Content-Type": "application/json"}
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._client.request(method, url, content=content, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            raise ModelError(
                "timeout", f"no reply within {self.timeout:g} s ({method} {path})"
            ) from None
        except httpx.HTTPError as exc:
            detail = self._mask(str(exc)) or type(exc).__name__
            raise ModelError(
                "transport", f"{type(exc).__name__}: {detail} ({method} {url})"
            ) from None
        if not 200 <= response.status_code < 300:
            body = self._mask(response.text)
            excerpt = " ".join(body.split())
            if len(excerpt) > _EXCERPT_CHARS:
                excerpt = excerpt[: _EXCERPT_CHARS - 1] + "…"
            retry_after = None
            if response.status_code in (429, 503):
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise ModelError(
                "http",
                f"HTTP {response.status_code}: {excerpt}" if excerpt else f"HTTP {response.status_code}",
                status=response.status_code,
                retry_after=retry_after,
                raw_response=body,
            )
        return response


def resolve_api_key(
    base_url: str, api_key_env: str | None, environ: Mapping[str, str]
) -> str | None:
    """The API key to send, read from the environment (SPEC §5).

    With `api_key_env` that variable must be set (and non-empty), else InputError naming
    the variable. Without it, OPENAI_API_KEY is used only when the base URL's host is
    exactly `api.openai.com`: a key is never sent to another host unless the user names it.
    """
    if api_key_env is not None:
        value = environ.get(api_key_env)
        if not value:
            raise InputError(
                f"--api-key-env names the environment variable {api_key_env}, which is not set"
            )
        return value
    try:
        host = httpx.URL(base_url.strip()).host
    except Exception:
        return None
    if host.lower().rstrip(".") == OPENAI_HOST:
        return environ.get("OPENAI_API_KEY") or None
    return None
