"""Going on from a recorded run: a re-run (a new run, its child) sends again the batches that
failed or were cancelled, or all of them, and keeps the others' answers; a resume finishes
the same run, sending only the batches that never finished. Both plan again from the store
with the recorded seed and options, and refuse when a batch's content differs from the
recorded one (the store changed), unless a re-run is told to plan anew (`replan`).

    stored = RunHistory(path).load(run_id)
    with CommunityStore.open(stored.summary.store) as store:
        session = prepare_rerun(stored, store, history=path, mode="failed")
    settings = model_settings_for(stored, flags)      # the recorded endpoint, or the flags over it
    model = await ModelSession(environ).open(settings)
    result = await session.run(model, timeout=settings.timeout, settings=settings)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..arguments import flag
from ..engine import SearchPlan
from ..engine.options import FALLBACK_DEFAULTS, resolve_options
from ..engine.selection import DYNAMIC_ONLY, SelectionOptions, check_selection
from ..errors import InputError
from ..history import RESUMABLE, RecordedBatch, RecordedSelection, RunHistory, StoredRun, content_hash, messages_json
from ..models.factory import ModelSettings, resolve_model_settings
from ..safe_text import one_line
from ..store import CommunityStore
from .options import MODEL_KEYS
from .recording import UNRECORDED_SETTINGS, not_recorded_here, settings_from_record
from .run import RunSession, SearchRequest

RerunMode = Literal["failed", "all"]


def request_of(stored: StoredRun) -> SearchRequest:
    """The recorded run's request: its question, namespace, level, options and seed, and the
    communities its selection chose (issue 15), planned again as they were. Dynamic selection
    that had not chosen when the run ended (killed or cancelled while the model rated) rates
    again what it had not rated."""
    summary, recorded = stored.summary, stored.selection
    # as a run's own flags are checked: concurrency 0 sent nothing and ended the run `no_results`
    resolve_options({}, stored.options.model_dump(),
                    {name: f"run {stored.run_id}'s recorded {flag(name)}" for name in FALLBACK_DEFAULTS})
    if recorded is None:  # the level's communities, or a run recorded before version 7
        recorded = RecordedSelection(SelectionOptions(), stored.result.selection)
    # and its selection's: --rate-repeats 0 crashed a resumed dynamic selection, 10**12 took all memory
    for name in (*DYNAMIC_ONLY, "min_rank"):
        check_selection(name, getattr(recorded.options, name), f"run {stored.run_id}'s recorded {flag(name)}")
    return SearchRequest(
        query=summary.question, namespace=summary.namespace, level=summary.level, options=stored.options,
        seed=stored.seed, shuffle=stored.shuffle, prompts=stored.prompts, selection=recorded.options,
        recorded_selection=recorded.report, known_ratings=recorded.ratings, known_votes=recorded.votes,
    )


def changed_batch(stored: StoredRun, plan: SearchPlan) -> str | None:
    """Why the plan made now differs from the recorded one, or None."""
    if len(plan.batches) != len(stored.batches):
        return f"it now plans {len(plan.batches)} Map batches, the run had {len(stored.batches)}"
    for batch, recorded in zip(plan.batches, stored.batches, strict=True):
        if content_hash(batch) != recorded.content_sha256:
            return f"the content of batch {batch.index} differs from the recorded one"
    return None


def _check_store(stored: StoredRun, plan: SearchPlan, *, replan_hint: bool) -> None:
    reason = changed_batch(stored, plan)
    if reason is not None:
        hint = "; --replan plans again with the same seed and options" if replan_hint else \
            "; `rerun --replan` plans again with the same seed and options"
        raise InputError(f"the store {stored.summary.store} changed since run {stored.run_id}: {reason}{hint}")


def _check_prompts(history: Path, stored: StoredRun, plan: SearchPlan) -> None:
    """The prompts sent again are the recorded ones, byte for byte: the contents are (their
    hashes match), and so must be the Map prompt around them (another version of the app
    could word it otherwise)."""
    recorded = RunHistory(history).recorded_map_prompt(stored.run_id)
    if recorded is not None and plan.batches and recorded != messages_json(plan.query, plan.batches[0].content, plan.prompts):
        raise InputError(
            f"this version's Map prompt differs from the one run {stored.run_id} sent: its batches would not be "
            "sent as they were (`rerun --replan` sends this version's)"
        )


def prepare_rerun(
    stored: StoredRun, store: CommunityStore, *, history: Path | None, mode: RerunMode = "failed",
    replan: bool = False, **session: Any,
) -> RunSession:
    """A prepared child run of `stored`: with mode `failed` the succeeded batches are kept
    (with the model that answered them) and the others sent again; with `all` every batch
    is sent; a run whose batches all succeeded but whose Reduce failed is Reduced again,
    nothing sent to Map. `session`: RunSession's other arguments (on_event, on_warning, clock...)."""
    if stored.status == "running":  # its batches in flight, and those it has yet to send, would be paid twice
        raise InputError(f"run {stored.run_id} is running in another process: re-run it once it has ended")
    run = RunSession(store, history=history, **session)
    plan = run.prepare(request_of(stored))
    if not replan:
        _check_store(stored, plan, replan_hint=True)
    kept = {}
    if mode == "failed":  # by content: a store with a community more or less moves every batch of a new plan
        answered: dict[str, list[RecordedBatch]] = {}
        for recorded in stored.batches:
            if recorded.status == "succeeded":
                answered.setdefault(recorded.content_sha256, []).append(recorded)
        for batch in plan.batches:
            same = answered.get(content_hash(batch))
            if same:
                recorded = same.pop(0)
                kept[batch.index] = (recorded.result.model_copy(update={"index": batch.index}), recorded.model)
    if not plan.batches:  # it would end no_results again, as a new run of its own
        report = run.selected.report if run.selected is not None else None
        if report is not None and not report.selected:  # (its communities' text was not the reason)
            raise InputError(f"run {stored.run_id} selected no community ({report.mode} selection): nothing to send "
                             "again; a new query selects them again")
        raise InputError(f"run {stored.run_id} has no Map batch (its communities have no text to map): nothing to "
                         "send again" + ("" if replan else "; --replan plans again from the store as it is now"))
    if len(kept) == len(plan.batches) and stored.status != "failed":
        raise InputError(
            f"run {stored.run_id} has no failed or cancelled batch: nothing to send again (--all sends every batch)"
        )
    if history is not None and not replan:
        _check_prompts(history, stored, plan)
    run.prior = kept
    run.parent_run_id = stored.run_id
    return run


