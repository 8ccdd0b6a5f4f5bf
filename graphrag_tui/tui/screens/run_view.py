"""One recorded run, read-only, in the usual panels (batches, answer, Reduce, scores,
retries), rebuilt from the run history. The batch view works from the history alone (the
prompt sent is recorded); opening a community needs the run's store, which the screen
opens if it is at hand and says so when it is not.

The history and the store are read in thread workers; their answers come as messages."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static, TabbedContent

from ...durations import duration_text
from ...engine import BatchResult, ChatMessage, prompt_text
from ...errors import InputError
from ...history import RESUMABLE, RunHistory, StoredRun
from ...session.recording import recorded_store, store_changed
from ...session.run_failure import failure_words
from ...store import CommunityStore
from ...store.location import PostgresLocation, display_location
from ...store.opening import open_store
from ..messages import OpenBatch, OpenCommunity
from ..run_state import RunState
from ..safe_text import one_line
from ..stored_runs import duration_s, recorded_plan, run_state_of, scope_text, started_text, tokens_text
from ..widgets.batch_grid import BatchGrid
from ..widgets.batch_status import BatchCounts, RunClock, usage_texts
from ..widgets.footer import KeyFooter
from ..widgets.run_tabs import run_tabs, show_selection_tab
from .batch import BatchScreen
from .community import CommunityScreen
from .goto import GoToCommunityScreen
from .tabbed import TabbedScreen

PANELS = {"tab-answer": "#answer-panel", "tab-reduce": "#reduce-panel", "tab-scores": "#scores-panel",
          "tab-retries": "#retries-panel", "tab-selection": "#selection-panel"}


@dataclass(frozen=True)
class StoreAtHand:
    """The run's store as this screen can use it: `store` None when it cannot be opened;
    `note` says why, or that it changed since the run; `owned`: this screen closes it."""

    store: CommunityStore | None
    note: str | None
    owned: bool


def open_run_store(stored: StoredRun, app_store: CommunityStore | None) -> StoreAtHand:
    """The run's store: the app's own when it is the same file, else opened now. Blocks:
    call it off the UI thread."""
    try:
        location = recorded_store(stored)
    except InputError as error:  # a database this user's graphrag-tui did not record
        return StoreAtHand(None, f"{one_line(str(error))}: communities cannot be opened.", False)
    if isinstance(location, PostgresLocation):
        return _database_store(location, app_store)
    path = location
    note = None
    try:
        if store_changed(stored, path):
            note = (f"The store {path} changed since this run: communities are shown as the store has them now.")
    except OSError as error:
        return StoreAtHand(None, f"The store {path} is not at hand ({error.strerror or error}): the batches, "
                                 "prompts and answers come from the run history; communities cannot be opened.", False)
    if app_store is not None and isinstance(app_store.path, Path) and os.path.abspath(app_store.path) == str(path):
        return StoreAtHand(app_store, note, False)
    try:
        return StoreAtHand(open_store(path), note, True)
    except InputError as error:
        return StoreAtHand(None, f"The store of this run cannot be opened ({one_line(str(error))}): communities "
                                 "cannot be opened.", False)


def _database_store(location: PostgresLocation, app_store: CommunityStore | None) -> StoreAtHand:
    """A run on a database: the app's own connection when it is the same database, else a
    new read-only one (a database has no size or time to tell a change by)."""
    if app_store is not None and display_location(app_store.path) == location.masked:
        return StoreAtHand(app_store, None, False)
    try:
        return StoreAtHand(open_store(location), None, True)
    except InputError as error:
        return StoreAtHand(None, f"The store of this run cannot be opened ({one_line(str(error))}): communities "
                                 "cannot be opened.", False)


def close_store(at_hand: StoreAtHand | None) -> None:
    """Closes the store if the screen opened it (the app's own stays open)."""
    if at_hand is not None and at_hand.owned and at_hand.store is not None:
        at_hand.store.close()


def run_header(stored: StoredRun) -> Text:
    s = stored.summary
    text = Text.assemble(("Run ", "dim"), (s.run_id, "bold"), ("  ", ""), (s.status, "bold"), ("  read-only", "italic"))
    if s.parent_run_id:
        text.append("  re-run of ", style="dim")
        text.append(s.parent_run_id)
    text.append("\n")
    for label, value in (
        ("started", started_text(s.started_at)),
        ("took", duration_text(duration_s(s.started_at, s.finished_at))),
        ("model", s.model or "—"),
        ("scope", scope_text(s)),
        ("seed", "—" if stored.seed is None else str(stored.seed)),
        ("tokens", tokens_text(s.usage_total)),
    ):
        text.append(f"{label} ", style="dim")
        text.append(one_line(value))
        text.append("  ")
    text.append("\n")
    text.append(one_line(s.question), style="bold")
    return text


class RunViewScreen(TabbedScreen):
    """Esc goes back. The re-run, resume, export and delete keys act on this run."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="back", tooltip="back to the screen before"),
        Binding("f", "rerun_failed", "Re-run failed", id="rerun-failed",
                tooltip="re-run the failed and cancelled batches of a run (choose the model)"),
        Binding("u", "resume_run", "Resume", id="resume-run", tooltip="resume an interrupted or cancelled run"),
        Binding("e", "export", "Export", id="export", tooltip="export the run (JSON and Markdown report)"),
        Binding("d", "delete_run", "Delete", id="delete-run", tooltip="delete the run from the history"),
        Binding("g", "goto", "Go to community", id="goto", tooltip="go to a community by id or number"),
    ]

    @dataclass
    class Loaded(Message):
        stored: StoredRun | None
        at_hand: StoreAtHand | None
        error: str | None

    @dataclass
    class PromptRead(Message):
        batch: BatchResult
        prompt: str | None
        error: str | None

    def __init__(self, history: Path, run_id: str, app_store: CommunityStore | None) -> None:
        super().__init__()
        self.history = history
        self.run_id = run_id
        self.app_store = app_store
        self.stored: StoredRun | None = None
        self.at_hand: StoreAtHand | None = None
        self.error: str | None = None
        self.state: RunState | None = None
        self.loaded = False

    # -- reading (off the UI thread) ---------------------------------------------------------

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False, group="run-view")

    def _read(self) -> None:
        try:
            stored = RunHistory(self.history).load(self.run_id)
        except Exception as error:
            self.post_message(self.Loaded(None, None, failure_words(error)))
            return
        self.post_message(self.Loaded(stored, open_run_store(stored, self.app_store), None))

    @on(Loaded)
    async def _loaded(self, message: Loaded) -> None:
        message.stop()
        if not self.is_attached:  # closed while reading: a store it opened is closed
            close_store(message.at_hand)
            return
        self.stored, self.at_hand, self.error = message.stored, message.at_hand, message.error
        await self.recompose()
        if self.stored is None:
            self.refresh_bindings()
            self.loaded = True
            return
        self.state = run_state_of(self.stored)
        # After the layout: the grid places its rows by its size.
        self.call_after_refresh(self._show_state, self.state)

    def _show_state(self, state: RunState) -> None:
        counts = state.cell_counts()  # drawn as the live run draws them
        self.query_one("#run-clock", RunClock).show(state, state.finished_at or 0.0, counts)
        self.query_one("#batch-counts", BatchCounts).show(counts, usage_texts(state))
        show_selection_tab(self.query_one(TabbedContent), state)
        self.query_one("#batch-grid", BatchGrid).set_cells(state.cells)
        for panel in PANELS.values():
            self.query_one(panel).update_from(state)  # type: ignore[attr-defined]
        self.query_one("#batch-grid", BatchGrid).focus()
        self.refresh_bindings()
        self.loaded = True

    def on_unmount(self) -> None:
        close_store(self.at_hand)

    # -- composing ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        if self.stored is None:
            if self.error is None:
                yield Static(Text.assemble(("Reading run ", "dim"), self.run_id, ("…", "dim")), id="run-loading")
            else:
                yield Static(Text(one_line(self.error), style="bold red"), id="run-missing")
            yield KeyFooter()
            return
        yield Static(run_header(self.stored), id="run-header")
        note = self.at_hand.note if self.at_hand is not None else None
        yield Static(Text(one_line(note), style="yellow") if note else "", id="run-store-note")
        with Vertical(id="run-area"):
            with Horizontal(id="top-row"):
                with Vertical(id="batches-panel", classes="panel") as batches:
                    batches.border_title = "Batches"
                    yield RunClock(id="run-clock")
                    yield BatchCounts(id="batch-counts")
                    yield BatchGrid(id="batch-grid")
            yield from run_tabs()
        yield KeyFooter()

    # -- drill-down ----------------------------------------------------------------------------

    @on(OpenBatch)
    def _open_batch(self, message: OpenBatch) -> None:
        message.stop()  # the App's handler shows the current run's batches, not this one's
        stored = self.stored
        if stored is None or not 0 <= message.batch_index < len(stored.result.batches):
            return
        batch = stored.result.batches[message.batch_index]
        self.run_worker(lambda: self._read_prompt(batch), thread=True, exit_on_error=False, group="run-view")

    def _read_prompt(self, batch: BatchResult) -> None:
        try:
            recorded = RunHistory(self.history).map_prompts(self.run_id, [batch.index]).get(batch.index)
            messages = json.loads(recorded) if recorded is not None else None
            prompt = prompt_text(tuple(ChatMessage.model_validate(m) for m in messages)) if messages else None
        except Exception as error:
            self.post_message(self.PromptRead(batch, None, failure_words(error)))
            return
        self.post_message(self.PromptRead(batch, prompt, None))

    @on(PromptRead)
    def _prompt_read(self, message: PromptRead) -> None:
        message.stop()
        if message.error is not None:
            self.app.notify(one_line(message.error), title="Cannot read the run", severity="error", markup=False)
            return
        assert self.stored is not None
        map_batch = recorded_plan(self.stored).batches[message.batch.index]
        prompt = message.prompt if message.prompt is not None else \
            "(not recorded: the run history keeps a batch's prompt once the batch has finished)"
        inputs = (Path(self.stored.summary.store), self.history)
        self.app.push_screen(BatchScreen(message.batch, map_batch, prompt, inputs=inputs))

    @on(OpenCommunity)
    def _open_community(self, message: OpenCommunity) -> None:
        message.stop()
        store = self.at_hand.store if self.at_hand is not None else None
        if store is None:
            self._no_store()
            return
        self.app.push_screen(CommunityScreen(store, message.community_id))

    def _no_store(self) -> None:
        note = self.at_hand.note if self.at_hand is not None else None
        self.app.notify(one_line(note or "The run's store is not at hand."), title="No store", severity="warning",
                        markup=False)

    def action_goto(self) -> None:
        store = self.at_hand.store if self.at_hand is not None else None
        if store is None or self.stored is None:
            self._no_store()
            return
        namespace = self.stored.summary.namespace

        def chosen(community_id: str | None) -> None:
            if community_id:
                self.app.push_screen(CommunityScreen(store, community_id))

        self.app.push_screen(GoToCommunityScreen(lambda text: store.resolve_community(namespace, text), namespace),
                             chosen)

    # -- keys ----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        stored = self.stored
        if action in ("rerun_failed", "resume_run", "export", "delete_run", "goto") and stored is None:
            return None
        if action == "rerun_failed" and stored is not None:
            return any(b.status != "succeeded" for b in stored.batches)
        if action == "resume_run" and stored is not None:
            return stored.status in RESUMABLE
        return super().check_action(action, parameters)

    def action_close(self) -> None:
        self.dismiss()

    def action_rerun_failed(self) -> None:
        if self.stored is not None:
            self.app.rerun_stored_run(self.stored)  # type: ignore[attr-defined]

    def action_resume_run(self) -> None:
        if self.stored is not None:
            self.app.resume_stored_run(self.stored)  # type: ignore[attr-defined]

    def action_export(self) -> None:
        if self.stored is not None:
            self.app.export_stored_run(self.stored)  # type: ignore[attr-defined]

    def action_delete_run(self) -> None:
        if self.stored is not None:
            self.app.delete_stored_run(self.stored.summary)  # type: ignore[attr-defined]

