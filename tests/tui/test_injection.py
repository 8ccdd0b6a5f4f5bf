"""Untrusted text (store rows, model replies) must reach the terminal as inert characters:
markup stays literal, and no escape sequence, C1 control or bidi override is ever written.

The app tests scan what the active screen draws twice: the segment texts of every line,
and the exact characters a full repaint would write to the terminal (Textual's own CSI
sequences, colours and cursor moves, are allowed there; nothing else starting with ESC is)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from textual.widgets import OptionList, TabbedContent
from textual.widgets._toast import Toast

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.tui.safe_text import clean, one_line, safe, safe_line
from graphrag_tui.tui.screens.batch import BatchScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.stores import PAD, build_store

from .conftest import Scripted, ask, make_app, screen_text, terminal_output, wait_community, wait_finished, wait_until

SIZE = (140, 42)
EVIL = (
    "[bold]x[/bold] [/] [@click=app.quit]quit[/] [link=http://evil]x[/link] \x1b[31mred "
    "\x1b]8;;http://evil\x07click\x1b]8;;\x07 \x1b]52;c;ZXZpbA==\x07 \x9b2J \x7fdel \x00nul \u202eevil"
)
#: What EVIL looks like once cleaned: markup literal, controls as pictures, no bidi override.
EVIL_SHOWN = (
    "[bold]x[/bold] [/] [@click=app.quit]quit[/] [link=http://evil]x[/link] ␛[31mred "
    "␛]8;;http://evil␇click␛]8;;␇ ␛]52;c;ZXZpbA==␇ \ufffd2J ␡del ␀nul evil"
)
#: A community id without spaces (the prompt's `[Community ID: <id> | ...]` header stays parseable).
EVIL_ID = "ns/[@click=app.quit]\x1b[31m\u202e3"
EVIL_NAMESPACE = "zz[b]x[/b]\x1b[2J\u202e"
FORBIDDEN = ("\x1b", "\x9b", "\u202e", "\x00", "\x7f", "\x07")
CSI = re.compile(r"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]")


# -- safe_text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("[bold]x[/bold] [/] [@click=app.quit]q[/]", "[bold]x[/bold] [/] [@click=app.quit]q[/]"),
        ("\x1b[31mred\x1b[0m", "␛[31mred␛[0m"),
        ("\x1b]8;;http://evil\x07click\x1b]8;;\x07", "␛]8;;http://evil␇click␛]8;;␇"),
        ("\x1b]52;c;ZXZpbA==\x07", "␛]52;c;ZXZpbA==␇"),
        ("a\x9bb\x85c\x80d\x9fe", "a\ufffdb\ufffdc\ufffdd\ufffde"),
        ("a\x7fb\x00c\x08d\x0be\x0cf", "a␡b␀c␈d␋e␌f"),
        ("line\nnext\ttab\r", "line\nnext\ttab␍"),
        ("abc\u202edef\u202ag\u2066h\u2069\u200ei\u200fj\u061ck", "abcdefghijk"),
        ("x\u2028y\u2029z", "xyz"),
        # invisible: ids that differ by one looked the same; tag characters hide text from the reader
        ("ns/\u200b1 \ufeffa\u2060b", "ns/⟨U+200B⟩1 ⟨U+FEFF⟩a⟨U+2060⟩b"),
        ("hi\U000E0041\U000E007F", "hi⟨U+E0041⟩⟨U+E007F⟩"),
        ("id\u3164 \u115f\U000E0100x", "id⟨U+3164⟩ ⟨U+115F⟩⟨U+E0100⟩x"),
        ("❤\ufe0f soft\u00adhyphen", "❤\ufe0f soft\u00adhyphen"),
        ("zwj \u200d zwnj \u200c 👩\u200d💻", "zwj \u200d zwnj \u200c 👩\u200d💻"),
        ("中文 é ✓ ␛ literal", "中文 é ✓ ␛ literal"),
        (EVIL, EVIL_SHOWN),
        ("", ""),
        (None, ""),
    ],
)
def test_clean(raw: str | None, shown: str) -> None:
    assert clean(raw) == shown


def test_one_line_and_safe_text() -> None:
    assert one_line("a\n b\t\tc \x1b[1m") == "a b c ␛[1m"
    assert one_line("abcdef", 4) == "abc…"
    assert one_line("abcd", 4) == "abcd"
    assert one_line(None) == ""
    assert "\n" not in one_line(EVIL + "\n" + EVIL)
    text = safe("[bold]x[/bold]\x1b[31m", style="red")
    assert isinstance(text, Text) and text.plain == "[bold]x[/bold]␛[31m" and text.spans == []
    assert text.style == "red"
    assert safe_line("[@click=app.quit]q\nz", 10).plain == "[@click=a…"


# -- the app ---------------------------------------------------------------------------------


def evil_store(path: Path) -> Path:
    return build_store(
        path,
        [
            {"id": "ns/1", "community_name": "Name " + EVIL, "summary_content": "Summary " + EVIL,
             "members": json.dumps(["M " + EVIL, "Plain member"])},
            {"id": "ns/2", "community_name": "Two", "summary_content": "Second " + EVIL + " " + PAD},
            {"id": EVIL_ID, "community_name": EVIL, "summary_content": "Third " + EVIL + " " + PAD},
            {"id": "zz/1", "namespace": EVIL_NAMESPACE, "summary_content": "elsewhere"},
        ],
        entities=[{"id": "e1", "name": "Ent " + EVIL}, {"id": "e2", "name": "Obj " + EVIL}],
        documents=[{"id": "d1", "title": "Doc " + EVIL}],
        chunks=[{"id": "k1", "parent_id": "d1", "content": "Chunk " + EVIL}],
        claims=[{"id": "c1", "subject_entity_id": "e1", "object_entity_id": "e2", "description": "Claim " + EVIL,
                 "source_chunk_id": "k1", "community_summary_id": "ns/1"}],
    )


def assert_inert(app, where: str) -> str:
    """Scan the active screen; return its text."""
    text = screen_text(app)
    for char in FORBIDDEN:
        assert char not in text, f"{where}: {char!r} drawn on the screen"
    written = terminal_output(app)
    assert "\x1b]" not in written, f"{where}: an OSC sequence (hyperlink, clipboard) was written"
    leftover = CSI.sub("", written)
    for char in FORBIDDEN:
        assert char not in leftover, f"{where}: {char!r} written to the terminal"
    assert app.is_running and app.return_code is None, where
    return text


async def click_literal_action(pilot, text: str, line_with: str) -> None:
    """Clicks the literal `[@click=app.quit]` in the first line of `text` (what the screen
    draws) holding `line_with`: it is text, not an action."""
    row, line = next((y, line) for y, line in enumerate(text.splitlines()) if line_with in line)
    await pilot.click(offset=(line.index("[@click=app.quit]") + 3, row))
    await pilot.pause()


async def show_tab(pilot, tabs: str, pane: str) -> None:
    pilot.app.screen.query_one(tabs, TabbedContent).active = pane
    await pilot.pause()


async def test_untrusted_text_is_inert_everywhere(tmp_path: Path) -> None:
    store = evil_store(tmp_path / "evil.db")
    script = Scripted(
        {
            "ns/1": map_reply("Map " + EVIL, 90),
            "ns/2": Reply(completion("Raw " + EVIL)),
            EVIL_ID: map_reply("Third " + EVIL, 50),
        },
        reduce=reduce_reply("Reduce " + EVIL),
    )
    with ScriptedChatServer(script) as server:
        options = SearchOptions(map_budget=360, map_reserve=0)  # one batch per community
        app = make_app(store, server.base_url, namespace="ns", options=options)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot, "evil?")
            await wait_finished(pilot)
            result = app.run_state.result
            assert result.status == "partial"
            assert [b.community_ids for b in result.batches] == [("ns/1",), ("ns/2",), (EVIL_ID,)]

            # Main screen: the answer (Markdown), then every tab.
            text = assert_inert(app, "answer tab")
            assert "Reduce [bold]x[/bold] [/] [@click=app.quit]quit[/]" in text
            assert "␛[31mred" in text
            for pane in ("tab-reduce", "tab-scores", "tab-retries"):
                await show_tab(pilot, "#tabs", pane)
                assert_inert(app, pane)
            await show_tab(pilot, "#tabs", "tab-answer")

            # The namespace list, opened.
            await pilot.click("#namespace")
            await pilot.pause()
            assert "zz[b]x[/b]␛[2J (1)" in assert_inert(app, "namespace list")
            await pilot.press("escape")
            await pilot.pause()

            # The command palette lists the namespaces (it parses titles as markup).
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"Namespace")
            await wait_until(pilot, lambda: "Namespace: zz" in screen_text(app), what="the palette")
            assert "Namespace: zz[b]x[/b]␛[2J" in assert_inert(app, "command palette")
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)

            # Drill down to ns/1: overview, claims, sources.
            citations = app.screen.query_one("#citations", OptionList)
            assert [citations.get_option_at_index(i).id for i in range(citations.option_count)] == ["ns/1", EVIL_ID]
            citations.focus()
            await pilot.press("enter")
            await pilot.pause()
            await wait_community(pilot)
            assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == "ns/1"
            text = assert_inert(app, "community overview")
            assert "Summary [bold]x[/bold] [/] [@click=app.quit]quit[/]" in text
            assert "Name [bold]x[/bold]" in text and "M [bold]x[/bold]" in text
            await click_literal_action(pilot, text, "Summary [bold]")
            assert app.is_running and isinstance(app.screen, CommunityScreen)
            await pilot.click("#--content-tab-tab-claims")
            await pilot.pause()
            text = assert_inert(app, "community claims")
            assert "Ent [bold]x[/bold]" in text and "Claim [bold]x[/bold]" in text and "Doc [bold]x[/bold]" in text
            await pilot.click("#--content-tab-tab-sources")
            await pilot.pause()
            text = assert_inert(app, "community sources")
            assert "Chunk [bold]x[/bold] [/] [@click=app.quit]quit[/]" in text
            await pilot.press("escape")
            await pilot.pause()

            # The community whose id itself is hostile.
            citations.focus()
            await pilot.press("down", "enter")
            await pilot.pause()
            await wait_community(pilot)
            assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == EVIL_ID
            assert "Community ns/[@click=app.quit]␛[31m3" in assert_inert(app, "hostile id")
            await pilot.press("escape")
            await pilot.pause()

            # The batch views: a Map answer and its prompt; a failed batch's raw responses.
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen) and app.screen.batch.index == 0
            assert "Map [bold]x[/bold] [/] [@click=app.quit]quit[/]" in assert_inert(app, "batch answer")
            await pilot.click("#--content-tab-tab-prompt")
            await pilot.pause()
            assert "[Community summary]: Summary [bold]x[/bold]" in assert_inert(app, "batch prompt")
            await pilot.press("escape")
            await pilot.pause()
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("right", "enter")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen) and app.screen.batch.index == 1
            text = assert_inert(app, "failed batch attempts")
            assert "Raw [bold]x[/bold] [/] [@click=app.quit]quit[/]" in text
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
        assert app.return_code is None  # quit was never run by any of it


async def test_an_input_error_naming_a_hostile_id_is_inert(tmp_path: Path) -> None:
    """The engine's error names the community; the form and the toast show it cleaned."""
    store = build_store(tmp_path / "evil.db", [{"id": EVIL_ID, "summary_content": "Third " + PAD}])
    with ScriptedChatServer(Scripted({})) as server:
        app = make_app(store, server.base_url, options=SearchOptions(map_budget=131, map_reserve=0))
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            form_error = app.screen.query_one("#form-error")
            await wait_until(pilot, lambda: form_error.display, what="the form error")
            await pilot.pause(0.2)
            shown = str(form_error.render())
            assert "cannot fit even one character of community ns/[@click=app.quit]␛[31m3" in shown
            text = assert_inert(app, "input error")
            assert "Cannot run" in text
        assert server.requests == []


