"""The setup sidebar: question, model, namespace, level and the retrieval options, checked as you type."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from ...engine import (
    FALLBACK_DEFAULTS,
    Level,
    SearchOptions,
    form_text,
    normalize_query,
    parse_option,
    parse_seed,
    resolve_options,
)
from ...engine.selection import SELECT_MODES, SelectMode
from ...errors import InputError
from ...store import NamespaceInfo
from ..safe_text import one_line
from .clean_input import CleanInput

OPTION_LABELS = {
    "map_budget": "Map budget",
    "map_reserve": "Map reserve",
    "reduce_budget": "Reduce budget",
    "reduce_reserve": "Reduce reserve",
    "concurrency": "Concurrency",
}


#: The form's fields by the command-line flags that messages from below name.
FIELD_OF_FLAG = {
    **{"--" + name.replace("_", "-"): label for name, label in OPTION_LABELS.items()},
    "--seed": "Seed", "--namespace": "Namespace", "--level": "Level", "--select": "Selection",
    "--response-type": "Response type", "--answer-language": "Language", "--general-knowledge": "General knowledge",
}
#: The answer's form: field id -> (label, placeholder, the flag it stands for). An empty field
#: asks nothing of the prompt (the built-in prompt unchanged): the model's own form, in the
#: question's language. "General knowledge" adds GraphRAG's instruction with [LLM: verify].
FORM_TEXT_FIELDS = {
    "response_type": ("Response type", "not asked", "--response-type"),
    "answer_language": ("Language", "the question's", "--answer-language"),
}
#: The selection picker's choices (issue 15), as GraphRAG names them.
SELECT_CHOICES: list[tuple[Text, SelectMode]] = [(Text(mode), mode) for mode in SELECT_MODES]
_FLAG = re.compile("(?:" + "|".join(sorted(map(re.escape, FIELD_OF_FLAG), key=len, reverse=True)) + r")(?![\w-])")


def in_form_terms(message: str) -> str:
    """A message from the engine or a model, with each flag it names (`raise --map-budget`)
    said as the form's field (`raise the Map budget field`): the app has no flags."""
    return _FLAG.sub(lambda match: f"the {FIELD_OF_FLAG[match.group()]} field", message)


@dataclass(frozen=True)
class RunRequest:
    query: str
    namespace: str
    level: Level
    options: SearchOptions
    seed: int | None
    shuffle: bool
    #: Every option field's text, and which of them the user edited (the rest show defaults).
    raw_options: Mapping[str, str] = field(default_factory=dict)
    edited: frozenset[str] = frozenset()
    #: The answer's form (None / False: not given).
    response_type: str | None = None
    answer_language: str | None = None
    general_knowledge: bool = False
    #: How the communities are chosen: level, rollup (at the level) or dynamic.
    select: SelectMode = "level"


def level_options(info: NamespaceInfo) -> list[tuple[Text, Level]]:
    options: list[tuple[Text, Level]] = [(Text(f"leaf ({info.leaf_count})"), "leaf")]
    options += [(Text(f"{level} ({count})"), level) for level, count in info.levels.items()]
    return options


