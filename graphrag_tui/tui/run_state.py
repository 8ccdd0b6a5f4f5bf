"""The state of the current run, built from engine events by the App's handlers.

Widgets read it on each repaint tick; they never reach into the engine.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from ..engine import (
    AnswerDelta,
    AttemptFailed,
    BatchFailed,
    BatchResult,
    BatchStarted,
    BatchSucceeded,
    CommunityRated,
    ConcurrencyChanged,
    Cost,
    Event,
    Finished,
    Planned,
    RateLimited,
    ReduceCandidate,
    ReduceCandidateDecided,
    ReduceStarted,
    RetryWaiting,
    SearchPlan,
    SearchResult,
    Usage,
    UsageReported,
)
from ..engine.selection import Rating

Candidate = ReduceCandidate | ReduceCandidateDecided
#: A community's rating: as the event reported it live, or the result's.
RatingRow = CommunityRated | Rating
CellState = Literal["queued", "running", "retrying", "succeeded", "failed", "cancelled"]
Phase = Literal["idle", "planning", "map", "reduce", "finished"]


@dataclass
class BatchCell:
    state: CellState = "queued"
    worker: int | None = None
    attempt: int = 0
    usefulness: int | float | None = None


@dataclass
class WorkerSlot:
    batch_index: int
    attempt: int
    started: float
    #: The batch got a 429 and waits to be sent again: not in flight.
    rate_limited: bool = False


@dataclass
class FailedAttempt:
    batch_index: int | None  # None: the Reduce call
    attempt: int
    kind: str
    message: str
    will_retry: bool


@dataclass
class RunState:
    phase: Phase = "idle"
    plan: SearchPlan | None = None
    cells: list[BatchCell] = field(default_factory=list)
    workers: dict[int, WorkerSlot] = field(default_factory=dict)
    worker_count: int = 0
    in_flight_history: list[int] = field(default_factory=list)
    failures: list[FailedAttempt] = field(default_factory=list)
    scores: list[tuple[int, int | float]] = field(default_factory=list)
    #: Reduce candidates in rank order, as the events reported them (then the result's).
    candidates: list[Candidate] = field(default_factory=list)
    reduce_tokens: int | None = None
    reduce_budget: int | None = None
    retry_wait: float | None = None
    #: The limit on calls in flight as the engine lowered or raised it after 429s (None: the
    #: run's concurrency, untouched).
    concurrency_limit: int | None = None
    #: 429s so far, and how long calls waited for them: the time during which at least one
    #: call waited, on the run's clock (overlapping waits count once).
    rate_limited: int = 0
    rate_wait_total: float = 0.0
    rate_wait_until: float = 0.0
    result: SearchResult | None = None
    #: App-clock times: the run started (Run pressed), its Map started (the plan was ready),
    #: Map ended (the first Reduce decision), the run ended. None until they happen.
    started_at: float | None = None
    map_started_at: float | None = None
    map_ended_at: float | None = None
    finished_at: float | None = None
    #: The run's usage as servers reported it, the estimate of the same prompts, the cost.
    usage_total: Usage | None = None
    estimated_prompt_tokens: int = 0
    cost: Cost | None = None
    #: The Reduce answer as it streams (its pieces), and the attempt it belongs to.
    streamed: list[str] = field(default_factory=list)
    streamed_attempt: int | None = None
    #: How the run chooses its communities (issue 15): level, rollup or dynamic.
    selection_mode: str | None = None
    #: Dynamic selection's ratings, as they come in (then the result's).
    ratings: list[RatingRow] = field(default_factory=list)
    #: Batches a re-run or a resume keeps from before (no event comes for them): shown as they ended.
    kept: list[BatchResult] = field(default_factory=list)
    #: Of those, the ones shown finished: work of another run (or another process), not in this one's rate.
    kept_finished: int = 0
    #: A recorded run's status where the history says more than its result: `interrupted`
    #: (a process that died leaves a result `cancelled`).
    recorded_status: str | None = None
    #: Set by every change, cleared by the repaint that shows it.
    dirty: bool = True

    @property
    def running(self) -> bool:
        return self.phase in ("planning", "map", "reduce")

    def cell_counts(self) -> Counter[CellState]:
        """Batches per state, in one pass over the cells."""
        return Counter(cell.state for cell in self.cells)

    def count(self, state: CellState) -> int:
        return self.cell_counts()[state]

    def planned(self, plan: SearchPlan, now: float | None = None) -> None:
        self.plan = plan
        self.map_started_at = now
        self.cells = [BatchCell() for _ in plan.batches]
        self.kept_finished = 0
        for batch in self.kept:
            if batch.index < len(self.cells) and batch.status in ("succeeded", "failed"):
                self.cells[batch.index] = BatchCell(batch.status, usefulness=batch.usefulness)
                self.kept_finished += 1
                if batch.status == "succeeded" and batch.usefulness is not None:
                    self.scores.append((batch.index, batch.usefulness))
        # As the engine's Planned event will say; known now, the workers table is laid out
        # with the grid, in the same frame.
        self.worker_count = min(plan.options.concurrency, len(plan.batches))
        self.phase = "map"
        self.dirty = True

    def apply(self, event: Event, now: float) -> None:  # type: ignore[valid-type]
        """Fold one engine event into the state. `now` is the app clock, for durations."""
        self.dirty = True
        match event:
            case Planned(workers=workers):
                self.worker_count = workers
            case BatchStarted(batch_index=index, worker=worker, attempt=attempt):
                cell = self.cells[index]
                cell.state, cell.worker, cell.attempt = ("running" if attempt == 1 else "retrying"), worker, attempt
                self.workers[worker] = WorkerSlot(index, attempt, now)
                self.retry_wait = None
            case CommunityRated():
                self.ratings.append(event)
            case AttemptFailed(community_id=str()):
                pass  # a rating call's failure: its rating says so (the Selection tab)
            case AttemptFailed(batch_index=index, attempt=attempt, error_kind=kind, error=error, will_retry=retry):
                self.failures.append(FailedAttempt(index, attempt, kind, error, retry))
                if index is not None and retry:
                    self.cells[index].state = "retrying"
            case RetryWaiting(seconds=seconds):
                self.retry_wait = seconds
            case RateLimited(t=t, batch_index=index, wait_s=wait, concurrency=limit):
                self.rate_limited += 1
                for slot in self.workers.values():
                    if slot.batch_index == index:
                        slot.rate_limited = True
                self.concurrency_limit = limit
                self.rate_wait_total += max(0.0, t + wait - max(t, self.rate_wait_until))
                self.rate_wait_until = max(self.rate_wait_until, t + wait)
            case ConcurrencyChanged(to=limit):
                self.concurrency_limit = limit
            case BatchSucceeded(batch_index=index, worker=worker, usefulness=usefulness):
                cell = self.cells[index]
                cell.state, cell.usefulness = "succeeded", usefulness
                self.scores.append((index, usefulness))
                self.workers.pop(worker, None)
            case BatchFailed(batch_index=index, worker=worker):
                self.cells[index].state = "failed"
                self.workers.pop(worker, None)
            case ReduceCandidateDecided():
                if self.map_ended_at is None:
                    self.map_ended_at = now
                self.phase = "reduce"
                self.workers.clear()
                self.candidates.append(event)
            case ReduceStarted(prompt_tokens=tokens, budget=budget):
                self.reduce_tokens, self.reduce_budget = tokens, budget
            case UsageReported(usage_total=total, estimated_prompt_tokens_total=estimate, cost=cost):
                self.usage_total, self.estimated_prompt_tokens, self.cost = total, estimate, cost
            case AnswerDelta(attempt=attempt, text=text):
                if attempt != self.streamed_attempt:  # a retry writes its answer anew
                    self.streamed, self.streamed_attempt = [], attempt
                self.streamed.append(text)
            case Finished():
                self.workers.clear()

    @property
    def streamed_answer(self) -> str:
        if len(self.streamed) > 1:  # joined once per repaint, not once per piece
            self.streamed[:] = ["".join(self.streamed)]
        return self.streamed[0] if self.streamed else ""

    def finished(self, result: SearchResult, now: float | None = None) -> None:
        self.result = result
        if result.selection is not None:
            self.selection_mode = result.selection.mode
            self.ratings = list(result.selection.ratings)
        if result.usage_total is not None:
            self.usage_total = result.usage_total
            self.estimated_prompt_tokens = result.estimated_prompt_tokens or 0
        self.cost = result.cost
        self.phase = "finished"
        self.finished_at = now
        if self.map_ended_at is None:
            self.map_ended_at = now
        self.workers.clear()
        self.reduce_budget = result.reduce.budget
        self.reduce_tokens = result.reduce.prompt_tokens
        self.candidates = list(result.reduce.candidates)
        for batch, cell in zip(result.batches, self.cells, strict=False):
            if batch.status == "cancelled":
                cell.state = "cancelled"
        self.dirty = True

    @property
    def in_flight(self) -> int:
        return sum(not slot.rate_limited for slot in self.workers.values())

    def sample_in_flight(self, keep: int = 120) -> None:
        self.in_flight_history.append(self.in_flight)
        del self.in_flight_history[:-keep]
