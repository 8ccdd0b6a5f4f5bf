"""Key bindings with ids, the `[keymap]` config, the keys screen built from the bindings in
force, and the command palette's commands (tui/keymap.py, screens/keys.py, tui/commands.py)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import threading
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.command import CommandList, CommandPalette

import graphrag_tui.tui
from graphrag_tui.config import UserDefaults
from graphrag_tui.errors import InputError
from graphrag_tui.tui.keymap import binding_owners, check_keymap, known_ids
from graphrag_tui.tui.screens.batch import BatchScreen
from graphrag_tui.tui.screens.community import CommunityScreen
from graphrag_tui.tui.screens.confirm import ConfirmScreen
from graphrag_tui.tui.screens.goto import GoToCommunityScreen
from graphrag_tui.tui.screens.keys import KeysScreen
from graphrag_tui.tui.screens.main import MainScreen
from graphrag_tui.tui.widgets.batch_grid import BatchGrid
from tests.chat_server import Reply, ScriptedChatServer, completion, map_reply
from tests.cli_runner import run_cli
from tests.stores import build_store, three_leaves

from .conftest import Scripted, ask, make_app, screen_text, wait_community, wait_finished, wait_until

SIZE = (140, 42)
KNOWN_IDS = (
    "back, cancel-run, command-palette, compare-runs, copy, delete-run, dialog-cancel, explore, explore-back, "
    "explore-expand-all, explore-level, explore-overview, explore-search, explore-sort, export, find, find-close, "
    "find-next, find-previous, goto, goto-matches, grid-down, grid-next, grid-previous, grid-up, keys, mark-run, "
    "members, no, open-batch, overview-back, question, quit, record-back, rerun-failed, resume-run, runs, "
    "runs-filter, save-response, show-in-tree, tab-1, tab-2, tab-3, tab-4, tab-5, toggle-setup, yes"
)
KEYS_HELP = "(keys are written as in Textual: g, G, ctrl+g, f5, escape, question_mark; several separated by commas)"
#: The app's own keys, under every screen's.
APP_ROWS = [
    ("ctrl+q", "quit (asks first while a run is going)", True),
    ("g", "go to a community by id, number, name or member entity", True),
    ("e", "export the run (JSON and Markdown report)", True),
    ("x", "explore the index: community tree and search", True),
    ("?", "the list of keys", True),
    ("c", "copy the focused answer, prompt, reply, row or entry", True),
    ("h", "the run history: past runs, re-run, resume, compare", True),
    ("ctrl+p", "command palette", True),
]
#: Textual's Screen keys, on every screen.
SCREEN_ROWS = [
    ("Tab", "focus next", True),
    ("shift+Tab", "focus previous", True),
    ("ctrl+c super+c", "copy selected text", True),
]
TEXTUAL_COMMANDS = ["Keys", "Maximize", "Quit", "Screenshot", "Theme"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def all_runs_answered() -> Scripted:
    return Scripted({"ns/1": map_reply("Bridge funds.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})


def footer_line(app) -> str:
    return screen_text(app).splitlines()[-1]


async def open_keys(pilot) -> KeysScreen:
    """Press ? and return the keys screen, after checking that it draws each of its rows."""
    await pilot.press("question_mark")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, KeysScreen)
    text = screen_text(pilot.app)
    for keys, what, _ in screen.rows:
        assert re.search(rf"█  {re.escape(keys)} +{re.escape(what)} +█", text), (keys, what)
    return screen


async def palette_commands(pilot, count: int) -> list[tuple[str, str]]:
    """Open the command palette; (title, help) of the `count` commands it lists before any typing."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    assert isinstance(pilot.app.screen, CommandPalette)
    commands = pilot.app.screen.query_one(CommandList)
    await wait_until(pilot, lambda: commands.option_count >= count, what="the palette's commands")
    await pilot.pause(0.3)  # none comes later
    assert commands.option_count == count
    listed = []
    for index in range(commands.option_count):
        title, _, help_text = str(commands.get_option_at_index(index).prompt).partition("\n")
        listed.append((title, help_text))
    return listed


