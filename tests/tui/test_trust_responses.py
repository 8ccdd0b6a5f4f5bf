"""Huge replies in the app (issue 9, item 9) and the API key in its panels (item 1), end
to end: the real app under the Pilot against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import stat
import urllib.parse
from pathlib import Path

import pytest
from textual.widgets import Input, Markdown, Static, TabbedContent, TextArea

from graphrag_tui.engine.result import RAW_RESPONSE_CAP
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.tui.screens.batch import SHOW_LIMIT, BatchScreen
from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.screens.save_response import SaveResponseScreen
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, rows, screen_text, wait_finished

SIZE = (140, 42)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


async def open_batch(pilot, index: int) -> BatchScreen:
    grid = pilot.app.screen.query_one(BatchGrid)
    grid.focus()
    await pilot.press(*["right"] * index, "enter")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, BatchScreen) and screen.batch.index == index
    return screen


async def test_a_1_mb_reply_is_shown_in_part_and_saved_whole(store: Path, tmp_path: Path) -> None:
    whole = "Not JSON. " * 100_000  # 1,000,000 bytes of message content
    script = Scripted({
        "ns/1": map_reply("Bridge funds.", 90),
        "ns/2": map_reply("Fleets.", 20),
        "ns/3": Reply(completion(whole)),
    })
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            result = app.run_state.result
            assert result.status == "partial"
            attempts = result.batches[2].attempts
            assert [(a.error_kind, a.raw_response_bytes) for a in attempts] == [("invalid_json", 1_000_000)] * 2
            assert [a.raw_response for a in attempts] == [whole[:RAW_RESPONSE_CAP]] * 2
            folder = app.spill.folder
            assert folder is not None and stat.S_IMODE(folder.stat().st_mode) == 0o700
            assert sorted(p.name for p in folder.iterdir()) == ["batch-2-attempt-1.txt", "batch-2-attempt-2.txt"]

            screen = await open_batch(pilot, 2)
            assert [str(s.render()) for s in screen.query(".raw-hidden").results(Static)] == [
                "showing 8 KiB of 1.0 MB; press s to save the whole response"
            ] * 2
            assert [a.text for a in screen.query(".raw-response").results(TextArea)] == [whole[:SHOW_LIMIT]] * 2
            await pilot.press("s")
            await pilot.pause()
            assert isinstance(app.screen, SaveResponseScreen)
            app.screen.query_one("#save-response-input", Input).value = str(tmp_path / "whole.txt")
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen)
            assert (tmp_path / "whole.txt").read_text(encoding="utf-8") == whole
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
        assert not folder.exists()  # the private folder goes with the app


KEY = "sk-test-Q7x/9+ab=SECRETkey1234567890"


def key_forms(key: str) -> list[str]:
    """The key as it may appear: plain, JSON-escaped, percent-encoded; and its long tail."""
    return [key, json.dumps(key)[1:-1], urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key), key[8:]]


async def test_a_server_echoing_the_key_in_200_replies_never_shows_it(store: Path) -> None:
    def echo(request):  # type: ignore[no-untyped-def]
        auth = request.headers.get("authorization", "")
        if request.stage == "reduce":
            return reduce_reply(f"The answer; your header was {auth} and {json.dumps(auth)}")
        community = request.prompt.split("[Community ID: ", 1)[1].split(" |", 1)[0]
        if community == "ns/1":  # an invalid reply (no JSON) carrying the key
            return Reply(completion(f"no JSON here: {auth} {urllib.parse.quote(auth, safe='')}"))
        return map_reply(f"It echoes {auth}", 50)  # a valid answer carrying the key

    with ScriptedChatServer(echo) as server:
        settings = ModelSettings(base_url=server.base_url, model="m1", api_key_env="TEST_API_KEY", timeout=20)
        app = make_app(store, model_settings=settings, environ={"TEST_API_KEY": KEY})
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.chat_requests())
            seen: list[str] = []
            for tab in ("tab-answer", "tab-reduce", "tab-scores", "tab-retries"):
                app.screen.query_one("#tabs", TabbedContent).active = tab
                await pilot.pause()
                app.repaint()
                await pilot.pause()
                seen.append(screen_text(app))
            seen.append(json.dumps(rows(pilot, "#retries-table")))
            seen.append(app.screen.query_one("#answer-text", Markdown).source)
            seen.append(str(app.screen.query_one("#answer-meta", Static).render()))
            for index in range(3):
                screen = await open_batch(pilot, index)
                for tab in ("tab-answer", "tab-attempts"):
                    screen.query_one("#batch-tabs", TabbedContent).active = tab
                    await pilot.pause()
                    seen.append(screen_text(app))
                seen += [area.text for area in screen.query(".raw-response").results(TextArea)]
                seen.append(str(screen.query_one("#answer", Static).render()))
                await pilot.press("escape")
                await pilot.pause()
            shown = "\n".join(seen)
            assert "It echoes" in shown and "no JSON here" in shown  # the replies are shown...
            for form in key_forms(KEY):
                assert form not in shown  # ...but never the key, in any form


def test_a_huge_answer_is_shown_as_markdown_up_to_its_first_300_lines_or_50000_characters() -> None:
    """A recorded 2 MB answer of list items held the app for good (3.7 GB): Textual's
    Markdown lays out every item. The export and `c` keep the answer whole."""
    from graphrag_tui.tui.safe_text import markdown_cut

    items = "- Marrowick [Data: Reports (12)] **bold** `code`\n" * 1000
    cut = markdown_cut(items)
    assert cut == ("- Marrowick [Data: Reports (12)] **bold** `code`\n" * 299 + "- Marrowick [Data: Reports (12)] **bold** `code`"
                   "\n\n*… the answer goes on for 34,301 more characters, not shown here (the export and `c` keep it whole)*")
    one_line = "word " * 30_000
    assert markdown_cut(one_line) == (one_line[:50_000] + "\n\n*… the answer goes on for 100,000 more characters, "
                                      "not shown here (the export and `c` keep it whole)*")
    assert markdown_cut("A short answer.\n\n- one\n- two\n") == "A short answer.\n\n- one\n- two\n"


def test_an_answer_is_listed_as_citing_at_most_500_communities() -> None:
    """An answer citing Reports (0..20049) in a namespace of 28: 20,049 rows, 3 s a key."""
    from graphrag_tui.engine import ReduceReport, SearchResult
    from graphrag_tui.session.citations import rests_on

    answer = "Everything [Data: Reports (" + ", ".join(map(str, range(20_050))) + ")]."
    result = SearchResult(query="q", namespace="ns", level="leaf", seed=None, status="completed", answer=answer,
                          summary_count=0, batch_count=0, failed_batch_count=0, batches=[],
                          reduce=ReduceReport(budget=1000))
    in_answer, others = rests_on(result)
    assert (len(in_answer), in_answer[:2], in_answer[-1], others) == (500, ["ns/0", "ns/1"], "ns/499", [])
