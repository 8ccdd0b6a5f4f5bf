"""The run history in the app, under Pilot, against the real scripted chat server and a
history file of the test's own: the Runs screen (list, filter), a recorded run opened
read-only in the usual panels, re-running the failed batches (the server receives exactly
their prompts again), resuming a cancelled run, delete, compare, and runs that are in the
history when the app quits or crashes."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from graphrag_tui.engine.selection import SelectionOptions
from graphrag_tui.history import RunHistory
from graphrag_tui.session.recording import stored_document
from graphrag_tui.tui.app import GraphRAGApp
from graphrag_tui.tui.screens.batch import BatchScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.compare import CompareScreen
from graphrag_tui.tui.screens.confirm import ConfirmScreen
from graphrag_tui.tui.screens.rerun import RerunScreen
from graphrag_tui.tui.screens.run_view import RunViewScreen
from graphrag_tui.tui.screens.runs import RunsScreen
from graphrag_tui.tui.widgets.footer import KeyFooter
from tests.chat_server import Received, Reply, ScriptedChatServer, community_of, completion, map_reply, reduce_reply
from tests.cli_runner import EXECUTABLE, clean_env
from tests.stores import three_leaves

from .conftest import (
    QUESTION,
    Scripted,
    ask,
    make_app,
    record_question,
    rows,
    screen_text,
    text_of,
    wait_finished,
    wait_until,
)

SECOND_QUESTION = "Where do the fleets land?"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.db"


def partial_script() -> Scripted:
    """Batch 0 (ns/1) and 1 (ns/2, after a 500) succeed; batch 2 (ns/3) fails twice."""
    return Scripted({
        "ns/1": map_reply("The port authority funds the bridge.", 90),
        "ns/2": [Reply("overloaded", status=500), map_reply("Fleets land at dawn.", 20)],
        "ns/3": Reply(completion("sorry, I cannot do JSON")),
    })


def maps(requests: list[Received]) -> list[Received]:
    return [r for r in requests if r.stage == "map"]


def messages_by_community(requests: list[Received]) -> dict[str, str]:
    return {community_of(r): json.dumps(r.json["messages"]) for r in maps(requests)}


async def ready(pilot: Pilot) -> None:
    await wait_until(pilot, lambda: bool(pilot.app.screen.query("#citations")), what="the main screen")
    await pilot.pause()


async def finished_run(pilot: Pilot, question: str = QUESTION) -> None:
    await ask(pilot, question)
    await wait_until(pilot, lambda: pilot.app.run_state.phase == "finished", what="the run to finish")
    await wait_finished(pilot)


async def open_runs(pilot: Pilot) -> RunsScreen:
    pilot.app.screen.query_one("#batch-grid").focus()  # away from the question field: `h` types there
    await pilot.press("h")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, RunsScreen) and pilot.app.screen.listings > 0,
                     what="the Runs screen")
    await pilot.pause()
    return pilot.app.screen  # type: ignore[return-value]


async def relisted(pilot: Pilot, screen: RunsScreen, before: int) -> None:
    await wait_until(pilot, lambda: screen.listings > before, what="the list of runs")
    await pilot.pause()


async def open_highlighted(pilot: Pilot) -> RunViewScreen:
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, RunViewScreen) and pilot.app.screen.loaded,
                     what="the recorded run")
    await pilot.pause()
    return pilot.app.screen  # type: ignore[return-value]


def footer_text(app: GraphRAGApp) -> str:
    return str(app.screen.query_one(KeyFooter).render())


def run_ids(history: Path) -> list[str]:
    return [r.run_id for r in RunHistory(history).list_runs()]


# -- the list, the filter, a run opened read-only ----------------------------------------------


async def test_runs_screen_lists_filters_and_opens_a_run_read_only(store: Path, history: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await finished_run(pilot, SECOND_QUESTION)
            second, first = run_ids(history)
            sent = messages_by_community(server.chat_requests()[:6])  # the first run's

            screen = await open_runs(pilot)
            assert rows(pilot, "#runs-table") == [
                ["", "2026-01-02 03:04", "partial", "2/3", "1", SECOND_QUESTION, "m1", "ns/leaf", "—", "0.0 s", second],
                ["", "2026-01-02 03:04", "partial", "2/3", "1", QUESTION, "m1", "ns/leaf", "—", "0.0 s", first],
            ]
            assert "re-run of" not in text_of(pilot, "#runs-detail")
            assert text_of(pilot, "#runs-detail").startswith(f"Run {second}  store {store}\n{SECOND_QUESTION}")

            before = screen.listings
            await pilot.press("slash", *"BRIDGE")
            await wait_until(pilot, lambda: screen.listings > before
                             and screen.query_one("#runs-table", DataTable).row_count == 1, what="the filter")
            assert [r[-1] for r in rows(pilot, "#runs-table")] == [first]
            await pilot.press("enter")  # from the filter to the list
            assert isinstance(app.screen.focused, DataTable)

            view = await open_highlighted(pilot)
            assert view.run_id == first
            header = text_of(pilot, "#run-header")
            assert header.splitlines() == [
                f"Run {first}  partial  read-only",
                "started 2026-01-02 03:04:05  took 0.0 s  model m1  scope ns/leaf  seed —  tokens —  ",
                QUESTION,
            ]
            assert text_of(pilot, "#run-store-note") == ""  # the app's own store, unchanged
            # The live run's counts and clock lines (the recorded times: the test's clock stands still).
            assert text_of(pilot, "#batch-counts") == "· queued 0  ▸ running 0  ■ succeeded 2  ✗ failed 1"
            assert text_of(pilot, "#run-clock") == "took 0.0 s"  # as the header says
            assert text_of(pilot, "#answer-status") == "PARTIAL"
            assert [c.state for c in view.state.cells] == ["succeeded", "succeeded", "failed"]  # type: ignore[union-attr]
            grid = view.query_one("#batch-grid")
            assert (grid.cells, grid.top_row) == (view.state.cells, 0)  # type: ignore[attr-defined,union-attr]
            assert grid.render_line(0).text.startswith("■ ■ ✗")  # type: ignore[attr-defined]
            assert rows(pilot, "#retries-table") == [
                ["1", "1", "http", "retry", "HTTP 500: overloaded"],
                ["2", "1", "invalid_json", "retry", "reply is not valid JSON: 'sorry, I cannot do JSON'"],
                ["2", "2", "invalid_json", "gave up", "reply is not valid JSON: 'sorry, I cannot do JSON'"],
            ]

            # The failed batch's view shows the prompt the server received, from the history.
            await pilot.press("right", "right", "enter")
            await wait_until(pilot, lambda: isinstance(app.screen, BatchScreen), what="the batch view")
            batch_view = app.screen
            assert isinstance(batch_view, BatchScreen) and batch_view.batch.index == 2
            received = json.loads(sent["ns/3"])
            assert batch_view.prompt == "\n".join(m["content"] for m in received)
            await pilot.press("escape")
            await pilot.pause()

            # A cited community opens from the run's store (the app's own).
            view.query_one("#citations").focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, CommunityScreen) and app.screen.loaded,
                             what="the community")
            assert app.screen.community_id == "ns/1"  # type: ignore[attr-defined]
            assert len(server.chat_requests()) == 11  # 6 and 5 (ns/2 answers at once): opening runs sends nothing


async def test_a_run_whose_store_is_gone_opens_and_says_so(store: Path, history: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
    copy = shutil.copy(store, other / "copy.db")
    store.rename(tmp_path / "moved.db")
    app = make_app(Path(copy), history=history)
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(pilot)
        await open_runs(pilot)
        await open_highlighted(pilot)
        assert text_of(pilot, "#run-store-note") == (
            f"The store {store} is not at hand (No such file or directory): the batches, prompts and answers come "
            "from the run history; communities cannot be opened."
        )
        assert text_of(pilot, "#answer-status") == "PARTIAL"
        app.screen.query_one("#citations").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RunViewScreen)  # no community view: a notification says why
        assert [n.title for n in app._notifications] == ["No store"]
        # Re-running it here would plan on another store: refused, nothing sent.
        await pilot.press("f")
        await pilot.pause()
        assert not isinstance(app.screen, RerunScreen)
        assert [n.title for n in app._notifications][-1] == "Another store"


async def test_e_and_g_while_a_recorded_run_is_read_do_not_act_on_the_main_screens_run(
    store: Path, history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's screen offers none of its keys until it has read the run; `e` and `g` then
    fell through to the app's, which exported the main screen's run (under its name) and
    went to a community of the main screen's store."""
    from graphrag_tui.tui.screens.export import ExportScreen

    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await finished_run(pilot, SECOND_QUESTION)
            newest, first = run_ids(history)
            assert app.current_run_id() == newest
            read, load = threading.Event(), RunHistory.load
            monkeypatch.setattr(RunHistory, "load", lambda self, run: (read.wait(10), load(self, run))[1])
            app.open_stored_run(first)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, RunViewScreen) and not screen.loaded
            for key in ("e", "g"):
                await pilot.press(key)
                await pilot.pause()
                assert app.screen is screen, key
            read.set()
            await wait_until(pilot, lambda: screen.loaded, what="the recorded run")
            await pilot.press("e")
            await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen), what="the export dialog")
            assert app.screen.query_one(Input).value == str(Path.cwd() / f"graphrag-run-{first}.json")


