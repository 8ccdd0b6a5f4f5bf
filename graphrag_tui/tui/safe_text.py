"""Untrusted text as Rich `Text`: cleaned by `graphrag_tui.safe_text`, never parsed as markup."""

from __future__ import annotations

from rich.text import Text

from ..safe_text import clean, one_line

__all__ = ["clean", "one_line", "safe", "safe_line"]


def safe(text: str | None, style: str = "") -> Text:
    """A Rich Text of cleaned, literal content: `[bold]` stays `[bold]`."""
    return Text(clean(text), style=style)


def safe_line(text: str | None, limit: int | None = None, style: str = "") -> Text:
    return Text(one_line(text, limit), style=style)
