"""One resolver for every setting of a run: each retrieval option and model setting comes
from a flag or a form field, else the environment, else a GraphRAG project's settings.yaml
(--graphrag-settings), else the config file, else its default,
and keeps where it came from (`Setting.source`) and how messages name it (`Setting.label`).

The local LLM's budgets are fitted here too (SPEC §4): its context window is split over its
parallel slots, and every prompt plus its reserve must fit one slot.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..config import UserDefaults, load_user_defaults
from ..engine import DEFAULT_PROMPTS, ChatModel, Prices, Prompts, form_text, shown
from ..engine.options import FALLBACK_DEFAULTS, SearchOptions, flag
from ..engine.options import resolve_options as validated_options
from ..engine.selection import DYNAMIC_ONLY, SELECTION_DEFAULTS, SelectionOptions, check_selection
from ..errors import InputError
from ..graphrag_settings import Project, load_project
from ..models import local_llm
from ..models.factory import ModelSettings, resolve_model_settings
from ..models.local_llm import DEFAULT_CONCURRENCY, TEMPLATE_TOKENS
from ..prompt_files import load_prompts
from ..user_files import ENV_PREFIX, default_history_path, user_path

Source = Literal["default", "config", "settings", "environment", "flag", "form"]
#: The model settings a flag or the config can give (`local_llm` only as a flag).
MODEL_KEYS = (
    "base_url", "model", "api_key_env", "timeout", "response_format", "max_response_bytes", "local_llm",
    "requests_per_minute", "tokens_per_minute", "max_rate_wait",
    "temperature", "top_p", "model_seed", "reasoning_effort", "max_tokens_field", "api_key_header",
    "headers", "extra_body",
)
#: Flags spelled otherwise than their setting (`--header` gives one entry of `headers`).
MODEL_FLAGS = {"requests_per_minute": "--rpm", "tokens_per_minute": "--tpm", "headers": "--header"}

# The local model: see `fit_local`.
#: Default budgets fill at most this share of a slot: `estimate_tokens` undercounts this
#: model's real tokens (English by up to ~15%, measured; Chinese about 3.4x).
DEFAULT_FILL_PERCENT = 80
#: ... and are at most this: on a 2-core CPU a 2k-token Map batch takes 10-30 s, an 8k one
#: minutes (near the default timeout), and smaller batches cost fewer seconds per token.
DEFAULT_BUDGET_CAP = 2048
#: Slots smaller than this hold too little to be useful.
MIN_SLOT_CONTEXT = 512


@dataclass(frozen=True)
class Setting:
    """One value and where it came from; `label` names it in messages: a flag (--map-budget),
    a config key (config file P: [retrieval] map_budget), a variable (GRAPHRAG_TUI_MAP_BUDGET)
    or a form field's label (Map budget)."""

    value: Any
    source: Source
    label: str


@dataclass(frozen=True)
class ResolvedOptions:
    options: SearchOptions
    #: Each retrieval option's value as resolved, with where it came from.
    sources: Mapping[str, Setting]

    @property
    def given(self) -> frozenset[str]:
        """The options someone gave (flag, form, environment, config); the rest are defaults."""
        return frozenset(n for n, s in self.sources.items() if s.source != "default")


@dataclass(frozen=True)
class HistoryChoice:
    """Where runs are recorded (`path`, read by `runs` even when recording is off), whether
    a run is recorded (`enabled`); `source` and `label` say who decided (a flag, a config
    key, a variable, or the default)."""

    path: Path
    enabled: bool
    source: Source
    label: str

    @property
    def recording(self) -> Path | None:
        """Where a run is recorded; None when it is not."""
        return self.path if self.enabled else None


@dataclass(frozen=True)
class ResolvedSelection:
    """How the communities are chosen (issue 15), each setting with where it came from."""

    options: SelectionOptions
    sources: Mapping[str, Setting]


