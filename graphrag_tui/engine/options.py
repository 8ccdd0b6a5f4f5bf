"""Retrieval options: resolution (request > user defaults > fallback) and validation (SPEC §3.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..arguments import ascii_integer, flag, has_surrogates, shown
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
#: Each Map worker holds a connection (a file descriptor) open: 100,000 of them exhaust the
#: process's descriptors and fail batches with ConnectError, so a higher value is refused.
MAX_CONCURRENCY = 256


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


def parse_option(name: str, value: Any, label: str | None = None) -> int:
    """One option's value as an int (ASCII digits only), or InputError naming the option:
    `label` (a config key or an environment variable), else its flag."""
    label = label or flag(name)
    kind = "a positive integer" if name in POSITIVE else "a non-negative integer"
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        number = ascii_integer(value)
    if number is None or number < (1 if name in POSITIVE else 0):
        raise InputError(f"{label} must be {kind}, got {shown(value)}")
    if name == "concurrency" and number > MAX_CONCURRENCY:
        raise InputError(f"{label} must be at most {MAX_CONCURRENCY} (parallel model calls), got {shown(number)}")
    return number


def resolve_options(
    request: Mapping[str, Any | None],
    defaults: Mapping[str, Any | None] | None = None,
    labels: Mapping[str, str] | None = None,
) -> SearchOptions:
    """Each option from the request, else the user's defaults, else the fallback; validated.

    `labels` names where a default came from (a config key, an environment variable), for
    messages; a request value or a fallback is named by its flag."""
    defaults = defaults or {}
    labels = labels or {}
    unknown = sorted(set(request) - set(FALLBACK_DEFAULTS)) + sorted(set(defaults) - set(FALLBACK_DEFAULTS))
    if unknown:
        raise InputError(f"unknown retrieval option {unknown[0]!r}")
    values: dict[str, int] = {}
    names: dict[str, str] = {}
    for name, fallback in FALLBACK_DEFAULTS.items():
        chosen, names[name] = request.get(name), flag(name)
        if chosen is None and defaults.get(name) is not None:
            chosen, names[name] = defaults[name], labels.get(name, flag(name))
        values[name] = fallback if chosen is None else parse_option(name, chosen, names[name])
    options = SearchOptions(**values)
    for budget, reserve in (("map_budget", "map_reserve"), ("reduce_budget", "reduce_reserve")):
        if values[budget] <= values[reserve]:
            where = names[budget].rpartition(": ")[0]  # "config file P" when from a config file
            reserve_name = names[reserve]
            if where and reserve_name.startswith(where + ": "):  # the same file: named once
                reserve_name = reserve_name.removeprefix(where + ": ")
            raise InputError(
                f"{names[budget]} ({shown(values[budget])}) must exceed {reserve_name} ({shown(values[reserve])})"
            )
    return options


#: Longest --response-type or --answer-language, in characters.
MAX_FORM_TEXT = 200


def form_text(value: str | None, label: str) -> str | None:
    """A --response-type or --answer-language value: one line of text, or None (not given)."""
    if value is None:
        return None
    text = value.strip()
    if not text or len(text) > MAX_FORM_TEXT or any(ord(c) < 32 or ord(c) == 127 for c in text) \
            or has_surrogates(text):
        raise InputError(f"{label} must be one line of 1 to {MAX_FORM_TEXT} characters, got {shown(value)}")
    return text
