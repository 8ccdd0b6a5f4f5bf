"""Messages of the app. Workers and screens post these; the App's handlers own the state."""

from __future__ import annotations

from textual.message import Message

from ..engine.events import Event
from ..engine.result import SearchResult
from ..engine.search import SearchPlan


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


class RunEvent(Message):
    def __init__(self, event: Event) -> None:  # type: ignore[valid-type]
        super().__init__()
        self.event = event


class RunFinished(Message):
    def __init__(self, result: SearchResult) -> None:
        super().__init__()
        self.result = result


class RunRejected(Message):
    """The run did not start: bad input found before any model call."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
