"""SPEC §3.4: shuffle, split over code points, pack greedily."""

import random

import pytest

from graphrag_tui.engine.batcher import CommunityText, PartRef, build_batches, fisher_yates, split_community
from graphrag_tui.engine.tokens import TextSize
from graphrag_tui.errors import InputError

TS_TEXT = "Shared trend. " * 120
TS_SKELETON = "Question: explain the global trend."


def my_fisher_yates(items, random_fn):
    out = list(items)
    i = len(out) - 1
    while i > 0:
        j = int(random_fn() * (i + 1))
        out[i], out[j] = out[j], out[i]
        i -= 1
    return out


# -- the graphrag-ts example ------------------------------------------------------------------


def test_graphrag_ts_example() -> None:
    batches = build_batches([CommunityText(id="community-1", text=TS_TEXT)], TS_SKELETON, 80, lambda: 0)
    assert len(batches) == 8
    segments = []
    for n, batch in enumerate(batches, 1):
        header = f"[Community ID: community-1 | summary part {n}]\n"
        assert batch.index == n - 1
        assert batch.content.startswith(header)
        assert batch.community_ids == ("community-1",)
        assert batch.parts == (PartRef(community_id="community-1", part=n),)
        segments.append(batch.content[len(header) :])
    assert [len(s) for s in segments] == [233] * 7 + [49]
    assert "".join(segments) == TS_TEXT
    assert segments[0] == TS_TEXT[:233]


def test_graphrag_ts_example_split_directly() -> None:
    parts = split_community(CommunityText(id="community-1", text=TS_TEXT), TextSize.of(TS_SKELETON), 80)
    assert [part.ref.part for part in parts] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [len(part.text) for part in parts] == [233] * 7 + [49]
    assert [part.size for part in parts] == [TextSize(233, 0)] * 7 + [TextSize(49, 0)]
    # 35 (skeleton) + 1 + 51 (header sized for part 9999999) + 233 = 320 = 80 * 4: the longest fit.


def test_text_that_fits_is_one_part() -> None:
    parts = split_community(CommunityText(id="c", text="short"), TextSize.of("Q"), 80)
    assert parts == [(PartRef(community_id="c", part=1), "short", TextSize(5, 0))]


def test_split_counts_code_points_not_utf16_units() -> None:
    # "Q" + "\n" (2) + header of "e" sized for part 9999999 (41) = 43 ASCII = 10.75 tokens;
    # each astral code point adds 1/1.8: two fit in 12 (11.86), three do not (12.42).
    emoji = "\U0001f600"
    parts = split_community(CommunityText(id="e", text=emoji * 5), TextSize.of("Q"), 12)
    assert [part.text for part in parts] == [emoji * 2, emoji * 2, emoji]
    assert [part.size for part in parts] == [TextSize(0, 2), TextSize(0, 2), TextSize(0, 1)]
    with pytest.raises(InputError, match="community e"):
        split_community(CommunityText(id="e", text=emoji), TextSize.of("Q"), 11)


# -- shuffle ----------------------------------------------------------------------------------


def test_fisher_yates_with_zero() -> None:
    assert fisher_yates(["a", "b", "c", "d"], lambda: 0) == ["b", "c", "d", "a"]


def test_fisher_yates_does_not_mutate_input() -> None:
    items = ["a", "b", "c"]
    fisher_yates(items, lambda: 0)
    assert items == ["a", "b", "c"]


def test_fisher_yates_with_almost_one_is_identity() -> None:
    assert fisher_yates(list("abcde"), lambda: 0.999999) == list("abcde")


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 - 1])
def test_seeded_shuffle_matches_python_random(seed: int) -> None:
    items = [f"c{i}" for i in range(12)]
    expected = my_fisher_yates(items, random.Random(seed).random)
    assert fisher_yates(items, random.Random(seed).random) == expected
    # and the batcher packs in that order (one batch: everything fits)
    communities = [CommunityText(id=i, text=f"text of {i}") for i in items]
    batches = build_batches(communities, "Q", 10_000, random.Random(seed).random)
    assert len(batches) == 1
    assert [ref.community_id for ref in batches[0].parts] == expected
    assert list(batches[0].community_ids) == expected


def test_seed_42_order_is_pinned() -> None:
    # Python's Mersenne Twister for seed 42; floor(random() * (i + 1)) from the last index down.
    rng = random.Random(42)
    draws = [rng.random() for _ in range(3)]
    js = [int(d * (i + 1)) for d, i in zip(draws, [3, 2, 1], strict=True)]
    items = ["a", "b", "c", "d"]
    expected = list(items)
    for j, i in zip(js, [3, 2, 1], strict=True):
        expected[i], expected[j] = expected[j], expected[i]
    assert fisher_yates(items, random.Random(42).random) == expected


def test_no_shuffle_keeps_input_order() -> None:
    communities = [CommunityText(id=i, text="t") for i in ["z", "a", "m", "10", "9"]]
    batches = build_batches(communities, "Q", 10_000, None)
    assert batches[0].community_ids == ("z", "a", "m", "10", "9")


# -- packing ----------------------------------------------------------------------------------


def _abc() -> list[CommunityText]:
    return [
        CommunityText(id="b", text="x" * 20),
        CommunityText(id="a", text="y" * 20),
        CommunityText(id="c", text="z" * 20),
    ]


