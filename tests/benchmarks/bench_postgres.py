"""Planning from PostgreSQL against SQLite, side by side (issue 14):

    python -m tests.benchmarks.bench --only pg-planning [--repeats N] [--quick]

The synthetic store of `bench.py` (100,000 communities, 1,000,000 claims; 10,000 with
--quick) is built in SQLite, then copied into graphrag-ts's tables (its columns and
non-unique indexes: tests/pg_stores.py) of a throwaway cluster on loopback
(tests/postgres_cluster.py). Each run plans at the leaves in a fresh process through
`open_store`, the SQLite file and the PostgreSQL URL alternately, so a slow spell of the
machine hits both. Target: PostgreSQL at most 1.5x SQLite's median time, peak RSS (of the
app's process; the server's is not counted) under 1 GB.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.benchmarks.bench import QUESTION, ROOT, PlanRun, Row

PLAN_CHILD = """
import sys, time
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.planning import prepare_plan
from graphrag_tui.store.opening import open_store
started = time.perf_counter()
import resource
with open_store(sys.argv[1]) as store:
    plan = prepare_plan(store, sys.argv[2], namespace=None, level="leaf", options=SearchOptions(), seed=1, shuffle=True)
elapsed = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(elapsed, usage.ru_utime + usage.ru_stime, peak_kb, plan.summary_count, len(plan.batches), time.thread_time())
"""


def _plan(store: str) -> PlanRun:
    out = subprocess.run([sys.executable, "-c", PLAN_CHILD, store, QUESTION], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    return PlanRun(float(out[0]), float(out[1]), int(out[2]) / 1024, int(out[3]), int(out[4]), float(out[5]))


def _describe(runs: list[PlanRun]) -> str:
    seconds = [r.seconds for r in runs]
    return (f"median {statistics.median(seconds):.2f} s (range {min(seconds):.2f}-{max(seconds):.2f} s over "
            f"{len(runs)} runs), CPU {statistics.median(r.cpu_seconds for r in runs):.2f} s, "
            f"peak RSS {max(r.rss_mb for r in runs):.0f} MB")


def bench_pg_planning(workdir: Path, repeats: int, size: int = 100_000) -> list[Row]:
    from tests.benchmarks.synthetic_store import build_synthetic_store
    from tests.conftest import PgDatabase
    from tests.pg_stores import copy_sqlite_to_postgres
    from tests.postgres_cluster import start_cluster

    path = build_synthetic_store(workdir / f"synthetic-{size}.db", size, 10)
    cluster = start_cluster()
    try:
        cluster.create_database("bench")
        database = PgDatabase(cluster, "bench")
        started = time.perf_counter()
        counts = copy_sqlite_to_postgres(path, database, strict=False)
        load_seconds = time.perf_counter() - started
        sqlite_runs: list[PlanRun] = []
        pg_runs: list[PlanRun] = []
        _plan(database.url)  # warm the server's cache, as the file's pages are warm in the OS cache
        for _ in range(repeats):
            sqlite_runs.append(_plan(str(path)))
            pg_runs.append(_plan(database.url))
    finally:
        cluster.stop()
    assert (sqlite_runs[0].summaries, sqlite_runs[0].batches) == (pg_runs[0].summaries, pg_runs[0].batches)
    ratio = statistics.median(r.seconds for r in pg_runs) / statistics.median(r.seconds for r in sqlite_runs)
    peak = max(r.rss_mb for r in pg_runs)
    label = f"({pg_runs[0].summaries:,} communities, {counts['rag_claims']:,} claims, {pg_runs[0].batches:,} batches)"
    return [
        (f"plan from SQLite {label}", _describe(sqlite_runs), "the reference", ""),
        (f"plan from PostgreSQL on loopback {label}; loaded in {load_seconds:.0f} s", _describe(pg_runs),
         "<= 1.5x SQLite, < 1,024 MB", "ok" if ratio <= 1.5 and peak < 1024 else "MISSED"),
        ("PostgreSQL / SQLite (median time)", f"{ratio:.2f}x", "<= 1.5x", "ok" if ratio <= 1.5 else "MISSED"),
    ]
