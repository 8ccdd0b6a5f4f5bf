"""A model's text drawn as Markdown with its raw HTML shown as the text it is.

CommonMark reads `<b>`, `<!-- -->`, `<script>…</script>` and the `<T>` of `Vec<T>` as HTML,
which Textual's and Rich's renderers drop: an answer lost words of what the model wrote,
with no sign. With HTML off they read as text; links and emphasis are still Markdown."""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.markdown import Markdown as RichMarkdown


def literal_html_parser() -> MarkdownIt:
    """Textual's Markdown parser ("gfm-like"), HTML off (its `parser_factory`)."""
    return MarkdownIt("gfm-like", {"html": False})


class ModelMarkdown(RichMarkdown):
    """Rich's Markdown of a model's text: HTML off, links not written as terminal hyperlinks."""

    def __init__(self, markup: str) -> None:
        super().__init__(markup, hyperlinks=False)
        self.parsed = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table").parse(markup)
