"""`query` in text mode and `-v` name the failed batches (index, error kind, message, one line
each, capped), and a note says only what is known: no "answers" for a model that never did."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.chat_server import Reply, Scripted, ScriptedChatServer, map_reply
from tests.cli_runner import run_cli
from tests.stores import PAD, build_store

QUESTION = "Who funds the bridge?"
BATCHES = ("--no-config", "--no-shuffle", "--map-budget", "330", "--map-reserve", "0", "--model", "m1")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Twelve communities, each a Map batch of its own at --map-budget 330."""
    return build_store(tmp_path / "twelve.db",
                       [{"id": f"ns/{n:02}", "summary_content": f"Topic {n}. " + PAD} for n in range(12)])


def all_but_one_fail() -> Scripted:
    """ns/00 answers; every other batch gets HTTP 500 twice."""
    fail = [Reply("overloaded", status=500), Reply("overloaded", status=500)]
    return Scripted({"ns/00": map_reply("The bridge.", 80), **{f"ns/{n:02}": list(fail) for n in range(1, 12)}})


def test_text_output_lists_each_failed_batch_capped(store: Path) -> None:
    with ScriptedChatServer(all_but_one_fail()) as server:
        run = run_cli("query", str(store), QUESTION, *BATCHES, "--base-url", server.base_url)
        port = server.base_url.split(":")[2].split("/")[0]
    assert run.code == 0
    lines = run.stdout.splitlines()
    assert lines[-15:-1] == [
        "12 summaries, 12 Map batches (11 failed), 1 answers selected for Reduce, seed None",
        "failed batches:",
        *[f"  batch {n}: http: HTTP 500: overloaded" for n in range(1, 11)],
        "  … and 1 more",
        "communities: ns/00",
    ]
    assert re.fullmatch(r"run [0-9a-z]+", lines[-1])  # the run history's id of it comes last
    assert run.stderr == f"note: m1 @ 127.0.0.1:{port} answered\n"


def test_verbose_logs_list_the_failed_batches_too(store: Path) -> None:
    with ScriptedChatServer(all_but_one_fail()) as server:
        run = run_cli("query", str(store), QUESTION, *BATCHES, "--base-url", server.base_url, "--json", "-v")
    assert run.code == 0 and run.json["failed_batch_count"] == 11
    logged = [line for line in run.stderr.splitlines() if ": failed batch " in line or "… and" in line]
    assert [line.split(": failed ", 1)[1].split(":")[0] for line in logged[:10]] == [f"batch {n}" for n in range(1, 11)]
    assert logged[0] == "graphrag_tui.engine: failed batch 1: http: HTTP 500: overloaded"
    assert logged[10] == "graphrag_tui.engine: failed … and 1 more"


def test_a_dead_endpoint_gets_no_note_that_it_answers(store: Path) -> None:
    run = run_cli("query", str(store), QUESTION, *BATCHES, "--base-url", "http://127.0.0.1:1/v1")
    assert run.code == 1
    assert run.stderr == ""  # no "note: m1 @ 127.0.0.1:1 answers" before the error
    lines = run.stdout.splitlines()
    assert lines[0] == "status: failed"
    assert lines[1].startswith("error: 12 of 12 Map batches failed: ConnectError")
    assert lines[-12].startswith("  batch 0: transport: ConnectError: ")
    assert lines[-2] == "  … and 2 more"
    assert re.fullmatch(r"run [0-9a-z]+", lines[-1])
