"""Prompt templates: text with named placeholders in braces (`{query}`), checked against the
placeholders each template allows and needs, and rendered into chat messages.

A template is its system message, a line `=== user ===`, and its user message; a template
without that line is sent as one user message. `{{` and `}}` stand for literal braces.
A placeholder is a plain name: `{query!r}`, `{query:>9}` and `{0}` are refused."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from string import Formatter
from typing import Literal

from ..errors import InputError
from .ports import ChatMessage

#: The line between a template's system message and its user message.
MESSAGE_BREAK = "=== user ==="
#: How often a template may hold one placeholder: each use is a copy of its value, and
#: 140,000 `{query}` in a 1 MB file made a prompt of gigabytes before its budget was checked.
MAX_PLACEHOLDER_USES = 16


@dataclass(frozen=True)
class TemplateSpec:
    """What one template may and must hold: `required` placeholders (a template without one
    is refused) and `optional` ones."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @property
    def placeholders(self) -> tuple[str, ...]:
        return self.required + self.optional


Piece = tuple[str, str | None]  # (literal text, the placeholder after it, or None)


@dataclass(frozen=True)
class Template:
    """A checked template: its messages' roles, each with its literal text and placeholders."""

    parts: tuple[tuple[Literal["system", "user"], tuple[Piece, ...]], ...]

    def messages(self, values: Mapping[str, str]) -> tuple[ChatMessage, ...]:
        return tuple(
            ChatMessage(role=role, content="".join(text + (values[name] if name else "") for text, name in pieces))
            for role, pieces in self.parts
        )


def parse_template(text: str, spec: TemplateSpec, where: str) -> Template:
    """The template's messages, checked; InputError names `where` (a file) and the
    placeholder at fault: an unknown one, one that is not a plain name, a missing one."""
    if "\x00" in text:
        raise InputError(f"{where}: a template cannot hold NUL characters")
    lines = text.split("\n")
    if MESSAGE_BREAK in lines:
        at = lines.index(MESSAGE_BREAK)
        texts: list[tuple[Literal["system", "user"], str]] = [
            ("system", "\n".join(lines[:at])), ("user", "\n".join(lines[at + 1:]))]
    else:
        texts = [("user", text)]
    parts = tuple((role, _pieces(part, spec, where)) for role, part in texts)
    uses = Counter(name for _, pieces in parts for _, name in pieces if name is not None)
    for name, count in uses.items():
        if count > MAX_PLACEHOLDER_USES:
            raise InputError(f"{where}: {{{name}}} appears {count:,} times; a template may hold each placeholder at "
                             f"most {MAX_PLACEHOLDER_USES} times")
    present = set(uses)
    for name in spec.required:
        if name not in present:
            needed = ", ".join("{" + n + "}" for n in spec.required)
            raise InputError(f"{where}: missing placeholder {{{name}}} (the template needs {needed})")
    return Template(parts)


def _pieces(text: str, spec: TemplateSpec, where: str) -> tuple[Piece, ...]:
    try:
        parsed = list(Formatter().parse(text))
    except ValueError as error:  # a lone `{` or `}`
        raise InputError(f"{where}: {error} (write {{{{ and }}}} for literal braces)") from None
    allowed = ", ".join("{" + name + "}" for name in spec.placeholders)
    pieces: list[Piece] = []
    for literal, name, format_spec, conversion in parsed:
        if name is None:
            pieces.append((literal, None))
            continue
        written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{format_spec}" if format_spec else "") + "}"
        if name not in spec.placeholders:
            raise InputError(f"{where}: unknown placeholder {written} (allowed: {allowed})")
        if conversion or format_spec:
            raise InputError(f"{where}: placeholder {written} must be a plain name, like {{{name}}}")
        pieces.append((literal, name))
    return tuple(pieces)
