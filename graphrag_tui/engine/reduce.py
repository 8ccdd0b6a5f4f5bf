"""Choosing which Map answers go into the Reduce prompt (SPEC §3.6)."""

from __future__ import annotations

from collections.abc import Sequence

from .replies import js_number
from .result import BatchResult, ReduceCandidate, SelectedAnswer
from .tokens import BLANK_LINE, NEWLINE, TextSize


def reduce_block(answer: SelectedAnswer) -> str:
    ids = ", ".join(answer.community_ids)
    return f"[Usefulness: {js_number(answer.usefulness)}; Community IDs: {ids}]\n{answer.answer}"


def select_for_reduce(
    batches: Sequence[BatchResult], skeleton: str, budget: int
) -> tuple[list[ReduceCandidate], list[SelectedAnswer], str]:
    """Rank the answered batches by usefulness (descending, stable), then walk the ranking:
    a block goes in when the prompt stays within the budget, else it is skipped and the
    walk goes on. Zero-usefulness answers are listed last and never sent.

    Returns every candidate with its decision, the selected answers, and the Reduce content.
    """
    answered = [b for b in batches if b.status == "succeeded"]
    positive = sorted((b for b in answered if b.usefulness), key=lambda b: -b.usefulness)  # type: ignore[operator]
    zero = [b for b in answered if not b.usefulness]

    candidates: list[ReduceCandidate] = []
    selected: list[SelectedAnswer] = []
    blocks: list[str] = []
    prefix = TextSize.of(skeleton) + NEWLINE
    context = TextSize(0, 0)
    for batch in positive:
        answer = SelectedAnswer(answer=batch.answer or "", usefulness=batch.usefulness or 0, community_ids=batch.community_ids)
        block = reduce_block(answer)
        grown = context + BLANK_LINE + TextSize.of(block) if blocks else TextSize.of(block)
        fits = (prefix + grown).tokens <= budget
        if fits:
            blocks.append(block)
            selected.append(answer)
            context = grown
        candidates.append(
            ReduceCandidate(
                batch_index=batch.index,
                usefulness=answer.usefulness,
                community_ids=batch.community_ids,
                decision="selected" if fits else "over_budget",
            )
        )
    for batch in zero:
        candidates.append(
            ReduceCandidate(
                batch_index=batch.index,
                usefulness=batch.usefulness or 0,
                community_ids=batch.community_ids,
                decision="zero_usefulness",
            )
        )
    return candidates, selected, "\n\n".join(blocks)
