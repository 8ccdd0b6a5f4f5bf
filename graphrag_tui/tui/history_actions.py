"""The App's side of the run history: the Runs screen, opening and comparing recorded runs,
and what the Runs screen, a recorded run's screen and a finished run's screen offer: re-run
the failed batches, resume, export, delete.

A re-run or a resume is a run like any other: it runs in the App's run worker (which only
posts messages), in the usual panels of the main screen, and the App's handlers own its
state. The history is read and written in thread workers; their answers come as messages."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from rich.text import Text
from textual.message import Message

from ..errors import InputError
from ..export import check_output_files, existing_files, export_paths, write_export
from ..history import RESUMABLE, RunHistory, RunSummary, StoredRun
from ..models.factory import ModelSettings
from ..session import RunSession
from ..session.continuation import model_settings_for, prepare_rerun, prepare_resume
from ..session.recording import recorded_run_info, stored_document
from ..session.run_failure import error_words
from ..store.location import parse_location, store_files, store_identity
from .messages import RunFinished, RunPlanned, RunRejected
from .run_state import RunState
from .safe_text import one_line
from .screens.compare import CompareScreen
from .screens.confirm import ConfirmScreen
from .screens.export import ExportScreen
from .screens.rerun import RECORDED, RerunScreen
from .screens.run_view import RunViewScreen, open_run_store
from .screens.runs import RunsScreen

if TYPE_CHECKING:
    from .app import GraphRAGApp

#: What ends the worker itself, not the run (as in app.py).
_NOT_RUN_ERRORS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


class RunContinued(Message):
    """A re-run or a resume is planned: the App takes its session, then its plan."""

    def __init__(self, run: RunSession) -> None:
        super().__init__()
        self.run = run


@dataclass
class StoredRunLoaded(Message):
    stored: StoredRun
    then: Callable[[StoredRun], None]


@dataclass
class HistoryProblem(Message):
    title: str
    error: str


@dataclass
class RunDeleted(Message):
    run_id: str


@dataclass
class Exported(Message):
    paths: tuple[Path, ...]


class RunHistoryActions:
    """Mixed into GraphRAGApp (self is the App). Its message handlers are `on_*` methods:
    Textual finds `@on` handlers only in the classes of its own metaclass."""

    # -- where the history is ------------------------------------------------------------------

    @property
    def history_path(self: GraphRAGApp) -> Path | None:  # type: ignore[misc]
        """The history the Runs screen reads: where runs are recorded, or would be."""
        return self.settings.history_path or self.settings.history

    def action_runs(self: GraphRAGApp) -> None:  # type: ignore[misc]
        if any(isinstance(s, RunsScreen) for s in self.screen_stack):
            while not isinstance(self.screen, RunsScreen):
                self.pop_screen()
            return
        self.push_screen(RunsScreen(self.history_path))

    def open_stored_run(self: GraphRAGApp, run_id: str) -> None:  # type: ignore[misc]
        if self.history_path is not None:
            self.push_screen(RunViewScreen(self.history_path, run_id, self.store))

    def compare_runs(self: GraphRAGApp, run_a: str, run_b: str) -> None:  # type: ignore[misc]
        if self.history_path is not None:
            self.push_screen(CompareScreen(self.history_path, run_a, run_b, self.store))

    # -- a recorded run, read off the UI thread -------------------------------------------------

    def _with_stored(self: GraphRAGApp, run: str | StoredRun, then: Callable[[StoredRun], None]) -> None:  # type: ignore[misc]
        if isinstance(run, StoredRun):
            then(run)
            return
        history = self.history_path
        if history is None:
            return

        def load() -> None:
            try:
                self.post_message(StoredRunLoaded(RunHistory(history).load(run), then))
            except InputError as error:
                self.post_message(HistoryProblem("Cannot read the run", str(error)))

        self.run_worker(load, thread=True, group="history", exit_on_error=False)

    def on_stored_run_loaded(self, message: StoredRunLoaded) -> None:
        message.then(message.stored)

    def on_history_problem(self: GraphRAGApp, message: HistoryProblem) -> None:  # type: ignore[misc]
        self.notify(one_line(message.error), title=message.title, severity="error", markup=False)

    # -- re-run and resume ------------------------------------------------------------------------

    def _can_continue(self: GraphRAGApp, stored: StoredRun, what: str) -> bool:  # type: ignore[misc]
        """A re-run or a resume runs in the main screen's panels, on the app's store."""
        if self.run_state.running:
            self.notify(f"A run is going: cancel it (Esc on the main screen) before you {what}.", severity="warning")
            return False
        here = store_identity(self.settings.store_path)
        if stored.summary.store != here:
            self.notify(
                one_line(f"Run {stored.run_id} ran on the store {stored.summary.store}, not on the one open here "
                         f"({here}): open the app on that store, or use `graphrag-tui {what.split()[0]} "
                         f"{stored.run_id}`."),
                title="Another store", severity="warning", markup=False,
            )
            return False
        return True

    def recorded_model(self: GraphRAGApp, stored: StoredRun) -> ModelSettings:  # type: ignore[misc]
        """The run's recorded model, with this app's extra headers and body fields (never recorded)."""
        return model_settings_for(stored, configured=self.settings.model.model_dump(include={"headers", "extra_body"}))

    def rerun_stored_run(self: GraphRAGApp, run: str | StoredRun) -> None:  # type: ignore[misc]
        self._with_stored(run, self._ask_rerun)

    def _ask_rerun(self: GraphRAGApp, stored: StoredRun) -> None:  # type: ignore[misc]
        again = [b for b in stored.batches if b.status != "succeeded"]
        if not again and stored.status != "failed":  # (failed: its Reduce, which a re-run does again)
            self.notify(f"Run {stored.run_id} has no failed or unfinished batch: nothing to re-run.",
                        severity="warning")
            return
        if not self._can_continue(stored, "rerun it"):
            return
        # a run this user's graphrag-tui did not record: its endpoint may be anyone's (history/seal.py)
        recorded = self.recorded_model(stored) if stored.sealed else None
        choices = [] if recorded is None else [
            (Text("The run's model: " + one_line(_settings_words(recorded, stored))), RECORDED)]
        choices += self.model_choices()
        recorded_words = "A new run is recorded." if self.settings.history is not None \
            else "It is not recorded (recording is off: --no-history)."
        question = (f"Re-run {len(again)} of the {len(stored.batches)} batches of run {stored.run_id} "
                    f"(the failed and unfinished ones, with the prompts they were sent); the "
                    f"{len(stored.batches) - len(again)} that succeeded are kept. {recorded_words}") if again \
            else (f"Reduce run {stored.run_id} again from the answers of its {len(stored.batches)} batches (they all "
                  f"succeeded; its Reduce failed), sending no batch again. {recorded_words}")

        def chosen(choice: str | None) -> None:
            if choice is None:
                return
            settings = recorded if choice == RECORDED and recorded is not None \
                else self.model_settings(choice, stored.options.concurrency)
            self._start_continuation(stored, "rerun", settings)

        self.push_screen(RerunScreen(question, choices), chosen)

    def resume_stored_run(self: GraphRAGApp, run: str | StoredRun) -> None:  # type: ignore[misc]
        self._with_stored(run, self._ask_resume)

    def _ask_resume(self: GraphRAGApp, stored: StoredRun) -> None:  # type: ignore[misc]
        if stored.status not in RESUMABLE:
            self.notify(f"Run {stored.run_id} is {stored.status}: only an interrupted or cancelled run can be "
                        "resumed (f re-runs its failed batches).", severity="warning")
            return
        if not self._can_continue(stored, "resume it"):
            return
        if self.settings.history is None:  # (a resume writes on in the run's record)
            self.notify(f"Recording is off (--no-history): run {stored.run_id} is resumed into its record, so it "
                        "is not resumed here. Start graphrag-tui without --no-history to resume it.",
                        title="Not resumed", severity="warning", markup=False)
            return
        if not stored.sealed:
            self.notify(one_line(f"Run {stored.run_id} was not recorded by this user's graphrag-tui: its endpoint "
                                 f"is not used. Resume it with `graphrag-tui resume {stored.run_id}` and the model's "
                                 "flags."), title="Not resumed", severity="error", markup=False)
            return
        settings = self.recorded_model(stored)
        unfinished = sum(b.status == "pending" for b in stored.batches)
        question = (f"Resume run {stored.run_id}: send its {unfinished} unfinished batches to "
                    f"{_settings_words(settings, stored)}, then Reduce?")
        self.push_screen(ConfirmScreen(question, yes="Resume", no="Cancel"),
                         lambda yes: self._start_continuation(stored, "resume", settings) if yes else None)

    def _start_continuation(self: GraphRAGApp, stored: StoredRun, kind: str, settings: ModelSettings) -> None:  # type: ignore[misc]
        """Like `start_run`: the main screen shows the run as it goes."""
        if not self._can_continue(stored, f"{kind} it"):  # (again: a run may have started while its dialog was open)
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        selection = stored.selection.options.mode if stored.selection is not None else None
        self.run_state = RunState(phase="planning", dirty=False, started_at=self.clock(), selection_mode=selection)
        self._run_started = self.wall_clock()
        self._run_model = _settings_words(settings, stored) if settings.kind == "http" else self.model_text(settings.kind)
        self.refresh_bindings()
        self.cancel_event = asyncio.Event()
        self._run_shown = False
        self.spill.clear()
        self.run_worker(self._continue(stored, kind, settings), name="global-search", group="run",
                        exit_on_error=False)
        self.set_timer(0.1, self._show_run)

    async def _continue(self: GraphRAGApp, stored: StoredRun, kind: str, settings: ModelSettings) -> None:  # type: ignore[misc]
        """The worker of a re-run or a resume: it only posts messages; whatever goes wrong
        ends as a rejected run (nothing sent) or a `failed` result that keeps what finished."""
        history = self.settings.history  # (None: recording is off, --no-history; a resume is not offered then)
        poster = self._event_poster()
        session: dict[str, Any] = dict(
            on_event=poster, on_long_response=self.spill.add, cancel=self.cancel_event,
            clock=self.clock, wall_clock=self.wall_clock, on_warning=self._history_warning, history_off_loop=True,
        )
        run: RunSession | None = None
        try:
            if kind == "rerun":
                run = await asyncio.to_thread(prepare_rerun, stored, self.store, history=history, mode="failed",
                                              **session)
            else:
                assert history is not None
                run = await asyncio.to_thread(prepare_resume, stored, self.store, history=history, **session)
            run.on_plan = poster  # dynamic selection's plan, in order with the events around it
            self.post_message(RunContinued(run))
            model = await self.models.open(settings)
        except InputError as error:
            self.post_message(RunRejected(str(error)))
            return
        except BaseException as error:
            if isinstance(error, _NOT_RUN_ERRORS):
                raise
            if run is None:
                self.post_message(RunRejected(error_words(error)))
            else:
                self.post_message(RunFinished(run.failed(error)))
            return
        try:
            result = await self.run_model(run, model, settings)
        except BaseException as error:
            if isinstance(error, _NOT_RUN_ERRORS):
                raise
            result = run.failed(error)
        self.post_message(RunFinished(result))

    def on_run_continued(self: GraphRAGApp, message: RunContinued) -> None:  # type: ignore[misc]
        if not self.run_state.running:  # the run was ended meanwhile
            return
        self.run_session = message.run
        assert message.run.plan is not None
        self.run_state.kept = [batch for batch, _ in message.run.prior.values()]
        self.on_run_planned(RunPlanned(message.run.plan))

    # -- the finished run of the main screen ----------------------------------------------------

    def current_run_id(self: GraphRAGApp) -> str | None:  # type: ignore[misc]
        """The main screen's finished, recorded run (None: none, or it was deleted)."""
        run = self.run_session
        if run is None or self.run_state.phase != "finished" or run.run_id is None:
            return None
        return None if run.run_id in self.deleted_runs else run.run_id

    def current_run_allows(self: GraphRAGApp, action: str) -> bool:  # type: ignore[misc]
        result = self.run_state.result
        if self.current_run_id() is None or result is None or self.screen is not self.main_screen:
            return False
        if action == "rerun_failed":
            return any(b.status != "succeeded" for b in result.batches)
        if action == "resume_run":
            return result.status == "cancelled"
        return action == "delete_run"

    def app_key_elsewhere(self: GraphRAGApp, action: str) -> bool:  # type: ignore[misc]
        """Whether an app key would act on the main screen's run or store while a screen of
        the history (which is about other runs) is shown: then it is not offered there."""
        # (a recorded run's screen has its own `e` and `g`, which fall through to these while it reads the run)
        return action in ("goto", "export", "explore") and isinstance(self.screen, (RunsScreen, CompareScreen,
                                                                                     RunViewScreen))

    def action_rerun_failed(self: GraphRAGApp) -> None:  # type: ignore[misc]
        if (run_id := self.current_run_id()) is not None:
            self.rerun_stored_run(run_id)

    def action_resume_run(self: GraphRAGApp) -> None:  # type: ignore[misc]
        if (run_id := self.current_run_id()) is not None:
            self.resume_stored_run(run_id)

    def action_delete_run(self: GraphRAGApp) -> None:  # type: ignore[misc]
        if (run_id := self.current_run_id()) is not None:
            self._with_stored(run_id, lambda stored: self.delete_stored_run(stored.summary))

    # -- delete and export -----------------------------------------------------------------------

    def delete_stored_run(self: GraphRAGApp, summary: RunSummary) -> None:  # type: ignore[misc]
        history = self.history_path
        if history is None:
            return
        if summary.status == "running":
            self.notify(f"Run {summary.run_id} is being recorded by a running process: it cannot be deleted now.",
                        severity="warning")
            return
        question = (f"Delete run {summary.run_id} from the run history?\n{one_line(summary.question, 200)}\n"
                    "Its question, answer, batches and prompts are removed; the store is not touched.")

        def delete() -> None:
            try:
                self.post_message(RunDeleted(RunHistory(history).delete(summary.run_id)))
            except InputError as error:
                self.post_message(HistoryProblem("Not deleted", str(error)))

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(delete, thread=True, group="history", exit_on_error=False)

        self.push_screen(ConfirmScreen(question, yes="Delete", no="Keep"), answered)

    def on_run_deleted(self: GraphRAGApp, message: RunDeleted) -> None:  # type: ignore[misc]
        self.deleted_runs.add(message.run_id)
        self.notify(f"Deleted run {message.run_id} from the run history.", title="Deleted")
        if isinstance(self.screen, RunViewScreen) and self.screen.run_id == message.run_id:
            self.pop_screen()
        for screen in self.screen_stack:
            if isinstance(screen, RunsScreen):
                screen.reload()
        self.refresh_bindings()

    def export_stored_run(self: GraphRAGApp, run: str | StoredRun) -> None:  # type: ignore[misc]
        self._with_stored(run, self._ask_export)

    def _ask_export(self: GraphRAGApp, stored: StoredRun) -> None:  # type: ignore[misc]
        history = self.history_path
        assert history is not None
        inputs = (*store_files(parse_location(stored.summary.store)), history,
                  *(history.with_name(history.name + x) for x in ("-wal", "-shm")))

        def write(path: Path) -> None:
            self.run_worker(lambda: self._export_in_thread(stored, path, inputs), thread=True, group="history",
                            exit_on_error=False)

        def chosen(path: Path | None) -> None:
            if path is None:
                return
            existing = existing_files(export_paths(path))
            if not existing:
                write(path)
                return
            self.push_screen(
                ConfirmScreen(f"{' and '.join(str(p) for p in existing)} already exist(s). Overwrite?",
                              yes="Overwrite", no="Cancel"),
                lambda overwrite: write(path) if overwrite else None,
            )

        default = Path.cwd() / f"graphrag-run-{stored.run_id}.json"
        self.push_screen(ExportScreen(default, check=lambda path: check_output_files(export_paths(path), inputs)),
                         chosen)

    def _export_in_thread(self: GraphRAGApp, stored: StoredRun, path: Path, inputs: tuple[Path, ...]) -> None:  # type: ignore[misc]
        at_hand = open_run_store(stored, self.store)
        if at_hand.store is None:
            self.post_message(HistoryProblem("Export failed", f"{at_hand.note} The report needs the store."))
            return
        try:
            written = write_export(stored.result, at_hand.store, path, inputs=inputs, info=recorded_run_info(stored),
                                   document=stored_document(stored))
        except InputError as error:
            self.post_message(HistoryProblem("Export failed", str(error)))
            return
        except Exception as error:  # a bug must not cost the app
            self.post_message(HistoryProblem("Export failed", error_words(error)))
            return
        finally:
            if at_hand.owned:
                at_hand.store.close()
        self.post_message(Exported(tuple(written)))

    def on_exported(self: GraphRAGApp, message: Exported) -> None:  # type: ignore[misc]
        self.notify(one_line("Wrote " + " and ".join(str(p) for p in message.paths)), title="Exported", markup=False)


def _settings_words(settings: ModelSettings, stored: StoredRun) -> str:
    """The model a re-run or a resume would send to, in words (the endpoint's host only)."""
    if settings.kind == "http":
        host = httpx.URL(settings.base_url or "").netloc.decode()
        return f"{settings.model or 'the first listed model'} @ {host}"
    return stored.summary.model or settings.kind

