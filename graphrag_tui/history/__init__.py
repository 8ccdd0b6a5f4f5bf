"""The run history: every run, recorded while it goes, in one SQLite file of its own (never
the store). `RunRecorder` writes a run; `RunHistory` lists, loads and deletes runs. This
package and the store are the only ones that speak SQLite."""

from .database import BUSY_TIMEOUT_S, HistoryError
from .ids import new_run_id
from .recorder import FLUSH_INTERVAL, RunMetadata, RunRecorder, content_hash, messages_json
from .records import RESUMABLE, RUN_STATUSES, RecordedBatch, RunHistory, RunSummary, StoredRun, UnknownRun
from .schema import SCHEMA_VERSION

__all__ = [
    "BUSY_TIMEOUT_S",
    "FLUSH_INTERVAL",
    "RESUMABLE",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "HistoryError",
    "RecordedBatch",
    "RunHistory",
    "RunMetadata",
    "RunRecorder",
    "RunSummary",
    "StoredRun",
    "UnknownRun",
    "content_hash",
    "messages_json",
    "new_run_id",
]
