"""Writing one run into the history while it goes.

The run's row is written before the first model call (so an unusable history is known, and
said, before anything is paid for), with its plan and every batch's content (a dynamic
selection's plan comes later, and a resume's from the writer). Everything after that goes
through a queue. Once the run has gone on for FLUSH_INTERVAL, a thread of its own takes it
over: the run's event loop wakes it every interval (`tick`), and it commits what arrived in
one transaction (its batches as one group of records, formats.py), so a finished batch is
on disk within a second, the run's event loop does not wait for SQLite or zlib, and the
thread does not wake per event (which would cost the run the GIL each time). When the loop
never waits (an offline model), the thread hardly gets the GIL, and the ticks write on the
run's thread instead. A kill -9 loses the attempts in flight and at most an interval or two
of finished ones. A run that ends sooner is written at its end, on its own thread, and
starts no thread at all (starting one, and handing it the last write, cost a short run
0.3-2 ms).

What the run's thread does per finished batch is a queue put of the batch itself: no copy,
no JSON, and nothing before the first tick (its batches are handed over then, and a run
shorter than an interval writes them from its result). The writer takes what the queue
holds in one call and writes each group of finished batches in one serialization.

A batch's prompt is recorded as its content and the run's Map prompt once (batch 0's
messages): the prompts are the engine's template over the query and the content, so each is
rebuilt byte for byte, and a re-run checks the template is still the recorded one."""

from __future__ import annotations

import _thread
import atexit
import contextlib
import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby, repeat
from operator import attrgetter
from pathlib import Path
from typing import Any

from ..engine import (
    DEFAULT_PROMPTS,
    Attempt,
    BatchResult,
    Cost,
    Prices,
    Prompts,
    SearchPlan,
    SearchResult,
    Usage,
    UsageMeter,
    map_messages,
)
from ..engine.selection import Rating, Vote
from ..errors import InputError
from .database import connect, errors_named, history_error, roll_back, transaction
from .formats import (
    RatingsPaid,
    attempts_packed,
    batch_with_attempts,
    pack_contents,
    plan_packed,
    rating_json,
    read_records,
    recorded_json,
    records_packed,
    result_summary,
    with_ratings,
    with_ratings_paid,
)
from .ids import new_run_id
from .owner import is_alive, this_process
from .schema import RUNS_WITH_PLANS, plan_column
from .seal import key_path, key_problem, seal, seal_key
from .texts import pack_text

#: Seconds between the first event of a group and its commit.
FLUSH_INTERVAL = 0.25
#: Seconds a tick waits for the writer thread's write before it writes what arrived itself.
STEP_IN_WAIT = 0.1
#: Seconds the process waits at its exit for the connections being closed (`_CLOSING`).
CLOSE_WAIT_AT_EXIT = 5.0
#: WAL pages (4 KiB) past which a commit checkpoints.
WAL_CHECKPOINT_PAGES = 4096


@dataclass(frozen=True)
class RunMetadata:
    """What a run is besides its plan: where it ran, on which model, after which run."""

    store_path: str
    store_size: int | None
    store_mtime_ns: int | None
    #: kind, base_url, model, api_key_env (the variable's NAME), response_format, timeout...
    model_settings: Mapping[str, Any]
    #: The model that answers (an endpoint's model name as sent), per batch as well.
    model_name: str | None
    parent_run_id: str | None = None


def messages_json(query: str, content: str, prompts: Prompts = DEFAULT_PROMPTS) -> str:
    """A Map prompt as recorded and compared: its messages as JSON."""
    return json.dumps([m.model_dump() for m in map_messages(query, content, prompts)], ensure_ascii=False)


def _usage_json(usage: Usage | Cost | None) -> str | None:
    return None if usage is None else json.dumps(usage.model_dump(mode="json"))


def _spent(prices: Prices | None, paid: Usage | None, earlier_cost: Cost | None) -> UsageMeter:
    """The run's usage and cost so far, counted as its engine counts them: `paid` (a
    resume's usage before) priced at `earlier_cost` (None: at `prices`)."""
    meter = UsageMeter(prices, earlier_cost=earlier_cost)
    if paid is not None:
        meter.add(paid, None, earlier=True)
    return meter


