"""The app's community selection (issue 15): the picker in the setup form, and the Selection
tab live during dynamic selection's rating wave, against the scripted server."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from textual.widgets import Select, TabbedContent

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.history import RunHistory
from graphrag_tui.tui.screens.community import CommunityScreen
from tests.chat_server import Received, Reply, ScriptedChatServer
from tests.cli_runner import run_cli
from tests.stores import build_store
from tests.test_selection import RatingServer, rating, rollup_store, walk_store
from tests.tui.conftest import ask, make_app, rows, text_of, wait_community, wait_finished, wait_until

SIZE = (160, 48)
QUESTION = "Who haunts the counting house?"


class HeldRatings(RatingServer):
    """The rule's ratings, but the rating of a2 ("Fog fills the street") waits for `gate`,
    and b's reason carries markup, which must show literally."""

    def __init__(self) -> None:
        super().__init__({"The baker": [rating(0, "[bold red]no[/] mention of Marley")]})
        self.gate = threading.Event()

    def __call__(self, request: Received) -> Reply:
        reply = super().__call__(request)
        if request.stage == "rate" and "Fog fills" in request.rated_text:
            return Reply(reply.body, gate=self.gate)
        return reply


async def test_the_selection_tab_follows_the_rating_wave_and_opens_communities(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    server_script = HeldRatings()
    with ScriptedChatServer(server_script) as server:
        app = make_app(store, server.base_url, repaint_interval=0.05, display_path="walk.db",
                       options=SearchOptions(concurrency=1))
        try:
            async with app.run_test(size=SIZE) as pilot:
                tabs = app.screen.query_one(TabbedContent)
                assert tabs.get_tab("tab-selection").display is False  # hidden for a level run
                assert app.screen.check_action("show_tab", (5,)) is False  # a hidden tab has no number
                app.screen.query_one("#select", Select).value = "dynamic"
                await pilot.pause()
                await ask(pilot, QUESTION)
                await wait_until(pilot, lambda: len(app.run_state.ratings) == 3, what="three ratings")
                assert app.run_state.running
                assert tabs.active == "tab-selection"  # the rating wave is what happens first
                app.repaint()
                await pilot.pause()
                assert tabs.get_tab("tab-selection").display is True
                assert text_of(pilot, "#selection-summary") == (
                    "Selection: dynamic · rating…\nlevel 0: 2 rated, 1 kept\nlevel 1: 1 rated, 1 kept\n"
                )
                assert rows(pilot, "#selection-table") == [
                    ["ns/a", "0", "3", "kept", "3", "by the rule"],
                    ["ns/b", "0", "0", "-", "0", "[bold red]no[/] mention of Marley"],
                    ["ns/a1", "1", "3", "kept", "3", "by the rule"],
                ]
                server_script.gate.set()
                await wait_finished(pilot)
                result = app.run_state.result
                assert result is not None and result.status == "completed"
                assert result.selection is not None and result.selection.selected == ["ns/a1x"]
                assert [b.community_ids for b in result.batches] == [("ns/a1x",)]
                tabs.active = "tab-answer"
                app.screen.query_one("#batch-grid").focus()
                await pilot.pause()
                await pilot.press("5")  # the fifth tab, shown for this run
                await pilot.pause()
                assert tabs.active == "tab-selection"
                app.repaint()
                await pilot.pause()
                assert text_of(pilot, "#selection-summary") == (
                    "Selection: dynamic · 1 community selected\nlevel 0: 2 rated, 1 kept\n"
                    "level 1: 2 rated, 1 kept\nlevel 2: 2 rated, 1 kept\n"
                )
                assert [row[0] for row in rows(pilot, "#selection-table")] == [
                    "ns/a", "ns/b", "ns/a1", "ns/a2", "ns/a1x", "ns/a1y"]
                table = app.screen.query_one("#selection-table")
                table.focus()
                table.move_cursor(row=4)  # type: ignore[attr-defined]
                await pilot.press("enter")
                await wait_community(pilot)
                assert isinstance(app.screen, CommunityScreen) and app.screen.community_id == "ns/a1x"
        finally:
            server_script.gate.set()


async def test_a_dynamic_run_the_app_quits_while_rating_is_recorded_and_resumes_the_rating(
        tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    history = tmp_path / "history.db"
    script = HeldRatings()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, display_path="walk.db", options=SearchOptions(concurrency=1),
                       history=history)
        try:
            async with app.run_test(size=SIZE) as pilot:
                app.screen.query_one("#select", Select).value = "dynamic"
                await pilot.pause()
                await ask(pilot, QUESTION)
                await wait_until(pilot, lambda: len(app.run_state.ratings) == 3, what="three ratings")
                run_id = app.run_session.run_id  # type: ignore[union-attr]
                app.exit()  # while the fourth rating is in flight
        finally:
            script.gate.set()
    (summary,) = RunHistory(history).list_runs()
    assert (summary.run_id, summary.batch_count) == (run_id, 0)
    assert summary.status in ("cancelled", "interrupted")  # the app's cancel or its worker's, whichever came first
    with ScriptedChatServer(RatingServer()) as server:
        resumed = run_cli("resume", run_id, "--history", str(history), "--base-url", server.base_url, "--json")  # type: ignore[arg-type]
        stages = [r.stage for r in server.chat_requests()]
    assert resumed.code == 0, resumed.stderr
    assert stages == ["rate"] * 3 + ["map", "reduce"]  # a2, a1x, a1y: the three rated before are kept
    assert (resumed.json["run_id"], resumed.json["status"]) == (run_id, "completed")
    assert resumed.json["selection"]["selected"] == ["ns/a1x"]
    assert [r["community_id"] for r in resumed.json["selection"]["ratings"]] == [
        "ns/a", "ns/b", "ns/a1", "ns/a2", "ns/a1x", "ns/a1y"]


async def test_rollup_from_the_picker_needs_a_numeric_level(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    with ScriptedChatServer(RatingServer()) as server:
        app = make_app(store, server.base_url, display_path="walk.db")
        async with app.run_test(size=SIZE) as pilot:
            app.screen.query_one("#select", Select).value = "rollup"
            await pilot.pause()
            await ask(pilot, QUESTION)
            await wait_until(pilot, lambda: str(app.screen.query_one("#form-error").render()) != "",
                             what="the form's error")
            assert text_of(pilot, "#form-error") == (
                "rollup selection needs a level number, not 'leaf': the Level field sets the deepest level it rolls up to"
            )
            assert server.chat_requests() == []


async def test_a_rollup_runs_selection_tab_lists_the_communities_it_chose(tmp_path: Path) -> None:
    """The tab said "N communities selected" over an empty table (found by a probe)."""
    store = rollup_store(tmp_path / "r.db")
    with ScriptedChatServer(RatingServer()) as server:
        app = make_app(store, server.base_url, display_path="r.db")
        async with app.run_test(size=SIZE) as pilot:
            app.screen.query_one("#select", Select).value = "rollup"
            app.setup_form.select_level(1)
            await pilot.pause()
            await ask(pilot, QUESTION)
            await wait_finished(pilot)
            await pilot.press("5")
            await pilot.pause()
            selected = app.run_state.result.selection.selected
            assert selected == ["ns/R1", "ns/R1a", "ns/R1b", "ns/R2"]
            assert rows(pilot, "#selection-table") == [[cid, "", "—", "kept", "", ""] for cid in selected]


async def test_the_community_view_shows_the_reports_rank_reason_and_findings(tmp_path: Path) -> None:
    store = build_store(tmp_path / "ranked.db", [
        {"id": "ns/1", "summary_content": "Wexley's counting house.", "rank": 7.5,
         "rating_explanation": "Central to the [bold]story[/].",
         "findings": json.dumps([{"summary": "The lamplighter's ghost", "explanation": "It warns Wexley."},
                                 {"summary": "Ada Pellow", "explanation": ""}])},
        {"id": "ns/2", "summary_content": "The baker."},
    ])
    app = make_app(store, display_path="ranked.db")
    async with app.run_test(size=SIZE) as pilot:
        app.open_community("ns/1")
        await wait_community(pilot)
        assert text_of(pilot, "#report") == (
            "Rank 7.5\nCentral to the [bold]story[/].\n\nFindings (2)\n• The lamplighter's ghost\n  It warns Wexley.\n"
            "• Ada Pellow"
        )
        await pilot.press("escape")
        app.open_community("ns/2")
        await wait_community(pilot)
        assert not app.screen.query("#report")  # nothing to say: no section


async def test_a_recorded_dynamic_run_shows_its_selection_tab(tmp_path: Path) -> None:
    from graphrag_tui.tui.screens.run_view import RunViewScreen
    from tests.cli_runner import run_cli

    store = walk_store(tmp_path / "walk.db")
    history = tmp_path / "history.db"
    with ScriptedChatServer(RatingServer()) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m", "--no-config",
                      "--history", str(history), "--select", "dynamic")
        level_run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m",
                            "--no-config", "--history", str(history), "--level", "0")
    assert (run.code, level_run.code) == (0, 0), run.stderr + level_run.stderr
    dynamic_id = run.stdout.strip().splitlines()[-1].removeprefix("run ")
    level_id = level_run.stdout.strip().splitlines()[-1].removeprefix("run ")
    app = make_app(store, display_path="walk.db", history=history, history_path=history)
    async with app.run_test(size=SIZE) as pilot:
        for run_id, shown in ((dynamic_id, True), (level_id, False)):
            app.open_stored_run(run_id)
            await wait_until(pilot, lambda: isinstance(app.screen, RunViewScreen) and app.screen.loaded,
                             what="the run view")
            tabs = app.screen.query_one(TabbedContent)
            assert tabs.get_tab("tab-selection").display is shown, run_id
            if shown:
                tabs.active = "tab-selection"
                await pilot.pause()
                assert text_of(pilot, "#selection-summary") == (
                    "Selection: dynamic · 1 community selected\nlevel 0: 2 rated, 1 kept\n"
                    "level 1: 2 rated, 1 kept\nlevel 2: 2 rated, 1 kept\n"
                )
                assert [row[0] for row in rows(pilot, "#selection-table")] == [
                    "ns/a", "ns/b", "ns/a1", "ns/a2", "ns/a1x", "ns/a1y"]
            await pilot.press("escape")
