"""Planning a search (SPEC §3.4): the Map text of each community, shuffled and packed into
batches, with everything else decided before the first model call."""

from __future__ import annotations

import random
from collections.abc import Iterable
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from .batcher import CommunityText, MapBatch, build_batches
from .corpus import CommunityContext, MapTextParts
from .maptext import map_text
from .options import SearchOptions
from .prompts import DEFAULT_PROMPTS, Prompts, map_skeleton
from .result import Level
from .tokens import TextSize


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
