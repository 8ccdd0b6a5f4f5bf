"""A recorded run as the app shows it: its row in the Runs screen (time, duration, tokens in
words) and the run state the usual panels read, rebuilt from the stored result."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..engine import MapBatch, SearchPlan
from ..history import RunSummary, StoredRun
from .run_state import FailedAttempt, RunState
from .safe_text import one_line


def started_text(iso: str | None) -> str:
    """`2026-01-02 03:04:05` (the recorded time, in UTC)."""
    return one_line((iso or "")[:19].replace("T", " ")) or "—"


def duration_s(started: str | None, finished: str | None) -> float | None:
    begun, ended = _instant(started), _instant(finished)
    return None if begun is None or ended is None else (ended - begun).total_seconds()


def tokens_text(usage: Any) -> str:
    """The tokens the server reported for the run (its `usage_total`), `—` when it reported none."""
    if not isinstance(usage, dict):
        return "—"
    total = usage.get("total_tokens")
    if type(total) is not int or total <= 0:  # (a damaged record may hold anything)
        total = sum(n for n in (usage.get("prompt_tokens"), usage.get("completion_tokens")) if type(n) is int and n > 0)
    return f"{total:,}" if total > 0 else "—"


def scope_text(summary: RunSummary) -> str:
    return f"{summary.namespace}/{summary.level}"


def recorded_plan(stored: StoredRun) -> SearchPlan:
    """The plan as the history has it: each batch's communities and parts (its text is not
    kept; its prompt is, see RunHistory.prompts)."""
    result = stored.result
    batches = tuple(
        MapBatch(index=b.index, pieces=(), community_ids=b.community_ids, parts=b.parts) for b in result.batches
    )
    return SearchPlan(
        query=result.query, namespace=result.namespace, level=result.level, seed=result.seed, options=stored.options,
        summary_count=result.summary_count, batches=batches,
    )


def _instant(iso: str | None) -> datetime | None:
    """A recorded time; one without a time zone (a damaged or hand-made record) is UTC, as
    the recorder writes them, so that any two can be subtracted."""
    try:
        instant = datetime.fromisoformat(iso or "")
    except ValueError:
        return None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


def recorded_times(stored: StoredRun) -> tuple[float, float | None, float | None] | None:
    """The run's clock as its events would have set it, in seconds from its start: its end,
    and the Map stage's start and end (its own attempts' first start and last end, not those
    of the batches a re-run kept from its parent; None without any). A run that never
    finished ends with its last attempt. None: no start time."""
    started = _instant(stored.summary.started_at)
    if started is None:
        return None
    spans = []
    for batch in stored.batches:
        if batch.kept:
            continue
        for attempt in batch.result.attempts:
            begun = _instant(attempt.started_at)
            if begun is not None:
                offset = (begun - started).total_seconds()
                spans.append((offset, offset + attempt.duration_s))
    map_start = min((s for s, _ in spans), default=None)
    map_end = max((e for _, e in spans), default=None)
    finished = _instant(stored.summary.finished_at)
    end = (finished - started).total_seconds() if finished is not None else map_end if map_end is not None else 0.0
    return max(end, 0.0), map_start, map_end


def run_state_of(stored: StoredRun) -> RunState:
    """The panels' state of a finished run, as the run's own events would have left it (its
    clock in seconds from the run's start: `RunClock.show(state, state.finished_at)`)."""
    result = stored.result
    state = RunState()
    times = recorded_times(stored)
    state.kept = [b.result for b in stored.batches if b.kept]
    state.planned(recorded_plan(stored))
    timed: list[tuple[str, FailedAttempt]] = []
    for batch, cell in zip(result.batches, state.cells, strict=True):
        cell.state, cell.usefulness, cell.attempt = batch.status, batch.usefulness, len(batch.attempts)
        for position, attempt in enumerate(batch.attempts):
            if attempt.error_kind is not None or attempt.error is not None:
                retried = position < len(batch.attempts) - 1
                timed.append((attempt.started_at, FailedAttempt(
                    batch.index, attempt.attempt, attempt.error_kind or "error", attempt.error or "", retried)))
    reduce_attempts = result.reduce.attempts
    for position, attempt in enumerate(reduce_attempts):
        if attempt.error_kind is not None or attempt.error is not None:
            timed.append((attempt.started_at, FailedAttempt(
                None, attempt.attempt, attempt.error_kind or "error", attempt.error or "",
                position < len(reduce_attempts) - 1)))
    state.failures = [failure for _, failure in sorted(timed, key=lambda pair: pair[0])]
    state.scores = [(b.index, b.usefulness) for b in result.batches if b.status == "succeeded" and b.usefulness is not None]
    if stored.status == "interrupted":
        state.recorded_status = stored.status
    if times is not None:
        end, state.map_started_at, state.map_ended_at = times
        state.started_at = 0.0
        state.finished(result, end)
    else:
        state.finished(result)
    return state
