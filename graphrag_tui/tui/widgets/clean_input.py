"""A text field that keeps no control characters, bidirectional overrides or invisible characters.

An Input shows its value as it is: a pasted escape sequence (a clear screen, an OSC 52
clipboard write) went to the terminal as the field was drawn. What is typed, pasted or set
loses them; the rest of a paste is kept."""

from __future__ import annotations

import re

from textual.widgets import Input

from ...safe_text import INVISIBLE

#: What a field drops: C0 and C1 controls, DEL, the bidirectional overrides and isolates, and
#: the invisible format characters (a pasted question's tag characters are text the model
#: would read and the field does not show).
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069" + "".join(map(chr, INVISIBLE)) + "]")


class CleanInput(Input):
    def replace(self, text: str, start: int, end: int) -> None:  # (typing, pasting and inserting come here)
        super().replace(CONTROLS.sub("", text), start, end)

    def validate_value(self, value: str) -> str:
        return CONTROLS.sub("", value)
