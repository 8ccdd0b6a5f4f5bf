"""The option resolver: each value with where it came from (default, config, environment,
flag, form), the precedence flag > environment > config > default, messages that name the
source, the local model's fitting, and the config file read once per command."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_tui import cli
from graphrag_tui.errors import InputError
from graphrag_tui.models import local_llm
from graphrag_tui.session import options as session_options
from graphrag_tui.session.options import (
    Setting,
    SettingsResolver,
    form_defaults,
    resolve_retrieval,
)
from tests.stores import three_leaves

LABELS = {"map_budget": "Map budget", "map_reserve": "Map reserve", "reduce_budget": "Reduce budget",
          "reduce_reserve": "Reduce reserve", "concurrency": "Concurrency"}


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def sources(resolved) -> dict[str, tuple[object, str, str]]:
    return {n: (s.value, s.source, s.label) for n, s in resolved.options.sources.items()}


@pytest.fixture
def window_8192(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the local LLM were installed with an 8192-token context window."""
    monkeypatch.setattr(local_llm, "model_context_window", lambda *args: 8192)


def test_each_option_says_where_it_came_from_and_flags_beat_env_beat_config(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 5000\nreduce_budget = 6000\nconcurrency = 3\n")
    env = {"GRAPHRAG_TUI_REDUCE_BUDGET": "7000", "GRAPHRAG_TUI_CONCURRENCY": "2"}
    resolver = SettingsResolver.load(path, no_config=False, environ=env)
    resolved = resolver.resolve({"concurrency": "5"})
    file_label = f"config file {path}: [retrieval] map_budget"
    assert sources(resolved) == {
        "map_budget": (5000, "config", file_label),
        "reduce_budget": (7000, "environment", "GRAPHRAG_TUI_REDUCE_BUDGET"),
        "map_reserve": (512, "default", "--map-reserve"),
        "reduce_reserve": (1024, "default", "--reduce-reserve"),
        "concurrency": (5, "flag", "--concurrency"),
    }
    assert resolved.options.given == {"map_budget", "reduce_budget", "concurrency"}
    assert resolved.options.options.model_dump() == {
        "map_budget": 5000, "reduce_budget": 7000, "map_reserve": 512, "reduce_reserve": 1024, "concurrency": 5,
    }


def test_without_config_everything_is_a_default_or_a_flag(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 5000\n")
    resolver = SettingsResolver.load(path, no_config=True, environ={"GRAPHRAG_TUI_MAP_BUDGET": "4000"})
    resolved = resolver.resolve({"map_reserve": "100"})
    assert resolved.options.given == {"map_reserve"}
    assert sources(resolved)["map_budget"] == (8000, "default", "--map-budget")
    assert sources(resolved)["map_reserve"] == (100, "flag", "--map-reserve")


def test_model_settings_say_where_they_came_from(tmp_path: Path) -> None:
    path = config(tmp_path, '[model]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "from-config"\ntimeout = 30\n')
    resolver = SettingsResolver.load(path, no_config=False, environ={"GRAPHRAG_TUI_MODEL": "from-env"})
    resolved = resolver.resolve({"timeout": "15"})
    assert resolved.model is not None and resolved.model.kind == "http"
    got = {k: (s.value, s.source, s.label) for k, s in resolved.model_sources.items()}
    assert got == {
        "base_url": ("http://127.0.0.1:9/v1", "config", f"config file {path}: [model] base_url"),
        "model": ("from-env", "environment", "GRAPHRAG_TUI_MODEL"),
        "api_key_env": (None, "default", "--api-key-env"),
        "timeout": (15.0, "flag", "--timeout"),
        "response_format": ("json_object", "default", "--response-format"),
        "max_response_bytes": (8388608, "default", "--max-response-bytes"),
        "local_llm": (False, "default", "--local-llm"),
        "requests_per_minute": (None, "default", "--rpm"),
        "tokens_per_minute": (None, "default", "--tpm"),
        "max_rate_wait": (300.0, "default", "--max-rate-wait"),
        "temperature": (None, "default", "--temperature"),
        "top_p": (None, "default", "--top-p"),
        "model_seed": (None, "default", "--model-seed"),
        "reasoning_effort": (None, "default", "--reasoning-effort"),
        "max_tokens_field": ("auto", "default", "--max-tokens-field"),
        "api_key_header": (None, "default", "--api-key-header"),
        "headers": ({}, "default", "--header"),
        "extra_body": ({}, "default", "--extra-body"),
    }
    assert resolver.resolve({}, with_model=False).model is None


def test_errors_name_the_source_of_the_bad_value(tmp_path: Path) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 400\nmap_reserve = 500\n")
    resolver = SettingsResolver.load(path, no_config=False, environ={})
    with pytest.raises(InputError) as error:
        resolver.resolve({})
    assert str(error.value) == f"config file {path}: [retrieval] map_budget (400) must exceed [retrieval] map_reserve (500)"
    with pytest.raises(InputError) as error:
        resolver.resolve({"map_reserve": "450"})
    assert str(error.value) == f"config file {path}: [retrieval] map_budget (400) must exceed --map-reserve (450)"
    env = SettingsResolver.load(None, no_config=False, environ={"GRAPHRAG_TUI_REDUCE_RESERVE": "9000"})
    with pytest.raises(InputError) as error:
        env.resolve({})
    assert str(error.value) == "--reduce-budget (8000) must exceed GRAPHRAG_TUI_REDUCE_RESERVE (9000)"
    with pytest.raises(InputError) as error:
        SettingsResolver().resolve({"concurrency": "x"})
    assert str(error.value) == "--concurrency must be a positive integer, got 'x'"


def test_form_values_are_named_by_their_field_labels() -> None:
    given = {"map_budget": Setting("10", "form", "Map budget"), "map_reserve": Setting("20", "form", "Map reserve")}
    with pytest.raises(InputError) as error:
        resolve_retrieval(given, names=LABELS)
    assert str(error.value) == "Map budget (10) must exceed Map reserve (20)"
    resolved = resolve_retrieval({"concurrency": Setting("3", "form", "Concurrency")}, names=LABELS)
    assert resolved.given == {"concurrency"}
    assert resolved.sources["concurrency"] == Setting(3, "form", "Concurrency")
    assert resolved.sources["map_budget"] == Setting(8000, "default", "Map budget")


def test_the_local_model_caps_defaults_and_keeps_what_was_given(window_8192: None) -> None:
    resolved = resolve_retrieval({"reduce_budget": Setting(3000, "flag", "--reduce-budget")}, "local")
    assert resolved.options.model_dump() == {
        "map_budget": 2048, "reduce_budget": 3000, "map_reserve": 512, "reduce_reserve": 750, "concurrency": 1,
    }
    assert resolved.sources["map_budget"].source == "default"
    assert resolved.sources["reduce_budget"].source == "flag"


def test_local_settings_fit_the_options_and_give_the_server_one_slot_per_worker(window_8192: None) -> None:
    resolved = SettingsResolver().resolve({"local_llm": True, "concurrency": "2"})
    assert resolved.model is not None and resolved.model.kind == "local" and resolved.model.local_slots == 2
    assert (resolved.options.options.map_budget, resolved.options.options.concurrency) == (2048, 2)
    assert resolved.model_sources["local_llm"] == Setting(True, "flag", "--local-llm")


def test_a_budget_that_cannot_fit_the_local_model_names_its_source(tmp_path: Path, window_8192: None) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 9000\n")
    resolver = SettingsResolver.load(path, no_config=False, environ={})
    with pytest.raises(InputError) as error:
        resolver.resolve({"local_llm": True})
    label = f"config file {path}: [retrieval] map_budget"
    assert str(error.value) == (
        f"{label} 9000 does not fit the local model: with --concurrency 1 each slot holds 8192 tokens, "
        f"so {label} can be at most 8176"
    )
    with pytest.raises(InputError) as error:
        resolve_retrieval({"map_budget": Setting("9000", "form", "Map budget")}, "local", names=LABELS)
    assert str(error.value) == (
        "Map budget 9000 does not fit the local model: with Concurrency 1 each slot holds 8192 tokens, "
        "so Map budget can be at most 8176"
    )


def test_the_form_shows_local_defaults_when_they_fit_and_given_values_as_given(window_8192: None) -> None:
    assert form_defaults({}, "local", names=LABELS).model_dump() == {
        "map_budget": 2048, "reduce_budget": 2048, "map_reserve": 512, "reduce_reserve": 512, "concurrency": 1,
    }
    too_big = {"map_budget": Setting(9000, "form", "Map budget")}
    assert form_defaults(too_big, "local", names=LABELS).map_budget == 9000  # running says it cannot fit
    assert form_defaults(too_big, "http", names=LABELS).model_dump()["reduce_budget"] == 8000


def test_a_command_reads_the_config_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, "[retrieval]\nmap_budget = 330\nmap_reserve = 0\n")
    store = three_leaves(tmp_path / "harbour.db")
    calls: list[Path | None] = []
    real_load = session_options.load_user_defaults

    def counting(config_path, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(config_path)
        return real_load(config_path, **kwargs)

    monkeypatch.setattr(session_options, "load_user_defaults", counting)
    code = cli.main(["plan", str(store), "Who funds the bridge?", "--config", str(path), "--no-shuffle", "--json"])
    assert code == 0 and calls == [path]
    assert '"batch_count": 3' in capsys.readouterr().out  # the config's budget made one batch each
