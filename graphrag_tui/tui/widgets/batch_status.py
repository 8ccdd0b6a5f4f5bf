"""The two lines above the batch grid: the batches per state, and the run's elapsed time with
an ETA. Each picks, when drawn, the widest wording that fits its width, so no count is ever
cut off; a new count or second is a redraw, never a layout."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from ...durations import duration_text
from ..run_state import CellState, RunState
from .batch_grid import GLYPHS, STYLES

#: The states in the order the counts line names them, with their long and short words.
#: Retrying and cancelled are named only when a batch is in that state.
STATE_WORDS: list[tuple[CellState, str, str]] = [
    ("queued", "queued", "q"),
    ("running", "running", "run"),
    ("retrying", "retrying", "retry"),
    ("succeeded", "succeeded", "ok"),
    ("failed", "failed", "fail"),
    ("cancelled", "cancelled", "cancel"),
]
ALWAYS_SHOWN = frozenset({"queued", "running", "succeeded", "failed"})
GLYPH_STYLES = {**{state: style.color.name if style.color else "" for state, style in STYLES.items()},
                "succeeded": "#40b95f"}


def counts_texts(counts: Counter[CellState]) -> list[Text]:
    """The counts line in each wording, widest first: `· queued 26  ▸ running 3 …`, then
    `· q 26  ▸ run 3 …`, then `·26 ▸3 …`."""
    shown = [(state, long, short) for state, long, short in STATE_WORDS if state in ALWAYS_SHOWN or counts[state]]
    texts = []
    for wording in ("long", "short", "glyph"):
        text = Text(no_wrap=True, overflow="crop")
        for state, long, short in shown:
            if text:
                text.append(" " if wording == "glyph" else "  ")
            text.append(GLYPHS[state], style=GLYPH_STYLES[state])
            word = {"long": f" {long} ", "short": f" {short} ", "glyph": ""}[wording]
            text.append(f"{word}{counts[state]}")
        texts.append(text)
    return texts


def token_count_text(count: int) -> str:
    """`950`, `12.3k`, `4.6M`, `27.6B`: a count in a few cells (999,960 is `1.0M`, not
    `1000.0k`; past a thousand billions, `1,234B`)."""
    for unit, size in (("B", 10**9), ("M", 10**6), ("k", 10**3)):
        if count >= size - size // 20_000:  # (what rounds to 1.0 of the unit)
            shown = count / size
            return f"{shown:.1f}{unit}" if shown < 999.95 else f"{round(shown):,}{unit}"
    return str(count)


def usage_texts(state: RunState) -> list[Text]:
    """The run's tokens so far, real against the estimated prompt tokens, and the cost, in
    each wording, widest first (none before a server reported usage). The last ones,
    `39.9k tok · $0.0415` then `39.9k tok`, fit beside the counts' glyphs in the Batches
    panel at 80 columns, so the totals show live at the sizes the README documents."""
    usage = state.usage_total
    if usage is None:
        return []
    cost = [] if state.cost is None else [(f" · ${state.cost.total:.4f}", "bold")]
    long = Text.assemble(("tokens ", "dim"), f"{usage.prompt_tokens:,} in",
                         (f" (est. {state.estimated_prompt_tokens:,})", "dim"),
                         f" · {usage.completion_tokens:,} out", *cost)
    short = Text.assemble(f"{usage.prompt_tokens:,} in · {usage.completion_tokens:,} out", *cost)
    tokens = Text.assemble(token_count_text(usage.total_tokens), (" tok", "dim"))
    return [long, short, Text.assemble(tokens, *cost)] + ([tokens] if cost else [])


def fitting(texts: list[Text], width: int) -> Text:
    """The first text that fits `width` cells, else the last one."""
    return next((t for t in texts if t.cell_len <= width), texts[-1])


class BatchCounts(Widget):
    """`· queued 26  ▸ running 3  ↻ retrying 1  ■ succeeded 48  ✗ failed 2`, abbreviated to
    fit (`· q 26  ▸ run 3 …`, then `·26 ▸3 …`); then the run's tokens and cost once a server
    reported usage, abbreviated after the counts are (down to `·0 ▸2 ■33 ✗0  39.9k tok ·
    $0.0415`), then the cost dropped, then the tokens: never a count."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._counts: Counter[CellState] = Counter()
        self._usage: list[Text] = []
        self._texts = counts_texts(self._counts)

    def show(self, counts: Counter[CellState], usage: list[Text] | None = None) -> None:
        usage = usage or []
        if counts == self._counts and [u.plain for u in usage] == [u.plain for u in self._usage]:
            return
        self._counts, self._usage = counts, usage
        wordings = counts_texts(counts)
        # The tokens against the estimate are what the line adds: shortened after the counts are.
        with_usage = [Text.assemble(c, "  ", u) for u in usage for c in wordings]
        self._texts = with_usage + wordings
        self.refresh()

    def render(self) -> Text:
        return fitting(self._texts, self.size.width)


