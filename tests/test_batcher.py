"""SPEC §3.4: shuffle, split over code points, pack greedily."""

import hashlib
import random
import time

import pytest

from graphrag_tui.engine.batcher import (
    AsciiCounter,
    CommunityText,
    PartRef,
    build_batches,
    fisher_yates,
    part_header,
    part_ref,
    split_community,
)
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


def test_part_ref_is_the_object_model_construct_makes() -> None:
    fast, slow = part_ref("c/1", 3), PartRef.model_construct(community_id="c/1", part=3)
    for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
        assert getattr(fast, name) == getattr(slow, name)
    assert type(fast) is PartRef
    assert fast == slow == PartRef(community_id="c/1", part=3)
    assert hash(fast) == hash(slow)
    assert fast.model_dump_json() == '{"community_id":"c/1","part":3}'
    assert fast.model_copy(update={"part": 4}) == PartRef(community_id="c/1", part=4)
    assert fast.model_fields_set == {"community_id", "part"}
    assert fast.model_fields_set is not part_ref("c/1", 3).model_fields_set  # a set of its own
    with pytest.raises(ValueError, match="frozen"):
        fast.part = 5


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


# -- batches pinned by hash -------------------------------------------------------------------
# The batches of fixed inputs, as today's batcher (which matches graphrag-ts's byte for byte)
# makes them. Any change to splitting or packing, however small, changes a digest.

PIN_SKELETON = "Question: which harbour tariffs shaped the freight market?\nAnswer as JSON."
CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 400)] + ["。", "、", "「", "」"]
MIXED = ["é", "ß", "\u0301", "\U0001f600", "\U00010348", "\x00", "\x1b", "\u202e", "\ud800", "ﬁ", " ", "\n"]


def _words(rng: random.Random, length: int) -> str:
    words = ["harbor", "grain", "ledger", "tariff", "convoy", "storm", "levee", "council", "union", "freight", "pier", "ferry"]
    out, size = [], 0
    while size < length:
        word = rng.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:length]


def _cjk(rng: random.Random, length: int) -> str:
    # Mostly CJK, with ASCII spaces and digits here and there, as real CJK summaries have.
    return "".join(rng.choice(CJK) if rng.random() < 0.85 else rng.choice(" 0123456789") for _ in range(length))


def _mixed(rng: random.Random, length: int) -> str:
    pick = (lambda: rng.choice("abcdefgh .,"), lambda: rng.choice(CJK), lambda: rng.choice(MIXED))
    return "".join(rng.choice(pick)() for _ in range(length))


