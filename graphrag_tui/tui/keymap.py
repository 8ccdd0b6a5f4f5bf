"""The `[keymap]` config: binding id -> comma-separated keys, checked before the app opens.

```toml
[keymap]
goto = "ctrl+g"
export = "x,ctrl+e"
```

Every binding of the app, its screens and widgets has an id (`BINDINGS`); the app hands
the checked keymap to Textual's `App.set_keymap`. A key binding is replaced, not added to:
`goto = "ctrl+g"` frees `g`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import Keys, _character_to_key

from ..arguments import has_surrogates, shown
from ..errors import InputError

MODIFIERS = ("ctrl", "alt", "shift", "super", "meta", "hyper")
#: Key names Textual knows (without modifiers): escape, f5, pageup, home, …
NAMED_KEYS = frozenset(
    name for k in Keys if not (name := k.value.rpartition("+")[2]).startswith("<")
) | {"space", "enter", "tab", "backspace"}
#: Textual's names of the printable ASCII characters: question_mark, full_stop, plus, …
CHARACTER_KEYS = frozenset(_character_to_key(chr(code)) for code in range(33, 127))


def binding_owners() -> tuple[type[DOMNode], ...]:
    """The classes whose BINDINGS carry ids (imported here: the CLI checks a keymap before
    anything of the app is built)."""
    from .app import GraphRAGApp
    from .screens.batch import BatchScreen
    from .screens.claim import ClaimScreen
    from .screens.community import CommunityScreen
    from .screens.compare import CompareScreen
    from .screens.confirm import ConfirmScreen
    from .screens.explore import ExploreScreen
    from .screens.goto import GoToCommunityScreen
    from .screens.input_dialog import InputDialog
    from .screens.keys import KeysScreen
    from .screens.main import MainScreen
    from .screens.overview import OverviewScreen
    from .screens.record import RecordScreen
    from .screens.rerun import RerunScreen
    from .screens.run_view import RunViewScreen
    from .screens.runs import RunsScreen
    from .widgets.batch_grid import BatchGrid
    from .widgets.find_bar import FindBar

    return (GraphRAGApp, MainScreen, CommunityScreen, BatchScreen, KeysScreen, ConfirmScreen, InputDialog, BatchGrid,
            ExploreScreen, RecordScreen, OverviewScreen, RunsScreen, RunViewScreen, CompareScreen, RerunScreen,
            ClaimScreen, FindBar, GoToCommunityScreen)


def class_bindings(owner: type[DOMNode]) -> list[Binding]:
    """The bindings `owner` has, its base classes' included (a key bound again replaces)."""
    by_key: dict[str, Binding] = {}
    for base in reversed(owner.__mro__):
        for binding in base.__dict__.get("BINDINGS", []):
            if isinstance(binding, Binding):
                for key in binding.key.split(","):
                    by_key[key.strip()] = binding
    return list(by_key.values())


def known_ids(owners: Iterable[type[DOMNode]] | None = None) -> list[str]:
    ids = {b.id for owner in owners or binding_owners() for b in class_bindings(owner) if b.id}
    return sorted(ids)


def normalize_key(key: str) -> str | None:
    """The key as Textual names it (`?` -> `question_mark`), or None if it is not a key."""
    *modifiers, name = key.split("+")
    if any(m not in MODIFIERS for m in modifiers) or len(set(modifiers)) != len(modifiers):
        return None
    if len(name) == 1:
        if not name.isprintable() or name.isspace():
            return None
        name = _character_to_key(name)
    elif name not in NAMED_KEYS and name not in CHARACTER_KEYS:
        return None
    return "+".join([*modifiers, name])


def _is_character(name: str) -> bool:
    return (len(name) == 1 and name.isprintable() and not name.isspace()) or name in CHARACTER_KEYS


def check_keymap(keymap: Mapping[str, object], source: str = "[keymap]") -> dict[str, str]:
    """The keymap with its keys in Textual's names, or InputError (one line, naming
    `source` and the id) for an unknown id, a value that is not keys, or two bindings of
    one screen (or widget, or the app) given the same key."""
    owners = binding_owners()
    ids = known_ids(owners)
    checked: dict[str, str] = {}
    for binding_id, value in keymap.items():
        name = shown(binding_id)
        if binding_id not in ids:
            raise InputError(f"{source} {name}: no key binding has this id (known ids: {', '.join(ids)})")
        if not isinstance(value, str) or has_surrogates(value):
            raise InputError(
                f"{source} {binding_id}: must be a string of keys such as \"ctrl+g\" or \"x,f5\", got {shown(value)}"
            )
        keys = [key.strip() for key in value.split(",")]
        shifted = next((k for k in keys if k.startswith("shift+") and _is_character(k[6:])), None)
        if shifted is not None:  # (a terminal sends the shifted character itself: G, not shift+g)
            typed = f"write {shown(shifted[6].upper())}" if shifted[6:].isalpha() and len(shifted) == 7 \
                else "write the character it types"
            raise InputError(f"{source} {binding_id}: {shown(shifted)} never comes: a shifted character is its own key "
                             f"({typed})")
        normalized = [normalize_key(key) for key in keys]
        if not keys or None in normalized:
            bad = next((k for k, n in zip(keys, normalized, strict=True) if n is None), value)
            raise InputError(
                f"{source} {binding_id}: {shown(bad)} is not a key (keys are written as in Textual: "
                "g, G, ctrl+g, f5, escape, question_mark; several separated by commas)"
            )
        checked[binding_id] = ",".join(dict.fromkeys(n for n in normalized if n))
    for owner in owners:
        _check_clashes(class_bindings(owner), checked, source)
    _check_priority(owners, checked, source)
    _check_shadowed(owners, checked, source)
    return checked


