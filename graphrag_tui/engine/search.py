"""Global search (SPEC §3): one run of a plan against a model. Map's worker pool fills the
batches, Reduce answers from the useful ones, and the run ends with one of the outcomes of
SPEC §3.7. The stages live in map_stage.py and reduce_stage.py; both call the model through
retry.py."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from .events import Event, EventReporter, Finished, Planned, SelectionFinished
from .failures import failed_batch_lines, for_log, internal_error, map_failure_summary
from .map_stage import MapStage
from .plan import SearchPlan
from .ports import ChatModel
from .rate_limits import RateLimits
from .reduce_stage import ReduceStage
from .replies import js_number
from .result import Attempt, BatchResult, ReduceReport, SearchResult, SelectedAnswer, Status
from .retry import LongResponseHook, ModelCaller
from .selection import Rating, SelectionNode, SelectionOptions, SelectionReport, Vote, at_least_rank
from .selection_stage import DynamicSelection
from .throttle import Throttle
from .usage import Cost, Prices, Usage, UsageMeter

log = logging.getLogger("graphrag_tui.engine")

T = TypeVar("T")
#: Plans the Map batches of the communities dynamic selection chose (a store read).
Replan = Callable[[list[str]], Awaitable[SearchPlan]]


def count_paid(meter: UsageMeter, batches: Sequence[BatchResult], reduce_attempts: Sequence[Attempt]) -> None:
    """Adds to `meter` the usage the attempts reported: a run resumed (its calls before were
    paid for), or one read back before it ended."""
    for batch in batches:
        for attempt in batch.attempts:
            if attempt.usage is not None:
                meter.add(attempt.usage, batch.prompt_tokens, earlier=True)
    for attempt in reduce_attempts:
        if attempt.usage is not None:
            meter.add(attempt.usage, None, earlier=True)


def utc_now() -> datetime:
    return datetime.now(UTC)


class _Cancelled(Exception):
    pass


class GlobalSearch:
    """One run of a plan against a model. Events go to `on_event` as they happen.

    No reply and no exception while handling one batch ends the run: it fails that attempt
    or batch (`internal` for an unexpected exception), and Reduce likewise. Text from the
    model enters with lone surrogates repaired (U+FFFD); raw responses are kept capped.
    `batches`, `reduce` and `selected` hold the run so far, also when it breaks.

    `prior`: batches already finished (a re-run keeps its parent's answers, a resume what
    finished before): they are kept as given, only the others are sent, and Reduce ranks
    them all together. `prior_paid`: the prior batches were paid for in this same run (a
    resume), so their usage counts toward its totals and its cost limit, but for
    `prior_unpaid` (a resumed re-run's batches kept from its parent); a re-run's parent paid
    for them, so they do not. `earlier_attempts`: a resumed run's attempts of batches
    it sends again (each went on after them when the run stopped): they stay first in the
    batch's attempts (its new ones numbered on from them), and count as paid with
    `prior_paid`; `earlier_reduce_attempts` the
    same for its Reduce call (their prompt was this run's Reduce prompt: Reduce starts only
    once every batch has ended, and a resume sends none of them again).

    `selection`: how the plan's communities were chosen (recorded in the result). With
    `dynamic` (the communities of the namespace to rate, and `replan`, which plans the
    chosen ones), the run first rates communities with the model (selection_stage.py) and
    Maps what it kept: `plan` is then only the question, namespace and options.
    `known_ratings`: ratings a resumed run made before it stopped, not asked again (with
    `prior_paid`, `earlier_ratings_paid` is what their calls used, and the estimate of
    their prompts, counted as paid; `earlier_cost` what all the calls counted as paid
    cost, as priced when they were made: None prices them at `prices`); `known_votes` and
    `on_vote`: the votes of a rating not complete (DynamicSelection)."""

    def __init__(
        self,
        plan: SearchPlan,
        model: ChatModel,
        *,
        on_event: Callable[[Event], None] | None = None,
        cancel: asyncio.Event | None = None,
        timeout: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
        on_long_response: LongResponseHook | None = None,
        rate_limits: RateLimits | None = None,
        prices: Prices | None = None,
        max_cost: float | None = None,
        prior: Mapping[int, BatchResult] | None = None,
        prior_paid: bool = False,
        prior_unpaid: Collection[int] = (),
        earlier_attempts: Mapping[int, Sequence[Attempt]] | None = None,
        earlier_reduce_attempts: Sequence[Attempt] = (),
        earlier_ratings_paid: tuple[Usage, int] | None = None,
        earlier_cost: Cost | None = None,
        selection: SelectionReport | None = None,
        dynamic: tuple[Sequence[SelectionNode], SelectionOptions, Replan] | None = None,
        known_ratings: Sequence[Rating] = (),
        known_votes: Mapping[str, Sequence[Vote | None]] | None = None,
        on_vote: Callable[[str, list[Vote | None]], None] | None = None,
    ) -> None:
        self.plan = plan
        self.model = model
        self.on_event: Callable[[Event], None] = on_event or (lambda event: None)
        self.cancel = cancel or asyncio.Event()
        self.timeout = timeout
        self.clock = clock
        self.wall_clock = wall_clock
        self.on_long_response = on_long_response
        #: Every model call of the run passes this one gate (caps, 429s, concurrency).
        self.throttle = Throttle(rate_limits or RateLimits(), plan.options.concurrency)
        self.report = EventReporter(self.on_event, clock)
        #: The run's usage and spend; reaching `max_cost` cancels the run.
        self.meter = UsageMeter(prices, max_cost, on_limit=self.cancel.set,
                                earlier_cost=earlier_cost if prior_paid else None)
        self.selection = selection
        self.dynamic = dynamic
        self.selector: DynamicSelection | None = None if dynamic is None else DynamicSelection(
            plan.query, dynamic[0], dynamic[1], plan.options.concurrency, plan.prompts,
            known={rating.community_id: rating for rating in known_ratings}, known_votes=known_votes,
            on_vote=on_vote, budget=plan.options.map_budget,
        )
        self.batches: list[BatchResult] = []
        self._set_batches(plan)
        for index, batch in (prior or {}).items():
            self.batches[index] = batch.model_copy(deep=True)
        for index, attempts in (earlier_attempts or {}).items():
            if index < len(self.batches) and index not in (prior or {}):
                self.batches[index].attempts = [attempt.model_copy(deep=True) for attempt in attempts]
        self.reduce = ReduceReport(budget=plan.options.reduce_prompt_budget,
                                   attempts=[attempt.model_copy(deep=True) for attempt in earlier_reduce_attempts])
        #: The earlier Reduce attempts counted as paid, whose prompt's estimate is known once Reduce's is.
        self._unestimated_reduce_attempts = 0
        if prior_paid:
            count_paid(self.meter, [b for b in self.batches if b.index not in prior_unpaid], self.reduce.attempts)
            self._unestimated_reduce_attempts = sum(a.usage is not None for a in self.reduce.attempts)
            if earlier_ratings_paid is not None:
                self.meter.add(*earlier_ratings_paid, earlier=True)
            self.meter.check_limit()  # (what was spent before may reach it alone)
        self.to_send = [b.index for b in plan.batches if b.index not in (prior or {})]
        self.selected: list[SelectedAnswer] = []

    def _set_batches(self, plan: SearchPlan) -> None:
        """One BatchResult per batch of `plan`, in place (listeners hold the list)."""
        self.plan = plan
        self.batches[:] = [
            BatchResult(index=b.index, community_ids=b.community_ids, parts=b.parts, prompt_tokens=plan.prompt_tokens(b))
            for b in plan.batches
        ]

    async def _select(self, caller: ModelCaller) -> SearchResult | None:
        """Dynamic selection, then the plan of what it kept; a result when the run ends here."""
        assert self.dynamic is not None and self.selector is not None
        nodes, options, replan = self.dynamic
        selector = self.selector
        self.selection = SelectionReport(mode="dynamic")
        try:
            kept = await self._unless_cancelled(selector.run(caller))
        except _Cancelled:
            self.selection.ratings = list(selector.ratings)
            return self._finish("cancelled", detail=self._cancel_reason("community selection"))
        ranks = {node.id: node.rank for node in nodes}
        selected = at_least_rank(kept, ranks, options.min_rank)
        self.selection.ratings, self.selection.selected = list(selector.ratings), selected
        self.report(SelectionFinished(t=self.report.now(), rated_count=len(selector.ratings), selected_count=len(selected)))
        log.info("dynamic selection rated=%d selected=%d", len(selector.ratings), len(selected))
        if not selected:
            why = (f"no community rated at or above --rate-threshold {options.rate_threshold}" if not kept else
                   f"no community it kept has a rank of at least --min-rank {options.min_rank:g}")
            return self._finish("no_results", detail=f"dynamic selection chose no community: {why}")
        self._set_batches(await replan(selected))
        self.to_send = [b.index for b in self.plan.batches]
        return None

    async def run(self) -> SearchResult:
        self.report.start()
        report = self.report
        caller = ModelCaller(
            self.model, report, self.timeout, self.clock, self.wall_clock, self.on_long_response,
            throttle=self.throttle, meter=self.meter,
        )
        if self.dynamic is not None:
            ended = await self._select(caller)
            if ended is not None:
                return ended
        plan = self.plan
        workers = min(plan.options.concurrency, len(self.to_send))
        summaries, batch_count = plan.summary_count, len(plan.batches)
        report(Planned(t=report.now(), summary_count=summaries, batch_count=batch_count, workers=workers, seed=plan.seed))
        log.info("community level=%s summaries=%d map batches=%d", plan.level, plan.summary_count, len(plan.batches))
        for batch in plan.batches:
            log.info("map batch %d communities=%s", batch.index, ", ".join(batch.community_ids))
        if not plan.batches:
            return self._finish(
                "no_results",
                detail=f"no community of namespace {plan.namespace!r} at level {plan.level} has a summary"
                if self.selection is None else f"no community the {self.selection.mode} selection chose has a summary",
            )
        try:
            await self._unless_cancelled(MapStage(plan, self.batches, caller, self.to_send).run(workers))
        except _Cancelled:
            return self._finish("cancelled", detail=self._cancel_reason("Map"))
        failed = [b for b in self.batches if b.status == "failed"]
        log.info(
            "map scores=%s failed batches=%d",
            ", ".join(f"{b.index}:{js_number(b.usefulness)}" for b in self.batches if b.usefulness is not None),
            len(failed),
        )
        if len(failed) == len(self.batches):
            return self._finish("failed", error=map_failure_summary(self.batches))
        try:
            return await self._reduce_phase(ReduceStage(plan, caller, self.reduce))
        except Exception as error:  # a bug in Reduce must not lose the Map answers
            log.info("Reduce failed unexpectedly: %s", for_log(error))
            return self._finish("failed", error=f"Reduce failed: internal error: {internal_error(error)}")

    async def _reduce_phase(self, stage: ReduceStage) -> SearchResult:
        selected, content = stage.select(self.batches)
        self.selected = selected
        log.info("selected answers=%d", len(selected))
        detail = None
        if not any(c.decision != "zero_usefulness" for c in self.reduce.candidates):
            if not self.plan.prompts.general_knowledge:
                return self._finish("no_results", detail="no Map answer was useful: every usefulness was 0")
            # GraphRAG's allow_general_knowledge: Reduce is asked all the same, with no answers
            detail = "no Map answer was useful: the answer is the model's own knowledge (--general-knowledge)"
        elif not selected:
            return self._finish(
                "no_results", detail=f"no Map answer fits the reduce prompt budget ({self.reduce.budget} tokens)"
            )
        request = stage.request(selected, content)
        self.meter.estimated_prompt_tokens += (request.prompt_tokens or 0) * self._unestimated_reduce_attempts
        self._unestimated_reduce_attempts = 0
        try:
            answer = await self._unless_cancelled(stage.answer(request))
        except _Cancelled:
            return self._finish("cancelled", detail=self._cancel_reason("Reduce"))
        if answer is None:
            last = self.reduce.attempts[-1]
            why = "Reduce was rate limited past its wait" if last.error_kind == "rate_limited" else "Reduce failed twice"
            return self._finish("failed", error=f"{why}: {last.error}")
        failed = sum(b.status == "failed" for b in self.batches)
        return self._finish("partial" if failed else "completed", answer=answer, detail=detail)

    def usage_fields(self) -> dict[str, Any]:
        """The result's usage_total, estimated_prompt_tokens and cost, as of now."""
        meter = self.meter
        return {
            "usage_total": meter.total,
            "estimated_prompt_tokens": meter.estimated_prompt_tokens if meter.total is not None else None,
            "cost": meter.cost,
        }

    def _cancel_reason(self, stage: str) -> str:
        meter = self.meter
        if meter.limit_reached and meter.max_cost is not None and meter.cost is not None:
            return f"cost limit reached during {stage}: spent ${meter.cost.total:.4f} of --max-cost ${meter.max_cost:g}"
        return f"cancelled by the user during {stage}"

    async def _unless_cancelled(self, work: Awaitable[T]) -> T:
        """Run `work` until it ends or the cancel event is set (then raise _Cancelled)."""
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(self.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the caller itself was cancelled
            task.cancel()
            waiter.cancel()
            await asyncio.gather(task, waiter, return_exceptions=True)
            raise
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise _Cancelled
        return task.result()

    def _finish(
        self, status: Status, *, answer: str | None = None, error: str | None = None, detail: str | None = None
    ) -> SearchResult:
        plan = self.plan
        failed = sum(b.status == "failed" for b in self.batches)
        log.info("finished status=%s failed batches=%d", status, failed)
        for line in failed_batch_lines(self.batches):
            log.info("failed %s", line)
        result = SearchResult(
            query=plan.query,
            namespace=plan.namespace,
            level=plan.level,
            seed=plan.seed,
            status=status,
            answer=answer,
            error=error,
            detail=detail,
            summary_count=plan.summary_count,
            batch_count=len(plan.batches),
            failed_batch_count=failed,
            batches=self.batches,
            prompts=plan.prompts,
            reduce=self.reduce,
            selected_map_answers=self.selected,
            selection=self.selection,
            **self.usage_fields(),
        )
        self.report(Finished(t=self.report.now(), status=status, error=error))
        return result
