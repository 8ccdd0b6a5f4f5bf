"""The run history's cost (issue 11), measured side by side in one run:

1. The 2,000-batch instant-model headless run through the session layer (RunSession: plan,
   Map, Reduce), recorded in a history against --no-history, each run in a fresh process,
   alternately, median of repeats (target: at most 5 % more).
2. `graphrag-tui runs list` over a history of 10,000 recorded runs, as a user runs it (the
   whole command, start-up included), with the default limit and with --limit 0 --json
   (target: under 0.5 s).
3. How much the history grows per 1,000-batch run (its file after a checkpoint).

    python -m tests.benchmarks.bench --only history
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from graphrag_tui.session.run import RunSession, SearchRequest
from graphrag_tui.store import CommunityStore

Row = tuple[str, str, str, str]
ROOT = Path(__file__).resolve().parents[2]
EXECUTABLE = str(Path(sys.executable).parent / "graphrag-tui")


async def session_seconds(store_path: Path, history: Path | None) -> tuple[float, int, str | None]:
    """A headless run as `query` makes it (RunSession), from planning to its result, the
    history's last commit included."""
    from tests.benchmarks.bench import INSTANT_OPTIONS, QUESTION, InstantModel

    started = time.perf_counter()
    with CommunityStore.open(store_path) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", INSTANT_OPTIONS, 1))
    result = await run.run(InstantModel(), timeout=60)
    assert result.status == "completed"
    return time.perf_counter() - started, result.batch_count, run.run_id


def child(kind: str, store: Path) -> None:
    history = store.with_name("bench-history.db") if kind == "history" else None
    seconds, batches, run_id = asyncio.run(session_seconds(store, history))
    assert (run_id is not None) == (history is not None)
    print(json.dumps({"seconds": seconds, "batches": batches}))


def _in_child(kind: str, store: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.benchmarks.bench", "--child", kind, str(store)],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def recording_overhead(store: Path, repeats: int) -> list[Row]:
    recorded, unrecorded = [], []
    for _ in range(repeats):  # alternately, so a slow spell of the machine hits both
        unrecorded.append(_in_child("no-history", store)["seconds"])
        recorded.append(_in_child("history", store)["seconds"])
    on, off = statistics.median(recorded), statistics.median(unrecorded)
    overhead = on / off - 1
    label = "2,000-batch headless run, instant model"
    return [
        (f"{label}: --no-history", f"median {off:.2f} s (range {min(unrecorded):.2f}-{max(unrecorded):.2f}, "
         f"{repeats} runs)", "reference", ""),
        (f"{label}: recorded", f"median {on:.2f} s (range {min(recorded):.2f}-{max(recorded):.2f}), "
         f"{overhead * 100:+.1f} %", "<= +5 %", "ok" if overhead <= 0.05 else "MISSED"),
    ]


def fill_history(history: Path, runs: int) -> None:
    """`runs` copies of the one run the history holds, each with its own id and time."""
    db = sqlite3.connect(history)
    (template,) = db.execute("SELECT run_id FROM runs").fetchall()[0:1]
    columns = [c[1] for c in db.execute("PRAGMA table_info(runs)")]
    picked = ", ".join("?" if c == "run_id" else c for c in columns)
    rows = [(f"{i:08d}copy",) for i in range(runs - 1)]
    db.executemany(f"INSERT INTO runs ({', '.join(columns)}) SELECT {picked} FROM runs WHERE run_id = '{template[0]}'",
                   rows)
    db.commit()
    db.close()


def list_seconds(history: Path, *args: str, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([EXECUTABLE, "runs", "list", "--history", str(history), "--no-config", *args],
                       capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def in_process_seconds(history: Path, repeats: int = 5) -> float:
    """Listing all the runs and making their JSON, without the command's start-up."""
    from graphrag_tui.history import RunHistory

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        runs = RunHistory(history).list_runs()
        json.dumps({"runs": [r.as_json() for r in runs]})
        times.append(time.perf_counter() - started)
    assert len(runs) == 10_000
    return statistics.median(times)


def listing(store: Path, workdir: Path) -> list[Row]:
    history = workdir / "ten-thousand.db"
    asyncio.run(session_seconds(store, history))
    fill_history(history, 10_000)
    start_up = list_seconds(workdir / "no-history.db")  # the same command with nothing to list
    default, everything = list_seconds(history), list_seconds(history, "--limit", "0", "--json")
    inside = in_process_seconds(history)
    return [
        ("`runs list` with an empty history (the command's start-up)", f"median {start_up:.2f} s", "reference", ""),
        ("`runs list` over 10,000 runs (the whole command)", f"median {default:.2f} s", "< 0.5 s",
         "ok" if default < 0.5 else "MISSED"),
        ("`runs list --limit 0 --json` over 10,000 runs (all of them)", f"median {everything:.2f} s", "< 0.5 s",
         "ok" if everything < 0.5 else "MISSED"),
        ("listing all 10,000 runs as JSON, in process (RunHistory.list_runs)", f"median {inside:.3f} s", "< 0.5 s",
         "ok" if inside < 0.5 else "MISSED"),
    ]


def growth(workdir: Path) -> list[Row]:
    from tests.benchmarks.bench import instant_store

    store = instant_store(workdir / "thousand.db", 1000)
    history = workdir / "growth.db"
    sizes = []
    for _ in range(3):
        asyncio.run(session_seconds(store, history))
        db = sqlite3.connect(history)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        sizes.append(history.stat().st_size)
    per_run = (sizes[2] - sizes[0]) / 2
    return [("history growth per 1,000-batch run (instant model)", f"{per_run / 1024:.0f} KiB "
             f"({per_run / 1000:.0f} bytes per batch)", "reported", "")]


def bench_history(workdir: Path, repeats: int) -> list[Row]:
    from tests.benchmarks.bench import instant_store

    store = instant_store(workdir / "instant.db", 2000)
    return recording_overhead(store, repeats) + listing(store, workdir) + growth(workdir)
