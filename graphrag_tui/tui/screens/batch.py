"""One Map batch in full: its parts, the exact prompt sent, every attempt with the raw
model response, and the outcome. This is where a failed or invalid batch is debugged.

The prompt and the responses are shown literally (cleaned of control characters only, see
`safe_text.clean`) in read-only text areas, which never parse markup and keep whitespace.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static, TabbedContent, TabPane, TextArea

from ...engine.batcher import MapBatch
from ...engine.replies import js_number
from ...engine.result import Attempt, BatchResult
from ..messages import OpenCommunity
from ..safe_text import clean, one_line, safe, safe_line
from ..widgets.footer import KeyFooter
from .tabbed import TabbedScreen

STATUS_STYLE = {"succeeded": "bold green", "failed": "bold red", "cancelled": "bold yellow"}


def _literal_area(text: str, *, id: str | None = None, classes: str | None = None) -> TextArea:
    area = TextArea(
        clean(text), read_only=True, soft_wrap=True, show_line_numbers=False,
        id=id, classes=classes,
    )
    area.show_cursor = False
    return area


def attempt_header(attempt: Attempt) -> Text:
    text = Text.assemble(
        (f"Attempt {attempt.attempt}", "bold"),
        ("   started ", "dim"), one_line(attempt.started_at),
        ("   duration ", "dim"), f"{attempt.duration_s:.3f} s",
        ("   result ", "dim"),
    )
    if attempt.error_kind is None and attempt.error is None:
        text.append("ok", style="bold green")
    else:
        text.append(attempt.error_kind or "error", style="bold red")
    return text


class BatchScreen(TabbedScreen):
    """The batch view. Selecting a part row posts `OpenCommunity`."""

    BINDINGS = [Binding("escape", "close", "Back")]

    def __init__(
        self,
        batch: BatchResult,
        map_batch: MapBatch,
        prompt: str,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.batch = batch
        self.map_batch = map_batch
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        batch = self.batch
        yield Static(self._header_text(), id="batch-header")
        initial = "tab-attempts" if batch.status == "failed" else "tab-answer"
        with TabbedContent(id="batch-tabs", initial=initial):
            with TabPane("Answer", id="tab-answer"):
                with VerticalScroll(id="answer-scroll"):
                    yield Static(self._answer_text(), id="answer")
            with TabPane(f"Parts ({len(self.map_batch.parts)})", id="tab-parts"):
                yield DataTable(id="parts", cursor_type="row", zebra_stripes=True)
            with TabPane("Prompt", id="tab-prompt"):
                yield _literal_area(self.prompt, id="prompt")
            with TabPane(f"Attempts ({len(batch.attempts)})", id="tab-attempts"):
                with VerticalScroll(id="attempts"):
                    if not batch.attempts:
                        yield Static(Text("No attempt was made (the run ended first).",
                                          style="dim italic"))
                    for number, attempt in enumerate(batch.attempts):
                        with Vertical(classes="attempt", id=f"attempt-{number}"):
                            yield Static(attempt_header(attempt), classes="attempt-header")
                            if attempt.error is not None:
                                yield Static(safe(attempt.error), classes="attempt-error")
                            yield Static(Text("Raw response:"), classes="label")
                            if attempt.raw_response is None:
                                yield Static(Text("(none: no response was received)",
                                                  style="dim italic"), classes="no-response")
                            else:
                                yield _literal_area(attempt.raw_response, classes="raw-response")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#parts", DataTable)
        table.add_column(Text("Community"), key="community")
        table.add_column(Text("Part", justify="right"), key="part")
        table.add_column(Text("Tokens", justify="right"), key="tokens")
        tokens = self.map_batch.part_tokens
        for index, part in enumerate(self.map_batch.parts):
            table.add_row(
                safe_line(part.community_id),
                Text(str(part.part), justify="right"),
                Text(str(tokens[index]) if index < len(tokens) else "—", justify="right"),
                key=str(index),
            )

    def _header_text(self) -> Text:
        batch = self.batch
        usefulness = js_number(batch.usefulness) if batch.usefulness is not None else "—"
        return Text.assemble(
            (f"Map batch {batch.index}", "bold"), "   ",
            (batch.status, STATUS_STYLE.get(batch.status, "bold")),
            ("   usefulness ", "dim"), usefulness,
            ("   prompt tokens ", "dim"), str(batch.prompt_tokens),
            ("   communities ", "dim"), str(len(self.map_batch.community_ids)),
            ("   parts ", "dim"), str(len(self.map_batch.parts)),
            ("   attempts ", "dim"), str(len(batch.attempts)),
        )

    def _answer_text(self) -> Text:
        batch = self.batch
        if batch.answer is None:
            reason = {
                "failed": "No answer: every attempt failed (see Attempts).",
                "cancelled": "No answer: the run was cancelled before this batch finished.",
            }.get(batch.status, "No answer.")
            return Text(reason, style="dim italic")
        if not batch.answer.strip():
            return Text("(empty answer)", style="dim italic")
        return safe(batch.answer)

    @on(DataTable.RowSelected, "#parts")
    def _open_part(self, event: DataTable.RowSelected) -> None:
        event.stop()
        parts = self.map_batch.parts
        if 0 <= event.cursor_row < len(parts):
            self.post_message(OpenCommunity(parts[event.cursor_row].community_id))

    def action_close(self) -> None:
        self.dismiss()