async def test_a_batch_of_a_run_deleted_elsewhere_says_so_instead_of_waiting(store: Path, history: Path) -> None:
    """The run view is open; a CLI deletes the run; opening one of its batches reads the
    history again: one line says the run is gone (its worker used to die on a TypeError,
    and the batch never opened)."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await open_runs(pilot)
            view = await open_highlighted(pilot)
            RunHistory(history).delete(view.run_id)
            await pilot.press("enter")  # the first batch
            await wait_until(pilot, lambda: bool(app._notifications), what="a notification")
            assert isinstance(app.screen, RunViewScreen)
            notice = list(app._notifications)[-1]
            assert (notice.title, notice.message) == (
                "Cannot read the run", f"no run {view.run_id!r} in the run history {history}")


# -- re-run, resume, delete ----------------------------------------------------------------------


async def test_rerun_failed_from_the_runs_screen_sends_exactly_the_failed_prompts(store: Path, history: Path) -> None:
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (parent,) = run_ids(history)
            first = server.chat_requests()
            assert len(first) == 6  # ns/1, ns/2 twice, ns/3 twice, Reduce
            script.maps["ns/3"] = map_reply("The festival pays for itself.", 60)
            # the finished run's keys are in the footer at once (they came with the next resize)
            assert "f Re-run failed" in footer_text(app) and "d Delete run" in footer_text(app)
            clock = text_of(pilot, "#run-clock")

            await open_runs(pilot)
            assert "f Re-run failed" in footer_text(app)
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the re-run dialog")
            assert text_of(pilot, "#rerun-question") == (
                f"Re-run 1 of the 3 batches of run {parent} (the failed and unfinished ones, with the prompts they "
                "were sent); the 2 that succeeded are kept. A new run is recorded."
            )
            await pilot.press("enter")  # the run's own model
            await wait_until(pilot, lambda: app.run_state.phase == "finished" and app.run_session is not None
                             and app.run_session.parent_run_id == parent, what="the re-run")
            await wait_finished(pilot)

            again = server.chat_requests()[len(first):]
            assert [r.stage for r in again] == ["map", "reduce"]
            assert messages_by_community(again) == {"ns/3": messages_by_community(first)["ns/3"]}
            result = app.run_state.result
            assert result is not None and result.status == "completed"
            assert [b.status for b in result.batches] == ["succeeded"] * 3
            assert text_of(pilot, "#answer-status") == "COMPLETED"
            # the re-run's clock line and export say its time, duration and model (they were blank)
            info = app.run_info()
            host = server.base_url.split("//")[1].split("/")[0]
            assert (clock, text_of(pilot, "#run-clock")) == ("took 0.0 s", "took 0.0 s")
            assert info is not None and (info.duration_s, info.model) == (0.0, f"m1 @ {host}")
            # the kept batches show as they ended (no event comes for them), not as queued
            assert [cell.state for cell in app.run_state.cells] == ["succeeded"] * 3
            assert sorted(app.run_state.scores) == [(0, 90), (1, 20), (2, 60)]
            child = app.run_session.run_id  # type: ignore[union-attr]
            assert run_ids(history) == [child, parent]
            stored = RunHistory(history).load(child)  # type: ignore[arg-type]
            assert (stored.summary.parent_run_id, stored.status, stored.batch_models) == (
                parent, "completed", ["m1", "m1", "m1"])
            # Nothing failed any more: the finished run's screen offers no re-run.
            assert "Re-run failed" not in footer_text(app)


async def test_a_rerun_chosen_after_another_run_started_says_why_it_does_not_start(store: Path, history: Path) -> None:
    """A run started from the palette while the re-run dialog was open: choosing a model in
    the dialog then did nothing, and said nothing."""
    script, release = partial_script(), threading.Event()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (parent,) = run_ids(history)
            await open_runs(pilot)
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the re-run dialog")
            script.maps["ns/1"] = Reply(map_reply("Held.", 50).body, gate=release)
            app.setup_form.submit()  # the palette's "Run"
            await wait_until(pilot, lambda: app.run_state.running, what="the second run")
            await pilot.press("enter")
            await pilot.pause()
            assert list(app._notifications)[-1].message == (
                "A run is going: cancel it (Esc on the main screen) before you rerun it.")
            release.set()
            await wait_until(pilot, lambda: app.run_state.phase == "finished", what="the second run to end")
            assert [r.parent_run_id for r in RunHistory(history).list_runs()] == [None, None]
    assert parent in run_ids(history)


async def test_a_run_whose_reduce_failed_is_reduced_again_from_the_runs_screen(store: Path, history: Path) -> None:
    """Every batch answered, Reduce failed: the re-run sends Reduce only (the app said there
    was nothing to re-run)."""
    script = Scripted({c: map_reply(f"{c} answers.", 50) for c in ("ns/1", "ns/2", "ns/3")},
                      reduce=Reply("reduce is down", status=500))
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            assert app.run_state.result is not None and app.run_state.result.status == "failed"
            (parent,) = run_ids(history)
            first = len(server.chat_requests())
            script.reduce = reduce_reply("The port authority funds it.")
            await open_runs(pilot)
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the re-run dialog")
            assert text_of(pilot, "#rerun-question") == (
                f"Reduce run {parent} again from the answers of its 3 batches (they all succeeded; its Reduce failed), "
                "sending no batch again. A new run is recorded."
            )
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.run_state.phase == "finished" and app.run_session is not None
                             and app.run_session.parent_run_id == parent, what="the re-run")
            await wait_finished(pilot)
            assert [r.stage for r in server.chat_requests()[first:]] == ["reduce"]
            result = app.run_state.result
            assert result is not None and (result.status, result.answer) == ("completed", "The port authority funds it.")


async def test_a_dynamic_run_cancelled_while_the_model_rated_resumes_in_the_app(store: Path, history: Path) -> None:
    """The plan dynamic selection makes once it has rated never reached the app's panels in
    a resume: the first batch's event broke the run (IndexError), which was then recorded
    `failed` and could not be resumed again."""
    rate_delay = [5.0]

    def script(request: Received) -> Reply:
        if request.stage == "rate":
            return Reply(completion(json.dumps({"reason": "yes", "rating": 5})), delay=rate_delay[0])
        if request.stage == "reduce":
            return reduce_reply("The port authority funds it.")
        return map_reply("It answers.", 50)

    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history, selection=SelectionOptions(mode="dynamic"))
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await ask(pilot)
            await wait_until(pilot, lambda: bool(server.chat_requests()), what="the first rating call")
            app.screen.query_one("#batch-grid").focus()
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.run_state.phase == "finished", what="the cancelled run")
            (run_id,) = run_ids(history)
            assert RunHistory(history).load(run_id).status == "cancelled"
            rate_delay[0] = 0
            await open_runs(pilot)
            await pilot.press("u")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the resume question")
            await pilot.press("y")
            await wait_until(pilot, lambda: app.run_state.phase == "finished" and app.run_session is not None
                             and app.run_session.resume_run_id == run_id, what="the resumed run")
            await wait_finished(pilot)
            result = app.run_state.result
            assert result is not None and result.status == "completed" and result.error is None
            assert [cell.state for cell in app.run_state.cells] == ["succeeded"] * 3
    assert RunHistory(history).load(run_id).status == "completed"


async def test_rerun_failed_on_another_model_from_the_finished_runs_screen(store: Path, history: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (parent,) = run_ids(history)
            sent = len(server.chat_requests())
            assert "f Re-run failed" in footer_text(app) and "d Delete run" in footer_text(app)
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the re-run dialog")
            await pilot.press("down", "enter")  # the built-in extractive model
            await wait_until(pilot, lambda: app.run_state.phase == "finished" and app.run_session is not None
                             and app.run_session.parent_run_id == parent, what="the re-run")
            assert len(server.chat_requests()) == sent  # nothing went to the endpoint
            child = app.run_session.run_id  # type: ignore[union-attr]
            stored = RunHistory(history).load(child)  # type: ignore[arg-type]
            assert stored.batch_models == ["m1", "m1", "extractive"]
            assert stored.summary.model == "extractive"


async def test_resume_a_cancelled_run_sends_only_its_unfinished_batches(store: Path, history: Path) -> None:
    release = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=release)
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 90), "ns/2": held, "ns/3": held})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await ask(pilot)
            await wait_until(pilot, lambda: len(server.chat_requests()) == 3 and app.run_state.cells
                             and app.run_state.cells[0].state == "succeeded", what="two held batches")
            held_prompts = {c: m for c, m in messages_by_community(server.chat_requests()).items() if c != "ns/1"}
            assert sorted(held_prompts) == ["ns/2", "ns/3"]
            await pilot.press("escape")
            await wait_finished(pilot)
            release.set()
            assert app.run_state.result is not None and app.run_state.result.status == "cancelled"
            (run_id,) = run_ids(history)
            assert RunHistory(history).load(run_id).status == "cancelled"
            script.maps["ns/2"] = map_reply("Fleets land at dawn.", 20)
            script.maps["ns/3"] = map_reply("The festival pays for itself.", 60)
            before = len(server.chat_requests())

            assert "u Resume" in footer_text(app)
            await pilot.press("u")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the resume question")
            assert text_of(pilot, "#confirm-question") == (
                f"Resume run {run_id}: send its 2 unfinished batches to m1 @ {server.base_url.split('/')[2]}, then Reduce?")
            await pilot.press("y")
            await wait_until(pilot, lambda: app.run_state.phase == "finished"
                             and app.run_state.result is not None and app.run_state.result.status == "completed",
                             what="the resumed run")
            again = server.chat_requests()[before:]
            assert [r.stage for r in again] == ["map", "map", "reduce"]
            assert messages_by_community(again) == held_prompts
            assert app.run_session is not None and app.run_session.run_id == run_id
            assert run_ids(history) == [run_id]
            assert RunHistory(history).load(run_id).status == "completed"


async def test_with_recording_off_a_rerun_is_not_recorded_and_a_resume_not_made(store: Path, history: Path) -> None:
    """`--no-history`: the app lists the history's runs, but recorded a re-run started there,
    and its dialog said "A new run is recorded" (found by a probe)."""
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
        (parent,) = run_ids(history)
        with sqlite3.connect(history) as db:  # (as a run cancelled there would be)
            db.execute("UPDATE runs SET status = 'cancelled' WHERE run_id = ?", (parent,))
        script.maps["ns/3"] = map_reply("The festival pays for itself.", 60)
        app = make_app(store, server.base_url, history=None, history_path=history)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await ready(pilot)
            await open_runs(pilot)
            await pilot.press("u")
            await wait_until(pilot, lambda: bool(app._notifications), what="the refusal")
            assert list(app._notifications)[-1].message == (
                f"Recording is off (--no-history): run {parent} is resumed into its record, so it is not resumed here. "
                "Start graphrag-tui without --no-history to resume it.")
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the re-run dialog")
            assert text_of(pilot, "#rerun-question").endswith(
                "the 2 that succeeded are kept. It is not recorded (recording is off: --no-history).")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.run_state.phase == "finished" and app.run_state.result is not None
                             and app.run_state.result.status == "completed", what="the re-run")
            await wait_finished(pilot)
        assert run_ids(history) == [parent]


async def test_delete_a_run_from_the_runs_screen(store: Path, history: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await finished_run(pilot, SECOND_QUESTION)
            second, first = run_ids(history)
            screen = await open_runs(pilot)
            await pilot.press("d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the delete question")
            assert f"Delete run {second} from the run history?" in screen_text(app)
            assert SECOND_QUESTION in screen_text(app)
            await pilot.press("n")
            await pilot.pause()
            assert run_ids(history) == [second, first]
            before = screen.listings
            await pilot.press("d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the delete question")
            await pilot.press("y")
            await relisted(pilot, screen, before)
            assert run_ids(history) == [first]
            assert [r[-1] for r in rows(pilot, "#runs-table")] == [first]
            # The main screen's run was the one deleted: its keys are gone.
            await pilot.press("escape")
            await pilot.pause()
            assert "Delete run" not in footer_text(app)


async def test_after_a_delete_the_cursor_is_on_the_deleted_runs_neighbour(store: Path, history: Path) -> None:
    """It went to the top row: `d y` then Enter (or `c`) opened the newest run, not a
    neighbour of the one deleted."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            for question in (QUESTION, SECOND_QUESTION, "Who rows the ferry?"):
                await finished_run(pilot, question)
            third, second, first = run_ids(history)
            screen = await open_runs(pilot)
            for deleted, then in ((second, first), (first, third)):
                if screen.highlighted_id != deleted:
                    await pilot.press("down")
                assert screen.highlighted_id == deleted
                before = screen.listings
                await pilot.press("d")
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the delete question")
                await pilot.press("y")
                await relisted(pilot, screen, before)
                assert screen.highlighted_id == then  # the next one, or the last row's, the one before it


