"""Output files never overwrite inputs: a path that is, or links to, an input is refused."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .errors import InputError


def is_same_file(a: Path, b: Path) -> bool:
    """True when `a` and `b` name one file: the same path, a symlink to it, or a hard link."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # either does not exist (yet)
        return False


def names_input(path: Path, source: Path) -> bool:
    """True when `path` is `source`: the same file, or, while neither exists, the same
    path once links are resolved (an SQLite companion such as a `-wal` comes and goes)."""
    return is_same_file(path, source) or os.path.realpath(path) == os.path.realpath(source)


def check_not_input(path: Path, inputs: Iterable[Path], label: str) -> None:
    """InputError when `path` resolves to one of `inputs` (same path, symlink or hard link)."""
    for source in inputs:
        if names_input(path, source):
            raise InputError(f"{label}: {path} is the input file {source}; choose another file")


def sqlite_files(path: Path) -> list[Path]:
    """An SQLite file with its journal companions, which hold committed rows (a WAL) or
    an unfinished transaction (a journal); named also after the file a link leads to, as
    SQLite names them."""
    named = [path, Path(os.path.realpath(path))] if os.path.islink(path) else [path]
    return [f.with_name(f.name + suffix) for f in named for suffix in ("", "-wal", "-shm", "-journal")]
