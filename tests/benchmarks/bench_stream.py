"""CPU cost of the streamed-answer path (issue 12): SSE reading, key masking and answer
extraction of the largest reply the client reads (8 MiB, the default --max-response-bytes),
arriving in 16 KiB network chunks of ~64-character deltas, as servers send them.

    python -m tests.benchmarks.bench_stream
"""

from __future__ import annotations

import json
import time

from graphrag_tui.engine.answer_stream import AnswerStream
from graphrag_tui.models.openai_http import _StreamMasker, key_pattern
from graphrag_tui.models.sse import SSEReader

KEY = "sk-proj-AbCdEf0123456789GhIjKlMnOpQrStUvWxYz"


def main() -> None:
    answer = 'The harbour bridge is funded by the port authority. "quoted" é 😀\n' * 120_000
    reply = json.dumps({"answer": answer})
    pieces = [reply[i : i + 64] for i in range(0, len(reply), 64)]
    events = b"".join(
        b"data: " + json.dumps({"choices": [{"delta": {"content": p}}]}).encode() + b"\n\n" for p in pieces
    )[: 8 * 1024 * 1024]
    chunks = [events[i : i + 16384] for i in range(0, len(events), 16384)]
    for run in range(3):
        started = time.perf_counter()
        reader, masker, stream = SSEReader(), _StreamMasker(KEY, key_pattern(KEY)), AnswerStream()
        deltas = shown = 0
        for chunk in chunks:
            for event in reader.feed(chunk):
                deltas += 1
                shown += len(stream.feed(masker.feed(json.loads(event)["choices"][0]["delta"]["content"])))
        elapsed = time.perf_counter() - started
        print(f"run {run + 1}: {len(events) / 2**20:.1f} MiB of events, {deltas} deltas, {shown} answer characters: "
              f"{elapsed:.2f} s, {elapsed / deltas * 1e6:.0f} µs per delta")


if __name__ == "__main__":
    main()
