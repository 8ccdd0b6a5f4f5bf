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
#: How much of the streamed answer is laid out on each repaint: its tail is what shows.
STREAM_TAIL_CHARS = 20000


class AnswerPanel(VerticalScroll):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown: SearchResult | None = None
        self._shown_phase = "idle"  # what compose shows
        self._shown_stream = ""

    def compose(self) -> ComposeResult:
        yield Static(Text("ready", style="dim"), id="answer-status")
        yield Static(id="answer-meta")
        # While a run goes, the answer as it streams: a fixed-size view of its last lines
        # (a growing Markdown would lay out the screen on every piece).
        yield Static(id="answer-stream")
        yield Markdown("", open_links=False, id="answer-text")
        yield Static(Text("Rests on communities (Enter opens one):", style="bold"), id="citations-title")
        yield OptionList(id="citations")

    def update_from(self, state: RunState) -> None:
        result = state.result
        if result is None:
            self._show_stream(state)
            if self._shown_phase == state.phase:
                return
            # Once, when Reduce starts (Map's grid is done): the view of the streamed answer
            # replaces the empty answer, and the pieces are redraws from then on.
            self.set_class(state.phase == "reduce", "-streaming")
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
        self.set_class(False, "-streaming")
        self._shown_stream = ""
        self.query_one("#answer-stream", Static).update("")
        self.query_one("#answer-status", Static).update(
            Text(result.status.replace("_", " ").upper(), style=STATUS_STYLES[result.status])
        )
        meta = Text()
        meta.append(f"{result.failed_batch_count} of {result.batch_count} batches failed · "
                    f"{len(result.selected_map_answers)} answers selected · "
                    + ("not shuffled" if result.seed is None else f"seed {result.seed}"))
        usage = result.usage_total
        if usage is not None:
            meta.append(f"\ntokens: {usage.prompt_tokens:,} prompt (estimated {result.estimated_prompt_tokens or 0:,}), "
                        f"{usage.completion_tokens:,} completion")
            if result.cost is not None:
                meta.append(f" · cost ${result.cost.total:.4f}")
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

    def _show_stream(self, state: RunState) -> None:
        """The streamed answer's last lines, as many as the view holds: a redraw only."""
        text = state.streamed_answer
        if text == self._shown_stream:
            return
        self._shown_stream = text
        view = self.query_one("#answer-stream", Static)
        width, height = max(view.content_size.width, 20), max(view.content_size.height, 1)
        lines = Text(clean(text[-STREAM_TAIL_CHARS:])).wrap(self.app.console, width)
        view.update(Text("\n").join(lines[-height:]), layout=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenCommunity(event.option.id))