def _boundary_texts(budget: int) -> list[CommunityText]:
    """Texts whose length is at, just under and just over the longest segment that fits, and
    multiples of it, for ASCII and non-ASCII text (where the float division matters)."""
    skeleton = TextSize.of(PIN_SKELETON) + (1, 0)
    texts = []
    for cid in ["b", "boundary-7", "境界"]:
        for char in ("a", "中", "\U0001f600"):
            # Every id of one kind has the same size, so its header has too.
            fixed = skeleton + TextSize.of(f"[Community ID: {cid}/{char}/0 | summary part 9999999]\n")
            unit = TextSize.of(char)
            longest = 0
            while (fixed + (unit.ascii * (longest + 1), unit.other * (longest + 1))).tokens <= budget:
                longest += 1
            lengths = (longest - 1, longest, longest + 1, 2 * longest - 1, 2 * longest, 2 * longest + 1, 3 * longest)
            texts += [CommunityText(f"{cid}/{char}/{n}", char * length) for n, length in enumerate(lengths)]
        # ASCII and CJK alternating in runs: the cut lands in either kind.
        for run in (1, 3, 17, 64):
            text = "".join(("x" * run) if i % 2 == 0 else ("中" * run) for i in range(4 * budget // run + 2))
            texts.append(CommunityText(f"{cid}/runs/{run}", text))
        texts.append(CommunityText(f"{cid}/empty", ""))
    return texts


def _pin_case(name: str) -> tuple[list[CommunityText | None], int]:
    rng = random.Random(name)
    if name == "ascii-oversized":
        return [CommunityText(f"a{i}", _words(rng, rng.randrange(1_500, 40_000))) for i in range(24)], 300
    if name == "cjk-oversized":
        return [CommunityText(f"中{i}", _cjk(rng, rng.randrange(700, 12_000))) for i in range(24)], 300
    if name == "mixed":
        return [CommunityText(f"m{i}", _mixed(rng, rng.randrange(10, 9_000))) for i in range(40)], 250
    if name == "many-small":
        return [CommunityText(f"s{i:04d}", _mixed(rng, rng.randrange(1, 160))) for i in range(3_000)], 2_000
    if name == "boundaries":
        return list(_boundary_texts(120)), 120
    raise AssertionError(name)


def batches_digest(batches: list) -> tuple[int, str]:
    """sha256 over every batch's index, content, parts (with their tokens) and community ids."""
    whole = hashlib.sha256()
    for batch in batches:
        whole.update(f"{batch.index}\x00".encode())
        whole.update(batch.content.encode("utf-8", "surrogatepass") + b"\x00")
        for ref, tokens in zip(batch.parts, batch.part_tokens, strict=True):
            whole.update(f"{ref.community_id}\x1f{ref.part}\x1f{tokens}\x1e".encode("utf-8", "surrogatepass"))
        whole.update("\x1d".join(batch.community_ids).encode("utf-8", "surrogatepass") + b"\x00")
    return len(batches), whole.hexdigest()


PINNED_BATCHES = {
    ("ascii-oversized", None): (378, "e5bdb12ec617720ba126e4bb6c8051a9a26aba331d6c85e3fa211e156b90703e"),
    ("ascii-oversized", 0): (378, "22611234c72a201ce8214c80f072a830420b9e0a3cecb6e1eb41f1167bc94d78"),
    ("ascii-oversized", 7): (378, "cff1c96eaefbe4f9d96bc673d2d1713540fe94d9520ffe3a0c5cd857951911be"),
    ("cjk-oversized", None): (245, "86a6e8d518154348fbf87b790fb2df419481c97fd98f4d02d9757d4cc24df820"),
    ("cjk-oversized", 0): (245, "99879f0cab4585ec7977128c9104f634881cdbf130fc60616afe8424422fbbc5"),
    ("cjk-oversized", 7): (245, "f2df55ecb4db219235fa07b9f16a92b9f6b9e38f1ac372a15ef04b035ae37125"),
    ("mixed", None): (379, "9999c8890f9983149070872232bc40ff0ac2a5c98db835782dbc506104c6f679"),
    ("mixed", 0): (379, "f6b2f09b1711b97fb7c8f4064b2d7653df34667e65da6d083737070b3ef55ea3"),
    ("mixed", 7): (379, "bad4b0eef88e702188da2032b9a3147d02be86f0b7a9bc36130cfe3979572f1c"),
    ("many-small", None): (67, "e929766abc0ff5e66be4469cff60ffcd16e01a746816b0aab224196ca6304d64"),
    ("many-small", 0): (67, "46534b978feece029fec0e846dae0218c8c7406007b895c05efcd6ae222c5b25"),
    ("many-small", 7): (67, "5fcdea095e0379b4735a175938e4ab7b06c16ac4ed86b5393145643a47928e60"),
    ("boundaries", None): (162, "1cc0c0f10d494f6ec20a8c3ba5f7f7ad1861b545470722460c00cb95d9c33124"),
    ("boundaries", 0): (162, "87043cda5dded90c11f1ca2d1ee61ea1fc7c4e5b97aa9a6ebe02761338eba539"),
    ("boundaries", 7): (162, "e3715cfedf475291bd737a9f6a4472471777da56e501c68db9000a111d544541"),
}
SWEEP_DIGEST = "d261c48971bd0b97b79a72ba8b6808fe4f5cfa49a2785917ce8201731b2154dd"


@pytest.mark.parametrize(("case", "seed"), list(PINNED_BATCHES))
def test_batches_are_pinned(case: str, seed: int | None) -> None:
    communities, budget = _pin_case(case)
    rng = None if seed is None else random.Random(seed).random
    assert batches_digest(build_batches(communities, PIN_SKELETON, budget, rng)) == PINNED_BATCHES[case, seed]


def splits_digest(budgets: range) -> str:
    """sha256 over every part (id, number, text, size) of three texts split at each budget:
    sweeping the budget moves the cut across every mix of ASCII and other code points, and
    across budgets where the float estimate lands exactly on an integer."""
    rng = random.Random("sweep")
    texts = [CommunityText("ascii", _words(rng, 2_000)), CommunityText("中文", _cjk(rng, 1_200)),
             CommunityText("mixed", _mixed(rng, 1_500))]
    digest = hashlib.sha256()
    for budget in budgets:
        for text in texts:
            for ref, segment, size in split_community(text, TextSize.of(PIN_SKELETON), budget):
                digest.update(f"{budget}|{ref.community_id}|{ref.part}|{size.ascii}|{size.other}|".encode())
                digest.update(segment.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()


def test_splits_are_pinned_over_a_sweep_of_budgets() -> None:
    assert splits_digest(range(45, 400)) == SWEEP_DIGEST


@pytest.mark.parametrize("kind", ["ascii", "mixed"])
def test_splitting_a_huge_text_takes_no_python_step_per_character(kind: str) -> None:
    # 5 million code points: a Python step per character took 3.5 s (and a list of 5
    # million ints); the split now slices and counts in C: a few hundredths of a second
    # for ASCII, about a tenth for mixed text, so the bound is wide for a loaded machine.
    phrase = "Claim about the harbor levee. " if kind == "ascii" else "Claim about the 港口 levee. "
    text = (phrase * 200_000)[:5_000_000]
    started = time.perf_counter()
    parts = split_community(CommunityText("huge", text), TextSize.of(PIN_SKELETON), 7_488)
    elapsed = time.perf_counter() - started
    assert "".join(part.text for part in parts) == text
    if kind == "ascii":  # every cut at the longest ASCII segment that fits
        longest = 4 * 7_488 - len(PIN_SKELETON) - 1 - len(part_header("huge", 9_999_999))
        assert [len(part.text) for part in parts] == [longest] * (len(parts) - 1) + [len(text) % longest]
    assert elapsed < 1.5, f"split took {elapsed:.2f} s"


def test_small_ascii_count_blocks_give_the_same_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # ASCII is counted per block of 4,096 code points; blocks of 7 put block ends in every
    # segment, so a wrong count at a block end would move a cut.
    monkeypatch.setattr(AsciiCounter, "BLOCK", 7)
    for case in ("cjk-oversized", "mixed", "boundaries"):
        communities, budget = _pin_case(case)
        assert batches_digest(build_batches(communities, PIN_SKELETON, budget, None)) == PINNED_BATCHES[case, None]
    assert splits_digest(range(45, 400)) == SWEEP_DIGEST


@pytest.mark.parametrize("block", [1, 2, 5, 4096])
def test_ascii_counter_counts_every_prefix(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AsciiCounter, "BLOCK", block)
    text = "ab中\U0001f600c\x00é" * 5 + "\ud800xyz"
    counter = AsciiCounter(text)
    assert [counter.before(n) for n in range(len(text) + 1)] == [
        sum(char < "\x80" for char in text[:n]) for n in range(len(text) + 1)
    ]
