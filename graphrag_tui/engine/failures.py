"""Failures in words: an unexpected exception as an attempt's error, and the one-line error of
a run whose every Map batch failed: the failures counted by kind and reason, most frequent
first, so 1,959 failed batches make a line, not 100 KB. The details stay in each batch's
attempts."""

from __future__ import annotations

import re
from collections import Counter

from ..safe_text import one_line
from .replies import repair_text
from .result import Attempt, BatchResult, cap_raw_response

MAX_GROUPS = 5
#: How many failed batches a listing names before "… and N more".
FAILED_LISTED = 10
#: How much of each failed batch's message a listing keeps.
FAILED_MESSAGE_CHARS = 200
#: How much of an unexpected exception a log line keeps.
LOG_CHARS = 300
REASON_CHARS = 60

_HTTP_STATUS = re.compile(r"HTTP (\d{3})\b")
_TRAILING_CALL = re.compile(r"\s*\((?:GET|POST) [^()]*\)$")  # "(POST http://host/v1/...)"
_ERRNO = re.compile(r"^\[Errno -?\d+\]\s*")
_TYPE_AND_DETAIL = re.compile(r"^([A-Za-z_][\w.]*): (.*)$", re.DOTALL)


def error_text(text: str) -> str:
    """An error message from a model or an exception, repaired and capped like a raw response."""
    return cap_raw_response(repair_text(text))[0]


def internal_error(error: Exception) -> str:
    """`TypeName: message` of an unexpected exception (a bug, or a model object misbehaving)."""
    message = error_text(str(error))
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def for_log(error: Exception) -> str:
    """An unexpected exception in a log line: one line, inert, short (never a traceback)."""
    return one_line(internal_error(error), LOG_CHARS)


def failure_reason(attempt: Attempt) -> str:
    """A short label for what went wrong, the same for failures that differ only in detail
    (a URL, an errno, a value the model sent, the body of an HTTP error)."""
    kind, error = attempt.error_kind, one_line(attempt.error or "")
    if kind == "http":
        status = _HTTP_STATUS.match(error)
        return f"HTTP {status.group(1)}" if status else f"HTTP ({_short(error)})"
    if kind == "transport":
        typed = _TYPE_AND_DETAIL.match(_TRAILING_CALL.sub("", error))
        if typed is None:
            return f"transport ({_short(error)})"
        name, detail = typed.groups()
        detail = _ERRNO.sub("", detail)
        if "refused" in detail.lower():
            detail = "connection refused"
        return f"{name} ({_short(detail)})" if detail and detail != name else name
    if kind == "timeout":
        return "timeout"
    if kind == "invalid_json":
        return "invalid JSON"
    if kind == "invalid_fields":
        return f"invalid fields ({_short(error.split(', got ', 1)[0])})"
    if kind == "response_too_large":
        return "response too large"
    if kind == "rate_limited":
        return "rate limited"
    if kind == "internal":
        typed = _TYPE_AND_DETAIL.match(error)
        return f"internal error ({typed.group(1) if typed else _short(error)})"
    return _short(error) or "unknown error"


def _short(text: str) -> str:
    text = text.strip()
    text = text[:1].lower() + text[1:] if text[:2].istitle() else text
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def map_failure_summary(batches: list[BatchResult]) -> str:
    """`3 of 3 Map batches failed: HTTP 500 ×2, timeout ×1; see --json`."""
    failed = [b for b in batches if b.status == "failed"]
    reasons = Counter(failure_reason(b.attempts[-1]) if b.attempts else "no attempt" for b in failed)
    ranked = reasons.most_common()  # ties keep the order of first appearance
    groups = [f"{reason} ×{count:,}" for reason, count in ranked[:MAX_GROUPS]]
    if len(ranked) > MAX_GROUPS:
        groups.append("…")
    return f"{len(failed):,} of {len(batches):,} Map batches failed: {', '.join(groups)}; see --json"


def failed_batch_lines(batches: list[BatchResult], limit: int = FAILED_LISTED) -> list[str]:
    """One line per failed batch, `batch 3: invalid_json: <its last error>` (the index is the
    JSON's), at most `limit` of them, then `… and N more`."""
    failed = [b for b in batches if b.status == "failed"]
    lines = []
    for batch in failed[:limit]:
        last = batch.attempts[-1] if batch.attempts else None
        kind = (last.error_kind if last else None) or "unknown"
        message = one_line((last.error if last else None) or "no attempt was made", FAILED_MESSAGE_CHARS)
        lines.append(f"batch {batch.index}: {kind}: {message}")
    if len(failed) > limit:
        lines.append(f"… and {len(failed) - limit:,} more")
    return lines
