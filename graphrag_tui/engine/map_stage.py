"""Map (SPEC §3.5): a pool of workers claims batches through a shared next-index counter and
asks the model about each; results are stored at their batch positions. An exception while
handling one batch fails that batch, never the pool."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from .batcher import MapBatch
from .events import AttemptFailed, BatchFailed, BatchStarted, BatchSucceeded
from .failures import for_log, internal_error
from .plan import SearchPlan
from .ports import ChatRequest
from .prompts import map_messages
from .replies import parse_map_reply
from .reply_schemas import MAP_REPLY_SCHEMA
from .result import Attempt, BatchResult
from .retry import ModelCaller, call_with_retry

log = logging.getLogger("graphrag_tui.engine")

TIME_SLICE = 0.002  # seconds of Map work between two rounds of the event loop


def part_spans(batch: MapBatch) -> tuple[tuple[str, int, int, int], ...]:
    """(community id, part, start, end) of each part's text in the batch's content: its
    pieces are each part's header and text, a newline between parts (batcher.py)."""
    pieces, parts = batch.pieces, batch.parts
    if len(pieces) != 3 * len(parts) - 1:  # (not the batcher's: no spans)
        return ()
    spans, position = [], 0
    for number, ref in enumerate(parts):
        if number:
            position += len(pieces[3 * number - 1])
        position += len(pieces[3 * number])  # its header
        text = len(pieces[3 * number + 1])
        spans.append((ref.community_id, ref.part, position, position + text))
        position += text
    return tuple(spans)


class MapStage:
    """Runs the batches of `plan` into `batches` (one BatchResult per batch, in order): all
    of them, or those of `indexes` (a re-run or a resume sends only some)."""

    def __init__(
        self, plan: SearchPlan, batches: list[BatchResult], caller: ModelCaller, indexes: Sequence[int] | None = None
    ) -> None:
        self.plan = plan
        self.batches = batches
        self.caller = caller
        self.todo = plan.batches if indexes is None else tuple(plan.batches[i] for i in indexes)
        self._slice_open, self._slice_start = True, time.perf_counter()

    async def run(self, workers: int) -> None:
        next_index = 0

        async def worker(number: int) -> None:
            nonlocal next_index
            while next_index < len(self.todo):
                index = next_index
                next_index += 1
                await self._run_batch(self.todo[index], number)
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
        try:
            await self._map_batch(batch, worker, result)
        except Exception as error:  # a bug handling one batch fails that batch, not the run
            log.info("map batch %d failed unexpectedly: %s", batch.index, for_log(error))
            self._fail_internally(result, worker, error)

    async def _map_batch(self, batch: MapBatch, worker: int, result: BatchResult) -> None:
        report = self.caller.report
        content = batch.content  # joined from its pieces: once per batch
        request = ChatRequest(
            stage="map",
            messages=map_messages(self.plan.query, content, self.plan.prompts),
            query=self.plan.query,
            content=content,
            max_tokens=self.plan.options.map_reserve or None,
            json_schema=MAP_REPLY_SCHEMA,
            prompt_tokens=result.prompt_tokens,
            parts=part_spans(batch) if getattr(self.caller.model, "reads_parts", False) is True else (),
        )

        def started(number: int) -> None:
            report(BatchStarted(t=report.now(), batch_index=batch.index, worker=worker, attempt=number))

        parsed = await call_with_retry(
            self.caller,
            request,
            parse_map_reply,
            record=result.attempts,
            batch_index=batch.index,
            worker=worker,
            on_start=started,
        )
        if parsed is None:
            result.status = "failed"
            error = result.attempts[-1].error or ""
            report(BatchFailed(t=report.now(), batch_index=batch.index, worker=worker, error=error))
            return
        result.answer, result.usefulness = parsed
        result.status = "succeeded"
        report(
            BatchSucceeded(
                t=report.now(),
                batch_index=batch.index,
                worker=worker,
                attempt=result.attempts[-1].attempt,
                usefulness=result.usefulness,
            )
        )

    def _fail_internally(self, result: BatchResult, worker: int, error: Exception) -> None:
        message = internal_error(error)
        if not result.attempts or result.attempts[-1].error_kind is not None:
            started_at = self.caller.wall_clock().isoformat()
            result.attempts.append(Attempt(attempt=len(result.attempts) + 1, started_at=started_at, duration_s=0.0))
        attempt = result.attempts[-1]
        attempt.error_kind, attempt.error = "internal", message
        result.answer, result.usefulness, result.status = None, None, "failed"
        report = self.caller.report
        try:
            report(
                AttemptFailed(
                    t=report.now(),
                    batch_index=result.index,
                    worker=worker,
                    attempt=attempt.attempt,
                    error_kind="internal",
                    error=message,
                    will_retry=False,
                )
            )
            report(BatchFailed(t=report.now(), batch_index=result.index, worker=worker, error=message))
        except Exception as again:  # the listener itself fails: the result still says it all
            log.info("reporting map batch %d's failure failed: %s", result.index, for_log(again))
