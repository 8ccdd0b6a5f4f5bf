"""The model session's one state machine: closed -> opening -> ready -> closed, failed when
opening fails or a served model's server dies; the open model is reused when it fits. With
the real extractive model, a real scripted HTTP server, and the real local LLM (skipped when
it is not installed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphrag_tui.errors import InputError
from graphrag_tui.models import local_llm
from graphrag_tui.models.extractive import ExtractiveModel
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.models.openai_http import OpenAIChatModel
from graphrag_tui.session.model import ModelSession, ModelState, ModelStatus
from tests.chat_server import Reply, ScriptedChatServer, map_reply

CLOSED, OPENING, READY, FAILED = ModelState.CLOSED, ModelState.OPENING, ModelState.READY, ModelState.FAILED


def recording(**kwargs) -> tuple[ModelSession, list[ModelStatus]]:  # type: ignore[no-untyped-def]
    changes: list[ModelStatus] = []
    return ModelSession({}, on_change=changes.append, **kwargs), changes


def states(changes: list[ModelStatus]) -> list[tuple[str, str | None]]:
    return [(c.state.value, c.kind) for c in changes]


async def test_the_extractive_model_opens_is_reused_and_closes() -> None:
    session, changes = recording()
    assert session.status == ModelStatus(CLOSED, None) and session.model is None
    model = await session.open(ModelSettings())
    assert isinstance(model, ExtractiveModel) and session.model is model
    assert await session.open(ModelSettings()) is model  # it fits: reused, no change
    await session.close()
    assert session.model is None and session.key is None
    assert states(changes) == [("opening", "extractive"), ("ready", "extractive"), ("closed", "extractive")]


async def test_an_endpoint_opens_with_its_first_listed_model_and_switching_closes_it() -> None:
    with ScriptedChatServer(lambda request: map_reply("unused", 0), models=["first", "second"]) as server:
        session, changes = recording()
        model = await session.open(ModelSettings(base_url=server.base_url))
        assert isinstance(model, OpenAIChatModel) and model.model == "first"
        assert [r.endpoint for r in server.requests] == ["/v1/models"]
        assert session.status == ModelStatus(READY, "http")
        other = await session.open(ModelSettings())  # another kind: the endpoint is closed first
        assert isinstance(other, ExtractiveModel) and model._client.is_closed
        assert states(changes) == [
            ("opening", "http"), ("ready", "http"), ("closed", "http"), ("opening", "extractive"), ("ready", "extractive"),
        ]


async def test_an_endpoint_that_cannot_be_opened_leaves_the_session_failed_with_the_reason() -> None:
    with ScriptedChatServer(lambda request: map_reply("unused", 0),
                            models_script=lambda request: Reply({"error": "no"}, status=500)) as server:
        session, changes = recording()
        with pytest.raises(InputError) as error:
            await session.open(ModelSettings(base_url=server.base_url))
        assert str(error.value) == (
            f"--model was not given and GET {server.base_url}/models failed "
            '(HTTP 500: {"error": "no"}): name a model with --model'
        )
        assert session.status == ModelStatus(FAILED, "http", str(error.value)) and session.model is None
        # Failed is not stuck: the next open tries again.
        assert isinstance(await session.open(ModelSettings()), ExtractiveModel)
        assert states(changes)[-2:] == [("opening", "extractive"), ("ready", "extractive")]


async def test_an_unexpected_error_while_opening_leaves_the_session_closed() -> None:
    async def broken(settings, environ):  # type: ignore[no-untyped-def]
        raise OSError(24, "Too many open files")

    session, changes = recording(opener=broken)
    with pytest.raises(OSError):
        await session.open(ModelSettings())
    assert states(changes) == [("opening", "extractive"), ("closed", "extractive")]


class Served(ExtractiveModel):
    """A real model whose (pretend) server can die; it counts its closes."""

    slot_context = 4096

    def __init__(self) -> None:
        super().__init__()
        self.alive, self.closed = True, 0

    def is_alive(self) -> bool:
        return self.alive

    async def aclose(self) -> None:
        self.closed += 1


async def test_a_served_model_whose_server_died_is_failed_and_opened_again() -> None:
    opened: list[Served] = []

    async def opener(settings, environ):  # type: ignore[no-untyped-def]
        opened.append(Served())
        return opened[-1]

    session, changes = recording(opener=opener)
    local = ModelSettings(local_llm=True, local_slots=1)
    first = await session.open(local)
    assert session.status == ModelStatus(READY, "local", slot_context=4096)
    assert session.check_health() == ModelStatus(READY, "local", slot_context=4096)
    assert await session.open(local) is first
    assert await session.open(local.model_copy(update={"local_slots": 2})) is not first  # other slots: reopened
    assert first.closed == 1
    second = opened[-1]
    second.alive = False
    assert session.check_health() == ModelStatus(FAILED, "local", "the llama.cpp server exited")
    third = await session.open(local.model_copy(update={"local_slots": 2}))
    assert third is not second and second.closed == 1
    assert [c.state.value for c in changes] == [
        "opening", "ready", "closed", "opening", "ready", "failed", "closed", "opening", "ready",
    ]


async def test_an_adopted_model_is_ready_for_any_run_of_its_kind() -> None:
    session, changes = recording()
    model = Served()
    session.adopt(model, "local")
    assert await session.open(ModelSettings(local_llm=True, local_slots=3)) is model
    assert states(changes) == [("ready", "local")]
    await session.shutdown()  # the program ends: closed, and the model still named
    assert model.closed == 1 and session.model is model and session.state == CLOSED


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.skipif(not local_llm.availability().installed, reason=local_llm.INSTALL_COMMANDS)
async def test_the_real_local_llm_opens_ready_and_its_server_stops_on_close() -> None:
    session, changes = recording()
    model = await session.open(ModelSettings(local_llm=True, local_slots=2, timeout=30))
    assert isinstance(model, local_llm.LocalChatModel) and model.is_alive()
    window = local_llm.model_context_window()
    assert session.status == ModelStatus(READY, "local", slot_context=window // 2)
    pid = model.server.pid
    assert pid is not None and os.path.exists(f"/proc/{pid}")
    await session.close()
    assert not model.is_alive() and _gone(pid)
    assert states(changes) == [("opening", "local"), ("ready", "local"), ("closed", "local")]