# -- ids and the check of a keymap ------------------------------------------------------------


def test_every_binding_of_the_app_has_an_id_that_a_keymap_can_name() -> None:
    classes = []
    for module_info in pkgutil.walk_packages(graphrag_tui.tui.__path__, "graphrag_tui.tui."):
        module = importlib.import_module(module_info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "BINDINGS" in cls.__dict__:
                classes.append(cls)
                bindings = cls.__dict__["BINDINGS"]
                assert all(isinstance(b, Binding) and b.id for b in bindings), cls
                assert issubclass(cls, binding_owners()) or any(issubclass(o, cls) for o in binding_owners()), cls
    assert {c.__name__ for c in classes} == {
        "GraphRAGApp", "TabbedScreen", "MainScreen", "CommunityScreen", "BatchScreen", "KeysScreen", "ConfirmScreen",
        "InputDialog", "BatchGrid", "ExploreScreen", "RecordScreen", "OverviewScreen", "RunsScreen", "RunViewScreen",
        "CompareScreen", "RerunScreen", "ClaimScreen", "FindBar", "GoToCommunityScreen",
    }
    assert ", ".join(known_ids()) == KNOWN_IDS


@pytest.mark.parametrize(
    ("keymap", "message"),
    [
        ({"gotoo": "x"}, f"config file c.toml: [keymap] 'gotoo': no key binding has this id (known ids: {KNOWN_IDS})"),
        ({"\x1b[2J": "x"}, f"config file c.toml: [keymap] '\\x1b[2J': no key binding has this id (known ids: {KNOWN_IDS})"),
        ({"goto": 5}, 'config file c.toml: [keymap] goto: must be a string of keys such as "ctrl+g" or "x,f5", got 5'),
        ({"goto": "Ctrl+G"}, f"config file c.toml: [keymap] goto: 'Ctrl+G' is not a key {KEYS_HELP}"),
        ({"goto": "x,"}, f"config file c.toml: [keymap] goto: '' is not a key {KEYS_HELP}"),
        ({"goto": "e"}, "config file c.toml: [keymap] goto: e is the key of export"),
        ({"tab-1": "tab"}, "config file c.toml: [keymap] tab-1: tab is the key of 'Focus Next' (Textual's)"),
        # Textual's own bindings have no id: the message said `the key of None`
        ({"quit": "ctrl+c"}, "config file c.toml: [keymap] quit: ctrl+c is the key of 'Copy selected text' (Textual's), "
                             "and quit acts first on every screen"),
        # a terminal sends G, never shift+g: goto had no key that worked
        ({"goto": "shift+g"}, "config file c.toml: [keymap] goto: 'shift+g' never comes: a shifted character is its "
                              "own key (write 'G')"),
        ({"keys": "shift+question_mark"}, "config file c.toml: [keymap] keys: 'shift+question_mark' never comes: a "
                                          "shifted character is its own key (write the character it types)"),
        ({"keys": "f1,shift+/"}, "config file c.toml: [keymap] keys: 'shift+/' never comes: a shifted character is its "
                                 "own key (write the character it types)"),
        # a priority binding acts wherever the focus is: quit on `w` took the question's first w
        ({"quit": "w"}, "config file c.toml: [keymap] quit: w has no ctrl or alt, and quit acts first wherever the "
                        "focus is (it would take w from the question's field and every screen): use a key with ctrl "
                        "or alt, or f1-f24"),
        ({"command-palette": "space"}, "config file c.toml: [keymap] command-palette: space has no ctrl or alt, and "
                                       "command-palette acts first wherever the focus is (it would take space from the "
                                       "question's field and every screen): use a key with ctrl or alt, or f1-f24"),
        # and the app's take their key from every screen: `back` on ctrl+q quit the app
        ({"back": "ctrl+q"}, "config file c.toml: [keymap] back: ctrl+q is the key of quit, and quit acts first on "
                             "every screen"),
        ({"quit": "f12", "tab-1": "f12"}, "config file c.toml: [keymap] tab-1: f12 is the key of quit, and quit acts "
                                          "first on every screen"),
        # the main screen and its widgets see a key before the app: Esc opened and closed the batch
        # view, and no key cancelled the run
        ({"open-batch": "escape"}, "config file c.toml: [keymap] open-batch: escape is the key of cancel-run, which the "
                                   "main screen would see first: cancel-run would never act there"),
        ({"cancel-run": "enter"}, "config file c.toml: [keymap] cancel-run: enter is the key of open-batch, which the "
                                  "main screen would see first: cancel-run would never act there"),
    ],
)
def test_a_bad_keymap_is_one_line_naming_the_id(keymap: dict, message: str) -> None:
    with pytest.raises(InputError) as caught:
        check_keymap(keymap, "config file c.toml: [keymap]")
    assert str(caught.value) == message


def test_a_good_keymap_is_given_in_textual_key_names() -> None:
    assert check_keymap({"goto": " ctrl+g , G ", "keys": "?,f1", "export": "g", "back": "backspace"}) == {
        "goto": "ctrl+g,G", "keys": "question_mark,f1", "export": "g", "back": "backspace",
    }


@pytest.mark.skipif("keymap" not in UserDefaults.model_fields, reason="needs the config's [keymap] section")
@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('gotoo = "x"', "[keymap] 'gotoo': no key binding has this id (known ids: " + KNOWN_IDS + ")"),
        ('export = "g"', "[keymap] export: g is the key of goto"),
    ],
)
def test_the_cli_rejects_a_bad_keymap_before_the_app_opens(tmp_path: Path, section: str, message: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[keymap]\n{section}\n", encoding="utf-8")
    run = run_cli("--config", str(config), str(three_leaves(tmp_path / "harbour.db")), timeout=30)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: config file {config}: {message}\n"


# -- a remapped key -----------------------------------------------------------------------------


async def test_a_remapped_key_works_and_the_old_one_does_not(store: Path) -> None:
    app = make_app(store, keymap={"goto": "ctrl+g", "keys": "f1", "yes": "j"})
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one(BatchGrid).focus()
        await pilot.pause()
        # Textual puts remapped keys after the others.
        assert footer_line(app).split() == ["⏎", "Open", "batch", "/", "Question", "^o", "Setup", "^q", "Quit", "e", "Export",
                                            "x", "Explore", "^g", "Go", "to", "community", "f1", "Keys", "^p", "palette"]
        await pilot.press("g", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)

        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, GoToCommunityScreen)
        await pilot.press("escape")
        await pilot.pause()

        keys = await open_keys_with(pilot, "f1")
        assert ("ctrl+g", "go to a community by id, number, name or member entity", True) in keys.rows
        assert ("f1", "the list of keys", True) in keys.rows
        assert not any(k in ("g", "?") for k, _, _ in keys.rows)
        assert "Esc or f1 closes this list." in screen_text(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen is keys
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)

        # A dialog names its keys as remapped.
        answers: list[bool | None] = []
        app.push_screen(ConfirmScreen("Quit?"), answers.append)
        await pilot.pause()
        assert "Yes (j)" in screen_text(app) and "No (n)" in screen_text(app)
        await pilot.press("y")
        await pilot.pause()
        assert answers == []
        await pilot.press("j")
        await pilot.pause()
        assert answers == [True]


