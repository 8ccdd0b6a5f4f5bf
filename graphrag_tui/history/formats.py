"""How a run's parts are written into the history and read back: its plan, its batches'
contents, its batch records and its result's summary, in this version's shapes and in
those earlier versions wrote (which are read, never written).

Versions 6 and 7 write, per run, in columns (a list per field, which costs a run less than an
object per batch; a column whose rows all hold the same object is written once, as
{"same": value}, with the table's count of rows):
- the plan once (compressed when long): its parts' community ids and part numbers, each
  batch's count of parts, its prompt tokens and its content's length (a batch's
  communities are its parts' communities, in order, as the batcher makes them);
- every batch's content once, joined into one text (compressed when long): a batch's
  prompt is the run's Map template over it, and its hash is what a re-run checks;
- the batches as they finish, one group per commit: for each batch, what the run added
  (usefulness, answer, status, its count of attempts) and the model that answered, and the
  group's attempts, a list per field. A later record of a batch replaces an earlier one
  (its failed attempts, then its end);
- the result without what its batches tell: its batches, its Reduce candidates' usefulness
  and communities, and the selected Map answers; its candidates in columns (compressed
  when long);
- (version 7) how the run chose its communities: the selection's options from its start,
  and what they chose once its communities are planned (for dynamic selection, after the
  model rated them; until then the ratings so far, and the votes so far of the communities
  being rated), so an interrupted run, which has no result, plans them again as they were,
  or asks only the ratings and votes it had not; and what its rating calls reported they
  used (`ratings_paid`, none before this), which a resume counts as paid.

Version 5 wrote the same, with the plan and the result as plain JSON. Version 4 wrote
them so too, but every column whole, each attempt as an object, and the candidates'
usefulness and the selected answers. Versions 1 to 3 wrote a row per batch (`batches`:
its content, hash, status, model and result) and the plan with each batch's hash."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate, chain
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError, to_json

from ..engine import Attempt, BatchResult, MapBatch, PartRef, SearchResult, Usage
from ..engine.selection import Rating, SelectionOptions, SelectionReport, Vote
from .texts import pack_text, pack_utf8, unpack_text


def columns_json(columns: dict[str, list[Any]]) -> bytes:
    """Lists of plain values as JSON: pydantic-core's encoder, four times json's speed; json's
    for a text with a lone surrogate (from a store), which UTF-8 cannot carry."""
    try:
        return to_json(columns)
    except PydanticSerializationError:
        return json.dumps(columns, default=_plain).encode()


def recorded_json(text: str | bytes) -> Any:
    """JSON as the history holds it. Its numbers are finite: json reads NaN, Infinity and
    1e400, which no recorder writes; they crashed the app's views and made `runs show --json`
    invalid JSON."""
    return json.loads(text, parse_constant=_not_finite, parse_float=_finite)


def _not_finite(constant: str) -> Any:
    raise ValueError(f"a recorded number is {constant}, which JSON does not have")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"a recorded number is {text[:40]}, past what a float holds")
    return value


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json")  # a model among the values (an attempt's usage)


def _table(columns: dict[str, list[Any]], rows: int, whole_numbers: tuple[str, ...] = ()) -> dict[str, Any]:
    """Columns of `rows` values as written: a column whose rows all hold one value, once.
    `whole_numbers`: the columns that hold only ints or None: counts, lengths and positions
    made here, and the engine's `int` fields (pydantic makes 1 of True or 1.0 as it
    validates one, and the engine sets none otherwise)."""
    return {"count": rows, **{name: {"same": values[0]} if _one_value(values, name in whole_numbers) else values
                              for name, values in columns.items()}}


def _one_value(values: list[Any], whole_numbers: bool = False) -> bool:
    """Whether every value is the first, and writes as the same JSON: 1, 1.0 and True are
    equal but write differently, as do 0.0 and -0.0 (floats are never taken). The types of
    `whole_numbers` are not looked at (0.07 ms of 2,000 values)."""
    if not values or type(values[0]) is float or values != [values[0]] * len(values):
        return False
    return whole_numbers or type(values[0]) in (str, type(None)) or len(set(map(type, values))) == 1


#: More rows than a table written once can claim (a damaged file must not ask for more).
_MAX_ROWS = 10_000_000
#: The rows one read may make from tables written only as repeated values ({"same": v} in
#: every column): such a table's count is all that bounds it, and a 536-byte group that
#: claimed 10 million took 4.75 GB. A table with a listed column has that column's length.
MAX_REPEATED_ROWS = 200_000


class _Columns:
    """Reads the columns of one read's tables, counting the rows repeated values make."""

    def __init__(self) -> None:
        self.left = MAX_REPEATED_ROWS
        self.counted: set[int] = set()

    def __call__(self, table: dict[str, Any], name: str, rows: Any) -> list[Any]:
        """A recorded column's values. `rows`: the table's count (None: version 4, whose
        columns are written whole)."""
        column = table[name]
        if not isinstance(column, dict):
            return column
        if not (isinstance(rows, int) and 0 <= rows <= _MAX_ROWS):
            raise ValueError(f"a recorded column of one value has no usable count of rows ({rows!r})")
        listed = {len(values) for key, values in table.items() if isinstance(values, list) and key != "model_names"}
        if listed and listed != {rows}:
            raise ValueError(f"a recorded table of {rows} rows has columns of {min(listed | {rows})} rows")
        if not listed and id(table) not in self.counted:
            self.counted.add(id(table))
            self.left -= rows
            if self.left < 0:
                raise ValueError(f"recorded tables of repeated values claim more than {MAX_REPEATED_ROWS} rows")
        return [column["same"]] * rows


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

