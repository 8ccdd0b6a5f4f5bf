"""Snapshots of the claim view (the passage highlighted, the claims beside it) at 120×40
and 80×24. Update with `pytest tests/tui/test_provenance_snapshots.py --snapshot-update`
and look at the SVGs before committing."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from graphrag_tui.tui.messages import OpenRecord
from graphrag_tui.tui.screens.claim import ClaimScreen
from tests.stores import provenance_store

from .conftest import make_app, wait_until

NEVER = 3600.0


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return provenance_store(tmp_path / "provenance.db")


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_claim_view(snap_compare, store: Path, size: tuple[int, int]) -> None:
    app = make_app(store, repaint_interval=NEVER)

    async def run_before(pilot: Pilot) -> None:
        await wait_until(pilot, lambda: bool(pilot.app.screen.query("#citations")), what="the main screen")
        pilot.app.post_message(OpenRecord("claim", "c1"))
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ClaimScreen) and pilot.app.screen.loaded,
                         what="the claim view")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
