"""How long the compare view, and a recorded run's view, take on large runs, and how long a
key waits meanwhile.

    python tests/benchmarks/compare_timing.py [BATCHES]

Records two runs of BATCHES batches each (default 20,000: one community a batch, seeds 1
and 2) with the real CLI and its extractive model, whose answers list some 280 of the
intermediate answers; then, under Pilot at 120×40, times from `c` on the Runs screen until
the view shows with every row, Esc pressed 1 s after `c`, and keys in the shown view; then
Enter on a run until its view shows, and keys there (tabs, the grid, Esc)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from textual.pilot import Pilot

from tests.cli_runner import run_cli
from tests.stores import PAD, build_store
from tests.tui.conftest import make_app, wait_until


def record_two_runs(folder: Path, batches: int) -> tuple[Path, Path]:
    store = build_store(folder / "big.db", [
        {"id": f"ns/{i}", "summary_content": f"Community {i} about the bridge. {PAD}"} for i in range(batches)])
    history = folder / "history.db"
    for seed in ("1", "2"):
        done = run_cli("query", str(store), "Who built the bridge?", "--map-budget", "330",
                       "--map-reserve", "0", "--seed", seed, "--no-config", "--history", str(history), timeout=600)
        assert done.code == 0, done.stderr
    return store, history


async def measure(store: Path, history: Path) -> None:
    app = make_app(store, None, history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: bool(app.screen.query("#citations")))
        app.screen.query_one("#batch-grid").focus()
        await pilot.press("h")
        await wait_until(pilot, lambda: getattr(app.screen, "listings", 0) > 0, timeout=60)
        runs = app.screen
        await pilot.press("space", "down", "c")
        await pilot.pause(1.0)
        started = time.perf_counter()
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is runs, timeout=120)
        print(f"Esc pressed 1 s after c: handled in {time.perf_counter() - started:.2f} s")
        await pilot.press("space", "up", "space")  # unmark
        runs.marked = []
        started = time.perf_counter()
        await pilot.press("space", "down", "c")
        await wait_until(pilot, lambda: getattr(app.screen, "loaded", False), timeout=120)
        print(f"compare view shown with every row: {time.perf_counter() - started:.2f} s")
        await keys(pilot, "2", "end", "pageup", "3", "1", "escape")
        started = time.perf_counter()
        await pilot.press("enter")
        await wait_until(pilot, lambda: getattr(app.screen, "loaded", False), timeout=120)
        print(f"run view shown: {time.perf_counter() - started:.2f} s")
        await keys(pilot, "2", "1", "down", "right", "escape")


async def keys(pilot: Pilot, *pressed: str) -> None:
    for key in pressed:
        started = time.perf_counter()
        await pilot.press(key)
        await pilot.pause()
        print(f"{key}: {time.perf_counter() - started:.2f} s")


def main() -> None:
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        store, history = record_two_runs(Path(folder), batches)
        print(f"two runs of {batches:,} batches recorded in {time.perf_counter() - started:.1f} s")
        asyncio.run(measure(store, history))


if __name__ == "__main__":
    main()
