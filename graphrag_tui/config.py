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

from .engine.options import FALLBACK_DEFAULTS
from .errors import InputError

APP_NAME = "graphrag-tui"
ENV_PREFIX = "GRAPHRAG_TUI_"
RETRIEVAL_KEYS = tuple(FALLBACK_DEFAULTS)
MODEL_KEYS = ("base_url", "model", "api_key_env", "timeout", "response_format", "max_response_bytes")
SECTIONS = {"retrieval": RETRIEVAL_KEYS, "model": MODEL_KEYS}


class UserDefaults(BaseModel):
    retrieval: dict[str, Any] = {}
    model: dict[str, Any] = {}
    #: Where the values came from, for messages: the config file path, if one was read.
    config_file: str | None = None


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def load_user_defaults(
    config_path: Path | None, *, no_config: bool, environ: Mapping[str, str]
) -> UserDefaults:
    if no_config:
        return UserDefaults()
    defaults = UserDefaults()
    path = config_path or default_config_path()
    if config_path is not None or path.is_file():
        _read_file(path, defaults)
    for section, keys in SECTIONS.items():
        for key in keys:
            value = environ.get(ENV_PREFIX + key.upper())
            if value is not None and value != "":
                getattr(defaults, section)[key] = value
    return defaults


def _read_file(path: Path, defaults: UserDefaults) -> None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"config file {path} cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"config file {path} is not valid TOML: {error}") from None
    for section, values in data.items():
        if section not in SECTIONS or not isinstance(values, dict):
            raise InputError(f"config file {path}: unknown section [{section}] (known: retrieval, model)")
        for key, value in values.items():
            if key not in SECTIONS[section]:
                raise InputError(f"config file {path}: unknown key {key!r} in [{section}]")
            getattr(defaults, section)[key] = value
    defaults.config_file = str(path)
