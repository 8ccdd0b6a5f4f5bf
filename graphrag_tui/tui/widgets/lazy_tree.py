"""Textual's `Tree`, made fast to expand when nodes get their children on first expansion.

Two costs of the stock widget are avoided, through its public API only:

- every change of the tree re-measures every line (`Tree.get_label_width`, documented as
  the method to override "if it can be done more efficiently"): here each label is
  measured once, when first asked, and only the toggle icon is added per call;
- children added after the node expanded (on `Tree.NodeExpanded`, which arrives after
  the expansion) cost a second layout and can show a frame of an empty node first: here
  the Space and Shift+Space actions load the children before expanding.

A node expanded some other way (a mouse click on its arrow) still gets its children from
the `NodeExpanded` handler of the screen: `load_children` is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

T = TypeVar("T")


class LazyTree(Tree[T]):
    """A `Tree` whose nodes get their children (`load_children(node)`) just before they
    first expand from the keyboard."""

    def __init__(self, label: str | Text, load_children: Callable[[TreeNode[T]], None], *,
                 id: str | None = None) -> None:
        super().__init__(label, id=id)
        self.load_children = load_children
        #: Cell width of each node's label, measured once (labels here never change).
        self._label_widths: dict[TreeNode[T], int] = {}

    def get_label_width(self, node: TreeNode[T]) -> int:
        """What `Tree.get_label_width` returns (the toggle icon, then the label), without
        rendering the label on every call."""
        width = self._label_widths.get(node)
        if width is None:
            label = node.label
            width = self._label_widths[node] = label.cell_len if isinstance(label, Text) else cell_len(label)
        if node.allow_expand:
            width += cell_len(self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE)
        return width

    def clear(self) -> LazyTree[T]:
        self._label_widths.clear()
        super().clear()
        return self

    def action_toggle_node(self) -> None:
        """Space: as Textual's (expand or collapse the node under the cursor), children
        loaded first when it is about to expand."""
        node = self.cursor_node
        if node is None or not node.allow_expand:
            return
        if node.is_expanded:
            node.collapse()
        else:
            self.load_children(node)
            node.expand()

    def action_toggle_expand_all(self) -> None:
        """Shift+Space: as Textual's (expand or collapse the siblings), children loaded first."""
        node = self.cursor_node
        if node is not None and node.parent is not None and all(child.is_collapsed for child in node.siblings):
            for sibling in node.siblings:
                if sibling.allow_expand:
                    self.load_children(sibling)
        super().action_toggle_expand_all()
