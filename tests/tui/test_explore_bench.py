"""The Explore benchmark's press-to-frame clock (tests/benchmarks/bench_explore.py), on a
small regular tree: it must see the frames Textual draws (through `App._display`, which
these tests pin) and stop only at the frame that shows what was asked for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphrag_tui.tui.app import AppSettings, GraphRAGApp
from graphrag_tui.tui.screens.explore import ExploreScreen
from tests.benchmarks.bench_explore import Frames, expand_times, measure
from tests.benchmarks.synthetic_store import build_tree_store

SPREAD = re.compile(r"median \d+ ms, max \d+ ms wall; median \d+ ms, max \d+ ms CPU")


@pytest.fixture
def tree_store(tmp_path: Path) -> Path:
    return build_tree_store(tmp_path / "tree.db", 12, 10, 2, claims_per_leaf=1)


async def test_the_benchmark_times_the_first_paint_and_each_expansion(tree_store: Path, tmp_path: Path) -> None:
    rows = await measure(tree_store, tmp_path / "cache", with_index=False)
    assert [row[0] for row in rows] == [
        "Explore: first paint (`x` pressed to the frame with the search box)",
        "Explore: `x` pressed to the frame with the first of 12 roots (hierarchy read in a worker; CPU of all threads)",
        "expanding a node with 10 children: Space pressed to the frame showing them (12 nodes)",
    ]
    assert re.fullmatch(r"\d+ ms wall, \d+ ms CPU", rows[0][1]) and re.fullmatch(r"\d+ ms wall, \d+ ms CPU", rows[1][1])
    assert SPREAD.fullmatch(rows[2][1])


async def test_the_clock_stops_only_at_a_frame_showing_the_text(tree_store: Path, tmp_path: Path) -> None:
    app = GraphRAGApp(AppSettings(store_path=tree_store, cache_dir=tmp_path / "cache"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.query_one("#run").focus()
        await pilot.pause()
        frames = Frames(app)
        [(wall, cpu)] = await frames.press_until(pilot, "x", ["Community 0  L0 · 20 leaves · 20 claims"])
        assert 0 < wall < 30 and 0 < cpu < 30
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        screen.tree.focus()
        with pytest.raises(TimeoutError, match="no frame showed"):
            await frames.press_until(pilot, "down", ["Community 12  L1"], timeout=1.0)  # a child not shown
        times = await expand_times(pilot, screen, frames, count=2)
        assert len(times) == 2
        first = screen.tree.root.children[0]
        assert [child.label.plain for child in first.children] == [
            f"Community {12 + i}  L1 · 2 leaves · 2 claims" for i in range(10)]
