"""Unit tests of graphrag_tui/engine/request.py: the checks of a search request that need no
model (query, level, seed, namespace), with the exact line each bad input gets."""

from __future__ import annotations

import pytest

from graphrag_tui.engine.request import (
    ascii_integer,
    check_level,
    choose_namespace,
    has_surrogates,
    normalize_query,
    parse_level,
    parse_seed,
    shown,
)
from graphrag_tui.errors import InputError


def message(call, *args) -> str:
    with pytest.raises(InputError) as info:
        call(*args)
    return str(info.value)


# -- ascii_integer ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("42", 42), (" 7 ", 7), ("\t+3\n", 3), ("-12", -12), ("007", 7), ("9" * 1000, int("9" * 1000)),
     ("-" + "9" * 999, -int("9" * 999))],
)
def test_ascii_integer_reads_ascii_digits_with_a_sign_and_spaces(text: str, value: int) -> None:
    assert ascii_integer(text) == value


@pytest.mark.parametrize(
    "text",
    ["", " ", "+", "-", "²", "١", "٣", "１", "1.0", "1e3", "0x10", "1_000", "1 000", "--1", "+-1", "12a",
     "9" * 1001, "-" + "9" * 1000],
)
def test_ascii_integer_refuses_anything_else(text: str) -> None:
    """Other digits (which str.isdigit and int accept), other spellings, and numbers too long
    to convert cheaply."""
    assert ascii_integer(text) is None


# -- shown --------------------------------------------------------------------------------------


def test_shown_quotes_a_value_as_its_repr() -> None:
    assert [shown("abc"), shown(5), shown(-1), shown(4.5), shown(None), shown(True), shown(["A"])] == [
        "'abc'", "5", "-1", "4.5", "None", "True", "['A']"]


def test_shown_cuts_a_long_repr_to_the_limit() -> None:
    assert shown("x" * 38) == "'" + "x" * 38 + "'"  # 40 characters: kept whole
    assert shown("x" * 39) == "'" + "x" * 38 + "…"
    assert len(shown("y" * 500)) == 40
    assert shown("abcdef", limit=5) == "'abc…"
    assert shown("\x1b[2J") == "'\\x1b[2J'"


def test_shown_counts_the_digits_of_a_huge_integer_instead_of_printing_it() -> None:
    assert shown(10**39) == "1" + "0" * 39
    assert shown(10**40) == "a 41-digit number"
    assert shown(10**400) == "a 401-digit number"
    # The sign is not a digit: it was counted as one.
    assert shown(-(10**40)) == "a 41-digit number"
    assert shown(-(10**400)) == "a 401-digit number"
    assert shown(-(10**39)) == "-1" + "0" * 37 + "…"  # 41 characters, cut
    # Python refuses to write an integer of over 4,300 digits: it was an internal error
    assert shown(10**5000) == "a number of over 4,000 digits"


def test_shown_writes_a_few_items_of_a_container() -> None:
    """A YAML alias bomb nests one list in itself ten times, nine times each: its repr took
    gigabytes before it was cut to 40 characters."""
    bomb: list = ["lol"] * 9
    for _ in range(9):
        bomb = [bomb] * 9
    assert shown(bomb) == "[[[[...], [...], [...], [...], [...], […"
    assert (shown({"a": [1]}), shown(None), shown(2.5)) == ("{'a': [1]}", "None", "2.5")


# -- has_surrogates and normalize_query -------------------------------------------------------


def test_has_surrogates_finds_lone_surrogates_only() -> None:
    assert has_surrogates("caf\udce9") is True  # b"caf\xe9" decoded with surrogateescape
    assert has_surrogates("\ud800") is True
    assert has_surrogates("\udfff") is True
    assert has_surrogates("café 橋 😀 \u202e \x00") is False
    assert has_surrogates("") is False


def test_normalize_query_strips_the_question() -> None:
    assert normalize_query("  Who funds the bridge?\n") == "Who funds the bridge?"
    assert normalize_query("橋 😀") == "橋 😀"
    assert normalize_query("a\n b") == "a\n b"


@pytest.mark.parametrize("query", ["", " ", "\n\t ", "\u3000"])
def test_an_empty_question_is_refused(query: str) -> None:
    assert message(normalize_query, query) == "the question is empty: type what you want to know"


