"""SPEC §3.1: option resolution (request > user defaults > fallback) and validation."""

import pytest

from graphrag_tui.engine.options import FALLBACK_DEFAULTS, MAX_CONCURRENCY, SearchOptions, resolve_options
from graphrag_tui.engine.request import parse_level, parse_seed
from graphrag_tui.errors import InputError

NAMES = ["map_budget", "reduce_budget", "map_reserve", "reduce_reserve", "concurrency"]
FLAGS = {
    "map_budget": "--map-budget",
    "reduce_budget": "--reduce-budget",
    "map_reserve": "--map-reserve",
    "reduce_reserve": "--reduce-reserve",
    "concurrency": "--concurrency",
}


def test_fallback_defaults() -> None:
    assert FALLBACK_DEFAULTS == {
        "map_budget": 8000,
        "reduce_budget": 8000,
        "map_reserve": 512,
        "reduce_reserve": 1024,
        "concurrency": 4,
    }
    options = resolve_options({})
    assert options == SearchOptions(map_budget=8000, reduce_budget=8000, map_reserve=512, reduce_reserve=1024, concurrency=4)
    assert options.map_prompt_budget == 7488
    assert options.reduce_prompt_budget == 6976


@pytest.mark.parametrize("name", NAMES)
def test_precedence_per_option(name: str) -> None:
    request_value, default_value = (3, 2)
    if name.endswith("budget"):
        request_value, default_value = 3000, 2000
    fallback = FALLBACK_DEFAULTS[name]
    assert getattr(resolve_options({}, {}), name) == fallback
    assert getattr(resolve_options({}, {name: default_value}), name) == default_value
    assert getattr(resolve_options({name: request_value}, {name: default_value}), name) == request_value
    assert getattr(resolve_options({name: request_value}), name) == request_value
    # None means "not given" at both levels
    assert getattr(resolve_options({name: None}, {name: default_value}), name) == default_value
    assert getattr(resolve_options({name: None}, {name: None}), name) == fallback
    # the others keep their fallbacks
    others = resolve_options({name: request_value})
    for other in NAMES:
        if other != name:
            assert getattr(others, other) == FALLBACK_DEFAULTS[other]


def test_mixed_sources() -> None:
    options = resolve_options(
        {"map_budget": 5000, "concurrency": None},
        {"map_budget": 6000, "reduce_budget": "7000", "concurrency": "2"},
    )
    assert options == SearchOptions(map_budget=5000, reduce_budget=7000, map_reserve=512, reduce_reserve=1024, concurrency=2)


@pytest.mark.parametrize("name", ["map_budget", "reduce_budget", "concurrency"])
@pytest.mark.parametrize("value", [0, -1, "0", "-5"])
def test_positive_options_reject_zero_and_negative(name: str, value) -> None:
    with pytest.raises(InputError) as info:
        resolve_options({name: value})
    assert FLAGS[name] in str(info.value)


@pytest.mark.parametrize("name", ["map_reserve", "reduce_reserve"])
def test_reserves_allow_zero_but_not_negative(name: str) -> None:
    assert getattr(resolve_options({name: 0}), name) == 0
    assert getattr(resolve_options({name: "0"}), name) == 0
    with pytest.raises(InputError) as info:
        resolve_options({name: -1})
    assert FLAGS[name] in str(info.value)


def test_zero_reserve_gives_whole_budget_to_the_prompt() -> None:
    options = resolve_options({"map_reserve": 0, "reduce_reserve": 0, "map_budget": 100, "reduce_budget": 50})
    assert options.map_prompt_budget == 100
    assert options.reduce_prompt_budget == 50


@pytest.mark.parametrize(("budget", "reserve"), [("map_budget", "map_reserve"), ("reduce_budget", "reduce_reserve")])
def test_budget_must_exceed_reserve(budget: str, reserve: str) -> None:
    with pytest.raises(InputError) as info:
        resolve_options({budget: 600, reserve: 600})
    assert FLAGS[budget] in str(info.value)
    with pytest.raises(InputError):
        resolve_options({budget: 600, reserve: 601})
    options = resolve_options({budget: 601, reserve: 600})
    assert getattr(options, budget) - getattr(options, reserve) == 1
    # the fallback reserve counts too: a 512-token map budget leaves no room for the prompt
    with pytest.raises(InputError):
        resolve_options({budget: FALLBACK_DEFAULTS[reserve]})


