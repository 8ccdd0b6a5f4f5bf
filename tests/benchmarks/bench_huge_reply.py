"""Memory of the CLI on a huge reply (issue 9, item 9). Prints one Markdown table.

    python -m tests.benchmarks.bench_huge_reply

The real `graphrag-tui query --json` runs against the scripted loopback server, whose every
Map reply is a 200 MB chat completion (Content-Length set, streamed in 1 MiB chunks), with
the default --max-response-bytes. Targets: peak RSS of the CLI under 500 MB and its --json
under 10 MB (before the size cap it was 1.7-2.1 GB and 419 MB).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.chat_server import Reply, ScriptedChatServer
from tests.cli_runner import EXECUTABLE, clean_env
from tests.stores import three_leaves

REPLY_BYTES = 200 * 1024 * 1024
CHUNK = 1024 * 1024
RSS_TARGET_MB = 500
JSON_TARGET_MB = 10

MEASURED_CHILD = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, stdin=subprocess.DEVNULL)\n"
    "print(done.returncode, len(done.stdout), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def huge_completion() -> Iterator[bytes]:
    """One 200 MB chat completion whose content is a long run of 'x'."""
    head = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    tail = b'"}, "finish_reason": "stop"}]}'
    yield head
    left = REPLY_BYTES - len(head) - len(tail)
    while left > 0:
        n = min(CHUNK, left)
        yield b"x" * n
        left -= n
    yield tail


def main() -> None:
    huge = Reply(chunks=huge_completion, length=REPLY_BYTES)
    with tempfile.TemporaryDirectory() as tmp, ScriptedChatServer(lambda received: huge) as server:
        store = three_leaves(Path(tmp) / "harbour.db")
        args = ["query", str(store), "Who funds the bridge?", "--base-url", server.base_url, "--model", "m",
                "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config", "--json"]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", MEASURED_CHILD, EXECUTABLE, *args],
                              capture_output=True, text=True, env=clean_env(), timeout=600)
        seconds = time.perf_counter() - started
        code, json_bytes, peak_kib = map(int, done.stdout.split())
        requests = len(server.chat_requests())
    peak_mb, json_mb = peak_kib / 1024, json_bytes / 1024 / 1024
    ok = peak_mb < RSS_TARGET_MB and json_mb < JSON_TARGET_MB
    print("| case | requests | exit | seconds | peak RSS | --json size | target met |")
    print("|---|---|---|---|---|---|---|")
    print(f"| 3 Map batches, every reply 200 MB, default cap | {requests} | {code} | {seconds:.1f} "
          f"| {peak_mb:.0f} MB (< {RSS_TARGET_MB}) | {json_bytes:,} B (< {JSON_TARGET_MB} MB) "
          f"| {'yes' if ok else 'NO'} |")


if __name__ == "__main__":
    main()
