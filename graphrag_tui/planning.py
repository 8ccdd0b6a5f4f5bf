"""From a store and a request to a search plan: the part of a run that needs the store.

Shared by the CLI and the app; everything here is checked before any model call.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from .engine import (
    DEFAULT_PROMPTS,
    Level,
    Prompts,
    SearchOptions,
    SearchPlan,
    check_level,
    choose_namespace,
    normalize_query,
    plan_search,
)
from .store import CommunityStore


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Planning a large store makes millions of objects that all live until it ends; the
    cyclic collector would walk them again and again for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def prepare_plan(
    store: CommunityStore,
    query: str,
    *,
    namespace: str | None,
    level: Level,
    options: SearchOptions,
    seed: int | None,
    shuffle: bool,
    prompts: Prompts = DEFAULT_PROMPTS,
) -> SearchPlan:
    query = normalize_query(query)
    levels = store.community_levels()
    chosen = choose_namespace(namespace, list(levels))
    check_level(level, chosen, levels[chosen])
    with _gc_paused():
        communities = store.iter_map_parts(chosen, None if level == "leaf" else level)
        return plan_search(query, chosen, level, communities, options, seed=seed, shuffle=shuffle, prompts=prompts)
