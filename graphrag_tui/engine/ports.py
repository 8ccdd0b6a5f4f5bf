"""The engine's port to a model: the one small async interface every answering model
implements (graphrag_tui.models holds the implementations), the request it gets and the
errors it may raise. The engine depends on this, never on a model module."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

Stage = Literal["map", "reduce"]
#: `response_too_large`: the reply passed the size cap (--max-response-bytes) and was not read
#: further; `internal`: an unexpected error while handling one call (a bug), which fails
#: that batch or Reduce call, never the run. `rate_limited`: an HTTP 429 (issue 12), which
#: re-queues the call without using one of its attempts, until its wait budget is spent.
ErrorKind = Literal[
    "http", "timeout", "transport", "invalid_json", "invalid_fields", "response_too_large", "internal", "rate_limited"
]
#: Where the wait after a 429 came from: the response header that announced it, or
#: `backoff` when the server announced none (the engine's own doubling wait).
RateWaitSource = Literal[
    "retry-after-ms", "retry-after", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens", "backoff"
]


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """One chat completion. `query` and `content` repeat what the messages carry, so a
    model that is not an LLM (the extractive one) need not parse the prompt back."""

    model_config = ConfigDict(frozen=True)

    stage: Stage
    messages: tuple[ChatMessage, ...]
    query: str
    content: str
    max_tokens: int | None = None
    json_schema: dict[str, Any] | None = None


class ModelError(Exception):
    """A failed attempt at the transport level (never a parse failure: the engine owns those)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        wait_source: RateWaitSource | None = None,
        raw_response: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        #: Seconds the server asked to wait (503 and 429); for a 429, `wait_source` names
        #: the header it came from.
        self.retry_after = retry_after
        self.wait_source = wait_source
        self.raw_response = raw_response


class ChatModel(Protocol):
    """Returns the raw text of the reply, or raises ModelError."""

    #: Shown to the user: what answers ("extractive, offline: not an LLM", "gpt-4o @ host").
    description: str

    async def complete(self, request: ChatRequest) -> str: ...

    async def aclose(self) -> None: ...
