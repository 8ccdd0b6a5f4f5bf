"""The app never gets stuck (issue 9, item 4): whatever escapes a run (a model that raises
what it should not, a failure while opening the model, a bad store) ends it with the error
in words; finished batches are kept and exportable; Esc and a new run work afterwards."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.ports import ChatRequest
from graphrag_tui.tui import app as app_module
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.export import ExportScreen
from graphrag_tui.tui.screens.main import MainScreen
from tests.stores import three_leaves

from .conftest import ask, make_app, text_of, wait_community, wait_finished, wait_lookup, wait_until

SIZE = (140, 42)
#: One community per batch, one batch at a time: the model's calls come in batch order.
OPTIONS = SearchOptions(map_budget=330, map_reserve=0, concurrency=1)


class ModelCrash(BaseException):
    """Not an Exception: what no `except Exception` catches."""


class BreakingModel:
    """Answers the first `good_calls` Map calls, then raises `make_error()` on every call
    while `broken` (Reduce included)."""

    description = "breaking test model"

    def __init__(self, make_error: Callable[[], BaseException], good_calls: int = 2) -> None:
        self.make_error = make_error
        self.good_calls = good_calls
        self.broken = True
        self.calls = 0

    async def complete(self, request: ChatRequest) -> str:
        self.calls += 1
        if self.broken and (request.stage == "reduce" or self.calls > self.good_calls):
            raise self.make_error()
        if request.stage == "reduce":
            return json.dumps({"answer": "The port authority funds it."})
        return json.dumps({"answer": f"Answer {self.calls}.", "usefulness": 50})

    async def aclose(self) -> None:
        pass


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.parametrize(
    ("make_error", "words"),
    [
        (lambda: RuntimeError("boom"), "boom"),
        (lambda: RecursionError("maximum recursion depth exceeded"), "maximum recursion depth exceeded"),
        (lambda: BaseExceptionGroup("deep", [ModelCrash("nested crash")]), "nested crash"),
    ],
    ids=["RuntimeError", "RecursionError", "BaseExceptionGroup"],
)
async def test_a_model_that_raises_ends_the_run_failed_and_keeps_the_finished_batches(
    store: Path, tmp_path: Path, make_error: Callable[[], BaseException], words: str
) -> None:
    model = BreakingModel(make_error)
    app = make_app(store, options=OPTIONS, model=model)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ask(pilot)
        await wait_finished(pilot)
        result = app.run_state.result
        assert result.status == "failed"
        assert [(b.status, b.answer) for b in result.batches[:2]] == [("succeeded", "Answer 1."), ("succeeded", "Answer 2.")]
        assert words in result.error
        if isinstance(make_error(), ModelCrash | BaseExceptionGroup):  # no engine catches these
            assert result.error == "internal error: ModelCrash: nested crash; the run stopped there"
        # The Answer tab says so, in words.
        assert text_of(pilot, "#answer-status") == "FAILED"
        assert text_of(pilot, "#answer-meta").split("\n")[1] == result.error
        counts = text_of(pilot, "#batch-counts")  # abbreviated when a cancelled count makes it long
        assert counts.startswith(("· queued 0  ▸ running 0  ■ succeeded 2  ", "· q 0  ▸ run 0  ■ ok 2  ")), counts

        # The finished batches are exportable.
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        app.screen.query_one("#export-input", Input).value = str(tmp_path / "broken")
        await pilot.press("enter")
        await pilot.pause()
        exported = json.loads((tmp_path / "broken.json").read_text(encoding="utf-8"))
        assert exported == json.loads(json.dumps(app.run_session.document()))  # (the run's JSON, as query --json)
        assert [b["answer"] for b in exported["batches"][:2]] == ["Answer 1.", "Answer 2."]

        # Esc and a new run work again.
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and not app.run_state.running
        model.broken = False
        await ask(pilot)
        await pilot.pause()
        assert "A run is going: press Esc to cancel it first." not in notifications(app)
        await wait_finished(pilot)
        assert app.run_state.result.status == "completed"
        assert app.run_state.result.answer == "The port authority funds it."
        assert text_of(pilot, "#answer-status") == "COMPLETED"


async def test_a_failure_opening_the_model_ends_the_run_failed(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing_open(settings, environ):  # type: ignore[no-untyped-def]
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(app_module, "open_model", failing_open)
    app = make_app(store, options=OPTIONS)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ask(pilot)
        await wait_finished(pilot)
        result = app.run_state.result
        assert result.status == "failed"
        assert result.error == "internal error: OSError: [Errno 24] Too many open files; the run stopped there"
        assert [b.status for b in result.batches] == ["cancelled"] * 3  # none was started
        assert text_of(pilot, "#answer-meta") == (
            "0 of 3 batches failed · 0 answers selected · not shuffled\n" + result.error
        )
        model = BreakingModel(lambda: RuntimeError("unused"), good_calls=99)
        model.broken = False

        async def opening(settings, environ):  # type: ignore[no-untyped-def]
            return model

        monkeypatch.setattr(app_module, "open_model", opening)
        await ask(pilot)
        await wait_finished(pilot)
        assert app.run_state.result.status == "completed"


async def test_an_error_while_following_the_events_ends_the_run_failed(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = BreakingModel(lambda: RuntimeError("unused"), good_calls=99)
    model.broken = False
    app = make_app(store, options=OPTIONS, model=model)
    real_apply = app_module.RunState.apply

    def apply(self, event, now):  # type: ignore[no-untyped-def]
        if type(event).__name__ == "BatchSucceeded" and event.batch_index == 1:
            raise KeyError("bad event")
        return real_apply(self, event, now)

    monkeypatch.setattr(app_module.RunState, "apply", apply)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ask(pilot)
        await wait_finished(pilot)
        result = app.run_state.result
        assert result.status == "failed"
        assert result.error == "internal error: KeyError: 'bad event'; the run stopped there"
        assert result.batches[0].status == "succeeded" and result.batches[0].answer == "Answer 1."
        monkeypatch.setattr(app_module.RunState, "apply", real_apply)
        await ask(pilot)
        await wait_finished(pilot)
        assert app.run_state.result.status == "completed"


def undecodable_summary(store: Path, community_id: str) -> None:
    """Put bytes that are not UTF-8 in one summary, as a hostile store would."""
    with sqlite3.connect(store) as db:
        db.execute(
            "UPDATE rag_community_summaries SET summary_content = CAST(x'fffe41' AS TEXT) WHERE id = ?",
            (community_id,),
        )
    db.close()


async def test_a_store_with_undecodable_text_is_read_leniently_in_the_run_and_the_drill_down(store: Path) -> None:
    undecodable_summary(store, "ns/2")
    model = BreakingModel(lambda: RuntimeError("unused"), good_calls=99)
    model.broken = False
    app = make_app(store, options=OPTIONS, model=model)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ask(pilot)
        await wait_until(pilot, lambda: not app.run_state.running, what="the run to end")
        # The store reads bytes that are not UTF-8 as U+FFFD (README, "Bad stores"): the run
        # goes through, and so does the drill-down.
        assert app.run_state.result.status == "completed"
        assert app.is_running and isinstance(app.screen, MainScreen)

        app.action_goto()  # what g does (the focus may be in the question field)
        await pilot.pause()
        app.screen.query_one("#goto-input", Input).value = "ns/2"
        await pilot.press("enter")
        await pilot.pause()
        await wait_lookup(pilot)
        await wait_community(pilot)
        screen = app.screen
        assert isinstance(screen, CommunityScreen)
        assert str(screen.query_one("#summary", Static).render()) == "\ufffd\ufffdA"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and app.is_running
    # Enter runs again (and ends the same way): the app is not stuck in a run.
        await ask(pilot)
        await wait_until(pilot, lambda: not app.run_state.running, what="the second run to end")
        assert "A run is going: press Esc to cancel it first." not in notifications(app)
