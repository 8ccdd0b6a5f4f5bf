"""The find bar on a long text with many matches: only the matches around the current one
are marked (marking each of 40,000 took Textual 2 s a key to draw)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from graphrag_tui.tui.widgets.find_bar import CURRENT_STYLE, MARKED_AROUND, MATCH_STYLE, FindBar, MarkableStatic


class FindApp(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield MarkableStatic(Text("word " * 1000), id="text")
        yield FindBar(id="find-bar")

    def on_mount(self) -> None:
        self.query_one(FindBar).open([self.query_one(MarkableStatic)])


def marked(text: MarkableStatic) -> tuple[list[int], list[int]]:
    """The starts of the marked matches, in words: the current one, and the others."""
    spans = text.shown.spans
    return ([s.start // 5 for s in spans if str(s.style) == CURRENT_STYLE],
            [s.start // 5 for s in spans if str(s.style) == MATCH_STYLE])


async def test_only_the_matches_around_the_current_one_are_marked() -> None:
    app = FindApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"word")
        text = app.query_one(MarkableStatic)
        assert str(app.query_one("#find-count", Static).render()) == "1 of 1000"
        current, others = marked(text)
        assert (current, others) == ([0], list(range(1, MARKED_AROUND + 1)))
        await pilot.press("up")  # from the first, the last
        assert marked(text) == ([999], list(range(999 - MARKED_AROUND, 999)))
        app.query_one(FindBar).current = 499
        await pilot.press("down")
        current, others = marked(text)
        assert current == [500]
        assert others == [*range(500 - MARKED_AROUND, 500), *range(501, 501 + MARKED_AROUND)]