@pytest.mark.parametrize("community_id", ["ns/x[/]", "ns/[@click=app.quit]QQQQ[/]\x1b[2J\u202e"])
async def test_a_notification_naming_a_hostile_id_is_literal(tmp_path: Path, community_id: str) -> None:
    """Two communities each other's parent are in no tree: "show in tree" says so in a toast,
    which parsed markup (`[/]` crashed the app; `[@click=app.quit]` quit it when clicked)."""
    store = build_store(tmp_path / "cycle.db", [
        {"id": "ns/root", "summary_content": "Root " + PAD},
        {"id": community_id, "summary_content": "A " + PAD, "level": 1, "parent_community_id": "ns/a"},
        {"id": "ns/a", "summary_content": "B " + PAD, "level": 1, "parent_community_id": community_id},
    ])
    app = make_app(store)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.open_community(community_id)
        await wait_community(pilot)
        await pilot.press("t")
        await wait_until(pilot, lambda: bool(app.screen.query(Toast)), what="the toast")
        await pilot.pause()
        (toast,) = app.screen.query(Toast)
        assert str(toast.render()) == f"Community {one_line(community_id)} is not in this namespace's tree."
        assert_inert(app, "toast")


async def test_the_compare_view_of_two_hostile_runs_is_inert(tmp_path: Path) -> None:
    """Its answers (Rich's Markdown: a link keeps its address in sight and opens nothing) and
    its tables (drawn row by row) show recorded text as literal characters."""
    from graphrag_tui.history import RunHistory
    from graphrag_tui.tui.screens.compare import CompareScreen

    store, history = evil_store(tmp_path / "evil.db"), tmp_path / "history.db"
    script = Scripted({"ns/1": map_reply("Map " + EVIL, 90), "ns/2": map_reply("Two " + EVIL, 40),
                       EVIL_ID: map_reply("Third " + EVIL, 50)},
                      reduce=reduce_reply("Reduce " + EVIL + " [site](http://evil.example) [Data: ns/1]"))
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, namespace="ns", history=history,
                       options=SearchOptions(map_budget=360, map_reserve=0))
        async with app.run_test(size=SIZE) as pilot:
            for question in ("evil?", "evil again?"):
                await ask(pilot, question)
                await wait_finished(pilot)
            newer, older = (run.run_id for run in RunHistory(history).list_runs())
            app.compare_runs(older, newer)
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            text = assert_inert(app, "compare answers")
            assert "Reduce [bold]x[/bold] [/] [@click=app.quit]quit[/]" in text
            assert "site (http://evil.example)" in text
            await click_literal_action(pilot, text, "[@click=app.quit]")
            assert app.is_running and isinstance(app.screen, CompareScreen)
            await pilot.press("2")
            await pilot.pause()
            assert "3 batches: no difference" in assert_inert(app, "compare batches")
            await pilot.press("3")
            await pilot.pause()
            text = assert_inert(app, "compare communities")
            assert "ns/[@click=app.quit]␛[31m3" in text
            await click_literal_action(pilot, text, "ns/[@click")
            assert app.is_running
        assert app.return_code is None


