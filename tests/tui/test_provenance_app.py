"""From an answer to the exact source passage, in the real app: the claim view, an
entity's communities, the Sources tab's marks, find (ctrl+f), go-to by name or entity,
and the communities an answer rests on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import DataTable, Input, Markdown, OptionList, Static, TabbedContent, TextArea

from graphrag_tui.store.schema import SCHEMA_SQL
from graphrag_tui.tui.citations import SCHEME
from graphrag_tui.tui.messages import OpenBatch, OpenRecord
from graphrag_tui.tui.provenance_text import APPROXIMATE_STYLE, QUOTED_STYLE
from graphrag_tui.tui.screens.claim import ClaimScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.goto import GoToCommunityScreen
from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.screens.record import RecordScreen
from graphrag_tui.tui.widgets.find_bar import CURRENT_STYLE, MATCH_STYLE, MarkableStatic
from tests.chat_server import Reply, Scripted, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.stores import provenance_store

from .conftest import ask, make_app, wait_community, wait_finished, wait_lookup, wait_until

SIZE = (120, 40)
CHUNK = ("The council met in March. The authority approved the bridge budget of four million. "
         "Tolls will repay the loan by 2010. Fishing boats pay no toll.")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return provenance_store(tmp_path / "provenance.db")


def text(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def styled(widget: MarkableStatic, style: str) -> list[str]:
    """The pieces of the widget's text drawn in `style`."""
    base: Text = widget.base
    return [base.plain[span.start:span.end] for span in base.spans if str(span.style) == style]


def options(app, selector: str) -> list[str]:
    listing = app.screen.query_one(selector, OptionList)
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


async def open_claim(pilot, claim_id: str) -> ClaimScreen:
    pilot.app.post_message(OpenRecord("claim", claim_id))
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ClaimScreen) and pilot.app.screen.loaded,
                     what="the claim view")
    await pilot.pause()
    return pilot.app.screen


async def test_enter_on_a_claim_opens_the_claim_view_with_its_quoted_passage(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        app.open_community("ns/1")
        await wait_community(pilot)
        await pilot.press("2")  # the Claims tab
        await pilot.pause()
        table = app.screen.query_one("#claims", DataTable)
        assert app.focused is table
        # The chunk id is shown whole (no cut at 16 columns).
        assert [cell.plain for cell in table.get_row_at(0)][3] == "ns/chunk-1"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ClaimScreen) and app.screen.loaded, what="claim view")
        await pilot.pause()
        screen = app.screen
        assert text(app, "#claim-header") == (
            "Claim c1   leaf community ns/1   namespace ns\nType FUNDING   Status TRUE   From 1998-03-01")
        assert options(app, "#claim-entities") == [
            "Subject  Port Authority   Enter: its communities and claims",
            "Object   Harbour Bridge   Enter: its communities and claims",
        ]
        assert text(app, "#claim-description") == "The port authority pays for the harbour bridge."
        assert text(app, "#claim-source-title") == (
            "Source: chunk ns/chunk-1  from Annual report 1998\n"
            "Highlighted: the passage the claim quotes (its source text).")
        chunk = screen.query_one("#claim-chunk", MarkableStatic)
        assert chunk.base.plain == CHUNK
        assert styled(chunk, QUOTED_STYLE) == ["The authority approved the bridge budget"]
        assert text(app, "#claim-siblings-title") == "Other claims citing this chunk (2; Enter opens one)"
        assert options(app, "#claim-siblings") == [
            "Port Authority: Tolls repay the bridge loan.",
            "City Council: Fishing boats are exempt from the toll.",
        ]

        # Enter on the subject: its entity view, with the communities whose members include it.
        assert app.focused is screen.query_one("#claim-entities")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordScreen) and app.screen.loaded,
                         what="the entity view")
        assert (app.screen.kind, app.screen.record_id) == ("entity", "e1")
        assert text(app, "#record-text") == "Entity Port Authority\nId e1   Namespace ns\n\n(no description)"
        assert options(app, "#record-links") == [
            "Communities whose members include it (2)", "L0 Harbour and its money  ns/0", "L1 Bridge funding  ns/1",
            "Claims with it as subject or object (2)",
            "Port Authority -> Harbour Bridge: The port authority pays for the harbour bridge.",
            "Port Authority: Tolls repay the bridge loan.",
        ]
        assert app.focused is app.screen.query_one("#record-links")
        await pilot.press("down", "down", "enter")  # past the heading and ns/0, to ns/1
        await wait_community(pilot)
        assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == "ns/1"
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert app.screen is screen
        # Enter on the object: the entity of the object.
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordScreen) and app.screen.loaded,
                         what="the object's entity view")
        assert (app.screen.kind, app.screen.record_id) == ("entity", "e2")
        assert options(app, "#record-links")[:3] == [
            "Communities whose members include it (2)", "L0 Harbour and its money  ns/0", "L1 Bridge funding  ns/1"]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen

        # Another claim citing the chunk opens its own view: no source text, an approximate match.
        screen.query_one("#claim-siblings", OptionList).focus()
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ClaimScreen) and app.screen is not screen
                         and app.screen.loaded, what="the other claim")
        await pilot.pause()
        assert app.screen.claim_id == "c3"
        assert text(app, "#claim-header") == "Claim c3   leaf community ns/2   namespace ns"
        assert options(app, "#claim-entities") == ["Subject  City Council   Enter: its communities and claims"]
        assert text(app, "#claim-source-title") == (
            "Source: chunk ns/chunk-1  from Annual report 1998\n"
            "Highlighted: the sentence that best matches the description — an approximate match "
            "(the store has no source text for this claim).")
        assert styled(app.screen.query_one("#claim-chunk", MarkableStatic), APPROXIMATE_STYLE) == [
            "Fishing boats pay no toll."]


