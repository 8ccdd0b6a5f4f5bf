"""What a user typed, read without the engine (the CLI checks its arguments with these
before it loads anything heavy; the engine re-exports them): whole numbers in ASCII digits,
values as messages quote them, text that is not UTF-8, an option's flag."""

from __future__ import annotations

import re
import reprlib


def ascii_integer(text: str) -> int | None:
    """The integer a string spells in ASCII digits (an optional sign, spaces around), else
    None: "²" or "١" (which str.isdigit and int accept) and numbers too long to convert."""
    text = text.strip()
    if not re.fullmatch("[+-]?[0-9]+", text) or len(text) > 1000:
        return None
    return int(text)


#: Longer numbers are not written out in digits (Python refuses past 4,300 of them).
_COUNTED_DIGITS = 4000
#: A container's repr with a few items of a few levels, made without visiting the rest.
_BOUNDED = reprlib.Repr()
_BOUNDED.maxlevel, _BOUNDED.maxlist, _BOUNDED.maxtuple, _BOUNDED.maxdict = 3, 6, 6, 4


def shown(value: object, limit: int = 40) -> str:
    """A value as an error message quotes it: its repr, cut to `limit` characters. Never the
    repr of a whole long text, a container (a YAML alias bomb repeats one list a billion
    times) or a number of thousands of digits."""
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, bool) or not isinstance(value, int):
        text = _BOUNDED.repr(value)
    elif abs(value) < 10**limit:
        text = repr(value)
    elif abs(value) < 10**_COUNTED_DIGITS:
        text = f"a {len(str(abs(value)))}-digit number"
    else:
        text = f"a number of over {_COUNTED_DIGITS:,} digits"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def has_surrogates(text: str) -> bool:
    """True when the text holds lone surrogates: bytes that were not UTF-8 (argv and the
    environment arrive decoded with surrogateescape) or a bad escape; they cannot be sent."""
    return re.search("[\ud800-\udfff]", text) is not None


def flag(name: str) -> str:
    """The command-line spelling of an option: map_budget -> --map-budget."""
    return "--" + name.replace("_", "-")