async def test_a_long_hostile_answer_drawn_by_rich_is_inert(tmp_path: Path) -> None:
    """An answer of LONG_ANSWER_LINES lines or more is drawn by Rich's Markdown: its markup,
    controls and links stay text there too."""
    from graphrag_tui.tui.widgets.answer_panel import LONG_ANSWER_LINES

    store = evil_store(tmp_path / "evil.db")
    answer = "\n".join(f"- Line {i} {EVIL} [site](http://evil.example)" for i in range(LONG_ANSWER_LINES))
    script = Scripted({"ns/1": map_reply("Map " + EVIL, 90), "ns/2": map_reply("Two", 40),
                       EVIL_ID: map_reply("Third", 50)}, reduce=reduce_reply(answer))
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, namespace="ns", options=SearchOptions(map_budget=360, map_reserve=0))
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot, "evil?")
            await wait_finished(pilot)
            assert app.screen.query_one("#answer-long").display
            text = assert_inert(app, "long answer")
            assert "Line 0 [bold]x[/bold] [/] [@click=app.quit]quit[/]" in text
            assert "site (http://evil.example)" in text
            await click_literal_action(pilot, text, "Line 0 ")
            assert app.is_running and isinstance(app.screen, MainScreen)
        assert app.return_code is None


HTML = "a <b>bold</b> <T> word <!-- note -->"


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
async def test_an_answer_that_reads_as_html_is_shown_as_the_model_wrote_it(tmp_path: Path, long: bool) -> None:
    """CommonMark reads tags, comments and `<T>` as HTML, which Textual's and Rich's
    Markdown dropped: the answer lost words, with no sign (in the compare view too)."""
    from graphrag_tui.history import RunHistory
    from graphrag_tui.tui.screens.compare import CompareScreen
    from graphrag_tui.tui.widgets.answer_panel import LONG_ANSWER_LINES

    store, history = build_store(tmp_path / "s.db", [
        {"id": f"ns/{i}", "summary_content": f"Community {i}. {PAD}"} for i in (1, 2)]), tmp_path / "history.db"
    lines = [f"- {i} {HTML}" for i in range(LONG_ANSWER_LINES if long else 1)]
    answer = "\n".join(lines) + "\n\n<div>kept</div>\n\n<script>shown()</script>"
    script = Scripted({"ns/1": map_reply("One", 90), "ns/2": map_reply("Two", 40)}, reduce=reduce_reply(answer))
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, namespace="ns", history=history)
        async with app.run_test(size=SIZE) as pilot:
            for question in ("html?", "html again?"):
                await ask(pilot, question)
                await wait_finished(pilot)
            assert app.screen.query_one("#answer-long").display is long
            assert f"0 {HTML}" in screen_text(app)
            if long:  # (its end is out of view)
                console = Console(width=120, record=True, file=io.StringIO())
                console.print(app.screen.query_one("#answer-long").content)
                text = console.export_text()
            else:
                text = screen_text(app)
            assert "<div>kept</div>" in text and "<script>shown()</script>" in text
            newer, older = (run.run_id for run in RunHistory(history).list_runs())
            app.compare_runs(older, newer)
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            assert f"0 {HTML}" in screen_text(app)