class SetupForm(VerticalScroll):
    class Submitted(Message):
        def __init__(self, request: RunRequest) -> None:
            super().__init__()
            self.request = request

    class ScopeChanged(Message):
        """The namespace or level changed (the header shows them)."""

    class ExpandRequested(Message):
        """The form needs all its fields in sight (an option to fix while it is collapsed):
        `field` takes the focus once it is laid out (focused before, under load, it stayed
        out of sight)."""

        def __init__(self, field: Widget) -> None:
            super().__init__()
            self.field = field

    class ModelChanged(Message):
        """The model picker changed: `kind` is extractive, local or http."""

        def __init__(self, kind: str) -> None:
            super().__init__()
            self.kind = kind

    def __init__(
        self,
        namespaces: list[NamespaceInfo],
        *,
        namespace: str | None,
        level: Level,
        options: SearchOptions,
        seed: int | None,
        shuffle: bool,
        models: list[tuple[Text, str]] | None = None,
        model: str = "extractive",
        response_type: str | None = None,
        answer_language: str | None = None,
        general_knowledge: bool = False,
        select: SelectMode = "level",
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.namespaces = {info.name: info for info in namespaces}
        names = list(self.namespaces)
        self.initial_namespace = namespace if namespace in self.namespaces else (names[0] if names else None)
        self.initial_level = level
        self.initial_options = options
        self.initial_seed = seed
        self.initial_shuffle = shuffle
        self.models = models or [(Text("Built-in extractive"), "extractive")]
        self.initial_model = model if any(v == model for _, v in self.models) else self.models[0][1]
        self.initial_form_text = {"response_type": response_type, "answer_language": answer_language}
        self.initial_general_knowledge = general_knowledge
        self.initial_select: SelectMode = select if select in SELECT_MODES else "level"
        #: The text each option field shows by default (a field showing other text was edited).
        self._default_texts = {name: str(getattr(options, name)) for name in FALLBACK_DEFAULTS}

    def compose(self) -> ComposeResult:
        yield Label("Question", classes="first", id="query-label")
        yield CleanInput(placeholder="What are the main themes?", id="query")
        with Horizontal(classes="option-row", id="model-row"):
            yield Label("Model", classes="option-label", id="model-label")
            yield Select(self.models, value=self.initial_model, allow_blank=False, compact=True, id="model")
        yield Static("", id="model-status")
        yield Static("", id="model-note")
        yield Label("Namespace")
        yield Select(
            [(Text(f"{one_line(n.name)} ({n.community_count})"), n.name) for n in self.namespaces.values()],
            value=self.initial_namespace if self.initial_namespace else Select.BLANK,
            allow_blank=self.initial_namespace is None,
            id="namespace",
        )
        yield Label("Level")
        info = self.namespaces.get(self.initial_namespace or "")
        levels = level_options(info) if info else [(Text("leaf"), "leaf")]
        initial_level = self.initial_level if any(v == self.initial_level for _, v in levels) else "leaf"
        yield Select(levels, value=initial_level, allow_blank=False, id="level")
        with Horizontal(classes="option-row", id="select-row"):
            yield Label("Selection", classes="option-label")
            select = Select(SELECT_CHOICES, value=self.initial_select, allow_blank=False, compact=True, id="select")
            select.tooltip = ("level: the level's communities · rollup: GraphRAG's static selection at the level · "
                              "dynamic: the model rates communities from the top down")
            yield select
        for name in FALLBACK_DEFAULTS:
            with Horizontal(classes="option-row"):
                yield Label(OPTION_LABELS[name], classes="option-label")
                yield CleanInput(
                    str(getattr(self.initial_options, name)), id=f"opt-{name}", classes="option-input", compact=True
                )
            yield Static("", id=f"err-{name}", classes="field-error")
        with Horizontal(classes="option-row"):
            yield Label("Seed", classes="option-label")
            seed = "" if self.initial_seed is None else str(self.initial_seed)
            yield CleanInput(seed, placeholder="random", id="opt-seed", classes="option-input", compact=True)
        yield Static("", id="err-seed", classes="field-error")
        yield Checkbox("Shuffle communities", self.initial_shuffle, id="shuffle", compact=True)
        for name, (label, placeholder, _) in FORM_TEXT_FIELDS.items():
            with Horizontal(classes="option-row"):
                yield Label(label, classes="option-label")
                yield CleanInput(self.initial_form_text[name] or "", placeholder=placeholder, id=f"opt-{name}",
                            classes="option-input", compact=True)
            yield Static("", id=f"err-{name}", classes="field-error")
        yield Checkbox(Text("General knowledge"), self.initial_general_knowledge,
                       id="general-knowledge", compact=True)
        yield Button("Run  ⏎", variant="primary", id="run")
        yield Static("", id="form-error", classes="field-error")

    # -- state ---------------------------------------------------------------------------

    def collapse(self, collapsed: bool) -> None:
        """Show only the question line (the stylesheet hides the rest), or everything."""
        self.set_class(collapsed, "-collapsed")
        self.query_one("#query", Input).compact = collapsed

    @property
    def namespace(self) -> str | None:
        value = self.query_one("#namespace", Select).value
        return value if isinstance(value, str) else None

    @property
    def level(self) -> Level:
        value = self.query_one("#level", Select).value
        return value if isinstance(value, int) or value == "leaf" else "leaf"  # type: ignore[return-value]

    @property
    def select(self) -> SelectMode:
        value = self.query_one("#select", Select).value
        return value if value in SELECT_MODES else "level"  # type: ignore[return-value]

    @property
    def model(self) -> str:
        value = self.query_one("#model", Select).value
        return value if isinstance(value, str) else self.initial_model

    def select_model(self, kind: str) -> None:
        self.query_one("#model", Select).value = kind

    def show_model_status(self, text: Text, note: str = "") -> None:
        """The chosen model's state, and what it can and cannot do (`note`; "": hidden)."""
        self.query_one("#model-status", Static).update(text)
        model_note = self.query_one("#model-note", Static)
        model_note.update(Text(note))
        model_note.display = bool(note)

    def lock_model(self, locked: bool) -> None:
        """No switching models while a run uses one."""
        self.query_one("#model", Select).disabled = locked

    def edited_options(self) -> frozenset[str]:
        return frozenset(
            name for name in FALLBACK_DEFAULTS
            if self.query_one(f"#opt-{name}", Input).value.strip() != self._default_texts[name]
        )

    def show_default_options(self, options: SearchOptions) -> None:
        """Show these values in the option fields the user has not edited."""
        edited = self.edited_options()
        for name in FALLBACK_DEFAULTS:
            if name not in edited:
                text = str(getattr(options, name))
                self._default_texts[name] = text
                self.query_one(f"#opt-{name}", Input).value = text

    def show_error(self, message: str) -> None:
        error = self.query_one("#form-error", Static)
        error.update(Text(message, style="bold red"))
        error.display = bool(message)
        if message:  # below the Run button: in sight, however long the form
            self.call_after_refresh(error.scroll_visible, animate=False)
        if message and self.has_class("-collapsed"):  # the line is out of sight: say it here
            self.app.notify(message, title="Cannot run", severity="error", markup=False)

    def select_namespace(self, name: str) -> None:
        self.query_one("#namespace", Select).value = name

    def select_level(self, level: Level) -> None:
        self.query_one("#level", Select).value = level

    def form_text(self, name: str) -> str | None:
        """A field of the answer's form: its text, None when empty (not given); InputError
        when it is not one line of text."""
        text = self.query_one(f"#opt-{name}", Input).value
        return form_text(text, FORM_TEXT_FIELDS[name][0]) if text.strip() else None

    # -- validation as you type -------------------------------------------------------------

    def _field_errors(self) -> dict[str, str]:
        errors: dict[str, str] = {}
        values: dict[str, int] = {}
        for name in FALLBACK_DEFAULTS:
            try:
                values[name] = parse_option(name, self.query_one(f"#opt-{name}", Input).value)
            except InputError as error:
                errors[name] = str(error)
        for budget, reserve in (("map_budget", "map_reserve"), ("reduce_budget", "reduce_reserve")):
            if budget in values and reserve in values and values[budget] <= values[reserve]:
                errors.setdefault(budget, f"must exceed the reserve ({values[reserve]})")
        for name, (label, _, _) in FORM_TEXT_FIELDS.items():
            try:
                self.form_text(name)
            except InputError as error:
                errors[name] = str(error).removeprefix(label + " ")
        seed = self.query_one("#opt-seed", Input).value.strip()
        try:
            parse_seed(seed or None)
        except InputError:  # "²" or "٣" too: only ASCII digits are a seed
            errors["seed"] = "a non-negative integer, or empty for random"
            return errors
        if seed and not self.query_one("#shuffle", Checkbox).value:
            errors["seed"] = "a seed needs shuffling on"
        return errors

    def _show_field_errors(self) -> dict[str, str]:
        errors = self._field_errors()
        for name in (*FALLBACK_DEFAULTS, *FORM_TEXT_FIELDS, "seed"):
            message = errors.get(name, "")
            if message.startswith("--"):  # the field names the option already
                message = message.partition(" ")[2]
            error = self.query_one(f"#err-{name}", Static)
            error.update(Text(message, style="red"))
            error.display = bool(message)
        return errors

    @on(Input.Changed, ".option-input")
    @on(Checkbox.Changed)
    def _revalidate(self) -> None:
        self._show_field_errors()

    @on(Select.Changed, "#namespace")
    def _namespace_changed(self) -> None:
        info = self.namespaces.get(self.namespace or "")
        if info is not None:
            current = self.level
            levels = level_options(info)
            select = self.query_one("#level", Select)
            select.set_options(levels)
            select.value = current if any(v == current for _, v in levels) else "leaf"
            # The value may be the one it was ("leaf"): its label ("leaf (18)") must follow
            # the new namespace's count all the same.
            select.mutate_reactive(Select.value)
        self.post_message(self.ScopeChanged())

    @on(Select.Changed, "#level")
    def _level_changed(self) -> None:
        self.post_message(self.ScopeChanged())

    @on(Select.Changed, "#model")
    def _model_changed(self) -> None:
        self.post_message(self.ModelChanged(self.model))

    # -- submitting ------------------------------------------------------------------------

    @on(Input.Submitted)
    @on(Button.Pressed, "#run")
    def submit(self) -> None:
        errors = self._show_field_errors()
        if errors:
            first = self.query_one(f"#opt-{next(iter(errors))}", Input)  # in sight, once the form has its size
            if self.has_class("-collapsed"):
                self.post_message(self.ExpandRequested(first))
            else:
                self.call_after_refresh(first.focus)
            self.show_error("Fix the highlighted options first.")
            return
        try:
            query = normalize_query(self.query_one("#query", Input).value)
        except InputError as error:
            self.show_error(str(error))
            self.query_one("#query", Input).focus()
            return
        if self.namespace is None:
            self.show_error("The store has no namespace to search.")
            return
        raw = {n: self.query_one(f"#opt-{n}", Input).value for n in FALLBACK_DEFAULTS}
        options = resolve_options(raw)
        seed_text = self.query_one("#opt-seed", Input).value.strip()
        self.show_error("")
        self.post_message(
            self.Submitted(
                RunRequest(
                    query=query,
                    namespace=self.namespace,
                    level=self.level,
                    options=options,
                    seed=parse_seed(seed_text or None),
                    shuffle=self.query_one("#shuffle", Checkbox).value,
                    raw_options=raw,
                    edited=self.edited_options(),
                    response_type=self.form_text("response_type"),
                    answer_language=self.form_text("answer_language"),
                    general_knowledge=self.query_one("#general-knowledge", Checkbox).value,
                    select=self.select,
                )
            )
        )