def _check_shadowed(owners: tuple[type[DOMNode], ...], keymap: Mapping[str, str], source: str) -> None:
    """The main screen and its widgets see a key before the app does: one of theirs on the
    app's key leaves the app's binding dead there (`open-batch = "escape"` left no key to
    cancel a run: Esc opened and closed the batch view)."""
    from .screens.main import MainScreen
    from .widgets.batch_grid import BatchGrid
    from .widgets.find_bar import FindBar

    app_keys = {key: binding for binding in class_bindings(owners[0]) if not binding.system
                for key in _keys(binding, keymap)}
    for owner in (MainScreen, BatchGrid, FindBar):
        for binding in class_bindings(owner):
            for key in _keys(binding, keymap):
                taken = app_keys.get(key)
                if taken is not None and not binding.system and binding.id != taken.id and (
                        binding.id in keymap or taken.id in keymap):
                    remapped = binding if binding.id in keymap else taken
                    other = taken if remapped is binding else binding
                    raise InputError(f"{source} {remapped.id}: {key} is the key of {_named(other)}, which the main "
                                     f"screen would see first: {_named(taken)} would never act there")


#: A key with one of these is never typed into a text field.
COMMAND_MODIFIERS = ("ctrl", "alt", "super", "meta", "hyper")
FUNCTION_KEYS = frozenset(f"f{n}" for n in range(1, 25))


def _keys(binding: Binding, keymap: Mapping[str, str]) -> list[str]:
    remapped = keymap.get(binding.id) if binding.id else None
    return [key.strip() for key in (remapped or binding.key).split(",")]


def _check_priority(owners: Iterable[type[DOMNode]], keymap: Mapping[str, str], source: str) -> None:
    """A priority binding acts first, wherever the focus is: on a key that types (`w`,
    space, enter) quitting took the question's first `w`; and the app's takes its key from
    every screen (`back = "ctrl+q"` quit instead of going back)."""
    owners = tuple(owners)
    app_keys: dict[str, Binding] = {}
    for owner in owners:
        for binding in class_bindings(owner):
            if not binding.priority or binding.system:
                continue
            for key in _keys(binding, keymap):
                *modifiers, name = key.split("+")
                if not (set(modifiers) & set(COMMAND_MODIFIERS) or name in FUNCTION_KEYS):
                    raise InputError(f"{source} {binding.id}: {key} has no ctrl or alt, and {binding.id} acts first "
                                     f"wherever the focus is (it would take {key} from the question's field and every "
                                     "screen): use a key with ctrl or alt, or f1-f24")
                if owner is owners[0]:  # the app
                    app_keys[key] = binding
    for owner in owners[1:]:
        for binding in class_bindings(owner):
            for key in _keys(binding, keymap):
                taken = app_keys.get(key)
                if taken is not None and not binding.system and binding.id != taken.id:
                    remapped = binding if binding.id in keymap else taken
                    other = taken if remapped is binding else binding
                    raise InputError(f"{source} {remapped.id}: {key} is the key of {_named(other)}, and "
                                     f"{_named(taken)} acts first on every screen")


def _named(binding: Binding) -> str:
    """A binding as a message names it: its id, or what it does (Textual's own have no id)."""
    return binding.id or f"{binding.description or binding.action!r} (Textual's)"


def _check_clashes(bindings: list[Binding], keymap: Mapping[str, str], source: str) -> None:
    """Two different bindings of one class on one key: Textual would silently drop one."""
    holder: dict[str, Binding] = {}
    for binding in bindings:
        if binding.system:
            continue
        remapped_keys = keymap.get(binding.id) if binding.id else None
        keys = (remapped_keys or binding.key).split(",")
        for key in (k.strip() for k in keys):
            other = holder.setdefault(key, binding)
            if other is not binding and (other.id != binding.id or other.id is None):
                remapped = binding if binding.id in keymap else other
                taken = other if remapped is binding else binding
                raise InputError(f"{source} {remapped.id}: {key} is the key of {_named(taken)}")
