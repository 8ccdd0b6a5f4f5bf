"""A real chat-completions HTTP server on 127.0.0.1 that tests start and script.

It runs in a background thread (one thread per request), so it serves a CLI in a
subprocess and an app in the test's own event loop alike. Each test passes a `script`:
a function from the received request to a `Reply`. Every request is recorded.
"""

from __future__ import annotations

import json
import math
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    body: str | dict[str, Any] = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: When set, the reply waits until the event is set (see ScriptedChatServer.hold()).
    gate: threading.Event | None = None
    #: When set, the body is these bytes instead of `body` (say, undecodable UTF-8).
    raw: bytes | None = None
    #: When set, the body is streamed from this iterable of chunks instead of `body`: with
    #: `length` as its Content-Length, else chunked (so it may never end).
    chunks: Callable[[], Iterable[bytes]] | None = None
    length: int | None = None
    content_type: str = "application/json"


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    #: time.monotonic() when the request arrived.
    received_at: float = 0.0

    @property
    def endpoint(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]

    @property
    def prompt(self) -> str:
        """The prompt as SPEC §3.4 defines it: every message's content joined by a newline."""
        return "\n".join(m["content"] for m in self.json["messages"])

    @property
    def stage(self) -> str:
        if "Reduce stage" in self.prompt:
            return "reduce"
        return "rate" if self.json["messages"][0]["content"].startswith("---Role---") else "map"

    @property
    def rated_text(self) -> str:
        """The community text a rating request carries (dynamic selection, issue 15)."""
        system = self.json["messages"][0]["content"]
        return system.split("---Information---\n", 1)[1].split("\n---Question---", 1)[0]


def completion(content: str, model: str = "scripted-model", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenAI chat.completion body whose single choice carries `content` (and `usage`)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def usage(prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
    """A `usage` object as OpenAI gives it."""
    body: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if cached is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached}
    return body


def sse_event(data: dict[str, Any] | str) -> bytes:
    return b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"


def streamed(
    pieces: list[str], usage: dict[str, Any] | None = None, gates: list[threading.Event] | None = None
) -> Reply:
    """A streamed completion (server-sent events): one chunk per piece of the content, then
    one with `usage`, then [DONE]. With `gates`, piece i is sent once gates[i] is set."""

    def chunks() -> Iterable[bytes]:
        yield sse_event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        for index, piece in enumerate(pieces):
            if gates is not None and index < len(gates):
                gates[index].wait(timeout=30)
            yield sse_event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        yield sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if usage is not None:
            yield sse_event({"choices": [], "usage": usage})
        yield sse_event("[DONE]")

    return Reply(chunks=chunks, content_type="text/event-stream")


def map_reply(answer: str, usefulness: Any) -> Reply:
    return Reply(completion(json.dumps({"answer": answer, "usefulness": usefulness})))


def reduce_reply(answer: str) -> Reply:
    return Reply(completion(json.dumps({"answer": answer})))


def answer_all(request: Received) -> Reply:
    """Every Map call answers the same, usefully; the Reduce answers once."""
    if request.stage == "reduce":
        return reduce_reply("The port authority funds it.")
    return map_reply("The port authority funds the bridge.", 80)


Script = Callable[[Received], Reply]


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # bursts of concurrent connections must not be dropped
    daemon_threads = True


class ScriptedChatServer:
    def __init__(
        self,
        script: Script,
        models: list[str] | None = None,
        models_script: Script | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.script = script
        self.models = ["scripted-model"] if models is None else models
        #: When set, it answers GET .../models instead of the list of `models`.
        self.models_script = models_script
        self.requests: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        #: With `tls`, the server speaks HTTPS (its certificate must name 127.0.0.1).
        self.scheme = "https" if tls is not None else "http"
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{self.scheme}://{host}:{port}/v1"

    def chat_requests(self) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.endpoint.endswith("/chat/completions")]

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, reply: Reply) -> None:
                if reply.raw is not None:
                    data = reply.raw
                else:
                    data = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    if reply.chunks is None:
                        self.send_header("Content-Length", str(len(data)))
                    elif reply.length is not None:
                        self.send_header("Content-Length", str(reply.length))
                    else:
                        self.send_header("Transfer-Encoding", "chunked")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.chunks is None:
                        self.wfile.write(data)
                    else:
                        self._stream(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout, cancel, size cap): nothing to answer

            def _stream(self, reply: Reply) -> None:
                assert reply.chunks is not None
                for chunk in reply.chunks():
                    if not chunk:
                        continue
                    if reply.length is None:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    else:
                        self.wfile.write(chunk)
                    self.wfile.flush()
                if reply.length is None:
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

            def do_GET(self) -> None:
                received = server._record(self, None)
                if received.endpoint.endswith("/models"):
                    if server.models_script is not None:
                        self._send(server.models_script(received))
                        return
                    data = [{"id": m, "object": "model"} for m in server.models]
                    self._send(Reply({"object": "list", "data": data}))
                else:
                    self._send(Reply({"error": "not found"}, status=404))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length) or b"null")
                received = server._record(self, payload)
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.script(received)
                    if reply.gate is not None:
                        reply.gate.wait(timeout=30)
                    if reply.delay:
                        time.sleep(reply.delay)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                self._send(reply)

        return Handler

    def _record(self, handler: BaseHTTPRequestHandler, payload: Any) -> Received:
        received = Received(
            method=handler.command,
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            json=payload,
            received_at=time.monotonic(),
        )
        with self._lock:
            self.requests.append(received)
        return received


