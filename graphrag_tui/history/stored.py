"""One recorded run read back whole: the SearchResult it was (a run that never finished
reads as `cancelled`, with the batches that finished), each batch's record, and what the
history knows besides."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from ..collector import collector_paused
from ..engine import (
    DEFAULT_PROMPTS,
    BatchResult,
    Cost,
    Prompts,
    ReduceReport,
    SearchOptions,
    SearchResult,
    UsageMeter,
    check_prompts,
    count_paid,
)
from ..engine.selection import SelectionReport
from .formats import (
    BatchRecord,
    RecordedSelection,
    batch_from_record,
    planned_batch,
    read_attempts,
    read_plan,
    read_records,
    read_selection,
    recorded_json,
    result_from_summary,
)
from .records import SUMMARY_COLUMNS, RunSummary, UnknownRun, summary_of
from .schema import RUNS_WITH_PLANS, plan_column
from .seal import is_sealed
from .texts import run_unpack_limit


@dataclass(frozen=True)
class RecordedBatch:
    index: int
    content_sha256: str
    #: pending (never finished), succeeded or failed
    status: str
    #: The model that answered it (None: never sent).
    model: str | None
    result: BatchResult
    #: Kept by a re-run from its parent, which paid for it.
    kept: bool = False


@dataclass(frozen=True)
class StoredRun:
    """A run as the history has it. `result` is a SearchResult (a run that never finished
    reads as `cancelled`, with the batches that finished); `status` is the history's."""

    summary: RunSummary
    result: SearchResult
    batches: tuple[RecordedBatch, ...]
    store_size: int | None
    store_mtime_ns: int | None
    seed: int | None
    shuffle: bool
    options: SearchOptions
    #: kind, base_url, model, api_key_env (a variable's name), response_format, ...
    model_settings: dict[str, Any] = field(default_factory=dict)
    #: The templates and the answer's form the run's prompts were made from.
    prompts: Prompts = DEFAULT_PROMPTS
    #: How it chose its communities (None: the level's, or recorded before version 7).
    selection: RecordedSelection | None = None
    #: Whether this user's graphrag-tui recorded its store and model settings (seal.py): only
    #: then are they used to send anything or to open a database.
    sealed: bool = False

    @property
    def run_id(self) -> str:
        return self.summary.run_id

    @property
    def status(self) -> str:
        return self.summary.status

    @property
    def batch_models(self) -> list[str | None]:
        return [b.model for b in self.batches]


def load_run(connection: sqlite3.Connection, run_id: str) -> StoredRun:
    with run_unpack_limit(), collector_paused():
        return _load_run(connection, run_id)


