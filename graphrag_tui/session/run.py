"""One run of global search, the same for the CLI and the app: a request, then its plan
(from the store; no model call), then the run with its events, then the result.

    run = RunSession(store, on_event=...)
    plan = run.prepare(request)        # InputError: a bad request, before any model call
    result = await run.run(model, timeout=...)   # `run.cancel()` ends it as `cancelled`

A run that breaks on an unexpected error ends with `run.failed(error)`: a `failed` result
that keeps what finished.

With `history` (a path) the run is recorded while it goes (history/): `run_id` names it, or
stays None when the history cannot be used (corrupt, locked, newer): `on_warning` gets one
line and the run happens unrecorded. A re-run or a resume sets `prior` (the batches kept)
and `parent_run_id` or `resume_run_id` before `run` (see continuation.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..arguments import has_surrogates
from ..durations import duration_text
from ..engine import (
    DEFAULT_PROMPTS,
    AttemptFailed,
    BatchFailed,
    BatchSucceeded,
    ChatModel,
    Cost,
    GlobalSearch,
    LongResponseHook,
    Prices,
    Prompts,
    SearchPlan,
    Usage,
    utc_now,
)
from ..engine.events import CommunityRated, Event, Planned, UsageReported
from ..engine.options import SearchOptions
from ..engine.rate_limits import RateLimits
from ..engine.result import Attempt, BatchResult, Level, SearchResult
from ..engine.selection import Rating, SelectionOptions, SelectionReport, Vote
from ..engine.throttle import least_spacing
from ..errors import InputError
from ..history import FLUSH_INTERVAL, HistoryError, RatingsPaid, RunRecorder, selection_json
from ..models.factory import ModelSettings
from ..output_paths import input_named
from ..planning import Selected, prepare_plan, prepare_selected_plan
from ..store import CommunityStore
from ..store.location import store_files
from .recording import model_name, run_document, run_metadata
from .run_failure import failed_result

log = logging.getLogger("graphrag_tui.session")
#: Caps that space a run's Map calls over this many seconds or more are said at its start.
PACING_NOTE_FROM = 60.0


@dataclass(frozen=True)
class SearchRequest:
    query: str
    #: None: the store's only namespace.
    namespace: str | None
    level: Level
    options: SearchOptions
    #: None: a new seed is drawn.
    seed: int | None
    shuffle: bool = True
    #: The templates and the answer's form (engine/prompts.py).
    prompts: Prompts = DEFAULT_PROMPTS
    #: How the communities are chosen (issue 15): `level` by default.
    selection: SelectionOptions = SelectionOptions()
    #: A re-run's or a resume's recorded selection: its communities are planned again as
    #: they were chosen (dynamic selection is not rated again), and the result keeps it.
    recorded_selection: SelectionReport | None = None
    #: Dynamic selection's ratings recorded before its run stopped: not asked again.
    known_ratings: tuple[Rating, ...] = ()
    #: The votes it had cast for a community it had not finished rating: not asked again.
    known_votes: Mapping[str, tuple[Vote | None, ...]] = field(default_factory=dict)


#: The history's first and last writes of the app's runs (`history_off_loop`), in order.
_HISTORY_WRITES = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="recording-off-loop")


async def _off_loop(work: Callable[[], None]) -> None:
    """`work` on the history's own thread while the loop goes on. A wait that is cancelled
    (the app quitting) still waits for it: the run's record is written before the app goes."""
    job = _HISTORY_WRITES.submit(work)
    try:
        await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        if job.cancelled():  # (before it started)
            work()
        else:
            job.result()
        raise


