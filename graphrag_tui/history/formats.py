"""How a run's parts are written into the history and read back: its plan, its batches'
contents, its batch records and its result's summary, in this version's shapes and in
those earlier versions wrote (which are read, never written).

Version 4 writes, per run, in columns (a list per field, which costs a run less than an
object per batch):
- the plan once: its parts' community ids and part numbers, each batch's count of parts,
  its prompt tokens and its content's length (a batch's communities are its parts'
  communities, in order, as the batcher makes them);
- every batch's content once, joined into one text (compressed when long): a batch's
  prompt is the run's Map template over it, and its hash is what a re-run checks;
- the batches as they finish, one group per commit: for each batch, what the run added
  (usefulness, answer, status, its count of attempts) and the model that answered, and the
  group's attempts, a list per field (version 4 wrote each attempt as an object). A later
  record of a batch replaces an earlier one (its failed attempts, then its end);
- the result without its batches, and its Reduce candidates without their communities
  (they are their batches'), in columns.

Versions 1 to 3 wrote a row per batch (`batches`: its content, hash, status, model and
result) and the plan with each batch's hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from operator import attrgetter
from typing import Any, NamedTuple

from pydantic_core import PydanticSerializationError, to_json

from ..engine import Attempt, BatchResult, MapBatch, PartRef, SearchResult
from .texts import pack_text, pack_utf8, unpack_text


def columns_json(columns: dict[str, list[Any]]) -> bytes:
    """Lists of plain values as JSON: pydantic-core's encoder, four times json's speed; json's
    for a text with a lone surrogate (from a store), which UTF-8 cannot carry."""
    try:
        return to_json(columns)
    except PydanticSerializationError:
        return json.dumps(columns, default=_plain).encode()


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json")  # a model among the values (an attempt's usage)


def _sha256(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def content_hash(batch: MapBatch) -> str:
    """The SHA-256 of a batch's content: what says whether the store still plans it so."""
    return _sha256(batch.content)


class PlannedBatch(NamedTuple):
    community_ids: tuple[str, ...]
    parts: tuple[tuple[str, int], ...]
    prompt_tokens: int
    content_sha256: str
    #: None: an earlier version recorded the content with the batch's row, if it finished.
    content: str | None


# -- the plan and the contents ----------------------------------------------------------------

def plan_json(planned: Sequence[BatchResult], contents: Sequence[str]) -> str:
    parts = list(map(attrgetter("parts"), planned))
    flat = list(chain.from_iterable(parts))
    return columns_json({
        "ids": list(map(attrgetter("community_id"), flat)), "part": list(map(attrgetter("part"), flat)),
        "counts": list(map(len, parts)), "tokens": list(map(attrgetter("prompt_tokens"), planned)),
        "lengths": list(map(len, contents)),
    }).decode("utf-8")


def pack_contents(contents: Sequence[str]) -> str | bytes:
    return pack_text("".join(contents))


def read_plan(text: str | None, contents: str | bytes | None) -> list[PlannedBatch]:
    """A recorded plan with its contents (version 4), or as earlier versions wrote it: the
    list of [ids, [[id, part]...], tokens, hash] (version 2), or {hashes, batches} (version 3)."""
    if not text:
        return []
    found = json.loads(text)
    if isinstance(found, list):
        return [PlannedBatch(tuple(ids), tuple((c, p) for c, p in parts), tokens, digest, None)
                for ids, parts, tokens, digest in found]
    if "hashes" in found:
        return [
            PlannedBatch(tuple(b["community_ids"]), tuple((p["community_id"], p["part"]) for p in b["parts"]),
                         b["prompt_tokens"], digest, None)
            for b, digest in zip(found["batches"], found["hashes"], strict=True)
        ]
    joined = unpack_text(contents) if contents is not None else ""
    pairs = list(zip(found["ids"], found["part"], strict=True))
    planned, start, first = [], 0, 0
    for count, tokens, length in zip(found["counts"], found["tokens"], found["lengths"], strict=True):
        parts = tuple(pairs[first:first + count])
        content = joined[start:start + length]
        first, start = first + count, start + length
        planned.append(PlannedBatch(tuple(dict.fromkeys(c for c, _ in parts)), parts, tokens, _sha256(content), content))
    if start != len(joined) or first != len(pairs):
        raise ValueError("the recorded plan's lengths or counts do not add up to its contents or parts")
    return planned


# -- batch records ---------------------------------------------------------------------------

#: A record's columns: what the run added to a batch.
_RECORDED = ("index", "status", "answer", "usefulness")
_ATTEMPT_FIELDS = tuple(Attempt.model_fields)


def records_packed(batches: Sequence[BatchResult], models: Sequence[str | None]) -> str | bytes:
    """A group of batch records: each batch's answer, usefulness, status and attempts, and
    the model that answered it (an index into the group's model names). A batch that goes on
    after failed attempts is recorded with those attempts and status `cancelled`."""
    attempts = list(map(attrgetter("attempts"), batches))
    flat = list(chain.from_iterable(attempts))
    names = {name: position for position, name in enumerate(dict.fromkeys(models))}
    return pack_utf8(columns_json({
        "model_names": list(names), "models": list(map(names.__getitem__, models)),
        **{name: list(map(attrgetter(name), batches)) for name in _RECORDED},
        "attempt_counts": list(map(len, attempts)),
        "attempts": {name: list(map(attrgetter(name), flat)) for name in _ATTEMPT_FIELDS},
    }))


