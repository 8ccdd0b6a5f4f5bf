"""Reading the run history: the list of runs (filtered, newest first), one run as a
SearchResult with what the history knows besides (stored.py), its batches' recorded prompts,
and deleting a run.

Listing and deleting runs need no engine (`runs list` starts without it): what makes a
run's result again, or its prompts, is imported when a run is read whole."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError
from ..safe_text import one_line
from ..url_mask import mask_urls
from .database import HistoryError, connect, errors_named, transaction
from .ids import RUN_ID_PATTERN
from .owner import is_alive
from .schema import RUNS_WITH_PLANS, plan_column
from .texts import unpack_text

if TYPE_CHECKING:
    from .stored import StoredRun

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
    except UNREADABLE as error:
        raise HistoryError(unreadable_words(path, what, error)) from None


#: What a record that does not read back raises.
UNREADABLE = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError, zlib.error)


def unreadable_words(path: Path, what: str, error: BaseException) -> str:
    return f"run history {path}: {what} cannot be read: {one_line(str(error), 200)}"


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


#: A run's line of `runs list` (a finished run's owner is not read: only a running run's matters).
SUMMARY_COLUMNS = (
    "run_id, parent_run_id, started_at, finished_at, question, store_path, namespace, level, model_name, status, "
    "batch_count, failed_batch_count, usage_total, CASE WHEN status = 'running' THEN owner END"
)


def summary_of(row: sqlite3.Row | tuple[Any, ...]) -> RunSummary:
    (run_id, parent, started, finished, question, store, namespace, level, model, status, batch_count, failed,
     usage, owner) = row
    texts, optional = (run_id, started, question, store, namespace, level, status), (parent, finished, model, usage, owner)
    if not (all(type(v) is str for v in texts) and all(v is None or type(v) is str for v in optional)
            and type(batch_count) is int and type(failed) is int):
        raise TypeError(f"run {run_id!r} has a value of the wrong type in its row")
    if batch_count < 0 or failed < 0:
        raise ValueError(f"run {run_id!r} has a negative count of batches")
    # (what every face shows, and keys the Runs screen's rows by: never control characters)
    if not (RUN_ID_PATTERN.fullmatch(run_id) and (parent is None or RUN_ID_PATTERN.fullmatch(parent))):
        raise ValueError(f"run {run_id!r} has an id or a parent id that no run can have")
    if status not in RUN_STATUSES:
        raise ValueError(f"run {run_id!r} has the status {status!r}, which no run can have")
    if status == "running" and not is_alive(owner):
        status = "interrupted"
    return RunSummary(
        # a recorded URL is masked as it is recorded; one written otherwise is masked here
        run_id, parent, started, finished, question, mask_urls(store), namespace, _level(level), model, status,
        batch_count, failed, _usage(usage) if usage else None,
    )


_USAGE_KEYS = {"prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens"}


def _usage(text: str) -> dict[str, int]:
    """A finished run's recorded usage: its four counts, whole numbers from 0 (read without
    the engine's models, which `runs list` does not load)."""
    found = json.loads(text)
    if not (isinstance(found, dict) and found.keys() == _USAGE_KEYS
            and all(type(count) is int and count >= 0 for count in found.values())):
        raise ValueError(f"a recorded usage is not its four counts of tokens: {text[:80]!r}")
    return found


