"""Throughput under a server's rate limit (issue 12). Prints one Markdown table.

    python -m tests.benchmarks.bench_rate_limits            # every header form (about 2 minutes)
    python -m tests.benchmarks.bench_rate_limits --forms retry-after

A loopback server (tests/benchmarks/latency_server.py, its own process) enforces 20
requests per second (a sliding one-second window; 429 above it, announcing the wait in one
header form) and answers the others after 50 ms. The engine (GlobalSearch +
OpenAIChatModel, as `query` runs them) maps 400 batches at concurrency 32, then reduces;
timed from the run's start to its result. The target: no failed batch, and at most 1.15x
the ideal 400 / 20 s, printed beside it. One more row runs the same against the same server
with the client capped at the server's rate (`--rpm 1200`), where no 429 should come.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from typing import NamedTuple

from graphrag_tui.engine import GlobalSearch, RateLimits
from graphrag_tui.engine.events import ConcurrencyChanged, RateLimited
from graphrag_tui.models.openai_http import OpenAIChatModel
from tests.benchmarks.bench import ROOT, synthetic_plan
from tests.chat_server import WAIT_FORMS

BATCHES, CONCURRENCY, RATE, LATENCY = 400, 32, 20, 0.05
TARGET = 1.15


class Measure(NamedTuple):
    seconds: float
    failed: int
    status: str
    rate_limited: int
    lowest_limit: int
    final_limit: int


async def run_once(base_url: str, limits: RateLimits) -> Measure:
    plan = synthetic_plan(BATCHES, CONCURRENCY)
    limited, limit_seen = 0, [CONCURRENCY]

    def on_event(event: object) -> None:
        nonlocal limited
        if isinstance(event, RateLimited):
            limited += 1
        elif isinstance(event, ConcurrencyChanged):
            limit_seen.append(event.to)

    model = OpenAIChatModel(base_url, "bench", None)
    try:
        started = time.perf_counter()
        result = await GlobalSearch(plan, model, on_event=on_event, rate_limits=limits).run()
        seconds = time.perf_counter() - started
    finally:
        await model.aclose()
    return Measure(seconds, result.failed_batch_count, result.status, limited, min(limit_seen), limit_seen[-1])


def measure(form: str, limits: RateLimits) -> Measure:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.latency_server", str(LATENCY), "--rate", str(RATE), "--form", form],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"  # type: ignore[union-attr]
        return asyncio.run(run_once(base_url, limits))
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forms", nargs="+", choices=WAIT_FORMS, default=list(WAIT_FORMS),
                        help="the header forms the server announces its waits in (default: all)")
    parser.add_argument("--no-capped", action="store_true", help="leave out the row with the client capped (--rpm)")
    args = parser.parse_args()
    ideal = BATCHES / RATE
    cases = [(f"429s announce the wait in `{form}`", form, RateLimits()) for form in args.forms]
    if not args.no_capped:
        cases.append((f"client capped at `--rpm {RATE * 60}` (server: `{args.forms[0]}`)", args.forms[0],
                      RateLimits(requests_per_minute=RATE * 60)))
    print(f"{BATCHES} batches at concurrency {CONCURRENCY}, server: {RATE} requests/s, {LATENCY * 1000:.0f} ms latency; "
          f"ideal {BATCHES} / {RATE} = {ideal:.1f} s")
    print()
    print("| run | time | ideal | x ideal | 429s | failed batches | concurrency limit (lowest, at the end) | |")
    print("|---|---|---|---|---|---|---|---|")
    for label, form, limits in cases:
        m = measure(form, limits)
        ok = m.failed == 0 and m.status == "completed" and m.seconds <= TARGET * ideal
        print(f"| {label} | {m.seconds:.2f} s | {ideal:.1f} s | {m.seconds / ideal:.3f} (target <= {TARGET}) | "
              f"{m.rate_limited} | {m.failed} | {m.lowest_limit}, {m.final_limit} | {'ok' if ok else 'MISSED'} |")


if __name__ == "__main__":
    main()