async def open_keys_with(pilot, key: str) -> KeysScreen:
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(pilot.app.screen, KeysScreen)
    return pilot.app.screen


# -- the keys screen lists the bindings of the screen under it ----------------------------------


async def test_the_keys_screen_lists_the_keys_of_the_screen_under_it(store: Path) -> None:
    with ScriptedChatServer(all_runs_answered()) as server:
        app = make_app(store, server.base_url)
        async with app.run_test(size=SIZE) as pilot:
            # The main screen, the batch grid focused: its keys, the screen's 4 tabs, the app's.
            app.screen.query_one(BatchGrid).focus()
            await pilot.pause()
            keys = await open_keys(pilot)
            assert keys.rows == [
                ("←", "previous batch", True),
                ("→", "next batch", True),
                ("↑", "batch above", True),
                ("↓", "batch below", True),
                ("Enter", "open the selected batch", True),
                *SCREEN_ROWS,
                ("1 2 3 4", "show the tab of that number", True),
                ("/ ctrl+l", "back to the question", True),
                ("ctrl+o", "collapse the setup form to its question line, or expand it", True),
                ("ctrl+q", "quit (asks first while a run is going)", True),
                ("Esc", "cancel a running run", True),
                *APP_ROWS[1:],
            ]
            assert "Esc or ? closes this list." in screen_text(app)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)

            # The batch view (its tabs focused): 4 tabs, Esc goes back (no response is cut,
            # so the key that saves one is not in force).
            await ask(pilot)
            await wait_finished(pilot)
            app.screen.query_one(BatchGrid).focus()
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen)
            keys = await open_keys(pilot)
            assert keys.rows == [
                ("←", "previous tab", True),
                ("→", "next tab", True),
                *SCREEN_ROWS,
                ("1 2 3 4", "show the tab of that number", True),
                ("Esc", "back to the screen before", True),
                ("ctrl+f", "find text in the tables and texts shown", True),
                *APP_ROWS,
            ]
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, BatchScreen)
            await pilot.press("escape")
            await pilot.pause()

            # The community view (its hierarchy list focused): 3 tabs, so 1 2 3.
            app.open_community("ns/1")
            await pilot.pause()
            await wait_community(pilot)
            assert isinstance(app.screen, CommunityScreen)
            keys = await open_keys(pilot)
            assert keys.rows == [
                ("↑", "up", True),
                ("↓", "down", True),
                ("←", "scroll left", True),
                ("→", "scroll right", True),
                ("Home", "first", True),
                ("End", "last", True),
                ("PgUp", "page up", True),
                ("PgDn", "page down", True),
                ("ctrl+PgUp", "page left", True),
                ("ctrl+PgDn", "page right", True),
                ("Enter", "select", True),
                *SCREEN_ROWS,
                ("1 2 3", "show the tab of that number", True),
                ("Esc", "back to the screen before", True),
                ("t", "show this community in the Explore screen's tree", True),
                ("m", "the members, each opening its entity", True),
                ("ctrl+f", "find text in the tables and texts shown", True),
                *APP_ROWS,
            ]
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("4")  # no fourth tab: nothing happens
            await pilot.pause()
            assert isinstance(app.screen, CommunityScreen) and app.screen.query_one("#community-tabs").active == "tab-overview"
            await pilot.press("3")
            await pilot.pause()
            assert app.screen.query_one("#community-tabs").active == "tab-sources"