class RunRecorder:
    """One run's recording. `start` (or `resume`) writes its row; `planned` (at once, or
    once dynamic selection has chosen), `batch_finished`, `attempt_failed` and `finish`
    queue the rest; `abandon` marks a run whose process is ending without a result. A write
    that fails stops the recording; `error` says why."""

    def __init__(
        self, path: Path, connection: sqlite3.Connection, run_id: str, model: str | None, *, resumed: bool,
        kept: Mapping[int, tuple[BatchResult, str | None]] | None = None, spent: UsageMeter | None = None,
        counted: Mapping[int, int] | None = None, reduce_counted: int = 0, ratings_paid: RatingsPaid | None = None,
    ) -> None:
        self.path, self.run_id = path, run_id
        #: The model that answers this run's batches.
        self._model = model
        #: A resume: the batches recorded before stay.
        self._resumed = resumed
        #: Batches a re-run keeps from its parent (result and the model that answered), written with the plan.
        self._kept = dict(kept or {})
        #: Batches whose final record is written (or was, before a resume): later records skip them.
        self._finished: set[int] = set()
        #: The group of records being written: the batches and the models that answered them.
        self._group: list[BatchResult] = []
        self._models: list[str | None] = []
        #: Dynamic selection's ratings while it rates (until the plan), and whether some are unwritten.
        self._ratings: list[str] = []  # (each as JSON, dumped once: a write joins them)
        #: The recorded selection the ratings are written over (its options), once read.
        self._selection: dict[str, Any] | None = None
        #: The votes so far of the communities being rated (each until its rating).
        self._votes: dict[str, list[Vote | None]] = {}
        self._ratings_unwritten = False
        #: What dynamic selection's rating calls reported they used (a resume's: before it, too).
        self._ratings_paid = ratings_paid
        #: What the run's recorded calls reported so far and cost (listed while it goes), and
        #: how many of each batch's attempts and of Reduce's are in it (a later record repeats a
        #: batch's earlier attempts; a resume's, those paid for before it).
        self._spent = spent or UsageMeter()
        self._counted: dict[int, int] = dict(counted or {})
        self._reduce_counted = reduce_counted
        self._seq = 0  # the next group's
        self._connection = connection
        # The records' reference to their run is checked once per transaction (`_write`).
        connection.execute("PRAGMA foreign_keys = OFF")
        # A commit copies the WAL into the file only past 16 MiB of it (SQLite's default: 4 MiB):
        # most runs' commits never wait for a checkpoint, closing the connection does it.
        connection.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        #: Finished batches, and tuples for the other events (their kind first).
        self._queue: queue.SimpleQueue[BatchResult | tuple[Any, ...]] = queue.SimpleQueue()
        #: A batch that succeeded or failed (it does not change any more): the queue's own put,
        #: so the run's thread makes no Python call per batch.
        self.batch_finished: Callable[[BatchResult], None] = self._queue.put
        self.error: str | None = None
        #: What the user should know of a recording that goes on (a run recorded unsealed).
        self.warning: str | None = None
        self._done = False
        #: The writer thread, once the first `tick` started it; the lock keeps it from
        #: starting while the run writes its end itself.
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: Held while a transaction is written (by the writer thread, or the run's when it steps in).
        self._writing = threading.Lock()
        #: Set by each tick (and the end) for the writer thread, which clears it once it runs.
        self._wake = threading.Event()
        self._closing = threading.Event()
        #: Set once the last transaction is committed (closing the connection checkpoints the
        #: WAL, which the run need not wait for).
        self._written = threading.Event()

    # -- starting ---------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        path: Path,
        plan: SearchPlan,
        planned: Sequence[BatchResult] | None,
        metadata: RunMetadata,
        *,
        started_at: str,
        kept: Mapping[int, tuple[BatchResult, str | None]] | None = None,
        selection: str | None = None,
        prices: Prices | None = None,
    ) -> RunRecorder:
        """A new run: its row now, with its plan. `planned`: the engine's BatchResults of the
        plan (None: dynamic selection plans the run's communities later, and `planned()`
        says so); `kept`: batches a re-run keeps from its parent (result and the model that
        answered); `selection`: formats.selection_json; `prices`: the answering model's, which
        price its calls as they are counted."""
        connection = connect(path, check_same_thread=False)
        try:
            recorder = cls(path, connection, "", metadata.model_name, resumed=False, kept=kept,  # (its id below)
                           spent=UsageMeter(prices))
            with errors_named(path), _first_commit(connection, path):
                # the plan with the row, and the batches a re-run keeps: the run's end writes
                # only what the run added, and a kill -9 before then loses none of them
                if metadata.parent_run_id is not None:
                    _check_parent_idle(connection, metadata.parent_run_id)
                packed = None if planned is None else _plan_columns(plan, planned)
                key = seal_key(create=True)
                recorder.run_id = cls._insert_run(connection, plan, packed, metadata, started_at, selection, key)
                if key is None:  # (said now: a re-run later refused it as a history from elsewhere)
                    problem = key_problem() or f"{key_path()} cannot be made"
                    recorder.warning = (f"the run history's key {problem}: run {recorder.run_id} is recorded unsealed, "
                                        "and is re-run or resumed only on a model given on the command line")
                if planned is not None:
                    recorder._write_kept(connection)
        except BaseException:
            connection.close()
            raise
        return recorder

    @classmethod
    def resume(
        cls, path: Path, run_id: str, plan: SearchPlan, planned: Sequence[BatchResult] | None, model: str | None,
        reduce_attempts: Sequence[Attempt] = (), paid: Usage | None = None, counted: Mapping[int, int] | None = None,
        ratings_paid: RatingsPaid | None = None, prices: Prices | None = None, earlier_cost: Cost | None = None,
    ) -> RunRecorder:
        """The same run again, taken over in one transaction (so two resumes of one run
        cannot both send its batches); its unfinished batches are planned again (`planned`
        None: by dynamic selection, later). `reduce_attempts`: Reduce's attempts before
        (a run cancelled while it Reduced has them in its result, which a run that goes on
        does not read): they stay recorded if this process dies before Reduce adds one.
        `paid`: the run's usage before; `counted`: the attempts before of the batches it
        sends again (index -> how many), and `ratings_paid` what its rating calls used
        before, which that usage holds; `earlier_cost` what it cost (None: priced at `prices`,
        this process's)."""
        spent = _spent(prices, paid, earlier_cost)
        connection = connect(path, check_same_thread=False)
        try:
            with errors_named(path), _first_commit(connection, path):
                _claim(connection, run_id)
                connection.execute(
                    "UPDATE runs SET status = 'running', owner = ?, finished_at = NULL, usage_total = ?, "
                    "cost_total = ?, reduce_attempts = ? WHERE run_id = ?",
                    (this_process(), _usage_json(paid), _usage_json(spent.cost),
                     attempts_packed(reduce_attempts) if reduce_attempts else None, run_id),
                )
        except BaseException:
            connection.close()
            raise
        recorder = cls(path, connection, run_id, model, resumed=True, spent=spent, counted=counted,
                       reduce_counted=len(reduce_attempts), ratings_paid=ratings_paid)
        if planned is not None:
            recorder.planned(plan, planned)
        return recorder

    @staticmethod
    def _insert_run(
        connection: sqlite3.Connection, plan: SearchPlan, packed: tuple[str | bytes, ...] | None,
        metadata: RunMetadata, started_at: str, selection: str | None, key: bytes | None,
    ) -> str:
        settings = json.dumps(dict(metadata.model_settings))
        for _ in range(8):  # four random characters per millisecond: a clash is rare, not impossible
            run_id = new_run_id()
            try:
                connection.execute(
                    "INSERT INTO runs (run_id, parent_run_id, started_at, status, question, store_path, store_size, "
                    "store_mtime_ns, namespace, level, seed, shuffle, options, model_settings, model_name, "
                    "summary_count, batch_count, owner, prompts, selection, seal) "
                    "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id, metadata.parent_run_id, started_at, plan.query, metadata.store_path,
                        metadata.store_size, metadata.store_mtime_ns, plan.namespace, json.dumps(plan.level),
                        plan.seed, int(plan.seed is not None), plan.options.model_dump_json(), settings,
                        metadata.model_name, plan.summary_count, len(plan.batches), this_process(),
                        plan.prompts.model_dump_json(), selection,
                        None if key is None else seal(key, run_id, metadata.store_path, settings),
                    ),
                )
            except sqlite3.IntegrityError:
                time.sleep(0.001)
                continue
            if packed is not None:
                _write_plan_columns(connection, run_id, packed)
            return run_id
        raise sqlite3.IntegrityError("no free run id")

    # -- what the run reports (from the run's thread): a queue put, no copy, no JSON ------------

    def planned(self, plan: SearchPlan, planned: Sequence[BatchResult], selection: str | None = None) -> None:
        """The run's plan, and the engine's BatchResults of it (their communities, parts and
        prompt tokens, which never change, are read from them); `selection`: what dynamic
        selection chose, once it has."""
        self._queue.put(("plan", plan, planned, selection))

    def rated(self, rating: Rating) -> None:
        """Dynamic selection rated a community (a resume asks only the others again)."""
        self._queue.put(("rating", rating))

    def rating_call_paid(self, usage: Usage, estimated_prompt_tokens: int) -> None:
        """A rating call reported what it used (a resume does not ask it again)."""
        self._queue.put(("rating_paid", usage, estimated_prompt_tokens))

    def voted(self, community_id: str, votes: list[Vote | None]) -> None:
        """The votes so far for a community not yet rated (a resume asks only the others)."""
        self._queue.put(("vote", community_id, votes))

    def finished_before(self, batches: Sequence[BatchResult]) -> None:
        """The batches that finished before `batch_finished` was first called (the run's
        first tick; the end's records take the rest), each recorded once."""
        self._queue.put(("finished", list(batches)))

    def attempt_failed(self, batch: BatchResult) -> None:
        """A Map attempt failed and the batch goes on: its attempts so far (a failed attempt
        does not change any more; the list does, so it is copied, not its attempts)."""
        self._queue.put(("attempt", batch.index, list(batch.attempts)))

    def reduce_attempt_failed(self, attempts: Sequence[Attempt]) -> None:
        """A Reduce attempt failed and Reduce goes on: its attempts so far (copied, as a batch's)."""
        self._queue.put(("reduce", list(attempts)))

    def finish(self, result: SearchResult, finished_at: str) -> None:
        """The run's end; waits until everything is written."""
        self._queue.put(("finish", result, finished_at))
        self._close()

    def abandon(self, batches: Sequence[BatchResult], reduce_attempts: Sequence[Attempt] = ()) -> None:
        """The process ends without a result (the app quits mid-run): what finished is
        written, Reduce's attempts so far, and the run is `interrupted`."""
        self._queue.put(("abandon", list(batches), list(reduce_attempts)))
        self._close()

    def _close(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            if self._thread is None:  # a run that ended within an interval: written here, now
                try:
                    self._write(self._arrived(), synced=False)
                finally:  # closing checkpoints the WAL, and syncs it, which the run need not wait for
                    _close_in_background(self._connection, self.path)
                return
        self._closing.set()
        self._wake.set()
        self._written.wait()

    # -- the writer thread ----------------------------------------------------------------------

    def tick(self) -> None:
        """Called by the run's thread every FLUSH_INTERVAL once the run has gone on for one:
        the first starts the writer thread, which commits what arrived; each later one wakes
        it to commit what arrived since, or, when it has not woken or not finished since the
        last tick, writes that on the run's thread. (An event loop that never waits, as with
        an offline model, polls its selector between callbacks, which releases and takes
        back the GIL each time; a thread waiting for the GIL then waits until the loop runs
        5 ms without a poll, which can take seconds.)"""
        with self._lock:
            if self._done:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._write_loop, args=(_closing(),),  # (it closes the connection last)
                                                name=f"history-{self.run_id}", daemon=True)
                self._thread.start()
                return
        if not (self._wake.is_set() or self._writing.locked()):
            self._wake.set()
        # Waiting for the lock lets a writer starved in the middle of a write finish it; a
        # writer in a slow commit (the disk's) is not waited for longer than that.
        elif self._queue.qsize() and self._writing.acquire(timeout=STEP_IN_WAIT):
            try:
                self._write(self._arrived())
            finally:
                self._writing.release()

    def _arrived(self) -> list[BatchResult | tuple[Any, ...]]:
        return list(map(self._queue.get, repeat(False, self._queue.qsize())))

    def _write_loop(self, closed: threading.Event) -> None:
        try:
            while True:  # what arrived before the thread started, at once; then at each wake
                closing = self._closing.is_set()
                with self._writing:
                    items = self._arrived()
                    if items:
                        self._write(items)
                if closing:
                    return
                self._wake.wait()
                self._wake.clear()
        finally:
            self._written.set()
            _close_quietly(self._connection, closed)

    def _write(self, items: list[BatchResult | tuple[Any, ...]], *, synced: bool = True) -> None:
        """One transaction: the items in order, their batches in one group of records.
        `synced` False: its commit does not wait for the disk (the connection's closing syncs it)."""
        if self.error is not None:
            return
        try:
            if not synced:
                self._connection.execute("PRAGMA synchronous = NORMAL")
            writers = {"plan": self._write_plan, "attempt": self._write_attempt, "finish": self._write_finish,
                       "abandon": self._write_abandon, "rating": self._add_rating, "vote": self._add_votes,
                       "rating_paid": self._add_rating_paid, "reduce": self._write_reduce_attempts,
                       "finished": self._write_finished}
            with transaction(self._connection) as connection:
                if connection.execute("SELECT 1 FROM runs WHERE run_id = ?", (self.run_id,)).fetchone() is None:
                    # `runs delete` while it ran: nothing more is written (no record without its run)
                    self.error = f"run history {self.path}: run {self.run_id} was deleted while it ran"
                    return
                for kind, run in groupby(items, type):
                    if kind is tuple:
                        for item in run:
                            writers[item[0]](connection, *item[1:])  # type: ignore[index]
                    else:  # finished batches: each comes once (`_add_unwritten` is for the others)
                        batches = list(run)
                        self._group += batches
                        self._models += repeat(self._model, len(batches))
                self._flush_group(connection)
                if self._ratings_unwritten:
                    self._write_ratings(connection)
        except (sqlite3.Error, OSError) as error:
            self.error = str(history_error(self.path, error))
        except Exception as error:  # a bug here must cost the record, never the run
            self.error = f"run history {self.path}: internal error: {type(error).__name__}: {error}"

    def _write_kept(self, connection: sqlite3.Connection) -> None:
        """The batches a re-run keeps, in a group of their own that says so (their parent
        paid for them: a resume of the re-run does not count them)."""
        self._add_unwritten(self._kept.values())
        self._flush_group(connection, kept=True)

    def _flush_group(self, connection: sqlite3.Connection, *, kept: bool = False) -> None:
        group, models = self._group, self._models
        if not group:
            return
        records, indexes, statuses, usages = records_packed(group, models, kept=kept)
        if not kept and usages.count(None) != len(usages):  # (its parent paid for what a re-run kept)
            self._add_paid(connection, group)
        group.clear()  # in place: `_write` holds them
        models.clear()
        if "cancelled" in statuses:  # a batch that goes on after failed attempts is not finished
            self._finished.update(i for i, status in zip(indexes, statuses, strict=True) if status != "cancelled")
        else:
            self._finished.update(indexes)
        connection.execute("INSERT INTO batch_records (run_id, seq, records) VALUES (?, ?, ?)",
                           (self.run_id, self._seq, records))
        self._seq += 1
        succeeded, failed = statuses.count("succeeded"), statuses.count("failed")
        # `runs list` and the Runs screen count them while the run goes
        connection.execute(
            "UPDATE runs SET succeeded_batch_count = succeeded_batch_count + ?, "
            "failed_batch_count = failed_batch_count + ? WHERE run_id = ?", (succeeded, failed, self.run_id))

    def _write_plan(
        self, connection: sqlite3.Connection, plan: SearchPlan, planned: Sequence[BatchResult], selection: str | None
    ) -> None:
        if selection is not None:  # what was chosen: the ratings so far are in it
            connection.execute("UPDATE runs SET selection = ? WHERE run_id = ?",
                               (with_ratings_paid(selection, self._ratings_paid), self.run_id))
            self._ratings_unwritten, self._selection = False, None
        if self._resumed:  # the finished batches stay; the others start again
            self._seq = connection.execute(
                "SELECT ifnull(max(seq) + 1, 0) FROM batch_records WHERE run_id = ?", (self.run_id,)).fetchone()[0]
            connection.execute("DELETE FROM batches WHERE run_id = ? AND status = 'pending'", (self.run_id,))
            self._finished.update(i for (i,) in connection.execute(
                "SELECT batch_index FROM batches WHERE run_id = ?", (self.run_id,)))
            groups = (g for (g,) in connection.execute(
                "SELECT records FROM batch_records WHERE run_id = ? ORDER BY seq", (self.run_id,)))
            self._finished.update(i for i, r in read_records(groups).items() if r.status != "pending")
            # A run recorded by an earlier version (a row per batch, each with its content) gets
            # its plan again (its contents' hashes were checked), now with every content.
            if connection.execute(f"SELECT {plan_column('contents')} FROM {RUNS_WITH_PLANS} WHERE run_id = ?",
                                  (self.run_id,)).fetchone()[0] is not None:
                return
        _write_plan_columns(connection, self.run_id, _plan_columns(plan, planned))
        connection.execute("UPDATE runs SET summary_count = ?, batch_count = ? WHERE run_id = ?",
                           (plan.summary_count, len(plan.batches), self.run_id))
        self._write_kept(connection)

    def _add_rating(self, connection: sqlite3.Connection, rating: Rating) -> None:
        self._ratings.append(rating_json(rating))
        self._votes.pop(rating.community_id, None)
        self._ratings_unwritten = True

    def _add_votes(self, connection: sqlite3.Connection, community_id: str, votes: list[Vote | None]) -> None:
        self._votes[community_id] = votes
        self._ratings_unwritten = True

    def _add_rating_paid(self, connection: sqlite3.Connection, usage: Usage, estimated_prompt_tokens: int) -> None:
        paid = self._ratings_paid or RatingsPaid(Usage(), 0)
        self._ratings_paid = RatingsPaid(paid.usage + usage, paid.estimated_prompt_tokens + estimated_prompt_tokens)
        self._ratings_unwritten = True
        self._count(connection, [usage])

    def _write_ratings(self, connection: sqlite3.Connection) -> None:
        """The ratings and votes so far, and what their calls used, over the recorded
        selection's (a resume's engine reports the ratings and votes it had again, so they
        are whole)."""
        self._ratings_unwritten = False
        if self._selection is None:  # read once: each write used to read, parse and dump every rating again
            (text,) = connection.execute("SELECT selection FROM runs WHERE run_id = ?", (self.run_id,)).fetchone()
            if text is None:
                return
            self._selection = recorded_json(text)
        connection.execute("UPDATE runs SET selection = ? WHERE run_id = ?",
                           (with_ratings(self._selection, self._ratings, self._votes, self._ratings_paid), self.run_id))

    def _write_finished(self, connection: sqlite3.Connection, batches: list[BatchResult]) -> None:
        self._add_unwritten((b, self._model) for b in batches)

    def _write_attempt(self, connection: sqlite3.Connection, index: int, attempts: list[Attempt]) -> None:
        if index not in self._finished:  # never over a finished batch's record
            self._group.append(batch_with_attempts(index, attempts))
            self._models.append(None)

    def _write_reduce_attempts(self, connection: sqlite3.Connection, attempts: list[Attempt]) -> None:
        connection.execute("UPDATE runs SET reduce_attempts = ? WHERE run_id = ?",
                           (attempts_packed(attempts), self.run_id))
        added, self._reduce_counted = attempts[self._reduce_counted:], len(attempts)
        self._count(connection, [a.usage for a in added])

    def _add_paid(self, connection: sqlite3.Connection, batches: Sequence[BatchResult]) -> None:
        """The usage of the batches' attempts not yet counted."""
        added: list[Attempt] = []
        for batch in batches:
            added += batch.attempts[self._counted.get(batch.index, 0):]
            self._counted[batch.index] = len(batch.attempts)
        self._count(connection, [a.usage for a in added])

    def _count(self, connection: sqlite3.Connection, usages: Sequence[Usage | None]) -> None:
        """Adds calls' usage to the run's, and its cost, listed while it goes (its end lists
        the result's)."""
        spent, counted = self._spent, False
        for usage in usages:
            if usage is not None:
                spent.add(usage, None)
                counted = True
        if counted:
            connection.execute("UPDATE runs SET usage_total = ?, cost_total = ? WHERE run_id = ?",
                                (_usage_json(spent.total), _usage_json(spent.cost), self.run_id))

    def _add_unwritten(self, batches: Iterable[tuple[BatchResult, str | None]]) -> None:
        """Finished batches, each with the model that answered it, whose record may be
        written already (or is in the group), but once each: a finished batch does not change."""
        self._flush_group(self._connection)  # `_finished` then holds every batch written
        for batch, model in batches:
            if batch.index not in self._finished:
                self._finished.add(batch.index)
                self._group.append(batch)
                self._models.append(model)

    def _write_finish(self, connection: sqlite3.Connection, result: SearchResult, finished_at: str) -> None:
        self._flush_group(connection)
        # the batches whose event never came: all of a run shorter than an interval, or of one that broke
        ended = [b for b in result.batches if b.index not in self._finished] if self._finished else result.batches
        if ended:
            self._add_ended(connection, ended)
        connection.execute(
            "UPDATE runs SET status = ?, finished_at = ?, failed_batch_count = ?, result = ?, usage_total = ?, "
            "cost_total = ?, owner = NULL, reduce_attempts = NULL WHERE run_id = ?",
            (result.status, finished_at, result.failed_batch_count, result_summary(result),
             _usage_json(result.usage_total), _usage_json(result.cost), self.run_id),
        )

    def _add_ended(self, connection: sqlite3.Connection, ended: list[BatchResult]) -> None:
        """Batches none of whose records is written: a cancelled one's attempts, the others'
        records. Without a cancelled one, the group takes the list as it is: a call per batch
        cost a short run's end 0.5 ms of its 2,000 batches."""
        if "cancelled" not in map(attrgetter("status"), ended):
            self._group += ended
            self._models += repeat(self._model, len(ended))
        else:
            for batch in ended:
                if batch.status != "cancelled":
                    self._group.append(batch)
                    self._models.append(self._model)
                elif batch.attempts:  # cancelled while it went on: its attempts
                    self._write_attempt(connection, batch.index, batch.attempts)
        self._flush_group(connection)

    def _write_abandon(
        self, connection: sqlite3.Connection, batches: list[BatchResult], reduce_attempts: list[Attempt]
    ) -> None:
        self._add_unwritten((b, self._model) for b in batches if b.status != "cancelled")
        self._flush_group(connection)
        if reduce_attempts:
            self._write_reduce_attempts(connection, reduce_attempts)
        connection.execute("UPDATE runs SET status = 'interrupted', owner = NULL WHERE run_id = ?", (self.run_id,))