async def test_a_missing_claim_says_so(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await open_claim(pilot, "nope")
        assert text(app, "#claim-missing") == "No claim nope in this store.\n\nPress Esc to go back."
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_sources_mark_every_claims_passage(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        app.open_community("ns/0")  # its leaves ns/1 and ns/2 hold all three claims
        await wait_community(pilot)
        await pilot.press("3")
        await pilot.pause()
        chunk = app.screen.query_one("#chunk-0", MarkableStatic)
        assert chunk.base.plain == (
            "Chunk ns/chunk-1  from Annual report 1998\n" + CHUNK + "\n"
            "3 claim passages marked: 2 quoted, 1 approximate (best-matching sentence)")
        assert styled(chunk, QUOTED_STYLE)[:2] == ["The authority approved the bridge budget", "Tolls will repay the loan"]
        assert styled(chunk, APPROXIMATE_STYLE)[0] == "Fishing boats pay no toll."


async def test_find_in_the_claims_table_the_chunk_and_the_prompt(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        app.open_community("ns/0")
        await wait_community(pilot)
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one("#claims", DataTable)
        await pilot.press("ctrl+f", *"toll")
        await pilot.pause()
        assert text(app, "#find-count") == "1 of 2"
        assert table.cursor_row == 1  # "Tolls repay the bridge loan."
        await pilot.press("down")
        assert (text(app, "#find-count"), table.cursor_row) == ("2 of 2", 2)
        await pilot.press("up")
        assert (text(app, "#find-count"), table.cursor_row) == ("1 of 2", 1)
        assert "Tolls repay the bridge loan." in text(app, "#claim-detail")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.query_one("#find-bar").display and app.focused is table

        await open_claim(pilot, "c1")
        await pilot.press("ctrl+f", *"TOLL")
        await pilot.pause()
        chunk = app.screen.query_one("#claim-chunk", MarkableStatic)
        assert text(app, "#find-count") == "1 of 2"
        shown = chunk.shown
        assert [shown.plain[s.start:s.end] for s in shown.spans if str(s.style) == CURRENT_STYLE] == ["Toll"]
        assert [shown.plain[s.start:s.end] for s in shown.spans if str(s.style) == MATCH_STYLE] == ["toll"]
        await pilot.press(*"xyz")
        assert text(app, "#find-count") == "no match"
        await pilot.press("escape")
        await pilot.pause()
        assert chunk.shown is chunk.base


async def test_find_selects_the_match_in_a_batch_prompt(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 90), "ns/2": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            app.post_message(OpenBatch(0))
            await pilot.pause()
            await pilot.press("3")  # the Prompt tab
            await pilot.pause()
            prompt = app.screen.query_one("#prompt", TextArea)
            await pilot.press("ctrl+f", *"port authority")
            await pilot.pause()
            assert prompt.selected_text.casefold() == "port authority"
            assert text(app, "#find-count").endswith(f"of {prompt.text.casefold().count('port authority')}")


async def test_go_to_takes_a_community_name_or_an_entity_name(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one("#query", Input).blur()
        app.screen.query_one("#tabs").focus()
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, GoToCommunityScreen)
        await pilot.press(*"fishng")  # a typo: matched fuzzily
        await pilot.press("enter")
        await wait_lookup(pilot)
        assert text(app, "#goto-error") == "No community fishng; 1 match by name in namespace ns (Down, then Enter to open):"
        assert options(app, "#goto-matches") == ["ns/2  Fishing fleets  level 1"]

        app.screen.query_one("#goto-input", Input).value = "city council"
        await pilot.press("enter")
        await wait_lookup(pilot)
        assert options(app, "#goto-matches") == [
            "ns/0  Harbour and its money  level 0  (member City Council)",
            "ns/2  Fishing fleets  level 1  (member City Council)",
        ]
        await pilot.press("down", "down", "enter")
        await wait_community(pilot)
        assert app.screen.community_id == "ns/2"

        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("g", *"nothing here", "enter")
        await wait_lookup(pilot)
        assert text(app, "#goto-error") == "No community, community name or entity nothing here in namespace ns."
        app.screen.query_one("#goto-input", Input).value = "1"
        await pilot.press("enter")  # an id still opens at once
        await wait_community(pilot)
        assert app.screen.community_id == "ns/1"


async def test_rests_on_lists_the_answers_citations_first_with_names_a_filter_and_links(store: Path) -> None:
    reduce_answer = "The authority pays [Data: Reports (2)]. See also ns/1."
    script = Scripted({
        "ns/1": map_reply("The port authority funds the bridge.", 90),
        "ns/2": map_reply("Boats pay no toll.", 40),
    }, reduce=reduce_reply(reduce_answer))
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            panel = app.screen.query_one("#answer-panel")
            await wait_until(pilot, lambda: bool(panel.refs), what="the community names")
            await pilot.pause()
            assert text(app, "#citations-title") == (
                "Rests on communities: 2 cited in the answer (●), then 0 more of the selected answers. Enter opens one.")
            assert options(app, "#citations") == ["● ns/2  Fishing fleets", "● ns/1  Bridge funding"]
            markdown = app.screen.query_one("#answer-text", Markdown)
            assert markdown.source == (
                f"The authority pays [Data: Reports ([2]({SCHEME}ns%2F2))]. See also [ns/1]({SCHEME}ns%2F1).")
            field = app.screen.query_one("#citations-filter", Input)
            field.focus()
            await pilot.press(*"bridge")
            assert options(app, "#citations") == ["● ns/1  Bridge funding"]
            await pilot.press("enter")  # from the filter to the list
            assert app.focused is app.screen.query_one("#citations", OptionList)
            # What a click on the citation does (MarkdownBlock.action_link):
            # A link the model wrote, showing one community and naming another, opens nothing.
            markdown.post_message(Markdown.LinkClicked(markdown, "community:ns%2F2"))
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
            markdown.post_message(Markdown.LinkClicked(markdown, f"{SCHEME}ns%2F2"))
            await wait_community(pilot)
            assert app.screen.community_id == "ns/2"


async def test_the_retries_tab_shows_the_focused_failure_in_full(store: Path) -> None:
    long_text = "sorry, " + "I cannot do JSON today " * 12
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 90),
                       "ns/2": Reply(completion(long_text))})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            app.screen.query_one("#tabs", TabbedContent).active = "tab-retries"
            await pilot.pause()
            table = app.screen.query_one("#retries-table", DataTable)
            table.focus()
            await pilot.press("down")
            await pilot.pause()
            assert table.cursor_row == 1
            failure = app.run_state.failures[1]
            then = "retried" if failure.will_retry else "gave up"
            assert len(failure.message) > 160  # longer than a table cell, which is cut
            assert table.get_row_at(1)[4].plain == failure.message[:159] + "…"
            assert text(app, "#retries-detail") == (
                f"Batch {failure.batch_index}, attempt {failure.attempt}: invalid_json ({then})\n{failure.message}")


