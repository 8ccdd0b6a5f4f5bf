"""--graphrag-settings: a GraphRAG project's settings.yaml in its 1.x, 2.x and 3.x layouts,
its ${VAR} from the environment or the project's .env; end to end against a scripted
chat-completions server on 127.0.0.1 (what the server received), and parsed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from graphrag_tui.graphrag_settings import DynamicSelection, GlobalSearchDefaults, load_project
from graphrag_tui.session.options import Setting, SettingsResolver
from tests.chat_server import ScriptedChatServer, answer_all
from tests.cli_runner import clean_env, run_cli
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
KEY = "sk-project-secret-0042"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def project(tmp_path: Path, settings: str, dotenv: str | None = None) -> Path:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    (root / "settings.yaml").write_text(settings, encoding="utf-8")
    if dotenv is not None:
        (root / ".env").write_text(dotenv, encoding="utf-8")
    return root / "settings.yaml"


V2 = """
models:
  default_chat_model:
    type: openai_chat
    api_key: ${GRAPHRAG_API_KEY}
    model: ${CHAT_MODEL}
    api_base: BASE
    model_supports_json: true
    concurrent_requests: 25
    requests_per_minute: 600
    tokens_per_minute: auto
  default_embedding_model:
    type: openai_embedding
    model: text-embedding-3-small
input:
  type: file
global_search:
  chat_model_id: default_chat_model
  map_prompt: "prompts/global_search_map_system_prompt.txt"
  data_max_tokens: 9000
  map_max_length: 300
  reduce_max_length: 700
  max_context_tokens: 400
  dynamic_search_threshold: 2
  dynamic_search_keep_parent: true
  dynamic_search_num_repeats: 3
  dynamic_search_max_level: 4
"""

V3 = """
completion_models:
  default_completion_model:
    model_provider: openai
    model: m3
    auth_method: api_key
    api_key: ${MY_KEY}
    api_base: BASE
    rate_limit:
      type: sliding_window
      period_in_seconds: 30
      requests_per_period: 100
      tokens_per_period: 50000
    retry:
      type: exponential_backoff
embedding_models:
  default_embedding_model:
    model_provider: openai
    model: text-embedding-3-large
global_search:
  completion_model_id: default_completion_model
  data_max_tokens: 8000
  map_max_length: 200
  reduce_max_length: 500
  dynamic_search_use_summary: false
"""

V1 = """
llm:
  api_key: ${GRAPHRAG_API_KEY}
  type: openai_chat
  model: m1x
  api_base: BASE
  max_retries: 5
global_search:
  map_max_tokens: 250
  reduce_max_tokens: 600
  data_max_tokens: 7000
  max_tokens: 350
  concurrency: 32
