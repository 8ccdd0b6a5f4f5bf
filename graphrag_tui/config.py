"""The user's defaults: `config.toml` in the user config directory (or --config PATH), then
`GRAPHRAG_TUI_<KEY>` environment variables over it. Flags override both; --no-config ignores both.

```toml
[retrieval]
map_budget = 8000
reduce_budget = 8000
map_reserve = 512
reduce_reserve = 1024
concurrency = 4

[model]
base_url = "http://localhost:11434/v1"
model = "llama3.1"
api_key_env = "MY_GATEWAY_KEY"
timeout = 120
response_format = "json_object"
max_response_bytes = 8388608
requests_per_minute = 500       # caps: requests and tokens per minute (none by default)
tokens_per_minute = 200000
max_rate_wait = 300             # seconds one batch may wait in all for 429s
temperature = 0.2            # top_p, model_seed, reasoning_effort, max_tokens_field,
api_key_header = "X-Api-Key" # ... are optional too

[model.headers]              # extra request headers (GRAPHRAG_TUI_HEADERS: a JSON object)
X-Team = "search"

[model.extra_body]           # extra body fields (GRAPHRAG_TUI_EXTRA_BODY: a JSON object)
service_tier = "flex"

[prices."gpt-4o-mini"]       # dollars per million tokens (the file only)
input = 0.15
output = 0.60
cached_input = 0.075

[keymap]  # binding id = comma-separated keys (the file only)
export = "e,ctrl+e"

[history]  # the run history (GRAPHRAG_TUI_HISTORY, GRAPHRAG_TUI_HISTORY_ENABLED)
path = "~/runs/history.db"
enabled = true

[prompts]  # the prompt templates and the answer's form (GRAPHRAG_TUI_PROMPTS: the directory)
dir = "~/my-prompts"                 # map.txt, reduce.txt, rate.txt (`graphrag-tui prompts export DIR`)
response_type = "a bulleted list"    # GRAPHRAG_TUI_RESPONSE_TYPE
general_knowledge = false            # GRAPHRAG_TUI_GENERAL_KNOWLEDGE
answer_language = "French"           # GRAPHRAG_TUI_ANSWER_LANGUAGE

[selection]  # community selection (issue 15): level, rollup or dynamic
select = "dynamic"
rate_threshold = 1   # dynamic: keep a community rated at least this (0..5)
keep_parent = false
max_level = 2        # dynamic: rate a whole next level at most down to this one
rate_repeats = 1     # dynamic: ratings per community, majority vote
min_rank = 5.0       # every mode: only communities of at least this rank
```

pydantic-settings reads both sources and merges them; pydantic checks the values. Each source
is also checked on its own, so a bad file value is an error even where a variable overrides
it, and every error is one line naming the file, section and key, or the variable.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .engine import Prices, form_text, has_surrogates, parse_max_rate_wait, parse_option, parse_per_minute, shown
from .engine.selection import check_selection
from .engine.usage import MAX_PRICE
from .errors import InputError
from .models.factory import (
    parse_api_key_header,
    parse_extra_body,
    parse_headers,
    parse_max_response_bytes,
    parse_max_tokens_field,
    parse_model_seed,
    parse_reasoning_effort,
    parse_temperature,
    parse_timeout,
    parse_top_p,
)
from .models.openai_http import RESPONSE_FORMATS, parse_base_url
from .user_files import ENV_PREFIX, default_config_path, is_there, read_user_file

#: Stands for the setting in a check's message: pydantic reports the reason alone, at the
#: value's location, and `_one_line` names the setting from the source the value came from.
_SETTING = "\x00"


def _checked_by(check: Callable[[Any, str], Any]) -> Callable[[Any], Any]:
    """A pydantic validator from `check(value, label)`, whose InputError starts with the label."""

    def validate(value: Any) -> Any:
        try:
            return check(value, _SETTING)
        except InputError as error:
            raise ValueError(str(error)) from None

    return validate


def _string(value: Any, label: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{label} must be a string, got {shown(value)}")
    return value


def _response_format(value: Any, label: str) -> str:
    text = _string(value, label)
    if text not in RESPONSE_FORMATS:
        raise InputError(f"{label} must be one of {', '.join(RESPONSE_FORMATS)}, got {shown(value)}")
    return text


_KEY_NAME = re.compile(r"[!-+\--~]+")  # printable ASCII but space and comma: `ctrl+e`, `f1`, `question_mark`


def _key_list(value: Any, label: str) -> str:
    """Comma-separated key names, as Textual's `App.set_keymap` takes them (spaces around
    the commas dropped: Textual would keep them as part of the key)."""
    keys = [key.strip(" ") for key in _string(value, label).split(",")]
    if not all(_KEY_NAME.fullmatch(key) for key in keys):
        raise InputError(f"{label} must be key names separated by commas, like \"e,ctrl+e\", got {shown(value)}")
    return ",".join(keys)


Text = Annotated[str | None, BeforeValidator(_checked_by(_string))]


def _base_url(value: Any, label: str) -> str:
    parse_base_url(_string(value, label), label)
    return value  # type: ignore[no-any-return]


class RetrievalConfig(BaseModel):
    """[retrieval]: the search options' defaults (SPEC §3.1); the keys of engine/options.py."""

    model_config = ConfigDict(extra="forbid")

    map_budget: int | None = None
    reduce_budget: int | None = None
    map_reserve: int | None = None
    reduce_reserve: int | None = None
    concurrency: int | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _option(cls, value: Any, info: ValidationInfo) -> Any:
        return _checked_by(partial(parse_option, str(info.field_name)))(value)


