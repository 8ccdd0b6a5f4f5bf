"""The user's defaults: config.toml, then GRAPHRAG_TUI_* variables; every value checked when
read, and every error naming the file, section and key, or the variable (issue 9, item 7)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from pydantic_settings import EnvSettingsSource, TomlConfigSettingsSource

from graphrag_tui.config import (
    SECTIONS,
    ConfigFileSource,
    EnvironmentSource,
    Settings,
    file_label,
    load_user_defaults,
)
from graphrag_tui.engine.options import FALLBACK_DEFAULTS, resolve_options
from graphrag_tui.engine.request import shown
from graphrag_tui.errors import InputError
from tests.cli_runner import clean_env, run_cli
from tests.stores import three_leaves

KNOWN_SECTIONS = "(known sections: [retrieval], [model], [prices], [history], [prompts], [selection], [keymap])"


def load(path: Path | None, **environ: str):
    return load_user_defaults(path, no_config=False, environ=environ)


def config(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "config.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def error_of(path: Path | None, **environ: str) -> str:
    with pytest.raises(InputError) as info:
        load(path, **environ)
    return str(info.value)


def test_values_are_checked_and_converted_with_where_they_came_from(tmp_path: Path) -> None:
    path = config(tmp_path, '[retrieval]\nmap_budget = 900\nconcurrency = "3"\n[model]\ntimeout = 30\nmodel = "m"\n')
    defaults = load(path, GRAPHRAG_TUI_MAP_RESERVE="0", GRAPHRAG_TUI_TIMEOUT="2.5")
    assert defaults.retrieval == {"map_budget": 900, "concurrency": 3, "map_reserve": 0}
    assert defaults.model == {"timeout": 2.5, "model": "m"}
    assert defaults.labels == {
        "map_budget": f"config file {path}: [retrieval] map_budget",
        "concurrency": f"config file {path}: [retrieval] concurrency",
        "map_reserve": "GRAPHRAG_TUI_MAP_RESERVE",
        "timeout": "GRAPHRAG_TUI_TIMEOUT",  # the variable overrides the file
        "model": f"config file {path}: [model] model",
    }
    assert defaults.config_file == str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[model]\nbase_url = 5\n", "[model] base_url must be a string, got 5"),
        # (it was checked only as the model was made, and said `--base-url`)
        ('[model]\nbase_url = "http://h:99999/v1"\n', "[model] base_url has port 99999, out of the range 1-65535"),
        ('[model]\nbase_url = "ftp://h/v1"\n', "[model] base_url must be an http:// or https:// URL with a host"),
        ("[model]\nmodel = 5\n", "[model] model must be a string, got 5"),
        ("[model]\napi_key_env = 5\n", "[model] api_key_env must be a string, got 5"),
        ("[model]\napi_key_env = [\"A\"]\n", "[model] api_key_env must be a string, got ['A']"),
        ('[model]\ntimeout = "x"\n', "[model] timeout must be a positive number of seconds, got 'x'"),
        ("[model]\ntimeout = true\n", "[model] timeout must be a positive number of seconds, got True"),
        ("[model]\ntimeout = -1\n", "[model] timeout must be a positive number of seconds, got -1"),
        ("[model]\ntimeout = nan\n", "[model] timeout must be a positive number of seconds, got nan"),
        ("[model]\ntimeout = 1" + "0" * 400 + "\n",
         "[model] timeout must be a positive number of seconds, got a 401-digit number"),
        ('[model]\nresponse_format = "yaml"\n',
         "[model] response_format must be one of json_object, json_schema, text, got 'yaml'"),
        ("[model]\nmax_response_bytes = 0\n",
         "[model] max_response_bytes must be a positive whole number of bytes, got 0"),
        ('[model]\nmax_response_bytes = "8 MB"\n',
         "[model] max_response_bytes must be a positive whole number of bytes, got '8 MB'"),
        ("[retrieval]\nmap_budget = -3\n", "[retrieval] map_budget must be a positive integer, got -3"),
        ("[retrieval]\nmap_budget = 4.5\n", "[retrieval] map_budget must be a positive integer, got 4.5"),
        ('[retrieval]\nmap_budget = "²"\n', "[retrieval] map_budget must be a positive integer, got '²'"),
        ("[retrieval]\nreduce_reserve = -1\n", "[retrieval] reduce_reserve must be a non-negative integer, got -1"),
        ("[retrieval]\nconcurrency = 257\n",
         "[retrieval] concurrency must be at most 256 (parallel model calls), got 257"),
        ("retrieval = 5\n", "retrieval must be a section ([retrieval] with its keys), got 5"),
        ('model = "llama"\n', "model must be a section ([model] with its keys), got 'llama'"),
        ("[other]\nx = 1\n", "unknown section [other] " + KNOWN_SECTIONS),
        ("colour = 1\n", "unknown key 'colour' " + KNOWN_SECTIONS),
        ("[retrieval]\nmap_budgett = 1\n", "unknown key 'map_budgett' in [retrieval]"),
    ],
)
def test_a_bad_file_value_names_the_file_section_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = config(tmp_path, text)
    assert error_of(path) == f"config file {path}: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[retrieval\n", "is not valid TOML: Expected ']' at the end of a table declaration (at line 1, column 11)"),
        ("a = " + "[" * 3000 + "]" * 3000 + "\n", "is not valid TOML: a value is nested too deeply or too long"),
        ("[retrieval]\nmap_budget = " + "9" * 5000 + "\n", "is not valid TOML: a value is nested too deeply or too long"),
        (b"[retrieval]\nmap_budget = 1 # \xff\n", "is not UTF-8 text (byte 29)"),
        # a dotted key of 100,000 parts in 200 KB: over a minute in TOML's reader
        ("# a comment may draw a line of dots: " + "." * 300 + "\n" + "a" + ".a" * 100_000 + " = 1\n",
         "is not read: line 2 has over 256 dots (TOML's reader takes time that grows with the square of a key's "
         "parts: 32,000 took 18 s)"),
        ("[" + ".".join(["a"] * 300) + "]\n", "is not read: line 1 has over 256 dots (TOML's reader takes time that "
                                                "grows with the square of a key's parts: 32,000 took 18 s)"),
    ],
)
def test_an_unreadable_file_is_one_line(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = config(tmp_path, text)
    started = time.monotonic()
    assert error_of(path) == f"config file {path} {message}"
    assert time.monotonic() - started < 5


def test_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    assert error_of(tmp_path / "absent.toml") == f"config file {tmp_path / 'absent.toml'} does not exist"
    assert error_of(tmp_path) == f"config file {tmp_path} cannot be read: Is a directory"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GRAPHRAG_TUI_MAP_BUDGET", "-3", "GRAPHRAG_TUI_MAP_BUDGET must be a positive integer, got '-3'"),
        ("GRAPHRAG_TUI_BASE_URL", "ftp://x", "GRAPHRAG_TUI_BASE_URL must be an http:// or https:// URL with a host"),
        ("GRAPHRAG_TUI_MAP_BUDGET", "٣", "GRAPHRAG_TUI_MAP_BUDGET must be a positive integer, got '٣'"),
        ("GRAPHRAG_TUI_CONCURRENCY", "1000",
         "GRAPHRAG_TUI_CONCURRENCY must be at most 256 (parallel model calls), got 1000"),
        ("GRAPHRAG_TUI_TIMEOUT", "soon", "GRAPHRAG_TUI_TIMEOUT must be a positive number of seconds, got 'soon'"),
        ("GRAPHRAG_TUI_RESPONSE_FORMAT", "xml",
         "GRAPHRAG_TUI_RESPONSE_FORMAT must be one of json_object, json_schema, text, got 'xml'"),
        ("GRAPHRAG_TUI_BASE_URL", "http://h\udcff/v1", "GRAPHRAG_TUI_BASE_URL is not valid UTF-8"),
        ("GRAPHRAG_TUI_MAX_RESPONSE_BYTES", "-1",
         "GRAPHRAG_TUI_MAX_RESPONSE_BYTES must be a positive whole number of bytes, got '-1'"),
    ],
)
def test_a_bad_variable_is_named(tmp_path: Path, variable: str, value: str, message: str) -> None:
    assert error_of(config(tmp_path, ""), **{variable: value}) == message


def test_budget_and_reserve_from_one_file_are_named_once(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 500\nmap_reserve = 500\n")
    defaults = load(path)
    with pytest.raises(InputError) as info:
        resolve_options({}, defaults.retrieval, defaults.labels)
    assert str(info.value) == f"config file {path}: [retrieval] map_budget (500) must exceed [retrieval] map_reserve (500)"
    with pytest.raises(InputError) as info:
        resolve_options({"map_reserve": "600"}, defaults.retrieval, defaults.labels)
    assert str(info.value) == f"config file {path}: [retrieval] map_budget (500) must exceed --map-reserve (600)"
    defaults = load(config(tmp_path, ""), GRAPHRAG_TUI_REDUCE_RESERVE="9000")
    with pytest.raises(InputError) as info:
        resolve_options({}, defaults.retrieval, defaults.labels)
    assert str(info.value) == "--reduce-budget (8000) must exceed GRAPHRAG_TUI_REDUCE_RESERVE (9000)"


def test_no_config_reads_nothing(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = -3\n")
    defaults = load_user_defaults(path, no_config=True, environ={"GRAPHRAG_TUI_MAP_BUDGET": "x"})
    assert (defaults.retrieval, defaults.model, defaults.labels) == ({}, {}, {})


# -- issue 10: pydantic-settings is the source; [keymap] ------------------------------------------


def test_the_file_and_the_variables_merge_through_pydantic_settings(tmp_path: Path) -> None:
    path = config(tmp_path, '[retrieval]\nmap_budget = 900\nconcurrency = 2\n'
                            '[model]\nbase_url = "http://file/v1"\nmax_response_bytes = 1000\n'
                            '[keymap]\ngoto = "ctrl+g"\n')
    defaults = load(path, GRAPHRAG_TUI_CONCURRENCY="7", GRAPHRAG_TUI_BASE_URL="http://env/v1",
                    GRAPHRAG_TUI_RESPONSE_FORMAT="text", GRAPHRAG_TUI_MAP_RESERVE="",  # empty: unset
                    OPENAI_API_KEY="sk-never-read", graphrag_tui_model="lower-case is another variable")
    assert defaults.retrieval == {"map_budget": 900, "concurrency": 7}
    assert defaults.model == {"base_url": "http://env/v1", "max_response_bytes": 1000, "response_format": "text"}
    assert defaults.keymap == {"goto": "ctrl+g"}
    assert defaults.labels == {
        "map_budget": f"config file {path}: [retrieval] map_budget",
        "concurrency": "GRAPHRAG_TUI_CONCURRENCY",
        "base_url": "GRAPHRAG_TUI_BASE_URL",
        "max_response_bytes": f"config file {path}: [model] max_response_bytes",
        "response_format": "GRAPHRAG_TUI_RESPONSE_FORMAT",
    }
    assert defaults.config_file == str(path)


def test_the_sources_are_pydantic_settings_sources(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 900\n[keymap]\nquit = \"ctrl+q\"\n")
    file_source = ConfigFileSource(path)
    env_source = EnvironmentSource({"GRAPHRAG_TUI_MAP_BUDGET": "1200", "GRAPHRAG_TUI_TIMEOUT": "9", "HOME": "/h"})
    assert isinstance(file_source, TomlConfigSettingsSource) and isinstance(env_source, EnvSettingsSource)
    assert file_source() == {"retrieval": {"map_budget": 900}, "keymap": {"quit": "ctrl+q"}}
    assert env_source() == {"retrieval": {"map_budget": "1200"}, "model": {"timeout": "9"}}
    # No other variable is read.
    assert dict(env_source.env_vars) == {"GRAPHRAG_TUI_MAP_BUDGET": "1200", "GRAPHRAG_TUI_TIMEOUT": "9"}
    settings = Settings(_build_sources=((env_source, file_source), {}))
    assert settings.model_dump(exclude_unset=True) == {
        "retrieval": {"map_budget": 1200}, "model": {"timeout": 9.0}, "keymap": {"quit": "ctrl+q"}}


def test_the_sections_keys_are_the_models_fields() -> None:
    assert SECTIONS == {
        "retrieval": tuple(FALLBACK_DEFAULTS),
        "model": (
            "base_url", "model", "api_key_env", "timeout", "response_format", "max_response_bytes",
            "requests_per_minute", "tokens_per_minute", "max_rate_wait",
            "temperature", "top_p", "model_seed", "reasoning_effort", "max_tokens_field", "api_key_header",
            "headers", "extra_body",
        ),
        "history": ("path", "enabled"),
        "prompts": ("dir", "response_type", "general_knowledge", "answer_language"),
        "selection": ("select", "rate_threshold", "keep_parent", "max_level", "rate_repeats", "min_rank"),
    }


def test_a_variable_over_a_bad_file_value_does_not_hide_it(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = -3\n")
    assert error_of(path, GRAPHRAG_TUI_MAP_BUDGET="900") == \
        f"config file {path}: [retrieval] map_budget must be a positive integer, got -3"


def test_the_first_problem_in_the_file_is_reported(tmp_path: Path) -> None:
    path = config(tmp_path, '[model]\ntimeout = "x"\nmodel = 5\n[retrieval]\nmap_budgett = 1\nmap_budget = -3\n')
    assert error_of(path) == f"config file {path}: [model] timeout must be a positive number of seconds, got 'x'"
    path = config(tmp_path, '[retrieval]\nmap_budgett = 1\nmap_budget = -3\n')
    assert error_of(path) == f"config file {path}: unknown key 'map_budgett' in [retrieval]"
    path = config(tmp_path, '[retrieval]\nmap_budget = 1\n[zzz]\n[model]\ntimeout = -1\n')
    assert error_of(path) == (
        f"config file {path}: unknown section [zzz] {KNOWN_SECTIONS}"
    )
    # the file before the variables; the variables in their sections' order
    assert error_of(config(tmp_path, "[model]\ntimeout = 0\n"), GRAPHRAG_TUI_MAP_BUDGET="0") == \
        f"config file {tmp_path / 'config.toml'}: [model] timeout must be a positive number of seconds, got 0"
    assert error_of(config(tmp_path, ""), GRAPHRAG_TUI_TIMEOUT="0", GRAPHRAG_TUI_CONCURRENCY="0") == \
        "GRAPHRAG_TUI_CONCURRENCY must be a positive integer, got '0'"


def test_deeply_nested_tables_are_one_line(tmp_path: Path) -> None:
    deep = ".".join(["a"] * 257)  # (more dots than that are refused before TOML reads them: above)
    path = config(tmp_path, f"[retrieval]\n{deep} = 1\n")
    assert error_of(path) == f"config file {path}: unknown key 'a' in [retrieval]"
    path = config(tmp_path, f"[keymap]\ngoto = {'[' * 400}{']' * 400}\n")
    nested: list = []
    for _ in range(399):
        nested = [nested]
    assert error_of(path) == f"config file {path}: [keymap] goto must be a string, got {shown(nested)}"


def test_the_keymap_section(tmp_path: Path) -> None:
    path = config(tmp_path, '[keymap]\ngoto = "ctrl+g"\nexport = "e,ctrl+e"\n"app.help" = "f1 , question_mark"\n')
    defaults = load(path, GRAPHRAG_TUI_KEYMAP="x")  # the keymap is read from the file only
    assert defaults.keymap == {"goto": "ctrl+g", "export": "e,ctrl+e", "app.help": "f1,question_mark"}
    assert (defaults.retrieval, defaults.model, defaults.labels) == ({}, {}, {})
    assert load_user_defaults(path, no_config=True, environ={}).keymap == {}
    assert file_label(path, "keymap", "goto") == f"config file {path}: [keymap] goto"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[keymap]\ngoto = 5\n", "[keymap] goto must be a string, got 5"),
        ('[keymap]\ngoto = ["g"]\n', "[keymap] goto must be a string, got ['g']"),
        ('[keymap]\ngoto = ""\n', "[keymap] goto must be key names separated by commas, like \"e,ctrl+e\", got ''"),
        ('[keymap]\ngoto = "e,,f"\n', "[keymap] goto must be key names separated by commas, like \"e,ctrl+e\", got 'e,,f'"),
        ('[keymap]\ngoto = "e,"\n', "[keymap] goto must be key names separated by commas, like \"e,ctrl+e\", got 'e,'"),
        ('[keymap]\ngoto = "ctrl g"\n',
         "[keymap] goto must be key names separated by commas, like \"e,ctrl+e\", got 'ctrl g'"),
        ('[keymap]\ngoto = "é"\n', "[keymap] goto must be key names separated by commas, like \"e,ctrl+e\", got 'é'"),
        ('[keymap]\ngoto = "\\u001b[31m"\n',
         "[keymap] goto must be key names separated by commas, like \"e,ctrl+e\", got '\\x1b[31m'"),
        ('[keymap]\n"go\\u001bto" = ""\n',
         "[keymap] 'go\\x1bto' must be key names separated by commas, like \"e,ctrl+e\", got ''"),
        ("keymap = 5\n", "keymap must be a section ([keymap] with its keys), got 5"),
        ('keymap = "goto"\n', "keymap must be a section ([keymap] with its keys), got 'goto'"),
        ('[Keymap]\ngoto = "g"\n',
         "unknown section [Keymap] " + KNOWN_SECTIONS),
    ],
)
def test_a_bad_keymap_entry_names_the_file_section_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = config(tmp_path, text)
    assert error_of(path) == f"config file {path}: {message}"


def test_the_cli_reads_a_keymap_and_refuses_a_bad_one_in_one_line(tmp_path: Path) -> None:
    store = three_leaves(tmp_path / "harbour.db")
    path = config(tmp_path, '[retrieval]\nmap_budget = 900\n[keymap]\ngoto = "ctrl+g"\n')
    run = run_cli("plan", str(store), "Who funds the bridge?", "--config", str(path), "--json")
    assert (run.code, run.stderr, run.json["options"]["map_budget"]) == (0, "", 900)
    path.write_text('[retrieval]\nmap_budget = 900\n[keymap]\ngoto = "ctrl+g,"\n')
    run = run_cli("plan", str(store), "Who funds the bridge?", "--config", str(path), "--json")
    message = "must be key names separated by commas, like \"e,ctrl+e\", got 'ctrl+g,'"
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: config file {path}: [keymap] goto {message}\n")


@pytest.mark.parametrize(("kind", "what"), [
    ("folder", "cannot be read: Is a directory"),
    ("fifo", "is not a regular file"),
    ("dangling-link", "is a symbolic link to nothing"),
])
@pytest.mark.parametrize("command", [["runs"], ["plan", "{store}", "Who funds the bridge?"]], ids=["runs", "plan"])
def test_a_default_config_that_is_no_file_is_an_error_not_skipped(
    tmp_path: Path, kind: str, what: str, command: list[str]
) -> None:
    """It was silently left unread: the user's settings then did not apply, unsaid."""
    store = three_leaves(tmp_path / "harbour.db")
    config = tmp_path / "config-home" / "graphrag-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    if kind == "folder":
        config.mkdir()
    elif kind == "fifo":
        os.mkfifo(config)
    else:
        config.symlink_to(tmp_path / "moved-away.toml")
    env = clean_env(XDG_CONFIG_HOME=str(tmp_path / "config-home"))
    run = run_cli(*[a.replace("{store}", str(store)) for a in command], env=env)
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: config file {config} {what}\n")
