"""One run of global search, the same for the CLI and the app: a request, then its plan
(from the store; no model call), then the run with its events, then the result.

    run = RunSession(store, on_event=...)
    plan = run.prepare(request)        # InputError: a bad request, before any model call
    result = await run.run(model, timeout=...)   # `run.cancel()` ends it as `cancelled`

A run that breaks on an unexpected error ends with `run.failed(error)`: a `failed` result
that keeps what finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..engine import ChatModel, GlobalSearch, LongResponseHook, Prices, RateLimits, SearchPlan, utc_now
from ..engine.events import Event
from ..engine.options import SearchOptions
from ..engine.result import BatchResult, Level, SearchResult
from ..planning import prepare_plan
from ..store import CommunityStore
from .run_failure import failed_result


@dataclass(frozen=True)
class SearchRequest:
    query: str
    #: None: the store's only namespace.
    namespace: str | None
    level: Level
    options: SearchOptions
    #: None: a new seed is drawn.
    seed: int | None
    shuffle: bool = True


class RunSession:
    def __init__(
        self,
        store: CommunityStore,
        *,
        on_event: Callable[[Event], None] | None = None,  # type: ignore[valid-type]
        on_long_response: LongResponseHook | None = None,
        cancel: asyncio.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.on_event = on_event
        self.on_long_response = on_long_response
        self.cancel_event = cancel or asyncio.Event()
        self.clock, self.wall_clock = clock, wall_clock
        self.request: SearchRequest | None = None
        self.plan: SearchPlan | None = None
        self.search: GlobalSearch | None = None
        self.result: SearchResult | None = None

    def prepare(self, request: SearchRequest) -> SearchPlan:
        """The plan: reads the store (call it off an event loop for a large store)."""
        self.request = request
        self.plan = prepare_plan(
            self.store,
            request.query,
            namespace=request.namespace,
            level=request.level,
            options=request.options,
            seed=request.seed,
            shuffle=request.shuffle,
        )
        return self.plan

    async def run(
        self,
        model: ChatModel,
        *,
        timeout: float,
        rate_limits: RateLimits | None = None,
        prices: Prices | None = None,
        max_cost: float | None = None,
    ) -> SearchResult:
        """The run, every call through the gate of `rate_limits`; with `prices` its usage is
        priced, and with `max_cost` it is cancelled once the spend reaches that many dollars."""
        assert self.plan is not None, "prepare() first"
        self.search = GlobalSearch(
            self.plan,
            model,
            on_event=self.on_event,
            cancel=self.cancel_event,
            timeout=timeout,
            clock=self.clock,
            wall_clock=self.wall_clock,
            on_long_response=self.on_long_response,
            rate_limits=rate_limits,
            prices=prices,
            max_cost=max_cost,
        )
        self.result = await self.search.run()
        return self.result

    def cancel(self) -> None:
        self.cancel_event.set()

    def batch(self, index: int) -> BatchResult | None:
        """One Map batch as it stands (a copy), while the run goes or after it."""
        if self.result is not None:
            return self.result.batches[index]
        if self.search is not None:
            return self.search.batches[index].model_copy(deep=True)
        return None

    def failed(self, error: BaseException, request: SearchRequest | None = None) -> SearchResult:
        """The run as far as it went, `failed` with the error in words."""
        request = request or self.request
        assert request is not None
        self.result = failed_result(request, self.plan, self.search, error)
        return self.result