async def test_text_pasted_into_a_field_keeps_no_control_characters(tmp_path: Path) -> None:
    """A pasted clear-screen and OSC 52 clipboard write went to the terminal as the question
    field (and Explore's search box) was drawn: every field drops controls, bidi overrides
    and invisible characters (tag characters hide text the model would read) from what is
    typed, pasted or set, and keeps the rest."""
    from textual import events
    from textual.widgets import Input

    from graphrag_tui.tui.widgets.clean_input import CleanInput

    store = build_store(tmp_path / "s.db", [{"id": "ns/1", "summary_content": "Harbour."}])
    pasted = "who funds \x1b[2J\x1b]52;c;ZXZpbA==\x07 the \u202ebridge\x9b?\x00\u200b\U000E0041\U000E0042"
    kept = "who funds [2J]52;c;ZXZpbA== the bridge?"
    app = make_app(store, cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(app.screen.query("#query")), what="the main screen")
        fields = list(app.screen.query(Input))
        assert fields and all(isinstance(field, CleanInput) for field in fields)
        query = app.screen.query_one("#query", Input)
        query.focus()
        await pilot.pause()
        query.post_message(events.Paste(pasted))
        await pilot.pause()
        assert query.value == kept
        query.value = "set \x1b[2J"
        assert query.value == "set [2J"
        output = terminal_output(app)
        assert not any(code in CSI.sub("", output) for code in FORBIDDEN), output
        app.screen.query_one("#run").focus()
        await pilot.press("x")
        await wait_until(pilot, lambda: bool(app.screen.query("#explore-query")), what="Explore")
        search = app.screen.query_one("#explore-query", Input)
        search.focus()
        await pilot.pause()
        search.post_message(events.Paste(pasted))
        await pilot.pause()
        assert search.value == kept
        assert not any(code in CSI.sub("", terminal_output(app)) for code in FORBIDDEN)
