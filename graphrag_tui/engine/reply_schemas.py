"""JSON schemas of the Map and Reduce replies (SPEC §3.5, §3.6, §4).

Sent as `response_format: json_schema` to servers with constrained decoding. The
`maxLength` on `answer` keeps a small model from running into `max_tokens` mid-string
and returning broken JSON.
"""

from __future__ import annotations

from typing import Any

MAP_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 2000},
        "usefulness": {"type": "number", "minimum": 0, "maximum": 100},
    },
    "required": ["answer", "usefulness"],
    "additionalProperties": False,
}

REDUCE_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 4000},
    },
    "required": ["answer"],
    "additionalProperties": False,
}

RATE_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 2000},
        "rating": {"type": "integer", "minimum": 0, "maximum": 5},
    },
    "required": ["reason", "rating"],
    "additionalProperties": False,
}
