"""Pilot tests of the drill-down, batch and dialog screens, pushed onto a tiny host App."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import DataTable, Input, OptionList, Static, TextArea

from graphrag_tui.engine.batcher import MapBatch, PartRef
from graphrag_tui.engine.prompts import map_messages, prompt_text
from graphrag_tui.engine.result import RAW_RESPONSE_CAP, Attempt, BatchResult
from graphrag_tui.store import CommunityStore
from graphrag_tui.tui.app import GraphRAGApp
from graphrag_tui.tui.messages import OpenCommunity, OpenRecord
from graphrag_tui.tui.safe_text import clean
from graphrag_tui.tui.screens.batch import SHOW_LIMIT, BatchScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.confirm import ConfirmScreen
from graphrag_tui.tui.screens.export import ExportScreen, default_export_path
from graphrag_tui.tui.screens.goto import GoToCommunityScreen
from graphrag_tui.tui.screens.save_response import SaveResponseScreen
from tests.stores import build_store

EVIL = "[bold]x[/bold] [/] [@click=app.quit]q \x1b[31mred \x1b]8;;http://evil\x07link \u202etxt"
#: What the screen must show for EVIL: markup literal, ESC/BEL as control pictures, no bidi.
EVIL_SHOWN = "[bold]x[/bold] [/] [@click=app.quit]q ␛[31mred ␛]8;;http://evil␇link txt"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e")


class Host(App[None]):
    """Records what the screens ask the App to do; styled by the app's stylesheet."""

    CSS_PATH = GraphRAGApp.CSS_PATH

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []
        self.results: list[object] = []
        self.records: list[str] = []

    def on_open_community(self, message: OpenCommunity) -> None:
        self.opened.append(message.community_id)

    def on_open_record(self, message: OpenRecord) -> None:
        self.records.append(f"{message.kind}:{message.record_id}")

    def record(self, result: object) -> None:
        self.results.append(result)


def screen_text(app: App) -> str:
    """Everything the active screen draws, as plain text (what reaches the terminal)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def assert_clean(text: str) -> None:
    for char in FORBIDDEN:
        assert char not in text


@pytest.fixture
def store(tmp_path: Path):
    path = build_store(
        tmp_path / "store.db",
        [
            {"id": "ns/0", "community_name": "Harbour", "summary_content": "The harbour as a whole."},
            {"id": "ns/1", "community_name": "Bridge", "level": 1, "parent_community_id": "ns/0",
             "summary_content": "The bridge is funded by the port authority.",
             "members": '["Port Authority", "Harbour Bridge"]'},
            {"id": "ns/2", "community_name": EVIL, "level": 1, "parent_community_id": "ns/0",
             "summary_content": EVIL + "\nSecond line.", "members": json.dumps([EVIL])},
            {"id": "ns/9", "community_name": "Orphan", "level": 1, "parent_community_id": "ns/gone",
             "summary_content": "Its parent row is missing.", "members": '["Nobody Known", "Harbour Bridge"]'},
        ],
        entities=[
            {"id": "e1", "name": "Port Authority"},
            {"id": "e2", "name": "Harbour Bridge"},
            {"id": "e3", "name": EVIL},
        ],
        documents=[{"id": "d1", "title": "Annual report"}, {"id": "d2", "title": EVIL}],
        chunks=[
            {"id": "k1", "parent_id": "d1", "content": "The authority approved the bridge budget."},
            {"id": "k2", "parent_id": "d2", "content": EVIL},
        ],
        claims=[
            {"id": "c1", "subject_entity_id": "e1", "object_entity_id": "e2",
             "description": "pays for the bridge", "source_chunk_id": "k1",
             "community_summary_id": "ns/1"},
            {"id": "c2", "subject_entity_id": "e1", "description": "meets every month",
             "source_chunk_id": "k404", "community_summary_id": "ns/1"},
            {"id": "c3", "subject_entity_id": "e3", "object_entity_id": "e3",
             "description": EVIL, "source_chunk_id": "k2", "community_summary_id": "ns/2"},
        ],
    )
    with CommunityStore.open(path) as opened:
        yield opened


async def push(app: Host, pilot, screen, callback=None) -> None:
    app.push_screen(screen, callback)
    await pilot.pause()
    await pilot.pause()
    if isinstance(screen, CommunityScreen):  # it reads the store in a worker
        await wait_for(pilot, lambda: screen.loaded, "the community to load")


async def wait_for(pilot, condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)
    await pilot.pause()


async def submit_goto(pilot, screen: GoToCommunityScreen) -> None:
    """Enter in the go-to dialog, then wait for the worker's lookup to be answered."""
    await pilot.press("enter")
    await pilot.pause()
    await wait_for(pilot, lambda: not screen.looking, "the lookup")


