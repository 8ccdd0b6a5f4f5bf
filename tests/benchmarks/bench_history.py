"""The run history's cost (issue 11), measured side by side in one run:

1. The 2,000-batch instant-model headless run through the session layer (RunSession: plan,
   Map, Reduce), recorded in a history against --no-history, each run in a fresh process,
   in pairs, the median of the pairs' overheads with its 95 % interval (target: at most 5 %
   more); and the recorder's own CPU within each recorded run.
2. `graphrag-tui runs list` over a history of 10,000 recorded runs, as a user runs it (the
   whole command, start-up included), with the default limit and with --limit 0 --json
   (target: under 0.5 s).
3. How much the history grows per 1,000-batch run (its file after a checkpoint).

    python -m tests.benchmarks.bench --only history
"""

from __future__ import annotations

import asyncio
import json
import math
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from graphrag_tui.session.run import RunSession, SearchRequest
from graphrag_tui.store import CommunityStore

Row = tuple[str, str, str, str]
EXECUTABLE = str(Path(sys.executable).parent / "graphrag-tui")


async def session_seconds(store_path: Path, history: Path | None) -> tuple[float, float, int, str | None]:
    """A headless run as `query` makes it (RunSession), from planning to its result, the
    history's last commit included: wall seconds, and CPU seconds of the whole process (the
    history's writer thread included), which a loaded machine does not inflate."""
    from tests.benchmarks.bench import INSTANT_OPTIONS, QUESTION, InstantModel

    started, cpu = time.perf_counter(), time.process_time()
    with CommunityStore.open(store_path) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", INSTANT_OPTIONS, 1))
    result = await run.run(InstantModel(), timeout=60)
    assert result.status == "completed"
    return time.perf_counter() - started, time.process_time() - cpu, result.batch_count, run.run_id


def recorder_cpu() -> list[float]:
    """Counts the CPU seconds of the recorder's own work from now on: writing the run's row
    and plan (on the run's thread) and each of its later writes (on its writer thread, or on
    the run's thread at the end of a run shorter than the flush interval)."""
    from graphrag_tui.history.recorder import RunRecorder

    spent: list[float] = []
    write, start = RunRecorder._write, RunRecorder.start.__func__

    def timed_write(self: RunRecorder, items: list, **kwargs: bool) -> None:
        begun = time.thread_time()
        write(self, items, **kwargs)
        spent.append(time.thread_time() - begun)

    def timed_start(cls: type[RunRecorder], *args: object, **kwargs: object) -> RunRecorder:
        begun = time.thread_time()
        recorder = start(cls, *args, **kwargs)
        spent.append(time.thread_time() - begun)
        return recorder

    RunRecorder._write = timed_write  # type: ignore[method-assign]
    RunRecorder.start = classmethod(timed_start)  # type: ignore[method-assign, assignment]
    return spent


def child(kind: str, store: Path) -> None:
    history = store.with_name("bench-history.db") if kind == "history" else None
    spent = recorder_cpu()
    seconds, cpu, batches, run_id = asyncio.run(session_seconds(store, history))
    assert (run_id is not None) == (history is not None)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "batches": batches, "recorder_cpu": sum(spent)}))


def median_interval(values: list[float]) -> tuple[float, float]:
    """A 95 % confidence interval for the median, free of any assumed distribution: the
    k-th smallest and k-th largest value, k the largest for which fewer than k of n values
    fall below the median with a chance of at most 2.5 % (binomial(n, 1/2)); the whole
    range for fewer than 6 values."""
    ordered, n = sorted(values), len(values)
    k, below = 0, 0.0  # below: the chance that fewer than k values fall below the median
    while below + math.comb(n, k) / 2**n <= 0.025:
        below += math.comb(n, k) / 2**n
        k += 1
    low = max(k - 1, 0)
    return ordered[low], ordered[n - 1 - low]