"""


def run_query(store: Path, settings: Path, *extra: str, env: dict[str, str], config: Path | None = None):
    chosen = ["--config", str(config)] if config is not None else ["--no-config"]
    return run_cli("query", str(store), QUESTION, "--graphrag-settings", str(settings), *chosen, "--no-history",
                   "--no-shuffle", "--json", *extra, env=env)


def test_a_2x_project_with_its_key_in_dotenv_reaches_the_endpoint(store: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        settings = project(tmp_path, V2.replace("BASE", server.base_url),
                           f"GRAPHRAG_API_KEY={KEY}\nexport CHAT_MODEL='gpt-from-dotenv'  # the chat model\n")
        env = clean_env()
        env.pop("GRAPHRAG_API_KEY", None)
        run = run_query(store, settings, env=env)
        chats = server.chat_requests()
    assert run.code == 0, run.stderr
    assert {r.json["model"] for r in chats} == {"gpt-from-dotenv"}
    assert {r.headers["authorization"] for r in chats} == {f"Bearer {KEY}"}
    # global search defaults: reply limits as reserves, data limits plus them as budgets
    assert [r.json.get("max_tokens") for r in chats if r.stage == "reduce"] == [700]
    assert {r.json.get("max_tokens") for r in chats if r.stage == "map"} == {300}
    assert run.json["reduce"]["budget"] == 9000
    assert run.stderr.splitlines()[0] == (
        f"note: settings.yaml {settings} (2.x layout): not used here: models.default_chat_model.model_supports_json, "
        "models.default_chat_model.concurrent_requests, global_search.map_prompt, input"
    )
    assert KEY not in run.stdout + run.stderr


def test_the_environment_is_read_before_dotenv_and_flags_over_everything(store: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        settings = project(tmp_path, V2.replace("BASE", server.base_url),
                           "GRAPHRAG_API_KEY=sk-dotenv-not-used\nCHAT_MODEL=from-dotenv\n")
        env = clean_env(GRAPHRAG_API_KEY=KEY, CHAT_MODEL="from-env")
        by_env = run_query(store, settings, env=env)
        first = len(server.chat_requests())
        config = tmp_path / "config.toml"
        config.write_text('[retrieval]\nmap_reserve = 99\nreduce_reserve = 98\nconcurrency = 2\n'
                          '[model]\nmodel = "from-config"\n', encoding="utf-8")
        flagged = run_query(store, settings, "--model", "from-flag", "--reduce-reserve", "50",
                            env={**env, "GRAPHRAG_TUI_MAP_RESERVE": "20"}, config=config)
        later = server.chat_requests()[first:]
        chats = server.chat_requests()[:first]
    assert by_env.code == flagged.code == 0, by_env.stderr + flagged.stderr
    assert {r.json["model"] for r in chats} == {"from-env"}
    assert {r.headers["authorization"] for r in chats} == {f"Bearer {KEY}"}
    assert {r.json["model"] for r in later} == {"from-flag"}
    assert [r.json.get("max_tokens") for r in later if r.stage == "reduce"] == [50]
    assert {r.json.get("max_tokens") for r in later if r.stage == "map"} == {20}  # the variable over the project
    # the project over the config file: its data limit and reply limit make the Reduce budget
    assert flagged.json["reduce"]["budget"] == 9000 + 700 - 50
    assert KEY not in by_env.stdout + by_env.stderr + flagged.stdout + flagged.stderr


def test_a_3x_project_its_rate_limits_and_its_model(store: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        settings = project(tmp_path, V3.replace("BASE", server.base_url))
        run = run_query(store, settings, env=clean_env(MY_KEY=KEY))
        chats = server.chat_requests()
    assert run.code == 0, run.stderr
    assert {r.json["model"] for r in chats} == {"m3"} and {r.headers["authorization"] for r in chats} == {f"Bearer {KEY}"}
    parsed = load_project(settings, {"MY_KEY": KEY})
    assert parsed.layout == "3.x"
    assert parsed.model == {"base_url": server.base_url, "model": "m3", "api_key_env": "MY_KEY",
                            "requests_per_minute": 200, "tokens_per_minute": 100000}
    assert parsed.global_search == GlobalSearchDefaults(
        map_max_tokens=200, reduce_max_tokens=500, data_max_tokens=8000, map_context_tokens=None,
        dynamic=DynamicSelection(use_summary=False))
    assert parsed.unused == ("completion_models.default_completion_model.retry",
                             "global_search.dynamic_search_use_summary", "embedding_models")
    assert dict(parsed.environ) == {}  # the key is in the environment: nothing to hand over
    assert KEY not in run.stdout + run.stderr


def test_a_1x_project(store: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        settings = project(tmp_path, V1.replace("BASE", server.base_url), f"GRAPHRAG_API_KEY={KEY}\n")
        run = run_query(store, settings, env=clean_env())
        chats = server.chat_requests()
    assert run.code == 0, run.stderr
    assert {r.json["model"] for r in chats} == {"m1x"} and {r.headers["authorization"] for r in chats} == {f"Bearer {KEY}"}
    parsed = load_project(settings, {})
    assert parsed.layout == "1.x"
    assert parsed.retrieval_defaults() == {"map_reserve": 250, "reduce_reserve": 600, "map_budget": 600,
                                           "reduce_budget": 7600}
    assert parsed.unused == ("llm.max_retries", "global_search.concurrency")
    assert repr(parsed.environ) == "Secrets(['GRAPHRAG_API_KEY'])" and KEY not in repr(parsed)
    assert KEY not in run.stdout + run.stderr


def test_the_2x_global_search_and_dynamic_selection_are_parsed(tmp_path: Path) -> None:
    settings = project(tmp_path, V2.replace("BASE", "http://127.0.0.1:9/v1"), f"GRAPHRAG_API_KEY={KEY}\nCHAT_MODEL=c\n")
    parsed = load_project(settings, {})
    assert parsed.global_search == GlobalSearchDefaults(
        map_max_tokens=300, reduce_max_tokens=700, data_max_tokens=9000, map_context_tokens=400,
        dynamic=DynamicSelection(threshold=2, keep_parent=True, num_repeats=3, max_level=4))
    assert parsed.model["requests_per_minute"] == 600 and "tokens_per_minute" not in parsed.model
    assert parsed.labels["model"] == f"settings.yaml {settings}: models.default_chat_model.model"


def test_an_azure_deployment_becomes_its_classic_url_with_the_key_in_api_key(store: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(answer_all) as server:
        root = server.base_url.removesuffix("/v1")
        settings = project(tmp_path, f"""