def rendered(app: App, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def hierarchy(app: App) -> list[str]:
    options = app.screen.query_one("#hierarchy", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


# -- CommunityScreen ---------------------------------------------------------------------


async def test_community_overview_shows_hierarchy_summary_members(store) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/1"))
        assert rendered(app, "#community-header") == (
            "Community ns/1  Bridge\n"
            "Namespace ns   Level 1   Leaf yes   Parent ns/0   Claims 2   Chunks 1"
        )
        assert hierarchy(app) == [
            "Parent", "ns/0", "Children (0)", "none", "Descendant leaves",
            "this community is a leaf", "Members (2)", "Port Authority  e1", "Harbour Bridge  e2",
        ]
        assert rendered(app, "#summary") == "The bridge is funded by the port authority."
        assert rendered(app, "#members") == "Port Authority, Harbour Bridge"
        text = screen_text(app)
        assert "The bridge is funded by the port authority." in text
        assert "Members (2)" in text

        await push(app, pilot, CommunityScreen(store, "ns/0"))
        assert hierarchy(app) == [
            "Parent", "none: a root community", "Children (2)", "ns/1", "ns/2",
            "Descendant leaves (2)", "ns/1", "ns/2",
        ]
        assert "Leaf no   Parent none (root)   Claims 3   Chunks 2" in rendered(
            app, "#community-header")


async def test_enter_on_child_posts_open_community_and_esc_pops(store) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/0"))
        options = app.screen.query_one("#hierarchy", OptionList)
        assert app.focused is options
        options.highlighted = 3  # "ns/1" under "Children (2)"
        await pilot.press("enter")
        await pilot.pause()
        options.highlighted = 7  # "ns/2" under "Descendant leaves (2)"
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == ["ns/1", "ns/2"]
        # Headings and notes are disabled: they cannot be highlighted or opened.
        options.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == ["ns/1", "ns/2"]

        await push(app, pilot, CommunityScreen(store, "ns/1"))
        options = app.screen.query_one("#hierarchy", OptionList)
        options.highlighted = 1  # the parent, "ns/0"
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened[-1] == "ns/0" and app.records == []
        await pilot.press("down", "enter")  # the first member, Port Authority: its entity view
        await pilot.pause()
        assert app.records == ["entity:e1"] and app.opened[-1] == "ns/0"
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.records == ["entity:e1", "entity:e2"]

        assert len(app.screen_stack) == 3
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 2
        assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == "ns/0"
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1


async def test_dangling_parent_and_unknown_id(store) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/9"))
        assert rendered(app, "#community-header").endswith(
            "Parent ns/gone (dangling: no such community)   Claims 0   Chunks 0")
        assert hierarchy(app) == ["Parent", "ns/gone (dangling)", "Children (0)", "none", "Descendant leaves",
                                  "this community is a leaf", "Members (2)", "Nobody Known  (no entity)",
                                  "Harbour Bridge  e2"]
        options = app.screen.query_one("#hierarchy", OptionList)
        assert options.get_option_at_index(1).disabled
        assert options.get_option_at_index(7).disabled and not options.get_option_at_index(8).disabled
        await pilot.press("enter")  # the only link: Harbour Bridge (the member with no entity is not one)
        await pilot.pause()
        assert app.records == ["entity:e2"] and app.opened == []

        await push(app, pilot, CommunityScreen(store, "ns/404"))
        assert rendered(app, "#community-missing") == (
            "No community ns/404 in this store.\n\nPress Esc to go back.")
        assert "No community ns/404 in this store." in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == "ns/9"


async def test_claims_table_and_selected_claim_shows_its_chunk(store) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/1"))
        await pilot.click("#--content-tab-tab-claims")
        await pilot.pause()
        table = app.screen.query_one("#claims", DataTable)
        assert [[cell.plain for cell in table.get_row_at(i)] for i in range(table.row_count)] == [
            ["Port Authority", "Harbour Bridge", "pays for the bridge", "k1"],
            ["Port Authority", "—", "meets every month", "k404"],
        ]
        assert rendered(app, "#claim-detail") == (
            "Claim c1  of leaf ns/1   Enter: the claim view\n"
            "Port Authority -> Harbour Bridge: pays for the bridge\n\n"
            "Chunk k1  from Annual report\n"
            "The authority approved the bridge budget.\n"
            "Highlighted: the sentence that best matches the description — an approximate match "
            "(the store has no source text for this claim)."
        )
        table.focus()
        await pilot.press("down")
        await pilot.pause()
        assert rendered(app, "#claim-detail") == (
            "Claim c2  of leaf ns/1   Enter: the claim view\n"
            "Port Authority: meets every month\n\n"
            "Chunk k404 is not in the store (dangling reference)."
        )
        await pilot.press("up")
        await pilot.pause()
        assert app.screen.query_one("#chunk-0").has_class("-selected")
        text = screen_text(app)
        assert "pays for the bridge" in text and "Chunk k1  from Annual report" in text
        await pilot.press("enter")  # Enter on a claim opens the claim view
        await pilot.pause()
        assert app.records == ["claim:c1"]

        await pilot.click("#--content-tab-tab-sources")
        await pilot.pause()
        assert rendered(app, "#chunk-0") == (
            "Chunk k1  from Annual report\nThe authority approved the bridge budget.\n"
            "1 claim passage marked: 0 quoted, 1 approximate (best-matching sentence)")
        assert "The authority approved the bridge budget." in screen_text(app)
        assert app.opened == []


async def test_community_screen_injection_is_literal(store) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/2"))
        assert rendered(app, "#community-header").startswith(f"Community ns/2  {EVIL_SHOWN}\n")
        assert rendered(app, "#summary") == EVIL_SHOWN + "\nSecond line."
        assert rendered(app, "#members") == EVIL_SHOWN
        overview = screen_text(app)
        assert EVIL_SHOWN in overview
        assert_clean(overview)

        # Click right on the would-be link: nothing runs, the app keeps going.
        summary = app.screen.query_one("#summary", Static)
        column = EVIL_SHOWN.index("[@click")
        for offset in range(column, column + 18):
            await pilot.click(summary, offset=(offset, 0))
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, CommunityScreen)

        await pilot.click("#--content-tab-tab-claims")
        await pilot.pause()
        table = app.screen.query_one("#claims", DataTable)
        assert [cell.plain for cell in table.get_row_at(0)] == [
            EVIL_SHOWN, EVIL_SHOWN, EVIL_SHOWN, "k2"]
        claims = screen_text(app)
        assert "[bold]x[/bold] [/] [@click=app.quit]q" in claims
        assert f"{EVIL_SHOWN} -> {EVIL_SHOWN}: {EVIL_SHOWN}" in rendered(app, "#claim-detail")
        assert_clean(claims)
        table.focus()
        await pilot.press("enter")
        await pilot.pause()

        await pilot.click("#--content-tab-tab-sources")
        await pilot.pause()
        assert rendered(app, "#chunk-0") == (
            f"Chunk k2  from {EVIL_SHOWN}\n{EVIL_SHOWN}\n"
            "1 claim passage marked: 0 quoted, 1 approximate (best-matching sentence)")
        sources = screen_text(app)
        assert EVIL_SHOWN in sources
        assert_clean(sources)
        assert app.is_running and app.opened == []


async def test_long_lists_are_cut_and_say_so(store, monkeypatch) -> None:
    from graphrag_tui.tui.screens import community

    monkeypatch.setattr(community, "MAX_ROWS", 1)
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/0"))
        assert hierarchy(app) == [
            "Parent", "none: a root community", "Children (first 1 of 2)", "ns/1",
            "Descendant leaves (first 1 of 2)", "ns/1",
        ]
        assert app.screen.query_one("#claims", DataTable).row_count == 1
        assert "Claims (first 1 of 3)" in screen_text(app)
        options = app.screen.query_one("#hierarchy", OptionList)
        options.highlighted = 5
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == ["ns/1"]


class Gate:
    """Wraps a real store method: records the thread each call runs on and holds the call
    until `release` (so a test sees what the screen shows while the store is being read)."""

    def __init__(self, method) -> None:
        self.method = method
        self.threads: list[int] = []
        self.entered = threading.Event()
        self.released = threading.Event()

    def __call__(self, *args):
        self.threads.append(threading.get_ident())
        self.entered.set()
        assert self.released.wait(10), "the test never released the store call"
        return self.method(*args)


async def test_community_is_read_off_the_ui_thread_behind_a_loading_line(store, monkeypatch) -> None:
    gate = Gate(store.community)
    monkeypatch.setattr(store, "community", gate)
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = CommunityScreen(store, "ns/1")
        app.push_screen(screen)
        await pilot.pause()
        assert gate.entered.wait(5)
        await pilot.pause()
        # The UI thread is free while the store is read: the loading line is drawn.
        assert not screen.loaded and screen.detail is None
        assert rendered(app, "#community-loading") == "Reading community ns/1…"
        assert "Reading community ns/1…" in screen_text(app)
        assert not screen.query("#community-header")
        gate.released.set()
        await wait_for(pilot, lambda: screen.loaded, "the community to load")
        assert gate.threads != [] and threading.main_thread().ident not in gate.threads
        assert not screen.query("#community-loading")
        assert rendered(app, "#community-header") == (
            "Community ns/1  Bridge\n"
            "Namespace ns   Level 1   Leaf yes   Parent ns/0   Claims 2   Chunks 1"
        )
        assert app.focused is screen.query_one("#hierarchy", OptionList)
        assert screen.query_one("#claims", DataTable).row_count == 2


async def test_community_closed_before_the_store_answers_is_harmless(store, monkeypatch) -> None:
    gate = Gate(store.community)
    monkeypatch.setattr(store, "community", gate)
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = CommunityScreen(store, "ns/1")
        app.push_screen(screen)
        await pilot.pause()
        assert gate.entered.wait(5)
        await pilot.press("escape")  # Esc works while the store is being read
        await pilot.pause()
        assert len(app.screen_stack) == 1
        gate.released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running and len(app.screen_stack) == 1 and not screen.loaded


async def test_community_store_error_is_a_message_not_a_crash(store) -> None:
    """The store's error (a StoreError, never sqlite3's) is shown in words on the screen."""
    store.close()  # every read now fails inside SQLite
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, CommunityScreen(store, "ns/1"))
        assert app.is_running and isinstance(app.screen, CommunityScreen)
        assert rendered(app, "#community-missing") == (
            f"Cannot read community ns/1: Cannot read store {store.path}: "
            "Cannot operate on a closed database.\n\nPress Esc to go back."
        )
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1


