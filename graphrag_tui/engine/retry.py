"""Calling the model (SPEC §3.5): one attempt, bounded in time and recorded, and the one
retry loop Map and Reduce share: at most two attempts with the same request, the second
after the server's Retry-After (capped), each failure reported as an event."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar, cast

from .answer_stream import AnswerStream
from .events import AnswerDelta, AttemptFailed, EventReporter, RequestAdapted, RetryWaiting, UsageReported
from .failures import error_text, for_log, internal_error
from .ports import ChatModel, ChatReply, ChatRequest, ModelError, TextCallback
from .replies import ReplyError, repair_text
from .result import RAW_RESPONSE_CAP, Attempt, cap_raw_response
from .usage import Usage, UsageMeter

log = logging.getLogger("graphrag_tui.engine")

T = TypeVar("T")
ATTEMPTS = 2
MAX_RETRY_WAIT = 60.0
#: The statuses whose Retry-After the second attempt waits for.
RETRY_AFTER_STATUSES = (429, 503)

#: Called with (batch index, or None for Reduce; attempt number; the whole raw response) for
#: every attempt whose raw response is longer than RAW_RESPONSE_CAP, which results keep.
LongResponseHook = Callable[[int | None, int, str], None]


class StreamingChatModel(Protocol):
    """A ChatModel whose `supports_streaming` is true (see ports.ChatModel)."""

    async def complete(self, request: ChatRequest, *, on_text: TextCallback | None = None) -> str | ChatReply: ...


def retry_wait(seconds: float) -> float:
    """How long the second attempt waits when the server asked for `seconds`."""
    return min(max(seconds, 0.0), MAX_RETRY_WAIT)


@dataclass(frozen=True)
class ModelCaller:
    """What every model call of a run shares: the model, the time bound of one attempt, the
    clocks attempts are recorded with, and where events and long responses go."""

    model: ChatModel
    report: EventReporter
    timeout: float
    clock: Callable[[], float]
    wall_clock: Callable[[], datetime]
    on_long_response: LongResponseHook | None = None
    #: The run's usage totals and cost limit (None: usage is only recorded per attempt).
    meter: UsageMeter | None = None

    async def attempt(
        self,
        request: ChatRequest,
        parse: Callable[[str], T],
        number: int,
        record: list[Attempt],
        batch_index: int | None,
    ) -> tuple[Attempt, T | None, float | None]:
        """One call, recorded in `record`. Returns the attempt, the parsed reply (or None)
        and the Retry-After wait the server asked for. Only cancellation raises."""
        if self.meter is not None and self.meter.limit_reached:
            await asyncio.Future()  # the cost limit is cancelling the run: send nothing, wait for it
        started_at = self.wall_clock().isoformat()
        began = self.clock()
        attempt = Attempt(attempt=number, started_at=started_at, duration_s=0.0)
        record.append(attempt)
        parsed: T | None = None
        retry_after: float | None = None
        try:
            async with asyncio.timeout(self.timeout):
                raw: object = await self._complete(request, number)
        except asyncio.CancelledError:
            attempt.duration_s = round(self.clock() - began, 6)
            attempt.error = "cancelled"
            raise
        except TimeoutError:
            attempt.error_kind, attempt.error = "timeout", f"no reply within {self.timeout:g} s"
        except ModelError as error:
            attempt.error_kind, attempt.error = error.kind, error_text(str(error.message))
            self._report_adaptations(error.adaptations, batch_index)
            if error.raw_response is not None:
                self._keep_raw_response(attempt, batch_index, repair_text(str(error.raw_response)))
            if error.status in RETRY_AFTER_STATUSES:
                retry_after = error.retry_after
        except Exception as error:  # from the model object: this attempt fails, not the run
            log.info("model call failed unexpectedly: %s", for_log(error))
            attempt.error_kind, attempt.error = "internal", internal_error(error)
        else:
            try:
                if isinstance(raw, ChatReply):
                    self._report_adaptations(raw.adaptations, batch_index)
                    if raw.usage is not None:
                        self._record_usage(attempt, raw.usage, request, batch_index)
                    raw = raw.text
                if not isinstance(raw, str):
                    raise TypeError(f"the model returned {type(raw).__name__}, not text")
                text = repair_text(raw)
                self._keep_raw_response(attempt, batch_index, text)
                parsed = parse(text)
            except ReplyError as error:
                attempt.error_kind, attempt.error = error.kind, error.message
            except Exception as error:
                log.info("handling a reply failed unexpectedly: %s", for_log(error))
                attempt.error_kind, attempt.error = "internal", internal_error(error)
        attempt.duration_s = round(self.clock() - began, 6)
        return attempt, parsed, retry_after

    async def _complete(self, request: ChatRequest, number: int) -> object:
        """The model's reply. The Reduce answer streams from a model that can stream: each
        piece of its `answer` field is reported (AnswerDelta) as it arrives."""
        if request.stage != "reduce" or getattr(self.model, "supports_streaming", False) is not True:
            return await self.model.complete(request)
        answer = AnswerStream()
        report = self.report

        def on_text(piece: str) -> None:
            try:
                text = answer.feed(piece)
                if text:
                    report(AnswerDelta(t=report.now(), attempt=number, text=repair_text(text)))
            except Exception as error:  # showing the answer early must never cost the reply
                log.info("streaming the answer failed: %s", for_log(error))

        return await cast(StreamingChatModel, self.model).complete(request, on_text=on_text)

    def _record_usage(self, attempt: Attempt, usage: Usage, request: ChatRequest, batch_index: int | None) -> None:
        attempt.usage = usage
        meter = self.meter
        if meter is None:
            return
        meter.add(usage, request.prompt_tokens)
        assert meter.total is not None
        report = self.report
        report(
            UsageReported(
                t=report.now(),
                batch_index=batch_index,
                attempt=attempt.attempt,
                usage=usage,
                estimated_prompt_tokens=request.prompt_tokens,
                usage_total=meter.total,
                estimated_prompt_tokens_total=meter.estimated_prompt_tokens,
                cost=meter.cost,
            )
        )

    def _report_adaptations(self, changes: tuple[str, ...], batch_index: int | None) -> None:
        for change in changes:
            log.info("request adapted to the server: %s", change)
            self.report(RequestAdapted(t=self.report.now(), batch_index=batch_index, change=change))

    def _keep_raw_response(self, attempt: Attempt, batch_index: int | None, raw: str) -> None:
        """Keep the first RAW_RESPONSE_CAP bytes and the full size; hand a longer reply whole
        to `on_long_response` (so a user can save it), never to the result or an event."""
        attempt.raw_response, attempt.raw_response_bytes = cap_raw_response(raw)
        if attempt.raw_response_bytes > RAW_RESPONSE_CAP and self.on_long_response is not None:
            try:
                self.on_long_response(batch_index, attempt.attempt, raw)
            except Exception as error:  # the listener's failure must not cost the reply
                log.info("on_long_response failed: %s", for_log(error))


async def call_with_retry(
    caller: ModelCaller,
    request: ChatRequest,
    parse: Callable[[str], T],
    *,
    record: list[Attempt],
    batch_index: int | None,
    worker: int | None,
    on_start: Callable[[int], None] | None = None,
) -> T | None:
    """The parsed reply of the first of ATTEMPTS attempts that succeeds, or None.

    Each attempt is recorded in `record`; `on_start(number)` is called before it. A failed
    attempt is reported (AttemptFailed); a Retry-After from the server (429, 503) delays the
    next one, capped at MAX_RETRY_WAIT and reported (RetryWaiting). `batch_index` and
    `worker` are None for Reduce. Cancellation propagates, recorded on the attempt."""
    report = caller.report
    retry_after: float | None = None
    for number in range(1, ATTEMPTS + 1):
        if retry_after:
            wait = retry_wait(retry_after)
            report(RetryWaiting(t=report.now(), batch_index=batch_index, seconds=wait))
            await asyncio.sleep(wait)
        if on_start is not None:
            on_start(number)
        attempt, parsed, retry_after = await caller.attempt(request, parse, number, record, batch_index)
        if parsed is not None:
            return parsed
        assert attempt.error_kind is not None and attempt.error is not None  # a failed attempt says why
        report(
            AttemptFailed(
                t=report.now(),
                batch_index=batch_index,
                worker=worker,
                attempt=number,
                error_kind=attempt.error_kind,
                error=attempt.error,
                will_retry=number < ATTEMPTS,
            )
        )
    return None
