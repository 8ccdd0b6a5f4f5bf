"""A run's rate limits (issue 12): the caps on requests and tokens per minute, and how long
one batch may wait in all for 429s. Values from outside are checked here, as options.py
checks the retrieval options."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..arguments import ascii_integer, shown
from ..errors import InputError

#: Default of --max-rate-wait: what one batch may wait in all for 429s before it fails.
DEFAULT_MAX_RATE_WAIT = 300.0
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class RateLimits(BaseModel):
    """None: no cap. The caps count every request sent (Map, Reduce, retries, re-sends after
    a 429); a request's tokens are its estimated prompt tokens plus its output reserve."""

    model_config = ConfigDict(frozen=True)

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    #: Seconds: the total of one batch's (or the Reduce call's) 429 waits.
    max_rate_wait: float = DEFAULT_MAX_RATE_WAIT


def parse_per_minute(value: Any, label: str) -> int:
    """A cap per minute: a positive integer in ASCII digits; InputError naming `label`."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str):
        number = ascii_integer(value)
    if number is None or number <= 0:
        raise InputError(f"{label} must be a positive integer (per minute), got {shown(value)}")
    return number


def parse_max_rate_wait(value: Any, label: str) -> float:
    """Seconds, zero allowed (a 429 with any wait then fails the batch at once)."""
    seconds = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise InputError(f"{label} must be a non-negative number of seconds, got {shown(value)}")
    return seconds
