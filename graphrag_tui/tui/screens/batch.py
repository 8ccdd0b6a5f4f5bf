"""One Map batch in full: its parts, the exact prompt sent, every attempt with the raw
model response, and the outcome. This is where a failed or invalid batch is debugged.

The prompt and the responses are shown literally (cleaned of control characters only, see
`safe_text.clean`) in read-only text areas, which never parse markup and keep whitespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import DataTable, Static, TabbedContent, TabPane, TextArea

from ...engine import Attempt, BatchResult, MapBatch
from ...engine.replies import js_number
from ...errors import InputError
from ...export import check_output_file, existing_files, write_files
from ..messages import OpenCommunity
from ..safe_text import clean, one_line, safe, safe_line
from ..widgets.find_bar import Findable, FindBar, MarkableStatic
from ..widgets.footer import KeyFooter
from .confirm import ConfirmScreen
from .save_response import SaveResponseScreen
from .tabbed import TabbedScreen

STATUS_STYLE = {"succeeded": "bold green", "failed": "bold red", "cancelled": "bold yellow"}


#: How much of a raw response the view shows, in UTF-8 bytes. A text area lays out and
#: draws a long line whole, again on every layout, and a model reply is often one line:
#: the 64 KiB a result keeps cost a third of a second per layout; this much, a twentieth.
SHOW_LIMIT = 8192


def _literal_area(text: str, *, id: str | None = None, classes: str | None = None) -> TextArea:
    area = TextArea(
        clean(text), read_only=True, soft_wrap=True, show_line_numbers=False,
        id=id, classes=classes,
    )
    area.show_cursor = False
    return area


def human_size(size: int) -> str:
    """Bytes in words: `512 bytes`, `64 KiB` (the cap a result keeps, RAW_RESPONSE_CAP),
    `68.4 KiB`, and from a million bytes on, megabytes: `1.0 MB`, `20.0 MB`."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1_000_000:
        kib = size / 1024
        return f"{kib:.0f} KiB" if size % 1024 == 0 else f"{kib:.1f} KiB"
    return f"{size / 1_000_000:.1f} MB"


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def first_bytes(text: str, limit: int) -> str:
    """The start of `text`, at most `limit` UTF-8 bytes, cut at a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def whole_size(attempt: Attempt) -> int:
    """The size of the attempt's whole raw response (0: none)."""
    if attempt.raw_response is None:
        return 0
    return attempt.raw_response_bytes or utf8_size(attempt.raw_response)


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


class BatchScreen(Findable, TabbedScreen):
    """The batch view. Selecting a part row posts `OpenCommunity`."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="back", tooltip="back to the screen before"),
        Binding("s", "save_response", "Save whole response", id="save-response",
                tooltip="save a response too long to show whole"),
        Findable.FIND_BINDING,
    ]

    def __init__(
        self,
        batch: BatchResult,
        map_batch: MapBatch,
        prompt: str,
        *,
        whole_responses: Mapping[int, Path] | None = None,
        inputs: Sequence[Path] = (),
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.batch = batch
        self.map_batch = map_batch
        self.prompt = prompt
        #: Attempt number -> the file that keeps its whole raw response (see ResponseSpill).
        self.whole_responses = dict(whole_responses or {})
        #: Files a save may not overwrite (the store).
        self.inputs = tuple(inputs)

    def compose(self) -> ComposeResult:
        batch = self.batch
        yield Static(self._header_text(), id="batch-header")
        initial = "tab-attempts" if batch.status == "failed" else "tab-answer"
        with TabbedContent(id="batch-tabs", initial=initial):
            with TabPane("Answer", id="tab-answer"):
                with VerticalScroll(id="answer-scroll"):
                    yield MarkableStatic(self._answer_text(), id="answer")
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
                                shown = first_bytes(attempt.raw_response, SHOW_LIMIT)
                                if utf8_size(shown) < whole_size(attempt):
                                    yield Static(self._hidden_text(attempt, shown), classes="raw-hidden")
                                yield _literal_area(shown, classes="raw-response", id=f"raw-response-{number}")
        yield FindBar(id="find-bar")
        yield KeyFooter()

    def find_targets(self) -> list[Widget]:
        """What the find bar looks in: the tab shown's text, table or raw responses."""
        active = self.query_one("#batch-tabs", TabbedContent).active
        selector = {"tab-answer": "#answer", "tab-parts": "#parts", "tab-prompt": "#prompt"}.get(active, ".raw-response")
        return list(self.query(selector))

    def _hidden_text(self, attempt: Attempt, shown: str) -> Text:
        text = Text(f"showing {human_size(utf8_size(shown))} of {human_size(whole_size(attempt))}; ",
                    style="bold yellow")
        if self._is_whole(attempt):
            text.append("press s to save the whole response")
        else:
            kept = human_size(utf8_size(attempt.raw_response or ""))
            text.append(f"press s to save the first {kept} (the rest was not kept)")
        return text

    def _is_whole(self, attempt: Attempt) -> bool:
        """Whether the app has the attempt's whole response (kept on disk, or not cut)."""
        return attempt.attempt in self.whole_responses or utf8_size(attempt.raw_response or "") == whole_size(attempt)

    def _cut_attempts(self) -> list[tuple[int, Attempt]]:
        """(position, attempt) of the attempts whose response the view shows in part."""
        return [
            (number, a) for number, a in enumerate(self.batch.attempts)
            if a.raw_response is not None and utf8_size(first_bytes(a.raw_response, SHOW_LIMIT)) < whole_size(a)
        ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save_response":
            return bool(self._cut_attempts())  # the key shows only when there is one to save
        return super().check_action(action, parameters)

    def _attempt_to_save(self) -> Attempt | None:
        """The cut attempt whose response has focus, else the first cut one."""
        cut = self._cut_attempts()
        focused = self.focused.id if self.focused is not None else None
        for number, attempt in cut:
            if focused == f"raw-response-{number}":
                return attempt
        return cut[0][1] if cut else None

    def action_save_response(self) -> None:
        attempt = self._attempt_to_save()
        if attempt is None or attempt.raw_response is None:
            return
        spilled = self.whole_responses.get(attempt.attempt)
        source: Path | str = spilled if spilled is not None else attempt.raw_response
        inputs = (*self.inputs, spilled) if spilled is not None else self.inputs
        default = Path.cwd() / f"graphrag-batch-{self.batch.index}-attempt-{attempt.attempt}.txt"
        size = human_size(whole_size(attempt) if self._is_whole(attempt) else utf8_size(attempt.raw_response))

        def write(path: Path) -> None:
            try:
                write_files([(path, source)], inputs)
            except InputError as error:
                self.app.notify(one_line(str(error)), title="Not saved", severity="error", markup=False)
                return
            self.app.notify(one_line(f"Wrote {path} ({size})"), title="Saved", markup=False)

        def chosen(path: Path | None) -> None:
            if path is None:
                return
            if not existing_files([path]):
                write(path)
                return
            self.app.push_screen(
                ConfirmScreen(f"{path} already exists. Overwrite it?", yes="Overwrite", no="Cancel"),
                lambda overwrite: write(path) if overwrite else None,
            )

        self.app.push_screen(
            SaveResponseScreen(default, size=size, check=lambda path: check_output_file(path, inputs, "save")), chosen
        )

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