async def test_number_keys_on_a_community_missing_from_the_store_do_nothing(store: Path) -> None:
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CommunityScreen(app.store, "ns/404"))
        await pilot.pause()
        await wait_community(pilot)
        await pilot.press("1")
        await pilot.pause()
        keys = await open_keys(pilot)
        assert not any(k.startswith("1") for k, _, _ in keys.rows)
        assert ("Esc", "back to the screen before", True) in keys.rows


# -- the command palette ------------------------------------------------------------------------


async def test_the_palette_offers_cancel_only_while_a_run_is_going(store: Path) -> None:
    gate = threading.Event()
    held = Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=gate)
    with ScriptedChatServer(Scripted({"ns/1": held, "ns/2": held, "ns/3": held})) as server:
        try:
            app = make_app(store, server.base_url, keymap={"goto": "ctrl+g"})
            async with app.run_test(size=SIZE) as pilot:
                app.screen.query_one(BatchGrid).focus()
                await pilot.pause()
                commands = await palette_commands(pilot, 14)
                ours = [
                    ("Run", "Run global search with the question in the setup form"),
                    ("Go to community", "Open a community by id, GraphRAG number, name or member entity (^g)"),
                    ("Explore the index", "The community tree and full-text search (x)"),
                    ("Overview of the namespace", "Counts per level, largest communities, sizes, Map batches"),
                    ("Export run", "Write the finished run as JSON and Markdown (e)"),
                    ("Run history", "Past runs: open, re-run failed batches, resume, compare, export, delete (h)"),
                    ("Namespace: ns", "3 communities"),
                    ("Level: leaf", "3 leaves"),
                    ("Level: 0", "3 communities"),
                ]
                assert app_commands_of(commands) == ours
                assert textual_commands_of(commands) == TEXTUAL_COMMANDS
                await pilot.press("escape")
                await pilot.pause()

                await ask(pilot)
                await wait_until(pilot, lambda: len(server.chat_requests()) == 3, what="three held requests")
                await pilot.pause()
                commands = await palette_commands(pilot, 15)
                assert app_commands_of(commands) == [
                    ours[0], ("Cancel run", "Cancel the running search (esc)"), *ours[1:]
                ]
                assert textual_commands_of(commands) == TEXTUAL_COMMANDS
                await pilot.press(*"Cancel run")
                await wait_until(pilot, lambda: commands_shown(app)[:1] == ["Cancel run"], what="the search")
                await pilot.press("enter")
                await wait_finished(pilot)
                assert app.run_state.result.status == "cancelled"
                assert isinstance(app.screen, MainScreen)
        finally:
            gate.set()