def prepare_resume(stored: StoredRun, store: CommunityStore, *, history: Path, **session: Any) -> RunSession:
    """The same run, prepared to go on: the batches that finished (succeeded or failed) are
    kept, the others sent (after any attempts they had made, which stay in their records).
    Only an interrupted or cancelled run can be resumed."""
    if stored.status == "running":  # (its owner lives: a finished or dead one is not `running` here)
        raise InputError(f"run {stored.run_id} is running in another process: it cannot be resumed now")
    if stored.status not in RESUMABLE:
        raise InputError(
            f"run {stored.run_id} is {stored.status}: only an interrupted or cancelled run can be resumed "
            "(`rerun` starts a new run from it)"
        )
    run = RunSession(store, history=history, **session)
    plan = run.prepare(request_of(stored))
    _check_store(stored, plan, replan_hint=False)
    run.prior = {b.index: (b.result, b.model) for b in stored.batches if b.status != "pending"}
    run.prior_unpaid = {b.index for b in stored.batches if b.kept}
    run.earlier_attempts = {b.index: b.result.attempts for b in stored.batches if b.status == "pending"
                            and b.result.attempts}
    run.earlier_reduce_attempts = list(stored.result.reduce.attempts)  # (a run cancelled while it Reduced)
    run.earlier_usage = stored.result.usage_total
    run.earlier_cost = stored.result.cost
    run.earlier_ratings_paid = stored.selection.paid if stored.selection is not None else None
    _check_prompts(history, stored, plan)
    run.resume_run_id = stored.run_id
    run.parent_run_id = stored.summary.parent_run_id
    run.started_at = stored.summary.started_at
    return run


def model_settings_for(
    stored: StoredRun, flags: Mapping[str, Any] | None = None, *, configured: Mapping[str, Any] | None = None
) -> ModelSettings:
    """The recorded endpoint (kind, base URL, model, response format, the key's variable,
    rate limits, request fields), or the given model flags over it: `--model Y` keeps the
    recorded base URL. What is never recorded (extra headers and body fields: they may hold
    a credential) comes from `configured`, the user's [model] settings, as for a new run. A
    run this user's graphrag-tui did not record (history/seal.py) runs on the flags over
    `configured`, as a new run does, and needs a model flag."""
    given = {k: v for k, v in (flags or {}).items() if k in MODEL_KEYS and v not in (None, False)}
    if not stored.sealed:  # its endpoint and key variable may be anyone's: only the flags are used
        if not given:
            raise InputError(f"{not_recorded_here(stored)}: its endpoint and key variable are not used; give the "
                             "model (--base-url, --model, --api-key-env, or --local-llm)")
        return resolve_model_settings(given, {k: v for k, v in (configured or {}).items() if v is not None})
    try:
        recorded = settings_from_record(stored.model_settings)
    except ValueError as error:  # pydantic's ValidationError: an edited or damaged record
        raise InputError(f"run {stored.run_id}'s recorded model settings cannot be used: "
                         f"{one_line(str(error), 200)}") from None
    tables = {k: v for k, v in (configured or {}).items() if k in UNRECORDED_SETTINGS and v is not None}
    if tables:
        recorded = recorded.model_copy(update=tables)
    if recorded.kind == "local":
        recorded = recorded.model_copy(update={"local_slots": stored.options.concurrency})
    if not given:
        return recorded
    defaults = recorded.model_dump(exclude={"local_llm", "local_slots"}, exclude_none=True)
    if "local_llm" in given:
        defaults.pop("base_url", None)
    return resolve_model_settings(given, defaults)