def community_of(request: Received) -> str:
    """The first community a Map request carries."""
    match = re.search(r"\[Community ID: (\S+) \|", request.prompt)
    assert match, request.prompt
    return match.group(1)


class Scripted:
    """Map replies by community (a list is served attempt by attempt), one Reduce reply."""

    def __init__(self, maps: dict[str, Reply | list[Reply]], reduce: Reply | None = None) -> None:
        self.maps = maps
        self.reduce = reduce or reduce_reply("The port authority funds it.")
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        if request.stage == "reduce":
            return self.reduce
        community = community_of(request)
        with self.lock:
            n = self.calls.get(community, 0)
            self.calls[community] = n + 1
        reply = self.maps[community]
        return reply[min(n, len(reply) - 1)] if isinstance(reply, list) else reply


# -- rate limits (issue 12) -----------------------------------------------------------------

#: How a 429 announces its wait: the header each form sends (see `wait_headers`).
WAIT_FORMS = ("retry-after", "retry-after-ms", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")


def go_duration(seconds: float) -> str:
    """A wait as OpenAI's x-ratelimit-reset-* headers write it: `6m0s`, `1.5s`, `20ms`."""
    if seconds >= 60:
        minutes, rest = divmod(seconds, 60)
        return f"{int(minutes)}m{rest:g}s"
    if seconds >= 1:
        return f"{seconds:g}s"
    return f"{max(1, math.ceil(seconds * 1000))}ms"


def wait_headers(seconds: float, form: str) -> dict[str, str]:
    """The headers of a 429 that asks to wait `seconds`, in one of WAIT_FORMS. `retry-after`
    is whole seconds, rounded up, as HTTP defines it."""
    if form == "retry-after":
        return {"Retry-After": str(max(1, math.ceil(seconds)))}
    if form == "retry-after-ms":
        return {"retry-after-ms": str(max(1, math.ceil(seconds * 1000)))}
    if form in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        return {form: go_duration(seconds)}
    raise ValueError(form)


def too_many(seconds: float, form: str) -> Reply:
    return Reply({"error": {"message": "Rate limit reached", "type": "requests"}}, status=429,
                 headers=wait_headers(seconds, form))


class RateEnforced:
    """A script behind a rate limit, as an endpoint enforces one: at most `limit` chat requests
    accepted in any `window` seconds (a sliding window); above it a 429 announcing the wait
    until a place frees, in the header form `form`. Rejected requests do not count."""

    def __init__(self, script: Script, limit: int, window: float = 1.0, form: str = "retry-after") -> None:
        self.script, self.limit, self.window, self.form = script, limit, window, form
        self.accepted: list[float] = []
        self.rejected = 0
        self._recent: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        with self._lock:
            now = time.monotonic()
            self._recent = [t for t in self._recent if t > now - self.window]
            if len(self._recent) >= self.limit:
                self.rejected += 1
                return too_many(self._recent[0] + self.window - now, self.form)
            self._recent.append(now)
            self.accepted.append(now)
        return self.script(request)


class EveryNth429:
    """A script whose every `n`-th chat request is answered with a 429 carrying `headers`."""

    def __init__(self, script: Script, n: int, headers: dict[str, str]) -> None:
        self.script, self.n, self.headers = script, n, headers
        self.count = 0
        self.rejected = 0
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        with self._lock:
            self.count += 1
            reject = self.count % self.n == 0
            self.rejected += reject
        if reject:
            return Reply({"error": "slow down"}, status=429, headers=self.headers)
        return self.script(request)
