"""What a run's model calls cost: the token counts servers report (`usage` of a chat
completion), their sum over a run, their price from a `[prices."model"]` table, and the
meter that stops a run once its spend reaches `--max-cost`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

#: Prices are given in dollars per this many tokens.
PRICE_UNIT = 1_000_000


#: The most tokens one call's count is believed to be (a server's, or one a history recorded).
MAX_COUNT = 2**53
Count = Annotated[int, Field(ge=0, strict=True)]


class Usage(BaseModel):
    """Token counts as the server gave them. `cached_tokens` are part of `prompt_tokens`
    (OpenAI's `prompt_tokens_details.cached_tokens`); `total_tokens` is the server's own
    total (prompt + completion when it gave none). Counts are whole numbers from 0, a
    call's at most MAX_COUNT (`CallUsage`); a sum of them may go past it."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    cached_tokens: Count = 0
    total_tokens: Count = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage.model_construct(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


def _one_call(usage: Usage) -> Usage:
    if max(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, usage.total_tokens) > MAX_COUNT:
        raise ValueError(f"a call's usage counts more than {MAX_COUNT} tokens")
    return usage


#: One call's usage, checked as it is read (a history's record of it).
CallUsage = Annotated[Usage, AfterValidator(_one_call)]
#: More dollars than any run costs (2**53 tokens at the largest price is some 1e16 a call): a
#: recorded cost beyond it is damaged, and two of them still add up to a finite number.
MAX_DOLLARS = 1e30
Dollars = Annotated[float, Field(ge=0, le=MAX_DOLLARS, allow_inf_nan=False)]

#: Dollars per million tokens no model costs: a larger price (1e300) made a run's cost infinite,
#: which its JSON cannot hold.
MAX_PRICE = 1_000_000
Price = Annotated[float, Field(ge=0, le=MAX_PRICE, allow_inf_nan=False, strict=True)]


class Prices(BaseModel):
    """One model's `[prices."model"]` table: dollars per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: Price
    output: Price
    #: The price of cached prompt tokens; the input price when not given.
    cached_input: Price | None = None


class Cost(BaseModel):
    """Dollars: `input` for the prompt tokens that were not cached, `cached` for those that
    were, `output` for the completion tokens."""

    model_config = ConfigDict(frozen=True)

    input: Dollars
    output: Dollars
    cached: Dollars
    total: Dollars
    currency: str = "USD"

    def __add__(self, other: Cost) -> Cost:
        return Cost(input=round(self.input + other.input, 9), output=round(self.output + other.output, 9),
                    cached=round(self.cached + other.cached, 9), total=round(self.total + other.total, 9))


def cost_of(usage: Usage, prices: Prices) -> Cost:
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_price = prices.input if prices.cached_input is None else prices.cached_input
    input_cost = (usage.prompt_tokens - cached) * prices.input / PRICE_UNIT
    cached_cost = cached * cached_price / PRICE_UNIT
    output_cost = usage.completion_tokens * prices.output / PRICE_UNIT
    return Cost(
        input=round(input_cost, 9),
        output=round(output_cost, 9),
        cached=round(cached_cost, 9),
        total=round(input_cost + cached_cost + output_cost, 9),
    )


def estimated_input_cost(prompt_tokens: int, prices: Prices) -> float:
    """What `prompt_tokens` estimated prompt tokens cost at the input price."""
    return round(prompt_tokens * prices.input / PRICE_UNIT, 9)


class UsageMeter:
    """The run's running totals: the usage servers reported, the estimate of the same
    prompts, and the spend. When the spend reaches `max_cost`, `on_limit` is called once
    and `limit_reached` stays true: no further request may be sent.

    `earlier_cost`: what the calls a resumed run made before cost (priced then, at the
    prices of the model that made them); their usage is added with `earlier=True`. None:
    that usage is priced at `prices`, as this run's own."""

    def __init__(
        self, prices: Prices | None = None, max_cost: float | None = None, on_limit: Callable[[], None] | None = None,
        earlier_cost: Cost | None = None,
    ) -> None:
        self.prices = prices
        self.max_cost = max_cost
        self.on_limit = on_limit
        self.earlier_cost = earlier_cost
        self.total: Usage | None = None
        #: The usage priced at `prices`.
        self._priced: Usage | None = None
        #: The estimated prompt tokens of the calls that reported usage: the estimate of the
        #: same prompts `total.prompt_tokens` counts.
        self.estimated_prompt_tokens = 0
        self.limit_reached = False

    def add(self, usage: Usage, estimated_prompt_tokens: int | None, *, earlier: bool = False) -> None:
        self.total = usage if self.total is None else self.total + usage
        if not (earlier and self.earlier_cost is not None):
            self._priced = usage if self._priced is None else self._priced + usage
        self.estimated_prompt_tokens += estimated_prompt_tokens or 0
        self.check_limit()

    def check_limit(self) -> None:
        if self.limit_reached or self.max_cost is None:
            return
        cost = self.cost
        if cost is not None and cost.total >= self.max_cost:
            self.limit_reached = True
            if self.on_limit is not None:
                self.on_limit()

    @property
    def cost(self) -> Cost | None:
        if self.prices is None:
            return None
        cost = cost_of(self._priced or Usage(), self.prices)
        return cost if self.earlier_cost is None else self.earlier_cost + cost
