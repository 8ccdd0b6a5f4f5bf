"""A chat-completions server with a fixed latency, for the scheduling benchmarks.

Runs in its own process (`python -m tests.benchmarks.latency_server SECONDS [--rate N
--form HEADER]`), prints its port on the first line, and answers every POST after SECONDS
with a valid Map or Reduce reply; GET /models lists one model. With `--rate N` it enforces
N requests per second as an endpoint does (issue 12): at most N accepted in any second (a
sliding window), and above it an immediate 429 announcing the wait until a place frees, in
the header form `--form` (tests/chat_server.py's WAIT_FORMS). asyncio, HTTP/1.1
keep-alive, no threads.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import time

from tests.chat_server import WAIT_FORMS, wait_headers

MAP = json.dumps({"answer": "Benchmark answer.", "usefulness": 50})
REDUCE = json.dumps({"answer": "Benchmark final answer."})


def _body(content: str) -> bytes:
    return json.dumps(
        {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    ).encode()


class RateWindow:
    """At most `limit` requests accepted in any `window` seconds."""

    def __init__(self, limit: int, window: float = 1.0) -> None:
        self.limit, self.window = limit, window
        self.recent: collections.deque[float] = collections.deque()

    def wait(self) -> float | None:
        """None: accepted (and counted); else the seconds until a place frees."""
        now = time.monotonic()
        while self.recent and self.recent[0] <= now - self.window:
            self.recent.popleft()
        if len(self.recent) < self.limit:
            self.recent.append(now)
            return None
        return self.recent[0] + self.window - now


def response(status: str, payload: bytes, headers: dict[str, str] | None = None) -> bytes:
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n{extra}\r\n"
            .encode() + payload)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float,
                 rate: RateWindow | None = None, form: str = "retry-after") -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            wait = rate.wait() if rate is not None and method == "POST" else None
            if wait is not None:
                writer.write(response("429 Too Many Requests", b'{"error": "rate limit"}', wait_headers(wait, form)))
            elif method == "GET":
                writer.write(response("200 OK", json.dumps({"object": "list", "data": [{"id": "bench"}]}).encode()))
            else:
                await asyncio.sleep(latency)
                writer.write(response("200 OK", _body(REDUCE if b"Reduce stage" in body else MAP)))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main(latency: float, rate: int | None, form: str) -> None:
    window = RateWindow(rate) if rate else None
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency, window, form), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("latency", type=float)
    parser.add_argument("--rate", type=int, help="requests per second (429 above it)")
    parser.add_argument("--form", choices=WAIT_FORMS, default="retry-after", help="the header a 429 announces its wait in")
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.rate, args.form))