# -- compare --------------------------------------------------------------------------------------


async def test_compare_two_runs(store: Path, history: Path) -> None:
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            script.maps.update({
                "ns/1": map_reply("The city funds the bridge.", 40),
                "ns/3": map_reply("The festival pays for itself.", 60),
            })
            script.calls.clear()
            script.reduce = reduce_reply("The city funds it.")
            await finished_run(pilot, QUESTION)
            second, first = run_ids(history)
            await open_runs(pilot)
            await pilot.press("c")  # nothing marked: it says how, and copies nothing (the app's `c`)
            assert (list(app._notifications)[-1].message, app.clipboard) == (
                "Mark a run with Space, then press c on another run (or mark two).", "")
            await pilot.press("down", "space", "up", "c")  # A: the first run, B: the second
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            assert text_of(pilot, "#compare-a").splitlines()[0] == f" A  {first}  partial"
            assert text_of(pilot, "#compare-b").splitlines()[0] == f" B  {second}  completed"
            assert rows(pilot, "#compare-batches") == [
                ["≠", "0", "succeeded", "90", "succeeded", "40", "usefulness"],
                ["", "1", "succeeded", "20", "succeeded", "20", ""],
                ["≠", "2", "failed", "—", "succeeded", "60", "status, usefulness"],
            ]
            assert text_of(pilot, "#batches-summary") == "3 batches: 2 differ (status 1, usefulness 2)"
            assert rows(pilot, "#compare-communities") == [
                ["", "ns/1", "✓", "✓", "both"],
                ["", "ns/2", "✓", "✓", "both"],
                ["≠", "ns/3", "", "✓", "only B"],
            ]
            assert text_of(pilot, "#communities-summary") == (
                "A rests on 2 communities, B on 3: 2 in both, 0 only in A, 1 only in B")
            shown = screen_text(app)
            assert "The port authority funds it." in shown and "The city funds it." in shown
            app.screen.query_one("#answer-b").focus()  # `c` copies what a pane or the cursor's row holds
            await pilot.press("c")
            assert app.clipboard == "COMPLETED\n\nThe city funds it."
            await pilot.press("2")
            app.screen.query_one("#compare-batches").focus()
            await pilot.press("end", "c")
            assert app.clipboard == "≠\t2\tfailed\t—\tsucceeded\t60\tstatus, usefulness"
            # a community of either answer opens from its row
            await pilot.press("3")
            app.screen.query_one("#compare-communities").focus()
            await pilot.press("end", "up", "enter")
            await wait_until(pilot, lambda: isinstance(app.screen, CommunityScreen), what="the community")
            assert app.screen.community_id == "ns/2"


