"""Untrusted text as Rich `Text`: cleaned by `graphrag_tui.safe_text`, never parsed as markup."""

from __future__ import annotations

from rich.text import Text

from ..safe_text import clean
from ..safe_text import one_line as _one_line

#: The longest line of store or model text a view shows (some eight lines of a wide
#: terminal): a 10 MB community name laid out on one line held the app for minutes.
SHOWN_LINE_CHARS = 1_000

__all__ = ["clean", "cut_for_display", "markdown_cut", "one_line", "safe", "safe_cut", "safe_line"]


def safe(text: str | None, style: str = "") -> Text:
    """A Rich Text of cleaned, literal content: `[bold]` stays `[bold]`."""
    return Text(clean(text), style=style)


def one_line(text: str | None, limit: int = SHOWN_LINE_CHARS) -> str:
    """`graphrag_tui.safe_text.one_line`, cut at SHOWN_LINE_CHARS unless told shorter."""
    return _one_line(text, limit)


def safe_line(text: str | None, limit: int = SHOWN_LINE_CHARS, style: str = "") -> Text:
    return Text(one_line(text, limit), style=style)


#: Store text a view shows at most: Textual lays out every line of a widget at once, and a
#: 100,000-line summary held the app for 23 s. The rest is one line that says how much.
SHOWN_LINES = 2_000
SHOWN_CHARS = 200_000


def _cut_at(text: str, chars: int, lines: int) -> int:
    """Where `text` ends when at most `chars` characters and `lines` lines are shown (at the
    last line's newline): its length when all of it is."""
    end = min(len(text), chars)
    newline = -1
    for _ in range(lines):
        newline = text.find("\n", newline + 1, end)
        if newline < 0:
            return end
    return newline


def safe_cut(text: str | None, style: str = "") -> Text:
    """`safe`, cut for display (`cut_for_display`)."""
    return cut_for_display(safe(text, style))


def cut_for_display(text: Text) -> Text:
    """`text` (its styles kept) cut after SHOWN_LINES lines or SHOWN_CHARS characters,
    whichever comes first, with a line that says what is left out (`graphrag-tui show`
    prints it whole)."""
    plain = text.plain
    end = _cut_at(plain, SHOWN_CHARS, SHOWN_LINES)
    if end == len(plain):
        return text
    left = plain[end:].lstrip("\n")
    lines = left.count("\n") + (not left.endswith("\n"))
    shown = text[:end]
    shown.append(f"\n… {len(left):,} more characters ({lines:,} lines) not shown here; graphrag-tui show prints them",
                 style="dim italic")
    return shown


#: An answer shown as Markdown at most: Textual's Markdown parses and lays out the whole text,
#: 50,000 characters of paragraphs in about 0.4 s here, 300 list items in 2.5 s, and a
#: recorded 2 MB answer held the app for good (3.7 GB). An answer is a few thousand characters.
SHOWN_MARKDOWN_CHARS = 50_000
SHOWN_MARKDOWN_LINES = 300


def markdown_cut(text: str) -> str:
    """A model's Markdown answer cut, at a line's end, after SHOWN_MARKDOWN_CHARS characters
    or SHOWN_MARKDOWN_LINES lines, with a line that says what is left out (export and `c`
    keep it whole)."""
    end = _cut_at(text, SHOWN_MARKDOWN_CHARS, SHOWN_MARKDOWN_LINES)
    if end == len(text):
        return text
    if text[end] != "\n":  # cut within a line: at the end of the one before, if any
        cut = text.rfind("\n", 0, end)
        end = cut if cut > 0 else end
    return (f"{text[:end]}\n\n*… the answer goes on for {len(text) - end:,} more characters, not shown here "
            "(the export and `c` keep it whole)*")