# -- BatchScreen -------------------------------------------------------------------------


def make_batch(status: str = "failed") -> tuple[BatchResult, MapBatch, str]:
    parts = (
        PartRef(community_id="ns/1", part=1),
        PartRef(community_id="ns/2", part=1),
        PartRef(community_id="ns/2", part=2),
    )
    content = ("[Community ID: ns/1 | summary part 1]\nHello\n"
               "[Community ID: ns/2 | summary part 1]\n" + EVIL)
    map_batch = MapBatch(index=2, pieces=(content,), community_ids=("ns/1", "ns/2"),
                         parts=parts, part_tokens=(12, 30, 7))
    attempts = [
        Attempt(attempt=1, started_at="2026-01-01T00:00:00+00:00", duration_s=1.5,
                error_kind="invalid_json", error="reply is not JSON: " + EVIL,
                raw_response="  {not json\n\tindented " + EVIL + "\r\nend"),
        Attempt(attempt=2, started_at="2026-01-01T00:00:02+00:00", duration_s=0.25,
                error_kind="timeout", error="timed out after 120 s", raw_response=None),
    ]
    batch = BatchResult(index=2, community_ids=map_batch.community_ids, parts=parts,
                        prompt_tokens=321, attempts=attempts, status=status)
    if status == "succeeded":
        batch = batch.model_copy(update={
            "usefulness": 33.5, "answer": "The bridge " + EVIL,
            "attempts": [Attempt(attempt=1, started_at="2026-01-01T00:00:00+00:00",
                                 duration_s=0.5, raw_response='{"answer": "x"}')],
        })
    prompt = prompt_text(map_messages("what? " + EVIL, content))
    return batch, map_batch, prompt