async def test_compare_counts_the_communities_an_answer_cites_as_the_run_view_does(store: Path, history: Path) -> None:
    """A's answer cites ns/3 (its batch failed) and ns/7: the run view lists them first, and
    Compare said A rested on its selected Map answers' two only (found by a probe)."""
    script = partial_script()
    script.reduce = reduce_reply("The port authority funds it [Data: Reports (3, 7)].")
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            assert text_of(pilot, "#citations-title") == (
                "Rests on communities: 2 cited in the answer (●), then 2 more of the selected answers. Enter opens one.")
            script.maps["ns/3"] = map_reply("The festival pays for itself.", 60)
            script.reduce = reduce_reply("The city funds it.")
            await finished_run(pilot)
            await open_runs(pilot)
            await pilot.press("down", "space", "up", "c")  # A: the first run, B: the second
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            assert rows(pilot, "#compare-communities") == [
                ["", "ns/3", "✓", "✓", "both"],
                ["≠", "ns/7", "✓", "", "only A"],
                ["", "ns/1", "✓", "✓", "both"],
                ["", "ns/2", "✓", "✓", "both"],
            ]
            assert text_of(pilot, "#communities-summary") == (
                "A rests on 4 communities, B on 3: 3 in both, 1 only in A, 0 only in B")


