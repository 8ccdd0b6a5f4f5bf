"""Speed of exploring a store (issue 16), on the synthetic 100,000-community store (10 claims
per leaf). Prints one Markdown table, wall and CPU time side by side (the machine's cores
may be shared).

    python -m tests.benchmarks.bench_explore                 # builds the store in a temp dir
    python -m tests.benchmarks.bench_explore --store S.db    # an existing synthetic store
    python -m tests.benchmarks.bench --only explore          # the same, from the main benchmark
    python -m tests.benchmarks.bench_explore --store S.db --no-index   # the tree only

Measured in the real app under Pilot (headless), each key pressed through Pilot and timed
to the first frame that shows its result, turned into the bytes a terminal would get
(`Frames`; Pilot's idle waits after the key do not count): `x` to the Explore screen's
first frame (the search box), and to the frame with the first root; Space on a root with
10 children never expanded before (its children are added on that press) to the frame
that shows all ten, on 15 such roots, median and max of wall and CPU time. Then the index
build (from the first search, with its progress bar) and its size; each search's first
page; and how long a keypress in the tree takes to be handled while the index builds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import tempfile
import time
from contextlib import closing
from pathlib import Path

from textual import events
from textual._compositor import CompositorUpdate
from textual.app import App
from textual.pilot import Pilot

from graphrag_tui.tui.screens.explore import SEARCH_PLACEHOLDER, ExploreScreen, node_label

Row = tuple[str, str, str, str]
#: Nodes expanded for the press-to-frame figures.
EXPAND_SAMPLES = 15
QUERIES = ("harbor", '"harbor grain"', "harb*", "levee AND tariff", "Entity 4242", '"Claim 123456"')


class Clock:
    """Wall and CPU time of a span."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def done(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class Frames:
    """Every frame the app hands its driver, timed when the terminal's bytes are ready.

    The headless driver skips turning a frame into bytes; a terminal does not, so this
    renders each update (`render_segments`, what `App._display` writes to a terminal) and
    keeps the time, the process CPU time and the text drawn (escape codes removed).
    `App._display` is Textual's own hook for this (pinned by tests/test_bench_explore.py).
    """

    def __init__(self, app: App[object]) -> None:
        self.seen: list[tuple[float, float, str]] = []
        original = app._display
        console = app.console

        def display(screen: object, renderable: object) -> None:
            original(screen, renderable)  # type: ignore[arg-type]
            if isinstance(renderable, CompositorUpdate):
                data = renderable.render_segments(console)
                wall, cpu = time.perf_counter(), time.process_time()
                self.seen.append((wall, cpu, ANSI.sub("", data)))

        app._display = display  # type: ignore[method-assign]

    async def press_until(self, pilot: Pilot[object], key: str, *shown: list[str],
                          timeout: float = 60.0) -> list[tuple[float, float]]:
        """(wall, CPU) from pressing `key` through Pilot until the first frame whose text
        holds every string of `shown[0]`, then of `shown[1]`, ... Pilot's idle waits after
        the key run meanwhile but do not count: each clock stops at its frame."""
        first = len(self.seen)
        clock = Clock()
        task = asyncio.create_task(pilot.press(key))
        deadline = clock.wall + timeout
        times = []
        for texts in shown:
            found = None
            while found is None:
                found = next((frame for frame in self.seen[first:] if all(text in frame[2] for text in texts)), None)
                if found is None:
                    if time.perf_counter() > deadline:
                        raise TimeoutError(f"no frame showed {texts!r} within {timeout} s of pressing {key!r}")
                    await asyncio.sleep(0.0005)
            times.append((found[0] - clock.wall, found[1] - clock.cpu))
        await task
        return times


def verdict(wall: float, cpu: float, target: float) -> str:
    """ok on wall time; when only the wall time misses, says so (the cores may be shared:
    see the load row)."""
    if wall < target:
        return "ok"
    return "wall MISSED, CPU ok" if cpu < target else "MISSED"


def spread(times: list[tuple[float, float]]) -> str:
    """Median and max, wall and CPU."""
    walls, cpus = [t[0] for t in times], [t[1] for t in times]
    return (f"median {ms(statistics.median(walls))}, max {ms(max(walls))} wall; "
            f"median {ms(statistics.median(cpus))}, max {ms(max(cpus))} CPU")


async def expand_times(pilot: Pilot[object], screen: ExploreScreen, frames: Frames,
                       count: int = EXPAND_SAMPLES) -> list[tuple[float, float]]:
    """Press-to-frame of Space on `count` roots with 10 children each, never expanded
    before (the children are added on that press), each put on the tree's top line first
    so that the frame can show all ten."""
    tree = screen.tree
    assert screen.hierarchy is not None
    items = [item for item in tree.root.children if item.data is not None and item.data.child_count == 10][:count]
    tree.focus()
    times = []
    for item in items:
        for other in tree.root.children:
            if other.is_expanded:
                other.collapse()
        await pilot.pause()
        tree.move_cursor(item)
        tree.scroll_to(y=item.line, animate=False, immediate=True)
        await pilot.pause()
        assert item.data is not None and not item.children and not item.is_expanded
        shown = [node_label(child).plain for child in screen.hierarchy.children_of(item.data.id, screen.sort)]
        times.append((await frames.press_until(pilot, "space", shown))[0])
        assert [child.label.plain for child in item.children] == shown
    return times


