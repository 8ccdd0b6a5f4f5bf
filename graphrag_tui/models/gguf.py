"""Just enough of the GGUF format to read a model's metadata without loading it.

Used to learn the local model's context window (`<arch>.context_length`) before any server
starts, so `plan --local-llm` can cap its budgets with no process and no network request.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"GGUF"

# value type -> struct format of a scalar
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    pass


#: Arrays of arrays deeper than this are not a model's metadata.
MAX_ARRAY_DEPTH = 8


def _remaining(f: BinaryIO) -> int:
    return os.fstat(f.fileno()).st_size - f.tell()


def _read(f: BinaryIO, size: int) -> bytes:
    """`size` bytes; a length past the file's end (10**18 claimed in 32 bytes) is a
    truncated file before anything is allocated."""
    if size > _remaining(f):
        raise GGUFError("truncated GGUF file")
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("truncated GGUF file")
    return data


def _unpack(f: BinaryIO, fmt: str) -> Any:
    return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]


def _string(f: BinaryIO) -> str:
    return _read(f, _unpack(f, "<Q")).decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int, depth: int = 0) -> Any:
    """A scalar or string value; arrays are skipped (returned as None)."""
    if kind in _SCALARS:
        return _unpack(f, _SCALARS[kind])
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        if depth >= MAX_ARRAY_DEPTH:
            raise GGUFError(f"GGUF arrays nested deeper than {MAX_ARRAY_DEPTH}")
        item_kind = _unpack(f, "<I")
        count = _unpack(f, "<Q")
        if count > _remaining(f):  # every item takes a byte at least
            raise GGUFError("truncated GGUF file")
        if item_kind in _SCALARS:
            _read_past(f, count * struct.calcsize(_SCALARS[item_kind]))
        else:
            for _ in range(count):
                _value(f, item_kind, depth + 1)
        return None
    raise GGUFError(f"unknown GGUF value type {kind}")


def _read_past(f: BinaryIO, size: int) -> None:
    if size > _remaining(f):
        raise GGUFError("truncated GGUF file")
    f.seek(size, 1)


def iter_metadata(path: str | Path) -> Iterator[tuple[str, Any]]:
    """(key, value) pairs of a GGUF file's metadata, in file order (arrays as None)."""
    with open(path, "rb") as f:
        if _read(f, 4) != MAGIC:
            raise GGUFError(f"{path} is not a GGUF file")
        version = _unpack(f, "<I")
        if version not in (2, 3):
            raise GGUFError(f"{path}: unsupported GGUF version {version}")
        _unpack(f, "<Q")  # tensor count
        for _ in range(_unpack(f, "<Q")):
            key = _string(f)
            yield key, _value(f, _unpack(f, "<I"))


def context_length(path: str | Path) -> int:
    """The context window the model was trained for (`<architecture>.context_length`)."""
    seen: dict[str, Any] = {}
    for key, value in iter_metadata(path):
        seen[key] = value
        arch = seen.get("general.architecture")
        if arch is not None and f"{arch}.context_length" in seen:
            length = seen[f"{arch}.context_length"]
            if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
                raise GGUFError(f"{path}: bad context length {length!r}")
            return length
    raise GGUFError(f"{path}: no context length in the GGUF metadata")
