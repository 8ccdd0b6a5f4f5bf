"""A Microsoft GraphRAG project's `settings.yaml` (`--graphrag-settings PATH`): its chat model
endpoint, its rate limits and its global search defaults, in the three layouts GraphRAG has
had:

- 1.x: `llm:` (one model);
- 2.x: `models:` (the one `global_search.chat_model_id` names, else `default_chat_model`);
- 3.x: `completion_models:` (the one `global_search.completion_model_id` names, else
  `default_completion_model`), rate limits under `rate_limit:`.

`${VAR}` in a value is read from the environment, else from the project's `.env` (the
directory of settings.yaml), as GraphRAG does. The API key is never read into a value that
could be shown: `api_key: ${VAR}` names the variable that holds it; a key that only `.env`
holds, or one written in the file itself, goes to the model through `Project.environ`,
whose repr shows names only. Fields this tool does not use are listed in `unused`."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from .arguments import shown
from .errors import InputError
from .user_files import read_user_file

#: The variable a key written in settings.yaml itself is handed to the model under.
FILE_KEY_VARIABLE = "GRAPHRAG_SETTINGS_API_KEY"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
Layout = Literal["1.x", "2.x", "3.x"]


class Secrets(dict[str, str]):
    """Variables for the model's environment (an API key among them): shown by name only."""

    def __repr__(self) -> str:
        return f"Secrets({sorted(self)})"

    __str__ = __repr__


@dataclass(frozen=True)
class DynamicSelection:
    """GraphRAG's dynamic community selection settings (`dynamic_search_*`); None: not set."""

    threshold: int | None = None
    keep_parent: bool | None = None
    num_repeats: int | None = None
    use_summary: bool | None = None
    max_level: int | None = None


#: The selection settings (SELECTION_DEFAULTS' names) GraphRAG's dynamic_search_* fields give.
SELECTION_FIELDS = {"rate_threshold": "threshold", "keep_parent": "keep_parent", "rate_repeats": "num_repeats",
                    "max_level": "max_level"}


@dataclass(frozen=True)
class GlobalSearchDefaults:
    """`global_search:`: token limits of the replies and of the data, and dynamic selection."""

    #: The Map reply's limit (1.x `map_max_tokens`, 2.x/3.x `map_max_length`).
    map_max_tokens: int | None = None
    #: The Reduce reply's limit (1.x `reduce_max_tokens`, 2.x/3.x `reduce_max_length`).
    reduce_max_tokens: int | None = None
    #: The Reduce data's limit (`data_max_tokens`).
    data_max_tokens: int | None = None
    #: One Map batch's data (1.x `max_tokens`, 2.x/3.x `max_context_tokens`).
    map_context_tokens: int | None = None
    dynamic: DynamicSelection = field(default_factory=DynamicSelection)


@dataclass(frozen=True)
class Project:
    path: Path
    layout: Layout
    #: The model settings read (base_url, model, api_key_env, requests_per_minute,
    #: tokens_per_minute), by the names of ModelSettings; what is not set is absent.
    model: dict[str, Any]
    #: Where each model setting came from: `settings.yaml P: models.default_chat_model.api_base`.
    labels: dict[str, str]
    global_search: GlobalSearchDefaults
    #: Variables the model needs that the environment lacks (from .env, or a key in the file).
    environ: Secrets
    #: Fields this tool does not use, dotted (`models.default_chat_model.concurrent_requests`).
    unused: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def retrieval_defaults(self) -> dict[str, int]:
        """The retrieval options the global search defaults give: each reply's limit as its
        reserve, and each stage's data limit plus that reserve as its budget."""
        g = self.global_search
        values: dict[str, int] = {}
        if g.map_max_tokens is not None:
            values["map_reserve"] = g.map_max_tokens
        if g.reduce_max_tokens is not None:
            values["reduce_reserve"] = g.reduce_max_tokens
        if g.map_context_tokens is not None:
            values["map_budget"] = g.map_context_tokens + (g.map_max_tokens or 0)
        if g.data_max_tokens is not None:
            values["reduce_budget"] = g.data_max_tokens + (g.reduce_max_tokens or 0)
        return values

    def selection_defaults(self) -> dict[str, Any]:
        """The dynamic selection settings the global search defaults give, by the names of
        engine/selection.py's SELECTION_DEFAULTS (`dynamic_search_use_summary` has none:
        the rating reads the community's text as the store holds it)."""
        dynamic = self.global_search.dynamic
        values = {setting: getattr(dynamic, field) for setting, field in SELECTION_FIELDS.items()}
        return {setting: value for setting, value in values.items() if value is not None}

    def selection_labels(self) -> dict[str, str]:
        return {setting: f"settings.yaml {self.path}: global_search.dynamic_search_{field}"
                for setting, field in SELECTION_FIELDS.items()}

    def retrieval_labels(self) -> dict[str, str]:
        where = f"settings.yaml {self.path}: global_search."
        g = self.global_search
        return {
            "map_reserve": where + ("map_max_tokens" if self.layout == "1.x" else "map_max_length"),
            "reduce_reserve": where + ("reduce_max_tokens" if self.layout == "1.x" else "reduce_max_length"),
            "map_budget": where + ("max_tokens" if self.layout == "1.x" else "max_context_tokens")
            + (" + the Map reply's limit" if g.map_max_tokens else ""),
            "reduce_budget": where + "data_max_tokens" + (" + the Reduce reply's limit" if g.reduce_max_tokens else ""),
        }