class ModelConfig(BaseModel):
    """[model]: the chat-completions endpoint's defaults."""

    model_config = ConfigDict(extra="forbid")

    base_url: Annotated[str | None, BeforeValidator(_checked_by(_base_url))] = None
    model: Text = None
    api_key_env: Text = None
    timeout: Annotated[float | None, BeforeValidator(_checked_by(parse_timeout))] = None
    response_format: Annotated[str | None, BeforeValidator(_checked_by(_response_format))] = None
    max_response_bytes: Annotated[int | None, BeforeValidator(_checked_by(parse_max_response_bytes))] = None
    requests_per_minute: Annotated[int | None, BeforeValidator(_checked_by(parse_per_minute))] = None
    tokens_per_minute: Annotated[int | None, BeforeValidator(_checked_by(parse_per_minute))] = None
    max_rate_wait: Annotated[float | None, BeforeValidator(_checked_by(parse_max_rate_wait))] = None
    temperature: Annotated[float | None, BeforeValidator(_checked_by(parse_temperature))] = None
    top_p: Annotated[float | None, BeforeValidator(_checked_by(parse_top_p))] = None
    model_seed: Annotated[int | None, BeforeValidator(_checked_by(parse_model_seed))] = None
    reasoning_effort: Annotated[str | None, BeforeValidator(_checked_by(parse_reasoning_effort))] = None
    max_tokens_field: Annotated[str | None, BeforeValidator(_checked_by(parse_max_tokens_field))] = None
    api_key_header: Annotated[str | None, BeforeValidator(_checked_by(parse_api_key_header))] = None
    headers: Annotated[dict[str, str] | None, BeforeValidator(_checked_by(parse_headers))] = None
    extra_body: Annotated[dict[str, Any] | None, BeforeValidator(_checked_by(parse_extra_body))] = None


def _enabled(value: Any, label: str) -> bool:
    """true/false in the file; true/false/1/0/yes/no/on/off in a variable."""
    if isinstance(value, bool):
        return value
    words = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}
    if isinstance(value, str) and value.strip().lower() in words:
        return words[value.strip().lower()]
    raise InputError(f"{label} must be true or false, got {shown(value)}")


class HistoryConfig(BaseModel):
    """[history]: where runs are recorded, and whether they are."""

    model_config = ConfigDict(extra="forbid")

    path: Text = None
    enabled: Annotated[bool | None, BeforeValidator(_checked_by(_enabled))] = None


def _form_text(value: Any, label: str) -> str | None:
    return form_text(_string(value, label), label)


class PromptsConfig(BaseModel):
    """[prompts]: the template directory and the answer's form."""

    model_config = ConfigDict(extra="forbid")

    dir: Text = None
    response_type: Annotated[str | None, BeforeValidator(_checked_by(_form_text))] = None
    general_knowledge: Annotated[bool | None, BeforeValidator(_checked_by(_enabled))] = None
    answer_language: Annotated[str | None, BeforeValidator(_checked_by(_form_text))] = None


class SelectionConfig(BaseModel):
    """[selection]: how the communities are chosen (engine/selection.py)."""

    model_config = ConfigDict(extra="forbid")

    select: str | None = None
    rate_threshold: int | None = None
    keep_parent: bool | None = None
    max_level: int | None = None
    rate_repeats: int | None = None
    min_rank: float | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _setting(cls, value: Any, info: ValidationInfo) -> Any:
        return _checked_by(partial(check_selection, str(info.field_name)))(value)


