"""The Explore screen under Pilot: the lazy tree (sort, level filter, expand all, Enter),
search (grouping, marks, every kind opens its view), the entity view and the overview."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static, Tree

from graphrag_tui.tui.app import GraphRAGApp
from graphrag_tui.tui.screens.claim import ClaimScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.explore import MARK_STYLE, ExploreScreen
from graphrag_tui.tui.screens.overview import OverviewScreen
from graphrag_tui.tui.screens.record import RecordScreen
from tests.explore_stores import guards

from .conftest import make_app, wait_community, wait_until


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return guards(tmp_path / "carol.db")


def explore_app(store: Path, tmp_path: Path) -> GraphRAGApp:
    return make_app(store, cache_dir=tmp_path / "cache")


async def open_explore(pilot: Pilot) -> ExploreScreen:
    await wait_until(pilot, lambda: bool(pilot.app.screen.query("#run")), what="the main screen")
    await pilot.pause()
    pilot.app.screen.query_one("#run").focus()
    await pilot.press("x")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, ExploreScreen)
    await wait_until(pilot, lambda: screen.hierarchy is not None, what="the hierarchy")
    await pilot.pause()
    return screen


def labels(screen: ExploreScreen, item=None) -> list[str]:
    item = item or screen.tree.root
    return [str(child.label.plain) for child in item.children]


async def search(pilot: Pilot, screen: ExploreScreen, query: str) -> None:
    field = screen.query_one("#explore-query", Input)
    field.focus()
    field.value = ""
    await pilot.press(*query)
    await wait_until(pilot, lambda: screen.answered_query == query and not screen.searching, timeout=20,
                     what="the search")
    await pilot.pause()


async def test_tree_loads_children_lazily_sorts_filters_and_opens(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_explore(pilot)
        assert isinstance(pilot.app.focused, Input)  # the search box has focus
        assert labels(screen) == ["Guards  L0 · 2 leaves · 2 claims", "Crew dinner  L0 · 1 leaf · 1 claim"]
        guards_item = screen.tree.root.children[0]
        assert len(guards_item.children) == 0 and guards_item.allow_expand  # not loaded until expanded
        await pilot.press("down")  # from the box into the tree
        assert isinstance(pilot.app.focused, Tree)
        await pilot.press("space")
        await pilot.pause()
        assert labels(screen, guards_item) == ["Harrow's visit  L1 · 1 leaf · 1 claim",
                                               "The counting house  L1 · 1 leaf · 1 claim"]
        await pilot.press("s")  # size -> name
        assert screen.sort == "name"
        assert [label.split("  ")[0] for label in labels(screen)] == ["Crew dinner", "Guards"]
        await pilot.press("s")  # rank: this store has none, so on to size
        assert screen.sort == "size"
        await pilot.press("l")  # level 0 only
        assert screen.level == 0 and [lb.split("  ")[0] for lb in labels(screen)] == ["Guards", "Crew dinner"]
        await pilot.press("l")
        assert screen.level == 1
        assert [lb.split("  ")[0] for lb in labels(screen)] == ["Harrow's visit", "The counting house"]
        assert str(screen.query_one("#explore-status", Static).render()).endswith("level 1 only   2 communities")
        await pilot.press("l")
        assert screen.level is None
        screen.tree.move_cursor(screen.tree.root.children[0])
        await pilot.press("asterisk")  # expand all below Guards
        assert screen.tree.root.children[0].is_expanded
        await pilot.press("enter")
        await wait_community(pilot)
        assert isinstance(pilot.app.screen, CommunityScreen) and pilot.app.screen.community_id == "carol/0"


async def test_expanding_after_sort_and_level_filter_and_by_click_and_expand_all(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_explore(pilot)
        await pilot.press("down")
        await pilot.press("s")  # by name: Crew dinner (a leaf), then Guards (not loaded)
        assert labels(screen) == ["Crew dinner  L0 · 1 leaf · 1 claim", "Guards  L0 · 2 leaves · 2 claims"]
        crew, guards_item = screen.tree.root.children
        assert not crew.allow_expand and guards_item.allow_expand and len(guards_item.children) == 0
        await pilot.press("down", "space")
        await pilot.pause()
        assert guards_item.is_expanded
        assert labels(screen, guards_item) == ["Harrow's visit  L1 · 1 leaf · 1 claim",
                                               "The counting house  L1 · 1 leaf · 1 claim"]
        assert [str(line.node.label.plain).split("  ")[0] for line in screen.tree._tree_lines] == [
            "Crew dinner", "Guards", "Harrow's visit", "The counting house"]
        await pilot.press("space")  # collapses: the children stay loaded, once
        assert not guards_item.is_expanded and len(guards_item.children) == 2
        await pilot.press("space")
        assert guards_item.is_expanded and len(guards_item.children) == 2

        await pilot.press("l", "l", "l")  # level 0, level 1, all levels again: the tree is new, unloaded
        assert screen.level is None
        guards_item = screen.tree.root.children[1]
        assert labels(screen, guards_item) == [] and not guards_item.is_expanded
        await pilot.click("#explore-tree", offset=(0, 1))  # the arrow of Guards: children loaded after the fact
        await wait_until(pilot, lambda: guards_item.is_expanded and len(guards_item.children) == 2,
                         what="Guards expanded by its arrow")
        assert labels(screen, guards_item) == ["Harrow's visit  L1 · 1 leaf · 1 claim",
                                               "The counting house  L1 · 1 leaf · 1 claim"]

        await pilot.press("s")  # rank: this store has none, so size; the tree again unloaded
        assert screen.sort == "size"
        screen.tree.move_cursor(screen.tree.root.children[0])
        await pilot.press("asterisk")  # expand all below Guards: loaded and expanded all the way down
        guards_item = screen.tree.root.children[0]
        assert guards_item.is_expanded and labels(screen, guards_item) == [
            "Harrow's visit  L1 · 1 leaf · 1 claim", "The counting house  L1 · 1 leaf · 1 claim"]
        await pilot.pause()
        assert [str(line.node.label.plain).split("  ")[0] for line in screen.tree._tree_lines] == [
            "Guards", "Harrow's visit", "The counting house", "Crew dinner"]


async def test_the_community_view_shows_its_community_in_the_tree(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pilot.app.screen.query_one("#run").focus()
        app.open_community("carol/2")
        await wait_community(pilot)
        await pilot.press("t")
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, ExploreScreen)
        await wait_until(pilot, lambda: screen.tree.cursor_node is not None and screen.tree.cursor_node.data is not None
                         and screen.tree.cursor_node.data.id == "carol/2", what="the cursor on carol/2")
        assert screen.tree.root.children[0].is_expanded


async def test_search_groups_marks_and_opens_each_kind(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_explore(pilot)
        await search(pilot, screen, "Harrow")
        results = screen.query_one("#search-results", OptionList)
        prompts = [results.get_option_at_index(i).prompt for i in range(results.option_count)]
        assert [p.plain.split("\n")[0] for p in prompts] == [
            "Communities (1)", "Harrow's visit  carol/1",
            "Entities (1)", "JONAS HARROW  carol/89",
            "Claims (1)", "JONAS HARROW -> ELIAS QUILL  carol/89",
            "Chunks (1)", "A Harbour Ledger  carol/k1",
        ]
        chunk = prompts[7]
        marked = [chunk.plain[span.start:span.end] for span in chunk.spans if span.style == MARK_STYLE]
        assert marked == ["Harrow"]
        assert str(screen.query_one("#explore-status", Static).render()) == (
            "Search Harrow: 1 communities, 1 entities, 1 claims, 1 chunks")
        await pilot.press("down")  # from the box into the results, on the first result (not on its heading)
        assert (pilot.app.focused, results.highlighted) == (results, 1)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, CommunityScreen)
        await pilot.press("escape")
        await pilot.pause()
        # A claim opens the claim view (its passage highlighted), the entity and the chunk their record views.
        for index, expected in ((1, CommunityScreen), (3, RecordScreen), (5, ClaimScreen), (7, RecordScreen)):
            results.highlighted = index
            await pilot.press("enter")
            await pilot.pause()
            opened = pilot.app.screen
            assert isinstance(opened, expected)
            await wait_until(pilot, lambda opened=opened: opened.loaded, what="the view")
            if isinstance(opened, RecordScreen):
                assert (opened.kind, opened.record_id) == {3: ("entity", "carol/89"), 7: ("chunk", "carol/k1")}[index]
                assert opened.view is not None
            if isinstance(opened, ClaimScreen):
                assert opened.claim_id == "carol/89"
                assert opened.provenance is not None and opened.provenance.claim.id == "carol/89"
            await pilot.press("escape")
            await pilot.pause()
            assert pilot.app.screen is screen
        await search(pilot, screen, '"unclosed')
        assert str(screen.query_one("#explore-status", Static).render()) == (
            "Cannot parse the search query: unterminated string")


async def test_entity_view(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_explore(pilot)
        from graphrag_tui.tui.messages import OpenRecord

        app.post_message(OpenRecord("entity", "carol/89"))
        await wait_until(pilot, lambda: isinstance(app.screen, RecordScreen) and app.screen.loaded, what="entity")
        screen = app.screen
        assert str(screen.query_one("#record-text", Static).render()) == (
            "Entity JONAS HARROW\nId carol/89   Namespace carol\n\nQuill's old partner, away seven years")
        links = screen.query_one("#record-links", OptionList)
        assert [links.get_option_at_index(i).prompt.plain for i in range(links.option_count)] == [
            "Communities whose members include it (2)", "L0 Guards  carol/0", "L1 Harrow's visit  carol/1",
            "Claims with it as subject or object (1)", "JONAS HARROW -> ELIAS QUILL: Harrow warns Quill of three inspectors",
        ]
        links.highlighted = 2
        await pilot.press("enter")
        await wait_community(pilot)
        assert app.screen.community_id == "carol/1"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        links.highlighted = 4  # its claim: the one claim view, with the claim's chunk
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ClaimScreen) and app.screen.loaded, what="the claim")
        assert app.screen.claim_id == "carol/89"
        assert [str(o.prompt) for o in app.screen.query_one("#claim-entities", OptionList).options] == [
            "Subject  JONAS HARROW   Enter: its communities and claims",
            "Object   ELIAS QUILL   Enter: its communities and claims",
        ]


async def test_overview(store: Path, tmp_path: Path) -> None:
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_explore(pilot)
        await pilot.press("escape")
        app.action_overview()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        await wait_until(pilot, lambda: screen.loaded, what="the overview")
        text = str(screen.query_one("#overview-text", Static).render())
        assert text.splitlines()[:12] == [
            "Namespace carol", "",
            "4 communities, 3 leaves, 4 claims (1 assigned to no community)",
            "1 documents, 2 chunks, 3 entities", "",
            "Per level",
            "  level  communities   leaves  claims below",
            "      0            2        1             3",
            "      1            2        2             2", "",
            "Largest communities (by leaves below)",
            "       2 leaves  L0 Guards  carol/0",
        ]
        assert screen.batches == {"leaf": (3, 1), 0: (2, 1), 1: (2, 1)}
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


async def test_the_first_search_builds_the_index_with_progress_and_the_next_reuses_it(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import ProgressBar

    from graphrag_tui.store import search_index

    monkeypatch.setattr(search_index, "BUILD_BATCH", 2)  # several progress steps on a small store
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_explore(pilot)
        seen: list[tuple[int, int]] = []
        original = screen.post_message

        def spy(message) -> bool:  # type: ignore[no-untyped-def]
            if isinstance(message, ExploreScreen.IndexProgress):
                seen.append((message.done, message.total))
            return original(message)

        screen.post_message = spy  # type: ignore[method-assign]
        await search(pilot, screen, "pie")
        assert seen[0] == (0, 13) and seen[-1] == (13, 13) and len(seen) >= 7  # 4+3+4+2 rows, 2 at a time
        bar = screen.query_one("#index-progress", ProgressBar)
        assert (bar.total, bar.progress, bar.display) == (13, 13, False)  # hidden once built
        index = screen.explore.text_search.path  # type: ignore[attr-defined]
        built = index.stat().st_mtime_ns
        await search(pilot, screen, "Quill")
        assert not screen.building and index.stat().st_mtime_ns == built
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


async def test_a_communitys_members_open_their_entities(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: bool(app.screen.query("#run")), what="the main screen")
        app.open_community("carol/0")
        await wait_community(pilot)
        await pilot.press("m")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordScreen) and app.screen.loaded, what="members")
        links = app.screen.query_one("#record-links", OptionList)
        assert [links.get_option_at_index(i).prompt.plain for i in range(links.option_count)] == [
            "Members (2)", "JONAS HARROW  carol/89", "ELIAS QUILL  carol/e2",
        ]
        links.highlighted = 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordScreen) and app.screen.kind == "entity"
                         and app.screen.loaded, what="the entity")
        assert app.screen.record_id == "carol/89"


async def test_the_members_listed_in_the_community_view_open_their_entities(store: Path, tmp_path: Path) -> None:
    app = explore_app(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: bool(app.screen.query("#run")), what="the main screen")
        app.open_community("carol/2")
        await wait_community(pilot)
        community = app.screen
        links = community.query_one("#hierarchy", OptionList)
        prompts = [str(links.get_option_at_index(i).prompt) for i in range(links.option_count)]
        assert prompts[-3:] == ["Members (2)", "ELIAS QUILL  carol/e2", "TOM PENROSE  carol/e3"]
        links.highlighted = links.option_count - 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordScreen) and app.screen.loaded, what="the entity")
        assert app.screen.kind == "entity" and app.screen.record_id == "carol/e3"
        assert "Quill's clerk" in str(app.screen.query_one("#record-text", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is community


async def test_a_chain_deeper_than_the_tree_stops_at_its_last_level(tmp_path: Path) -> None:
    """100 levels of parent links: expand all (or showing the deepest community) built a
    Tree so deep that Textual's drawing recursed past Python's limit: the app died."""
    from graphrag_tui.tui.screens.explore import MAX_TREE_DEPTH
    from tests.stores import build_store

    store = build_store(tmp_path / "chain.db", [
        {"id": f"c{i:03d}", "summary_content": "s", "level": i, "parent_community_id": f"c{i - 1:03d}" if i else None}
        for i in range(100)])
    app = make_app(store, cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_explore(pilot)
        screen.tree.focus()
        screen.tree.move_cursor(screen.tree.root.children[0])
        await pilot.press("asterisk")
        await pilot.pause()
        item, depth = screen.tree.root, 0
        while item.children:
            (item,), depth = item.children, depth + 1
        assert (depth, item.data.id, item.allow_expand) == (MAX_TREE_DEPTH, f"c{MAX_TREE_DEPTH - 1:03d}", False)
        assert str(item.label.plain).endswith(f"(deeper than the tree's {MAX_TREE_DEPTH} levels)")
        screen.show_community("c099")
        await pilot.pause()
        assert screen.tree.cursor_node is item
        assert [n.message for n in app._notifications][-1] == (
            f"Community c099 is 100 levels deep; the tree shows {MAX_TREE_DEPTH}: the cursor is on its ancestor there.")
        assert isinstance(app.screen, ExploreScreen)


async def test_a_huge_community_opens_at_once_its_texts_cut_with_a_note(tmp_path: Path) -> None:
    """A 100,000-line summary, a 1 MB name and 100,000 members: Textual laid out every line,
    and the view held the app for 23 s (with 10 MB texts, minutes and 17 GB)."""
    import json
    import time

    from tests.stores import build_store

    summary = "harbour ledger line\n" * 100_000
    store = build_store(tmp_path / "huge.db", [{"id": "ns/0", "community_name": "N" * 1_000_000,
                                               "summary_content": summary,
                                               "members": json.dumps([f"m{i}" for i in range(100_000)])}])
    app = make_app(store, cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: bool(pilot.app.screen.query("#run")), what="the main screen")
        began = time.monotonic()
        app.open_community("ns/0")
        await wait_community(pilot)
        took = time.monotonic() - began
        screen = pilot.app.screen
        shown_summary = str(screen.query_one("#summary", Static).render())
        header = str(screen.query_one("#community-header", Static).render())
        members = str(screen.query_one("#members", Static).render())
    assert took < 5, took
    assert shown_summary.startswith("harbour ledger line\n") and shown_summary.count("\n") == 2000
    assert shown_summary.endswith("… 1,960,000 more characters (98,000 lines) not shown here; graphrag-tui show "
                                  "prints them")
    assert "N" * 999 + "…" in header and "N" * 1000 not in header
    assert members.startswith("m0, m1, ") and members.endswith(", m1999 … and 98,000 more")


async def test_an_overview_of_thousands_of_levels_lists_and_plans_the_first_hundred(tmp_path: Path) -> None:
    """One root community on each of 150 levels: every level was listed and planned, the
    batches text rebuilt whole for each (with 2,000 levels the screen froze for 30 s)."""
    from graphrag_tui.tui.screens.overview import MAX_LEVELS
    from tests.stores import build_store

    store = build_store(tmp_path / "levels.db", [
        {"id": f"l{i:03d}", "summary_content": f"level {i}", "level": i} for i in range(MAX_LEVELS + 50)])
    app = make_app(store, cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: bool(pilot.app.screen.query("#run")), what="the main screen")
        app.action_overview()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        await wait_until(pilot, lambda: screen.loaded, what="the overview")
        figures = str(screen.query_one("#overview-text", Static).render()).splitlines()
        planned = str(screen.query_one("#overview-batches", Static).render()).splitlines()
    per_level = figures[figures.index("Per level") + 2:]
    assert per_level[MAX_LEVELS - 1:MAX_LEVELS + 1] == [f"  {MAX_LEVELS - 1:>5}            1        1             0",
                                                       "  … and 50 more levels"]
    assert len(screen.batches) == MAX_LEVELS + 1  # the leaves and the first hundred levels
    assert planned[-2:] == [f"  level {MAX_LEVELS - 1}        1 batches  (1 summaries)",
                            "  … and 50 more levels, not planned here"]


def test_a_huge_chunk_is_cut_for_display_with_its_passage_marks_kept() -> None:
    """A source chunk of 100,000 lines laid out whole in the Sources tab and the claim view."""
    from graphrag_tui.store.records import ChunkDetail
    from graphrag_tui.tui.passages import Passage
    from graphrag_tui.tui.provenance_text import QUOTED_STYLE, highlighted_chunk
    from graphrag_tui.tui.safe_text import SHOWN_LINES

    content = "a harbour line\n" * 100_000
    chunk = ChunkDetail(id="k1", content=content, parent_id=None, parent_title="Doc")
    text = highlighted_chunk(chunk, [Passage(spans=((2, 9),), approximate=False)])
    lines = text.plain.split("\n")
    assert lines[0] == "Chunk k1  from Doc" and lines[1] == "a harbour line"
    assert len(lines) == SHOWN_LINES + 1
    assert lines[-1] == "… 1,470,015 more characters (98,001 lines) not shown here; graphrag-tui show prints them"
    heading = len("Chunk k1  from Doc\n")
    assert any(span.style == QUOTED_STYLE and (span.start, span.end) == (heading + 2, heading + 9) for span in text.spans)
