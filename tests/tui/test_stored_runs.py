"""A recorded run in words (durations, tokens) and as the panels' state."""

from __future__ import annotations

import pytest

from graphrag_tui.durations import duration_text
from graphrag_tui.engine import Attempt, BatchResult, ReduceReport, SearchOptions, SearchResult
from graphrag_tui.history import RecordedBatch, RunSummary, StoredRun
from graphrag_tui.tui.stored_runs import duration_s, recorded_plan, run_state_of, tokens_text
from graphrag_tui.tui.widgets.batch_status import run_times, times_texts


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "—"), (-1.0, "—"), (0.0, "0.0 s"), (9.94, "9.9 s"), (10.0, "10 s"), (59.4, "59 s"), (59.6, "1 min 00 s"),
    (184.0, "3 min 04 s"), (3599.4, "59 min 59 s"), (3600.0, "1 h 00 min"), (7325.0, "2 h 02 min"),
])
def test_duration_text(seconds: float | None, text: str) -> None:
    assert duration_text(seconds) == text


def test_duration_s() -> None:
    assert duration_s("2026-01-02T03:04:05+00:00", "2026-01-02T03:05:06.500000+00:00") == 61.5
    assert duration_s("2026-01-02T03:04:05+00:00", None) is None
    assert duration_s("not a time", "2026-01-02T03:04:05+00:00") is None
    # a time without a zone (a damaged or hand-made record) is UTC, as recorded: they subtract
    assert duration_s("2026-01-02T03:04:05", "2026-01-02T04:04:06+01:00") == 1.0


@pytest.mark.parametrize(("usage", "text"), [
    (None, "—"), ("12", "—"), ({}, "—"), ({"total_tokens": 0}, "—"), ({"total_tokens": 12345}, "12,345"),
    ({"prompt_tokens": 1000, "completion_tokens": 234}, "1,234"), ({"total_tokens": "9"}, "—"),
    ({"prompt_tokens": "x", "completion_tokens": [1]}, "—"), ({"prompt_tokens": 5, "completion_tokens": "x"}, "5"),
    ({"total_tokens": True, "prompt_tokens": -4}, "—"),
])
def test_tokens_text(usage: object, text: str) -> None:
    assert tokens_text(usage) == text


def attempt(number: int, at: str, kind: str | None = None) -> Attempt:
    return Attempt(attempt=number, started_at=at, duration_s=0.1, error_kind=kind,  # type: ignore[arg-type]
                   error=None if kind is None else f"{kind} {number}")


def test_run_state_of_a_recorded_run() -> None:
    batches = [
        BatchResult(index=0, community_ids=("c/1",), parts=(), prompt_tokens=10, status="succeeded", usefulness=70,
                    answer="a", attempts=[attempt(1, "t3", "http"), attempt(2, "t5")]),
        BatchResult(index=1, community_ids=("c/2", "c/3"), parts=(), prompt_tokens=12, status="failed",
                    attempts=[attempt(1, "t1", "timeout"), attempt(2, "t4", "timeout")]),
        BatchResult(index=2, community_ids=("c/4",), parts=(), prompt_tokens=9),
    ]
    result = SearchResult(query="q", namespace="ns", level=0, seed=3, status="cancelled", summary_count=4,
                          batch_count=3, failed_batch_count=1, batches=batches,
                          reduce=ReduceReport(budget=100, attempts=[attempt(1, "t6", "invalid_json")]))
    summary = RunSummary("r", None, "t0", None, "q", "/s.db", "ns", 0, "m", "cancelled", 3, 1)
    stored = StoredRun(summary, result, tuple(RecordedBatch(b.index, "h", "x", "m", b) for b in batches),
                       None, None, 3, True, SearchOptions())
    plan = recorded_plan(stored)
    assert [b.community_ids for b in plan.batches] == [("c/1",), ("c/2", "c/3"), ("c/4",)]
    assert (plan.query, plan.namespace, plan.level, plan.seed, plan.summary_count) == ("q", "ns", 0, 3, 4)
    state = run_state_of(stored)
    assert state.phase == "finished" and state.result is result
    assert [c.state for c in state.cells] == ["succeeded", "failed", "cancelled"]
    assert [(c.usefulness, c.attempt) for c in state.cells] == [(70, 2), (None, 2), (None, 0)]
    assert state.scores == [(0, 70)]
    assert [(f.batch_index, f.attempt, f.kind, f.message, f.will_retry) for f in state.failures] == [
        (1, 1, "timeout", "timeout 1", True),
        (0, 1, "http", "http 1", True),
        (1, 2, "timeout", "timeout 2", False),
        (None, 1, "invalid_json", "invalid_json 1", False),
    ]


