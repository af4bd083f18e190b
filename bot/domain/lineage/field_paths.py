"""A schema's field paths as lineage names them (``items``, ``items.price``), for any format: each path once, parents
before children, never through the same type twice on one path.

Types used at many places (a definition referred to from everywhere, definitions that refer to one another) make the
paths many: a type used twice at each of 20 levels has a million. The paths are found breadth first, the shallowest
first, up to ``FIELD_PATHS``; then they are listed in the schema's order (depth first, fields as written). Whether one
path is there is answered however deep it is (``FieldWalk.has``): a walk that follows only its names.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, NamedTuple

FIELD_PATHS = 20_000  # the most paths listed for one schema (the shallowest)
ROUTES = 20 * FIELD_PATHS  # the most routes walked to find them (several routes may lead to one path)

Step = tuple[str | None, Any]  # a field's name (None: the same place, as an array's items or a union's branch), what it holds
Listing = tuple[dict[str, tuple[int, ...]], dict[str, set[tuple[Hashable | None, str]]]]  # paths: their order; the fields they end at


class Met(NamedTuple):
    """A named step taken on the way along a path: the path up to it, the key of the node it was taken from (the type that
    holds the field), the field's name, what it holds, the types passed, and whether it ends the path."""

    place: str
    holder: Hashable | None
    name: str
    inner: Any
    seen: frozenset[Hashable]
    last: bool


class FieldWalk(NamedTuple):
    """A schema's fields as lineage walks them: ``steps(node)`` are where a node leads, in the schema's order (what it
    holds is None where there is nothing to walk); ``key(node)`` what no path passes twice (None: a node any path may
    pass again)."""

    root: Any
    steps: Callable[[Any], Sequence[Step]]
    key: Callable[[Any], Hashable | None]

    def paths(self) -> list[str]:
        """The paths, parents first, the shallowest ``FIELD_PATHS`` of them."""
        order, _ = self.listing()
        return sorted(order, key=order.__getitem__)

    def listing(self) -> Listing:
        """The shallowest ``FIELD_PATHS`` paths, each with its place in the schema's order (the first route to it), and
        the fields each path ends at: (the key of the type holding it, its name), over every route."""
        found: dict[str, tuple[int, ...]] = {}
        ends: dict[str, set[tuple[Hashable | None, str]]] = {}
        start = self.key(self.root)
        level: list[tuple[Any, str, tuple[int, ...], frozenset[Hashable]]] = [(self.root, "", (), _seen(start))]
        routes = 0
        while level and len(found) < FIELD_PATHS and routes < ROUTES:
            below = []
            for node, prefix, order, seen in level:
                holder = self.key(node)
                for index, (name, inner) in enumerate(self.steps(node)):
                    routes += 1
                    place, at = prefix, (*order, index)
                    if name is not None:
                        place = f"{prefix}.{name}" if prefix else name
                        if place not in found:
                            if len(found) >= FIELD_PATHS:
                                continue
                            found[place], ends[place] = at, set()
                        elif at < found[place]:
                            found[place] = at
                        ends[place].add((holder, name))
                    if inner is not None:
                        mark = self.key(inner)
                        if mark is None or mark not in seen:
                            below.append((inner, place, at, seen if mark is None else seen | {mark}))
            level = below
        return found, ends

    def has(self, path: str) -> bool:
        """Whether ``path`` is a path of this walk (by the same rule as ``paths``, past its limit too)."""
        return any(met.last for met in self.along(path))

    def along(self, path: str) -> Iterator[Met]:
        """Each named step taken along ``path``'s names, on every route (a name may hold a dot, as a JSON property's:
        it is matched whole)."""
        todo: list[tuple[Any, int, frozenset[Hashable]]] = [(self.root, 0, _seen(self.key(self.root)))]
        tried: set[tuple[Hashable, int, frozenset[Hashable]]] = set()
        routes = 0
        while todo and routes < ROUTES:
            node, at, seen = todo.pop()
            rest, holder = path[at:], self.key(node)
            for name, inner in self.steps(node):
                routes += 1
                after = at
                if name is not None:
                    if rest != name and not rest.startswith(name + "."):
                        continue
                    after = at + len(name) + 1
                    yield Met(path[:at + len(name)], holder, name, inner, seen, rest == name)
                    if rest == name:
                        continue
                if inner is None:
                    continue
                mark = self.key(inner)
                if mark is None:
                    todo.append((inner, after, seen))
                elif mark not in seen and (mark, after, seen) not in tried:
                    tried.add((mark, after, seen))
                    todo.append((inner, after, seen | {mark}))

    def below(self, met: Met, fields: set[tuple[Hashable | None, str]]) -> str | None:
        """The shallowest path under the end of ``met`` that ends at one of ``fields`` (holder key, name), if any."""
        if met.inner is None:
            return None
        level: list[tuple[Any, str, frozenset[Hashable]]] = [(met.inner, met.place, met.seen)]
        routes = 0
        while level and routes < ROUTES:
            below = []
            for node, prefix, seen in level:
                holder = self.key(node)
                for name, inner in self.steps(node):
                    routes += 1
                    place = prefix if name is None else f"{prefix}.{name}"
                    if name is not None and (holder, name) in fields:
                        return place
                    if inner is not None:
                        mark = self.key(inner)
                        if mark is None or mark not in seen:
                            below.append((inner, place, seen if mark is None else seen | {mark}))
            level = below
        return None


def _seen(key: Hashable | None) -> frozenset[Hashable]:
    return frozenset() if key is None else frozenset({key})
