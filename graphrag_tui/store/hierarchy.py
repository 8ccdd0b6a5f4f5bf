"""Each selected community's descendant leaves, from a walk down that stops at the other
selected communities.

Walking down from every selected community on its own made a store whose communities of one
level are chained to each other (each the parent of the next, which no GraphRAG index makes)
quadratic: 4,000 of them took a minute and 420 MB to plan. The walk (store.py) instead
stops where it meets another selected community and says so; that one's leaves are its
own walk's, added here, once per group of communities that reach each other (a cyclic
link makes such a group)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence


def leaves_by_root(rows: Iterable[tuple[str, str, int]]) -> defaultdict[str, list[str]]:
    """`(root, node, nested)` rows, ordered by root, then node: `node` is a leaf under
    `root` (nested 0), or another root the walk met (nested 1). Every root's leaves, in
    code point order (SQLite's BINARY, PostgreSQL's "C")."""
    own: defaultdict[str, list[str]] = defaultdict(list)
    nested: dict[str, list[str]] = {}
    for root, node, is_nested in rows:
        if is_nested:
            nested.setdefault(root, []).append(node)
        else:
            own[root].append(node)
    if not nested:
        return own
    found: dict[str, list[str]] = {}
    for group in _reaching_groups(nested):
        members = set(group)
        leaves = set().union(*(own.get(member, ()) for member in group))
        for member in group:
            for other in nested.get(member, ()):
                if other not in members:
                    leaves.update(found[other])
        ordered = sorted(leaves)
        found.update(dict.fromkeys(group, ordered))
    own.update(found)
    return own


def _reaching_groups(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The graph's strongly connected components, each after every one it reaches
    (Tarjan's algorithm, without recursion: a chain of thousands is no deeper a stack)."""
    number: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in graph:
        if start in number:
            continue
        number[start] = lowest[start] = len(number)
        stack.append(start)
        on_stack.add(start)
        path = [(start, iter(graph.get(start, ())))]
        while path:
            node, children = path[-1]
            for child in children:
                if child not in number:
                    number[child] = lowest[child] = len(number)
                    stack.append(child)
                    on_stack.add(child)
                    path.append((child, iter(graph.get(child, ()))))
                    break
                if child in on_stack:
                    lowest[node] = min(lowest[node], number[child])
            else:
                path.pop()
                if path:
                    parent = path[-1][0]
                    lowest[parent] = min(lowest[parent], lowest[node])
                if lowest[node] == number[node]:
                    group: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups
