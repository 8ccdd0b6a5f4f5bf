"""Checks of a search request that need no model: query, namespace, level (SPEC §3.1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..arguments import ascii_integer, has_surrogates, shown
from ..errors import InputError
from .result import Level


def normalize_query(query: str) -> str:
    if has_surrogates(query):
        raise InputError("the question is not valid UTF-8")
    query = query.strip()
    if not query:
        raise InputError("the question is empty: type what you want to know")
    return query


def parse_level(text: str | int | None) -> Level:
    """`leaf` (the default) or a non-negative integer in ASCII digits."""
    if text is None:
        return "leaf"
    value: int | None = None
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str) and text.strip().lower() == "leaf":
        return "leaf"
    elif isinstance(text, str):
        value = ascii_integer(text)
    if value is None or value < 0:
        raise InputError(f"--level must be 'leaf' or a non-negative integer, got {shown(text)}")
    return value


#: Seeds are below 2^63: a run's seed is recorded (and compared) as a 64-bit integer.
MAX_SEED = 2**63


def parse_seed(text: str | None) -> int | None:
    """A seed of the shuffle: a non-negative integer in ASCII digits, or None (draw one)."""
    if text is None:
        return None
    seed = ascii_integer(text)
    if seed is None or not 0 <= seed < MAX_SEED:
        raise InputError(f"--seed must be a non-negative integer below 2^63, got {shown(text)}")
    return seed


def choose_namespace(requested: str | None, available: Sequence[str]) -> str:
    if requested is None:
        if len(available) == 1:
            return available[0]
        if not available:
            raise InputError("the store has no namespaces: it holds no communities")
        raise InputError(f"the store has {len(available)} namespaces; choose one with --namespace: {', '.join(available)}")
    if requested not in available:
        listed = ", ".join(available) or "none"
        raise InputError(f"unknown namespace {requested!r}; the store has: {listed}")
    return requested


def check_level(level: Level, namespace: str, levels: Mapping[int, int]) -> None:
    if level != "leaf" and level not in levels:
        present = ", ".join(str(n) for n in sorted(levels)) or "none"
        raise InputError(f"namespace {namespace!r} has no communities at level {shown(level)}; levels present: {present}")