def resolve_selection(given: Mapping[str, Setting]) -> ResolvedSelection:
    """The selection settings from the given ones (flags or form fields over the environment
    and the config), each checked and named by its source; the rest default. A setting only
    dynamic selection reads, given as a flag or a form field with another mode, is an error."""
    values: dict[str, Any] = {}
    sources: dict[str, Setting] = {}
    for name, default in SELECTION_DEFAULTS.items():
        setting = given.get(name)
        if setting is None or setting.value is None:
            values[name] = default
            sources[name] = Setting(default, "default", flag(name))
            continue
        values[name] = check_selection(name, setting.value, setting.label)
        sources[name] = Setting(values[name], setting.source, setting.label)
    if values["select"] != "dynamic":
        for name in DYNAMIC_ONLY:
            if sources[name].source in ("flag", "form"):
                raise InputError(f"{sources[name].label} applies to --select dynamic only (the mode is {values['select']})")
    options = SelectionOptions(
        mode=values["select"], rate_threshold=values["rate_threshold"], keep_parent=values["keep_parent"],
        max_level=values["max_level"], rate_repeats=values["rate_repeats"], min_rank=values["min_rank"],
    )
    return ResolvedSelection(options, sources)


@dataclass(frozen=True)
class Resolved:
    """Everything a command resolved: retrieval options, and the model settings (None for
    commands without a model)."""

    options: ResolvedOptions
    model: ModelSettings | None = None
    model_sources: Mapping[str, Setting] = field(default_factory=dict)
    #: What the config file and the environment said (the app's [keymap], say).
    user_defaults: UserDefaults = field(default_factory=UserDefaults)
    #: The run history (None: the command has none).
    history: HistoryChoice | None = None
    #: How the communities are chosen.
    selection: ResolvedSelection = field(default_factory=lambda: resolve_selection({}))
    #: The prompt templates and the answer's form, and where each of their settings came from.
    prompts: Prompts = DEFAULT_PROMPTS
    prompt_sources: Mapping[str, Setting] = field(default_factory=dict)
    #: The environment the model is opened with: the process's, with the variables a
    #: GraphRAG project's .env gives that it lacks (an API key: never shown).
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    #: The GraphRAG project's settings (--graphrag-settings); its model, retrieval and
    #: dynamic selection settings are resolved here (source "settings").
    project: Project | None = None


def _user_source(label: str) -> Source:
    return "environment" if label.startswith(ENV_PREFIX) else "config"


