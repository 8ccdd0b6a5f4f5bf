"""The outcome: the status as a word, the answer as Markdown, and the communities it rests on.

"Rests on communities" lists first the communities the final answer's text cites (its
citations are links too: a click opens the community), then the rest of the selected
answers' communities, each with its name (read from the store in a thread worker), with a
filter box above the list.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from ...engine import SearchResult
from ...errors import InputError
from ...session.citations import rests_on
from ...store import CommunityRef, CommunityStore
from ..citations import SCHEME, link_citations
from ..messages import OpenCommunity
from ..model_markdown import ModelMarkdown, literal_html_parser
from ..run_state import RunState
from ..safe_text import clean, markdown_cut, one_line
from .clean_input import CleanInput
from .option_list import RoomyOptionList
from .setup_form import in_form_terms

STATUS_STYLES = {
    "completed": "bold green",
    "partial": "bold yellow",
    "no_results": "bold grey70",
    "failed": "bold red",
    "cancelled": "bold magenta",
    "interrupted": "bold magenta",
}
PHASE_WORDS = {"idle": "ready", "planning": "planning…", "map": "running Map…", "reduce": "running Reduce…"}
#: How much of the streamed answer is laid out on each repaint: its tail is what shows.
STREAM_TAIL_CHARS = 20000
#: An answer of this many lines or more is drawn by Rich's Markdown, as one widget: Textual's
#: makes a widget of each block, and an extractive run's 282-item answer held the screen
#: 0.5-1.5 s at every switch of tab. Its citations are then not links (the list below opens
#: each community).
LONG_ANSWER_LINES = 60


def community_line(community_id: str, ref: CommunityRef | None, cited: bool) -> Text:
    return Text.assemble(
        ("● " if cited else "  ", "bold"), (one_line(community_id), "bold"), "  ",
        (one_line(ref.name), "italic") if ref is not None and ref.name else "",
    )


class AnswerPanel(VerticalScroll):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown: SearchResult | None = None
        self._shown_phase = "idle"  # what compose shows
        self._shown_stream = ""
        #: The result's communities: those its answer cites, then the others; and their names.
        self.in_answer: list[str] = []
        self.others: list[str] = []
        self.refs: dict[str, CommunityRef] = {}

    @dataclass
    class NamesRead(Message):
        result: SearchResult
        refs: dict[str, CommunityRef]

    def compose(self) -> ComposeResult:
        yield Static(Text("ready", style="dim"), id="answer-status")
        yield Static(id="answer-meta")
        # While a run goes, the answer as it streams: a fixed-size view of its last lines
        # (a growing Markdown would lay out the screen on every piece).
        yield Static(id="answer-stream")
        yield Markdown("", open_links=False, id="answer-text", parser_factory=literal_html_parser)
        yield Static(id="answer-long")
        yield Static(Text("Rests on communities (Enter opens one):", style="bold"), id="citations-title")
        yield CleanInput(placeholder="filter by id or name", id="citations-filter")
        yield RoomyOptionList(id="citations")

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
                self.query_one("#answer-long", Static).update("")
                self.set_class(False, "-long")
                self.query_one("#citations", OptionList).clear_options()
                self.in_answer, self.others, self.refs = [], [], {}
                self.set_class(False, "-has-citations")
            self._shown, self._shown_phase = None, state.phase
            return
        if result is self._shown:
            return
        self._shown, self._shown_phase = result, state.phase
        self.set_class(False, "-streaming")
        self._shown_stream = ""
        self.query_one("#answer-stream", Static).update("")
        status = state.recorded_status or result.status
        self.query_one("#answer-status", Static).update(
            Text(status.replace("_", " ").upper(), style=STATUS_STYLES[status])
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
        self.in_answer, self.others = rests_on(result)
        self.refs = {}
        known = [*self.in_answer, *self.others]
        shown = markdown_cut(clean(result.answer or ""))
        long = shown.count("\n") + 1 >= LONG_ANSWER_LINES
        self.set_class(long, "-long")
        self.query_one("#answer-long", Static).update(ModelMarkdown(shown) if long else "")
        self.query_one("#answer-text", Markdown).update("" if long else link_citations(shown, result.namespace, known))
        self.query_one("#citations-filter", Input).value = ""
        self._fill_citations()
        self.set_class(bool(known), "-has-citations")
        if known:
            self._read_names(result, known)

    def _title(self) -> Text:
        text = Text("Rests on communities", style="bold")
        if self.in_answer or self.others:
            text.append(f": {len(self.in_answer)} cited in the answer (●), then "
                        f"{len(self.others)} more of the selected answers. Enter opens one.", style="")
        return text

    def _fill_citations(self) -> None:
        """The list, filtered by the filter box (id or name, ignoring case)."""
        self.query_one("#citations-title", Static).update(self._title())
        wanted = self.query_one("#citations-filter", Input).value.strip().casefold()
        citations = self.query_one("#citations", OptionList)
        citations.clear_options()
        options = []
        for cited, ids in ((True, self.in_answer), (False, self.others)):
            for cid in ids:
                ref = self.refs.get(cid)
                line = community_line(cid, ref, cited)
                if not wanted or wanted in line.plain.casefold():
                    options.append(Option(line, id=cid))
        citations.add_options(options)
        if options:  # Enter on the focused list opens the first one
            citations.highlighted = 0

    @work(thread=True, exit_on_error=False, group="citation-names")
    def _read_names(self, result: SearchResult, ids: list[str]) -> None:
        store = getattr(self.app, "store", None)
        if not isinstance(store, CommunityStore):
            return
        try:
            refs = store.community_refs(ids)
        except InputError:  # an unreadable store: the list keeps its ids
            return
        self.post_message(self.NamesRead(result, refs))

    @on(NamesRead)
    def _names_read(self, message: NamesRead) -> None:
        message.stop()
        if message.result is self._shown:
            self.refs = message.refs
            self._fill_citations()

    @on(Input.Changed, "#citations-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill_citations()

    @on(Input.Submitted, "#citations-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#citations", OptionList).focus()

    @on(Markdown.LinkClicked, "#answer-text")
    def _citation_clicked(self, event: Markdown.LinkClicked) -> None:
        """A citation in the answer opens its community; other links do nothing."""
        event.stop()
        if event.href.startswith(SCHEME) and len(event.href) > len(SCHEME):
            self.post_message(OpenCommunity(event.href[len(SCHEME):]))

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
