"""The answer's form and the prompt templates, end to end: the real CLI against a scripted
chat-completions server on 127.0.0.1, asserting on what the server received."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphrag_tui.engine import DEFAULT_TEMPLATES
from graphrag_tui.engine.prompts import (
    GENERAL_KNOWLEDGE_INSTRUCTION,
    MAP_INSTRUCTIONS,
    RATE_TEMPLATE,
    REDUCE_INSTRUCTIONS,
    Prompts,
    reduce_messages,
)
from tests.chat_server import Received, Reply, ScriptedChatServer, answer_all, map_reply, reduce_reply
from tests.cli_runner import clean_env, run_cli
from tests.stores import three_leaves
from tests.test_selection import RatingServer, walk_store

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config", "--no-history"]
SAMPLE = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
REDUCE_HEAD = REDUCE_INSTRUCTIONS.rsplit("\n", 1)[0]
REDUCE_FORMAT = REDUCE_INSTRUCTIONS.rsplit("\n", 1)[1]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def query(store: Path, server: ScriptedChatServer, *extra: str, question: str = QUESTION,
          env: dict[str, str] | None = None):
    return run_cli("query", str(store), question, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH,
                   "--json", *extra, env=env)


def sent(server: ScriptedChatServer, stage: str) -> list[list[dict[str, str]]]:
    return [r.json["messages"] for r in server.chat_requests() if r.stage == stage]


def test_without_options_the_prompts_are_the_built_in_ones_byte_for_byte(store: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        run = query(store, server)
    assert run.code == 0, run.stderr
    (reduce,) = sent(server, "reduce")
    assert reduce[0] == {"role": "system", "content": REDUCE_INSTRUCTIONS}
    assert all(m[0] == {"role": "system", "content": MAP_INSTRUCTIONS} for m in sent(server, "map"))
    assert run.json["prompts"] == {
        "map": DEFAULT_TEMPLATES["map"], "reduce": DEFAULT_TEMPLATES["reduce"], "rate": DEFAULT_TEMPLATES["rate"],
        "response_type": None, "general_knowledge": False, "answer_language": None, "directory": None,
    }


def test_response_type_language_and_general_knowledge_reach_the_reduce_prompt(store: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        run = query(store, server, "--response-type", "a bulleted list", "--answer-language", "French",
                    "--general-knowledge")
    assert run.code == 0, run.stderr
    (reduce,) = sent(server, "reduce")
    assert reduce[0]["content"] == (
        f"{REDUCE_HEAD}\n"
        "Target response length and format: a bulleted list\n"
        "Write the answer in French.\n"
        "The response may also include relevant real-world knowledge outside the dataset, but it must be "
        "explicitly annotated with a verification tag [LLM: verify]. For example:\n"
        '"This is an example sentence supported by real-world knowledge [LLM: verify]."\n'
        f"{REDUCE_FORMAT}"
    )
    assert reduce[1]["content"].startswith(f"User query: {QUESTION}\n\nSelected intermediate answers")
    # the Map prompts are not about the answer's form
    assert all(m[0]["content"] == MAP_INSTRUCTIONS for m in sent(server, "map"))
    prompts = run.json["prompts"]
    assert (prompts["response_type"], prompts["answer_language"], prompts["general_knowledge"]) == (
        "a bulleted list", "French", True)


def test_general_knowledge_alone_adds_graphrags_instruction_only(store: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        run = query(store, server, "--general-knowledge")
    assert run.code == 0, run.stderr
    (reduce,) = sent(server, "reduce")
    assert reduce[0]["content"] == f"{REDUCE_HEAD}\n{GENERAL_KNOWLEDGE_INSTRUCTION}\n{REDUCE_FORMAT}"
    assert "[LLM: verify]" in GENERAL_KNOWLEDGE_INSTRUCTION


def nothing_useful(request: Received) -> Reply:
    if request.stage == "reduce":
        return reduce_reply("Bridges are mostly funded by tolls and bonds [LLM: verify].")
    return map_reply("Nothing here.", 0)


def test_with_general_knowledge_a_run_whose_map_found_nothing_still_asks_reduce(store: Path) -> None:
    """As GraphRAG's allow_general_knowledge: the Reduce prompt, with no intermediate answer,
    is sent all the same, and its answer is the run's; without the option the run has no
    result and sends no Reduce."""
    with ScriptedChatServer(nothing_useful) as server:
        run = query(store, server, "--general-knowledge")
        (reduce,) = sent(server, "reduce")
        maps = len(sent(server, "map"))
        without = query(store, server)
        reduces = len(sent(server, "reduce"))
    assert (run.code, without.code) == (0, 0), run.stderr + without.stderr
    assert maps == 3 and reduces == 1
    assert reduce[0]["content"] == f"{REDUCE_HEAD}\n{GENERAL_KNOWLEDGE_INSTRUCTION}\n{REDUCE_FORMAT}"
    assert reduce[1]["content"] == reduce_messages(QUESTION, "", Prompts(general_knowledge=True))[1].content
    assert "Nothing here." not in reduce[1]["content"]
    assert (run.json["status"], run.json["answer"], run.json["detail"]) == (
        "completed", "Bridges are mostly funded by tolls and bonds [LLM: verify].",
        "no Map answer was useful: the answer is the model's own knowledge (--general-knowledge)")
    assert run.json["selected_map_answers"] == []
    assert (without.json["status"], without.json["answer"], without.json["detail"]) == (
        "no_results", None, "no Map answer was useful: every usefulness was 0")


@pytest.mark.skipif(not SAMPLE.exists(), reason="the bundled sample store is not built")
def test_the_chinese_sample_answer_is_in_the_question_language_or_the_one_named() -> None:
    question = "马帮运送普洱茶去了哪些地方？"
    with ScriptedChatServer(answer_all) as server:
        default = run_cli("query", str(SAMPLE), question, "--namespace", "tea-history-zh", "--base-url",
                          server.base_url, "--model", "m1", "--no-config", "--no-history", "--json")
        (reduce_default,) = sent(server, "reduce")
        named = run_cli("query", str(SAMPLE), question, "--namespace", "tea-history-zh", "--base-url",
                        server.base_url, "--model", "m1", "--no-config", "--no-history", "--json",
                        "--answer-language", "English")
        reduces = sent(server, "reduce")
    assert default.code == 0 and named.code == 0, default.stderr + named.stderr
    # by default nothing overrides the question's language: the prompt is the built-in one,
    # the question in Chinese, the Map texts the namespace's Chinese
    assert reduce_default[0]["content"] == REDUCE_INSTRUCTIONS
    assert reduce_default[1]["content"].startswith(f"User query: {question}\n")
    maps = sent(server, "map")
    assert maps and all(re.search("[\u4e00-\u9fff]", m[1]["content"].split("Community summaries:")[1]) for m in maps)
    # with --answer-language the Reduce prompt names it
    assert reduces[1][0]["content"] == f"{REDUCE_HEAD}\nWrite the answer in English.\n{REDUCE_FORMAT}"
    assert named.json["prompts"]["answer_language"] == "English"


def test_exported_prompts_give_back_identical_prompts(store: Path, tmp_path: Path) -> None:
    directory = tmp_path / "prompts"
    export = run_cli("prompts", "export", str(directory))
    assert export.code == 0, export.stderr
    assert export.stdout.splitlines() == [
        f"wrote {directory / 'map.txt'}", f"wrote {directory / 'reduce.txt'}", f"wrote {directory / 'rate.txt'}"]
    assert (directory / "map.txt").read_text(encoding="utf-8") == DEFAULT_TEMPLATES["map"] + "\n"
    assert (directory / "rate.txt").read_text(encoding="utf-8") == f"{RATE_TEMPLATE}\n=== user ===\n{{query}}\n"
    assert "{answer_form}" in (directory / "reduce.txt").read_text(encoding="utf-8")
    with ScriptedChatServer(answer_all) as server:
        built_in = query(store, server, "--response-type", "one sentence")
        first = [r.json["messages"] for r in server.chat_requests()]
        from_files = query(store, server, "--response-type", "one sentence", "--prompts", str(directory))
        second = [r.json["messages"] for r in server.chat_requests()][len(first):]
    assert built_in.code == from_files.code == 0, from_files.stderr
    assert sorted(map(str, first)) == sorted(map(str, second)) and len(first) == 4
    assert from_files.json["prompts"]["directory"] == str(directory)
    assert from_files.json["prompts"]["reduce"] == built_in.json["prompts"]["reduce"]
    # a second export never overwrites the files
    again = run_cli("prompts", "export", str(directory))
    assert (again.code, again.stdout) == (2, "")
    assert again.stderr == (f"graphrag-tui: error: prompts export: {directory / 'map.txt'} exists; "
                            "it is not overwritten (choose an empty directory)\n")


def test_dynamic_selection_rates_with_the_directorys_rate_template(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    exported, edited = tmp_path / "exported", tmp_path / "edited"
    assert run_cli("prompts", "export", str(exported)).code == 0
    edited.mkdir()
    rate = ("---Role---\nGrade the text for the question, 0 to 5.\n---Information---\n{description}\n---Question---\n"
            "{query}\n---Response format---\n{{\"reason\": \"...\", \"rating\": 0}}\n=== user ===\nQuestion: {query}")
    (edited / "rate.txt").write_text(rate + "\n", encoding="utf-8")
    flags = ["--base-url", "", "--model", "m", "--no-config", "--no-history", "--concurrency", "1", "--json",
             "--select", "dynamic"]
    runs = {}
    for name, extra in (("built-in", []), ("exported", ["--prompts", str(exported)]),
                        ("edited", ["--prompts", str(edited)])):
        with ScriptedChatServer(RatingServer()) as server:
            flags[1] = server.base_url
            runs[name] = (run_cli("query", str(store), QUESTION, *flags, *extra),
                          [r.json["messages"] for r in server.chat_requests() if r.stage == "rate"])
    for run, _ in runs.values():
        assert run.code == 0, run.stderr
        assert run.json["selection"]["selected"] == ["ns/a1x"]  # the rule rates alike whichever prompt asks
    built_in, exported_sent, edited_sent = (sent for _, sent in runs.values())
    text = "Marley's partner runs the firm. The ledger of the counting house is kept in ink."
    assert built_in[0] == [{"role": "system", "content": RATE_TEMPLATE.format(query=QUESTION, description=text)},
                           {"role": "user", "content": QUESTION}]
    assert exported_sent == built_in and len(built_in) == 6  # the exported rate.txt is the built-in prompt
    assert edited_sent[0] == [
        {"role": "system", "content": f"---Role---\nGrade the text for the question, 0 to 5.\n---Information---\n"
                                      f"{text}\n---Question---\n{QUESTION}\n---Response format---\n"
                                      '{"reason": "...", "rating": 0}'},
        {"role": "user", "content": f"Question: {QUESTION}"}]
    assert len(edited_sent) == 6
    recorded = runs["edited"][0].json["prompts"]
    assert (recorded["rate"], recorded["directory"], recorded["map"]) == (rate, str(edited), DEFAULT_TEMPLATES["map"])


def test_an_edited_template_is_sent_with_its_placeholders_filled(store: Path, tmp_path: Path) -> None:
    directory = tmp_path / "prompts"
    directory.mkdir()
    (directory / "reduce.txt").write_text(
        "Reduce stage. Answer as {response_type} in {language}; JSON like {{\"answer\": ...}}.\n"
        "=== user ===\nQ: {query}\n{context}\n", encoding="utf-8")
    (directory / "map.txt").write_text(
        "Map the summaries.\r\n[Community ID: ns/1 | x] {query}\r\n{context}\r\n", encoding="utf-8")
    with ScriptedChatServer(answer_all) as server:
        run = query(store, server, "--prompts", str(directory))
    assert run.code == 0, run.stderr
    (reduce,) = sent(server, "reduce")
    assert reduce[0] == {"role": "system", "content":
                         'Reduce stage. Answer as multiple paragraphs in the language of the question; '
                         'JSON like {"answer": ...}.'}
    assert reduce[1]["content"].startswith(f"Q: {QUESTION}\n[Usefulness: 80; Community IDs: ns/1]")
    # a template without the `=== user ===` line is one user message (CRLF read as LF)
    maps = sent(server, "map")
    assert len(maps) == run.json["batch_count"] == 2  # a shorter template: more communities per batch
    assert all(len(m) == 1 and m[0]["role"] == "user" for m in maps)
    prefix = f"Map the summaries.\n[Community ID: ns/1 | x] {QUESTION}\n[Community ID: ns/"
    assert all(m[0]["content"].startswith(prefix) for m in maps)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("map.txt", "{query} {contxt}", "unknown placeholder {contxt} (allowed: {query}, {context})"),
        ("map.txt", "Only {query}", "missing placeholder {context} (the template needs {query}, {context})"),
        ("reduce.txt", "{query}\n=== user ===\n{context} {response_type!r}",
         "placeholder {response_type!r} must be a plain name, like {response_type}"),
        ("reduce.txt", "{query} {context} {0}", "unknown placeholder {0} (allowed: {query}, {context}, "
         "{response_type}, {language}, {general_knowledge}, {answer_form})"),
        ("map.txt", "{query} {context} {", "Single '{' encountered in format string (write {{ and }} for literal braces)"),
        ("rate.txt", "{query} {context}", "unknown placeholder {context} (allowed: {query}, {description})"),
        ("rate.txt", "Rate it.\n=== user ===\n{query}",
         "missing placeholder {description} (the template needs {query}, {description})"),
        # each use is a copy of the question: 1.5 GB of prompt, then an internal error (MemoryError)
        pytest.param("map.txt", "{query}" * 140_000 + "{context}",
                     "{query} appears 140,000 times; a template may hold each placeholder at most 16 times",
                     id="query-140000-times"),
    ],
)
def test_a_bad_template_is_exit_2_naming_the_file_and_placeholder(
    store: Path, tmp_path: Path, name: str, text: str, message: str
) -> None:
    directory = tmp_path / "prompts"
    directory.mkdir()
    (directory / name).write_text(text, encoding="utf-8")
    with ScriptedChatServer(answer_all) as server:
        run = query(store, server, "--prompts", str(directory))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: {directory / name}: {message}\n"
    assert server.chat_requests() == []  # refused before any model call


def test_a_directory_without_templates_or_a_bad_file_is_one_line(store: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = run_cli("plan", str(store), QUESTION, "--no-config", "--prompts", str(tmp_path / "nowhere"))
    none = run_cli("plan", str(store), QUESTION, "--no-config", "--prompts", str(empty))
    (tmp_path / "bytes").mkdir()
    (tmp_path / "bytes" / "map.txt").write_bytes(b"{query} {context} \xff")
    binary = run_cli("plan", str(store), QUESTION, "--no-config", "--prompts", str(tmp_path / "bytes"))
    assert [r.code for r in (missing, none, binary)] == [2, 2, 2]
    assert missing.stderr == f"graphrag-tui: error: --prompts: {tmp_path / 'nowhere'} does not exist\n"
    assert none.stderr == (f"graphrag-tui: error: --prompts: {empty} holds no template (map.txt, reduce.txt, rate.txt); "
                           f"`graphrag-tui prompts export {empty}` writes the built-in ones there\n")
    assert binary.stderr == f"graphrag-tui: error: {tmp_path / 'bytes' / 'map.txt'} is not UTF-8 text (byte 18)\n"
    # a template that links to nothing: the built-in one silently stood in for it
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / "reduce.txt").write_text("{report_data}\n{response_type}\n{max_length}", encoding="utf-8")
    (tmp_path / "dangling" / "map.txt").symlink_to(tmp_path / "gone.txt")
    dangling = run_cli("plan", str(store), QUESTION, "--no-config", "--prompts", str(tmp_path / "dangling"))
    assert (dangling.code, dangling.stdout) == (2, "")
    assert dangling.stderr == f"graphrag-tui: error: {tmp_path / 'dangling' / 'map.txt'} is a symbolic link to nothing\n"


def test_bad_answer_form_values_are_exit_2(store: Path) -> None:
    empty = run_cli("plan", str(store), QUESTION, "--no-config", "--response-type", " ")
    control = run_cli("plan", str(store), QUESTION, "--no-config", "--answer-language", "Fr\x1bench")
    assert (empty.code, control.code) == (2, 2)
    assert empty.stderr == "graphrag-tui: error: --response-type must be one line of 1 to 200 characters, got ' '\n"
    assert control.stderr == ("graphrag-tui: error: --answer-language must be one line of 1 to 200 characters, "
                              "got 'Fr\\x1bench'\n")


def test_config_and_environment_give_the_answer_form_under_the_flags(store: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[prompts]\nresponse_type = "a table"\nanswer_language = "German"\n', encoding="utf-8")
    base = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-history", "--json"]
    env = clean_env(GRAPHRAG_TUI_ANSWER_LANGUAGE="Italian")
    with ScriptedChatServer(answer_all) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *base,
                      "--config", str(config), env=env)
        flagged = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *base,
                          "--config", str(config), "--response-type", "one line", env=env)
        reduces = sent(server, "reduce")
    assert run.code == flagged.code == 0, run.stderr + flagged.stderr
    assert reduces[0][0]["content"] == (f"{REDUCE_HEAD}\nTarget response length and format: a table\n"
                                        f"Write the answer in Italian.\n{REDUCE_FORMAT}")
    assert reduces[1][0]["content"] == (f"{REDUCE_HEAD}\nTarget response length and format: one line\n"
                                        f"Write the answer in Italian.\n{REDUCE_FORMAT}")
    bad = run_cli("plan", str(store), QUESTION, "--config", str(config), env=clean_env(GRAPHRAG_TUI_GENERAL_KNOWLEDGE="maybe"))
    assert bad.code == 2
    assert bad.stderr == "graphrag-tui: error: GRAPHRAG_TUI_GENERAL_KNOWLEDGE must be true or false, got 'maybe'\n"


def test_a_rerun_sends_the_recorded_prompts(store: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    flags = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config", "--history", str(history)]
    fail_once = {"n": 0}

    def script(request: Received) -> Reply:
        if request.stage == "map" and "ns/2 |" in request.prompt:
            fail_once["n"] += 1
            if fail_once["n"] <= 2:
                return Reply("overloaded", status=500)
        return answer_all(request)

    with ScriptedChatServer(script) as server:
        first = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *flags,
                        "--json", "--response-type", "two sentences")
        run_id = first.json["run_id"]
        shown = run_cli("runs", "show", run_id, "--json", "--no-config", "--history", str(history))
        before = len(server.chat_requests())
        rerun = run_cli("rerun", run_id, "--json", "--no-config", "--history", str(history))
        resent = server.chat_requests()[before:]
    assert first.code == 0 and first.json["status"] == "partial", first.stderr
    assert shown.json["prompts"] == first.json["prompts"]
    assert shown.json["prompts"]["response_type"] == "two sentences"
    assert rerun.code == 0, rerun.stderr
    assert [r.stage for r in resent] == ["map", "reduce"]
    assert "Target response length and format: two sentences" in resent[1].json["messages"][0]["content"]
    assert rerun.json["prompts"] == first.json["prompts"]