def test_a_recorded_run_has_the_clock_its_events_would_have_set() -> None:
    """Seconds from the run's start: its end, and Map from its first attempt's start to its
    last attempt's end; the clock line then reads as the live run's did when it ended."""
    batches = [
        BatchResult(index=0, community_ids=("c/1",), parts=(), prompt_tokens=10, status="succeeded", usefulness=70,
                    answer="a", attempts=[attempt(1, "2026-01-02T03:04:06+00:00")]),
        BatchResult(index=1, community_ids=("c/2",), parts=(), prompt_tokens=12, status="failed",
                    attempts=[attempt(1, "2026-01-02T03:04:05.500000+00:00", "http"),
                              attempt(2, "2026-01-02T03:04:07.900000+00:00", "http")]),
    ]
    result = SearchResult(query="q", namespace="ns", level=0, seed=3, status="partial", summary_count=2,
                          batch_count=2, failed_batch_count=1, batches=batches, reduce=ReduceReport(budget=100))

    def stored(finished: str | None) -> StoredRun:
        summary = RunSummary("r", None, "2026-01-02T03:04:05+00:00", finished, "q", "/s.db", "ns", 0, "m",
                             "partial" if finished else "interrupted", 2, 1)
        return StoredRun(summary, result, tuple(RecordedBatch(b.index, "h", "x", "m", b) for b in batches),
                         None, None, 3, True, SearchOptions())

    state = run_state_of(stored("2026-01-02T03:04:15+00:00"))
    assert (state.started_at, state.map_started_at, state.map_ended_at, state.finished_at) == (0.0, 0.5, 3.0, 10.0)
    assert [t.plain for t in times_texts(run_times(state, state.finished_at))][:2] == [
        "took 10 s  48.0 batches/min", "took 10 s"]
    unfinished = run_state_of(stored(None))  # ends with its last attempt
    assert (unfinished.started_at, unfinished.finished_at) == (0.0, 3.0)
    assert times_texts(run_times(unfinished, 99.0))[0].plain == "took 3.0 s  48.0 batches/min"


def test_a_recorded_rerun_times_what_it_sent_and_says_its_duration_as_its_header() -> None:
    """A re-run whose two kept batches ran in its parent 6 s before it: its Map rate counted
    them and their old attempts (`5.8 batches/s` of a run of 0.2 s), and its clock line said
    `took 0 s` under a header saying `took 0.2 s` (found by a probe)."""
    batches = [
        BatchResult(index=0, community_ids=("c/1",), parts=(), prompt_tokens=10, status="succeeded", usefulness=70,
                    answer="a", attempts=[attempt(1, "2026-01-02T03:03:59+00:00")]),
        BatchResult(index=1, community_ids=("c/2",), parts=(), prompt_tokens=10, status="succeeded", usefulness=60,
                    answer="b", attempts=[attempt(1, "2026-01-02T03:03:59.500000+00:00")]),
        BatchResult(index=2, community_ids=("c/3",), parts=(), prompt_tokens=10, status="succeeded", usefulness=50,
                    answer="c", attempts=[attempt(1, "2026-01-02T03:04:05.050000+00:00")]),
    ]
    result = SearchResult(query="q", namespace="ns", level=0, seed=3, status="completed", summary_count=3,
                          batch_count=3, failed_batch_count=0, batches=batches, reduce=ReduceReport(budget=100))
    summary = RunSummary("child", "parent", "2026-01-02T03:04:05+00:00", "2026-01-02T03:04:05.200000+00:00", "q",
                         "/s.db", "ns", 0, "m", "completed", 3, 0)
    stored = StoredRun(summary, result, tuple(RecordedBatch(b.index, "h", "succeeded", "m", b, kept=b.index < 2)
                                              for b in batches), None, None, 3, True, SearchOptions())
    state = run_state_of(stored)
    assert (state.started_at, state.map_started_at, state.map_ended_at, state.finished_at) == (
        0.0, pytest.approx(0.05), pytest.approx(0.15), pytest.approx(0.2))
    assert [c.state for c in state.cells] == ["succeeded"] * 3
    assert duration_text(duration_s(summary.started_at, summary.finished_at)) == "0.2 s"  # the header's
    assert [t.plain for t in times_texts(run_times(state, 0.2))][:2] == ["took 0.2 s  10.0 batches/s", "took 0.2 s"]