async def test_batch_screen_failed_batch(store) -> None:
    batch, map_batch, prompt = make_batch("failed")
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, BatchScreen(batch, map_batch, prompt))
        assert rendered(app, "#batch-header") == (
            "Map batch 2   failed   usefulness —   prompt tokens 321   communities 2   parts 3"
            "   attempts 2"
        )
        # A failed batch opens on its attempts.
        text = screen_text(app)
        assert ("Attempt 1   started 2026-01-01T00:00:00+00:00   duration 1.500 s   "
                "result invalid_json") in text
        assert f"reply is not JSON: {EVIL_SHOWN}" in text
        assert "result timeout" in text and "(none: no response was received)" in text
        raw = app.screen.query_one(".raw-response", TextArea)
        assert raw.text == "  {not json\n\tindented " + EVIL_SHOWN + "␍\nend"
        assert raw.read_only
        assert f"indented {EVIL_SHOWN}␍" in text
        assert_clean(text)

        await pilot.click("#--content-tab-tab-prompt")
        await pilot.pause()
        area = app.screen.query_one("#prompt", TextArea)
        assert area.text == clean(prompt)
        assert area.text.replace(EVIL_SHOWN, EVIL.replace("\u202e", "")
                                 ).replace("␛", "\x1b").replace("␇", "\x07") == prompt.replace("\u202e", "")
        text = screen_text(app)
        assert f"User query: what? {EVIL_SHOWN}" in text
        assert "[Community ID: ns/2 | summary part 1]" in text
        assert_clean(text)

        await pilot.click("#--content-tab-tab-answer")
        await pilot.pause()
        assert rendered(app, "#answer") == "No answer: every attempt failed (see Attempts)."

        await pilot.click("#--content-tab-tab-parts")
        await pilot.pause()
        table = app.screen.query_one("#parts", DataTable)
        assert [[cell.plain for cell in table.get_row_at(i)] for i in range(table.row_count)] == [
            ["ns/1", "1", "12"], ["ns/2", "1", "30"], ["ns/2", "2", "7"],
        ]
        table.focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.opened == ["ns/2"]
        assert app.is_running

        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1


