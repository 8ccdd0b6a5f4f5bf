"""Dynamic community selection (issue 15), as GraphRAG's DynamicCommunitySelection does it:
a breadth-first walk from the shallowest level. The model rates each community's own text
against the question (0..5); a rating at or above the threshold keeps the community, queues
its children, and drops its parent (unless `keep_parent`). When a whole wave keeps nothing
and nothing was kept before, every community of the next level is rated, down to
`max_level` (which limits only that step: children of kept communities are always rated).

The rating calls go through the run's ModelCaller: its gate (rate limits, concurrency), its
retry loop, its events and its usage, like Map's. A reply that cannot be used after its two
attempts counts as 1, recorded so. Walking from the shallowest level present means a store
without level 0 works (GraphRAG's #2382)."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from ..errors import InputError
from .events import CommunityRated
from .failures import for_log, internal_error
from .ports import ChatRequest
from .prompts import DEFAULT_PROMPTS, Prompts, prompt_text, rate_messages
from .replies import parse_rate_reply
from .reply_schemas import RATE_REPLY_SCHEMA
from .result import Attempt
from .retry import ModelCaller, call_with_retry, request_tokens
from .selection import Rating, SelectionNode, SelectionOptions, Vote, majority
from .tokens import TextSize, tokens_of

log = logging.getLogger("graphrag_tui.engine")

#: A rating reply is short: room for the reason and the number.
RATE_MAX_TOKENS = 256
#: What a vote counts as when its reply could not be used.
FAILED_VOTE = 1


def _rating_prompt_sizes(query: str, prompts: Prompts) -> tuple[TextSize, int]:
    """A rating prompt's size without the community's text, and how many times it holds it."""
    empty = TextSize.of(prompt_text(rate_messages(query, "", prompts)))
    return empty, TextSize.of(prompt_text(rate_messages(query, "x", prompts))).ascii - empty.ascii


def check_rating_room(query: str, prompts: Prompts, budget: int) -> None:
    """A budget whose rating prompt cannot carry one character of a community is refused
    before any call: each rating would be paid for with the community's text cut to nothing."""
    empty, uses = _rating_prompt_sizes(query, prompts)
    if tokens_of(empty.ascii + uses, empty.other) > budget:
        raise InputError(
            f"the map prompt budget ({budget} tokens) cannot fit dynamic selection's rating prompt with even one "
            f"character of a community ({tokens_of(empty.ascii, empty.other)} tokens without one): raise --map-budget"
        )


