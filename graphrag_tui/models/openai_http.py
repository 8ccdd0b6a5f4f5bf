"""An async OpenAI-compatible chat-completions client on httpx (SPEC §4).

One attempt per `complete()` call: the engine owns retries. Failures become
`ModelError` with kind `timeout`, `transport`, `http`, `rate_limited` (a 429, with the wait
its headers announce: rate_limit_headers.py), `invalid_json` (the whole body is not JSON) or
`response_too_large` (the body passed the size cap; it is read as a stream and never held
whole). The API key travels only in the `Authorization` header; it never appears
in a message, a repr or the description, and every text that came from the server, whatever
its status, is masked before it leaves this module (see `key_pattern`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import ipaddress
import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from ..engine import ChatRequest, ErrorKind, ModelError, RateWaitSource
from ..errors import InputError
from .rate_limit_headers import announced_wait, parse_retry_after

ResponseFormat = Literal["json_object", "json_schema", "text"]
RESPONSE_FORMATS: tuple[str, ...] = ("json_object", "json_schema", "text")

#: Host for which OPENAI_API_KEY is used without --api-key-env.
OPENAI_HOST = "api.openai.com"

#: Default of --max-response-bytes: a chat completion is a few KB; past this, stop reading.
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024

_EXCERPT_CHARS = 200
_MASK = "***"
#: Characters JSON lets a string escape with a backslash besides the \uXXXX form.
_BACKSLASH_ESCAPABLE = '"\\/'
#: A host name as a request can carry it (IDNA-encoded by httpx); IPv6 literals aside.
_HOSTNAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")


def check_api_key(value: str, source: str) -> None:
    """InputError unless the key is printable ASCII without spaces. Anything else (a trailing
    CR or LF from `$(cat keyfile)`, a space, a non-ASCII letter) cannot go in a header, and
    the error httpx would raise quotes the header. The message names where the key came
    from and never shows any part of it."""
    if not all("!" <= ch <= "~" for ch in value):
        raise InputError(
            f"{source} holds an API key with a space, a control character (such as a "
            "trailing newline) or a non-ASCII character: remove it"
        )


def key_pattern(key: str) -> re.Pattern[str]:
    r"""Matches the (printable ASCII) key written plainly, with JSON escapes (any character as
    \uXXXX in either hex case, \/ \" \\, the backslash itself escaped any number of times)
    and percent-encoded (any byte as %XX in either case, or encoded again as %25XX), in any
    mix. Masking with it before the engine parses a reply means no escape can decode back to
    the key. A match starts a run of backslashes only at its first one, so a hostile body of
    backslashes costs linear time, not quadratic."""
    parts = []
    for i, ch in enumerate(key):
        backslashes = r"(?<!\\)\\+" if i == 0 else r"\\+"
        forms = [re.escape(ch), backslashes + f"(?i:u{ord(ch):04x})", f"%(?:25)*(?i:{ord(ch):02x})"]
        if ch in _BACKSLASH_ESCAPABLE:
            forms.append(backslashes + re.escape(ch))
        parts.append("(?:" + "|".join(forms) + ")")
    return re.compile("".join(parts))


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


@functools.cache
def _load_async_transport() -> None:
    """httpx loads its async network backend (anyio's asyncio one) on the first request, which
    then reaches the server 60-110 ms later than the requests after it: enough to show a
    server rpm + 1 requests in one of its windows when a cap spaces the sends (issue 12).
    Loaded with the model instead; a future layout of anyio only skips this."""
    try:
        importlib.import_module("anyio._backends._asyncio")
    except ImportError:
        pass


def parse_base_url(text: str) -> httpx.URL:
    """The checked base URL, without user:password (it would end up in messages) or fragment.
    InputError (one line) for anything that is not an http(s) URL with a valid host and port."""
    try:
        url = httpx.URL(text.strip()) if isinstance(text, str) else None
    except Exception:  # httpx.InvalidURL and friends
        url = None
    if url is None:
        raise InputError("--base-url is not a valid URL")
    if url.scheme not in ("http", "https") or not url.host:
        raise InputError("--base-url must be an http:// or https:// URL with a host")
    host = url.raw_host.decode("ascii", "replace")
    if ":" not in host and not _HOSTNAME.fullmatch(host):  # IPv6 literals are checked by httpx
        raise InputError(f"--base-url has an invalid host: {host!r}")
    if url.port is not None and not 1 <= url.port <= 65535:
        raise InputError(f"--base-url has port {url.port}, out of the range 1-65535")
    return url.copy_with(username=None, password=None, fragment=None)


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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        url = parse_base_url(base_url)
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise InputError("--timeout must be a positive number of seconds")
        if response_format not in RESPONSE_FORMATS:
            raise InputError(
                f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}"
            )
        if not (isinstance(max_response_bytes, int) and max_response_bytes > 0):
            raise InputError("--max-response-bytes must be a positive number of bytes")
        if api_key is not None:
            check_api_key(api_key, "the key's environment variable")
        _load_async_transport()
        self._base = str(url.copy_with(query=None)).rstrip("/")
        #: Kept after the endpoint's path: `/v1?api-version=X` posts to
        #: `/v1/chat/completions?api-version=X`.
        self._query = url.query.decode("ascii")
        self.max_response_bytes = max_response_bytes
        self.model = model
        self.timeout = float(timeout)
        self.response_format: ResponseFormat = response_format
        self.temperature = temperature
        self.seed = seed
        self._key = _Secret(api_key) if api_key is not None else None
        self._key_pattern = key_pattern(api_key) if api_key else None
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

    def url_for(self, path: str) -> str:
        """The endpoint `path` under the base URL, with the base URL's query string after it."""
        return self._base + path + (f"?{self._query}" if self._query else "")

    async def complete(self, request: ChatRequest) -> str:
        return (await self._chat(request))[0]

    async def _chat(self, request: ChatRequest) -> tuple[str, dict[str, Any]]:
        """The reply's text (masked) and the whole completion body."""
        status, text = await self._send("POST", "/chat/completions", json_body=self.payload(request))
        data = self._parse_body(status, text)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise ModelError("http", "unexpected response body", status=status, raw_response=self._mask(text))
        return self._mask(content), data

    async def list_models(self) -> list[str]:
        """Model ids from `GET {base}/models` (`data[].id`), in the server's order (masked)."""
        status, text = await self._send("GET", "/models")
        data = self._parse_body(status, text)
        try:
            ids = [item["id"] for item in data["data"]]
        except (KeyError, IndexError, TypeError):
            ids = None
        if ids is None or not all(isinstance(i, str) for i in ids):
            raise ModelError("http", "unexpected response body", status=status, raw_response=self._mask(text))
        return [self._mask(i) for i in ids]

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------

    def _mask(self, text: str) -> str:
        return self._key_pattern.sub(_MASK, text) if self._key_pattern is not None else text

    def _parse_body(self, status: int, text: str) -> Any:
        """The 2xx body as JSON; a body that is not JSON (or too deeply nested for the
        parser) is an `invalid_json` attempt, never an exception out of the run."""
        try:
            return json.loads(text)
        except ValueError:
            problem = "is not JSON"
        except RecursionError:
            problem = "is nested too deeply to parse"
        raise ModelError("invalid_json", f"response body {problem}", status=status, raw_response=self._mask(text))

    async def _send(self, method: str, path: str, json_body: dict[str, Any] | None = None) -> tuple[int, str]:
        """The 2xx status and response body as text (UTF-8, undecodable bytes as U+FFFD), read as a
        stream up to `max_response_bytes`; anything else is a ModelError."""
        url = self.url_for(path)
        content = None
        headers = None
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            headers = {"Content-Type": "application/json"}
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client.stream(method, url, content=content, headers=headers) as response:
                    body = await self._read_capped(response, method, path)
        except (TimeoutError, httpx.TimeoutException):
            raise ModelError(
                "timeout", f"no reply within {self.timeout:g} s ({method} {path})"
            ) from None
        except httpx.HTTPError as exc:
            detail = self._mask(str(exc)) or type(exc).__name__
            # The query string is left out: it may carry a credential of its own.
            raise ModelError(
                "transport", f"{type(exc).__name__}: {detail} ({method} {self._base + path})"
            ) from None
        text = body.decode("utf-8", errors="replace")
        if not 200 <= response.status_code < 300:
            masked = self._mask(text)
            excerpt = " ".join(masked.split())
            if len(excerpt) > _EXCERPT_CHARS:
                excerpt = excerpt[: _EXCERPT_CHARS - 1] + "…"
            kind: ErrorKind = "http"
            retry_after: float | None = None
            wait_source: RateWaitSource | None = None
            if response.status_code == 429:
                kind = "rate_limited"
                announced = announced_wait(response.headers)
                if announced is not None:
                    retry_after, wait_source = announced
            elif response.status_code == 503:
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise ModelError(
                kind,
                f"HTTP {response.status_code}: {excerpt}" if excerpt else f"HTTP {response.status_code}",
                status=response.status_code,
                retry_after=retry_after,
                wait_source=wait_source,
                raw_response=masked,
            )
        return response.status_code, text

    async def _read_capped(self, response: httpx.Response, method: str, path: str) -> bytes:
        """The body, or ModelError `response_too_large` as soon as it passes the cap: the rest
        is never read (leaving the `stream` block closes the connection)."""
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_response_bytes:
                raise ModelError(
                    "response_too_large",
                    f"the response to {method} {path} passed the {self.max_response_bytes}-byte cap "
                    "(--max-response-bytes); stopped reading it",
                    status=response.status_code,
                )
        return bytes(body)


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
        check_api_key(value, f"the environment variable {api_key_env}")
        return value
    try:
        host = httpx.URL(base_url.strip()).host
    except Exception:
        return None
    if host.lower().rstrip(".") == OPENAI_HOST:
        value = environ.get("OPENAI_API_KEY") or None
        if value is not None:
            check_api_key(value, "the environment variable OPENAI_API_KEY")
        return value
    return None