def plan_packed(planned: Sequence[BatchResult], contents: Sequence[str]) -> str | bytes:
    parts = list(map(attrgetter("parts"), planned))
    flat = list(chain.from_iterable(parts))
    return pack_utf8(columns_json({
        "batches": _table({"counts": list(map(len, parts)), "tokens": list(map(attrgetter("prompt_tokens"), planned)),
                           "lengths": list(map(len, contents))}, len(planned), whole_numbers=("counts", "tokens", "lengths")),
        "parts": _table({"ids": list(map(attrgetter("community_id"), flat)),
                         "part": list(map(attrgetter("part"), flat))}, len(flat), whole_numbers=("part",)),
    }))


def pack_contents(contents: Sequence[str]) -> str | bytes:
    return pack_text("".join(contents))


def read_plan(text: str | bytes | None, contents: str | bytes | None) -> list[PlannedBatch]:
    """A recorded plan with its contents (versions 5 and 6: a table of batches and one of parts;
    version 4: their columns together), or as earlier versions wrote it: the list of [ids,
    [[id, part]...], tokens, hash] (version 2), or {hashes, batches} (version 3)."""
    if not text:
        return []
    found = recorded_json(unpack_text(text))
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
    batches, parts = (found["batches"], found["parts"]) if "parts" in found else (found, found)
    batch_rows, part_rows = batches.get("count"), parts.get("count")
    _column = _Columns()
    pairs = list(zip(_column(parts, "ids", part_rows), _column(parts, "part", part_rows), strict=True))
    planned, start, first = [], 0, 0
    columns = (_column(batches, name, batch_rows) for name in ("counts", "tokens", "lengths"))
    for count, tokens, length in zip(*columns, strict=True):
        parts = tuple(pairs[first:first + count])
        content = joined[start:start + length]
        first, start = first + count, start + length
        planned.append(PlannedBatch(tuple(dict.fromkeys(c for c, _ in parts)), parts, tokens, _sha256(content), content))
    if start != len(joined) or first != len(pairs):
        raise ValueError("the recorded plan's lengths or counts do not add up to its contents or parts")
    return planned


