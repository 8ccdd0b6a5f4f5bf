"""The engine's port to a model: the one small async interface every answering model
implements (graphrag_tui.models holds the implementations), the request it gets and the
errors it may raise. The engine depends on this, never on a model module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from .usage import Usage

#: `rate`: a dynamic community selection rating call (selection_stage.py).
Stage = Literal["map", "reduce", "rate"]
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
    #: The estimate of the prompt's tokens (SPEC §3.3), set beside the server's real count.
    prompt_tokens: int | None = None
    #: A Map batch's parts, for a model with a true `reads_parts` attribute: (community id,
    #: part number, start, end) of each part's text in `content`, after its header, so that
    #: it need not find the headers in it (a community's text may hold a line that reads as one).
    parts: tuple[tuple[str, int, int, int], ...] = ()


class ChatReply(BaseModel):
    """A reply with what the server said it used. A model may return this or plain text."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: Usage | None = None
    #: How the model changed its requests to suit the server during this call, in words
    #: ("max_tokens -> max_completion_tokens"): each is reported as a `request_adapted` event.
    adaptations: tuple[str, ...] = ()


#: Called with each piece of the reply's text as it arrives (streaming).
TextCallback = Callable[[str], None]


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
        adaptations: tuple[str, ...] = (),
        usage: Usage | None = None,
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
        self.adaptations = adaptations
        #: What the server reported the call used: a reply it billed may still be unusable
        #: (no text: a refusal, a reasoning model's `finish_reason: length`).
        self.usage = usage


class ChatModel(Protocol):
    """Returns the raw text of the reply (or a ChatReply: the text and its usage), or raises
    ModelError.

    A model that can stream says so with a true `supports_streaming` attribute; only then
    does the engine call `complete(request, on_text=callback)`, and the model calls
    `on_text` with each piece of the reply's text as it arrives (the whole text is still
    returned). Models without the attribute are called as `complete(request)`."""

    #: Shown to the user: what answers ("extractive, offline: not an LLM", "gpt-4o @ host").
    description: str

    async def complete(self, request: ChatRequest) -> str | ChatReply: ...

    async def aclose(self) -> None: ...
