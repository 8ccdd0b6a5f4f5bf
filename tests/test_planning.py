"""Planning from a store (graphrag_tui/planning.py): the batches of whole plans, pinned by
hash, so that making planning faster (store reads, Map text, batching) changes no byte."""

import json
from pathlib import Path

import pytest

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.planning import prepare_plan
from graphrag_tui.store import CommunityStore
from graphrag_tui.store import store as store_module
from tests.benchmarks.synthetic_store import build_synthetic_store, build_tree_store
from tests.test_batcher import batches_digest

QUESTION = "Which harbor tariffs and levee councils shaped the freight market?"


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("planning")
    return {
        "tree": build_tree_store(folder / "tree.db", 12, 4, 5),  # 12 roots x 4 branches x 5 leaves
        "synthetic": build_synthetic_store(folder / "synthetic.db", 3_000),
    }


# (store, level, map budget, seed) -> (summaries, (batches, sha256 of the batches)). Computed
# with the code before the speed-up, with the Map prompt whose format line describes the
# reply's fields (issue 9), and checked equal to the sped-up code's.
PINNED_PLANS = {
    ("tree", "leaf", 8000, 1): (240, (40, "5dfd361cc0bdfab6080e6b5a6eeb8e03859287b31ffbd0b8dafb9f4f3bfa6458")),
    ("tree", "leaf", 1200, None): (240, (480, "3ff938aed436b21b9352e4631c35c577dfc66193ccb9620ca0aefdd906b865c8")),
    ("tree", "leaf", 1200, 7): (240, (480, "7e2724a85ad41768a8c3b0f85133cd788a788dcee60e7b79d2cf563282c53bc3")),
    ("tree", 1, 8000, 1): (48, (24, "7d1638f6e3590d78224961082f80b74fe2b4c739497b2eb81628fcbf1a387e98")),
    ("tree", 1, 1200, None): (48, (160, "df6d3f41e5cfb6fefb10efd0e96526797958067b7573cb306f15b0c600e89c29")),
    ("tree", 1, 1200, 7): (48, (160, "a961e73fd35012752c851b89fe6db22a2671ea2ceb4e740c4164b51e0d994532")),
    ("tree", 0, 8000, 1): (12, (24, "18e8b0a4f9bbee049d5bd932382e6ac541c942bc0ef304cc45e461cbecf50f2e")),
    ("tree", 0, 1200, None): (12, (136, "e8a1e2ed54cc73b3adbcb5b25d9b728e93bae335ac5382e08d320cba25f972db")),
    ("tree", 0, 1200, 7): (12, (136, "f8f7e5ac697786f0c8181f7f2f9d261aa94b7782e6642241c50b32e8e58a09cd")),
    ("synthetic", "leaf", 8000, 1): (2640, (490, "b55e42620fa40ebcf4ede645e335db6d41cfd89f103777fc66ec12edf77f1512")),
    ("synthetic", "leaf", 1200, None): (2640, (5280, "c85ed1508440dfa20b067c61e197841d3eaf00b8f1ac060c179e64bfbd3d9b1b")),
    ("synthetic", "leaf", 1200, 7): (2640, (5280, "25c7231d3323d965a2e86156b2dcdcc9459cab6beea0ebc5a6a020a984129938")),
    ("synthetic", 1, 8000, 1): (300, (550, "9cccb701e9e21f7fc8238b8fc6edfd62aad51324f6339052dc53cc4d228642ee")),
    ("synthetic", 1, 1200, None): (300, (3207, "e10f8746c6ec0237bcac0c04ad5680f46f4f4dd6ce969a4169289ca831bf27e9")),
    ("synthetic", 1, 1200, 7): (300, (3207, "9d93993e59c2764d8dec85a8f804e5ff4b5e0895ae9a9b7d30d3cd57bf112562")),
    ("synthetic", 0, 8000, 1): (60, (430, "25fcb77cb3f5e98f59ae60b0c3ca6e9abd307e59db9ecb5fc25babfba7c54d22")),
    ("synthetic", 0, 1200, None): (60, (3021, "a780a7a5a57d6e180390f1a3f01d28f47076fd84c76b0ea7ad5ee70a2e7a2244")),
    ("synthetic", 0, 1200, 7): (60, (3021, "c7f6988ca73313ae0ead1652cd0f413065f96c4d6afa0c1bf00c06f84db22f53")),
}


@pytest.mark.parametrize(("store", "level", "budget", "seed"), list(PINNED_PLANS))
def test_plans_are_pinned(stores: dict[str, Path], store: str, level, budget: int, seed: int | None) -> None:
    with CommunityStore.open(stores[store]) as opened:
        plan = prepare_plan(opened, QUESTION, namespace=None, level=level, seed=seed, shuffle=seed is not None,
                            options=SearchOptions(map_budget=budget, map_reserve=0))
    assert (plan.summary_count, batches_digest(list(plan.batches))) == PINNED_PLANS[store, level, budget, seed]


@pytest.mark.parametrize("level", ["leaf", 1, 0])
def test_small_read_groups_give_the_same_plans(stores: dict[str, Path], level, monkeypatch: pytest.MonkeyPatch) -> None:
    # The store expands communities a few thousand leaves at a time; groups of 7 leaves put
    # group ends everywhere (mid-level, between a root's leaves and the next root's).
    monkeypatch.setattr(store_module, "_GROUP_LEAVES", 7)
    for store in ("tree", "synthetic"):
        with CommunityStore.open(stores[store]) as opened:
            plan = prepare_plan(opened, QUESTION, namespace=None, level=level, seed=None, shuffle=False,
                                options=SearchOptions(map_budget=1200, map_reserve=0))
        assert (plan.summary_count, batches_digest(list(plan.batches))) == PINNED_PLANS[store, level, 1200, None]


def test_a_root_with_many_leaves_does_not_bring_the_whole_store_into_memory(
    stores: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claims are read a group of descendant leaves at a time. The groups used to count
    # communities, so at level 0 (each root standing for 20 leaves here, 900 in the issue's
    # store) one group held every claim of the store.
    monkeypatch.setattr(store_module, "_GROUP_LEAVES", 30)
    asked: list[int] = []
    read_claims = CommunityStore._leaf_claims

    def counting(self: CommunityStore, leaf_ids: str, names: dict[str, str]) -> dict:
        asked.append(len(json.loads(leaf_ids)))
        return read_claims(self, leaf_ids, names)

    monkeypatch.setattr(CommunityStore, "_leaf_claims", counting)
    with CommunityStore.open(stores["tree"]) as opened:
        communities = opened.select_communities("synthetic", 0)
    assert [len(c.claims) for c in communities] == [200] * 12
    assert asked == [40] * 6  # two roots (20 leaves each) reach 30 leaves: 6 reads of 40 leaves