async def test_a_claim_citing_a_missing_chunk_and_hostile_text_shows_literally(tmp_path: Path) -> None:
    from tests.stores import build_store

    evil = "[bold]x[/] [@click=app.quit]q \x1b[31mred"
    path = build_store(
        tmp_path / "hostile.db",
        [{"id": "ns/1", "summary_content": "S."}],
        entities=[{"id": "e1", "name": evil}],
        claims=[{"id": "c9", "subject_entity_id": "e1", "description": evil, "source_chunk_id": "gone",
                 "source_text": evil, "type": evil, "community_summary_id": "ns/1"}],
    )
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await open_claim(pilot, "c9")
        shown = "[bold]x[/] [@click=app.quit]q ␛[31mred"
        assert text(app, "#claim-header") == f"Claim c9   leaf community ns/1   namespace ns\nType {shown}"
        assert text(app, "#claim-description") == shown
        assert text(app, "#claim-source-title") == (
            "Source: chunk gone  from (untitled document)\nThis chunk is not in the store (dangling reference).")
        assert text(app, "#claim-siblings-title") == "No other claim cites this chunk."
        assert not app.screen.query("#claim-chunk")
        await pilot.press("ctrl+f", *"click")
        await pilot.pause()
        assert text(app, "#find-count") == "1 of 1"
        assert app.is_running