async def test_batch_screen_succeeded_batch() -> None:
    batch, map_batch, prompt = make_batch("succeeded")
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, BatchScreen(batch, map_batch, prompt))
        assert rendered(app, "#batch-header").startswith(
            "Map batch 2   succeeded   usefulness 33.5   prompt tokens 321")
        assert rendered(app, "#answer") == "The bridge " + EVIL_SHOWN
        text = screen_text(app)
        assert "The bridge " + EVIL_SHOWN in text
        assert_clean(text)
        await pilot.click("#--content-tab-tab-attempts")
        await pilot.pause()
        assert "result ok" in screen_text(app)
        assert app.screen.query_one(".raw-response", TextArea).text == '{"answer": "x"}'


def huge_attempt_batch(kept: str, whole_bytes: int) -> tuple[BatchResult, MapBatch, str]:
    """A failed batch whose first attempt kept only `kept` of a `whole_bytes` response."""
    batch, map_batch, prompt = make_batch("failed")
    first = batch.attempts[0].model_copy(update={"raw_response": kept, "raw_response_bytes": whole_bytes})
    return batch.model_copy(update={"attempts": [first, batch.attempts[1]]}), map_batch, prompt


async def test_batch_screen_opens_a_huge_response_at_once_and_says_what_is_hidden(tmp_path: Path) -> None:
    # The 64 KiB an attempt keeps of a 20 MB reply (one line, as a model would send it).
    kept = ("{\"answer\": \"" + "word " * 13) * 1000
    kept = kept.encode()[:RAW_RESPONSE_CAP].decode()
    assert len(kept.encode()) == RAW_RESPONSE_CAP
    batch, map_batch, prompt = huge_attempt_batch(kept, 20_000_000)
    app = Host()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        # CPU time of this process (the app and the Pilot): what the app spends opening the
        # view, whatever else the machine runs. Showing a 20 MB reply whole took 30 s.
        began = time.process_time()
        await push(app, pilot, BatchScreen(batch, map_batch, prompt))
        opened = time.process_time() - began
        assert opened < 1.0, f"the batch view took {opened:.2f} s of CPU to open"
        assert app.screen.query_one("#raw-response-0", TextArea).text == kept[:SHOW_LIMIT]
        note = "showing 8 KiB of 20.0 MB; press s to save the first 64 KiB (the rest was not kept)"
        assert rendered(app, ".raw-hidden") == note
        assert note in screen_text(app)
        # Not kept whole: s saves what was kept.
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SaveResponseScreen)
        app.screen.query_one("#save-response-input", Input).value = str(tmp_path / "kept.txt")
        await pilot.press("enter")
        await pilot.pause()
        assert (tmp_path / "kept.txt").read_text(encoding="utf-8") == kept
        assert [n.message for n in app._notifications][-1] == f"Wrote {tmp_path / 'kept.txt'} (64 KiB)"