class SettingsResolver:
    """The user's defaults (the config file, read once, and the environment over it), and the
    flags or form values over those."""

    def __init__(self, defaults: UserDefaults | None = None, project: Project | None = None) -> None:
        self.defaults = defaults or UserDefaults()
        #: A GraphRAG project's settings.yaml (--graphrag-settings): below the environment,
        #: above the config file.
        self.project = project

    @classmethod
    def load(
        cls, config_path: Path | None, *, no_config: bool, environ: Mapping[str, str],
        graphrag_settings: Path | None = None,
    ) -> SettingsResolver:
        defaults = load_user_defaults(config_path, no_config=no_config, environ=environ)
        project = load_project(graphrag_settings, environ) if graphrag_settings is not None else None
        return cls(defaults, project)

    @property
    def environ_overlay(self) -> Mapping[str, str]:
        """Variables the model needs that the environment lacks (the project's .env key)."""
        return self.project.environ if self.project is not None else {}

    def _over_config(self, user: dict[str, Setting], values: Mapping[str, Any], labels: Mapping[str, str]) -> None:
        """The project's values over the config file's (never over a variable's)."""
        for name, value in values.items():
            if name not in user or user[name].source == "config":
                user[name] = Setting(value, "settings", labels[name])

    def model_defaults(self) -> dict[str, Any]:
        """The [model] settings: the environment over the project over the config file."""
        user = self.user_settings(self.defaults.model)
        if self.project is not None:
            self._over_config(user, self.project.model, self.project.labels)
        return {name: setting.value for name, setting in user.items()}

    def user_settings(self, section: Mapping[str, Any]) -> dict[str, Setting]:
        labels = self.defaults.labels
        return {k: Setting(v, _user_source(labels.get(k, k)), labels.get(k, k)) for k, v in section.items()}

    def retrieval_given(
        self, values: Mapping[str, Any | None], source: Source = "flag", labels: Mapping[str, str] | None = None
    ) -> dict[str, Setting]:
        """The retrieval options given: `values` (None: not given) over the user's defaults
        (the environment over the project's settings.yaml over the config file)."""
        given = self.user_settings(self.defaults.retrieval)
        if self.project is not None:
            self._over_config(given, self.project.retrieval_defaults(), self.project.retrieval_labels())
        for name, value in values.items():
            if value is not None:
                given[name] = Setting(value, source, (labels or {}).get(name) or flag(name))
        return given

    def resolve(self, flags: Mapping[str, Any | None], *, with_model: bool = True) -> Resolved:
        """The options and model settings of a command from its flags. With the local LLM the
        budgets are fitted to one slot and the server gets one slot per Map worker."""
        given = self.retrieval_given({n: flags.get(n) for n in FALLBACK_DEFAULTS})
        options = resolve_retrieval(given)  # checked first: a bad option is the first error
        selection = resolve_selection(self.selection_given(flags))
        history = self.history(flags)
        prompts, prompt_sources = self.prompts(flags)
        if not with_model:
            return Resolved(options, user_defaults=self.defaults, history=history, selection=selection,
                            prompts=prompts, prompt_sources=prompt_sources, project=self.project)
        settings = resolve_model_settings({k: flags.get(k) for k in MODEL_KEYS}, self.model_defaults())
        if settings.kind == "local":
            options = resolve_retrieval(given, "local")
            settings = settings.model_copy(update={"local_slots": options.options.concurrency})
        environ = {**os.environ, **self.environ_overlay} if self.environ_overlay else os.environ
        return Resolved(options, settings, self.model_sources(flags, settings), self.defaults, history, selection,
                        prompts, prompt_sources, environ, self.project)

    def selection_given(
        self, values: Mapping[str, Any | None], source: Source = "flag", labels: Mapping[str, str] | None = None
    ) -> dict[str, Setting]:
        """The selection settings given: `values` (None or False: not given) over the user's
        defaults (the environment over the project's settings.yaml over the config file)."""
        given = self.user_settings(self.defaults.selection)
        if self.project is not None:
            self._over_config(given, self.project.selection_defaults(), self.project.selection_labels())
        for name in SELECTION_DEFAULTS:
            value = values.get(name)
            if value is not None and value is not False:
                given[name] = Setting(value, source, (labels or {}).get(name) or flag(name))
        return given

    def prompts(
        self, values: Mapping[str, Any | None], source: Source = "flag", labels: Mapping[str, str] | None = None
    ) -> tuple[Prompts, dict[str, Setting]]:
        """The templates (--prompts DIR, else GRAPHRAG_TUI_PROMPTS or [prompts] dir, else the
        built-in ones) and the answer's form (--response-type, --general-knowledge,
        --answer-language, else their variables or [prompts] keys), read and checked.
        `values` are flags (or form fields, with `source` and `labels`); None: not given."""
        chosen = self.user_settings(self.defaults.prompts)
        for name, key in PROMPT_KEYS.items():
            value = values.get(key)
            if value is not None:
                chosen[name] = Setting(value, source, (labels or {}).get(key) or PROMPT_FLAGS[name])
        directory = chosen.get("dir")
        prompts = load_prompts(
            user_path(directory.value, directory.label) if directory is not None else None,
            response_type=form_text(_value(chosen, "response_type"), _name(chosen, "response_type")),
            general_knowledge=bool(_value(chosen, "general_knowledge")),
            answer_language=form_text(_value(chosen, "answer_language"), _name(chosen, "answer_language")),
            label=directory.label if directory is not None else "--prompts",
        )
        sources = {name: chosen.get(name) or Setting(None, "default", PROMPT_FLAGS[name]) for name in PROMPT_KEYS}
        return prompts, sources

    def history(self, flags: Mapping[str, Any | None]) -> HistoryChoice:
        """--no-history, else --history PATH, else GRAPHRAG_TUI_HISTORY or [history] path,
        else the default file; [history] enabled = false (or GRAPHRAG_TUI_HISTORY_ENABLED)
        turns it off unless --history is given."""
        given, off = flags.get("history"), flags.get("no_history")
        if given is not None and off:
            raise InputError("--history and --no-history cannot be used together")
        user = self.user_settings(self.defaults.history)
        if given is not None:
            return HistoryChoice(user_path(given, "--history"), True, "flag", "--history")
        path = user_path(user["path"].value, user["path"].label) if "path" in user else default_history_path()
        if off:
            return HistoryChoice(path, False, "flag", "--no-history")
        if "enabled" in user and user["enabled"].value is False:
            return HistoryChoice(path, False, user["enabled"].source, user["enabled"].label)
        if "path" in user:
            return HistoryChoice(path, True, user["path"].source, user["path"].label)
        return HistoryChoice(path, True, "default", "the default run history")

    def model_sources(self, flags: Mapping[str, Any | None], settings: ModelSettings) -> dict[str, Setting]:
        user = self.user_settings(self.defaults.model)
        if self.project is not None:
            self._over_config(user, self.project.model, self.project.labels)
        sources: dict[str, Setting] = {}
        for key in MODEL_KEYS:
            value = getattr(settings, key)
            label = MODEL_FLAGS.get(key) or flag(key)
            if flags.get(key) not in (None, False):
                sources[key] = Setting(value, "flag", label)
            elif key in user and not (key == "base_url" and settings.local_llm):
                sources[key] = Setting(value, user[key].source, user[key].label)
            else:
                sources[key] = Setting(value, "default", label)
        return sources


