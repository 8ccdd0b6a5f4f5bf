"""Dynamic selection inside the engine (issue 15): the rating calls share the run's usage
meter and cancel; a cancelled selection keeps the ratings that finished."""

from __future__ import annotations

import asyncio
import json

from graphrag_tui.engine import ChatReply, ChatRequest, GlobalSearch, SearchOptions, SearchPlan, Usage
from graphrag_tui.engine.events import Event
from graphrag_tui.engine.selection import SelectionNode, SelectionOptions, Vote

NODES = [
    SelectionNode("ns/a", 0, None, "Marley's firm.", (), None),
    SelectionNode("ns/b", 0, None, "hold: the baker.", (), None),
    SelectionNode("ns/a1", 1, "ns/a", "Marley's ghost.", (), None),
]


def empty_plan(concurrency: int) -> SearchPlan:
    return SearchPlan(query="Who is Marley?", namespace="ns", level=0, seed=1,
                      options=SearchOptions(concurrency=concurrency), summary_count=0, batches=())


class RatingModel:
    description = "rates by a rule"

    def __init__(self) -> None:
        self.hold = asyncio.Event()
        self.rated: list[str] = []

    async def complete(self, request: ChatRequest) -> str | ChatReply:
        if request.stage == "rate":
            self.rated.append(request.content)
            if request.content.startswith("hold"):
                await self.hold.wait()
            rating = 3 if "Marley" in request.content else 0
            return ChatReply(text=json.dumps({"reason": "rule", "rating": rating}),
                             usage=Usage(prompt_tokens=100, completion_tokens=5, total_tokens=105))
        if request.stage == "map":
            return json.dumps({"answer": "Marley's ghost.", "usefulness": 40})
        return json.dumps({"answer": "A ghost."})

    async def aclose(self) -> None:
        return None


async def test_cancelling_during_the_rating_keeps_the_finished_ratings() -> None:
    model = RatingModel()
    events: list[Event] = []  # type: ignore[valid-type]
    cancel = asyncio.Event()

    async def replan(ids: list[str]) -> SearchPlan:
        raise AssertionError("a cancelled selection plans nothing")

    search = GlobalSearch(empty_plan(1), model, on_event=events.append, cancel=cancel,
                          dynamic=(NODES, SelectionOptions(mode="dynamic"), replan))
    task = asyncio.ensure_future(search.run())
    while len(model.rated) < 2:
        await asyncio.sleep(0.01)
    cancel.set()
    result = await task
    assert result.status == "cancelled"
    assert result.detail == "cancelled by the user during community selection"
    assert result.selection is not None
    assert [(r.community_id, r.rating) for r in result.selection.ratings] == [("ns/a", 3)]
    assert result.selection.selected == []
    assert result.usage_total == Usage(prompt_tokens=100, completion_tokens=5, total_tokens=105)
    assert [e.type for e in events] == ["usage", "community_rated", "finished"]


async def test_rating_usage_counts_toward_the_runs_totals() -> None:
    model = RatingModel()
    model.hold.set()

    async def replan(ids: list[str]) -> SearchPlan:
        assert ids == ["ns/a1"]
        from graphrag_tui.engine import plan_search

        return plan_search("Who is Marley?", "ns", 0, [], SearchOptions(), seed=1)

    search = GlobalSearch(empty_plan(4), model, dynamic=(NODES, SelectionOptions(mode="dynamic"), replan))
    result = await search.run()
    assert result.status == "no_results"  # the replan found no text to map
    assert result.detail == "no community the dynamic selection chose has a summary"
    assert result.usage_total == Usage(prompt_tokens=300, completion_tokens=15, total_tokens=315)
    assert result.selection is not None and [r.community_id for r in result.selection.ratings] == [
        "ns/a", "ns/b", "ns/a1"]


async def test_known_votes_are_counted_and_only_the_missing_ones_asked() -> None:
    """ns/a has one of its three votes (only two asked), ns/b all three (none asked, rated at
    once), ns/a1 a list of another length (ignored: all three asked); each vote of a rating
    not yet complete is reported with the votes so far."""
    model = RatingModel()
    model.hold.set()
    reported: list[tuple[str, list[int | None]]] = []

    async def replan(ids: list[str]) -> SearchPlan:
        from graphrag_tui.engine import plan_search

        return plan_search("Who is Marley?", "ns", 0, [], SearchOptions(), seed=1)

    first = Vote(rating=5, reason="before")
    search = GlobalSearch(
        empty_plan(1), model, dynamic=(NODES, SelectionOptions(mode="dynamic", rate_repeats=3), replan),
        known_votes={"ns/a": [first, None, None], "ns/b": [first, first, Vote(rating=0, reason="")],
                     "ns/a1": [first]},
        on_vote=lambda cid, votes: reported.append((cid, [None if v is None else v.rating for v in votes])))
    result = await search.run()
    assert model.rated == ["Marley's firm."] * 2 + ["Marley's ghost."] * 3
    assert result.selection is not None
    assert [(r.community_id, r.rating, r.votes, r.reason) for r in result.selection.ratings] == [
        ("ns/a", 3, [5, 3, 3], "rule"), ("ns/b", 5, [5, 5, 0], "before"), ("ns/a1", 3, [3, 3, 3], "rule")]
    assert reported == [("ns/a", [5, None, None]), ("ns/a", [5, 3, None]), ("ns/a1", [3, None, None]),
                        ("ns/a1", [3, 3, None])]



async def test_a_text_longer_than_the_map_budget_is_rated_on_its_beginning() -> None:
    """A 10 MB report went whole into every rating call (and each repeat)."""
    from graphrag_tui.engine import plan_search
    from graphrag_tui.engine.prompts import prompt_text, rate_messages
    from graphrag_tui.engine.tokens import TextSize

    huge = "Marley's ledger. " * 600_000  # 10.2 MB, 2.55 M tokens
    nodes = [SelectionNode("ns/big", 0, None, huge, (), None), SelectionNode("ns/small", 0, None, "Marley.", (), None)]
    sent: list[ChatRequest] = []

    class Recording(RatingModel):
        async def complete(self, request: ChatRequest) -> str | ChatReply:
            sent.append(request)
            return await super().complete(request)

    async def replan(ids: list[str]) -> SearchPlan:
        assert ids == ["ns/big", "ns/small"]
        return plan_search("Who is Marley?", "ns", 0, [], SearchOptions(), seed=1)

    plan = empty_plan(1)
    assert plan.options.map_budget == 8000
    result = await GlobalSearch(plan, Recording(), dynamic=(nodes, SelectionOptions(mode="dynamic"), replan)).run()
    assert result.selection is not None and result.selection.selected == ["ns/big", "ns/small"]
    big, small = sent
    assert (big.stage, small.stage, small.content) == ("rate", "rate", "Marley.")
    assert huge.startswith(big.content)
    empty = TextSize.of(prompt_text(rate_messages("Who is Marley?", "")))
    assert big.prompt_tokens == 8000
    assert len(big.content) == 8000 * 4 - empty.ascii  # ASCII: 4 characters a token
