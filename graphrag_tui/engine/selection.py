"""Community selection (issue 15): which communities a run maps over.

- `level`: every community of one level, or every leaf (SPEC §3.2; the store selects them).
- `rollup`: GraphRAG's static selection for level L: each entity goes to the deepest
  community at or above L whose members name it; those communities are selected, so a
  parent drops out once every entity of it sits in a deeper selected community.
- `dynamic`: GraphRAG's dynamic selection, the model rating each community's own text
  (selection_stage.py runs it).

`--min-rank X` keeps only the communities whose rank is at least X, in every mode.
Community ids are always strings here (GraphRAG mixed ints and strings: its issue #2004).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from ..arguments import ascii_integer, shown
from ..errors import InputError

SelectMode = Literal["level", "rollup", "dynamic"]
SELECT_MODES: tuple[SelectMode, ...] = ("level", "rollup", "dynamic")
#: What each selection setting is when nobody gives it (GraphRAG's defaults but the threshold,
#: which the issue sets to 1 on the 0..5 scale).
SELECTION_DEFAULTS: dict[str, object] = {
    "select": "level",
    "rate_threshold": 1,
    "keep_parent": False,
    "max_level": 2,
    "rate_repeats": 1,
    "min_rank": None,
}
#: At most this many rating calls per community (a majority vote of more is no better).
MAX_RATE_REPEATS = 25


class SelectionOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: SelectMode = "level"
    rate_threshold: int = 1
    keep_parent: bool = False
    max_level: int = 2
    rate_repeats: int = 1
    min_rank: float | None = None


class SelectionNode(NamedTuple):
    """One community as selection reads it: its place in the hierarchy, its own text (what
    dynamic selection rates), its members (what rollup assigns) and its rank."""

    id: str
    level: int
    parent: str | None
    text: str
    members: tuple[str, ...]
    rank: float | None


class Rating(BaseModel):
    """One community's rating: the majority of its `votes` (ties: the lowest tied rating);
    a vote whose reply could not be used counts as 1 (`failed` says how many did)."""

    community_id: str
    level: int
    rating: int
    reason: str
    votes: list[int]
    failed: int = 0
    kept: bool = False


class Vote(BaseModel):
    """One rating call's vote: `error` says why its reply could not be used (it then counts
    as 1)."""

    rating: int
    reason: str
    error: str | None = None


class SelectionReport(BaseModel):
    """How a run chose its communities: the mode, every rating (dynamic), and the chosen ids."""

    mode: SelectMode
    ratings: list[Rating] = []
    selected: list[str] = []

    @property
    def selected_words(self) -> str:
        """"1 community selected", "7 communities selected"."""
        count = len(self.selected)
        return f"{count} {'community' if count == 1 else 'communities'} selected"


def parse_select(value: object, label: str = "--select") -> SelectMode:
    if isinstance(value, str) and value.strip().lower() in SELECT_MODES:
        return value.strip().lower()  # type: ignore[return-value]
    raise InputError(f"{label} must be one of {', '.join(SELECT_MODES)}, got {shown(value)}")


def parse_count(value: object, label: str, *, least: int, most: int | None = None) -> int:
    """An integer in ASCII digits, at least `least` (and at most `most`)."""

    number = value if isinstance(value, int) and not isinstance(value, bool) else (
        ascii_integer(value) if isinstance(value, str) else None)
    if number is None or number < least or (most is not None and number > most):
        bound = f"from {least} to {most}" if most is not None else f"at least {least}"
        raise InputError(f"{label} must be an integer {bound}, got {shown(value)}")
    return number


def parse_rank(value: object, label: str = "--min-rank") -> float | None:
    """A finite number (GraphRAG ranks are floats, 0..10 by its prompt), or None."""

    if value is None:
        return None
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text and len(text) < 50 and all(c in "0123456789+-.eE" for c in text):
            try:
                number = float(text)
            except ValueError:
                number = None
    if number is None or number != number or number in (float("inf"), float("-inf")):
        raise InputError(f"{label} must be a number, got {shown(value)}")
    return number


def parse_flag(value: object, label: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
        return value.strip().lower() in ("true", "1", "yes", "on")
    raise InputError(f"{label} must be true or false, got {shown(value)}")


def rollup(nodes: Iterable[SelectionNode], level: int) -> list[str]:
    """GraphRAG's static selection at `level`: for each entity named in some community's
    members at or above `level` (level <= `level`), the deepest such community (the lowest id
    among equals); the distinct communities so chosen, ordered by id."""
    best: dict[str, tuple[int, str]] = {}
    for node in nodes:
        if node.level > level:
            continue
        for entity in node.members:
            held = best.get(entity)
            if held is None or node.level > held[0] or (node.level == held[0] and node.id < held[1]):
                best[entity] = (node.level, node.id)
    return sorted({cid for _, cid in best.values()})


def at_least_rank(ids: Iterable[str], ranks: dict[str, float | None], min_rank: float | None) -> list[str]:
    """`ids` whose rank is at least `min_rank` (a community without a rank is left out)."""
    if min_rank is None:
        return list(ids)
    return [cid for cid in ids if (rank := ranks.get(cid)) is not None and rank >= min_rank]


def majority(votes: Sequence[int]) -> int:
    """The most frequent vote; a tie takes the lowest tied rating (as GraphRAG's np.unique
    and argmax do)."""
    counts = Counter(votes)
    top = max(counts.values())
    return min(rating for rating, count in counts.items() if count == top)


def check_selection(name: str, value: object, label: str) -> object:
    """One selection setting checked (a flag's, a config key's, a variable's, a form field's)."""
    match name:
        case "select":
            return parse_select(value, label)
        case "rate_threshold":
            return parse_count(value, label, least=0, most=5)
        case "keep_parent":
            return parse_flag(value, label)
        case "max_level":
            return parse_count(value, label, least=0)
        case "rate_repeats":
            return parse_count(value, label, least=1, most=MAX_RATE_REPEATS)
        case "min_rank":
            return parse_rank(value, label)
    raise InputError(f"unknown selection setting {name!r}")


#: The settings that only dynamic selection reads.
DYNAMIC_ONLY = ("rate_threshold", "keep_parent", "max_level", "rate_repeats")
