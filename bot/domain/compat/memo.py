"""Results memoised per pair of schema nodes, so shared named types cost once and recursion ends; and the walk's
findings placed at every path a pair is met by, or, where types used at many places make more than ``PLACES``
findings, each pair once, at its shallowest place.

A pair's findings are kept relative to it; a list holds a pair's as one ``Rel`` whose rule is ``MET`` (its detail
names the pair), so a named type used at a million places is not copied a million times before it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.domain.avro.model import Node
from bot.domain.compat.changes import Change, Direction

Rel = tuple[str, str, str, str, str]  # (relative path, rule, old description, new description, detail)
MET = "\x00"  # the rule of a Rel that stands for a pair's findings (its detail: the pair's number)
PLACES = 2_000  # findings written at every place; beyond, each pair at its shallowest place


class PairMemo:
    """One result list per (a, b) pair; a pair met again while it is being computed yields nothing new."""

    def __init__(self) -> None:
        self._done: dict[tuple[int, int], list[Rel]] = {}
        self._active: set[tuple[int, int]] = set()
        self._lists: list[list[Rel]] = []  # by pair number: each pair's own list, relative to it
        self._sizes: dict[str, int] = {}

    def get(self, a: Node, b: Node, compute: Callable[[], list[Rel]]) -> list[Rel]:
        """The pair's findings, computed once: nothing, or the ``MET`` entry that stands for them."""
        key = (id(a), id(b))
        done = self._done.get(key)
        if done is not None:
            return done
        if key in self._active:
            return []
        self._active.add(key)
        try:
            result = compute()
        finally:
            self._active.discard(key)
        self._lists.append(result)
        done = self._done[key] = [("", MET, "", "", str(len(self._lists) - 1))] if result else []
        return done

    def size(self, found: list[Rel]) -> int:
        """How many findings ``found`` holds once every pair in it is written at every place."""
        total = 0
        for _, rule, _, _, detail in found:
            if rule != MET:
                total += 1
                continue
            if detail not in self._sizes:
                self._sizes[detail] = self.size(self._lists[int(detail)])
            total += self._sizes[detail]
        return total

    def placed(self, found: list[Rel], crowded: bool) -> list[Rel]:
        """``found`` with every pair written: at every place it is met by (in the walk's order), or, ``crowded``, once,
        at its shallowest place (fewest named types on the way, then the first path in text order): the same place
        whichever walk writes it."""
        if not crowded:
            return list(self._everywhere(found, ""))
        out: list[Rel] = []
        written: set[str] = set()
        level = [("", found)]
        while level:
            shallowest: dict[str, str] = {}
            for prefix, entries in level:
                for suffix, rule, old, new, detail in entries:
                    if rule != MET:
                        out.append((prefix + suffix, rule, old, new, detail))
                    elif detail not in written and (detail not in shallowest or prefix + suffix < shallowest[detail]):
                        shallowest[detail] = prefix + suffix
            written |= shallowest.keys()
            level = [(place, self._lists[int(pair)]) for pair, place in sorted(shallowest.items(), key=lambda item: item[1])]
        return out

    def _everywhere(self, found: list[Rel], prefix: str) -> list[Rel]:
        out: list[Rel] = []
        for suffix, rule, old, new, detail in found:
            if rule == MET:
                out += self._everywhere(self._lists[int(detail)], prefix + suffix)
            else:
                out.append((prefix + suffix, rule, old, new, detail))
        return out


@dataclass(slots=True)
class Walked:
    """One walk's findings before they are written: paths relative to the new schema's root (``entered``: the segment
    that says it is a referenced type), under ``label``."""

    memo: PairMemo
    found: list[Rel]
    label: str
    entered: str
    breaks: frozenset[Direction] = frozenset()
    version: int | None = None

    def size(self) -> int:
        """How many findings it holds once every pair is written at every place."""
        return self.memo.size(self.found)

    def changes(self, crowded: bool | None = None) -> list[Change]:
        """Its findings as changes, each pair at every place or, ``crowded`` (by default: when they would be more
        than ``PLACES``), at its shallowest."""
        if crowded is None:
            crowded = self.size() > PLACES
        return [Change(rule, self.label + suffix.removeprefix(self.entered), old, new, detail, self.breaks, self.version)
                for suffix, rule, old, new, detail in self.memo.placed(self.found, crowded)]


def crowded(walks: list[Walked]) -> bool:
    """Whether any of the walks of one comparison holds more than ``PLACES`` findings: then all write each pair once,
    so the directions of a change agree at the places they are written."""
    return any(walk.size() > PLACES for walk in walks)
