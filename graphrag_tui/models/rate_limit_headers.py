"""How long a server asks a client to wait, read from its response headers (issue 12).

A 429 announces its wait in one of these, in this order of precedence (the OpenAI Python
SDK reads the first two in this order):

- `retry-after-ms`: milliseconds (`1500`, `20.5`);
- `retry-after`: seconds (`3`, `1.5`) or an HTTP-date;
- `x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens`: when the request or token
  budget refills, as a duration (`6m0s`, `1s`, `20ms`, `1h2m3.5s`) or plain seconds; the
  larger of the two, since a request needs both.

Headers come from outside: a value that is not a finite, non-negative number of one of
these forms is ignored (the next header in the order decides), never an error.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping

from ..engine import RateWaitSource

#: A value longer than this is not a wait any server sends: ignored, unparsed.
_MAX_VALUE_CHARS = 64
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
#: A Go duration, as OpenAI sends it: numbers with units, largest first (`1h2m3.5s`).
_DURATION = re.compile(rf"(?:{_NUMBER}(?:h|ms|m|s|us|µs|μs|ns))+")
_DURATION_PART = re.compile(rf"({_NUMBER})(h|ms|m|s|us|µs|μs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_RESET_HEADERS: tuple[RateWaitSource, ...] = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")


def _finite(seconds: float) -> float | None:
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _plain_number(value: str) -> float | None:
    if not re.fullmatch(_NUMBER, value):
        return None
    return _finite(float(value))


def _usable(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value if 0 < len(value) <= _MAX_VALUE_CHARS else None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP-date; None when absent or bad."""
    value = _usable(value)
    if value is None:
        return None
    seconds = _plain_number(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def parse_retry_after_ms(value: str | None) -> float | None:
    """`retry-after-ms` as seconds."""
    value = _usable(value)
    milliseconds = _plain_number(value) if value is not None else None
    return None if milliseconds is None else milliseconds / 1000


def parse_reset(value: str | None) -> float | None:
    """An `x-ratelimit-reset-*` value as seconds: a duration (`6m0s`, `20ms`) or seconds."""
    value = _usable(value)
    if value is None:
        return None
    seconds = _plain_number(value)
    if seconds is not None or not _DURATION.fullmatch(value):
        return seconds
    total = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(value))
    return _finite(total)


def announced_wait(headers: Mapping[str, str], now: float | None = None) -> tuple[float, RateWaitSource] | None:
    """The wait a 429's headers announce and the header it came from (see the module's
    docstring for the order), or None when none of them holds a usable value. `headers`
    must look names up without regard to case (httpx.Headers does)."""
    ms = parse_retry_after_ms(headers.get("retry-after-ms"))
    if ms is not None:
        return ms, "retry-after-ms"
    seconds = parse_retry_after(headers.get("retry-after"), now)
    if seconds is not None:
        return seconds, "retry-after"
    resets = [(wait, name) for name in _RESET_HEADERS if (wait := parse_reset(headers.get(name))) is not None]
    if not resets:
        return None
    return max(resets, key=lambda reset: reset[0])
