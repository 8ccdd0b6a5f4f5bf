"""How long the Runs screen takes to list a large history, and the compare view to open.

    python -m tests.benchmarks.runs_screen_timing [RUNS]

Records one 3-batch run with the real CLI against the scripted server, copies it in SQL to
RUNS runs (default 10,000), then times, under Pilot at 120×40: pressing `h` until the list
is shown (the 200 newest), a filter that matches one run, and opening the comparison of two."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from tests.chat_server import ScriptedChatServer, map_reply, reduce_reply
from tests.cli_runner import run_cli
from tests.stores import three_leaves
from tests.tui.conftest import make_app, wait_until
from tests.tui.test_runs_screen import partial_script


def build_history(folder: Path, runs: int) -> tuple[Path, Path]:
    store = three_leaves(folder / "harbour.db")
    history = folder / "history.db"
    with ScriptedChatServer(partial_script()) as server:
        done = run_cli("query", str(store), "Who funds the bridge?", "--base-url", server.base_url, "--model", "m1",
                       "--map-budget", "330", "--map-reserve", "0", "--no-config", "--history", str(history))
        assert done.code == 0, done.stderr
    db = sqlite3.connect(history)
    (source,) = db.execute("SELECT run_id FROM runs").fetchone()
    columns = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
    batch_columns = [r[1] for r in db.execute("PRAGMA table_info(batch_records)")]
    with db:
        for number in range(runs - 1):
            run_id = f"{number:08d}zzzz"
            picked = ", ".join("?" if c == "run_id" else ("question || ?" if c == "question" else c) for c in columns)
            args = [run_id if c == "run_id" else f" #{number}" for c in columns if c in ("run_id", "question")]
            db.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT {picked} FROM runs WHERE run_id = ?",
                       (*args, source))
            db.execute(f"INSERT INTO batch_records ({', '.join(batch_columns)}) SELECT "
                       f"{', '.join('?' if c == 'run_id' else c for c in batch_columns)} FROM batch_records WHERE run_id = ?",
                       (run_id, source))
    db.close()
    return store, history


async def measure(store: Path, history: Path) -> None:
    with ScriptedChatServer(lambda request: map_reply("x", 1) if request.stage == "map" else reduce_reply("y")) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: bool(app.screen.query("#citations")))
            app.screen.query_one("#batch-grid").focus()
            started = time.perf_counter()
            await pilot.press("h")
            await wait_until(pilot, lambda: getattr(app.screen, "listings", 0) > 0, timeout=60)
            print(f"list shown (200 of the newest): {time.perf_counter() - started:.2f} s")
            screen = app.screen
            started = time.perf_counter()
            await pilot.press("slash", *"#4242")
            await wait_until(pilot, lambda: screen.query_one("#runs-table").row_count == 1, timeout=60)
            print(f"filter to one run (typed 5 characters): {time.perf_counter() - started:.2f} s")
            screen.query_one("#runs-filter-input").value = ""
            await wait_until(pilot, lambda: screen.query_one("#runs-table").row_count > 1, timeout=60)
            await pilot.press("enter", "space", "down")  # the newest run marked, compared with the next
            started = time.perf_counter()
            await pilot.press("c")
            await wait_until(pilot, lambda: getattr(app.screen, "loaded", False), timeout=60)
            print(f"compare view shown: {time.perf_counter() - started:.2f} s")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        store, history = build_history(Path(folder), runs)
        print(f"{runs} runs, history {history.stat().st_size / 1e6:.1f} MB (built in {time.perf_counter() - started:.1f} s)")
        asyncio.run(measure(store, history))


if __name__ == "__main__":
    main()
