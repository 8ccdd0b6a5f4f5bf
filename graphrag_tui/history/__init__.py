"""The run history: every run, recorded while it goes, in one SQLite file of its own (never
the store). `RunRecorder` writes a run; `RunHistory` lists, loads and deletes runs. This
package and the store are the only ones that speak SQLite.

Its names are imported when first used: `runs list` reads the history without loading the
engine (the recorder and a run read whole need it)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .database import BUSY_TIMEOUT_S, HistoryError
    from .formats import RatingsPaid, RecordedSelection, content_hash, selection_json
    from .ids import new_run_id
    from .recorder import FLUSH_INTERVAL, RunMetadata, RunRecorder, messages_json
    from .records import RESUMABLE, RUN_STATUSES, RunHistory, RunSummary, UnknownRun
    from .schema import SCHEMA_VERSION
    from .seal import key_problem
    from .stored import RecordedBatch, StoredRun

#: Each name's module.
_MODULES = {
    "BUSY_TIMEOUT_S": "database",
    "HistoryError": "database",
    "new_run_id": "ids",
    "FLUSH_INTERVAL": "recorder",
    "RunMetadata": "recorder",
    "RunRecorder": "recorder",
    "content_hash": "formats",
    "RatingsPaid": "formats",
    "RecordedSelection": "formats",
    "selection_json": "formats",
    "messages_json": "recorder",
    "RESUMABLE": "records",
    "RUN_STATUSES": "records",
    "RunHistory": "records",
    "RunSummary": "records",
    "UnknownRun": "records",
    "SCHEMA_VERSION": "schema",
    "key_problem": "seal",
    "RecordedBatch": "stored",
    "StoredRun": "stored",
}

__all__ = [
    "BUSY_TIMEOUT_S",
    "FLUSH_INTERVAL",
    "RESUMABLE",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "HistoryError",
    "RatingsPaid",
    "RecordedBatch",
    "RecordedSelection",
    "RunHistory",
    "RunMetadata",
    "RunRecorder",
    "RunSummary",
    "StoredRun",
    "UnknownRun",
    "content_hash",
    "key_problem",
    "messages_json",
    "new_run_id",
    "selection_json",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