async def test_batch_screen_saves_the_whole_response_by_the_export_rules(tmp_path: Path) -> None:
    whole = "x" * 70_000 + "\u00e9 end"  # 70,011 bytes
    spilled = tmp_path / "spill.txt"
    spilled.write_text(whole, encoding="utf-8")
    store_file = tmp_path / "store.db"
    store_file.write_bytes(b"store")
    (tmp_path / "link.txt").symlink_to(store_file)
    batch, map_batch, prompt = huge_attempt_batch(whole[:RAW_RESPONSE_CAP], len(whole.encode()))
    app = Host()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await push(app, pilot, BatchScreen(batch, map_batch, prompt, whole_responses={1: spilled}, inputs=(store_file,)))
        assert rendered(app, ".raw-hidden") == "showing 8 KiB of 68.4 KiB; press s to save the whole response"
        app.screen.query_one("#tab-attempts #raw-response-0", TextArea).focus()  # s works from the response too
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SaveResponseScreen)
        field = app.screen.query_one("#save-response-input", Input)
        assert field.value == str(Path.cwd() / "graphrag-batch-2-attempt-1.txt")
        for typed, error in (
            (tmp_path / "link.txt", f"Cannot save: {tmp_path / 'link.txt'} is the input file {store_file}; "
                                    "choose another file"),
            (tmp_path / "missing" / "r.txt", f"Cannot save: folder {tmp_path / 'missing'} does not exist"),
            (tmp_path / ("n" * 256), "Cannot save: the file name is too long (256 bytes; at most 255)"),
            ("~nosuchuser/r.txt", "the file's name: ~nosuchuser is no user's home directory"),
        ):
            field.value = str(typed)
            await pilot.press("enter")
            await pilot.pause()
            assert rendered(app, "#save-response-error") == error
        field.value = str(tmp_path / "reply.txt")
        await pilot.press("enter")
        await pilot.pause()
        assert (tmp_path / "reply.txt").read_bytes() == whole.encode()
        assert [n.message for n in app._notifications][-1] == f"Wrote {tmp_path / 'reply.txt'} (68.4 KiB)"

        # Again to the same file: asked first; No keeps it, Yes replaces it.
        (tmp_path / "reply.txt").write_text("mine")
        for answer, expected in (("n", b"mine"), ("y", whole.encode())):
            await pilot.press("s")
            await pilot.pause()
            app.screen.query_one("#save-response-input", Input).value = str(tmp_path / "reply.txt")
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            assert app.screen.question == f"{tmp_path / 'reply.txt'} already exists. Overwrite it?"
            await pilot.press(answer)
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen)
            assert (tmp_path / "reply.txt").read_bytes() == expected
        assert store_file.read_bytes() == b"store"
        assert sorted(os.listdir(tmp_path)) == ["link.txt", "reply.txt", "spill.txt", "store.db"]


# -- dialogs -----------------------------------------------------------------------------


