"""What a run records about itself besides its result (the store's identity, the model's
settings without the key, the answering model's name), and the JSON of a run: the
result's JSON (SPEC §5) with the run's id, parent, times and the model of each batch."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..engine import ChatModel, SearchResult
from ..errors import InputError
from ..export import RunInfo
from ..history import RunMetadata, StoredRun, key_problem
from ..models.factory import ModelSettings
from ..models.openai_http import CREDENTIAL_NAME, parse_base_url
from ..store.location import PostgresLocation, StoreLocation, parse_location, store_identity
from ..url_mask import mask_urls

#: The settings a run records: how to reach the model again. The key itself never.
RECORDED_SETTINGS = (
    "base_url", "model", "api_key_env", "timeout", "response_format", "max_response_bytes", "local_llm",
    "requests_per_minute", "tokens_per_minute", "max_rate_wait",
    "temperature", "top_p", "model_seed", "reasoning_effort", "max_tokens_field", "api_key_header",
)
#: Never recorded: extra request headers and body fields may carry a credential (a gateway's
#: token); a re-run takes them from the user's settings, as a new run does.
UNRECORDED_SETTINGS = ("headers", "extra_body")


def recorded_settings(settings: ModelSettings) -> dict[str, Any]:
    recorded = {"kind": settings.kind, **settings.model_dump(include=set(RECORDED_SETTINGS))}
    if isinstance(recorded["base_url"], str):  # as sent: without a user:password, which is never sent
        try:
            url = parse_base_url(recorded["base_url"])
        except InputError:  # (a URL no run can use)
            recorded["base_url"] = mask_urls(recorded["base_url"])
        else:  # and without its credentials' parameters (api-version stays)
            for name in {name for name in url.params if CREDENTIAL_NAME.search(name)}:
                url = url.copy_remove_param(name)
            recorded["base_url"] = str(url)
    return recorded


def recorded_store(stored: StoredRun) -> StoreLocation:
    """Where a recorded run's store is. A database only when this user's graphrag-tui
    recorded it (history/seal.py): libpq would send it the user's password."""
    location = parse_location(stored.summary.store)
    if isinstance(location, PostgresLocation) and not stored.sealed:
        raise InputError(f"{not_recorded_here(stored)}: its database {location} is not opened")
    return location


def recorded_run_info(stored: StoredRun) -> RunInfo | None:
    """What a report says of a recorded run, as the app's export says of the run it shows:
    its start, duration, model, store and budgets (None: a start that is not a time)."""
    summary = stored.summary
    try:  # (in UTC here: a time at the calendar's end, 9999-12-31T23:59-23:59, cannot be moved there)
        started = _utc(datetime.fromisoformat(summary.started_at)).astimezone(UTC)
        finished = _utc(datetime.fromisoformat(summary.finished_at)).astimezone(UTC) if summary.finished_at else None
    except (TypeError, ValueError, OverflowError):
        return None
    duration = (finished - started).total_seconds() if finished is not None else None
    try:
        location = parse_location(summary.store)
        changed = isinstance(location, Path) and store_changed(stored, location)
    except (InputError, OSError):  # (not at hand, or no store's: the report names its communities only)
        changed = False
    return RunInfo(started, duration, summary.model or "unknown", summary.store, stored.options, changed)


def store_changed(stored: StoredRun, path: Path) -> bool:
    """Whether the store's file is not as the run found it (its size or mtime); OSError
    when it cannot be looked at."""
    try:
        status = path.stat()
    except ValueError as error:  # (a NUL in an edited history's path)
        raise OSError(errno.EINVAL, str(error)) from None
    return (stored.store_size, stored.store_mtime_ns) != (status.st_size, status.st_mtime_ns)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def not_recorded_here(stored: StoredRun) -> str:
    """Why a run's recorded endpoint or database is not used (history/seal.py)."""
    problem = key_problem()
    if problem is not None:  # (then no run reads as this user's)
        return (f"whether run {stored.run_id} was recorded by this user's graphrag-tui cannot be checked: the run "
                f"history's key {problem}")
    return (f"run {stored.run_id} was not recorded by this user's graphrag-tui (a history from elsewhere, an edited "
            "row, or a run recorded before version 8)")


def settings_from_record(recorded: dict[str, Any]) -> ModelSettings:
    return ModelSettings.model_validate({k: v for k, v in recorded.items() if k in RECORDED_SETTINGS})


def model_name(model: ChatModel, settings: ModelSettings | None) -> str:
    """The model that answers: an endpoint's model name as sent, `extractive`, or `local LLM`."""
    name = getattr(model, "model", None)
    kind = settings.kind if settings is not None else None
    if kind == "http" and isinstance(name, str):
        return name
    return {"extractive": "extractive", "local": "local LLM"}.get(kind or "", str(model.description))


def run_metadata(
    store_path: StoreLocation, settings: ModelSettings | None, model: ChatModel, parent_run_id: str | None
) -> RunMetadata:
    size = mtime = None
    if isinstance(store_path, Path):
        try:
            stat = Path(os.path.abspath(store_path)).stat()
            size, mtime = stat.st_size, stat.st_mtime_ns
        except OSError:
            pass
    return RunMetadata(
        store_path=store_identity(store_path),  # a database: its URL masked, never the password
        store_size=size,
        store_mtime_ns=mtime,
        model_settings=recorded_settings(settings) if settings is not None else {"kind": "unknown"},
        model_name=model_name(model, settings),
        parent_run_id=parent_run_id,
    )


def run_document(
    result: SearchResult,
    *,
    run_id: str | None,
    parent_run_id: str | None,
    started_at: str | None,
    finished_at: str | None,
    batch_models: list[str | None],
    status: str | None = None,
) -> dict[str, Any]:
    """The JSON of `query --json`, `rerun`, `resume` and `runs show`: the result's, then the
    run's id, parent, times and each batch's answering model (None: never sent)."""
    document = result.model_dump(mode="json")
    if status is not None:  # the history's `interrupted` / `running`, which no result has
        document["status"] = status
    document.update(
        run_id=run_id, parent_run_id=parent_run_id, started_at=started_at, finished_at=finished_at,
        batch_models=batch_models,
    )
    return document


def stored_document(stored: StoredRun) -> dict[str, Any]:
    summary = stored.summary
    return run_document(
        stored.result,
        run_id=summary.run_id,
        parent_run_id=summary.parent_run_id,
        started_at=summary.started_at,
        finished_at=summary.finished_at,
        batch_models=stored.batch_models,
        status=summary.status if summary.status in ("running", "interrupted") else None,
    )
