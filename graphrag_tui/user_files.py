"""Where the user's files are by default (platformdirs), and the prefix of the user's
variables: what a command needs to know before it reads any setting (config.py reads them)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from .errors import InputError

APP_NAME = "graphrag-tui"
ENV_PREFIX = "GRAPHRAG_TUI_"


def user_path(text: str | Path, label: str) -> Path:
    """A path the user gave (`~` expanded), or an InputError naming where it came from."""
    if not str(text):  # Path("") is the current directory
        raise InputError(f"{label}: the path is empty")
    if "\0" in str(text):
        raise InputError(f"{label}: the path holds a NUL character")
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~name of no user
        raise InputError(f"{label}: {str(text).partition('/')[0]} is no user's home directory") from None


#: More than any config file, settings.yaml, .env or prompt template holds.
MAX_USER_FILE_BYTES = 1 << 20


def read_user_file(path: Path, what: str) -> bytes:
    """A small regular file the user named, read no further than MAX_USER_FILE_BYTES:
    InputError past it, or for anything else (a FIFO nothing writes to blocked the reader
    forever, /dev/zero never ends). OSError as open() raises it (IsADirectoryError too)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without its writer
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise InputError(f"{what} {path} is not a regular file")
        data = handle.read(MAX_USER_FILE_BYTES + 1)
    if len(data) > MAX_USER_FILE_BYTES:
        raise InputError(f"{what} {path} is larger than {MAX_USER_FILE_BYTES} bytes")
    return data


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_history_path() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME)) / "history.db"


def is_there(path: Path) -> bool:
    """Whether something is at `path` in any form: a file, a folder, a FIFO, a dangling link."""
    return path.exists() or path.is_symlink()


def has_user_settings(config_path: Path | None, environ: Mapping[str, str]) -> bool:
    """Whether the user's defaults could say anything: a config file (given, or at its
    default place) or a GRAPHRAG_TUI_* variable that is not empty (config.py reads no other)."""
    if config_path is not None or is_there(default_config_path()):  # config.py says what is wrong with it
        return True
    return any(name.startswith(ENV_PREFIX) and value != "" for name, value in environ.items())
