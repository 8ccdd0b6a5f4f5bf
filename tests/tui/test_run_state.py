"""Unit tests of RunState: how the App folds a run's engine events into what the panels show."""

from __future__ import annotations

from collections import Counter

from graphrag_tui.engine import (
    AttemptFailed,
    BatchFailed,
    BatchStarted,
    BatchSucceeded,
    Finished,
    Planned,
    ReduceCandidate,
    ReduceCandidateDecided,
    ReduceStarted,
    RetryWaiting,
    SearchOptions,
    SearchPlan,
)
from graphrag_tui.engine.batcher import MapBatch, PartRef
from graphrag_tui.engine.result import BatchResult, ReduceReport, SearchResult
from graphrag_tui.tui.run_state import BatchCell, FailedAttempt, RunState, WorkerSlot


def plan(batch_count: int = 3, concurrency: int = 4) -> SearchPlan:
    batches = tuple(
        MapBatch(index=i, pieces=(f"text {i}",), community_ids=(f"ns/{i}",), parts=(PartRef(community_id=f"ns/{i}", part=1),))
        for i in range(batch_count)
    )
    return SearchPlan(query="q", namespace="ns", level="leaf", seed=7, options=SearchOptions(concurrency=concurrency),
                      summary_count=batch_count, batches=batches)


def planned_state(batch_count: int = 3, concurrency: int = 4) -> RunState:
    state = RunState()
    state.planned(plan(batch_count, concurrency))
    state.dirty = False
    return state


def result(statuses: list[str], candidates: list[ReduceCandidate] | None = None) -> SearchResult:
    batches = [BatchResult(index=i, community_ids=(f"ns/{i}",), parts=(), prompt_tokens=10, status=status)
               for i, status in enumerate(statuses)]
    return SearchResult(query="q", namespace="ns", level="leaf", seed=7, status="cancelled", summary_count=len(statuses),
                        batch_count=len(statuses), batches=batches,
                        reduce=ReduceReport(candidates=candidates or [], prompt_tokens=222, budget=900))


def test_a_new_state_is_idle_and_empty() -> None:
    state = RunState()
    assert (state.phase, state.running, state.plan) == ("idle", False, None)
    assert (state.cells, state.workers, state.worker_count) == ([], {}, 0)
    assert (state.failures, state.scores, state.candidates, state.in_flight_history) == ([], [], [], [])
    assert (state.reduce_tokens, state.reduce_budget, state.retry_wait, state.result) == (None, None, None, None)
    assert state.dirty is True
    assert state.cell_counts() == Counter()
    assert state.count("queued") == 0


def test_planned_lays_out_one_queued_cell_per_batch_and_the_workers_the_run_will_use() -> None:
    state = RunState()
    state.dirty = False
    the_plan = plan(batch_count=3, concurrency=4)
    state.planned(the_plan)
    assert state.plan is the_plan
    assert state.cells == [BatchCell(), BatchCell(), BatchCell()]
    assert state.cells[0] == BatchCell(state="queued", worker=None, attempt=0, usefulness=None)
    assert state.worker_count == 3  # fewer batches than the concurrency: one worker per batch
    assert (state.phase, state.running, state.dirty) == ("map", True, True)
    assert state.cell_counts() == Counter({"queued": 3})
    assert planned_state(batch_count=5, concurrency=2).worker_count == 2
    assert planned_state(batch_count=0, concurrency=4).worker_count == 0


def test_the_planned_event_sets_the_worker_count() -> None:
    state = planned_state(batch_count=5, concurrency=4)
    state.apply(Planned(t=0.0, summary_count=5, batch_count=5, workers=2, seed=7), now=1.0)
    assert (state.worker_count, state.dirty, state.phase) == (2, True, "map")


