"""SPEC §3.6: ranking the Map answers and choosing what goes into the Reduce prompt."""

import math

from graphrag_tui.engine.prompts import reduce_skeleton
from graphrag_tui.engine.reduce import reduce_block, select_for_reduce
from graphrag_tui.engine.result import BatchResult, SelectedAnswer
from graphrag_tui.engine.tokens import estimate_tokens

QUERY = "What is the global trend?"


def batch(index: int, usefulness, answer: str = "ans", ids=("c",), status: str = "succeeded") -> BatchResult:
    return BatchResult(
        index=index,
        community_ids=tuple(ids),
        parts=(),
        prompt_tokens=1,
        usefulness=usefulness,
        answer=answer,
        status=status,
    )


def test_block_format() -> None:
    answer = SelectedAnswer(answer="Prices rose.", usefulness=33.5, community_ids=("a", "b"))
    assert reduce_block(answer) == "[Usefulness: 33.5; Community IDs: a, b]\nPrices rose."
    assert reduce_block(SelectedAnswer(answer="x", usefulness=80.0, community_ids=("z",))) == (
        "[Usefulness: 80; Community IDs: z]\nx"
    )


def test_blocks_are_joined_by_a_blank_line() -> None:
    batches = [batch(0, 33.5, "first", ("a", "b")), batch(1, 80, "second", ("c",))]
    candidates, selected, content = select_for_reduce(batches, "S", 10_000)
    assert content == "[Usefulness: 80; Community IDs: c]\nsecond\n\n[Usefulness: 33.5; Community IDs: a, b]\nfirst"
    assert [s.answer for s in selected] == ["second", "first"]
    assert [(c.batch_index, c.decision) for c in candidates] == [(1, "selected"), (0, "selected")]


def test_spec_example_long_top_answer_skipped_and_walk_goes_on() -> None:
    skeleton = reduce_skeleton(QUERY)
    assert skeleton.isascii()
    block_a = "[Usefulness: 90; Community IDs: c1]\n" + "x" * 400  # 436 chars
    block_b = "[Usefulness: 50; Community IDs: c2, c3]\nshort answer"  # 52 chars
    block_c = "[Usefulness: 10; Community IDs: c4]\n" + "y" * 100  # 136 chars
    block_d = "[Usefulness: 5; Community IDs: c5]\nz"  # 36 chars
    assert [len(b) for b in (block_a, block_b, block_c, block_d)] == [436, 52, 136, 36]
    # skeleton + "\n" + block_b + "\n\n" + block_d, to the token
    budget = math.ceil((len(skeleton) + 1 + 52 + 2 + 36) / 4)
    assert budget == math.ceil((len(skeleton) + 91) / 4)
    batches = [
        batch(0, 10, "y" * 100, ("c4",)),
        batch(1, 50, "short answer", ("c2", "c3")),
        batch(2, 90, "x" * 400, ("c1",)),
        batch(3, 5, "z", ("c5",)),
    ]
    candidates, selected, content = select_for_reduce(batches, skeleton, budget)
    assert [(c.batch_index, c.usefulness, c.community_ids, c.decision) for c in candidates] == [
        (2, 90, ("c1",), "over_budget"),
        (1, 50, ("c2", "c3"), "selected"),
        (0, 10, ("c4",), "over_budget"),
        (3, 5, ("c5",), "selected"),
    ]
    assert selected == [
        SelectedAnswer(answer="short answer", usefulness=50, community_ids=("c2", "c3")),
        SelectedAnswer(answer="z", usefulness=5, community_ids=("c5",)),
    ]
    assert content == block_b + "\n\n" + block_d
    assert estimate_tokens(skeleton + "\n" + content) == budget

    # One token less: the last block no longer fits; the short one still does.
    candidates, selected, content = select_for_reduce(batches, skeleton, budget - 1)
    assert [c.decision for c in candidates] == ["over_budget", "selected", "over_budget", "over_budget"]
    assert content == block_b

    # Room for everything: the long answer goes in first.
    big = math.ceil((len(skeleton) + 1 + 436 + 2 + 52 + 2 + 136 + 2 + 36) / 4)
    candidates, selected, content = select_for_reduce(batches, skeleton, big)
    assert [c.decision for c in candidates] == ["selected"] * 4
    assert content == "\n\n".join([block_a, block_b, block_c, block_d])
    candidates, _, _ = select_for_reduce(batches, skeleton, big - 1)
    assert [c.decision for c in candidates] == ["selected", "selected", "selected", "over_budget"]


def test_ranking_is_stable_for_equal_usefulness() -> None:
    batches = [batch(0, 50, "a"), batch(1, 70, "b"), batch(2, 50, "c"), batch(3, 70.0, "d"), batch(4, 50.0, "e")]
    candidates, selected, _ = select_for_reduce(batches, "S", 10_000)
    assert [c.batch_index for c in candidates] == [1, 3, 0, 2, 4]
    assert [s.answer for s in selected] == ["b", "d", "a", "c", "e"]


def test_zero_usefulness_listed_last_and_failed_batches_left_out() -> None:
    batches = [
        batch(0, 0, ""),
        batch(1, 20, "b"),
        batch(2, None, None, status="failed"),
        batch(3, 0.0, "irrelevant"),
        batch(4, 60, "e"),
        batch(5, None, None, status="cancelled"),
    ]
    candidates, selected, content = select_for_reduce(batches, "S", 10_000)
    assert [(c.batch_index, c.decision) for c in candidates] == [
        (4, "selected"),
        (1, "selected"),
        (0, "zero_usefulness"),
        (3, "zero_usefulness"),
    ]
    assert [s.answer for s in selected] == ["e", "b"]
    assert "irrelevant" not in content


def test_all_zero_selects_nothing() -> None:
    candidates, selected, content = select_for_reduce([batch(0, 0, ""), batch(1, 0, "")], "S", 10_000)
    assert [c.decision for c in candidates] == ["zero_usefulness", "zero_usefulness"]
    assert selected == []
    assert content == ""
