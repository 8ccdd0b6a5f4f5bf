"""The Explore screen: the namespace's community hierarchy as a tree, and full-text search.

The store is read in thread workers only: the hierarchy once (then the tree adds a node's
children from memory when it is expanded), the search index's build (with a progress bar)
and each search. Workers post messages; the handlers here update the widgets.

Every string from the store is shown as `Text` built by `safe_text` (never markup).
"""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, OptionList, ProgressBar, Static, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode as TreeItem

from ...session.explore import ExploreSession
from ...session.run_failure import failure_words
from ...store.explore import SORT_KEYS, Hierarchy, Kind, SortKey, TreeNode
from ...store.search_index import SearchHit, SearchResults
from ..messages import OpenCommunity, OpenRecord
from ..safe_text import one_line
from ..widgets.clean_input import CleanInput
from ..widgets.footer import KeyFooter
from ..widgets.lazy_tree import LazyTree
from ..widgets.option_list import RoomyOptionList

#: Seconds of quiet typing before a search runs.
SEARCH_DEBOUNCE = 0.25
#: "Expand all below" stops after this many nodes (a root can stand for thousands).
EXPAND_ALL_LIMIT = 2000
#: Nodes added to a level of the tree at a time; a last "more" line adds the next page.
#: Textual's Tree walks every line again on each expansion (LazyTree makes each line
#: cheap, not free), so thousands of lines would make every expansion slow.
PAGE = 200
#: Levels the tree shows: Textual's Tree draws one level of recursion per level (a chain of
#: 1,100 damaged parent links crashed the app), and its lines widen with depth. GraphRAG
#: hierarchies have a handful; a community deeper than this opens from the search instead.
MAX_TREE_DEPTH = 64
KIND_TITLES: dict[Kind, str] = {"community": "Communities", "entity": "Entities", "claim": "Claims",
                                "chunk": "Chunks"}
MARK_STYLE = "bold reverse"
SEARCH_PLACEHOLDER = 'Search: words, "a phrase", prefix*   (Down: to the results)'


def keep_out_of_gc() -> None:
    """Take what lives now (the hierarchy just read: a 100,000-community namespace is
    130,000 objects kept as long as the app) out of the cyclic garbage collector's walks,
    as the app does with its start-up objects: otherwise each full collection walks them
    all, a 30-80 ms stall that lands on whatever key is being handled. The young
    generations are collected first, so little garbage is kept with them."""
    gc.collect(1)
    gc.freeze()


def node_label(node: TreeNode) -> Text:
    """A community in the tree: its name (or id), then level, leaves, claims and rank."""
    text = Text(one_line(node.name, 60) or one_line(node.id), style="" if node.name else "italic")
    details = (f"  L{node.level} · {node.leaf_count} {'leaf' if node.leaf_count == 1 else 'leaves'}"
               f" · {node.claim_count} {'claim' if node.claim_count == 1 else 'claims'}")
    if node.rank is not None:
        details += f" · rank {node.rank:g}"
    text.append(details, style="dim")
    return text


def tree_depth(item: TreeItem[TreeNode | None]) -> int:
    """0 for the tree's root, 1 for the nodes under it..."""
    depth = 0
    while item.parent is not None:
        item, depth = item.parent, depth + 1
    return depth


def hit_text(hit: SearchHit) -> Text:
    """A search result: title (and id), then the snippet with its matching words marked."""
    text = Text.assemble((one_line(hit.title), "bold"))
    if hit.title != hit.id:
        text.append(f"  {one_line(hit.id)}", style="dim")
    snippet = Text(hit.snippet)
    for start, end in hit.marks:
        snippet.stylize(MARK_STYLE, start, end)
    text.append("\n  ")
    text.append_text(snippet)
    return text


