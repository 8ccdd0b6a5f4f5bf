"""Reading the run history: the list of runs (filtered, newest first), one run as a
SearchResult with what the history knows besides, its batches' recorded prompts, and
deleting a run."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..engine import (
    DEFAULT_PROMPTS,
    BatchResult,
    PartRef,
    Prompts,
    ReduceReport,
    SearchOptions,
    SearchResult,
    check_prompts,
)
from ..errors import InputError
from ..safe_text import one_line
from .database import HistoryError, connect, errors_named, transaction
from .ids import RUN_ID_PATTERN
from .owner import is_alive
from .recorder import messages_json, unpack_text

#: Statuses a run can have in the history: the engine's, and `running` / `interrupted`.
RUN_STATUSES = ("running", "interrupted", "completed", "partial", "no_results", "failed", "cancelled")
RESUMABLE = ("interrupted", "cancelled")


class UnknownRun(InputError):
    pass


@contextlib.contextmanager
def unreadable(path: Path, what: str) -> Iterator[None]:
    """A record that does not read back (edited, damaged, or bad data) is one line."""
    try:
        yield
    except (ValueError, TypeError, KeyError, IndexError, zlib.error) as error:
        raise HistoryError(f"run history {path}: {what} cannot be read: {one_line(str(error), 200)}") from None


class RunSummary(NamedTuple):
    """One line of `runs list` (its JSON: `as_json`). A tuple: listing 10,000 runs makes
    10,000 of them."""

    run_id: str
    parent_run_id: str | None
    started_at: str
    finished_at: str | None
    question: str
    store: str
    namespace: str
    level: str | int
    model: str | None
    status: str
    batch_count: int
    failed_batch_count: int
    usage_total: Any = None

    def as_json(self) -> dict[str, Any]:
        return self._asdict()


@dataclass(frozen=True)
class RecordedBatch:
    index: int
    content_sha256: str
    #: pending (never finished), succeeded or failed
    status: str
    #: The model that answered it (None: never sent).
    model: str | None
    result: BatchResult


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

    @property
    def run_id(self) -> str:
        return self.summary.run_id

    @property
    def status(self) -> str:
        return self.summary.status

    @property
    def batch_models(self) -> list[str | None]:
        return [b.model for b in self.batches]


_SUMMARY_COLUMNS = (
    "run_id, parent_run_id, started_at, finished_at, question, store_path, namespace, level, model_name, status, "
    "batch_count, failed_batch_count, usage_total, owner"
)


def _summary(row: sqlite3.Row | tuple[Any, ...]) -> RunSummary:
    (run_id, parent, started, finished, question, store, namespace, level, model, status, batch_count, failed,
     usage, owner) = row
    if status == "running" and not is_alive(owner):
        status = "interrupted"
    return RunSummary(
        run_id, parent, started, finished, question, store, namespace, _level(level), model, status,
        batch_count, failed, json.loads(usage) if usage else None,
    )


def _level(text: str) -> str | int:
    """A recorded level: `"leaf"` or a number, as JSON (parsed here without json for speed)."""
    return text[1:-1] if text.startswith('"') else int(text)


class RunHistory:
    """The history file, for reading and deleting (a run is written by RunRecorder)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, create=False)

    def list_runs(
        self, *, limit: int | None = None, store: str | None = None, status: str | None = None, text: str | None = None
    ) -> list[RunSummary]:
        """Newest first. `store`: the store's absolute path; `status` one of RUN_STATUSES;
        `text`: a case-insensitive part of the question, namespace, model, status or id."""
        if not self.path.exists():
            return []
        where, args = [], []
        if store is not None:
            where.append("store_path = ?")
            args.append(store)
        if status in ("running", "interrupted"):
            where.append("status IN ('running', 'interrupted')")
        elif status is not None:
            where.append("status = ?")
            args.append(status)
        if text:
            where.append("(instr(lower(question || ' ' || namespace || ' ' || ifnull(model_name, '') || ' ' || "
                         "status || ' ' || run_id), lower(?)) > 0)")
            args.append(text)
        sql = f"SELECT {_SUMMARY_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY run_id DESC"
        found: list[RunSummary] = []
        with errors_named(self.path), unreadable(self.path, "a run"):
            connection = self._connect()
            try:
                for row in connection.execute(sql, args):
                    summary = _summary(row)
                    if status is None or summary.status == status:
                        found.append(summary)
                        if limit is not None and len(found) >= limit:
                            break
            finally:
                connection.close()
        return found

    def succeeded_batches(self, run_ids: Iterable[str]) -> dict[str, int]:
        """run id -> batches that succeeded (0 for a run with none, or unknown): the Runs
        screen's "ok" column (a run's summary counts only the failed ones)."""
        wanted = list(dict.fromkeys(run_ids))
        found = dict.fromkeys(wanted, 0)
        if not wanted or not self.path.exists():
            return found
        with errors_named(self.path):
            connection = self._connect()
            try:
                for start in range(0, len(wanted), 500):  # under SQLite's limit of bound parameters
                    chunk = wanted[start:start + 500]
                    marks = ", ".join("?" * len(chunk))
                    for run_id, count in connection.execute(
                        f"SELECT run_id, count(*) FROM batches WHERE status = 'succeeded' AND run_id IN ({marks}) "
                        "GROUP BY run_id", chunk,
                    ):
                        found[run_id] = count
            finally:
                connection.close()
        return found

    def resolve(self, connection: sqlite3.Connection, run: str) -> str:
        """The run id a user typed (an id, or a unique prefix of one)."""
        if not RUN_ID_PATTERN.fullmatch(run):
            raise UnknownRun(f"no run {run!r} in the run history {self.path}")
        ids = [r for (r,) in connection.execute(
            "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? ORDER BY run_id LIMIT 2", (run, run + "~"))]
        if not ids:
            raise UnknownRun(f"no run {run!r} in the run history {self.path}")
        if len(ids) > 1 and run not in ids:
            raise UnknownRun(f"run id {run!r} is ambiguous in the run history {self.path}: give more of it")
        return run if run in ids else ids[0]

    def load(self, run: str) -> StoredRun:
        if not self.path.exists():
            raise UnknownRun(f"no run {run!r}: the run history {self.path} does not exist")
        with errors_named(self.path):
            connection = self._connect()
            try:
                run_id = self.resolve(connection, run)
                with unreadable(self.path, f"run {run_id}"):
                    return load_run(connection, run_id)
            finally:
                connection.close()

    def map_prompts(self, run_id: str, indexes: list[int]) -> dict[int, str]:
        """Map prompts as the run sent them (their messages as JSON), rebuilt from each
        batch's recorded content over the recorded question."""
        with errors_named(self.path):
            connection = self._connect()
            try:
                question, prompts_text = connection.execute(
                    "SELECT question, prompts FROM runs WHERE run_id = ?", (run_id,)).fetchone()
                rows = connection.execute(
                    "SELECT batch_index, content FROM batches WHERE run_id = ?", (run_id,)).fetchall()
            finally:
                connection.close()
        wanted = set(indexes)
        with unreadable(self.path, f"run {run_id}'s prompts"):
            prompts = _prompts(prompts_text)
            return {index: messages_json(question, unpack_text(data), prompts) for index, data in rows if index in wanted}

    def recorded_map_prompt(self, run_id: str) -> str | None:
        """Batch 0's Map messages as the run recorded them: the template a re-run checks."""
        with errors_named(self.path):
            connection = self._connect()
            try:
                row = connection.execute("SELECT map_prompt FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            finally:
                connection.close()
        with unreadable(self.path, f"run {run_id}'s Map prompt"):
            return unpack_text(row[0]) if row and row[0] is not None else None

    def delete(self, run: str) -> str:
        """Deletes a run and its batches; its children keep their parent's id."""
        if not self.path.exists():
            raise UnknownRun(f"no run {run!r}: the run history {self.path} does not exist")
        with errors_named(self.path):
            connection = self._connect()
            try:
                with transaction(connection):
                    run_id = self.resolve(connection, run)
                    connection.execute("DELETE FROM batches WHERE run_id = ?", (run_id,))
                    connection.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
                return run_id
            finally:
                connection.close()


def load_run(connection: sqlite3.Connection, run_id: str) -> StoredRun:
    row = connection.execute(
        f"SELECT {_SUMMARY_COLUMNS}, store_size, store_mtime_ns, seed, shuffle, options, model_settings, "
        "summary_count, plan, result, prompts FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise UnknownRun(f"no run {run_id!r} in the run history")
    summary = _summary(row[:14])
    (store_size, store_mtime_ns, seed, shuffle, options_text, settings_text, summary_count, plan_text, result_text,
     prompts_text) = row[14:]
    options = SearchOptions.model_validate_json(options_text)
    planned = json.loads(plan_text) if plan_text else []

    rows = {row[0]: row[1:] for row in connection.execute(
        "SELECT batch_index, content_sha256, status, model, result FROM batches WHERE run_id = ?", (run_id,))}

    def batch(index: int) -> RecordedBatch:
        if index in rows:
            digest, status, model, text = rows[index]
            return RecordedBatch(index, digest, status, model, BatchResult.model_validate_json(text))
        ids, parts, tokens, digest = planned[index]  # never finished: as planned
        result = BatchResult(index=index, community_ids=tuple(ids), prompt_tokens=tokens,
                             parts=tuple(PartRef(community_id=c, part=p) for c, p in parts))
        return RecordedBatch(index, digest, "pending", None, result)

    batches = tuple(batch(index) for index in range(len(planned) if planned else len(rows)))
    results = [b.result for b in batches]
    if result_text is not None and summary.status not in ("running", "interrupted"):
        fields = json.loads(result_text)
        fields["batches"] = [b.model_dump(mode="json") for b in results]
        result = SearchResult.model_validate(fields)
    else:
        result = SearchResult(
            query=summary.question, namespace=summary.namespace, level=summary.level, seed=seed, status="cancelled",
            detail="the run did not finish: its process ended first" if summary.status == "interrupted"
            else "the run is still going",
            summary_count=summary_count, batch_count=summary.batch_count,
            failed_batch_count=sum(b.status == "failed" for b in results), batches=results,
            reduce=ReduceReport(budget=options.reduce_prompt_budget),
        )
    prompts = _prompts(prompts_text)
    if result.prompts is None and prompts_text is not None:
        result = result.model_copy(update={"prompts": prompts})
    return StoredRun(summary, result, batches, store_size, store_mtime_ns, seed, bool(shuffle), options,
                     json.loads(settings_text), prompts)


def _prompts(text: str | None) -> Prompts:
    """A run's recorded prompts (checked: a template edited in the file is refused as any
    bad template is); the built-in ones for a run recorded before prompts were."""
    if text is None:
        return DEFAULT_PROMPTS
    return check_prompts(Prompts.model_validate_json(text))