@pytest.mark.parametrize("query", ["caf\udce9", " \udcff ", "\ud83d"])
def test_a_question_that_is_not_utf8_is_refused(query: str) -> None:
    assert message(normalize_query, query) == "the question is not valid UTF-8"


# -- parse_level --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "level"),
    [(None, "leaf"), ("leaf", "leaf"), (" Leaf ", "leaf"), ("LEAF", "leaf"), ("0", 0), (" 12 ", 12), ("+3", 3),
     (0, 0), (2, 2)],
)
def test_parse_level(text: str | int | None, level: str | int) -> None:
    assert parse_level(text) == level


@pytest.mark.parametrize(
    ("text", "shown_as"),
    [("-1", "'-1'"), ("³", "'³'"), ("١", "'١'"), ("1.0", "'1.0'"), ("top", "'top'"), ("", "''"), ("leaves", "'leaves'"),
     (-1, "-1"), (True, "True"), (1.0, "1.0"), ("9" * 2000, "'" + "9" * 38 + "…"), (-(10**50), "a 51-digit number")],
)
def test_a_bad_level_gets_one_line_naming_it(text: object, shown_as: str) -> None:
    assert message(parse_level, text) == f"--level must be 'leaf' or a non-negative integer, got {shown_as}"


# -- parse_seed ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seed"), [(None, None), ("0", 0), (" 42 ", 42), ("+5", 5), ("4294967296", 4294967296),
                                           (str(2**63 - 1), 2**63 - 1)])
def test_parse_seed(text: str | None, seed: int | None) -> None:
    assert parse_seed(text) == seed


@pytest.mark.parametrize(
    ("text", "shown_as"),
    [("-1", "'-1'"), ("²", "'²'"), ("4.2", "'4.2'"), ("x", "'x'"), ("", "''"), ("9" * 2000, "'" + "9" * 38 + "…"),
     (str(2**63), f"'{2**63}'")],
)
def test_a_bad_seed_gets_one_line_naming_it(text: str, shown_as: str) -> None:
    assert message(parse_seed, text) == f"--seed must be a non-negative integer below 2^63, got {shown_as}"


# -- choose_namespace and check_level ------------------------------------------------------------


def test_the_only_namespace_is_chosen_when_none_is_asked_for() -> None:
    assert choose_namespace(None, ["harbour"]) == "harbour"


def test_an_asked_namespace_is_chosen_when_the_store_has_it() -> None:
    assert choose_namespace("b", ["a", "b", "c"]) == "b"
    assert choose_namespace("a", ("a",)) == "a"


def test_a_store_without_namespaces_is_refused() -> None:
    assert message(choose_namespace, None, []) == "the store has no namespaces: it holds no communities"
    assert message(choose_namespace, "x", []) == "unknown namespace 'x'; the store has: none"


def test_several_namespaces_need_a_choice() -> None:
    assert message(choose_namespace, None, ["a", "b"]) == "the store has 2 namespaces; choose one with --namespace: a, b"


def test_an_unknown_namespace_is_refused_with_those_the_store_has() -> None:
    assert message(choose_namespace, "c", ["a", "b"]) == "unknown namespace 'c'; the store has: a, b"
    assert message(choose_namespace, "A", ["a"]) == "unknown namespace 'A'; the store has: a"
    assert message(choose_namespace, "[b]\x1b", ["a"]) == "unknown namespace '[b]\\x1b'; the store has: a"


def test_check_level_accepts_leaf_and_the_levels_present() -> None:
    check_level("leaf", "ns", {})
    check_level(0, "ns", {0: 3, 1: 9})
    check_level(1, "ns", {0: 3, 1: 9})


def test_check_level_refuses_a_level_the_namespace_lacks() -> None:
    assert message(check_level, 2, "ns", {1: 9, 0: 3}) == "namespace 'ns' has no communities at level 2; levels present: 0, 1"
    assert message(check_level, 0, "ns", {}) == "namespace 'ns' has no communities at level 0; levels present: none"
    assert message(check_level, 10**45, "n", {0: 1}) == (
        "namespace 'n' has no communities at level a 46-digit number; levels present: 0")
