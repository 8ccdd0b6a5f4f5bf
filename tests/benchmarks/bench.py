"""Speed and memory of graphrag-tui (SPEC §7). Prints one Markdown table.

    python -m tests.benchmarks.bench            # everything (a few minutes)
    python -m tests.benchmarks.bench --quick    # 10k communities only, fewer repeats
    python -m tests.benchmarks.bench --only planning --compare-with OLD_CHECKOUT

1. Planning (select + expand + Map text + batching) of synthetic stores with 10k and 100k
   communities, 10 claims each, at the leaves; and of a 101,000-community tree (1,000 roots
   x 10 branches x 9 leaves, 10 claims per leaf) at the leaves, level 1 and level 0:
   seconds (wall and CPU) and peak RSS, each in a fresh process. `--compare-with` plans
   with another checkout's code too, run for run alternately, so both see the same load.
2. Map scheduling: 200 batches at concurrency 16 against a loopback server (its own process)
   answering after 50 ms. The engine (GlobalSearch + OpenAIChatModel) against a bare asyncio
   + httpx client sending the same requests at the same concurrency, and both against the
   ideal ceil(B/C) x latency. Median of repeats.
3. The app against the headless engine: a 2,000-batch run with an instant model, timed
   from the run's start to its result (not start-up), each run in a fresh process, median
   of repeats; and how long a keypress takes to be handled while the run goes.
4. The run history (bench_history.py): recording against --no-history on that 2,000-batch
   run, `runs list` over 10,000 runs, the history's growth per 1,000-batch run.
5. `--only pg-planning` (bench_postgres.py): planning the 100k store from PostgreSQL on
   loopback against SQLite, side by side (needs initdb and pg_ctl).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import httpx

from graphrag_tui.engine import GlobalSearch, SearchPlan
from graphrag_tui.engine.batcher import MapBatch, PartRef
from graphrag_tui.engine.events import BatchSucceeded, Planned
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.ports import ChatRequest
from graphrag_tui.engine.prompts import map_messages, map_skeleton
from graphrag_tui.engine.reply_schemas import MAP_REPLY_SCHEMA
from graphrag_tui.engine.tokens import estimate_tokens
from graphrag_tui.models.openai_http import OpenAIChatModel
from graphrag_tui.planning import prepare_plan
from graphrag_tui.store import CommunityStore

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Which harbor tariffs and levee councils shaped the freight market?"
Row = tuple[str, str, str, str]


# -- 1. planning --------------------------------------------------------------------------

PLAN_CHILD = """
import resource, sys, time
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.planning import prepare_plan
from graphrag_tui.store import CommunityStore
level = sys.argv[3] if sys.argv[3] == "leaf" else int(sys.argv[3])
started = time.perf_counter()
with CommunityStore.open(sys.argv[1]) as store:
    plan = prepare_plan(store, sys.argv[2], namespace=None, level=level, options=SearchOptions(), seed=1, shuffle=True)
elapsed = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
# ru_maxrss survives exec on Linux: it would report the benchmark's own peak (it builds the
# stores) whenever that is higher. VmHWM is this process image's own peak.
peak_kb = usage.ru_maxrss
try:
    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