async def measure(store: Path, cache: Path, *, with_index: bool = True) -> list[Row]:
    from graphrag_tui.store import CommunityStore
    from graphrag_tui.store.explore import load_hierarchy
    from graphrag_tui.tui.app import AppSettings, GraphRAGApp
    from tests.benchmarks.synthetic_store import NAMESPACE

    rows: list[Row] = []
    with closing(CommunityStore.open(store)) as opened:  # the first root's line, read apart from the app
        first_root = node_label(load_hierarchy(opened, NAMESPACE).children_of(None, "size")[0]).plain
    app = GraphRAGApp(AppSettings(store_path=store, cache_dir=cache))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.query_one("#run").focus()
        await pilot.pause()
        frames = Frames(app)
        (paint, roots) = await frames.press_until(pilot, "x", [SEARCH_PLACEHOLDER[:40]], [first_root])
        screen = app.screen
        assert isinstance(screen, ExploreScreen) and screen.hierarchy is not None
        rows.append(("Explore: first paint (`x` pressed to the frame with the search box)",
                     f"{ms(paint[0])} wall, {ms(paint[1])} CPU", "< 200 ms", verdict(paint[0], paint[1], 0.2)))
        rows.append((f"Explore: `x` pressed to the frame with the first of {len(screen.hierarchy.roots):,} roots "
                     "(hierarchy read in a worker; CPU of all threads)", f"{ms(roots[0])} wall, {ms(roots[1])} CPU", "", ""))
        await pilot.pause()
        times = await expand_times(pilot, screen, frames)
        rows.append((f"expanding a node with 10 children: Space pressed to the frame showing them ({len(times)} nodes)",
                     spread(times), "< 50 ms", verdict(max(t[0] for t in times), max(t[1] for t in times), 0.05)))

        if not with_index:
            return rows
        tree = screen.tree
        # The first search builds the index; meanwhile keys go to the tree.
        tree.focus()
        handled: list[float] = []
        original = tree.action_cursor_down

        def timed_down() -> None:
            handled.append(time.perf_counter())
            original()

        tree.action_cursor_down = timed_down  # type: ignore[method-assign]
        clock = Clock()
        screen.search("harbor")
        while not screen.building:  # the worker finds no index and says it builds one
            await asyncio.sleep(0.001)
        keys: list[float] = []
        progress_seen = False
        while screen.building:
            progress_seen = progress_seen or screen.query_one("#index-progress").display
            sent, count = time.perf_counter(), len(handled)
            app.post_message(events.Key("down", None))
            while len(handled) == count and screen.building:
                await asyncio.sleep(0.001)
            if len(handled) > count:
                keys.append(handled[-1] - sent)
            await asyncio.sleep(0.2)
        build = clock.done()
        while screen.searching:  # the search that asked for the build
            await asyncio.sleep(0.01)
        index = screen.explore.text_search.path  # type: ignore[attr-defined]
        ratio = index.stat().st_size / store.stat().st_size
        rows.append(("first index build (progress bar shown: " + ("yes" if progress_seen else "no") + ")",
                     f"{build[0]:.1f} s wall, {build[1]:.1f} s CPU (app process)", "< 60 s",
                     verdict(build[0], build[1], 60)))
        rows.append(("index on disk", f"{index.stat().st_size / 1e6:.0f} MB = {ratio:.2f}x the store "
                     f"({store.stat().st_size / 1e6:.0f} MB)", "< 1.5x", "ok" if ratio < 1.5 else "MISSED"))
        worst_key = max(keys) if keys else float("nan")
        rows.append(("keypress handled while the index builds",
                     f"median {ms(statistics.median(keys))}, 95th percentile "
                     f"{ms(sorted(keys)[int(len(keys) * 0.95)])}, max {ms(worst_key)} ({len(keys)} presses)" if keys
                     else "no key sent", "< 100 ms", "ok" if keys and worst_key < 0.1 else "MISSED"))
        tree.action_cursor_down = original  # type: ignore[method-assign]
        search = screen.explore.text_search
        for query in QUERIES:
            clock = Clock()
            results = search.search(query)
            wall, cpu = clock.done()
            found = ", ".join(f"{len(hits)}{'+' if kind in results.more else ''}" for kind, hits in results.results.items())
            rows.append((f"search {query} (first page: {found})", f"{ms(wall)} wall, {ms(cpu)} CPU", "< 300 ms",
                         verdict(wall, cpu, 0.3)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="a synthetic store (default: build one with --communities)")
    parser.add_argument("--communities", type=int, default=100_000)
    parser.add_argument("--no-index", action="store_true", help="the tree only: no index build, no searches")
    args = parser.parse_args()
    for row in run(args.store, args.communities, with_index=not args.no_index):
        print("| " + " | ".join(row) + " |")


def run(store: Path | None, communities: int = 100_000, *, with_index: bool = True) -> list[Row]:
    from tests.benchmarks.synthetic_store import build_synthetic_store

    with tempfile.TemporaryDirectory() as tmp:
        if store is None:
            store = build_synthetic_store(Path(tmp) / "synthetic.db", communities)
        print("| measure | result | target | |")
        print("|---|---|---|---|")
        before = load()
        rows = asyncio.run(measure(store, Path(tmp) / "cache", with_index=with_index))
        return [*rows, ("machine load (1-minute load average, before / after)",
                        f"{before} / {load()} on {os.cpu_count()} cores", "", "")]


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


if __name__ == "__main__":
    main()
