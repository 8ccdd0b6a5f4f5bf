"""What a run reports while it goes (SPEC §3.8). `t` is seconds since the run started."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .ports import ErrorKind, RateWaitSource
from .result import Decision, Status
from .usage import Cost, Usage


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    t: float


class Planned(_Event):
    type: Literal["planned"] = "planned"
    summary_count: int
    batch_count: int
    workers: int
    seed: int | None


class BatchStarted(_Event):
    type: Literal["batch_started"] = "batch_started"
    batch_index: int
    worker: int
    attempt: int


class AttemptFailed(_Event):
    """A failed Map or Reduce attempt (`batch_index` is None for Reduce)."""

    type: Literal["attempt_failed"] = "attempt_failed"
    batch_index: int | None
    worker: int | None
    attempt: int
    error_kind: ErrorKind
    error: str
    will_retry: bool


class RetryWaiting(_Event):
    """The second attempt waits for the server's Retry-After."""

    type: Literal["retry_waiting"] = "retry_waiting"
    batch_index: int | None
    seconds: float


class RateLimited(_Event):
    """A 429 (issue 12): every send pauses `wait_s`, then the call (a Map batch, or the
    Reduce call when `batch_index` is None) is sent again; `concurrency` is the limit on
    calls in flight from now on."""

    type: Literal["rate_limited"] = "rate_limited"
    batch_index: int | None
    wait_s: float
    source: RateWaitSource
    concurrency: int


ChangeReason = Literal["rate_limited", "recovered"]


class ConcurrencyChanged(_Event):
    """The limit on calls in flight changed: halved after a 429 (`rate_limited`), or one
    more after a run of successes (`recovered`). Serialized as `{from, to, reason}`."""

    model_config = ConfigDict(frozen=True, serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)

    type: Literal["concurrency_changed"] = "concurrency_changed"
    from_: int = Field(alias="from")
    to: int
    reason: ChangeReason


class BatchSucceeded(_Event):
    type: Literal["batch_succeeded"] = "batch_succeeded"
    batch_index: int
    worker: int
    attempt: int
    usefulness: int | float


class BatchFailed(_Event):
    type: Literal["batch_failed"] = "batch_failed"
    batch_index: int
    worker: int
    error: str


class ReduceCandidateDecided(_Event):
    type: Literal["reduce_candidate"] = "reduce_candidate"
    batch_index: int
    usefulness: int | float
    community_ids: tuple[str, ...]
    decision: Decision


class ReduceStarted(_Event):
    type: Literal["reduce_started"] = "reduce_started"
    selected_count: int
    prompt_tokens: int
    budget: int


class UsageReported(_Event):
    """A call's usage as the server reported it (`batch_index` None for Reduce), beside its
    estimated prompt tokens, and the run's totals so far (the cost when prices apply)."""

    type: Literal["usage"] = "usage"
    batch_index: int | None
    attempt: int
    usage: Usage
    estimated_prompt_tokens: int | None
    usage_total: Usage
    estimated_prompt_tokens_total: int
    cost: Cost | None = None


class AnswerDelta(_Event):
    """More of the Reduce answer as the model writes it. A new `attempt` starts the text over."""

    type: Literal["answer_delta"] = "answer_delta"
    attempt: int
    text: str


class RequestAdapted(_Event):
    """The model changed its requests to suit the server (once per change): `change` says how."""

    type: Literal["request_adapted"] = "request_adapted"
    batch_index: int | None
    change: str


class Finished(_Event):
    type: Literal["finished"] = "finished"
    status: Status
    error: str | None


Event = Annotated[
    Planned
    | BatchStarted
    | AttemptFailed
    | RetryWaiting
    | RateLimited
    | ConcurrencyChanged
    | BatchSucceeded
    | BatchFailed
    | ReduceCandidateDecided
    | ReduceStarted
    | UsageReported
    | AnswerDelta
    | RequestAdapted
    | Finished,
    Field(discriminator="type"),
]


class EventReporter:
    """Hands a run's events to its listener, as they happen. An event's `t` is `now()`:
    seconds since `start()`, on the run's clock."""

    def __init__(self, listener: Callable[[Event], None], clock: Callable[[], float]) -> None:
        self._listener = listener
        self._clock = clock
        self._start = 0.0

    def start(self) -> None:
        self._start = self._clock()

    def now(self) -> float:
        return round(self._clock() - self._start, 6)

    def __call__(self, event: Event) -> None:
        self._listener(event)
