"""Speed of exploring a store (issue 16), on the synthetic 100,000-community store (10 claims
per leaf). Prints one Markdown table, wall and CPU time side by side (the machine's cores
may be shared).

    python -m tests.benchmarks.bench_explore                 # builds the store in a temp dir
    python -m tests.benchmarks.bench_explore --store S.db    # an existing synthetic store
    python -m tests.benchmarks.bench --only explore          # the same, from the main benchmark

Measured in the real app under Pilot (headless): the Explore screen's first paint (from
the key to the first frame with the search box) and until the roots are shown; expanding
a node with 10 children (children added and the frame drawn); the index build (from the
first search, with its progress bar) and its size; each search's first page; and how long
a keypress in the tree takes to be handled while the index builds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from textual import events

Row = tuple[str, str, str, str]
QUERIES = ("harbor", '"harbor grain"', "harb*", "levee AND tariff", "Entity 4242", '"Claim 123456"')


class Clock:
    """Wall and CPU time of a span."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def done(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


async def measure(store: Path, cache: Path) -> list[Row]:
    from graphrag_tui.tui.app import AppSettings, GraphRAGApp
    from graphrag_tui.tui.screens.explore import ExploreScreen

    rows: list[Row] = []
    app = GraphRAGApp(AppSettings(store_path=store, cache_dir=cache))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.query_one("#run").focus()
        painted: list[tuple[float, float]] = []
        original_after = ExploreScreen.after_first_frame

        def after_first_frame(self: ExploreScreen) -> None:
            painted.append(clock.done())
            original_after(self)

        ExploreScreen.after_first_frame = after_first_frame  # type: ignore[method-assign]
        clock = Clock()
        app.action_explore()
        while not painted:
            await asyncio.sleep(0.001)
        paint = painted[0]
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        while screen.hierarchy is None:
            await asyncio.sleep(0.005)
        await pilot.pause()
        roots = clock.done()
        rows.append(("Explore: first paint (search box, loading line)", f"{ms(paint[0])} wall, {ms(paint[1])} CPU",
                     "< 200 ms", "ok" if paint[0] < 0.2 else "MISSED"))
        rows.append((f"Explore: {len(screen.hierarchy.roots):,} roots shown with their counts (hierarchy read in a worker)",
                     f"{ms(roots[0])} wall, {ms(roots[1])} CPU", "", ""))

        tree = screen.tree
        times = []
        for item in list(tree.root.children):
            if item.data is not None and item.data.child_count == 10 and len(times) < 5:
                clock = Clock()
                item.expand()
                screen.populate(item)
                await pilot.pause()
                times.append(clock.done())
        worst = max(t[0] for t in times)
        rows.append((f"expanding a node with 10 children ({len(times)} nodes)",
                     f"median {ms(statistics.median(t[0] for t in times))}, max {ms(worst)} wall; "
                     f"median {ms(statistics.median(t[1] for t in times))} CPU", "< 50 ms",
                     "ok" if worst < 0.05 else "MISSED"))

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
                     "ok" if build[0] < 60 else "MISSED"))
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
                         "ok" if wall < 0.3 else "MISSED"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="a synthetic store (default: build one with --communities)")
    parser.add_argument("--communities", type=int, default=100_000)
    args = parser.parse_args()
    for row in run(args.store, args.communities):
        print("| " + " | ".join(row) + " |")


def run(store: Path | None, communities: int = 100_000) -> list[Row]:
    from tests.benchmarks.synthetic_store import build_synthetic_store

    with tempfile.TemporaryDirectory() as tmp:
        if store is None:
            store = build_synthetic_store(Path(tmp) / "synthetic.db", communities)
        print("| measure | result | target | |")
        print("|---|---|---|---|")
        return asyncio.run(measure(store, Path(tmp) / "cache"))


if __name__ == "__main__":
    main()