async def test_a_run_marked_stays_marked_while_the_filter_finds_the_other(store: Path, history: Path) -> None:
    """Filter to one run, mark it, filter to the other, `c`: the filter's list dropped the
    mark, and `c` asked for one (found by a probe)."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await finished_run(pilot, SECOND_QUESTION)
            second, first = run_ids(history)
            screen = await open_runs(pilot)
            for words, run_id in (("BRIDGE", first), ("FLEETS", second)):
                before = screen.listings
                await pilot.press("slash", "ctrl+u", *words)
                await wait_until(pilot, lambda before=before: screen.listings > before
                                 and screen.query_one("#runs-table", DataTable).row_count == 1, what="the filter")
                assert [r[-1] for r in rows(pilot, "#runs-table")] == [run_id]
                await pilot.press("enter", *(("space",) if run_id == first else ()))
            assert text_of(pilot, "#runs-detail").endswith(f"Marked to compare: {first}")
            await pilot.press("c")
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            assert [text_of(pilot, f"#compare-{side}").splitlines()[0] for side in "ab"] == [
                f" A  {first}  partial", f" B  {second}  partial"]


async def test_a_comparison_that_cannot_be_made_says_why_in_one_line(
        store: Path, history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged run, or a bug making the tables: the view says so, and Esc leaves it."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await finished_run(pilot)
            second, first = run_ids(history)
            main = app.screen

            def broken(*runs: object) -> None:
                raise RuntimeError("boom")

            monkeypatch.setattr("graphrag_tui.tui.screens.compare.compared_tables", broken)
            app.compare_runs(first, second)
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            assert text_of(pilot, "#compare-missing") == "internal error: RuntimeError: boom"
            await pilot.press("escape")
            await pilot.pause()
            monkeypatch.undo()
            db = sqlite3.connect(history)
            db.execute("UPDATE runs SET seed = 'abc' WHERE run_id = ?", (second,))
            db.commit()
            db.close()
            app.compare_runs(first, second)
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                             what="the comparison")
            assert text_of(pilot, "#compare-missing").startswith(f"run history {history}: run {second} cannot be read")
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is main


# -- runs the app started are in the history when it quits, or crashes -----------------------------


async def test_a_finished_run_and_a_run_going_at_quit_are_in_the_history(store: Path, history: Path) -> None:
    release = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=release)
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        try:
            async with app.run_test(size=(160, 40)) as pilot:
                await ready(pilot)
                await finished_run(pilot)
                script.maps["ns/3"] = held
                await ask(pilot, SECOND_QUESTION)
                await wait_until(pilot, lambda: any(r.stage == "map" and community_of(r) == "ns/3"
                                                    for r in server.chat_requests()[6:]), what="a held batch")
                await wait_until(pilot, lambda: app.run_state.count("succeeded") == 2, what="two batches")
                await pilot.press("ctrl+q")
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the quit question")
                await pilot.press("y")
        finally:
            release.set()
    going, done = RunHistory(history).list_runs()
    assert (done.question, done.status, done.batch_count, done.failed_batch_count) == (QUESTION, "partial", 3, 1)
    assert (going.question, going.status) == (SECOND_QUESTION, "cancelled")
    stored = RunHistory(history).load(going.run_id)
    assert [b.status for b in stored.batches] == ["succeeded", "succeeded", "pending"]


class CrashingApp(GraphRAGApp):
    """An app with a bug: its repaint raises once the run has a finished batch."""

    def repaint(self) -> None:
        super().repaint()
        if self.run_state.count("succeeded") >= 1:
            raise RuntimeError("a bug in a panel")


async def test_a_run_going_when_the_app_crashes_is_in_the_history(store: Path, history: Path) -> None:
    release = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=release)
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 90), "ns/2": held, "ns/3": held})
    with ScriptedChatServer(script) as server:
        base = make_app(store, server.base_url, history=history, repaint_interval=0.05)
        app = CrashingApp(base.settings, clock=base.clock, wall_clock=base.wall_clock, environ={},
                          repaint_interval=0.05)
        try:
            with pytest.raises(RuntimeError, match="a bug in a panel"):
                async with app.run_test(size=(160, 40)) as pilot:
                    await ready(pilot)
                    await ask(pilot)
                    await wait_until(pilot, lambda: False, timeout=10, what="the crash")
        finally:
            release.set()
    (summary,) = RunHistory(history).list_runs()
    assert summary.status in ("interrupted", "cancelled")
    stored = RunHistory(history).load(summary.run_id)
    assert [b.status for b in stored.batches] == ["succeeded", "pending", "pending"]


# -- keys and the palette ------------------------------------------------------------------------------


async def test_h_types_in_the_question_and_the_palette_opens_the_run_history(store: Path, history: Path) -> None:
    app = make_app(store, history=history)
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(pilot)
        field = app.screen.query_one("#query", Input)
        field.focus()
        await pilot.press("h")
        assert field.value.endswith("h") and not isinstance(app.screen, RunsScreen)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Run history")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.listings > 0,
                         what="the Runs screen")
        assert rows(pilot, "#runs-table") == []
        assert text_of(pilot, "#runs-detail") == "No run is recorded yet."


# -- resume a run whose process died; export; untrusted text -------------------------------------------


async def test_resume_a_run_interrupted_by_kill_9_from_the_runs_screen(store: Path, history: Path) -> None:
    release = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=release)
    script = Scripted({"ns/1": map_reply("The port authority funds the bridge.", 90), "ns/2": held, "ns/3": held})
    with ScriptedChatServer(script) as server:
        cli = subprocess.Popen(
            [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1",
             "--map-budget", "330", "--map-reserve", "0", "--concurrency", "1", "--no-shuffle", "--no-config",
             "--history", str(history)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(), stdin=subprocess.DEVNULL,
        )
        try:
            def first_batch_recorded() -> bool:
                if len(server.chat_requests()) != 2 or not history.exists():
                    return False
                runs = RunHistory(history).list_runs()
                if [r.status for r in runs] != ["running"]:
                    return False
                batches = RunHistory(history).load(runs[0].run_id).batches  # [] until the plan is written
                return bool(batches) and batches[0].status == "succeeded"

            deadline = time.monotonic() + 30
            while not first_batch_recorded():
                assert time.monotonic() < deadline, "the CLI's first batch"
                time.sleep(0.05)
            cli.kill()
            cli.wait()
        finally:
            release.set()
        held_prompt = json.dumps(server.chat_requests()[1].json["messages"])
        held_community = community_of(server.chat_requests()[1])
        assert held_community == "ns/2"  # not shuffled: ns/1 answered, ns/2 held, ns/3 never sent
        script.maps.update({"ns/2": map_reply("Fleets land at dawn.", 20),
                            "ns/3": map_reply("The festival pays for itself.", 60)})
        before = len(server.chat_requests())

        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await open_runs(pilot)
            (run_id,) = run_ids(history)
            assert [r[2] for r in rows(pilot, "#runs-table")] == ["interrupted"]
            await open_highlighted(pilot)  # its view says what the list says (it said CANCELLED: its result's)
            assert text_of(pilot, "#answer-status") == "INTERRUPTED"
            await pilot.press("escape")
            await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen), what="the Runs screen")
            assert "u Resume" in footer_text(app)
            await pilot.press("u")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the resume question")
            assert "send its 2 unfinished batches" in text_of(pilot, "#confirm-question")
            await pilot.press("y")
            await wait_until(pilot, lambda: app.run_state.phase == "finished"
                             and app.run_state.result is not None and app.run_state.result.status == "completed",
                             what="the resumed run")
            again = server.chat_requests()[before:]
            assert [r.stage for r in again] == ["map", "map", "reduce"]
            assert sorted(community_of(r) for r in maps(again)) == ["ns/2", "ns/3"]
            assert messages_by_community(again)[held_community] == held_prompt
            assert app.run_session is not None and app.run_session.run_id == run_id
        assert [(r.run_id, r.status) for r in RunHistory(history).list_runs()] == [(run_id, "completed")]


async def test_export_a_recorded_run_from_the_runs_screen(store: Path, history: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (run_id,) = run_ids(history)
            await open_runs(pilot)
            await pilot.press("e")
            await wait_until(pilot, lambda: bool(app.screen.query("#export-input")), what="the export dialog")
            field = app.screen.query_one("#export-input", Input)
            assert field.value == str(Path.cwd() / f"graphrag-run-{run_id}.json")
            field.value = str(tmp_path / "out.json")
            await pilot.press("enter")
            await wait_until(pilot, lambda: (tmp_path / "out.md").exists()
                             and [n.title for n in app._notifications][-1:] == ["Exported"], what="the export")
    exported = json.loads((tmp_path / "out.json").read_text())
    stored = RunHistory(history).load(run_id)
    assert exported == json.loads(json.dumps(stored_document(stored)))  # (with its run id, parent, times, models)
    assert (exported["run_id"], exported["batch_models"]) == (run_id, ["m1", "m1", "m1"])
    report = (tmp_path / "out.md").read_text()
    assert QUESTION in report and "The harbour bridge is funded by the port authority." in report
    # the run's lines as the export of the run on the main screen has them (they were only its status)
    assert report.split("## Run\n\n")[1].splitlines()[:5] == [
        "- Time: 2026-01-02 03:04:05 UTC", "- Duration: 0.0 s", "- Status: partial", "- Model: m1", f"- Store: {store}"]


HOSTILE = "Who funds [@click=app.quit]the[/] [b]bridge\x1b[2J\u202e?"


async def test_untrusted_text_of_a_run_is_shown_literally(store: Path, history: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(200, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot, HOSTILE)
            record_question(history, HOSTILE)
            await open_runs(pilot)
            shown = "Who funds [@click=app.quit]the[/] [b]bridge␛[2J?"
            assert rows(pilot, "#runs-table")[0][5] == shown[:39] + "…"  # the table cuts at 40
            assert text_of(pilot, "#runs-detail").splitlines()[1] == shown
            await open_highlighted(pilot)
            assert text_of(pilot, "#run-header").splitlines()[2] == shown
            assert app.is_running  # nothing clicked, nothing parsed


async def test_a_rerun_the_store_refuses_ends_where_the_user_can_go_on(store: Path, history: Path) -> None:
    script = partial_script()
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (run_id,) = run_ids(history)
            sent = len(server.chat_requests())
            db = sqlite3.connect(store)  # another program changes the store under the app
            with db:
                db.execute("UPDATE rag_community_summaries SET summary_content = summary_content || ' Changed.' "
                           "WHERE id = 'ns/3'")
            db.close()
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the re-run dialog")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.run_state.phase == "idle", what="the refusal")
            await pilot.pause()
            assert [n.title for n in app._notifications][-1] == "Cannot run"
            assert list(app._notifications)[-1].message.startswith(
                f"the store {store} changed since run {run_id}: the content of batch 2 differs from the recorded one")
            assert len(server.chat_requests()) == sent  # nothing was sent
            assert run_ids(history) == [run_id]
            await finished_run(pilot, SECOND_QUESTION)  # the app goes on
            assert app.run_state.result is not None and app.run_state.result.status == "partial"


async def test_a_damaged_history_is_one_line_on_the_runs_screen(store: Path, history: Path) -> None:
    history.parent.mkdir(parents=True)
    history.write_bytes(b"this is not SQLite at all " * 100)
    before = history.read_bytes()
    app = make_app(store, history=history)
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(pilot)
        await open_runs(pilot)
        assert rows(pilot, "#runs-table") == []
        assert text_of(pilot, "#runs-detail") == (
            f"run history {history} is not a run history or is damaged (file is not a database)")
        assert "f Re-run failed" not in footer_text(app) and "d Delete" not in footer_text(app)
    assert history.read_bytes() == before  # left as it was


async def test_delete_the_finished_run_from_the_main_screen(store: Path, history: Path) -> None:
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (run_id,) = run_ids(history)
            app.screen.query_one("#batch-grid").focus()
            await pilot.press("d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the delete question")
            assert text_of(pilot, "#confirm-question").startswith(f"Delete run {run_id} from the run history?\n")
            await pilot.press("y")
            await wait_until(pilot, lambda: run_ids(history) == [] and "Delete run" not in footer_text(app),
                             what="the deletion")
            assert text_of(pilot, "#answer-status") == "PARTIAL"  # the run stays on the screen
            assert "Re-run failed" not in footer_text(app)


async def test_a_run_twice_in_a_history_without_keys_or_with_a_time_without_zone_lists_once_and_opens(
    store: Path, history: Path
) -> None:
    """A history made or mended elsewhere: its runs table without its key, holding a run
    twice (the Runs screen crashed: DuplicateKey), and a start without a time zone next to
    an end with one (listing and opening it crashed: naive minus aware)."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            (run_id,) = run_ids(history)
            db = sqlite3.connect(history)
            db.execute("UPDATE runs SET started_at = '2026-01-02T02:04:05'")  # the end: 03:04:05+00:00
            db.executescript("CREATE TABLE copied AS SELECT * FROM runs; DROP TABLE runs; "
                             "CREATE TABLE runs AS SELECT * FROM copied UNION ALL SELECT * FROM copied; "
                             "DROP TABLE copied;")
            db.close()
            await open_runs(pilot)
            assert rows(pilot, "#runs-table") == [
                ["", "2026-01-02 02:04", "partial", "2/3", "1", QUESTION, "m1", "ns/leaf", "—", "1 h 00 min", run_id],
            ]
            await open_highlighted(pilot)
            assert text_of(pilot, "#run-header").splitlines()[1].startswith("started 2026-01-02 02:04:05  took 1 h 00 min")
            assert app.is_running