print(elapsed, usage.ru_utime + usage.ru_stime, peak_kb, plan.summary_count, len(plan.batches))
"""


class PlanRun(NamedTuple):
    seconds: float
    cpu_seconds: float
    rss_mb: float
    summaries: int
    batches: int


def plan_once(store: Path, level: str, code: Path) -> PlanRun:
    """Plan in a fresh process (peak RSS is per process) with the package found in `code`
    (the child's working folder comes first on its import path)."""
    out = subprocess.run([sys.executable, "-c", PLAN_CHILD, str(store), QUESTION, level],
                         capture_output=True, text=True, check=True, cwd=code).stdout.split()
    return PlanRun(float(out[0]), float(out[1]), int(out[2]) / 1024, int(out[3]), int(out[4]))


def plan_row(label: str, runs: list[PlanRun], target_seconds: float, target_mb: int) -> Row:
    """The median time is judged, the range shows how noisy the machine was; the CPU time
    shows what the load of other processes added to the wall time."""
    seconds = statistics.median(r.seconds for r in runs)
    cpu = statistics.median(r.cpu_seconds for r in runs)
    rss_mb = max(r.rss_mb for r in runs)
    spread = (f" (range {min(r.seconds for r in runs):.2f}-{max(r.seconds for r in runs):.2f} s over {len(runs)} runs)"
              if len(runs) > 1 else "")
    target = f"< {target_seconds:g} s, < {target_mb:,} MB"
    return (f"{label} ({runs[0].summaries:,} communities, {runs[0].batches:,} batches)",
            f"median {seconds:.2f} s{spread}, CPU {cpu:.2f} s, peak RSS {rss_mb:.0f} MB", target,
            "ok" if seconds < target_seconds and rss_mb < target_mb else "MISSED")


def bench_planning(sizes: list[int], workdir: Path, repeats: int, compare_with: Path | None = None) -> list[Row]:
    """Synthetic stores of each size at the leaves (< 10 s, < 1 GB), then the tree store at
    the leaves, level 1 and level 0 (< 5 s, < 700 MB each; issue 10)."""
    from tests.benchmarks.synthetic_store import build_synthetic_store, build_tree_store

    cases = [(f"plan {size:,} communities x 10 claims at the leaves",
              build_synthetic_store(workdir / f"synthetic-{size}.db", size, 10), "leaf", 10.0, 1024) for size in sizes]
    if sizes != [10_000]:  # not in --quick
        tree = build_tree_store(workdir / "tree.db", 1_000, 10, 9)
        cases += [(f"plan 1,000 x 10 x 9 tree at {'the leaves' if level == 'leaf' else 'level ' + level}", tree,
                   level, 5.0, 700) for level in ("leaf", "1", "0")]
    rows: list[Row] = []
    for label, store, level, target_seconds, target_mb in cases:
        runs: list[PlanRun] = []
        old_runs: list[PlanRun] = []
        for _ in range(repeats):  # alternately, so a slow spell of the machine hits both
            if compare_with is not None:
                old_runs.append(plan_once(store, level, compare_with))
            runs.append(plan_once(store, level, ROOT))
        if compare_with is not None:
            rows.append(plan_row(f"{label}, code of {compare_with}", old_runs, target_seconds, target_mb))
        rows.append(plan_row(label, runs, target_seconds, target_mb))
    return rows


# -- 2. scheduling ------------------------------------------------------------------------


def synthetic_plan(batches: int, concurrency: int) -> SearchPlan:
    made = tuple(
        MapBatch(index=i, pieces=(f"[Community ID: c{i} | summary part 1]\nText of community {i}.",),
                 community_ids=(f"c{i}",), parts=(PartRef(community_id=f"c{i}", part=1),))
        for i in range(batches)
    )
    return SearchPlan(query=QUESTION, namespace="bench", level="leaf", seed=None,
                      options=SearchOptions(concurrency=concurrency), summary_count=batches, batches=made)


async def engine_map_seconds(base_url: str, plan: SearchPlan) -> float:
    marks: dict[str, float] = {}

    def on_event(event: object) -> None:
        now = time.perf_counter()
        if isinstance(event, Planned):
            marks["start"] = now
        elif isinstance(event, BatchSucceeded):
            marks["end"] = now

    model = OpenAIChatModel(base_url, "bench", None)
    try:
        result = await GlobalSearch(plan, model, on_event=on_event).run()
    finally:
        await model.aclose()
    assert result.status == "completed", result.error
    return marks["end"] - marks["start"]


async def bare_client_seconds(base_url: str, plan: SearchPlan) -> float:
    """The same requests, as a minimal asyncio + httpx program would send them."""
    model = OpenAIChatModel(base_url, "bench", None)
    payloads = [
        model.payload(ChatRequest(stage="map", messages=map_messages(plan.query, b.content), query=plan.query,
                                  content=b.content, max_tokens=512, json_schema=MAP_REPLY_SCHEMA))
        for b in plan.batches
    ]
    await model.aclose()
    next_index = 0
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def worker() -> None:
            nonlocal next_index
            while next_index < len(payloads):
                payload = payloads[next_index]
                next_index += 1
                response = await client.post(f"{base_url}/chat/completions", json=payload)
                response.json()["choices"][0]["message"]["content"]

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(plan.options.concurrency)))
        return time.perf_counter() - started