#: The prompt settings: [prompts] key -> the flag's dest.
PROMPT_KEYS = {"dir": "prompts", "response_type": "response_type", "general_knowledge": "general_knowledge",
               "answer_language": "answer_language"}
PROMPT_FLAGS = {"dir": "--prompts", "response_type": "--response-type", "general_knowledge": "--general-knowledge",
                "answer_language": "--answer-language"}


def _value(chosen: Mapping[str, Setting], name: str) -> Any:
    setting = chosen.get(name)
    return setting.value if setting is not None else None


def _name(chosen: Mapping[str, Setting], name: str) -> str:
    setting = chosen.get(name)
    return setting.label if setting is not None else PROMPT_FLAGS[name]


def prices_for(table: Mapping[str, Prices], model: ChatModel) -> Prices | None:
    """The `[prices."name"]` table of the model that answers (an endpoint's model name, or
    an Azure deployment's), if the config has one."""
    name = getattr(model, "model", None)
    return table.get(name) if isinstance(name, str) else None


def parse_max_cost(value: Any, label: str = "--max-cost") -> float | None:
    """A positive number of dollars, or None when not given."""
    if value is None:
        return None
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", value.strip()):
        number = float(value)
    if number is None or not (0 < number < float("inf")):
        raise InputError(f"{label} must be a positive number of dollars, got {shown(value)}")
    return number


def cost_limit_prices(defaults: UserDefaults, model: ChatModel, max_cost: float | None) -> Prices | None:
    """The prices of the answering model; InputError when --max-cost is given without them
    (a limit that cannot be judged is no limit)."""
    prices = prices_for(defaults.prices, model)
    if max_cost is not None and prices is None:
        name = getattr(model, "model", None)
        if not isinstance(name, str):
            raise InputError("--max-cost needs an endpoint model (--base-url) with prices in the config file")
        raise InputError(
            f"--max-cost needs the prices of model {name!r}: add a [prices.\"{name}\"] table "
            "(input and output, dollars per million tokens) to the config file"
        )
    return prices


def resolve_retrieval(
    given: Mapping[str, Setting],
    model_kind: str = "extractive",
    *,
    names: Mapping[str, str] | None = None,
    context_window: int | None = None,
) -> ResolvedOptions:
    """The retrieval options from the given ones (the others default), checked; for the local
    model fitted to one slot of its context window (read from the installed model unless
    given). `names` names the options nobody gave, in messages (default: their flags)."""
    if model_kind == "local":
        if context_window is None:
            context_window = local_llm.model_context_window()
        return fit_local(given, context_window, names=names)
    return _resolve(given, names)


def _label(name: str, given: Mapping[str, Setting], names: Mapping[str, str] | None) -> str:
    setting = given.get(name)
    return setting.label if setting is not None else (names or {}).get(name) or flag(name)


def _resolve(given: Mapping[str, Setting], names: Mapping[str, str] | None) -> ResolvedOptions:
    unknown = sorted(set(given) - set(FALLBACK_DEFAULTS))
    if unknown:
        raise InputError(f"unknown retrieval option {unknown[0]!r}")
    options = validated_options(
        {}, {n: s.value for n, s in given.items()}, {n: _label(n, given, names) for n in FALLBACK_DEFAULTS}
    )
    return _with_sources(options, given, names)


