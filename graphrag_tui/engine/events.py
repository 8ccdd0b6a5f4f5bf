"""What a run reports while it goes (SPEC §3.8). `t` is seconds since the run started."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from .ports import ErrorKind, RateWaitSource
from .result import Decision, Status
from .usage import Cost, Usage


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    t: float


class _RatingCall(_Event):
    """An event of a model call that a rating call (dynamic selection) shares with Map and
    Reduce: `community_id` names the community rated (its `batch_index` is None). It is
    left out of the JSON when None, so the events of Map and Reduce read as before."""

    community_id: str | None = None

    @model_serializer(mode="wrap")
    def _without_community(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("community_id") is None:
            data.pop("community_id", None)
        return data


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


class AttemptFailed(_RatingCall):
    """A failed Map or Reduce attempt (`batch_index` is None for Reduce)."""

    type: Literal["attempt_failed"] = "attempt_failed"
    batch_index: int | None
    worker: int | None
    attempt: int
    error_kind: ErrorKind
    error: str
    will_retry: bool


class RetryWaiting(_RatingCall):
    """The second attempt waits for the server's Retry-After."""

    type: Literal["retry_waiting"] = "retry_waiting"
    batch_index: int | None
    seconds: float


class RateLimited(_RatingCall):
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


class UsageReported(_RatingCall):
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


class RequestAdapted(_RatingCall):
    """The model changed its requests to suit the server (once per change): `change` says how."""

    type: Literal["request_adapted"] = "request_adapted"
    batch_index: int | None
    change: str


class CommunityRated(_Event):
    """Dynamic selection rated one community (issue 15): the majority of its `votes`, the
    reason given with it, and whether it is kept (rating >= --rate-threshold). `failed`
    counts the votes whose reply could not be used (each counted as 1)."""

    type: Literal["community_rated"] = "community_rated"
    community_id: str
    level: int
    rating: int
    reason: str
    votes: tuple[int, ...]
    kept: bool
    failed: int = 0


class SelectionFinished(_Event):
    """Dynamic selection ended: how many communities it rated and selected (Map follows)."""

    type: Literal["selection_finished"] = "selection_finished"
    rated_count: int
    selected_count: int


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
    | CommunityRated
    | SelectionFinished
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