# -- the selection ---------------------------------------------------------------------------

class RatingsPaid(NamedTuple):
    """What a run's rating calls reported they used, and the estimate of the same prompts:
    a resume, which does not ask them again, counts them."""

    usage: Usage
    estimated_prompt_tokens: int


class RecordedSelection(NamedTuple):
    """How a run chose its communities (version 7): its options, and what they chose (None:
    dynamic selection that had not planned its communities when the run ended), and until
    then the ratings made so far."""

    options: SelectionOptions
    report: SelectionReport | None
    ratings: tuple[Rating, ...] = ()
    #: The votes so far of a community not yet rated (None where none was cast).
    votes: Mapping[str, tuple[Vote | None, ...]] = {}
    #: What its rating calls reported they used so far (None: none did, or recorded before this was).
    paid: RatingsPaid | None = None


def selection_json(options: SelectionOptions, report: SelectionReport | None) -> str:
    return json.dumps({"options": options.model_dump(mode="json"),
                       "report": None if report is None else report.model_dump(mode="json")})


def rating_json(rating: Rating) -> str:
    """A rating as `with_ratings` takes it: pydantic-core's JSON; json's for a text with a
    lone surrogate, which UTF-8 cannot carry."""
    try:
        return rating.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(rating.model_dump(mode="json"))


def with_ratings(found: Mapping[str, Any], ratings: Sequence[str], votes: Mapping[str, Sequence[Vote | None]],
                 paid: RatingsPaid | None) -> str:
    """A selection not yet chosen (`selection_json`'s, report None, as read) with the ratings
    so far (each one's `rating_json`), the votes so far of the communities not yet rated,
    and what the rating calls used so far."""
    head = {name: value for name, value in found.items() if name not in ("ratings", "votes", "ratings_paid")}
    head["votes"] = {cid: [None if v is None else v.model_dump(mode="json") for v in cast] for cid, cast in votes.items()}
    text = _with_paid(head, paid)
    return f'{text[:-1]}, "ratings": [{",".join(ratings)}]}}'


def with_ratings_paid(text: str, paid: RatingsPaid | None) -> str:
    """A selection (`selection_json`'s) with what its rating calls used."""
    return text if paid is None else _with_paid(recorded_json(text), paid)


def _with_paid(found: dict[str, Any], paid: RatingsPaid | None) -> str:
    if paid is not None:
        found["ratings_paid"] = {"usage": paid.usage.model_dump(mode="json"),
                                 "estimated_prompt_tokens": paid.estimated_prompt_tokens}
    return json.dumps(found)


#: The most a recorded sum of counts may be: a larger one (a damaged or edited file) would
#: make a run's cost infinite, which its JSON cannot hold.
_MAX_SUM = 2**63 - 1


def _ratings_paid(found: Any) -> RatingsPaid | None:
    if found is None:
        return None
    if not (isinstance(found, dict) and found.keys() == {"usage", "estimated_prompt_tokens"}
            and isinstance(found["usage"], dict) and found["usage"].keys() == Usage.model_fields.keys()):
        raise ValueError("the recorded usage of the rating calls is not a usage and an estimate")
    counts = [*found["usage"].values(), found["estimated_prompt_tokens"]]
    if not all(type(count) is int and 0 <= count <= _MAX_SUM for count in counts):
        raise ValueError(f"the recorded usage of the rating calls has a count that is not a whole number from 0 to "
                         f"{_MAX_SUM}")
    return RatingsPaid(Usage.model_validate(found["usage"]), found["estimated_prompt_tokens"])