async def test_a_claim_id_twice_in_a_store_without_keys_is_listed_once(tmp_path: Path) -> None:
    """A store made elsewhere, without its keys, may hold a claim id twice: listing the other
    claims citing the chunk crashed the app (OptionList's DuplicateID)."""
    store = tmp_path / "no-keys.db"
    db = sqlite3.connect(store)
    db.executescript(SCHEMA_SQL.replace(" PRIMARY KEY", ""))
    db.executescript("""
        INSERT INTO rag_parents VALUES ('d/1', 'ns', 'Harbour report', 'full text');
        INSERT INTO rag_children VALUES ('k/1', 'ns', 'd/1', 'The bridge budget was approved. The port pays.');
        INSERT INTO rag_entities VALUES ('e/1', 'ns', 'Port Authority', NULL);
        INSERT INTO rag_community_summaries VALUES
            ('ns/1', 'ns', 'Bridge', 'The bridge is funded by the port authority.', 0, NULL, NULL);
        INSERT INTO rag_claims VALUES
            ('c/1', 'ns', 'e/1', NULL, 'pays for the bridge', 'd/1', 'k/1', 'ns/1'),
            ('c/9', 'ns', 'e/1', NULL, 'approved budget', 'd/1', 'k/1', 'ns/1'),
            ('c/9', 'ns', 'e/1', NULL, 'approved budget again', 'd/1', 'k/1', 'ns/1');
    """)
    db.close()
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await open_claim(pilot, "c/1")
        assert options(app, "#claim-siblings") == ["Port Authority: approved budget"]
        app.screen.query_one("#claim-siblings", OptionList).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ClaimScreen) and app.screen.claim_id == "c/9"
                         and app.screen.loaded, what="claim c/9")
        assert app.is_running