def _load_run(connection: sqlite3.Connection, run_id: str) -> StoredRun:
    row = connection.execute(
        f"SELECT {SUMMARY_COLUMNS}, store_size, store_mtime_ns, seed, shuffle, options, model_settings, summary_count, "
        f"{plan_column('plan')}, {plan_column('contents')}, result, prompts, selection, seal, reduce_attempts, "
        f"cost_total "
        f"FROM {RUNS_WITH_PLANS} WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise UnknownRun(f"no run {run_id!r} in the run history")
    summary = summary_of(row[:14])
    (store_size, store_mtime_ns, seed, shuffle, options_text, settings_text, summary_count, plan_text, contents,
     result_text, prompts_text, selection_text, recorded_seal, reduce_attempts, cost_total) = row[14:]
    if not all(v is None or type(v) is int for v in (store_size, store_mtime_ns, seed, summary_count)):
        raise TypeError(f"run {run_id} has a store size, time, seed or count that is not a whole number")
    options = SearchOptions.model_validate_json(options_text)
    planned = read_plan(plan_text, contents)
    if planned and summary.batch_count != len(planned):  # (listed, shown, and a result's count)
        raise ValueError(f"run {run_id} counts {summary.batch_count} batches, and its plan has {len(planned)}")
    records = recorded_batches(connection, run_id)
    count = len(planned) if planned else len(records)
    for index in records:  # (one past them was never read: its batch showed as never sent, and a re-run sent it)
        if not (type(index) is int and 0 <= index < count):
            raise ValueError(f"run {run_id} has a record of batch {str(index)[:40]}, which its {count} batches do "
                             "not have")

    def batch(index: int) -> RecordedBatch:
        record = records.get(index)
        if record is None:  # never finished: as planned
            return RecordedBatch(index, planned[index].content_sha256, "pending", None, planned_batch(index, planned[index]))
        digest = record.content_sha256 or planned[index].content_sha256
        return RecordedBatch(index, digest, record.status, record.model, batch_from_record(index, record, planned),
                             record.kept)

    batches = tuple(batch(index) for index in range(count))
    if summary.parent_run_id is None and any(b.kept for b in batches):  # (its usage would not be counted)
        raise ValueError(f"run {run_id} has batches kept from a parent run, and no parent run")
    results = [b.result for b in batches]
    selection = read_selection(selection_text)
    if result_text is not None and summary.status not in ("running", "interrupted"):
        result = result_from_summary(result_text, results)
        if planned and result.batch_count != len(planned):
            raise ValueError(f"run {run_id}'s result counts {result.batch_count} batches, and its plan has "
                             f"{len(planned)}")
        if (result.query, result.namespace, result.level) != (summary.question, summary.namespace, summary.level):
            raise ValueError(f"run {run_id}'s result is of another question, namespace or level than its row")
    else:  # its usage so far: what its recorded attempts reported (a resume counts the same)
        reduce = ReduceReport(budget=options.reduce_prompt_budget,
                              attempts=read_attempts(reduce_attempts) if reduce_attempts is not None else [])
        meter = UsageMeter()
        count_paid(meter, [b.result for b in batches if not b.kept], reduce.attempts)
        if selection is not None and selection.paid is not None:  # (dynamic selection's rating calls)
            meter.add(*selection.paid)
        result = SearchResult(
            query=summary.question, namespace=summary.namespace, level=summary.level, seed=seed, status="cancelled",
            detail="the run did not finish: its process ended first" if summary.status == "interrupted"
            else "the run is still going",
            summary_count=summary_count, batch_count=summary.batch_count,
            failed_batch_count=sum(b.status == "failed" for b in results), batches=results, reduce=reduce,
            selection=_selection_so_far(selection), usage_total=meter.total,
            estimated_prompt_tokens=meter.estimated_prompt_tokens if meter.total is not None else None,
            cost=None if cost_total is None else Cost.model_validate(recorded_json(cost_total), strict=True),
        )
    prompts = recorded_prompts(prompts_text)
    if result.prompts is None and prompts_text is not None:
        result = result.model_copy(update={"prompts": prompts})
    settings = recorded_json(settings_text)
    if not isinstance(settings, dict):
        raise TypeError(f"run {run_id}'s recorded model settings are not an object")
    sealed = is_sealed(run_id, row[5], settings_text, recorded_seal)  # (row[5]: the store as recorded, unmasked)
    return StoredRun(summary, result, batches, store_size, store_mtime_ns, seed, bool(shuffle), options,
                     settings, prompts, selection, sealed)


def recorded_batches(connection: sqlite3.Connection, run_id: str) -> dict[int, BatchRecord]:
    """Each batch's latest record: the rows an earlier version wrote, then the groups."""
    found = {
        index: BatchRecord(status, model, recorded_json(text), digest)
        for index, digest, status, model, text in connection.execute(
            "SELECT batch_index, content_sha256, status, model, result FROM batches WHERE run_id = ?", (run_id,))
    }
    if not all(record.model is None or type(record.model) is str for record in found.values()):
        raise TypeError(f"run {run_id} has a batch whose model is not a text")
    found.update(read_records(g for (g,) in connection.execute(
        "SELECT records FROM batch_records WHERE run_id = ? ORDER BY seq", (run_id,))))
    return found


def recorded_prompts(text: str | None) -> Prompts:
    """A run's recorded prompts (checked: a template edited in the file is refused as any
    bad template is); the built-in ones for a run recorded before prompts were."""
    if text is None:
        return DEFAULT_PROMPTS
    return check_prompts(Prompts.model_validate_json(text))


def _selection_so_far(selection: RecordedSelection | None) -> SelectionReport | None:
    """What an unfinished run's selection chose, or, when dynamic selection was still rating,
    its ratings so far (as a run cancelled then reports them)."""
    if selection is None:
        return None
    if selection.report is not None:
        return selection.report
    return SelectionReport(mode=selection.options.mode, ratings=list(selection.ratings))