def bench_scheduling(repeats: int, batches: int = 200, concurrency: int = 16, latency: float = 0.05) -> list[Row]:
    server = subprocess.Popen([sys.executable, "-m", "tests.benchmarks.latency_server", str(latency)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"  # type: ignore[union-attr]
        plan = synthetic_plan(batches, concurrency)
        asyncio.run(engine_map_seconds(base_url, plan))  # warm up: imports, connections
        asyncio.run(bare_client_seconds(base_url, plan))
        engine, bare = [], []
        for _ in range(repeats):  # alternate, so both see the same machine load
            engine.append(asyncio.run(engine_map_seconds(base_url, plan)))
            bare.append(asyncio.run(bare_client_seconds(base_url, plan)))
    finally:
        server.terminate()
        server.wait()
    ideal = math.ceil(batches / concurrency) * latency
    e, b = statistics.median(engine), statistics.median(bare)
    label = f"Map {batches} batches, concurrency {concurrency}, {latency * 1000:.0f} ms latency"
    return [
        # SPEC §7 judges the engine against the bare client, not the ideal: on a 2-core machine
        # the loopback server shares the CPUs, and the bare client reaches only about 0.9.
        (f"{label}: engine", f"{e:.3f} s ({ideal / e:.3f} of ideal {ideal:.2f} s)", "reference", ""),
        (f"{label}: bare asyncio + httpx", f"{b:.3f} s ({ideal / b:.3f} of ideal)", "reference", ""),
        ("engine throughput / bare client throughput", f"{b / e:.3f}", ">= 0.95", "ok" if b / e >= 0.95 else "MISSED"),
    ]


# -- 3. app against headless --------------------------------------------------------------


class InstantModel:
    description = "instant benchmark model"

    async def complete(self, request: ChatRequest) -> str:
        if request.stage == "reduce":
            return json.dumps({"answer": "Instant final answer."})
        return json.dumps({"answer": "Instant answer.", "usefulness": 40})

    async def aclose(self) -> None:
        pass


def instant_store(path: Path, communities: int) -> Path:
    from tests.stores import build_store

    rows = [{"id": f"ns/{i:05d}", "summary_content": f"Community {i} keeps the harbour ledger."} for i in range(communities)]
    return build_store(path, rows)


# Room for the Map prompt and one community's part, so every community is a batch of its own.
INSTANT_OPTIONS = SearchOptions(map_budget=estimate_tokens(map_skeleton(QUESTION) + "\n") + 32, map_reserve=0, concurrency=4)


async def headless_seconds(store_path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with CommunityStore.open(store_path) as store:
        plan = prepare_plan(store, QUESTION, namespace=None, level="leaf", options=INSTANT_OPTIONS, seed=1, shuffle=True)
    result = await GlobalSearch(plan, InstantModel()).run()
    assert result.status == "completed"
    return time.perf_counter() - started, result.batch_count


async def app_seconds(store_path: Path, press_keys: bool) -> tuple[float, list[float]]:
    """The run's time in the app, and (with `press_keys`) how long each of a stream of
    keypresses sent during the run took to be handled."""
    from textual import events

    from graphrag_tui.tui.app import AppSettings, GraphRAGApp
    from graphrag_tui.tui.messages import RunFinished
    from graphrag_tui.tui.widgets.batch_grid import BatchGrid

    marks: dict[str, float] = {}

    class TimedApp(GraphRAGApp):
        def start_run(self, request):  # type: ignore[no-untyped-def]
            marks["start"] = time.perf_counter()
            super().start_run(request)

        def on_run_finished(self, message: RunFinished) -> None:
            marks["end"] = time.perf_counter()
            super().on_run_finished(message)

    app = TimedApp(AppSettings(store_path=store_path, options=INSTANT_OPTIONS, seed=1), model=InstantModel())
    handled: list[float] = []
    keys: list[float] = []
    async with app.run_test(size=(140, 42)) as pilot:
        grid = app.screen.query_one(BatchGrid)
        original_move = grid.action_move

        def timed_move(step: int) -> None:
            handled.append(time.perf_counter())
            original_move(step)

        grid.action_move = timed_move  # type: ignore[method-assign]
        await pilot.pause()  # start-up done: only the run is timed
        app.screen.query_one("#query").value = QUESTION  # type: ignore[attr-defined]
        await pilot.pause()  # the typed question is on screen before Enter, as for a user
        app.setup_form.submit()  # as Enter in the field does; pilot.press would wait for the run
        while not grid.has_focus and "end" not in marks:  # the run starts, the grid takes focus
            await asyncio.sleep(0.01)
        while "end" not in marks and not press_keys:
            await asyncio.sleep(0.05)  # a light poll: the app, not the benchmark, should use the CPU
        while "end" not in marks:
            # A key as the terminal driver delivers it, then wait until the grid handled it.
            sent, count = time.perf_counter(), len(handled)
            app.post_message(events.Key("right", None))
            while len(handled) == count and "end" not in marks:
                await asyncio.sleep(0.001)
            if len(handled) > count:
                keys.append(handled[-1] - sent)
            await asyncio.sleep(0.02)
        assert app.run_state.result is not None and app.run_state.result.status == "completed"
        await pilot.pause()  # let a key still queued be handled before the app closes
    return marks["end"] - marks["start"], keys


def app_child(kind: str, store: Path) -> None:
    """One measurement in this (fresh) process, printed as JSON: each face of the engine
    is timed in a process of its own, as a user runs it, so one's heap does not slow the
    other's garbage collection."""
    if kind in ("history", "no-history"):
        from tests.benchmarks.bench_history import child

        child(kind, store)
    elif kind == "headless":
        seconds, batch_count = asyncio.run(headless_seconds(store))
        print(json.dumps({"seconds": seconds, "batches": batch_count}))
    else:
        seconds, keys = asyncio.run(app_seconds(store, press_keys=kind == "keys"))
        print(json.dumps({"seconds": seconds, "keys": keys}))


def measure_in_child(kind: str, store: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.benchmarks.bench", "--child", kind, str(store)],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_app(workdir: Path, repeats: int) -> list[Row]:
    store = instant_store(workdir / "instant.db", 2000)
    headless_runs, app_runs = [], []
    for _ in range(repeats):  # interleaved, so a slow spell of the machine hits both
        headless_runs.append(measure_in_child("headless", store))
        app_runs.append(measure_in_child("app", store))
    keys = [k for _ in range(max(1, repeats // 2)) for k in measure_in_child("keys", store)["keys"]]
    headless = statistics.median(r["seconds"] for r in headless_runs)
    in_app = statistics.median(r["seconds"] for r in app_runs)
    label = f"{headless_runs[0]['batches']:,}-batch run, instant model"

    def spread(runs: list[dict]) -> str:
        return f"range {min(r['seconds'] for r in runs):.2f}-{max(r['seconds'] for r in runs):.2f} s over {repeats} runs"

    worst = max(keys) if keys else float("nan")
    return [
        (f"{label}: headless engine", f"median {headless:.2f} s ({spread(headless_runs)})", "reference", ""),
        (f"{label}: in the app (headless Pilot)", f"median {in_app:.2f} s ({spread(app_runs)}), "
         f"{in_app / headless:.2f}x headless", "<= 1.5x", "ok" if in_app <= 1.5 * headless else "MISSED"),
        ("keypress handled during that run", f"median {statistics.median(keys) * 1000:.0f} ms, max {worst * 1000:.0f} ms"
         f" ({len(keys)} presses)" if keys else "run ended before a key", "< 100 ms",
         "ok" if keys and worst < 0.1 else "MISSED"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k communities only, fewer repeats")
    parser.add_argument("--only", choices=("planning", "scheduling", "app", "explore", "history", "pg-planning"),
                        help="run one part (explore: tests/benchmarks/bench_explore.py, on its own)")
    parser.add_argument("--repeats", type=int, help="planning runs per measure (default 1 with --quick, else 3)")
    parser.add_argument("--compare-with", type=Path, metavar="CHECKOUT",
                        help="also plan with the graphrag_tui package of this folder (before/after)")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        app_child(args.child[0], Path(args.child[1]))
        return
    if args.only == "explore":  # a table of its own (it builds its 100k store)
        from tests.benchmarks.bench_explore import run as run_explore

        for row in run_explore(None):
            print("| " + " | ".join(row) + " |")
        return
    if args.compare_with is not None and not (args.compare_with / "graphrag_tui" / "__init__.py").is_file():
        parser.error(f"--compare-with: no graphrag_tui package in {args.compare_with}")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.only in (None, "planning"):
            repeats = args.repeats or (1 if args.quick else 3)
            rows += bench_planning([10_000] if args.quick else [10_000, 100_000], workdir, repeats,
                                   args.compare_with.resolve() if args.compare_with else None)
        if args.only in (None, "scheduling"):
            rows += bench_scheduling(repeats=3 if args.quick else 5)
        if args.only in (None, "app"):
            rows += bench_app(workdir, repeats=3 if args.quick else 7)
        if args.only == "pg-planning":  # needs PostgreSQL (initdb, pg_ctl): only when asked
            from tests.benchmarks.bench_postgres import bench_pg_planning

            rows += bench_pg_planning(workdir, repeats=args.repeats or 3, size=10_000 if args.quick else 100_000)
        if args.only in (None, "history"):
            from tests.benchmarks.bench_history import bench_history

            rows += bench_history(workdir, repeats=3 if args.quick else 7)
    print("| measure | result | target | |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
