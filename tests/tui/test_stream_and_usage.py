"""The app against a scripted server that streams the Reduce answer and reports usage: the
answer appears in the Answer tab in several updates before the run finishes, the running
token totals (real against estimated) and the cost show live, and none of it lays out the
screen while the run goes (issue 12)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from textual.widgets import Markdown

from graphrag_tui.engine import Prices
from tests.chat_server import Reply, ScriptedChatServer, completion, streamed, usage
from tests.stores import three_leaves

from .conftest import Scripted, ask, make_app, text_of, wait_finished, wait_until

SIZE = (140, 42)
PIECES = ['{"answer": "The port', " authority", " funds", ' the bridge."}']


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def map_reply_with_usage(answer: str, usefulness: int, prompt: int, completion_tokens: int) -> Reply:
    body = json.dumps({"answer": answer, "usefulness": usefulness})
    return Reply(completion(body, usage=usage(prompt, completion_tokens)))


async def test_the_streamed_answer_reaches_the_answer_tab_in_several_updates_before_the_run_ends(store: Path) -> None:
    gates = [threading.Event() for _ in PIECES]
    script = Scripted(
        {
            "ns/1": map_reply_with_usage("The port authority funds the bridge.", 80, 1000, 40),
            "ns/2": map_reply_with_usage("", 0, 2000, 5),
            "ns/3": map_reply_with_usage("", 0, 3000, 5),
        },
        reduce=streamed(PIECES, usage=usage(500, 10), gates=gates),
    )
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, repaint_interval=0.05,
                       prices={"m1": Prices(input=2.0, output=8.0)})
        try:
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot)
                shown: list[str] = []
                for index, expected in enumerate(["The port", "The port authority", "The port authority funds"]):
                    gates[index].set()
                    await wait_until(pilot, lambda e=expected: text_of(pilot, "#answer-stream") == e,
                                     what=f"the answer to show {expected!r}")
                    assert app.run_state.running  # before the run finishes
                    shown.append(text_of(pilot, "#answer-stream"))
                assert shown == ["The port", "The port authority", "The port authority funds"]
                # running totals, live: the three Map calls so far, real against estimated
                estimate = sum(b.prompt_tokens for b in app.run_session.search.batches)  # type: ignore[union-attr]
                assert text_of(pilot, "#batch-counts").endswith(
                    f"tokens 6,000 in (est. {estimate:,}) · 50 out · $0.0124"
                )
                gates[3].set()
                await wait_finished(pilot)
                result = app.run_state.result
                assert result is not None and result.status == "completed"
                assert result.answer == "The port authority funds the bridge."
                assert app.screen.query_one("#answer-text", Markdown).source == "The port authority funds the bridge."
                assert text_of(pilot, "#answer-stream") == ""
                assert result.usage_total is not None and result.usage_total.prompt_tokens == 6500
                reduce_estimate = result.reduce.prompt_tokens or 0
                assert text_of(pilot, "#answer-meta").splitlines()[1] == (
                    f"tokens: 6,500 prompt (estimated {estimate + reduce_estimate:,}), 60 completion · cost $0.0135"
                )
        finally:
            for gate in gates:
                gate.set()


async def test_streamed_pieces_are_redraws_not_layouts(store: Path) -> None:
    """Each piece of the answer redraws the fixed-size view: the screen is not laid out again."""
    gates = [threading.Event() for _ in PIECES]
    script = Scripted(
        {"ns/1": map_reply_with_usage("The port authority funds the bridge.", 80, 10, 1),
         "ns/2": map_reply_with_usage("", 0, 10, 1), "ns/3": map_reply_with_usage("", 0, 10, 1)},
        reduce=streamed(PIECES, gates=gates),
    )
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, repaint_interval=0.05)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot)
                gates[0].set()
                await wait_until(pilot, lambda: text_of(pilot, "#answer-stream") == "The port", what="the first piece")
                await pilot.pause(0.2)
                layouts: list[object] = []
                original = app.screen._refresh_layout

                def spy(*args: object, **kwargs: object) -> None:
                    layouts.append(args)
                    original(*args, **kwargs)  # type: ignore[arg-type]

                app.screen._refresh_layout = spy  # type: ignore[method-assign]
                view = app.screen.query_one("#answer-stream")
                region = view.region
                for index, expected in ((1, "The port authority"), (2, "The port authority funds")):
                    gates[index].set()
                    await wait_until(pilot, lambda e=expected: text_of(pilot, "#answer-stream") == e, what=expected)
                assert view.region == region
                assert layouts == []
                gates[3].set()
                await wait_finished(pilot)
        finally:
            for gate in gates:
                gate.set()


async def test_the_running_totals_show_live_in_the_counts_line_at_80x24(store: Path) -> None:
    """The Batches panel's counts line is 42 cells at 80x24: the totals were dropped there
    while a run went (a QA probe); they show in their short form beside the counts' glyphs."""
    held = threading.Event()
    slow = map_reply_with_usage("", 0, 30_000, 600)
    script = Scripted({"ns/1": map_reply_with_usage("The port authority funds the bridge.", 80, 10_000, 400),
                       "ns/2": map_reply_with_usage("", 0, 20_000, 5_000), "ns/3": Reply(slow.body, gate=held)})
    with ScriptedChatServer(script) as server:
        app = make_app(store, server.base_url, repaint_interval=0.05, prices={"m1": Prices(input=2.0, output=8.0)})
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await ask(pilot)
                await wait_until(pilot, lambda: text_of(pilot, "#batch-counts") == "·0 ▸1 ■2 ✗0  35.4k tok · $0.1032",
                                 what="the totals of the two Map calls that answered")
                assert app.run_state.running
        finally:
            held.set()