async def test_a_run_id_with_control_characters_is_one_inert_line_on_the_runs_screen(
    store: Path, history: Path
) -> None:
    """No run can have such an id: it was drawn raw (ESC, C1, a bidi override) in the list
    and the detail line, and `[/]` in a toast crashed the app on delete."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40)) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            db = sqlite3.connect(history)
            with db:
                db.execute("UPDATE runs SET run_id = 'ab' || char(27) || ']0;x' || char(155) || 'c' || char(8238)")
            db.close()
            await open_runs(pilot)
            assert rows(pilot, "#runs-table") == []
            assert text_of(pilot, "#runs-detail") == (
                f"run history {history}: a run cannot be read: run 'ab\\x1b]0;x\\x9bc\\u202e' has an id or a parent "
                "id that no run can have")
            assert app.is_running


async def test_a_damaged_row_is_left_out_and_the_other_runs_are_listed(store: Path, history: Path) -> None:
    """One row that does not read back made the whole list an error."""
    with ScriptedChatServer(partial_script()) as server:
        app = make_app(store, server.base_url, history=history)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await ready(pilot)
            await finished_run(pilot)
            await finished_run(pilot, "Who lands at dawn?")
            db = sqlite3.connect(history)
            with db:
                db.execute("UPDATE runs SET status = 'bogus' WHERE question = ?", (QUESTION,))
            db.close()
            await open_runs(pilot)
            assert [row[5] for row in rows(pilot, "#runs-table")] == ["Who lands at dawn?"]
            (damaged,) = [n.message for n in app._notifications if "cannot be read" in n.message]
            assert damaged.startswith(f"1 run of the history cannot be read and is not listed: run history {history}: "
                                      "a run cannot be read: run ")
            assert damaged.endswith(" has the status 'bogus', which no run can have")
