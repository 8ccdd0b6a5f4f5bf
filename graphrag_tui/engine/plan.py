"""Planning a search (SPEC §3.4): the Map text of each community, shuffled and packed into
batches, with everything else decided before the first model call."""

from __future__ import annotations

import random
from collections.abc import Iterable
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from ..errors import InputError
from .batcher import CommunityText, MapBatch, build_batches
from .corpus import CommunityContext, MapTextParts
from .maptext import map_text
from .options import SearchOptions
from .prompts import DEFAULT_PROMPTS, Prompts, map_skeleton, reduce_skeleton
from .result import Level
from .tokens import NEWLINE, TextSize


class SearchPlan(BaseModel):
    """Everything decided before the first model call."""

    model_config = ConfigDict(frozen=True)

    query: str
    namespace: str
    level: Level
    seed: int | None
    options: SearchOptions
    summary_count: int
    batches: tuple[MapBatch, ...]
    #: The templates and the answer's form every prompt of the run is made from.
    prompts: Prompts = DEFAULT_PROMPTS

    def prompt_tokens(self, batch: MapBatch) -> int:
        return (_skeleton_size(self.query, self.prompts) + batch.size).tokens


@lru_cache(maxsize=8)
def _skeleton_size(query: str, prompts: Prompts) -> TextSize:
    """The Map prompt without content, measured once per query rather than once per batch."""
    return TextSize.of(map_skeleton(query, prompts))


def check_reduce_room(query: str, prompts: Prompts, budget: int) -> None:
    """A Reduce prompt budget that cannot fit the Reduce prompt itself is refused before any
    model call (SPEC §3.4): every Map call would be paid for, and then no answer could be
    sent to Reduce (and --general-knowledge would send a prompt over the budget)."""
    size = (TextSize.of(reduce_skeleton(query, prompts)) + NEWLINE).tokens
    if size > budget:
        raise InputError(
            f"the reduce prompt budget ({budget} tokens) cannot fit the Reduce prompt itself ({size} tokens): "
            "raise --reduce-budget or lower --reduce-reserve"
        )


def draw_seed() -> int:
    return random.SystemRandom().randrange(2**32)


def plan_search(
    query: str,
    namespace: str,
    level: Level,
    communities: Iterable[CommunityContext | MapTextParts],
    options: SearchOptions,
    *,
    seed: int | None = None,
    shuffle: bool = True,
    prompts: Prompts = DEFAULT_PROMPTS,
) -> SearchPlan:
    """Map texts and batches. An unseeded shuffled plan draws a seed so it can be replayed."""
    check_reduce_room(query, prompts, options.reduce_prompt_budget)
    if shuffle and seed is None:
        seed = draw_seed()
    texts: list[CommunityText | None] = [CommunityText(c.id, map_text(c)) for c in communities]
    summary_count = len(texts)
    rng = random.Random(seed).random if shuffle else None
    batches = build_batches(texts, map_skeleton(query, prompts), options.map_prompt_budget, rng)
    return SearchPlan(
        query=query,
        namespace=namespace,
        level=level,
        seed=seed if shuffle else None,
        options=options,
        summary_count=summary_count,
        batches=tuple(batches),
        prompts=prompts,
    )
