"""The real app, driven by a Pilot, against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Markdown, OptionList, Static, TabbedContent, TextArea

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.tokens import estimate_tokens
from graphrag_tui.tui.screens.batch import BatchScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.confirm import ConfirmScreen
from graphrag_tui.tui.screens.goto import GoToCommunityScreen
from graphrag_tui.tui.screens.keys import KeysScreen
from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from graphrag_tui.tui.widgets.footer import KeyFooter
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.stores import three_leaves

from .conftest import (
    Scripted,
    ask,
    community_of,
    make_app,
    rows,
    screen_text,
    text_of,
    wait_community,
    wait_finished,
    wait_lookup,
    wait_until,
)

SIZE = (140, 42)
LONG_ANSWER = "The bridge budget comes from harbour dues. " * 9 + "x" * 13  # 400 characters


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def answer_markdown(app) -> str:
    return app.screen.query_one("#answer-text", Markdown).source


def citations(app) -> list[str | None]:
    options = app.screen.query_one("#citations", OptionList)
    return [options.get_option_at_index(i).id for i in range(options.option_count)]


async def test_completed_run_shows_every_panel(store: Path) -> None:
    script = Scripted(
        {
            "ns/1": map_reply("The port authority funds the bridge.", 40),
            "ns/2": map_reply(LONG_ANSWER, 90),
            "ns/3": map_reply("", 0),
        },
        reduce=reduce_reply("The **port authority** funds it."),
    )
    options = SearchOptions(map_budget=330, map_reserve=0, reduce_budget=200, reduce_reserve=0)
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, options=options)
        async with app.run_test(size=SIZE) as pilot:
            assert isinstance(app.focused, Input) and app.focused.id == "query"  # §6: the query field first
            await ask(pilot, "Who funds it?", type_it=True)
            assert isinstance(app.focused, BatchGrid)  # §6: a run moves focus to the run panels
            await wait_finished(pilot)

            assert app.run_state.result.status == "completed"
            assert text_of(pilot, "#batch-counts") == "· queued 0  ▸ running 0  ■ succeeded 3  ✗ failed 0"
            assert text_of(pilot, "#answer-status") == "COMPLETED"
            assert text_of(pilot, "#answer-meta") == "0 of 3 batches failed · 1 answers selected · not shuffled"
            assert answer_markdown(app) == "The **port authority** funds it."
            assert citations(app) == ["ns/1"]
            assert app.screen.query_one(TabbedContent).active == "tab-answer"

            assert rows(pilot, "#scores-table") == [["1", "90", "ns/2"], ["0", "40", "ns/1"], ["2", "0", "ns/3"]]
            assert rows(pilot, "#reduce-table") == [
                ["1", "1", "90", "over budget", "ns/2"],
                ["2", "0", "40", "selected", "ns/1"],
                ["3", "2", "0", "zero", "ns/3"],
            ]
            reduce = [r for r in server.chat_requests() if r.stage == "reduce"]
            assert len(reduce) == 1
            tokens = estimate_tokens(reduce[0].prompt)
            assert text_of(pilot, "#reduce-summary") == f"Selected 1 of 3 candidates   reduce prompt {tokens} / 200 tokens"
            assert rows(pilot, "#retries-table") == []
            assert text_of(pilot, "#retries-summary") == "No failed attempts."
            assert reduce[0].json["messages"][1]["content"].startswith("User query: Who funds it?\n")


async def test_a_long_answer_is_drawn_as_one_widget_and_its_communities_stay_listed(store: Path) -> None:
    """An answer of LONG_ANSWER_LINES lines (an extractive run over a large store lists
    hundreds) is drawn by Rich's Markdown, one widget; a short one after it is Textual's
    again, with its citations as links."""
    from graphrag_tui.tui.widgets.answer_panel import LONG_ANSWER_LINES, AnswerPanel

    items = "\n".join(f"- **Item {i}** funds it [Data: Reports (1)]" for i in range(LONG_ANSWER_LINES))
    script = Scripted({c: map_reply("The port authority funds the bridge.", 40) for c in ("ns/1", "ns/2", "ns/3")},
                      reduce=reduce_reply(items))
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            panel = app.screen.query_one(AnswerPanel)
            assert panel.has_class("-long") and answer_markdown(app) == ""
            assert not app.screen.query_one("#answer-text").display and app.screen.query_one("#answer-long").display
            shown = screen_text(app)
            assert "Item 0 funds it [Data: Reports (1)]" in shown and "[Data: Reports (1)]" in shown
            assert citations(app) == ["ns/1", "ns/2", "ns/3"]
            panel.focus()
            await pilot.press("c")
            assert app.clipboard == items
            script.reduce = reduce_reply("The **port authority** funds it [Data: Reports (1)].")
            await ask(pilot)
            await wait_finished(pilot)
            assert not panel.has_class("-long") and str(app.screen.query_one("#answer-long").render()) == ""
            assert answer_markdown(app).startswith("The **port authority** funds it [Data: Reports (")


async def test_partial_run_with_a_retried_and_a_failed_batch(store: Path) -> None:
    script = Scripted({
        "ns/1": map_reply("Bridge funds.", 90),
        "ns/2": [Reply("overloaded", status=500), map_reply("Fleets.", 20)],
        "ns/3": Reply(completion("not json at all")),
    })
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)

            assert text_of(pilot, "#batch-counts") == "· queued 0  ▸ running 0  ■ succeeded 2  ✗ failed 1"
            # Batches 1 and 2 fail concurrently: the table is in the order the failures came.
            assert sorted(rows(pilot, "#retries-table")) == [
                ["1", "1", "http", "retry", "HTTP 500: overloaded"],
                ["2", "1", "invalid_json", "retry", "reply is not valid JSON: 'not json at all'"],
                ["2", "2", "invalid_json", "gave up", "reply is not valid JSON: 'not json at all'"],
            ]
            assert text_of(pilot, "#retries-summary") == "3 failed attempts, 2 retried."
            assert rows(pilot, "#scores-table") == [["0", "90", "ns/1"], ["1", "20", "ns/2"]]
            assert [r[3] for r in rows(pilot, "#reduce-table")] == ["selected", "selected"]
            assert text_of(pilot, "#answer-status") == "PARTIAL"
            assert text_of(pilot, "#answer-meta") == "1 of 3 batches failed · 2 answers selected · not shuffled"
            assert app.run_state.result.failed_batch_count == 1
            assert answer_markdown(app) == "The port authority funds it."
            assert citations(app) == ["ns/1", "ns/2"]


async def test_no_results_when_every_answer_is_useless(store: Path) -> None:
    zero = map_reply("", 0)
    with ScriptedChatServer(Scripted({"ns/1": zero, "ns/2": zero, "ns/3": zero})) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert text_of(pilot, "#answer-status") == "NO RESULTS"
            assert text_of(pilot, "#answer-meta") == (
                "0 of 3 batches failed · 0 answers selected · not shuffled\n"
                "no Map answer was useful: every usefulness was 0"
            )
            assert answer_markdown(app) == ""
            assert citations(app) == []
            assert [r[3] for r in rows(pilot, "#reduce-table")] == ["zero", "zero", "zero"]
            assert text_of(pilot, "#reduce-summary") == "Selected 0 of 3 candidates   reduce prompt — / 6976 tokens"
            # All tied at 0: they keep the order the answers came in.
            assert sorted(rows(pilot, "#scores-table")) == [["0", "0", "ns/1"], ["1", "0", "ns/2"], ["2", "0", "ns/3"]]
        assert [r.stage for r in server.chat_requests()] == ["map"] * 3


async def test_failed_when_every_batch_fails(store: Path) -> None:
    bad = Reply(completion(json.dumps({"answer": "x", "usefulness": "80"})))
    with ScriptedChatServer(Scripted({"ns/1": bad, "ns/2": bad, "ns/3": bad})) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert text_of(pilot, "#answer-status") == "FAILED"
            assert text_of(pilot, "#batch-counts") == "· queued 0  ▸ running 0  ■ succeeded 0  ✗ failed 3"
            meta = text_of(pilot, "#answer-meta").split("\n")
            assert meta[0] == "3 of 3 batches failed · 0 answers selected · not shuffled"
            assert meta[1] == "3 of 3 Map batches failed: invalid fields (`usefulness` must be a number) ×3; see --json"
            retries = rows(pilot, "#retries-table")
            assert len(retries) == 6
            assert sorted((r[0], r[1], r[2], r[3]) for r in retries) == [
                (b, a, "invalid_fields", then) for b in "012" for a, then in (("1", "retry"), ("2", "gave up"))
            ]
            assert text_of(pilot, "#retries-summary") == "6 failed attempts, 3 retried."
            assert rows(pilot, "#reduce-table") == [] and rows(pilot, "#scores-table") == []
            assert citations(app) == []
        assert len(server.chat_requests()) == 6


async def test_a_budget_too_small_is_shown_in_the_form_and_sends_nothing(store: Path) -> None:
    with ScriptedChatServer(Scripted({})) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            app.screen.query_one("#opt-map_budget", Input).value = "100"
            await ask(pilot)
            await wait_until(pilot, lambda: "cannot fit" in text_of(pilot, "#form-error"), what="the form error")
            error = text_of(pilot, "#form-error")
            assert "cannot fit the Map prompt itself (130 tokens)" in error
            assert app.screen.query_one("#form-error", Static).display
            assert app.run_state.phase == "idle" and app.run_state.result is None
            assert text_of(pilot, "#answer-status") == "ready"
            assert error == (
                "the map prompt budget (100 tokens) cannot fit the Map prompt itself (130 tokens): "
                "raise the Map budget field or lower the Map reserve field"
            )
            # wrapped in the sidebar, scrolled into sight below the Run button (after a refresh)
            await wait_until(
                pilot,
                lambda: " the map prompt budget (100 " in screen_text(app)
                and " tokens) cannot fit the Map prompt " in screen_text(app),
                what="the form error in sight",
            )
            shown = screen_text(app)
            assert "Cannot run" in shown  # and a toast

            # A value that is not a number is caught as you type, before any run.
            app.screen.query_one("#opt-concurrency", Input).value = "abc"
            await pilot.pause()
            assert text_of(pilot, "#err-concurrency") == "must be a positive integer, got 'abc'"
            await ask(pilot)
            assert text_of(pilot, "#form-error") == "Fix the highlighted options first."
            assert app.run_state.phase == "idle"

            # A seed in digits that are not ASCII ("²") is an error, never a crash.
            app.screen.query_one("#opt-concurrency", Input).value = "2"
            app.screen.query_one("#opt-seed", Input).value = "²"
            await pilot.pause()
            assert text_of(pilot, "#err-seed") == "a non-negative integer, or empty for random"
            await ask(pilot)
            assert text_of(pilot, "#form-error") == "Fix the highlighted options first."
            assert app.run_state.phase == "idle"
        assert server.requests == []


async def test_esc_cancels_mid_run_and_keeps_the_finished_batches(store: Path) -> None:
    gate = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=gate)
    script = Scripted({"ns/1": map_reply("Bridge funds.", 90), "ns/2": held, "ns/3": held})
    with ScriptedChatServer(script) as server:
        try:
            app = make_app(store, server.base_url)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: len(server.chat_requests()) == 3
                                 and app.run_state.cells[0].state == "succeeded", what="two held requests")
                app.repaint()
                await pilot.pause()
                assert text_of(pilot, "#batch-counts") == "· queued 0  ▸ running 2  ■ succeeded 1  ✗ failed 0"
                assert text_of(pilot, "#answer-status") == "running Map…"
                await pilot.press("escape")
                await wait_finished(pilot)

                result = app.run_state.result
                assert result.status == "cancelled"
                assert [b.status for b in result.batches] == ["succeeded", "cancelled", "cancelled"]
                assert result.batches[0].answer == "Bridge funds." and result.batches[0].usefulness == 90
                assert text_of(pilot, "#answer-status") == "CANCELLED"
                assert text_of(pilot, "#batch-counts") == "· q 0  ▸ run 0  ■ ok 1  ✗ fail 0  ⊘ cancel 2"  # abbreviated to fit
                assert text_of(pilot, "#answer-meta") == (
                    "0 of 3 batches failed · 0 answers selected · not shuffled\ncancelled by the user during Map"
                )
                assert rows(pilot, "#scores-table") == [["0", "90", "ns/1"]]
                assert isinstance(app.screen, MainScreen) and app.is_running
        finally:
            gate.set()
        assert all(r.stage == "map" for r in server.chat_requests())


async def test_drill_down_from_the_answer_citations(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("Bridge funds.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            assert citations(app) == ["ns/1"]
            app.screen.query_one("#citations", OptionList).focus()
            await pilot.press("enter")
            await pilot.pause()
            await wait_community(pilot)

            screen = app.screen
            assert isinstance(screen, CommunityScreen) and screen.community_id == "ns/1"
            header = text_of(pilot, "#community-header")
            assert header.startswith("Community ns/1  (no name)\nNamespace ns   Level 0   Leaf yes")
            assert str(screen.query_one("#summary", Static).render()).startswith(
                "The harbour bridge is funded by the port authority. Clerks keep a ledger"
            )
            await pilot.click("#--content-tab-tab-claims")
            await pilot.pause()
            assert rows(pilot, "#claims") == [
                ["Port Authority", "Harbour Bridge", "pays for the bridge", "k1"],
                ["Port Authority", "—", "meets every month", "k1"],
            ]
            assert text_of(pilot, "#claim-detail") == (
                "Claim c1  of leaf ns/1   Enter: the claim view\n"
                "Port Authority -> Harbour Bridge: pays for the bridge\n\n"
                "Chunk k1  from Annual report\nThe authority approved the bridge budget.\n"
                "Highlighted: the sentence that best matches the description — an approximate match "
                "(the store has no source text for this claim)."
            )
            await pilot.click("#--content-tab-tab-sources")
            await pilot.pause()
            assert text_of(pilot, "#chunk-0") == (
                "Chunk k1  from Annual report\nThe authority approved the bridge budget.\n"
                "1 claim passage marked: 0 quoted, 1 approximate (best-matching sentence)")
            assert "The authority approved the bridge budget." in screen_text(app)

            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
            assert app.run_state.result.status == "completed"  # the run is still shown


async def test_a_failed_batch_opens_from_the_retries_table_with_its_raw_response(store: Path) -> None:
    script = Scripted({
        "ns/1": map_reply("Bridge funds.", 90),
        "ns/2": map_reply("Fleets.", 20),
        "ns/3": Reply(completion("sorry, I cannot do JSON")),
    })
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            app.screen.query_one("#tabs", TabbedContent).active = "tab-retries"
            await pilot.pause()
            table = app.screen.query_one("#retries-table", DataTable)
            table.focus()
            assert [r[:3] for r in rows(pilot, "#retries-table")] == [["2", "1", "invalid_json"], ["2", "2", "invalid_json"]]
            await pilot.press("down", "enter")
            await pilot.pause()

            screen = app.screen
            assert isinstance(screen, BatchScreen) and screen.batch.index == 2
            assert text_of(pilot, "#batch-header") == (
                "Map batch 2   failed   usefulness —   prompt tokens "
                f"{screen.batch.prompt_tokens}   communities 1   parts 1   attempts 2"
            )
            assert screen.query_one("#batch-tabs", TabbedContent).active == "tab-attempts"
            raw = [area.text for area in screen.query(".raw-response").results(TextArea)]
            assert raw == ["sorry, I cannot do JSON", "sorry, I cannot do JSON"]
            headers = [str(s.render()) for s in screen.query(".attempt-header").results(Static)]
            assert headers == [
                "Attempt 1   started 2026-01-02T03:04:05+00:00   duration 0.000 s   result invalid_json",
                "Attempt 2   started 2026-01-02T03:04:05+00:00   duration 0.000 s   result invalid_json",
            ]
            assert "sorry, I cannot do JSON" in screen_text(app)
            assert screen.query_one("#prompt", TextArea).text == next(
                r.prompt for r in server.chat_requests() if community_of(r) == "ns/3"
            )
            await pilot.press("escape")
            await pilot.pause()

            # The same batch from the batch grid: cursor to the third cell, Enter.
            grid = app.screen.query_one(BatchGrid)
            grid.focus()
            await pilot.press("right", "right", "enter")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen) and app.screen.batch.index == 2
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)


async def test_g_then_a_bare_number_opens_that_community(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")  # the query field has focus: a letter is typed, not a command
        await pilot.pause()
        assert app.screen.query_one("#query", Input).value == "g" and isinstance(app.screen, MainScreen)

        app.screen.query_one(BatchGrid).focus()
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, GoToCommunityScreen)
        await pilot.press("9", "enter")
        await pilot.pause()
        await wait_lookup(pilot)
        assert text_of(pilot, "#goto-error") == "No community, community name or entity 9 in namespace ns."
        await pilot.press("backspace", "2", "enter")
        await pilot.pause()
        await wait_lookup(pilot)
        await wait_community(pilot)
        assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == "ns/2"
        assert text_of(pilot, "#community-header").startswith("Community ns/2")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_the_key_footer_follows_the_focus_and_a_click_presses_a_key(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        line = screen_text(app).splitlines()[-1]
        assert line.split() == ["^o", "Setup", "^q", "Quit", "^p", "palette"]  # letters go to the query field
        app.screen.query_one(BatchGrid).focus()
        await pilot.pause()
        line = screen_text(app).splitlines()[-1]
        assert line.split() == ["⏎", "Open", "batch", "/", "Question", "^o", "Setup", "^q", "Quit", "g", "Go", "to", "community",
                                "e", "Export", "x", "Explore", "?", "Keys", "^p", "palette"]
        await pilot.click(KeyFooter, offset=(line.index("? Keys"), 0))
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)


async def test_ctrl_q_during_a_run_asks_first(store: Path) -> None:
    gate = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=gate)
    with ScriptedChatServer(Scripted({"ns/1": held, "ns/2": held, "ns/3": held})) as server:
        try:
            app = make_app(store, server.base_url)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: len(server.chat_requests()) == 3, what="three held requests")
                await pilot.press("ctrl+q")
                await pilot.pause()
                assert isinstance(app.screen, ConfirmScreen)
                assert "A run is going. Quit anyway?" in screen_text(app)
                await pilot.press("n")
                await pilot.pause()
                assert isinstance(app.screen, MainScreen) and app.is_running and app.run_state.running

                await pilot.press("ctrl+q")
                await pilot.pause()
                await pilot.press("y")
                await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
            assert app.return_code == 0
            assert app.cancel_event.is_set()
        finally:
            gate.set()


async def test_ctrl_q_when_idle_quits_at_once(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    assert app.return_code == 0
