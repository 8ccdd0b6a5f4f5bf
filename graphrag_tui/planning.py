"""From a store and a request to a search plan: the part of a run that needs the store.

Shared by the CLI and the app; everything here is checked before any model call.
"""

from __future__ import annotations

from dataclasses import dataclass

from .collector import collector_paused
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
from .engine.selection import SelectionNode, SelectionOptions, SelectionReport, at_least_rank, rollup
from .engine.selection_stage import check_rating_room
from .errors import InputError
from .store import CommunityStore


@dataclass(frozen=True)
class Selected:
    """What a selection mode chose before any model call (issue 15)."""

    #: The level the plan records (dynamic: the shallowest level, where its walk starts).
    level: Level
    #: How the communities were chosen, for the result (None: `level` without --min-rank).
    report: SelectionReport | None = None
    #: Exactly these communities (None: the level's, as SPEC §3.2 selects them).
    ids: list[str] | None = None
    #: Dynamic selection: the communities it may rate (their text not blank).
    nodes: list[SelectionNode] | None = None


def select_communities(
    store: CommunityStore, namespace: str, level: Level, levels: dict[int, int], selection: SelectionOptions
) -> Selected:
    """The communities of `selection`'s mode, with `--min-rank` applied; InputError when the
    mode cannot work on this namespace (rollup at `leaf` or without members, a rank filter
    without ranks)."""
    mode = selection.mode
    if mode == "rollup" and level == "leaf":
        raise InputError("rollup selection needs a level number, not 'leaf': --level sets the deepest level it rolls up to")
    if mode == "level" and selection.min_rank is None:
        return Selected(level)
    nodes = store.selection_nodes(namespace)
    if selection.min_rank is not None and all(n.rank is None for n in nodes):
        raise InputError(
            f"--min-rank needs each community's rank, and namespace {namespace!r} has none "
            "(import the GraphRAG output again with this version to keep each report's rank)"
        )
    if mode == "dynamic":
        return Selected(min(levels), SelectionReport(mode="dynamic"), [], [n for n in nodes if n.text.strip()])
    if mode == "rollup":
        if not any(n.members for n in nodes):
            raise InputError(
                f"rollup selection gives each entity to the deepest community whose members name it, and no "
                f"community of namespace {namespace!r} lists members (its members column is empty)"
            )
        ids = rollup(nodes, int(level))
    else:
        parents = {n.parent for n in nodes if n.parent is not None}
        ids = [n.id for n in nodes if (n.id not in parents if level == "leaf" else n.level == level)]
    ids = at_least_rank(ids, {n.id: n.rank for n in nodes}, selection.min_rank)
    return Selected(level, SelectionReport(mode=mode, selected=ids), ids)


def _scope(store: CommunityStore, namespace: str | None, level: Level) -> tuple[str, dict[int, int]]:
    """The namespace the plan reads (the store's only one when none is named) and its
    levels, the level checked against them."""
    levels = store.community_levels()
    chosen = choose_namespace(namespace, list(levels))
    check_level(level, chosen, levels[chosen])
    return chosen, levels[chosen]


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
    ids: list[str] | None = None,
) -> SearchPlan:
    """The plan of the level's communities, or of exactly `ids` (a selection's)."""
    query = normalize_query(query)
    chosen, _ = _scope(store, namespace, level)
    return _plan(store, query, chosen, level, options, seed, shuffle, prompts, ids)


def _plan(store: CommunityStore, query: str, namespace: str, level: Level, options: SearchOptions, seed: int | None,
          shuffle: bool, prompts: Prompts, ids: list[str] | None) -> SearchPlan:
    with collector_paused():
        communities = store.iter_map_parts(namespace, None if level == "leaf" else level, ids)
        return plan_search(query, namespace, level, communities, options, seed=seed, shuffle=shuffle, prompts=prompts)


def prepare_selected_plan(
    store: CommunityStore,
    query: str,
    *,
    namespace: str | None,
    level: Level,
    options: SearchOptions,
    seed: int | None,
    shuffle: bool,
    selection: SelectionOptions,
    prompts: Prompts = DEFAULT_PROMPTS,
) -> tuple[SearchPlan, Selected]:
    """The plan of what `selection` chose (dynamic: a plan with no batches yet, planned again
    once the model has rated), and the choice."""
    query = normalize_query(query)
    chosen, chosen_levels = _scope(store, namespace, level)
    selected = select_communities(store, chosen, level, chosen_levels, selection)
    if selected.nodes is not None:
        check_rating_room(query, prompts, options.map_budget)
    plan = _plan(store, query, chosen, selected.level, options, seed, shuffle, prompts, selected.ids)
    return plan, selected