models:
  default_chat_model:
    type: azure_openai_chat
    api_base: {root}
    api_version: "2024-10-21"
    deployment_name: chat-deploy
    model: gpt-4o
    api_key: ${{AZURE_KEY}}
""", f"AZURE_KEY={KEY}\n")
        run = run_query(store, settings, env=clean_env())
        chats = server.chat_requests()
    assert run.code == 0, run.stderr
    assert {r.path for r in chats} == {"/openai/deployments/chat-deploy/chat/completions?api-version=2024-10-21"}
    assert {r.headers.get("api-key") for r in chats} == {KEY}
    assert KEY not in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("text", "dotenv", "message"),
    [
        ("models: [1, 2\n", None, "is not valid YAML: expected ',' or ']', but got '<stream end>' (line 2, column 1)"),
        ("- a\n- b\n", None, "must be a mapping of sections, got list"),
        ("input:\n  type: file\n", None, "no chat model (none of completion_models:, models:, llm:)"),
        ("models:\n  other: {model: x}\n", None, "models has no model 'default_chat_model' (it has: other)"),
        ("llm:\n  model: x\n  api_key: ${NOWHERE_KEY}\n", "", "llm.api_key uses ${NOWHERE_KEY}, which is set neither "
         "in the environment nor in {dotenv}"),
        ("llm:\n  model: x\n  requests_per_minute: lots\n", None, "llm.requests_per_minute must be a whole number, got 'lots'"),
        ("completion_models:\n  default_completion_model:\n    model: x\n    auth_method: azure_managed_identity\n",
         None, "completion_models.default_completion_model: auth azure_managed_identity is not supported here; "
         "give an API key (api_key: ${GRAPHRAG_API_KEY}, or --api-key-env)"),
        ("llm:\n  model: x\nglobal_search:\n  dynamic_search_keep_parent: 3\n", None,
         "global_search.dynamic_search_keep_parent must be true or false, got 3"),
        ("completion_models:\n  default_completion_model:\n    model: x\n    rate_limit:\n      period_in_seconds: 0\n"
         "      tokens_per_period: 100\n", None,
         "completion_models.default_completion_model.rate_limit.period_in_seconds must be at least 1 second"),
        # an alias bomb (9^10 items): its whole repr was made for the message, gigabytes of it
        ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))
         + "llm:\n  model: x\n  requests_per_minute: *j\n", None,
         "llm.requests_per_minute must be a whole number, got [[[[...], [...], [...], [...], [...], […"),
        # values YAML reads with Python's int() and date(): an internal error
        pytest.param("llm:\n  model: x\n  requests_per_minute: 1" + "0" * 5000 + "\n", None, "holds a value that cannot "
                     "be read: Exceeds the limit (4300 digits) for integer string conversion: value has 5001 digits; use "
                     "sys.set_int_max_str_digits() t", id="5001-digits"),
        ("llm:\n  model: x\n  requests_per_minute: 2024-02-30\n", None,
         "holds a value that cannot be read: day is out of range for month"),
        # a bad base URL named the flag, --base-url, which was not given
        ("llm:\n  model: x\n  api_base: http://h:99999/v1\n", None, "llm.api_base has port 99999, out of the range "
         "1-65535"),
        ("completion_models:\n  default_completion_model:\n    model_provider: azure\n    model: x\n"
         "    api_base: ftp://h\n    api_version: '2024-02-01'\n", None,
         "completion_models.default_completion_model.api_base must be an http:// or https:// URL with a host"),
    ],
)
def test_a_bad_settings_file_is_exit_2_in_one_line(
    store: Path, tmp_path: Path, text: str, dotenv: str | None, message: str
) -> None:
    settings = project(tmp_path, text, dotenv)
    run = run_cli("plan", str(store), QUESTION, "--graphrag-settings", str(settings), "--no-config")
    assert (run.code, run.stdout) == (2, "")
    where = f"settings.yaml {settings}"
    expected = message.replace("{dotenv}", str(settings.parent / ".env"))
    separator = " " if expected.startswith(("is ", "must ", "holds ")) else ": "
    assert run.stderr == f"graphrag-tui: error: {where}{separator}{expected}\n"


def test_an_unreadable_settings_path_is_exit_2(store: Path, tmp_path: Path) -> None:
    missing = run_cli("plan", str(store), QUESTION, "--graphrag-settings", str(tmp_path / "nope.yaml"), "--no-config")
    directory = run_cli("plan", str(store), QUESTION, "--graphrag-settings", str(tmp_path), "--no-config")
    assert (missing.code, directory.code) == (2, 2)
    assert missing.stderr == f"graphrag-tui: error: --graphrag-settings: {tmp_path / 'nope.yaml'} does not exist\n"
    assert directory.stderr == f"graphrag-tui: error: --graphrag-settings: {tmp_path} is a directory (give its settings.yaml)\n"


def test_a_key_written_in_the_file_reaches_the_endpoint_with_a_note_and_is_never_shown(
    store: Path, tmp_path: Path
) -> None:
    with ScriptedChatServer(answer_all) as server:
        settings = project(tmp_path, f"llm:\n  api_base: {server.base_url}\n  model: m\n  api_key: {KEY}\n")
        run = run_query(store, settings, env=clean_env())
        chats = server.chat_requests()
    assert run.code == 0, run.stderr
    assert {r.headers["authorization"] for r in chats} == {f"Bearer {KEY}"}
    assert run.stderr.splitlines()[0] == (
        f"note: settings.yaml {settings}: llm.api_key holds the key itself; "
        "${GRAPHRAG_API_KEY} with the key in .env keeps it out of the file")
    assert KEY not in run.stdout + run.stderr


def test_the_resolver_names_where_each_setting_came_from(tmp_path: Path) -> None:
    settings = project(tmp_path, V2.replace("BASE", "http://127.0.0.1:9/v1"), f"GRAPHRAG_API_KEY={KEY}\nCHAT_MODEL=c\n")
    config = tmp_path / "config.toml"
    config.write_text('[model]\nmodel = "from-config"\ntimeout = 33\n[retrieval]\nconcurrency = 3\n', encoding="utf-8")
    resolver = SettingsResolver.load(config, no_config=False, environ={"GRAPHRAG_TUI_REDUCE_RESERVE": "64"},
                                     graphrag_settings=settings)
    resolved = resolver.resolve({"requests_per_minute": "30"})
    where = f"settings.yaml {settings}: "
    sources = resolved.model_sources
    assert sources["base_url"] == Setting("http://127.0.0.1:9/v1", "settings", where + "models.default_chat_model.api_base")
    assert sources["model"] == Setting("c", "settings", where + "models.default_chat_model.model")
    assert sources["api_key_env"] == Setting("GRAPHRAG_API_KEY", "settings", where + "models.default_chat_model.api_key")
    assert sources["requests_per_minute"] == Setting(30, "flag", "--rpm")
    assert sources["timeout"] == Setting(33.0, "config", f"config file {config}: [model] timeout")
    options = resolved.options.sources
    assert options["reduce_reserve"] == Setting(64, "environment", "GRAPHRAG_TUI_REDUCE_RESERVE")
    assert options["map_reserve"] == Setting(300, "settings", where + "global_search.map_max_length")
    assert options["map_budget"] == Setting(
        700, "settings", where + "global_search.max_context_tokens + the Map reply's limit")
    assert options["concurrency"] == Setting(3, "config", f"config file {config}: [retrieval] concurrency")
    assert resolved.environ["GRAPHRAG_API_KEY"] == KEY and resolved.project is not None
    assert resolved.project.global_search.dynamic.threshold == 2
    # GraphRAG's dynamic selection settings, below the environment and above the config file
    selection = resolved.selection.sources
    assert selection["rate_threshold"] == Setting(2, "settings", where + "global_search.dynamic_search_threshold")
    assert selection["keep_parent"] == Setting(True, "settings", where + "global_search.dynamic_search_keep_parent")
    assert selection["rate_repeats"] == Setting(3, "settings", where + "global_search.dynamic_search_num_repeats")
    assert selection["max_level"] == Setting(4, "settings", where + "global_search.dynamic_search_max_level")
    assert selection["select"] == Setting("level", "default", "--select")
    assert resolved.selection.options.mode == "level"  # settings.yaml sets no mode: it is not an error here
    assert KEY not in repr(resolved.project) and KEY not in repr(resolved.model)


def test_the_projects_dynamic_selection_settings_reach_the_run_below_flags_and_variables(tmp_path: Path) -> None:
    from tests.test_selection import RatingServer, walk_store

    store = walk_store(tmp_path / "walk.db")
    dynamic = ("  dynamic_search_threshold: 2\n  dynamic_search_keep_parent: true\n"
               "  dynamic_search_num_repeats: 2\n  dynamic_search_max_level: 1\n")
    config = tmp_path / "config.toml"
    config.write_text("[selection]\nrate_threshold = 5\nrate_repeats = 1\nmax_level = 3\n", encoding="utf-8")

    def run(*extra: str, env: dict[str, str] | None = None) -> dict:
        with ScriptedChatServer(RatingServer()) as server:
            settings = project(tmp_path, f"llm:\n  model: m\n  api_base: {server.base_url}\n"
                                         f"global_search:\n{dynamic}")
            done = run_query(store, settings, "--select", "dynamic", "--concurrency", "1", *extra,
                             env=env or clean_env(), config=config)
        assert done.code == 0, done.stderr
        return done.json

    # threshold 2, keep_parent, 2 votes each (over the config's 5 and 1): a -> a1 -> a1x kept
    # with their parents; b and b1 never pass
    kept = run()
    assert kept["selection"]["selected"] == ["ns/a", "ns/a1", "ns/a1x"]
    assert {r["community_id"]: r["votes"] for r in kept["selection"]["ratings"]} == {
        "ns/a": [3, 3], "ns/b": [0, 0], "ns/a1": [3, 3], "ns/a2": [0, 0], "ns/a1x": [3, 3], "ns/a1y": [0, 0]}
    # a variable and a flag over the file: threshold 4 keeps nothing, so the whole next level
    # is rated, down to the file's max level 1 only (level 2 is never rated)
    none = run("--rate-threshold", "4", env=clean_env(GRAPHRAG_TUI_RATE_REPEATS="1"))
    assert none["status"] == "no_results"
    assert {r["community_id"]: r["votes"] for r in none["selection"]["ratings"]} == {
        "ns/a": [3], "ns/b": [0], "ns/a1": [3], "ns/a2": [0], "ns/b1": [3]}


def test_a_bad_dynamic_selection_setting_is_exit_2_naming_the_field(store: Path, tmp_path: Path) -> None:
    settings = project(tmp_path, "llm:\n  model: m\n  api_base: http://127.0.0.1:9/v1\n"
                                 "global_search:\n  dynamic_search_threshold: 9\n")
    done = run_query(store, settings, env=clean_env())
    assert (done.code, done.stdout) == (2, "")
    assert done.stderr == (f"graphrag-tui: error: settings.yaml {settings}: global_search.dynamic_search_threshold "
                           "must be an integer from 0 to 5, got 9\n")


def test_a_rerun_reads_the_recorded_key_variable_from_the_projects_dotenv(store: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    with ScriptedChatServer(answer_all) as server:
        settings = project(tmp_path, V2.replace("BASE", server.base_url), f"GRAPHRAG_API_KEY={KEY}\nCHAT_MODEL=c\n")
        env = clean_env()
        env.pop("GRAPHRAG_API_KEY", None)
        first = run_cli("query", str(store), QUESTION, "--graphrag-settings", str(settings), "--no-config",
                        "--history", str(history), "--json", env=env)
        run_id = first.json["run_id"]
        without = run_cli("rerun", run_id, "--all", "--no-config", "--history", str(history), env=env)
        before = len(server.chat_requests())
        rerun = run_cli("rerun", run_id, "--all", "--no-config", "--history", str(history), "--json",
                        "--graphrag-settings", str(settings), env=env)
        resent = server.chat_requests()[before:]
    assert first.code == 0, first.stderr
    recorded = run_cli("runs", "show", run_id, "--json", "--no-config", "--history", str(history), env=env)
    assert KEY not in history.read_bytes().decode("utf-8", "replace") + recorded.stdout
    assert (without.code, without.stderr) == (
        2, "graphrag-tui: error: --api-key-env names the environment variable GRAPHRAG_API_KEY, which is not set\n")
    assert rerun.code == 0, rerun.stderr
    assert resent and {r.headers["authorization"] for r in resent} == {f"Bearer {KEY}"}
    assert KEY not in first.stdout + first.stderr + rerun.stdout + rerun.stderr + without.stderr


@pytest.mark.parametrize(("field", "message"), [
    ("    requests_per_minute: ${GRAPHRAG_API_KEY}\n",
     "models.default_chat_model.requests_per_minute must be a whole number, got '${GRAPHRAG_API_KEY}'"),
    ("global_search:\n  chat_model_id: ${GRAPHRAG_API_KEY}\n",
     "models has no model '${GRAPHRAG_API_KEY}' (it has: default_chat_model)"),
])
def test_a_variable_in_the_wrong_field_is_named_never_shown(store: Path, tmp_path: Path, field: str, message: str) -> None:
    """The key's variable in a count or a model id: the error showed the key itself."""
    text = "models:\n  default_chat_model:\n    type: openai_chat\n    model: m\n    api_key: ${GRAPHRAG_API_KEY}\n"
    settings = project(tmp_path, text + field, f"GRAPHRAG_API_KEY={KEY}\n")
    run = run_cli("plan", str(store), QUESTION, "--graphrag-settings", str(settings), "--no-config")
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: settings.yaml {settings}: {message}\n")