def read_selection(text: str | None) -> RecordedSelection | None:
    if text is None:
        return None
    found = recorded_json(text)
    report, paid = found["report"], _ratings_paid(found.get("ratings_paid"))
    if report is not None:
        return RecordedSelection(SelectionOptions.model_validate(found["options"]), SelectionReport.model_validate(report),
                                 paid=paid)
    ratings, votes = found.get("ratings", []), found.get("votes", {})
    if not isinstance(ratings, list):
        raise ValueError(f"the recorded ratings are not a list ({type(ratings).__name__})")
    if not isinstance(votes, dict) or not all(isinstance(cast, list) for cast in votes.values()):
        raise ValueError("the recorded votes are not lists by community")
    return RecordedSelection(
        SelectionOptions.model_validate(found["options"]), None, tuple(map(Rating.model_validate, ratings)),
        {cid: tuple(None if v is None else Vote.model_validate(v) for v in cast) for cid, cast in votes.items()}, paid,
    )


# -- batch records ---------------------------------------------------------------------------

#: A record's columns: what the run added to a batch.
_RECORDED = ("index", "status", "answer", "usefulness")
_ATTEMPT_FIELDS = tuple(Attempt.model_fields)


def records_packed(
    batches: Sequence[BatchResult], models: Sequence[str | None], *, kept: bool = False
) -> tuple[str | bytes, list[int], list[str], list[Any]]:
    """A group of batch records, with its batches' indexes and statuses and its attempts'
    usage (None where a server reported none): each batch's
    answer, usefulness, status and attempts, and the model that answered it (an index into
    the group's model names). A batch that goes on after failed attempts is recorded with
    those attempts and status `cancelled`. `kept`: batches a re-run keeps from its parent,
    which paid for them (the group says so)."""
    recorded = _fields(batches, (*_RECORDED, "attempts"))
    attempts = recorded.pop("attempts")
    names = {name: position for position, name in enumerate(dict.fromkeys(models))}
    flat = list(chain.from_iterable(attempts))
    attempt_fields = _fields(flat, _ATTEMPT_FIELDS)
    packed = pack_utf8(columns_json({
        **({"kept": True} if kept else {}),
        "model_names": list(names),
        **_table({"models": list(map(names.__getitem__, models)), **recorded,
                  "attempt_counts": list(map(len, attempts))}, len(batches), whole_numbers=("models", "attempt_counts")),
        "attempts": _table(attempt_fields, len(flat), whole_numbers=("attempt", "raw_response_bytes")),
    }))
    return packed, recorded["index"], recorded["status"], attempt_fields["usage"]


def _fields(models: Sequence[Any], names: Sequence[str]) -> dict[str, list[Any]]:
    """The models' fields as a list each. They are read from each model's `__dict__` (where
    pydantic keeps them): an attribute goes through BaseModel's `__getattr__` hook, and for
    four fields or more getting the `__dict__` once and an item per field costs less."""
    fields = list(map(vars, models))
    return {name: list(map(itemgetter(name), fields)) for name in names}


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
    #: Kept by a re-run from its parent, which paid for it.
    kept: bool = False


def read_records(groups: Iterable[str | bytes]) -> dict[int, BatchRecord]:
    """Each batch's latest record, from the groups in the order they were written (a re-run's
    batches kept from its parent are its first group, marked so)."""
    found: dict[int, BatchRecord] = {}
    _column = _Columns()
    for position, packed in enumerate(groups):
        group = recorded_json(unpack_text(packed))
        names, rows, kept = group["model_names"], group.get("count"), group.get("kept", False)
        if type(names) is not list or not all(name is None or type(name) is str for name in names):
            raise ValueError("a group of batch records names its models otherwise than as texts")
        if type(kept) is not bool:
            raise ValueError(f"a group of batch records says it was kept with {str(kept)[:40]!r}, not true or false")
        if kept and position:  # (a later group is what the run paid for: the mark would hide it)
            raise ValueError("a group of batch records after the run's first says it was kept from a parent run: "
                             "only the first, written as the run started, can be")
        models, *recorded = (_column(group, name, rows) for name in ("models", *_RECORDED))
        for row in zip(models, _group_attempts(group, rows, _column), *recorded, strict=True):
            position, attempts, index, status, answer, usefulness = row
            if type(index) is not int:  # (True or 1.0 would take batch 1's place, and leave another unread)
                raise ValueError(f"a batch record names batch {str(index)[:40]!r}, which no run has")
            if not (isinstance(position, int) and 0 <= position < len(names)):
                raise ValueError(f"a batch record names model {position!r}, which its group does not have")
            model = names[position]
            fields = {"index": index, "status": status, "answer": answer, "usefulness": usefulness, "attempts": attempts}
            found[index] = BatchRecord(status if status in ("succeeded", "failed") else "pending", model, fields,
                                       kept=kept)
    return found