async def test_goto_resolves_shows_error_inline_and_cancels(store) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = GoToCommunityScreen(lambda text: store.resolve_community("ns", text), "ns")
        await push(app, pilot, screen, app.record)
        field = app.screen.query_one("#goto-input", Input)
        assert app.focused is field
        await pilot.press("9", "9")
        await submit_goto(pilot, screen)
        assert app.screen is screen
        assert rendered(app, "#goto-error") == "No community 99 in namespace ns."
        assert "No community 99 in namespace ns." in screen_text(app)

        # Control characters and bidi overrides typed or pasted into the field are dropped.
        field.value = ""
        field.insert_text_at_cursor("a\x1bb")
        field.insert_text_at_cursor("c\u202ed")
        assert field.value == "abcd"
        field.value = ""
        markup = "[bold]x[/bold] [/] [@click=app.quit]q"
        field.insert_text_at_cursor(markup)
        await submit_goto(pilot, screen)
        assert app.screen is screen
        assert rendered(app, "#goto-error") == f"No community {markup} in namespace ns."
        assert f"No community {markup}" in screen_text(app)
        assert_clean(screen_text(app))

        field.value = "  "
        await pilot.press("enter")
        await pilot.pause()
        assert rendered(app, "#goto-error") == "Type a community id or number."

        field.value = " 2 "
        await submit_goto(pilot, screen)
        assert app.results == ["ns/2"]
        assert len(app.screen_stack) == 1

        await push(app, pilot, GoToCommunityScreen(), app.record)
        app.screen.query_one("#goto-input", Input).value = "anything"
        await pilot.press("enter")
        await pilot.pause()
        await push(app, pilot, GoToCommunityScreen(), app.record)
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == ["ns/2", "anything", None]
        assert app.is_running


async def test_goto_looks_up_off_the_ui_thread_and_shows_store_errors_inline(store) -> None:
    gate = Gate(lambda text: store.resolve_community("ns", text))
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = GoToCommunityScreen(gate, "ns")
        await push(app, pilot, screen, app.record)
        await pilot.press("2", "enter")
        assert gate.entered.wait(5)
        await pilot.pause()
        assert screen.looking and app.screen is screen
        assert rendered(app, "#goto-error") == "Looking for community 2…"
        await pilot.press("enter")  # a second Enter while looking starts no second lookup
        await pilot.pause()
        gate.released.set()
        await wait_for(pilot, lambda: not screen.looking, "the lookup")
        assert len(gate.threads) == 1 and gate.threads[0] != threading.main_thread().ident
        assert app.results == ["ns/2"] and len(app.screen_stack) == 1

        store.close()  # every read now fails inside SQLite: a StoreError, shown inline
        screen = GoToCommunityScreen(lambda text: store.resolve_community("ns", text), "ns")
        await push(app, pilot, screen, app.record)
        await pilot.press("2")
        await submit_goto(pilot, screen)
        assert app.screen is screen
        assert rendered(app, "#goto-error") == (
            f"Cannot read store {store.path}: Cannot operate on a closed database."
        )


async def test_export_dialog(tmp_path: Path) -> None:
    default = default_export_path(42, tmp_path)
    assert default == tmp_path / "graphrag-run-42.json"
    assert default_export_path(None).name == "graphrag-run.json"
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, ExportScreen(default), app.record)
        field = app.screen.query_one("#export-input", Input)
        assert field.value == str(default)
        assert app.focused is field
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == [default]

        await push(app, pilot, ExportScreen(default), app.record)
        field = app.screen.query_one("#export-input", Input)
        field.value = str(tmp_path / "missing" / "x.json")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        assert rendered(app, "#export-error") == f"Folder {tmp_path / 'missing'} does not exist."
        field.value = str(tmp_path / "report")
        await pilot.press("enter")
        await pilot.pause()

        await push(app, pilot, ExportScreen(7), app.record)
        assert app.screen.query_one("#export-input", Input).value == str(
            Path.cwd() / "graphrag-run-7.json")
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == [default, tmp_path / "report", None]
        assert len(app.screen_stack) == 1


@pytest.mark.parametrize(
    ("keys", "expected"),
    [(("y",), True), (("n",), False), (("escape",), False), (("enter",), False),
     (("shift+tab", "enter"), True)],
)
async def test_confirm_screen(keys: tuple[str, ...], expected: bool) -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, ConfirmScreen("A run is going. Quit anyway?"), app.record)
        assert rendered(app, "#confirm-question") == "A run is going. Quit anyway?"
        text = screen_text(app)
        assert "Yes (y)" in text and "No (n)" in text
        await pilot.press(*keys)
        await pilot.pause()
        assert app.results == [expected]
        assert len(app.screen_stack) == 1


async def test_confirm_screen_click_yes() -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await push(app, pilot, ConfirmScreen("Quit?"), app.record)
        await pilot.click("#confirm-yes")
        await pilot.pause()
        assert app.results == [True]
