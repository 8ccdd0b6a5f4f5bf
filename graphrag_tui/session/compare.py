"""Two recorded runs side by side (what a seed, a level or a model changes): both answers,
each batch's status and usefulness with the differences marked, and the communities each
answer rests on, with those in one answer only.

Batches are paired by index; a pair compares like with like only when both runs planned
the same content there (`same_content`): the same store, seed and options."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import BatchResult
from ..history import RecordedBatch, StoredRun
from .citations import rests_on


@dataclass(frozen=True)
class BatchPair:
    index: int
    left: BatchResult | None
    right: BatchResult | None
    #: Both runs sent the same content in this batch.
    same_content: bool

    @property
    def differs(self) -> bool:
        """Status or usefulness differ, or only one run has the batch, or its content differs."""
        if self.left is None or self.right is None or not self.same_content:
            return True
        return (self.left.status, self.left.usefulness) != (self.right.status, self.right.usefulness)


@dataclass(frozen=True)
class RunComparison:
    left: StoredRun
    right: StoredRun
    batches: tuple[BatchPair, ...]
    #: The communities each answer rests on, as the run view lists them (`citations.rests_on`:
    #: those its text cites, then its selected Map answers' others).
    left_rests_on: tuple[str, ...]
    right_rests_on: tuple[str, ...]
    #: Of those, in A's order (B's for B's own).
    cited_by_both: tuple[str, ...]
    cited_by_left_only: tuple[str, ...]
    cited_by_right_only: tuple[str, ...]


def compare_runs(left: StoredRun, right: StoredRun) -> RunComparison:
    def by_index(run: StoredRun) -> dict[int, RecordedBatch]:
        return {b.index: b for b in run.batches}

    lefts, rights = by_index(left), by_index(right)
    pairs = []
    for index in sorted(set(lefts) | set(rights)):
        a, b = lefts.get(index), rights.get(index)
        same = a is not None and b is not None and a.content_sha256 == b.content_sha256
        pairs.append(BatchPair(index, a.result if a else None, b.result if b else None, same))
    cited_left, cited_right = (tuple(c for part in rests_on(run.result) for c in part) for run in (left, right))
    return RunComparison(
        left,
        right,
        tuple(pairs),
        cited_left,
        cited_right,
        tuple(c for c in cited_left if c in cited_right),
        tuple(c for c in cited_left if c not in cited_right),
        tuple(c for c in cited_right if c not in cited_left),
    )