@contextlib.contextmanager
def _first_commit(connection: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """A run's first transaction (its row, or a resume's claim), which need not wait for the
    disk: the WAL is appended in order, so the next commit's sync (every later commit is
    synced) takes it to the disk too. A power cut before then loses a row whose run had
    nothing finished, and each run is spared one sync (0.5-0.7 ms here).

    Nor, into an empty WAL (the last connection to close deletes it: a run alone on its
    history always starts one), is the new WAL's header synced before its first frames
    (SQLite does so unless `synchronous = OFF`, another 0.6 ms): that sync keeps a power cut
    from replaying frames of the WAL's earlier round, and an empty WAL has none. It is empty
    for sure only under the write lock, and the level cannot change within a transaction:
    one another process wrote into meanwhile is begun again."""
    wal = _wal_path(path)
    empty = _wal_is_empty(wal)
    try:
        connection.execute(f"PRAGMA synchronous = {'OFF' if empty else 'NORMAL'}")
        connection.execute("BEGIN IMMEDIATE")
        if empty and not _wal_is_empty(wal):
            connection.execute("ROLLBACK")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            roll_back(connection)
            raise
        connection.execute("COMMIT")
    finally:
        connection.execute("PRAGMA synchronous = FULL")


def _wal_path(path: Path) -> str | None:
    """The history's WAL (SQLite names it after the file a link leads to); None: no such name."""
    try:
        return os.path.realpath(path) + "-wal"
    except (OSError, ValueError):
        return None


def _wal_is_empty(wal: str | None) -> bool:
    try:
        return wal is not None and os.stat(wal).st_size == 0
    except (OSError, ValueError):
        return False


#: The closings of history connections in progress (closing copies the WAL into the file),
#: each set once done, which the process waits for as it exits: a thread killed there left
#: the WAL to grow by each run, and every later process opening the history read it whole.
_CLOSING: set[threading.Event] = set()


def _closing() -> threading.Event:
    closed = threading.Event()
    _CLOSING.add(closed)
    return closed


def _close_in_background(connection: sqlite3.Connection, unsynced: Path) -> None:
    # (threading's start waits until the new thread runs: it cost a run's end 0.1-0.2 ms)
    _thread.start_new_thread(_close_quietly, (connection, _closing(), unsynced))


def _close_quietly(connection: sqlite3.Connection, closed: threading.Event, unsynced: Path | None = None) -> None:
    """Closes a connection on a thread of its own, where an error would print a traceback,
    and sets `closed`. `unsynced`: its history, whose last commit did not wait for the disk:
    the WAL is synced if the close left it there (the last connection's close checkpoints the
    WAL, syncing it, and deletes it; with others open, it stays as it was)."""
    try:
        with contextlib.suppress(sqlite3.Error):
            connection.close()
        wal = None if unsynced is None else _wal_path(unsynced)
        if wal is not None:
            with contextlib.suppress(OSError):
                descriptor = os.open(wal, os.O_RDONLY)
                try:
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
    finally:
        closed.set()
        _CLOSING.discard(closed)


@atexit.register
def _wait_for_closing() -> None:
    deadline = time.monotonic() + CLOSE_WAIT_AT_EXIT
    for closed in list(_CLOSING):
        closed.wait(timeout=max(0.0, deadline - time.monotonic()))


def _plan_columns(plan: SearchPlan, planned: Sequence[BatchResult]) -> tuple[str | bytes, str | bytes, str | bytes]:
    """The plan, every batch's content and the Map prompt, as the run's row holds them."""
    contents = list(map("".join, map(attrgetter("pieces"), plan.batches)))  # each batch's content, joined once
    first = contents[0] if contents else ""
    return plan_packed(planned, contents), pack_contents(contents), pack_text(messages_json(plan.query, first, plan.prompts))


def _write_plan_columns(connection: sqlite3.Connection, run_id: str, packed: tuple[str | bytes, ...]) -> None:
    connection.execute("INSERT OR REPLACE INTO run_plans (run_id, plan, contents, map_prompt) VALUES (?, ?, ?, ?)",
                       (run_id, *packed))


class RunNotResumable(InputError):
    pass


class RunBusy(InputError):
    """A run of the same line (a re-run's parent or its parents, or re-runs of it) runs in
    another process: both would send the same batches, and each be paid for."""


#: The runs a run re-runs (its parent, and theirs) and the runs that re-run it (its children,
#: and theirs), running now (UNION: a hostile file's loop of parents ends).
_RUNNING_RELATIVES = """
WITH RECURSIVE
    up(id) AS (SELECT parent_run_id FROM runs WHERE run_id = :run
               UNION SELECT r.parent_run_id FROM runs r JOIN up ON r.run_id = up.id),
    down(id) AS (SELECT run_id FROM runs WHERE parent_run_id = :run
                 UNION SELECT r.run_id FROM runs r JOIN down ON r.parent_run_id = down.id)
SELECT run_id, owner, run_id IN (SELECT id FROM up) FROM runs
WHERE status = 'running' AND run_id != :run AND (run_id IN (SELECT id FROM up) OR run_id IN (SELECT id FROM down))
"""


def _check_line_idle(connection: sqlite3.Connection, run_id: str, again: str) -> None:
    """RunBusy when a run that `run_id` re-runs, or that re-runs it, runs in another process.
    In the run's first transaction, which another's cannot interleave with (a re-run checked
    its parent's status when it read it, before a resume could claim it)."""
    for other, owner, above in connection.execute(_RUNNING_RELATIVES, {"run": run_id}):
        if is_alive(owner):
            how = f"re-runs run {other}, which is running" if above else f"is being re-run by run {other}"
            raise RunBusy(f"run {run_id} {how} in another process: {again} once that has ended")


def _check_parent_idle(connection: sqlite3.Connection, parent_run_id: str) -> None:
    row = connection.execute("SELECT status, owner FROM runs WHERE run_id = ?", (parent_run_id,)).fetchone()
    if row is not None and row[0] == "running" and is_alive(row[1]):
        raise RunBusy(f"run {parent_run_id} is running in another process: re-run it once it has ended")
    _check_line_idle(connection, parent_run_id, "re-run it")


def _claim(connection: sqlite3.Connection, run_id: str) -> None:
    row = connection.execute("SELECT status, owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotResumable(f"run {run_id} is no longer in the run history")
    status, owner = row
    if status == "running" and is_alive(owner):
        raise RunNotResumable(f"run {run_id} is running in another process: it cannot be resumed now")
    _check_line_idle(connection, run_id, "resume it")
    if status not in ("running", "interrupted", "cancelled"):
        raise RunNotResumable(f"run {run_id} is {status}: only an interrupted or cancelled run can be resumed")


