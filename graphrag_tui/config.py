"""The user's defaults: `config.toml` in the user config directory (or --config PATH), then
`GRAPHRAG_TUI_<OPTION>` environment variables. Flags override both; --no-config ignores both.

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
```
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel

from .engine import FALLBACK_DEFAULTS, has_surrogates, parse_option, shown
from .errors import InputError
from .models.factory import parse_max_response_bytes, parse_timeout
from .models.openai_http import RESPONSE_FORMATS

APP_NAME = "graphrag-tui"
ENV_PREFIX = "GRAPHRAG_TUI_"
RETRIEVAL_KEYS = tuple(FALLBACK_DEFAULTS)
MODEL_KEYS = ("base_url", "model", "api_key_env", "timeout", "response_format", "max_response_bytes")
SECTIONS = {"retrieval": RETRIEVAL_KEYS, "model": MODEL_KEYS}


class UserDefaults(BaseModel):
    """Checked values by section; `labels` names where each came from, for messages
    (`config file P: [retrieval] map_budget` or `GRAPHRAG_TUI_MAP_BUDGET`)."""

    retrieval: dict[str, Any] = {}
    model: dict[str, Any] = {}
    labels: dict[str, str] = {}
    #: The config file path, if one was read.
    config_file: str | None = None


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def load_user_defaults(
    config_path: Path | None, *, no_config: bool, environ: Mapping[str, str]
) -> UserDefaults:
    """The config file's values, then the environment's over them; each checked here, so a
    bad value is reported naming its file, section and key, or its variable."""
    if no_config:
        return UserDefaults()
    defaults = UserDefaults()
    path = config_path or default_config_path()
    if config_path is not None or path.is_file():
        _read_file(path, defaults)
    for section, keys in SECTIONS.items():
        for key in keys:
            name = ENV_PREFIX + key.upper()
            value = environ.get(name)
            if value is not None and value != "":
                if has_surrogates(value):
                    raise InputError(f"{name} is not valid UTF-8")
                _set(defaults, section, key, value, name)
    return defaults


def _read_file(path: Path, defaults: UserDefaults) -> None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"config file {path} does not exist") from None
    except OSError as error:
        raise InputError(f"config file {path} cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"config file {path} is not UTF-8 text (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"config file {path} is not valid TOML: {error}") from None
    except (RecursionError, ValueError):  # arrays nested thousands deep; integers of thousands of digits
        raise InputError(f"config file {path} is not valid TOML: a value is nested too deeply or too long") from None
    for section, values in data.items():
        if section not in SECTIONS:
            unknown = f"section [{section}]" if isinstance(values, dict) else f"key {section!r}"
            raise InputError(f"config file {path}: unknown {unknown} (known sections: [retrieval], [model])")
        if not isinstance(values, dict):
            raise InputError(f"config file {path}: {section} must be a section ([{section}] with its keys), got {shown(values)}")
        for key, value in values.items():
            if key not in SECTIONS[section]:
                raise InputError(f"config file {path}: unknown key {key!r} in [{section}]")
            _set(defaults, section, key, value, f"config file {path}: [{section}] {key}")
    defaults.config_file = str(path)


def _set(defaults: UserDefaults, section: str, key: str, value: Any, label: str) -> None:
    getattr(defaults, section)[key] = _checked(key, value, label)
    defaults.labels[key] = label


def _checked(key: str, value: Any, label: str) -> Any:
    """The value of one setting, checked; InputError naming `label` otherwise."""
    if key in RETRIEVAL_KEYS:
        return parse_option(key, value, label)
    if key == "timeout":
        return parse_timeout(value, label)
    if key == "max_response_bytes":
        return parse_max_response_bytes(value, label)
    if not isinstance(value, str):
        raise InputError(f"{label} must be a string, got {shown(value)}")
    if key == "response_format" and value not in RESPONSE_FORMATS:
        raise InputError(f"{label} must be one of {', '.join(RESPONSE_FORMATS)}, got {shown(value)}")
    return value