def test_a_key_longer_than_a_quoted_value_is_named_never_shown_in_part(store: Path, tmp_path: Path) -> None:
    """A quoted value is cut at 40 characters, and the cut key no longer matched the key it
    was hidden as: its first 37 characters were shown."""
    key = "sk-proj-" + "S3CRETabcdefgh" * 4
    text = ("models:\n  default_chat_model:\n    type: openai_chat\n    model: m\n    api_key: ${GRAPHRAG_API_KEY}\n"
            "    requests_per_minute: ${GRAPHRAG_API_KEY}\n")
    settings = project(tmp_path, text, f"GRAPHRAG_API_KEY={key}\n")
    run = run_cli("plan", str(store), QUESTION, "--graphrag-settings", str(settings), "--no-config")
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: settings.yaml {settings}: models."
                                                         "default_chat_model.requests_per_minute must be a whole number, "
                                                         "got '${GRAPHRAG_API_KEY}'\n")


def test_an_error_that_quotes_a_substituted_value_cut_shows_its_variable_instead() -> None:
    from graphrag_tui.arguments import shown
    from graphrag_tui.graphrag_settings import _Reader

    key = "sk-proj-" + "S3CRETabcdefgh" * 4
    reader = _Reader(Path("/nonexistent/settings.yaml"), {"K": key})
    assert reader.variable("K", "x") == key
    assert reader.hidden(f"x got {shown(key)}") == "x got '${K}…"
    assert reader.hidden(f"x got {key[:7]}") == f"x got {key[:7]}"  # (seven characters could be any word)