def app_commands_of(commands: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The app's commands, in their order (the palette lists each provider's in its order,
    the providers in the order they answer)."""
    return [c for c in commands if c[0] not in TEXTUAL_COMMANDS]


def textual_commands_of(commands: list[tuple[str, str]]) -> list[str]:
    return [title for title, _ in commands if title in TEXTUAL_COMMANDS]


def commands_shown(app) -> list[str]:
    if not isinstance(app.screen, CommandPalette):
        return []
    commands = app.screen.query_one(CommandList)
    return [str(commands.get_option_at_index(i).prompt).partition("\n")[0] for i in range(commands.option_count)]


async def test_the_palette_lists_a_namespace_named_like_markup_as_it_is(tmp_path: Path) -> None:
    store = build_store(tmp_path / "evil.db", [
        {"id": "ns/1", "summary_content": "The bridge."},
        {"id": "zz/1", "namespace": "zz[b]x[/b] [@click=app.quit]q[/]\x1b[2J\u202e", "summary_content": "elsewhere"},
    ])
    app = make_app(store, namespace="ns")
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one(BatchGrid).focus()
        await pilot.pause()
        commands = await palette_commands(pilot, 15)
        assert app_commands_of(commands)[6:8] == [
            ("Namespace: ns", "1 communities"),
            ("Namespace: zz[b]x[/b] [@click=app.quit]q[/]␛[2J", "1 communities"),
        ]
        assert "Namespace: zz[b]x[/b] [@click=app.quit]q[/]␛[2J" in screen_text(app)
        await pilot.press(*"zz")  # the titles that match, highlighted
        await wait_until(pilot, lambda: commands_shown(app) == ["Namespace: zz[b]x[/b] [@click=app.quit]q[/]␛[2J"],
                         what="the search")
        await pilot.press("enter")
        await pilot.pause()
        assert app.setup_form.namespace == "zz[b]x[/b] [@click=app.quit]q[/]\x1b[2J\u202e"
