"""Output files never overwrite inputs: a path that is, or links to, an input is refused."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .errors import InputError


def input_named(path: Path, inputs: Iterable[Path]) -> Path | None:
    """The first of `inputs` that `path` is: the same file (the same path, a symlink or a
    hard link to it), or, while either does not exist, the same path once links are
    resolved (an SQLite companion such as a `-wal` comes and goes)."""
    own, real = _file_identity(path), _real(path)
    for source in inputs:
        if (own is not None and own == _file_identity(source)) or (real is not None and real == _real(source)):
            return source
    return None


def _real(path: Path) -> str | None:
    """The path with its links resolved; None for a path no file can have (a NUL in an
    edited history's store path made `runs export` an internal error)."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return None


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except (OSError, ValueError):  # it does not exist (yet), or no file can have its name
        return None
    return found.st_dev, found.st_ino


def check_not_input(path: Path, inputs: Iterable[Path], label: str) -> None:
    """InputError when `path` resolves to one of `inputs` (same path, symlink or hard link)."""
    source = input_named(path, inputs)
    if source is not None:
        raise InputError(f"{label}: {path} is the input file {source}; choose another file")


def sqlite_files(path: Path) -> list[Path]:
    """An SQLite file with its journal companions, which hold committed rows (a WAL) or
    an unfinished transaction (a journal); named also after the file a link leads to, as
    SQLite names them."""
    named = [path, Path(os.path.realpath(path))] if os.path.islink(path) else [path]
    # (`/` has no name to add a suffix to: str's + rather than with_name)
    return [Path(f"{f}{suffix}") for f in named for suffix in ("", "-wal", "-shm", "-journal")]