@pytest.mark.parametrize("name", NAMES)
def test_strings_from_env_or_config(name: str) -> None:
    big, small = (40, 20) if name == "concurrency" else (4000, 2000)
    assert getattr(resolve_options({}, {name: str(big)}), name) == big
    assert getattr(resolve_options({}, {name: f" {small} "}), name) == small
    assert getattr(resolve_options({name: str(big)}), name) == big


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", ["abc", "", "4.5", "1e3", "--4", "+-4", "4 000", "²", True, False, 4.0, [4]])
def test_bad_values_rejected_naming_the_flag(name: str, value) -> None:
    with pytest.raises(InputError) as info:
        resolve_options({}, {name: value})
    assert FLAGS[name] in str(info.value)


def test_the_request_value_is_validated_even_if_defaults_are_fine() -> None:
    with pytest.raises(InputError, match="--concurrency"):
        resolve_options({"concurrency": "many"}, {"concurrency": 2})


def test_unknown_option_rejected() -> None:
    with pytest.raises(InputError):
        resolve_options({"map_budgett": 10})


def test_concurrency_is_capped_at_256_wherever_it_comes_from() -> None:
    assert MAX_CONCURRENCY == 256
    assert resolve_options({"concurrency": 256}).concurrency == 256
    assert resolve_options({}, {"concurrency": "256"}).concurrency == 256
    for request, defaults, labels, name in [
        ({"concurrency": "257"}, {}, {}, "--concurrency"),
        ({}, {"concurrency": 100000}, {"concurrency": "GRAPHRAG_TUI_CONCURRENCY"}, "GRAPHRAG_TUI_CONCURRENCY"),
    ]:
        with pytest.raises(InputError) as info:
            resolve_options(request, defaults, labels)
        got = request.get("concurrency", defaults.get("concurrency"))
        assert str(info.value) == f"{name} must be at most 256 (parallel model calls), got {int(got)}"


@pytest.mark.parametrize("value", ["²", "١٢", "٣٠٠٠", "1\u200b", "9" * 5000])
def test_only_ascii_digits_are_numbers(value: str) -> None:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
    with pytest.raises(InputError) as info:
        resolve_options({"map_budget": value})
    assert str(info.value) == f"--map-budget must be a positive integer, got {shown}"


def test_a_default_is_named_by_its_label_and_a_request_by_its_flag() -> None:
    labels = {"map_budget": "config file c.toml: [retrieval] map_budget"}
    with pytest.raises(InputError) as info:
        resolve_options({}, {"map_budget": "x"}, labels)
    assert str(info.value) == "config file c.toml: [retrieval] map_budget must be a positive integer, got 'x'"
    with pytest.raises(InputError) as info:
        resolve_options({"map_budget": "y"}, {"map_budget": 900}, labels)
    assert str(info.value) == "--map-budget must be a positive integer, got 'y'"


@pytest.mark.parametrize(
    ("text", "level"), [(None, "leaf"), ("leaf", "leaf"), (" LEAF ", "leaf"), ("0", 0), (" 12 ", 12), ("+3", 3), (2, 2)]
)
def test_levels(text, level) -> None:
    assert parse_level(text) == level


@pytest.mark.parametrize("text", ["³", "١", "-1", "1.0", "top", "", "9" * 2000])
def test_bad_levels(text: str) -> None:
    with pytest.raises(InputError, match="^--level must be 'leaf' or a non-negative integer, got "):
        parse_level(text)


def test_seeds() -> None:
    assert (parse_seed(None), parse_seed("0"), parse_seed(" 42 ")) == (None, 0, 42)
    for text in ("²", "-1", "4.2", "x", "9" * 2000):
        with pytest.raises(InputError, match=r"^--seed must be a non-negative integer below 2\^63, got "):
            parse_seed(text)