class DynamicSelection:
    """Rates `nodes` (one namespace; blank texts already left out) for `query` with the
    run's rating template (`prompts.rate`). `ratings` holds every rating so far (a finished
    wave in its order: by level, then id); `run` returns the selected ids. `known`: ratings
    made before (a resumed run's), taken as they are instead of asking again; `known_votes`:
    the votes a resumed run had cast for a community it had not finished rating (a list of
    `rate_repeats`, None where none was cast), only the others asked. With more than one vote
    per community, `on_vote` gets a community's votes so far each time one comes and the
    rating is not complete (and its known votes when its wave starts). The rating calls go
    through the `caller` given to `run`."""

    caller: ModelCaller

    def __init__(
        self, query: str, nodes: Sequence[SelectionNode], options: SelectionOptions,
        concurrency: int, prompts: Prompts = DEFAULT_PROMPTS, known: Mapping[str, Rating] | None = None,
        known_votes: Mapping[str, Sequence[Vote | None]] | None = None,
        on_vote: Callable[[str, list[Vote | None]], None] | None = None, budget: int | None = None,
    ) -> None:
        self.query, self.options, self.concurrency = query, options, concurrency
        self.prompts = prompts
        #: The most tokens a rating prompt may take (the run's Map budget): a longer
        #: community text is rated on its beginning.
        self.budget = budget
        self.known = dict(known or {})
        repeats = options.rate_repeats
        self.known_votes = {cid: list(votes) for cid, votes in (known_votes or {}).items()
                            if len(votes) == repeats and cid not in self.known}
        self.on_vote = on_vote
        self.nodes = {node.id: node for node in nodes}
        self.children: dict[str, list[str]] = defaultdict(list)
        self.by_level: dict[int, list[str]] = defaultdict(list)
        for node in sorted(nodes, key=lambda n: n.id):
            self.by_level[node.level].append(node.id)
            if node.parent is not None and node.parent in self.nodes and node.parent != node.id:
                self.children[node.parent].append(node.id)
        self.ratings: list[Rating] = []
        self.attempts: list[Attempt] = []

    def first_wave_tokens(self) -> list[int]:
        """What each rating call of the first wave counts against a tokens-per-minute cap
        (a call per repeat; what a resumed run had asked is not asked again): the calls
        any run of this selection sends before its Map."""
        if not self.nodes:
            return []
        repeats = [None] * self.options.rate_repeats
        return [request_tokens(self._request(cid)) for cid in self.by_level[min(self.by_level)] if cid not in self.known
                for vote in self.known_votes.get(cid, repeats) if vote is None]

    async def run(self, caller: ModelCaller) -> list[str]:
        self.caller = caller
        if not self.nodes:
            return []
        level = min(self.by_level)
        queue = list(self.by_level[level])
        rated: set[str] = set()
        relevant: dict[str, None] = {}  # insertion-ordered set
        while queue:
            queue = [cid for cid in dict.fromkeys(queue) if cid not in rated]  # a cycle is rated once
            rated.update(queue)
            wave = await self._rate_wave(queue)
            following: list[str] = []
            for rating in wave:
                if not rating.kept:
                    continue
                relevant[rating.community_id] = None
                following.extend(self.children.get(rating.community_id, ()))
                parent = self.nodes[rating.community_id].parent
                if not self.options.keep_parent and parent is not None:
                    relevant.pop(parent, None)
            queue = following
            level += 1
            if not queue and not relevant and level in self.by_level and level <= self.options.max_level:
                log.info("dynamic selection: nothing kept so far; rating every community of level %d", level)
                queue = list(self.by_level[level])
        return sorted(relevant)

    async def _rate_wave(self, ids: list[str]) -> list[Rating]:
        """Every community of `ids` rated `rate_repeats` times by a pool of workers; the
        ratings in the order of `ids`, each reported as its last vote comes in."""
        repeats = self.options.rate_repeats
        votes: dict[str, list[Vote | None]] = {
            cid: self.known_votes.pop(cid) if cid in self.known_votes else [None] * repeats for cid in ids}
        calls = [(cid, n) for cid in ids if cid not in self.known for n in range(repeats) if votes[cid][n] is None]
        done = {cid: self._add(self.known[cid]) for cid in ids if cid in self.known}
        for cid in ids:
            if cid not in done and None not in votes[cid]:  # every vote cast before the run stopped
                done[cid] = self._rated(cid, votes[cid])
            elif cid not in done and votes[cid] != [None] * repeats:
                self._voted(cid, votes[cid])
        next_index = 0

        async def worker(number: int) -> None:
            nonlocal next_index
            while next_index < len(calls):
                cid, repeat = calls[next_index]
                next_index += 1
                votes[cid][repeat] = await self._vote(cid, number)
                if None not in votes[cid]:
                    done[cid] = self._rated(cid, votes[cid])
                else:
                    self._voted(cid, votes[cid])
                await asyncio.sleep(0)

        async with asyncio.TaskGroup() as group:
            for number in range(1, min(self.concurrency, len(calls)) + 1):
                group.create_task(worker(number))
        wave = [done[cid] for cid in ids]
        self.ratings[len(self.ratings) - len(wave):] = wave  # recorded in the wave's order, not as they finished
        return wave

    async def _vote(self, cid: str, worker: int) -> Vote:
        try:
            return await self._ask(cid, worker)
        except Exception as error:  # a bug rating one community fails that vote, not the run
            log.info("rating community %s failed unexpectedly: %s", cid, for_log(error))
            return Vote(rating=FAILED_VOTE, reason="", error=f"internal error: {internal_error(error)}")

    def _request(self, cid: str) -> ChatRequest:
        text = self._rated_text(self.nodes[cid].text)
        messages = rate_messages(self.query, text, self.prompts)
        return ChatRequest(
            stage="rate", messages=messages, query=self.query, content=text, max_tokens=RATE_MAX_TOKENS,
            json_schema=RATE_REPLY_SCHEMA, prompt_tokens=TextSize.of(prompt_text(messages)).tokens,
        )

    async def _ask(self, cid: str, worker: int) -> Vote:
        request = self._request(cid)
        record: list[Attempt] = []
        parsed = await call_with_retry(
            self.caller, request, parse_rate_reply, record=record, batch_index=None, worker=worker, community_id=cid
        )
        self.attempts.extend(record)
        if parsed is None:
            return Vote(rating=FAILED_VOTE, reason="", error=record[-1].error if record else "no reply")
        rating, reason = parsed
        return Vote(rating=rating, reason=reason)

    def _rated_text(self, text: str) -> str:
        """The community's text as its rating prompt carries it: whole, or its longest
        beginning with which the prompt fits the budget (a 10 MB report went whole into
        every rating call and each repeat). Sizes add (TextSize), so the prompt is measured
        without being filled with the whole text."""
        budget = self.budget
        if budget is None:
            return text
        empty, uses = _rating_prompt_sizes(self.query, self.prompts)

        def fits(length: int) -> bool:
            size = TextSize.of(text[:length])
            return tokens_of(empty.ascii + uses * size.ascii, empty.other + uses * size.other) <= budget

        if fits(len(text)):
            return text
        low, high = 0, len(text)  # fits(low); not fits(high)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        return text[:low]

    def _voted(self, cid: str, votes: list[Vote | None]) -> None:
        if self.on_vote is not None:
            self.on_vote(cid, list(votes))

    def _rated(self, cid: str, cast: list[Vote | None]) -> Rating:
        node = self.nodes[cid]
        votes = [v for v in cast if v is not None]
        ratings = [v.rating for v in votes]
        rating = majority(ratings)
        failed = [v for v in votes if v.error is not None]
        reason = next((v.reason for v in votes if v.error is None and v.rating == rating), "")
        if not reason and failed:
            reason = f"no usable rating ({failed[-1].error}): counted as {FAILED_VOTE}"
        return self._add(Rating(
            community_id=cid, level=node.level, rating=rating, reason=reason, votes=ratings, failed=len(failed),
            kept=rating >= self.options.rate_threshold,
        ))

    def _add(self, rating: Rating) -> Rating:
        self.ratings.append(rating)
        report = self.caller.report
        report(
            CommunityRated(
                t=report.now(), community_id=rating.community_id, level=rating.level, rating=rating.rating,
                reason=rating.reason, votes=tuple(rating.votes), kept=rating.kept, failed=rating.failed,
            )
        )
        return rating