def test_a_first_attempt_runs_and_a_later_one_retries_on_its_worker() -> None:
    state = planned_state()
    state.apply(BatchStarted(t=0.1, batch_index=1, worker=0, attempt=1), now=10.0)
    assert state.cells[1] == BatchCell(state="running", worker=0, attempt=1)
    assert state.workers == {0: WorkerSlot(batch_index=1, attempt=1, started=10.0)}
    assert state.dirty is True
    state.apply(BatchStarted(t=0.2, batch_index=2, worker=1, attempt=2), now=11.5)
    assert state.cells[2] == BatchCell(state="retrying", worker=1, attempt=2)
    assert state.workers == {0: WorkerSlot(1, 1, 10.0), 1: WorkerSlot(2, 2, 11.5)}
    assert state.cell_counts() == Counter({"queued": 1, "running": 1, "retrying": 1})


def test_a_failed_attempt_is_recorded_and_its_batch_retries_only_when_it_will() -> None:
    state = planned_state()
    state.apply(BatchStarted(t=0.1, batch_index=0, worker=0, attempt=1), now=1.0)
    state.apply(BatchStarted(t=0.1, batch_index=1, worker=1, attempt=1), now=1.0)
    state.apply(AttemptFailed(t=0.5, batch_index=0, worker=0, attempt=1, error_kind="timeout", error="timed out after 5 s",
                              will_retry=True), now=2.0)
    state.apply(AttemptFailed(t=0.6, batch_index=1, worker=1, attempt=2, error_kind="invalid_json", error="reply is not JSON",
                              will_retry=False), now=2.0)
    assert state.failures == [
        FailedAttempt(batch_index=0, attempt=1, kind="timeout", message="timed out after 5 s", will_retry=True),
        FailedAttempt(batch_index=1, attempt=2, kind="invalid_json", message="reply is not JSON", will_retry=False),
    ]
    assert [cell.state for cell in state.cells] == ["retrying", "running", "queued"]
    # The worker keeps its slot until the batch succeeds or fails for good.
    assert set(state.workers) == {0, 1}


def test_a_failed_reduce_attempt_touches_no_batch() -> None:
    state = planned_state()
    state.apply(AttemptFailed(t=3.0, batch_index=None, worker=None, attempt=1, error_kind="http", error="HTTP 503",
                              will_retry=True), now=5.0)
    assert state.failures == [FailedAttempt(None, 1, "http", "HTTP 503", True)]
    assert state.cell_counts() == Counter({"queued": 3})
    assert state.dirty is True


def test_a_retry_wait_is_shown_until_the_next_attempt_starts() -> None:
    state = planned_state()
    state.apply(RetryWaiting(t=1.0, batch_index=0, seconds=2.5), now=3.0)
    assert (state.retry_wait, state.dirty) == (2.5, True)
    state.apply(BatchStarted(t=3.5, batch_index=0, worker=0, attempt=2), now=5.5)
    assert state.retry_wait is None
    assert state.cells[0].state == "retrying"


def test_a_batch_that_succeeds_keeps_its_score_and_frees_its_worker() -> None:
    state = planned_state()
    state.apply(BatchStarted(t=0.1, batch_index=2, worker=1, attempt=1), now=1.0)
    state.apply(BatchStarted(t=0.1, batch_index=0, worker=0, attempt=1), now=1.0)
    state.apply(BatchSucceeded(t=0.9, batch_index=2, worker=1, attempt=1, usefulness=87.5), now=2.0)
    state.apply(BatchSucceeded(t=1.2, batch_index=0, worker=0, attempt=1, usefulness=0), now=2.5)
    assert state.cells[2] == BatchCell(state="succeeded", worker=1, attempt=1, usefulness=87.5)
    assert state.cells[0] == BatchCell(state="succeeded", worker=0, attempt=1, usefulness=0)
    assert state.scores == [(2, 87.5), (0, 0)]
    assert state.workers == {}
    assert (state.count("succeeded"), state.count("queued"), state.count("failed")) == (2, 1, 0)


def test_a_batch_that_fails_frees_its_worker() -> None:
    state = planned_state()
    state.apply(BatchStarted(t=0.1, batch_index=1, worker=0, attempt=2), now=1.0)
    state.apply(BatchFailed(t=2.0, batch_index=1, worker=0, error="HTTP 500"), now=3.0)
    assert state.cells[1] == BatchCell(state="failed", worker=0, attempt=2)
    assert (state.workers, state.scores, state.dirty) == ({}, [], True)
    assert state.cell_counts() == Counter({"queued": 2, "failed": 1})