def test_a_megabyte_long_value_is_hidden_in_an_error_at_once() -> None:
    """Hiding a substituted value tried each of its lengths in turn: a 1 MB value from .env
    made an error take minutes (found by a probe)."""
    from graphrag_tui.graphrag_settings import _Reader

    value = "http://h/\U0001f642" + "a" * 1_000_000
    reader = _Reader(Path("/nonexistent/settings.yaml"), {"BIG": value})
    assert reader.variable("BIG", "x") == value
    started = time.perf_counter()
    assert reader.hidden("api_base is not a valid URL") == "api_base is not a valid URL"
    assert reader.hidden(f"got '{value[:5000]}b' and '{value}'") == "got '${BIG}b' and '${BIG}'"
    assert time.perf_counter() - started < 5  # (minutes before)


@pytest.mark.parametrize(("model_lines", "message"), [
    ("    model: ${GRAPHRAG_API_KEY}\n    api_base: BASE\n",
     "the model name holds the API key, and a model name is shown and recorded: give the model's own name"),
    ("    model: m\n    api_base: BASE?k=${GRAPHRAG_API_KEY}\n",
     "the base URL holds the API key, and a base URL is shown and recorded: give the key only as the variable "
     "--api-key-env names"),
    ("    type: azure_openai_chat\n    deployment_name: ${GRAPHRAG_API_KEY}\n    api_version: '2024-02-01'\n"
     "    api_base: BASE\n",
     "the base URL holds the API key, and a base URL is shown and recorded: give the key only as the variable "
     "--api-key-env names"),
])
def test_the_keys_variable_in_the_model_name_or_base_url_is_refused_before_anything_is_sent(
    store: Path, tmp_path: Path, model_lines: str, message: str
) -> None:
    """`model: ${GRAPHRAG_API_KEY}` printed the key in the note about the answering model,
    in `batch_models` and `runs list`, and recorded it in the run history."""
    with ScriptedChatServer(answer_all) as server:
        text = "models:\n  default_chat_model:\n    api_key: ${GRAPHRAG_API_KEY}\n" + model_lines
        settings = project(tmp_path, text.replace("BASE", server.base_url), f"GRAPHRAG_API_KEY={KEY}\n")
        history = tmp_path / "history.db"
        run = run_cli("query", str(store), QUESTION, "--graphrag-settings", str(settings), "--no-config",
                      "--history", str(history), "--json")
        requests = server.requests
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")
    assert requests == []
    assert not history.exists() or KEY.encode() not in history.read_bytes()