class Settings(BaseSettings):
    """The whole file; the sources are given when it is built (`_build_sources`)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, case_sensitive=True, extra="forbid")

    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    #: Model name -> its prices in dollars per million tokens (the file only).
    prices: dict[str, Prices] = Field(default_factory=dict)
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    #: Binding id -> comma-separated keys; the app checks the ids against its bindings.
    keymap: dict[str, Annotated[str, BeforeValidator(_checked_by(_key_list))]] = Field(default_factory=dict)


#: The sections with fixed keys; each key is also read from the variable GRAPHRAG_TUI_<KEY>.
SECTIONS = {
    "retrieval": tuple(RetrievalConfig.model_fields),
    "model": tuple(ModelConfig.model_fields),
    "history": tuple(HistoryConfig.model_fields),
    "prompts": tuple(PromptsConfig.model_fields),
    "selection": tuple(SelectionConfig.model_fields),
}
#: Variables not named GRAPHRAG_TUI_<KEY>.
ENV_NAMES = {"path": ENV_PREFIX + "HISTORY", "enabled": ENV_PREFIX + "HISTORY_ENABLED", "dir": ENV_PREFIX + "PROMPTS"}
_KNOWN_SECTIONS = ", ".join(f"[{name}]" for name in Settings.model_fields)


class UserDefaults(BaseModel):
    """Checked values by section; `labels` names where each came from, for messages
    (`config file P: [retrieval] map_budget` or `GRAPHRAG_TUI_MAP_BUDGET`)."""

    retrieval: dict[str, Any] = {}
    model: dict[str, Any] = {}
    history: dict[str, Any] = {}
    prompts: dict[str, Any] = {}
    selection: dict[str, Any] = {}
    #: Binding id -> comma-separated keys, from the file's [keymap] (named by `file_label`).
    keymap: dict[str, str] = {}
    #: Model name -> prices, from the file's [prices."model"] tables.
    prices: dict[str, Prices] = {}
    labels: dict[str, str] = {}
    #: The config file path, if one was read.
    config_file: str | None = None


def file_label(path: Path | str, section: str, key: str) -> str:
    """How messages name a key of the config file."""
    return f"config file {path}: [{section}] {key if _KEY_NAME.fullmatch(key) else repr(key)}"


#: More dots than any line of a config file has (a key's parts: `a.b.c = 1`).
MAX_DOTS_A_LINE = 256


class ConfigFileSource(TomlConfigSettingsSource):
    """The TOML file, which must exist (it was given, or found); any reading error is one line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = f"config file {path}: "
        super().__init__(Settings, toml_file=path)
        self.data: dict[str, Any] = self.toml_data

    def label(self, section: str, key: str) -> str:
        return file_label(self.path, section, key)

    def _read_files(self, files: Any, deep_merge: bool = False) -> dict[str, Any]:
        return self._read_file(self.path)

    def _read_file(self, path: Any) -> dict[str, Any]:
        try:
            text = read_user_file(path, "config file").decode("utf-8")
            for number, line in enumerate(text.splitlines(), 1):
                if line.count(".") > MAX_DOTS_A_LINE and not line.lstrip().startswith("#"):
                    raise InputError(f"config file {path} is not read: line {number} has over {MAX_DOTS_A_LINE} "
                                     "dots (TOML's reader takes time that grows with the square of a key's parts: "
                                     "32,000 took 18 s)")
            return tomllib.loads(text)
        except FileNotFoundError:
            what = "is a symbolic link to nothing" if Path(path).is_symlink() else "does not exist"
            raise InputError(f"config file {path} {what}") from None
        except OSError as error:
            raise InputError(f"config file {path} cannot be read: {error.strerror or error}") from None
        except UnicodeDecodeError as error:
            raise InputError(f"config file {path} is not UTF-8 text (byte {error.start})") from None
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"config file {path} is not valid TOML: {error}") from None
        except (RecursionError, ValueError):  # arrays nested thousands deep; integers of thousands of digits
            raise InputError(f"config file {path} is not valid TOML: a value is nested too deeply or too long") from None


