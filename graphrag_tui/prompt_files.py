"""Prompt template files: a directory holding `map.txt`, `reduce.txt`, `rate.txt` (one per template of
engine/prompts.py's TEMPLATE_SPECS), read and checked for a run; `prompts export DIR`
writes the built-in ones there for editing.

A file's one final newline is not part of its template, and CRLF line ends read as LF (editors add one; the export
writes one), so an exported directory gives back the built-in prompts byte for byte. A
template the directory lacks is the built-in one; a directory with none is refused."""

from __future__ import annotations

import os
from pathlib import Path

from .engine import DEFAULT_TEMPLATES, TEMPLATE_SPECS, Prompts, check_prompts
from .errors import InputError
from .user_files import read_user_file


def template_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.txt"


def read_templates(directory: Path, label: str = "--prompts") -> dict[str, str]:
    """The templates the directory holds, by name (each file read whole, UTF-8)."""
    if not directory.is_dir():
        what = "does not exist" if not directory.exists() else "is not a directory"
        raise InputError(f"{label}: {directory} {what}")
    found: dict[str, str] = {}
    for name in TEMPLATE_SPECS:
        path = template_file(directory, name)
        if not path.exists():
            if path.is_symlink():  # the built-in template would silently stand in for the one meant
                raise InputError(f"{path} is a symbolic link to nothing")
            continue
        found[name] = _read(path)
    if not found:
        names = ", ".join(f"{name}.txt" for name in TEMPLATE_SPECS)
        raise InputError(f"{label}: {directory} holds no template ({names}); "
                         f"`graphrag-tui prompts export {directory}` writes the built-in ones there")
    return found


def _read(path: Path) -> str:
    try:
        text = read_user_file(path, "the prompt template").decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise InputError(f"{path} cannot be read: {error.strerror or error}") from None
    return text.replace("\r\n", "\n").removesuffix("\n")


def load_prompts(
    directory: Path | None,
    *,
    response_type: str | None = None,
    general_knowledge: bool = False,
    answer_language: str | None = None,
    label: str = "--prompts",
) -> Prompts:
    """The prompts of a run: the directory's templates (the built-in ones without one, or
    for a file it lacks) and the answer's form, checked (InputError naming the file and
    the placeholder at fault)."""
    templates = read_templates(directory, label) if directory is not None else {}
    return check_prompts(
        Prompts(
            **templates,
            response_type=response_type,
            general_knowledge=general_knowledge,
            answer_language=answer_language,
            directory=str(directory) if directory is not None else None,
        )
    )


def export_prompts(directory: Path) -> list[Path]:
    """Writes each built-in template to DIR/NAME.txt (the directory made if need be); an
    existing file is refused, never overwritten, and nothing is written then."""
    paths = [template_file(directory, name) for name in DEFAULT_TEMPLATES]
    for path in paths:
        if path.exists() or path.is_symlink():
            raise InputError(f"prompts export: {path} exists; it is not overwritten (choose an empty directory)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for path, text in zip(paths, DEFAULT_TEMPLATES.values(), strict=True):
            # O_EXCL: never through a symlink or over a file that appeared meanwhile
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
                file.write(text + "\n")
    except OSError as error:
        raise InputError(f"prompts export: cannot write {directory}: {error.strerror or error}") from None
    return paths
