"""Untrusted strings (from the store, the model or the user) made safe for a terminal.

One module for every human-readable output: the app, the CLI's text output and the
exports. It removes what a terminal would act on: C0 control characters other than tab
and newline (ESC starts ANSI and OSC sequences), DEL and C1 controls become visible
symbols; bidirectional overrides and isolates, and the line/paragraph separators some
terminals treat as newlines, are removed; invisible format characters (a zero-width space,
tag characters) are shown as their code point, ⟨U+200B⟩. Lone surrogates (which cannot be encoded)
become U+FFFD. Markup is never parsed: the app renders these as `Text`/`Content`.
"""

from __future__ import annotations

import json

# C0 controls other than tab and newline become their visible Control Pictures (ESC -> ␛).
_TABLE: dict[int, str | None] = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_TABLE[0x7F] = "\u2421"
# C1 controls (0x80-0x9F) become the replacement character.
_TABLE.update({code: "\ufffd" for code in range(0x80, 0xA0)})
for _code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C, 0x2028, 0x2029):
    _TABLE[_code] = None
_TABLE.update({code: "\ufffd" for code in range(0xD800, 0xE000)})
# Invisible characters are shown as their code point: two ids that differ by a zero-width
# space (or a Hangul filler) looked the same, and tag characters (U+E0000-E007F) and the
# variation selectors' supplement carry text that a model reads and a reader does not see.
# The joiners (U+200C, U+200D), the variation selectors of emoji (U+FE00-FE0F), the soft
# hyphen and Mongolian's selectors stay: text needs them.
INVISIBLE = (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x200B, *range(0x2060, 0x2065), *range(0x206A, 0x2070),
             0x3164, 0xFEFF, 0xFFA0, *range(0xFFF0, 0xFFFC), *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B),
             *range(0xE0000, 0xE0080), *range(0xE0100, 0xE01F0))
_TABLE.update({code: f"\u27e8U+{code:04X}\u27e9" for code in INVISIBLE})


def clean(text: str | None) -> str:
    """The text with every control character made visible or removed."""
    if not text:
        return ""
    return text.translate(_TABLE)


_LINE_TABLE = {**_TABLE, 0x09: "\u2409", 0x0A: "\u240a"}


def path_text(path: object) -> str:
    """A file's path or a name on a line of its own: clean, its tabs and newlines visible
    too (a file name may hold them; the line must still name that file)."""
    return str(path).translate(_LINE_TABLE)


def one_line(text: str | None, limit: int | None = None) -> str:
    """Clean, on one line (newlines and tabs become spaces), optionally cut with an ellipsis."""
    flat = " ".join(clean(text).split())
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)] + "…"
    return flat


# In JSON text, every character `clean` would change (other than the C0 controls, which
# json.dumps escapes itself) becomes a \u escape: the same JSON value, inert on a terminal.
_JSON_ESCAPES = {code: f"\\u{code:04x}" if code <= 0xFFFF else json.dumps(chr(code))[1:-1]  # (a surrogate pair)
                 for code in _TABLE if code >= 0x20}


def inert_json(value: object, *, ascii_only: bool = False, indent: int | None = None) -> str:
    """`value` as exact JSON (what json.loads reads back is `value`) with no character a
    terminal acts on: DEL, C1, bidi controls and line separators are escaped, and so are
    lone surrogates, so the text always encodes as UTF-8. `ascii_only` escapes all of
    non-ASCII, for an output that is not UTF-8."""
    if ascii_only:
        return json.dumps(value, ensure_ascii=True, indent=indent)
    return json.dumps(value, ensure_ascii=False, indent=indent).translate(_JSON_ESCAPES)
