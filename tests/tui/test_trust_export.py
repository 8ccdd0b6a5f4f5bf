"""The app's export under the Pilot (issue 9, item 2): it asks before overwriting, never
writes through a symlink or over the store, and a bad name is one line in the dialog; the
run stays."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from graphrag_tui.export import markdown_report
from graphrag_tui.tui.screens.confirm import ConfirmScreen
from graphrag_tui.tui.screens.export import ExportScreen
from graphrag_tui.tui.screens.main import MainScreen
from tests.chat_server import ScriptedChatServer, map_reply
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, wait_finished, wait_until

SIZE = (140, 42)
SCRIPT = {"ns/1": map_reply("Bridge funds.", 90), "ns/2": map_reply("Fleets.", 20), "ns/3": map_reply("", 0)}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


async def open_export(pilot, typed: str) -> None:
    """Press e, type the path, press Enter."""
    await pilot.press("e")
    await pilot.pause()
    assert isinstance(pilot.app.screen, ExportScreen)
    pilot.app.screen.query_one("#export-input", Input).value = typed
    await pilot.press("enter")
    await pilot.pause()


def dialog_error(app) -> str:
    return str(app.screen.query_one("#export-error", Static).render())


def expected_files(app) -> tuple[str, str]:
    result = app.run_state.result
    document = app.run_session.document()  # the run's JSON, as `query --json` (unrecorded here: run_id null)
    assert (document["run_id"], document["batch_models"]) == (None, ["m1"] * len(result.batches))
    payload = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    return payload, markdown_report(result, app.store, app.run_info())


async def test_export_writes_both_files_and_asks_before_overwriting_either(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.md").write_text("my notes\n")  # only the sibling exists
    notes_hash = sha256(out / "run.md")
    with ScriptedChatServer(Scripted(SCRIPT)) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            payload, report = expected_files(app)

            await open_export(pilot, str(out / "run.json"))
            assert isinstance(app.screen, ConfirmScreen)
            assert app.screen.question == f"{out / 'run.md'} already exists.\nOverwrite {out / 'run.json'} and {out / 'run.md'}?"
            await pilot.press("n")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
            assert sorted(os.listdir(out)) == ["run.md"] and sha256(out / "run.md") == notes_hash

            await open_export(pilot, str(out / "run"))
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await pilot.pause()
            assert sorted(os.listdir(out)) == ["run.json", "run.md"]  # no temporary file left
            assert (out / "run.json").read_text(encoding="utf-8") == payload
            assert (out / "run.md").read_text(encoding="utf-8") == report
            assert report.split("\n\n")[2] == (  # the run's metadata, as the app knows it
                "- Time: 2026-01-02 03:04:05 UTC\n- Duration: 0.0 s\n- Status: completed\n- Model: m1 @ scripted\n"
                "- Store: harbour.db\n- Namespace: ns\n- Level: leaf\n- Seed: none (not shuffled)\n"
                "- Budgets: Map 330 tokens (reserve 0), Reduce 8000 tokens (reserve 1024); concurrency 4\n"
                "- Summaries: 3\n- Map batches: 3 (0 failed)"
            )
            assert notifications(app)[-1] == f"Wrote {out / 'run.json'} and {out / 'run.md'}"

            # Both exist now: the question names both.
            await open_export(pilot, str(out / "run.md"))
            assert app.screen.question == (
                f"{out / 'run.json'} and {out / 'run.md'} already exist.\nOverwrite {out / 'run.json'} and {out / 'run.md'}?"
            )
            await pilot.press("escape")
            await pilot.pause()
            assert (out / "run.json").read_text(encoding="utf-8") == payload
            assert app.run_state.result.status == "completed"


async def test_the_export_describes_the_run_it_was_opened_for(store: Path, tmp_path: Path) -> None:
    """A run started (from the palette) while the dialog was open gave the export of the
    first run the second one's budgets, time and duration."""
    out = tmp_path / "first"
    with ScriptedChatServer(Scripted(SCRIPT)) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            first, (_, report) = app.run_state.result, expected_files(app)
            app.main_screen.query_one("#opt-map_budget", Input).value = "2000"
            await pilot.press("e")
            await pilot.pause()
            app.screen.query_one("#export-input", Input).value = str(out)
            app.setup_form.submit()  # the palette's "Run"
            await wait_until(pilot, lambda: app.run_state.phase == "finished" and app.run_state.result is not first,
                             what="the second run")
            assert app.run_state.plan.options.map_budget == 2000 and isinstance(app.screen, ExportScreen)
            await pilot.press("enter")
            await pilot.pause()
    assert (out.with_suffix(".md")).read_text(encoding="utf-8") == report
    assert "- Budgets: Map 330 tokens (reserve 0)" in report


