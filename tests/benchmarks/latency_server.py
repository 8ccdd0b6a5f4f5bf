"""A chat-completions server with a fixed latency, for the scheduling benchmark.

Runs in its own process (`python -m tests.benchmarks.latency_server SECONDS`), prints its
port on the first line, and answers every POST after SECONDS with a valid Map or Reduce
reply; GET /models lists one model. asyncio, HTTP/1.1 keep-alive, no threads.
"""

from __future__ import annotations

import asyncio
import json
import sys

MAP = json.dumps({"answer": "Benchmark answer.", "usefulness": 50})
REDUCE = json.dumps({"answer": "Benchmark final answer."})


def _body(content: str) -> bytes:
    return json.dumps(
        {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    ).encode()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
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
            if method == "GET":
                payload = json.dumps({"object": "list", "data": [{"id": "bench"}]}).encode()
            else:
                await asyncio.sleep(latency)
                payload = _body(REDUCE if b"Reduce stage" in body else MAP)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main(latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1])))
