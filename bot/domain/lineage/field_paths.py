"""A schema's field paths as lineage names them (``items``, ``items.price``), for any format: each path once, parents
before children, never through the same type twice on one path.

Types used at many places (a definition referred to from everywhere, definitions that refer to one another) make the
paths many: a type used twice at each of 20 levels has a million. The paths are found breadth first, the shallowest
first, up to ``FIELD_PATHS``; then they are listed in the schema's order (depth first, fields as written). Whether one
path is there is answered however deep it is (``FieldWalk.has``): a walk that follows only its names.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

FIELD_PATHS = 20_000  # the most paths listed for one schema (the shallowest)
ROUTES = 20 * FIELD_PATHS  # the most routes walked to find them (several routes may lead to one path)

Step = tuple[str | None, Any]  # a field's name (None: the same place, as an array's items or a union's branch), what it holds


class FieldWalk(NamedTuple):
    """A schema's fields as lineage walks them: ``steps(node)`` are where a node leads, in the schema's order (what it
    holds is None where there is nothing to walk); ``key(node)`` what no path passes twice (None: a node any path may
    pass again)."""

    root: Any
    steps: Callable[[Any], Sequence[Step]]
    key: Callable[[Any], Hashable | None]

    def paths(self) -> list[str]:
        """The paths, parents first, the shallowest ``FIELD_PATHS`` of them."""
        return field_paths(self.root, self.steps, self.key)

    def has(self, path: str) -> bool:
        """Whether ``path`` is a path of this walk (by the same rule as ``paths``, past its limit too)."""
        start = self.key(self.root)
        todo: list[tuple[Any, str, frozenset[Hashable]]] = [(self.root, path, frozenset() if start is None else frozenset({start}))]
        tried: set[tuple[Hashable, str, frozenset[Hashable]]] = set()
        routes = 0
        while todo and routes < ROUTES:
            node, rest, seen = todo.pop()
            for name, inner in self.steps(node):
                routes += 1
                left = rest
                if name is not None:
                    if rest == name:
                        return True
                    if not rest.startswith(name + "."):  # a name may hold a dot (a JSON property): match it whole
                        continue
                    left = rest[len(name) + 1:]
                if inner is None:
                    continue
                mark = self.key(inner)
                if mark is None:
                    todo.append((inner, left, seen))
                elif mark not in seen and (mark, left, seen) not in tried:
                    tried.add((mark, left, seen))
                    todo.append((inner, left, seen | {mark}))
        return False


def field_paths(root: Any, steps: Callable[[Any], Sequence[Step]], key: Callable[[Any], Hashable | None]) -> list[str]:
    """The paths from ``root``: ``steps(node)`` are where a node leads, in the schema's order (what it holds is None
    where there is nothing to walk); ``key(node)`` what no path passes twice (None: a node any path may pass again)."""
    found: dict[str, tuple[int, ...]] = {}  # path: its place in the schema's order (the first route to it)
    start = key(root)
    level: list[tuple[Any, str, tuple[int, ...], frozenset[Hashable]]] = [(root, "", (), frozenset() if start is None else frozenset({start}))]
    routes = 0
    while level and len(found) < FIELD_PATHS and routes < ROUTES:
        below = []
        for node, prefix, order, seen in level:
            for index, (name, inner) in enumerate(steps(node)):
                routes += 1
                place, at = prefix, (*order, index)
                if name is not None:
                    place = f"{prefix}.{name}" if prefix else name
                    if place not in found:
                        if len(found) >= FIELD_PATHS:
                            continue
                        found[place] = at
                    elif at < found[place]:
                        found[place] = at
                if inner is not None:
                    mark = key(inner)
                    if mark is None or mark not in seen:
                        below.append((inner, place, at, seen if mark is None else seen | {mark}))
        level = below
    return sorted(found, key=found.__getitem__)
