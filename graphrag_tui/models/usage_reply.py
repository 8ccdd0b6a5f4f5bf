"""The `usage` object of a chat completion (or of a streamed completion's last chunk), read
defensively: token counts are whole numbers from 0 to 2**53; a usage with any count that is
not one is dropped whole, never half-believed."""

from __future__ import annotations

import logging
from typing import Any

from ..engine.usage import MAX_COUNT, Usage

log = logging.getLogger("graphrag_tui.models")


def _count(data: dict[str, Any], name: str) -> int | None:
    """The count (0 when absent), or None when present but not a count."""
    value = data.get(name, 0)
    if value is None:
        return 0
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    return None


def parse_usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    details = data.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    prompt, completion = _count(data, "prompt_tokens"), _count(data, "completion_tokens")
    cached, total = _count(details, "cached_tokens"), _count(data, "total_tokens")
    if prompt is None or completion is None or cached is None or total is None:
        log.info("the server's usage has a count that is not a whole number of tokens; usage not recorded")
        return None
    if "total_tokens" not in data or data["total_tokens"] is None:
        total = prompt + completion
        if total > MAX_COUNT:
            log.info("the server's usage counts add up to more tokens than a call can have; usage not recorded")
            return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=min(cached, prompt), total_tokens=total)
