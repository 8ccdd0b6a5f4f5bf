"""SPEC §3.3: ceil(non_ascii / 1.8 + ascii / 4) over code points."""

import pytest

from graphrag_tui.engine.tokens import BLANK_LINE, NEWLINE, TextSize, estimate_tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("hello world", 3),  # 11 / 4 = 2.75
        ("中文测试", 3),  # 4 / 1.8 = 2.22
        ("A中文", 2),  # 2 / 1.8 + 1 / 4 = 1.36
        ("中" * 9, 5),  # 9 / 1.8 = 5 exactly, not 6
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("a" * 400, 100),
        ("a" * 401, 101),
        ("é", 1),  # code point 233: not ASCII
        ("\x7f", 1),  # code point 127: ASCII
        ("中" * 18, 10),
        ("中" * 19, 11),
    ],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_astral_character_is_one_non_ascii_code_point() -> None:
    emoji = "\U0001f600"
    assert TextSize.of(emoji) == TextSize(0, 1)
    assert estimate_tokens(emoji) == 1  # 1 / 1.8
    # Two astral code points (four UTF-16 units in JavaScript) are still two code points.
    assert estimate_tokens(emoji * 2) == 2  # 2 / 1.8 = 1.11
    assert TextSize.of("a" + emoji * 9) == TextSize(1, 9)
    assert estimate_tokens("a" + emoji * 9) == 6  # 5 + 0.25


def test_text_size_counts() -> None:
    assert TextSize.of("") == TextSize(0, 0)
    assert TextSize.of("ab中\n") == TextSize(3, 1)
    assert NEWLINE == TextSize.of("\n")
    assert BLANK_LINE == TextSize.of("\n\n")


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("abc", "d"),  # 1 + 1 separately, 1 together
        ("abc", "de"),  # 5 ascii -> 2
        ("中" * 8, "中"),  # 9 CJK -> 5 (separately 5 + 1)
        ("中" * 8, "a"),  # 8/1.8 + 0.25 = 4.69 -> 5
        ("中" * 9, "abcd"),  # 5 + 1 = 6 exactly
        ("中" * 9, "abcde"),  # 5 + 1.25 -> 7
        ("", "hello world"),
        ("A", "中文"),
        ("", ""),
    ],
)
def test_sizes_add_like_concatenation(left: str, right: str) -> None:
    joined = TextSize.of(left) + TextSize.of(right)
    assert joined == TextSize.of(left + right)
    assert joined.tokens == estimate_tokens(left + right)


def test_adding_sizes_is_not_adding_token_counts() -> None:
    # ceil applies once, to the whole text.
    assert estimate_tokens("abc") + estimate_tokens("d") == 2
    assert (TextSize.of("abc") + TextSize.of("d")).tokens == 1
    assert (TextSize.of("abc") + NEWLINE).tokens == 1
    assert (TextSize.of("abc") + NEWLINE + NEWLINE).tokens == 2
    assert (TextSize.of("中" * 8) + TextSize(0, 1)).tokens == 5