def recording_overhead(store: Path, pairs: int) -> list[Row]:
    """Pairs of runs, one unrecorded and one recorded, each in a fresh process: the overhead
    is the median of each pair's (a slow spell of the machine hits both runs of a pair, and
    this machine's speed drifts by a fifth between minutes), with its 95 % interval: a run's
    time here swings by a fifth even within one process, so a few pairs cannot tell 5 %
    from 10 %. Every other pair runs its recorded run first: pairs of two unrecorded runs
    differed by -3 % to +6 % here, which one order would add to every pair."""
    from tests.benchmarks.bench import measure_in_child as _in_child

    recorded, unrecorded = [], []
    for pair in range(pairs):
        if pair % 2:
            recorded.append(_in_child("history", store))
            unrecorded.append(_in_child("no-history", store))
        else:
            unrecorded.append(_in_child("no-history", store))
            recorded.append(_in_child("history", store))
    rows = []
    label = "2,000-batch headless run, instant model"
    for measure, unit in (("seconds", "wall"), ("cpu", "CPU")):
        on, off = [r[measure] for r in recorded], [r[measure] for r in unrecorded]
        overheads = [a / b - 1 for a, b in zip(on, off, strict=True)]
        overhead, (low, high) = statistics.median(overheads), median_interval(overheads)
        added = statistics.median(a - b for a, b in zip(on, off, strict=True))
        rows += [
            (f"{label}, {unit}: --no-history", f"median {statistics.median(off):.3f} s (range {min(off):.2f}-"
             f"{max(off):.2f}, {pairs} runs)", "reference", ""),
            (f"{label}, {unit}: recorded", f"median {statistics.median(on):.3f} s (range {min(on):.2f}-{max(on):.2f}); "
             f"per pair, median {overhead * 100:+.1f} % ({added * 1000:+.0f} ms), 95 % interval "
             f"{low * 100:+.1f} to {high * 100:+.1f} %", "<= +5 %", "ok" if overhead <= 0.05 else "MISSED"),
        ]
    own = statistics.median(r["recorder_cpu"] for r in recorded)
    # within each recorded run: what the recorder took of what the run would have cost without it
    shares = [r["recorder_cpu"] / (r["cpu"] - r["recorder_cpu"]) for r in recorded]
    share, (low, high) = statistics.median(shares), median_interval(shares)
    rows.append((f"{label}: the recorder's own CPU (its row and plan, its writes), within each recorded run",
                 f"median {own * 1000:.1f} ms, {share * 100:.1f} % of the rest of the run's CPU (95 % interval "
                 f"{low * 100:.1f} to {high * 100:.1f} %)", "<= +5 %", "ok" if share <= 0.05 else "MISSED"))
    return rows


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


def list_seconds(history: Path, *args: str, repeats: int = 5) -> tuple[float, float]:
    """The whole command: wall and CPU seconds (its process's)."""
    times, cpus = [], []
    for _ in range(repeats):
        started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([EXECUTABLE, "runs", "list", "--history", str(history), "--no-config", *args],
                       capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(time.perf_counter() - started)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(times), statistics.median(cpus)


def in_process_seconds(history: Path, repeats: int = 5) -> tuple[float, float]:
    """Listing all the runs and making their JSON, without the command's start-up: wall and
    CPU seconds."""
    from graphrag_tui.history import RunHistory

    times, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        runs = RunHistory(history).list_runs()
        json.dumps({"runs": [r.as_json() for r in runs]})
        times.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    assert len(runs) == 10_000
    return statistics.median(times), statistics.median(cpus)


def listing(store: Path, workdir: Path) -> list[Row]:
    history = workdir / "ten-thousand.db"
    asyncio.run(session_seconds(store, history))
    fill_history(history, 10_000)
    cases = [
        ("`runs list` with an empty history (the command's start-up)", list_seconds(workdir / "none.db"), None),
        ("`runs list` over 10,000 runs (the whole command)", list_seconds(history), 0.5),
        ("`runs list --limit 0 --json` over 10,000 runs (all of them)", list_seconds(history, "--limit", "0", "--json"),
         0.5),
        ("listing all 10,000 runs as JSON, in process (RunHistory.list_runs)", in_process_seconds(history), 0.5),
    ]
    return [
        (label, f"median {wall:.2f} s wall, {cpu:.2f} s CPU", "reference" if target is None else f"< {target} s",
         "" if target is None else "ok" if wall < target else "MISSED (wall)" if cpu < target else "MISSED")
        for label, (wall, cpu), target in cases
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
    return recording_overhead(store, 8 * repeats) + listing(store, workdir) + growth(workdir)