def test_reduce_candidates_start_the_reduce_phase_in_the_order_reported() -> None:
    state = planned_state()
    state.apply(BatchStarted(t=0.1, batch_index=0, worker=0, attempt=1), now=1.0)
    first = ReduceCandidateDecided(t=2.0, batch_index=2, usefulness=90, community_ids=("ns/2",), decision="selected")
    second = ReduceCandidateDecided(t=2.0, batch_index=0, usefulness=0, community_ids=("ns/0",), decision="zero_usefulness")
    state.apply(first, now=4.0)
    assert (state.phase, state.running, state.workers, state.candidates) == ("reduce", True, {}, [first])
    state.apply(second, now=4.0)
    assert state.candidates == [first, second]
    state.apply(ReduceStarted(t=2.1, selected_count=1, prompt_tokens=345, budget=1000), now=4.1)
    assert (state.reduce_tokens, state.reduce_budget, state.phase) == (345, 1000, "reduce")


def test_the_finished_event_frees_the_workers_and_leaves_the_phase_to_the_result() -> None:
    state = planned_state()
    state.apply(BatchStarted(t=0.1, batch_index=0, worker=0, attempt=1), now=1.0)
    state.apply(Finished(t=5.0, status="cancelled", error=None), now=6.0)
    assert (state.workers, state.phase, state.running, state.result, state.dirty) == ({}, "map", True, None, True)


def test_finished_takes_the_result_its_reduce_report_and_marks_cancelled_batches() -> None:
    state = planned_state(batch_count=4)
    state.apply(BatchStarted(t=0.1, batch_index=0, worker=0, attempt=1), now=1.0)
    state.apply(BatchSucceeded(t=0.2, batch_index=0, worker=0, attempt=1, usefulness=50), now=1.1)
    state.apply(BatchStarted(t=0.3, batch_index=1, worker=1, attempt=1), now=1.2)
    state.apply(BatchFailed(t=0.4, batch_index=1, worker=1, error="HTTP 500"), now=1.3)
    state.apply(BatchStarted(t=0.5, batch_index=2, worker=0, attempt=1), now=1.4)
    state.apply(ReduceCandidateDecided(t=0.6, batch_index=0, usefulness=50, community_ids=("ns/0",), decision="selected"),
                now=1.5)
    state.dirty = False
    candidates = [ReduceCandidate(batch_index=0, usefulness=50, community_ids=("ns/0",), decision="over_budget")]
    the_result = result(["succeeded", "failed", "cancelled", "cancelled"], candidates)
    state.finished(the_result)
    assert state.result is the_result
    assert (state.phase, state.running, state.workers, state.dirty) == ("finished", False, {}, True)
    assert (state.reduce_budget, state.reduce_tokens) == (900, 222)
    assert state.candidates == candidates  # the result's, in place of the events'
    assert [cell.state for cell in state.cells] == ["succeeded", "failed", "cancelled", "cancelled"]
    assert state.cell_counts() == Counter({"succeeded": 1, "failed": 1, "cancelled": 2})


def test_finished_with_fewer_batches_than_cells_marks_only_those_it_reports() -> None:
    state = planned_state(batch_count=3)
    state.finished(result(["cancelled"]))
    assert [cell.state for cell in state.cells] == ["cancelled", "queued", "queued"]
    assert state.phase == "finished"


def test_in_flight_is_sampled_from_the_busy_workers_and_keeps_the_latest() -> None:
    state = planned_state()
    state.sample_in_flight()
    state.apply(BatchStarted(t=0.1, batch_index=0, worker=0, attempt=1), now=1.0)
    state.sample_in_flight()
    state.apply(BatchStarted(t=0.1, batch_index=1, worker=1, attempt=1), now=1.0)
    state.sample_in_flight()
    state.apply(BatchFailed(t=0.2, batch_index=0, worker=0, error="x"), now=1.0)
    state.sample_in_flight()
    assert state.in_flight_history == [0, 1, 2, 1]
    state.sample_in_flight(keep=3)
    assert state.in_flight_history == [2, 1, 1]
    for _ in range(200):
        state.sample_in_flight()
    assert state.in_flight_history == [1] * 120
