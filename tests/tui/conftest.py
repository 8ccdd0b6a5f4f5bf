"""Shared setup of the app tests: a clean terminal environment, the app under test, a
scripted model routed by community id, and helpers to wait for and read the panels."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import textual.constants
from textual.pilot import Pilot
from textual.widgets import Input

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.tui.app import AppSettings, GraphRAGApp
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.goto import GoToCommunityScreen
from tests.chat_server import Scripted, community_of  # noqa: F401 (shared with the TUI tests)

QUESTION = "Who funds the bridge?"
WALL_CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

#: Environment variables that change how a terminal app looks or behaves.
_TERMINAL_ENV = (
    "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES",
    "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM_PROGRAM", "LC_TERMINAL", "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_terminal_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NO_COLOR, TEXTUAL_* or size variables from the developer's shell; Textual's
    constants (read once at import) reset to their defaults."""
    for name in list(os.environ):
        if name in _TERMINAL_ENV or (name.startswith("TEXTUAL") and name != "TEXTUAL_SNAPSHOT_TEMPDIR") \
                or name.startswith("GRAPHRAG_TUI_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")
    for name, value in {
        "COLOR_SYSTEM": "truecolor",
        "FILTERS": "",
        "DEFAULT_THEME": "textual-dark",
        "TEXTUAL_ANIMATIONS": "none",
        "PRESS": "",
        "SCREENSHOT_DELAY": -1,
        "DRIVER": None,
    }.items():
        monkeypatch.setattr(textual.constants, name, value)


def make_app(
    store: Path,
    base_url: str | None = "http://127.0.0.1:9/v1",
    *,
    options: SearchOptions | None = None,
    repaint_interval: float = 0.25,
    display_path: str = "harbour.db",
    environ: dict[str, str] | None = None,
    model: Any = None,
    **settings: Any,
) -> GraphRAGApp:
    """The real app on `store`, answering through the scripted server at `base_url`."""
    app = GraphRAGApp(
        AppSettings(
            store_path=store,
            display_path=display_path,
            display_model="m1 @ scripted",
            model=settings.pop("model_settings", None) or ModelSettings(base_url=base_url, model="m1", timeout=20),
            options=options or SearchOptions(map_budget=330, map_reserve=0),
            shuffle=False,
            **settings,
        ),
        clock=lambda: 0.0,
        wall_clock=lambda: WALL_CLOCK,
        environ=environ or {},
        repaint_interval=repaint_interval,
        model=model,
    )
    app.theme = "textual-dark"
    app.animation_level = "none"
    return app


# -- driving the app ------------------------------------------------------------------------


async def ask(pilot: Pilot, question: str = QUESTION, *, type_it: bool = False) -> None:
    """Put the question in the query field and press Enter there (as a user does)."""
    field = pilot.app.screen.query_one("#query", Input)
    field.focus()
    if type_it:
        field.value = ""
        await pilot.press(*question)
    else:
        field.value = question
    await pilot.pause()
    await pilot.press("enter")


async def wait_until(pilot: Pilot, condition: Callable[[], bool], timeout: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}; the screen:\n{screen_text(pilot.app)}")
        await pilot.pause(0.05)


async def wait_community(pilot: Pilot) -> None:
    """Wait until the community view on top has read the store (in its worker) and shows it."""
    def shown() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, CommunityScreen) and screen.loaded

    await wait_until(pilot, shown, timeout=10.0, what="the community view to load")
    await pilot.pause()


async def wait_lookup(pilot: Pilot) -> None:
    """Wait until the go-to dialog's lookup (in its worker) is answered."""
    def answered() -> bool:
        screen = pilot.app.screen
        return not (isinstance(screen, GoToCommunityScreen) and screen.looking)

    await wait_until(pilot, answered, timeout=10.0, what="the go-to lookup")
    await pilot.pause()


async def wait_finished(pilot: Pilot) -> None:
    app: GraphRAGApp = pilot.app  # type: ignore[assignment]
    await wait_until(pilot, lambda: app.run_state.phase == "finished", what="the run to finish")
    app.repaint()
    await pilot.pause()


# -- reading what is shown ------------------------------------------------------------------


def text_of(pilot_or_app: Any, selector: str) -> str:
    """What a Static, or a widget that renders text (the counts line, the header), shows."""
    app = getattr(pilot_or_app, "app", pilot_or_app)
    return str(app.screen.query_one(selector).render())


def rows(pilot_or_app: Any, selector: str) -> list[list[str]]:
    app = getattr(pilot_or_app, "app", pilot_or_app)
    table = app.screen.query_one(selector)  # a DataTable or a RowTable
    return [[getattr(cell, "plain", str(cell)) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def screen_text(app: Any) -> str:
    """Every line the active screen draws, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def terminal_output(app: Any) -> str:
    """The exact characters a full repaint of the active screen writes to the terminal."""
    return app.screen._compositor.render_full_update().render_segments(app.console)


def record_question(history: Path | str, question: str, *, was: str | None = None) -> None:
    """Gives the recorded runs (those asking `was`, if given) `question`, as the CLI records
    one from its argv (the app's field keeps no control characters): in their rows and in
    their results, which must agree."""
    from graphrag_tui.history.texts import pack_text, unpack_text

    db = sqlite3.connect(history)
    with db:
        for run_id, result in db.execute("SELECT run_id, result FROM runs WHERE ? IS NULL OR question = ?",
                                         (was, was)).fetchall():
            summary = json.loads(unpack_text(result))
            summary["query"] = question
            db.execute("UPDATE runs SET question = ?, result = ? WHERE run_id = ?",
                       (question, pack_text(json.dumps(summary)), run_id))
    db.close()
