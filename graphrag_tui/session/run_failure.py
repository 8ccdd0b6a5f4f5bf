"""What a run that broke on an unexpected error ends with: a `failed` result that keeps the
batches finished before the error, so they can still be read and exported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine import BatchResult, GlobalSearch, ReduceReport, SearchPlan, SearchResult
from ..engine.selection import SelectionReport
from ..errors import InputError
from ..safe_text import one_line

if TYPE_CHECKING:
    from .run import SearchRequest

#: How much of an exception's message the error line keeps.
MESSAGE_LIMIT = 300


def error_words(error: BaseException) -> str:
    """One line naming the error. An exception group is named by its first leaf: "unhandled
    errors in a TaskGroup" says nothing."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    message = one_line(str(error), MESSAGE_LIMIT)
    name = type(error).__name__
    return f"internal error: {name}: {message}" if message else f"internal error: {name}"


def failure_words(error: BaseException) -> str:
    """What a face says of a read that failed: an input error's own line (a bad store or
    history), anything else as `error_words` (a bug must not leave a view waiting)."""
    return str(error) if isinstance(error, InputError) else error_words(error)


def failed_result(
    request: SearchRequest, plan: SearchPlan | None, search: GlobalSearch | None, error: BaseException
) -> SearchResult:
    """The run as far as it went, `failed` with the error in words."""
    text = error_words(error) + "; the run stopped there"
    if search is not None:
        batches = [b.model_copy(deep=True) for b in search.batches]
        reduce = search.reduce.model_copy(deep=True)
        selected = [s.model_copy(deep=True) for s in search.selected]
    elif plan is not None:
        batches = [
            BatchResult(index=b.index, community_ids=b.community_ids, parts=b.parts, prompt_tokens=plan.prompt_tokens(b))
            for b in plan.batches
        ]
        reduce, selected = ReduceReport(budget=plan.options.reduce_prompt_budget), []
    else:
        batches, reduce, selected = [], ReduceReport(budget=request.options.reduce_prompt_budget), []
    return SearchResult(
        query=plan.query if plan else request.query,
        namespace=plan.namespace if plan else request.namespace or "",
        level=plan.level if plan else request.level,
        seed=plan.seed if plan else request.seed,
        status="failed",
        error=text,
        summary_count=plan.summary_count if plan else 0,
        batch_count=len(batches),
        failed_batch_count=sum(b.status == "failed" for b in batches),
        batches=batches,
        reduce=reduce,
        prompts=plan.prompts if plan else request.prompts,
        selected_map_answers=selected,
        selection=_selection_so_far(search),
        **(search.usage_fields() if search is not None else {}),
    )


def _selection_so_far(search: GlobalSearch | None) -> SelectionReport | None:
    """The run's selection, with every rating dynamic selection finished before the break."""
    if search is None or search.selection is None:
        return None
    report = search.selection.model_copy(deep=True)
    if search.selector is not None and not report.ratings:
        report.ratings = list(search.selector.ratings)
    return report