def read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (`export ` allowed, quotes stripped, `#` comments); {} without a file."""
    try:
        text = read_user_file(path, ".env").decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path} cannot be read: {getattr(error, 'strerror', None) or 'not UTF-8 text'}") from None
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if value[:1] in ("'", '"') and value.find(value[0], 1) > 0:  # quoted: up to its closing quote
            value = value[1:value.find(value[0], 1)]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[name.strip()] = value
    return values


#: The fewest first characters of a substituted value an error is searched for (fewer could
#: be any word of the message).
HIDDEN_PREFIX = 8


def _hide_starts(message: str, value: str, shortest: int, name: str) -> str:
    """`message` with each beginning of `value` in it, of `shortest` characters or more, the
    longest at each place, written `${name}`. (Trying each length in turn took minutes for a
    1 MB value.)"""
    out, done, head = [], 0, value[:shortest]
    at = message.find(head)
    while at != -1:
        low, high = shortest, min(len(value), len(message) - at)  # found at `at`: low; at most high
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if message.startswith(value[:middle], at) else (low, middle - 1)
        out += (message[done:at], f"${{{name}}}")
        done = at + low
        at = message.find(head, done)
    return "".join(out) + message[done:]


class _Reader:
    """One settings file's values, read with `${VAR}` substitution; errors name the field."""

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self.path = path
        self.environ = environ
        self.dotenv_path = path.parent / ".env"
        self.dotenv = read_dotenv(self.dotenv_path)
        self.needed = Secrets()
        #: Each variable's value as substituted, and its name: an error shows the name.
        self.substituted: dict[str, str] = {}

    def hidden(self, message: str) -> str:
        """`message` with every substituted value written as its `${NAME}` (a value in
        the wrong field, the API key's in a count, must not be shown)."""
        for value in sorted(self.substituted, key=len, reverse=True):
            if len(value) < 4:  # no secret, and "1" would be replaced all over the message
                continue
            # a value cut to its first characters (a quoted value is cut at 40) hides them too
            message = _hide_starts(message, value, min(len(value), HIDDEN_PREFIX), self.substituted[value])
        return message

    def where(self, dotted: str) -> str:
        return f"settings.yaml {self.path}: {dotted}"

    def variable(self, name: str, dotted: str) -> str:
        value = self.environ.get(name) or self.dotenv.get(name)
        if value:
            self.substituted[value] = name
            return value
        raise InputError(f"{self.where(dotted)} uses ${{{name}}}, which is set neither in the environment "
                         f"nor in {self.dotenv_path}")

    def text(self, value: Any, dotted: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise InputError(f"{self.where(dotted)} must be text, got a {type(value).__name__}")
        text = _VARIABLE.sub(lambda m: self.variable(m.group(1) or m.group(2), dotted), str(value)).strip()
        return text or None

    def count(self, value: Any, dotted: str, *, zero_is_none: bool = False) -> int | None:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("auto", "")):
            return None
        written = value  # (an error quotes it as written: `${VAR}`, not the variable's value)
        if isinstance(value, str):
            value = self.text(value, dotted)
            value = int(value) if value is not None and re.fullmatch("[0-9]{1,12}", value) else value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value > 10**12:
            raise InputError(f"{self.where(dotted)} must be a whole number, got {shown(written)}")
        return None if zero_is_none and value == 0 else value

    def flag(self, value: Any, dotted: str) -> bool | None:
        if value is None or isinstance(value, bool):
            return value
        raise InputError(f"{self.where(dotted)} must be true or false, got {shown(value)}")

    def api_key(self, value: Any, dotted: str) -> str | None:
        """The variable that holds the key; a key only .env has, or one in the file itself,
        is put in `needed` (never in a value that is shown)."""
        if value is None:
            return None
        if not isinstance(value, str):
            raise InputError(f"{self.where(dotted)} must be text")
        match = _VARIABLE.fullmatch(value.strip())
        if match is None:  # the key itself in the file
            if not value.strip():
                return None
            self.needed[FILE_KEY_VARIABLE] = value.strip()
            return FILE_KEY_VARIABLE
        name = match.group(1) or match.group(2)
        if not self.environ.get(name):
            self.needed[name] = self.variable(name, dotted)
        return name


