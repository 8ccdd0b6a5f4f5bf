"""Retrieval options: resolution (request > user defaults > fallback) and validation (SPEC §3.1)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import InputError

FALLBACK_DEFAULTS: dict[str, int] = {
    "map_budget": 8000,
    "reduce_budget": 8000,
    "map_reserve": 512,
    "reduce_reserve": 1024,
    "concurrency": 4,
}
POSITIVE = ("map_budget", "reduce_budget", "concurrency")
NON_NEGATIVE = ("map_reserve", "reduce_reserve")


def flag(name: str) -> str:
    """The command-line spelling of an option: map_budget -> --map-budget."""
    return "--" + name.replace("_", "-")


class SearchOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    map_budget: int = FALLBACK_DEFAULTS["map_budget"]
    reduce_budget: int = FALLBACK_DEFAULTS["reduce_budget"]
    map_reserve: int = FALLBACK_DEFAULTS["map_reserve"]
    reduce_reserve: int = FALLBACK_DEFAULTS["reduce_reserve"]
    concurrency: int = FALLBACK_DEFAULTS["concurrency"]

    @property
    def map_prompt_budget(self) -> int:
        return self.map_budget - self.map_reserve

    @property
    def reduce_prompt_budget(self) -> int:
        return self.reduce_budget - self.reduce_reserve


def parse_option(name: str, value: Any) -> int:
    """One option's value as an int, or InputError naming the option."""
    kind = "a positive integer" if name in POSITIVE else "a non-negative integer"
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        number = int(value.strip())
    if number is None or number < (1 if name in POSITIVE else 0):
        raise InputError(f"{flag(name)} must be {kind}, got {value!r}")
    return number


def resolve_options(
    request: Mapping[str, Any | None], defaults: Mapping[str, Any | None] | None = None
) -> SearchOptions:
    """Each option from the request, else the user's defaults, else the fallback; validated."""
    defaults = defaults or {}
    unknown = sorted(set(request) - set(FALLBACK_DEFAULTS)) + sorted(set(defaults) - set(FALLBACK_DEFAULTS))
    if unknown:
        raise InputError(f"unknown retrieval option {unknown[0]!r}")
    values: dict[str, int] = {}
    for name, fallback in FALLBACK_DEFAULTS.items():
        chosen = request.get(name)
        if chosen is None:
            chosen = defaults.get(name)
        values[name] = fallback if chosen is None else parse_option(name, chosen)
    options = SearchOptions(**values)
    if options.map_prompt_budget <= 0:
        raise InputError(
            f"--map-budget ({options.map_budget}) must exceed --map-reserve ({options.map_reserve})"
        )
    if options.reduce_prompt_budget <= 0:
        raise InputError(
            f"--reduce-budget ({options.reduce_budget}) must exceed --reduce-reserve ({options.reduce_reserve})"
        )
    return options
