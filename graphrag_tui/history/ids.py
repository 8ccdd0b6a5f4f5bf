"""Run ids: short and sortable. Twelve characters of [0-9a-z]: the start time in
milliseconds (base 36, eight characters until the year 2059), then four random ones."""

from __future__ import annotations

import re
import secrets
import time

DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
RUN_ID_LENGTH = 12
#: What a user may type for a run: its id or a prefix of it.
RUN_ID_PATTERN = re.compile(r"[0-9a-z]{1,12}")


def _base36(number: int, width: int) -> str:
    out = []
    for _ in range(width):
        number, digit = divmod(number, 36)
        out.append(DIGITS[digit])
    return "".join(reversed(out))


def new_run_id(now: float | None = None) -> str:
    millis = int((time.time() if now is None else now) * 1000)
    return _base36(millis, 8) + "".join(secrets.choice(DIGITS) for _ in range(RUN_ID_LENGTH - 8))
