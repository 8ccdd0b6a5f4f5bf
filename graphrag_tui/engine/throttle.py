"""The gate every model call of a run passes before it is sent (issue 12): the caps on
requests and tokens per minute, the pause a 429 announces, and an adaptive limit on how
many calls are in flight. Map, Reduce and any other call share one gate per run.

- **Caps** are token buckets that hold one request: sends are spaced evenly, 60/rpm
  seconds apart, and a request of k tokens holds the next one back k x 60/tpm seconds, so
  no burst exceeds one request. Spacing is measured from the moment a call is let through,
  1% wider than asked: the slack (0.6 s a minute) absorbs the usual delay between that moment
  and the request's arrival, so a server does not see rpm + 1 requests in one of its minutes.
- **A 429** pauses every send (rate limits belong to the key, not to one request) for as
  long as the server surely has no room (retry.py's `pause_for_all`), and halves the limit
  on calls in flight: once per round, as TCP does, so the 429s of requests sent before the
  halving do not halve it again.
- **Recovery:** after as many successes in a row as the limit allows in flight, the limit
  grows by one, up to the run's concurrency: TCP's congestion avoidance, one more per round
  of answers. At a limit of 1 one answer adds one (a probe then costs at most two 429s); from
  16 back to 32 takes 376 answers, so a server at its limit is probed rarely where a probe
  would cost many 429s.

The gate admits waiters first come, first served: a call re-queued after a 429 waits
behind those already waiting. It runs on the event loop's clock, which its sleeps use.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import NamedTuple

from .rate_limits import RateLimits

#: Sends are spaced this much wider than the caps ask (see the module's docstring).
SPACING_MARGIN = 1.01
#: After a 429 whose wait is not sure to be needed whole (a whole-second Retry-After), the
#: others pause at least this (at most the wait): the gate probes the server at most twenty
#: times a second while room may have come back, instead of hammering it. Measured on the
#: benchmark (tests/benchmarks/bench_rate_limits.py): without it 341 429s for 400 batches,
#: with 0.05 s 173 at the same speed, with 0.1 s 137 but 2% slower.
PROBE_PAUSE = 0.05


class LimitChange(NamedTuple):
    old: int
    new: int


class Throttle:
    def __init__(self, limits: RateLimits, max_concurrency: int) -> None:
        self.limits = limits
        self.max_concurrency = max(1, max_concurrency)
        #: The current limit on calls in flight.
        self.limit = self.max_concurrency
        self.in_flight = 0
        self._round = 0  # counts halvings: a 429 halves only for a call sent in the current round
        self._successes = 0
        self._paused_until = 0.0
        self._next_request = 0.0
        self._next_tokens = 0.0
        self._admission = asyncio.Lock()  # FIFO: the first waiter decides, the others queue
        self._freed = asyncio.Event()

    @property
    def counts_tokens(self) -> bool:
        """Whether `slot` needs the request's tokens (only a tokens-per-minute cap reads them)."""
        return self.limits.tokens_per_minute is not None

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[int]:
        """Waits for a free place under the limit, the end of any pause and the caps, then
        holds the place while the call is in flight. Yields the round the call is sent in
        (for `rate_limited`)."""
        sent_in = await self._admit(tokens)
        try:
            yield sent_in
        finally:
            self.in_flight -= 1
            self._freed.set()

    async def _admit(self, tokens: int) -> int:
        loop = asyncio.get_running_loop()
        async with self._admission:
            while True:
                while self.in_flight >= self.limit:
                    self._freed.clear()
                    await self._freed.wait()
                now = loop.time()
                ready = max(self._paused_until, self._next_request, self._next_tokens)
                if ready <= now:
                    break
                await asyncio.sleep(ready - now)  # then check again: a 429 may have paused further
            self.in_flight += 1
            rpm, tpm = self.limits.requests_per_minute, self.limits.tokens_per_minute
            if rpm is not None:
                self._next_request = now + 60.0 / rpm * SPACING_MARGIN
            if tpm is not None:
                self._next_tokens = now + tokens * 60.0 / tpm * SPACING_MARGIN
            return self._round

    def succeeded(self) -> LimitChange | None:
        """A call got an answer that was not a 429; the limit's change, if it grew."""
        self._successes += 1
        if self._successes < self.limit or self.limit >= self.max_concurrency:
            return None
        self._successes = 0
        self.limit += 1
        self._freed.set()
        return LimitChange(self.limit - 1, self.limit)

    def rate_limited(self, wait: float, sent_in: int, *, sure: float | None = None) -> LimitChange | None:
        """A call sent in round `sent_in` got a 429 announcing `wait` seconds. Every send
        pauses `sure` seconds (default: all of `wait`), and at least PROBE_PAUSE (at most
        `wait`). The limit halves if the call was sent in the current round. The limit's
        change, if any."""
        self._successes = 0
        probe = min(wait, PROBE_PAUSE)
        pause = wait if sure is None else max(sure, probe)
        loop = asyncio.get_running_loop()
        self._paused_until = max(self._paused_until, loop.time() + pause)
        if sent_in != self._round or self.limit == 1:
            return None
        self._round += 1
        old, self.limit = self.limit, max(1, self.limit // 2)
        return LimitChange(old, self.limit)


def least_spacing(limits: RateLimits, tokens: Iterable[int]) -> float:
    """The least time the caps hold back what follows requests of these many tokens each,
    sent one after another as the gate lets them through (each holds the next back by the
    wider of its two spacings): the least time a run's caps add, retries and 429s aside."""
    rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
    if rpm is None and tpm is None:
        return 0.0
    per_request = 60.0 / rpm if rpm is not None else 0.0
    per_token = 60.0 / tpm if tpm is not None else 0.0
    return sum(max(per_request, count * per_token) for count in tokens) * SPACING_MARGIN