def clock_text(seconds: float) -> str:
    """`42 s`, `3:05`, `1:02:03`; `—` for a time that is no number."""
    if not math.isfinite(seconds):
        return "—"
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


@dataclass(frozen=True)
class RunTimes:
    """How long the run has taken, and how long it has to go from the finished batches' rate."""

    phase: str
    elapsed: float | None
    #: Seconds left in Map, from the finished batches' rate; None before any batch finished.
    eta: float | None
    #: Batches this run finished per second of Map, over the whole pool (those it kept from
    #: before are not its work).
    rate: float | None
    retry_wait: float | None


def run_times(state: RunState, now: float, counts: Counter[CellState] | None = None) -> RunTimes:
    """`counts`: the state's cell counts, when the caller has them already."""
    if state.started_at is None:
        return RunTimes(state.phase, None, None, None, None)
    end = state.finished_at if state.finished_at is not None else now
    elapsed = end - state.started_at
    counts = state.cell_counts() if counts is None else counts
    done = counts["succeeded"] + counts["failed"]
    sent = done - state.kept_finished
    eta = rate = None
    if sent and state.map_started_at is not None:
        map_time = (state.map_ended_at if state.map_ended_at is not None else end) - state.map_started_at
        if map_time > 0:
            rate = sent / map_time
            if state.phase == "map":
                eta = (len(state.cells) - done - counts["cancelled"]) / rate
    return RunTimes(state.phase, elapsed, eta, rate, state.retry_wait)


def rate_text(rate: float) -> str:
    """`3.2 batches/s`, or per minute when slower than one a second (a local model: 3/min)."""
    return f"{rate:.1f} batches/s" if rate >= 1 else f"{rate * 60:.1f} batches/min"


def times_texts(times: RunTimes) -> list[Text]:
    """The times line in each wording, widest first. A run that finished within 10 s says
    tenths, in the Runs screen's form (`took 0.2 s`: `took 0 s` said it took none)."""
    if times.elapsed is None:
        return [Text()]
    took = "took" if times.phase == "finished" else "elapsed"
    wait = []
    if times.retry_wait is not None:
        wait = [(f"  waiting {times.retry_wait:g} s (Retry-After)", "bold #ff9f1c")]
    shown = duration_text(times.elapsed) if took == "took" and times.elapsed < 10 else clock_text(times.elapsed)
    long = Text.assemble((f"{took} ", "dim"), shown, no_wrap=True, overflow="crop")
    short = long.copy()
    if times.phase == "map":
        eta = "—" if times.eta is None else clock_text(times.eta)
        long.append_text(Text.assemble(("  ETA ", "dim"), eta))
        short.append_text(Text.assemble(("  ETA ", "dim"), eta))
    if times.rate is not None:
        long.append_text(Text.assemble("  ", (rate_text(times.rate), "dim")))
    return [Text.assemble(long, *wait), Text.assemble(short, *wait), long, short]


class RunClock(Widget):
    """`elapsed 0:42  ETA 1:10  2.8 batches/s`, `took 2:15` once the run ended."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._texts = times_texts(RunTimes("idle", None, None, None, None))

    def show(self, state: RunState, now: float, counts: Counter[CellState] | None = None) -> None:
        self._texts = times_texts(run_times(state, now, counts))
        self.refresh()

    def render(self) -> Text:
        return fitting(self._texts, self.size.width)
