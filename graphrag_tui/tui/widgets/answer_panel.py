"""The outcome: the status as a word, the answer as Markdown, and the communities it rests on."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown, OptionList, Static
from textual.widgets.option_list import Option

from ...engine import SearchResult
from ..messages import OpenCommunity
from ..run_state import RunState
from ..safe_text import clean, safe_line
from .setup_form import in_form_terms

STATUS_STYLES = {
    "completed": "bold green",
    "partial": "bold yellow",
    "no_results": "bold grey70",
    "failed": "bold red",
    "cancelled": "bold magenta",
}
PHASE_WORDS = {"idle": "ready", "planning": "planning…", "map": "running Map…", "reduce": "running Reduce…"}


class AnswerPanel(VerticalScroll):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown: SearchResult | None = None
        self._shown_phase = "idle"  # what compose shows

    def compose(self) -> ComposeResult:
        yield Static(Text("ready", style="dim"), id="answer-status")
        yield Static(id="answer-meta")
        yield Markdown("", open_links=False, id="answer-text")
        yield Static(Text("Rests on communities (Enter opens one):", style="bold"), id="citations-title")
        yield OptionList(id="citations")

    def update_from(self, state: RunState) -> None:
        result = state.result
        if result is None:
            if self._shown_phase == state.phase:
                return
            # The status line has a fixed height: a new word needs no layout.
            self.query_one("#answer-status", Static).update(Text(PHASE_WORDS.get(state.phase, ""), style="dim"),
                                                            layout=False)
            if self._shown is not None:  # clear what the last result showed
                self.query_one("#answer-meta", Static).update("")
                self.query_one("#answer-text", Markdown).update("")
                self.query_one("#citations", OptionList).clear_options()
                self.set_class(False, "-has-citations")
            self._shown, self._shown_phase = None, state.phase
            return
        if result is self._shown:
            return
        self._shown, self._shown_phase = result, state.phase
        self.query_one("#answer-status", Static).update(
            Text(result.status.replace("_", " ").upper(), style=STATUS_STYLES[result.status])
        )
        meta = Text()
        meta.append(f"{result.failed_batch_count} of {result.batch_count} batches failed · "
                    f"{len(result.selected_map_answers)} answers selected · "
                    + ("not shuffled" if result.seed is None else f"seed {result.seed}"))
        for line in (result.detail, result.error):
            if line:
                meta.append("\n")
                meta.append(clean(in_form_terms(line)), style="red" if line == result.error else "")
        self.query_one("#answer-meta", Static).update(meta)
        self.query_one("#answer-text", Markdown).update(clean(result.answer or ""))
        citations = self.query_one("#citations", OptionList)
        citations.clear_options()
        citations.add_options([Option(safe_line(c), id=c) for c in result.cited_community_ids])
        if result.cited_community_ids:  # Enter on the focused list opens the first one
            citations.highlighted = 0
        self.set_class(bool(result.cited_community_ids), "-has-citations")

    def copy_text(self) -> tuple[str, str] | None:
        """The answer, as the model wrote it (Markdown), for `c`."""
        if self._shown is None or not self._shown.answer:
            return None
        return "answer", clean(self._shown.answer)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenCommunity(event.option.id))
