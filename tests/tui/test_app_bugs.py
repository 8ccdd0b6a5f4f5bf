"""Regression tests of the app's bugs from the issue "Provenance you can read, and an app that
fits any terminal" (NO_COLOR is in test_run_at_a_glance.py; the palette's "Cancel run" in
test_keymap.py; the form's field names in test_app_pilot.py's budget test)."""

from __future__ import annotations

import io
from pathlib import Path

from textual.widgets import Select

from graphrag_tui.tui.widgets.setup_form import in_form_terms
from tests.cli_runner import run_cli

from .conftest import make_app, screen_text

SAMPLE_STORE = Path(__file__).resolve().parents[2] / "sample_db" / "sample.db"


def level_label(app) -> str:
    return str(app.screen.query_one("#level", Select).query_one("SelectCurrent #label").render())


async def test_the_level_label_follows_a_namespace_switch() -> None:
    """Tab Tab Enter Down Enter (tea-history-zh): Level read `leaf (18)` while its list said 13."""
    app = make_app(SAMPLE_STORE, display_path="sample.db")
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()
        assert (app.setup_form.namespace, level_label(app)) == ("harbor-city", "leaf (18)")
        app.screen.query_one("#namespace", Select).focus()
        await pilot.press("enter", "down", "enter")
        await pilot.pause()
        assert (app.setup_form.namespace, level_label(app)) == ("tea-history-zh", "leaf (13)")
        assert "leaf (13)" in screen_text(app) and "leaf (18)" not in screen_text(app)


def test_the_app_refuses_an_unknown_namespace_or_level_before_it_opens() -> None:
    run = run_cli(str(SAMPLE_STORE), "--namespace", "nope", "--no-config", timeout=30)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == "graphrag-tui: error: unknown namespace 'nope'; the store has: harbor-city, tea-history-zh\n"
    run = run_cli(str(SAMPLE_STORE), "--namespace", "harbor-city", "--level", "9", "--no-config", timeout=30)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (
        "graphrag-tui: error: namespace 'harbor-city' has no communities at level 9; levels present: 0, 1, 2, 3\n"
    )


def test_messages_name_the_forms_fields_not_flags() -> None:
    assert in_form_terms("the map prompt budget (100 tokens) cannot fit: raise --map-budget or lower --map-reserve") == (
        "the map prompt budget (100 tokens) cannot fit: raise the Map budget field or lower the Map reserve field"
    )
    assert in_form_terms("lower --reduce-budget; --concurrency 2; --seed; --map-budgets stays") == (
        "lower the Reduce budget field; the Concurrency field 2; the Seed field; --map-budgets stays"
    )


async def test_a_crash_report_shows_no_local_values() -> None:
    """Textual prints a crash's traceback with each frame's local values: the model
    settings, extra request headers and all (a gateway token), went to the terminal."""
    from rich.console import Console

    from graphrag_tui.models.factory import ModelSettings

    settings = ModelSettings(base_url="http://127.0.0.1:9/v1", model="m1", headers={"X-Api-Token": "sk-ATTACK-SECRET-123"})
    app = make_app(SAMPLE_STORE, display_path="sample.db", model_settings=settings)
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()

        def failing(given: ModelSettings) -> None:
            raise RuntimeError("boom")

        try:
            failing(app.settings.model)
        except RuntimeError:
            app._fatal_error()
        console = Console(width=200, record=True, file=io.StringIO())
        for renderable in app._exit_renderables:  # (printed, then cleared, as the app ends)
            console.print(renderable)
    report = console.export_text()
    assert "RuntimeError: boom" in report and "failing" in report
    assert "sk-ATTACK-SECRET-123" not in report and "X-Api-Token" not in report
