"""The app's commands in the command palette (ctrl+p), beside Textual's own (Theme, Quit, …).

The palette parses help texts as markup and draws the titles given to it: titles are built
as `Content` (inert, whatever a store's namespace is called), help texts are escaped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.command import CommandList, DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher
from textual.markup import escape

from ..safe_text import one_line
from .widgets.option_list import paged_once_laid_out

# Textual's palette lists its commands in an option list of its own: at 1×1 its PageUp ended the app
CommandList._move_page = paged_once_laid_out(CommandList._move_page)  # type: ignore[method-assign]

if TYPE_CHECKING:
    from .app import GraphRAGApp


@dataclass(frozen=True)
class Command:
    title: str
    help: str
    run: Callable[[], object]


def app_commands(app: GraphRAGApp) -> Iterator[Command]:
    """What the palette offers now: the run commands, then the setup form's scopes."""

    def key(binding_id: str) -> str:
        """The app's key for that binding, as the keymap set it."""
        keys = app.settings.keymap.get(binding_id) or next(
            b.key for b in app.BINDINGS if isinstance(b, Binding) and b.id == binding_id
        )
        return f" ({', '.join(app.get_key_display(Binding(k.strip(), '')) for k in keys.split(','))})"

    yield Command("Run", "Run global search with the question in the setup form", app.setup_form.submit)
    if app.run_state.running:
        yield Command("Cancel run", "Cancel the running search" + key("cancel-run"), app.cancel_event.set)
    yield Command("Go to community", "Open a community by id, GraphRAG number, name or member entity" + key("goto"),
                  app.action_goto)
    yield Command("Explore the index", "The community tree and full-text search" + key("explore"), app.action_explore)
    yield Command("Overview of the namespace", "Counts per level, largest communities, sizes, Map batches",
                  app.action_overview)
    yield Command("Export run", "Write the finished run as JSON and Markdown" + key("export"), app.action_export)
    yield Command("Run history", "Past runs: open, re-run failed batches, resume, compare, export, delete"
                  + key("runs"), app.action_runs)
    form = app.setup_form
    for info in form.namespaces.values():
        yield Command(
            f"Namespace: {one_line(info.name)}", f"{info.community_count} communities",
            partial(form.select_namespace, info.name),
        )
    current = form.namespaces.get(form.namespace or "")
    if current is not None:
        yield Command("Level: leaf", f"{current.leaf_count} leaves", partial(form.select_level, "leaf"))
        for level, count in current.levels.items():
            yield Command(f"Level: {level}", f"{count} communities", partial(form.select_level, level))


def highlighted(matcher: Matcher, title: str) -> Content:
    """The title with the letters that match the query highlighted (`Matcher.highlight`
    would parse the title as markup)."""
    content = Content(title)
    _, offsets = matcher.fuzzy_search.match(matcher.query, title)
    for offset in offsets:
        if not title[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class GraphRAGCommands(Provider):
    """The app's commands: listed when the palette opens, matched as the user types."""

    def _commands(self) -> list[Command]:
        return list(app_commands(self.app))  # type: ignore[arg-type]

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(Content(command.title), command.run, text=command.title, help=escape(command.help))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, highlighted(matcher, command.title), command.run, text=command.title,
                          help=escape(command.help))