def _with_sources(
    options: SearchOptions, given: Mapping[str, Setting], names: Mapping[str, str] | None
) -> ResolvedOptions:
    sources = {
        n: Setting(getattr(options, n), given[n].source if n in given else "default", _label(n, given, names))
        for n in FALLBACK_DEFAULTS
    }
    return ResolvedOptions(options, sources)


def fit_local(
    given: Mapping[str, Setting], context_window: int, *, names: Mapping[str, str] | None = None
) -> ResolvedOptions:
    """Retrieval options for the local model, whose context window is split evenly over its
    parallel slots (one slot per Map worker), so every prompt + reserve must fit one slot.

    - concurrency: as given, else 1;
    - slot context = context window // concurrency; limit = slot context - template tokens;
    - a given budget above the limit is an InputError naming it;
    - a default budget is capped to 80% of the slot (headroom for the estimate's undercount)
      and to 2048 tokens (batches a CPU answers within seconds, not minutes);
    - a default reserve is capped to a quarter of its budget; a reserve that leaves no
      prompt is an InputError.
    """
    base = _resolve(given, names).options  # validates every given value as usual

    def label(name: str) -> str:
        return _label(name, given, names)

    concurrency = base.concurrency if "concurrency" in given else DEFAULT_CONCURRENCY
    slot = context_window // concurrency
    if slot < MIN_SLOT_CONTEXT:
        raise InputError(
            f"{label('concurrency')} {concurrency} splits the local model's context window of {context_window} tokens "
            f"into slots of {slot} tokens; use at most {max(1, context_window // MIN_SLOT_CONTEXT)}"
        )
    limit = slot - TEMPLATE_TOKENS
    values: dict[str, int] = {"concurrency": concurrency}
    for stage in ("map", "reduce"):
        budget_name, reserve_name = f"{stage}_budget", f"{stage}_reserve"
        budget: int = getattr(base, budget_name)
        if budget_name in given:
            if budget > limit:
                raise InputError(
                    f"{label(budget_name)} {budget} does not fit the local model: with {label('concurrency')} "
                    f"{concurrency} each slot holds {slot} tokens, so {label(budget_name)} can be at most {limit}"
                )
        else:
            budget = min(budget, slot * DEFAULT_FILL_PERCENT // 100, DEFAULT_BUDGET_CAP)
        reserve: int = getattr(base, reserve_name)
        if reserve_name not in given:
            reserve = min(reserve, budget // 4)
        if reserve >= budget:
            raise InputError(
                f"{label(reserve_name)} {reserve} leaves no room for a prompt in {label(budget_name)} {budget} "
                f"(the local model's slots hold {slot} tokens)"
            )
        values[budget_name], values[reserve_name] = budget, reserve
    return _with_sources(SearchOptions(**values), given, names)


def fit_local_options(
    request: Mapping[str, Any | None], defaults: Mapping[str, Any | None] | None, context_window: int
) -> SearchOptions:
    """`fit_local` for values named by their flags: `request` (flags) over `defaults`."""
    given = {n: Setting(v, "config", flag(n)) for n, v in (defaults or {}).items() if v is not None}
    given.update({n: Setting(v, "flag", flag(n)) for n, v in request.items() if v is not None})
    return fit_local(given, context_window).options


def form_defaults(given: Mapping[str, Setting], model_kind: str, *, names: Mapping[str, str]) -> SearchOptions:
    """What a form shows in the option fields the user has not edited: the given options,
    else the defaults; for the local LLM the defaults fitted to one slot when that is
    possible (a given option that does not fit is shown as given: running says why)."""
    values = {n: s.value for n, s in given.items()}
    if model_kind == "local":
        try:
            window = local_llm.model_context_window()
        except InputError:  # not installed: running says so
            return _resolve(given, names).options
        concurrency = {n: s for n, s in given.items() if n == "concurrency"}
        for attempt in (given, concurrency, {}):
            try:
                return fit_local(attempt, window, names=names).options.model_copy(update=values)
            except InputError:
                continue
    return _resolve(given, names).options
