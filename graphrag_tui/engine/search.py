"""Global search: plan the Map batches, run Map with a worker pool, Reduce (SPEC §3)."""

from __future__ import annotations

import asyncio
import logging
import random as random_module
import time
from functools import lru_cache
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timezone
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from ..models.base import ChatModel, ChatRequest, ModelError
from ..models.reply_schemas import MAP_REPLY_SCHEMA, REDUCE_REPLY_SCHEMA
from .batcher import CommunityText, MapBatch, build_batches
from .corpus import CommunityContext
from .events import (
    AttemptFailed,
    BatchFailed,
    BatchStarted,
    BatchSucceeded,
    Event,
    Finished,
    Planned,
    ReduceCandidateDecided,
    ReduceStarted,
    RetryWaiting,
)
from .maptext import map_text
from .options import SearchOptions
from .prompts import map_messages, map_skeleton, prompt_text, reduce_messages, reduce_skeleton
from .reduce import select_for_reduce
from .replies import ReplyError, js_number, parse_map_reply, parse_reduce_reply
from .result import Attempt, BatchResult, Level, ReduceReport, SearchResult, SelectedAnswer, Status
from .tokens import TextSize

log = logging.getLogger("graphrag_tui.engine")

T = TypeVar("T")
ATTEMPTS = 2
MAX_RETRY_WAIT = 60.0
RETRY_AFTER_STATUSES = (429, 503)
TIME_SLICE = 0.002  # seconds of Map work between two rounds of the event loop


class SearchPlan(BaseModel):
    """Everything decided before the first model call."""

    model_config = ConfigDict(frozen=True)

    query: str
    namespace: str
    level: Level
    seed: int | None
    options: SearchOptions
    summary_count: int
    batches: tuple[MapBatch, ...]

    def prompt_tokens(self, batch: MapBatch) -> int:
        return (_skeleton_size(self.query) + batch.size).tokens


@lru_cache(maxsize=8)
def _skeleton_size(query: str) -> TextSize:
    """The Map prompt without content, measured once per query rather than once per batch."""
    return TextSize.of(map_skeleton(query))


def draw_seed() -> int:
    return random_module.SystemRandom().randrange(2**32)


def plan_search(
    query: str,
    namespace: str,
    level: Level,
    communities: Iterable[CommunityContext],
    options: SearchOptions,
    *,
    seed: int | None = None,
    shuffle: bool = True,
) -> SearchPlan:
    """Map texts and batches. An unseeded shuffled plan draws a seed so it can be replayed."""
    if shuffle and seed is None:
        seed = draw_seed()
    texts: list[CommunityText | None] = [CommunityText(c.id, map_text(c)) for c in communities]
    summary_count = len(texts)
    rng = random_module.Random(seed).random if shuffle else None
    batches = build_batches(texts, map_skeleton(query), options.map_prompt_budget, rng)
    return SearchPlan(
        query=query,
        namespace=namespace,
        level=level,
        seed=seed if shuffle else None,
        options=options,
        summary_count=summary_count,
        batches=tuple(batches),
    )


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class _Cancelled(Exception):
    pass


