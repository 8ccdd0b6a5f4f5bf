"""SPEC §3.4: a plan (engine/plan.py): the Map texts shuffled by a seed that replays them,
packed into batches, each batch's prompt priced."""

import random

import pytest

from graphrag_tui.engine import plan as plan_module
from graphrag_tui.engine.batcher import fisher_yates
from graphrag_tui.engine.corpus import CommunityContext
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.plan import plan_search
from graphrag_tui.engine.prompts import map_skeleton
from graphrag_tui.engine.tokens import estimate_tokens


def _communities() -> list[CommunityContext]:
    return [CommunityContext(id=f"c{i:02d}", summary=f"Summary number {i} " * 3) for i in range(20)]


OPTIONS = SearchOptions(map_budget=300, map_reserve=0)


def test_plan_with_same_seed_is_identical() -> None:
    first = plan_search("what?", "ns", "leaf", _communities(), OPTIONS, seed=7)
    second = plan_search("what?", "ns", "leaf", _communities(), OPTIONS, seed=7)
    assert first.seed == 7
    assert len(first.batches) > 1
    assert first.batches == second.batches
    order = [r.community_id for b in first.batches for r in b.parts]
    assert order == fisher_yates([c.id for c in _communities()], random.Random(7).random)
    other = plan_search("what?", "ns", "leaf", _communities(), OPTIONS, seed=8)
    assert other.batches != first.batches


def test_unseeded_plan_reports_a_seed_that_reproduces_it() -> None:
    plan = plan_search("what?", "ns", "leaf", _communities(), OPTIONS)
    assert isinstance(plan.seed, int)
    replay = plan_search("what?", "ns", "leaf", _communities(), OPTIONS, seed=plan.seed)
    assert replay.batches == plan.batches


def test_unshuffled_plan_has_no_seed_and_keeps_order() -> None:
    plan = plan_search("what?", "ns", "leaf", _communities(), OPTIONS, shuffle=False)
    assert plan.seed is None
    assert [r.community_id for b in plan.batches for r in b.parts] == [c.id for c in _communities()]
    assert plan.summary_count == 20


def test_an_unseeded_plan_draws_its_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "draw_seed", lambda: 99)
    plan = plan_search("what?", "ns", "leaf", _communities(), OPTIONS)
    assert plan.seed == 99
    assert plan.batches == plan_search("what?", "ns", "leaf", _communities(), OPTIONS, seed=99).batches


def test_an_unshuffled_plan_ignores_a_seed() -> None:
    plan = plan_search("what?", "ns", "leaf", _communities(), OPTIONS, seed=7, shuffle=False)
    assert plan.seed is None
    assert [r.community_id for b in plan.batches for r in b.parts] == [c.id for c in _communities()]


def test_the_plan_keeps_the_request_and_prices_each_batch() -> None:
    plan = plan_search("what?", "ns", 2, _communities(), OPTIONS, seed=3)
    assert (plan.query, plan.namespace, plan.level, plan.seed, plan.options, plan.summary_count) == (
        "what?", "ns", 2, 3, OPTIONS, 20
    )
    assert [b.index for b in plan.batches] == list(range(len(plan.batches)))
    for batch in plan.batches:
        assert plan.prompt_tokens(batch) == estimate_tokens(map_skeleton("what?") + batch.content)
        assert plan.prompt_tokens(batch) <= OPTIONS.map_prompt_budget


def test_no_communities_plan_no_batches() -> None:
    plan = plan_search("what?", "ns", "leaf", [], OPTIONS, seed=1)
    assert (plan.summary_count, plan.batches, plan.seed) == (0, (), 1)


def test_draw_seed_is_a_32_bit_seed() -> None:
    seeds = {plan_module.draw_seed() for _ in range(50)}
    assert all(0 <= seed < 2**32 for seed in seeds)
    assert len(seeds) > 1