def load_project(path: Path, environ: Mapping[str, str]) -> Project:
    """The project's settings, checked; InputError (one line) for a file that cannot be read,
    is not YAML, or holds a value this tool cannot use."""
    data = _read_yaml(path)
    reader = _Reader(path, environ)
    try:
        return _project(path, data, reader)
    except InputError as error:
        raise InputError(reader.hidden(str(error))) from None


def _project(path: Path, data: dict[str, Any], reader: _Reader) -> Project:
    search = data.get("global_search") or {}
    if not isinstance(search, dict):
        raise InputError(f"{reader.where('global_search')} must be a mapping")
    if isinstance(data.get("completion_models"), dict):
        layout: Layout = "3.x"
        model_id = reader.text(search.get("completion_model_id"), "global_search.completion_model_id") \
            or "default_completion_model"
        section, models = "completion_models", data["completion_models"]
    elif isinstance(data.get("models"), dict):
        layout = "2.x"
        model_id = reader.text(search.get("chat_model_id"), "global_search.chat_model_id") or "default_chat_model"
        section, models = "models", data["models"]
    elif isinstance(data.get("llm"), dict):
        layout, model_id, section, models = "1.x", None, "llm", {"": data["llm"]}
    else:
        raise InputError(f"settings.yaml {path}: no chat model (none of completion_models:, models:, llm:)")
    key = model_id or ""
    prefix = f"{section}.{model_id}" if model_id else section
    if key not in models or not isinstance(models[key], dict):
        known = ", ".join(sorted(str(k) for k in models)) or "none"
        raise InputError(f"settings.yaml {path}: {section} has no model {key!r} (it has: {known})")
    model, fields = _model(reader, models[key], prefix, layout)
    global_search, search_used = _global_search(reader, search, layout)
    unused = [f"{prefix}.{k}" for k in models[key] if k not in READ_FIELDS]
    unused += [f"global_search.{k}" for k in search if k not in search_used]
    unused += [name for name in data if name not in (section, "global_search")]
    notes = []
    if FILE_KEY_VARIABLE in reader.needed:
        notes.append(f"note: settings.yaml {path}: {prefix}.api_key holds the key itself; "
                     "${GRAPHRAG_API_KEY} with the key in .env keeps it out of the file")
    labels = {name: f"settings.yaml {path}: {prefix}.{field_name}" for name, field_name in fields.items()}
    return Project(path, layout, model, labels, global_search, reader.needed, tuple(unused), tuple(notes))


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = read_user_file(path, "settings.yaml").decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"--graphrag-settings: {path} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"--graphrag-settings: {path} is a directory (give its settings.yaml)") from None
    except OSError as error:
        raise InputError(f"--graphrag-settings: {path} cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"settings.yaml {path} is not UTF-8 text (byte {error.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or "not YAML"
        raise InputError(f"settings.yaml {path} is not valid YAML: {problem}{at}") from None
    except RecursionError:
        raise InputError(f"settings.yaml {path} is not valid YAML: nested too deeply") from None
    except ValueError as error:  # a value YAML reads with Python's int() or date(): 5,000 digits, February 30th
        raise InputError(f"settings.yaml {path} holds a value that cannot be read: {str(error)[:120]}") from None
    if not isinstance(data, dict):
        raise InputError(f"settings.yaml {path} must be a mapping of sections, got {type(data).__name__}")
    return {str(k): v for k, v in data.items()}


def _model(reader: _Reader, values: dict[Any, Any], prefix: str, layout: Layout) -> tuple[dict[str, Any], dict[str, str]]:
    """The endpoint: base_url (Azure: the classic deployment URL with its api-version),
    model, the key's variable, the rate limits; and each setting's field (dotted, after
    `prefix`). The fields read are in `fields`' values or READ_FIELDS."""
    def text(name: str) -> str | None:
        return reader.text(values.get(name), f"{prefix}.{name}")

    fields: dict[str, str] = {}
    kind = (text("type") or "").lower()
    provider = (text("model_provider") or "").lower()
    azure = "azure" in kind or provider == "azure"
    api_base, api_version = text("api_base"), text("api_version")
    deployment_field = "azure_deployment_name" if layout == "3.x" else "deployment_name"
    deployment = text(deployment_field)
    name = text("model")
    model: dict[str, Any] = {}
    if azure:
        if api_base is None:
            raise InputError(f"{reader.where(prefix + '.api_base')} is needed for an Azure model")
        deployment = deployment or name
        if deployment is None:
            raise InputError(f"{reader.where(prefix)}: an Azure model needs {deployment_field} or model")
        root = api_base.rstrip("/")
        if api_version:
            model["base_url"] = f"{root}/openai/deployments/{deployment}?api-version={api_version}"
            fields["base_url"] = f"api_base + {deployment_field if text(deployment_field) else 'model'} + api_version"
        else:
            model["base_url"], model["model"] = f"{root}/openai/v1", deployment
            fields["base_url"], fields["model"] = "api_base", deployment_field if text(deployment_field) else "model"
    else:
        model["base_url"] = api_base or "https://api.openai.com/v1"
        fields["base_url"] = "api_base" if api_base is not None else "model_provider (OpenAI's API)"
        if name is not None:
            model["model"], fields["model"] = name, "model"
    if api_base is not None:
        from .models.openai_http import parse_base_url  # (httpx, only for a project that names a URL)

        parse_base_url(model["base_url"], reader.where(f"{prefix}.api_base"))
    auth = (text("auth_method") or text("auth_type") or "api_key").lower()
    key_variable = reader.api_key(values.get("api_key"), f"{prefix}.api_key")
    if key_variable is not None:
        model["api_key_env"], fields["api_key_env"] = key_variable, "api_key"
    elif auth != "api_key":
        raise InputError(f"{reader.where(prefix)}: auth {auth} is not supported here; give an API key "
                         "(api_key: ${GRAPHRAG_API_KEY}, or --api-key-env)")
    if layout == "3.x":
        limits = values.get("rate_limit")
        if limits is not None and not isinstance(limits, dict):
            raise InputError(f"{reader.where(prefix + '.rate_limit')} must be a mapping")
        limits = limits or {}
        period = reader.count(limits.get("period_in_seconds"), f"{prefix}.rate_limit.period_in_seconds")
        if period == 0:  # (it was read as 60 seconds)
            raise InputError(f"{reader.where(prefix + '.rate_limit.period_in_seconds')} must be at least 1 second")
        period = period or 60
        for setting, key in (("requests_per_minute", "requests_per_period"), ("tokens_per_minute", "tokens_per_period")):
            count = reader.count(limits.get(key), f"{prefix}.rate_limit.{key}", zero_is_none=True)
            if count is not None:
                model[setting], fields[setting] = max(1, round(count * 60 / period)), f"rate_limit.{key}"
    else:
        for setting in ("requests_per_minute", "tokens_per_minute"):
            count = reader.count(values.get(setting), f"{prefix}.{setting}", zero_is_none=True)
            if count is not None:
                model[setting], fields[setting] = count, setting
    return model, fields


#: The model's fields read (the others are listed as not used).
READ_FIELDS = frozenset({
    "type", "model_provider", "api_base", "api_version", "deployment_name", "azure_deployment_name", "model",
    "auth_type", "auth_method", "api_key", "requests_per_minute", "tokens_per_minute", "rate_limit",
})


_DYNAMIC = {"threshold": "count", "keep_parent": "flag", "num_repeats": "count", "use_summary": "flag",
            "max_level": "count"}


def _global_search(reader: _Reader, search: dict[Any, Any], layout: Layout) -> tuple[GlobalSearchDefaults, set[str]]:
    old = layout == "1.x"
    names = {
        "map_max_tokens": "map_max_tokens" if old else "map_max_length",
        "reduce_max_tokens": "reduce_max_tokens" if old else "reduce_max_length",
        "data_max_tokens": "data_max_tokens",
        "map_context_tokens": "max_tokens" if old else "max_context_tokens",
    }
    used = set(names.values()) | {"chat_model_id", "completion_model_id"}
    counts = {name: reader.count(search.get(key), f"global_search.{key}") for name, key in names.items()}
    dynamic: dict[str, Any] = {}
    for name, kind in _DYNAMIC.items():
        key = f"dynamic_search_{name}"
        if name in SELECTION_FIELDS.values():  # use_summary is checked, not used: the rating
            used.add(key)  # reads each community's text as the store holds it
        value = search.get(key)
        dynamic[name] = reader.count(value, f"global_search.{key}") if kind == "count" \
            else reader.flag(value, f"global_search.{key}")
    return GlobalSearchDefaults(**counts, dynamic=DynamicSelection(**dynamic)), used


def unused_note(project: Project) -> Iterator[str]:
    """The note about what this tool does not use, and any other note: one line each."""
    yield from project.notes
    if project.unused:
        yield (f"note: settings.yaml {project.path} ({project.layout} layout): not used here: "
               + ", ".join(project.unused))
