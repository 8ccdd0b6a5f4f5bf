"""The answer's form in the app: the setup form's Response type, Language and General
knowledge fields reach the Reduce prompt the scripted server receives; the templates the
app was started with (--prompts DIR) are the ones its runs send."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input, Static

from graphrag_tui.engine.prompts import GENERAL_KNOWLEDGE_INSTRUCTION, REDUCE_INSTRUCTIONS
from graphrag_tui.prompt_files import load_prompts
from tests.chat_server import ScriptedChatServer, answer_all
from tests.stores import three_leaves
from tests.test_prompts_e2e import nothing_useful

from .conftest import ask, make_app, wait_finished

SIZE = (120, 40)
REDUCE_HEAD, REDUCE_FORMAT = REDUCE_INSTRUCTIONS.rsplit("\n", 1)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def reduce_system(server: ScriptedChatServer) -> str:
    (reduce,) = [r for r in server.chat_requests() if r.stage == "reduce"]
    return reduce.json["messages"][0]["content"]


async def test_the_form_fields_reach_the_reduce_prompt(store: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            app.screen.query_one("#opt-response_type", Input).value = "a haiku"
            app.screen.query_one("#opt-answer_language", Input).value = "Japanese"
            app.screen.query_one("#general-knowledge", Checkbox).value = True
            await ask(pilot)
            await wait_finished(pilot)
            assert app.run_state.result.status == "completed"
            assert app.run_state.result.prompts.response_type == "a haiku"
        assert reduce_system(server) == (
            f"{REDUCE_HEAD}\nTarget response length and format: a haiku\nWrite the answer in Japanese.\n"
            f"{GENERAL_KNOWLEDGE_INSTRUCTION}\n{REDUCE_FORMAT}"
        )


async def test_with_general_knowledge_a_map_that_found_nothing_still_gets_an_answer_in_the_app(store: Path) -> None:
    with ScriptedChatServer(nothing_useful) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            app.screen.query_one("#general-knowledge", Checkbox).value = True
            await ask(pilot)
            await wait_finished(pilot)
            result = app.run_state.result
            assert (result.status, result.answer) == (
                "completed", "Bridges are mostly funded by tolls and bonds [LLM: verify].")
            meta = str(app.screen.query_one("#answer-meta", Static).render())
            assert ("no Map answer was useful: the answer is the model's own knowledge (the General knowledge "
                    "field)") in meta
            assert "0 answers selected" in meta
        assert reduce_system(server) == f"{REDUCE_HEAD}\n{GENERAL_KNOWLEDGE_INSTRUCTION}\n{REDUCE_FORMAT}"


async def test_empty_fields_send_the_built_in_prompt_and_a_bad_value_is_shown_not_run(store: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            field = app.screen.query_one("#opt-answer_language", Input)
            field.value = "Fr\x1bench"
            assert field.value == "French"  # (a field keeps no control characters)
            field.value = "F" * 201
            await ask(pilot)
            await pilot.pause()
            error = app.screen.query_one("#err-answer_language", Static)
            assert error.display and "must be one line of 1 to 200 characters" in str(error.render())
            assert server.chat_requests() == []
            field.value = ""
            await ask(pilot)
            await wait_finished(pilot)
        assert reduce_system(server) == REDUCE_INSTRUCTIONS


async def test_the_apps_runs_send_the_templates_it_was_started_with(store: Path, tmp_path: Path) -> None:
    directory = tmp_path / "prompts"
    directory.mkdir()
    (directory / "reduce.txt").write_text(
        "Reduce stage, as {response_type}.\n=== user ===\n{query}\n{context}\n", encoding="utf-8")
    prompts = load_prompts(directory, response_type="two lines")
    with ScriptedChatServer(answer_all) as server:
        app = make_app(store, server.base_url, prompts=prompts)
        async with app.run_test(size=SIZE) as pilot:
            assert app.screen.query_one("#opt-response_type", Input).value == "two lines"
            await ask(pilot)
            await wait_finished(pilot)
        assert reduce_system(server) == "Reduce stage, as two lines."