class ExploreScreen(Screen):
    """The tree and the search box. Enter on a community opens it; on a search result,
    its view."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="explore-back", tooltip="back to the screen before"),
        Binding("s", "sort", "Sort", id="explore-sort", tooltip="sort the tree by size, name or rank"),
        Binding("l", "level", "Level", id="explore-level", tooltip="show all levels, or only level N"),
        Binding("asterisk", "expand_all", "Expand all", id="explore-expand-all",
                tooltip="expand everything below the node"),
        Binding("o", "overview", "Overview", id="explore-overview", tooltip="the namespace in figures"),
        Binding("slash", "focus_search", "Search", id="explore-search", tooltip="put the cursor in the search box"),
    ]
    AUTO_FOCUS = "#explore-query"

    def __init__(self, explore: ExploreSession, *, select: str | None = None) -> None:
        super().__init__()
        self.explore = explore
        self.hierarchy: Hierarchy | None = None
        self.error: str | None = None
        self.sort: SortKey = "size"
        self.level: int | None = None
        #: A community to show in the tree once the hierarchy is read.
        self.pending_select = select
        self.results: SearchResults | None = None
        self.searching = False
        #: The query whose answer (results or error) is shown.
        self.answered_query: str | None = None
        self.building = False
        self._query_pending: str | None = None
        self._debounce: Timer | None = None
        self._build_lock = threading.Lock()
        self._hits: dict[int, SearchHit] = {}
        #: Tree items whose children are added (lazily, on the first expansion).
        self._populated: set[int] = set()
        #: "More" line item id -> (its parent item, the nodes not shown yet).
        self._more: dict[int, tuple[TreeItem[TreeNode | None], list[TreeNode]]] = {}

    # -- messages from the workers ----------------------------------------------------------

    @dataclass
    class HierarchyRead(Message):
        hierarchy: Hierarchy | None
        error: str | None

    class IndexBuilding(Message):
        """A worker found no current index and builds it."""

    @dataclass
    class IndexProgress(Message):
        done: int
        total: int

    @dataclass
    class IndexBuilt(Message):
        error: str | None

    @dataclass
    class Searched(Message):
        query: str
        results: SearchResults | None
        error: str | None

    # -- composing --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield CleanInput(placeholder=SEARCH_PLACEHOLDER, id="explore-query")
        yield ProgressBar(id="index-progress", show_eta=False)
        yield Static(self._status(), id="explore-status")
        tree: LazyTree[TreeNode | None] = LazyTree(Text(one_line(self.explore.namespace)), self.populate,
                                                   id="explore-tree")
        tree.show_root = False
        tree.auto_expand = False
        yield tree
        yield RoomyOptionList(id="search-results")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#index-progress").display = False
        self.query_one("#search-results").display = False
        # After the first frame: the worker's Python work would compete with it for the GIL.
        self.call_after_refresh(self.after_first_frame)

    def after_first_frame(self) -> None:
        self.run_worker(self._read_hierarchy, thread=True, exit_on_error=False, group="explore-hierarchy")

    def _status(self) -> Text:
        if self.results is not None and self._showing_results():
            counts = ", ".join(
                f"{len(hits)}{'+' if kind in self.results.more else ''} {KIND_TITLES[kind].lower()}"
                for kind, hits in self.results.results.items()
            )
            return Text.assemble(("Search ", "bold"), one_line(self.results.query, 60), ": ", counts)
        if self.error is not None:
            return Text(f"Cannot read the hierarchy: {one_line(self.error)}", style="bold red")
        if self.hierarchy is None:
            return Text("Reading the hierarchy…", style="dim")
        shown = "all levels" if self.level is None else f"level {self.level} only"
        count = len(self.hierarchy.roots) if self.level is None else len(self.hierarchy.at_level(self.level))
        what = "roots" if self.level is None else "communities"
        return Text.assemble(
            ("Namespace ", "dim"), one_line(self.hierarchy.namespace), ("   Sort ", "dim"), self.sort,
            ("   Showing ", "dim"), shown, ("   ", ""), f"{count} {what}",
        )

    def _refresh_status(self) -> None:
        self.query_one("#explore-status", Static).update(self._status())

    # -- the tree ----------------------------------------------------------------------------

    def _read_hierarchy(self) -> None:
        try:
            self.post_message(self.HierarchyRead(self.explore.hierarchy(), None))
        except Exception as error:
            self.post_message(self.HierarchyRead(None, failure_words(error)))

    @on(HierarchyRead)
    def _hierarchy_read(self, message: HierarchyRead) -> None:
        message.stop()
        self.hierarchy, self.error = message.hierarchy, message.error
        if message.hierarchy is not None:
            keep_out_of_gc()
        self._fill_tree()
        if self.pending_select is not None:
            self.show_community(self.pending_select)
            self.pending_select = None

    @property
    def tree(self) -> LazyTree[TreeNode | None]:
        return self.query_one("#explore-tree", LazyTree)

    def _fill_tree(self) -> None:
        tree, hierarchy = self.tree, self.hierarchy
        tree.clear()
        self._populated.clear()
        self._more.clear()
        if hierarchy is not None:
            nodes = hierarchy.children_of(None, self.sort) if self.level is None else hierarchy.at_level(
                self.level, self.sort)
            self._add_nodes(tree.root, nodes)
            tree.cursor_line = 0
        self._refresh_status()

    def _add_nodes(self, item: TreeItem[TreeNode | None], nodes: list[TreeNode]) -> None:
        """The first PAGE nodes under `item`, then a "more" line for the rest; at the tree's
        last level (MAX_TREE_DEPTH) they do not expand."""
        deepest = tree_depth(item) + 1 >= MAX_TREE_DEPTH
        for node in nodes[:PAGE]:
            label = node_label(node)
            if deepest and node.child_count:
                label.append(f"  (deeper than the tree's {MAX_TREE_DEPTH} levels)", style="dim italic")
            item.add(label, node, allow_expand=node.child_count > 0 and not deepest)
        if len(nodes) > PAGE:
            rest = nodes[PAGE:]
            more = item.add_leaf(Text(f"… {len(rest):,} more (Enter: the next {min(PAGE, len(rest))})",
                                      style="dim italic"), None)
            self._more[more.id] = (item, rest)
        self._populated.add(item.id)

    def _show_more(self, more: TreeItem[TreeNode | None]) -> None:
        parent, rest = self._more.pop(more.id)
        more.remove()
        self._add_nodes(parent, rest)

    def populate(self, item: TreeItem[TreeNode | None]) -> None:
        """Add the item's children (once): from the hierarchy in memory, no store read."""
        if item.id in self._populated or item.data is None or self.hierarchy is None:
            return
        self._add_nodes(item, self.hierarchy.children_of(item.data.id, self.sort))

    @on(Tree.NodeExpanded, "#explore-tree")
    def _expanded(self, event: Tree.NodeExpanded[TreeNode | None]) -> None:
        """A node expanded other than by Space (a click on its arrow): children now."""
        event.stop()
        self.populate(event.node)

    @on(Tree.NodeSelected, "#explore-tree")
    def _selected(self, event: Tree.NodeSelected[TreeNode | None]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(OpenCommunity(event.node.data.id))
        elif event.node.id in self._more:
            self._show_more(event.node)

    def action_sort(self) -> None:
        self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
        if self.sort == "rank" and self.hierarchy is not None and not self.hierarchy.has_rank:
            self.notify("This store has no rank: sorted by size.", timeout=3)
            self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
        self._fill_tree()

    def action_level(self) -> None:
        if self.hierarchy is None:
            return
        levels = self.hierarchy.levels()
        cycle: list[int | None] = [None, *levels]
        self.level = cycle[(cycle.index(self.level) + 1) % len(cycle)] if self.level in cycle else None
        self._fill_tree()

    def action_expand_all(self) -> None:
        """Expand the node under the cursor and everything below it (up to EXPAND_ALL_LIMIT nodes)."""
        item = self.tree.cursor_node
        if item is None or item.data is None:
            return
        count, stack = 0, [item]
        while stack and count < EXPAND_ALL_LIMIT:
            current = stack.pop()
            self.populate(current)
            current.expand()
            count += 1
            stack.extend(child for child in current.children if child.allow_expand)
        if stack:
            self.notify(f"Expanded the first {EXPAND_ALL_LIMIT} nodes below {one_line(item.data.id)}.", timeout=4)

    def show_community(self, community_id: str) -> None:
        """Expand the path to the community and put the cursor on it."""
        if self.hierarchy is None:
            self.pending_select = community_id
            return
        path = self.hierarchy.path_to(community_id)
        if not path:
            self.notify(f"Community {one_line(community_id)} is not in this namespace's tree.", severity="warning")
            return
        if self.level is not None:
            self.level = None
            self._fill_tree()
        self._show_tree()
        if len(path) > MAX_TREE_DEPTH:
            self.notify(f"Community {one_line(community_id, 60)} is {len(path)} levels deep; the tree shows "
                        f"{MAX_TREE_DEPTH}: the cursor is on its ancestor there.", severity="warning")
            path = path[:MAX_TREE_DEPTH]
        item = self.tree.root
        for cid in path:
            self.populate(item)
            item.expand()
            found = None
            while found is None:
                found = next((child for child in item.children if child.data is not None and child.data.id == cid),
                             None)
                more = next((child for child in item.children if child.id in self._more), None)
                if found is None and more is None:
                    return
                if found is None and more is not None:
                    self._show_more(more)
            item = found
        self.tree.focus()
        self.tree.call_after_refresh(self.tree.move_cursor, item, animate=False)

    # -- search -------------------------------------------------------------------------------

    def _showing_results(self) -> bool:
        return bool(self.query_one("#explore-query", Input).value.strip())

    def _show_tree(self) -> None:
        self.query_one("#explore-query", Input).value = ""

    @on(Input.Changed, "#explore-query")
    def _query_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        has_query = bool(event.value.strip())
        self.tree.display = not has_query
        self.query_one("#search-results").display = has_query
        if not has_query:
            self.results = None
            self._refresh_status()
            return
        self._debounce = self.set_timer(SEARCH_DEBOUNCE, lambda: self.search(event.value))

    @on(Input.Submitted, "#explore-query")
    def _query_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        if event.value.strip():
            self.search(event.value)

    def search(self, query: str) -> None:
        """Search in a worker (which builds the index first, once, if there is none)."""
        if self.building:
            self._query_pending = query
            return
        self.searching = True
        self.run_worker(lambda: self._search(query), thread=True, exit_on_error=False, group="explore-search")

    def _search(self, query: str) -> None:
        """In a thread: the index checked (and built, once: the lock makes a second search
        wait for the first one's build), then the search."""
        search = self.explore.text_search
        try:
            with self._build_lock:
                if not search.ready():
                    self.post_message(self.IndexBuilding())
                    built = search.build(progress=lambda done, total: self.post_message(
                        self.IndexProgress(done, total)), cancelled=lambda: not self.is_attached)
                    self.post_message(self.IndexBuilt(None))
                    if not built:
                        return
        except Exception as error:
            self.post_message(self.IndexBuilt(failure_words(error)))
            return
        try:
            self.post_message(self.Searched(query, search.search(query), None))
        except Exception as error:
            self.post_message(self.Searched(query, None, failure_words(error)))

    @on(IndexBuilding)
    def _index_building(self, message: IndexBuilding) -> None:
        message.stop()
        self.building = True
        progress = self.query_one("#index-progress", ProgressBar)
        progress.display = True
        progress.update(total=None, progress=0)
        self.query_one("#explore-status", Static).update(Text(
            "Building the search index (once for this store; it is kept in the cache)…", style="dim"))

    @on(IndexProgress)
    def _index_progress(self, message: IndexProgress) -> None:
        message.stop()
        self.query_one("#index-progress", ProgressBar).update(total=max(message.total, 1), progress=message.done)

    @on(IndexBuilt)
    def _index_built(self, message: IndexBuilt) -> None:
        message.stop()
        self.building = False
        self.query_one("#index-progress").display = False
        if message.error is not None:
            self.searching = False
            self.query_one("#explore-status", Static).update(
                Text(f"Cannot build the search index: {one_line(message.error)}", style="bold red"))
            return
        pending, self._query_pending = self._query_pending, None
        if pending is not None:
            self.search(self.query_one("#explore-query", Input).value)

    @on(Searched)
    def _searched(self, message: Searched) -> None:
        message.stop()
        self.searching = False
        if message.query != self.query_one("#explore-query", Input).value:
            return  # typed on since: the newer search is on its way
        self.answered_query = message.query
        results = self.query_one("#search-results", OptionList)
        results.clear_options()
        self._hits.clear()
        if message.results is None:
            self.results = None
            self.query_one("#explore-status", Static).update(Text(one_line(message.error), style="bold red"))
            return
        self.results = message.results
        options: list[Option | None] = []
        for kind, hits in message.results.results.items():
            more = "+" if kind in message.results.more else ""
            options.append(Option(Text(f"{KIND_TITLES[kind]} ({len(hits)}{more})", style="bold"), disabled=True))
            for hit in hits:
                self._hits[len(options)] = hit
                options.append(Option(hit_text(hit)))
            if not hits:
                options.append(Option(Text("no match", style="dim italic"), disabled=True))
        results.add_options(options)
        self._refresh_status()

    @on(OptionList.OptionSelected, "#search-results")
    def _result_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        hit = self._hits.get(event.option_index)
        if hit is None:
            return
        if hit.kind == "community":
            self.post_message(OpenCommunity(hit.id))
        else:
            self.post_message(OpenRecord(hit.kind, hit.id))

    def on_key(self, event: object) -> None:
        """Down in the search box moves into the results (or the tree)."""
        key = getattr(event, "key", None)
        if key == "down" and isinstance(self.focused, Input):
            target = self.query_one("#search-results", OptionList) if self._showing_results() else self.tree
            target.focus()
            if isinstance(target, OptionList) and target.highlighted is None:  # (the first is a heading: Enter did nothing)
                target.highlighted = next((i for i, option in enumerate(target.options) if not option.disabled), None)
            getattr(event, "stop", lambda: None)()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("sort", "level", "expand_all", "overview", "focus_search") and isinstance(self.focused, Input):
            return False
        return True

    def action_focus_search(self) -> None:
        self.query_one("#explore-query", Input).focus()

    def action_overview(self) -> None:
        self.app.action_overview()  # type: ignore[attr-defined]

    def action_close(self) -> None:
        self.dismiss()