class GlobalSearch:
    """One run of a plan against a model. Events go to `on_event` as they happen."""

    def __init__(
        self,
        plan: SearchPlan,
        model: ChatModel,
        *,
        on_event: Callable[[Event], None] | None = None,
        cancel: asyncio.Event | None = None,
        timeout: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
        on_long_response: Callable[[int | None, int, str], None] | None = None,
    ) -> None:
        self.plan = plan
        #: Called with (batch index or None for Reduce, attempt number, the whole raw
        #: response) for each response longer than the RAW_RESPONSE_CAP an Attempt keeps.
        self.on_long_response = on_long_response
        self.model = model
        self.on_event = on_event or (lambda event: None)
        self.cancel = cancel or asyncio.Event()
        self.timeout = timeout
        self.clock = clock
        self.wall_clock = wall_clock
        self._start = 0.0
        self._slice_open, self._slice_start = True, time.perf_counter()
        self.batches = [
            BatchResult(
                index=b.index,
                community_ids=b.community_ids,
                parts=b.parts,
                prompt_tokens=plan.prompt_tokens(b),
            )
            for b in plan.batches
        ]
        self.reduce = ReduceReport(budget=plan.options.reduce_prompt_budget)
        self.selected: list[SelectedAnswer] = []

    # -- the run -------------------------------------------------------------------------

    async def run(self) -> SearchResult:
        self._start = self.clock()
        plan = self.plan
        workers = min(plan.options.concurrency, len(plan.batches))
        self._emit(Planned, summary_count=plan.summary_count, batch_count=len(plan.batches), workers=workers, seed=plan.seed)
        log.info(
            "community level=%s summaries=%d map batches=%d", plan.level, plan.summary_count, len(plan.batches)
        )
        for batch in plan.batches:
            log.info("map batch %d communities=%s", batch.index, ", ".join(batch.community_ids))
        if not plan.batches:
            return self._finish(
                "no_results",
                detail=f"no community of namespace {plan.namespace!r} at level {plan.level} has a summary",
            )
        try:
            await self._unless_cancelled(self._map_phase(workers))
        except _Cancelled:
            return self._finish("cancelled", detail="cancelled by the user during Map")
        failed = [b for b in self.batches if b.status == "failed"]
        log.info(
            "map scores=%s failed batches=%d",
            ", ".join(f"{b.index}:{js_number(b.usefulness)}" for b in self.batches if b.usefulness is not None),
            len(failed),
        )
        if len(failed) == len(self.batches):
            errors = "; ".join(f"batch {b.index}: {b.attempts[-1].error}" for b in failed)
            return self._finish("failed", error=f"every Map batch failed: {errors}")
        return await self._reduce_phase()

    async def _map_phase(self, workers: int) -> None:
        next_index = 0

        async def worker(number: int) -> None:
            nonlocal next_index
            while next_index < len(self.plan.batches):
                index = next_index
                next_index += 1
                await self._run_batch(self.plan.batches[index], number)
                await self._let_others_run()

        async with asyncio.TaskGroup() as group:
            for number in range(1, workers + 1):
                group.create_task(worker(number))

    async def _let_others_run(self) -> None:
        """A model that answers without awaiting (the extractive one) would keep the event
        loop, and an app's keys and repaints, waiting for all of Map. So the workers share
        time slices: once a slice is used up, every worker yields, and the slice reopens in
        the loop's next round, after everything else that was waiting had its turn."""
        if not self._slice_open or time.perf_counter() - self._slice_start >= TIME_SLICE:
            if self._slice_open:
                self._slice_open = False
                asyncio.get_running_loop().call_soon(self._open_slice)
            await asyncio.sleep(0)

    def _open_slice(self) -> None:
        self._slice_open, self._slice_start = True, time.perf_counter()

    async def _run_batch(self, batch: MapBatch, worker: int) -> None:
        result = self.batches[batch.index]
        content = batch.content  # joined from its pieces: once per batch
        request = ChatRequest(
            stage="map",
            messages=map_messages(self.plan.query, content),
            query=self.plan.query,
            content=content,
            max_tokens=self.plan.options.map_reserve or None,
            json_schema=MAP_REPLY_SCHEMA,
        )
        retry_after: float | None = None
        for number in range(1, ATTEMPTS + 1):
            if retry_after:
                await self._wait_retry_after(batch.index, retry_after)
            self._emit(BatchStarted, batch_index=batch.index, worker=worker, attempt=number)
            attempt, parsed, retry_after = await self._attempt(request, number, result.attempts, parse_map_reply)
            if parsed is not None:
                result.answer, result.usefulness = parsed
                result.status = "succeeded"
                self._emit(BatchSucceeded, batch_index=batch.index, worker=worker, attempt=number, usefulness=result.usefulness)
                return
            self._emit(
                AttemptFailed,
                batch_index=batch.index,
                worker=worker,
                attempt=number,
                error_kind=attempt.error_kind,
                error=attempt.error,
                will_retry=number < ATTEMPTS,
            )
        result.status = "failed"
        self._emit(BatchFailed, batch_index=batch.index, worker=worker, error=result.attempts[-1].error)

    async def _attempt(
        self,
        request: ChatRequest,
        number: int,
        record: list[Attempt],
        parse: Callable[[str], T],
    ) -> tuple[Attempt, T | None, float | None]:
        """One call, recorded. Returns the attempt, the parsed reply (or None) and the
        Retry-After wait the server asked for."""
        started_at = self.wall_clock().isoformat()
        began = self.clock()
        attempt = Attempt(attempt=number, started_at=started_at, duration_s=0.0)
        record.append(attempt)
        parsed: T | None = None
        retry_after: float | None = None
        try:
            async with asyncio.timeout(self.timeout):
                raw = await self.model.complete(request)
        except asyncio.CancelledError:
            attempt.duration_s = round(self.clock() - began, 6)
            attempt.error = "cancelled"
            raise
        except TimeoutError:
            attempt.error_kind, attempt.error = "timeout", f"no reply within {self.timeout:g} s"
        except ModelError as error:
            attempt.error_kind, attempt.error, attempt.raw_response = error.kind, error.message, error.raw_response
            if error.status in RETRY_AFTER_STATUSES:
                retry_after = error.retry_after
        else:
            attempt.raw_response = raw
            try:
                parsed = parse(raw)
            except ReplyError as error:
                attempt.error_kind, attempt.error = error.kind, error.message
        attempt.duration_s = round(self.clock() - began, 6)
        return attempt, parsed, retry_after

    async def _wait_retry_after(self, batch_index: int | None, seconds: float) -> None:
        wait = min(max(seconds, 0.0), MAX_RETRY_WAIT)
        self._emit(RetryWaiting, batch_index=batch_index, seconds=wait)
        await asyncio.sleep(wait)

    async def _reduce_phase(self) -> SearchResult:
        plan = self.plan
        skeleton = reduce_skeleton(plan.query)
        budget = plan.options.reduce_prompt_budget
        candidates, selected, content = select_for_reduce(self.batches, skeleton, budget)
        self.reduce.candidates = candidates
        for c in candidates:
            self._emit(
                ReduceCandidateDecided,
                batch_index=c.batch_index,
                usefulness=c.usefulness,
                community_ids=c.community_ids,
                decision=c.decision,
            )
        self.selected = selected
        log.info("selected answers=%d", len(selected))
        if not any(c.decision != "zero_usefulness" for c in candidates):
            return self._finish("no_results", detail="no Map answer was useful: every usefulness was 0")
        if not selected:
            return self._finish(
                "no_results", detail=f"no Map answer fits the reduce prompt budget ({budget} tokens)"
            )
        messages = reduce_messages(plan.query, content)
        self.reduce.prompt_tokens = TextSize.of(prompt_text(messages)).tokens
        log.info("reduce prompt tokens=%d", self.reduce.prompt_tokens)
        self._emit(ReduceStarted, selected_count=len(selected), prompt_tokens=self.reduce.prompt_tokens, budget=budget)
        request = ChatRequest(
            stage="reduce",
            messages=messages,
            query=plan.query,
            content=content,
            max_tokens=plan.options.reduce_reserve or None,
            json_schema=REDUCE_REPLY_SCHEMA,
        )
        try:
            answer = await self._unless_cancelled(self._reduce_call(request))
        except _Cancelled:
            return self._finish("cancelled", detail="cancelled by the user during Reduce")
        if answer is None:
            return self._finish("failed", error=f"Reduce failed twice: {self.reduce.attempts[-1].error}")
        failed = sum(b.status == "failed" for b in self.batches)
        return self._finish("partial" if failed else "completed", answer=answer)

    async def _reduce_call(self, request: ChatRequest) -> str | None:
        retry_after: float | None = None
        for number in range(1, ATTEMPTS + 1):
            if retry_after:
                await self._wait_retry_after(None, retry_after)
            attempt, answer, retry_after = await self._attempt(request, number, self.reduce.attempts, parse_reduce_reply)
            if answer is not None:
                return answer
            self._emit(
                AttemptFailed,
                batch_index=None,
                worker=None,
                attempt=number,
                error_kind=attempt.error_kind,
                error=attempt.error,
                will_retry=number < ATTEMPTS,
            )
        return None

    # -- helpers -------------------------------------------------------------------------

    async def _unless_cancelled(self, work: Awaitable[T]) -> T:
        """Run `work` until it ends or the cancel event is set (then raise _Cancelled)."""
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(self.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the caller itself was cancelled
            task.cancel()
            waiter.cancel()
            await asyncio.gather(task, waiter, return_exceptions=True)
            raise
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise _Cancelled
        return task.result()

    def _emit(self, event_type: type[Event], **fields: object) -> None:  # type: ignore[valid-type]
        self.on_event(event_type(t=round(self.clock() - self._start, 6), **fields))

    def _finish(self, status: Status, *, answer: str | None = None, error: str | None = None, detail: str | None = None) -> SearchResult:
        plan = self.plan
        failed = sum(b.status == "failed" for b in self.batches)
        log.info("finished status=%s failed batches=%d", status, failed)
        result = SearchResult(
            query=plan.query,
            namespace=plan.namespace,
            level=plan.level,
            seed=plan.seed,
            status=status,
            answer=answer,
            error=error,
            detail=detail,
            summary_count=plan.summary_count,
            batch_count=len(plan.batches),
            failed_batch_count=failed,
            batches=self.batches,
            reduce=self.reduce,
            selected_map_answers=self.selected,
        )
        self._emit(Finished, status=status, error=error)
        return result
