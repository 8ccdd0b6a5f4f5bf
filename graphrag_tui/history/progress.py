"""How far recorded runs got: the number of succeeded batches of some runs (the Runs screen's
"ok" column; a run's summary counts only the failed ones)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .database import connect, errors_named


def succeeded_batches(path: Path, run_ids: Iterable[str]) -> dict[str, int]:
    """run id -> batches that succeeded (0 for a run with none, or unknown)."""
    wanted = list(dict.fromkeys(run_ids))
    found = dict.fromkeys(wanted, 0)
    if not wanted or not path.exists():
        return found
    with errors_named(path):
        connection = connect(path, create=False)
        try:
            for start in range(0, len(wanted), 500):  # under SQLite's limit of bound parameters
                chunk = wanted[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                for run_id, count in connection.execute(
                    f"SELECT run_id, count(*) FROM batches WHERE status = 'succeeded' AND run_id IN ({marks}) "
                    "GROUP BY run_id", chunk,
                ):
                    found[run_id] = count
        finally:
            connection.close()
    return found
