"""Results memoised per pair of schema nodes, so shared named types cost once and recursion ends; the walk's findings
are written where ``places`` says: at every path a pair is met by, or, where types used at many places make more than
``PLACES`` findings, each pair once, at its shallowest place.

A pair's findings are kept relative to it; a list holds a pair's as one ``Rel`` whose rule is ``MET`` (its detail
names the pair), so a named type used at a million places is not copied a million times before it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.domain.avro.model import Node
from bot.domain.compat import places
from bot.domain.compat.changes import Change, Direction
from bot.domain.compat.places import PLACES

Rel = tuple[str, str, str, str, str]  # (relative path, rule, old description, new description, detail)
MET = "\x00"  # the rule of a Rel that stands for a pair's findings (its detail: the pair's number)


class PairMemo:
    """One result list per (a, b) pair; a pair met again while it is being computed yields nothing new."""

    def __init__(self) -> None:
        self._done: dict[tuple[int, int], list[Rel]] = {}
        self._active: set[tuple[int, int]] = set()
        self._lists: list[list[Rel]] = []  # by pair number: each pair's own list, relative to it

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

    def step(self, rel: Rel) -> tuple[str, str, list[Rel]] | None:
        """For ``places``: a ``MET`` entry's pair, path and list; None for a finding."""
        suffix, rule, _, _, detail = rel
        return (detail, suffix, self._lists[int(detail)]) if rule == MET else None


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
        return places.size(self.found, self.memo.step)

    def changes(self, crowded: bool | None = None) -> list[Change]:
        """Its findings as changes, each pair at every place or, ``crowded`` (by default: when they would be more
        than ``PLACES``), at its shallowest."""
        if crowded is None:
            crowded = self.size() > PLACES
        return [Change(rule, self.label + (place + suffix).removeprefix(self.entered), old, new, detail, self.breaks, self.version)
                for (suffix, rule, old, new, detail), place, _ in places.placed(self.found, "", self.memo.step, _after, crowded)]


def _after(path: str, place: str) -> str:
    return place + path


def crowded(walks: list[Walked]) -> bool:
    """Whether any of the walks of one comparison holds more than ``PLACES`` findings: then all write each pair once,
    so the directions of a change agree at the places they are written."""
    return any(walk.size() > PLACES for walk in walks)
