"""Untrusted strings (from the store or the model) made safe for the terminal.

Markup is never parsed: callers render these as `Text`/`Content`, never as markup strings.
This module removes what the terminal itself would act on: C0/C1 control characters
(ESC starts ANSI and OSC sequences), DEL, and bidirectional overrides that reorder text.
"""

from __future__ import annotations

from rich.text import Text

# C0 controls other than tab and newline become their visible Control Pictures (ESC -> ␛).
_C0 = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_TABLE: dict[int, str | None] = {**_C0, 0x7F: "\u2421"}
# C1 controls (0x80-0x9F) become the replacement character.
_TABLE.update({code: "\ufffd" for code in range(0x80, 0xA0)})
# Bidirectional embeddings, overrides and isolates are removed; so are the line and
# paragraph separators some terminals treat as newlines.
for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C, 0x2028, 0x2029):
    _TABLE[code] = None


def clean(text: str | None) -> str:
    """The text with every control character made visible or removed."""
    if not text:
        return ""
    return text.translate(_TABLE)


def one_line(text: str | None, limit: int | None = None) -> str:
    """Clean, on one line (newlines and tabs become spaces), optionally cut with an ellipsis."""
    flat = " ".join(clean(text).split())
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)] + "…"
    return flat


def safe(text: str | None, style: str = "") -> Text:
    """A Rich Text of cleaned, literal content: `[bold]` stays `[bold]`."""
    return Text(clean(text), style=style)


def safe_line(text: str | None, limit: int | None = None, style: str = "") -> Text:
    return Text(one_line(text, limit), style=style)
