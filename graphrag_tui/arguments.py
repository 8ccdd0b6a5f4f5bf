"""What a user typed, read without the engine (the CLI checks its arguments with these
before it loads anything heavy; the engine re-exports them): whole numbers in ASCII digits,
values as messages quote them, text that is not UTF-8, an option's flag."""

from __future__ import annotations

import re


def ascii_integer(text: str) -> int | None:
    """The integer a string spells in ASCII digits (an optional sign, spaces around), else
    None: "²" or "١" (which str.isdigit and int accept) and numbers too long to convert."""
    text = text.strip()
    if not re.fullmatch("[+-]?[0-9]+", text) or len(text) > 1000:
        return None
    return int(text)


def shown(value: object, limit: int = 40) -> str:
    """A value as an error message quotes it: its repr, cut to `limit` characters."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def has_surrogates(text: str) -> bool:
    """True when the text holds lone surrogates: bytes that were not UTF-8 (argv and the
    environment arrive decoded with surrogateescape) or a bad escape; they cannot be sent."""
    return re.search("[\ud800-\udfff]", text) is not None


def flag(name: str) -> str:
    """The command-line spelling of an option: map_budget -> --map-budget."""
    return "--" + name.replace("_", "-")