class RunSession:
    def __init__(
        self,
        store: CommunityStore,
        *,
        on_event: Callable[[Event], None] | None = None,  # type: ignore[valid-type]
        on_long_response: LongResponseHook | None = None,
        cancel: asyncio.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
        history: Path | None = None,
        on_warning: Callable[[str], None] | None = None,
        history_off_loop: bool = False,
    ) -> None:
        self.store = store
        self.history = history
        #: Whether the history's first and last writes of the run, which wait for a history
        #: another process holds (up to its busy timeout), run off the event loop: the app's
        #: screen froze for 5 s when a run started on a locked history.
        self.history_off_loop = history_off_loop
        self.on_warning = on_warning or (lambda text: log.warning("%s", text))
        self.on_event = on_event
        self.on_long_response = on_long_response
        self.cancel_event = cancel or asyncio.Event()
        self.clock, self.wall_clock = clock, wall_clock
        self.request: SearchRequest | None = None
        self.plan: SearchPlan | None = None
        self.search: GlobalSearch | None = None
        self.result: SearchResult | None = None
        #: The run in the history (None: unrecorded), and what it continues.
        self.run_id: str | None = None
        self.parent_run_id: str | None = None
        self.resume_run_id: str | None = None
        #: Batches kept from before (index -> (result, the model that answered it)).
        self.prior: dict[int, tuple[BatchResult, str | None]] = {}
        #: A resumed re-run's batches kept from its parent (paid for by the parent, not this run).
        self.prior_unpaid: set[int] = set()
        #: A resume's attempts of batches it sends again (index -> attempts, paid for before).
        self.earlier_attempts: dict[int, list[Attempt]] = {}
        self.earlier_reduce_attempts: list[Attempt] = []
        #: A resume's usage before (what the run lists as paid for until its calls add to it).
        self.earlier_usage: Usage | None = None
        #: What that usage cost, as priced when it was paid (None: unpriced, or recorded before
        #: costs were: priced at this run's prices).
        self.earlier_cost: Cost | None = None
        #: What a resumed dynamic selection's rating calls used before (it does not ask them again).
        self.earlier_ratings_paid: RatingsPaid | None = None
        self.started_at: str | None = None
        self.finished_at: str | None = None
        self.batch_models: list[str | None] = []
        self._recorder: RunRecorder | None = None
        #: The recorder's next tick, every FLUSH_INTERVAL once the run has gone on for one.
        self._next_tick: asyncio.TimerHandle | None = None
        #: Whether each finished batch goes to the recorder as it finishes: from the first tick
        #: (those before it go then; a run that ends sooner records its result's).
        self._batches_reported = False
        self._model_name: str | None = None
        #: What the selection mode chose at prepare(); dynamic selection plans again once
        #: the model has rated, and `on_plan` gets that plan (the app shows its batches).
        self.selected: Selected | None = None
        self.on_plan: Callable[[SearchPlan], None] | None = None
        #: Dynamic selection plans the recorded run's communities once the model has rated.
        self._plan_unrecorded = False

    def prepare(self, request: SearchRequest) -> SearchPlan:
        """The plan: reads the store (call it off an event loop for a large store)."""
        self.request = request
        recorded = request.recorded_selection
        if recorded is not None:
            self.plan = prepare_plan(
                self.store, request.query, namespace=request.namespace, level=request.level, options=request.options,
                seed=request.seed, shuffle=request.shuffle, prompts=request.prompts, ids=list(recorded.selected),
            )
            self.selected = Selected(request.level, recorded, list(recorded.selected))
            return self.plan
        self.plan, self.selected = prepare_selected_plan(
            self.store,
            request.query,
            namespace=request.namespace,
            level=request.level,
            options=request.options,
            seed=request.seed,
            shuffle=request.shuffle,
            prompts=request.prompts,
            selection=request.selection,
        )
        return self.plan

    @property
    def dynamic(self) -> bool:
        return self.selected is not None and self.selected.nodes is not None

    async def _replan(self, ids: list[str]) -> SearchPlan:
        """The plan of the communities dynamic selection chose (the store read off the loop):
        the same namespace, options and seed."""
        assert self.plan is not None and self.request is not None
        plan = self.plan
        self.plan = await asyncio.to_thread(
            prepare_plan, self.store, plan.query, namespace=plan.namespace, level=plan.level, options=plan.options,
            seed=plan.seed, shuffle=self.request.shuffle, prompts=plan.prompts, ids=ids,
        )
        self.batch_models = [None] * len(self.plan.batches)
        if self.on_plan is not None:
            self.on_plan(self.plan)
        return self.plan

    async def run(
        self,
        model: ChatModel,
        *,
        timeout: float,
        settings: ModelSettings | None = None,
        prices: Prices | None = None,
        max_cost: float | None = None,
    ) -> SearchResult:
        """`settings`: how the model was opened, recorded (never the key) so that a re-run
        or a resume can reach it again; every call passes the gate of its rate limits (the
        endpoint's only). With `prices` the run's usage is priced, and with `max_cost` it is
        cancelled once the spend reaches that many dollars."""
        assert self.plan is not None, "prepare() first"
        self.search = GlobalSearch(
            self.plan,
            model,
            on_event=self._on_event,
            cancel=self.cancel_event,
            timeout=timeout,
            clock=self.clock,
            wall_clock=self.wall_clock,
            on_long_response=self.on_long_response,
            rate_limits=settings.rate_limits if settings is not None else None,
            prices=prices,
            max_cost=max_cost,
            prior={index: batch for index, (batch, _) in self.prior.items()},
            prior_paid=self.resume_run_id is not None,
            prior_unpaid=self.prior_unpaid,
            earlier_attempts=self.earlier_attempts,
            earlier_reduce_attempts=self.earlier_reduce_attempts,
            earlier_ratings_paid=self.earlier_ratings_paid,
            earlier_cost=self.earlier_cost,
            selection=self.selected.report if self.selected is not None and not self.dynamic else None,
            dynamic=(self.selected.nodes or [], self.request.selection, self._replan)
            if self.selected is not None and self.dynamic and self.request is not None else None,
            known_ratings=self.request.known_ratings if self.request is not None else (),
            known_votes=self.request.known_votes if self.request is not None else None,
            on_vote=self._on_vote,
        )
        self._model_name = model_name(model, settings)
        self.batch_models = [self.prior[b.index][1] if b.index in self.prior else None for b in self.plan.batches]
        if self.started_at is None:  # a resumed run keeps its start
            self.started_at = self.wall_clock().isoformat()
        if settings is not None and settings.rate_limits is not None:
            self._note_pacing(settings.rate_limits)
        if self.history_off_loop and self.history is not None:
            try:
                await _off_loop(lambda: self._start_recording(model, settings, prices))
            except asyncio.CancelledError:  # (the write went on: its run is interrupted, not left running)
                self._abandon()
                raise
        else:
            self._start_recording(model, settings, prices)
        if self._recorder is not None:
            self._next_tick = asyncio.get_running_loop().call_later(FLUSH_INTERVAL, self._tick)
        try:
            self.result = await self.search.run()
        except Exception as error:
            self.failed(error)  # recorded as failed; the caller may call failed() again
            raise
        except BaseException:  # the process or its task is ending: what finished is kept
            self._abandon()
            raise
        if self.history_off_loop and self._recorder is not None:
            recorder, result = self._take_recorder(), self.result
            await _off_loop(lambda: self._finish_recording(result, recorder))
        else:
            self._finish_recording(self.result)
        return self.result

    def _note_pacing(self, limits: RateLimits) -> None:
        """Caps that hold the run's Map calls (or dynamic selection's first rating calls,
        the ones sure to be sent) apart for a minute or more are said before the first is
        sent: `--tpm 1` otherwise looks like a run that hangs."""
        assert self.search is not None and self.plan is not None
        selector = self.search.selector
        if selector is not None:
            sent = selector.first_wave_tokens()
            calls = f"dynamic selection's first {len(sent)} rating call{'s' * (len(sent) != 1)}"
        else:
            reserve = self.plan.options.map_reserve
            sent = [b.prompt_tokens + reserve for b in self.search.batches if b.index not in self.prior]
            calls = f"this run's {len(sent)} Map call{'s' * (len(sent) != 1)}"
        least = least_spacing(limits, sent)
        if least >= PACING_NOTE_FROM:
            rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
            caps = " and ".join(cap for cap in (
                None if rpm is None else f"{rpm} request{'s' * (rpm != 1)}",
                None if tpm is None else f"{tpm} token{'s' * (tpm != 1)}") if cap)
            self.on_warning(f"note: the rate caps (at most {caps} a minute) space {calls} over at least "
                            f"{duration_text(least)}")

    def _start_recording(self, model: ChatModel, settings: ModelSettings | None, prices: Prices | None) -> None:
        if self.history is None:
            return
        assert self.plan is not None and self.search is not None
        store_file = input_named(self.history, store_files(self.store.path))
        if store_file is not None:  # its journal holds the store's unfinished transaction, to SQLite
            self.on_warning(f"warning: run history {self.history} is the store's file {store_file}; this run is not "
                            "recorded")
            return
        dynamic = self.dynamic
        planned = None if dynamic else self.search.batches  # dynamic: once the model has rated
        try:
            if self.resume_run_id is not None:
                self._recorder = RunRecorder.resume(
                    self.history, self.resume_run_id, self.plan, planned, self._model_name,
                    self.earlier_reduce_attempts, self.earlier_usage,
                    {index: len(attempts) for index, attempts in self.earlier_attempts.items()},
                    self.earlier_ratings_paid, prices, self.earlier_cost)
            else:
                metadata = run_metadata(self.store.path, settings, model, self.parent_run_id)
                if has_surrogates(metadata.store_path):  # (it was an internal error)
                    self.on_warning("warning: the store's path is not valid UTF-8, which the run history cannot "
                                    "hold; this run is not recorded")
                    return
                self._recorder = RunRecorder.start(
                    self.history, self.plan, planned, metadata, started_at=self.started_at or "",
                    kept=self.prior,
                    selection=self._selection_record(self.selected.report if self.selected and not dynamic else None),
                    prices=prices,
                )
        except HistoryError as error:
            if self.resume_run_id is not None:  # unclaimed, it could go on beside another resume of it
                raise InputError(f"{error}: run {self.resume_run_id} is not resumed (unrecorded, its batches would be "
                                 "sent again by its next resume)") from None
            self.on_warning(f"warning: {error}; this run is not recorded")
            return
        self.run_id = self._recorder.run_id
        self._plan_unrecorded = dynamic
        if self._recorder.warning is not None:
            self.on_warning(f"warning: {self._recorder.warning}")

    def _tick(self) -> None:
        """Every FLUSH_INTERVAL while the run goes: the recorder commits what arrived."""
        if self._recorder is not None:
            if not self._batches_reported and self.search is not None:
                self._recorder.finished_before([b for b in self.search.batches if b.status != "cancelled"])
                self._batches_reported = True
            self._recorder.tick()
            self._next_tick = asyncio.get_running_loop().call_later(FLUSH_INTERVAL, self._tick)

    def _selection_record(self, report: SelectionReport | None) -> str | None:
        """How the run chooses its communities, as the history records it: None for the
        level's communities (nothing to record), else its options and what they chose
        (None: dynamic selection has not chosen yet)."""
        if self.request is None or (report is None and not self.dynamic):
            return None
        return selection_json(self.request.selection, report)

    def _on_event(self, event: Event) -> None:  # type: ignore[valid-type]
        recorder, search = self._recorder, self.search
        if self._plan_unrecorded and recorder is not None and search is not None:  # dynamic selection rates
            if type(event) is CommunityRated:
                recorder.rated(Rating(community_id=event.community_id, level=event.level, rating=event.rating,
                                      reason=event.reason, votes=list(event.votes), failed=event.failed,
                                      kept=event.kept))
            elif type(event) is UsageReported and event.community_id is not None:  # a rating call's
                recorder.rating_call_paid(event.usage, event.estimated_prompt_tokens or 0)
            elif type(event) is Planned:
                self._plan_unrecorded = False
                recorder.planned(search.plan, search.batches, self._selection_record(search.selection))
        if search is not None and isinstance(event, (BatchSucceeded, BatchFailed)):
            index = event.batch_index
            self.batch_models[index] = self._model_name
            if recorder is not None and self._batches_reported:  # (a finished batch cost a run 0.2 ms in 2,000)
                recorder.batch_finished(search.batches[index])
        elif recorder is not None and search is not None and type(event) is AttemptFailed \
                and event.will_retry:  # (`type`: isinstance costs a run 0.3 %)
            if event.batch_index is not None:
                recorder.attempt_failed(search.batches[event.batch_index])
            elif event.community_id is None:  # Reduce's (a rating's names its community)
                recorder.reduce_attempt_failed(search.reduce.attempts)
        if self.on_event is not None:
            self.on_event(event)

    def _on_vote(self, community_id: str, votes: list[Vote | None]) -> None:
        """Dynamic selection's votes for a community it has not finished rating."""
        if self._plan_unrecorded and self._recorder is not None:
            self._recorder.voted(community_id, votes)

    def _take_recorder(self) -> RunRecorder | None:
        """The run's recorder, which nothing reports to any more."""
        recorder, self._recorder = self._recorder, None
        if self._next_tick is not None:
            self._next_tick.cancel()
        return recorder

    def _finish_recording(self, result: SearchResult, recorder: RunRecorder | None = None) -> None:
        """`recorder`: the run's, taken from it on the loop (this may run off it)."""
        if self.finished_at is None:
            self.finished_at = self.wall_clock().isoformat()
        recorder = recorder or self._take_recorder()
        if recorder is None:
            return
        recorder.finish(result, self.finished_at)
        if recorder.error is not None:
            self.on_warning(f"warning: {recorder.error}; the run's record is incomplete")

    def _abandon(self) -> None:
        recorder = self._take_recorder()
        if recorder is not None and self.search is not None:
            recorder.abandon(self.search.batches, self.search.reduce.attempts)

    def document(self) -> dict[str, Any]:
        """The run's JSON: `query --json`, and what `runs show` gives for it later."""
        assert self.result is not None
        return run_document(
            self.result,
            run_id=self.run_id,
            parent_run_id=self.parent_run_id,
            started_at=self.started_at,
            finished_at=self.finished_at,
            batch_models=self.batch_models,
        )

    def cancel(self) -> None:
        self.cancel_event.set()

    def batch(self, index: int) -> BatchResult | None:
        """One Map batch as it stands (a copy), while the run goes or after it."""
        if self.result is not None:
            return self.result.batches[index]
        if self.search is not None:
            return self.search.batches[index].model_copy(deep=True)
        return None

    def failed(self, error: BaseException, request: SearchRequest | None = None) -> SearchResult:
        """The run as far as it went, `failed` with the error in words."""
        request = request or self.request
        assert request is not None
        self.result = failed_result(request, self.plan, self.search, error)
        self._finish_recording(self.result)
        return self.result
