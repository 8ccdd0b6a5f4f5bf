"""Following a run at a glance: a glyph per batch state (also under NO_COLOR), a counts line
that never loses a count, elapsed time and ETA, and a header that always names the model and
the phase (tui/widgets/batch_grid.py, batch_status.py, status_line.py)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from graphrag_tui.engine import Cost, Usage
from graphrag_tui.tui.run_state import BatchCell, RunState
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from graphrag_tui.tui.widgets.batch_status import (
    BatchCounts,
    counts_texts,
    fitting,
    run_times,
    times_texts,
    token_count_text,
    usage_texts,
)
from graphrag_tui.tui.widgets.status_line import Header
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, screen_text, text_of, wait_finished, wait_until


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def cells(*states: str, usefulness: float = 50) -> list[BatchCell]:
    return [BatchCell(state=s, usefulness=usefulness if s == "succeeded" else None) for s in states]  # type: ignore[arg-type]


# -- the grid's glyphs ----------------------------------------------------------------------------


class GridHost(App[None]):
    CSS = "BatchGrid { width: 40; height: 3; }"

    def compose(self) -> ComposeResult:
        yield BatchGrid()


async def test_each_state_has_its_own_glyph_and_a_useless_answer_its_own_too() -> None:
    app = GridHost()
    async with app.run_test(size=(60, 10)) as pilot:
        grid = app.query_one(BatchGrid)
        grid.set_cells([*cells("queued", "running", "retrying", "succeeded", "failed", "cancelled"),
                        BatchCell(state="succeeded", usefulness=0)])
        await pilot.pause()
        assert grid.render_line(0).text == "· ▸ ↻ ■ ✗ ⊘ □ "
        grid.set_cells([])
        assert grid.render_line(1).text == " " * 40  # blank rows have a style (NO_COLOR's filter needs one)


# -- the counts line ------------------------------------------------------------------------------


def test_the_counts_line_abbreviates_to_fit_and_never_loses_a_count() -> None:
    counts = Counter({"queued": 1926, "running": 4, "retrying": 1, "succeeded": 48, "failed": 21})
    long, short, glyphs = (t.plain for t in counts_texts(counts))  # type: ignore[arg-type]
    assert long == "· queued 1926  ▸ running 4  ↻ retrying 1  ■ succeeded 48  ✗ failed 21"
    assert short == "· q 1926  ▸ run 4  ↻ retry 1  ■ ok 48  ✗ fail 21"
    assert glyphs == "·1926 ▸4 ↻1 ■48 ✗21"
    texts = counts_texts(counts)  # type: ignore[arg-type]
    assert (len(long), len(short)) == (69, 48)
    assert [fitting(texts, width).plain for width in (120, 69, 68, 48, 47)] == [long, long, short, short, glyphs]
    # Cancelled is named only once a batch is cancelled; queued, running, ok and failed always.
    assert counts_texts(Counter({"succeeded": 2, "cancelled": 1}))[1].plain == (  # type: ignore[arg-type]
        "· q 0  ▸ run 0  ■ ok 2  ✗ fail 0  ⊘ cancel 1"
    )


class CountsHost(App[None]):
    def compose(self) -> ComposeResult:
        yield BatchCounts()


async def test_the_running_totals_fit_the_counts_line_at_80_and_at_120_columns() -> None:
    """At 80x24 and at 120x40 with the form open the counts line is 42 and 44 cells: the
    totals were dropped there, so no token showed while a run went (a QA probe). They
    shorten to `39.9k tok · $0.0418`, then lose the cost, then go; a count never does."""
    state = RunState(usage_total=Usage(prompt_tokens=38_000, completion_tokens=1_900, total_tokens=39_900),
                     estimated_prompt_tokens=31_579, cost=Cost(input=0.038, output=0.0038, cached=0, total=0.0418))
    app = CountsHost()
    async with app.run_test(size=(60, 3)) as pilot:
        line = app.query_one(BatchCounts)
        line.show(Counter({"running": 2, "succeeded": 33}), usage_texts(state))  # type: ignore[arg-type]
        shown = []
        for width in (45, 44, 42, 30, 20):
            line.styles.width = width
            await pilot.pause()
            shown.append(str(line.render()))
    assert shown == [
        "·0 ▸2 ■33 ✗0  38,000 in · 1,900 out · $0.0418",
        "·0 ▸2 ■33 ✗0  39.9k tok · $0.0418", "·0 ▸2 ■33 ✗0  39.9k tok · $0.0418",
        "·0 ▸2 ■33 ✗0  39.9k tok", "·0 ▸2 ■33 ✗0",
    ]
    small, large = (RunState(usage_total=Usage(total_tokens=n)) for n in (950, 4_560_000))
    assert [usage_texts(small)[-1].plain, usage_texts(large)[-1].plain] == ["950 tok", "4.6M tok"]
    # (a count that rounds to 1,000 of a unit is 1.0 of the next; past billions, whole billions: a probe saw
    # `1000.0k` and `27600.0M`)
    counts = [999, 999_949, 999_950, 999_999, 27_600_000_000, 1_234_567_000_000]
    assert [token_count_text(c) for c in counts] == ["999", "999.9k", "1.0M", "1.0M", "27.6B", "1,235B"]


# -- elapsed time and ETA ------------------------------------------------------------------------


def test_a_time_or_score_that_is_no_number_is_drawn_without_a_crash() -> None:
    """A damaged history's attempt of Infinity seconds, or a score of -1000 or 1e6, crashed
    the app (OverflowError, IndexError) when a run opened. The history refuses them now;
    the views stay safe for any source."""
    from graphrag_tui.tui.widgets.batch_status import clock_text
    from graphrag_tui.tui.widgets.scores_panel import histogram

    assert [clock_text(s) for s in (float("inf"), float("nan"), -5.0, 65.4)] == ["—", "—", "0 s", "1:05"]
    bars = histogram([-1000, 1e6, float("nan"), float("inf"), 50, 5e-324]).plain.splitlines()
    # (5e-324 is above 0, an answer drawn as useful: it was counted among the 0s)
    assert (bars[0], bars[5], bars[-2], bars[-1]) == ("91-100 " + "█" * 24 + " 1", "41-50  " + "█" * 24 + " 1",
                                                      " 1-10  " + "█" * 24 + " 1", "     0 " + "█" * 24 + " 1")


def test_elapsed_time_and_an_eta_from_the_finished_batches_rate() -> None:
    state = RunState(phase="map", started_at=100.0, map_started_at=101.0)
    state.cells = cells(*["succeeded"] * 4, "failed", *["running"] * 2, *["queued"] * 13)
    times = run_times(state, now=111.0)  # 5 finished in 10 s of Map: 15 left take 30 s
    assert (times.elapsed, times.eta, times.rate) == (11.0, 30.0, 0.5)
    assert [t.plain for t in times_texts(times)] == [
        "elapsed 11 s  ETA 30 s  30.0 batches/min", "elapsed 11 s  ETA 30 s",
        "elapsed 11 s  ETA 30 s  30.0 batches/min", "elapsed 11 s  ETA 30 s",
    ]
    state.cells = cells(*["succeeded"] * 1000, *["queued"] * 3000)
    assert times_texts(run_times(state, now=201.0))[0].plain == "elapsed 1:41  ETA 5:00  10.0 batches/s"
    assert times_texts(run_times(RunState(phase="map", started_at=0.0, map_started_at=0.0), now=5.0))[1].plain == (
        "elapsed 5 s  ETA —"  # nothing finished yet: no rate to go by
    )
    state.retry_wait = 2.5
    assert times_texts(run_times(state, now=201.0))[1].plain == "elapsed 1:41  ETA 5:00  waiting 2.5 s (Retry-After)"
    state.retry_wait, state.map_ended_at = None, 201.0  # Map ended, Reduce took the rest
    state.phase, state.finished_at = "finished", 3861.0  # the clock stops at the end
    assert times_texts(run_times(state, now=9999.0))[0].plain == "took 1:02:41  10.0 batches/s"


async def test_the_clock_and_counts_follow_a_real_run(store: Path) -> None:
    gate = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=gate)
    now = [0.0]
    with ScriptedChatServer(Scripted({"ns/1": map_reply("Bridge funds.", 90), "ns/2": held, "ns/3": held})) as server:
        app = make_app(store, server.base_url, repaint_interval=3600)
        app.clock = lambda: now[0]
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: len(server.chat_requests()) == 3
                                 and app.run_state.cells[0].state == "succeeded", what="two held requests")
                now[0] = 4.0
                app.repaint()
                await pilot.pause()
                assert text_of(pilot, "#run-clock") == "elapsed 4 s  ETA 8 s  15.0 batches/min"
                assert text_of(pilot, "#batch-counts") == "· q 0  ▸ run 2  ■ ok 1  ✗ fail 0"
                assert "■ ▸ ▸" in screen_text(app)
                gate.set()
                now[0] = 6.0
                await wait_finished(pilot)
                assert text_of(pilot, "#run-clock") == "took 6.0 s  30.0 batches/min"
        finally:
            gate.set()


# -- NO_COLOR ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (140, 42)])
async def test_the_app_starts_and_runs_under_no_color(store: Path, monkeypatch: pytest.MonkeyPatch,
                                                      size: tuple[int, int]) -> None:
    """NO_COLOR=1 used to crash the app at start: the grid drew a segment with no style."""
    monkeypatch.setenv("NO_COLOR", "1")
    script = Scripted({"ns/1": map_reply("Bridge funds.", 90), "ns/2": map_reply("", 0),
                       "ns/3": Reply(completion("not json"))})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url)
        assert app.no_color
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            assert "No batches yet" in screen_text(app)
            await ask(pilot)
            await wait_finished(pilot)
            assert app.run_state.result.status == "partial"
            assert "■ □ ✗" in screen_text(app)  # the states read without colour


# -- the header ---------------------------------------------------------------------------------


HEADER = Header("/home/analyst/graphrag/stores/harbour-city.db", "harbour-city", "leaf", "extractive, offline: not an LLM",
                "map")


@pytest.mark.parametrize(("width", "shown"), [
    (160, " graphrag-tui   store /home/analyst/graphrag/stores/harbour-city.db  namespace harbour-city  level leaf"
          "  model extractive, offline: not an LLM  · map"),
    (120, " graphrag-tui   store …harbour-city.db  namespace harbour-city  level leaf"
          "  model extractive, offline: not an LLM  · map"),
    (100, " graphrag-tui …/stores/harbour-city.db · harbour-city · leaf · extractive, offline: not an LLM · map"),
    (80, " graphrag-tui …our-city.db · harbour-city · leaf · extractive, offline: n… · map"),
])
def test_the_header_shortens_the_store_from_the_left_and_always_names_model_and_phase(width: int, shown: str) -> None:
    text: Text = HEADER.text(width)
    assert text.plain == shown
    assert text.cell_len <= width


@pytest.mark.parametrize(("header", "width", "shown"), [
    # a long namespace at 80 columns: the store goes (the phase was cropped off)
    (Header("/x/stores/carol.db", "msgraphrag-v3-christmas-carol", "leaf", "gpt-4o-mini @ api.openai.com", "finished"),
     80, " graphrag-tui msgraphrag-v3-christmas-carol · leaf · gpt-4o-mini @ a… · finished"),
    (Header("/x/stores/carol.db", "msgraphrag-v3-christmas-carol", "leaf", "gpt-4o-mini @ api.openai.com", "finished"),
     60, " graphrag-tui msgraphrag-v3-ch… · leaf · gpt-4o-… · finished"),
    (Header("/x/sample_db/sample.db", "harbor-city", "leaf", "model-a @ 127.0.0.1:5555", "finished"),
     60, " graphrag-tui harbor-city · leaf · model-a @ 127… · finished"),
])
def test_when_nothing_else_fits_the_store_goes_and_then_the_namespace_is_cut(header: Header, width: int,
                                                                            shown: str) -> None:
    text: Text = header.text(width)
    assert (text.plain, text.cell_len) == (shown, width)
