"""Reduce (SPEC §3.6): rank the Map answers and keep what fits the budget (engine/reduce.py
decides), report each decision, then one model call, retried like a Map batch, for the answer."""

from __future__ import annotations

import logging

from .events import ReduceCandidateDecided, ReduceStarted
from .plan import SearchPlan
from .ports import ChatRequest
from .prompts import prompt_text, reduce_messages, reduce_skeleton
from .reduce import select_for_reduce
from .replies import parse_reduce_reply
from .reply_schemas import REDUCE_REPLY_SCHEMA
from .result import BatchResult, ReduceReport, SelectedAnswer
from .retry import ModelCaller, call_with_retry
from .tokens import TextSize

log = logging.getLogger("graphrag_tui.engine")


class ReduceStage:
    """The Reduce step of one run; what it decides and every attempt go into `report`."""

    def __init__(self, plan: SearchPlan, caller: ModelCaller, reduce: ReduceReport) -> None:
        self.plan = plan
        self.caller = caller
        self.reduce = reduce

    def select(self, batches: list[BatchResult]) -> tuple[list[SelectedAnswer], str]:
        """The selected answers and the Reduce content made of them; each candidate's
        decision is recorded and reported."""
        report = self.caller.report
        skeleton = reduce_skeleton(self.plan.query, self.plan.prompts)
        candidates, selected, content = select_for_reduce(batches, skeleton, self.reduce.budget)
        self.reduce.candidates = candidates
        for c in candidates:
            report(
                ReduceCandidateDecided(
                    t=report.now(),
                    batch_index=c.batch_index,
                    usefulness=c.usefulness,
                    community_ids=c.community_ids,
                    decision=c.decision,
                )
            )
        return selected, content

    def request(self, selected: list[SelectedAnswer], content: str) -> ChatRequest:
        """The Reduce request, measured and reported as started."""
        plan, report = self.plan, self.caller.report
        messages = reduce_messages(plan.query, content, plan.prompts)
        prompt_tokens = TextSize.of(prompt_text(messages)).tokens
        self.reduce.prompt_tokens = prompt_tokens
        log.info("reduce prompt tokens=%d", prompt_tokens)
        budget = self.reduce.budget
        report(ReduceStarted(t=report.now(), selected_count=len(selected), prompt_tokens=prompt_tokens, budget=budget))
        return ChatRequest(
            stage="reduce",
            messages=messages,
            query=plan.query,
            content=content,
            max_tokens=plan.options.reduce_reserve or None,
            json_schema=REDUCE_REPLY_SCHEMA,
            prompt_tokens=prompt_tokens,
        )

    async def answer(self, request: ChatRequest) -> str | None:
        """The answer, or None when both attempts failed (each one is in the report)."""
        return await call_with_retry(
            self.caller, request, parse_reduce_reply, record=self.reduce.attempts, batch_index=None, worker=None
        )