PART_B = "[Community ID: b | summary part 1]\n" + "x" * 20  # 55 chars
PART_A = "[Community ID: a | summary part 1]\n" + "y" * 20
PART_C = "[Community ID: c | summary part 1]\n" + "z" * 20


def test_greedy_packing_at_the_boundary() -> None:
    # "Q" + "\n" + PART_B + "\n" + PART_A = 1 + 1 + 55 + 1 + 55 = 113 chars = 28.25 -> 29 tokens.
    batches = build_batches(_abc(), "Q", 29, None)
    assert [(b.index, b.content, b.community_ids, b.parts) for b in batches] == [
        (
            0,
            PART_B + "\n" + PART_A,
            ("b", "a"),
            (PartRef(community_id="b", part=1), PartRef(community_id="a", part=1)),
        ),
        (1, PART_C, ("c",), (PartRef(community_id="c", part=1),)),
    ]


def test_batch_size_is_the_size_of_its_content() -> None:
    texts = [CommunityText(id="甲", text="中文 text"), CommunityText(id="b", text="plain")]
    (batch,) = build_batches(texts, "Q", 100, None)
    assert batch.content == "[Community ID: 甲 | summary part 1]\n中文 text\n[Community ID: b | summary part 1]\nplain"
    assert batch.size == TextSize.of(batch.content) == TextSize(80, 3)


def test_greedy_packing_flushes_when_the_next_part_does_not_fit() -> None:
    batches = build_batches(_abc(), "Q", 28, None)
    assert [b.content for b in batches] == [PART_B, PART_A, PART_C]
    assert [b.index for b in batches] == [0, 1, 2]
    # 1 + 1 + 3 * 55 + 2 = 169 chars = 42.25 -> 43 tokens: all three fit
    assert [b.content for b in build_batches(_abc(), "Q", 43, None)] == [PART_B + "\n" + PART_A + "\n" + PART_C]
    assert len(build_batches(_abc(), "Q", 42, None)) == 2


def test_greedy_packing_does_not_look_back() -> None:
    # b (55) and a long "l" do not fit together; "c" after "l" would have fit next to b,
    # but packing is greedy in order: b | l | c.
    communities = [
        CommunityText(id="b", text="x" * 20),
        CommunityText(id="l", text="w" * 60),
        CommunityText(id="c", text="z" * 20),
    ]
    batches = build_batches(communities, "Q", 29, None)
    assert [b.community_ids for b in batches] == [("b",), ("l",), ("c",)]


def test_small_last_part_shares_a_batch_with_the_next_community() -> None:
    # budget 80, skeleton "Q": 2 + 42 (header of "cm" sized for part 9999999) + segment <= 320
    # -> 276-char segments.
    communities = [CommunityText(id="cm", text="a" * 280), CommunityText(id="n", text="b" * 10)]
    batches = build_batches(communities, "Q", 80, None)
    assert len(batches) == 2
    assert batches[0].content == "[Community ID: cm | summary part 1]\n" + "a" * 276
    assert batches[1].content == "[Community ID: cm | summary part 2]\naaaa\n[Community ID: n | summary part 1]\n" + "b" * 10
    assert batches[1].community_ids == ("cm", "n")
    assert batches[1].parts == (PartRef(community_id="cm", part=2), PartRef(community_id="n", part=1))


def test_community_ids_are_deduplicated_in_order() -> None:
    communities = [
        CommunityText(id="a", text="1"),
        CommunityText(id="b", text="2"),
        CommunityText(id="a", text="3"),
    ]
    (batch,) = build_batches(communities, "Q", 10_000, None)
    assert batch.community_ids == ("a", "b")
    assert batch.parts == (
        PartRef(community_id="a", part=1),
        PartRef(community_id="b", part=1),
        PartRef(community_id="a", part=1),
    )


def test_no_communities_no_batches() -> None:
    assert build_batches([], "Q", 100, None) == []


# -- errors before anything -------------------------------------------------------------------


def test_skeleton_too_big_fails_before_shuffling() -> None:
    calls = []

    def rnd() -> float:
        calls.append(1)
        return 0.0

    with pytest.raises(InputError, match="map"):
        # 400 + "\n" = 401 chars = 100.25 -> 101 tokens > 100
        build_batches([CommunityText(id="a", text="t"), CommunityText(id="b", text="t")], "s" * 400, 100, rnd)
    assert calls == []


def test_budget_that_fits_no_code_point_names_the_community() -> None:
    long_id = "a-much-longer-community-id"
    communities = [CommunityText(id="a", text="xyz"), CommunityText(id=long_id, text="t")]
    # "Q\n" + sized header of "a" (41) + 1 char = 44 chars = 11 tokens: "a" splits into 1-char parts;
    # the long id's header alone is 66 chars: nothing fits.
    with pytest.raises(InputError) as info:
        build_batches(communities, "Q", 11, None)
    assert long_id in str(info.value)
    batches = build_batches([CommunityText(id="a", text="xyz")], "Q", 11, None)  # the list was consumed
    expected = [f"[Community ID: a | summary part {n}]\n{c}" for n, c in zip((1, 2, 3), "xyz", strict=True)]
    assert [b.content for b in batches] == expected


def test_skeleton_that_exactly_fits_but_leaves_no_room() -> None:
    # 399 + "\n" = 400 chars = 100 tokens: the skeleton fits, a part does not.
    with pytest.raises(InputError) as info:
        build_batches([CommunityText(id="only-one", text="t")], "s" * 399, 100, None)
    assert "only-one" in str(info.value)