def _utf8_or_replaced(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _casefolded(data: bytes | None) -> str | None:
    """A row's text for the filter, any case of any script alike."""
    return None if data is None else _utf8_or_replaced(data).casefold()


def _level(text: str) -> str | int:
    """A recorded level: `"leaf"` or a number, as JSON (parsed here without json for speed)."""
    return text[1:-1] if text.startswith('"') else int(text)


class RunHistory:
    """The history file, for reading and deleting (a run is written by RunRecorder)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        connection = connect(self.path, create=False)
        # A text that is not UTF-8 (an edited row) made every read of the history an error,
        # `runs list` included: it reads with U+FFFD for its bad bytes.
        connection.text_factory = _utf8_or_replaced
        return connection

    def _exists(self) -> bool:
        with errors_named(self.path):
            return self.path.exists()

    def list_runs(
        self, *, limit: int | None = None, store: str | None = None, status: str | None = None, text: str | None = None,
        on_damaged: Callable[[str], None] | None = None,
    ) -> list[RunSummary]:
        """Newest first. `store`: the store's absolute path; `status` one of RUN_STATUSES;
        `text`: a case-insensitive part of the question, namespace, model, status or id.
        With `on_damaged`, a row that does not read back is left out and said to it (one
        damaged row hid every other run), else it is an error."""
        if not self._exists():
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
        if text:  # (SQLite's lower() knows only ASCII letters: `école` did not find `ÉCOLE`)
            where.append("(instr(casefolded(CAST(question || ' ' || namespace || ' ' || ifnull(model_name, '') || ' ' "
                         "|| status || ' ' || run_id AS BLOB)), ?) > 0)")
            args.append(text.casefold())
        sql = f"SELECT {SUMMARY_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY run_id DESC"
        found: list[RunSummary] = []
        with errors_named(self.path), unreadable(self.path, "a run"):
            connection = self._connect()
            connection.create_function("casefolded", 1, _casefolded, deterministic=True)
            try:
                for row in connection.execute(sql, args):
                    try:
                        summary = summary_of(row)
                    except UNREADABLE as error:
                        if on_damaged is None:
                            raise
                        on_damaged(unreadable_words(self.path, "a run", error))
                        continue
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
        if not wanted or not self._exists():
            return found
        with errors_named(self.path):
            connection = self._connect()
            try:
                for start in range(0, len(wanted), 500):  # under SQLite's limit of bound parameters
                    chunk = wanted[start:start + 500]
                    marks = ", ".join("?" * len(chunk))
                    # a count that is no count (an edited row: text with escapes, a blob) is 0
                    found.update((run_id, count) for run_id, count in connection.execute(
                        f"SELECT run_id, succeeded_batch_count FROM runs WHERE run_id IN ({marks})", chunk)
                        if type(count) is int and count >= 0)
            finally:
                connection.close()
        return found

    def resolve(self, connection: sqlite3.Connection, run: str) -> str:
        """The run id a user typed (an id, or a unique prefix of one; or, exactly, an id no
        run can have, which an edited file holds: such a run can still be deleted)."""
        if not RUN_ID_PATTERN.fullmatch(run):
            if connection.execute("SELECT 1 FROM runs WHERE run_id = ?", (run,)).fetchone() is not None:
                return run
            raise UnknownRun(f"no run {run!r} in the run history {self.path}")
        ids = [r for (r,) in connection.execute(
            "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? ORDER BY run_id LIMIT 2", (run, run + "~"))]
        if not ids:
            raise UnknownRun(f"no run {run!r} in the run history {self.path}")
        if len(ids) > 1 and run not in ids:
            raise UnknownRun(f"run id {run!r} is ambiguous in the run history {self.path}: give more of it")
        return run if run in ids else ids[0]

    def load(self, run: str) -> StoredRun:
        if not self._exists():
            raise UnknownRun(f"no run {run!r}: the run history {self.path} does not exist")
        with errors_named(self.path):
            connection = self._connect()
            try:
                run_id = self.resolve(connection, run)
                from .stored import load_run  # the engine, only to read a run whole

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
                row = connection.execute(
                    f"SELECT question, prompts, {plan_column('plan')}, {plan_column('contents')} FROM {RUNS_WITH_PLANS} "
                    "WHERE run_id = ?", (run_id,)).fetchone()
                if row is None:  # deleted since it was opened (`runs delete` elsewhere)
                    raise UnknownRun(f"no run {run_id!r} in the run history {self.path}")
                question, prompts_text, plan, contents = row
                rows = [] if contents is not None else connection.execute(
                    "SELECT batch_index, content FROM batches WHERE run_id = ?", (run_id,)).fetchall()
            finally:
                connection.close()
        from .formats import read_plan
        from .recorder import messages_json  # the engine's Map template
        from .stored import recorded_prompts

        wanted = set(indexes)
        with unreadable(self.path, f"run {run_id}'s prompts"):
            prompts = recorded_prompts(prompts_text)
            if contents is not None:
                texts = {i: b.content for i, b in enumerate(read_plan(plan, contents)) if i in wanted}
            else:  # recorded by an earlier version: with the batches that finished
                texts = {index: unpack_text(data) for index, data in rows if index in wanted}
            return {index: messages_json(question, text, prompts) for index, text in texts.items() if text is not None}

    def recorded_map_prompt(self, run_id: str) -> str | None:
        """Batch 0's Map messages as the run recorded them: the template a re-run checks."""
        with errors_named(self.path):
            connection = self._connect()
            try:
                row = connection.execute(f"SELECT {plan_column('map_prompt')} FROM {RUNS_WITH_PLANS} WHERE run_id = ?",
                                         (run_id,)).fetchone()
            finally:
                connection.close()
        with unreadable(self.path, f"run {run_id}'s Map prompt"):
            return unpack_text(row[0]) if row and row[0] is not None else None

    def delete(self, run: str) -> str:
        """Deletes a run and its batches; its children keep their parent's id."""
        if not self._exists():
            raise UnknownRun(f"no run {run!r}: the run history {self.path} does not exist")
        with errors_named(self.path):
            connection = self._connect()
            try:
                with transaction(connection):
                    run_id = self.resolve(connection, run)
                    connection.execute("DELETE FROM batches WHERE run_id = ?", (run_id,))
                    connection.execute("DELETE FROM batch_records WHERE run_id = ?", (run_id,))
                    connection.execute("DELETE FROM run_plans WHERE run_id = ?", (run_id,))
                    connection.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
                return run_id
            finally:
                connection.close()