def _group_attempts(group: dict[str, Any], rows: int | None, _column: _Columns) -> list[list[Any]]:
    """Each record's attempts: from a table of them, or (version 4) a list of objects each."""
    if "attempt_counts" not in group:
        return group["attempts"]
    table, counts = group["attempts"], _column(group, "attempt_counts", rows)
    columns = {name: _column(table, name, table["count"]) for name in table if name != "count"}
    attempts = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    if not all(isinstance(count, int) and count >= 0 for count in counts) or sum(counts) != len(attempts):
        raise ValueError("a group's counts of attempts do not add up to its attempts")
    starts = accumulate(counts, initial=0)  # one more than counts: the end
    return [attempts[start:start + count] for start, count in zip(starts, counts, strict=False)]


def batch_from_record(index: int, record: BatchRecord, planned: Sequence[PlannedBatch]) -> BatchResult:
    fields = dict(record.fields)
    usefulness = fields.get("usefulness")
    if usefulness is not None and not (type(usefulness) in (int, float) and 0 <= usefulness <= 100):
        raise ValueError(f"batch {index}'s recorded usefulness {str(usefulness)[:40]} is not a number from 0 to 100")
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

_ATTEMPTS = TypeAdapter(list[Attempt])


def attempts_packed(attempts: Sequence[Attempt]) -> str | bytes:
    """Reduce's attempts so far, as a run's row holds them until its result does."""
    return pack_utf8(_ATTEMPTS.dump_json(list(attempts)))


def read_attempts(text: str | bytes) -> list[Attempt]:
    return _ATTEMPTS.validate_python(recorded_json(unpack_text(text)))


#: A Reduce candidate's columns. Its usefulness and communities are its batch's, and the
#: selected Map answers are the selected candidates' batches' answers (engine/reduce.py makes
#: them so): both are made again when the result is read.
_CANDIDATE_COLUMNS = ("batch_index", "decision")


def result_summary(result: SearchResult) -> str | bytes:
    """The result without its batches (they have records of their own) and without what
    its batches tell, its Reduce candidates as columns: whatever fields the result has,
    usage and cost included, as the engine serializes them."""
    summary = result.model_dump_json(exclude={"batches": True, "reduce": {"candidates"}, "selected_map_answers": True})
    candidates = result.reduce.candidates
    columns = {name: list(map(attrgetter(name), candidates)) for name in _CANDIDATE_COLUMNS}
    candidates_json = columns_json(_table(columns, len(candidates))).decode("utf-8")
    return pack_text(summary[:-1] + ',"reduce_candidates":' + candidates_json + "}")


def result_from_summary(text: str | bytes, batches: Sequence[BatchResult]) -> SearchResult:
    """The result again. A summary from version 4 has its candidates' usefulness and the
    selected answers; one from an earlier version has its candidates whole."""
    fields = recorded_json(unpack_text(text))
    # (models already, taken as they are: dumping them to validate them again doubled the read of 20,000)
    fields["batches"] = list(batches)
    columns = fields.pop("reduce_candidates", None)
    if columns is not None:
        names = [name for name in ("batch_index", "usefulness", "decision") if name in columns]
        _column = _Columns()
        rows = zip(*(_column(columns, name, columns.get("count")) for name in names), strict=True)
        candidates = [dict(zip(names, row, strict=True)) for row in rows]
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
