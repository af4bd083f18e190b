"""What the walks of one JSON Schema comparison share: each pair of subschemas compared once, its findings kept
relative to the pair, and placed at every path it was met only when the answer is written.

A walk's findings are ``Difference``s (their paths start at ``HERE``, the pair being compared) and ``Met`` entries,
which name a pair met at a path. A pair met again while it is being compared (recursion) is a ``Met`` marked
``again``: it counts for the verdicts around it when an earlier round found the pair to fail, and is not written
(its differences are written where the pair began).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.domain.compat.changes import ROOT_PATH, Difference
from bot.domain.compat.memo import PLACES

HERE = "\x00"  # where a pair's paths start, until they are placed

Key = tuple[bool, int, str, int, str]  # direction, the two subschemas (by identity) and their base URIs


@dataclass(slots=True)
class Met:
    """A pair of subschemas met at ``path``; ``again``: met while it was being compared (recursion)."""

    key: Key
    path: str
    again: bool = False


@dataclass(slots=True)
class Done:
    """A pair compared: the two subschemas (held, so their identities stay theirs) and what was found."""

    original: Any
    update: Any
    found: list[Difference | Met]
    fails: bool  # something in it is outside the registry's compatible changes
    shows: bool  # something in it is written


class Walks:
    """Each pair's result (``done``), the pairs being compared (``active``), the pairs an earlier round found to fail
    (``known``), and whether recursion was assumed alike (``assumed``: then another round may find more)."""

    def __init__(self, compatible: frozenset[str], known: dict[Key, Done]) -> None:
        self.compatible = compatible
        self.done: dict[Key, Done] = {}
        self.active: set[tuple[int, int]] = set()  # (original's subschema, update's subschema), whichever the direction
        self.known = known
        self.assumed = False

    def fails(self, found: Iterable[Difference | Met]) -> bool:
        """Whether any of ``found`` is outside the compatible changes (a pair met again fails when it is known to)."""
        for entry in found:
            if isinstance(entry, Met):
                if entry.again or self.done[entry.key].fails:
                    return True
            elif entry.rule not in self.compatible:
                return True
        return False

    def shows(self, found: Iterable[Difference | Met]) -> bool:
        """Whether any of ``found`` is a difference, or leads to one."""
        return any(entry.again or self.done[entry.key].shows if isinstance(entry, Met) else True for entry in found)

    def written(self, found: list[Difference | Met], root: str) -> list[Difference]:
        """``found`` as the answer, the root's paths starting at ``root``: every difference at every path it was met by,
        or, where that would be more than ``PLACES`` differences, each pair's once, at its shallowest place (fewest
        pairs on the way, then the first path in text order), and ``CHANGES_LISTED_ONCE`` says so. A difference's key is the element it is about, the same
        at each place and whichever way the walk went: the two subschemas compared, the path inside them and what it
        is about. (A pair's entries only name pairs compared before it ended, so no path passes a pair twice.)"""
        out: list[Difference] = []
        if self._size(found, {}) <= PLACES:
            self._everywhere(found, root, frozenset(), out)
            return out
        out.append(Difference("CHANGES_LISTED_ONCE", ("listed", frozenset(), HERE), root or ROOT_PATH, detail=f"{PLACES:,}"))
        written: set[Key] = set()
        level: list[tuple[str, list[Difference | Met], frozenset[int]]] = [(root, found, frozenset())]
        while level:
            shallowest: dict[Key, str] = {}
            for prefix, entries, pair in level:
                for entry in entries:
                    if not isinstance(entry, Met):
                        out.append(_at(entry, prefix, pair))
                    elif self._written(entry) and entry.key not in written:
                        at = placed(entry.path, prefix)
                        if entry.key not in shallowest or at < shallowest[entry.key]:
                            shallowest[entry.key] = at
            written |= shallowest.keys()
            level = [(at, self.done[key].found, self._pair(key)) for key, at in sorted(shallowest.items(), key=lambda item: item[1])]
        return out

    def _written(self, entry: Met) -> bool:
        """Whether a pair met is written: not where recursion met it again, nor when it holds no difference."""
        return not entry.again and self.done[entry.key].shows

    def _pair(self, key: Key) -> frozenset[int]:
        done = self.done[key]
        return frozenset((id(done.original), id(done.update)))

    def _size(self, entries: list[Difference | Met], sizes: dict[Key, int]) -> int:
        """How many differences ``entries`` hold once every pair is written at every place."""
        total = 0
        for entry in entries:
            if not isinstance(entry, Met):
                total += 1
            elif self._written(entry):
                if entry.key not in sizes:
                    sizes[entry.key] = self._size(self.done[entry.key].found, sizes)
                total += sizes[entry.key]
        return total

    def _everywhere(self, entries: list[Difference | Met], prefix: str, pair: frozenset[int], out: list[Difference]) -> None:
        for entry in entries:
            if not isinstance(entry, Met):
                out.append(_at(entry, prefix, pair))
            elif self._written(entry):
                self._everywhere(self.done[entry.key].found, placed(entry.path, prefix), self._pair(entry.key), out)


def _at(entry: Difference, prefix: str, pair: frozenset[int]) -> Difference:
    """A pair's difference written at its place, keyed by the element it is about."""
    at = placed(entry.path, prefix)
    return Difference(entry.rule, (entry.key[0], pair, entry.path), at or ROOT_PATH, entry.old, entry.new, entry.detail)


def placed(path: str, prefix: str) -> str:
    """A path relative to a pair (it starts at ``HERE``) placed under ``prefix``, the path the pair was met at."""
    if path[1:2] == ".":
        return f"{prefix}{path[1:]}" if prefix else path[2:]
    return prefix + path[1:]
