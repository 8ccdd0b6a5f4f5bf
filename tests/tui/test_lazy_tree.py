"""LazyTree: Textual's Tree with children loaded before a node expands and labels measured
once. Pins what it relies on in Textual: `get_label_width` must give exactly what
Textual's own does (icon and label, through `render_label`)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from graphrag_tui.tui.widgets.lazy_tree import LazyTree

CHILDREN = {"north": ["harbor", "pier", "tide"], "south": ["levee"], "east": ["绿茶 market", "ferry"]}


class TreeApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        #: (label, expanded at the time, children it had then) per load_children call.
        self.loads: list[tuple[str, bool, int]] = []
        #: (label, children it had) when Textual's NodeExpanded arrived.
        self.expanded: list[tuple[str, int]] = []

    def load(self, node: TreeNode[str]) -> None:
        self.loads.append((str(node.label), node.is_expanded, len(node.children)))
        if not node.children and node.data in CHILDREN:
            for child in CHILDREN[node.data]:
                node.add_leaf(Text(child), child)

    def compose(self) -> ComposeResult:
        tree: LazyTree[str] = LazyTree(Text("roots"), self.load, id="tree")
        tree.show_root = False
        tree.auto_expand = False
        for name in CHILDREN:
            tree.root.add(Text(name), name, allow_expand=True)
        yield tree

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[str]) -> None:
        self.expanded.append((str(event.node.label), len(event.node.children)))


def textual_widths(tree: LazyTree[str]) -> list[int]:
    return [Tree.get_label_width(tree, line.node) for line in tree._tree_lines]


async def test_space_loads_the_children_before_the_node_expands() -> None:
    app = TreeApp()
    async with app.run_test(size=(60, 12)) as pilot:
        tree = app.query_one(LazyTree)
        tree.focus()
        tree.cursor_line = 0
        north = tree.root.children[0]
        assert len(north.children) == 0 and app.loads == []
        await pilot.press("space")
        assert app.loads == [("north", False, 0)]
        assert [str(child.label) for child in north.children] == ["harbor", "pier", "tide"]
        assert app.expanded == [("north", 3)]  # the children were there when it expanded
        await pilot.pause()
        assert [str(line.node.label) for line in tree._tree_lines] == ["north", "harbor", "pier", "tide", "south",
                                                                         "east"]
        await pilot.press("space")  # collapses, loads nothing
        assert not north.is_expanded and len(app.loads) == 1
        await pilot.press("space")  # expands again: asked again, adds nothing (the loader is idempotent)
        assert app.loads[-1] == ("north", False, 3) and len(north.children) == 3


async def test_shift_space_loads_every_sibling_before_expanding_them() -> None:
    app = TreeApp()
    async with app.run_test(size=(60, 12)) as pilot:
        tree = app.query_one(LazyTree)
        tree.focus()
        tree.cursor_line = 0
        await pilot.press("shift+space")
        assert app.loads == [("north", False, 0), ("south", False, 0), ("east", False, 0)]
        assert sorted(app.expanded) == [("east", 2), ("north", 3), ("south", 1)]
        await pilot.pause()
        assert [str(line.node.label) for line in tree._tree_lines] == [
            "north", "harbor", "pier", "tide", "south", "levee", "east", "绿茶 market", "ferry"]


async def test_label_widths_are_textuals_own_in_every_state_and_after_clear() -> None:
    app = TreeApp()
    async with app.run_test(size=(60, 12)) as pilot:
        tree = app.query_one(LazyTree)
        tree.focus()
        tree.cursor_line = 0
        await pilot.press("shift+space")  # expandable nodes expanded, leaves, wide characters
        await pilot.pause()
        ours = [tree.get_label_width(line.node) for line in tree._tree_lines]
        assert ours == textual_widths(tree) == [7, 6, 4, 4, 7, 5, 6, 11, 5]
        tree.root.children[0].collapse()
        await pilot.pause()
        assert [tree.get_label_width(line.node) for line in tree._tree_lines] == textual_widths(tree)
        assert tree.get_label_width(tree.root.children[0]) == 7  # "▶ north"
        tree.clear()  # node ids start again at 0: no width kept from before
        tree.root.add_leaf(Text("a much longer label than north"), "x")
        tree.root.add(Text("z"), "z")
        await pilot.pause()
        assert [tree.get_label_width(line.node) for line in tree._tree_lines] == textual_widths(tree) == [30, 3]
        assert tree.virtual_size.width == 30
