"""The one result object a run returns; it serializes to the JSON of SPEC §5."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, NonNegativeInt

from .batcher import PartRef
from .ports import ErrorKind
from .prompts import Prompts
from .selection import SelectionReport
from .usage import CallUsage, Cost, Usage

Status = Literal["completed", "partial", "no_results", "failed", "cancelled"]
Decision = Literal["selected", "over_budget", "zero_usefulness"]
Level = Literal["leaf"] | int

#: How much of each raw response a result, an event or the app keeps, in UTF-8 bytes.
RAW_RESPONSE_CAP = 65536


def cap_raw_response(text: str) -> tuple[str, int]:
    """The first RAW_RESPONSE_CAP bytes of `text` (cut at a character boundary) and the
    whole text's size in UTF-8 bytes."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= RAW_RESPONSE_CAP:
        return text, len(data)
    return data[:RAW_RESPONSE_CAP].decode("utf-8", "ignore"), len(data)


class Attempt(BaseModel):
    attempt: int
    started_at: str
    duration_s: float
    error_kind: ErrorKind | None = None
    error: str | None = None
    raw_response: str | None = None
    #: The whole raw response's size in UTF-8 bytes; `raw_response` keeps at most the first
    #: 64 KiB of it (RAW_RESPONSE_CAP), cut at a character boundary.
    raw_response_bytes: int | None = None
    #: What the server said this call used (None: it did not say).
    usage: CallUsage | None = None


class BatchResult(BaseModel):
    index: int
    community_ids: tuple[str, ...]
    parts: tuple[PartRef, ...]
    prompt_tokens: NonNegativeInt
    attempts: list[Attempt] = []
    usefulness: int | float | None = None
    answer: str | None = None
    #: `cancelled` when the run was cancelled before the batch finished.
    status: Literal["succeeded", "failed", "cancelled"] = "cancelled"


class ReduceCandidate(BaseModel):
    batch_index: int
    usefulness: int | float
    community_ids: tuple[str, ...]
    decision: Decision


class ReduceReport(BaseModel):
    candidates: list[ReduceCandidate] = []
    prompt_tokens: NonNegativeInt | None = None
    budget: int
    attempts: list[Attempt] = []


class SelectedAnswer(BaseModel):
    answer: str
    usefulness: int | float
    community_ids: tuple[str, ...]


class SearchResult(BaseModel):
    query: str
    namespace: str
    level: Level
    seed: int | None
    status: Status
    answer: str | None = None
    error: str | None = None
    #: Why a run ended without an answer (no_results, cancelled), in words.
    detail: str | None = None
    summary_count: NonNegativeInt
    batch_count: NonNegativeInt
    failed_batch_count: NonNegativeInt = 0
    batches: list[BatchResult] = []
    reduce: ReduceReport
    selected_map_answers: list[SelectedAnswer] = []
    #: The sum of every call's usage (Map, Reduce and any other call of the run); None when
    #: no server reported usage.
    usage_total: Usage | None = None
    #: The estimated prompt tokens of the same calls, to set beside usage_total.prompt_tokens.
    estimated_prompt_tokens: NonNegativeInt | None = None
    #: usage_total priced by the `[prices."model"]` table; None without one.
    cost: Cost | None = None
    #: The prompts the run was sent: the templates and the answer's form (None: a run
    #: recorded before prompts were recorded, which used the built-in ones).
    prompts: Prompts | None = None
    #: How the communities were chosen (issue 15): None for `--select level`.
    selection: SelectionReport | None = None

    @property
    def cited_community_ids(self) -> tuple[str, ...]:
        """The communities the answer rests on: those of the selected Map answers."""
        return tuple(dict.fromkeys(c for s in self.selected_map_answers for c in s.community_ids))
