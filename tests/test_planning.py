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


# (store, level, map budget, seed) -> (summaries, (batches, sha256 of the batches))
PINNED_PLANS = {
    ("tree", "leaf", 8000, 1): (240, (40, "5dfd361cc0bdfab6080e6b5a6eeb8e03859287b31ffbd0b8dafb9f4f3bfa6458")),
    ("tree", "leaf", 1200, None): (240, (480, "e19e7999a7f25f69224d350895240c6fb7d4c6f940e89f4c43fc0a3242ccba11")),
    ("tree", "leaf", 1200, 7): (240, (480, "1984ac33930ca9504f15c4f17d007419405f5d5027c043e360ccac4a2bd621d9")),
    ("tree", 1, 8000, 1): (48, (24, "7d1638f6e3590d78224961082f80b74fe2b4c739497b2eb81628fcbf1a387e98")),
    ("tree", 1, 1200, None): (48, (160, "ad03674496b5b210f67ef93f03c5fb318f6d746fc2db145a00a7608ebb3a91e8")),
    ("tree", 1, 1200, 7): (48, (160, "3fe3ac82fab9170542bb7bd81dfe495488dc3cb6f5987cd38afc5bab121551cb")),
    ("tree", 0, 8000, 1): (12, (24, "fde5c30c9b193e36f8948f09ef2b6b9e10113e693227704860e33e8659c777a9")),
    ("tree", 0, 1200, None): (12, (136, "af699da975dcd7efce083920ba5f1e8b76ad7ffcea9cb38cad544e9febbd863b")),
    ("tree", 0, 1200, 7): (12, (136, "a0d5d131fa45380d1862505edcc307cb9b499caaec8e8d5c0c674751fd14e537")),
    ("synthetic", "leaf", 8000, 1): (2640, (489, "60812f6da7121d5e416c68a9e19630d78920f2181e98c37331c0fe9c53aa2ed3")),
    ("synthetic", "leaf", 1200, None): (2640, (5280, "5e9da64a1b0ba34744ea54b6c42a368c717358b287f94d82f78e28e445ef0f57")),
    ("synthetic", "leaf", 1200, 7): (2640, (5280, "bb3adbf1f1720c4eab25adbd652cc618543a87b8e6b758ad63913653fc91a1b2")),
    ("synthetic", 1, 8000, 1): (300, (550, "49aef12987735c9afa1179357e83e9fd141f13959a6764e447ae616a58df2b97")),
    ("synthetic", 1, 1200, None): (300, (3200, "a2f3783f99702a35beed3c1a2e22bda818dfa8d932cdb4088866efddcf2d7212")),
    ("synthetic", 1, 1200, 7): (300, (3200, "b774e319cd02fb5e0ecd1a712ab8d3453294c768cf372d7b173b31e28a64ae8d")),
    ("synthetic", 0, 8000, 1): (60, (430, "0693a019632f9ae40f82fab8b5ca13b72034b6d1d682ded0d2eaf8e7d1b00a5e")),
    ("synthetic", 0, 1200, None): (60, (3018, "25513ceab52a77ddd7cbaaf42899e723c7bffe8511cb54d9e40835d39cf46b49")),
    ("synthetic", 0, 1200, 7): (60, (3018, "d1af0d237ab1fb07d5687463ed3afba3b6e0a8d1a1e392fbbbc03f5b89b41b10")),
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
