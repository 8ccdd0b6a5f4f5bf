"""Parsing and validating model replies (SPEC §3.5, §3.6)."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any, Literal

from .prompts import PLACEHOLDER_ANSWERS

FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)```", re.IGNORECASE)
FIRST_OPEN = re.compile(r"[\[{]")
PREVIEW = 200


class ReplyError(Exception):
    def __init__(self, kind: Literal["invalid_json", "invalid_fields"], message: str) -> None:
        super().__init__(message)
        self.kind: Literal["invalid_json", "invalid_fields"] = kind
        self.message = message


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any | None:
    """JSON.parse semantics: NaN and Infinity are not JSON; `null` counts as no result.
    Nesting deeper than the interpreter's recursion limit is not JSON either."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None


_SURROGATES = {code: "\ufffd" for code in range(0xD800, 0xE000)}


def repair_text(text: str) -> str:
    """The text with every lone surrogate (which UTF-8 cannot encode) replaced by U+FFFD.
    A model can send one as a JSON escape (`"\\ud800"`); repaired, it cannot break a later
    request, the JSON output or a file written from it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES)
    return text


def _describe(value: Any) -> str:
    """A model's value in an error message, bounded (a nested value is named, not printed)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value)
    return text if len(text) <= PREVIEW else text[:PREVIEW] + "…"


def _check_not_placeholder(answer: str, stage: str) -> None:
    """A small model may copy the prompt's own description of the reply instead of answering."""
    if answer.casefold() in PLACEHOLDER_ANSWERS:
        raise ReplyError("invalid_fields", f"{stage} reply's `answer` is the prompt's placeholder {answer!r}, not an answer")


def extract_json(raw: str) -> Any:
    """The first fenced block if any, else the whole text; failing that, the span from the
    first `{` or `[` to the last matching closer (as graphrag-ts's parseLlmJson does)."""
    fenced = FENCE.search(raw)
    text = fenced.group(1) if fenced else raw
    parsed = _loads(text)
    if parsed is not None:
        return parsed
    start = FIRST_OPEN.search(text)
    if start is not None:
        end = text.rfind("]" if start.group() == "[" else "}")
        if end > start.start():
            parsed = _loads(text[start.start() : end + 1])
            if parsed is not None:
                return parsed
    preview = raw if len(raw) <= PREVIEW else raw[:PREVIEW] + "…"
    raise ReplyError("invalid_json", f"reply is not valid JSON: {preview!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_map_reply(raw: str) -> tuple[str, int | float]:
    """(answer, usefulness) of a valid Map reply; the answer is trimmed and repaired."""
    parsed = extract_json(raw)
    if not isinstance(parsed, dict) or "answer" not in parsed or "usefulness" not in parsed:
        raise ReplyError("invalid_fields", "Map reply must be an object with `answer` and `usefulness`")
    answer, usefulness = parsed["answer"], parsed["usefulness"]
    if not isinstance(answer, str):
        raise ReplyError("invalid_fields", f"`answer` must be a string, got {type(answer).__name__}")
    if not _is_number(usefulness):
        raise ReplyError("invalid_fields", f"`usefulness` must be a number, got {_describe(usefulness)}")
    # The range check comes first: math.isfinite overflows on a huge JSON integer.
    if not 0 <= usefulness <= 100 or not math.isfinite(usefulness):
        raise ReplyError("invalid_fields", f"`usefulness` must be within 0..100, got {usefulness}")
    if usefulness > 0 and not answer.strip():
        raise ReplyError("invalid_fields", f"`answer` is empty but `usefulness` is {js_number(usefulness)}")
    answer = repair_text(answer.strip())
    _check_not_placeholder(answer, "Map")
    return answer, usefulness


def parse_reduce_reply(raw: str) -> str:
    parsed = extract_json(raw)
    if not isinstance(parsed, dict) or "answer" not in parsed:
        raise ReplyError("invalid_fields", "Reduce reply must be an object with `answer`")
    answer = parsed["answer"]
    if not isinstance(answer, str) or not answer.strip():
        raise ReplyError("invalid_fields", "Reduce reply's `answer` must be a non-empty string")
    answer = repair_text(answer.strip())
    _check_not_placeholder(answer, "Reduce")
    return answer


#: The rating scale of dynamic community selection.
MAX_RATING = 5
#: A rating's reason is kept up to this many characters (the reply schema asks for at most
#: as many): every rating is in the events, the result and the app, and a reply is hostile.
MAX_REASON = 2000


def parse_rate_reply(raw: str) -> tuple[int, str]:
    """(rating, reason) of a valid rating reply: `rating` an integer 0..5 (3.0 counts as 3),
    `reason` a string (trimmed and repaired; missing counts as empty)."""
    parsed = extract_json(raw)
    if not isinstance(parsed, dict) or "rating" not in parsed:
        raise ReplyError("invalid_fields", "rating reply must be an object with `rating`")
    rating, reason = parsed["rating"], parsed.get("reason", "")
    if isinstance(rating, float) and rating.is_integer():
        rating = int(rating)
    if not isinstance(rating, int) or isinstance(rating, bool) or not 0 <= rating <= MAX_RATING:
        raise ReplyError("invalid_fields", f"`rating` must be an integer within 0..{MAX_RATING}, got {_describe(rating)}")
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        raise ReplyError("invalid_fields", f"`reason` must be a string, got {type(reason).__name__}")
    reason = repair_text(reason.strip())
    if len(reason) > MAX_REASON:
        reason = reason[:MAX_REASON] + "…"
    return rating, reason


def js_number(value: int | float) -> str:
    """A number as JavaScript prints it: 80, 33.5, 1e-7."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        power = int(exponent)
        if -7 < power < 21:  # JavaScript writes these without an exponent
            return format(Decimal(text), "f")
        text = f"{mantissa}e{'-' if power < 0 else '+'}{abs(power)}"
    return text
