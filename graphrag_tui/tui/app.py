"""The Textual app. The engine runs in one async worker owned by the App; the worker only
posts messages, and the App's handlers own the run state. Panels repaint at a bounded rate."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict
from rich.text import Text
from textual import on
from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Input, TabbedContent

from ..engine import (
    DEFAULT_PROMPTS,
    FALLBACK_DEFAULTS,
    ChatModel,
    Event,
    Level,
    Prices,
    Prompts,
    SearchOptions,
    SearchPlan,
    SearchResult,
    map_messages,
    prompt_text,
    resolve_options,
    utc_now,
)
from ..engine.selection import SelectionOptions
from ..errors import InputError
from ..export import RunInfo, check_output_files, existing_files, export_paths, write_export
from ..models import local_llm
from ..models.factory import ModelSettings, model_name, open_model
from ..output_paths import sqlite_files
from ..session import ModelSession, ModelState, RunSession, SearchRequest, Setting
from ..session.explore import ExploreSession
from ..session.options import form_defaults, prices_for, resolve_retrieval
from ..session.run_failure import error_words
from ..store.location import StoreLocation, display_location, store_files
from ..store.opening import open_store
from .commands import GraphRAGCommands
from .copying import copy_text
from .history_actions import RunHistoryActions
from .messages import (
    ModelStateChanged,
    OpenBatch,
    OpenCommunity,
    OpenRecord,
    RunEvents,
    RunFinished,
    RunPlanned,
    RunRejected,
    ShowInTree,
)
from .response_spill import ResponseSpill
from .run_state import RunState
from .safe_text import clean, one_line
from .screens.batch import BatchScreen
from .screens.claim import ClaimScreen
from .screens.community import CommunityScreen
from .screens.confirm import ConfirmScreen
from .screens.explore import ExploreScreen
from .screens.export import ExportScreen
from .screens.goto import GoToCommunityScreen
from .screens.keys import KeysScreen
from .screens.main import MainScreen
from .screens.overview import OverviewScreen
from .screens.record import RecordScreen
from .widgets.batch_grid import BatchGrid
from .widgets.run_tabs import SELECTION_TAB, show_selection_tab
from .widgets.setup_form import OPTION_LABELS, RunRequest, SetupForm, in_form_terms
from .widgets.status_line import StatusLine

EXTRACTIVE = "extractive, offline: not an LLM"
#: How long a run may plan before the panels show it (see `start_run`).
PLANNING_QUIET_PERIOD = 0.1
#: What ends the worker itself (the app cancels it, or the process ends), not the run's errors:
#: everything else that escapes a run ends it as `failed` (a BaseExceptionGroup included).
NOT_RUN_ERRORS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)
#: The run history's keys (single letters: they type into a focused field).
HISTORY_KEYS = ("runs", "rerun_failed", "resume_run", "delete_run")
#: The model picker's entries (the endpoint's is built from the settings).
MODEL_LABELS = {
    "extractive": "Built-in extractive (offline, not an LLM)",
    "local": "Local LLM: SmolLM2-135M (tiny; to try the tool offline)",
}
#: What the local LLM can and cannot do, said wherever the app offers it.
LOCAL_MODEL_LIMITS = (
    "SmolLM2-135M: a tiny model for trying the tool offline; "
    "its answers are often wrong or copied from the prompt"
)


class AppSettings(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    store_path: StoreLocation
    #: What the header shows for the store (tests fix it; defaults to the path as given, a URL masked).
    display_path: str | None = None
    #: What the header shows for the model (tests fix it: a scripted server's port varies).
    display_model: str | None = None
    namespace: str | None = None
    level: Level = "leaf"
    options: SearchOptions = SearchOptions()
    seed: int | None = None
    shuffle: bool = True
    model: ModelSettings = ModelSettings()
    #: Retrieval options given by flags or the config file; the others are defaults, which
    #: the local LLM caps to fit its context. None: those that differ from the defaults.
    given_options: frozenset[str] | None = None
    #: Binding id -> comma-separated keys (the `[keymap]` config, checked by tui.keymap.check_keymap).
    keymap: dict[str, str] = {}
    #: Where the search index is kept (None: the user cache directory).
    cache_dir: Path | None = None
    #: Model name -> prices (the `[prices."model"]` tables): the run's cost is shown live.
    prices: dict[str, Prices] = {}
    #: The run history each run is recorded in (None: runs are not recorded).
    history: Path | None = None
    #: The run history the Runs screen reads (recording on or off); None: `history`. With
    #: recording off a re-run from it is not recorded and a resume not made.
    history_path: Path | None = None
    #: The prompt templates (the built-in ones, or --prompts DIR's) and the answer's form
    #: the fields start with; each run's form is the fields'.
    prompts: Prompts = DEFAULT_PROMPTS
    #: How the communities are chosen (--select and its settings); the form picks the mode.
    selection: SelectionOptions = SelectionOptions()


def describe_model(settings: ModelSettings) -> str:
    if settings.kind == "extractive":
        return EXTRACTIVE
    if settings.kind == "local":
        return "local LLM: SmolLM2-135M on llama.cpp (offline; tiny, often wrong)"
    host = httpx.URL(settings.base_url or "").netloc.decode()
    return f"{model_name(settings) or 'first listed model'} @ {host}"


class GraphRAGApp(RunHistoryActions, App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "graphrag-tui"
    #: Each binding has an id: the `[keymap]` config section remaps keys by id (see tui/keymap.py);
    #: the tooltip is what the keys screen says the key does.
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="quit",
                tooltip="quit (asks first while a run is going)"),
        Binding("escape", "escape", "Cancel run", show=False, id="cancel-run",
                tooltip="cancel a running run"),
        Binding("g", "goto", "Go to community", id="goto",
                tooltip="go to a community by id, number, name or member entity"),
        Binding("e", "export", "Export", id="export", tooltip="export the run (JSON and Markdown report)"),
        Binding("x", "explore", "Explore", id="explore", tooltip="explore the index: community tree and search"),
        Binding("question_mark", "keys", "Keys", id="keys", tooltip="the list of keys"),
        Binding("c", "copy_focused", "Copy", show=False, id="copy",
                tooltip="copy the focused answer, prompt, reply, row or entry"),
        # The run history (history_actions.py): the Runs screen, and the finished run's keys.
        Binding("h", "runs", "Runs", show=False, id="runs", tooltip="the run history: past runs, re-run, resume, compare"),
        Binding("f", "rerun_failed", "Re-run failed", id="rerun-failed",
                tooltip="re-run the failed and cancelled batches of a run (choose the model)"),
        Binding("u", "resume_run", "Resume", id="resume-run", tooltip="resume an interrupted or cancelled run"),
        Binding("d", "delete_run", "Delete run", id="delete-run", tooltip="delete the run from the history"),
        # Textual adds this one itself, without an id, unless the app binds the action.
        Binding(App.COMMAND_PALETTE_BINDING, "command_palette", "palette", show=False, priority=True,
                id="command-palette", tooltip="command palette"),
    ]
    COMMANDS = App.COMMANDS | {GraphRAGCommands}

    def __init__(
        self,
        settings: AppSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
        environ: Mapping[str, str] | None = None,
        repaint_interval: float = 0.25,
        model: ChatModel | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.clock = clock
        self.wall_clock = wall_clock
        self.environ = os.environ if environ is None else environ
        self.repaint_interval = repaint_interval
        self.store = open_store(settings.store_path)
        try:  # read now: a bad store is an input error before the app starts, not a traceback
            self.store_namespaces = self.store.namespaces()
        except BaseException:
            self.store.close()
            raise
        self.run_state = RunState()
        self.cancel_event = asyncio.Event()
        #: The answering model, opened on the first run (or given, for tests and benchmarks).
        #: Opened through this module's `open_model` when the run asks (tests replace it).
        self.models = ModelSession(self.environ, opener=lambda settings, environ: open_model(settings, environ))
        if model is not None:
            self.models.adopt(model, settings.model.kind)
        #: The current run (its plan, its search as it goes, its result).
        self.run_session: RunSession | None = None
        #: The current run's raw responses too long for its result, kept whole on disk.
        self.spill = ResponseSpill()
        #: Whether the panels show the current run yet (see `start_run`).
        self._run_shown = False
        self._run_started, self._run_model = self.wall_clock(), ""
        #: The picker's choice: extractive, local or http.
        self.model_kind: str = settings.model.kind
        given = settings.given_options
        if given is None:
            given = frozenset(n for n, v in FALLBACK_DEFAULTS.items() if getattr(settings.options, n) != v)
        self.given_options: frozenset[str] = given
        self.set_keymap(settings.keymap)
        #: Namespace -> its explore session (the hierarchy, the search index).
        self._explore_sessions: dict[str, ExploreSession] = {}
        #: Runs deleted from the history in this session (their keys no longer show).
        self.deleted_runs: set[str] = set()

    def notify(
        self, message: str, *, title: str = "", severity: SeverityLevel = "information",
        timeout: float | None = None, markup: bool = True,
    ) -> None:
        """Every notification is literal, cleaned text (`markup` is ignored): messages quote
        run ids, community ids and notes read from stores and history files, and a toast
        parses markup by default (`[/]` crashed the app, `[@click=app.quit]` quit it)."""
        super().notify(clean(message), title=clean(title), severity=severity, timeout=timeout, markup=False)

    # -- screens -------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        s = self.settings
        setup = SetupForm(
            self.store_namespaces,
            namespace=s.namespace,
            level=s.level,
            options=s.options,
            seed=s.seed,
            shuffle=s.shuffle,
            models=self.model_choices(),
            model=self.model_kind,
            response_type=s.prompts.response_type,
            answer_language=s.prompts.answer_language,
            general_knowledge=s.prompts.general_knowledge,
            select=s.selection.mode,
            id="setup",
        )
        return MainScreen(setup)

    @property
    def main_screen(self) -> MainScreen:
        return self.screen_stack[0]  # type: ignore[return-value]

    def _fatal_error(self) -> None:
        """Textual's, without the frames' local values, which it prints: they hold the model
        settings, whose extra request headers may carry a credential."""
        from rich.segment import Segments
        from rich.traceback import Traceback

        self.bell()
        traceback = Traceback(show_locals=False, width=None)
        self._exit_renderables.append(Segments(self.console.render(traceback, self.console.options)))
        self._close_messages_no_wait()

    @property
    def setup_form(self) -> SetupForm:
        return self.main_screen.setup

    def on_mount(self) -> None:
        self.models.on_change = lambda status: self.post_message(ModelStateChanged(status))
        # After the first refresh: a tick before the main screen has composed its panels
        # would query widgets that do not exist yet.
        self.call_after_refresh(self.set_interval, self.repaint_interval, self.repaint)
        self.call_after_refresh(self.refresh_model_status)
        self.call_after_refresh(self._freeze_start_up_objects)

    @staticmethod
    def _freeze_start_up_objects() -> None:
        """Move what start-up built (modules, the DOM, the stylesheet: objects that live as
        long as the app) out of the garbage collector's sight: otherwise every full
        collection during a run walks them all, and a run makes many collections."""
        gc.collect()
        gc.freeze()

    def update_status(self) -> None:
        form = self.setup_form
        self.main_screen.query_one(StatusLine).show(
            store=self.settings.display_path or display_location(self.settings.store_path),
            namespace=form.namespace,
            level=str(form.level),
            model=self.model_text(self.model_kind),
            phase=self.run_state.phase,
        )

    # -- the model picker ----------------------------------------------------------------

    def model_settings(self, kind: str, concurrency: int | None = None) -> ModelSettings:
        """The settings that open the model of this kind (the others as configured)."""
        base = self.settings.model
        if kind == "local":
            slots = concurrency or base.local_slots
            return base.model_copy(update={"local_llm": True, "base_url": None, "local_slots": slots})
        return base.model_copy(update={"local_llm": False, "base_url": base.base_url if kind == "http" else None})

    def model_text(self, kind: str) -> str:
        """What the header says answers."""
        if self.settings.display_model and kind == self.settings.model.kind:
            return self.settings.display_model
        return describe_model(self.model_settings(kind))

    def model_choices(self) -> list[tuple[Text, str]]:
        choices = [(Text(MODEL_LABELS["extractive"]), "extractive"), (Text(MODEL_LABELS["local"]), "local")]
        if self.settings.model.base_url:
            choices.append((Text("Endpoint: " + one_line(self.model_text("http"))), "http"))
        return choices

    def local_status(self) -> str:
        status = self.models.status
        if status.kind == "local" and status.state == ModelState.OPENING:
            return "starting…"
        if status.kind == "local" and status.state == ModelState.READY:
            return f"ready (context {status.slot_context} tokens per slot)"
        if status.kind == "local" and status.state == ModelState.FAILED:
            return f"failed: {one_line(status.detail)}"
        if not local_llm.availability().installed:
            return f"not installed: {local_llm.INSTALL_COMMANDS}"
        return "not started (starts on the first run)"

    def model_status(self) -> Text:
        """One line under the picker: what the chosen model is (and the local one's state)."""
        if self.model_kind == "local":
            state = self.local_status()
            style = "bold red" if state.startswith(("failed", "not installed")) else "bold"
            return Text.assemble("llama.cpp server: ", (state, style))
        if self.model_kind == "http":
            return Text("OpenAI-compatible HTTP API")
        return Text("offline, deterministic; not an LLM")

    def refresh_model_status(self) -> None:
        self.setup_form.show_model_status(self.model_status(), LOCAL_MODEL_LIMITS if self.model_kind == "local" else "")
        self.update_status()

    @on(SetupForm.ModelChanged)
    async def _model_changed(self, message: SetupForm.ModelChanged) -> None:
        if message.kind == self.model_kind:
            return
        self.model_kind = message.kind
        if not self.run_state.running:  # the picker is locked during runs
            await self._close_model()
        self.setup_form.show_default_options(self.default_options(message.kind))
        self.refresh_model_status()

    async def _close_model(self) -> None:
        """Close the open model (the local LLM's server stops)."""
        await self.models.close()

    def _given_in_form(self, values: Mapping[str, Any]) -> dict[str, Setting]:
        """Options the user gave, as the form names them (by its field labels)."""
        return {n: Setting(v, "form", OPTION_LABELS[n]) for n, v in values.items()}

    def default_options(self, kind: str) -> SearchOptions:
        """What the option fields show by default for this model: the given options, else
        the defaults (for the local LLM, capped to fit one slot when that is possible)."""
        given = self._given_in_form({n: getattr(self.settings.options, n) for n in self.given_options})
        return form_defaults(given, kind, names=OPTION_LABELS)

    def run_options(self, request: RunRequest, kind: str) -> SearchOptions:
        """The run's options; for the local LLM fitted to one slot, as `--local-llm` fits
        them: the options the user gave (edited, or from flags or config) must fit, defaults
        are capped and the concurrency defaults to 1. Reads the GGUF header: call it off the
        event loop."""
        if kind != "local":
            return request.options
        given = self._given_in_form(
            {n: request.raw_options.get(n, getattr(request.options, n)) for n in request.edited | self.given_options}
        )
        return resolve_retrieval(given, "local", names=OPTION_LABELS).options

    @on(SetupForm.ScopeChanged)
    def _scope_changed(self) -> None:
        self.update_status()

    def repaint(self) -> None:
        if not self.is_running:  # the timer can still fire while the app shuts down
            return
        state = self.run_state
        if state.phase in ("map", "reduce"):  # the in-flight sparkline and the workers' timers move
            state.sample_in_flight()
            state.dirty = True
        if state.dirty:
            state.dirty = not self.main_screen.update_from(state, self.clock())
            self.update_status()
        self.models.check_health()  # a local server that died: the change comes as a message

    # -- running -------------------------------------------------------------------------

    @on(SetupForm.Submitted)
    def _submitted(self, message: SetupForm.Submitted) -> None:
        self.start_run(message.request)

    def start_run(self, request: RunRequest) -> None:
        if self.run_state.running:
            self.notify("A run is going: press Esc to cancel it first.", severity="warning")
            return
        self.run_state = RunState(phase="planning", dirty=False, started_at=self.clock(),  # painted by _show_run
                                  selection_mode=request.select)
        #: What the export says about the run beyond its result: when it started, with which model.
        self._run_started, self._run_model = self.wall_clock(), self.model_text(self.model_kind)
        self.refresh_bindings()  # (the keys a finished run offers go)
        self.cancel_event = asyncio.Event()
        self._run_shown = False
        self.spill.clear()
        poster = self._event_poster()
        self.run_session = run = RunSession(
            self.store,
            on_event=poster,
            on_long_response=self.spill.add,
            cancel=self.cancel_event,
            clock=self.clock,
            wall_clock=self.wall_clock,
            history=self.settings.history,
            on_warning=self._history_warning,
            history_off_loop=True,
        )
        run.on_plan = poster  # dynamic selection's plan, in order with the events around it
        self.run_worker(self._run(run, request, self.model_kind), name="global-search", group="run", exit_on_error=False)
        # The panels switch to the run when its plan is ready, or after a moment if planning
        # takes longer: a small plan is made without the screen's work competing for the CPU.
        self.set_timer(PLANNING_QUIET_PERIOD, self._show_run)

    def _history_warning(self, text: str) -> None:
        """From the run's worker (the app's loop) or its end: a notification."""
        self.notify(text, severity="warning", markup=False)

    def _show_run(self) -> None:
        """The panels show the run (reset), the model is locked, focus goes to the batches."""
        if self._run_shown or not self.run_state.running:
            return
        self._run_shown = True
        self.run_state.dirty = True
        self.repaint()
        self.setup_form.lock_model(True)
        self.main_screen.query_one(BatchGrid).focus()

    def _event_poster(self) -> Callable[[Event | SearchPlan], None]:  # type: ignore[valid-type]
        """Engine events to the App as RunEvents messages, coalesced; a plan made during the
        run (dynamic selection's) travels among them, so it is shown before its batches' events."""
        pending: list[Event | SearchPlan] = []  # type: ignore[valid-type]

        def on_event(event: Event | SearchPlan) -> None:  # type: ignore[valid-type]
            pending.append(event)
            if len(pending) == 1:  # the first since the App took the last batch: post it
                self.post_message(RunEvents(pending))

        return on_event

    async def _run(self, run: RunSession, form: RunRequest, kind: str) -> None:
        """The run, from planning to the result; it only posts messages. Whatever goes wrong
        ends it: bad input as a rejected run, anything unexpected as a `failed` result that
        keeps what finished."""
        prompts = self.settings.prompts.model_copy(update={
            "response_type": form.response_type, "answer_language": form.answer_language,
            "general_knowledge": form.general_knowledge,
        })
        selection = self.settings.selection.model_copy(update={"mode": form.select})
        request = SearchRequest(form.query, form.namespace, form.level, form.options, form.seed, form.shuffle,
                                prompts=prompts, selection=selection)
        try:
            if kind == "local":  # budgets must fit one slot of the local model (SPEC §4)
                request = replace(request, options=await asyncio.to_thread(self.run_options, form, kind))
            plan = await asyncio.to_thread(run.prepare, request)
            self.post_message(RunPlanned(plan))
            settings = self.model_settings(kind, plan.options.concurrency)
            model = await self.models.open(settings)
        except InputError as error:
            self.post_message(RunRejected(str(error)))
            return
        except BaseException as error:
            if isinstance(error, NOT_RUN_ERRORS):
                raise
            self.post_message(RunFinished(run.failed(error, request)))
            return
        try:
            result = await self.run_model(run, model, settings)
        except BaseException as error:  # a bug, or a model that raised what it should not
            if isinstance(error, NOT_RUN_ERRORS):
                raise
            result = run.failed(error)
        self.post_message(RunFinished(result))

    async def run_model(self, run: RunSession, model: ChatModel, settings: ModelSettings) -> SearchResult:
        """A prepared run (new, re-run or resumed) on the opened model: its rate limits from
        `settings`, its cost from the configured prices."""
        prices = prices_for(self.settings.prices, model)
        return await run.run(model, timeout=settings.timeout, settings=settings, prices=prices)

    def on_model_state_changed(self, message: ModelStateChanged) -> None:
        self.refresh_model_status()  # it shows the session's status as it is now

    def on_run_planned(self, message: RunPlanned) -> None:
        self.run_state.planned(message.plan, self.clock())
        self._show_run()
        if self.run_state.selection_mode == "dynamic" and not message.plan.batches:  # the rating wave comes first
            tabs = self.main_screen.query_one(TabbedContent)
            show_selection_tab(tabs, self.run_state)
            tabs.active = SELECTION_TAB
        self.setup_form.show_default_options(message.plan.options)  # e.g. capped for the local LLM

    def on_run_events(self, message: RunEvents) -> None:
        now = self.clock()
        events = list(message.events)
        message.events.clear()
        if not self.run_state.running:  # a run that already ended (see `_break_run`)
            return
        try:
            for event in events:
                if isinstance(event, SearchPlan):
                    self.run_state.planned(event, now)
                else:
                    self.run_state.apply(event, now)
        except Exception as error:
            self._break_run(error)

    def _break_run(self, error: Exception) -> None:
        """The App could not follow the run: stop it, and end it as failed with what the
        engine has finished so far."""
        self.cancel_event.set()
        for worker in self.workers:
            if worker.group == "run" and not worker.is_finished:
                worker.cancel()
        assert self.run_session is not None
        self._finish_run(self.run_session.failed(error))

    def on_run_finished(self, message: RunFinished) -> None:
        if not self.run_state.running:  # the run was ended by `_break_run`
            return
        self._finish_run(message.result)

    def _finish_run(self, result: SearchResult) -> None:
        self.run_state.finished(result, self.clock())
        self.setup_form.lock_model(False)
        self.refresh_bindings()  # (f, u and d apply to a finished recorded run: the footer shows them now)
        self.repaint()
        self.main_screen.query_one(TabbedContent).active = "tab-answer"

    def on_run_rejected(self, message: RunRejected) -> None:
        error = clean(in_form_terms(message.error))  # it may name a namespace or community from the store
        self.run_state = RunState()
        self.setup_form.lock_model(False)
        self.refresh_bindings()
        self.setup_form.show_error(error)
        self.repaint()
        self.notify(error, title="Cannot run", severity="error", markup=False)

    def action_escape(self) -> None:
        if len(self.screen_stack) > 1:
            self.pop_screen()
        elif self.run_state.running:
            self.cancel_event.set()
            self.notify("Cancelling the run…")

    def action_quit(self) -> None:  # type: ignore[override]
        if not self.run_state.running:
            self.exit(0)
            return

        def answered(quit_anyway: bool | None) -> None:
            if quit_anyway:
                self.cancel_event.set()
                self.exit(0)

        self.push_screen(ConfirmScreen("A run is going. Quit anyway?"), answered)

    async def on_unmount(self) -> None:
        self.cancel_event.set()
        # A run still going, perhaps starting the local LLM's server: cancelled and awaited
        # here, so no server outlives the app (a cancelled start stops its server).
        running = [w for w in self.workers if w.group == "run" and not w.is_finished]
        for worker in running:
            worker.cancel()
        for worker in running:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=10)
        try:
            await self.models.shutdown()
        finally:
            self.spill.close()
            self.store.close()

    # -- drill-down ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("goto", "export", "keys", "copy_focused", "explore", *HISTORY_KEYS) \
                and isinstance(self.focused, Input):
            return False
        if action in ("rerun_failed", "resume_run", "delete_run"):
            return self.current_run_allows(action)
        if self.app_key_elsewhere(action):
            return False
        return True

    def on_open_community(self, message: OpenCommunity) -> None:
        self.open_community(message.community_id)

    def open_community(self, community_id: str) -> None:
        self.push_screen(CommunityScreen(self.store, community_id))  # reads the store in a worker

    def on_open_batch(self, message: OpenBatch) -> None:
        state = self.run_state
        if state.plan is None or not 0 <= message.batch_index < len(state.plan.batches):
            return
        map_batch = state.plan.batches[message.batch_index]
        if state.result is not None:
            batch = state.result.batches[message.batch_index]
        elif self.run_session is not None and (current := self.run_session.batch(message.batch_index)) is not None:
            batch = current
        else:
            return
        prompt = prompt_text(map_messages(state.plan.query, map_batch.content, state.plan.prompts))
        whole = self.spill.of_batch(message.batch_index)
        self.push_screen(BatchScreen(batch, map_batch, prompt, whole_responses=whole, inputs=self.input_files()))

    def action_goto(self) -> None:
        namespace = self.setup_form.namespace or ""

        def chosen(community_id: str | None) -> None:
            if community_id:
                self.open_community(community_id)

        self.push_screen(
            GoToCommunityScreen(lambda text: self.store.resolve_community(namespace, text), namespace,
                                search=lambda text: self.store.find_communities(namespace, text)),
            chosen,
        )

    def action_copy_focused(self) -> None:
        """Copy the focused thing through the terminal (OSC 52), and say what was copied."""
        found = copy_text(self.focused)
        if found is None:
            self.notify("Nothing to copy here: focus an answer, a prompt, a reply or a table.", severity="warning")
            return
        what, text = found
        self.copy_to_clipboard(text)
        self.notify(f"Copied the {what} ({len(text):,} characters).", title="Copied")
    # -- exploring without a question -----------------------------------------------------

    def explore_session(self) -> ExploreSession | None:
        """The session of the setup form's namespace (kept: it holds the hierarchy once read)."""
        namespace = self.setup_form.namespace
        if namespace is None:
            self.notify("The store has no namespace to explore.", severity="warning")
            return None
        session = self._explore_sessions.get(namespace)
        if session is None:
            levels = {info.name: info.levels for info in self.store_namespaces}
            session = ExploreSession(self.store, namespace, self.settings.cache_dir, levels=levels)
            self._explore_sessions[namespace] = session
        return session

    def action_explore(self, select: str | None = None) -> None:
        explore = self.explore_session()
        if explore is None:
            return
        for screen in reversed(self.screen_stack):  # one Explore screen: go back to it
            if isinstance(screen, ExploreScreen) and screen.explore is explore:
                while self.screen is not screen:
                    self.pop_screen()
                if select is not None:
                    screen.show_community(select)
                return
        self.push_screen(ExploreScreen(explore, select=select))

    def action_overview(self) -> None:
        explore = self.explore_session()
        if explore is not None:
            self.push_screen(OverviewScreen(explore, self.current_options()))

    def current_options(self) -> SearchOptions:
        """The budgets the setup form shows (its defaults while a field is invalid)."""
        raw = {n: self.setup_form.query_one(f"#opt-{n}", Input).value for n in FALLBACK_DEFAULTS}
        try:
            return resolve_options(raw)
        except InputError:
            return self.default_options(self.model_kind)

    def on_show_in_tree(self, message: ShowInTree) -> None:
        self.action_explore(select=message.community_id)

    def on_open_record(self, message: OpenRecord) -> None:
        if message.kind == "claim":  # the claim view, with its passage highlighted
            self.push_screen(ClaimScreen(self.store, message.record_id))  # reads the store in a worker
            return
        explore = self.explore_session()
        if explore is not None and message.kind in ("entity", "chunk", "members"):
            self.push_screen(RecordScreen(explore, message.kind, message.record_id))  # type: ignore[arg-type]

    def action_keys(self) -> None:
        self.push_screen(KeysScreen(self.screen))

    def action_export(self) -> None:
        result = self.run_state.result
        if result is None:
            self.notify("No finished run to export yet.", severity="warning")
            return
        inputs = self.input_files()
        info = self.run_info()  # now: a run started while the dialog is open is another run
        session = self.run_session
        document = session.document() if session is not None and session.result is result else None

        def chosen(path: Path | None) -> None:
            if path is None:
                return
            json_path, md_path = export_paths(path)
            existing = existing_files((json_path, md_path))
            if not existing:
                self._write_export(result, info, path, document)
                return
            verb = "exists" if len(existing) == 1 else "exist"
            question = (f"{' and '.join(str(p) for p in existing)} already {verb}.\n"
                        f"Overwrite {json_path} and {md_path}?")

            def answered(overwrite: bool | None) -> None:
                if overwrite:
                    self._write_export(result, info, path, document)

            self.push_screen(ConfirmScreen(question, yes="Overwrite", no="Cancel"), answered)

        self.push_screen(
            ExportScreen(result.seed, check=lambda path: check_output_files(export_paths(path), inputs)), chosen
        )

    def input_files(self) -> tuple[Path, ...]:
        """Files no output may overwrite: the store's and the run history's."""
        history = self.history_path
        return (*store_files(self.settings.store_path), *(sqlite_files(history) if history is not None else ()))

    def run_info(self) -> RunInfo | None:
        """The run's metadata for the export (None before a plan was made)."""
        state = self.run_state
        if state.plan is None:
            return None
        duration = None
        if state.started_at is not None and state.finished_at is not None:
            duration = state.finished_at - state.started_at
        store = self.settings.display_path or display_location(self.settings.store_path)
        return RunInfo(self._run_started, duration, self._run_model, store, state.plan.options)

    def _write_export(self, result: SearchResult, info: RunInfo | None, path: Path,
                      document: dict[str, Any] | None) -> None:
        try:
            written = write_export(result, self.store, path, inputs=self.input_files(), info=info, document=document)
        except InputError as error:
            self.notify(one_line(str(error)), title="Export failed", severity="error", markup=False)
            return
        except Exception as error:  # a bug must not cost the run
            self.notify(error_words(error), title="Export failed", severity="error", markup=False)
            return
        self.notify(one_line("Wrote " + " and ".join(str(p) for p in written)), title="Exported", markup=False)