def batch_with_attempts(index: int, attempts: Sequence[Attempt]) -> BatchResult:
    """The record of a batch that goes on after failed attempts (or was cancelled so)."""
    return BatchResult(index=index, community_ids=(), parts=(), prompt_tokens=0, attempts=list(attempts))


class BatchRecord(NamedTuple):
    #: pending (never finished: at most failed attempts), succeeded or failed
    status: str
    model: str | None
    #: What the run added to the batch (BatchResult's fields without the planned ones, or,
    #: from an early version's row, with them).
    fields: dict[str, Any]
    #: The hash an earlier version's row recorded (None: the plan's).
    content_sha256: str | None = None


def read_records(groups: Iterable[str | bytes]) -> dict[int, BatchRecord]:
    """Each batch's latest record, from the groups in the order they were written."""
    found: dict[int, BatchRecord] = {}
    for packed in groups:
        group = json.loads(unpack_text(packed))
        names = group["model_names"]
        for row in zip(group["models"], _group_attempts(group), *(group[name] for name in _RECORDED), strict=True):
            position, attempts, index, status, answer, usefulness = row
            if not (isinstance(position, int) and 0 <= position < len(names)):
                raise ValueError(f"a batch record names model {position!r}, which its group does not have")
            model = names[position]
            fields = {"index": index, "status": status, "answer": answer, "usefulness": usefulness, "attempts": attempts}
            found[index] = BatchRecord(status if status in ("succeeded", "failed") else "pending", model, fields)
    return found


def _group_attempts(group: dict[str, Any]) -> list[list[Any]]:
    """Each record's attempts: from a list per field, or (version 4) a list of objects each."""
    if "attempt_counts" not in group:
        return group["attempts"]
    columns, counts = group["attempts"], group["attempt_counts"]
    attempts = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    if not all(isinstance(count, int) and count >= 0 for count in counts) or sum(counts) != len(attempts):
        raise ValueError("a group's counts of attempts do not add up to its attempts")
    starts = accumulate(counts, initial=0)  # one more than counts: the end
    return [attempts[start:start + count] for start, count in zip(starts, counts, strict=False)]


def batch_from_record(index: int, record: BatchRecord, planned: Sequence[PlannedBatch]) -> BatchResult:
    fields = dict(record.fields)
    if "community_ids" not in fields:
        ids, parts, tokens = planned[index][:3]
        fields.update(index=index, community_ids=ids, prompt_tokens=tokens,
                      parts=[{"community_id": c, "part": p} for c, p in parts])
    return BatchResult.model_validate(fields)


def planned_batch(index: int, planned: PlannedBatch) -> BatchResult:
    """A batch that never finished, as planned."""
    return BatchResult(index=index, community_ids=planned.community_ids, prompt_tokens=planned.prompt_tokens,
                       parts=tuple(PartRef(community_id=c, part=p) for c, p in planned.parts))


# -- the result ------------------------------------------------------------------------------

#: A Reduce candidate's columns. Its usefulness and communities are its batch's, and the
#: selected Map answers are the selected candidates' batches' answers (engine/reduce.py makes
#: them so): both are made again when the result is read.
_CANDIDATE_COLUMNS = ("batch_index", "decision")


def result_summary(result: SearchResult) -> str:
    """The result without its batches (they have records of their own) and without what
    its batches tell, its Reduce candidates as columns: whatever fields the result has,
    usage and cost included, as the engine serializes them."""
    summary = result.model_dump_json(exclude={"batches": True, "reduce": {"candidates"}, "selected_map_answers": True})
    candidates = result.reduce.candidates
    columns = columns_json({name: list(map(attrgetter(name), candidates)) for name in _CANDIDATE_COLUMNS})
    return summary[:-1] + ',"reduce_candidates":' + columns.decode("utf-8") + "}"


def result_from_summary(text: str, batches: Sequence[BatchResult]) -> SearchResult:
    """The result again. A summary from version 4 has its candidates' usefulness and the
    selected answers; one from an earlier version has its candidates whole."""
    fields = json.loads(text)
    fields["batches"] = [b.model_dump(mode="json") for b in batches]
    columns = fields.pop("reduce_candidates", None)
    if columns is not None:
        names = [name for name in ("batch_index", "usefulness", "decision") if name in columns]
        candidates = [dict(zip(names, row, strict=True)) for row in zip(*(columns[name] for name in names), strict=True)]
        for candidate in candidates:
            index = candidate["batch_index"]
            if not (isinstance(index, int) and 0 <= index < len(batches)):
                raise ValueError(f"a Reduce candidate names batch {index!r}, which the run does not have")
            candidate["community_ids"] = batches[index].community_ids
            candidate.setdefault("usefulness", batches[index].usefulness or 0)
        fields["reduce"]["candidates"] = candidates
        fields.setdefault("selected_map_answers", [
            {"answer": batches[c["batch_index"]].answer or "", "usefulness": c["usefulness"],
             "community_ids": c["community_ids"]}
            for c in candidates if c["decision"] == "selected"
        ])
    return SearchResult.model_validate(fields)
