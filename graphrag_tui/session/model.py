"""The answering model's whole lifecycle, with one state machine:

    closed -> opening -> ready -> closed        (open, then close or switch)
                      \\-> failed               (could not open: the detail says why)
              ready -> failed                   (its local server died: `check_health`)
    failed -> opening | closed

`open(settings)` reuses the open model when it fits (same kind; for the local LLM the same
number of slots, and its server alive), else closes it (the local server stops) and opens
the new one. Every change calls `on_change(status)`: the app turns it into a message, the
CLI has no use for it.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..engine import ChatModel
from ..errors import InputError
from ..models.factory import ModelSettings, open_model

Opener = Callable[[ModelSettings, Mapping[str, str]], Awaitable[ChatModel]]
#: What an open model was opened for: its kind, and its slots for the local LLM (None: any).
ModelKey = tuple[str, int | None]


class ModelState(enum.StrEnum):
    CLOSED = "closed"
    OPENING = "opening"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True)
class ModelStatus:
    state: ModelState = ModelState.CLOSED
    #: extractive, http or local; None before any model was opened.
    kind: str | None = None
    #: Why it failed (one line), else "".
    detail: str = ""
    #: Tokens per slot of a model that has slots (the local LLM), once ready.
    slot_context: int | None = None


@runtime_checkable
class SlottedModel(Protocol):
    """A model whose context window is split over parallel slots (the local LLM)."""

    slot_context: int


@runtime_checkable
class ServedModel(Protocol):
    """A model answered by a server process this process started (the local LLM)."""

    def is_alive(self) -> bool: ...


def model_key(settings: ModelSettings) -> ModelKey:
    return settings.kind, settings.local_slots if settings.kind == "local" else None


class ModelSession:
    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        opener: Opener = open_model,
        on_change: Callable[[ModelStatus], None] | None = None,
    ) -> None:
        self.environ = environ
        self.opener = opener
        self.on_change = on_change
        self.status = ModelStatus()
        #: The open model (ready), else None.
        self.model: ChatModel | None = None
        self.key: ModelKey | None = None

    @property
    def state(self) -> ModelState:
        return self.status.state

    def _set(self, status: ModelStatus) -> None:
        if status != self.status:
            self.status = status
            if self.on_change is not None:
                self.on_change(status)

    def adopt(self, model: ChatModel, kind: str) -> None:
        """Answer with a model opened elsewhere (tests, benchmarks): ready for any run of
        this kind."""
        self.model, self.key = model, (kind, None)
        self._set(ModelStatus(ModelState.READY, kind, slot_context=_slot_context(model)))

    def fits(self, key: ModelKey) -> bool:
        opened = self.key
        if self.model is None or opened is None or opened[0] != key[0] or opened[1] not in (None, key[1]):
            return False
        return self.is_alive()  # a crashed local server is started again

    def is_alive(self) -> bool:
        return not isinstance(self.model, ServedModel) or self.model.is_alive()

    async def open(self, settings: ModelSettings) -> ChatModel:
        """The open model if it fits these settings, else the next one opened (the old one
        closed first). Raises what opening raises: an InputError leaves the session failed
        with its message; anything else (cancelled, a bug) leaves it closed."""
        key = model_key(settings)
        if self.model is not None and self.fits(key):
            return self.model
        await self.close()
        self._set(ModelStatus(ModelState.OPENING, settings.kind))
        try:
            model = await self.opener(settings, self.environ)
        except BaseException as error:
            if isinstance(error, InputError):
                self._set(ModelStatus(ModelState.FAILED, settings.kind, str(error)))
            else:
                self._set(ModelStatus(ModelState.CLOSED, settings.kind))
            raise
        self.model, self.key = model, key
        self._set(ModelStatus(ModelState.READY, settings.kind, slot_context=_slot_context(model)))
        return model

    def check_health(self) -> ModelStatus:
        """A ready model whose server died is failed (the next open starts it again)."""
        if self.state == ModelState.READY and not self.is_alive():
            self._set(ModelStatus(ModelState.FAILED, self.status.kind, "the llama.cpp server exited"))
        return self.status

    async def close(self) -> None:
        """Close the open model (the local LLM's server stops); the session is closed."""
        model, self.model, self.key = self.model, None, None
        await self._close(model)

    async def shutdown(self) -> None:
        """Close for good, as the program ends: like `close`, but `model` still names the
        closed model (what answered, for the record)."""
        await self._close(self.model)
        self.key = None

    async def _close(self, model: ChatModel | None) -> None:
        # Closed first: a repaint while the server stops must not take the stop for a crash.
        self._set(ModelStatus(ModelState.CLOSED, self.status.kind))
        if model is not None:
            await model.aclose()


def _slot_context(model: ChatModel) -> int | None:
    return model.slot_context if isinstance(model, SlottedModel) else None
