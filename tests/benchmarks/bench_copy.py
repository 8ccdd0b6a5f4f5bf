"""`copy` between SQLite and PostgreSQL on a large synthetic store: seconds and peak RSS.

    python -m tests.benchmarks.bench_copy                 # 100k communities, 1M claims
    python -m tests.benchmarks.bench_copy --communities 10000

Starts a throwaway PostgreSQL cluster (tests/postgres_cluster.py, loopback TCP), builds the
synthetic store (synthetic_store.py), then runs the real CLI, each in a fresh process timed
with its peak RSS (os.wait4: the CLI process itself): SQLite -> PostgreSQL (graphrag-ts's
tables created, every row adapted and checked), then PostgreSQL -> a new SQLite file. The
synthetic store has rows graphrag-ts's constraints change (documents without content, claims
of one subject with the same description), so the report's adaptation summary is printed
and the rows that came back are counted. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from graphrag_tui.store.schema import TABLES
from tests.cli_runner import EXECUTABLE, clean_env
from tests.postgres_cluster import start_cluster


def timed(*args: str) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB of the CLI's process, stdout) of one CLI run."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([EXECUTABLE, *args], stdout=out, stderr=err, env=clean_env())
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"failed: {err.read().strip()}")
        return wall, usage.ru_maxrss / 1024, out.read()


def rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--communities", type=int, default=100_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-copy-"))
    store = folder / "synthetic.db"
    # built in a process of its own: a child forked from a parent holding the builder's
    # rows would start with their pages in its RSS
    subprocess.run([sys.executable, "-c", "import sys; from tests.benchmarks.synthetic_store import "
                    "build_synthetic_store as b; b(sys.argv[1], int(sys.argv[2]))", str(store),
                    str(args.communities)], check=True)
    back = folder / "back.db"
    cluster = start_cluster()
    try:
        cluster.create_database("bench")
        url = cluster.admin_url("bench")
        to_pg = timed("copy", str(store), url)
        from_pg = timed("copy", url, str(back))
    finally:
        cluster.stop()
    summary = next(line for line in to_pg[2].splitlines() if line.startswith("Adaptations:"))
    print(f"Store: {rows(store, 'rag_community_summaries'):,} communities, {rows(store, 'rag_claims'):,} claims, "
          f"{sum(rows(store, t) for t in TABLES):,} rows; into PostgreSQL: {summary}; "
          f"back in SQLite: {sum(rows(back, t) for t in TABLES):,} rows\n")
    shutil.rmtree(folder)
    print("| copy | seconds | peak RSS (MiB) |")
    print("|---|---:|---:|")
    print(f"| SQLite -> PostgreSQL | {to_pg[0]:.1f} | {to_pg[1]:.0f} |")
    print(f"| PostgreSQL -> SQLite | {from_pg[0]:.1f} | {from_pg[1]:.0f} |")


if __name__ == "__main__":
    main()
