"""The app with the REAL local LLM (SmolLM2-135M on llama.cpp, CPU): picked in the model
picker, it starts on the first run, answers a question on the sample store, the Map batches
finish one by one on screen, and its server is gone when the app exits. Skipped when the
local LLM is not installed. About 30-40 s on 2 cores."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from pathlib import Path

import pytest
from textual.css.query import NoMatches

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.models import local_llm
from graphrag_tui.models.factory import ModelSettings
from graphrag_tui.tui.app import AppSettings, GraphRAGApp

from .conftest import ask, text_of, wait_until

pytestmark = pytest.mark.skipif(
    not local_llm.availability().installed, reason=f"the local LLM is not installed: {local_llm.INSTALL_COMMANDS}"
)

SIZE = (140, 42)
SAMPLE_STORE = Path(__file__).resolve().parents[2] / "sample_db" / "sample.db"
#: Level 3 of harbor-city: 4 summaries; with a Map budget of 1200 (reserve capped to 300 for
#: the local model) they make 4 Map batches of 430-660 tokens, each a few seconds on a CPU.
LEVEL = 3
MAP_BUDGET = 1200


async def test_the_app_runs_the_local_llm_and_batches_finish_one_by_one() -> None:
    app = GraphRAGApp(
        AppSettings(
            store_path=SAMPLE_STORE,
            namespace="harbor-city",
            level=LEVEL,
            options=SearchOptions(map_budget=MAP_BUDGET),
            seed=1,
            model=ModelSettings(timeout=120),
        ),
        environ={},
        repaint_interval=0.1,
    )
    succeeded: list[int] = []  # at each repaint
    statuses: list[str] = []
    repaint = app.repaint

    def recording_repaint() -> None:
        repaint()
        succeeded.append(app.run_state.count("succeeded"))
        with contextlib.suppress(NoMatches):  # a last tick while the app shuts down
            statuses.append(text_of(app, "#model-status"))

    app.repaint = recording_repaint  # type: ignore[method-assign]  # the timed repaint calls this
    pid: int | None = None
    began = time.monotonic()
    async with app.run_test(size=SIZE) as pilot:
        assert app.model_kind == "extractive"
        app.screen.query_one("#model").focus()
        await pilot.press("enter", "down", "enter")  # the picker: Local LLM
        await wait_until(pilot, lambda: app.model_kind == "local", what="the local model chosen")
        assert text_of(pilot, "#model-status") == "llama.cpp server: not started (starts on the first run)"

        await ask(pilot, "What are the main themes of the harbor city?")
        while app.run_state.phase != "finished":
            assert time.monotonic() - began < 240, f"still {app.run_state.phase} after 240 s"
            server = getattr(app.models.model, "server", None)
            if pid is None and server is not None:
                pid = server.pid
            await pilot.pause(0.1)
        app.repaint()
        await pilot.pause()
        elapsed = time.monotonic() - began

        result = app.run_state.result
        assert result is not None and result.status in ("completed", "partial", "no_results"), result
        total = result.batch_count
        assert total == len(app.run_state.plan.batches) >= 2
        assert app.run_state.plan.options.concurrency == 1  # the local default
        assert app.run_state.plan.options.map_reserve == MAP_BUDGET // 4  # a default reserve, capped
        # The batches finished one by one: never more than one between two repaints, every
        # count from 0 to the total seen on the way.
        assert all(0 <= b - a <= 1 for a, b in itertools.pairwise(succeeded)), succeeded
        assert succeeded[-1] == total - result.failed_batch_count
        assert set(range(succeeded[-1] + 1)) <= set(succeeded), succeeded
        assert "llama.cpp server: starting…" in statuses
        assert statuses[-1] == "llama.cpp server: ready (context 8192 tokens per slot)"
        assert pid is not None and app.models.model.server.is_running  # type: ignore[union-attr]
        print(f"local LLM app run: {total} batches, {result.status}, {elapsed:.1f} s")

    # The app exited: its server is stopped and reaped.
    assert not app.models.model.server.is_running  # type: ignore[union-attr]
    assert not os.path.exists(f"/proc/{pid}")


def local_server_children() -> list[int]:
    """Our child processes that run the local LLM's server."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"graphrag_tui.models.local_server" in cmdline:
            found.append(int(entry))
    return found


async def test_quitting_while_the_local_llm_starts_stops_its_server() -> None:
    app = GraphRAGApp(
        AppSettings(
            store_path=SAMPLE_STORE, namespace="harbor-city", level=LEVEL, options=SearchOptions(map_budget=MAP_BUDGET)
        ),
        environ={},
        repaint_interval=0.1,
    )
    async with app.run_test(size=SIZE) as pilot:
        app.setup_form.select_model("local")
        await wait_until(pilot, lambda: app.model_kind == "local", what="the local model chosen")
        await ask(pilot)
        await wait_until(pilot, lambda: text_of(app, "#model-status").endswith("starting…"), what="starting")
        await wait_until(pilot, lambda: bool(local_server_children()), what="the server process")
        # (normally still starting: a quit while it runs must stop it as well)
    assert local_server_children() == []