class EnvironmentSource(EnvSettingsSource):
    """GRAPHRAG_TUI_<KEY> for each key of SECTIONS (flat names: the keys are unique across
    sections); an empty variable counts as unset."""

    where = ""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(Settings)
        self.data: dict[str, dict[str, str]] = {}
        for section, keys in SECTIONS.items():
            for key in keys:
                name = self.label(section, key)
                value = self.env_vars.get(name)
                if value is not None:
                    if has_surrogates(value):
                        raise InputError(f"{name} is not valid UTF-8")
                    self.data.setdefault(section, {})[key] = value

    def label(self, section: str, key: str) -> str:
        return ENV_NAMES.get(key, self.env_prefix + key.upper())

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # Only our variables: the others (API keys among them) are never read here.
        return {name: value for name, value in self._environ.items() if name.startswith(self.env_prefix) and value != ""}

    def __call__(self) -> dict[str, Any]:
        return self.data


Source = ConfigFileSource | EnvironmentSource


def load_user_defaults(
    config_path: Path | None, *, no_config: bool, environ: Mapping[str, str]
) -> UserDefaults:
    """The config file's values, then the environment's over them, checked: a bad value is
    reported naming its file, section and key, or its variable."""
    if no_config:
        return UserDefaults()
    path = config_path or default_config_path()
    sources: list[Source] = []
    # The default file too is read when it is there in any form: a folder, a FIFO or a
    # dangling link in its place is an error, not a config silently left unread.
    if config_path is not None or is_there(path):
        sources.append(ConfigFileSource(path))
        _settings(sources[-1])
    sources.append(EnvironmentSource(environ))
    _settings(sources[-1])
    settings = _settings(*reversed(sources))  # the first source wins
    labels = {}
    for source in sources:  # the variables' labels over the file's
        for section in SECTIONS:
            labels.update({key: source.label(section, key) for key in source.data.get(section, {})})
    return UserDefaults(
        retrieval=settings.retrieval.model_dump(exclude_unset=True),
        model=settings.model.model_dump(exclude_unset=True),
        history=settings.history.model_dump(exclude_unset=True),
        prompts=settings.prompts.model_dump(exclude_unset=True),
        selection=settings.selection.model_dump(exclude_unset=True),
        keymap=settings.keymap,
        prices=settings.prices,
        labels=labels,
        config_file=str(path) if isinstance(sources[0], ConfigFileSource) else None,
    )


def _settings(*sources: Source) -> Settings:
    """The settings from the sources, the first winning. An error is named from `sources[0]`:
    each source is checked alone before they are merged, so a merge does not fail."""
    try:
        return Settings(_build_sources=(sources, {}))  # type: ignore[call-arg]  # BaseSettings's own argument
    except ValidationError as error:
        raise _one_line(error, sources[0]) from None


def _one_line(error: ValidationError, source: Source) -> InputError:
    """The first problem in the source's order, as one line naming where it is."""
    order: dict[tuple[Any, ...], int] = {(section,): index for index, section in enumerate(source.data)}
    for section, values in source.data.items():
        if isinstance(values, dict):
            order.update({(section, key): index for index, key in enumerate(values)})

    def position(loc: tuple[int | str, ...]) -> tuple[int, int]:
        """(the section's place, the key's place in it): a section's own problem comes first."""
        return order.get(loc[:1], len(order)), (order.get(loc[:2], -1) if len(loc) > 1 else -1)

    details = min(error.errors(), key=lambda details: position(details["loc"]))
    section, *rest = (str(part) for part in details["loc"])
    if not rest:
        if details["type"] == "extra_forbidden":
            unknown = f"section [{section}]" if isinstance(details["input"], dict) else f"key {section!r}"
            return InputError(f"{source.where}unknown {unknown} (known sections: {_KNOWN_SECTIONS})")
        return InputError(f"{source.where}{section} must be a section ([{section}] with its keys), got {shown(details['input'])}")
    if section == "prices" and len(rest) > 1:  # [prices."model"] key
        table = f'[prices.{json.dumps(rest[0])}]'
        if details["type"] == "extra_forbidden":
            return InputError(f"{source.where}unknown key {rest[1]!r} in {table} (known: input, output, cached_input)")
        if details["type"] == "missing":
            return InputError(f"{source.where}{table} needs {rest[1]} (dollars per million tokens)")
        return InputError(f"{source.where}{table} {rest[1]} must be a number of dollars per million tokens, "
                          f"from 0 to {MAX_PRICE:,}, got {shown(details['input'])}")
    if details["type"] == "extra_forbidden":
        return InputError(f"{source.where}unknown key {rest[0]!r} in [{section}]")
    reason = str(details.get("ctx", {}).get("error") if details["type"] == "value_error" else details["msg"])
    label = source.label(section, rest[0])
    return InputError(reason.replace(_SETTING, label, 1) if reason.startswith(_SETTING) else f"{label} {reason}")
