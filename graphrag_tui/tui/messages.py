"""Messages of the app. Workers and screens post these; the App's handlers own the state."""

from __future__ import annotations

from textual.message import Message

from ..engine import Event, SearchPlan, SearchResult
from ..session.model import ModelStatus


class OpenCommunity(Message):
    """Drill down to a community (any widget or screen may post it; it bubbles to the App)."""

    def __init__(self, community_id: str) -> None:
        super().__init__()
        self.community_id = community_id


class OpenBatch(Message):
    """Open the batch view of one Map batch of the current run."""

    def __init__(self, batch_index: int) -> None:
        super().__init__()
        self.batch_index = batch_index


class RunPlanned(Message):
    def __init__(self, plan: SearchPlan) -> None:
        super().__init__()
        self.plan = plan


class RunEvents(Message):
    """Engine events, in order. Events are coalesced: while one of these waits in the
    queue, new events join its list instead of posting another message. A plan made during
    the run (dynamic selection's) comes among them, where it was made."""

    def __init__(self, events: list[Event | SearchPlan]) -> None:  # type: ignore[valid-type]
        super().__init__()
        self.events = events


class RunFinished(Message):
    def __init__(self, result: SearchResult) -> None:
        super().__init__()
        self.result = result


class RunRejected(Message):
    """The run did not start: bad input found before any model call."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class ModelStateChanged(Message):
    """The model session changed state (opening, ready, failed, closed): the model picker's
    status line shows it."""

    def __init__(self, status: ModelStatus) -> None:
        super().__init__()
        self.status = status


class OpenRecord(Message):
    """Open the view of an entity, a claim or a chunk by id, or the members of a community
    (kind "members"): from search results, the community view, the claim and entity views.
    A claim opens the claim view (`screens/claim.py`), the others `screens/record.py`."""

    def __init__(self, kind: str, record_id: str) -> None:
        super().__init__()
        self.kind = kind
        self.record_id = record_id


class ShowInTree(Message):
    """Show this community in the Explore screen's tree."""

    def __init__(self, community_id: str) -> None:
        super().__init__()
        self.community_id = community_id