async def test_export_never_writes_through_a_symlink(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    before = sha256(target)
    (tmp_path / "link.json").symlink_to(target)
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.txt")
    with ScriptedChatServer(Scripted(SCRIPT)) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            await open_export(pilot, str(tmp_path / "link.json"))
            assert isinstance(app.screen, ExportScreen)  # the dialog stays, with the reason
            assert dialog_error(app) == (
                f"Cannot export: {tmp_path / 'link.json'} is a symbolic link; it is never written through"
            )
            app.screen.query_one("#export-input", Input).value = str(tmp_path / "dangling")
            await pilot.press("enter")
            await pilot.pause()
            assert dialog_error(app) == (
                f"Cannot export: {tmp_path / 'dangling.md'} is a symbolic link; it is never written through"
            )
            await pilot.press("escape")
            await pilot.pause()
            assert sha256(target) == before
            assert not (tmp_path / "nowhere.txt").exists() and not (tmp_path / "link.md").exists()
            assert not (tmp_path / "dangling.json").exists()
            assert isinstance(app.screen, MainScreen) and app.run_state.result.status == "completed"


async def test_export_refuses_the_store_through_a_symlink_or_a_hard_link(store: Path, tmp_path: Path) -> None:
    before = sha256(store)
    (tmp_path / "as-link.json").symlink_to(store)
    os.link(store, tmp_path / "as-hard.md")
    with ScriptedChatServer(Scripted(SCRIPT)) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            for typed, named in (("as-link", "as-link.json"), ("as-hard", "as-hard.md")):
                await open_export(pilot, str(tmp_path / typed))
                assert isinstance(app.screen, ExportScreen)
                assert dialog_error(app) == (
                    f"Cannot export: {tmp_path / named} is the input file {store}; choose another file"
                )
                await pilot.press("escape")
                await pilot.pause()
            assert sha256(store) == before
            assert not (tmp_path / "as-link.md").exists() and not (tmp_path / "as-hard.json").exists()
            assert app.run_state.result.status == "completed"


async def test_export_refuses_the_run_history(store: Path, tmp_path: Path) -> None:
    """A history named `runs.json` was replaced by the export `runs`: every recorded run lost."""
    history = tmp_path / "runs.json"
    with ScriptedChatServer(Scripted(SCRIPT)) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            before = sha256(history)
            await open_export(pilot, str(tmp_path / "runs"))
            assert isinstance(app.screen, ExportScreen)
            assert dialog_error(app) == f"Cannot export: {history} is the input file {history}; choose another file"
            await pilot.press("escape")
            await pilot.pause()
            assert sha256(history) == before and not (tmp_path / "runs.md").exists()


async def test_export_bad_names_are_one_line_in_the_dialog_and_the_run_stays(store: Path, tmp_path: Path) -> None:
    (tmp_path / "taken.json").mkdir()
    os.mkfifo(tmp_path / "pipe.json")
    long_name = "n" * 251  # 251 + ".json" = 256 bytes: one too many
    with ScriptedChatServer(Scripted(SCRIPT)) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            cases = [
                (str(tmp_path / long_name), "Cannot export: the file name is too long (256 bytes; at most 255)"),
                (str(tmp_path / ("d" * 300) / "run"), f"Cannot use {tmp_path / ('d' * 300)}: File name too long"),
                (str(tmp_path / "missing" / "run"), f"Folder {tmp_path / 'missing'} does not exist."),
                (str(tmp_path / "taken"), f"Cannot export: {tmp_path / 'taken.json'} is a folder"),
                (str(tmp_path / "pipe"), f"Cannot export: {tmp_path / 'pipe.json'} is not a regular file"),
                ("~nosuchuser/run", "the export's name: ~nosuchuser is no user's home directory"),
                (".", "Cannot export: '.' names a folder, not a file"),  # the app used to crash on these two
                ("/", "Cannot export: '/' names a folder, not a file"),
                # the run was written beside the folder, as tmp_path.json and tmp_path.md
                (f"{tmp_path}/", f"Cannot export: '{tmp_path}/' names a folder, not a file"),
                (str(tmp_path), f"Cannot export: '{tmp_path}' names a folder, not a file"),
                # (set by a program, never typed: it crashed the dialog; found by a probe)
                (str(tmp_path / "run\ud800"), "Cannot export: the path is not valid text (it holds a lone surrogate)"),
            ]
            await open_export(pilot, cases[0][0])
            for typed, message in cases:
                app.screen.query_one("#export-input", Input).value = typed
                await pilot.press("enter")
                await pilot.pause()
                assert isinstance(app.screen, ExportScreen), typed
                assert dialog_error(app) == message
            await pilot.press("escape")
            await pilot.pause()
            assert sorted(os.listdir(tmp_path)) == ["harbour.db", "pipe.json", "taken.json"]
            assert os.listdir(tmp_path / "taken.json") == []
            assert isinstance(app.screen, MainScreen) and app.is_running
            assert app.run_state.result.status == "completed"
            # The run is still there to export.
            await open_export(pilot, str(tmp_path / "good"))
            assert sorted(os.listdir(tmp_path)) == ["good.json", "good.md", "harbour.db", "pipe.json", "taken.json"]
