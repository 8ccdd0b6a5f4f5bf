"""Checks of a search request that need no model: query, namespace, level (SPEC §3.1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import InputError
from .result import Level


def normalize_query(query: str) -> str:
    query = query.strip()
    if not query:
        raise InputError("the question is empty: type what you want to know")
    return query


def parse_level(text: str | int | None) -> Level:
    """`leaf` (the default) or a non-negative integer."""
    if text is None:
        return "leaf"
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str) and text.strip().lower() == "leaf":
        return "leaf"
    elif isinstance(text, str) and text.strip().isdigit():
        value = int(text.strip())
    else:
        raise InputError(f"--level must be 'leaf' or a non-negative integer, got {text!r}")
    if value < 0:
        raise InputError(f"--level must be 'leaf' or a non-negative integer, got {text!r}")
    return value


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
        raise InputError(f"namespace {namespace!r} has no communities at level {level}; levels present: {present}")
