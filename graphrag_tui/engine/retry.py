"""Calling the model (SPEC §3.5, issue 12): one attempt, bounded in time and recorded, and
the one retry loop every model call of a run shares: at most two attempts with the same
request, the second after a 503's Retry-After (capped), each failure reported as an event.
A 429 is not a failed attempt: the run's gate (throttle.py) pauses every send and lowers
the concurrency, the call waits what the server announced and goes back into the gate, to be
sent again with the same attempt number, until its waits pass its budget (--max-rate-wait)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar, cast

from .answer_stream import AnswerStream
from .events import (
    AnswerDelta,
    AttemptFailed,
    ChangeReason,
    ConcurrencyChanged,
    EventReporter,
    RateLimited,
    RequestAdapted,
    RetryWaiting,
    UsageReported,
)
from .failures import error_text, for_log, internal_error
from .options import MAX_CONCURRENCY
from .ports import ChatModel, ChatReply, ChatRequest, ModelError, RateWaitSource, TextCallback
from .prompts import prompt_text
from .rate_limits import RateLimits
from .replies import ReplyError, repair_text
from .result import RAW_RESPONSE_CAP, Attempt, cap_raw_response
from .throttle import LimitChange, Throttle
from .tokens import TextSize
from .usage import Usage, UsageMeter

log = logging.getLogger("graphrag_tui.engine")

T = TypeVar("T")
ATTEMPTS = 2
MAX_RETRY_WAIT = 60.0
#: The status whose Retry-After the second attempt waits for (a 429's is the gate's).
RETRY_AFTER_STATUS = 503
#: A 429 without a wait the server announced waits BACKOFF_FIRST seconds, doubling with each
#: 429 in a row of the same call, up to BACKOFF_CAP (the OpenAI SDK starts at 0.5 s).
BACKOFF_FIRST = 1.0
BACKOFF_CAP = 60.0
#: An announced wait is honoured as it is the first time; from the second 429 in a row of
#: one call it is at least this, doubling with each: a server that keeps answering "retry
#: now" cannot make a call spin (after sixteen in a row the floor is 164 s; the budget ends it).
MIN_RATE_WAIT = 0.01

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
    #: The run's gate: caps, 429 pauses, the concurrency limit (none of them by default).
    throttle: Throttle = field(default_factory=lambda: Throttle(RateLimits(), MAX_CONCURRENCY))
    #: The run's usage totals and cost limit (None: usage is only recorded per attempt).
    meter: UsageMeter | None = None

    async def attempt(
        self,
        request: ChatRequest,
        parse: Callable[[str], T],
        number: int,
        record: list[Attempt],
        batch_index: int | None,
        community_id: str | None = None,
    ) -> tuple[Attempt, T | None, ModelError | None]:
        """One call, recorded in `record`. Returns the attempt, the parsed reply (or None)
        and the model's error, if it raised one (a 429 as `rate_limited`, whichever kind the
        model gave it). Only cancellation raises."""
        if self.meter is not None and self.meter.limit_reached:
            await asyncio.Future()  # the cost limit is cancelling the run: send nothing, wait for it
        started_at = self.wall_clock().isoformat()
        began = self.clock()
        attempt = Attempt(attempt=number, started_at=started_at, duration_s=0.0)
        record.append(attempt)
        parsed: T | None = None
        model_error: ModelError | None = None
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
            model_error = error
            kind = "rate_limited" if error.status == 429 else error.kind
            attempt.error_kind, attempt.error = kind, error_text(str(error.message))
            self._report_adaptations(error.adaptations, batch_index, community_id)
            if error.usage is not None:
                self._record_usage(attempt, error.usage, request, batch_index, community_id)
            if error.raw_response is not None:
                self._keep_raw_response(attempt, batch_index, repair_text(str(error.raw_response)))
        except Exception as error:  # from the model object: this attempt fails, not the run
            log.info("model call failed unexpectedly: %s", for_log(error))
            attempt.error_kind, attempt.error = "internal", internal_error(error)
        else:
            try:
                if isinstance(raw, ChatReply):
                    self._report_adaptations(raw.adaptations, batch_index, community_id)
                    if raw.usage is not None:
                        self._record_usage(attempt, raw.usage, request, batch_index, community_id)
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
        return attempt, parsed, model_error

    def limit_changed(self, change: LimitChange | None, reason: ChangeReason) -> None:
        if change is not None:
            report = self.report
            fields = {"t": report.now(), "from": change.old, "to": change.new, "reason": reason}
            report(ConcurrencyChanged.model_validate(fields))

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

    def _record_usage(
        self, attempt: Attempt, usage: Usage, request: ChatRequest, batch_index: int | None, community_id: str | None
    ) -> None:
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
                community_id=community_id,
            )
        )

    def _report_adaptations(self, changes: tuple[str, ...], batch_index: int | None, community_id: str | None) -> None:
        for change in changes:
            log.info("request adapted to the server: %s", change)
            self.report(
                RequestAdapted(t=self.report.now(), batch_index=batch_index, change=change, community_id=community_id)
            )

    def _keep_raw_response(self, attempt: Attempt, batch_index: int | None, raw: str) -> None:
        """Keep the first RAW_RESPONSE_CAP bytes and the full size; hand a longer reply whole
        to `on_long_response` (so a user can save it), never to the result or an event."""
        attempt.raw_response, attempt.raw_response_bytes = cap_raw_response(raw)
        if attempt.raw_response_bytes > RAW_RESPONSE_CAP and self.on_long_response is not None:
            try:
                self.on_long_response(batch_index, attempt.attempt, raw)
            except Exception as error:  # the listener's failure must not cost the reply
                log.info("on_long_response failed: %s", for_log(error))


def rate_wait(error: ModelError | None, in_a_row: int) -> tuple[float, RateWaitSource]:
    """How long the `in_a_row`-th 429 in a row of one call waits, and why."""
    doubling = 2.0 ** min(in_a_row - 1, 64)
    announced = error.retry_after if error is not None else None
    if error is None or announced is None:
        return min(BACKOFF_FIRST * doubling, BACKOFF_CAP), "backoff"
    floor = MIN_RATE_WAIT * doubling / 2 if in_a_row > 1 else 0.0
    return max(announced, floor), error.wait_source or "retry-after"


def pause_for_all(wait: float, source: RateWaitSource) -> float:
    """How long the server surely has no room after a 429 that asks this call to wait `wait`
    (the gate pauses every send at least that long). `Retry-After` has whole seconds (RFC
    9110), so the server rounded up and room may come up to a second sooner: the others are
    held back a second less (the gate then probes, see Throttle.rate_limited), while the call
    told to wait, waits. The other forms are precise (or the engine's own guess): all of it."""
    return max(0.0, wait - 1.0) if source == "retry-after" else wait


def request_tokens(request: ChatRequest) -> int:
    """What a request counts against a tokens-per-minute cap: its estimated prompt tokens
    plus its output reserve (the most it can cost). The stages set the estimate on the
    request; a request without one is measured here."""
    prompt = request.prompt_tokens
    if prompt is None:
        prompt = TextSize.of(prompt_text(request.messages)).tokens
    return prompt + (request.max_tokens or 0)


async def call_with_retry(
    caller: ModelCaller,
    request: ChatRequest,
    parse: Callable[[str], T],
    *,
    record: list[Attempt],
    batch_index: int | None,
    worker: int | None,
    on_start: Callable[[int], None] | None = None,
    community_id: str | None = None,
) -> T | None:
    """The parsed reply of the first of ATTEMPTS attempts that succeeds, or None.

    Each send passes the run's gate and is recorded in `record`; `on_start(number)` is called
    as it goes out. A failed attempt is reported (AttemptFailed); a 503's Retry-After delays
    the next one, capped at MAX_RETRY_WAIT and reported (RetryWaiting). A 429 is recorded
    with the number of the send that follows it and reported (RateLimited): the call waits
    in the gate and is sent again, unless its wait would end past its budget, counted from
    its first 429 (its waits and its turns in the gate after them), which fails it at once.
    `batch_index` and `worker` are None for Reduce; a rating call names its community
    (`community_id`), which its events carry. Cancellation propagates, recorded on the
    attempt."""
    report, throttle = caller.report, caller.throttle
    tokens = request_tokens(request) if throttle.counts_tokens else 0
    budget = throttle.limits.max_rate_wait
    limited_since: float | None = None  # the loop's time at the call's first 429
    in_a_row = 0
    retry_after: float | None = None
    # A resumed call goes on from the attempts recorded before it (a 429 has the number of
    # the send that follows it), with ATTEMPTS of its own.
    first = number = 1 + max([0, *(a.attempt for a in record if a.error_kind != "rate_limited")])
    while True:
        if retry_after:
            wait = retry_wait(retry_after)
            report(RetryWaiting(t=report.now(), batch_index=batch_index, seconds=wait, community_id=community_id))
            await asyncio.sleep(wait)
        async with throttle.slot(tokens) as sent_in:
            if on_start is not None:
                on_start(number)
            attempt, parsed, error = await caller.attempt(request, parse, number, record, batch_index, community_id)
        assert parsed is not None or (attempt.error_kind is not None and attempt.error is not None)
        if attempt.error_kind == "rate_limited":
            in_a_row += 1
            wait, source = rate_wait(error, in_a_row)
            now = asyncio.get_running_loop().time()
            if limited_since is None:
                limited_since = now
            # Since its first 429: its own waits, and its turns in the gate after them, where
            # the other calls' 429s hold it (a storm of 429s otherwise went round every batch
            # for its whole budget, one after another).
            left = budget - (now - limited_since)
            if wait <= left:
                attempt.error = f"{attempt.error}; sent again after {wait:g} s ({source})"
                change = throttle.rate_limited(wait, sent_in, sure=pause_for_all(wait, source))
                caller.limit_changed(change, "rate_limited")
                report(
                    RateLimited(
                        t=report.now(), batch_index=batch_index, wait_s=round(wait, 6), source=source,
                        concurrency=throttle.limit, community_id=community_id,
                    )
                )
                log.info("rate limited: %s waits %g s (%s); calls in flight limited to %d",
                         "reduce" if batch_index is None else f"map batch {batch_index}", wait, source, throttle.limit)
                await asyncio.sleep(wait)  # then back into the gate, behind the calls waiting there
                continue
            attempt.error = (
                f"{attempt.error}; the server asked to wait {wait:g} s, more than the {round(max(left, 0.0), 2):g} s "
                f"left of this call's {budget:g} s for rate limits (--max-rate-wait, from its first 429)"
            )
        else:
            in_a_row = 0
            caller.limit_changed(throttle.succeeded(), "recovered")
        if parsed is not None:
            return parsed
        assert attempt.error_kind is not None and attempt.error is not None  # a failed attempt says why
        will_retry = number - first + 1 < ATTEMPTS and attempt.error_kind != "rate_limited"
        report(
            AttemptFailed(
                t=report.now(),
                batch_index=batch_index,
                worker=worker,
                attempt=number,
                error_kind=attempt.error_kind,
                error=attempt.error,
                will_retry=will_retry,
                community_id=community_id,
            )
        )
        if not will_retry:
            return None
        retry_after = error.retry_after if error is not None and error.status == RETRY_AFTER_STATUS else None
        number += 1
